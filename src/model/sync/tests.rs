//! Property and unit tests of the sync core: random edit histories on three devices whose
//! clocks are up to 10 minutes apart, delivered in random orders with duplicates, and the
//! edge of every rule on both sides. `timing` measures the merge path at 100,000 hosts.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::fuzz::{settings, Rng};
use crate::model::sync::clock::{pack, Clock, Stamp, MAX_AHEAD_MS};
use crate::model::sync::guard::{self, Counts, Hold};
use crate::model::sync::merge::{
    descends, merge, merge_into, merge_report, same_value, winner, Conflict, Report, Resurrection,
    Side, FREE_ASIDE_MIN,
};
use crate::model::sync::record::{
    observe_state, purge, stage_stale, DeviceInfo, Field, Record, RecordKey, State, MIN_HORIZON_MS,
};
use crate::model::sync::wire;

const MINUTE: u64 = 60_000;
const T0: u64 = 1_800_000_000_000;

fn key(kind: &str, id: &str) -> RecordKey {
    (kind.to_owned(), id.to_owned())
}

/// One simulated device: its clock, its wall-clock offset and its state.
struct Device {
    clock: Clock,
    offset: i64,
    state: State,
}

impl Device {
    fn new(name: &str, offset_minutes: i64) -> Device {
        Device {
            clock: Clock::new(name, 0),
            offset: offset_minutes * MINUTE as i64,
            state: State::default(),
        }
    }

    fn now(&self, world: u64) -> u64 {
        world.saturating_add_signed(self.offset)
    }

    fn edit(&mut self, world: u64, record: &RecordKey, field: &str, value: Value) -> Stamp {
        let stamp = self.clock.tick(self.now(world));
        let entry = self.state.records.entry(record.clone()).or_default();
        entry.set(field, value, stamp.clone());
        stamp
    }

    fn delete(&mut self, world: u64, record: &RecordKey) {
        let stamp = self.clock.tick(self.now(world));
        if let Some(entry) = self.state.records.get_mut(record) {
            entry.delete(stamp);
        }
    }

    fn receive(&mut self, world: u64, remote: &State) {
        let now = self.now(world);
        observe_state(&mut self.clock, remote, now).unwrap();
        self.state = merge(&self.state, remote);
    }
}

/// The ground truth the conflict rule is checked against: which versions each version's
/// writer had seen (everything its device had held, directly or through what it merged).
#[derive(Default)]
struct Truth {
    past: BTreeMap<Stamp, BTreeSet<Stamp>>,
    known: [BTreeSet<Stamp>; 3],
    /// Field pairs met in a merge whose writers had not seen each other's version.
    concurrent: usize,
}

impl Truth {
    fn wrote(&mut self, device: usize, stamp: Stamp) {
        self.past.insert(stamp.clone(), self.known[device].clone());
        self.known[device].insert(stamp);
    }

    fn saw(&self, newer: &Stamp, older: &Stamp) -> bool {
        self.past
            .get(newer)
            .is_some_and(|past| past.contains(older))
    }

    /// `device` merges `remote` into `local`: every field pair whose writers had not seen
    /// each other's version must be reported; then the device knows what `remote` knew.
    fn receive(&mut self, device: usize, local: &State, remote: &State) {
        let (_, report) = merge_report(local, remote);
        for (key, mine) in &local.records {
            let Some(theirs) = remote.records.get(key) else {
                continue;
            };
            for (name, x) in &mine.fields {
                let Some(y) = theirs.fields.get(name) else {
                    continue;
                };
                if x.value == y.value
                    || self.saw(&x.stamp, &y.stamp)
                    || self.saw(&y.stamp, &x.stamp)
                {
                    continue;
                }
                self.concurrent += 1;
                let reported = report
                    .conflicts
                    .iter()
                    .any(|c| (&c.kind, &c.id, &c.field) == (&key.0, &key.1, name));
                assert!(reported, "a missed conflict: {key:?} {name}: {x:?} / {y:?}");
            }
        }
        for field in remote.records.values().flat_map(|r| r.fields.values()) {
            let past = self.past.get(&field.stamp).cloned().unwrap_or_default();
            self.known[device].extend(past);
            self.known[device].insert(field.stamp.clone());
        }
    }
}

const KINDS: [&str; 3] = ["host", "group", "x-future-kind"];
const FIELDS: [&str; 5] = ["name", "address", "port", "note", "x-future-field"];

/// A random history: edits, deletes, re-edits and partial syncs on three devices whose
/// clocks are 0, +10 and -10 minutes off. Returns the devices, snapshots along the way and
/// the number of merged field pairs whose writers had not seen each other's version (each
/// checked to be reported as a conflict).
fn history(rng: &mut Rng, steps: usize) -> (Vec<Device>, Vec<State>, usize) {
    let mut truth = Truth::default();
    let mut devices = vec![
        Device::new("a", 0),
        Device::new("b", 10),
        Device::new("c", -10),
    ];
    let mut snapshots = Vec::new();
    let mut world = T0;
    for step in 0..steps {
        world += rng.below(3 * MINUTE as usize) as u64;
        let d = rng.below(3);
        let known: Vec<RecordKey> = devices[d].state.records.keys().cloned().collect();
        match rng.below(6) {
            0 => {
                let record = key(KINDS[rng.below(KINDS.len())], &format!("r{step}"));
                let stamp = devices[d].edit(world, &record, "name", json!(format!("n{step}")));
                truth.wrote(d, stamp);
            }
            1 | 2 => {
                if let Some(record) = rng.pick_any(&known) {
                    let before = devices[d].state.stamps().max().cloned();
                    let stamp = devices[d].edit(
                        world,
                        record,
                        FIELDS[rng.below(FIELDS.len())],
                        json!(step),
                    );
                    assert!(
                        Some(&stamp) > before.as_ref(),
                        "a local edit is stamped last"
                    );
                    truth.wrote(d, stamp);
                }
            }
            3 => {
                if let Some(record) = rng.pick_any(&known) {
                    devices[d].delete(world, record);
                }
            }
            _ => {
                let from = rng.below(3);
                let remote = devices[from].state.clone();
                truth.receive(d, &devices[d].state, &remote);
                devices[d].receive(world, &remote);
            }
        }
        if rng.below(4) == 0 {
            snapshots.push(devices[d].state.clone());
        }
    }
    (devices, snapshots, truth.concurrent)
}

fn histories() -> impl Iterator<Item = (Rng, Vec<Device>, Vec<State>, usize)> {
    let (iterations, seed) = settings("sync merge", 0x051C_0000);
    let mut rng = Rng::new(seed);
    (0..(iterations / 200).max(20)).map(move |_| {
        let steps = 5 + rng.below(60);
        let mut own = Rng::new(rng.next());
        let (devices, snapshots, concurrent) = history(&mut own, steps);
        (own, devices, snapshots, concurrent)
    })
}

#[test]
fn merge_is_commutative_associative_and_idempotent_over_random_histories() {
    for (mut rng, devices, mut snapshots, _) in histories() {
        snapshots.extend(devices.into_iter().map(|d| d.state));
        for _ in 0..10 {
            let a = rng.pick(&snapshots);
            let b = rng.pick(&snapshots);
            let c = rng.pick(&snapshots);
            assert_eq!(merge(a, b), merge(b, a), "commutative");
            assert_eq!(&merge(a, a), a, "idempotent");
            assert_eq!(
                merge(&merge(a, b), c),
                merge(a, &merge(b, c)),
                "associative"
            );
        }
    }
}

#[test]
fn a_merge_never_misses_a_conflict_whose_writers_had_not_seen_each_other_over_random_histories() {
    // `history` checks every merge against the ground truth (`Truth::receive`); here: the
    // histories do hold such conflicts, so that check is not vacuous.
    let concurrent: usize = histories().map(|(_, _, _, concurrent)| concurrent).sum();
    assert!(concurrent > 0);
}

/// The report as the difference between `local` and the join (the definition `merge_into`'s
/// in-place report is checked against).
fn reference_report(local: &State, remote: &State) -> Report {
    let merged = merge(local, remote);
    let mut report = Report::default();
    for (key, after) in &merged.records {
        let (before, theirs) = (local.records.get(key), remote.records.get(key));
        for (name, a) in before.iter().flat_map(|mine| &mine.fields) {
            let Some(b) = theirs.and_then(|theirs| theirs.fields.get(name)) else {
                continue;
            };
            if same_value(&a.value, &b.value) || descends(a, b) || descends(b, a) {
                continue;
            }
            let win = winner(a, b);
            let lose = if win == a { b } else { a };
            let side = |f: &Field| Side {
                value: f.value.clone(),
                stamp: f.stamp.clone(),
            };
            report.conflicts.push(Conflict {
                kind: key.0.clone(),
                id: key.1.clone(),
                field: name.clone(),
                winner: side(win),
                loser: side(lose),
            });
        }
        if before == Some(after) {
            continue;
        }
        let delete =
            |r: Option<&Record>| r.and_then(|r| r.tombstone.as_ref().map(|t| t.stamp.clone()));
        let resurrected = || Resurrection {
            kind: key.0.clone(),
            id: key.1.clone(),
            deleted_by: delete(Some(after)).unwrap(),
        };
        match (before.is_some_and(Record::is_alive), after.is_alive()) {
            (false, true) if before.is_none() => report.added.push(key.clone()),
            (false, true) => report.resurrected.push(resurrected()),
            (true, false) => report.deleted.push(key.clone()),
            (true, true) => {
                if delete(theirs).is_some() && delete(theirs) > delete(before) {
                    report.resurrected.push(resurrected());
                }
                let changed: Vec<String> = after
                    .fields
                    .iter()
                    .filter(|(name, field)| {
                        before.and_then(|b| b.fields.get(*name)) != Some(*field)
                    })
                    .map(|(name, _)| name.clone())
                    .collect();
                if !changed.is_empty() {
                    report.updated.push((key.clone(), changed));
                }
            }
            (false, false) => {}
        }
    }
    report
}

#[test]
fn merge_into_updates_in_place_to_the_join_and_reports_the_difference_over_random_histories() {
    let mut reported = 0;
    for (mut rng, devices, mut snapshots, _) in histories() {
        snapshots.extend(devices.into_iter().map(|d| d.state));
        for _ in 0..10 {
            let local = rng.pick(&snapshots);
            let remote = rng.pick(&snapshots);
            let mut merged = local.clone();
            let report = merge_into(&mut merged, remote.clone());
            assert_eq!(merged, merge(local, remote), "the join");
            assert_eq!(report, reference_report(local, remote), "the difference");
            reported += usize::from(!report.is_empty());
        }
    }
    assert!(
        reported > 0,
        "the histories hold merges that change something"
    );
}

#[test]
fn three_devices_converge_whatever_the_delivery_order_and_duplicates() {
    for (mut rng, mut devices, _, _) in histories() {
        let finals: Vec<State> = devices.iter().map(|d| d.state.clone()).collect();
        let expected = merge(&merge(&finals[0], &finals[1]), &finals[2]);
        let world = T0 + 1_000 * MINUTE;
        for device in &mut devices {
            // Every other state at least once, in a random order, some twice.
            let mut order: Vec<usize> = vec![0, 1, 2];
            order.extend((0..rng.below(4)).map(|_| rng.below(3)));
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            for from in order {
                device.receive(world, &finals[from]);
            }
            assert_eq!(device.state, expected);
        }
    }
}

#[test]
fn a_device_ten_minutes_behind_stamps_its_next_edit_after_what_it_saw() {
    let mut ahead = Device::new("ahead", 10);
    let mut behind = Device::new("behind", -10);
    let host = key("host", "h");
    ahead.edit(T0, &host, "name", json!("from ahead"));
    behind.receive(T0 + MINUTE, &ahead.state);
    behind.edit(T0 + MINUTE, &host, "name", json!("from behind, later"));
    ahead.receive(T0 + 2 * MINUTE, &behind.state);
    assert_eq!(
        ahead.state.records[&host].fields["name"].value,
        json!("from behind, later")
    );
}

#[test]
fn tick_never_goes_back_when_the_wall_clock_does() {
    let mut clock = Clock::new("d", 0);
    let first = clock.tick(T0);
    let second = clock.tick(T0 - MINUTE);
    assert!(second > first);
    assert_eq!(second.ms(), T0);
    assert_eq!(second.counter(), 1);
    assert_eq!(
        clock.tick(T0 + 1).counter(),
        0,
        "the wall clock again once it passes"
    );
}

#[test]
fn a_full_counter_carries_into_the_milliseconds() {
    let mut clock = Clock::new("d", pack(T0, u16::MAX));
    let next = clock.tick(T0);
    assert_eq!((next.ms(), next.counter()), (T0 + 1, 0));
}

#[test]
fn a_stamp_a_day_ahead_is_observed_and_one_a_millisecond_further_is_refused() {
    let mut clock = Clock::new("d", 0);
    let edge = Stamp::new(T0 + MAX_AHEAD_MS, 0, "far");
    assert!(clock.observe(&edge, T0).is_ok());
    assert!(clock.tick(T0) > edge);
    let mut clock = Clock::new("d", 0);
    let beyond = Stamp::new(T0 + MAX_AHEAD_MS + 1, 0, "far");
    let refused = clock.observe(&beyond, T0).unwrap_err();
    assert_eq!(refused.ahead_ms, MAX_AHEAD_MS + 1);
    assert_eq!(
        clock.last(),
        0,
        "a refused stamp leaves the clock as it was"
    );
    let mut state = State::default();
    state
        .records
        .entry(key("host", "h"))
        .or_default()
        .set("name", json!(1), beyond);
    assert!(observe_state(&mut clock, &state, T0).is_err());
}

/// Device a holds host h (name, port); b deletes it; a concurrently edits `field`.
fn edit_and_delete(field: &str) -> (State, State) {
    let mut a = Device::new("a", 0);
    let host = key("host", "h");
    a.edit(T0, &host, "name", json!("web"));
    a.edit(T0, &host, "port", json!(22));
    let mut b = Device::new("b", 0);
    b.receive(T0, &a.state);
    b.delete(T0 + 2 * MINUTE, &host);
    a.edit(T0 + MINUTE, &host, field, json!("changed"));
    (a.state, b.state)
}

#[test]
fn a_concurrent_edit_beats_a_delete_on_both_sides_and_is_reported() {
    for field in ["port", "new-field"] {
        let (a, b) = edit_and_delete(field);
        let host = key("host", "h");
        let (merged, report) = merge_report(&a, &b);
        assert!(merged.records[&host].is_alive(), "{field}");
        assert_eq!(
            merged.records[&host].fields["name"].value,
            json!("web"),
            "whole record"
        );
        assert_eq!(
            report.resurrected.len(),
            1,
            "local edit beat the remote delete"
        );
        let (merged_b, report_b) = merge_report(&b, &a);
        assert_eq!(merged_b, merged);
        assert_eq!(report_b.resurrected[0].deleted_by.device.as_ref(), "b");
    }
}

#[test]
fn a_delete_after_seeing_the_edit_wins() {
    let (a, mut b) = edit_and_delete("port");
    let host = key("host", "h");
    b = merge(&b, &a);
    b.records
        .get_mut(&host)
        .unwrap()
        .delete(Stamp::new(T0 + 5 * MINUTE, 0, "b"));
    let (merged, report) = merge_report(&a, &b);
    assert!(!merged.records[&host].is_alive());
    assert_eq!(report.deleted, vec![host]);
}

#[test]
fn the_deleter_editing_again_brings_the_record_back() {
    let mut a = Device::new("a", 0);
    let host = key("host", "h");
    a.edit(T0, &host, "name", json!("web"));
    a.delete(T0 + 1, &host);
    assert!(!a.state.records[&host].is_alive());
    a.edit(T0 + 2, &host, "name", json!("again"));
    assert!(a.state.records[&host].is_alive());
}

/// The conflicts `merge_report(local, remote)` finds, as (field, winner, loser) values.
fn conflicts_of(local: &State, remote: &State) -> Vec<(String, Value, Value)> {
    let (_, report) = merge_report(local, remote);
    let sides = report.conflicts.into_iter();
    sides
        .map(|c| (c.field, c.winner.value, c.loser.value))
        .collect()
}

/// Devices a and b holding host h's name "p0", written by a third device (their common
/// version).
fn common_version() -> (Device, Device, RecordKey) {
    let host = key("host", "h");
    let mut origin = Device::new("o", 0);
    origin.edit(T0, &host, "name", json!("p0"));
    let mut a = Device::new("a", 0);
    a.receive(T0, &origin.state);
    let mut b = Device::new("b", 0);
    b.receive(T0, &origin.state);
    (a, b, host)
}

#[test]
fn a_field_changed_on_both_sides_since_their_common_version_is_a_conflict_won_by_the_higher_stamp()
{
    // a edits twice (a1, then a2), b once (b1), both from p0: neither saw the other's.
    let (mut a, mut b, host) = common_version();
    let p0 = a.state.records[&host].fields["name"].stamp.clone();
    a.edit(T0 + 1, &host, "name", json!("a1"));
    b.edit(T0 + 2, &host, "name", json!("b1"));
    a.edit(T0 + 3, &host, "name", json!("a2"));
    assert_eq!(
        a.state.records[&host].fields["name"].prev,
        Some(p0),
        "a run of one device's edits names the version it started from"
    );
    let expected = vec![("name".to_owned(), json!("a2"), json!("b1"))];
    assert_eq!(conflicts_of(&b.state, &a.state), expected);
    assert_eq!(conflicts_of(&a.state, &b.state), expected);
    let (merged, report) = merge_report(&b.state, &a.state);
    assert_eq!(merged.records[&host].fields["name"].value, json!("a2"));
    let conflict = &report.conflicts[0];
    assert_eq!(
        (conflict.kind.as_str(), conflict.id.as_str()),
        ("host", "h")
    );
    assert_eq!(conflict.winner.stamp.device.as_ref(), "a");
    assert_eq!(conflict.loser.stamp.device.as_ref(), "b");
    assert_eq!(report.updated, vec![(host, vec!["name".to_owned()])]);
}

#[test]
fn a_change_made_after_seeing_the_other_version_is_no_conflict_and_one_made_before_is() {
    // c saw a1 and changed it (c1 replaced a1) while a still holds a1: no conflict.
    let (mut a, _, host) = common_version();
    let mut late = Device::new("c", 0);
    let mut early = Device::new("d", 0);
    early.receive(T0, &a.state);
    a.edit(T0 + 1, &host, "name", json!("a1"));
    late.receive(T0 + 2, &a.state);
    late.edit(T0 + 3, &host, "name", json!("c1"));
    assert!(conflicts_of(&a.state, &late.state).is_empty());
    assert!(conflicts_of(&late.state, &a.state).is_empty());
    let (merged, report) = merge_report(&a.state, &late.state);
    assert_eq!(merged.records[&host].fields["name"].value, json!("c1"));
    assert_eq!(
        report.updated,
        vec![(host.clone(), vec!["name".to_owned()])]
    );
    // d changed p0 without having seen a1: a conflict, whichever side merges.
    early.edit(T0 + 3, &host, "name", json!("d1"));
    let expected = vec![("name".to_owned(), json!("d1"), json!("a1"))];
    assert_eq!(conflicts_of(&a.state, &early.state), expected);
    assert_eq!(conflicts_of(&early.state, &a.state), expected);
}

#[test]
fn edits_on_one_side_only_are_no_conflict_however_many_and_whichever_version_the_other_holds() {
    // b edits p0 twice; a holds p0, c holds b's first edit: neither is a conflict.
    let (a, mut b, host) = common_version();
    b.edit(T0 + 1, &host, "name", json!("b1"));
    let mut c = Device::new("c", 0);
    c.receive(T0 + 2, &b.state);
    b.edit(T0 + 3, &host, "name", json!("b2"));
    for holder in [&a.state, &c.state] {
        assert!(conflicts_of(holder, &b.state).is_empty());
        assert!(conflicts_of(&b.state, holder).is_empty());
        let (merged, _) = merge_report(holder, &b.state);
        assert_eq!(merged.records[&host].fields["name"].value, json!("b2"));
    }
}

#[test]
fn a_version_seen_only_through_a_later_one_of_a_third_device_is_reported_the_known_limit() {
    // c replaced b1, which replaced a1: c had seen a1, but each version remembers only the
    // one it replaced, so a (still holding a1) is told of a conflict: one too many, never
    // one missed (docs/sync.md, "Merge rules", rule 2).
    let (mut a, mut b, host) = common_version();
    a.edit(T0 + 1, &host, "name", json!("a1"));
    b.receive(T0 + 2, &a.state);
    b.edit(T0 + 2, &host, "name", json!("b1"));
    let mut c = Device::new("c", 0);
    c.receive(T0 + 3, &b.state);
    c.edit(T0 + 3, &host, "name", json!("c1"));
    assert!(conflicts_of(&b.state, &c.state).is_empty());
    assert_eq!(conflicts_of(&a.state, &c.state).len(), 1);
}

#[test]
fn records_created_independently_with_one_id_conflict_where_their_values_differ() {
    // First contact: no field has a previous version on either side.
    let host = key("host", "h");
    let mut a = Device::new("a", 0);
    a.edit(T0, &host, "name", json!("web"));
    a.edit(T0, &host, "port", json!(22));
    let mut b = Device::new("b", 0);
    b.edit(T0 + 1, &host, "name", json!("db"));
    b.edit(T0 + 1, &host, "port", json!(22));
    assert!(a.state.records[&host].fields["name"].prev.is_none());
    let expected = vec![("name".to_owned(), json!("db"), json!("web"))];
    assert_eq!(conflicts_of(&a.state, &b.state), expected, "port is equal");
    assert_eq!(conflicts_of(&b.state, &a.state), expected);
}

#[test]
fn sealed_secrets_with_the_same_mac_are_one_value_and_with_another_mac_a_conflict() {
    let (mut a, mut b, host) = common_version();
    let sealed = |nonce: &str, mac: &str| json!({"sealed": nonce, "mac": mac});
    a.edit(T0 + 1, &host, "password", sealed("AAAA", "m1"));
    b.edit(T0 + 2, &host, "password", sealed("BBBB", "m1"));
    assert!(conflicts_of(&a.state, &b.state).is_empty());
    assert!(conflicts_of(&b.state, &a.state).is_empty());
    let (merged, _) = merge_report(&a.state, &b.state);
    assert_eq!(
        merged.records[&host].fields["password"].value,
        sealed("BBBB", "m1"),
        "the join still takes the later version"
    );
    b.edit(T0 + 3, &host, "password", sealed("CCCC", "m2"));
    let other = vec![(
        "password".to_owned(),
        sealed("CCCC", "m2"),
        sealed("AAAA", "m1"),
    )];
    assert_eq!(conflicts_of(&a.state, &b.state), other);
    b.edit(T0 + 4, &host, "password", json!({"sealed": "AAAA"}));
    assert_eq!(
        conflicts_of(&a.state, &b.state).len(),
        1,
        "equal sealed text without a mac on one side is compared as JSON"
    );
}

#[test]
fn equal_stamps_with_different_values_resolve_the_same_in_both_orders() {
    let host = key("host", "h");
    let stamp = Stamp::new(T0, 0, "d");
    let mut a = State::default();
    a.records
        .entry(host.clone())
        .or_default()
        .set("name", json!("x"), stamp.clone());
    let mut b = State::default();
    b.records
        .entry(host.clone())
        .or_default()
        .set("name", json!("y"), stamp);
    assert_eq!(merge(&a, &b), merge(&b, &a));
    assert_eq!(
        merge(&a, &b).records[&host].fields["name"].value,
        json!("y")
    );
    // The same stamp and value but another replaced version: still one answer both ways.
    let mut c = b.clone();
    let field = c
        .records
        .get_mut(&host)
        .unwrap()
        .fields
        .get_mut("name")
        .unwrap();
    field.prev = Some(Stamp::new(T0 - 1, 0, "e"));
    assert_eq!(merge(&b, &c), merge(&c, &b));
}

#[test]
fn unknown_kinds_fields_and_body_data_survive_a_merge_and_the_encoding() {
    let mut a = State::default();
    let odd = key("x-future-kind", "1");
    a.records.entry(odd.clone()).or_default().set(
        "x-field",
        json!({"nested": [1, 2]}),
        Stamp::new(T0, 0, "new"),
    );
    a.ext.insert("x-future-table".into(), json!([1, "two"]));
    let mut b = State::default();
    b.records.entry(key("host", "h")).or_default().set(
        "name",
        json!("w"),
        Stamp::new(T0, 1, "old"),
    );
    let merged = merge(&b, &a);
    assert_eq!(merged.records[&odd], a.records[&odd]);
    assert_eq!(merged.ext, a.ext);
    assert_eq!(wire::decode(&wire::encode(&merged)).unwrap(), merged);
}

#[test]
fn the_report_is_sorted_and_empty_for_a_state_merged_with_itself() {
    let (_, devices, _, _) = histories().nth(3).unwrap();
    let state = &devices[0].state;
    assert!(merge_report(state, state).1.is_empty());
    let (_, report) = merge_report(&State::default(), state);
    let mut sorted = report.added.clone();
    sorted.sort();
    assert_eq!(report.added, sorted);
}

#[test]
fn wire_decoding_refuses_a_bad_index_a_duplicate_and_junk() {
    let bad_index = br#"{"devices":[["d"]],"records":[["host","h",{"n":[1,5,1]},null]]}"#;
    assert!(wire::decode(bad_index)
        .unwrap_err()
        .contains("out of range"));
    let twice = br#"{"devices":[["d"]],"records":[["host","h",{},null],["host","h",{},null]]}"#;
    assert!(wire::decode(twice).unwrap_err().contains("twice"));
    assert!(wire::decode(b"[]").is_err());
    let devices = br#"{"devices":[["d","laptop",5]],"records":[]}"#;
    let state = wire::decode(devices).unwrap();
    let info = DeviceInfo {
        name: "laptop".into(),
        written_at_ms: 5,
    };
    assert_eq!(state.devices.values().next(), Some(&info));
}

#[test]
fn a_field_entry_of_three_or_five_items_decodes_and_any_other_length_is_refused() {
    let body = |entry: &str| {
        format!(r#"{{"devices":[["d"],["e"]],"records":[["host","h",{{"n":{entry}}},null]]}}"#)
    };
    let field = |text: &str| {
        let state = wire::decode(body(text).as_bytes()).unwrap();
        state.records[&key("host", "h")].fields["n"].clone()
    };
    assert_eq!(field(r#"["v",7,0]"#).prev, None);
    let replaced = field(r#"["v",7,0,5,1]"#);
    assert_eq!(
        replaced.prev,
        Some(Stamp {
            hlc: 5,
            device: "e".into()
        })
    );
    assert_eq!(
        replaced.stamp,
        Stamp {
            hlc: 7,
            device: "d".into()
        }
    );
    for bad in [
        r#"["v",7]"#,
        r#"["v",7,0,5]"#,
        r#"["v",7,0,5,1,9]"#,
        r#"["v",7,0,5,2]"#,
    ] {
        assert!(wire::decode(body(bad).as_bytes()).is_err(), "{bad}");
    }
    let mut state = State::default();
    let record = state.records.entry(key("host", "h")).or_default();
    record.set("n", json!(1), Stamp::new(T0, 0, "d"));
    record.set("n", json!(2), Stamp::new(T0, 1, "e"));
    assert!(record.fields["n"].prev.is_some());
    assert_eq!(wire::decode(&wire::encode(&state)).unwrap(), state);
}

#[test]
fn the_body_names_each_field_once_and_refuses_a_bad_name_index_a_field_twice_or_tables_late() {
    let (_, mut state, _) = big_pair(20);
    state
        .records
        .values_mut()
        .next()
        .unwrap()
        .delete(Stamp::new(T0 + 9, 0, "a"));
    let body = String::from_utf8(wire::encode(&state)).unwrap();
    assert!(body.starts_with(r#"{"devices":"#) && body.contains(r#","names":["#));
    assert_eq!(body.matches(r#""field3""#).count(), 1, "{body}");
    assert_eq!(wire::decode(body.as_bytes()).unwrap(), state);
    let with = |record: &str| {
        format!(r#"{{"devices":[["d"]],"names":["n","m"],"records":[["host","h",{record}]]}}"#)
    };
    let ok = wire::decode(with(r#"[[1,"v",7,0],[0,"w",8,0,7,0]],null"#).as_bytes()).unwrap();
    let fields = &ok.records[&key("host", "h")].fields;
    assert_eq!(
        (fields["m"].value.clone(), fields["n"].prev.clone()),
        (
            json!("v"),
            Some(Stamp {
                hlc: 7,
                device: "d".into()
            })
        )
    );
    let tomb = wire::decode(with(r#"[],[9,0,[[1,7,0]]]"#).as_bytes()).unwrap();
    assert!(tomb.records[&key("host", "h")]
        .tombstone
        .as_ref()
        .unwrap()
        .seen
        .contains_key("m"));
    let refused = [
        (with(r#"[[2,"v",7,0]],null"#), "out of range"),
        (with(r#"[],[9,0,[[2,7,0]]]"#), "out of range"),
        (with(r#"[[0,"v",7,0],[0,"w",8,0]],null"#), "twice"),
        (with(r#"[[0,"v",7,0]],null,5"#), "invalid length"),
        (
            r#"{"records":[],"devices":[]}"#.to_owned(),
            "before the devices",
        ),
        (
            r#"{"devices":[],"records":[],"names":[]}"#.to_owned(),
            "before the names",
        ),
        (
            r#"{"devices":[],"devices":[],"records":[]}"#.to_owned(),
            "twice",
        ),
        (r#"{"devices":[]}"#.to_owned(), "missing field"),
    ];
    for (body, why) in refused {
        let err = wire::decode(body.as_bytes()).unwrap_err();
        assert!(err.contains(why), "{body}: {err}");
    }
}

#[test]
fn seeded_mutations_of_a_body_never_panic_and_what_decodes_encodes_back_the_same() {
    let (_, devices, _, _) = histories().nth(7).unwrap();
    let body = wire::encode(&devices[1].state);
    let (iterations, seed) = settings("sync body", 0x5_B0D1);
    let mut rng = Rng::new(seed);
    let pieces: [&[u8]; 8] = [
        b"[",
        b"]",
        b"{",
        b"}",
        b",",
        b"null",
        b"99999999999999999999",
        b"\"\"",
    ];
    let mut decoded = 0;
    for _ in 0..iterations {
        let mut mutated = body.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(mutated.len() + 1);
            match rng.below(4) {
                0 if at < mutated.len() => mutated[at] = rng.next() as u8,
                1 => mutated.truncate(at),
                2 => {
                    let piece = rng.pick(&pieces);
                    mutated.splice(at..at, piece.iter().copied());
                }
                _ if at < mutated.len() => {
                    mutated.remove(at);
                }
                _ => {}
            }
        }
        if let Ok(state) = wire::decode(&mutated) {
            decoded += 1;
            assert_eq!(wire::decode(&wire::encode(&state)).unwrap(), state);
        }
    }
    eprintln!("sync body fuzz: {decoded} of {iterations} mutations decoded");
}

fn report_deleting(n: usize) -> Report {
    Report {
        deleted: (0..n).map(|i| key("host", &i.to_string())).collect(),
        ..Report::default()
    }
}

#[test]
fn mass_delete_guard_holds_past_max_of_ten_and_a_quarter() {
    let counts = |live| Counts {
        local_live: live,
        remote_previous_live: None,
        remote_live: 5,
    };
    assert_eq!(guard::check(&report_deleting(10), counts(12)), None);
    assert_eq!(
        guard::check(&report_deleting(11), counts(12)),
        Some(Hold::TooManyDeletes {
            deleted: 11,
            live: 12
        })
    );
    assert_eq!(guard::check(&report_deleting(25), counts(100)), None);
    assert!(guard::check(&report_deleting(26), counts(100)).is_some());
}

#[test]
fn a_device_that_had_ten_records_and_now_has_none_is_held() {
    let counts = |previous| Counts {
        local_live: 1000,
        remote_previous_live: previous,
        remote_live: 0,
    };
    let none = Report::default();
    assert_eq!(
        guard::check(&none, counts(Some(10))),
        Some(Hold::DeviceEmptied { previously: 10 })
    );
    assert_eq!(guard::check(&none, counts(Some(9))), None);
    assert_eq!(guard::check(&none, counts(None)), None);
}

#[test]
fn purge_drops_only_dead_records_past_the_horizon_of_at_least_a_year() {
    let mut state = State::default();
    let dead = |ms: u64| {
        let mut record = Record::default();
        record.set("name", json!(1), Stamp::new(ms - 1, 0, "d"));
        record.delete(Stamp::new(ms, 0, "d"));
        record
    };
    let now = T0 + 2 * MIN_HORIZON_MS;
    state
        .records
        .insert(key("host", "old"), dead(now - MIN_HORIZON_MS - 1));
    state
        .records
        .insert(key("host", "edge"), dead(now - MIN_HORIZON_MS));
    let mut alive = dead(now - MIN_HORIZON_MS - 1);
    alive.set("name", json!(2), Stamp::new(now - MIN_HORIZON_MS, 0, "e"));
    state.records.insert(key("host", "alive"), alive);
    let kept = purge(&state, now, 1);
    let names: Vec<&str> = kept.records.keys().map(|(_, id)| id.as_str()).collect();
    assert_eq!(names, ["alive", "edge"]);
}

#[test]
fn a_record_older_than_the_horizon_that_this_side_lacks_is_staged_not_merged() {
    let now = T0 + 2 * MIN_HORIZON_MS;
    let mut remote = State::default();
    let old = Stamp::new(now - MIN_HORIZON_MS - 1, 0, "r");
    remote
        .records
        .entry(key("host", "stale"))
        .or_default()
        .set("name", json!(1), old.clone());
    remote
        .records
        .entry(key("host", "held"))
        .or_default()
        .set("name", json!(2), old);
    let mut local = State::default();
    local.records.insert(
        key("host", "held"),
        remote.records[&key("host", "held")].clone(),
    );
    let (kept, staged) = stage_stale(&local, &remote, now, MIN_HORIZON_MS);
    assert_eq!(staged, vec![key("host", "stale")]);
    assert_eq!(
        kept.records.keys().collect::<Vec<_>>(),
        vec![&key("host", "held")]
    );
}

/// A base of `hosts` hosts x 15 fields, and two states each with 1% of the hosts changed.
pub(crate) fn big_pair(hosts: usize) -> (State, State, State) {
    let mut base = State::default();
    for i in 0..hosts {
        let record = base
            .records
            .entry(key("host", &format!("{i:08}")))
            .or_default();
        for f in 0..15 {
            record.set(
                &format!("field{f}"),
                json!(format!("value {i} {f}")),
                Stamp::new(T0, 0, "a"),
            );
        }
    }
    let (mut a, mut b) = (base.clone(), base.clone());
    for (i, record) in a
        .records
        .values_mut()
        .enumerate()
        .filter(|(i, _)| i % 100 == 0)
    {
        record.set(
            "field3",
            json!(format!("a {i}")),
            Stamp::new(T0 + 1, 0, "a"),
        );
    }
    for (i, record) in b
        .records
        .values_mut()
        .enumerate()
        .filter(|(i, _)| i % 100 == 50)
    {
        record.set(
            "field4",
            json!(format!("b {i}")),
            Stamp::new(T0 + 2, 0, "b"),
        );
    }
    (base, a, b)
}

#[test]
fn merge_into_with_a_large_copy_freed_aside_still_equals_the_join() {
    let (_, a, b) = big_pair(FREE_ASIDE_MIN + 100);
    let mut merged = a.clone();
    let report = merge_into(&mut merged, b.clone());
    assert_eq!(merged, merge(&a, &b));
    assert_eq!(report.updated.len(), (FREE_ASIDE_MIN + 100).div_ceil(100));
}

#[test]
fn merging_two_one_percent_changes_updates_exactly_those_records() {
    let (_, a, b) = big_pair(1_000);
    let (merged, report) = merge_report(&a, &b);
    assert_eq!(report.updated.len(), 10);
    assert!(report.conflicts.is_empty() && report.added.is_empty() && report.deleted.is_empty());
    assert_eq!(merged, merge(&b, &a));
}
