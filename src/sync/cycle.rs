//! One sync cycle (docs/sync.md, "A cycle"): stamp this device's changes, merge the bundles
//! that changed in the folder, apply what the merge changed to the catalogue in one
//! transaction after a snapshot, then write this device's bundle.
//!
//! Invariants: nothing from a bundle reaches the catalogue unless the bundle opened whole
//! (a damaged, truncated or foreign file is skipped and named, never read as empty); a
//! merge the mass-delete guard holds changes nothing until confirmed; a file is marked read
//! only once merged, so a skipped or held file is looked at again; the catalogue is written
//! only after a snapshot (fail closed); the bundle is written after the catalogue commits,
//! so the folder never announces what this device does not hold.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::model::sync::guard::{self, Counts};
use crate::model::sync::merge::{self, Report};
use crate::model::sync::record::{observe_state, DeviceInfo, RecordKey, State};
use crate::state::AppState;
use crate::store::snapshots::Reason;
use crate::store::sync::{self as rows, StoredConflict};
use crate::store::{now_timestamp, StoreError};
use crate::sync::{folder, local, SyncError};
use crate::sync_share::{Engine, Held, Live};
use crate::vault::bundle::{self, BundleError, Header};

/// What a cycle did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// What the merges changed here.
    pub report: Report,
    /// Files not merged, and why.
    pub skipped: Vec<(String, String)>,
    /// This device's bundle, when written.
    pub written: Option<String>,
    /// Merged records the catalogue could not take, and why.
    pub unapplied: Vec<(RecordKey, String)>,
    /// Fields and records of this device stamped as changed.
    pub local_changes: usize,
}

/// How a cycle runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Merge even what the mass-delete guard would hold.
    pub confirm_mass_delete: bool,
    /// Read the catalogue even when no write was seen since the last cycle.
    pub full: bool,
    /// Pass over a file whose merge is held while it is unchanged (the background looks:
    /// a request asks again and is answered 409 again).
    pub skip_held: bool,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or(0)
}

/// `SELECT total_changes()`: moves with every write on the connection.
pub fn total_changes(state: &AppState) -> Result<i64, StoreError> {
    state
        .db
        .read(|conn| Ok(conn.query_row("SELECT total_changes()", [], |row| row.get(0))?))
}

/// Runs one cycle on the live engine.
pub fn run(state: &AppState, engine: &mut Engine, options: Options) -> Result<Outcome, SyncError> {
    let changes_before = total_changes(state)?;
    let dirty = options.full || engine.changes_seen != Some(changes_before);
    let held_file = engine.held.clone();
    let Some(live) = engine.live.as_mut() else {
        return Err(SyncError::Disabled);
    };
    let mut outcome = Outcome::default();
    let now = now_ms();
    if dirty {
        let held_back = state.db.read(rows::unapplied)?;
        let catalogue = local::read(state)?;
        outcome.local_changes = local::stamp(
            &mut live.state,
            &mut live.clock,
            &live.key,
            &catalogue,
            &held_back,
            now,
        );
    }
    let merged = merge_folder(state, live, held_file.as_ref(), options, now, &mut outcome);
    let merged = match merged {
        Ok(merged) => merged,
        Err(SyncError::MassDelete(held)) => {
            engine.held = Some(held.clone());
            return Err(SyncError::MassDelete(held));
        }
        Err(err) => return Err(err),
    };
    engine.held = None;
    apply_and_write(state, live, merged, now, &mut outcome)?;
    update_warnings(engine, &outcome);
    // The count from before this cycle: its own writes (and any write that came meanwhile)
    // make the next look read the catalogue once more, which also stamps what applying
    // settled here (a name made free, a reference cleared) as this device's change.
    engine.changes_seen = Some(changes_before);
    Ok(outcome)
}

/// A merge's result waiting to be applied.
struct Merged {
    state: Option<State>,
    files: Vec<(String, String)>,
    peers: Vec<(String, String, u64)>,
}

/// Merges every bundle of the folder that changed since it was read.
fn merge_folder(
    state: &AppState,
    live: &mut Live,
    held: Option<&Held>,
    options: Options,
    now: u64,
    outcome: &mut Outcome,
) -> Result<Merged, SyncError> {
    let files = folder::scan(&live.dir).map_err(|err| SyncError::Folder(err.to_string()))?;
    let seen = state.db.read(rows::files_seen)?;
    let previous: BTreeMap<String, u64> = state
        .db
        .read(rows::peers)?
        .into_iter()
        .map(|peer| (peer.device_id, peer.records))
        .collect();
    let mut merged = Merged {
        state: None,
        files: Vec::new(),
        peers: Vec::new(),
    };
    for (name, look) in files {
        if seen.get(&name) == Some(&look) {
            continue;
        }
        let still_held = held.is_some_and(|held| held.file == name && held.seen == look);
        if still_held && options.skip_held {
            continue;
        }
        let (header, remote) = match open_file(live, &name) {
            Ok(opened) => opened,
            Err(problem) => {
                outcome.skipped.push((name, problem));
                continue;
            }
        };
        if let Err(ahead) = observe_state(&mut live.clock, &remote, now) {
            let problem = format!(
                "a change by device {} is {} minutes ahead of this clock; merged once the clocks agree",
                ahead.device,
                ahead.ahead_ms / 60_000
            );
            outcome.skipped.push((name, problem));
            continue;
        }
        let base = merged.state.as_ref().unwrap_or(&live.state);
        let local_live = base.live_count();
        let (next, report) = merge::merge_report(base, &remote);
        let counts = Counts {
            local_live,
            remote_previous_live: previous.get(&header.device_id).map(|n| *n as usize),
            remote_live: remote.live_count(),
        };
        if let Some(hold) = guard::check(&report, counts) {
            if !options.confirm_mass_delete {
                return Err(SyncError::MassDelete(held_for(
                    &name, &look, &header, &report, local_live, hold,
                )));
            }
        }
        append(&mut outcome.report, report);
        merged.state = Some(next);
        merged.files.push((name, look));
        merged.peers.push((
            header.device_id,
            header.device_name,
            remote.live_count() as u64,
        ));
    }
    Ok(merged)
}

fn held_for(
    name: &str,
    look: &str,
    header: &Header,
    report: &Report,
    live: usize,
    hold: guard::Hold,
) -> Held {
    Held {
        file: name.to_owned(),
        seen: look.to_owned(),
        device_id: header.device_id.clone(),
        deletions: report.deleted.len(),
        live,
        emptied_from: match hold {
            guard::Hold::DeviceEmptied { previously } => Some(previously),
            guard::Hold::TooManyDeletes { .. } => None,
        },
    }
}

/// Opens one bundle file of the folder, or says why not (in words for the user).
fn open_file(live: &Live, name: &str) -> Result<(Header, State), String> {
    let bytes =
        folder::read(&live.dir.join(name)).map_err(|err| format!("cannot be read: {err}"))?;
    bundle::open(&live.key, &bytes).map_err(|err| match err {
        BundleError::OtherKdf => "written under another setup of the sync passphrase (its KDF \
             salt or rounds): set sync up again on one of the two devices (DELETE then PUT \
             /api/sync), which then takes the folder's"
            .to_owned(),
        other => other.to_string(),
    })
}

fn append(total: &mut Report, more: Report) {
    total.added.extend(more.added);
    total.updated.extend(more.updated);
    total.deleted.extend(more.deleted);
    total.resurrected.extend(more.resurrected);
    total.conflicts.extend(more.conflicts);
}

/// The records a report changed, of kinds this build writes.
fn changed_keys(report: &Report) -> BTreeSet<RecordKey> {
    let mut keys: BTreeSet<RecordKey> = BTreeSet::new();
    keys.extend(report.added.iter().cloned());
    keys.extend(report.updated.iter().map(|(key, _)| key.clone()));
    keys.extend(report.deleted.iter().cloned());
    keys.extend(
        report
            .resurrected
            .iter()
            .map(|r| (r.kind.clone(), r.id.clone())),
    );
    keys.retain(|(kind, _)| crate::store::sync::kinds::kind(kind).is_some());
    keys
}

/// Applies the merged state to the catalogue, records peers, files and conflicts, and
/// writes this device's bundle when anything changed.
fn apply_and_write(
    state: &AppState,
    live: &mut Live,
    merged: Merged,
    now: u64,
    outcome: &mut Outcome,
) -> Result<(), SyncError> {
    let own = folder::own_file(&live.device_id);
    let own_missing = !live.dir.join(&own).exists();
    let merged_any = !merged.files.is_empty();
    if let Some(next) = merged.state {
        let keys = changed_keys(&outcome.report);
        if !keys.is_empty() {
            state
                .db
                .take_snapshot(&crate::vault::new_id(), Reason::SyncMerge, None)?;
        }
        let (incoming, mut problems) = local::incoming(state, &live.key, &next, &keys)?;
        let conflicts = stored_conflicts(&outcome.report);
        let applied = state.db.write(|tx| {
            let applied = crate::store::sync::apply::apply(tx, &incoming)?;
            problems.extend(applied.unapplied.iter().cloned());
            rows::save_unapplied(tx, &applied.applied, &problems)?;
            rows::add_conflicts(tx, &conflicts)?;
            for (device_id, name, records) in &merged.peers {
                rows::save_peer(tx, device_id, name, *records)?;
            }
            for (name, look) in &merged.files {
                rows::save_file_seen(tx, name, look)?;
            }
            Ok::<_, SyncError>(applied)
        })?;
        outcome.unapplied = problems;
        drop(applied);
        live.state = next;
    }
    // Written only when this device holds something new: a merge that changed nothing here
    // (the other device's bundle held nothing this one lacks) rewrites nothing, so two idle
    // devices do not answer each other's writes forever.
    if outcome.local_changes == 0 && outcome.report.is_empty() && !own_missing {
        if merged_any {
            let clock = live.clock.last();
            state
                .db
                .write(|tx| rows::save_progress(tx, clock, false, true))?;
        }
        return Ok(());
    }
    live.state.devices.insert(
        live.device_id.as_str().into(),
        DeviceInfo {
            name: live.device_name.clone(),
            written_at_ms: now,
        },
    );
    let header = Header {
        format_version: 0,
        min_reader: 0,
        kdf: live.key.params().clone(),
        check: [0; 16],
        device_id: live.device_id.clone(),
        device_name: live.device_name.clone(),
        extra: Default::default(),
    };
    let bytes = bundle::write(&live.key, &header, &live.state);
    let kept = folder::write_atomic(&state.config.data_dir, super::STATE_FILE, &bytes);
    if let Err(err) = kept {
        log::warn!("sync: cannot keep the merged state in the data dir: {err}");
    }
    match folder::write_atomic(&live.dir, &own, &bytes) {
        Ok(()) => {
            let look = folder::look(&live.dir.join(&own)).unwrap_or_default();
            let clock = live.clock.last();
            state.db.write(|tx| {
                rows::save_file_seen(tx, &own, &look)?;
                rows::save_progress(tx, clock, true, merged_any)
            })?;
            outcome.written = Some(own);
        }
        Err(err) => outcome
            .skipped
            .push((own, format!("cannot be written: {err}"))),
    }
    Ok(())
}

fn side(value: &serde_json::Value, stamp: &crate::model::sync::clock::Stamp) -> String {
    serde_json::json!({
        "value": value,
        "device_id": &*stamp.device,
        "at_ms": stamp.ms(),
    })
    .to_string()
}

fn stored_conflicts(report: &Report) -> Vec<StoredConflict> {
    let at = now_timestamp();
    report
        .conflicts
        .iter()
        .map(|c| StoredConflict {
            detected_at: at.clone(),
            kind: c.kind.clone(),
            id: c.id.clone(),
            field: c.field.clone(),
            winner: side(&c.winner.value, &c.winner.stamp),
            loser: side(&c.loser.value, &c.loser.stamp),
        })
        .collect()
}

/// Keeps the warnings of files not read this cycle (still skipped) and of files that are
/// still there; replaces those of the files read.
fn update_warnings(engine: &mut Engine, outcome: &Outcome) {
    let Some(live) = engine.live.as_ref() else {
        return;
    };
    let present: BTreeSet<String> = folder::scan(&live.dir)
        .map(|files| files.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default();
    engine.warnings.retain(|name, _| present.contains(name));
    for (name, problem) in &outcome.skipped {
        engine.warnings.insert(name.clone(), problem.clone());
    }
    if let Some(own) = &outcome.written {
        engine.warnings.remove(own);
    }
}
