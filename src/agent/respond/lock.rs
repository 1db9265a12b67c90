//! `LOCK` (`ssh-add -x`) and `UNLOCK` (`ssh-add -X`): the vault session's lock and unlock,
//! as the vault endpoints make them (one guess throttle, one audit entry).
//!
//! Invariants: the passphrase of `UNLOCK` is the master password and goes straight into a
//! `Secret`; a lock is refused without a master password.

use crate::agent::proto;
use crate::state::AppState;
use crate::vault::{Secret, VaultError};

/// `LOCK` (`ssh-add -x`): locks the vault, as `POST /api/vault/lock`. The passphrase
/// `ssh-add` asks for is not used: the vault unlocks with its master password. Refused
/// without a master password (there would be no way back in).
pub(super) fn lock(state: &AppState) -> Result<(), ()> {
    match state.lock_vault("agent") {
        Ok(()) => {
            log::info!("vault locked (ssh-add -x)");
            Ok(())
        }
        Err(VaultError::NoPassword) => {
            log::info!("agent: refused to lock: no master password is set");
            Err(())
        }
        Err(err) => {
            log::warn!("agent: cannot lock: {err}");
            Err(())
        }
    }
}

/// `UNLOCK` (`ssh-add -X`) of a locked vault: the passphrase is the master password,
/// checked as `POST /api/vault/unlock` checks it.
pub(super) fn unlock(state: &AppState, passphrase: &[u8]) -> Vec<u8> {
    let password = Secret::new(passphrase.to_vec());
    match state.session.unlock(&state.db, &password, "agent") {
        Ok(()) => {
            log::info!("vault unlocked (ssh-add -X)");
            proto::success()
        }
        Err(err) => {
            log::info!("agent: unlock refused: {err}");
            proto::failure()
        }
    }
}
