//! The catalogue as records and back: every kind read by `project` and written by `apply`
//! into another database reads back the same; each clash rule settled on both sides of its
//! edge; a record that does not fit held back alone.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::store::sync::apply::{apply, Incoming, Outcome};
use crate::store::sync::project::{project, Projected};
use crate::store::{open_in_memory, Db, StoreError};

const T: &str = "2026-11-28T10:00:00.000Z";

/// A catalogue with one row of every kind, the rows beside them and every kind of secret.
const SEED: &str = "
    INSERT INTO groups (id, parent_id, name, name_key, fold_key, created_at, updated_at,
        default_username, default_ssh_options)
        VALUES ('g1', NULL, 'Prod', 'prod', 'prod', 'T', 'T', 'ops', '[\"Compression yes\"]');
    INSERT INTO keys (id, name, name_key, fold_key, type, public_key, fingerprint,
        has_passphrase, private_key, passphrase, created_at, updated_at, agent_confirm)
        VALUES ('k1', 'deploy', 'deploy', 'deploy', 'ssh-ed25519', 'ssh-ed25519 AAAA',
        'SHA256:one', 1, x'01', x'02', 'T', 'T', 'always');
    INSERT INTO key_certificates (key_id, principals, certificate, created_at)
        VALUES ('k1', 'ops', 'ssh-ed25519-cert-v01@openssh.com AAAA', 'T');
    INSERT INTO identities (id, name, name_key, fold_key, username, totp_secret, totp_digits,
        totp_period, totp_algorithm, created_at, updated_at)
        VALUES ('i1', 'Ops', 'ops', 'ops', 'ops', x'03', 6, 30, 'SHA1', 'T', 'T');
    INSERT INTO identity_methods (identity_id, position, type, key_id, password)
        VALUES ('i1', 0, 'key', 'k1', NULL), ('i1', 1, 'password', NULL, x'04');
    INSERT INTO identity_answers (identity_id, position, prompt, answer, literal)
        VALUES ('i1', 0, 'Code:', 'totp', NULL), ('i1', 1, 'Pin:', 'literal', x'05');
    INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type, key_id,
        password, group_id, created_at, updated_at, identity_id, startup)
        VALUES ('h1', 'web', 'web', 'web.example', 22, 'root', 'password', NULL, x'06', 'g1',
        'T', 'T', NULL, '{\"request_tty\":\"yes\"}'),
        ('h2', 'bastion', 'bastion', 'bastion.example', 2222, NULL, NULL, NULL, NULL, NULL,
        'T', 'T', 'i1', '{}');
    INSERT INTO host_tags (host_seq, tag, position)
        SELECT seq, 'prod', 0 FROM hosts WHERE id = 'h1'
        UNION ALL SELECT seq, 'web', 1 FROM hosts WHERE id = 'h1';
    INSERT INTO host_jumps (host_id, position, jump_host_id) VALUES ('h1', 0, 'h2');
    INSERT INTO host_ssh_options (host_id, position, option) VALUES ('h1', 0, 'ServerAliveInterval 30');
    INSERT INTO env_secrets (host_id, group_id, name, sealed) VALUES ('h1', NULL, 'TOKEN', x'07'),
        (NULL, 'g1', 'API', x'08');
    INSERT INTO forwards (id, host_id, group_id, position, type, bind_port, target_host,
        target_port, created_at, updated_at) VALUES ('f1', 'h1', NULL, 0, 'local', 8080,
        'localhost', 80, 'T', 'T');
    INSERT INTO known_hosts (id, host, hashed, wildcard, key_type, public_key, fingerprint,
        marker, source, first_seen, last_seen) VALUES ('kh1', 'web.example', 0, 0,
        'ssh-ed25519', 'AAAA', 'SHA256:web', 'none', 'accept', 'T', 'T');
    INSERT INTO saved_searches (id, name, name_key, fold_key, q, created_at, updated_at)
        VALUES ('s1', 'Prod', 'prod', 'prod', 'tag:prod', 'T', 'T');";

fn seeded() -> Db {
    let db = open_in_memory().unwrap();
    db.write(|tx| Ok::<_, StoreError>(tx.execute_batch(&SEED.replace("'T'", &format!("'{T}'")))?))
        .unwrap();
    db
}

fn read(db: &Db) -> Projected {
    db.read(project).unwrap()
}

/// Every projected record as an `Incoming`, its secrets as the catalogue holds them.
fn as_incoming(projected: &Projected) -> Vec<Incoming> {
    projected
        .records
        .iter()
        .map(|(key, fields)| Incoming {
            key: key.clone(),
            fields: Some(fields.clone()),
            sealed: projected
                .sealed
                .iter()
                .filter(|sealed| sealed.key == *key)
                .map(|sealed| (sealed.field.clone(), sealed.bytes.clone()))
                .collect(),
        })
        .collect()
}

fn write(db: &Db, incoming: &[Incoming]) -> Outcome {
    db.write(|tx| apply(tx, incoming)).unwrap()
}

fn sealed_map(projected: &Projected) -> BTreeMap<(String, String, String), Vec<u8>> {
    projected
        .sealed
        .iter()
        .map(|s| {
            (
                (
                    s.key.1.clone(),
                    s.field.clone(),
                    format!("{}/{}/{}", s.table, s.row_id, s.slot),
                ),
                s.bytes.clone(),
            )
        })
        .collect()
}

#[test]
fn every_kind_written_into_an_empty_catalogue_reads_back_the_same() {
    let source = read(&seeded());
    assert_eq!(source.records.len(), 8, "{:?}", source.records.keys());
    assert_eq!(source.sealed.len(), 8, "{:?}", source.sealed);
    let target = open_in_memory().unwrap();
    let outcome = write(&target, &as_incoming(&source));
    assert!(outcome.unapplied.is_empty(), "{:?}", outcome.unapplied);
    let copy = read(&target);
    assert_eq!(copy.records, source.records);
    assert_eq!(sealed_map(&copy), sealed_map(&source));
    let host = &copy.records[&("host".to_string(), "h1".to_string())];
    assert_eq!(host["tags"], json!(["prod", "web"]));
    assert_eq!(host["jumps"], json!(["h2"]));
    assert_eq!(host["ssh_options"], json!(["ServerAliveInterval 30"]));
}

#[test]
fn writing_the_same_records_again_changes_nothing_and_an_edit_updates_in_place() {
    let db = seeded();
    let before = read(&db);
    write(&db, &as_incoming(&before));
    assert_eq!(read(&db).records, before.records);
    let mut edited = as_incoming(&before);
    let host = edited.iter_mut().find(|r| r.key.1 == "h1").unwrap();
    let fields = host.fields.as_mut().unwrap();
    fields.insert("hostname".into(), json!("web2.example"));
    fields.insert("tags".into(), json!(["web"]));
    host.sealed.remove("env.TOKEN");
    write(&db, &edited);
    let after = read(&db);
    let host = &after.records[&("host".to_string(), "h1".to_string())];
    assert_eq!(host["hostname"], json!("web2.example"));
    assert_eq!(host["tags"], json!(["web"]));
    assert!(!after.sealed.iter().any(|s| s.field == "env.TOKEN"));
    let revision: i64 = db
        .read(|c| {
            Ok::<_, StoreError>(c.query_row(
                "SELECT revision FROM hosts WHERE id = 'h1'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert!(revision > 1, "an applied edit is a revision like any edit");
}

#[test]
fn a_delete_removes_the_record_and_what_pointed_at_it_is_cleared() {
    let db = seeded();
    let gone = |kind: &str, id: &str| Incoming {
        key: (kind.into(), id.into()),
        fields: None,
        sealed: BTreeMap::new(),
    };
    let outcome = write(
        &db,
        &[gone("group", "g1"), gone("host", "h2"), gone("key", "k1")],
    );
    assert!(outcome.unapplied.is_empty(), "{:?}", outcome.unapplied);
    let after = read(&db);
    let host = &after.records[&("host".to_string(), "h1".to_string())];
    assert_eq!(
        host["group_id"],
        Value::Null,
        "a host of a deleted group moves to the top"
    );
    assert_eq!(
        host["jumps"],
        json!([]),
        "a deleted jump host leaves the chain"
    );
    let identity = &after.records[&("identity".to_string(), "i1".to_string())];
    assert_eq!(identity["methods"][0]["key_id"], Value::Null);
    assert!(
        !after.sealed.iter().any(|s| s.field == "env.API"),
        "the group's secret went with it"
    );
}

fn group(id: &str, name: &str, parent: Option<&str>) -> Incoming {
    let mut fields = read(&seeded()).records[&("group".to_string(), "g1".to_string())].clone();
    fields.insert("name".into(), json!(name));
    fields.insert("parent_id".into(), json!(parent));
    Incoming {
        key: ("group".into(), id.into()),
        fields: Some(fields),
        sealed: BTreeMap::new(),
    }
}

fn group_names(db: &Db) -> BTreeMap<String, String> {
    read(db)
        .records
        .into_iter()
        .filter(|(key, _)| key.0 == "group")
        .map(|(key, fields)| (key.1, fields["name"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn a_name_taken_twice_is_kept_by_the_smaller_id_whichever_arrives_first() {
    // g1 "Prod" exists; g0 (smaller) arrives with the same name: it takes the name.
    let db = seeded();
    write(&db, &[group("g0", "prod", None)]);
    let names = group_names(&db);
    assert_eq!(names["g0"], "prod");
    assert_eq!(names["g1"], "Prod (2)");
    // g2 (larger) arrives with the name: it gives way.
    let db = seeded();
    write(&db, &[group("g2", "PROD", None)]);
    let names = group_names(&db);
    assert_eq!(names["g1"], "Prod");
    assert_eq!(names["g2"], "PROD (2)");
    // Under another parent the name is free.
    let db = seeded();
    write(&db, &[group("g2", "Prod", Some("g1"))]);
    assert_eq!(group_names(&db)["g2"], "Prod");
}

#[test]
fn two_groups_moved_under_each_other_end_with_the_larger_id_at_the_top() {
    let db = seeded();
    write(&db, &[group("g2", "Child", Some("g1"))]);
    write(&db, &[group("g1", "Prod", Some("g2"))]);
    let after = read(&db);
    let parent =
        |id: &str| after.records[&("group".to_string(), id.to_string())]["parent_id"].clone();
    assert_eq!(parent("g2"), Value::Null);
    assert_eq!(parent("g1"), json!("g2"));
}

#[test]
fn the_same_key_twice_keeps_the_smaller_id_and_its_users_follow() {
    let db = seeded();
    let mut key = as_incoming(&read(&db))
        .into_iter()
        .find(|r| r.key.1 == "k1")
        .unwrap();
    key.key.1 = "k0".into();
    key.fields
        .as_mut()
        .unwrap()
        .insert("name".into(), json!("deploy again"));
    let outcome = write(&db, &[key]);
    assert_eq!(outcome.unapplied.len(), 1, "{:?}", outcome.unapplied);
    assert_eq!(outcome.unapplied[0].0 .1, "k1", "the larger id gives way");
    let after = read(&db);
    assert!(!after
        .records
        .contains_key(&("key".to_string(), "k1".to_string())));
    let identity = &after.records[&("identity".to_string(), "i1".to_string())];
    assert_eq!(identity["methods"][0]["key_id"], json!("k0"));
    // And the other way round: a larger id arriving is held back.
    let db = seeded();
    let mut key = as_incoming(&read(&db))
        .into_iter()
        .find(|r| r.key.1 == "k1")
        .unwrap();
    key.key.1 = "k9".into();
    key.fields
        .as_mut()
        .unwrap()
        .insert("name".into(), json!("deploy again"));
    let outcome = write(&db, &[key]);
    assert_eq!(outcome.unapplied[0].0 .1, "k9");
    assert!(read(&db)
        .records
        .contains_key(&("key".to_string(), "k1".to_string())));
}

#[test]
fn a_record_that_does_not_fit_is_held_back_alone() {
    let db = seeded();
    let mut records = as_incoming(&read(&db));
    let host = records.iter_mut().find(|r| r.key.1 == "h1").unwrap();
    host.fields
        .as_mut()
        .unwrap()
        .insert("port".into(), json!("twenty-two"));
    let group = records.iter_mut().find(|r| r.key.1 == "g1").unwrap();
    group
        .fields
        .as_mut()
        .unwrap()
        .insert("color".into(), json!("#ff0000"));
    let mut bad_port = records
        .iter()
        .find(|r| r.key.1 == "h2")
        .map(|r| Incoming {
            key: ("host".into(), "h3".into()),
            fields: r.fields.clone(),
            sealed: BTreeMap::new(),
        })
        .unwrap();
    bad_port
        .fields
        .as_mut()
        .unwrap()
        .insert("port".into(), json!(70000));
    records.push(bad_port);
    let outcome = write(&db, &records);
    let held: Vec<&str> = outcome
        .unapplied
        .iter()
        .map(|(key, _)| key.1.as_str())
        .collect();
    assert_eq!(held, ["h1", "h3"], "{:?}", outcome.unapplied);
    assert!(
        outcome.unapplied[0].1.starts_with("port:"),
        "{:?}",
        outcome.unapplied
    );
    let after = read(&db);
    assert_eq!(
        after.records[&("group".to_string(), "g1".to_string())]["color"],
        json!("#ff0000")
    );
    assert_eq!(
        after.records[&("host".to_string(), "h1".to_string())]["port"],
        json!(22)
    );
    // A port just inside the range fits.
    let mut edge = as_incoming(&after)
        .into_iter()
        .find(|r| r.key.1 == "h2")
        .unwrap();
    edge.fields
        .as_mut()
        .unwrap()
        .insert("port".into(), json!(65535));
    assert!(write(&db, &[edge]).unapplied.is_empty());
}
