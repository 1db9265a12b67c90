//! The vault session (docs/api.md "Vault"): the vault behind its mutex, and the one path of
//! every master password check, unlock, lock and auto-lock, shared by the vault endpoints
//! (`api::vault`), the SSH agent's `UNLOCK` and `LOCK`, and `--auto-lock`, so that all of
//! them go through one guess throttle, one audit and one change-feed entry.
//!
//! Lock order: the vault mutex first, then the database (its write lock), never the other
//! way: an unlock, a lock or a password change holds the vault while it logs the change, so
//! a reader that sees the new state finds the entry. The slots' queue mutex (and its
//! condvar), the answer gate's and the throttle's streak are leaves: each is held only to
//! count, never while another lock is taken. No lock is held while slow work runs: PBKDF2
//! and a wrong password's delay run with none (read what is needed, release, derive, lock
//! again and check that nothing changed).
//!
//! Invariants, each with its reason:
//! - A password check is never refused: the right password must always get in. Each
//!   derivation waits its turn (`MAX_PASSWORD_DERIVATIONS`, newest first with every fourth
//!   turn the oldest's), so a new check is not buried behind queued guesses.
//! - A wrong answer leaves through the answer gate, `ANSWER_SPACING_DERIVATIONS` apart, after
//!   its delay: guesses come back slower than new checks are taken.
//! - The vault is recovered from a poisoned lock: every vault state change is one assignment
//!   at the end, so a panic half-way leaves the previous state.
//! - A vault with a request in flight is never auto-locked: a request counts itself
//!   (`activity`) before it looks at the vault, and `lock_if_idle` checks again under the
//!   vault lock, so either it sees the request or the request sees the vault locked.
//! - A failure to log a lock never stops the lock: it must happen even on a full disk.

pub mod activity;
pub mod slots;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::session::activity::{Activity, ActivityClock};
use crate::session::slots::{AnswerGate, Slot, Slots};
use crate::store::audit;
use crate::store::changes::{self, VaultChange};
use crate::store::{self, Db, StoreError};
use crate::vault::{DataKey, NewPassword, PasswordThrottle, Secret, Vault, VaultError, WrappedKey};

/// PBKDF2 derivations of a master password (unlock, change, removal) running at once.
/// Further ones wait their turn and are never refused: the right password always gets
/// checked. Three turns in four go to the newest waiting check and the fourth to the oldest
/// (`Slots::alternating`, `OLDEST_EVERY`), so a check that arrives behind a queue of guesses
/// is checked within a few derivations (repeated guesses come back slower than that, see
/// `ANSWER_SPACING_DERIVATIONS`), and none waits longer than four times its place in
/// arrival order: nobody waits for ever. One at a time leaves the second
/// core to everything else, and bounds guesses sent in parallel to one derivation (~0.1 s)
/// each.
pub const MAX_PASSWORD_DERIVATIONS: usize = 1;
/// Wrong-password answers leave the answer gate at least this many derivations apart, so
/// guesses come back slower than the newest-first turns take new checks.
pub const ANSWER_SPACING_DERIVATIONS: u32 = 3;

/// Why a master password change or removal stored nothing.
#[derive(Debug)]
pub enum ChangeError {
    Vault(VaultError),
    Store(StoreError),
    /// Another request changed or removed the password while this one was checking it:
    /// the check no longer says anything (the client may retry).
    ChangedMeanwhile,
}

/// The vault and everything that guards its master password.
pub struct Session {
    vault: Mutex<Vault>,
    /// The growing delay after consecutive wrong master passwords.
    password_failures: PasswordThrottle,
    /// Places for PBKDF2 derivations of a master password (`take`: waited for).
    password_derivations: Slots,
    /// Wrong-password answers go out through it one at a time, spaced (`AnswerGate`).
    wrong_answers: AnswerGate,
    /// How long the last master-password derivation took, in microseconds.
    last_derivation_us: AtomicU64,
    /// The last activity and the requests in flight, for `--auto-lock`.
    clock: ActivityClock,
}

impl Session {
    pub fn new(vault: Vault) -> Session {
        Session {
            vault: Mutex::new(vault),
            password_failures: PasswordThrottle::default(),
            password_derivations: Slots::alternating(MAX_PASSWORD_DERIVATIONS),
            wrong_answers: AnswerGate::default(),
            last_derivation_us: AtomicU64::new(0),
            clock: ActivityClock::new(),
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

    /// The wrapped key a password is checked against, copied out so that the vault lock is
    /// released before PBKDF2 runs. `None` when no master password is set.
    pub fn wrapped_key(&self) -> Option<WrappedKey> {
        self.vault().wrapped_key().cloned()
    }

    /// A turn among the master password's derivations (for deriving a new password's key),
    /// waited for, never refused; hold no lock while waiting.
    pub fn derivation_turn(&self) -> Slot<'_> {
        self.password_derivations.take()
    }

    /// Unlocks the vault with `password` (docs/api.md "Vault"): the one path of
    /// `POST /api/vault/unlock` and the SSH agent's `UNLOCK`, so both go through the same
    /// guess throttle and the same audit. Unlocking an unlocked vault with the right password
    /// succeeds; a password changed during the check is `InvalidPassword` (it no longer is the
    /// password). When the vault was locked, the unlock is logged for the change feed and in
    /// the audit log, `by` saying who (`request` or `agent`).
    pub fn unlock(&self, db: &Db, password: &Secret, by: &str) -> Result<(), VaultError> {
        let Some(wrapped) = self.wrapped_key() else {
            return Err(VaultError::NoPassword);
        };
        let key = self.check_password(db, &wrapped, password, audit::VAULT_UNLOCK_FAILED)?;
        let mut vault = self.vault();
        let was_locked = vault.is_locked();
        vault.unlock(&wrapped, key)?;
        if was_locked {
            // Lock order: vault, then db.
            log_vault_change(db, VaultChange::Unlocked, audit::VAULT_UNLOCKED, by);
        }
        Ok(())
    }

    /// Locks the vault (a locked one stays so); `NoPassword` without a master password.
    /// The lock is logged (see `lock_held`); `by` says who (`request` or `agent`). The
    /// caller then ends what the unlocked vault allowed (the agent's approvals), after this
    /// returned and the vault lock is released.
    pub fn lock(&self, db: &Db, by: &str) -> Result<(), VaultError> {
        let mut vault = self.vault();
        lock_held(db, &mut vault, by)
    }

    /// Checks `password` against `wrapped`: PBKDF2 in its turn among the derivations
    /// (waited for, never refused), holding no lock. A wrong password's answer then waits
    /// until its delay has passed since the check began, after the derivation's place is
    /// given back: the wait for a turn counts towards the delay, so a guess takes the delay
    /// or its turn, whichever is longer, never both. A wrong one is audited as
    /// `failed_event`.
    pub fn check_password(
        &self,
        db: &Db,
        wrapped: &WrappedKey,
        password: &Secret,
        failed_event: &str,
    ) -> Result<DataKey, VaultError> {
        let began = Instant::now();
        let opened = {
            // Tests wait for this line to know a check is queued (docs/api.md "Vault").
            log::debug!("master password check waits for its turn");
            let _turn = self.password_derivations.take();
            let derived = Instant::now();
            let opened = wrapped.open(password.expose());
            let took = u64::try_from(derived.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.last_derivation_us.store(took, Ordering::Relaxed);
            opened
        };
        match opened {
            Ok(key) => {
                self.password_failures.succeeded();
                Ok(key)
            }
            Err(_) => Err(self.wrong_password(db, began, failed_event)),
        }
    }

    /// Counts a wrong password, audits it, serves what is left of its delay (docs/api.md
    /// "Vault": repeated wrong passwords are slowed down, never locked out), then goes out
    /// through the answer gate: one wrong answer at a time, each at least
    /// `ANSWER_SPACING_DERIVATIONS` derivations after the previous one. A guesser sends its
    /// next guess only after its answer, so guesses come back at most a third as fast as
    /// they are checked, slower than the newest-first turns (`OLDEST_EVERY`): a new check
    /// (the right password) is never buried under repeated guesses.
    fn wrong_password(&self, db: &Db, began: Instant, failed_event: &str) -> VaultError {
        let (delay, failures) = self.password_failures.failed();
        audit_failure(db, failed_event, failures);
        log::warn!(
            "wrong master password; answering {} ms after the check began",
            delay.as_millis()
        );
        thread::sleep(delay.saturating_sub(began.elapsed()));
        let derivation = Duration::from_micros(self.last_derivation_us.load(Ordering::Relaxed));
        self.wrong_answers
            .pass(derivation * ANSWER_SPACING_DERIVATIONS);
        VaultError::InvalidPassword
    }

    /// Sets the first master password (`expected` is `None`) or changes it (`expected` is
    /// the wrapped key the current password was checked against), with `new` derived
    /// beforehand. Lock order: vault, then db; the vault is held across the one write so
    /// that the row on disk and the state in memory change together.
    pub fn set_password(
        &self,
        db: &Db,
        expected: Option<&WrappedKey>,
        new: &NewPassword,
    ) -> Result<(), ChangeError> {
        {
            let mut vault = self.vault();
            if !vault.password_is(expected) {
                return Err(ChangeError::ChangedMeanwhile);
            }
            let event = match expected {
                None => audit::VAULT_PASSWORD_SET,
                Some(_) => audit::VAULT_PASSWORD_CHANGED,
            };
            vault.set_password(new, |header, data_key| persist(db, header, data_key, event))?;
        }
        forget_replaced_rows(db);
        Ok(())
    }

    /// Removes the master password checked against `expected`: the data key is stored
    /// unwrapped again (vault, then db, as `set_password`).
    pub fn remove_password(&self, db: &Db, expected: &WrappedKey) -> Result<(), ChangeError> {
        {
            let mut vault = self.vault();
            if !vault.password_is(Some(expected)) {
                return Err(ChangeError::ChangedMeanwhile);
            }
            vault.remove_password(|header, data_key| {
                persist(db, header, data_key, audit::VAULT_PASSWORD_REMOVED)
            })?;
        }
        forget_replaced_rows(db);
        Ok(())
    }

    /// Counts a request as activity until the returned value drops (`--auto-lock`). Take
    /// it before looking at the vault's state (see `lock_if_idle`).
    pub fn activity(&self) -> Activity<'_> {
        self.clock.activity()
    }

    /// Locks the vault when it is unlocked, has a master password, no request is in flight
    /// and nothing happened for `after`. Returns true when it locked it (the caller then
    /// ends what the unlocked vault allowed, as after `lock`). Both are checked again under
    /// the vault lock: a request counts itself in flight before it looks at the vault, so
    /// either this sees it and keeps the vault open, or the request sees the vault locked
    /// before doing any work.
    pub fn lock_if_idle(&self, db: &Db, after: Duration) -> bool {
        if self.clock.idle_for() < after {
            return false;
        }
        if self.clock.in_flight() {
            // The idle time has passed, but a request is running: it keeps the vault open
            // (tests read this line to know the case happened).
            log::debug!("auto-lock: idle time passed with a request in flight; not locking");
            return false;
        }
        let mut vault = self.vault();
        if vault.is_locked()
            || !vault.has_password()
            || self.clock.in_flight()
            || self.clock.idle_for() < after
        {
            return false;
        }
        lock_held(db, &mut vault, "auto-lock").is_ok()
    }
}

/// Locks `vault`, held by the caller; `by` says who (`request`, `agent` or `auto-lock`)
/// in the audit log. docs/api.md "Change feed": the lock's entry commits before the state
/// changes (vault lock, then db), so a reader that sees the vault locked finds the entry,
/// and one waiting on the feed is woken with it.
fn lock_held(db: &Db, vault: &mut Vault, by: &str) -> Result<(), VaultError> {
    if vault.has_password() && !vault.is_locked() {
        log_vault_change(db, VaultChange::Locked, audit::VAULT_LOCKED, by);
    }
    vault.lock()
}

/// Logs a vault event in the change log and the audit log, in one transaction. A failure
/// is logged and does not stop the event: a lock must happen even when the disk is full.
fn log_vault_change(db: &Db, change: VaultChange, event: &str, by: &str) {
    let logged = db.write(|tx| {
        changes::record_vault(tx, change)?;
        audit::append(tx, event, "vault", &serde_json::json!({ "by": by }))
    });
    if let Err(err) = logged {
        log::error!("cannot log the vault change: {err}");
    }
}

impl From<VaultError> for ChangeError {
    fn from(err: VaultError) -> ChangeError {
        ChangeError::Vault(err)
    }
}

impl From<StoreError> for ChangeError {
    fn from(err: StoreError) -> ChangeError {
        ChangeError::Store(err)
    }
}

/// Writes the vault row (header and data key) in one statement, in one transaction, with
/// its change log entry and its audit `event` (docs/api.md, "Change feed" and "Audit log").
fn persist(
    db: &Db,
    header: Option<&[u8]>,
    data_key: &[u8],
    event: &str,
) -> Result<(), ChangeError> {
    Ok(db.write(|tx| {
        store::vault_meta::save(tx, header, data_key)?;
        changes::record_vault(tx, VaultChange::PasswordChanged)?;
        audit::append(tx, event, "vault", &serde_json::json!({}))
    })?)
}

/// After the vault row changed, moves the WAL into the database file and empties it, so the
/// replaced row (an unwrapped data key, a key wrapped under the old password) does not stay
/// readable in the `-wal` file; `secure_delete` has zeroed it in the pages. Best effort:
/// the change itself is already committed.
fn forget_replaced_rows(db: &Db) {
    if let Err(err) = db.read(store::checkpoint) {
        log::warn!("cannot checkpoint the database after a vault change: {err}");
    }
}

/// Audits the `failures`-th consecutive wrong password when `failures` is a power of two
/// (docs/api.md, "Audit log"): a streak of a million guesses is 20 entries, so a flood
/// cannot push the rest of the log out, and the entry says how long the streak has grown.
fn audit_failure(db: &Db, event: &str, failures: u32) {
    if !failures.is_power_of_two() {
        return;
    }
    let detail = serde_json::json!({ "consecutive_failures": failures });
    if let Err(err) = db.write(|tx| audit::append(tx, event, "vault", &detail)) {
        log::error!("cannot audit a wrong master password: {err}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use crate::session::Session;
    use crate::store::{self, Db};
    use crate::vault::kdf::{Header, PBKDF2_ROUNDS_MIN};
    use crate::vault::{DataKey, Vault, WrappedKey};

    fn db() -> Db {
        store::open_in_memory().expect("in-memory database opens")
    }

    /// An unlocked vault with a (never stored) master password.
    fn unlocked() -> Session {
        let header = Header::with_rounds(PBKDF2_ROUNDS_MIN).to_bytes();
        let mut vault = Vault::from_stored(Some(&header), &[0u8; 61]).unwrap();
        let Vault::Locked(wrapped) = &vault else {
            panic!("a stored header starts locked");
        };
        let wrapped: WrappedKey = wrapped.clone();
        vault.unlock(&wrapped, DataKey::generate()).unwrap();
        Session::new(vault)
    }

    #[test]
    fn idle_vault_with_a_password_is_locked() {
        let (session, db) = (unlocked(), db());
        assert!(!session.vault_locked());
        assert!(session.lock_if_idle(&db, Duration::ZERO));
        assert!(session.vault_locked());
        assert!(!session.lock_if_idle(&db, Duration::ZERO), "already locked");
    }

    #[test]
    fn vault_used_within_the_limit_stays_unlocked() {
        let (session, db) = (unlocked(), db());
        session.clock.touch();
        assert!(session.clock.idle_for() < Duration::from_secs(3600));
        assert!(!session.lock_if_idle(&db, Duration::from_secs(3600)));
        assert!(!session.vault_locked());
    }

    #[test]
    fn vault_without_a_password_is_never_auto_locked() {
        let (session, db) = (Session::new(Vault::NoPassword(DataKey::generate())), db());
        assert!(!session.lock_if_idle(&db, Duration::ZERO));
        assert!(!session.vault_locked());
    }

    #[test]
    fn vault_with_a_request_in_flight_is_not_auto_locked_until_it_ends() {
        let (session, db) = (unlocked(), db());
        let activity = session.activity();
        assert!(
            !session.lock_if_idle(&db, Duration::ZERO),
            "a request is in flight"
        );
        assert!(!session.vault_locked());
        drop(activity);
        assert!(session.lock_if_idle(&db, Duration::ZERO));
        assert!(session.vault_locked());
    }

    #[test]
    fn the_end_of_a_request_restarts_the_countdown() {
        let (session, db) = (unlocked(), db());
        drop(session.activity());
        assert!(!session.lock_if_idle(&db, Duration::from_secs(3600)));
        assert!(!session.vault_locked());
    }
}
