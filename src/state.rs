//! `AppState`: the one value shared by every worker thread.
//!
//! Lock order when both are needed: vault first, then db (style §1.3). Config is read-only
//! after start-up. Besides the two mutexes it holds only counters: the last-activity clock
//! (`AtomicU64`, for `--auto-lock`), the password-guess throttle (atomics) and the RSA
//! key generations in progress (`AtomicUsize`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::agent::Agent;
use crate::config::Config;
use crate::store::Db;
use crate::vault::{DataKey, PasswordThrottle, Secret, Vault, VaultError, WrappedKey};

pub struct AppState {
    pub config: Config,
    pub db: Db,
    vault: Mutex<Vault>,
    /// Slows down master password guesses (unlock, password change and removal).
    pub password_checks: PasswordThrottle,
    /// When the process started; the zero of `last_activity_ms`.
    started: Instant,
    /// Milliseconds after `started` of the last request that counts as activity for
    /// `--auto-lock`. Lock-free on purpose: every request writes it (one relaxed store),
    /// and the auto-lock thread only compares it with the clock; a read racing a write
    /// costs at most one tick of lateness.
    last_activity_ms: AtomicU64,
    /// RSA key generations running now (api::keys caps them). Lock-free on purpose: a
    /// generation takes seconds and must not hold a lock; the counter is only ever moved by
    /// a compare-and-swap that stays under the cap and by the slot's drop.
    pub rsa_generations: AtomicUsize,
    /// The SSH agent's socket and its requests waiting for approval (README "SSH agent").
    pub agent: Agent,
}

/// Why a master password check did not pass.
#[derive(Debug, PartialEq, Eq)]
pub enum PasswordError {
    /// Wrong password, no password set, or the password changed during the check.
    Vault(VaultError),
    /// All password check slots are taken; the client may retry.
    Busy,
}

impl std::fmt::Display for PasswordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PasswordError::Vault(err) => err.fmt(f),
            PasswordError::Busy => f.write_str("too many password checks at once"),
        }
    }
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
        AppState::new(config, db, vault)
    }

    pub fn new(config: Config, db: Db, vault: Vault) -> AppState {
        let agent = Agent::new(config.agent.as_ref());
        AppState {
            config,
            db,
            vault: Mutex::new(vault),
            password_checks: PasswordThrottle::default(),
            started: Instant::now(),
            last_activity_ms: AtomicU64::new(0),
            rsa_generations: AtomicUsize::new(0),
            agent,
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

    /// Unlocks the vault with `password` (README "Vault"): the one path of
    /// `POST /api/vault/unlock` and the SSH agent's `UNLOCK`, so both go through the same
    /// guess throttle. Unlocking an unlocked vault with the right password succeeds.
    pub fn unlock_vault(&self, password: &Secret) -> Result<(), PasswordError> {
        let _slot = self.password_checks.begin().ok_or(PasswordError::Busy)?;
        let Some(wrapped) = self.vault().wrapped_key().cloned() else {
            return Err(PasswordError::Vault(VaultError::NoPassword));
        };
        let key = self.check_password(&wrapped, password)?;
        // Fails when the password changed while it was checked: it is no longer the password.
        let outcome = self.vault().unlock(&wrapped, key);
        outcome.map_err(PasswordError::Vault)?;
        // The check may have taken seconds; the auto-lock countdown starts from the unlock.
        self.touch();
        Ok(())
    }

    /// Checks `password` against `wrapped` (PBKDF2, no lock held); the caller holds a slot
    /// of `password_checks`. A wrong password waits the throttle's delay before its error,
    /// still holding no lock: other requests go on.
    pub fn check_password(
        &self,
        wrapped: &WrappedKey,
        password: &Secret,
    ) -> Result<DataKey, PasswordError> {
        match wrapped.open(password.expose()) {
            Ok(key) => {
                self.password_checks.succeeded();
                Ok(key)
            }
            Err(_) => {
                // README "Vault": repeated wrong passwords are slowed down, never locked out.
                let delay = self.password_checks.failed();
                log::warn!(
                    "wrong master password; answering in {} ms",
                    delay.as_millis()
                );
                std::thread::sleep(delay);
                Err(PasswordError::Vault(VaultError::InvalidPassword))
            }
        }
    }

    /// Records activity now: the auto-lock countdown starts again.
    pub fn touch(&self) {
        self.last_activity_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// How long since the last activity (or since start, before any).
    pub fn idle_for(&self) -> Duration {
        let last = self.last_activity_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.elapsed_ms().saturating_sub(last))
    }

    /// Locks the vault when it is unlocked, has a master password and nothing happened
    /// for `after`. Returns true when it locked it. The idle time is checked again under
    /// the vault lock, so a request that arrived meanwhile keeps the vault open.
    pub fn lock_if_idle(&self, after: Duration) -> bool {
        if self.idle_for() < after {
            return false;
        }
        let mut vault = self.vault();
        if vault.is_locked() || !vault.has_password() || self.idle_for() < after {
            return false;
        }
        let locked = vault.lock().is_ok();
        // Sign requests waiting for approval fail, and remembered approvals go.
        self.agent.approvals.vault_locked();
        locked
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use crate::state::AppState;
    use crate::vault::kdf::{Header, PBKDF2_ROUNDS_MIN};
    use crate::vault::{DataKey, Vault, WrappedKey};

    fn state_with(vault: Vault) -> AppState {
        AppState::for_tests(vault)
    }

    /// An unlocked vault with a (never stored) master password.
    fn unlocked() -> Vault {
        let header = Header::with_rounds(PBKDF2_ROUNDS_MIN).to_bytes();
        let mut vault = Vault::from_stored(Some(&header), &[0u8; 61]).unwrap();
        let Vault::Locked(wrapped) = &vault else {
            panic!("a stored header starts locked");
        };
        let wrapped: WrappedKey = wrapped.clone();
        vault.unlock(&wrapped, DataKey::generate()).unwrap();
        vault
    }

    #[test]
    fn idle_vault_with_a_password_is_locked() {
        let state = state_with(unlocked());
        assert!(!state.vault_locked());
        assert!(state.lock_if_idle(Duration::ZERO));
        assert!(state.vault_locked());
        assert!(!state.lock_if_idle(Duration::ZERO), "already locked");
    }

    #[test]
    fn vault_used_within_the_limit_stays_unlocked() {
        let state = state_with(unlocked());
        state.touch();
        assert!(state.idle_for() < Duration::from_secs(3600));
        assert!(!state.lock_if_idle(Duration::from_secs(3600)));
        assert!(!state.vault_locked());
    }

    #[test]
    fn vault_without_a_password_is_never_auto_locked() {
        let state = state_with(Vault::NoPassword(DataKey::generate()));
        assert!(!state.lock_if_idle(Duration::ZERO));
        assert!(!state.vault_locked());
    }
}
