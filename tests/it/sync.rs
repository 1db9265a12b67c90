//! Sync between two devices through one plain folder (docs/sync.md; docs/api.md, "Sync"):
//! two services on two data dirs with different master passwords share a folder and one
//! sync passphrase, and are driven with `POST /api/sync/now`. Creates, edits, moves,
//! deletes, keys with their private halves, identities, forwards, group defaults and
//! passwords reach the other side; concurrent edits are conflicts that keep the loser's
//! value; an edit beats a delete; a wiped device, a wrong passphrase, a damaged bundle, a
//! conflict copy or a killed writer changes nothing it should not; no file in the folder
//! holds a secret; and bundle backups export and import.
//!
//! The background writer and poller are slowed to an hour in every test but the one of the
//! automatic path, so each merge happens exactly where a test calls `sync/now`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::{
    assert_no_leak, contains_bytes, fresh_dir, host_body, id_of, leak_forms, read_all_files,
    wait_until, Options, Service, EVENT_DEADLINE,
};

/// The sync passphrase every device of a test shares.
pub(crate) const PASSPHRASE: &str = "shared sync passphrase 7c1e";

/// Starts a device on a fresh data dir (or on `data_dir`), with its own master password
/// set, and its background sync slowed to an hour (see the module's doc).
pub(crate) fn device(name: &str, data_dir: Option<PathBuf>) -> Service {
    device_with(name, data_dir, &[])
}

fn device_with(name: &str, data_dir: Option<PathBuf>, env: &[(&str, &str)]) -> Service {
    let mut all: Vec<(String, String)> = vec![
        ("HOST_MANAGER_TEST_SYNC_POLL_MS".into(), "3600000".into()),
        (
            "HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS".into(),
            "3600000".into(),
        ),
    ];
    for (key, value) in env {
        all.retain(|(known, _)| known != key);
        all.push((key.to_string(), value.to_string()));
    }
    let service = Service::start_with(
        name,
        Options {
            data_dir,
            env: all,
            ..Options::default()
        },
    );
    let master = format!("master of {name} 41d0");
    service
        .put("/api/vault/password", &json!({ "new_password": master }))
        .expect(200);
    service
}

/// `PUT /api/sync` on `dir` with `passphrase`: the answer (200 expected).
pub(crate) fn enable_with(service: &Service, dir: &Path, passphrase: &str) -> Value {
    let body = json!({"dir": dir.to_str().unwrap(), "passphrase": passphrase});
    service.put("/api/sync", &body).expect(200)
}

/// `PUT /api/sync` on `dir` with the shared passphrase.
pub(crate) fn enable(service: &Service, dir: &Path) -> Value {
    enable_with(service, dir, PASSPHRASE)
}

/// `POST /api/sync/now`: the merge report (200 expected).
pub(crate) fn sync_now(service: &Service) -> Value {
    service.post("/api/sync/now", &json!({})).expect(200)
}

/// This device's id, from `GET /api/sync`.
pub(crate) fn device_id(service: &Service) -> String {
    service.get("/api/sync").expect(200)["device_id"]
        .as_str()
        .expect("a device id")
        .to_owned()
}

/// Two devices on one fresh folder, both enabled, each having merged the other's bundle.
fn pair(name: &str) -> (Service, Service, PathBuf) {
    let dir = fresh_dir(&format!("{name}-folder"));
    let a = device(&format!("{name}-a"), None);
    let b = device(&format!("{name}-b"), None);
    enable(&a, &dir);
    enable(&b, &dir);
    sync_now(&a);
    (a, b, dir)
}

/// Syncs A, then B, then A: whatever either side changed reaches the other.
pub(crate) fn round(a: &Service, b: &Service) {
    sync_now(a);
    sync_now(b);
    sync_now(a);
}

fn items(service: &Service, path: &str) -> Vec<Value> {
    service.get(path).expect(200)["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: no items"))
        .clone()
}

/// Every group of the tree, depth first.
fn flatten_groups(groups: &[Value], out: &mut Vec<Value>) {
    for group in groups {
        out.push(group.clone());
        flatten_groups(group["children"].as_array().unwrap(), out);
    }
}

fn by_id(mut list: Vec<Value>) -> Vec<Value> {
    list.sort_by(|x, y| x["id"].as_str().cmp(&y["id"].as_str()));
    list
}

/// The whole catalogue as the API shows it: each host, group, key, identity, saved search,
/// known-hosts entry and forward rule, by id. Two calls on one device with nothing changed
/// in between answer the same.
pub(crate) fn catalogue(service: &Service) -> Value {
    let host_ids: Vec<String> = by_id(items(service, "/api/hosts?per_page=1000"))
        .iter()
        .map(id_of)
        .collect();
    let hosts: Vec<Value> = host_ids
        .iter()
        .map(|id| service.get(&format!("/api/hosts/{id}")).expect(200))
        .collect();
    let mut groups = Vec::new();
    flatten_groups(&items(service, "/api/groups"), &mut groups);
    let groups = by_id(groups);
    let mut forwards = Vec::new();
    for id in &host_ids {
        forwards.extend(items(service, &format!("/api/hosts/{id}/forwards")));
    }
    for group in &groups {
        forwards.extend(items(
            service,
            &format!("/api/groups/{}/forwards", id_of(group)),
        ));
    }
    // The hosts an entry matches, in no documented order (each device's own row order).
    let mut known_hosts = items(service, "/api/known-hosts");
    for entry in &mut known_hosts {
        if let Some(ids) = entry["host_ids"].as_array_mut() {
            ids.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
        }
    }
    json!({
        "hosts": hosts,
        "groups": groups,
        "keys": by_id(items(service, "/api/keys")),
        "identities": by_id(items(service, "/api/identities")),
        "searches": by_id(items(service, "/api/searches")),
        "known_hosts": by_id(known_hosts),
        "forwards": by_id(forwards),
    })
}

/// `value` without what is this device's own: times of local writes, revisions, last use.
pub(crate) fn portable(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| {
                    !matches!(
                        key.as_str(),
                        "updated_at" | "revision" | "last_used_at" | "last_seen"
                    )
                })
                .map(|(key, value)| (key.clone(), portable(value)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(portable).collect()),
        other => other.clone(),
    }
}

/// Asserts that both devices hold the same catalogue (what travels of it).
#[track_caller]
pub(crate) fn assert_same_catalogue(a: &Service, b: &Service) {
    let (left, right) = (portable(&catalogue(a)), portable(&catalogue(b)));
    assert_eq!(left, right, "the two devices' catalogues differ");
}

/// The newest change-feed position.
fn feed_head(service: &Service) -> u64 {
    service.get("/api/changes").expect(200)["next"]
        .as_u64()
        .expect("next")
}

/// Every file in `dir` with its bytes, by name (no subfolders).
fn folder_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = read_all_files(dir)
        .into_iter()
        .map(|(path, bytes)| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

fn bundle_path(dir: &Path, device: &str) -> PathBuf {
    dir.join(format!("{device}.bundle"))
}

/// Whether a report's `list` names `(kind, id)`.
fn lists(report: &Value, list: &str, kind: &str, id: &str) -> bool {
    report[list]
        .as_array()
        .unwrap_or_else(|| panic!("report without {list}: {report}"))
        .iter()
        .any(|entry| entry["kind"] == kind && entry["id"] == id)
}

/// An ed25519 key made by ssh-keygen with `passphrase`: its private key text.
pub(crate) fn ssh_keygen(dir: &Path, name: &str, passphrase: &str) -> String {
    let path = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-C", "", "-N", passphrase, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs");
    assert!(status.success());
    fs::read_to_string(&path).unwrap()
}

/// The public half `ssh-keygen -y` reads from `private_key` opened with `passphrase`: proof
/// that the private key works.
fn public_half(dir: &Path, private_key: &str, passphrase: &str) -> String {
    let path = dir.join("opened");
    let _ = fs::remove_file(&path);
    fs::write(&path, private_key).unwrap();
    crate::support::set_mode(&path, 0o600);
    let out = Command::new("ssh-keygen")
        .args(["-y", "-P", passphrase, "-f"])
        .arg(&path)
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "ssh-keygen -y: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn connect(service: &Service, host: &str) -> Value {
    service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200)
}

fn get_host(service: &Service, host: &str) -> Value {
    service.get(&format!("/api/hosts/{host}")).expect(200)
}

fn new_host_with(service: &Service, name: &str, extra: Value) -> String {
    let body = host_body(name, "h.example.com", extra);
    id_of(&service.post("/api/hosts", &body).expect(201))
}

// ---- what travels ------------------------------------------------------------------------

#[test]
fn sync_now_before_sync_is_set_up_is_409_sync_disabled() {
    let a = device("sync-disabled", None);
    a.post("/api/sync/now", &json!({}))
        .assert_error(409, "SYNC_DISABLED");
    let status = a.get("/api/sync").expect(200);
    assert_eq!(status["enabled"], false, "{status}");
}

#[test]
fn put_sync_refuses_a_missing_or_relative_dir_and_a_short_passphrase_and_needs_the_vault() {
    let a = device("sync-put-rules", None);
    let dir = fresh_dir("sync-put-rules-folder");
    let missing = dir.join("missing");
    let file = dir.join("a-file");
    fs::write(&file, b"x").unwrap();
    for (body, field) in [
        (
            json!({"dir": missing.to_str().unwrap(), "passphrase": PASSPHRASE}),
            "dir",
        ),
        (
            json!({"dir": file.to_str().unwrap(), "passphrase": PASSPHRASE}),
            "dir",
        ),
        (
            json!({"dir": "relative/dir", "passphrase": PASSPHRASE}),
            "dir",
        ),
        (json!({"passphrase": PASSPHRASE}), "dir"),
        (
            json!({"dir": dir.to_str().unwrap(), "passphrase": "short"}),
            "passphrase",
        ),
        (json!({"dir": dir.to_str().unwrap()}), "passphrase"),
        (
            json!({"dir": dir.to_str().unwrap(), "passphrase": PASSPHRASE, "device_name": ""}),
            "device_name",
        ),
    ] {
        let error = a
            .put("/api/sync", &body)
            .assert_error(400, "VALIDATION_ERROR");
        let details = error["details"].as_str().unwrap_or_default();
        assert!(details.starts_with(field), "{body} -> {error}");
    }
    assert_eq!(a.get("/api/sync").expect(200)["enabled"], false);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "nothing written");
    a.post("/api/vault/lock", &json!({})).expect(200);
    let body = json!({"dir": dir.to_str().unwrap(), "passphrase": PASSPHRASE});
    a.put("/api/sync", &body).assert_error(401, "VAULT_LOCKED");
}

#[test]
fn delete_sync_stops_syncing_and_leaves_the_folders_files() {
    let (a, _b, dir) = pair("sync-stop");
    let files = folder_files(&dir);
    assert_eq!(files.len(), 2, "two bundles");
    a.delete("/api/sync").expect(204);
    let status = a.get("/api/sync").expect(200);
    assert_eq!(status["enabled"], false, "{status}");
    a.post("/api/sync/now", &json!({}))
        .assert_error(409, "SYNC_DISABLED");
    a.new_host("after-stop");
    assert_eq!(folder_files(&dir), files, "the files stay, untouched");
}

#[test]
fn host_creates_edits_moves_and_deletes_reach_the_other_device() {
    let (a, b, _dir) = pair("sync-hosts");
    let group = a.new_group("prod");
    let db = a.new_host("db");
    let web = new_host_with(
        &a,
        "web",
        json!({"tags": ["x", "y"], "notes": "n1", "jump_host_ids": [db],
            "ssh_options": ["ServerAliveInterval 15"], "color": "#12ab34"}),
    );
    let search = id_of(
        &a.post("/api/searches", &json!({"name": "tagged", "q": "tag:x"}))
            .expect(201),
    );
    let public_key = a
        .get(&format!("/api/keys/{}", a.new_key("for-known-hosts")))
        .expect(200)["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    a.post(
        "/api/known-hosts/accept",
        &json!({"hostname": "h.example.com", "public_key": public_key}),
    )
    .expect(201);
    let gone = a.new_host("gone");
    let report = sync_now(&a);
    assert!(report["written"].as_str().is_some(), "{report}");
    let report = sync_now(&b);
    for id in [&web, &db, &gone] {
        assert!(lists(&report, "added", "host", id), "{report}");
    }
    assert!(lists(&report, "added", "group", &group), "{report}");
    assert!(lists(&report, "added", "saved_search", &search), "{report}");
    assert_eq!(items(&b, "/api/known-hosts").len(), 1);
    assert_same_catalogue(&a, &b);

    a.put(
        &format!("/api/hosts/{web}"),
        &json!({"hostname": "web2.example.com", "port": 2200}),
    )
    .expect(200);
    a.put(
        &format!("/api/hosts/{db}/move"),
        &json!({ "group_id": group }),
    )
    .expect(200);
    a.delete(&format!("/api/hosts/{gone}")).expect(204);
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "updated", "host", &web), "{report}");
    assert!(lists(&report, "updated", "host", &db), "{report}");
    assert!(lists(&report, "deleted", "host", &gone), "{report}");
    let on_b = get_host(&b, &web);
    assert_eq!(
        (on_b["hostname"].clone(), on_b["port"].clone()),
        (json!("web2.example.com"), json!(2200))
    );
    assert_eq!(get_host(&b, &db)["group_id"], group.as_str());
    b.get(&format!("/api/hosts/{gone}"))
        .assert_error(404, "HOST_NOT_FOUND");
    assert_same_catalogue(&a, &b);

    // And back: an edit on B reaches A.
    b.put(&format!("/api/hosts/{web}"), &json!({"notes": "from b"}))
        .expect(200);
    sync_now(&b);
    let report = sync_now(&a);
    assert!(lists(&report, "updated", "host", &web), "{report}");
    assert_eq!(get_host(&a, &web)["notes"], "from b");
    assert_same_catalogue(&a, &b);
    let peers = a.get("/api/sync").expect(200)["peers"].clone();
    let b_id = device_id(&b);
    assert!(
        peers
            .as_array()
            .unwrap()
            .iter()
            .any(|peer| peer["device_id"] == b_id.as_str()),
        "A lists B as a peer: {peers}"
    );
}

#[test]
fn an_imported_key_reaches_the_other_device_with_its_private_key_and_passphrase() {
    let (a, b, _dir) = pair("sync-keys");
    let work = fresh_dir("sync-keys-work");
    let passphrase = "key passphrase 93ab";
    let private_key = ssh_keygen(&work, "k", passphrase);
    let key = a
        .post(
            "/api/keys",
            &json!({"name": "imported", "private_key": private_key, "passphrase": passphrase}),
        )
        .expect(201);
    let key_id = id_of(&key);
    let host = new_host_with(
        &a,
        "keyed",
        json!({"auth": {"type": "key", "key_id": key_id}}),
    );
    round(&a, &b);
    assert_same_catalogue(&a, &b);

    let on_b = b.get(&format!("/api/keys/{key_id}")).expect(200);
    assert_eq!(on_b["fingerprint"], key["fingerprint"]);
    assert_eq!(on_b["has_passphrase"], true);
    let credentials = connect(&b, &host)["credentials"].clone();
    assert_eq!(
        credentials["private_key"],
        private_key.as_str(),
        "the same key text"
    );
    assert_eq!(credentials["passphrase"], passphrase);
    let public = key["public_key"].as_str().unwrap();
    assert!(
        public.starts_with(&public_half(&work, &private_key, passphrase)),
        "the private key B hands out opens with the passphrase to the key's public half"
    );
    // A host made on B with the synced key connects with it too.
    let local = new_host_with(
        &b,
        "on-b",
        json!({"auth": {"type": "key", "key_id": key_id}}),
    );
    assert_eq!(connect(&b, &local)["credentials"]["passphrase"], passphrase);
}

#[test]
fn identity_changes_reach_the_other_device_and_connect_answers_the_new_password() {
    let (a, b, _dir) = pair("sync-identities");
    let identity = id_of(
        &a.post(
            "/api/identities",
            &json!({"name": "ops", "username": "deploy",
                "auth": [{"type": "password", "password": "ident-pw-1"}]}),
        )
        .expect(201),
    );
    let host = new_host_with(
        &a,
        "via-identity",
        json!({"identity_id": identity, "username": null, "auth": null}),
    );
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    let credentials = connect(&b, &host)["credentials"].clone();
    assert_eq!(
        credentials["username"], "deploy",
        "{}",
        credentials["username"]
    );
    assert_eq!(credentials["methods"][0]["password"], "ident-pw-1");

    a.put(
        &format!("/api/identities/{identity}"),
        &json!({"username": "deploy2", "notes": "rotated",
            "auth": [{"type": "password", "password": "ident-pw-2"}]}),
    )
    .expect(200);
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "updated", "identity", &identity), "{report}");
    let credentials = connect(&b, &host)["credentials"].clone();
    assert_eq!(credentials["username"], "deploy2");
    assert_eq!(credentials["methods"][0]["password"], "ident-pw-2");
    assert_same_catalogue(&a, &b);
}

#[test]
fn forwards_and_group_defaults_reach_the_other_device() {
    let (a, b, _dir) = pair("sync-forwards");
    let group = id_of(
        &a.post(
            "/api/groups",
            &json!({"name": "dc1", "defaults": {"username": "ops", "port": 2222,
                "ssh_options": ["ServerAliveInterval 30"], "send_env": ["LC_*"],
                "set_env": [{"name": "REGION", "value": "eu"},
                    {"name": "GROUP_TOKEN", "value": "group-env-secret-1", "secret": true}]}}),
        )
        .expect(201),
    );
    let host = new_host_with(
        &a,
        "in-dc1",
        json!({"group_id": group, "username": null, "port": null,
            "set_env": [{"name": "HOST_TOKEN", "value": "host-env-secret-1", "secret": true}]}),
    );
    let rule = json!({"type": "local", "bind_port": 18080, "target_host": "db.internal",
        "target_port": 5432, "description": "db"});
    let host_rule = id_of(
        &a.post(&format!("/api/hosts/{host}/forwards"), &rule)
            .expect(201),
    );
    let group_rule = id_of(
        &a.post(
            &format!("/api/groups/{group}/forwards"),
            &json!({"type": "dynamic", "bind_port": 18081}),
        )
        .expect(201),
    );
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    let defaults = b.get(&format!("/api/groups/{group}")).expect(200)["defaults"].clone();
    assert_eq!(defaults["port"], 2222, "{defaults}");
    let answer = connect(&b, &host);
    assert_eq!(answer["effective"]["username"], "ops");
    assert_eq!(answer["effective"]["port"], 2222);
    let ids: Vec<&str> = answer["forwards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [host_rule.as_str(), group_rule.as_str()]);
    let mut set = answer["environment"]["set"].as_array().unwrap().clone();
    set.sort_by(|x, y| x["name"].as_str().cmp(&y["name"].as_str()));
    assert_eq!(
        Value::Array(set),
        json!([{"name": "GROUP_TOKEN", "value": "group-env-secret-1"},
            {"name": "HOST_TOKEN", "value": "host-env-secret-1"},
            {"name": "REGION", "value": "eu"}])
    );

    // An edit of a rule and of a default travels too.
    a.put(
        &format!("/api/hosts/{host}/forwards/{host_rule}"),
        &json!({"bind_port": 18090}),
    )
    .expect(200);
    a.put(
        &format!("/api/groups/{group}"),
        &json!({"defaults": {"port": 2200}}),
    )
    .expect(200);
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "updated", "forward", &host_rule), "{report}");
    assert!(lists(&report, "updated", "group", &group), "{report}");
    assert_eq!(connect(&b, &host)["effective"]["port"], 2200);
    assert_same_catalogue(&a, &b);
}

#[test]
fn a_host_password_reaches_the_other_device_and_connect_answers_it() {
    let (a, b, _dir) = pair("sync-password");
    let host = new_host_with(
        &a,
        "pw",
        json!({"auth": {"type": "password", "password": "host-password-1"}}),
    );
    round(&a, &b);
    assert_eq!(get_host(&b, &host)["auth"]["has_password"], true);
    assert_eq!(
        connect(&b, &host)["credentials"]["password"],
        "host-password-1"
    );

    a.put(
        &format!("/api/hosts/{host}"),
        &json!({"auth": {"password": "host-password-2"}}),
    )
    .expect(200);
    round(&a, &b);
    assert_eq!(
        connect(&b, &host)["credentials"]["password"],
        "host-password-2"
    );
}

// ---- conflicts and deletes ---------------------------------------------------------------

/// The conflicts `GET /api/sync/conflicts` lists for `(kind, id, field)`.
fn conflicts_on(service: &Service, id: &str, field: &str) -> Vec<Value> {
    let listing = service.get("/api/sync/conflicts").expect(200);
    listing["conflicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no conflicts list: {listing}"))
        .iter()
        .filter(|conflict| conflict["id"] == id && conflict["field"] == field)
        .cloned()
        .collect()
}

#[test]
fn concurrent_edits_of_one_field_are_a_conflict_that_keeps_the_losers_value() {
    let (a, b, _dir) = pair("sync-conflict");
    let host = new_host_with(
        &a,
        "contested",
        json!({"auth": {"type": "password", "password": "pw-before"}}),
    );
    round(&a, &b);
    let (a_id, b_id) = (device_id(&a), device_id(&b));

    a.put(
        &format!("/api/hosts/{host}"),
        &json!({"hostname": "from-a.example.com"}),
    )
    .expect(200);
    b.put(
        &format!("/api/hosts/{host}"),
        &json!({"hostname": "from-b.example.com"}),
    )
    .expect(200);
    a.put(
        &format!("/api/hosts/{host}"),
        &json!({"auth": {"password": "pw-from-a"}}),
    )
    .expect(200);
    b.put(
        &format!("/api/hosts/{host}"),
        &json!({"auth": {"password": "pw-from-b"}}),
    )
    .expect(200);
    sync_now(&a);
    let report = sync_now(&b);
    sync_now(&a);
    assert_same_catalogue(&a, &b);

    let hostname = get_host(&b, &host)["hostname"].clone();
    let loser = if hostname == "from-a.example.com" {
        "from-b.example.com"
    } else {
        assert_eq!(hostname, "from-b.example.com");
        "from-a.example.com"
    };
    let reported: Vec<&Value> = report["conflicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no conflicts in the report: {report}"))
        .iter()
        .filter(|conflict| conflict["id"] == host.as_str() && conflict["field"] == "hostname")
        .collect();
    assert_eq!(
        reported.len(),
        1,
        "the merge on B reports the conflict: {report}"
    );
    let listed = conflicts_on(&b, &host, "hostname");
    assert_eq!(listed.len(), 1, "B lists the conflict");
    let conflict = &listed[0];
    assert_eq!(conflict["kind"], "host");
    assert_eq!(conflict["winner"]["value"], hostname, "{conflict}");
    assert_eq!(
        conflict["loser"]["value"], loser,
        "the loser's value is kept: {conflict}"
    );
    let devices = [
        conflict["winner"]["device_id"].clone(),
        conflict["loser"]["device_id"].clone(),
    ];
    assert!(
        devices.contains(&json!(a_id)) && devices.contains(&json!(b_id)),
        "each side names its device: {conflict}"
    );
    assert!(conflict["detected_at"].is_string(), "{conflict}");

    // The password conflicted too: listed, never shown.
    let secret = conflicts_on(&b, &host, "password");
    assert_eq!(secret.len(), 1, "the password conflict is listed");
    assert_eq!(
        secret[0]["winner"]["value"],
        json!({"secret": true}),
        "{}",
        secret[0]
    );
    assert_eq!(
        secret[0]["loser"]["value"],
        json!({"secret": true}),
        "{}",
        secret[0]
    );
    let listing = b.get("/api/sync/conflicts").expect(200).to_string();
    for value in ["pw-from-a", "pw-from-b", "pw-before"] {
        assert!(
            !listing.contains(value),
            "a password in the listing: {listing}"
        );
    }
    let password = connect(&a, &host)["credentials"]["password"].clone();
    assert_eq!(connect(&b, &host)["credentials"]["password"], password);
    assert!(
        password == "pw-from-a" || password == "pw-from-b",
        "{password}"
    );
    let status = b.get("/api/sync").expect(200);
    assert!(status["conflicts"].as_u64().unwrap() >= 2, "{status}");
}

#[test]
fn edits_of_different_fields_of_one_host_on_both_devices_both_survive_without_a_conflict() {
    let (a, b, _dir) = pair("sync-fields");
    let host = a.new_host("shared");
    round(&a, &b);

    a.put(
        &format!("/api/hosts/{host}"),
        &json!({"hostname": "a.example.com"}),
    )
    .expect(200);
    b.put(
        &format!("/api/hosts/{host}"),
        &json!({"port": 2222, "notes": "from b"}),
    )
    .expect(200);
    let first = sync_now(&a);
    let second = sync_now(&b);
    let third = sync_now(&a);
    for report in [&first, &second, &third] {
        assert_eq!(report["conflicts"], json!([]), "{report}");
    }
    for side in [&a, &b] {
        let shown = get_host(side, &host);
        assert_eq!(
            (
                shown["hostname"].clone(),
                shown["port"].clone(),
                shown["notes"].clone()
            ),
            (json!("a.example.com"), json!(2222), json!("from b"))
        );
        assert_eq!(
            side.get("/api/sync/conflicts").expect(200)["conflicts"],
            json!([])
        );
    }
    assert_same_catalogue(&a, &b);
}

#[test]
fn an_edit_beats_a_concurrent_delete_and_the_host_is_reported_resurrected() {
    let (a, b, _dir) = pair("sync-resurrect");
    let host = new_host_with(&a, "doomed", json!({"tags": ["keep"]}));
    round(&a, &b);
    let a_id = device_id(&a);

    a.delete(&format!("/api/hosts/{host}")).expect(204);
    b.put(
        &format!("/api/hosts/{host}"),
        &json!({"notes": "edited on b"}),
    )
    .expect(200);
    let first = sync_now(&a);
    let second = sync_now(&b);
    let third = sync_now(&a);
    for side in [&a, &b] {
        let shown = get_host(side, &host);
        assert_eq!(shown["notes"], "edited on b");
        assert_eq!(
            shown["tags"],
            json!(["keep"]),
            "the whole record comes back"
        );
    }
    let resurrected: Vec<&Value> = [&first, &second, &third]
        .iter()
        .flat_map(|report| report["resurrected"].as_array().unwrap().iter())
        .filter(|entry| entry["kind"] == "host" && entry["id"] == host.as_str())
        .collect();
    assert!(
        !resurrected.is_empty(),
        "reported resurrected: {first} {second} {third}"
    );
    assert!(
        resurrected
            .iter()
            .all(|entry| entry["deleted_by"] == a_id.as_str()),
        "{resurrected:?}"
    );
    assert_same_catalogue(&a, &b);
}

// ---- what two devices did at once --------------------------------------------------------

#[test]
fn a_group_name_taken_on_both_devices_keeps_both_groups_the_smaller_id_keeping_the_name() {
    let (a, b, _dir) = pair("sync-names");
    let on_a = a.new_group("prod");
    let on_b = b.new_group("PROD");
    let host_a = new_host_with(&a, "in-a", json!({ "group_id": on_a }));
    let host_b = new_host_with(&b, "in-b", json!({ "group_id": on_b }));
    round(&a, &b);
    sync_now(&b);
    assert_same_catalogue(&a, &b);
    let (smaller, larger) = if on_a < on_b {
        (&on_a, &on_b)
    } else {
        (&on_b, &on_a)
    };
    for side in [&a, &b] {
        let keeper = side.get(&format!("/api/groups/{smaller}")).expect(200);
        let other = side.get(&format!("/api/groups/{larger}")).expect(200);
        assert!(
            keeper["name"] == "prod" || keeper["name"] == "PROD",
            "{keeper}"
        );
        assert!(
            other["name"].as_str().unwrap().ends_with(" (2)"),
            "the other is renamed: {other}"
        );
        assert_eq!(get_host(side, &host_a)["group_id"], on_a.as_str());
        assert_eq!(get_host(side, &host_b)["group_id"], on_b.as_str());
    }
}

#[test]
fn one_key_imported_on_both_devices_leaves_one_key_and_every_host_still_connects_with_it() {
    let (a, b, _dir) = pair("sync-same-key");
    let work = fresh_dir("sync-same-key-work");
    let passphrase = "same key passphrase";
    let private_key = ssh_keygen(&work, "k", passphrase);
    let body = json!({"name": "k", "private_key": private_key, "passphrase": passphrase});
    let key_a = id_of(&a.post("/api/keys", &body).expect(201));
    let key_b = id_of(&b.post("/api/keys", &body).expect(201));
    let host_a = new_host_with(&a, "a", json!({"auth": {"type": "key", "key_id": key_a}}));
    let host_b = new_host_with(&b, "b", json!({"auth": {"type": "key", "key_id": key_b}}));
    round(&a, &b);
    sync_now(&b);
    assert_same_catalogue(&a, &b);
    let kept = std::cmp::min(&key_a, &key_b);
    for side in [&a, &b] {
        let keys = items(side, "/api/keys");
        assert_eq!(keys.len(), 1, "one key: {keys:?}");
        assert_eq!(id_of(&keys[0]), *kept);
        for host in [&host_a, &host_b] {
            assert_eq!(get_host(side, host)["auth"]["key_id"], kept.as_str());
            let credentials = connect(side, host)["credentials"].clone();
            assert_eq!(credentials["private_key"], private_key.as_str());
            assert_eq!(credentials["passphrase"], passphrase);
        }
    }
}

#[test]
fn a_host_made_in_a_group_deleted_meanwhile_on_the_other_device_lands_at_the_top_level() {
    let (a, b, _dir) = pair("sync-orphan");
    let group = a.new_group("doomed");
    round(&a, &b);
    a.delete(&format!("/api/groups/{group}")).expect(204);
    let host = new_host_with(&b, "orphan", json!({ "group_id": group }));
    round(&a, &b);
    sync_now(&b);
    assert_same_catalogue(&a, &b);
    for side in [&a, &b] {
        side.get(&format!("/api/groups/{group}"))
            .assert_error(404, "GROUP_NOT_FOUND");
        let shown = get_host(side, &host);
        assert!(shown.get("group_id").is_none_or(Value::is_null), "{shown}");
    }
}

#[test]
fn two_groups_moved_under_each_other_on_two_devices_end_without_a_cycle() {
    let (a, b, _dir) = pair("sync-cycle");
    let one = a.new_group("one");
    let two = a.new_group("two");
    round(&a, &b);
    a.put(
        &format!("/api/groups/{one}/move"),
        &json!({ "parent_id": two }),
    )
    .expect(200);
    b.put(
        &format!("/api/groups/{two}/move"),
        &json!({ "parent_id": one }),
    )
    .expect(200);
    round(&a, &b);
    sync_now(&b);
    assert_same_catalogue(&a, &b);
    let largest = std::cmp::max(&one, &two);
    for side in [&a, &b] {
        let top: Vec<String> = items(side, "/api/groups").iter().map(id_of).collect();
        assert_eq!(
            top,
            [largest.as_str()],
            "the larger id moves to the top level"
        );
    }
}

#[test]
fn a_host_using_a_key_deleted_meanwhile_on_the_other_device_loses_the_key_on_both() {
    let (a, b, _dir) = pair("sync-gone-key");
    let key = a.new_key("doomed");
    round(&a, &b);
    a.delete(&format!("/api/keys/{key}")).expect(204);
    let host = new_host_with(
        &b,
        "uses-it",
        json!({"auth": {"type": "key", "key_id": key}}),
    );
    round(&a, &b);
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    for side in [&a, &b] {
        side.get(&format!("/api/keys/{key}"))
            .assert_error(404, "KEY_NOT_FOUND");
        let shown = get_host(side, &host);
        assert_ne!(shown["auth"]["key_id"], key.as_str(), "{shown}");
        let status = side
            .post(&format!("/api/hosts/{host}/connect"), &json!({}))
            .status;
        assert_ne!(status, 500, "connect of the host");
    }
}

#[test]
fn a_host_using_an_identity_deleted_meanwhile_on_the_other_device_loses_it_on_both() {
    let (a, b, _dir) = pair("sync-gone-identity");
    let identity = id_of(
        &a.post(
            "/api/identities",
            &json!({"name": "doomed", "username": "u", "auth": [{"type": "agent"}]}),
        )
        .expect(201),
    );
    round(&a, &b);
    a.delete(&format!("/api/identities/{identity}")).expect(204);
    let host = new_host_with(&b, "uses-it", json!({ "identity_id": identity }));
    round(&a, &b);
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    for side in [&a, &b] {
        assert_eq!(get_host(side, &host)["identity_id"], Value::Null);
    }
}

#[test]
fn a_jump_host_deleted_meanwhile_on_the_other_device_leaves_the_chain_on_both() {
    let (a, b, _dir) = pair("sync-gone-jump");
    let hop = a.new_host("hop");
    let web = a.new_host("web");
    round(&a, &b);
    a.delete(&format!("/api/hosts/{hop}")).expect(204);
    b.put(
        &format!("/api/hosts/{web}"),
        &json!({ "jump_host_ids": [hop] }),
    )
    .expect(200);
    round(&a, &b);
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    for side in [&a, &b] {
        side.get(&format!("/api/hosts/{hop}"))
            .assert_error(404, "HOST_NOT_FOUND");
        let chain = get_host(side, &web)["jump_host_ids"].clone();
        assert!(chain.is_null() || chain == json!([]), "{chain}");
    }
}

// ---- a wiped device and the mass-delete guard --------------------------------------------

#[test]
fn a_wiped_device_joins_by_merging_and_wipes_nothing_on_the_other() {
    let (a, b, dir) = pair("sync-wiped");
    let group = a.new_group("g");
    for n in 0..12 {
        new_host_with(&a, &format!("h{n}"), json!({"group_id": group}));
    }
    let from_b = b.new_host("made-on-b");
    round(&a, &b);
    assert_same_catalogue(&a, &b);
    let before = catalogue(&a);
    drop(b);

    let wiped = device("sync-wiped-b2", None);
    let answer = enable(&wiped, &dir);
    assert!(
        lists(&answer["report"], "added", "host", &from_b),
        "{answer}"
    );
    assert_eq!(answer["report"]["deleted"], json!([]), "{answer}");
    let report = sync_now(&a);
    assert_eq!(report["deleted"], json!([]), "{report}");
    assert_eq!(catalogue(&a), before, "A keeps everything");
    assert_same_catalogue(&a, &wiped);
}

/// Two devices holding the same `count` hosts: their ids.
fn pair_with_hosts(name: &str, count: usize) -> (Service, Service, Vec<String>) {
    let (a, b, _dir) = pair(name);
    let ids: Vec<String> = (0..count).map(|n| a.new_host(&format!("h{n}"))).collect();
    round(&a, &b);
    assert_eq!(
        b.get("/api/hosts").expect(200)["total"],
        json!(count),
        "B holds every host"
    );
    (a, b, ids)
}

fn delete_hosts(service: &Service, ids: &[String]) {
    let answer = service
        .post("/api/hosts/batch", &json!({"ids": ids, "delete": true}))
        .expect(200);
    assert_eq!(answer["count"], json!(ids.len()), "{answer}");
}

#[test]
fn deleting_30_of_40_hosts_is_held_as_mass_delete_until_confirmed() {
    let (a, b, ids) = pair_with_hosts("sync-mass", 40);
    let a_id = device_id(&a);
    delete_hosts(&a, &ids[..30]);
    sync_now(&a);
    let before = catalogue(&b);
    let feed = feed_head(&b);

    let refused = b.post("/api/sync/now", &json!({}));
    let error = refused.assert_error(409, "MASS_DELETE");
    let details = error["details"].as_str().unwrap_or_default();
    assert!(
        details.contains("30") && details.contains("40") && details.contains(&a_id),
        "details say how many of how many and from which device: {error}"
    );
    assert_eq!(catalogue(&b), before, "nothing changes on B");
    let held = b.get("/api/sync").expect(200)["held"].clone();
    assert_eq!(
        [&held["deletions"], &held["live"], &held["device_id"]],
        [&json!(30), &json!(40), &json!(a_id)],
        "{held}"
    );
    // Asking again without the confirmation (as the background poller does) still answers
    // 409, changes nothing and keeps the merge held.
    b.post("/api/sync/now", &json!({}))
        .assert_error(409, "MASS_DELETE");
    assert_eq!(catalogue(&b), before, "nothing changes on B");
    assert_eq!(
        b.get("/api/sync").expect(200)["held"]["deletions"],
        30,
        "still held"
    );
    let changes = b.get(&format!("/api/changes?since={feed}")).expect(200);
    assert_eq!(changes["items"], json!([]), "no change logged: {changes}");

    let report = b
        .post("/api/sync/now", &json!({"confirm_mass_delete": true}))
        .expect(200);
    assert_eq!(report["deleted"].as_array().unwrap().len(), 30, "{report}");
    assert_eq!(b.get("/api/hosts").expect(200)["total"], 10);
    assert_eq!(b.get("/api/sync").expect(200)["held"], Value::Null);
    sync_now(&a);
    assert_same_catalogue(&a, &b);
}

#[test]
fn a_device_that_emptied_its_catalogue_is_held_even_below_the_count_limit() {
    let (a, b, ids) = pair_with_hosts("sync-emptied", 10);
    // B holds 50 live records: deleting 10 is within max(10, 25%), but A, whose last bundle
    // held 10, now holds none.
    for n in 0..40 {
        b.new_host(&format!("b{n}"));
    }
    delete_hosts(&a, &ids);
    sync_now(&a);
    let before = catalogue(&b);
    let error = b
        .post("/api/sync/now", &json!({}))
        .assert_error(409, "MASS_DELETE");
    assert!(
        error["details"].as_str().unwrap().contains(&device_id(&a)),
        "{error}"
    );
    assert_eq!(catalogue(&b), before, "nothing changes on B");
    let report = b
        .post("/api/sync/now", &json!({"confirm_mass_delete": true}))
        .expect(200);
    assert_eq!(report["deleted"].as_array().unwrap().len(), 10, "{report}");
    assert_eq!(b.get("/api/hosts").expect(200)["total"], 40);
}

#[test]
fn the_mass_delete_guard_passes_10_of_40_deletions_and_holds_11() {
    let (a, b, ids) = pair_with_hosts("sync-mass-edge", 40);
    delete_hosts(&a, &ids[..10]);
    sync_now(&a);
    let report = sync_now(&b);
    assert_eq!(report["deleted"].as_array().unwrap().len(), 10, "{report}");
    assert_eq!(b.get("/api/hosts").expect(200)["total"], 30);
    assert_same_catalogue(&a, &b);

    // 30 live now: max(10, 25% of 30) = 10, so 11 more are held.
    delete_hosts(&a, &ids[10..21]);
    sync_now(&a);
    let before = catalogue(&b);
    b.post("/api/sync/now", &json!({}))
        .assert_error(409, "MASS_DELETE");
    assert_eq!(catalogue(&b), before, "nothing changes on B");
}

// ---- what must change nothing ------------------------------------------------------------

#[test]
fn a_wrong_passphrase_is_409_and_changes_nothing_on_that_device_or_in_the_folder() {
    let dir = fresh_dir("sync-wrong-folder");
    let a = device("sync-wrong-a", None);
    a.new_host("on-a");
    enable(&a, &dir);
    let b = device("sync-wrong-b", None);
    b.new_host("on-b");
    let before = catalogue(&b);
    let files = folder_files(&dir);
    assert_eq!(
        files.len(),
        1,
        "A's bundle: {:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );

    let body = json!({"dir": dir.to_str().unwrap(), "passphrase": "another passphrase"});
    b.put("/api/sync", &body)
        .assert_error(409, "SYNC_PASSPHRASE_MISMATCH");
    assert_eq!(catalogue(&b), before, "B's catalogue is unchanged");
    assert_eq!(folder_files(&dir), files, "B wrote nothing into the folder");
    assert_eq!(b.get("/api/sync").expect(200)["enabled"], false);
    b.post("/api/sync/now", &json!({}))
        .assert_error(409, "SYNC_DISABLED");
}

/// Two synced devices, then a host made on A and written to its bundle only: (A, B, the
/// folder, A's bundle path, the new host's id).
fn pair_with_news(name: &str) -> (Service, Service, PathBuf, PathBuf, String) {
    let (a, b, dir) = pair(name);
    a.new_host("old");
    round(&a, &b);
    let news = a.new_host("news");
    sync_now(&a);
    let bundle = bundle_path(&dir, &device_id(&a));
    assert!(bundle.is_file(), "A wrote {}", bundle.display());
    (a, b, dir, bundle, news)
}

/// B syncs a folder where A's bundle is damaged: B changes nothing, and both the report and
/// `GET /api/sync` name A's file.
fn assert_skipped_and_unchanged(b: &Service, bundle: &Path, news: &str) {
    let before = catalogue(b);
    let name = bundle.file_name().unwrap().to_str().unwrap();
    let report = sync_now(b);
    let skipped = report["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|entry| entry["file"] == name && entry["problem"].is_string()),
        "the report skips {name}: {report}"
    );
    assert_eq!(catalogue(b), before, "B is unchanged");
    b.get(&format!("/api/hosts/{news}"))
        .assert_error(404, "HOST_NOT_FOUND");
    let status = b.get("/api/sync").expect(200);
    assert!(
        status["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|warning| warning["file"] == name && warning["problem"].is_string()),
        "GET /api/sync warns about {name}: {status}"
    );
}

#[test]
fn a_tampered_bundle_is_skipped_named_and_changes_nothing() {
    let (_a, b, _dir, bundle, news) = pair_with_news("sync-tampered");
    let mut bytes = fs::read(&bundle).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 0x01;
    fs::write(&bundle, &bytes).unwrap();
    assert_skipped_and_unchanged(&b, &bundle, &news);
}

#[test]
fn a_bundle_whose_header_was_edited_is_skipped_and_changes_nothing() {
    let (_a, b, _dir, bundle, news) = pair_with_news("sync-header");
    let mut bytes = fs::read(&bundle).unwrap();
    let length = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let header = String::from_utf8(bytes[16..16 + length].to_vec()).unwrap();
    let at = header.find("\"device_name\":\"").expect("a device name") + 15;
    // Same length, still JSON: only the sealed body's associated data can tell.
    bytes[16 + at] = if bytes[16 + at] == b'x' { b'y' } else { b'x' };
    fs::write(&bundle, &bytes).unwrap();
    assert_skipped_and_unchanged(&b, &bundle, &news);
}

#[test]
fn a_truncated_bundle_is_skipped_named_and_changes_nothing() {
    let (_a, b, _dir, bundle, news) = pair_with_news("sync-truncated");
    let bytes = fs::read(&bundle).unwrap();
    fs::write(&bundle, &bytes[..bytes.len() / 2]).unwrap();
    assert_skipped_and_unchanged(&b, &bundle, &news);
}

#[test]
fn a_bundle_written_for_a_newer_reader_is_skipped_telling_the_user_to_update() {
    let (_a, b, _dir, bundle, news) = pair_with_news("sync-newer");
    let mut bytes = fs::read(&bundle).unwrap();
    bytes[10..12].copy_from_slice(&2u16.to_be_bytes());
    fs::write(&bundle, &bytes).unwrap();
    let before = catalogue(&b);
    let report = sync_now(&b);
    assert_eq!(catalogue(&b), before, "B is unchanged");
    b.get(&format!("/api/hosts/{news}"))
        .assert_error(404, "HOST_NOT_FOUND");
    let name = bundle.file_name().unwrap().to_str().unwrap();
    let problem = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["file"] == name)
        .unwrap_or_else(|| panic!("{name} is skipped: {report}"))["problem"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert!(
        problem.contains("newer") || problem.contains("update"),
        "the problem says a newer version wrote it (docs/sync.md, the bundle file): {problem}"
    );
}

#[test]
fn sync_set_up_again_after_delete_on_the_same_folder_changes_nothing_and_reports_nothing() {
    let (a, b, dir) = pair("sync-again");
    a.new_host("one");
    b.new_host("two");
    round(&a, &b);
    sync_now(&b);
    let before = catalogue(&b);
    let b_id = device_id(&b);
    b.delete("/api/sync").expect(204);
    let answer = enable(&b, &dir);
    let report = &answer["report"];
    for list in [
        "added",
        "updated",
        "deleted",
        "resurrected",
        "conflicts",
        "skipped",
    ] {
        assert_eq!(report[list], json!([]), "{list}: {answer}");
    }
    assert_eq!(catalogue(&b), before, "the catalogue is unchanged");
    assert_eq!(answer["device_id"], b_id.as_str(), "the same device");
    let a_before = catalogue(&a);
    let a_feed = feed_head(&a);
    let report = sync_now(&a);
    assert_eq!(catalogue(&a), a_before, "A's catalogue is unchanged");
    let changes = a.get(&format!("/api/changes?since={a_feed}")).expect(200);
    assert_eq!(changes["items"], json!([]), "A logs no change: {changes}");
    for list in ["added", "updated", "deleted", "resurrected", "conflicts"] {
        assert_eq!(report[list], json!([]), "{list} on A: {report}");
    }
}

#[test]
fn edits_and_deletes_made_elsewhere_while_sync_was_off_here_win_over_the_unchanged_copies_here() {
    let (a, b, dir) = pair("sync-off-meanwhile");
    let edited = new_host_with(&a, "edited", json!({"notes": "old"}));
    let deleted = a.new_host("deleted");
    round(&a, &b);
    sync_now(&b);
    b.delete("/api/sync").expect(204);
    a.put(&format!("/api/hosts/{edited}"), &json!({"notes": "new"}))
        .expect(200);
    a.delete(&format!("/api/hosts/{deleted}")).expect(204);
    sync_now(&a);

    // B changed nothing while sync was off: A's edit and delete are the newer changes.
    enable(&b, &dir);
    sync_now(&a);
    sync_now(&b);
    for (name, side) in [("A", &a), ("B", &b)] {
        let notes = get_host(side, &edited)["notes"].clone();
        let gone = side.get(&format!("/api/hosts/{deleted}")).status;
        assert_eq!(
            (notes, gone),
            (json!("new"), 404),
            "{name}: A's edit kept and A's delete kept"
        );
    }
}

#[test]
fn a_put_while_enabled_with_a_wrong_passphrase_is_409_and_keeps_the_settings() {
    let (a, b, dir) = pair("sync-replace-settings");
    let status = b.get("/api/sync").expect(200);
    let body = json!({"dir": dir.to_str().unwrap(), "passphrase": "a different passphrase"});
    b.put("/api/sync", &body)
        .assert_error(409, "SYNC_PASSPHRASE_MISMATCH");
    let after = b.get("/api/sync").expect(200);
    assert_eq!(
        (&after["enabled"], &after["dir"]),
        (&status["enabled"], &status["dir"])
    );
    let host = a.new_host("still-syncing");
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "added", "host", &host), "{report}");

    // A PUT with another folder (empty) moves B there: its bundle is written there.
    let elsewhere = fresh_dir("sync-replace-settings-elsewhere");
    let answer = enable_with(&b, &elsewhere, "a different passphrase");
    assert_eq!(answer["dir"], elsewhere.to_str().unwrap());
    assert!(bundle_path(&elsewhere, &device_id(&b)).is_file());
}

#[test]
fn conflict_copies_of_a_bundle_merged_twice_change_nothing() {
    let (a, b, dir) = pair("sync-copies");
    let kept = a.new_host("kept");
    let removed = a.new_host("removed-later");
    sync_now(&a);
    let a_id = device_id(&a);
    let bundle = bundle_path(&dir, &a_id);
    for name in [
        format!("{a_id}.sync-conflict-20261128-101010-ABCDEFG.bundle"),
        format!("{a_id} (conflicted copy).bundle"),
    ] {
        fs::copy(&bundle, dir.join(name)).unwrap();
    }
    // A moves on: the copies are now older than A's own bundle.
    a.delete(&format!("/api/hosts/{removed}")).expect(204);
    a.put(&format!("/api/hosts/{kept}"), &json!({"notes": "newer"}))
        .expect(200);
    sync_now(&a);

    let first = sync_now(&b);
    assert_eq!(first["skipped"], json!([]), "{first}");
    assert_eq!(get_host(&b, &kept)["notes"], "newer");
    b.get(&format!("/api/hosts/{removed}"))
        .assert_error(404, "HOST_NOT_FOUND");
    let after_first = catalogue(&b);
    let feed = feed_head(&b);

    let second = sync_now(&b);
    for list in ["added", "updated", "deleted", "resurrected", "conflicts"] {
        assert_eq!(second[list], json!([]), "{list}: {second}");
    }
    assert_eq!(
        catalogue(&b),
        after_first,
        "the catalogue is as after the first merge"
    );
    let changes = b.get(&format!("/api/changes?since={feed}")).expect(200);
    assert_eq!(
        changes["items"],
        json!([]),
        "the change feed is as after the first merge"
    );
    sync_now(&a);
    assert_same_catalogue(&a, &b);
}

#[test]
fn a_writer_killed_mid_write_leaves_the_other_device_unaffected() {
    let (mut a, b, dir) = pair("sync-killed");
    a.new_host("before-kill");
    round(&a, &b);
    let a_id = device_id(&a);
    a.new_host("unsynced");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // What a crash mid-write can leave: a half-written temporary file beside A's bundle, and
    // (a tool that copies without renaming) a truncated bundle under A's own name.
    fs::write(
        dir.join(format!("{a_id}.bundle.tmp")),
        b"hm-sync\n\0\x01garbage",
    )
    .unwrap();
    let bundle = bundle_path(&dir, &a_id);
    let bytes = fs::read(&bundle).unwrap();
    fs::write(&bundle, &bytes[..bytes.len() * 2 / 3]).unwrap();

    let before = catalogue(&b);
    let report = sync_now(&b);
    assert_eq!(catalogue(&b), before, "B keeps everything it had");
    for list in ["added", "updated", "deleted"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
    let bundle_name = format!("{a_id}.bundle");
    let skipped = report["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|entry| entry["file"] == bundle_name.as_str()),
        "the truncated bundle is skipped: {report}"
    );
    assert!(
        !skipped
            .iter()
            .any(|entry| entry["file"] == format!("{a_id}.bundle.tmp").as_str()),
        "a temporary file is no bundle, so it is not even read: {report}"
    );
    let own = bundle_path(&dir, &device_id(&b));
    let own_before = fs::read(&own).unwrap();
    b.new_host("after-the-crash");
    let report = sync_now(&b);
    assert_eq!(
        report["written"],
        format!("{}.bundle", device_id(&b)).as_str(),
        "B still writes its own bundle: {report}"
    );
    assert_ne!(fs::read(&own).unwrap(), own_before, "with its new host");
}

// ---- the vault and restarts --------------------------------------------------------------

#[test]
fn sync_needs_the_vault_unlocked_and_goes_on_after_an_unlock_and_after_a_restart() {
    let dir = fresh_dir("sync-vault-folder");
    let a = device("sync-vault-a", None);
    let b_data = fresh_dir("sync-vault-b-data").join("data");
    let b = device("sync-vault-b", Some(b_data.clone()));
    enable(&a, &dir);
    enable(&b, &dir);
    let b_id = device_id(&b);

    b.post("/api/vault/lock", &json!({})).expect(200);
    b.post("/api/sync/now", &json!({}))
        .assert_error(401, "VAULT_LOCKED");
    b.post(
        "/api/vault/unlock",
        &json!({"password": "master of sync-vault-b 41d0"}),
    )
    .expect(200);
    let first = a.new_host("after-unlock");
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "added", "host", &first), "{report}");

    drop(b);
    let b = device_with_existing("sync-vault-b-again", b_data);
    b.post(
        "/api/vault/unlock",
        &json!({"password": "master of sync-vault-b 41d0"}),
    )
    .expect(200);
    let status = b.get("/api/sync").expect(200);
    assert_eq!(status["enabled"], true, "{status}");
    assert_eq!(
        status["device_id"],
        b_id.as_str(),
        "the same device after a restart"
    );
    let second = a.new_host("after-restart");
    sync_now(&a);
    let report = sync_now(&b);
    assert!(lists(&report, "added", "host", &second), "{report}");
    sync_now(&a);
    assert_same_catalogue(&a, &b);
}

/// Starts a device again on its data dir (its master password already set).
fn device_with_existing(name: &str, data_dir: PathBuf) -> Service {
    Service::start_with(
        name,
        Options {
            data_dir: Some(data_dir),
            env: vec![
                ("HOST_MANAGER_TEST_SYNC_POLL_MS".into(), "3600000".into()),
                (
                    "HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS".into(),
                    "3600000".into(),
                ),
            ],
            ..Options::default()
        },
    )
}

// ---- secrets in the folder ---------------------------------------------------------------

#[test]
fn no_file_in_the_sync_folder_holds_a_plaintext_secret_or_its_base64() {
    let (a, b, dir) = pair("sync-secrets");
    let work = fresh_dir("sync-secrets-work");
    let key_passphrase = "Sync-key-passphrase-5d2e".to_owned();
    let encrypted = ssh_keygen(&work, "encrypted", &key_passphrase);
    let plain = ssh_keygen(&work, "plain", "");
    let host_password = "Sync-host-password-0b7f".to_owned();
    let identity_password = "Sync-identity-password-a43c".to_owned();
    let literal = "Sync-literal-answer-66e1".to_owned();
    let env_secret = "Sync-env-secret-value-c9d8".to_owned();
    let group_env_secret = "Sync-group-env-secret-1f3a".to_owned();
    let totp_raw = b"Sync-totp-raw-7720".to_vec();

    let mut secrets: Vec<Vec<u8>> = [
        &key_passphrase,
        &host_password,
        &identity_password,
        &literal,
        &env_secret,
        &group_env_secret,
    ]
    .iter()
    .map(|secret| secret.as_bytes().to_vec())
    .collect();
    for text in [&encrypted, &plain] {
        for line in text
            .lines()
            .filter(|line| line.len() >= 40 && !line.starts_with("-----"))
        {
            secrets.push(line.as_bytes().to_vec());
        }
    }
    let totp_base32 = base32(&totp_raw);
    secrets.push(totp_raw.clone());
    secrets.push(totp_base32.as_bytes().to_vec());

    let key = id_of(
        &a.post(
            "/api/keys",
            &json!({"name": "enc", "private_key": encrypted, "passphrase": key_passphrase}),
        )
        .expect(201),
    );
    a.post("/api/keys", &json!({"name": "plain", "private_key": plain}))
        .expect(201);
    let group = id_of(
        &a.post(
            "/api/groups",
            &json!({"name": "g", "defaults": {"set_env": [
                {"name": "G_TOKEN", "value": group_env_secret, "secret": true}]}}),
        )
        .expect(201),
    );
    new_host_with(
        &a,
        "pw",
        json!({"group_id": group, "auth": {"type": "password", "password": host_password},
            "set_env": [{"name": "TOKEN", "value": env_secret, "secret": true}]}),
    );
    new_host_with(&a, "key", json!({"auth": {"type": "key", "key_id": key}}));
    a.post(
        "/api/identities",
        &json!({"name": "secretive", "totp": {"secret": totp_base32},
            "auth": [{"type": "password", "password": identity_password},
                {"type": "keyboard_interactive", "answers": [
                    {"prompt": "^Site:", "answer": {"type": "literal", "literal": literal}}]}]}),
    )
    .expect(201);
    round(&a, &b);
    assert_same_catalogue(&a, &b);

    let files = read_all_files(&dir);
    assert!(files.len() >= 2, "both bundles are scanned: {files:?}");
    let secrets: Vec<&[u8]> = secrets.iter().map(|secret| secret.as_ref()).collect();
    assert_no_leak(&files, &secrets);
}

/// RFC 4648 base32 without padding (what TOTP secrets are pasted as).
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let bits: String = bytes.iter().map(|byte| format!("{byte:08b}")).collect();
    bits.as_bytes()
        .chunks(5)
        .map(|chunk| {
            let value = (0..5).fold(0usize, |value, index| {
                value * 2 + usize::from(chunk.get(index) == Some(&b'1'))
            });
            ALPHABET[value] as char
        })
        .collect()
}

// ---- bundle backups ----------------------------------------------------------------------

/// `POST /api/export/bundle` with `passphrase`: the file's bytes.
fn export_bundle(service: &Service, passphrase: &str) -> Vec<u8> {
    let answer = service.post("/api/export/bundle", &json!({ "passphrase": passphrase }));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(
        answer.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(answer.header("cache-control"), Some("no-store"));
    assert_eq!(
        answer.header("content-disposition"),
        Some("attachment; filename=\"host-manager.bundle\"")
    );
    assert!(answer.body.starts_with(b"hm-sync\n"), "a bundle file");
    answer.body
}

fn import_body(bundle: &[u8], passphrase: &str, mode: &str, dry_run: bool) -> Value {
    json!({"bundle_base64": crate::support::base64(bundle, b"+/"), "passphrase": passphrase,
        "mode": mode, "dry_run": dry_run})
}

/// A device with a little of everything, some of it secret.
fn stocked(name: &str) -> (Service, String) {
    let a = device(name, None);
    let group = a.new_group("exported");
    let host = new_host_with(
        &a,
        "exported-host",
        json!({"group_id": group, "tags": ["t"],
            "auth": {"type": "password", "password": "exported-password"}}),
    );
    a.new_key("exported-key");
    a.post("/api/searches", &json!({"name": "mine", "q": "tag:t"}))
        .expect(201);
    (a, host)
}

#[test]
fn an_exported_bundle_imports_into_a_fresh_service_by_merge_and_by_replace_and_a_dry_run_changes_nothing(
) {
    let (a, host) = stocked("bundle-export");
    let passphrase = "backup passphrase 51";
    let bundle = export_bundle(&a, passphrase);

    let fresh = device("bundle-import-merge", None);
    let empty = catalogue(&fresh);
    let dry = fresh
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "merge", true),
        )
        .expect(200);
    assert!(lists(&dry, "added", "host", &host), "{dry}");
    assert_eq!(catalogue(&fresh), empty, "a dry run writes nothing");
    let report = fresh
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "merge", false),
        )
        .expect(200);
    assert!(lists(&report, "added", "host", &host), "{report}");
    assert_same_catalogue(&a, &fresh);
    assert_eq!(
        connect(&fresh, &host)["credentials"]["password"],
        "exported-password"
    );
    for form in leak_forms(b"exported-password") {
        assert!(
            !contains_bytes(&bundle, &form),
            "the password in the exported file"
        );
    }
    // Merge keeps the values here; replace takes the bundle's.
    fresh
        .put(
            &format!("/api/hosts/{host}"),
            &json!({"notes": "edited here"}),
        )
        .expect(200);
    fresh
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "merge", false),
        )
        .expect(200);
    assert_eq!(get_host(&fresh, &host)["notes"], "edited here");
    fresh
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "replace", false),
        )
        .expect(200);
    assert_eq!(get_host(&fresh, &host)["notes"], "");

    // Merge keeps what the target had; replace leaves exactly the bundle's catalogue.
    let other = device("bundle-import-replace", None);
    let own = other.new_host("own");
    let merged = device("bundle-import-merge-own", None);
    let merged_own = merged.new_host("own");
    merged
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "merge", false),
        )
        .expect(200);
    assert_eq!(
        get_host(&merged, &merged_own)["name"],
        "own",
        "merge keeps the target's host"
    );
    get_host(&merged, &host);

    let before = catalogue(&other);
    let dry = other
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "replace", true),
        )
        .expect(200);
    assert!(lists(&dry, "deleted", "host", &own), "{dry}");
    assert_eq!(catalogue(&other), before, "a dry run writes nothing");
    other
        .post(
            "/api/import/bundle",
            &import_body(&bundle, passphrase, "replace", false),
        )
        .expect(200);
    other
        .get(&format!("/api/hosts/{own}"))
        .assert_error(404, "HOST_NOT_FOUND");
    assert_same_catalogue(&a, &other);
}

#[test]
fn importing_a_bundle_with_a_wrong_passphrase_is_409_and_garbage_is_400() {
    let (a, _host) = stocked("bundle-refused");
    let bundle = export_bundle(&a, "backup passphrase 52");
    let target = device("bundle-refused-target", None);
    target.new_host("own");
    let before = catalogue(&target);

    target
        .post(
            "/api/import/bundle",
            &import_body(&bundle, "not the passphrase", "merge", false),
        )
        .assert_error(409, "SYNC_PASSPHRASE_MISMATCH");
    let garbage: Vec<u8> = (0..4096u32).map(|n| (n * 7919 % 251) as u8).collect();
    target
        .post(
            "/api/import/bundle",
            &import_body(&garbage, "backup passphrase 52", "merge", false),
        )
        .assert_error(400, "BUNDLE_DAMAGED");
    let truncated = &bundle[..bundle.len() - 100];
    target
        .post(
            "/api/import/bundle",
            &import_body(truncated, "backup passphrase 52", "replace", false),
        )
        .assert_error(400, "BUNDLE_DAMAGED");
    let mut bad = import_body(&bundle, "backup passphrase 52", "merge", false);
    bad["bundle_base64"] = json!("not base64 at all!");
    target
        .post("/api/import/bundle", &bad)
        .assert_error(400, "VALIDATION_ERROR");
    let mut bad = import_body(&bundle, "backup passphrase 52", "merge", false);
    bad["mode"] = json!("overwrite");
    target
        .post("/api/import/bundle", &bad)
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(catalogue(&target), before, "nothing changed");
}

// ---- the automatic path ------------------------------------------------------------------

#[test]
fn a_host_created_on_one_device_reaches_the_other_without_sync_now() {
    let fast = [
        ("HOST_MANAGER_TEST_SYNC_POLL_MS", "100"),
        ("HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS", "50"),
    ];
    let dir = fresh_dir("sync-auto-folder");
    let a = device_with("sync-auto-a", None, &fast);
    let b = device_with("sync-auto-b", None, &fast);
    enable(&a, &dir);
    enable(&b, &dir);
    let host = a.new_host("automatic");
    let path = format!("/api/hosts/{host}");
    assert!(
        wait_until(EVENT_DEADLINE, || b.get(&path).status == 200),
        "B gets A's new host from the folder by itself"
    );
    assert_eq!(get_host(&b, &host)["name"], "automatic");
}

/// A request that writes while a cycle runs (between the cycle's read of the catalogue and
/// its apply) is never lost: the cycle starts again rather than write over it. The cycles
/// run back to back here (10 ms apart) while B takes edits one after another.
#[test]
fn edits_made_while_cycles_run_all_reach_the_other_device() {
    let fast = [
        ("HOST_MANAGER_TEST_SYNC_POLL_MS", "10"),
        ("HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS", "1"),
    ];
    let dir = fresh_dir("sync-race-folder");
    let a = device_with("sync-race-a", None, &fast);
    let b = device_with("sync-race-b", None, &fast);
    let hosts: Vec<String> = (0..60).map(|n| a.new_host(&format!("race-{n}"))).collect();
    enable(&a, &dir);
    enable(&b, &dir);
    assert!(
        wait_until(EVENT_DEADLINE, || hosts
            .iter()
            .all(|host| b.get(&format!("/api/hosts/{host}")).status == 200)),
        "B has A's hosts"
    );
    for (n, host) in hosts.iter().enumerate() {
        b.put(
            &format!("/api/hosts/{host}"),
            &json!({"notes": format!("edit {n}")}),
        )
        .expect(200);
    }
    let missing = || -> Vec<usize> {
        (0..hosts.len())
            .filter(|n| get_host(&a, &hosts[*n])["notes"] != json!(format!("edit {n}")))
            .collect()
    };
    assert!(
        wait_until(EVENT_DEADLINE, || missing().is_empty()),
        "every edit made on B while cycles ran reaches A; missing: {:?}",
        missing()
    );
}

/// The passphrase is at least 8 characters (not bytes: 7 two-byte characters are refused)
/// and at most 1,024 bytes; a device name 1 to 64 characters. Each edge on both sides, on
/// `PUT /api/sync` and on the bundle export.
#[test]
fn the_passphrase_and_device_name_rules_hold_at_their_edges() {
    let a = device("sync-edges", None);
    let put = |passphrase: &str, name: Option<String>| {
        let dir = fresh_dir("sync-edges-folder");
        let mut body = json!({"dir": dir.to_str().unwrap(), "passphrase": passphrase});
        if let Some(name) = name {
            body["device_name"] = json!(name);
        }
        a.put("/api/sync", &body)
    };
    let refused = |answer: crate::support::Response, field: &str| {
        let error = answer.assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"]
                .as_str()
                .unwrap_or_default()
                .starts_with(field),
            "{error}"
        );
    };
    refused(put("1234567", None), "passphrase");
    refused(put(&"é".repeat(7), None), "passphrase");
    put(&"é".repeat(8), None).expect(200);
    put("12345678", None).expect(200);
    put(&"x".repeat(1024), None).expect(200);
    refused(put(&"x".repeat(1025), None), "passphrase");
    put(PASSPHRASE, Some("n".repeat(64))).expect(200);
    refused(put(PASSPHRASE, Some("n".repeat(65))), "device_name");
    refused(put(PASSPHRASE, Some("   ".into())), "device_name");
    let export =
        |passphrase: &str| a.post("/api/export/bundle", &json!({ "passphrase": passphrase }));
    refused(export("1234567"), "passphrase");
    assert_eq!(export("12345678").status, 200);
}
