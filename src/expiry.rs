//! The certificate watcher (docs/api.md, "Certificates"): a thread that looks at every
//! attached certificate once a minute and, when one's status changed since it was last
//! announced (it came within the expiring window, it expired, it became valid), logs one
//! `key` `updated` entry in the change feed, so a window following the feed re-reads the key
//! without polling it.
//!
//! Invariants: the status announced is stored with the certificate (set when it is attached,
//! updated with each entry), so an entry is logged once per change, also across restarts; a
//! first look at a certificate no one looked at before (a database from before the watcher)
//! records its status without an entry; the thread holds the state only weakly, so it ends
//! with the server; the write lock is taken only when some status changed.

use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use crate::state::AppState;
use crate::store::certificates::{self, Watched};

/// How often the watcher looks (`HOST_MANAGER_TEST_CERTIFICATE_TICK_MS` in tests): the
/// statuses change at whole seconds, and a minute late is soon enough for a 7-day window.
pub const TICK: Duration = Duration::from_secs(60);

/// A certificate whose status changed: its row, its key and its status now.
struct Change {
    seq: i64,
    key_id: String,
    status: &'static str,
    /// Whether the change is worth an entry (not a first look).
    log: bool,
}

/// Starts the watcher; a failure to start it is logged and the service goes on (the key
/// view still shows each certificate's status on every read).
pub fn watch(state: &Arc<AppState>) {
    let tick = state.config.test_certificate_tick.unwrap_or(TICK);
    let state = Arc::downgrade(state);
    let started = thread::Builder::new()
        .name("certificates".into())
        .spawn(move || watch_loop(&state, tick));
    if let Err(err) = started {
        log::warn!("cannot start the certificate watcher (no expiry entries in the feed): {err}");
    }
}

fn watch_loop(state: &Weak<AppState>, tick: Duration) {
    loop {
        thread::sleep(tick);
        let Some(state) = state.upgrade() else {
            return;
        };
        if let Err(err) = look(&state) {
            log::warn!("the certificate watcher could not look: {err}");
        }
    }
}

/// One look: the changed statuses read without the write lock, then written (and checked
/// again) in one transaction.
fn look(state: &AppState) -> Result<(), crate::store::StoreError> {
    let now = certificates::now_seconds();
    let changed = state.db.read(|conn| {
        Ok::<_, crate::store::StoreError>(changes(&certificates::watched(conn)?, now))
    })?;
    if changed.is_empty() {
        return Ok(());
    }
    state.db.write(|tx| {
        for change in changes(&certificates::watched(tx)?, now) {
            certificates::announce(tx, change.seq, &change.key_id, change.status, change.log)?;
        }
        Ok(())
    })
}

/// The certificates of `watched` whose status at `now` is not the one announced.
fn changes(watched: &[Watched], now: u64) -> Vec<Change> {
    watched
        .iter()
        .filter_map(|row| {
            let certificate =
                crate::sshkey::user_certificate(&row.certificate, &row.public_key).ok()?;
            let status = certificate.status(now).as_str();
            (status != row.announced).then(|| Change {
                seq: row.seq,
                key_id: row.key_id.clone(),
                status,
                log: !row.announced.is_empty(),
            })
        })
        .collect()
}
