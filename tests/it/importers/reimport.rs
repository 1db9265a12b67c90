//! Re-import (docs/import.md, "Re-import: what the source owns, and what stays yours"),
//! through the `csv` format: twice is nothing new, a dry run writes nothing and answers what
//! the import does, a changed source updates only what it changed, an edit made here is kept
//! and reported, a host deleted here is not brought back, an identical host already here is
//! not duplicated, and passwords follow the same rules without ever leaving the vault.

use serde_json::{json, Value};

use super::{import, item};
use crate::support::{contains_bytes, leak_forms, read_all_files, Service};

const HEADER: &str =
    "name,hostname,port,username,auth,password,group_path,tags,notes,proxy_jump\r\n";

/// A CSV of `rows` under our header.
fn csv(rows: &[&str]) -> Value {
    let mut text = String::from(HEADER);
    for row in rows {
        text.push_str(row);
        text.push_str("\r\n");
    }
    json!({"name": "hosts.csv", "content": text})
}

fn run(service: &Service, rows: &[&str], extra: Value) -> Value {
    import(service, "csv", vec![csv(rows)], extra).expect(200)
}

fn host_count(service: &Service) -> usize {
    service.get("/api/hosts?limit=1000").expect(200)["items"]
        .as_array()
        .unwrap()
        .len()
}

/// The groups of a tree answer (`GET /api/groups`), at every depth.
fn group_count(items: &Value) -> usize {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|group| 1 + group_count(&group["children"]))
        .sum()
}

const WEB: &str = "web,web.example.com,22,deploy,agent,,Prod/Web,prod;web,first note,";
const DB: &str = "db,db.example.com,5432,postgres,agent,,Prod,prod,,";

#[test]
fn importing_the_same_file_twice_creates_nothing_the_second_time() {
    let service = Service::start("reimport-twice");
    let first = run(&service, &[WEB, DB], json!({}));
    assert_eq!(first["summary"]["created"], 2, "{first:#}");
    assert_eq!(first["summary"]["groups_created"], 2, "{first:#}");
    let second = run(&service, &[WEB, DB], json!({}));
    assert_eq!(second["summary"]["created"], 0, "{second:#}");
    assert_eq!(second["summary"]["unchanged"], 2, "{second:#}");
    assert_eq!(second["summary"]["groups_created"], 0, "{second:#}");
    for source_id in ["Prod/Web/web", "Prod/db"] {
        assert_eq!(
            item(&second, source_id)["id"],
            item(&first, source_id)["id"]
        );
    }
    assert_eq!(host_count(&service), 2);
    assert_eq!(
        group_count(&service.get("/api/groups").expect(200)["items"]),
        2
    );
    // The fingerprint names the same files.
    assert_eq!(
        first["source"]["fingerprint"],
        second["source"]["fingerprint"]
    );
    assert!(first["source"]["fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
}

#[test]
fn a_dry_run_writes_nothing_and_answers_what_the_import_then_does() {
    let service = Service::start("reimport-dry");
    let dry = run(&service, &[WEB, DB], json!({"dry_run": true}));
    assert_eq!(dry["dry_run"], true);
    assert_eq!(host_count(&service), 0);
    assert_eq!(
        group_count(&service.get("/api/groups").expect(200)["items"]),
        0
    );
    assert!(
        item(&dry, "Prod/db")["id"].is_null(),
        "a dry run's new items have no id"
    );
    let real = run(&service, &[WEB, DB], json!({}));
    let statuses = |answer: &Value| -> Vec<(String, String)> {
        answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| (item["source_id"].to_string(), item["status"].to_string()))
            .collect()
    };
    assert_eq!(statuses(&dry), statuses(&real));
    assert_eq!(dry["summary"], real["summary"]);
    // A dry run of a changed source leaves the stored host as it was.
    let moved = "db,db.example.com,6543,postgres,agent,,Prod,prod,,";
    let dry = run(&service, &[WEB, moved], json!({"dry_run": true}));
    assert_eq!(item(&dry, "Prod/db")["status"], "updated");
    let id = item(&real, "Prod/db")["id"].as_str().unwrap().to_owned();
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200)["port"],
        5432
    );
}

#[test]
fn a_changed_source_updates_only_the_fields_it_changed() {
    let service = Service::start("reimport-changed");
    let first = run(&service, &[WEB], json!({}));
    let id = item(&first, "Prod/Web/web")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/hosts/{id}");
    let revision = service.get(&path).expect(200)["revision"].clone();
    let changed = "web,web2.example.com,2222,deploy,agent,,Prod/Web,prod;web,first note,";
    let second = run(&service, &[changed], json!({}));
    let web = item(&second, "Prod/Web/web");
    assert_eq!(web["status"], "updated", "{second:#}");
    assert_eq!(web["kept_fields"], json!([]));
    let host = service.get(&path).expect(200);
    assert_eq!(host["hostname"], "web2.example.com");
    assert_eq!(host["port"], 2222);
    assert_eq!(host["notes"], "first note");
    assert_ne!(host["revision"], revision);
}

#[test]
fn a_field_edited_here_is_kept_and_reported_while_others_still_update() {
    let service = Service::start("reimport-kept");
    let first = run(&service, &[WEB], json!({}));
    let id = item(&first, "Prod/Web/web")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/hosts/{id}");
    service
        .put(
            &path,
            &json!({"port": 2200, "tags": ["mine", "prod", "web"]}),
        )
        .expect(200);
    // The source moves the port and the host name: the port was edited here, the host name
    // was not.
    let changed = "web,web2.example.com,2222,deploy,agent,,Prod/Web,prod;web,first note,";
    let second = run(&service, &[changed], json!({}));
    let web = item(&second, "Prod/Web/web");
    assert_eq!(web["status"], "updated", "{second:#}");
    let mut kept: Vec<String> = serde_json::from_value(web["kept_fields"].clone()).unwrap();
    kept.sort();
    assert_eq!(kept, ["port", "tags"]);
    let host = service.get(&path).expect(200);
    assert_eq!(host["port"], 2200, "the edit made here stays");
    assert_eq!(host["hostname"], "web2.example.com");
    assert!(host["tags"].as_array().unwrap().contains(&json!("mine")));
    // Nothing else changed in the source: the kept edits are reported, nothing is written.
    let third = run(&service, &[changed], json!({}));
    assert_eq!(
        item(&third, "Prod/Web/web")["status"],
        "kept_local",
        "{third:#}"
    );
    assert_eq!(third["summary"]["kept_local"], 1);
    assert_eq!(service.get(&path).expect(200)["port"], 2200);
}

#[test]
fn a_host_deleted_here_is_not_brought_back() {
    let service = Service::start("reimport-deleted");
    let first = run(&service, &[WEB, DB], json!({}));
    let id = item(&first, "Prod/db")["id"].as_str().unwrap().to_owned();
    service.delete(&format!("/api/hosts/{id}")).expect(204);
    for _ in 0..2 {
        let again = run(&service, &[WEB, DB], json!({}));
        let db = item(&again, "Prod/db");
        assert_eq!(db["status"], "kept_local", "{again:#}");
        assert_eq!(db["reason"], "deleted here since the last import");
        assert_eq!(host_count(&service), 1);
    }
}

#[test]
fn a_group_deleted_here_is_made_again_when_the_source_still_has_the_folder() {
    let service = Service::start("reimport-group-deleted");
    let first = run(&service, &[DB], json!({}));
    let group = item(&first, "Prod")["id"].as_str().unwrap().to_owned();
    let db = item(&first, "Prod/db")["id"].as_str().unwrap().to_owned();
    service.delete(&format!("/api/groups/{group}")).expect(204);
    let again = run(&service, &[DB], json!({}));
    assert_eq!(item(&again, "Prod")["status"], "created", "{again:#}");
    let new_group = item(&again, "Prod")["id"].as_str().unwrap().to_owned();
    assert_ne!(new_group, group);
    // The host was moved up when its group went: that was an edit here, so it stays.
    let host = service.get(&format!("/api/hosts/{db}")).expect(200);
    assert!(host.get("group_id").is_none(), "{host}");
    assert_eq!(item(&again, "Prod/db")["kept_fields"], json!(["group_id"]));
}

#[test]
fn an_identical_host_or_group_already_here_is_used_not_duplicated() {
    let service = Service::start("reimport-adopt");
    let group = service
        .post("/api/groups", &json!({"name": "prod"}))
        .expect(201);
    let body = json!({"name": "db", "hostname": "db.example.com", "port": 5432,
        "username": "postgres", "auth": {"type": "agent"}, "group_id": group["id"],
        "notes": "mine"});
    let host = service.post("/api/hosts", &body).expect(201);
    let answer = run(&service, &[DB], json!({}));
    assert_eq!(
        item(&answer, "Prod")["id"],
        group["id"],
        "same name, other case"
    );
    assert_eq!(item(&answer, "Prod")["status"], "unchanged");
    let db = item(&answer, "Prod/db");
    assert_eq!(db["id"], host["id"], "{answer:#}");
    assert_eq!(answer["summary"]["created"], 0);
    // Its own notes are an edit made here, not overwritten by the source's empty ones.
    assert_eq!(
        service
            .get(&format!("/api/hosts/{}", host["id"].as_str().unwrap()))
            .expect(200)["notes"],
        "mine"
    );
    assert_eq!(host_count(&service), 1);
}

#[test]
fn two_sessions_with_one_source_id_are_one_host_and_the_second_is_invalid() {
    let service = Service::start("reimport-repeat");
    let again = "db,other.example.com,22,postgres,agent,,Prod,,,";
    let answer = run(&service, &[DB, again], json!({}));
    let items: Vec<&Value> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["source_id"] == "Prod/db")
        .collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["status"], "created");
    assert_eq!(items[1]["status"], "invalid");
    assert!(!items[1]["reason"].as_str().unwrap().is_empty());
    assert_eq!(host_count(&service), 1);
}

/// The password `connect` hands out for host `id`.
fn password_of(service: &Service, id: &str) -> Value {
    let connected = service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    connected["credentials"]["password"].clone()
}

#[test]
fn passwords_are_imported_only_when_asked_and_follow_the_reimport_rules() {
    let service = Service::start("reimport-passwords");
    let row = |password: &str| format!("app,app.example.com,22,ops,password,{password},,,,");
    let first = row("Imported-pw-1f9a");
    let skipped = run(&service, &[&first], json!({}));
    let app = item(&skipped, "app").clone();
    assert_eq!(app["secret"], "skipped", "{skipped:#}");
    let id = app["id"].as_str().unwrap().to_owned();
    assert!(password_of(&service, &id).is_null());
    let imported = run(&service, &[&first], json!({"secrets": "import"}));
    assert_eq!(item(&imported, "app")["secret"], "imported", "{imported:#}");
    assert_eq!(
        item(&imported, "app")["status"],
        "updated",
        "the password was written"
    );
    assert_eq!(password_of(&service, &id), "Imported-pw-1f9a");
    // The same password again: nothing to write.
    let same = run(&service, &[&first], json!({"secrets": "import"}));
    assert_eq!(item(&same, "app")["status"], "unchanged", "{same:#}");
    assert_eq!(item(&same, "app")["secret"], "imported");
    // A new one in the source replaces the one the last import wrote.
    let second = row("Imported-pw-2b7c");
    run(&service, &[&second], json!({"secrets": "import"}));
    assert_eq!(password_of(&service, &id), "Imported-pw-2b7c");
    // One set here is kept against the source.
    let body = json!({"auth": {"type": "password", "password": "Mine-pw-88d1"}});
    service.put(&format!("/api/hosts/{id}"), &body).expect(200);
    let third = row("Imported-pw-3c6d");
    let kept = run(&service, &[&third], json!({"secrets": "import"}));
    let app = item(&kept, "app");
    assert_eq!(app["kept_fields"], json!(["password"]), "{kept:#}");
    assert_eq!(app["status"], "kept_local");
    assert_eq!(password_of(&service, &id), "Mine-pw-88d1");
    // No password ever appears in an answer, the log or the data dir's files.
    let answers = [skipped, imported, same, kept].map(|answer| answer.to_string());
    let files = read_all_files(&service.data_dir);
    for secret in [
        "Imported-pw-1f9a",
        "Imported-pw-2b7c",
        "Imported-pw-3c6d",
        "Mine-pw-88d1",
    ] {
        for form in leak_forms(secret.as_bytes()) {
            for answer in &answers {
                assert!(
                    !contains_bytes(answer.as_bytes(), &form),
                    "{secret} in an answer"
                );
            }
            assert!(
                !contains_bytes(service.stderr().as_bytes(), &form),
                "{secret} in the log"
            );
            for (path, bytes) in &files {
                assert!(
                    !contains_bytes(bytes, &form),
                    "{secret} in {}",
                    path.display()
                );
            }
        }
    }
}
