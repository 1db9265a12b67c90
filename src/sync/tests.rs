//! A device of this build next to a newer one: a record kind and a field this build does not
//! know arrive, are carried untouched in this device's bundle (and kept across its own edits
//! of the record), and the fields it knows are applied.

use std::path::PathBuf;

use serde_json::json;

use crate::model::sync::clock::Clock;
use crate::model::sync::record::{Record, State};
use crate::state::AppState;
use crate::store::sync::project::project;
use crate::sync::cycle::now_ms;
use crate::sync::{enable, folder, run_now};
use crate::vault::bundle::{self, Header, SyncKey};
use crate::vault::{DataKey, Secret, Vault};

const PASSPHRASE: &[u8] = b"correct horse battery";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hm-sync-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A bundle of a newer build's device: a host with a field this build lacks, and a kind
/// this build does not know.
fn newer_bundle(key: &SyncKey) -> Vec<u8> {
    let mut clock = Clock::new("newer-device", 0);
    let now = now_ms();
    let mut host = Record::default();
    for (field, value) in [
        ("name", json!("far")),
        ("hostname", json!("far.example")),
        ("created_at", json!("2026-11-28T10:00:00.000Z")),
        ("x_future_field", json!({"nested": [1, 2]})),
    ] {
        host.set(field, value, clock.tick(now));
    }
    let mut future = Record::default();
    future.set("payload", json!("kept as it is"), clock.tick(now));
    let mut state = State::default();
    state.records.insert(("host".into(), "h9".into()), host);
    state
        .records
        .insert(("x_future_kind".into(), "r1".into()), future);
    let header = Header {
        format_version: 0,
        min_reader: 0,
        kdf: key.params().clone(),
        check: [0; 16],
        device_id: "newer-device".into(),
        device_name: "newer".into(),
        extra: Default::default(),
    };
    bundle::write(key, &header, &state)
}

#[test]
fn a_kind_and_a_field_this_build_does_not_know_are_carried_into_its_own_bundle() {
    let (dir, data) = (scratch("folder"), scratch("data"));
    let mut state = AppState::for_tests(Vault::NoPassword(DataKey::generate()));
    state.config.data_dir = data.clone();
    let passphrase = Secret::new(PASSPHRASE.to_vec());
    let (status, first) = enable(&state, &dir, &passphrase, Some("old".into())).unwrap();
    first.unwrap();
    let own = dir.join(folder::own_file(&status.device_id));
    let header = bundle::read_header(&std::fs::read(&own).unwrap()).unwrap();
    let key = SyncKey::derive(PASSPHRASE, &header.kdf).unwrap();
    std::fs::write(dir.join("newer-device.bundle"), newer_bundle(&key)).unwrap();

    let outcome = run_now(&state, false).unwrap();
    assert!(
        outcome.report.added.contains(&("host".into(), "h9".into())),
        "{outcome:?}"
    );
    assert!(outcome.unapplied.is_empty(), "{:?}", outcome.unapplied);
    let catalogue = state.db.read(project).unwrap();
    let host = &catalogue.records[&("host".to_string(), "h9".to_string())];
    assert_eq!(host["hostname"], json!("far.example"));
    assert_eq!(
        host["notes"],
        json!(""),
        "a field the record lacks takes its default"
    );

    // This device edits the host; its bundle keeps what it does not know.
    state
        .db
        .write(|tx| {
            let sql = "UPDATE hosts SET notes = 'edited here', updated_at = 'x' WHERE id = 'h9'";
            Ok::<_, crate::store::StoreError>(tx.execute(sql, [])?)
        })
        .unwrap();
    run_now(&state, false).unwrap();
    let (_, written) = bundle::open(&key, &std::fs::read(&own).unwrap()).unwrap();
    let host = &written.records[&("host".to_string(), "h9".to_string())];
    assert_eq!(host.fields["notes"].value, json!("edited here"));
    assert_eq!(
        host.fields["x_future_field"].value,
        json!({"nested": [1, 2]})
    );
    let future = &written.records[&("x_future_kind".to_string(), "r1".to_string())];
    assert_eq!(future.fields["payload"].value, json!("kept as it is"));
    for path in [dir, data] {
        std::fs::remove_dir_all(path).unwrap();
    }
}
