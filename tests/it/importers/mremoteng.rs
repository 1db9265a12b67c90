//! `POST /api/import/mremoteng` from the sample `confCons.xml` files
//! (`tests/samples/import/mremoteng/`, written by its `make.py`): containers, connections by
//! their GUID, inherited credentials becoming the container's identity, the SSH tunnel jump,
//! non-SSH protocols, the default and a custom password, and a fully encrypted file.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

const PROD_IDENTITY: &str = "container:0c0c0c0c-0000-4000-8000-000000000001";
const BASTION: &str = "4f6c2a8e-1b2d-4c3e-9f10-aabbccddee01";
const WEB1: &str = "1e1e1e1e-0000-4000-8000-000000000011";
const WEB2: &str = "1e1e1e1e-0000-4000-8000-000000000012";
const DB: &str = "1e1e1e1e-0000-4000-8000-000000000021";

fn confcons(service: &Service, name: &str, extra: Value) -> Value {
    let files = vec![file("confCons.xml", &sample(&format!("mremoteng/{name}")))];
    import(service, "mremoteng", files, extra).expect(200)
}

fn get_host(service: &Service, answer: &Value, source_id: &str) -> Value {
    let id = item(answer, source_id)["id"].as_str().unwrap().to_string();
    service.get(&format!("/api/hosts/{id}")).expect(200)
}

fn connect(service: &Service, answer: &Value, source_id: &str) -> Value {
    let id = item(answer, source_id)["id"].as_str().unwrap().to_string();
    service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200)
}

#[test]
fn mremoteng_containers_become_groups_and_ssh_connections_hosts_by_their_id() {
    let service = Service::start("import-mremoteng-items");
    let answer = confcons(&service, "confCons.xml", json!({}));
    for path in ["Prod", "Prod/Web", "Lab"] {
        assert_eq!(item(&answer, path)["status"], "created", "{path}");
    }
    let web = item(&answer, WEB1);
    assert_eq!(
        (web["name"].as_str(), web["status"].as_str()),
        (Some("web 1"), Some("created"))
    );
    assert_eq!(web["group_path"], "Prod/Web");
    assert_eq!(get_host(&service, &answer, WEB1)["hostname"], "10.0.1.11");
    for (id, protocol) in [
        ("1e1e1e1e-0000-4000-8000-000000000013", "RDP"),
        ("1e1e1e1e-0000-4000-8000-000000000032", "VNC"),
        ("1e1e1e1e-0000-4000-8000-000000000033", "HTTPS"),
        ("1e1e1e1e-0000-4000-8000-000000000034", "Telnet"),
    ] {
        let skipped = item(&answer, id);
        assert_eq!(skipped["status"], "skipped");
        assert_eq!(skipped["reason"], format!("protocol {protocol} is not SSH"));
    }
    let hostless = item(&answer, "1e1e1e1e-0000-4000-8000-000000000035");
    assert_eq!(
        (hostless["status"].as_str(), hostless["reason"].as_str()),
        (Some("invalid"), Some("hostname: is required"))
    );
    assert_eq!(answer["summary"]["skipped"], 4);
}

#[test]
fn mremoteng_inherited_credentials_come_from_the_containers_identity_through_nested_containers() {
    let service = Service::start("import-mremoteng-inherit");
    let answer = confcons(&service, "confCons.xml", json!({"secrets": "import"}));
    let identity = item(&answer, PROD_IDENTITY);
    assert_eq!(identity["kind"], "identity");
    assert_eq!(identity["name"], "Prod");
    assert_eq!(identity["secret"], "imported");
    for id in [WEB1, WEB2] {
        assert_eq!(
            item(&answer, id)["secret"],
            "none",
            "{id}: no password of its own"
        );
        let connected = connect(&service, &answer, id);
        assert_eq!(connected["credentials"]["username"], "admin", "{id}");
        assert_eq!(super::connect_password(&connected), "Pr0d-admin!", "{id}");
    }
    // web 2 inherits its port from Prod (through Web): the group default.
    assert_eq!(connect(&service, &answer, WEB2)["effective"]["port"], 2222);
    assert_eq!(connect(&service, &answer, WEB1)["effective"]["port"], 22);
}

#[test]
fn mremoteng_a_tunnel_connection_becomes_the_jump_host() {
    let service = Service::start("import-mremoteng-tunnel");
    let answer = confcons(&service, "confCons.xml", json!({}));
    let bastion = item(&answer, BASTION)["id"].clone();
    assert_eq!(
        get_host(&service, &answer, WEB1)["jump_host_ids"],
        json!([bastion])
    );
    let lost = item(&answer, "1e1e1e1e-0000-4000-8000-000000000036");
    assert!(lost["unmapped"]
        .to_string()
        .contains("SSHTunnelConnectionName: no connection"));
}

#[test]
fn mremoteng_fields_without_a_place_here_are_listed_in_unmapped() {
    let service = Service::start("import-mremoteng-unmapped");
    let answer = confcons(&service, "confCons.xml", json!({}));
    let db = item(&answer, DB)["unmapped"].to_string();
    for field in ["Domain:", "PuttySession:", "SSHOptions:"] {
        assert!(db.contains(field), "{field} in {db}");
    }
    assert!(item(&answer, WEB2)["unmapped"]
        .to_string()
        .contains("OpeningCommand:"));
    assert_eq!(item(&answer, BASTION)["unmapped"], json!([]));
    let id = item(&answer, WEB2)["id"].as_str().unwrap().to_string();
    let forwards = service
        .get(&format!("/api/hosts/{id}/forwards"))
        .expect(200);
    assert_eq!(forwards["items"], json!([]));
}

#[test]
fn mremoteng_passwords_open_with_the_default_password_and_are_skipped_unless_asked() {
    let service = Service::start("import-mremoteng-default");
    let skipped = confcons(&service, "confCons.xml", json!({"dry_run": true}));
    assert_eq!(item(&skipped, DB)["secret"], "skipped");
    assert_eq!(item(&skipped, PROD_IDENTITY)["secret"], "skipped");
    let answer = confcons(&service, "confCons.xml", json!({"secrets": "import"}));
    assert_eq!(item(&answer, DB)["secret"], "imported");
    assert_eq!(
        connect(&service, &answer, DB)["credentials"]["password"],
        "Db-pa55 wörd"
    );
    assert_eq!(
        connect(&service, &answer, BASTION)["credentials"]["password"],
        "b4stion"
    );
    assert!(
        !answer.to_string().contains("b4stion"),
        "a secret in the answer"
    );
}

#[test]
fn mremoteng_a_custom_password_needs_the_passphrase_and_a_wrong_one_leaves_it_missing() {
    let service = Service::start("import-mremoteng-custom");
    let corp = "1e1e1e1e-0000-4000-8000-0000000000c2";
    let wrong = json!({"secrets": "import", "passphrase": "mR3m", "dry_run": true});
    let answer = confcons(&service, "custom-password.xml", wrong);
    assert_eq!(item(&answer, corp)["secret"], "missing");
    let right = json!({"secrets": "import", "passphrase": "Corp pa55 ünïcode€"});
    let answer = confcons(&service, "custom-password.xml", right);
    assert_eq!(item(&answer, corp)["secret"], "imported");
    assert_eq!(
        connect(&service, &answer, corp)["credentials"]["password"],
        "s3cret-corp"
    );
}

#[test]
fn mremoteng_a_fully_encrypted_file_opens_with_the_default_password_and_a_wrong_one_is_400() {
    let service = Service::start("import-mremoteng-full");
    let answer = confcons(&service, "full-file.xml", json!({"secrets": "import"}));
    let hidden = "1e1e1e1e-0000-4000-8000-0000000000f2";
    assert_eq!(item(&answer, hidden)["group_path"], "Hidden");
    assert_eq!(
        connect(&service, &answer, hidden)["credentials"]["password"],
        "fu11-file"
    );
    let files = vec![file("confCons.xml", &sample("mremoteng/full-file.xml"))];
    let extra = json!({"secrets": "import", "passphrase": "wrong"});
    let error = import(&service, "mremoteng", files, extra).assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap();
    assert!(details.starts_with("files[0]"), "{error}");
    assert!(details.contains("FullFileEncryption"), "{error}");
}

#[test]
fn mremoteng_a_legacy_file_imports_with_its_passwords_unmapped() {
    let service = Service::start("import-mremoteng-legacy");
    let answer = confcons(&service, "legacy.xml", json!({"secrets": "import"}));
    let legacy = item(&answer, "1e1e1e1e-0000-4000-8000-0000000000a1");
    assert_eq!(legacy["status"], "created");
    assert!(legacy["unmapped"][0]
        .as_str()
        .unwrap()
        .starts_with("Password: saved with mRemoteNG's legacy scheme"));
}

#[test]
fn mremoteng_a_file_that_is_not_confcons_is_400_naming_it() {
    let service = Service::start("import-mremoteng-unreadable");
    let files = vec![file("sessions.xml", &sample("securecrt/sessions.xml"))];
    let error =
        import(&service, "mremoteng", files, json!({})).assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]"),
        "{error}"
    );
}

#[test]
fn mremoteng_a_connection_without_credentials_never_gets_its_containers_password() {
    let service = Service::start("import-mremoteng-no-leak");
    let text = String::from_utf8(sample("mremoteng/confCons.xml")).unwrap();
    let prod = text.find("<Node Name=\"Prod\"").unwrap();
    let line_end = prod + text[prod..].find("\r\n").unwrap();
    let plain = "\r\n<Node Name=\"plain\" Type=\"Connection\" Id=\"p1\" Protocol=\"SSH2\" \
                 Hostname=\"plain.example.com\" Port=\"22\" />";
    let text = format!("{}{plain}{}", &text[..line_end], &text[line_end..]);
    let files = vec![file("confCons.xml", text.as_bytes())];
    let answer = import(&service, "mremoteng", files, json!({"secrets": "import"})).expect(200);
    let plain = connect(&service, &answer, "p1");
    assert!(super::connect_password(&plain).is_null(), "{plain}");
    assert_ne!(plain["credentials"]["username"], "admin");
    let web = connect(&service, &answer, WEB1);
    assert_eq!(web["credentials"]["username"], "admin");
    assert_eq!(super::connect_password(&web), "Pr0d-admin!");
}
