//! The vault: holds the data key that seals every secret, and its lock state.
//!
//! One random 256-bit data key seals every secret (`seal`); with a master password set, the
//! data key is stored wrapped under a key derived from the password (`kdf`). Changing the
//! password re-wraps only the data key, and no secret is re-encrypted (docs/security.md, "The vault's
//! threat model").
//!
//! Invariants: the only module that uses aes-gcm, pbkdf2 or sha2; never runs SQL (lifecycle
//! and `api::vault` move the stored bytes, through the `persist` callbacks below); never logs,
//! formats or returns a secret; each state change is one assignment at the end, so a panic
//! or an error half-way leaves the previous state; the data key is wiped when the state
//! that holds it is replaced (lock) or dropped. PBKDF2 never runs inside a `Vault` method:
//! the slow halves (`WrappedKey::open`, `NewPassword::derive`) take no `&Vault`, so the
//! caller runs them without holding the vault lock.

pub mod bundle;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod bundle_timing;
#[allow(dead_code)]
pub mod foreign;
pub mod kdf;
pub mod random;
pub mod seal;
pub mod secret;
pub mod throttle;

use std::fmt;

use crate::vault::kdf::{Header, PasswordKey};
pub use crate::vault::random::{new_id, random_bytes};
pub use crate::vault::seal::{DataKey, SealContext};
pub use crate::vault::secret::Secret;
pub use crate::vault::throttle::PasswordThrottle;

/// docs/api.md "Vault": a master password is 1 to 1,024 bytes of UTF-8.
/// A passphrase of a hundred words fits; a megabyte body is not hashed.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// The vault's state (docs/api.md, "Vault").
#[derive(Debug)]
pub enum Vault {
    /// No master password: the data key is stored unwrapped and always available.
    NoPassword(DataKey),
    /// A master password is set and the data key is not in memory.
    Locked(WrappedKey),
    /// A master password is set and was given: the data key is in memory.
    Unlocked { key: DataKey, wrapped: WrappedKey },
}

/// The data key as stored under a master password: the KDF header and the sealed key.
/// Holds no secret (the key is ciphertext), so it may be cloned and used outside the lock.
#[derive(Clone, PartialEq, Eq)]
pub struct WrappedKey {
    header: Header,
    sealed: Vec<u8>,
}

/// The key of a new master password, derived in advance (slow) so that the state change
/// under the vault lock is fast.
pub struct NewPassword {
    header: Header,
    key: PasswordKey,
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
    /// The master password is wrong (or the stored wrapped key was tampered with).
    InvalidPassword,
    /// The operation needs a master password and none is set.
    NoPassword,
    /// The stored vault row cannot be read by this build; the text says why.
    Malformed(String),
}

impl fmt::Display for VaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VaultError::Locked => write!(f, "the vault is locked"),
            VaultError::Corrupt { table, field } => {
                write!(f, "a sealed {table}.{field} value did not open")
            }
            VaultError::InvalidPassword => write!(f, "wrong master password"),
            VaultError::NoPassword => write!(f, "no master password is set"),
            VaultError::Malformed(why) => write!(f, "the stored vault is malformed: {why}"),
        }
    }
}

impl std::error::Error for VaultError {}

impl Vault {
    /// The state stored in the vault row: `header` is `None` when no master password is
    /// set (then `data_key` is the raw key); with a header the service starts locked.
    pub fn from_stored(header: Option<&[u8]>, data_key: &[u8]) -> Result<Vault, VaultError> {
        match header {
            None => DataKey::from_bytes(data_key)
                .map(Vault::NoPassword)
                .ok_or_else(|| {
                    VaultError::Malformed(format!(
                        "the data key is {} bytes, expected 32",
                        data_key.len()
                    ))
                }),
            Some(header) => Ok(Vault::Locked(WrappedKey::from_stored(header, data_key)?)),
        }
    }

    pub fn is_locked(&self) -> bool {
        matches!(self, Vault::Locked(_))
    }

    pub fn has_password(&self) -> bool {
        !matches!(self, Vault::NoPassword(_))
    }

    /// What a master password is checked against; `None` when no password is set.
    pub fn wrapped_key(&self) -> Option<&WrappedKey> {
        match self {
            Vault::NoPassword(_) => None,
            Vault::Locked(wrapped) | Vault::Unlocked { wrapped, .. } => Some(wrapped),
        }
    }

    /// True when the password state is still `expected` (the same wrapped key, or still no
    /// password), i.e. nothing changed it since `expected` was read.
    pub fn password_is(&self, expected: Option<&WrappedKey>) -> bool {
        self.wrapped_key() == expected
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

    /// Puts `key`, opened from `checked`, in memory. An unlocked vault stays as it is.
    /// Fails with `InvalidPassword` when the password changed since `checked` was read
    /// (the key opened under a password that is no longer the vault's).
    pub fn unlock(&mut self, checked: &WrappedKey, key: DataKey) -> Result<(), VaultError> {
        match self {
            Vault::NoPassword(_) => Err(VaultError::NoPassword),
            Vault::Locked(wrapped) | Vault::Unlocked { wrapped, .. } if wrapped != checked => {
                Err(VaultError::InvalidPassword)
            }
            Vault::Unlocked { .. } => Ok(()),
            Vault::Locked(wrapped) => {
                let wrapped = wrapped.clone();
                *self = Vault::Unlocked { key, wrapped };
                Ok(())
            }
        }
    }

    /// Drops the data key from memory (wiped as it drops). Locking a locked vault is fine;
    /// without a master password there would be no way back in.
    pub fn lock(&mut self) -> Result<(), VaultError> {
        match self {
            Vault::NoPassword(_) => Err(VaultError::NoPassword),
            Vault::Locked(_) => Ok(()),
            Vault::Unlocked { wrapped, .. } => {
                let wrapped = wrapped.clone();
                *self = Vault::Locked(wrapped);
                Ok(())
            }
        }
    }

    /// Wraps the data key under `new` (the first password, or a change) and makes that the
    /// vault's state. `persist(header, data_key)` must store both in one atomic write; the
    /// state changes only when it succeeds. The caller checked the current password.
    pub fn set_password<E: From<VaultError>>(
        &mut self,
        new: &NewPassword,
        persist: impl FnOnce(Option<&[u8]>, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let key = self.data_key()?;
        let wrapped = WrappedKey {
            header: new.header.clone(),
            sealed: new.key.seal_data_key(&new.header, key),
        };
        persist(Some(&wrapped.header.to_bytes()), &wrapped.sealed)?;
        *self = Vault::Unlocked {
            key: key.duplicate(),
            wrapped,
        };
        Ok(())
    }

    /// Goes back to no master password: the data key is stored unwrapped again.
    /// `persist` as for `set_password`. The caller checked the current password.
    pub fn remove_password<E: From<VaultError>>(
        &mut self,
        persist: impl FnOnce(Option<&[u8]>, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let key = match self {
            Vault::NoPassword(_) => return Err(VaultError::NoPassword.into()),
            Vault::Locked(_) => return Err(VaultError::Locked.into()),
            Vault::Unlocked { key, .. } => key,
        };
        persist(None, key.expose())?;
        *self = Vault::NoPassword(key.duplicate());
        Ok(())
    }

    fn data_key(&self) -> Result<&DataKey, VaultError> {
        match self {
            Vault::NoPassword(key) | Vault::Unlocked { key, .. } => Ok(key),
            Vault::Locked(_) => Err(VaultError::Locked),
        }
    }
}

impl WrappedKey {
    /// Parses the stored header (strictly, see `kdf`) and keeps the sealed key.
    pub fn from_stored(header: &[u8], sealed: &[u8]) -> Result<WrappedKey, VaultError> {
        let header = Header::parse(header).map_err(|err| VaultError::Malformed(err.to_string()))?;
        Ok(WrappedKey {
            header,
            sealed: sealed.to_vec(),
        })
    }

    /// Derives the key of `password` and opens the data key with it. Slow on purpose
    /// (PBKDF2): call it holding no lock.
    pub fn open(&self, password: &[u8]) -> Result<DataKey, VaultError> {
        self.header
            .derive(password)
            .open_data_key(&self.header, &self.sealed)
            .map_err(|_| VaultError::InvalidPassword)
    }
}

impl NewPassword {
    /// A fresh header (new salt, `PBKDF2_ROUNDS_NEW`) and the key of `password` under it.
    /// Slow on purpose (PBKDF2): call it holding no lock.
    pub fn derive(password: &[u8]) -> NewPassword {
        NewPassword::derive_with(Header::generate(), password)
    }

    fn derive_with(header: Header, password: &[u8]) -> NewPassword {
        let key = header.derive(password);
        NewPassword { header, key }
    }
}

impl fmt::Debug for WrappedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WrappedKey {{ rounds: {} }}", self.header.rounds())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::{open_in_memory, vault_meta, Db, StoreError};
    use crate::vault::kdf::{Header, PBKDF2_ROUNDS_MIN};
    use crate::vault::{DataKey, NewPassword, SealContext, Vault, VaultError};

    const PLACE: SealContext<'static> = SealContext {
        table: "hosts",
        row_id: "h1",
        field: "password",
    };

    /// A new password at the lowest accepted round count, to keep the tests fast.
    fn quick(password: &str) -> NewPassword {
        NewPassword::derive_with(Header::with_rounds(PBKDF2_ROUNDS_MIN), password.as_bytes())
    }

    fn save(db: &Db, header: Option<&[u8]>, data_key: &[u8]) -> Result<(), VaultError> {
        db.write(|tx| vault_meta::save(tx, header, data_key))
            .map_err(|err| VaultError::Malformed(err.to_string()))
    }

    /// The vault as a restart would see it: read back from the database, then unlocked
    /// with `password`. `None` when the password does not open it.
    fn restart_and_unlock(db: &Db, password: &str) -> Option<Vault> {
        let row = db.read(vault_meta::load).unwrap().unwrap();
        let mut vault = Vault::from_stored(row.header.as_deref(), &row.data_key).unwrap();
        assert!(vault.is_locked());
        let wrapped = vault.wrapped_key().unwrap().clone();
        let key = wrapped.open(password.as_bytes()).ok()?;
        vault.unlock(&wrapped, key).unwrap();
        Some(vault)
    }

    /// Asserts that of the two test passwords `old` and `new`, the stored vault opens with
    /// `password` alone, and the secret `sealed` reads back; the vault it opened.
    #[track_caller]
    fn only_opener(db: &Db, password: &str, sealed: &[u8]) -> Vault {
        for other in ["old", "new"].iter().filter(|other| **other != password) {
            assert!(restart_and_unlock(db, other).is_none(), "{other} opens too");
        }
        let reopened = restart_and_unlock(db, password).expect("the password opens");
        assert_eq!(
            reopened.open(PLACE, sealed).unwrap().expose(),
            b"server-secret"
        );
        reopened
    }

    /// A database holding a vault with master password `old` and one sealed secret.
    fn vault_with_password(old: &str) -> (Db, Vault, Vec<u8>) {
        let db = open_in_memory().unwrap();
        let key = DataKey::generate();
        save(&db, None, key.expose()).unwrap();
        let mut vault = Vault::NoPassword(key);
        let sealed = vault.seal(PLACE, b"server-secret").unwrap();
        vault
            .set_password(&quick(old), |header, data_key| save(&db, header, data_key))
            .unwrap();
        (db, vault, sealed)
    }

    #[test]
    fn setting_a_password_locks_the_next_start_and_the_password_opens_it() {
        let (db, vault, sealed) = vault_with_password("old");
        assert!(vault.has_password() && !vault.is_locked());
        only_opener(&db, "old", &sealed);
    }

    #[test]
    fn wrong_password_does_not_open_the_stored_vault() {
        let (db, _vault, _sealed) = vault_with_password("old");
        assert!(restart_and_unlock(&db, "olD").is_none());
        assert!(restart_and_unlock(&db, "").is_none());
    }

    #[test]
    fn locked_vault_neither_seals_nor_opens_and_lock_wipes_the_key_from_the_state() {
        let (_db, mut vault, sealed) = vault_with_password("old");
        vault.lock().unwrap();
        assert!(vault.is_locked());
        assert!(matches!(vault, Vault::Locked(_)));
        assert_eq!(vault.seal(PLACE, b"x").unwrap_err(), VaultError::Locked);
        assert_eq!(vault.open(PLACE, &sealed).unwrap_err(), VaultError::Locked);
        assert_eq!(vault.lock(), Ok(()), "locking a locked vault is fine");
    }

    #[test]
    fn lock_without_a_password_is_refused() {
        let mut vault = Vault::NoPassword(DataKey::generate());
        assert_eq!(vault.lock(), Err(VaultError::NoPassword));
        assert!(!vault.is_locked());
    }

    #[test]
    fn unlock_with_a_key_checked_against_an_older_password_is_refused() {
        let (db, mut vault, _sealed) = vault_with_password("old");
        let stale = vault.wrapped_key().unwrap().clone();
        let key = stale.open(b"old").unwrap();
        vault
            .set_password(&quick("new"), |header, data_key| {
                save(&db, header, data_key)
            })
            .unwrap();
        vault.lock().unwrap();
        assert_eq!(vault.unlock(&stale, key), Err(VaultError::InvalidPassword));
        assert!(vault.is_locked());
    }

    #[test]
    fn password_change_keeps_every_secret_readable_and_retires_the_old_password() {
        let (db, mut vault, sealed) = vault_with_password("old");
        vault
            .set_password(&quick("new"), |header, data_key| {
                save(&db, header, data_key)
            })
            .unwrap();
        assert_eq!(
            vault.open(PLACE, &sealed).unwrap().expose(),
            b"server-secret"
        );
        only_opener(&db, "new", &sealed);
    }

    #[test]
    fn crash_inside_the_change_transaction_leaves_the_old_password_working() {
        let (db, mut vault, sealed) = vault_with_password("old");
        // The new header and key are written, then the process "dies" before the commit:
        // the transaction rolls back, as SQLite's journal does after a real crash.
        let crashed = vault.set_password(&quick("new"), |header, data_key| {
            db.write(|tx| {
                vault_meta::save(tx, header, data_key)?;
                Err::<(), _>(StoreError::Sqlite("simulated crash before commit".into()))
            })
            .map_err(|err| VaultError::Malformed(err.to_string()))
        });
        assert!(crashed.is_err());
        let reopened = only_opener(&db, "old", &sealed);
        // The running vault kept its state too: the old wrapped key, still unlocked.
        assert!(vault.password_is(reopened.wrapped_key()));
    }

    #[test]
    fn crash_after_the_commit_leaves_the_new_password_working() {
        let (db, mut vault, sealed) = vault_with_password("old");
        // Committed, then the process "dies" before the in-memory state changes.
        let crashed = vault.set_password(&quick("new"), |header, data_key| {
            save(&db, header, data_key)?;
            Err(VaultError::Malformed("simulated crash after commit".into()))
        });
        assert!(crashed.is_err());
        only_opener(&db, "new", &sealed);
    }

    #[test]
    fn header_and_key_written_apart_would_open_with_neither_password() {
        // Why the header and the wrapped key go into the row in one statement: a crash
        // between two separate writes would leave the new header with the old key.
        let (db, mut vault, _sealed) = vault_with_password("old");
        let old_key = db.read(vault_meta::load).unwrap().unwrap().data_key;
        vault
            .set_password(&quick("new"), |header, _data_key| {
                save(&db, header, &old_key)
            })
            .unwrap();
        assert!(restart_and_unlock(&db, "old").is_none());
        assert!(restart_and_unlock(&db, "new").is_none());
    }

    #[test]
    fn removing_the_password_stores_the_key_unwrapped_and_keeps_secrets_readable() {
        let (db, mut vault, sealed) = vault_with_password("old");
        vault
            .remove_password(|header, data_key| save(&db, header, data_key))
            .unwrap();
        assert!(!vault.has_password());
        let row = db.read(vault_meta::load).unwrap().unwrap();
        assert!(row.header.is_none());
        let reopened = Vault::from_stored(None, &row.data_key).unwrap();
        assert!(!reopened.is_locked());
        assert_eq!(
            reopened.open(PLACE, &sealed).unwrap().expose(),
            b"server-secret"
        );
    }

    #[test]
    fn stored_row_with_a_bad_header_or_key_length_is_refused() {
        let short_key = Vault::from_stored(None, &[0u8; 31]).unwrap_err();
        assert!(matches!(short_key, VaultError::Malformed(_)));
        let mut header = Header::with_rounds(PBKDF2_ROUNDS_MIN).to_bytes();
        header[0] = 9;
        let bad_version = Vault::from_stored(Some(&header), &[0u8; 61]).unwrap_err();
        assert!(matches!(bad_version, VaultError::Malformed(_)));
    }

    #[test]
    fn debug_of_every_state_shows_no_key_material() {
        let (_db, mut vault, _sealed) = vault_with_password("old");
        let text = format!("{vault:?}");
        assert!(
            text.contains("<redacted>") && text.contains("rounds"),
            "{text}"
        );
        vault.lock().unwrap();
        assert_eq!(
            format!("{vault:?}"),
            "Locked(WrappedKey { rounds: 100000 })"
        );
    }
}
