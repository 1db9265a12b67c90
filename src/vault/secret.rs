//! Secret values: wiped on drop, redacted in `Debug`, impossible to serialize.
//!
//! Invariants: no `Clone`, `Serialize`, `Display` or `PartialEq`; reading the value takes
//! `expose()`, so every use can be found with grep (style §3.5).

use std::fmt;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::OsRng;
use zeroize::Zeroizing;

/// Secret bytes: a password, a private key, a passphrase, a data key in transit.
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Takes ownership of `bytes`; they are wiped when the secret drops.
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(Zeroizing::new(bytes))
    }

    /// Takes ownership of a string's bytes without copying them.
    pub fn from_string(text: String) -> Secret {
        Secret::new(text.into_bytes())
    }

    /// The secret bytes. Every call site is a place a secret leaves the vault's types.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as text, when it is UTF-8.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// A random token of `bytes` bytes from the OS, as lowercase hex text.
    pub fn random_hex(bytes: usize) -> Secret {
        let mut raw = Zeroizing::new(vec![0u8; bytes]);
        OsRng.fill_bytes(&mut raw);
        let mut text = Vec::with_capacity(bytes * 2);
        for byte in raw.iter() {
            text.push(HEX[usize::from(byte >> 4)]);
            text.push(HEX[usize::from(byte & 0x0f)]);
        }
        Secret::new(text)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use crate::vault::secret::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::from_string("hunter2-marker".into());
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(secret.expose(), b"hunter2-marker");
    }

    #[test]
    fn random_hex_tokens_are_hex_of_twice_the_length_and_differ() {
        let one = Secret::random_hex(32);
        let two = Secret::random_hex(32);
        assert_eq!(one.expose().len(), 64);
        assert!(one.expose().iter().all(u8::is_ascii_hexdigit));
        assert_ne!(one.expose(), two.expose());
    }
}
