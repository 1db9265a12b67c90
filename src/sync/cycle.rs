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
use crate::model::sync::record::{observe_state, DeviceInfo, Record, RecordKey, State};
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
    /// Whether applying settled a clash here (to be stamped by the next read).
    pub settled: bool,
    /// The count of writes to synced tables after the apply, when one ran.
    pub written_to: Option<i64>,
    /// Milliseconds each step took, for the log (scripts/bench sync reads it).
    pub timings: Vec<(&'static str, u128)>,
}

impl Outcome {
    fn time<T>(&mut self, step: &'static str, work: impl FnOnce(&mut Outcome) -> T) -> T {
        let started = std::time::Instant::now();
        let done = work(self);
        self.timings.push((step, started.elapsed().as_millis()));
        done
    }
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

/// The connection's count of writes to synced tables (`store::sync::write_count`).
pub fn write_count(state: &AppState) -> Result<i64, StoreError> {
    state.db.read(rows::write_count)
}

/// Attempts of a cycle whose catalogue changed between its read and its apply.
const ATTEMPTS: usize = 5;

/// Runs one cycle on the live engine. A write to the catalogue between the cycle's read and
/// its apply (a request that came meanwhile) makes it start again, so the merge never
/// writes over an edit it did not stamp.
pub fn run(state: &AppState, engine: &mut Engine, options: Options) -> Result<Outcome, SyncError> {
    let mut options = options;
    for _ in 0..ATTEMPTS {
        match run_once(state, engine, options) {
            Err(SyncError::Changed) => {
                options.full = true;
                super::ensure_live(state, engine)?;
            }
            done => return done,
        }
    }
    Err(SyncError::Changed)
}

fn run_once(state: &AppState, engine: &mut Engine, options: Options) -> Result<Outcome, SyncError> {
    let changes_before = write_count(state)?;
    let dirty = options.full || engine.changes_seen != Some(changes_before);
    let held_file = engine.held.clone();
    let Some(live) = engine.live.as_mut() else {
        return Err(SyncError::Disabled);
    };
    let mut outcome = Outcome::default();
    let now = now_ms();
    let mut read_at = changes_before;
    if dirty {
        let held_back = state.db.read(rows::unapplied)?;
        let catalogue = outcome.time("read", |_| local::read(state))?;
        read_at = catalogue.writes;
        outcome.local_changes = outcome.time("stamp", |_| {
            local::stamp(
                &mut live.state,
                &mut live.clock,
                &live.device_id,
                &live.key,
                &catalogue,
                &held_back,
                now,
            )
        });
    }
    let merged = outcome.time("merge", |outcome| {
        merge_folder(state, live, held_file.as_ref(), options, now, outcome)
    });
    let mut merged = match merged {
        Ok(merged) => merged,
        Err(SyncError::MassDelete(held)) => {
            engine.held = Some(held.clone());
            return Err(SyncError::MassDelete(held));
        }
        Err(err) => return Err(err),
    };
    engine.held = None;
    let merged_any = merged.any;
    let present = std::mem::take(&mut merged.present);
    if let Err(err) = apply_and_write(state, live, merged, now, read_at, &mut outcome) {
        if merged_any {
            // The live state holds merges the catalogue did not take: drop it, and the next
            // cycle starts again from the copy kept in the data dir (else the catalogue's
            // older values would be taken for this device's edits).
            engine.live = None;
        }
        return Err(err);
    }
    update_warnings(engine, &outcome, &present);
    // The count from before this cycle: its own writes (and any write that came meanwhile)
    // make the next look read the catalogue once more, which also stamps what applying
    // settled here (a name made free, a reference cleared) as this device's change.
    // After an apply that settled nothing, the catalogue is the merged records: its own
    // writes are seen. Else (or after a request's write meanwhile, which the apply refuses)
    // the next look reads the catalogue again and stamps the difference.
    engine.changes_seen = match outcome.written_to {
        Some(after) if !outcome.settled => Some(after),
        _ => Some(read_at),
    };
    if !outcome.timings.is_empty() {
        let steps: Vec<String> = outcome
            .timings
            .iter()
            .map(|(step, ms)| format!("{step} {ms} ms"))
            .collect();
        log::info!("sync cycle: {}", steps.join(", "));
    }
    Ok(outcome)
}

/// What the folder's merges did to the live state, waiting to be applied.
struct Merged {
    /// Whether any file was merged (the live state then changed in place).
    any: bool,
    files: Vec<(String, String)>,
    peers: Vec<(String, String, u64)>,
    /// Every bundle file the folder held (for the warnings of files gone).
    present: BTreeSet<String>,
}

/// A bundle of the folder, opened.
struct Opened {
    name: String,
    look: String,
    header: Header,
    state: State,
}

/// Merges every bundle of the folder that changed since it was read, into the live state
/// in place. Every file is opened and weighed by the mass-delete guard before any is merged,
/// so a held merge leaves the live state as it was.
fn merge_folder(
    state: &AppState,
    live: &mut Live,
    held: Option<&Held>,
    options: Options,
    now: u64,
    outcome: &mut Outcome,
) -> Result<Merged, SyncError> {
    let (opened, present) = open_changed(state, live, held, options, now, outcome)?;
    let previous: BTreeMap<String, u64> = state
        .db
        .read(rows::peers)?
        .into_iter()
        .map(|peer| (peer.device_id, peer.records))
        .collect();
    let local_live = live.state.live_count();
    let mut befores = Vec::with_capacity(opened.len());
    for file in &opened {
        let before = differing(&live.state, &file.state);
        let deleted: Vec<RecordKey> = before
            .iter()
            .filter(|(key, mine)| {
                let theirs = file.state.records.get(*key);
                mine.is_alive() && theirs.is_some_and(|t| !merge::merge_record(mine, t).is_alive())
            })
            .map(|(key, _)| key.clone())
            .collect();
        let counts = Counts {
            local_live,
            remote_previous_live: previous.get(&file.header.device_id).map(|n| *n as usize),
            remote_live: file.state.live_count(),
        };
        let weighed = Report {
            deleted,
            ..Report::default()
        };
        if let Some(hold) = guard::check(&weighed, counts) {
            if !options.confirm_mass_delete {
                let held = held_for(file, weighed.deleted.len(), local_live, hold);
                return Err(SyncError::MassDelete(held));
            }
        }
        befores.push(before);
    }
    let mut merged = Merged {
        any: false,
        files: Vec::new(),
        peers: Vec::new(),
        present,
    };
    for (file, before) in opened.into_iter().zip(befores) {
        // Weighed against the state before any merge: after one, taken again.
        let before = match merged.any {
            false => before,
            true => differing(&live.state, &file.state),
        };
        let records = file.state.live_count() as u64;
        let mut report = merge::merge_into(&mut live.state, file.state);
        values_changed_only(&mut report, &before, &live.state);
        append(&mut outcome.report, report);
        merged.any = true;
        merged.files.push((file.name, file.look));
        merged
            .peers
            .push((file.header.device_id, file.header.device_name, records));
    }
    Ok(merged)
}

/// Opens every bundle of the folder that changed since it was merged (a file whose merge is
/// held and that did not change is passed over when `skip_held`); one that does not open,
/// or holds a stamp far ahead of this clock, is skipped and named.
fn open_changed(
    state: &AppState,
    live: &mut Live,
    held: Option<&Held>,
    options: Options,
    now: u64,
    outcome: &mut Outcome,
) -> Result<(Vec<Opened>, BTreeSet<String>), SyncError> {
    let files = folder::scan(&live.dir).map_err(|err| SyncError::Folder(err.to_string()))?;
    let present = files.iter().map(|(name, _)| name.clone()).collect();
    let seen = state.db.read(rows::files_seen)?;
    let mut opened = Vec::new();
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
        opened.push(Opened {
            name,
            look,
            header,
            state: remote,
        });
    }
    Ok((opened, present))
}

/// This side's version of each record the remote state holds otherwise (the only records a
/// merge can change; a few when devices are in step).
fn differing(local: &State, remote: &State) -> BTreeMap<RecordKey, Record> {
    remote
        .records
        .iter()
        .filter_map(|(key, theirs)| {
            let mine = local.records.get(key)?;
            (mine != theirs).then(|| (key.clone(), mine.clone()))
        })
        .collect()
}

/// Keeps in `updated` only the fields whose value changed: a field whose stamp moved with
/// the same value (two devices that hold the same record, one of them just set up) changes
/// nothing here and is not written again.
fn values_changed_only(report: &mut Report, before: &BTreeMap<RecordKey, Record>, after: &State) {
    report.updated.retain_mut(|(key, fields)| {
        let old = before.get(key);
        let new = after.records.get(key);
        fields.retain(|field| {
            let old = old.and_then(|r| r.fields.get(field)).map(|f| &f.value);
            let new = new.and_then(|r| r.fields.get(field)).map(|f| &f.value);
            old != new
        });
        !fields.is_empty()
    });
}

fn held_for(file: &Opened, deletions: usize, live: usize, hold: guard::Hold) -> Held {
    Held {
        file: file.name.clone(),
        seen: file.look.clone(),
        device_id: file.header.device_id.clone(),
        deletions,
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
        BundleError::NewerFormat { min_reader } => format!(
            "written by a newer version of host-manager (bundle format {min_reader}): update \
             host-manager on this device to merge it"
        ),
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
    read_at: i64,
    outcome: &mut Outcome,
) -> Result<(), SyncError> {
    let own = folder::own_file(&live.device_id);
    let own_missing = !live.dir.join(&own).exists();
    let merged_any = merged.any;
    if merged.any {
        let keys = changed_keys(&outcome.report);
        if !keys.is_empty() {
            outcome.time("snapshot", |_| {
                state
                    .db
                    .take_snapshot(&crate::vault::new_id(), Reason::SyncMerge, None)
            })?;
        }
        let started = std::time::Instant::now();
        let (incoming, mut problems) = local::incoming(state, &live.key, &live.state, &keys)?;
        let conflicts = stored_conflicts(&outcome.report);
        let (mut settled, mut written_to) = (false, read_at);
        let applied = state.db.write(|tx| {
            if rows::write_count(tx)? != read_at {
                // A request wrote the catalogue after it was read: its edit is not stamped,
                // and applying now could write over it. Nothing is written; the cycle
                // starts again.
                return Err(SyncError::Changed);
            }
            let applied = crate::store::sync::apply::apply(tx, &incoming)?;
            settled = applied.settled;
            written_to = rows::write_count(tx)?;
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
        outcome.settled = settled;
        outcome.written_to = Some(written_to);
        drop(applied);
        outcome
            .timings
            .push(("apply", started.elapsed().as_millis()));
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
    let started = std::time::Instant::now();
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
    outcome
        .timings
        .push(("write", started.elapsed().as_millis()));
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
fn update_warnings(engine: &mut Engine, outcome: &Outcome, present: &BTreeSet<String>) {
    engine.warnings.retain(|name, _| present.contains(name));
    for (name, problem) in &outcome.skipped {
        engine.warnings.insert(name.clone(), problem.clone());
    }
    if let Some(own) = &outcome.written {
        engine.warnings.remove(own);
    }
}
