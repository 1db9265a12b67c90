//! `/api/hosts`: shapes, validation edges, filters, sorts, paging, favorite, move, connect
//! and secrets at rest (docs/api.md, Hosts), all over HTTP against the binary.

use std::collections::HashSet;
use std::fs;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    contains_bytes, fresh_dir, host_body, id_of, leak_forms, read_all_files, Options, Service,
    EVENT_DEADLINE,
};

const GROUP_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const GROUP_B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const KEY_1: &str = "cccccccc-0000-4000-8000-000000000003";
const UNKNOWN: &str = "dddddddd-0000-4000-8000-000000000004";

/// A valid create body; `extra` fields are merged in (and may override).
fn host(name: &str, extra: Value) -> Value {
    host_body(name, "web.example.com", extra)
}

fn create(service: &Service, body: &Value) -> Value {
    service.post("/api/hosts", body).expect(201)
}

/// Asserts a create with `body` is refused and the details name `field`.
#[track_caller]
fn assert_rejected(service: &Service, body: &Value, field: &str) {
    let error = service
        .post("/api/hosts", body)
        .assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap_or_default();
    assert!(
        details.starts_with(&format!("{field}: ")),
        "details should name {field}: {error}"
    );
}

#[track_caller]
fn assert_accepted(service: &Service, body: &Value) -> Value {
    create(service, body)
}

/// Starts a service whose database already holds these groups and keys (inserted with
/// SQL while it was stopped: the groups and keys endpoints are other issues).
fn start_with_rows(name: &str, groups: &[&str], keys: &[&str]) -> Service {
    let data_dir = fresh_dir(name).join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut first = Service::start_with(name, options());
    let status = first.terminate(EVENT_DEADLINE).expect("stops");
    assert!(status.success(), "{status:?}");
    let conn = rusqlite::Connection::open(data_dir.join("host-manager.db")).unwrap();
    let now = "2024-01-01T00:00:00.000Z";
    for group in groups {
        conn.execute(
            "INSERT INTO groups (id, name, name_key, created_at, updated_at) \
             VALUES (?1, ?1, ?1, ?2, ?2)",
            [group, &now],
        )
        .unwrap();
    }
    for key in keys {
        conn.execute(
            "INSERT INTO keys (id, name, name_key, type, public_key, fingerprint, has_passphrase, \
             private_key, created_at, updated_at) VALUES (?1, ?1, ?1, 'ssh-ed25519', \
             'ssh-ed25519 AAAA', ?1, 0, x'00', ?2, ?2)",
            [key, &now],
        )
        .unwrap();
    }
    drop(conn);
    Service::start_with(name, options())
}

fn list(service: &Service, query: &str) -> Value {
    service.get(&format!("/api/hosts?{query}")).expect(200)
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(id_of)
        .collect()
}

fn id_set(page: &Value) -> HashSet<String> {
    ids(page).into_iter().collect()
}

fn set(ids: &[&String]) -> HashSet<String> {
    ids.iter().map(|id| id.to_string()).collect()
}

fn is_timestamp(value: &Value) -> bool {
    // RFC 3339 UTC with milliseconds and Z: 2024-01-02T03:04:05.678Z
    value.as_str().is_some_and(|text| {
        text.len() == 24
            && text.ends_with('Z')
            && text.as_bytes()[10] == b'T'
            && text.as_bytes()[19] == b'.'
    })
}

// ---- shapes and statuses ----------------------------------------------------------------

#[test]
fn create_answers_201_with_every_field_and_the_defaults() {
    let service = Service::start("hosts-create-shape");
    let host = create(
        &service,
        &host("  Web 1  ", json!({"username": " deploy "})),
    );
    let fields: HashSet<&str> = host
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: HashSet<&str> = [
        "id",
        "name",
        "hostname",
        "port",
        "username",
        "auth",
        "tags",
        "is_favorite",
        "color",
        "order",
        "notes",
        "created_at",
        "updated_at",
        "last_used_at",
        // Extensions, always present.
        "identity_id",
        "jump_host_ids",
        "ssh_options",
        "remote_command",
        "request_tty",
        "set_env",
        "send_env",
        "revision",
    ]
    .into_iter()
    .collect();
    assert_eq!(
        fields, expected,
        "group_id is omitted when ungrouped: {host}"
    );
    let id = id_of(&host);
    assert_eq!(id.len(), 36);
    assert_eq!(id, id.to_lowercase());
    assert_eq!(&id[14..15], "4", "UUID v4: {id}");
    assert_eq!(host["name"], "Web 1");
    assert_eq!(host["username"], "deploy");
    assert_eq!(host["hostname"], "web.example.com");
    assert_eq!(host["port"], 22);
    assert_eq!(
        host["auth"],
        json!({"type": "agent", "has_password": false})
    );
    assert_eq!(host["tags"], json!([]));
    assert_eq!(host["is_favorite"], false);
    assert_eq!(host["color"], "");
    assert_eq!(host["notes"], "");
    assert_eq!(host["order"], 0);
    assert_eq!(host["last_used_at"], Value::Null);
    assert!(is_timestamp(&host["created_at"]), "{host}");
    assert_eq!(host["created_at"], host["updated_at"]);
}

#[test]
fn create_keeps_every_optional_field_given() {
    let service = start_with_rows("hosts-create-full", &[GROUP_A], &[]);
    let body = host(
        "db",
        json!({
            "group_id": GROUP_A, "tags": ["prod", "db", "prod"], "is_favorite": true,
            "color": "#A0b1C2", "order": -5, "notes": "line 1\nline 2",
            "auth": {"type": "password", "password": "pw-create-full"}
        }),
    );
    let created = create(&service, &body);
    assert_eq!(created["group_id"], GROUP_A);
    assert_eq!(created["tags"], json!(["prod", "db"]));
    assert_eq!(created["is_favorite"], true);
    assert_eq!(created["color"], "#A0b1C2");
    assert_eq!(created["order"], -5);
    assert_eq!(created["notes"], "line 1\nline 2");
    assert_eq!(
        created["auth"],
        json!({"type": "password", "has_password": true})
    );
    let fetched = service
        .get(&format!("/api/hosts/{}", id_of(&created)))
        .expect(200);
    assert_eq!(fetched, created);
}

#[test]
fn get_answers_200_with_the_stored_host() {
    let service = Service::start("hosts-get");
    let created = create(&service, &host("a", json!({})));
    let fetched = service
        .get(&format!("/api/hosts/{}", id_of(&created)))
        .expect(200);
    assert_eq!(fetched, created);
}

#[test]
fn every_host_route_answers_404_for_an_unknown_host() {
    let service = Service::start("hosts-404");
    for id in [UNKNOWN, "not-a-uuid", "%20"] {
        let item = format!("/api/hosts/{id}");
        service.get(&item).assert_error(404, "HOST_NOT_FOUND");
        service
            .put(&item, &json!({"name": "x"}))
            .assert_error(404, "HOST_NOT_FOUND");
        service.delete(&item).assert_error(404, "HOST_NOT_FOUND");
        service
            .request("PATCH", &format!("{item}/favorite"), None)
            .assert_error(404, "HOST_NOT_FOUND");
        service
            .put(&format!("{item}/move"), &json!({"group_id": null}))
            .assert_error(404, "HOST_NOT_FOUND");
        service
            .request("POST", &format!("{item}/connect"), None)
            .assert_error(404, "HOST_NOT_FOUND");
    }
}

#[test]
fn unknown_host_is_404_even_when_the_body_is_invalid() {
    let service = Service::start("hosts-404-first");
    service
        .put(&format!("/api/hosts/{UNKNOWN}"), &json!({"port": 0}))
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .put(
            &format!("/api/hosts/{UNKNOWN}/move"),
            &json!({"group_id": 5}),
        )
        .assert_error(404, "HOST_NOT_FOUND");
}

#[test]
fn delete_answers_204_and_the_host_is_gone() {
    let service = Service::start("hosts-delete");
    let id = id_of(&create(&service, &host("a", json!({"tags": ["t"]}))));
    service.delete(&format!("/api/hosts/{id}")).expect(204);
    service
        .get(&format!("/api/hosts/{id}"))
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .delete(&format!("/api/hosts/{id}"))
        .assert_error(404, "HOST_NOT_FOUND");
    assert_eq!(list(&service, "tag=t")["total"], 0);
}

#[test]
fn update_answers_200_and_changes_only_the_given_fields() {
    let service = Service::start("hosts-update-partial");
    let created = create(
        &service,
        &host(
            "a",
            json!({"tags": ["x"], "notes": "keep", "color": "#000000"}),
        ),
    );
    let id = id_of(&created);
    let updated = service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"name": " b ", "port": 2222}),
        )
        .expect(200);
    assert_eq!(updated["name"], "b");
    assert_eq!(updated["port"], 2222);
    for field in [
        "hostname",
        "username",
        "auth",
        "tags",
        "notes",
        "color",
        "order",
        "created_at",
    ] {
        assert_eq!(updated[field], created[field], "{field}");
    }
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200),
        updated
    );
}

#[test]
fn update_with_null_resets_optional_fields_and_refuses_null_for_required_ones() {
    let service = start_with_rows("hosts-update-null", &[GROUP_A], &[]);
    let id = id_of(&create(
        &service,
        &host(
            "a",
            json!({"group_id": GROUP_A, "tags": ["x"], "notes": "n", "color": "#000000", "is_favorite": true}),
        ),
    ));
    let path = format!("/api/hosts/{id}");
    let reset = service
        .put(
            &path,
            &json!({"group_id": null, "tags": null, "notes": null, "color": null, "is_favorite": null}),
        )
        .expect(200);
    assert!(reset.get("group_id").is_none(), "{reset}");
    assert_eq!(reset["tags"], json!([]));
    assert_eq!(reset["notes"], "");
    assert_eq!(reset["color"], "");
    assert_eq!(reset["is_favorite"], false);
    for field in ["name", "hostname", "username", "auth"] {
        let error = service
            .put(&path, &json!({ field.to_string(): null }))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
}

#[test]
fn update_validates_like_create() {
    let service = Service::start("hosts-update-validation");
    let id = id_of(&create(&service, &host("a", json!({}))));
    let path = format!("/api/hosts/{id}");
    for (body, field) in [
        (json!({"port": "22"}), "port"),
        (json!({"hostname": "user@host"}), "hostname"),
        (json!({"name": "x".repeat(101)}), "name"),
        (json!({"tags": "a"}), "tags"),
        (json!({"auth": {"type": "key"}}), "auth.key_id"),
        (json!({"group_id": 7}), "group_id"),
    ] {
        let error = service
            .put(&path, &body)
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with(field),
            "{body} -> {error}"
        );
    }
    service
        .put(&path, &json!({"group_id": UNKNOWN}))
        .assert_error(404, "GROUP_NOT_FOUND");
    service
        .put(&path, &json!({"auth": {"type": "key", "key_id": UNKNOWN}}))
        .assert_error(404, "KEY_NOT_FOUND");
}

#[test]
fn updated_at_changes_on_every_change_and_not_on_a_read() {
    let service = start_with_rows("hosts-updated-at", &[GROUP_A], &[]);
    let created = create(&service, &host("a", json!({})));
    let id = id_of(&created);
    let path = format!("/api/hosts/{id}");
    let mut last = created["updated_at"].as_str().unwrap().to_owned();
    let mut step = |response: Value| {
        let now = service.get(&path).expect(200)["updated_at"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            now > last,
            "updated_at must grow: {last} -> {now} ({response})"
        );
        last = now;
    };
    // Back-to-back changes land within one millisecond; each must still move updated_at.
    step(service.put(&path, &json!({"notes": "1"})).expect(200));
    step(service.put(&path, &json!({"notes": "1"})).expect(200));
    step(service.put(&path, &json!({})).expect(200));
    step(
        service
            .request("PATCH", &format!("{path}/favorite"), None)
            .expect(200),
    );
    step(
        service
            .put(&format!("{path}/move"), &json!({"group_id": GROUP_A}))
            .expect(200),
    );
    let before = service.get(&path).expect(200);
    service.get(&path).expect(200);
    list(&service, "");
    let after = service.get(&path).expect(200);
    assert_eq!(before["updated_at"], after["updated_at"]);
}

#[test]
fn update_response_updated_at_matches_the_stored_one() {
    let service = Service::start("hosts-updated-at-echo");
    let id = id_of(&create(&service, &host("a", json!({}))));
    let path = format!("/api/hosts/{id}");
    let updated = service.put(&path, &json!({"port": 23})).expect(200);
    assert_eq!(
        service.get(&path).expect(200)["updated_at"],
        updated["updated_at"]
    );
}

// ---- favorite, move, order ----------------------------------------------------------------

#[test]
fn favorite_toggled_twice_is_back_to_false() {
    let service = Service::start("hosts-favorite");
    let id = id_of(&create(&service, &host("a", json!({}))));
    let path = format!("/api/hosts/{id}/favorite");
    let first = service.request("PATCH", &path, None).expect(200);
    assert_eq!(first, json!({"id": id, "is_favorite": true, "revision": 2}));
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200)["is_favorite"],
        true
    );
    let second = service.request("PATCH", &path, None).expect(200);
    assert_eq!(
        second,
        json!({"id": id, "is_favorite": false, "revision": 3})
    );
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200)["is_favorite"],
        false
    );
}

#[test]
fn move_to_a_group_and_back_to_ungrouped() {
    let service = start_with_rows("hosts-move", &[GROUP_A], &[]);
    let id = id_of(&create(&service, &host("a", json!({}))));
    let path = format!("/api/hosts/{id}/move");
    let moved = service
        .put(&path, &json!({"group_id": GROUP_A}))
        .expect(200);
    assert_eq!(moved["group_id"], GROUP_A);
    assert_eq!(
        ids(&list(&service, &format!("group={GROUP_A}"))),
        vec![id.clone()]
    );
    for ungrouped in [
        json!({"group_id": null}),
        json!({"group_id": ""}),
        json!({}),
    ] {
        service
            .put(&path, &json!({"group_id": GROUP_A}))
            .expect(200);
        let back = service.put(&path, &ungrouped).expect(200);
        assert!(back.get("group_id").is_none(), "{ungrouped} -> {back}");
        assert_eq!(service.get(&format!("/api/hosts/{id}")).expect(200), back);
    }
    assert_eq!(list(&service, &format!("group={GROUP_A}"))["total"], 0);
}

#[test]
fn move_to_an_unknown_group_is_404_and_changes_nothing() {
    let service = Service::start("hosts-move-unknown");
    let created = create(&service, &host("a", json!({})));
    let id = id_of(&created);
    service
        .put(
            &format!("/api/hosts/{id}/move"),
            &json!({"group_id": UNKNOWN}),
        )
        .assert_error(404, "GROUP_NOT_FOUND");
    service
        .put(&format!("/api/hosts/{id}/move"), &json!({"group_id": 1}))
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200),
        created
    );
}

#[test]
fn hosts_without_order_go_to_the_end_of_their_group() {
    let service = start_with_rows("hosts-order", &[GROUP_A], &[]);
    let first = create(&service, &host("a", json!({})));
    let second = create(&service, &host("b", json!({})));
    let explicit = create(&service, &host("c", json!({"order": 10})));
    let after = create(&service, &host("d", json!({})));
    let grouped = create(&service, &host("e", json!({"group_id": GROUP_A})));
    assert_eq!(
        [&first, &second, &explicit, &after, &grouped].map(|h| h["order"].as_i64().unwrap()),
        [0, 1, 10, 11, 0]
    );
    // Moving into a group puts the host at its end; order: null on update does too.
    let moved = service
        .put(
            &format!("/api/hosts/{}/move", id_of(&first)),
            &json!({"group_id": GROUP_A}),
        )
        .expect(200);
    assert_eq!(moved["order"], 1);
    let reset = service
        .put(
            &format!("/api/hosts/{}", id_of(&second)),
            &json!({"order": null}),
        )
        .expect(200);
    assert_eq!(reset["order"], 12);
    let regrouped = service
        .put(
            &format!("/api/hosts/{}", id_of(&after)),
            &json!({"group_id": GROUP_A}),
        )
        .expect(200);
    assert_eq!(regrouped["order"], 2);
}

// ---- auth, keys, groups -----------------------------------------------------------------

#[test]
fn key_auth_with_a_stored_key_shows_key_id_and_unknown_key_is_404() {
    let service = start_with_rows("hosts-key-auth", &[], &[KEY_1]);
    let created = create(
        &service,
        &host("k", json!({"auth": {"type": "key", "key_id": KEY_1}})),
    );
    assert_eq!(
        created["auth"],
        json!({"type": "key", "key_id": KEY_1, "has_password": false})
    );
    service
        .post(
            "/api/hosts",
            &host("k", json!({"auth": {"type": "key", "key_id": UNKNOWN}})),
        )
        .assert_error(404, "KEY_NOT_FOUND");
    let switched = service
        .put(
            &format!("/api/hosts/{}", id_of(&created)),
            &json!({"auth": {"type": "agent"}}),
        )
        .expect(200);
    assert_eq!(
        switched["auth"],
        json!({"type": "agent", "has_password": false})
    );
}

#[test]
fn key_type_without_key_id_is_rejected() {
    let service = Service::start("hosts-key-required");
    for auth in [
        json!({"type": "key"}),
        json!({"type": "key", "key_id": ""}),
        json!({"type": "key", "key_id": null}),
    ] {
        assert_rejected(&service, &host("k", json!({ "auth": auth })), "auth.key_id");
    }
}

#[test]
fn key_id_with_another_auth_type_is_rejected() {
    let service = start_with_rows("hosts-key-id-other-type", &[], &[KEY_1]);
    for auth_type in ["password", "agent"] {
        assert_rejected(
            &service,
            &host("k", json!({"auth": {"type": auth_type, "key_id": KEY_1}})),
            "auth.key_id",
        );
        // An empty or null key_id is no key: accepted.
        assert_accepted(
            &service,
            &host("k", json!({"auth": {"type": auth_type, "key_id": ""}})),
        );
    }
}

#[test]
fn password_with_another_auth_type_is_rejected() {
    let service = Service::start("hosts-password-other-type");
    assert_rejected(
        &service,
        &host("p", json!({"auth": {"type": "agent", "password": "x"}})),
        "auth.password",
    );
    assert_rejected(
        &service,
        &host("p", json!({"auth": {"type": "password", "password": 5}})),
        "auth.password",
    );
}

#[test]
fn unknown_auth_type_is_rejected_and_known_ones_accepted() {
    let service = Service::start("hosts-auth-type");
    for bad in [
        json!({"type": "kerberos"}),
        json!({"type": "Password"}),
        json!({"type": 1}),
        json!({}),
    ] {
        assert_rejected(&service, &host("a", json!({ "auth": bad })), "auth.type");
    }
    assert_rejected(&service, &host("a", json!({"auth": "agent"})), "auth");
    assert_accepted(&service, &host("a", json!({"auth": {"type": "password"}})));
    assert_accepted(&service, &host("a", json!({"auth": {"type": "agent"}})));
}

#[test]
fn empty_password_is_accepted_and_stores_no_password() {
    let service = Service::start("hosts-empty-password");
    let created = create(
        &service,
        &host("p", json!({"auth": {"type": "password", "password": ""}})),
    );
    assert_eq!(
        created["auth"],
        json!({"type": "password", "has_password": false})
    );
    let connected = service
        .request(
            "POST",
            &format!("/api/hosts/{}/connect", id_of(&created)),
            None,
        )
        .expect(200);
    assert_eq!(
        connected["credentials"],
        json!({"type": "password", "username": "root"})
    );
}

#[test]
fn unknown_group_on_create_is_404() {
    let service = Service::start("hosts-unknown-group");
    service
        .post("/api/hosts", &host("a", json!({"group_id": UNKNOWN})))
        .assert_error(404, "GROUP_NOT_FOUND");
    for ungrouped in [json!(null), json!("")] {
        let created = create(&service, &host("a", json!({ "group_id": ungrouped })));
        assert!(created.get("group_id").is_none(), "{created}");
    }
    assert_eq!(list(&service, "")["total"], 2);
}

// ---- connect and secrets ----------------------------------------------------------------

#[test]
fn connect_returns_the_password_and_sets_last_used_at_only() {
    let service = Service::start("hosts-connect");
    let created = create(
        &service,
        &host(
            "p",
            json!({"auth": {"type": "password", "password": "s3cret-connect"}}),
        ),
    );
    let id = id_of(&created);
    let response = service.request("POST", &format!("/api/hosts/{id}/connect"), None);
    let body = response.expect(200);
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(
        body["credentials"],
        json!({"type": "password", "username": "root", "password": "s3cret-connect"})
    );
    assert!(is_timestamp(&body["host"]["last_used_at"]), "{body}");
    assert_eq!(body["host"]["updated_at"], created["updated_at"]);
    assert!(body["host"]["auth"].get("password").is_none());
    let fetched = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(fetched["last_used_at"], body["host"]["last_used_at"]);
    assert_eq!(fetched["updated_at"], created["updated_at"]);
}

#[test]
fn connect_with_agent_auth_carries_no_secret() {
    let service = Service::start("hosts-connect-agent");
    let id = id_of(&create(&service, &host("a", json!({"username": "ops"}))));
    let body = service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    assert_eq!(
        body["credentials"],
        json!({"type": "agent", "username": "ops"})
    );
}

#[test]
fn changing_the_password_replaces_it_and_leaving_password_auth_drops_it() {
    let service = Service::start("hosts-password-change");
    let id = id_of(&create(
        &service,
        &host(
            "p",
            json!({"auth": {"type": "password", "password": "first-pw"}}),
        ),
    ));
    let path = format!("/api/hosts/{id}");
    let connect = || {
        service
            .request("POST", &format!("{path}/connect"), None)
            .expect(200)["credentials"]
            .clone()
    };
    let kept = service.put(&path, &json!({"name": "renamed"})).expect(200);
    assert_eq!(kept["auth"]["has_password"], true);
    assert_eq!(connect()["password"], "first-pw");
    service
        .put(&path, &json!({"auth": {"password": "second-pw"}}))
        .expect(200);
    assert_eq!(connect()["password"], "second-pw");
    let agent = service
        .put(&path, &json!({"auth": {"type": "agent"}}))
        .expect(200);
    assert_eq!(
        agent["auth"],
        json!({"type": "agent", "has_password": false})
    );
    let back = service
        .put(&path, &json!({"auth": {"type": "password"}}))
        .expect(200);
    assert_eq!(
        back["auth"],
        json!({"type": "password", "has_password": false})
    );
    assert!(connect().get("password").is_none());
    service
        .put(&path, &json!({"auth": {"password": "third-pw"}}))
        .expect(200);
    let cleared = service
        .put(&path, &json!({"auth": {"password": null}}))
        .expect(200);
    assert_eq!(cleared["auth"]["has_password"], false);
}

#[test]
fn the_password_appears_in_no_response_but_connect() {
    let service = start_with_rows("hosts-password-hidden", &[GROUP_A], &[]);
    let marker = "Zq7-marker-password-hidden";
    let created = service.post(
        "/api/hosts",
        &host(
            "p",
            json!({"auth": {"type": "password", "password": marker}}),
        ),
    );
    let id = id_of(&created.expect(201));
    let path = format!("/api/hosts/{id}");
    let responses = [
        created,
        service.get(&path),
        service.get("/api/hosts"),
        service.get(&format!("/api/hosts?search={marker}")),
        service.put(&path, &json!({"notes": "n"})),
        service.put(&path, &json!({"auth": {"password": marker}})),
        service.request("PATCH", &format!("{path}/favorite"), None),
        service.put(&format!("{path}/move"), &json!({"group_id": GROUP_A})),
        service.put(
            &path,
            &json!({"auth": {"type": "agent", "password": marker}}),
        ),
    ];
    for response in &responses {
        assert!(
            !contains_bytes(&response.body, marker.as_bytes()),
            "{}",
            response.text()
        );
    }
    assert!(!service.stderr().contains(marker));
}

#[test]
fn host_password_never_reaches_the_data_files_in_any_form() {
    let service = Service::start("hosts-password-at-rest");
    let marker = "Xk9-rest-marker-7f3a91";
    let forms = leak_forms(marker.as_bytes());
    let scan = |when: &str| {
        for (path, bytes) in read_all_files(&service.data_dir) {
            for form in &forms {
                assert!(
                    !contains_bytes(&bytes, form),
                    "{when}: {} holds the password as {}",
                    path.display(),
                    String::from_utf8_lossy(form)
                );
            }
        }
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        let body = host(
            &format!("p{n}"),
            json!({"auth": {"type": "password", "password": marker}}),
        );
        ids.push(id_of(&create(&service, &body)));
    }
    service
        .put(
            &format!("/api/hosts/{}", ids[0]),
            &json!({"auth": {"password": marker}}),
        )
        .expect(200);
    assert!(!service.db_files().is_empty());
    scan("while stored");
    for id in &ids {
        service.delete(&format!("/api/hosts/{id}")).expect(204);
    }
    scan("after delete");
    assert!(!service.stderr().contains(marker));
}

// ---- validation edges -------------------------------------------------------------------

#[test]
fn name_of_100_chars_is_accepted_and_101_rejected() {
    let service = Service::start("hosts-name-length");
    assert_accepted(&service, &host(&"é".repeat(100), json!({})));
    assert_rejected(&service, &host(&"é".repeat(101), json!({})), "name");
    assert_rejected(&service, &host("   ", json!({})), "name");
    assert_rejected(&service, &host("", json!({})), "name");
}

#[test]
fn username_of_100_chars_is_accepted_and_101_rejected() {
    let service = Service::start("hosts-username-length");
    assert_accepted(&service, &host("a", json!({"username": "u".repeat(100)})));
    assert_rejected(
        &service,
        &host("a", json!({"username": "u".repeat(101)})),
        "username",
    );
    assert_rejected(&service, &host("a", json!({"username": ""})), "username");
}

#[test]
fn username_that_would_add_a_jump_hop_is_rejected() {
    let service = Service::start("hosts-username-hop");
    for username in [
        "ops@127.0.0.1:1,ops",
        "ops,root",
        "root@bastion",
        "ops:22",
        "ssh://x",
    ] {
        assert_rejected(
            &service,
            &host("a", json!({ "username": username })),
            "username",
        );
    }
    assert_eq!(list(&service, "")["total"], 0, "nothing was stored");
}

#[test]
fn username_with_a_control_character_whitespace_shell_syntax_or_leading_hyphen_is_rejected() {
    let service = Service::start("hosts-username-chars");
    for username in [
        "ops\nroot",
        "ops\u{0}",
        "ops\u{7f}",
        "john doe",
        "-oProxyCommand=id",
        "-",
        "ops;id",
        "ops`id`",
        "ops$(id)",
        "admin\\",
    ] {
        assert_rejected(
            &service,
            &host("a", json!({ "username": username })),
            "username",
        );
    }
    let id = id_of(&create(&service, &host("a", json!({}))));
    let error = service
        .put(&format!("/api/hosts/{id}"), &json!({"username": "-l"}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("username: "),
        "{error}"
    );
}

#[test]
fn usernames_openssh_accepts_are_stored_as_given() {
    let service = Service::start("hosts-username-ok");
    for username in [
        "deploy",
        "ci-runner",
        "j.doe_2",
        "DOMAIN\\admin",
        "machine$",
        "élodie",
        "user-",
    ] {
        let created = assert_accepted(&service, &host("a", json!({ "username": username })));
        assert_eq!(created["username"], username);
    }
}

#[test]
fn a_stored_jump_host_whose_username_holds_separators_fails_connect_instead_of_adding_a_hop() {
    let service = Service::start("hosts-hop-injection");
    let bastion = id_of(&create(
        &service,
        &host(
            "bastion",
            json!({"hostname": "bastion.example.com", "username": "ops"}),
        ),
    ));
    let target = id_of(&create(
        &service,
        &host("target", json!({ "jump_host_ids": [bastion] })),
    ));
    let connect =
        |service: &Service| service.request("POST", &format!("/api/hosts/{target}/connect"), None);
    let body = connect(&service).expect(200);
    assert_eq!(
        body["credentials"]["proxy_jump"],
        "ops@bastion.example.com:22"
    );
    // A row written before usernames were checked (or by another tool).
    rusqlite::Connection::open(service.data_dir.join("host-manager.db"))
        .unwrap()
        .execute(
            "UPDATE hosts SET username = 'ops@127.0.0.1:1,ops' WHERE id = ?1",
            [&bastion],
        )
        .unwrap();
    let response = connect(&service);
    let error = response.assert_error(400, "INVALID_JUMP_CHAIN");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.contains(&bastion),
        "names the hop to fix: {details}"
    );
    assert!(
        !response.text().contains("127.0.0.1:1"),
        "{}",
        response.text()
    );
}

#[test]
fn a_host_whose_stored_username_breaks_the_rule_is_never_handed_out_by_connect() {
    let service = Service::start("hosts-stored-username");
    let target = id_of(&create(&service, &host("target", json!({}))));
    let connect =
        |service: &Service| service.request("POST", &format!("/api/hosts/{target}/connect"), None);
    connect(&service).expect(200);
    // A row an older import wrote, before it met the hosts API's rules.
    rusqlite::Connection::open(service.data_dir.join("host-manager.db"))
        .unwrap()
        .execute(
            "UPDATE hosts SET username = '-oProxyCommand=touch /tmp/pwn' WHERE id = ?1",
            [&target],
        )
        .unwrap();
    let response = connect(&service);
    let error = response.assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.starts_with("username: the stored username") && details.contains(&target),
        "names the field and the host to fix: {details}"
    );
    assert!(
        !response.text().contains("ProxyCommand"),
        "{}",
        response.text()
    );
    service
        .put(&format!("/api/hosts/{target}"), &json!({"username": "ops"}))
        .expect(200);
    assert_eq!(
        connect(&service).expect(200)["credentials"]["username"],
        "ops"
    );
}

// ---- a full disk (docs/reliability.md, Reliability) -------------------------------------------------

/// A service whose data dir is a tmpfs of `size` bytes, mounted in a mount namespace of its
/// own (`unshare`, no root needed where user namespaces are on): the disk really fills, and
/// the mount goes away with the process.
fn service_on_a_small_disk(name: &str, size: &str) -> Service {
    let data_dir = fresh_dir(name).join("data");
    fs::create_dir(&data_dir).unwrap();
    Service::start_with(
        name,
        Options {
            data_dir: Some(data_dir),
            shell_prefix: Some(format!(
                "exec unshare --user --map-root-user --mount sh -c \
                 'mount -t tmpfs -o size={size},mode=0700 tmpfs \"$3\" && exec \"$@\"'"
            )),
            ..Options::default()
        },
    )
}

/// Creates password hosts until a create fails: the ids created and the failing answer.
fn fill_the_disk(service: &Service) -> (Vec<String>, crate::support::Response) {
    let mut ids = Vec::new();
    for n in 0..2_000 {
        let body = host(
            &format!("h{n}"),
            json!({"auth": {"type": "password", "password": format!("pw-{n}")},
                   "notes": "n".repeat(2_000)}),
        );
        let response = service.post("/api/hosts", &body);
        if response.status != 201 {
            return (ids, response);
        }
        ids.push(id_of(&response.json()));
    }
    panic!("2,000 hosts fit on the small disk");
}

#[test]
fn a_write_on_a_full_disk_answers_507_storage_full_and_changes_nothing() {
    let service = service_on_a_small_disk("hosts-disk-full", "1m");
    let (ids, refused) = fill_the_disk(&service);
    let error = refused.assert_error(507, "STORAGE_FULL");
    assert!(
        error["details"].as_str().unwrap().contains("disk"),
        "{error}"
    );
    assert!(ids.len() >= 3, "some hosts fit first: {}", ids.len());
    assert_eq!(
        list(&service, "")["total"],
        ids.len(),
        "the refused host is not stored"
    );
    assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
    assert!(!service.stderr().contains("INTERNAL_ERROR"));
}

#[test]
fn connect_on_a_full_disk_hands_out_the_credentials_without_recording_the_use() {
    let service = service_on_a_small_disk("hosts-disk-full-connect", "1m");
    let (ids, refused) = fill_the_disk(&service);
    assert_eq!(refused.status, 507, "{}", refused.text());
    // Each connect that records its use takes some of what is left; soon one cannot.
    let unrecorded = "handing out the credentials without recording the use";
    let mut attempts = 0;
    for (n, id) in ids.iter().enumerate().cycle().take(ids.len() * 20) {
        attempts += 1;
        let body = service
            .request("POST", &format!("/api/hosts/{id}/connect"), None)
            .expect(200);
        assert_eq!(body["credentials"]["password"], format!("pw-{n}"));
        if service.stderr().contains(unrecorded) {
            break;
        }
    }
    assert!(
        service.stderr().contains(unrecorded),
        "no connect met the full disk in {attempts} attempts"
    );
}

#[test]
fn port_edges_0_1_65535_65536() {
    let service = Service::start("hosts-port");
    assert_rejected(&service, &host("a", json!({"port": 0})), "port");
    assert_eq!(
        assert_accepted(&service, &host("a", json!({"port": 1})))["port"],
        1
    );
    assert_eq!(
        assert_accepted(&service, &host("a", json!({"port": 65535})))["port"],
        65535
    );
    assert_rejected(&service, &host("a", json!({"port": 65536})), "port");
    assert_rejected(&service, &host("a", json!({"port": -1})), "port");
}

#[test]
fn port_as_string_or_float_is_rejected() {
    let service = Service::start("hosts-port-type");
    assert_rejected(&service, &host("a", json!({"port": "22"})), "port");
    assert_rejected(&service, &host("a", json!({"port": 22.5})), "port");
    // 22.0 is not a JSON integer either: written by hand since json! would keep it a float.
    let body = r#"{"name":"a","hostname":"h","port":22.0,"username":"u","auth":{"type":"agent"}}"#;
    let response = service.request_raw_body(
        "POST",
        "/api/hosts",
        &[("Content-Type", "application/json".into())],
        Some(body.as_bytes()),
    );
    let error = response.assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("port: "),
        "{error}"
    );
}

#[test]
fn hostname_label_of_63_chars_is_accepted_and_64_rejected() {
    let service = Service::start("hosts-hostname-label");
    assert_accepted(
        &service,
        &host(
            "a",
            json!({"hostname": format!("{}.example.com", "a".repeat(63))}),
        ),
    );
    assert_rejected(
        &service,
        &host(
            "a",
            json!({"hostname": format!("{}.example.com", "a".repeat(64))}),
        ),
        "hostname",
    );
}

#[test]
fn hostname_of_253_chars_is_accepted_and_254_rejected() {
    let service = Service::start("hosts-hostname-total");
    // Three labels of 63, one of 61: 63*3 + 61 + 3 dots = 253.
    let label = "a".repeat(63);
    let name_253 = format!("{label}.{label}.{label}.{}", "b".repeat(61));
    let name_254 = format!("{label}.{label}.{label}.{}", "b".repeat(62));
    assert_eq!((name_253.len(), name_254.len()), (253, 254));
    assert_accepted(&service, &host("a", json!({ "hostname": name_253 })));
    assert_accepted(
        &service,
        &host("a", json!({ "hostname": format!("{name_253}.") })),
    );
    assert_rejected(
        &service,
        &host("a", json!({ "hostname": name_254 })),
        "hostname",
    );
}

#[test]
fn hostname_with_a_leading_or_trailing_hyphen_is_rejected() {
    let service = Service::start("hosts-hostname-hyphen");
    assert_rejected(
        &service,
        &host("a", json!({"hostname": "-web.example.com"})),
        "hostname",
    );
    assert_rejected(
        &service,
        &host("a", json!({"hostname": "web-.example.com"})),
        "hostname",
    );
    assert_accepted(
        &service,
        &host("a", json!({"hostname": "web-1.example.com"})),
    );
}

#[test]
fn hostname_ip_literals_are_accepted() {
    let service = Service::start("hosts-hostname-ip");
    for literal in ["192.168.1.10", "::1", "fe80::1", "2001:db8::1"] {
        let created = assert_accepted(&service, &host("a", json!({ "hostname": literal })));
        assert_eq!(created["hostname"], literal);
    }
}

#[test]
fn hostname_that_is_not_bare_is_rejected() {
    let service = Service::start("hosts-hostname-bare");
    for text in [
        "[::1]",
        "host:22",
        "user@host",
        "ssh://host",
        "web 1",
        "",
        "1.2.3.256",
        "web_1",
    ] {
        assert_rejected(
            &service,
            &host("a", json!({ "hostname": text })),
            "hostname",
        );
    }
    assert_rejected(&service, &host("a", json!({"hostname": 10})), "hostname");
}

#[test]
fn color_must_be_rrggbb_or_empty() {
    let service = Service::start("hosts-color");
    assert_accepted(&service, &host("a", json!({"color": "#1a2B3c"})));
    assert_accepted(&service, &host("a", json!({"color": ""})));
    for bad in [
        json!("#1a2b3"),
        json!("1a2b3c"),
        json!("#1a2b3g"),
        json!("blue"),
        json!(1),
    ] {
        assert_rejected(&service, &host("a", json!({ "color": bad })), "color");
    }
}

#[test]
fn tag_limits_64_chars_and_64_tags() {
    let service = Service::start("hosts-tags");
    assert_accepted(&service, &host("a", json!({"tags": ["t".repeat(64)]})));
    assert_rejected(
        &service,
        &host("a", json!({"tags": ["ok", "t".repeat(65)]})),
        "tags[1]",
    );
    let tags: Vec<String> = (0..65).map(|n| format!("tag{n}")).collect();
    let created = assert_accepted(&service, &host("a", json!({"tags": tags[..64]})));
    assert_eq!(created["tags"].as_array().unwrap().len(), 64);
    assert_rejected(&service, &host("a", json!({ "tags": tags })), "tags");
    assert_rejected(&service, &host("a", json!({"tags": "a,b"})), "tags");
    assert_rejected(&service, &host("a", json!({"tags": [1]})), "tags[0]");
    assert_rejected(&service, &host("a", json!({"tags": [" "]})), "tags[0]");
    let deduplicated = assert_accepted(
        &service,
        &host("a", json!({"tags": ["b", " a", "b", "a "]})),
    );
    assert_eq!(deduplicated["tags"], json!(["b", "a"]));
}

#[test]
fn notes_of_10000_chars_are_accepted_and_10001_rejected() {
    let service = Service::start("hosts-notes");
    assert_accepted(&service, &host("a", json!({"notes": "ü".repeat(10_000)})));
    assert_rejected(
        &service,
        &host("a", json!({"notes": "n".repeat(10_001)})),
        "notes",
    );
}

#[test]
fn wrong_json_types_are_400_naming_the_field() {
    let service = Service::start("hosts-wrong-types");
    for (field, value) in [
        ("name", json!(5)),
        ("username", json!(["root"])),
        ("is_favorite", json!("true")),
        ("order", json!(1.5)),
        ("order", json!("1")),
        ("group_id", json!(true)),
        ("notes", json!({})),
    ] {
        assert_rejected(&service, &host("a", json!({ field: value })), field);
    }
}

#[test]
fn missing_required_fields_are_400_naming_the_field() {
    let service = Service::start("hosts-required");
    // name and hostname are the host's own; username and auth may be inherited
    // (docs/identities.md), and with no identity or group to give them they are required too.
    for field in ["name", "hostname", "username", "auth"] {
        let mut body = host("a", json!({}));
        body.as_object_mut().unwrap().remove(field);
        assert_rejected(&service, &body, field);
    }
    let mut body = host("a", json!({}));
    body.as_object_mut().unwrap().remove("port");
    let created = service.post("/api/hosts", &body).expect(201);
    assert_eq!(created["port"], json!(null), "an absent port is inherited");
}

#[test]
fn body_that_is_not_json_is_invalid_json_and_unknown_fields_are_ignored() {
    let service = Service::start("hosts-json");
    let response = service.request_raw_body(
        "POST",
        "/api/hosts",
        &[("Content-Type", "application/json".into())],
        Some(b"{\"name\": "),
    );
    response.assert_error(400, "INVALID_JSON");
    service
        .post("/api/hosts", &json!(["not", "an", "object"]))
        .assert_error(400, "VALIDATION_ERROR");
    let created = create(
        &service,
        &host("a", json!({"surprise": 1, "password": "top-level"})),
    );
    assert!(created.get("surprise").is_none());
    assert!(created.get("password").is_none());
}

// ---- list: filters, sorts, pages --------------------------------------------------------

#[test]
fn list_answers_the_page_shape_with_defaults() {
    let service = Service::start("hosts-list-shape");
    let created = create(&service, &host("a", json!({})));
    let page = list(&service, "");
    assert_eq!(
        page,
        json!({"items": [created], "total": 1, "page": 1, "per_page": 50})
    );
}

#[test]
fn filter_by_group_gives_direct_members_and_empty_group_gives_ungrouped() {
    let service = start_with_rows("hosts-filter-group", &[GROUP_A, GROUP_B], &[]);
    let in_a = id_of(&create(&service, &host("a", json!({"group_id": GROUP_A}))));
    let in_b = id_of(&create(&service, &host("b", json!({"group_id": GROUP_B}))));
    let loose = id_of(&create(&service, &host("c", json!({}))));
    assert_eq!(
        ids(&list(&service, &format!("group={GROUP_A}"))),
        vec![in_a]
    );
    assert_eq!(
        ids(&list(&service, &format!("group={GROUP_B}"))),
        vec![in_b]
    );
    assert_eq!(ids(&list(&service, "group=")), vec![loose]);
    let unknown = list(&service, &format!("group={UNKNOWN}"));
    assert_eq!(
        (unknown["items"].clone(), unknown["total"].clone()),
        (json!([]), json!(0))
    );
    assert_eq!(list(&service, "group=not-a-uuid")["total"], 0);
}

#[test]
fn filter_by_tag_matches_exactly() {
    let service = Service::start("hosts-filter-tag");
    let prod = id_of(&create(
        &service,
        &host("a", json!({"tags": ["prod", "db"]})),
    ));
    let other = id_of(&create(
        &service,
        &host("b", json!({"tags": ["Prod", "production"]})),
    ));
    create(&service, &host("c", json!({})));
    assert_eq!(ids(&list(&service, "tag=prod")), vec![prod]);
    assert_eq!(ids(&list(&service, "tag=Prod")), vec![other]);
    assert_eq!(list(&service, "tag=pro")["total"], 0);
    service
        .get("/api/hosts?tag=")
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn filter_by_favorite_true_and_false() {
    let service = Service::start("hosts-filter-favorite");
    let fav = id_of(&create(&service, &host("a", json!({"is_favorite": true}))));
    let plain = id_of(&create(&service, &host("b", json!({}))));
    assert_eq!(ids(&list(&service, "favorite=true")), vec![fav]);
    assert_eq!(ids(&list(&service, "favorite=false")), vec![plain]);
}

#[test]
fn search_is_a_case_insensitive_substring_of_name_or_hostname_with_literal_wildcards() {
    let service = Service::start("hosts-search");
    let alpha = id_of(&create(
        &service,
        &host("Alpha Web", json!({"hostname": "alpha.example.com"})),
    ));
    let beta = id_of(&create(
        &service,
        &host("beta_db", json!({"hostname": "10.0.0.5"})),
    ));
    let gamma = id_of(&create(
        &service,
        &host("100% Gamma", json!({"hostname": "gamma.example.org"})),
    ));
    let unicode = id_of(&create(
        &service,
        &host("Ünïcode", json!({"hostname": "u.example.net"})),
    ));
    let decoy = id_of(&create(
        &service,
        &host("aXd", json!({"hostname": "zzz.example.net"})),
    ));
    let found = |term: &str| id_set(&list(&service, &format!("search={}", encode(term))));
    assert_eq!(found("ALPHA"), set(&[&alpha]), "3+ chars, by index");
    assert_eq!(found("LPHA.EXAMPLE"), set(&[&alpha]), "hostname");
    assert_eq!(found("0.0.5"), set(&[&beta]));
    assert_eq!(found("Al"), set(&[&alpha]), "short term, by scan");
    assert_eq!(found("%"), set(&[&gamma]), "% is literal");
    assert_eq!(found("0%"), set(&[&gamma]));
    assert_eq!(found("0% g"), set(&[&gamma]));
    assert_eq!(found("_d"), set(&[&beta]), "_ is literal (short)");
    assert_eq!(found("a_d"), set(&[&beta]), "_ is literal (indexed)");
    assert_eq!(found("ün"), set(&[&unicode]), "non-ASCII case, short");
    assert_eq!(found("ÜNÏ"), set(&[&unicode]), "non-ASCII case, indexed");
    assert_eq!(found("\"x"), set(&[]));
    assert_eq!(found("example.net"), set(&[&unicode, &decoy]));
    assert_eq!(found("nothing-like-this"), set(&[]));
    assert_eq!(
        list(&service, "search=")["total"],
        5,
        "empty search: no filter"
    );
}

#[test]
fn filters_combine() {
    let service = start_with_rows("hosts-filter-combined", &[GROUP_A], &[]);
    let target = id_of(&create(
        &service,
        &host(
            "web-prod",
            json!({"group_id": GROUP_A, "tags": ["prod"], "is_favorite": true}),
        ),
    ));
    create(
        &service,
        &host("web-prod", json!({"group_id": GROUP_A, "tags": ["prod"]})),
    );
    create(
        &service,
        &host("web-prod", json!({"tags": ["prod"], "is_favorite": true})),
    );
    create(
        &service,
        &host(
            "db-prod",
            json!({"group_id": GROUP_A, "tags": ["prod"], "is_favorite": true}),
        ),
    );
    let page = list(
        &service,
        &format!("group={GROUP_A}&tag=prod&favorite=true&search=web-pro"),
    );
    assert_eq!(ids(&page), vec![target]);
    assert_eq!(page["total"], 1);
}

/// Percent-encodes a query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A catalogue with mixed-case names, hostnames and some used hosts.
fn sorting_catalogue(service: &Service) -> Vec<Value> {
    let mut hosts = Vec::new();
    for (name, hostname) in [
        ("bravo", "B.example.com"),
        ("Alpha", "c.example.com"),
        ("charlie", "a.example.com"),
        ("alpha", "D.example.com"),
        ("Delta", "b.example.com"),
        ("echo", "e.example.com"),
    ] {
        hosts.push(create(
            service,
            &host(name, json!({ "hostname": hostname })),
        ));
    }
    // Use three hosts, in an order unrelated to creation.
    for index in [4, 0, 2] {
        let id = id_of(&hosts[index]);
        hosts[index] = service
            .request("POST", &format!("/api/hosts/{id}/connect"), None)
            .expect(200)["host"]
            .clone();
    }
    hosts
}

fn expected_order(hosts: &[Value], sort: &str, desc: bool) -> Vec<String> {
    let key = |host: &Value| -> (String, String) {
        let text = host[sort].as_str().unwrap_or_default();
        let text = match sort {
            "name" | "hostname" => text.to_lowercase(),
            _ => text.to_owned(),
        };
        (text, id_of(host))
    };
    let mut used: Vec<&Value> = hosts.iter().filter(|host| !host[sort].is_null()).collect();
    let mut never: Vec<&Value> = hosts.iter().filter(|host| host[sort].is_null()).collect();
    used.sort_by_key(|host| key(host));
    never.sort_by_key(|host| id_of(host));
    if desc {
        used.reverse();
        never.reverse();
    }
    used.into_iter().chain(never).map(id_of).collect()
}

#[test]
fn every_sort_in_both_orders() {
    let service = Service::start("hosts-sorts");
    let hosts = sorting_catalogue(&service);
    for sort in ["name", "hostname", "created_at", "last_used_at"] {
        for order in ["asc", "desc"] {
            let page = list(&service, &format!("sort={sort}&order={order}"));
            assert_eq!(
                ids(&page),
                expected_order(&hosts, sort, order == "desc"),
                "sort={sort}&order={order}"
            );
        }
    }
    // Defaults: name ascending.
    assert_eq!(
        ids(&list(&service, "")),
        expected_order(&hosts, "name", false)
    );
}

#[test]
fn never_used_hosts_come_last_in_both_orders() {
    let service = Service::start("hosts-never-used-last");
    let hosts = sorting_catalogue(&service);
    let never: HashSet<String> = hosts
        .iter()
        .filter(|host| host["last_used_at"].is_null())
        .map(id_of)
        .collect();
    assert_eq!(never.len(), 3);
    for order in ["asc", "desc"] {
        let page = ids(&list(&service, &format!("sort=last_used_at&order={order}")));
        let tail: HashSet<String> = page[3..].iter().cloned().collect();
        assert_eq!(tail, never, "order={order}");
    }
}

#[test]
fn walking_all_pages_returns_each_host_exactly_once_when_names_repeat() {
    let service = Service::start("hosts-paging");
    let mut all = HashSet::new();
    for n in 0..23 {
        let name = if n % 5 == 4 {
            format!("other {n}")
        } else {
            "Same".to_owned()
        };
        all.insert(id_of(&create(&service, &host(&name, json!({})))));
    }
    for n in 0..3 {
        let id = id_of(&create(&service, &host("SAME", json!({}))));
        if n < 2 {
            service
                .request("POST", &format!("/api/hosts/{id}/connect"), None)
                .expect(200);
        }
        all.insert(id);
    }
    for sort in ["name", "hostname", "created_at", "last_used_at"] {
        for order in ["asc", "desc"] {
            let whole = ids(&list(
                &service,
                &format!("sort={sort}&order={order}&per_page=1000"),
            ));
            let mut walked = Vec::new();
            for page in 1.. {
                let body = list(
                    &service,
                    &format!("sort={sort}&order={order}&per_page=4&page={page}"),
                );
                assert_eq!(body["total"], 26);
                assert_eq!(
                    (body["page"].as_u64(), body["per_page"].as_u64()),
                    (Some(page), Some(4))
                );
                let items = ids(&body);
                if items.is_empty() {
                    break;
                }
                walked.extend(items);
            }
            assert_eq!(
                walked, whole,
                "pages concatenate to the whole list ({sort} {order})"
            );
            assert_eq!(walked.len(), 26);
            assert_eq!(walked.iter().cloned().collect::<HashSet<_>>(), all);
        }
    }
}

#[test]
fn per_page_is_clamped_to_1000_and_echoed() {
    let service = Service::start("hosts-per-page");
    create(&service, &host("a", json!({})));
    let page = list(&service, "per_page=5000");
    assert_eq!(page["per_page"], 1000);
    let page = list(&service, "per_page=1000&page=1");
    assert_eq!(
        (page["per_page"].clone(), page["page"].clone()),
        (json!(1000), json!(1))
    );
    let page = list(&service, "per_page=1");
    assert_eq!(page["per_page"], 1);
}

#[test]
fn page_past_the_end_is_empty_with_the_true_total() {
    let service = Service::start("hosts-past-end");
    for name in ["a", "b", "c"] {
        create(&service, &host(name, json!({})));
    }
    let page = list(&service, "per_page=2&page=3");
    assert_eq!(
        page,
        json!({"items": [], "total": 3, "page": 3, "per_page": 2})
    );
    let far = list(&service, "per_page=1000&page=99999999999999999999");
    assert_eq!(far["items"], json!([]));
    assert_eq!(far["total"], 3);
}

#[test]
fn bad_list_parameters_are_400() {
    let service = Service::start("hosts-bad-params");
    for query in [
        "page=0",
        "page=-1",
        "page=abc",
        "page=1.5",
        "page=",
        "per_page=0",
        "per_page=x",
        "sort=size",
        "sort=NAME",
        "order=up",
        "favorite=yes",
        "favorite=1",
        "page=1&page=2",
    ] {
        let error = service
            .get(&format!("/api/hosts?{query}"))
            .assert_error(400, "VALIDATION_ERROR");
        let name = query.split('=').next().unwrap();
        assert!(
            error["details"].as_str().unwrap().contains(name),
            "{query}: {error}"
        );
    }
}

/// The service keeps search sets, the hosts' rows and the group tree in memory; every kind
/// of change shows in the very next identical request, and every row a list shows is the
/// host as `GET /api/hosts/:id` shows it (nothing stale is answered).
#[test]
fn repeated_list_queries_see_every_change_at_once() {
    let service = start_with_rows("list-kept-pages", &[GROUP_A], &[]);
    let web = create(&service, &host("web-1", json!({"tags": ["t"]})));
    let db = create(
        &service,
        &host("db-1", json!({"hostname": "db.example.org"})),
    );
    let queries = [
        "per_page=50",
        "search=web",
        "search=db-",
        "tag=t",
        "sort=last_used_at&order=desc",
        &format!("group={GROUP_A}"),
        "favorite=true",
    ];
    // The host list queries, then the group tree (kept the same way).
    let snapshot = |service: &Service| -> Vec<Value> {
        let read = |service: &Service| -> Vec<Value> {
            let mut pages: Vec<Value> = queries.iter().map(|query| list(service, query)).collect();
            pages.push(service.get("/api/groups").expect(200));
            pages
        };
        let pages = read(service);
        // Asked twice: the second answer may come from memory, and must be the same.
        assert_eq!(pages, read(service));
        for item in pages[0]["items"].as_array().unwrap() {
            let path = format!("/api/hosts/{}", id_of(item));
            assert_eq!(
                *item,
                service.get(&path).expect(200),
                "a listed row is stale"
            );
        }
        pages
    };
    let mut before = snapshot(&service);
    let (web_path, db_path) = (
        format!("/api/hosts/{}", id_of(&web)),
        format!("/api/hosts/{}", id_of(&db)),
    );
    type Change<'a> = Box<dyn Fn(&Service) + 'a>;
    let changes: Vec<Change<'_>> = vec![
        Box::new(|s| drop(create(s, &host("web-2", json!({}))))),
        Box::new(|s| drop(s.put(&web_path, &json!({"name": "renamed"})).expect(200))),
        Box::new(|s| {
            drop(
                s.put(&db_path, &json!({"hostname": "webby.example"}))
                    .expect(200),
            )
        }),
        Box::new(|s| drop(s.put(&db_path, &json!({"tags": ["t"]})).expect(200))),
        Box::new(|s| {
            let path = format!("{web_path}/favorite");
            drop(s.request("PATCH", &path, None).expect(200));
        }),
        Box::new(|s| {
            drop(
                s.put(&format!("{db_path}/move"), &json!({"group_id": GROUP_A}))
                    .expect(200),
            )
        }),
        Box::new(|s| {
            drop(
                s.request("POST", &format!("{web_path}/connect"), None)
                    .expect(200),
            )
        }),
        Box::new(|s| {
            let body =
                json!({"notes": "new notes", "port": 2222, "username": "root", "color": "#00ff00"});
            drop(s.put(&web_path, &body).expect(200));
        }),
        Box::new(|s| {
            let auth = json!({"auth": {"type": "password", "password": "list-pw"}});
            drop(s.put(&web_path, &auth).expect(200));
        }),
        Box::new(|s| {
            let hops = json!({"jump_host_ids": [id_of(&db)]});
            drop(s.put(&web_path, &hops).expect(200));
        }),
        Box::new(|s| {
            let options = json!({"ssh_options": ["ServerAliveInterval 30"]});
            drop(s.put(&web_path, &options).expect(200));
        }),
        Box::new(|s| drop(s.put(&web_path, &json!({"jump_host_ids": []})).expect(200))),
        Box::new(|s| drop(s.delete(&db_path).expect(204))),
        Box::new(|s| {
            drop(
                s.post("/api/groups", &json!({"name": "new group"}))
                    .expect(201),
            )
        }),
        Box::new(|s| {
            let path = format!("/api/groups/{GROUP_A}");
            drop(s.put(&path, &json!({"name": "renamed group"})).expect(200));
        }),
    ];
    for (step, change) in changes.iter().enumerate() {
        change(&service);
        let after = snapshot(&service);
        assert_ne!(after, before, "change {step} shows in no list");
        before = after;
    }
    // The final state, checked by content: the rename, the favorite and the delete.
    assert_eq!(before[0]["total"], 2, "{}", before[0]);
    assert_eq!(before[6]["items"][0]["name"], "renamed");
    assert_eq!(
        before[2]["total"], 0,
        "search=db-: db-1 is gone: {}",
        before[2]
    );
}

/// The list's memory follows writes by another connection (a backup tool, the sqlite3
/// shell) too: SQLite's data_version moves, and everything is read again.
#[test]
fn hosts_and_groups_written_by_another_connection_show_in_the_next_lists() {
    let service = start_with_rows("list-other-connection", &[GROUP_A], &[]);
    let kept = id_of(&create(
        &service,
        &host("kept", json!({"group_id": GROUP_A})),
    ));
    assert_eq!(list(&service, "search=outsider")["total"], 0);
    let before = service.get("/api/groups").expect(200);
    assert_eq!(before["items"][0]["host_count"], 1);
    let conn = rusqlite::Connection::open(service.data_dir.join("host-manager.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.execute_batch(&format!(
        "INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type, group_id,
             created_at, updated_at)
         VALUES ('outsider', 'Outsider', 'outsider', 'out.example', 22, 'u', 'agent', '{GROUP_A}',
             '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');
         UPDATE groups SET name = 'Renamed outside', name_key = 'renamed outside';"
    ))
    .unwrap();
    drop(conn);
    let found = list(&service, "search=outsider");
    assert_eq!(ids(&found), vec!["outsider".to_owned()]);
    assert_eq!(list(&service, &format!("group={GROUP_A}"))["total"], 2);
    assert_eq!(ids(&list(&service, "per_page=1")), vec![kept]);
    let after = service.get("/api/groups").expect(200);
    assert_eq!(after["items"][0]["host_count"], 2);
    assert_eq!(after["items"][0]["name"], "Renamed outside");
}
