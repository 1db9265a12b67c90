//! `AppState`: the one value shared by every worker thread.
//!
//! Lock order when both are needed: vault first, then db (style §1.3). Config is read-only
//! after start-up. Besides the two mutexes it holds one counter: the RSA generations in
//! progress (`AtomicUsize`).

use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard};

use crate::config::Config;
use crate::store::Db;
use crate::vault::Vault;

pub struct AppState {
    pub config: Config,
    pub db: Db,
    vault: Mutex<Vault>,
    /// RSA key generations running now (api::keys caps them). Lock-free on purpose: a
    /// generation takes seconds and must not hold a lock; the counter is only ever moved by
    /// a compare-and-swap that stays under the cap and by the slot's drop.
    pub rsa_generations: AtomicUsize,
}

impl AppState {
    pub fn new(config: Config, db: Db, vault: Vault) -> AppState {
        AppState {
            config,
            db,
            vault: Mutex::new(vault),
            rsa_generations: AtomicUsize::new(0),
        }
    }

    /// The vault, recovering from a poisoned lock: every vault state change is one
    /// assignment at the end, so a panic half-way leaves the previous state in place.
    pub fn vault(&self) -> MutexGuard<'_, Vault> {
        self.vault.lock().unwrap_or_else(|poisoned| {
            log::warn!("recovered the vault lock after a panic in another request");
            poisoned.into_inner()
        })
    }

    pub fn vault_locked(&self) -> bool {
        self.vault().is_locked()
    }
}
