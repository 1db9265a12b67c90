//! The merge of two synced states, and what it changed for the local side
//! (docs/sync.md, "Merge rules").
//!
//! `merge` is a join: per field the higher stamp wins (equal stamps with different values,
//! which one device never issues, fall to the larger canonical JSON text); tombstones join
//! by the later delete stamp and the pointwise newer `seen` stamps; device entries by the
//! later write. Each part is a join, so the whole is commutative, associative and
//! idempotent: delivery order and duplicate deliveries do not matter.
//!
//! A conflict is judged per field from the two versions alone: each version remembers the
//! one it replaced (`Field::prev`), so the merge knows whether the other side had seen it
//! (the three-way merge against the last merged state, kept per field).
//!
//! Invariants: pure (no clock, no I/O); never reads a secret (sealed values are compared as
//! JSON, two with the same `mac` being the same value); the report is sorted by (kind, id,
//! field), so it is the same for the same inputs.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::sync::clock::Stamp;
use crate::model::sync::record::{DeviceInfo, Field, Record, RecordKey, State, Tombstone};

/// The join of `a` and `b`.
#[cfg(test)] // the reference join the property tests compare `merge_into` with
pub fn merge(a: &State, b: &State) -> State {
    let mut records = BTreeMap::new();
    let mut left = a.records.iter().peekable();
    let mut right = b.records.iter().peekable();
    loop {
        let order = match (left.peek(), right.peek()) {
            (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        let (key, record) = match order {
            Ordering::Less => left.next().map(|(k, r)| (k, r.clone())),
            Ordering::Greater => right.next().map(|(k, r)| (k, r.clone())),
            Ordering::Equal => match (left.next(), right.next()) {
                (Some((k, ra)), Some((_, rb))) => Some((k, merge_record(ra, rb))),
                _ => None,
            },
        }
        .expect("peeked entries exist");
        records.insert(key.clone(), record);
    }
    State {
        records,
        devices: join_maps(&a.devices, &b.devices, later_device),
        ext: join_maps(&a.ext, &b.ext, |x, y| larger_value(x, y).clone()),
    }
}

/// The join of two versions of one record.
pub fn merge_record(a: &Record, b: &Record) -> Record {
    if a == b {
        return a.clone();
    }
    Record {
        fields: join_maps(&a.fields, &b.fields, |x, y| winner(x, y).clone()),
        tombstone: match (&a.tombstone, &b.tombstone) {
            (Some(x), Some(y)) => Some(Tombstone {
                stamp: x.stamp.clone().max(y.stamp.clone()),
                seen: join_maps(&x.seen, &y.seen, |s, t| s.clone().max(t.clone())),
            }),
            (x, y) => x.clone().or_else(|| y.clone()),
        },
    }
}

/// The field that wins between two versions: the higher stamp, then the larger value, then
/// the larger `prev` (the last two only for damaged input: a stamp is issued once).
pub fn winner<'f>(a: &'f Field, b: &'f Field) -> &'f Field {
    let order = a.stamp.cmp(&b.stamp).then_with(|| {
        if a.value == b.value {
            a.prev.cmp(&b.prev)
        } else if std::ptr::eq(larger_value(&a.value, &b.value), &a.value) {
            Ordering::Greater
        } else {
            Ordering::Less
        }
    });
    if order == Ordering::Less {
        b
    } else {
        a
    }
}

/// The larger of two values by their canonical JSON text (serde_json sorts object keys).
fn larger_value<'v>(a: &'v Value, b: &'v Value) -> &'v Value {
    if a == b || a.to_string().cmp(&b.to_string()) != Ordering::Less {
        a
    } else {
        b
    }
}

fn later_device(a: &DeviceInfo, b: &DeviceInfo) -> DeviceInfo {
    let key = |d: &DeviceInfo| (d.written_at_ms, d.name.clone());
    if key(a) >= key(b) {
        a.clone()
    } else {
        b.clone()
    }
}

/// The union of two maps, `join` deciding a key both hold.
fn join_maps<K: Ord + Clone, V: Clone + PartialEq>(
    a: &BTreeMap<K, V>,
    b: &BTreeMap<K, V>,
    join: impl Fn(&V, &V) -> V,
) -> BTreeMap<K, V> {
    let mut out = a.clone();
    for (key, value) in b {
        match out.get_mut(key) {
            Some(mine) if mine != value => *mine = join(mine, value),
            Some(_) => {}
            None => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// One side of a conflict: the value and the change that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    pub value: Value,
    pub stamp: Stamp,
}

/// A field both sides changed to different values, neither having seen the other's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub kind: String,
    pub id: String,
    pub field: String,
    pub winner: Side,
    pub loser: Side,
}

/// A record a delete would have removed but an edit kept alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resurrection {
    pub kind: String,
    pub id: String,
    /// The device of the (latest) delete that was overruled.
    pub deleted_by: Stamp,
}

/// What a merge changed for the local side, sorted by (kind, id, field).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub added: Vec<RecordKey>,
    /// Records alive before and after with changed fields, and those fields' names.
    pub updated: Vec<(RecordKey, Vec<String>)>,
    pub deleted: Vec<RecordKey>,
    pub resurrected: Vec<Resurrection>,
    pub conflicts: Vec<Conflict>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self == &Report::default()
    }
}

/// `merge(local, remote)` and what it changed for `local`, conflicts included (judged by
/// each version's `prev`, see `conflicts`). Copies both states; the service merges with
/// `merge_into`.
#[cfg(test)] // the service merges in place (`merge_into`)
pub fn merge_report(local: &State, remote: &State) -> (State, Report) {
    let mut merged = local.clone();
    let report = merge_into(&mut merged, remote.clone());
    (merged, report)
}

/// Merges `remote` into `local` in place (afterwards `local` is `merge(local, remote)`) and
/// returns what changed for `local`. Remote records are moved, not copied; a record equal on
/// both sides is only compared.
pub fn merge_into(local: &mut State, remote: State) -> Report {
    let mut report = Report::default();
    let State {
        records,
        devices,
        ext,
    } = remote;
    // Both maps are sorted: walk them side by side rather than look each key up.
    let mut new = Vec::new();
    let mut spent = Vec::new();
    let mut mine = local.records.iter_mut().peekable();
    for (key, theirs) in records {
        while mine.next_if(|(k, _)| **k < key).is_some() {}
        match mine.next_if(|(k, _)| **k == key) {
            Some((_, mine)) if *mine == theirs => spent.push((key, theirs)),
            Some((_, mine)) => merge_record_into(&key, mine, theirs, &mut report),
            None => {
                if theirs.is_alive() {
                    report.added.push(key.clone());
                }
                new.push((key, theirs));
            }
        }
    }
    local.records.extend(new);
    free_aside(spent);
    for (id, info) in devices {
        match local.devices.get_mut(&id) {
            Some(mine) => *mine = later_device(mine, &info),
            None => {
                local.devices.insert(id, info);
            }
        }
    }
    for (name, value) in ext {
        match local.ext.get_mut(&name) {
            Some(mine) => *mine = larger_value(mine, &value).clone(),
            None => {
                local.ext.insert(name, value);
            }
        }
    }
    report
}

/// From this many spent records up, `merge_into` frees them on a thread of their own.
pub const FREE_ASIDE_MIN: usize = 10_000;

/// Frees the remote copies of records both sides held equal. Freeing a whole catalogue's
/// copy (1.5 million fields) takes about as long as decoding it, and nothing waits for it,
/// so a large batch goes to a short-lived thread (freed here if no thread can be started).
fn free_aside(spent: Vec<(RecordKey, Record)>) {
    if spent.len() < FREE_ASIDE_MIN {
        return;
    }
    // A thread that cannot be started drops its closure, and so `spent`, right here.
    let started = std::thread::Builder::new()
        .name("sync-free".into())
        .spawn(move || drop(spent));
    drop(started);
}

/// Joins `theirs` into `mine` (two different versions of the record `key`) and reports it.
fn merge_record_into(key: &RecordKey, mine: &mut Record, theirs: Record, report: &mut Report) {
    conflicts(key, mine, &theirs, &mut report.conflicts);
    let was_alive = mine.is_alive();
    let mine_tomb = mine.tombstone.as_ref().map(|tomb| tomb.stamp.clone());
    let overruled = theirs
        .tombstone
        .as_ref()
        .is_some_and(|tomb| Some(&tomb.stamp) > mine_tomb.as_ref());
    let mut changed = Vec::new();
    for (name, field) in theirs.fields {
        match mine.fields.get_mut(&name) {
            Some(current) => {
                if *current != field && std::ptr::eq(winner(current, &field), &field) {
                    *current = field;
                    changed.push(name);
                }
            }
            None => {
                mine.fields.insert(name.clone(), field);
                changed.push(name);
            }
        }
    }
    let tomb_changed = match (&mut mine.tombstone, theirs.tombstone) {
        (Some(current), Some(tomb)) => join_tombstone(current, tomb),
        (slot @ None, Some(tomb)) => {
            *slot = Some(tomb);
            true
        }
        (_, None) => false,
    };
    if changed.is_empty() && !tomb_changed {
        return;
    }
    match (was_alive, mine.is_alive()) {
        (false, true) => report.resurrected.push(resurrection(key, mine)),
        (true, false) => report.deleted.push(key.clone()),
        (true, true) => {
            if overruled {
                report.resurrected.push(resurrection(key, mine));
            }
            if !changed.is_empty() {
                report.updated.push((key.clone(), changed));
            }
        }
        (false, false) => {}
    }
}

/// Joins `theirs` into `mine`: the later delete, the pointwise later seen stamps. True when
/// `mine` changed.
fn join_tombstone(mine: &mut Tombstone, theirs: Tombstone) -> bool {
    let mut changed = false;
    if theirs.stamp > mine.stamp {
        mine.stamp = theirs.stamp;
        changed = true;
    }
    for (name, stamp) in theirs.seen {
        match mine.seen.get_mut(&name) {
            Some(current) if stamp > *current => *current = stamp,
            Some(_) => continue,
            None => {
                mine.seen.insert(name, stamp);
            }
        }
        changed = true;
    }
    changed
}

fn resurrection(key: &RecordKey, after: &Record) -> Resurrection {
    let deleted_by = after.tombstone.as_ref().map(|tomb| tomb.stamp.clone());
    Resurrection {
        kind: key.0.clone(),
        id: key.1.clone(),
        deleted_by: deleted_by.expect("a resurrected record has a tombstone"),
    }
}

/// Fields both sides hold with different values where neither version descends from the
/// other: both sides changed the field without having seen the other's change.
fn conflicts(key: &RecordKey, mine: &Record, theirs: &Record, out: &mut Vec<Conflict>) {
    for (name, a) in &mine.fields {
        let Some(b) = theirs.fields.get(name) else {
            continue;
        };
        if same_value(&a.value, &b.value) || descends(a, b) || descends(b, a) {
            continue;
        }
        let win = winner(a, b);
        let lose = if std::ptr::eq(win, a) { b } else { a };
        out.push(Conflict {
            kind: key.0.clone(),
            id: key.1.clone(),
            field: name.clone(),
            winner: Side {
                value: win.value.clone(),
                stamp: win.stamp.clone(),
            },
            loser: Side {
                value: lose.value.clone(),
                stamp: lose.stamp.clone(),
            },
        });
    }
}

/// True when `newer`'s author had seen `older`: it replaced exactly that version, or it is
/// the device that wrote `older` (a device has seen its own changes; `Record::set` keeps a
/// run of one device's edits pointing at the version the run started from).
pub fn descends(newer: &Field, older: &Field) -> bool {
    newer.prev.as_ref() == Some(&older.stamp) || newer.stamp.device == older.stamp.device
}

/// Equal for conflict reporting: equal JSON, or two sealed secrets with the same `mac` (the
/// same plaintext sealed twice, with different nonces).
pub fn same_value(a: &Value, b: &Value) -> bool {
    a == b || matches!((mac_of(a), mac_of(b)), (Some(x), Some(y)) if x == y)
}

fn mac_of(value: &Value) -> Option<&str> {
    value.as_object()?.get("mac")?.as_str()
}
