//! `AppState`: the one value shared by every worker thread.
//!
//! Lock order when both are needed: vault first, then db (whose list memory, the group tree
//! included, is locked only under its connection's lock: store::list). Config is read-only after start-up. Besides the mutexes it
//! holds the places for slow work (`Slots`, the one capped counter of the service: key
//! derivations, bcrypt checks, RSA generations; the SSH agent caps its connections with one
//! too), the gate wrong-password answers leave through (`AnswerGate`), the wrong-password
//! streak, two counters for
//! `--auto-lock` (the last-activity clock and the requests in flight), and the SSH agent's
//! share (its socket and the sign requests waiting for approval). The master password check
//! lives here, so that `POST /api/vault/unlock` and the agent's `UNLOCK` share one guess
//! throttle.
//!
//! Invariants: a `Slot` or `Activity` is given back when it drops, also when a
//! panic unwinds; no lock here is ever held while slow work runs (`Slots` holds its mutex
//! only to count); a vault with a request in flight is never auto-locked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::agent::Agent;
use crate::config::Config;
use crate::store::audit;
use crate::store::changes::{self, VaultChange};
use crate::store::Db;
use crate::vault::{DataKey, PasswordThrottle, Secret, Vault, VaultError, WrappedKey};

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
/// bcrypt-pbkdf checks of an imported key's passphrase running at once; one more answers
/// 503 `BUSY`. Each costs up to ~8 s of CPU (1,024 rounds); two are what two cores give.
pub const MAX_BCRYPT_CHECKS: usize = 2;
/// RSA generations running at once; one more answers 503 `BUSY`. Each takes a worker for
/// up to ~20 s (4096 bits, ssh-key 0.6).
pub const MAX_RSA_GENERATIONS: usize = 2;

pub struct AppState {
    pub config: Config,
    pub db: Db,
    vault: Mutex<Vault>,
    /// The growing delay after consecutive wrong master passwords.
    pub password_failures: PasswordThrottle,
    /// Places for PBKDF2 derivations of a master password (`take`: waited for).
    pub password_derivations: Slots,
    /// Wrong-password answers go out through it one at a time, spaced (`AnswerGate`).
    wrong_answers: AnswerGate,
    /// How long the last master-password derivation took, in microseconds.
    last_derivation_us: AtomicU64,
    /// Places for bcrypt-pbkdf checks of an imported key's passphrase (`try_take`).
    pub bcrypt_checks: Slots,
    /// Places for RSA key generations (`try_take`).
    pub rsa_generations: Slots,
    /// When the process started; the zero of `last_activity_ms`.
    started: Instant,
    /// Milliseconds after `started` of the last request that counts as activity for
    /// `--auto-lock`. Lock-free on purpose: every request writes it (one relaxed store),
    /// and the auto-lock thread only compares it with the clock; a read racing a write
    /// costs at most one tick of lateness.
    last_activity_ms: AtomicU64,
    /// Requests that count as activity and have not ended yet. A counter moved only by
    /// `Activity` (up when a request starts, down when it ends); `lock_if_idle` reads it
    /// under the vault lock and never locks while it is above zero.
    in_flight: AtomicUsize,
    /// The SSH agent's socket and its sign requests waiting for approval (docs/agent.md "SSH
    /// agent").
    pub agent: Agent,
}

/// A fixed number of places for one kind of slow work. `try_take` refuses beyond them;
/// `take` waits its turn: first come first served, or for `alternating` places mostly the
/// newest waiter and every `OLDEST_EVERY`-th turn the oldest (so a newcomer does not wait
/// behind everyone, and the oldest still move on: nobody waits forever).
pub struct Slots {
    cap: usize,
    /// Turns alternate between the newest and the oldest waiter (else oldest first).
    alternating: bool,
    queue: Mutex<Queue>,
    /// Signalled whenever a place frees up or the head of the queue moves on.
    changed: Condvar,
}

/// One place of a `Slots`, held until dropped.
#[must_use = "the place is given back as soon as the slot drops"]
pub struct Slot<'a>(&'a Slots);

/// Wrong-password answers, let out one at a time in arrival order, each at least `spacing`
/// after the previous one. Waiting holds only the waiter's own thread (its connection's).
#[derive(Default)]
pub struct AnswerGate {
    queue: Mutex<GateQueue>,
    changed: Condvar,
}

#[derive(Default)]
struct GateQueue {
    next_ticket: u64,
    serving: u64,
    /// When the next answer may go.
    next_release: Option<Instant>,
}

impl AnswerGate {
    /// Waits for this answer's turn and its time, then lets it go.
    pub fn pass(&self, spacing: Duration) {
        let mut queue = self.queue();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        loop {
            let now = Instant::now();
            let wait = match queue.next_release {
                _ if queue.serving != ticket => None,
                Some(at) if at > now => Some(at - now),
                _ => break,
            };
            queue = match wait {
                None => self
                    .changed
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
                Some(wait) => {
                    self.changed
                        .wait_timeout(queue, wait)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
            };
        }
        queue.serving += 1;
        queue.next_release = Some(Instant::now() + spacing);
        drop(queue);
        self.changed.notify_all();
    }

    /// Answers that came to the gate so far, let out or not (tests).
    #[cfg(test)]
    fn arrived(&self) -> u64 {
        self.queue().next_ticket
    }

    /// Answers waiting for their turn (tests).
    #[cfg(test)]
    fn waiting(&self) -> u64 {
        let queue = self.queue();
        queue.next_ticket - queue.serving
    }

    fn queue(&self) -> MutexGuard<'_, GateQueue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A request counted as activity for `--auto-lock` while it lives.
#[must_use = "the request stops counting as soon as this drops"]
pub struct Activity<'a>(&'a AppState);

#[derive(Default)]
struct Queue {
    running: usize,
    /// The ticket the next waiter draws.
    next_ticket: u64,
    /// The waiters' tickets, oldest first.
    waiting: VecDeque<u64>,
    /// Turns given so far (alternating places count them to pick newest or oldest).
    turns: u64,
}

/// For alternating places, every `OLDEST_EVERY`-th turn goes to the oldest waiter and the
/// others to the newest: newcomers go first (faster than the answer gate lets guesses come
/// back, so repeated guesses cannot bury a newcomer), and the oldest still move on.
pub const OLDEST_EVERY: u64 = 4;

impl Queue {
    /// The ticket whose turn comes when a place is free.
    fn next_turn(&self, alternating: bool) -> Option<u64> {
        match alternating && self.turns % OLDEST_EVERY != OLDEST_EVERY - 1 {
            true => self.waiting.back().copied(),
            false => self.waiting.front().copied(),
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
        AppState::new(*config, db, vault)
    }

    pub fn new(config: Config, db: Db, vault: Vault) -> AppState {
        let agent = Agent::new(config.agent.as_ref());
        AppState {
            config,
            db,
            vault: Mutex::new(vault),
            password_failures: PasswordThrottle::default(),
            password_derivations: Slots::alternating(MAX_PASSWORD_DERIVATIONS),
            wrong_answers: AnswerGate::default(),
            last_derivation_us: AtomicU64::new(0),
            bcrypt_checks: Slots::new(MAX_BCRYPT_CHECKS),
            rsa_generations: Slots::new(MAX_RSA_GENERATIONS),
            started: Instant::now(),
            last_activity_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
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

    /// Unlocks the vault with `password` (docs/api.md "Vault"): the one path of
    /// `POST /api/vault/unlock` and the SSH agent's `UNLOCK`, so both go through the same
    /// guess throttle and the same audit. Unlocking an unlocked vault with the right password
    /// succeeds; a password changed during the check is `InvalidPassword` (it no longer is the
    /// password). When the vault was locked, the unlock is logged for the change feed and in
    /// the audit log, `by` saying who (`request` or `agent`).
    pub fn unlock_vault(&self, password: &Secret, by: &str) -> Result<(), VaultError> {
        let Some(wrapped) = self.vault().wrapped_key().cloned() else {
            return Err(VaultError::NoPassword);
        };
        let key = self.check_password(&wrapped, password, audit::VAULT_UNLOCK_FAILED)?;
        let mut vault = self.vault();
        let was_locked = vault.is_locked();
        vault.unlock(&wrapped, key)?;
        if was_locked {
            // Lock order: vault, then db.
            self.log_vault_change(VaultChange::Unlocked, audit::VAULT_UNLOCKED, by);
        }
        Ok(())
    }

    /// Locks the vault (a locked one stays so); `NoPassword` without a master password.
    /// The lock is logged (see `lock_held`), then the SSH agent's waiting sign requests fail
    /// and its remembered approvals go. `by` says who (`request` or `agent`).
    pub fn lock_vault(&self, by: &str) -> Result<(), VaultError> {
        {
            let mut vault = self.vault();
            self.lock_held(&mut vault, by)?;
        }
        // After the vault lock is released: a waiting sign request holds the approvals'
        // lock while it asks whether the vault is locked.
        self.agent.approvals.vault_locked();
        Ok(())
    }

    /// Checks `password` against `wrapped`: PBKDF2 in its turn among the derivations
    /// (waited for, never refused), holding no lock. A wrong password's answer then waits
    /// until its delay has passed since the check began, after the derivation's place is
    /// given back: the wait for a turn counts towards the delay, so a guess takes the delay
    /// or its turn, whichever is longer, never both. A wrong one is audited as
    /// `failed_event`.
    pub fn check_password(
        &self,
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
            Err(_) => Err(self.wrong_password(began, failed_event)),
        }
    }

    /// Counts a wrong password, audits it, serves what is left of its delay (docs/api.md
    /// "Vault": repeated wrong passwords are slowed down, never locked out), then goes out
    /// through the answer gate: one wrong answer at a time, each at least
    /// `ANSWER_SPACING_DERIVATIONS` derivations after the previous one. A guesser sends its
    /// next guess only after its answer, so guesses come back at most a third as fast as
    /// they are checked, slower than the newest-first turns (`OLDEST_EVERY`): a new check
    /// (the right password) is never buried under repeated guesses.
    fn wrong_password(&self, began: Instant, failed_event: &str) -> VaultError {
        let (delay, failures) = self.password_failures.failed();
        self.audit_failure(failed_event, failures);
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

    /// Audits the `failures`-th consecutive wrong password when `failures` is a power of two
    /// (docs/api.md, "Audit log"): a streak of a million guesses is 20 entries, so a flood cannot
    /// push the rest of the log out, and the entry says how long the streak has grown.
    fn audit_failure(&self, event: &str, failures: u32) {
        if !failures.is_power_of_two() {
            return;
        }
        let detail = serde_json::json!({ "consecutive_failures": failures });
        if let Err(err) = self
            .db
            .write(|tx| audit::append(tx, event, "vault", &detail))
        {
            log::error!("cannot audit a wrong master password: {err}");
        }
    }

    /// Counts a request as activity until the returned value drops: the auto-lock
    /// countdown restarts now and again when it ends, and never runs out in between.
    /// Take it before looking at the vault's state (see `lock_if_idle`).
    pub fn activity(&self) -> Activity<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Activity(self)
    }

    /// Records activity now: the auto-lock countdown starts again.
    fn touch(&self) {
        self.last_activity_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// How long since the last activity (or since start, before any).
    pub fn idle_for(&self) -> Duration {
        let last = self.last_activity_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.elapsed_ms().saturating_sub(last))
    }

    /// Locks the vault when it is unlocked, has a master password, no request is in flight
    /// and nothing happened for `after`. Returns true when it locked it. Both are checked
    /// again under the vault lock: a request counts itself in flight before it looks at the
    /// vault, so either this sees it and keeps the vault open, or the request sees the
    /// vault locked before doing any work.
    pub fn lock_if_idle(&self, after: Duration) -> bool {
        if self.idle_for() < after {
            return false;
        }
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            // The idle time has passed, but a request is running: it keeps the vault open
            // (tests read this line to know the case happened).
            log::debug!("auto-lock: idle time passed with a request in flight; not locking");
            return false;
        }
        let mut vault = self.vault();
        if vault.is_locked()
            || !vault.has_password()
            || self.in_flight.load(Ordering::SeqCst) > 0
            || self.idle_for() < after
        {
            return false;
        }
        let locked = self.lock_held(&mut vault, "auto-lock").is_ok();
        drop(vault);
        // Sign requests waiting for approval fail, and remembered approvals go (after the
        // vault lock is released, as in `lock_vault`).
        self.agent.approvals.vault_locked();
        locked
    }

    /// Locks `vault`, held by the caller; `by` says who (`request`, `agent` or `auto-lock`)
    /// in the audit log. docs/api.md "Change feed": the lock's entry commits before the state changes
    /// (vault lock, then db), so a reader that sees the vault locked finds the entry, and
    /// one waiting on the feed is woken with it.
    fn lock_held(&self, vault: &mut Vault, by: &str) -> Result<(), VaultError> {
        if vault.has_password() && !vault.is_locked() {
            self.log_vault_change(VaultChange::Locked, audit::VAULT_LOCKED, by);
        }
        vault.lock()
    }

    /// Logs a vault event in the change log and the audit log, in one transaction. A failure
    /// is logged and does not stop the event: a lock must happen even when the disk is full.
    fn log_vault_change(&self, change: VaultChange, event: &str, by: &str) {
        let logged = self.db.write(|tx| {
            changes::record_vault(tx, change)?;
            audit::append(tx, event, "vault", &serde_json::json!({ "by": by }))
        });
        if let Err(err) = logged {
            log::error!("cannot log the vault change: {err}");
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Drop for Activity<'_> {
    fn drop(&mut self) {
        // The countdown restarts from the end of the request, then the request stops
        // counting: in this order, an idle check in between still sees one or the other.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    pub fn new(cap: usize) -> Slots {
        Slots {
            cap,
            alternating: false,
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    }

    /// Places whose `take` turns go to the newest waiter, every `OLDEST_EVERY`-th to the
    /// oldest.
    pub fn alternating(cap: usize) -> Slots {
        Slots {
            alternating: true,
            ..Slots::new(cap)
        }
    }

    /// A place now, or `None` when every place is taken or others are waiting for one.
    pub fn try_take(&self) -> Option<Slot<'_>> {
        self.admit().then(|| Slot(self))
    }

    /// A place, waiting for one when all are taken (in arrival order, or newest first with
    /// every `OLDEST_EVERY`-th turn the oldest's for `alternating` places). Never refused.
    pub fn take(&self) -> Slot<'_> {
        let mut queue = self.queue();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push_back(ticket);
        while queue.next_turn(self.alternating) != Some(ticket) || queue.running >= self.cap {
            queue = self
                .changed
                .wait(queue)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        queue.waiting.retain(|waiting| *waiting != ticket);
        queue.turns += 1;
        queue.running += 1;
        // The next ticket may go too, if a place is still free.
        self.changed.notify_all();
        Slot(self)
    }

    /// Places taken now.
    #[cfg(test)]
    pub fn running(&self) -> usize {
        self.queue().running
    }

    /// Counts one more place taken, unless every place is taken or others wait for one.
    fn admit(&self) -> bool {
        let mut queue = self.queue();
        if queue.running >= self.cap || !queue.waiting.is_empty() {
            return false;
        }
        queue.running += 1;
        true
    }

    fn give_back(&self) {
        let mut queue = self.queue();
        queue.running -= 1;
        drop(queue);
        self.changed.notify_all();
    }

    /// The counters, recovering from a poisoned lock: they are only ever changed by whole
    /// statements that cannot panic half-way.
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::{Duration, Instant};

    use crate::state::{AnswerGate, AppState, Slots, OLDEST_EVERY};
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

    #[test]
    fn vault_with_a_request_in_flight_is_not_auto_locked_until_it_ends() {
        let state = state_with(unlocked());
        let activity = state.activity();
        assert!(
            !state.lock_if_idle(Duration::ZERO),
            "a request is in flight"
        );
        assert!(!state.vault_locked());
        drop(activity);
        assert!(state.lock_if_idle(Duration::ZERO));
        assert!(state.vault_locked());
    }

    #[test]
    fn the_end_of_a_request_restarts_the_countdown() {
        let state = state_with(unlocked());
        drop(state.activity());
        assert!(!state.lock_if_idle(Duration::from_secs(3600)));
        assert!(!state.vault_locked());
    }

    #[test]
    fn try_take_beyond_the_cap_is_refused_until_a_place_is_given_back() {
        let slots = Slots::new(2);
        let first = slots.try_take().unwrap();
        let second = slots.try_take().unwrap();
        assert!(slots.try_take().is_none());
        assert_eq!(slots.running(), 2);
        drop(first);
        assert!(slots.try_take().is_some());
        drop(second);
        assert_eq!(slots.running(), 0);
    }

    /// Polls until `waiting` threads wait in `slots`' queue, or fails after a minute.
    fn wait_for_queue(slots: &Slots, waiting: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let queue = slots.queue();
            if queue.waiting.len() as u64 == waiting {
                return;
            }
            drop(queue);
            assert!(Instant::now() < deadline, "{waiting} waiters never queued");
            thread::yield_now();
        }
    }

    #[test]
    fn take_waits_for_a_place_and_serves_waiters_in_arrival_order() {
        let slots = Arc::new(Slots::new(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = slots.try_take().unwrap();
        let waiters: Vec<_> = ["first", "second", "third"]
            .into_iter()
            .enumerate()
            .map(|(queued, name)| {
                let (shared, order) = (Arc::clone(&slots), Arc::clone(&order));
                let waiter = thread::spawn(move || {
                    let _place = shared.take();
                    order.lock().unwrap().push(name);
                });
                wait_for_queue(&slots, queued as u64 + 1);
                waiter
            })
            .collect();
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody got the held place"
        );
        assert!(slots.try_take().is_none(), "no jumping the queue");
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["first", "second", "third"]);
        assert_eq!(slots.running(), 0);
    }

    #[test]
    fn an_attempt_behind_twenty_waiting_guesses_gets_the_next_password_turn_and_the_oldest_move_on()
    {
        const GUESSERS: u64 = 20;
        let slots = Arc::new(Slots::alternating(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = slots.try_take().unwrap();
        let mut waiters = Vec::new();
        for guess in 0..=GUESSERS {
            let (shared, order) = (Arc::clone(&slots), Arc::clone(&order));
            let name = match guess == GUESSERS {
                true => "right".to_owned(),
                false => format!("guess {guess}"),
            };
            waiters.push(thread::spawn(move || {
                let _place = shared.take();
                order.lock().unwrap().push(name);
            }));
            wait_for_queue(&slots, guess + 1);
        }
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        let order = order.lock().unwrap();
        let right = order.iter().position(|name| name == "right").unwrap();
        assert_eq!(
            right, 0,
            "the newest attempt waited behind {right}: {order:?}"
        );
        // The oldest guesses still move on: every OLDEST_EVERY-th turn is theirs, in
        // arrival order.
        let oldest_turns = (OLDEST_EVERY - 1..=GUESSERS).step_by(OLDEST_EVERY as usize);
        for (n, turn) in oldest_turns.enumerate() {
            assert_eq!(order[turn as usize], format!("guess {n}"), "{order:?}");
        }
        assert_eq!(order.len() as u64, GUESSERS + 1);
    }

    #[test]
    fn wrong_answers_leave_the_gate_one_at_a_time_in_arrival_order() {
        let gate = Arc::new(AnswerGate::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        // The first answer goes at once and holds the next ones back for its spacing.
        gate.pass(Duration::from_millis(200));
        let waiters: Vec<_> = (0..3u64)
            .map(|n| {
                let (shared, order) = (Arc::clone(&gate), Arc::clone(&order));
                let waiter = thread::spawn(move || {
                    shared.pass(Duration::from_millis(1));
                    order.lock().unwrap().push(n);
                });
                let deadline = Instant::now() + Duration::from_secs(60);
                while gate.arrived() != n + 2 {
                    assert!(Instant::now() < deadline, "answer {n} never queued");
                    thread::yield_now();
                }
                waiter
            })
            .collect();
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert_eq!(gate.waiting(), 0);
    }
}
