//! `POST /api/hosts/:id/duplicate` and `POST /api/hosts/batch` (docs/api.md, Hosts): a copy
//! keeps every field and connects with the same password; a batch selects by ids or by the
//! list's filters, checks every op before it writes, writes all or nothing, and the list
//! shows what it wrote. All over HTTP against the binary.

use serde_json::{json, Value};

use crate::support::{fresh_dir, host_body, id_of, Options, Service, EVENT_DEADLINE};

const IDENTITY: &str = "eeeeeeee-0000-4000-8000-000000000005";
const UNKNOWN: &str = "dddddddd-0000-4000-8000-000000000004";

/// A service whose database holds identity `IDENTITY` (username `deploy`, no methods),
/// written with SQL while it was stopped.
fn start_with_identity(name: &str) -> Service {
    let data_dir = fresh_dir(name).join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut first = Service::start_with(name, options());
    let status = first.terminate(EVENT_DEADLINE).expect("stops");
    assert!(status.success(), "{status:?}");
    let conn = rusqlite::Connection::open(data_dir.join("host-manager.db")).unwrap();
    conn.execute(
        "INSERT INTO identities (id, name, name_key, fold_key, username, created_at, \
         updated_at) VALUES (?1, 'ops', 'ops', 'ops', 'deploy', ?2, ?2)",
        [IDENTITY, "2024-01-01T00:00:00.000Z"],
    )
    .unwrap();
    drop(conn);
    Service::start_with(name, options())
}

fn create(service: &Service, name: &str, extra: Value) -> Value {
    service
        .post("/api/hosts", &host_body(name, "web.example.com", extra))
        .expect(201)
}

fn duplicate(service: &Service, id: &str, body: Option<&Value>) -> crate::support::Response {
    service.request("POST", &format!("/api/hosts/{id}/duplicate"), body)
}

/// The fields a copy must share with its original.
const KEPT: &[&str] = &[
    "hostname",
    "port",
    "username",
    "auth",
    "identity_id",
    "group_id",
    "tags",
    "is_favorite",
    "color",
    "notes",
    "jump_host_ids",
    "ssh_options",
];

#[test]
fn a_duplicate_keeps_every_field_and_connects_with_the_same_password() {
    let service = start_with_identity("batch-duplicate-fields");
    let group = service.new_group("g");
    let hop = id_of(&create(&service, "hop", json!({})));
    let earlier = create(&service, "earlier", json!({"group_id": group}));
    let original = create(
        &service,
        "web 1",
        json!({
            "auth": {"type": "password", "password": "s3cret-dup"},
            "identity_id": IDENTITY, "group_id": group, "tags": ["b", "a"],
            "is_favorite": true, "color": "#A0B1C2", "notes": "n\u{e9}",
            "jump_host_ids": [hop], "ssh_options": ["ServerAliveInterval 30"],
        }),
    );
    let id = id_of(&original);
    service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    let response = duplicate(&service, &id, None);
    let copy = response.expect(201);
    assert_eq!(response.header("etag"), Some("\"1\""));
    for field in KEPT {
        assert_eq!(copy[field], original[field], "{field}: {copy}");
    }
    assert_ne!(id_of(&copy), id);
    assert_eq!(copy["name"], "web 1 (copy)");
    assert_eq!(copy["revision"], 1);
    assert_eq!(copy["last_used_at"], Value::Null);
    assert!(copy["created_at"].as_str() >= original["updated_at"].as_str());
    assert!(copy["order"].as_i64() > original["order"].as_i64());
    assert!(original["order"].as_i64() > earlier["order"].as_i64());
    let fetched = service
        .get(&format!("/api/hosts/{}", id_of(&copy)))
        .expect(200);
    assert_eq!(fetched, copy);
    let connected = service
        .request(
            "POST",
            &format!("/api/hosts/{}/connect", id_of(&copy)),
            None,
        )
        .expect(200);
    assert_eq!(connected["credentials"]["password"], "s3cret-dup");
    assert_eq!(connected["credentials"]["username"], "root");
}

#[test]
fn a_duplicate_keeps_an_inherited_chain_inherited_and_a_direct_one_direct() {
    let service = Service::start("batch-duplicate-chain");
    for chain in [Value::Null, json!([])] {
        let id = id_of(&create(&service, "c", json!({ "jump_host_ids": chain })));
        let copy = duplicate(&service, &id, Some(&json!({}))).expect(201);
        assert_eq!(copy["jump_host_ids"], chain);
    }
}

#[test]
fn a_duplicate_name_defaults_to_copy_within_100_characters_and_a_given_name_meets_the_rule() {
    let service = Service::start("batch-duplicate-name");
    let long = "\u{e9}".repeat(100);
    let id = id_of(&create(&service, &long, json!({})));
    let copy = duplicate(&service, &id, Some(&json!({"name": null}))).expect(201);
    let name = copy["name"].as_str().unwrap();
    assert_eq!(name.chars().count(), 100);
    assert_eq!(name, format!("{} (copy)", "\u{e9}".repeat(93)));
    let copy = duplicate(&service, &id, Some(&json!({"name": "  db 2  "}))).expect(201);
    assert_eq!(copy["name"], "db 2");
    let copy = duplicate(&service, &id, Some(&json!({"name": "x".repeat(100)}))).expect(201);
    assert_eq!(copy["name"], "x".repeat(100));
    for refused in [json!(""), json!("   "), json!("x".repeat(101)), json!(5)] {
        let error = duplicate(&service, &id, Some(&json!({ "name": refused })))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(error["details"].as_str().unwrap().starts_with("name: "));
    }
    duplicate(&service, UNKNOWN, Some(&json!({"name": ""}))).assert_error(404, "HOST_NOT_FOUND");
    let total = service.get("/api/hosts").expect(200)["total"].clone();
    assert_eq!(total, 4, "the refusals wrote nothing");
}
