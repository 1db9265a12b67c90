//! `POST /api/import/remmina` (docs/import.md, docs/import-formats.md "Remmina"), black-box on
//! tests/samples/import/remmina: profiles of Remmina 1.1, 1.3 and 1.4+, `remmina.pref` for the
//! key of their passwords.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

/// The sample's profile names (`profiles/<name>.remmina`).
const PROFILES: [&str; 12] = [
    "prod-web_ssh_web-1_web1-example-com",
    "prod-web_ssh_web-2_web2-example-com",
    "prod-web_sftp_files_files-example-com",
    "prod_ssh_bastion_bastion-example-com",
    "prod-db_ssh_db-1_2001-db8--5",
    "prod-db_ssh_db-2_db2-internal",
    "office_rdp_win-desktop_10-0-0-20",
    "office-lab_vnc_lab-screen_10-0-0-30",
    "lab-deep-nested_ssh_no-host_",
    "_ssh_router_2001-db8--7",
    "1555595478523",
    "1418041200000",
];

/// Every profile, with `remmina.pref` first when `pref`.
fn files(pref: bool) -> Vec<Value> {
    let mut files = Vec::new();
    if pref {
        files.push(file("remmina.pref", &sample("remmina/remmina.pref")));
    }
    for name in PROFILES {
        let path = format!("remmina/profiles/{name}.remmina");
        files.push(file(&format!("{name}.remmina"), &sample(&path)));
    }
    files
}

fn id(answer: &Value, source_id: &str) -> String {
    item(answer, source_id)["id"].as_str().unwrap().to_owned()
}

fn host(service: &Service, answer: &Value, source_id: &str) -> Value {
    service
        .get(&format!("/api/hosts/{}", id(answer, source_id)))
        .expect(200)
}

fn unmapped(answer: &Value, source_id: &str) -> Vec<String> {
    serde_json::from_value(item(answer, source_id)["unmapped"].clone()).unwrap()
}

#[test]
fn remmina_ssh_and_sftp_profiles_become_hosts_and_other_protocols_are_skipped() {
    let service = Service::start("import-remmina-items");
    let answer = import(&service, "remmina", files(true), json!({})).expect(200);
    let web = item(&answer, "prod-web_ssh_web-1_web1-example-com");
    assert_eq!(
        (web["name"].clone(), web["status"].clone()),
        (json!("web 1"), json!("created"))
    );
    assert_eq!(web["group_path"], "Prod/Web");
    assert_eq!(
        web["unmapped"],
        json!([]),
        "default settings are not reported"
    );
    assert_eq!(
        item(&answer, "prod-web_sftp_files_files-example-com")["status"],
        "created"
    );
    let rdp = item(&answer, "office_rdp_win-desktop_10-0-0-20");
    assert_eq!(
        (rdp["status"].clone(), rdp["reason"].clone()),
        (json!("skipped"), json!("protocol RDP is not SSH"))
    );
    assert_eq!(
        item(&answer, "office-lab_vnc_lab-screen_10-0-0-30")["status"],
        "skipped"
    );
    let none = item(&answer, "lab-deep-nested_ssh_no-host_");
    assert_eq!(
        (none["status"].clone(), none["reason"].clone()),
        (json!("invalid"), json!("hostname: is required"))
    );
    let router = host(&service, &answer, "_ssh_router_2001-db8--7");
    assert_eq!(router["hostname"], "2001:db8::7");
    let db = host(&service, &answer, "prod-db_ssh_db-1_2001-db8--5");
    assert_eq!(
        (db["hostname"].clone(), db["port"].clone()),
        (json!("2001:db8::5"), json!(2200))
    );
    assert_eq!(db["remote_command"], "tmux new -A -s main");
}

#[test]
fn remmina_passwords_open_with_remmina_pref_among_the_files() {
    let service = Service::start("import-remmina-secrets");
    let answer = import(
        &service,
        "remmina",
        files(true),
        json!({"secrets": "import"}),
    )
    .expect(200);
    let web = "prod-web_ssh_web-1_web1-example-com";
    assert_eq!(item(&answer, web)["secret"], "imported");
    let connect = service
        .request(
            "POST",
            &format!("/api/hosts/{}/connect", id(&answer, web)),
            None,
        )
        .expect(200);
    assert_eq!(connect["credentials"]["password"], "s3cr3t-web");
    let old = "1555595478523";
    assert_eq!(
        item(&answer, old)["secret"],
        "none",
        "a 1.3 profile with agent auth uses no password"
    );
    assert!(!answer.to_string().contains("s3cr3t-web"));
}

#[test]
fn remmina_passwords_without_remmina_pref_are_missing_and_with_skip_are_skipped() {
    let service = Service::start("import-remmina-no-pref");
    let web = "prod-web_ssh_web-1_web1-example-com";
    let skipped = import(&service, "remmina", files(true), json!({"dry_run": true})).expect(200);
    assert_eq!(item(&skipped, web)["secret"], "skipped");
    let answer = import(
        &service,
        "remmina",
        files(false),
        json!({"secrets": "import"}),
    )
    .expect(200);
    let missing = item(&answer, web);
    assert_eq!(missing["secret"], "missing");
    assert!(
        missing["reason"].as_str().unwrap().contains("remmina.pref"),
        "{missing}"
    );
}

#[test]
fn a_remmina_pref_of_another_machine_leaves_passwords_missing() {
    let service = Service::start("import-remmina-wrong-pref");
    let mut files = files(false);
    let other = "[remmina_pref]\nsecret=HxweHRwbGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgE=\n";
    files.insert(0, json!({"name": "remmina.pref", "content": other}));
    let answer = import(&service, "remmina", files, json!({"secrets": "import"})).expect(200);
    assert_eq!(
        item(&answer, "prod-web_ssh_web-1_web1-example-com")["secret"],
        "missing"
    );
}

#[test]
fn a_remmina_ssh_tunnel_is_the_hosts_jump_and_matches_the_bastion_profile() {
    let service = Service::start("import-remmina-jump");
    let answer = import(&service, "remmina", files(true), json!({})).expect(200);
    let bastion = id(&answer, "prod_ssh_bastion_bastion-example-com");
    let db = host(&service, &answer, "prod-db_ssh_db-1_2001-db8--5");
    assert_eq!(db["jump_host_ids"], json!([bastion]));
}

#[test]
fn remmina_settings_that_change_the_connection_are_unmapped_only_when_set() {
    let service = Service::start("import-remmina-unmapped");
    let answer = import(&service, "remmina", files(true), json!({})).expect(200);
    let db = unmapped(&answer, "prod-db_ssh_db-1_2001-db8--5");
    for key in ["ssh_forward_x11:", "ssh_compression:", "run_line:"] {
        assert!(
            db.iter().any(|entry| entry.starts_with(key)),
            "{key} in {db:?}"
        );
    }
    let gssapi = unmapped(&answer, "prod-db_ssh_db-2_db2-internal");
    for key in [
        "ssh_auth:",
        "password:",
        "ssh_proxycommand:",
        "ssh_kex_algorithms:",
    ] {
        assert!(
            gssapi.iter().any(|entry| entry.starts_with(key)),
            "{key} in {gssapi:?}"
        );
    }
    let key = unmapped(&answer, "prod-web_ssh_web-2_web2-example-com");
    assert!(
        key.iter().any(|entry| entry.contains("id_ed25519")),
        "the key file to import: {key:?}"
    );
}

#[test]
fn remmina_ssh_auth_2_is_agent_in_new_files_and_automatic_public_key_in_remmina_1_1_files() {
    let service = Service::start("import-remmina-ssh-auth");
    let answer = import(&service, "remmina", files(true), json!({})).expect(200);
    let new = host(&service, &answer, "1555595478523");
    assert_eq!(new["auth"]["type"], "agent");
    assert!(!unmapped(&answer, "1555595478523")
        .iter()
        .any(|e| e.starts_with("ssh_auth")));
    let old = host(&service, &answer, "1418041200000");
    assert_eq!(old["auth"]["type"], "agent");
    assert_eq!(old["port"], 2200);
    let notes = unmapped(&answer, "1418041200000");
    assert!(
        notes
            .iter()
            .any(|e| e.starts_with("ssh_auth: automatic public key")),
        "{notes:?}"
    );
}

#[test]
fn a_file_that_is_not_a_remmina_profile_is_400_naming_its_index() {
    let service = Service::start("import-remmina-unreadable");
    let mut files = files(true);
    files.push(json!({"name": "notes.txt", "content": "hello\n"}));
    let field = format!("files[{}]", files.len() - 1);
    let error = import(&service, "remmina", files, json!({})).assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with(&field),
        "{error}"
    );
}
