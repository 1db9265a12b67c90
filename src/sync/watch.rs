//! The background side of sync (docs/sync.md, "When it runs"): a thread that, while sync is
//! set up and the vault unlocked, writes this device's bundle once local changes have been
//! quiet for `DEBOUNCE`, and looks at the folder every `POLL` for bundles that changed.
//!
//! Invariants: holds the state only weakly, so it ends with the server; an idle look costs a
//! count of the connection's changes, a listing of the folder and one small read (no
//! catalogue read, no decryption); a failure is logged and tried again at the next look,
//! never fatal; a held merge waits for `POST /api/sync/now` with the confirmation.

use std::sync::{Arc, Weak};
use std::thread;
use std::time::{Duration, Instant};

use crate::state::AppState;
use crate::sync::{cycle, ensure_live, SyncError};

/// How often the folder is looked at.
pub const POLL: Duration = Duration::from_secs(5);
/// How long local changes must be quiet before the bundle is written.
pub const DEBOUNCE: Duration = Duration::from_secs(2);

/// Starts the thread; a failure to start it is logged (sync then runs on `sync/now` only).
pub fn start(state: &Arc<AppState>) {
    let poll = state.config.test_sync_poll.unwrap_or(POLL);
    let debounce = state.config.test_sync_debounce.unwrap_or(DEBOUNCE);
    let state = Arc::downgrade(state);
    let started = thread::Builder::new()
        .name("sync".into())
        .spawn(move || watch_loop(&state, poll, debounce));
    if let Err(err) = started {
        log::warn!("cannot start the sync thread (sync runs on POST /api/sync/now only): {err}");
    }
}

fn watch_loop(state: &Weak<AppState>, poll: Duration, debounce: Duration) {
    let tick = poll.min(debounce).max(Duration::from_millis(10));
    let mut last_poll: Option<Instant> = None;
    loop {
        thread::sleep(tick);
        let Some(state) = state.upgrade() else {
            return;
        };
        let poll_due = last_poll.is_none_or(|at| at.elapsed() >= poll);
        match look(&state, poll_due, debounce) {
            Ok(true) => last_poll = Some(Instant::now()),
            Ok(false) => {}
            Err(SyncError::Disabled | SyncError::VaultLocked) => {}
            Err(SyncError::MassDelete(held)) => {
                last_poll = Some(Instant::now());
                log::warn!(
                    "sync: a merge of {} would delete {} of {} records; held until confirmed",
                    held.file,
                    held.deletions,
                    held.live
                );
            }
            Err(err) => {
                last_poll = Some(Instant::now());
                log::warn!("sync: a cycle failed (tried again at the next look): {err:?}");
            }
        }
    }
}

/// One look: a cycle when the folder is due or local changes have been quiet long enough.
/// Answers whether a cycle ran.
fn look(state: &AppState, poll_due: bool, debounce: Duration) -> Result<bool, SyncError> {
    if state.session.vault_locked() {
        // The sync key opens every synced secret: it does not outlive the vault's unlock.
        state.sync.forget_key();
        return Ok(false);
    }
    let mut engine = state.sync.engine();
    let enabled = engine.live.is_some() || poll_due;
    if !enabled {
        return Ok(false);
    }
    ensure_live(state, &mut engine)?;
    let changes = cycle::total_changes(state)?;
    let local = engine.changes_seen != Some(changes);
    if local && engine.dirty_since.is_none() {
        engine.dirty_since = Some(Instant::now());
    }
    let quiet = engine
        .dirty_since
        .is_some_and(|since| since.elapsed() >= debounce);
    if !(poll_due || (local && quiet)) {
        return Ok(false);
    }
    let options = cycle::Options {
        skip_held: true,
        ..cycle::Options::default()
    };
    let result = cycle::run(state, &mut engine, options);
    engine.dirty_since = None;
    result.map(|_| true)
}
