//! The generic synced record and a device's whole synced state (docs/sync.md, "Records").
//!
//! A record is a kind ("host", "group", "key", "identity", "forward", "host_key",
//! "agent_policy", "tag", or any kind a newer version adds), an id, and fields: each a JSON
//! value with the stamp of its last change. A secret field's value is already sealed by the
//! caller; a field or kind this build does not know is carried as it is. A deleted record
//! keeps a tombstone: the delete's stamp and the stamp of each field the deleter had seen.
//!
//! Invariants: pure data (no clock read, no I/O, no plaintext secret); a record is alive iff
//! it has no tombstone or one of its fields changed after the deleter saw it (so a
//! concurrent edit beats a delete); a dead record keeps its last fields until the tombstone
//! horizon (`purge`), so such an edit brings back the whole record.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::sync::clock::{AheadOfClock, Clock, DeviceId, Stamp, MAX_AHEAD_MS};

/// The record kinds this build knows; any other kind is carried untouched.
#[cfg(test)] // what `store::sync::kinds` maps is checked against it
pub const KNOWN_KINDS: [&str; 8] = [
    "host",
    "group",
    "key",
    "identity",
    "forward",
    "host_key",
    "agent_policy",
    "tag",
];

/// The shortest tombstone horizon `purge` accepts: a year.
#[allow(dead_code)] // the tombstone horizon (docs/sync.md): built and tested; this version keeps every tombstone
pub const MIN_HORIZON_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// A record's identity in a state: (kind, id).
pub type RecordKey = (String, String);

/// One field: its value (sealed when secret; `null` once cleared), its last change, and the
/// version that change replaced (`prev`), which tells the merge whether the changer had seen
/// the other side's version (docs/sync.md, "Merge rules", rule 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub value: Value,
    pub stamp: Stamp,
    /// The stamp of the version this change replaced: another device's version, reached
    /// through this device's own earlier changes if any (a run of one device's edits keeps
    /// the version it started from); `None` for a field's first value.
    pub prev: Option<Stamp>,
}

/// A delete: when, and the stamp of each field the deleter had seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    pub stamp: Stamp,
    pub seen: BTreeMap<String, Stamp>,
}

/// One synced record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub fields: BTreeMap<String, Field>,
    pub tombstone: Option<Tombstone>,
}

/// What a state knows of a device: its name and when it last wrote its bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub name: String,
    pub written_at_ms: u64,
}

/// Every record by (kind, id), the device table, and body data from a newer writer that
/// this build carries without reading (`ext`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    pub records: BTreeMap<RecordKey, Record>,
    pub devices: BTreeMap<DeviceId, DeviceInfo>,
    pub ext: BTreeMap<String, Value>,
}

impl Record {
    /// Alive iff not deleted, or some field changed after the deleter saw it.
    pub fn is_alive(&self) -> bool {
        match &self.tombstone {
            None => true,
            Some(tomb) => self
                .fields
                .iter()
                .any(|(name, field)| tomb.seen.get(name).is_none_or(|seen| field.stamp > *seen)),
        }
    }

    /// The record's clock: its newest stamp (fields and tombstone).
    #[allow(dead_code)] // the tombstone horizon (docs/sync.md): built and tested; this version keeps every tombstone
    pub fn clock(&self) -> Option<&Stamp> {
        let fields = self.fields.values().map(|field| &field.stamp);
        fields
            .chain(self.tombstone.as_ref().map(|tomb| &tomb.stamp))
            .max()
    }

    /// Sets `name` to `value` as a local change stamped `stamp`, remembering the version
    /// it replaces: the field's current stamp, or, when that is this device's own earlier
    /// change, the version that change replaced (so editing a field twice between two syncs
    /// still names the version the other devices hold).
    pub fn set(&mut self, name: &str, value: Value, stamp: Stamp) {
        let prev = match self.fields.get(name) {
            Some(field) if field.stamp.device == stamp.device => field.prev.clone(),
            Some(field) => Some(field.stamp.clone()),
            None => None,
        };
        let field = Field { value, stamp, prev };
        self.fields.insert(name.to_owned(), field);
    }

    /// Deletes the record as a local change stamped `stamp`: the tombstone remembers every
    /// field's current stamp, so only a later change of a field brings the record back.
    pub fn delete(&mut self, stamp: Stamp) {
        let mut seen = self
            .tombstone
            .take()
            .map(|tomb| tomb.seen)
            .unwrap_or_default();
        for (name, field) in &self.fields {
            let entry = seen
                .entry(name.clone())
                .or_insert_with(|| field.stamp.clone());
            if field.stamp > *entry {
                *entry = field.stamp.clone();
            }
        }
        self.tombstone = Some(Tombstone { stamp, seen });
    }
}

impl State {
    /// The number of live records.
    pub fn live_count(&self) -> usize {
        self.records
            .values()
            .filter(|record| record.is_alive())
            .count()
    }

    /// Every stamp of the state (fields, the versions they replaced, tombstones and what
    /// the tombstones saw).
    pub fn stamps(&self) -> impl Iterator<Item = &Stamp> {
        self.records.values().flat_map(|record| {
            let fields = record
                .fields
                .values()
                .flat_map(|field| std::iter::once(&field.stamp).chain(field.prev.as_ref()));
            let tomb = record
                .tombstone
                .iter()
                .flat_map(|tomb| std::iter::once(&tomb.stamp).chain(tomb.seen.values()));
            fields.chain(tomb)
        })
    }
}

/// Refuses a state holding a stamp more than `MAX_AHEAD_MS` ahead of `now_ms` (its newest
/// such stamp is named); on success `clock` has observed the state's newest stamp.
pub fn observe_state(clock: &mut Clock, state: &State, now_ms: u64) -> Result<(), AheadOfClock> {
    match state.stamps().max() {
        Some(newest) if newest.ms().saturating_sub(now_ms) > MAX_AHEAD_MS => Err(AheadOfClock {
            device: newest.device.clone(),
            ahead_ms: newest.ms() - now_ms,
        }),
        Some(newest) => clock.observe(newest, now_ms),
        None => Ok(()),
    }
}

/// Drops every dead record whose tombstone is older than `horizon_ms` (at least
/// `MIN_HORIZON_MS`; a shorter one is raised to it) before `now_ms`.
#[allow(dead_code)] // the tombstone horizon (docs/sync.md): built and tested; this version keeps every tombstone
pub fn purge(state: &State, now_ms: u64, horizon_ms: u64) -> State {
    let cutoff = now_ms.saturating_sub(horizon_ms.max(MIN_HORIZON_MS));
    let mut kept = state.clone();
    kept.records.retain(|_, record| match &record.tombstone {
        Some(tomb) if !record.is_alive() => tomb.stamp.ms() >= cutoff,
        _ => true,
    });
    kept
}

/// Splits a remote state for a device that may have been away longer than the horizon:
/// a record this side does not hold whose clock is older than `horizon_ms` before `now_ms`
/// was most likely deleted and purged here, so it is taken out of the returned state and
/// listed to be confirmed by the user (staged) rather than brought back blindly.
#[allow(dead_code)] // the tombstone horizon (docs/sync.md): built and tested; this version keeps every tombstone
pub fn stage_stale(
    local: &State,
    remote: &State,
    now_ms: u64,
    horizon_ms: u64,
) -> (State, Vec<RecordKey>) {
    let cutoff = now_ms.saturating_sub(horizon_ms.max(MIN_HORIZON_MS));
    let mut kept = remote.clone();
    let mut staged = Vec::new();
    kept.records.retain(|key, record| {
        let stale = !local.records.contains_key(key)
            && record.clock().is_some_and(|clock| clock.ms() < cutoff);
        if stale {
            staged.push(key.clone());
        }
        !stale
    });
    (kept, staged)
}
