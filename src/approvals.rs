//! Sign requests waiting for the user's decision (`GET /api/agent/requests`, `POST
//! /api/agent/requests/:id`), and the approvals remembered for `confirm: once_per_host`.
//!
//! Invariants: a waiting request holds only its own connection's thread, never a lock (it
//! sleeps on a condvar); it ends by a decision, by `APPROVAL_TIMEOUT` (settable for tests),
//! or at once when the vault locks, so no agent client ever waits for ever; at most
//! `MAX_PENDING_PER_CONNECTION` wait per connection and `MAX_PENDING` in all (more than
//! the agent's connections can make, so one client cannot crowd out another's request),
//! and one more is refused at once; remembered approvals are
//! forgotten when the vault locks. One mutex guards all of it and is never held across a
//! wait or any other work.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::model::agent::Reason;

/// How long a sign request waits for the user's decision before it fails (docs/agent.md "SSH
/// agent"): time to notice the prompt, switch to the app and read it. `ssh` itself waits
/// for the agent without a limit, so this bound is what keeps a login from hanging.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

/// Requests waiting at once from one connection; one more fails at once. A connection
/// answers its messages in order, so it never has a second waiting; the cap says so, and
/// holds should that change.
pub const MAX_PENDING_PER_CONNECTION: usize = 1;

/// Requests waiting at once in all; one more fails at once. Each holds a connection
/// thread, so the agent's own connection cap (64) is reached first: this bound is a last
/// guard, never what refuses a user's request.
pub const MAX_PENDING: usize = 128;

/// How often a waiting request looks at the vault even without being woken: a lock that
/// did not come through `Approvals::vault_locked` still ends it within this.
const LOCK_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// A request for the user's decision, as `GET /api/agent/requests` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PendingView {
    pub id: String,
    pub key_id: String,
    pub key_name: String,
    pub fingerprint: String,
    /// The server's host key fingerprint from `session-bind@openssh.com`; `null` when the
    /// client did not bind the connection (older clients, `ssh-keygen -Y sign`).
    pub host_key_fingerprint: Option<String>,
    /// The catalogue host of that host key, when it is known (docs/agent.md "SSH agent").
    pub host_id: Option<String>,
    /// True when the request came through agent forwarding.
    pub forwarded: bool,
    pub reason: Reason,
    pub created_at: String,
    pub expires_at: String,
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Denied,
    TimedOut,
    /// `MAX_PENDING` requests wait already.
    TooMany,
    /// `MAX_PENDING_PER_CONNECTION` requests of the same connection wait already.
    ConnectionWaits,
    /// The vault locked while it waited (or was locked when it came).
    Locked,
}

/// The pending requests and remembered approvals; one per service, in `AppState`.
pub struct Approvals {
    inner: Mutex<Inner>,
    /// Signalled on every decision and on lock.
    changed: Condvar,
    timeout: Duration,
}

#[derive(Default)]
struct Inner {
    pending: Vec<Entry>,
    /// `(key id, host key fingerprint)` pairs the user allowed since the vault unlocked.
    remembered: HashSet<(String, String)>,
}

struct Entry {
    view: PendingView,
    /// The connection that asked.
    connection: u64,
    /// What an allow remembers (`once_per_host` with a known server).
    remember: Option<(String, String)>,
    decision: Option<Outcome>,
}

impl Approvals {
    /// `timeout` is `APPROVAL_TIMEOUT` unless a test sets it shorter.
    pub fn new(timeout: Duration) -> Approvals {
        Approvals {
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
            timeout,
        }
    }

    /// Adds `view` (its `created_at`/`expires_at` are filled here) and waits for a decision,
    /// the timeout, or a lock. `remember` is what an allow remembers; `connection` is the
    /// asking connection's number (`Session::connection`). `vault_locked` is
    /// asked every `LOCK_CHECK_INTERVAL`; `on_added` runs once the request is visible
    /// (outside the lock: it announces it).
    pub fn ask(
        &self,
        mut view: PendingView,
        remember: Option<(String, String)>,
        connection: u64,
        vault_locked: impl Fn() -> bool,
        on_added: impl FnOnce(&PendingView),
    ) -> Outcome {
        let deadline = Instant::now() + self.timeout;
        let now = SystemTime::now();
        view.created_at = timestamp(now);
        view.expires_at = timestamp(now + self.timeout);
        let id = view.id.clone();
        {
            let mut inner = self.lock();
            let mine = inner
                .pending
                .iter()
                .filter(|entry| entry.connection == connection)
                .count();
            if mine >= MAX_PENDING_PER_CONNECTION {
                return Outcome::ConnectionWaits;
            }
            if inner.pending.len() >= MAX_PENDING {
                return Outcome::TooMany;
            }
            inner.pending.push(Entry {
                view: view.clone(),
                connection,
                remember,
                decision: None,
            });
        }
        on_added(&view);
        let mut inner = self.lock();
        let outcome = loop {
            let Some(entry) = inner.pending.iter().find(|entry| entry.view.id == id) else {
                break Outcome::Denied;
            };
            if let Some(decision) = entry.decision {
                break decision;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Outcome::TimedOut;
            }
            if vault_locked() {
                break Outcome::Locked;
            }
            inner = match self
                .changed
                .wait_timeout(inner, left.min(LOCK_CHECK_INTERVAL))
            {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        };
        inner.pending.retain(|entry| entry.view.id != id);
        outcome
    }

    /// Records the user's decision on request `id`; false when no such request waits (it
    /// was decided, timed out or never existed). An allow of a `once_per_host` request
    /// remembers its key and server until the vault locks.
    pub fn decide(&self, id: &str, allow: bool) -> bool {
        let mut inner = self.lock();
        let Some(entry) = inner
            .pending
            .iter_mut()
            .find(|entry| entry.view.id == id && entry.decision.is_none())
        else {
            return false;
        };
        entry.decision = Some(match allow {
            true => Outcome::Allowed,
            false => Outcome::Denied,
        });
        if let (true, Some(pair)) = (allow, entry.remember.take()) {
            inner.remembered.insert(pair);
        }
        drop(inner);
        self.changed.notify_all();
        true
    }

    /// True when the user allowed `key_id` for the server `host_key_fingerprint` since the
    /// vault last locked.
    pub fn is_remembered(&self, key_id: &str, host_key_fingerprint: &str) -> bool {
        self.lock()
            .remembered
            .contains(&(key_id.to_owned(), host_key_fingerprint.to_owned()))
    }

    /// The vault locked: every waiting request fails now and every approval is forgotten.
    pub fn vault_locked(&self) {
        let mut inner = self.lock();
        inner.remembered.clear();
        for entry in inner.pending.iter_mut() {
            entry.decision.get_or_insert(Outcome::Locked);
        }
        drop(inner);
        self.changed.notify_all();
    }

    /// The requests waiting for a decision, oldest first.
    pub fn pending(&self) -> Vec<PendingView> {
        self.lock()
            .pending
            .iter()
            .filter(|entry| entry.decision.is_none())
            .map(|entry| entry.view.clone())
            .collect()
    }

    /// How many requests wait for a decision.
    pub fn count(&self) -> usize {
        self.lock()
            .pending
            .iter()
            .filter(|entry| entry.decision.is_none())
            .count()
    }

    /// The state, recovering from a poisoned lock: each change is one statement.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// RFC 3339 UTC with milliseconds, as every timestamp of the API.
fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Duration;

    use crate::approvals::{
        Approvals, Outcome, PendingView, MAX_PENDING, MAX_PENDING_PER_CONNECTION,
    };
    use crate::model::agent::Reason;

    fn view(id: &str) -> PendingView {
        PendingView {
            id: id.to_owned(),
            key_id: "k".into(),
            key_name: "deploy".into(),
            fingerprint: "SHA256:x".into(),
            host_key_fingerprint: Some("SHA256:h".into()),
            host_id: None,
            forwarded: false,
            reason: Reason::Confirm,
            created_at: String::new(),
            expires_at: String::new(),
        }
    }

    /// Starts `ask` for `id` on a thread; the receiver gets its outcome. Returns once the
    /// request is visible in `pending()`.
    fn ask_in_background(
        approvals: &Arc<Approvals>,
        id: &str,
        remember: Option<(String, String)>,
    ) -> mpsc::Receiver<Outcome> {
        ask_from(approvals, id, remember, next_connection())
    }

    /// A connection number no other test request uses.
    fn next_connection() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::SeqCst)
    }

    /// `ask_in_background` for a request of connection `connection`.
    fn ask_from(
        approvals: &Arc<Approvals>,
        id: &str,
        remember: Option<(String, String)>,
        connection: u64,
    ) -> mpsc::Receiver<Outcome> {
        let (added_tx, added) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let shared = Arc::clone(approvals);
        let request = view(id);
        thread::spawn(move || {
            let outcome = shared.ask(
                request,
                remember,
                connection,
                || false,
                |_| added_tx.send(()).unwrap(),
            );
            done_tx.send(outcome).unwrap();
        });
        added.recv_timeout(Duration::from_secs(60)).unwrap();
        done
    }

    fn long() -> Arc<Approvals> {
        Arc::new(Approvals::new(Duration::from_secs(3600)))
    }

    #[test]
    fn an_allowed_request_ends_allowed_and_leaves_the_list() {
        let approvals = long();
        let done = ask_in_background(&approvals, "r1", None);
        let pending = approvals.pending();
        assert_eq!(pending.len(), 1);
        assert!(pending[0].expires_at > pending[0].created_at);
        assert!(approvals.decide("r1", true));
        assert_eq!(done.recv().unwrap(), Outcome::Allowed);
        assert_eq!(approvals.count(), 0);
        assert!(!approvals.decide("r1", true), "decided once only");
    }

    #[test]
    fn a_denied_request_ends_denied() {
        let approvals = long();
        let done = ask_in_background(&approvals, "r1", None);
        assert!(approvals.decide("r1", false));
        assert_eq!(done.recv().unwrap(), Outcome::Denied);
    }

    #[test]
    fn deciding_an_unknown_request_is_refused() {
        assert!(!long().decide("nope", true));
    }

    #[test]
    fn an_undecided_request_times_out() {
        let approvals = Approvals::new(Duration::from_millis(1));
        let outcome = approvals.ask(view("r1"), None, 1, || false, |_| {});
        assert_eq!(outcome, Outcome::TimedOut);
        assert_eq!(approvals.count(), 0);
    }

    #[test]
    fn locking_ends_a_waiting_request_and_forgets_approvals() {
        let approvals = long();
        let pair = ("k".to_owned(), "SHA256:h".to_owned());
        let first = ask_in_background(&approvals, "r1", Some(pair.clone()));
        assert!(approvals.decide("r1", true));
        assert_eq!(first.recv().unwrap(), Outcome::Allowed);
        assert!(approvals.is_remembered("k", "SHA256:h"));
        let second = ask_in_background(&approvals, "r2", None);
        approvals.vault_locked();
        assert_eq!(second.recv().unwrap(), Outcome::Locked);
        assert!(!approvals.is_remembered("k", "SHA256:h"));
    }

    #[test]
    fn a_lock_seen_only_by_the_vault_check_ends_the_wait() {
        let approvals = long();
        let locked = AtomicBool::new(false);
        let outcome = approvals.ask(
            view("r1"),
            None,
            1,
            || locked.load(Ordering::SeqCst),
            |_| locked.store(true, Ordering::SeqCst),
        );
        assert_eq!(outcome, Outcome::Locked);
    }

    #[test]
    fn a_denial_remembers_nothing() {
        let approvals = long();
        let done = ask_in_background(
            &approvals,
            "r1",
            Some(("k".to_owned(), "SHA256:h".to_owned())),
        );
        assert!(approvals.decide("r1", false));
        assert_eq!(done.recv().unwrap(), Outcome::Denied);
        assert!(!approvals.is_remembered("k", "SHA256:h"));
    }

    #[test]
    fn the_request_over_the_global_cap_is_refused_at_once_and_the_last_under_it_waits() {
        let approvals = long();
        let waiting: Vec<_> = (0..MAX_PENDING)
            .map(|n| ask_in_background(&approvals, &format!("r{n}"), None))
            .collect();
        assert_eq!(approvals.count(), MAX_PENDING);
        let over = approvals.ask(view("over"), None, next_connection(), || false, |_| {});
        assert_eq!(over, Outcome::TooMany);
        approvals.vault_locked();
        for done in waiting {
            assert_eq!(done.recv().unwrap(), Outcome::Locked);
        }
    }

    #[test]
    fn one_connection_cannot_wait_twice_and_others_still_wait_past_32() {
        let approvals = long();
        // Far above the numbers `next_connection` hands the others.
        let mine = u64::MAX;
        let first = ask_from(&approvals, "mine", None, mine);
        let again = approvals.ask(view("again"), None, mine, || false, |_| {});
        assert_eq!(again, Outcome::ConnectionWaits);
        assert_eq!(MAX_PENDING_PER_CONNECTION, 1);
        let others: Vec<_> = (0..40)
            .map(|n| ask_in_background(&approvals, &format!("other{n}"), None))
            .collect();
        assert_eq!(
            approvals.count(),
            41,
            "41 connections wait, one request each"
        );
        approvals.vault_locked();
        assert_eq!(first.recv().unwrap(), Outcome::Locked);
        for done in others {
            assert_eq!(done.recv().unwrap(), Outcome::Locked);
        }
    }
}
