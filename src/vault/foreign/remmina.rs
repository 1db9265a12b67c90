//! Remmina's saved-password scheme (docs/import-formats.md, "Remmina"): `remmina.pref` keeps
//! `secret=`, the base64 of 32 random bytes; a `.remmina` file's `password=` (and the other
//! password settings) is the base64 of the UTF-8 password, padded with NUL bytes to a
//! multiple of 8 (always at least one), encrypted with 3DES-EDE3 in CBC mode, the key being
//! the secret's first 24 bytes and the IV its next 8.
//!
//! Invariants: never panics on any input; the key, the IV and the plaintext buffer are wiped
//! on drop; a value that does not open (bad base64, a length that is not whole blocks, a
//! secret shorter than 32 bytes, an empty result, padding that is not all NULs, text that
//! is not UTF-8) is `None`, never an error with content.

use base64ct::{Base64, Encoding};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, KeyIvInit};
use zeroize::Zeroizing;

use crate::vault::Secret;

/// 3DES key (24 bytes) and IV (8 bytes): the decoded secret must hold both.
const KEY_LEN: usize = 24;
const IV_LEN: usize = 8;

/// The password a `password=` value's base64 protects, with `remmina.pref`'s `secret`
/// (its base64 text, as the file has it).
pub fn reveal(base64: &str, pref_secret: &[u8]) -> Option<Secret> {
    let secret_text = std::str::from_utf8(pref_secret).ok()?;
    let secret = Zeroizing::new(Base64::decode_vec(secret_text.trim()).ok()?);
    let key = secret.get(..KEY_LEN)?;
    let iv = secret.get(KEY_LEN..KEY_LEN + IV_LEN)?;
    let mut buffer = Zeroizing::new(Base64::decode_vec(base64.trim()).ok()?);
    if buffer.is_empty() || buffer.len() % IV_LEN != 0 {
        return None;
    }
    let cipher = cbc::Decryptor::<des::TdesEde3>::new_from_slices(key, iv).ok()?;
    let plain = cipher
        .decrypt_padded_mut::<NoPadding>(buffer.as_mut_slice())
        .ok()?;
    // Remmina reads the result as a C string: it ends at the first NUL. Its padding is
    // always at least one NUL and nothing but NULs follow the text, so a value opened with
    // the wrong secret (random bytes) is almost always told apart and is `None`, as is one
    // that is not UTF-8.
    let end = plain.iter().position(|&byte| byte == 0)?;
    let (text, padding) = plain.split_at(end);
    if text.is_empty() || padding.iter().any(|&byte| byte != 0) {
        return None;
    }
    std::str::from_utf8(text).ok()?;
    Some(Secret::new(text.to_vec()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    /// The `secret=` of tests/samples/import/remmina/remmina.pref (written by make.py).
    const SECRET: &[u8] = b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    /// Values written by tests/samples/import/remmina/make.py (Python `cryptography`'s
    /// TripleDES, an implementation independent of ours) with `SECRET`.
    const VECTORS: &[(&str, &str)] = &[
        (
            "s3cr3t-web",
            include_str!("../../../tests/samples/import/remmina/vectors/web.b64"),
        ),
        (
            "12345678",
            include_str!("../../../tests/samples/import/remmina/vectors/eight.b64"),
        ),
        (
            "pässwörd €",
            include_str!("../../../tests/samples/import/remmina/vectors/utf8.b64"),
        ),
    ];

    #[test]
    fn a_value_encrypted_by_an_independent_3des_opens_to_its_password() {
        for (password, base64) in VECTORS {
            let opened = reveal(base64, SECRET).unwrap();
            assert_eq!(opened.expose(), password.as_bytes());
        }
    }

    #[test]
    fn a_password_of_whole_blocks_has_a_whole_block_of_nul_padding_and_opens() {
        // "12345678" is 8 bytes: Remmina pads it to 16 with 8 NULs.
        let base64 = VECTORS[1].1.trim();
        assert_eq!(Base64::decode_vec(base64).unwrap().len(), 16);
        assert_eq!(reveal(base64, SECRET).unwrap().expose(), b"12345678");
    }

    #[test]
    fn a_different_secret_opens_no_vector_as_its_padding_is_not_all_nul() {
        let other = b"HxweHRwbGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgE=";
        for (_, base64) in VECTORS {
            assert!(reveal(base64, other).is_none());
        }
    }

    #[test]
    fn a_value_whose_padding_is_not_all_nul_or_whose_text_is_not_utf8_is_none() {
        // Encrypted with SECRET by make.py: "ab", NUL, "c" and padding; 0xff 0xfe and padding.
        let nul_inside =
            include_str!("../../../tests/samples/import/remmina/vectors/nul-inside.b64");
        let not_utf8 = include_str!("../../../tests/samples/import/remmina/vectors/not-utf8.b64");
        assert!(reveal(nul_inside, SECRET).is_none());
        assert!(reveal(not_utf8, SECRET).is_none());
    }

    #[test]
    fn a_secret_shorter_than_key_and_iv_is_none() {
        // 31 bytes of secret: one short of the 24-byte key and the 8-byte IV.
        let short = Base64::encode_string(&[7u8; 31]);
        assert!(reveal(VECTORS[0].1, short.as_bytes()).is_none());
    }

    #[test]
    fn a_value_that_is_not_whole_blocks_or_not_base64_is_none() {
        assert!(reveal("AAAA", SECRET).is_none()); // 3 bytes
        assert!(reveal("", SECRET).is_none());
        assert!(reveal("not base64!", SECRET).is_none());
        assert!(reveal(VECTORS[0].1, b"not base64!").is_none());
        assert!(reveal(VECTORS[0].1, &[0xff, 0xfe]).is_none());
    }

    #[test]
    fn remmina_secret_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("remmina secret", 0x3DE5_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let mut value = VECTORS[rng.below(VECTORS.len())]
                .1
                .trim()
                .as_bytes()
                .to_vec();
            let mut secret = SECRET.to_vec();
            for _ in 0..rng.below(4) {
                let target = if rng.below(2) == 0 {
                    &mut value
                } else {
                    &mut secret
                };
                mutate(&mut rng, target);
            }
            let value = String::from_utf8_lossy(&value).into_owned();
            let outcome = panic::catch_unwind(|| reveal(&value, &secret).map(|s| s.expose().len()));
            assert!(outcome.is_ok(), "panic on input #{iteration}: {value:?}");
        }
    }

    /// One random edit of `bytes`: a flipped byte, a truncation, a base64 character.
    fn mutate(rng: &mut crate::fuzz::Rng, bytes: &mut Vec<u8>) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 => {
                if let Some(byte) = bytes.get_mut(at) {
                    *byte ^= 1 << rng.below(8);
                }
            }
            1 => bytes.truncate(at),
            2 => bytes.insert(at, *rng.pick::<u8>(b"AZaz09+/=\n \x00")),
            _ => {
                if at < bytes.len() {
                    bytes.remove(at);
                }
            }
        }
    }
}
