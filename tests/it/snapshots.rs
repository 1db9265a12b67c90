//! Snapshots of the catalogue (docs/api.md, "Snapshots"; docs/reliability.md, "Snapshots"):
//! taken on request and before every import and batch delete, listed, deleted, pruned, and
//! restored (undoably) with their secrets; their files are owner-only and hold no plaintext.

use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};

#[cfg(unix)]
use crate::support::{assert_no_leak, read_all_files};
use crate::support::{contains_bytes, id_of, Service};

fn snapshots(service: &Service) -> Vec<Value> {
    service.get("/api/snapshots").expect(200)["items"]
        .as_array()
        .unwrap()
        .clone()
}

fn take(service: &Service, label: Option<&str>) -> Value {
    let body = match label {
        Some(label) => json!({ "label": label }),
        None => json!({}),
    };
    service.post("/api/snapshots", &body).expect(201)
}

fn restore(service: &Service, id: &str) -> Value {
    service
        .request("POST", &format!("/api/snapshots/{id}/restore"), None)
        .expect(200)
}

fn snapshot_dir(service: &Service) -> PathBuf {
    service.data_dir.join("snapshots")
}

fn password_host(service: &Service, name: &str, password: &str, group: Option<&str>) -> String {
    let body = json!({"name": name, "hostname": "example.org", "port": 22, "username": "u",
        "group_id": group, "auth": {"type": "password", "password": password}});
    id_of(&service.post("/api/hosts", &body).expect(201))
}

fn connect_password(service: &Service, host: &str) -> Value {
    service
        .request("POST", &format!("/api/hosts/{host}/connect"), None)
        .expect(200)["credentials"]["password"]
        .clone()
}

fn reasons(service: &Service) -> Vec<String> {
    snapshots(service)
        .iter()
        .map(|item| item["reason"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_snapshot_is_listed_with_its_label_reason_and_counts_and_deleting_it_removes_its_file() {
    let service = Service::start("snapshots-list");
    assert!(snapshots(&service).is_empty());
    service.new_host("one");
    service.new_group("g");
    let taken = take(&service, Some("  before the cleanup "));
    assert_eq!(taken["label"], "before the cleanup");
    assert_eq!(taken["reason"], "manual");
    assert_eq!(
        taken["counts"],
        json!({"hosts": 1, "groups": 1, "keys": 0, "identities": 0})
    );
    assert!(taken["size_bytes"].as_i64().unwrap() > 0, "{taken}");
    assert_eq!(snapshots(&service), vec![taken.clone()]);
    let id = id_of(&taken);
    let file = snapshot_dir(&service).join(format!("{id}.sqlite"));
    assert!(file.is_file());
    service.delete(&format!("/api/snapshots/{id}")).expect(204);
    assert!(!file.exists());
    assert!(snapshots(&service).is_empty());
    service
        .delete(&format!("/api/snapshots/{id}"))
        .assert_error(404, "SNAPSHOT_NOT_FOUND");
    service
        .request("POST", &format!("/api/snapshots/{id}/restore"), None)
        .assert_error(404, "SNAPSHOT_NOT_FOUND");
}

#[test]
fn a_label_of_100_characters_is_taken_and_101_characters_or_a_blank_one_is_refused() {
    let service = Service::start("snapshots-label");
    let longest = "l".repeat(100);
    assert_eq!(take(&service, Some(&longest))["label"], longest.as_str());
    for bad in [json!("l".repeat(101)), json!("   "), json!(7)] {
        let refused = service
            .post("/api/snapshots", &json!({ "label": bad }))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            refused["details"].as_str().unwrap().starts_with("label"),
            "{refused}"
        );
    }
    assert_eq!(snapshots(&service).len(), 1);
    // No body at all is a snapshot without a label.
    let bare = service.request("POST", "/api/snapshots", None).expect(201);
    assert_eq!(bare["label"], Value::Null);
}

#[test]
fn a_restore_brings_back_deleted_hosts_groups_keys_and_identities_with_their_secrets() {
    let service = Service::start("snapshots-restore");
    let group = service.new_group("servers");
    let key = service.new_key("deploy");
    let identity = id_of(
        &service
            .post(
                "/api/identities",
                &json!({"name": "ops", "username": "ops",
                    "auth": [{"type": "password", "password": "Ident-pw-restore"}]}),
            )
            .expect(201),
    );
    let host = password_host(&service, "web", "Host-pw-restore", Some(&group));
    let taken = take(&service, None);
    for path in [
        format!("/api/hosts/{host}"),
        format!("/api/groups/{group}"),
        format!("/api/keys/{key}"),
        format!("/api/identities/{identity}"),
    ] {
        service.delete(&path).expect(204);
    }
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 0);
    let answer = restore(&service, &id_of(&taken));
    assert_eq!(
        answer["before"],
        json!({"hosts": 0, "groups": 0, "keys": 0, "identities": 0})
    );
    assert_eq!(
        answer["after"],
        json!({"hosts": 1, "groups": 1, "keys": 1, "identities": 1})
    );
    for path in [
        format!("/api/hosts/{host}"),
        format!("/api/groups/{group}"),
        format!("/api/keys/{key}"),
        format!("/api/identities/{identity}"),
    ] {
        service.get(&path).expect(200);
    }
    assert_eq!(connect_password(&service, &host), "Host-pw-restore");
    // The list's memory was read again: the host is listed, in its group.
    let listed = service.get("/api/hosts").expect(200);
    assert_eq!(listed["total"], 1, "{listed}");
    let tree = service.get("/api/groups").expect(200);
    assert!(tree.to_string().contains("servers"), "{tree}");
}

#[test]
fn a_restore_is_undone_by_restoring_the_restore_snapshot_it_took() {
    let service = Service::start("snapshots-undo");
    let kept = service.new_host("kept");
    let taken = take(&service, None);
    let later = password_host(&service, "later", "Later-pw", None);
    let answer = restore(&service, &id_of(&taken));
    assert_eq!(answer["undo"]["reason"], "restore");
    assert_eq!(answer["undo"]["counts"]["hosts"], 2);
    service
        .get(&format!("/api/hosts/{later}"))
        .assert_error(404, "HOST_NOT_FOUND");
    service.get(&format!("/api/hosts/{kept}")).expect(200);
    restore(&service, &id_of(&answer["undo"]));
    assert_eq!(connect_password(&service, &later), "Later-pw");
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 2);
}

#[test]
fn after_a_restore_every_window_following_the_change_feed_is_told_to_reload() {
    let service = Service::start("snapshots-feed");
    service.new_host("a");
    let taken = take(&service, None);
    service.new_host("b");
    let cursor = service.get("/api/changes").expect(200)["next"].clone();
    restore(&service, &id_of(&taken));
    let page = service
        .get(&format!("/api/changes?since={cursor}"))
        .expect(200);
    assert_eq!(page["reset"], true, "{page}");
    // Followed from its `next`, the feed goes on with the next change.
    let next = page["next"].clone();
    service.new_host("c");
    let after = service
        .get(&format!("/api/changes?since={next}"))
        .expect(200);
    assert_eq!(after["reset"], false, "{after}");
    assert_eq!(after["items"][0]["op"], "created", "{after}");
}

#[test]
fn an_import_and_a_batch_delete_take_an_automatic_snapshot_and_their_dry_runs_and_edits_do_not() {
    let service = Service::start("snapshots-automatic");
    let config = "Host imported\n  HostName imported.example.com\n  User u\n";
    service
        .post(
            "/api/import/ssh-config",
            &json!({"config": config, "dry_run": true}),
        )
        .expect(200);
    assert!(reasons(&service).is_empty());
    service
        .post("/api/import/ssh-config", &json!({ "config": config }))
        .expect(200);
    assert_eq!(reasons(&service), ["import"]);
    let snapshot = &snapshots(&service)[0];
    assert_eq!(snapshot["counts"]["hosts"], 0, "taken before the import");
    let host = service.new_host("doomed");
    service
        .post(
            "/api/hosts/batch",
            &json!({"ids": [host], "delete": true, "dry_run": true}),
        )
        .expect(200);
    service
        .post(
            "/api/hosts/batch",
            &json!({"ids": [host], "ops": {"port": 2222}}),
        )
        .expect(200);
    assert_eq!(reasons(&service), ["import"]);
    service
        .post("/api/hosts/batch", &json!({"ids": [host], "delete": true}))
        .expect(200);
    assert_eq!(reasons(&service), ["batch_delete", "import"]);
    service
        .post(
            "/api/import/known-hosts",
            &json!({"text": "", "dry_run": true}),
        )
        .expect(200);
    assert_eq!(snapshots(&service).len(), 2);
}

#[test]
fn retention_prunes_the_oldest_automatic_snapshot_past_ten_and_keeps_manual_ones() {
    let service = Service::start("snapshots-retention");
    let manual = id_of(&take(&service, Some("mine")));
    let import = |n: usize| {
        let config = format!("Host h{n}\n  HostName h{n}.example.com\n  User u\n");
        service
            .post("/api/import/ssh-config", &json!({ "config": config }))
            .expect(200);
    };
    import(0);
    let oldest = id_of(&snapshots(&service)[0]);
    for n in 1..=10 {
        import(n);
    }
    let items = snapshots(&service);
    let ids: Vec<String> = items.iter().map(id_of).collect();
    assert_eq!(items.len(), 11, "ten automatic and the manual one");
    assert!(!ids.contains(&oldest), "the oldest automatic went");
    assert!(ids.contains(&manual), "the manual one stays");
    let files = fs::read_dir(snapshot_dir(&service)).unwrap().count();
    assert_eq!(files, 11, "one file per snapshot");
    assert!(!snapshot_dir(&service)
        .join(format!("{oldest}.sqlite"))
        .exists());
}

#[test]
fn a_snapshot_sealed_under_another_vault_key_is_refused_and_nothing_changes() {
    let other = Service::start("snapshots-other-key-a");
    password_host(&other, "foreign", "Foreign-pw", None);
    let foreign = id_of(&take(&other, None));
    let service = Service::start("snapshots-other-key-b");
    let mine = password_host(&service, "mine", "Mine-pw", None);
    let taken = id_of(&take(&service, None));
    fs::copy(
        snapshot_dir(&other).join(format!("{foreign}.sqlite")),
        snapshot_dir(&service).join(format!("{taken}.sqlite")),
    )
    .unwrap();
    let refused = service
        .request("POST", &format!("/api/snapshots/{taken}/restore"), None)
        .assert_error(409, "SNAPSHOT_INCOMPATIBLE");
    assert!(
        refused["details"].as_str().unwrap().contains("vault key"),
        "{refused}"
    );
    assert_eq!(connect_password(&service, &mine), "Mine-pw");
    assert_eq!(
        snapshots(&service).len(),
        1,
        "no restore snapshot was taken"
    );
}

/// The snapshot files are mode 0600 in a 0700 directory, as the database itself.
#[cfg(unix)]
#[test]
fn snapshot_files_are_owner_only_and_hold_no_plaintext_secret() {
    use std::os::unix::fs::PermissionsExt;
    let service = Service::start("snapshots-private");
    let secrets = ["Snap-host-pw-7d1e", "Snap-ident-pw-02fa"];
    password_host(&service, "h", secrets[0], None);
    service
        .post(
            "/api/identities",
            &json!({"name": "i", "auth": [{"type": "password", "password": secrets[1]}]}),
        )
        .expect(201);
    let id = id_of(&take(&service, None));
    let dir = snapshot_dir(&service);
    let mode = |path: &PathBuf| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(format!("{id}.sqlite"))), 0o600);
    let files = read_all_files(&dir);
    assert_eq!(files.len(), 1);
    assert_no_leak(&files, &secrets.map(str::as_bytes));
}

/// A snapshot holds sealed secrets only, never the vault's data key (stored in the clear
/// while no master password is set): a master password set later protects the snapshots
/// as it protects the database, and a restore still opens their secrets with this vault.
#[test]
fn a_snapshot_holds_no_data_key_so_a_master_password_set_later_protects_it() {
    let service = Service::start("snapshots-no-key");
    let host = password_host(&service, "h", "Snap-key-pw-5c2a", None);
    let id = id_of(&take(&service, None));
    let live = rusqlite::Connection::open(service.data_dir.join("host-manager.db")).unwrap();
    let key: Vec<u8> = live
        .query_row("SELECT data_key FROM vault", [], |row| row.get(0))
        .unwrap();
    assert!(key.len() >= 32, "the vault holds its data key");
    let file = snapshot_dir(&service).join(format!("{id}.sqlite"));
    let bytes = fs::read(&file).unwrap();
    assert!(
        !contains_bytes(&bytes, &key),
        "the data key is in the snapshot file"
    );
    let copy = rusqlite::Connection::open(&file).unwrap();
    let rows: i64 = copy
        .query_row("SELECT count(*) FROM vault", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 0, "the snapshot has no vault row");
    drop(copy);
    service.delete(&format!("/api/hosts/{host}")).expect(204);
    service
        .post(&format!("/api/snapshots/{id}/restore"), &json!({}))
        .expect(200);
    let connect = service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200);
    assert!(
        connect.to_string().contains("Snap-key-pw-5c2a"),
        "{connect}"
    );
}

/// A batch delete whose snapshot does not fit on the disk answers 507 and deletes nothing.
/// The data dir is a 1 MiB tmpfs in a mount namespace of the service's own (as the full-disk
/// tests of hosts.rs). 85 hosts of 2,000 characters of notes make a database of about
/// 600 KB (7 KB a host, measured); after each create a host with a password is created and
/// deleted, whose scrub checkpoints the WAL away. What is left (about 380 KB) is room for
/// deleting one host (a few pages of WAL), not for a copy of the database.
#[cfg(target_os = "linux")]
#[test]
fn a_batch_delete_whose_snapshot_meets_a_full_disk_answers_507_and_deletes_nothing() {
    use crate::support::{fresh_dir, Options};
    let name = "snapshots-disk-full";
    let data_dir = fresh_dir(name).join("data");
    fs::create_dir(&data_dir).unwrap();
    let service = Service::start_with(
        name,
        Options {
            data_dir: Some(data_dir),
            shell_prefix: Some(
                "exec unshare --user --map-root-user --mount sh -c \
                 'mount -t tmpfs -o size=1m,mode=0700 tmpfs \"$3\" && exec \"$@\"'"
                    .into(),
            ),
            ..Options::default()
        },
    );
    let mut ids = Vec::new();
    for n in 0..85 {
        let body = json!({"name": format!("h{n}"), "hostname": "example.org", "port": 22,
            "username": "u", "notes": "n".repeat(2_000), "auth": {"type": "agent"}});
        let created = service.post("/api/hosts", &body);
        assert_eq!(created.status, 201, "host {n}");
        ids.push(id_of(&created.json()));
        let scrubbed = password_host(&service, "scrub", "Scrub-pw", None);
        service
            .delete(&format!("/api/hosts/{scrubbed}"))
            .expect(204);
    }
    service
        .post(
            "/api/hosts/batch",
            &json!({"ids": [ids[0]], "delete": true}),
        )
        .assert_error(507, "STORAGE_FULL");
    assert_eq!(service.get("/api/hosts").expect(200)["total"], ids.len());
    assert!(snapshots(&service).is_empty(), "no snapshot is listed");
}

#[test]
fn restoring_one_host_brings_it_back_as_it_was_and_leaves_every_other_record_as_it_is() {
    let service = Service::start("snapshots-one-host");
    let group = service.new_group("servers");
    let deleted = password_host(&service, "deleted", "Deleted-pw", Some(&group));
    service
        .put(
            &format!("/api/hosts/{deleted}"),
            &json!({"tags": ["prod", "db"]}),
        )
        .expect(200);
    let edited = service.new_host("edited");
    let taken = id_of(&take(&service, None));
    service.delete(&format!("/api/hosts/{deleted}")).expect(204);
    service
        .put(&format!("/api/hosts/{edited}"), &json!({"name": "renamed"}))
        .expect(200);
    let added = service.new_host("added");
    let path = format!("/api/snapshots/{taken}/restore");
    let answer = service
        .post(&path, &json!({ "hosts": [deleted] }))
        .expect(200);
    assert_eq!(answer["before"]["hosts"], 2);
    assert_eq!(answer["after"]["hosts"], 3);
    let back = service.get(&format!("/api/hosts/{deleted}")).expect(200);
    assert_eq!(
        (back["tags"].clone(), back["group_id"].clone()),
        (json!(["prod", "db"]), json!(group))
    );
    assert_eq!(connect_password(&service, &deleted), "Deleted-pw");
    let still = service.get(&format!("/api/hosts/{edited}")).expect(200);
    assert_eq!(still["name"], "renamed", "only the named host is restored");
    service
        .post(&path, &json!({ "hosts": [edited] }))
        .expect(200);
    assert_eq!(
        service.get(&format!("/api/hosts/{edited}")).expect(200)["name"],
        "edited"
    );
    service.get(&format!("/api/hosts/{added}")).expect(200);
    let listed = service.get("/api/hosts?tag=db").expect(200);
    assert_eq!(
        listed["total"], 1,
        "the list knows the restored host: {listed}"
    );
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 3);
}

#[test]
fn a_hosts_restore_names_1_to_1000_hosts_of_the_snapshot_once_each_and_needs_their_group() {
    let service = Service::start("snapshots-hosts-edges");
    let group = service.new_group("gone");
    let host = password_host(&service, "h", "H-pw", Some(&group));
    let taken = id_of(&take(&service, None));
    let path = format!("/api/snapshots/{taken}/restore");
    let too_many: Vec<String> = (0..1001).map(|n| format!("id-{n}")).collect();
    for bad in [
        json!([]),
        json!([host, host]),
        json!(too_many),
        json!("h"),
        json!([1]),
    ] {
        service
            .post(&path, &json!({ "hosts": bad }))
            .assert_error(400, "VALIDATION_ERROR");
    }
    service
        .post(&path, &json!({"hosts": ["not-in-the-snapshot"]}))
        .assert_error(404, "HOST_NOT_FOUND");
    service.delete(&format!("/api/groups/{group}")).expect(204);
    service.delete(&format!("/api/hosts/{host}")).expect(204);
    let refused = service
        .post(&path, &json!({ "hosts": [host] }))
        .assert_error(409, "SNAPSHOT_INCOMPATIBLE");
    assert!(
        refused["details"].as_str().unwrap().contains("group"),
        "{refused}"
    );
    service
        .get(&format!("/api/hosts/{host}"))
        .assert_error(404, "HOST_NOT_FOUND");
    let most: Vec<String> = (0..1000).map(|n| format!("id-{n}")).collect();
    service
        .post(&path, &json!({ "hosts": most }))
        .assert_error(404, "HOST_NOT_FOUND");
    assert_eq!(
        reasons(&service),
        ["manual"],
        "a failed restore keeps no snapshot"
    );
}

/// A snapshot taken at an older schema is migrated on a private copy, then restored. The
/// older schema is made from a snapshot by undoing sql/0018_sync.sql (drop its tables,
/// one version back), so this holds while that file is the newest migration.
#[test]
fn a_snapshot_from_an_older_schema_is_migrated_on_a_copy_and_restored() {
    let service = Service::start("snapshots-older");
    let host = password_host(&service, "old", "Old-pw", None);
    let taken = id_of(&take(&service, None));
    let file = snapshot_dir(&service).join(format!("{taken}.sqlite"));
    {
        let conn = rusqlite::Connection::open(&file).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        conn.execute_batch(&format!(
            "DROP TABLE sync_settings; DROP TABLE sync_peers; DROP TABLE sync_files; \
             DROP TABLE sync_unapplied; DROP TABLE sync_conflicts; PRAGMA user_version = {};",
            version - 1
        ))
        .unwrap();
        let db = rusqlite::Connection::open(service.data_dir.join("host-manager.db")).unwrap();
        db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        db.execute(
            "UPDATE snapshots SET schema_version = ?1 WHERE id = ?2",
            rusqlite::params![version - 1, taken],
        )
        .unwrap();
    }
    service.delete(&format!("/api/hosts/{host}")).expect(204);
    let answer = restore(&service, &taken);
    assert_eq!(answer["after"]["hosts"], 1, "{answer}");
    assert_eq!(connect_password(&service, &host), "Old-pw");
    let left: Vec<String> = fs::read_dir(snapshot_dir(&service))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().all(|name| name.ends_with(".sqlite")),
        "the migrated copy is removed: {left:?}"
    );
}
