//! The identity handlers in process, with hosts and groups that name identities written
//! as rows (the hosts' and groups' own API for it is inheritance's, docs/identities.md):
//! delete refused while in use and moving users with `reassign_to`, the rotation count and
//! its change-feed entries, and the credentials `connect` opens.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use zeroize::Zeroizing;

use crate::api::identities::{create, delete, update};
use crate::api::Req;
use crate::http::Method;
use crate::state::AppState;
use crate::store::{self, StoreError};
use crate::vault::{DataKey, Vault};

const NOW: &str = "2026-01-01T00:00:00.000Z";
/// RFC 6238's SHA1 test secret, "12345678901234567890", in base32.
const RFC_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

fn state() -> AppState {
    AppState::for_tests(Vault::NoPassword(DataKey::generate()))
}

fn request(method: Method, path: &str, body: Option<Value>) -> Req {
    let bytes = body
        .map(|body| body.to_string().into_bytes())
        .unwrap_or_default();
    Req::new(method, path, Zeroizing::new(bytes)).unwrap()
}

fn new_identity(state: &AppState, body: Value) -> String {
    let reply = create(state, &request(Method::Post, "/api/identities", Some(body))).unwrap();
    let view: Value = serde_json::from_slice(&reply.body).unwrap();
    view["id"].as_str().unwrap().to_owned()
}

fn sql(state: &AppState, statement: &str, values: &[Option<&str>]) {
    state
        .db
        .write(|tx| {
            tx.execute(statement, rusqlite::params_from_iter(values))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
}

fn add_group(state: &AppState, id: &str, parent: Option<&str>, identity: Option<&str>) {
    sql(
        state,
        "INSERT INTO groups (id, parent_id, name, name_key, fold_key, created_at, updated_at, \
         default_identity_id) VALUES (?1, ?2, ?1, ?1, ?1, ?3, ?3, ?4)",
        &[Some(id), parent, Some(NOW), identity],
    );
}

fn add_host(state: &AppState, id: &str, group: Option<&str>, identity: Option<&str>) {
    sql(
        state,
        "INSERT INTO hosts (id, name, name_key, hostname, group_id, created_at, updated_at, \
         identity_id) VALUES (?1, ?1, ?1, 'h.example.com', ?2, ?3, ?3, ?4)",
        &[Some(id), group, Some(NOW), identity],
    );
}

/// An identity that gives its hosts a username and a way to authenticate.
fn usable(name: &str) -> Value {
    json!({"name": name, "username": "u", "auth": [{"type": "agent"}]})
}

fn host_updates(state: &AppState) -> i64 {
    state
        .db
        .read(|conn| {
            let sql = "SELECT count(*) FROM changes WHERE kind = 'host' AND op = 'updated'";
            conn.query_row(sql, [], |row| row.get(0))
                .map_err(StoreError::from)
        })
        .unwrap()
}

#[test]
fn delete_in_use_is_refused_with_the_counts_and_reassign_moves_the_users() {
    let state = state();
    let a = new_identity(&state, usable("a"));
    let b = new_identity(&state, usable("b"));
    add_group(&state, "g", None, Some(&a));
    add_host(&state, "h1", None, Some(&a));
    add_host(&state, "h2", Some("g"), None);
    let path = |query: &str| format!("/api/identities/{a}{query}");
    let err = delete(&state, &request(Method::Delete, &path(""), None), &a)
        .err()
        .unwrap();
    assert_eq!((err.code(), err.status()), ("IDENTITY_IN_USE", 409));
    assert!(err.to_string().contains("hosts: 1, groups: 1"), "{err}");
    let unknown = request(Method::Delete, &path("?reassign_to=nope"), None);
    assert_eq!(
        delete(&state, &unknown, &a).err().unwrap().code(),
        "IDENTITY_NOT_FOUND"
    );
    let itself = request(Method::Delete, &path(&format!("?reassign_to={a}")), None);
    assert_eq!(
        delete(&state, &itself, &a).err().unwrap().code(),
        "VALIDATION_ERROR"
    );
    let shape = request(Method::Delete, &path("?reassign_to=a%20b"), None);
    assert_eq!(
        delete(&state, &shape, &a).err().unwrap().code(),
        "VALIDATION_ERROR"
    );
    let moved = request(Method::Delete, &path(&format!("?reassign_to={b}")), None);
    assert_eq!(delete(&state, &moved, &a).unwrap().status, 204);
    let users = state
        .db
        .read(|conn| store::identities::usage::usages(conn, &b))
        .unwrap();
    assert_eq!((users.hosts.len(), users.groups.len()), (2, 1));
}

#[test]
fn a_credential_change_counts_and_logs_every_host_that_resolves_and_a_rename_none() {
    let state = state();
    let a = new_identity(&state, usable("a"));
    add_group(&state, "top", None, Some(&a));
    add_group(&state, "low", Some("top"), None);
    add_host(&state, "direct", None, Some(&a));
    add_host(&state, "inherits", Some("low"), None);
    add_host(&state, "unrelated", None, None);
    let put = |body: Value| {
        let req = request(Method::Put, &format!("/api/identities/{a}"), Some(body));
        let reply = update(&state, &req, &a).unwrap();
        serde_json::from_slice::<Value>(&reply.body).unwrap()
    };
    let before = host_updates(&state);
    assert_eq!(put(json!({"username": "v"}))["affected_hosts"], 2);
    assert_eq!(host_updates(&state), before + 2);
    assert_eq!(
        put(json!({"name": "renamed", "notes": "x"}))["affected_hosts"],
        0
    );
    assert_eq!(host_updates(&state), before + 2);
    let revision: i64 = state
        .db
        .read(|conn| {
            let sql = "SELECT revision FROM hosts WHERE id = 'inherits'";
            conn.query_row(sql, [], |row| row.get(0))
                .map_err(StoreError::from)
        })
        .unwrap();
    assert_eq!(revision, 1, "a following host's own row is untouched");
}

fn full_identity(state: &AppState) -> String {
    new_identity(
        state,
        json!({"name": "full", "username": "deploy", "totp": {"secret": RFC_SECRET},
            "auth": [{"type": "password", "password": "pw-1"},
                {"type": "keyboard_interactive", "answers": [
                    {"prompt": "^Password:", "answer": {"type": "password"}},
                    {"prompt": "code", "answer": {"type": "totp"}},
                    {"prompt": "^Site:", "answer": {"type": "literal", "literal": "lit-1"}}]},
                {"type": "agent"}]}),
    )
}

#[test]
fn the_opened_credentials_carry_each_secret_and_answer_in_place() {
    let state = state();
    let id = full_identity(&state);
    let sealed = state
        .db
        .read(|conn| store::identities::sealed(conn, &id))
        .unwrap()
        .unwrap();
    let opened = crate::api::identity_use::open(&state, &sealed, false).unwrap();
    let value = serde_json::to_value(&opened).unwrap();
    assert!(
        value.get("username").is_none(),
        "connect gives the effective username"
    );
    assert_eq!(
        value["methods"][0],
        json!({"type": "password", "password": "pw-1"})
    );
    assert_eq!(value["methods"][2], json!({"type": "agent"}));
    let answers = &value["methods"][1]["answers"];
    assert_eq!(
        answers[0],
        json!({"prompt": "^Password:", "answer": "pw-1"})
    );
    assert_eq!(answers[2], json!({"prompt": "^Site:", "answer": "lit-1"}));
    let code = value["totp"]["code"].as_str().unwrap();
    assert_eq!(answers[1]["answer"], code);
    assert_eq!(code.len(), 6);
}

#[test]
fn a_ciphertext_copied_to_another_slot_of_the_identity_does_not_open() {
    let state = state();
    let id = full_identity(&state);
    sql(
        &state,
        "UPDATE identity_answers SET literal = (SELECT password FROM identity_methods \
         WHERE identity_id = ?1 AND type = 'password') WHERE identity_id = ?1 AND position = 2",
        &[Some(&id)],
    );
    let sealed = state
        .db
        .read(|conn| store::identities::sealed(conn, &id))
        .unwrap()
        .unwrap();
    let err = crate::api::identity_use::open(&state, &sealed, false)
        .err()
        .unwrap();
    assert_eq!(err.code(), "INTERNAL_ERROR");
}

#[test]
fn an_edit_or_a_reassign_that_leaves_a_host_without_username_or_auth_is_refused() {
    let state = state();
    let a = new_identity(&state, usable("a"));
    let bare = new_identity(&state, json!({"name": "bare", "username": "u"}));
    add_group(&state, "g", None, Some(&a));
    add_host(&state, "h", Some("g"), None);
    let put = |body: Value| {
        let req = request(Method::Put, &format!("/api/identities/{a}"), Some(body));
        update(&state, &req, &a)
    };
    let err = put(json!({"username": null})).err().unwrap();
    assert!(err.to_string().contains("username: 1 host(s)"), "{err}");
    let err = put(json!({"auth": []})).err().unwrap();
    assert!(err.to_string().contains("auth: 1 host(s)"), "{err}");
    put(json!({"username": "v"})).unwrap();
    let path = format!("/api/identities/{a}?reassign_to={bare}");
    let err = delete(&state, &request(Method::Delete, &path, None), &a)
        .err()
        .unwrap();
    assert!(err.to_string().contains("auth: 1 host(s)"), "{err}");
    let still = state
        .db
        .read(|conn| store::identities::by_id(conn, &a))
        .unwrap();
    assert_eq!(
        still.fields.username.as_deref(),
        Some("v"),
        "refused writes changed nothing"
    );
}

#[test]
fn a_reassign_logs_the_hosts_that_follow_a_moved_group_default() {
    let state = state();
    let a = new_identity(&state, usable("a"));
    let b = new_identity(
        &state,
        json!({"name": "b", "username": "other", "auth": [{"type": "agent"}]}),
    );
    add_group(&state, "g", None, Some(&a));
    add_host(&state, "below", Some("g"), None);
    let before = host_updates(&state);
    let path = format!("/api/identities/{a}?reassign_to={b}");
    delete(&state, &request(Method::Delete, &path, None), &a).unwrap();
    assert_eq!(
        host_updates(&state),
        before + 1,
        "the host below the group follows"
    );
}
