//! Why a key was refused (`ImportError`, whose `Display` is the client's `details`) or could
//! not be made (`KeyError`, for the log), and the texts those messages share.
//!
//! Invariants: no message quotes the key or the passphrase.

use std::fmt;

use crate::sshkey::limits::{MAX_BCRYPT_ROUNDS, MAX_PRIVATE_KEY_BYTES, MAX_RSA_BITS, MIN_RSA_BITS};

/// Why an import was refused. The `Display` text is the `details` the client sees; it
/// never quotes the key or the passphrase.
#[derive(Debug, PartialEq, Eq)]
pub enum ImportError {
    /// A PEM or PKCS#8 key that `ssh-keygen -p -f FILE` turns into the OpenSSH format.
    NeedsConversion(&'static str),
    /// A PEM DSA key: no conversion helps, DSA is not supported.
    PemDsa,
    /// A PuTTY `.ppk` file.
    Putty,
    /// A public key (or certificate) where the private key belongs.
    PublicKey,
    /// An OpenSSH key of another algorithm (DSA, security keys, ...): its name.
    Unsupported(String),
    /// Not a readable OpenSSH private key.
    Unreadable,
    /// The passphrase does not decrypt the key.
    WrongPassphrase,
    /// A passphrase came with a key that has none.
    NotEncrypted,
    /// The key's KDF asks for more bcrypt rounds than `MAX_BCRYPT_ROUNDS`.
    TooManyRounds(u32),
    /// An RSA key of fewer bits than `MIN_RSA_BITS`: how many it has.
    RsaTooSmall(usize),
    /// An RSA key of more bits than `MAX_RSA_BITS`: how many it has.
    RsaTooLarge(usize),
    /// A private key text longer than `MAX_PRIVATE_KEY_BYTES`.
    TooLong,
    /// An RSA key whose private numbers do not belong to its public key.
    RsaMismatch,
}

/// A generation or encoding failure inside ssh-key; the text is for the log only.
#[derive(Debug)]
pub struct KeyError(pub(super) String);

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::NeedsConversion(what) => write!(f, "this is {what}. {CONVERT_HINT}"),
            ImportError::PemDsa => write!(
                f,
                "this is a PEM DSA private key: DSA keys are not supported ({SUPPORTED}), so \
                 converting it would not help; generate a new key instead"
            ),
            ImportError::Putty => write!(
                f,
                "this is a PuTTY private key (.ppk). Only OpenSSH private keys are accepted: \
                 convert it with `puttygen FILE -O private-openssh-new -o NEW_FILE` and \
                 import NEW_FILE"
            ),
            ImportError::PublicKey => write!(
                f,
                "this is a public key; import the private key (the file without .pub, \
                 starting with -----BEGIN OPENSSH PRIVATE KEY-----)"
            ),
            ImportError::Unsupported(algorithm) => write!(
                f,
                "keys of type {algorithm} are not supported ({SUPPORTED})"
            ),
            ImportError::Unreadable => write!(
                f,
                "private_key is not a readable OpenSSH private key: expected the whole file, \
                 from -----BEGIN OPENSSH PRIVATE KEY----- to -----END OPENSSH PRIVATE KEY-----"
            ),
            ImportError::WrongPassphrase => write!(f, "the passphrase does not decrypt this key"),
            ImportError::NotEncrypted => {
                write!(f, "the key is not encrypted; send no passphrase with it")
            }
            ImportError::RsaTooSmall(bits) => write!(
                f,
                "an RSA key must have at least {MIN_RSA_BITS} bits; this one has {bits}"
            ),
            ImportError::RsaTooLarge(bits) => write!(
                f,
                "an RSA key must have at most {MAX_RSA_BITS} bits; this one has {bits}"
            ),
            ImportError::TooLong => write!(
                f,
                "must be at most {MAX_PRIVATE_KEY_BYTES} bytes (a 16384-bit RSA key with a \
                 passphrase is about 13 KB)"
            ),
            ImportError::RsaMismatch => write!(
                f,
                "the RSA key's private numbers do not belong to its public key (e must be odd \
                 and at least 3, p and q odd, n must be p*q, e*d must be 1 modulo lcm(p-1, \
                 q-1), iqmp the inverse of q modulo p): no signature made with it would verify"
            ),
            ImportError::TooManyRounds(rounds) => write!(
                f,
                "the key's passphrase protection asks for {rounds} bcrypt rounds; at most \
                 {MAX_BCRYPT_ROUNDS} are accepted (re-protect it with `ssh-keygen -p -a 100 \
                 -f FILE`)"
            ),
        }
    }
}

impl std::error::Error for ImportError {}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ssh-key: {}", self.0)
    }
}

impl std::error::Error for KeyError {}

impl From<ssh_key::Error> for KeyError {
    fn from(err: ssh_key::Error) -> KeyError {
        KeyError(err.to_string())
    }
}

/// docs/api.md "Keys": the conversion hint for PEM and PKCS#8 keys.
pub const CONVERT_HINT: &str = "Only OpenSSH private keys (-----BEGIN OPENSSH PRIVATE KEY-----) \
    are accepted. Convert it with `ssh-keygen -p -f FILE`: it rewrites FILE in place in the \
    OpenSSH format (give the current passphrase, then the same one again, a new one, or none); \
    then import FILE again";

/// The algorithms import and generation accept, for messages.
const SUPPORTED: &str = "supported: ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, \
    ecdsa-sha2-nistp384, ecdsa-sha2-nistp521";
