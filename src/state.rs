//! `AppState`: the one value shared by every worker thread.
//!
//! It holds the configuration (read-only after start-up), the database (whose list memory,
//! the group tree included, lives in the store: `store::list`), the vault session
//! (`session::Session`: the vault, its master password checks, locks and `--auto-lock`
//! clock, with the lock order in its module doc), the places for slow work outside the
//! session (`Slots`: bcrypt checks, RSA generations), and the SSH agent's share (its socket
//! and the sign requests waiting for approval).
//!
//! Invariants: nothing here runs slow work or holds a lock of its own; a lock (by a
//! request, the agent or `--auto-lock`) always ends the agent's approvals after the vault
//! lock is released, since a waiting sign request holds the approvals' lock while it asks
//! whether the vault is locked.

use std::time::Duration;

use crate::agent_share::AgentShare;
use crate::config::Config;
use crate::session::slots::Slots;
use crate::session::Session;
use crate::store::Db;
use crate::sync_share::SyncShare;
use crate::vault::{Vault, VaultError};

/// bcrypt-pbkdf checks of an imported key's passphrase running at once; one more answers
/// 503 `BUSY`. Each costs up to ~8 s of CPU (1,024 rounds); two are what two cores give.
pub const MAX_BCRYPT_CHECKS: usize = 2;
/// RSA generations running at once; one more answers 503 `BUSY`. Each takes a worker for
/// up to ~20 s (4096 bits, ssh-key 0.6).
pub const MAX_RSA_GENERATIONS: usize = 2;

pub struct AppState {
    pub config: Config,
    pub db: Db,
    /// The vault and everything that guards its master password.
    pub session: Session,
    /// Places for bcrypt-pbkdf checks of an imported key's passphrase (`try_take`).
    pub bcrypt_checks: Slots,
    /// Places for RSA key generations (`try_take`).
    pub rsa_generations: Slots,
    /// The SSH agent's socket and its sign requests waiting for approval (docs/agent.md "SSH
    /// agent").
    pub agent: AgentShare,
    /// Sync between the user's machines (docs/sync.md): the live engine's data.
    pub sync: SyncShare,
}

impl AppState {
    /// A state on an in-memory database with default flags, for unit tests of handlers.
    #[cfg(test)]
    pub fn for_tests(vault: Vault) -> AppState {
        let args = ["--data-dir", "/unused"].map(String::from);
        let Ok(crate::config::Command::Run(config)) =
            crate::config::Command::parse(args, &std::collections::HashMap::new())
        else {
            panic!("default flags parse to a run command");
        };
        let db = crate::store::open_in_memory().expect("in-memory database opens");
        AppState::new(*config, db, vault)
    }

    pub fn new(config: Config, db: Db, vault: Vault) -> AppState {
        let agent = AgentShare::new(config.agent.as_ref());
        AppState {
            config,
            db,
            session: Session::new(vault),
            bcrypt_checks: Slots::new(MAX_BCRYPT_CHECKS),
            rsa_generations: Slots::new(MAX_RSA_GENERATIONS),
            agent,
            sync: SyncShare::default(),
        }
    }

    /// Locks the vault (`Session::lock`; `by` is `request` or `agent`), then the SSH agent's
    /// waiting sign requests fail and its remembered approvals go.
    pub fn lock_vault(&self, by: &str) -> Result<(), VaultError> {
        self.session.lock(&self.db, by)?;
        // After the vault lock is released: a waiting sign request holds the approvals'
        // lock while it asks whether the vault is locked.
        self.agent.approvals.vault_locked();
        // No lock held here (the sync engine's comes first in the lock order); a cycle
        // under way keeps it, and the sync thread drops it at its next look.
        self.sync.forget_key();
        Ok(())
    }

    /// `--auto-lock`: locks the vault when it was idle for `after` (`Session::lock_if_idle`),
    /// then ends the agent's approvals as `lock_vault` does. Returns true when it locked.
    pub fn lock_if_idle(&self, after: Duration) -> bool {
        let locked = self.session.lock_if_idle(&self.db, after);
        if locked {
            // Sign requests waiting for approval fail, and remembered approvals go (after the
            // vault lock is released, as in `lock_vault`).
            self.agent.approvals.vault_locked();
        }
        locked
    }
}
