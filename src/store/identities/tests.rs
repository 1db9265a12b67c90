//! The identities' tables on an in-memory database: writes and reads round trip, names
//! clash caselessly, and who uses an identity (directly, through one or two group levels).

#![allow(clippy::unwrap_used)]

use rusqlite::params;
use serde_json::{json, Map, Value};

use crate::model::identity::{IdentityFields, IdentityPatch, SecretsGiven};
use crate::store::identities::usage::{self, DirectUsers, Usage};
use crate::store::identities::{self, SealedSlots};
use crate::store::{open_in_memory, Db, StoreError};

const NOW: &str = "2026-01-01T00:00:00.000Z";

fn fields(body: Value, given: &SecretsGiven) -> IdentityFields {
    let body: Map<String, Value> = body.as_object().unwrap().clone();
    IdentityPatch::from_json(&body, given)
        .unwrap()
        .create()
        .unwrap()
}

fn add_identity(db: &Db, id: &str, name: &str) {
    let fields = fields(
        json!({"name": name, "auth": [{"type": "agent"}]}),
        &SecretsGiven::default(),
    );
    db.write(|tx| identities::insert(tx, id, &fields, &SealedSlots::default()))
        .unwrap();
}

fn add_group(db: &Db, id: &str, parent: Option<&str>, identity: Option<&str>) {
    db.write(|tx| {
        tx.execute(
            "INSERT INTO groups (id, parent_id, name, name_key, fold_key, created_at, updated_at, \
             default_identity_id) VALUES (?1, ?2, ?1, ?1, ?1, ?3, ?3, ?4)",
            params![id, parent, NOW, identity],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

fn add_host(db: &Db, id: &str, group: Option<&str>, identity: Option<&str>) {
    db.write(|tx| {
        tx.execute(
            "INSERT INTO hosts (id, name, name_key, hostname, group_id, created_at, updated_at, \
             identity_id) VALUES (?1, ?1, ?1, 'h.example.com', ?2, ?3, ?3, ?4)",
            params![id, group, NOW, identity],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

fn usage(id: &str, via: &str) -> Usage {
    Usage {
        id: id.into(),
        name: id.into(),
        via: via.into(),
    }
}

#[test]
fn an_identity_with_every_secret_slot_reads_back_as_written() {
    let db = open_in_memory().unwrap();
    let mut given = SecretsGiven::default();
    given.passwords.insert(0, true);
    given.literals.insert((1, 1));
    given.totp_secret = Some(None);
    let written = fields(
        json!({"name": "ops", "username": "deploy", "notes": "n", "totp": {"digits": 8},
            "auth": [{"type": "password"}, {"type": "keyboard_interactive", "answers": [
                {"prompt": "^Password:", "answer": {"type": "password"}},
                {"prompt": "^Site:", "answer": {"type": "literal"}},
                {"prompt": "code", "answer": {"type": "totp"}}]}, {"type": "agent"}]}),
        &given,
    );
    let slots = SealedSlots {
        password: Some(b"sealed-password".to_vec()),
        literals: [(1, b"sealed-literal".to_vec())].into(),
        totp: Some(b"sealed-totp".to_vec()),
    };
    let stored = db
        .write(|tx| identities::insert(tx, "i1", &written, &slots))
        .unwrap();
    assert_eq!(stored.revision, 1);
    let view = serde_json::to_value(stored.view()).unwrap();
    assert_eq!(
        view["auth"],
        crate::model::identity::auth_view(&stored.fields.auth)
    );
    assert_eq!(view["auth"][0]["has_password"], true);
    assert_eq!(view["auth"][1]["answers"][1]["answer"]["has_literal"], true);
    assert_eq!(view["totp"]["digits"], 8);
    let read = db
        .read(|conn| identities::sealed::stored_slots(conn, "i1"))
        .unwrap();
    assert_eq!(read.password.as_deref(), Some(&b"sealed-password"[..]));
    assert_eq!(
        read.literals.get(&1).map(Vec::as_slice),
        Some(&b"sealed-literal"[..])
    );
    assert_eq!(read.totp.as_deref(), Some(&b"sealed-totp"[..]));
    assert_eq!(db.read(identities::list).unwrap(), vec![stored]);
}

#[test]
fn a_write_whose_slot_has_no_sealed_bytes_is_refused_and_leaves_nothing() {
    let db = open_in_memory().unwrap();
    let written = fields(json!({"name": "p", "auth": [{"type": "password"}]}), &{
        let mut given = SecretsGiven::default();
        given.passwords.insert(0, true);
        given
    });
    let err = db
        .write(|tx| identities::insert(tx, "i1", &written, &SealedSlots::default()))
        .unwrap_err();
    assert!(matches!(err, StoreError::BrokenInvariant(_)), "{err}");
    assert!(db.read(identities::list).unwrap().is_empty());
}

#[test]
fn names_clash_caselessly_and_an_identity_may_keep_its_own_name() {
    let db = open_in_memory().unwrap();
    add_identity(&db, "i1", "Ops");
    let clash = fields(json!({"name": "OPS"}), &SecretsGiven::default());
    let err = db
        .write(|tx| identities::insert(tx, "i2", &clash, &SealedSlots::default()))
        .unwrap_err();
    assert!(matches!(err, StoreError::IdentityNameTaken), "{err}");
    let current = db.read(|conn| identities::by_id(conn, "i1")).unwrap();
    let renamed = db
        .write(|tx| identities::update(tx, &current, &clash, &SealedSlots::default()))
        .unwrap();
    assert_eq!((renamed.fields.name.as_str(), renamed.revision), ("OPS", 2));
}

#[test]
fn usages_follow_group_defaults_through_two_levels_and_stop_at_a_nearer_default() {
    let db = open_in_memory().unwrap();
    add_identity(&db, "a", "a");
    add_identity(&db, "b", "b");
    add_group(&db, "top", None, Some("a"));
    add_group(&db, "mid", Some("top"), None);
    add_group(&db, "low", Some("mid"), None);
    add_group(&db, "other", Some("top"), Some("b"));
    add_group(&db, "under-other", Some("other"), None);
    add_host(&db, "h-low", Some("low"), None);
    add_host(&db, "h-own", Some("other"), Some("a"));
    add_host(&db, "h-other", Some("under-other"), None);
    add_host(&db, "h-loose", None, None);
    let usages = db.read(|conn| usage::usages(conn, "a")).unwrap();
    assert_eq!(
        usages.hosts,
        vec![usage("h-low", "group:top"), usage("h-own", "direct")]
    );
    assert_eq!(
        usages.groups,
        vec![
            usage("low", "group:top"),
            usage("mid", "group:top"),
            usage("top", "direct")
        ]
    );
    let usages = db.read(|conn| usage::usages(conn, "b")).unwrap();
    assert_eq!(usages.hosts, vec![usage("h-other", "group:other")]);
    assert_eq!(
        usages.groups,
        vec![
            usage("other", "direct"),
            usage("under-other", "group:other")
        ]
    );
    let resolving = db.read(|conn| usage::resolving_hosts(conn, "a")).unwrap();
    assert_eq!(resolving, ["h-low", "h-own"]);
    let direct = db.read(|conn| usage::direct_users(conn, "a")).unwrap();
    assert_eq!(
        direct,
        DirectUsers {
            hosts: 1,
            groups: 1
        }
    );
}

#[test]
fn usages_answer_every_user_of_a_few_hundred() {
    let db = open_in_memory().unwrap();
    add_identity(&db, "a", "a");
    add_group(&db, "g", None, Some("a"));
    for n in 0..300 {
        add_host(&db, &format!("h{n:03}"), Some("g"), None);
    }
    let usages = db.read(|conn| usage::usages(conn, "a")).unwrap();
    assert_eq!(usages.hosts.len(), 300);
}

#[test]
fn reassign_moves_direct_users_and_logs_their_change() {
    let db = open_in_memory().unwrap();
    add_identity(&db, "a", "a");
    add_identity(&db, "b", "b");
    add_group(&db, "g", None, Some("a"));
    add_host(&db, "h1", None, Some("a"));
    add_host(&db, "h2", Some("g"), None);
    let moved = db.write(|tx| usage::reassign(tx, "a", "b")).unwrap();
    assert_eq!(
        moved,
        DirectUsers {
            hosts: 1,
            groups: 1
        }
    );
    let direct = db.read(|conn| usage::direct_users(conn, "b")).unwrap();
    assert_eq!(
        direct,
        DirectUsers {
            hosts: 1,
            groups: 1
        }
    );
    let revision: i64 = db
        .read(|conn| {
            conn.query_row("SELECT revision FROM hosts WHERE id = 'h1'", [], |row| {
                row.get(0)
            })
            .map_err(StoreError::from)
        })
        .unwrap();
    assert_eq!(revision, 2);
    db.write(|tx| identities::delete(tx, "a")).unwrap();
}

#[test]
fn an_unknown_identity_has_no_sealed_credentials() {
    let db = open_in_memory().unwrap();
    assert!(db
        .read(|conn| identities::sealed(conn, "nope"))
        .unwrap()
        .is_none());
}

#[test]
fn a_key_an_identity_uses_cannot_be_deleted() {
    let db = open_in_memory().unwrap();
    db.write(|tx| {
        let name = crate::model::name::Name::from_text("k").unwrap();
        crate::store::keys::insert(tx, &name, &crate::store::keys::NewKey::for_tests("k", "k"))
    })
    .unwrap();
    let uses = fields(
        json!({"name": "a", "auth": [{"type": "key", "key_id": "k"}]}),
        &SecretsGiven::default(),
    );
    db.write(|tx| identities::insert(tx, "a", &uses, &SealedSlots::default()))
        .unwrap();
    let err = db
        .write(|tx| crate::store::keys::delete(tx, "k"))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::KeyInUse {
                hosts: 0,
                identities: 1
            }
        ),
        "{err}"
    );
    db.write(|tx| identities::delete(tx, "a")).unwrap();
    db.write(|tx| crate::store::keys::delete(tx, "k")).unwrap();
}
