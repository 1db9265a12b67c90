//! AES-256-GCM sealing of one secret under the data key, bound to where it is stored.
//!
//! Stored form: `version ‖ nonce(12) ‖ ciphertext+tag`. The associated data names the
//! table, row id and field, so a ciphertext copied to another row or field fails to open.
//! A fresh random 96-bit nonce per seal: with random nonces, one key stays safe for about
//! 2^32 seals, far beyond a host catalogue's lifetime of edits.
//!
//! Invariants: never reuses a nonce on purpose (each comes from `vault::random_bytes`); the
//! data key is wiped on drop and its `Debug` is masked; a failed open names no byte of the
//! key, the plaintext or the ciphertext.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use zeroize::Zeroizing;

use crate::vault::random::random_bytes;
use crate::vault::secret::{wipe_stack, Secret};

/// Format byte of a sealed value.
pub const SEALED_VERSION: u8 = 1;
const NONCE_BYTES: usize = 12;
/// Domain separation: no other use of the data key can produce this associated data.
const AAD_PREFIX: &str = "host-manager/v1/secret";

/// The 256-bit key that seals every secret. Wiped on drop; never logged. Kept on the heap:
/// moving a `DataKey` (out of a function, into a vault state) copies a pointer, never the
/// key, so no stack frame is left holding a copy of it.
pub struct DataKey(Box<Zeroizing<[u8; 32]>>);

/// Where a sealed value lives. Binds the ciphertext to that place.
#[derive(Clone, Copy, Debug)]
pub struct SealContext<'a> {
    pub table: &'static str,
    pub row_id: &'a str,
    pub field: &'static str,
}

/// Why a sealed value could not be opened. Carries no secret and no key material.
#[derive(Debug, PartialEq, Eq)]
pub enum SealError {
    /// Too short, or an unknown format byte.
    Malformed,
    /// Authentication failed: wrong key, tampered bytes, or the wrong row or field.
    Rejected,
}

impl DataKey {
    /// A fresh key from the OS random source, written straight into its heap buffer.
    pub fn generate() -> DataKey {
        let mut key = DataKey::zeroed();
        random_bytes(&mut key.0[..]);
        key
    }

    /// A key from its 32 stored bytes; `None` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Option<DataKey> {
        if bytes.len() != 32 {
            return None;
        }
        let mut key = DataKey::zeroed();
        key.0.copy_from_slice(bytes);
        Some(key)
    }

    /// The raw key bytes, for storing it (unwrapped only when no master password is set).
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }

    /// A second copy, so a state change can move the key into the next state in one
    /// assignment; the copy this one came from is wiped when its state drops.
    pub fn duplicate(&self) -> DataKey {
        let mut key = DataKey::zeroed();
        key.0.copy_from_slice(&self.0[..]);
        key
    }

    pub fn seal(&self, context: SealContext<'_>, plaintext: &[u8]) -> Vec<u8> {
        seal_with(&self.0, &aad(context), plaintext)
    }

    pub fn open(&self, context: SealContext<'_>, sealed: &[u8]) -> Result<Secret, SealError> {
        open_with(&self.0, &aad(context), sealed)
    }
}

impl DataKey {
    /// An all-zero key on the heap, to be written in place.
    fn zeroed() -> DataKey {
        DataKey(Box::new(Zeroizing::new([0u8; 32])))
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

/// Seals `plaintext` under a raw 256-bit `key` with associated data `aad`. The stack the
/// cipher used is wiped before this returns (see `wipe_stack`).
pub fn seal_with(key: &[u8; 32], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let sealed = seal_in_own_frame(key, aad, plaintext);
    wipe_stack();
    sealed
}

/// Opens what `seal_with` produced with the same key and associated data; the stack the
/// cipher used is wiped before this returns.
pub fn open_with(key: &[u8; 32], aad: &[u8], sealed: &[u8]) -> Result<Secret, SealError> {
    let opened = open_in_own_frame(key, aad, sealed);
    wipe_stack();
    opened
}

/// The cipher (its AES round keys begin with the key itself) lives in this frame and the
/// ones it calls, all below the caller's, where `wipe_stack` reaches once it returned.
#[inline(never)]
fn seal_in_own_frame(key: &[u8; 32], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key));
    let mut nonce = Nonce::default();
    random_bytes(&mut nonce);
    // Encryption with a valid key and nonce fails only for plaintexts over 64 GiB.
    let ciphertext = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .expect("AES-GCM encryption of a bounded plaintext cannot fail");
    let mut sealed = Vec::with_capacity(1 + NONCE_BYTES + ciphertext.len());
    sealed.push(SEALED_VERSION);
    sealed.extend_from_slice(&nonce);
    sealed.extend_from_slice(&ciphertext);
    sealed
}

/// See `seal_in_own_frame`.
#[inline(never)]
fn open_in_own_frame(key: &[u8; 32], aad: &[u8], sealed: &[u8]) -> Result<Secret, SealError> {
    if sealed.len() < 1 + NONCE_BYTES + 16 || sealed[0] != SEALED_VERSION {
        return Err(SealError::Malformed);
    }
    let (nonce, ciphertext) = sealed[1..].split_at(NONCE_BYTES);
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key));
    cipher
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .map(Secret::new)
        .map_err(|_| SealError::Rejected)
}

/// The associated data of a secret: prefix, table, row id and field, NUL-separated so
/// no two places share it.
fn aad(context: SealContext<'_>) -> Vec<u8> {
    format!(
        "{AAD_PREFIX}\0{}\0{}\0{}",
        context.table, context.row_id, context.field
    )
    .into_bytes()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    use aes_gcm::{Aes256Gcm, Key, Nonce};

    use crate::vault::seal::{open_with, DataKey, SealContext, SealError, SEALED_VERSION};

    const HOST_PASSWORD: SealContext<'static> = SealContext {
        table: "hosts",
        row_id: "a",
        field: "password",
    };

    #[test]
    fn sealed_secret_opens_in_the_same_place() {
        let key = DataKey::generate();
        let sealed = key.seal(HOST_PASSWORD, b"s3cret");
        assert_eq!(
            key.open(HOST_PASSWORD, &sealed).unwrap().expose(),
            b"s3cret"
        );
    }

    #[test]
    fn two_seals_of_the_same_secret_differ() {
        let key = DataKey::generate();
        assert_ne!(key.seal(HOST_PASSWORD, b"x"), key.seal(HOST_PASSWORD, b"x"));
    }

    #[test]
    fn ciphertext_moved_to_another_row_or_field_fails() {
        let key = DataKey::generate();
        let sealed = key.seal(HOST_PASSWORD, b"s3cret");
        let other_row = SealContext {
            row_id: "b",
            ..HOST_PASSWORD
        };
        let other_field = SealContext {
            field: "passphrase",
            ..HOST_PASSWORD
        };
        assert_eq!(
            key.open(other_row, &sealed).unwrap_err(),
            SealError::Rejected
        );
        assert_eq!(
            key.open(other_field, &sealed).unwrap_err(),
            SealError::Rejected
        );
    }

    #[test]
    fn tampered_nonce_ciphertext_or_tag_fails() {
        let key = DataKey::generate();
        let sealed = key.seal(HOST_PASSWORD, b"s3cret");
        for index in [1, 13, sealed.len() - 1] {
            let mut tampered = sealed.clone();
            tampered[index] ^= 1;
            assert_eq!(
                key.open(HOST_PASSWORD, &tampered).unwrap_err(),
                SealError::Rejected,
                "byte {index}"
            );
        }
        let mut wrong_version = sealed.clone();
        wrong_version[0] = 9;
        assert_eq!(
            key.open(HOST_PASSWORD, &wrong_version).unwrap_err(),
            SealError::Malformed
        );
        assert_eq!(
            key.open(HOST_PASSWORD, &sealed[..20]).unwrap_err(),
            SealError::Malformed
        );
    }

    #[test]
    fn another_key_cannot_open() {
        let sealed = DataKey::generate().seal(HOST_PASSWORD, b"s3cret");
        assert_eq!(
            DataKey::generate()
                .open(HOST_PASSWORD, &sealed)
                .unwrap_err(),
            SealError::Rejected
        );
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Test cases 14 and 16 of McGrew and Viega, "The Galois/Counter Mode of Operation
    /// (GCM)" (the AES-256 cases NIST's GCM validation suite also carries): key, IV,
    /// plaintext, associated data, ciphertext, tag.
    const GCM_VECTORS: [(&str, &str, &str, &str, &str, &str); 2] = [
        (
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            "00000000000000000000000000000000",
            "",
            "cea7403d4d606b6e074ec5d3baf39d18",
            "d0d1c8a799996bf0265b98b5d48ab919",
        ),
        (
            "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            "cafebabefacedbaddecaf888",
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
             1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
            "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
            "76fc6ece0f4e1768cddf8853bb2d551b",
        ),
    ];

    #[test]
    fn aes_256_gcm_matches_the_published_test_vectors() {
        for (key, iv, plaintext, aad, ciphertext, tag) in GCM_VECTORS {
            let (key, iv, plaintext, aad) = (hex(key), hex(iv), hex(plaintext), hex(aad));
            let mut expected = hex(ciphertext);
            expected.extend(hex(tag));
            let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key));
            let sealed = cipher
                .encrypt(
                    Nonce::from_slice(&iv),
                    Payload {
                        msg: &plaintext,
                        aad: &aad,
                    },
                )
                .unwrap();
            assert_eq!(sealed, expected);
        }
    }

    #[test]
    fn open_with_accepts_the_published_vectors_in_the_stored_layout() {
        for (key, iv, plaintext, aad, ciphertext, tag) in GCM_VECTORS {
            let key: [u8; 32] = hex(key).try_into().unwrap();
            let mut stored = vec![SEALED_VERSION];
            stored.extend(hex(iv));
            stored.extend(hex(ciphertext));
            stored.extend(hex(tag));
            let opened = open_with(&key, &hex(aad), &stored).unwrap();
            assert_eq!(opened.expose(), hex(plaintext));
            let last = stored.len() - 1;
            stored[last] ^= 0x80;
            assert_eq!(
                open_with(&key, &hex(aad), &stored).unwrap_err(),
                SealError::Rejected
            );
        }
    }

    #[test]
    fn duplicate_key_opens_what_the_original_sealed() {
        let key = DataKey::generate();
        let sealed = key.seal(HOST_PASSWORD, b"s3cret");
        let copy = key.duplicate();
        drop(key);
        assert_eq!(
            copy.open(HOST_PASSWORD, &sealed).unwrap().expose(),
            b"s3cret"
        );
    }
}
