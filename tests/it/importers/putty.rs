//! `POST /api/import/putty` (docs/import-formats.md, "PuTTY and KiTTY"): a UTF-16 regedit
//! export and `~/.putty/sessions` files, with PuTTY's traps: `%XX` names, `user@host`,
//! `Default Settings`, a jump through a saved session, forwards and environment, the plain
//! `ProxyPassword`.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

fn export() -> Value {
    file("sessions.reg", &sample("putty/sessions.reg"))
}

fn imported(service: &Service, extra: Value) -> Value {
    import(service, "putty", vec![export()], extra).expect(200)
}

#[test]
fn putty_export_sessions_become_hosts_and_non_ssh_sessions_are_skipped() {
    let service = Service::start("import-putty-items");
    let answer = imported(&service, json!({}));
    for id in [
        "bastion",
        "web server",
        "db \\ prod",
        "socks via",
        "Café *",
        ".dotted",
    ] {
        let found = item(&answer, id);
        assert_eq!(found["kind"], "host", "{found}");
        assert_eq!(found["status"], "created", "{found}");
        assert_eq!(found["group_path"], "", "PuTTY has no folders");
    }
    assert_eq!(item(&answer, "router")["status"], "skipped");
    assert_eq!(
        item(&answer, "router")["reason"],
        "protocol telnet is not SSH"
    );
    assert_eq!(item(&answer, "serial console")["status"], "skipped");
    assert_eq!(item(&answer, "empty host")["status"], "invalid");
    assert_eq!(
        item(&answer, "empty host")["reason"],
        "hostname: is required"
    );
    let items = answer["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .all(|found| found["source_id"] != "Default Settings"),
        "the template is not a host"
    );
}

#[test]
fn putty_hostname_user_at_host_gives_the_user_and_the_port_is_kept() {
    let service = Service::start("import-putty-user-at");
    let answer = imported(&service, json!({}));
    let id = item(&answer, "web server")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let host = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(host["hostname"], "web.example.com");
    assert_eq!(host["username"], "deploy");
    assert_eq!(host["port"], 2222);
}

#[test]
fn putty_proxy_host_naming_a_saved_session_jumps_through_that_host() {
    let service = Service::start("import-putty-jump");
    let answer = imported(&service, json!({}));
    let web = item(&answer, "web server")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bastion = item(&answer, "bastion")["id"].clone();
    let host = service.get(&format!("/api/hosts/{web}")).expect(200);
    assert_eq!(host["jump_host_ids"], json!([bastion]));
}

#[test]
fn putty_forwards_environment_and_command_are_mapped_and_the_rest_unmapped() {
    let service = Service::start("import-putty-forwards");
    let answer = imported(&service, json!({}));
    let web = item(&answer, "web server");
    let id = web["id"].as_str().unwrap().to_string();
    let rules = service
        .get(&format!("/api/hosts/{id}/forwards"))
        .expect(200)["items"]
        .clone();
    let kinds: Vec<(Value, Value)> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| (rule["type"].clone(), rule["bind_port"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (json!("local"), json!(8080)),
            (json!("remote"), json!(2222)),
            (json!("dynamic"), json!(1080)),
            (json!("local"), json!(9000)),
        ]
    );
    let host = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(host["remote_command"], "tmux new -A -s main");
    let env: Vec<Value> = host["set_env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(env, [json!("LANG"), json!("EDITOR"), json!("EQ")]);
    let unmapped = web["unmapped"].as_array().unwrap();
    assert!(
        unmapped.contains(&json!("X11Forward: X11 forwarding is not imported")),
        "{web}"
    );
    assert!(
        unmapped.iter().any(
            |entry| entry.as_str().unwrap().starts_with("DetachedCertificate")
                || entry.as_str().unwrap().contains("web-cert.pub")
        ),
        "the certificate path is named: {web}"
    );
}

#[test]
fn putty_proxy_password_is_imported_on_the_jump_host_only_when_asked() {
    let service = Service::start("import-putty-secrets");
    let answer = imported(&service, json!({"secrets": "import"}));
    let jump = item(&answer, "jump:jumper@jump.example.com:2022");
    assert_eq!(jump["secret"], "imported", "{jump}");
    let id = jump["id"].as_str().unwrap().to_string();
    let connect = service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    assert_eq!(connect["credentials"]["password"], "Jump-Secret-1");
    assert!(
        !answer.to_string().contains("Jump-Secret-1"),
        "never echoed"
    );

    let other = Service::start("import-putty-secrets-skip");
    let answer = imported(&other, json!({"secrets": "skip"}));
    assert_eq!(
        item(&answer, "jump:jumper@jump.example.com:2022")["secret"],
        "skipped"
    );
}

#[test]
fn putty_unix_session_files_are_named_by_their_escaped_file_names() {
    let service = Service::start("import-putty-unix");
    let files = [
        "bastion",
        "web%20server",
        "Caf%C3%A9%20%2A",
        "Default%20Settings",
    ]
    .iter()
    .map(|name| file(name, &sample(&format!("putty/unix/{name}"))))
    .collect();
    let answer = import(&service, "putty", files, json!({})).expect(200);
    assert_eq!(item(&answer, "Café *")["status"], "created");
    assert_eq!(item(&answer, "web server")["status"], "created");
    assert_eq!(answer["items"].as_array().unwrap().len(), 3);
}

#[test]
fn putty_a_file_that_is_not_an_export_or_a_session_file_is_refused() {
    let service = Service::start("import-putty-refused");
    let error = import(
        &service,
        "putty",
        vec![file("notes.txt", b"this is not a PuTTY file\r\n")],
        json!({}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]: "),
        "{error}"
    );
}
