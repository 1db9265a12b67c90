//! The vault: holds the data key that seals every secret, and its lock state.
//!
//! Invariants: the only module that uses aes-gcm, pbkdf2 or sha2; never runs SQL (main and
//! `api::vault` move the stored bytes); never logs, formats or returns a secret; each state
//! change is one assignment, so a panic half-way leaves the previous state.

pub mod seal;
pub mod secret;

use std::fmt;

pub use crate::vault::seal::{DataKey, SealContext};
pub use crate::vault::secret::Secret;

/// The vault's state (api-decisions §2).
#[derive(Debug)]
pub enum Vault {
    /// No master password: the data key is stored unwrapped and always available.
    NoPassword(DataKey),
}

/// What a vault operation can fail with. Never carries secret material.
#[derive(Debug, PartialEq, Eq)]
pub enum VaultError {
    /// The vault is locked; unlock first.
    Locked,
    /// A stored secret did not open: tampered bytes, another row's ciphertext, another key.
    Corrupt {
        table: &'static str,
        field: &'static str,
    },
}

impl fmt::Display for VaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VaultError::Locked => write!(f, "the vault is locked"),
            VaultError::Corrupt { table, field } => {
                write!(f, "a sealed {table}.{field} value did not open")
            }
        }
    }
}

impl std::error::Error for VaultError {}

impl Vault {
    pub fn is_locked(&self) -> bool {
        match self {
            Vault::NoPassword(_) => false,
        }
    }

    /// Seals `plaintext` for the place `context` names. Fails only while locked.
    pub fn seal(&self, context: SealContext<'_>, plaintext: &[u8]) -> Result<Vec<u8>, VaultError> {
        Ok(self.data_key()?.seal(context, plaintext))
    }

    /// Opens a value sealed for the place `context` names.
    pub fn open(&self, context: SealContext<'_>, sealed: &[u8]) -> Result<Secret, VaultError> {
        self.data_key()?
            .open(context, sealed)
            .map_err(|_| VaultError::Corrupt {
                table: context.table,
                field: context.field,
            })
    }

    fn data_key(&self) -> Result<&DataKey, VaultError> {
        match self {
            Vault::NoPassword(key) => Ok(key),
        }
    }
}
