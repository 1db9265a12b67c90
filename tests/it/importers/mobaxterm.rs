//! `POST /api/import/mobaxterm` (docs/import-formats.md, "MobaXterm"): a `.mxtsessions`
//! export in Windows-1252 and one in GBK, `MobaXterm.ini` with credentials, and MobaXterm's
//! traps: the user at field 3, gateway chains, credentials as identities, non-SSH sessions.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

fn imported(service: &Service, name: &str, extra: Value) -> Value {
    let files = vec![file(name, &sample(&format!("mobaxterm/{name}")))];
    import(service, "mobaxterm", files, extra).expect(200)
}

fn host(service: &Service, answer: &Value, source_id: &str) -> Value {
    let id = item(answer, source_id)["id"].as_str().unwrap().to_string();
    service.get(&format!("/api/hosts/{id}")).expect(200)
}

#[test]
fn mobaxterm_sessions_become_hosts_in_nested_groups_with_the_user_at_field_3() {
    let service = Service::start("import-moba-items");
    let answer = imported(&service, "sessions.mxtsessions", json!({}));
    let web = item(&answer, "Prod/web 1");
    assert_eq!(
        (web["status"].clone(), web["group_path"].clone()),
        (json!("created"), json!("Prod"))
    );
    assert_eq!(
        item(&answer, "Staging/Web/Old/old web")["group_path"],
        "Staging/Web/Old"
    );
    assert_eq!(
        item(&answer, "Café/café host")["group_path"],
        "Café",
        "Windows-1252 read"
    );
    let fetched = host(&service, &answer, "Prod/web 1");
    assert_eq!(fetched["hostname"], "web1.example.com");
    assert_eq!(fetched["port"], 2222);
    assert_eq!(fetched["username"], "deploy");
    assert_eq!(
        fetched["remote_command"],
        "tail -f /var/log/syslog; echo done"
    );
}

#[test]
fn mobaxterm_non_ssh_sessions_are_skipped_with_their_protocol() {
    let service = Service::start("import-moba-skipped");
    let answer = imported(&service, "sessions.mxtsessions", json!({}));
    assert_eq!(
        item(&answer, "Prod/DB/db rdp")["reason"],
        "protocol RDP is not SSH"
    );
    assert_eq!(item(&answer, "Staging/Web/Old/vnc")["status"], "skipped");
    assert_eq!(
        item(&answer, "Staging/Web/Old/console")["status"],
        "skipped"
    );
    assert_eq!(
        item(&answer, "Prod/DB/files")["status"],
        "created",
        "SFTP is SSH-based"
    );
    assert_eq!(item(&answer, "Café/no host")["status"], "invalid");
}

#[test]
fn mobaxterm_gateways_become_a_jump_chain_of_hosts() {
    let service = Service::start("import-moba-gateways");
    let answer = imported(&service, "sessions.mxtsessions", json!({}));
    let first = item(&answer, "jump:alice@gw1.example.com:22")["id"].clone();
    let second = item(&answer, "jump:bob@gw2.example.com:2022")["id"].clone();
    let db = host(&service, &answer, "Prod/DB/db primary");
    assert_eq!(db["jump_host_ids"], json!([first, second]));
}

#[test]
fn mobaxterm_a_credential_user_becomes_an_identity_with_the_ini_username() {
    let service = Service::start("import-moba-credentials");
    let answer = imported(&service, "MobaXterm.ini", json!({"secrets": "import"}));
    let identity = item(&answer, "cred:dbcred");
    assert_eq!(identity["kind"], "identity");
    assert_eq!(identity["status"], "created");
    let db = host(&service, &answer, "Prod/DB/db primary");
    assert_eq!(db["identity_id"], identity["id"]);
    let fetched = service
        .get(&format!(
            "/api/identities/{}",
            identity["id"].as_str().unwrap()
        ))
        .expect(200);
    assert_eq!(fetched["username"], "postgres");
    // Its saved password (and web 1's) is bound to the Windows user: missing, with why.
    assert_eq!(identity["secret"], "missing", "{identity}");
    let web = item(&answer, "Prod/web 1");
    assert_eq!(web["secret"], "missing", "{web}");
    assert!(
        web["reason"].as_str().unwrap().contains("Windows user"),
        "{web}"
    );
    assert!(
        web["unmapped"].as_array().unwrap().contains(&json!(
            "Password: MobaXterm saved passwords are bound to the Windows user"
        )),
        "{web}"
    );
}

#[test]
fn mobaxterm_unmapped_lists_x11_agent_forwarding_and_proxies() {
    let service = Service::start("import-moba-unmapped");
    let answer = imported(&service, "sessions.mxtsessions", json!({}));
    assert!(item(&answer, "bastion")["unmapped"]
        .as_array()
        .unwrap()
        .contains(&json!(
            "X11 forwarding (field 5): X11 forwarding is not imported"
        )));
    assert!(item(&answer, "Staging/Web/Old/old web")["unmapped"]
        .as_array()
        .unwrap()
        .contains(&json!(
            "Proxy (field 19): a SOCKS5 proxy at socks.example.com:1080 is not imported"
        )));
}

#[test]
fn mobaxterm_gbk_file_sent_with_gbk_encoding_keeps_its_chinese_names() {
    let service = Service::start("import-moba-gbk");
    let answer = imported(&service, "gbk.mxtsessions", json!({"encoding": "gbk"}));
    let found = item(&answer, "生产/数据库/服务器一");
    assert_eq!(found["name"], "服务器一");
    assert_eq!(found["group_path"], "生产/数据库");
    assert_eq!(
        host(&service, &answer, "生产/数据库/服务器二")["username"],
        "管理员"
    );
}

#[test]
fn mobaxterm_a_file_without_bookmarks_is_refused() {
    let service = Service::start("import-moba-refused");
    let error = import(
        &service,
        "mobaxterm",
        vec![file("x.mxtsessions", b"[Misc]\r\nDarkMode=1\r\n")],
        json!({}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]: "),
        "{error}"
    );
}
