//! mRemoteNG's password scheme (docs/import-formats.md, "mRemoteNG"), as its
//! `AeadCryptographyProvider` writes it since version 1.76 (`EncryptionEngine="AES"`,
//! `BlockCipherMode="GCM"`): base64 of a 16-byte salt, a 16-byte nonce, the AES-256-GCM
//! ciphertext and its 16-byte tag, the salt also being the associated data; the key is
//! PBKDF2-HMAC-SHA1(password, salt, `KdfIterations`, 32 bytes). The password is the user's
//! or mRemoteNG's built-in `mR3m`, turned into bytes as BouncyCastle's
//! `PKCS5PasswordToBytes` does (each UTF-16 unit's low byte). The same scheme encrypts the
//! whole body of a file saved with `FullFileEncryption="true"` (`open`).
//!
//! Invariants: `None` on any failure (wrong password, broken base64, short value, tag
//! mismatch, iterations outside `MIN_ITERATIONS..=MAX_ITERATIONS`), never a panic; keys and
//! plaintexts are wiped on drop; one derivation per distinct salt, iterations and password.

use aes::Aes256;
use aes_gcm::aead::consts::U16;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{AesGcm, Nonce};
use base64ct::{Base64, Encoding};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::vault::foreign::DerivedKeys;
use crate::vault::Secret;

/// mRemoteNG refuses fewer.
pub const MIN_ITERATIONS: u32 = 1000;
/// Its options page offers at most 50,000; anything past this bound is refused, so a file
/// cannot make one import derive for minutes.
pub const MAX_ITERATIONS: u32 = 1_000_000;
/// The longest value opened (a whole-file body of a large tree): bounds the work.
const MAX_BASE64: usize = 64 * 1024 * 1024;

/// A `Password` attribute's base64 with `password` (the user's or the default).
pub fn reveal(
    base64: &str,
    iterations: u32,
    password: &[u8],
    keys: &mut DerivedKeys,
) -> Option<Secret> {
    let plain = open(base64, iterations, password, keys)?;
    std::str::from_utf8(&plain).ok()?;
    Some(Secret::new(plain.to_vec()))
}

/// The plaintext of one value of the scheme (a password, the `Protected` verifier, or a
/// whole-file body).
pub fn open(
    base64: &str,
    iterations: u32,
    password: &[u8],
    keys: &mut DerivedKeys,
) -> Option<Zeroizing<Vec<u8>>> {
    let base64 = base64.trim();
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) || base64.len() > MAX_BASE64 {
        return None;
    }
    let data = Zeroizing::new(Base64::decode_vec(base64).ok()?);
    if data.len() <= 48 {
        return None;
    }
    let (salt, rest) = data.split_at(16);
    let (nonce, sealed) = rest.split_at(16);
    let password = password_bytes(password);
    let mut bound = salt.to_vec();
    bound.extend_from_slice(&iterations.to_be_bytes());
    bound.extend_from_slice(&Sha256::digest(password.as_slice()));
    let key = keys.get_or_derive("mremoteng", &bound, || {
        let mut key = Zeroizing::new(vec![0u8; 32]);
        pbkdf2::pbkdf2_hmac::<Sha1>(&password, salt, iterations, &mut key);
        Some(key)
    })?;
    let cipher = AesGcm::<Aes256, U16>::new_from_slice(key).ok()?;
    let payload = Payload {
        msg: sealed,
        aad: salt,
    };
    cipher
        .decrypt(Nonce::<U16>::from_slice(nonce), payload)
        .ok()
        .map(Zeroizing::new)
}

/// BouncyCastle's `PKCS5PasswordToBytes`: each UTF-16 unit's low byte (the bytes as given
/// when they are not UTF-8).
fn password_bytes(password: &[u8]) -> Zeroizing<Vec<u8>> {
    match std::str::from_utf8(password) {
        Ok(text) => Zeroizing::new(text.encode_utf16().map(|unit| unit as u8).collect()),
        Err(_) => Zeroizing::new(password.to_vec()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    /// Lines `iterations password base64 plaintext` written by
    /// `tests/samples/import/mremoteng/make.py` with Python's `cryptography`.
    const VECTORS: &str = include_str!("../../../tests/samples/import/mremoteng/vectors.txt");

    fn vectors() -> Vec<(u32, String, String, String)> {
        VECTORS
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| {
                let fields: Vec<&str> = line.split('\t').collect();
                (
                    fields[0].parse().unwrap(),
                    fields[1].to_string(),
                    fields[2].to_string(),
                    fields[3].to_string(),
                )
            })
            .collect()
    }

    fn reveal_text(base64: &str, iterations: u32, password: &str) -> Option<String> {
        let mut keys = DerivedKeys::default();
        reveal(base64, iterations, password.as_bytes(), &mut keys)
            .map(|secret| secret.expose_str().unwrap().to_string())
    }

    #[test]
    fn every_vector_of_the_python_implementation_opens_to_its_password() {
        let vectors = vectors();
        assert!(vectors.iter().any(|vector| vector.1 == "mR3m"));
        assert!(vectors.iter().any(|vector| !vector.1.is_ascii()));
        for (iterations, password, base64, plain) in &vectors {
            assert_eq!(
                reveal_text(base64, *iterations, password).as_deref(),
                Some(plain.as_str())
            );
        }
    }

    #[test]
    fn a_wrong_password_or_iteration_count_opens_nothing() {
        for (iterations, password, base64, _) in vectors() {
            assert_eq!(
                reveal_text(&base64, iterations, &format!("{password}x")),
                None
            );
            assert_eq!(reveal_text(&base64, iterations + 1, &password), None);
        }
    }

    #[test]
    fn iterations_outside_the_bounds_are_refused_before_deriving() {
        let (_, password, base64, _) = vectors().remove(0);
        for iterations in [0, MIN_ITERATIONS - 1, MAX_ITERATIONS + 1, u32::MAX] {
            let mut keys = DerivedKeys::default();
            assert!(reveal(&base64, iterations, password.as_bytes(), &mut keys).is_none());
            assert_eq!(keys.derivations, 0);
        }
    }

    #[test]
    fn a_non_ascii_password_is_taken_as_the_low_byte_of_each_utf16_unit() {
        assert_eq!(
            password_bytes("é€a".as_bytes()).as_slice(),
            [0xE9, 0xAC, b'a']
        );
        assert_eq!(password_bytes(b"\xff").as_slice(), [0xFF]);
    }

    #[test]
    fn reveal_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("mremoteng passwords", 0x3E3E_0001);
        let vectors = vectors();
        let mut rng = crate::fuzz::Rng::new(seed);
        let mut keys = DerivedKeys::default();
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ ";
        for iteration in 0..iterations {
            let (count, password, base64, _) = rng.pick(&vectors);
            let mut text = base64.as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                match rng.below(3) {
                    0 => text.truncate(rng.below(text.len() + 1)),
                    1 if !text.is_empty() => {
                        let at = rng.below(text.len());
                        text[at] = *rng.pick(alphabet);
                    }
                    _ => text.push(*rng.pick(alphabet)),
                }
            }
            let text = String::from_utf8_lossy(&text).into_owned();
            // The salt stays the vector's in most inputs, so the key comes from the cache.
            let outcome = panic::catch_unwind(panic::AssertUnwindSafe(|| {
                if text.get(..22) == base64.get(..22) || iteration % 4096 == 0 {
                    let _ = reveal(&text, *count, password.as_bytes(), &mut keys);
                }
            }));
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
