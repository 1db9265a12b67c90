//! `POST /api/import/securecrt` from the sample XML export (`tests/samples/import/securecrt/`,
//! written by its `make.py`): folders, sessions, the firewall-session jump, credentials,
//! unmapped settings, non-SSH sessions, and the three saved-password forms.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

fn export(service: &Service, extra: Value) -> Value {
    let files = vec![file("sessions.xml", &sample("securecrt/sessions.xml"))];
    import(service, "securecrt", files, extra).expect(200)
}

fn connect(service: &Service, id: &Value) -> Value {
    let id = id.as_str().unwrap();
    service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200)
}

#[test]
fn securecrt_folders_become_groups_and_ssh_sessions_hosts_with_their_statuses() {
    let service = Service::start("import-securecrt-items");
    let answer = export(&service, json!({}));
    for path in ["Prod", "Prod/Web", "Prod/DB", "Lab"] {
        let group = item(&answer, path);
        assert_eq!(
            (group["kind"].as_str(), group["status"].as_str()),
            (Some("group"), Some("created"))
        );
    }
    let web = item(&answer, "Prod/Web/web 1");
    assert_eq!(web["kind"], "host");
    assert_eq!(web["status"], "created");
    assert_eq!(web["name"], "web 1");
    assert_eq!(web["group_path"], "Prod/Web");
    let host = service
        .get(&format!("/api/hosts/{}", web["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(host["hostname"], "10.0.1.11");
    assert_eq!(host["username"], "deploy");
    assert_eq!(item(&answer, "top & level")["group_path"], "");
    let switch = item(&answer, "Lab/switch");
    assert_eq!(switch["status"], "skipped");
    assert_eq!(switch["reason"], "protocol Telnet is not SSH");
    assert_eq!(item(&answer, "Lab/console")["status"], "skipped");
    assert_eq!(item(&answer, "Default")["status"], "skipped");
    let hostless = item(&answer, "Lab/no-host");
    assert_eq!(hostless["status"], "invalid");
    assert_eq!(hostless["reason"], "hostname: is required");
    assert_eq!(answer["summary"]["invalid"], 1);
}

#[test]
fn securecrt_a_firewall_naming_a_session_makes_that_session_the_jump_host() {
    let service = Service::start("import-securecrt-jump");
    let answer = export(&service, json!({}));
    let bastion = item(&answer, "Prod/bastion")["id"].clone();
    for id in ["Prod/Web/web 1", "Prod/Web/web 2"] {
        let host = item(&answer, id)["id"].as_str().unwrap().to_string();
        let host = service.get(&format!("/api/hosts/{host}")).expect(200);
        assert_eq!(host["jump_host_ids"], json!([bastion]), "{id}");
    }
    let db = item(&answer, "Prod/DB/db-main");
    let host = service
        .get(&format!("/api/hosts/{}", db["id"].as_str().unwrap()))
        .expect(200);
    assert!(host["jump_host_ids"].is_null() || host["jump_host_ids"] == json!([]));
    assert!(db["unmapped"].to_string().contains("Firewall Name:"));
}

#[test]
fn securecrt_settings_without_a_place_here_are_listed_in_unmapped() {
    let service = Service::start("import-securecrt-unmapped");
    let answer = export(&service, json!({}));
    let web1 = item(&answer, "Prod/Web/web 1");
    let unmapped: Vec<&str> = web1["unmapped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line.as_str().unwrap())
        .collect();
    assert!(unmapped.contains(&"Forward X11: X11 forwarding is not imported"));
    assert!(unmapped.contains(&"Enable Agent Forwarding: agent forwarding is not imported"));
    let web2 = item(&answer, "Prod/Web/web 2");
    assert_eq!(
        web2["unmapped"],
        json!(["Port Forward Table V2: the application a forward launches is not imported"])
    );
    let id = web2["id"].as_str().unwrap();
    let host = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(host["remote_command"], "tmux new -A -s main");
    assert_eq!(item(&answer, "Prod/bastion")["unmapped"], json!([]));
}

#[test]
fn securecrt_forward_tables_become_the_hosts_forward_rules() {
    let service = Service::start("import-securecrt-forwards");
    let answer = export(&service, json!({}));
    let id = item(&answer, "Prod/Web/web 2")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forwards = service
        .get(&format!("/api/hosts/{id}/forwards"))
        .expect(200);
    let rules: Vec<(Value, Value, Value)> = forwards["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            (
                rule["type"].clone(),
                rule["bind_port"].clone(),
                rule["target_port"].clone(),
            )
        })
        .collect();
    assert_eq!(rules.len(), 5, "{forwards}");
    assert_eq!(rules[0], (json!("local"), json!(3128), json!(3128)));
    assert_eq!(forwards["items"][0]["target_host"], "webproxy.corp");
    assert_eq!(forwards["items"][1]["target_host"], "localhost");
    assert_eq!(rules[2].0, json!("dynamic"));
    assert_eq!(rules[4], (json!("remote"), json!(9000), json!(22)));
}

#[test]
fn securecrt_saved_passwords_are_imported_only_when_asked_and_connect_answers_them() {
    let service = Service::start("import-securecrt-secrets");
    let answer = export(&service, json!({"secrets": "import"}));
    for (id, password) in [
        ("Prod/bastion", "b4stion!"),
        ("Prod/DB/db-main", "Db-pa55 wörd"),
        ("Lab/old-box", "legacy-Pass1"),
    ] {
        let host = item(&answer, id);
        assert_eq!(host["secret"], "imported", "{id}");
        assert_eq!(
            connect(&service, &host["id"])["credentials"]["password"],
            password,
            "{id}"
        );
    }
    assert!(
        !answer.to_string().contains("b4stion!"),
        "a secret in the answer"
    );
    let credential = item(&answer, "credential:admin-cred");
    assert_eq!(credential["kind"], "identity");
    assert_eq!(credential["secret"], "imported");
    // A free name is kept as it is (a suffix only when another identity has it).
    let stored = service.get(&format!(
        "/api/identities/{}",
        credential["id"].as_str().unwrap()
    ));
    assert_eq!(stored.expect(200)["name"], "admin-cred");
    let admin = connect(&service, &item(&answer, "Prod/DB/db-admin")["id"]);
    assert_eq!(admin["credentials"]["username"], "admin");
    assert_eq!(super::connect_password(&admin), "cr3d-admin");
    assert_eq!(item(&answer, "top & level")["secret"], "none");
}

#[test]
fn securecrt_saved_passwords_are_skipped_by_default() {
    let service = Service::start("import-securecrt-skip");
    let answer = export(&service, json!({}));
    assert_eq!(item(&answer, "Prod/bastion")["secret"], "skipped");
    assert_eq!(item(&answer, "credential:admin-cred")["secret"], "skipped");
}

#[test]
fn securecrt_a_config_passphrase_opens_its_passwords_and_a_wrong_one_leaves_them_missing() {
    let service = Service::start("import-securecrt-passphrase");
    let files = || vec![file("passphrase.xml", &sample("securecrt/passphrase.xml"))];
    let wrong = json!({"secrets": "import", "passphrase": "not it", "dry_run": true});
    let answer = import(&service, "securecrt", files(), wrong).expect(200);
    let corp = item(&answer, "Corp/corp-host");
    assert_eq!(corp["secret"], "missing");
    assert!(corp["reason"].is_string());
    let right = json!({"secrets": "import", "passphrase": "corp passphrase"});
    let answer = import(&service, "securecrt", files(), right).expect(200);
    let corp = item(&answer, "Corp/corp-host");
    assert_eq!(corp["secret"], "imported");
    assert_eq!(
        connect(&service, &corp["id"])["credentials"]["password"],
        "s3cret-corp"
    );
}

#[test]
fn securecrt_a_file_that_is_not_an_export_is_400_naming_it() {
    let service = Service::start("import-securecrt-unreadable");
    let files = vec![
        file("sessions.xml", &sample("securecrt/sessions.xml")),
        file("confCons.xml", &sample("mremoteng/confCons.xml")),
    ];
    let error =
        import(&service, "securecrt", files, json!({})).assert_error(400, "VALIDATION_ERROR");
    // VALIDATION_ERROR's details start with the field (docs/api.md, errors).
    assert!(
        error["details"].as_str().unwrap().starts_with("files[1]"),
        "{error}"
    );
    let hosts = service.get("/api/hosts").expect(200);
    assert!(
        !hosts.to_string().contains("10.0.1.11"),
        "nothing is written"
    );
}
