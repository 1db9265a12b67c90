//! Secret values: wiped on drop, redacted in `Debug`, impossible to serialize.
//!
//! Invariants: no `Clone`, `Serialize`, `Display` or `PartialEq`; reading the value takes
//! `expose()`, so every use can be found with grep (style §3.5).

use std::fmt;

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

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

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
}
