//! The only user of the ssh-key crate: reads OpenSSH private keys (checking a passphrase),
//! generates new ones, and derives what the API shows (type, public key, fingerprint); also
//! reads host keys and certificates, hashes known_hosts names, signs for the agent and takes
//! keys from `ssh-add`. This file is the surface callers use; each job lives in its own file:
//!
//! - `parse`: reading private key texts and the checks before and after the passphrase;
//! - `encrypted`: the bcrypt-pbkdf round cap and decryption;
//! - `rsa_checks`: an RSA key's size and whether its private numbers belong to it;
//! - `generate`: new keys, and `VaultRng`, the random source ssh-key takes;
//! - `public`: supported algorithm names, public key lines, blobs and fingerprints;
//! - `sign`: the agent's signatures and session-binding checks;
//! - `from_agent`: keys `ssh-add` sends;
//! - `host_keys`: host keys, certificates and known_hosts name hashing;
//! - `certificate`: user certificates attached to a key (read by hand: ssh-key 0.6.7
//!   refuses ssh-keygen's "forever" ones);
//! - `openssh_key`, `error`, `limits`: the answers, the refusals and the sizes accepted;
//! - `ecdsa_workaround`: the ECDSA keys ssh-key 0.6.7 cannot decode (its module doc names
//!   the upstream bug and when to remove it); `wire`: the SSH encodings ssh-key offers no
//!   way into.
//!
//! Invariants: pure functions, no store and no HTTP; private key text and passphrases come
//! in and go out as `vault::Secret`, and ssh-key's `PrivateKey` wipes itself on drop; no
//! error or message carries key material. `ssh_key` is named in this module and its
//! submodules only. The files below import each other directly, never through this one.

mod certificate;
mod ecdsa_workaround;
mod encrypted;
mod error;
#[cfg(test)]
mod fixtures;
mod from_agent;
mod generate;
mod host_keys;
mod limits;
mod openssh_key;
mod parse;
mod public;
mod rsa_checks;
mod sign;
mod wire;

pub use certificate::{
    attached, certificate_blob, certified_by, is_certificate_blob, user_certificate,
};
pub use error::ImportError;
pub use from_agent::from_agent;
pub use generate::generate;
pub use host_keys::{
    hash_name, hashed_name_is_well_formed, host_key, presented_key, HostKey, HostMatcher,
    HOST_HASH_BYTES,
};
pub use openssh_key::OpenSshKey;
pub use parse::{import, read};
pub use public::{blob_fingerprint, public_blob};
pub use sign::{sign, verify_session_bind, RsaHash};
