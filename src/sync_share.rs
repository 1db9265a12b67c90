//! Sync's share of `AppState` (docs/sync.md), below both the state and `sync/`: the live
//! engine's data (the folder, the sync key, the record clock and the merged state) and what
//! `GET /api/sync` shows besides the stored rows (the files skipped and why, a merge held for
//! confirmation). `sync/` runs the cycles on it; nothing here does work.
//!
//! Invariants: one lock (`engine`), taken before the database's and the vault's and never
//! while either is held, so a cycle (which takes each in turn) cannot deadlock with a
//! request; the sync key and the merged state's secrets are sealed or zeroized memory, and
//! `Debug` shows neither.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::model::sync::clock::Clock;
use crate::model::sync::record::State;
use crate::vault::bundle::SyncKey;

/// Sync's share of the state.
#[derive(Default)]
pub struct SyncShare {
    engine: Mutex<Engine>,
}

impl SyncShare {
    /// The engine, recovering from a poisoned lock: a cycle that panicked is dropped and the
    /// next one starts again from the stored settings (`live` is emptied).
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|poisoned| {
            log::warn!("recovered the sync lock after a panic in a sync cycle");
            let mut engine = poisoned.into_inner();
            engine.live = None;
            engine
        })
    }
}

impl SyncShare {
    /// Drops the live engine (the sync key and the merged state) unless a cycle holds it:
    /// after the vault locks, the key that opens every synced secret goes too (the next
    /// cycle after an unlock loads it again from the sealed passphrase).
    pub fn forget_key(&self) {
        if let Ok(mut engine) = self.engine.try_lock() {
            engine.live = None;
        }
    }
}

/// What the engine keeps between cycles.
#[derive(Default)]
pub struct Engine {
    /// Loaded while sync is set up and the vault was unlocked for a cycle.
    pub live: Option<Live>,
    /// Files skipped at their last look, and why (a damaged bundle, a wrong passphrase, a
    /// newer format, a clock far ahead), by file name.
    pub warnings: BTreeMap<String, String>,
    /// A merge held until the user confirms it (409 `MASS_DELETE`).
    pub held: Option<Held>,
    /// The connection's `total_changes()` after the last cycle: a local write moves it.
    pub changes_seen: Option<i64>,
    /// When a local write was first seen and not yet written out (the debounce).
    pub dirty_since: Option<Instant>,
}

/// The live engine: everything a cycle needs that is slow to make again.
pub struct Live {
    pub dir: PathBuf,
    pub key: SyncKey,
    pub device_id: String,
    pub device_name: String,
    pub clock: Clock,
    /// The merged state of every device seen, this one's changes included.
    pub state: State,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Live({:?}, {}, {} records)",
            self.dir,
            self.device_id,
            self.state.records.len()
        )
    }
}

/// A merge held for confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The file whose merge is held, and what it was when read (`size:mtime`).
    pub file: String,
    pub seen: String,
    pub device_id: String,
    /// The deletions it would make, of the live local records.
    pub deletions: usize,
    pub live: usize,
    /// The device's previous bundle held this many live records and the new one none.
    pub emptied_from: Option<usize>,
}
