//! The master password side of the vault: PBKDF2-HMAC-SHA256, the versioned KDF header, and
//! the data key wrapped (AES-256-GCM) under the password-derived key.
//!
//! Header layout (`HEADER_BYTES` = 21): `version(1) ‖ rounds(u32, big-endian) ‖ salt(16)`.
//! It is parsed strictly: exact length, known version, and a round count inside
//! [`PBKDF2_ROUNDS_MIN`, `PBKDF2_ROUNDS_MAX`], so a tampered header can neither hang the
//! service in a huge derivation nor downgrade it to a trivial one. The wrapped key's
//! associated data covers the whole header, so any change to it fails the unwrap.
//!
//! Invariants: the derived key lives only in `Zeroizing` memory and only for one wrap or
//! unwrap; nothing here logs, formats or returns a password or key. PBKDF2 is slow on
//! purpose (~70 ms in a release build): callers must hold no lock while it runs.

use std::fmt;

use sha2::Sha256;
use zeroize::Zeroizing;

use crate::vault::random::random_bytes;
use crate::vault::seal::{open_with, seal_with, DataKey};
use crate::vault::secret::wipe_stack;

/// Format version of the header; bump it when the layout or the algorithms change.
pub const HEADER_VERSION: u8 = 1;
/// docs/security.md "The vault's threat model": 600,000 PBKDF2-HMAC-SHA256 rounds for new vaults
/// (OWASP 2023).
pub const PBKDF2_ROUNDS_NEW: u32 = 600_000;
/// Below this a stored header is refused: no build of ours ever wrote fewer.
pub const PBKDF2_ROUNDS_MIN: u32 = 100_000;
/// Above this a stored header is refused: about 1.1 s per derivation in a release build,
/// room for the count to rise while a tampered header cannot stall a worker for minutes.
pub const PBKDF2_ROUNDS_MAX: u32 = 10_000_000;
/// docs/security.md "The vault's threat model": a 16-byte random salt per password.
pub const SALT_BYTES: usize = 16;
/// Exact length of a stored header.
pub const HEADER_BYTES: usize = 1 + 4 + SALT_BYTES;
/// Domain separation: the wrapped data key's associated data starts with this, then the
/// header bytes; no secret sealed under the data key can share it.
const WRAP_AAD_PREFIX: &[u8] = b"host-manager/v1/data-key\0";

/// The KDF parameters of one master password.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    rounds: u32,
    salt: [u8; SALT_BYTES],
}

/// Why a stored header was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderError {
    Length(usize),
    Version(u8),
    Rounds(u32),
}

/// The key derived from a master password. Wiped on drop; never leaves this module. On the
/// heap for the same reason as `DataKey`: moves copy a pointer, not the key.
pub struct PasswordKey(Box<Zeroizing<[u8; 32]>>);

/// The wrapped data key did not open: wrong password, or tampered header or ciphertext.
#[derive(Debug, PartialEq, Eq)]
pub struct WrongPassword;

impl Header {
    /// A header for a new password: `PBKDF2_ROUNDS_NEW` rounds and a fresh OS-random salt.
    pub fn generate() -> Header {
        let mut salt = [0u8; SALT_BYTES];
        random_bytes(&mut salt);
        Header {
            rounds: PBKDF2_ROUNDS_NEW,
            salt,
        }
    }

    /// Parses stored header bytes strictly (see the module doc).
    pub fn parse(bytes: &[u8]) -> Result<Header, HeaderError> {
        let bytes: &[u8; HEADER_BYTES] = bytes
            .try_into()
            .map_err(|_| HeaderError::Length(bytes.len()))?;
        if bytes[0] != HEADER_VERSION {
            return Err(HeaderError::Version(bytes[0]));
        }
        let rounds = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        // A round count read from disk is bounded before it is used, so a tampered header
        // cannot hang the service (docs/security.md, "The vault's threat model").
        if !(PBKDF2_ROUNDS_MIN..=PBKDF2_ROUNDS_MAX).contains(&rounds) {
            return Err(HeaderError::Rounds(rounds));
        }
        let mut salt = [0u8; SALT_BYTES];
        salt.copy_from_slice(&bytes[5..]);
        Ok(Header { rounds, salt })
    }

    /// The stored form; `parse(to_bytes())` gives the same header back.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        bytes[0] = HEADER_VERSION;
        bytes[1..5].copy_from_slice(&self.rounds.to_be_bytes());
        bytes[5..].copy_from_slice(&self.salt);
        bytes
    }

    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Derives the key for `password` under this header. Slow on purpose: hold no lock.
    pub fn derive(&self, password: &[u8]) -> PasswordKey {
        let mut key = Box::new(Zeroizing::new([0u8; 32]));
        pbkdf2_sha256(password, &self.salt, self.rounds, &mut key[..]);
        // The HMAC states keyed with the password (with them, PBKDF2 needs no password)
        // and the last blocks were built by value below this frame.
        wipe_stack();
        PasswordKey(key)
    }

    /// A header with a chosen round count, so unit tests need not pay 600,000 rounds.
    #[cfg(test)]
    pub fn with_rounds(rounds: u32) -> Header {
        Header {
            rounds,
            ..Header::generate()
        }
    }
}

impl PasswordKey {
    /// Seals `data_key` under this key, bound to `header` (the header this key came from).
    pub fn seal_data_key(&self, header: &Header, data_key: &DataKey) -> Vec<u8> {
        seal_with(&self.0, &wrap_aad(header), data_key.expose())
    }

    /// Opens a data key that `seal_data_key` sealed with the same key and header.
    pub fn open_data_key(&self, header: &Header, wrapped: &[u8]) -> Result<DataKey, WrongPassword> {
        let opened = open_with(&self.0, &wrap_aad(header), wrapped).map_err(|_| WrongPassword)?;
        DataKey::from_bytes(opened.expose()).ok_or(WrongPassword)
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Header {{ version: {HEADER_VERSION}, rounds: {} }}",
            self.rounds
        )
    }
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Length(length) => {
                write!(f, "header is {length} bytes, expected {HEADER_BYTES}")
            }
            HeaderError::Version(version) => write!(f, "unknown header version {version}"),
            HeaderError::Rounds(rounds) => write!(
                f,
                "{rounds} PBKDF2 rounds is outside {PBKDF2_ROUNDS_MIN}-{PBKDF2_ROUNDS_MAX}"
            ),
        }
    }
}

/// PBKDF2-HMAC-SHA256 of `password` and `salt` into `out` (any length). In its own frame,
/// so that `wipe_stack` reaches everything it left on the stack.
#[inline(never)]
fn pbkdf2_sha256(password: &[u8], salt: &[u8], rounds: u32, out: &mut [u8]) {
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, out);
}

/// Associated data of the wrapped data key: the prefix, then the exact header bytes.
fn wrap_aad(header: &Header) -> Vec<u8> {
    let mut aad = Vec::with_capacity(WRAP_AAD_PREFIX.len() + HEADER_BYTES);
    aad.extend_from_slice(WRAP_AAD_PREFIX);
    aad.extend_from_slice(&header.to_bytes());
    aad
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::vault::kdf::{
        pbkdf2_sha256, Header, HeaderError, WrongPassword, HEADER_BYTES, HEADER_VERSION,
        PBKDF2_ROUNDS_MAX, PBKDF2_ROUNDS_MIN, PBKDF2_ROUNDS_NEW,
    };
    use crate::vault::seal::DataKey;

    fn hex(text: &str) -> Vec<u8> {
        let text: String = text.split_whitespace().collect();
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn pbkdf2_matches_rfc7914_vector_with_one_round() {
        // RFC 7914 §11, PBKDF2-HMAC-SHA256 (P="passwd", S="salt", c=1, dkLen=64).
        let mut out = [0u8; 64];
        pbkdf2_sha256(b"passwd", b"salt", 1, &mut out);
        let expected = hex("55 ac 04 6e 56 e3 08 9f ec 16 91 c2 25 44 b6 05
                            f9 41 85 21 6d de 04 65 e6 8b 9d 57 c2 0d ac bc
                            49 ca 9c cc f1 79 b6 45 99 16 64 b3 9d 77 ef 31
                            7c 71 b8 45 b1 e3 0b d5 09 11 20 41 d3 a1 97 83");
        assert_eq!(out.to_vec(), expected);
    }

    #[test]
    fn pbkdf2_matches_rfc7914_vector_with_80000_rounds() {
        // RFC 7914 §11, PBKDF2-HMAC-SHA256 (P="Password", S="NaCl", c=80000, dkLen=64).
        let mut out = [0u8; 64];
        pbkdf2_sha256(b"Password", b"NaCl", 80_000, &mut out);
        let expected = hex("4d dc d8 f6 0b 98 be 21 83 0c ee 5e f2 27 01 f9
                            64 1a 44 18 d0 4c 04 14 ae ff 08 87 6b 34 ab 56
                            a1 d4 25 a1 22 58 33 54 9a db 84 1b 51 c9 b3 17
                            6a 27 2b de bb a1 d0 78 47 8f 62 b3 97 f3 3c 8d");
        assert_eq!(out.to_vec(), expected);
    }

    #[test]
    fn new_headers_use_600000_rounds_and_distinct_salts() {
        let (first, second) = (Header::generate(), Header::generate());
        assert_eq!(first.rounds(), PBKDF2_ROUNDS_NEW);
        assert_eq!(PBKDF2_ROUNDS_NEW, 600_000);
        assert_ne!(first.to_bytes()[5..], second.to_bytes()[5..]);
    }

    #[test]
    fn header_round_trips_through_its_stored_form() {
        let header = Header::generate();
        let bytes = header.to_bytes();
        assert_eq!(bytes.len(), HEADER_BYTES);
        assert_eq!(bytes[0], HEADER_VERSION);
        assert_eq!(bytes[1..5], 600_000u32.to_be_bytes());
        assert_eq!(Header::parse(&bytes).unwrap(), header);
    }

    #[test]
    fn header_of_the_wrong_length_is_refused() {
        let bytes = Header::generate().to_bytes();
        assert_eq!(
            Header::parse(&bytes[..HEADER_BYTES - 1]),
            Err(HeaderError::Length(HEADER_BYTES - 1))
        );
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert_eq!(
            Header::parse(&longer),
            Err(HeaderError::Length(HEADER_BYTES + 1))
        );
        assert_eq!(Header::parse(&[]), Err(HeaderError::Length(0)));
    }

    #[test]
    fn header_with_an_unknown_version_is_refused() {
        let mut bytes = Header::generate().to_bytes();
        bytes[0] = 2;
        assert_eq!(Header::parse(&bytes), Err(HeaderError::Version(2)));
    }

    #[test]
    fn header_rounds_at_the_bounds_are_accepted_and_beyond_them_refused() {
        let mut bytes = Header::generate().to_bytes();
        for (rounds, accepted) in [
            (PBKDF2_ROUNDS_MIN, true),
            (PBKDF2_ROUNDS_MAX, true),
            (PBKDF2_ROUNDS_MIN - 1, false),
            (PBKDF2_ROUNDS_MAX + 1, false),
            (u32::MAX, false),
            (0, false),
        ] {
            bytes[1..5].copy_from_slice(&rounds.to_be_bytes());
            match Header::parse(&bytes) {
                Ok(header) => {
                    assert!(accepted, "{rounds} accepted");
                    assert_eq!(header.rounds(), rounds);
                }
                Err(err) => {
                    assert!(!accepted, "{rounds} refused");
                    assert_eq!(err, HeaderError::Rounds(rounds));
                }
            }
        }
    }

    #[test]
    fn wrapped_data_key_opens_with_the_right_password_only() {
        let header = Header::with_rounds(PBKDF2_ROUNDS_MIN);
        let data_key = DataKey::generate();
        let wrapped = header
            .derive(b"right horse")
            .seal_data_key(&header, &data_key);
        let opened = header
            .derive(b"right horse")
            .open_data_key(&header, &wrapped);
        assert_eq!(opened.unwrap().expose(), data_key.expose());
        assert_eq!(
            header
                .derive(b"right horsf")
                .open_data_key(&header, &wrapped)
                .err(),
            Some(WrongPassword)
        );
        assert_eq!(
            header.derive(b"").open_data_key(&header, &wrapped).err(),
            Some(WrongPassword)
        );
    }

    #[test]
    fn tampered_header_nonce_ciphertext_or_tag_of_the_wrapped_key_fails() {
        let header = Header::with_rounds(PBKDF2_ROUNDS_MIN);
        let data_key = DataKey::generate();
        let key = header.derive(b"pw");
        let wrapped = key.seal_data_key(&header, &data_key);
        let opened = key.open_data_key(&header, &wrapped).unwrap();
        assert_eq!(opened.expose(), data_key.expose(), "untouched, it opens");
        // Layout: version(1) ‖ nonce(12) ‖ ciphertext(32) ‖ tag(16).
        assert_eq!(wrapped.len(), 1 + 12 + 32 + 16);
        for (index, part) in [
            (0, "version"),
            (1, "nonce"),
            (20, "ciphertext"),
            (60, "tag"),
        ] {
            let mut tampered = wrapped.clone();
            tampered[index] ^= 0x01;
            assert_eq!(
                key.open_data_key(&header, &tampered).err(),
                Some(WrongPassword),
                "{part}"
            );
        }
        // Another salt or round count changes the associated data (and the derived key,
        // which here stays the same to show the associated data alone catches it).
        let mut bytes = header.to_bytes();
        bytes[HEADER_BYTES - 1] ^= 0x01;
        let other_salt = Header::parse(&bytes).unwrap();
        assert_eq!(
            key.open_data_key(&other_salt, &wrapped).err(),
            Some(WrongPassword)
        );
        let mut bytes = header.to_bytes();
        bytes[1..5].copy_from_slice(&(PBKDF2_ROUNDS_MIN + 1).to_be_bytes());
        let other_rounds = Header::parse(&bytes).unwrap();
        assert_eq!(
            key.open_data_key(&other_rounds, &wrapped).err(),
            Some(WrongPassword)
        );
    }

    #[test]
    fn header_debug_shows_no_salt() {
        let header = Header::generate();
        assert_eq!(
            format!("{header:?}"),
            "Header { version: 1, rounds: 600000 }"
        );
    }
}
