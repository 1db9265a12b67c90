//! Other tools' saved-password schemes, opened for an import (docs/import.md, "Secrets"):
//! WinSCP's scrambling, SecureCRT's `02`/`03` and older Blowfish form, mRemoteNG's AES-GCM,
//! Remmina's 3DES. Each function returns the password or `None`; none of them can fail
//! louder, and none logs or formats what it opens.
//!
//! Invariants: every derived key and every plaintext buffer is wiped on drop
//! (`Zeroizing`/`Secret`); a scheme with a per-value salt derives once per distinct salt
//! and passphrase in one import (`DerivedKeys`), which also counts the derivations and
//! their time for the benchmark.

pub mod mremoteng;
pub mod remmina;
pub mod securecrt;
pub mod winscp;

use std::collections::HashMap;
use std::time::Duration;

use zeroize::Zeroizing;

/// Keys derived during one import, by scheme, salt and passphrase digest.
#[derive(Default)]
pub struct DerivedKeys {
    keys: HashMap<(&'static str, Vec<u8>), Zeroizing<Vec<u8>>>,
    /// How many derivations ran (a cache hit is not one).
    pub derivations: u32,
    /// Their total time.
    pub derive_time: Duration,
}

impl DerivedKeys {
    /// The key for `(scheme, salt)`, derived by `derive` the first time. `salt` must bind
    /// everything the key depends on besides the scheme (include the passphrase's SHA-256
    /// when one import could use two passphrases).
    pub fn get_or_derive(
        &mut self,
        scheme: &'static str,
        salt: &[u8],
        derive: impl FnOnce() -> Option<Zeroizing<Vec<u8>>>,
    ) -> Option<&[u8]> {
        let entry = (scheme, salt.to_vec());
        if !self.keys.contains_key(&entry) {
            let started = std::time::Instant::now();
            let key = derive();
            self.derivations += 1;
            self.derive_time += started.elapsed();
            self.keys.insert(entry.clone(), key?);
        }
        self.keys.get(&entry).map(|key| key.as_slice())
    }
}

impl std::fmt::Debug for DerivedKeys {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "DerivedKeys({} derived, redacted)", self.derivations)
    }
}

/// `sha256:` and the hex SHA-256 of `parts` one after another: an import's source
/// fingerprint (names and bytes of its files), and the record of a sealed password (its
/// sealed bytes, random per seal, so nothing about the password itself).
pub fn sha256_hex(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut out = String::from("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}
