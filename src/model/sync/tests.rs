//! Property and unit tests of the sync core: random edit histories on three devices whose
//! clocks are up to 10 minutes apart, delivered in random orders with duplicates, and the
//! edge of every rule on both sides. `timing` measures the merge path at 100,000 hosts.

use serde_json::{json, Value};

use crate::fuzz::{settings, Rng};
use crate::model::sync::clock::{pack, Clock, Stamp, MAX_AHEAD_MS};
use crate::model::sync::guard::{self, Counts, Hold};
use crate::model::sync::merge::{merge, merge_report, Report};
use crate::model::sync::record::{
    observe_state, purge, stage_stale, DeviceInfo, Record, RecordKey, State, MIN_HORIZON_MS,
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

const KINDS: [&str; 3] = ["host", "group", "x-future-kind"];
const FIELDS: [&str; 5] = ["name", "address", "port", "note", "x-future-field"];

/// A random history: edits, deletes, re-edits and partial syncs on three devices whose
/// clocks are 0, +10 and -10 minutes off. Returns the devices and snapshots along the way.
fn history(rng: &mut Rng, steps: usize) -> (Vec<Device>, Vec<State>) {
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
                devices[d].edit(world, &record, "name", json!(format!("n{step}")));
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
                devices[d].receive(world, &remote);
            }
        }
        if rng.below(4) == 0 {
            snapshots.push(devices[d].state.clone());
        }
    }
    (devices, snapshots)
}

fn histories() -> impl Iterator<Item = (Rng, Vec<Device>, Vec<State>)> {
    let (iterations, seed) = settings("sync merge", 0x051C_0000);
    let mut rng = Rng::new(seed);
    (0..(iterations / 200).max(20)).map(move |_| {
        let steps = 5 + rng.below(60);
        let mut own = Rng::new(rng.next());
        let (devices, snapshots) = history(&mut own, steps);
        (own, devices, snapshots)
    })
}

#[test]
fn merge_is_commutative_associative_and_idempotent_over_random_histories() {
    for (mut rng, devices, mut snapshots) in histories() {
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
fn three_devices_converge_whatever_the_delivery_order_and_duplicates() {
    for (mut rng, mut devices, _) in histories() {
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
        let (merged, report) = merge_report(&a, &b, Some(&a));
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
        let (merged_b, report_b) = merge_report(&b, &a, Some(&b));
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
    let (merged, report) = merge_report(&a, &b, None);
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

#[test]
fn a_field_changed_on_both_sides_is_a_conflict_won_by_the_higher_stamp() {
    let host = key("host", "h");
    let mut a = Device::new("a", 0);
    a.edit(T0, &host, "name", json!("base"));
    let mut b = Device::new("b", 0);
    b.receive(T0, &a.state);
    let base = a.state.clone();
    a.edit(T0 + 2, &host, "name", json!("a's"));
    b.edit(T0 + 1, &host, "name", json!("b's"));
    let (merged, report) = merge_report(&b.state, &a.state, Some(&base));
    assert_eq!(merged.records[&host].fields["name"].value, json!("a's"));
    let conflict = &report.conflicts[0];
    assert_eq!(
        (conflict.kind.as_str(), conflict.field.as_str()),
        ("host", "name")
    );
    assert_eq!(conflict.winner.value, json!("a's"));
    assert_eq!(conflict.winner.stamp.device.as_ref(), "a");
    assert_eq!(conflict.loser.value, json!("b's"));
    assert_eq!(conflict.loser.stamp.device.as_ref(), "b");
    assert_eq!(report.updated, vec![(host, vec!["name".to_owned()])]);
}

#[test]
fn a_field_changed_on_one_side_only_is_no_conflict_unless_there_is_no_base() {
    let host = key("host", "h");
    let mut a = Device::new("a", 0);
    a.edit(T0, &host, "name", json!("base"));
    let base = a.state.clone();
    let old = a.state.clone();
    a.edit(T0 + 1, &host, "name", json!("new"));
    let (_, with_base) = merge_report(&old, &a.state, Some(&base));
    assert!(with_base.conflicts.is_empty());
    assert_eq!(with_base.updated.len(), 1);
    let (_, first_contact) = merge_report(&old, &a.state, None);
    assert_eq!(first_contact.conflicts.len(), 1);
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
    let (_, devices, _) = histories().nth(3).unwrap();
    let state = &devices[0].state;
    assert!(merge_report(state, state, Some(state)).1.is_empty());
    let (_, report) = merge_report(&State::default(), state, None);
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
fn merging_two_one_percent_changes_updates_exactly_those_records() {
    let (base, a, b) = big_pair(1_000);
    let (merged, report) = merge_report(&a, &b, Some(&base));
    assert_eq!(report.updated.len(), 10);
    assert!(report.conflicts.is_empty() && report.added.is_empty() && report.deleted.is_empty());
    assert_eq!(merged, merge(&b, &a));
}
