//! `POST /api/import/winscp` (docs/import-formats.md, "WinSCP"): `WinSCP.ini` with sites in
//! URL-encoded folders, SCP/SFTP as hosts and FTP/WebDAV/S3 skipped, scrambled passwords
//! opened only when asked, a tunnel as a jump host, and the master password.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

fn imported(service: &Service, extra: Value) -> Value {
    let files = vec![file("WinSCP.ini", &sample("winscp/WinSCP.ini"))];
    import(service, "winscp", files, extra).expect(200)
}

fn id(answer: &Value, source_id: &str) -> String {
    item(answer, source_id)["id"].as_str().unwrap().to_string()
}

#[test]
fn winscp_sites_become_hosts_in_their_decoded_folders() {
    let service = Service::start("import-winscp-items");
    let answer = imported(&service, json!({}));
    let web = item(&answer, "Prod/Web/web 1");
    assert_eq!(web["status"], "created", "{web}");
    assert_eq!(web["name"], "web 1");
    assert_eq!(web["group_path"], "Prod/Web");
    assert_eq!(item(&answer, "Café/服务器")["group_path"], "Café");
    for group in ["Prod", "Prod/Web", "Prod/DB", "Staging", "Café"] {
        assert!(
            answer["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|found| found["kind"] == "group" && found["source_id"] == group),
            "group {group} in {answer:#}"
        );
    }
    let host = service
        .get(&format!("/api/hosts/{}", id(&answer, "Prod/Web/web 1")))
        .expect(200);
    assert_eq!(
        (host["hostname"].clone(), host["port"].clone()),
        (json!("web1.example.com"), json!(2222))
    );
    assert_eq!(host["username"], "deploy");
}

#[test]
fn winscp_ftp_webdav_and_s3_sites_are_skipped_and_a_site_without_host_is_invalid() {
    let service = Service::start("import-winscp-skipped");
    let answer = imported(&service, json!({}));
    assert_eq!(
        item(&answer, "Staging/ftp files")["reason"],
        "protocol FTP is not SSH"
    );
    assert_eq!(item(&answer, "Staging/webdav")["status"], "skipped");
    assert_eq!(item(&answer, "Staging/s3 bucket")["status"], "skipped");
    assert_eq!(
        item(&answer, "Prod/DB/db-primary")["status"],
        "created",
        "SCP is SSH"
    );
    assert_eq!(item(&answer, "no host")["status"], "invalid");
}

#[test]
fn winscp_saved_password_is_imported_and_connect_holds_it() {
    let service = Service::start("import-winscp-secret");
    let answer = imported(&service, json!({"secrets": "import"}));
    assert_eq!(item(&answer, "Prod/Web/web 1")["secret"], "imported");
    let web = id(&answer, "Prod/Web/web 1");
    let connect = service
        .request("POST", &format!("/api/hosts/{web}/connect"), None)
        .expect(200);
    assert_eq!(connect["credentials"]["password"], "Web1-Pa55");
    assert!(!answer.to_string().contains("Web1-Pa55"));
}

#[test]
fn winscp_password_scrambled_under_another_user_name_is_missing() {
    let service = Service::start("import-winscp-secret-missing");
    let answer = imported(&service, json!({"secrets": "import"}));
    let renamed = item(&answer, "Staging/renamed");
    assert_eq!(renamed["status"], "created");
    assert_eq!(renamed["secret"], "missing", "{renamed}");
}

#[test]
fn winscp_saved_password_is_skipped_without_secrets_import() {
    let service = Service::start("import-winscp-secret-skip");
    let answer = imported(&service, json!({"secrets": "skip"}));
    assert_eq!(item(&answer, "Prod/Web/web 1")["secret"], "skipped");
    assert_eq!(item(&answer, "Prod/Web/web 2")["secret"], "none");
}

#[test]
fn winscp_tunnel_becomes_the_jump_host_with_its_own_password() {
    let service = Service::start("import-winscp-tunnel");
    let answer = imported(&service, json!({"secrets": "import"}));
    let jump = item(&answer, "jump:jump@bastion.example.com:2022");
    assert_eq!(jump["secret"], "imported", "{jump}");
    let db = service
        .get(&format!("/api/hosts/{}", id(&answer, "Prod/DB/db-primary")))
        .expect(200);
    assert_eq!(db["jump_host_ids"], json!([jump["id"]]));
    let replica = item(&answer, "Prod/DB/db-replica");
    assert!(
        replica["unmapped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u.as_str().unwrap().starts_with("TunnelPublicKeyFile:")),
        "{replica}"
    );
    let connect = service
        .request(
            "POST",
            &format!("/api/hosts/{}/connect", jump["id"].as_str().unwrap()),
            None,
        )
        .expect(200);
    assert_eq!(connect["credentials"]["password"], "Jump!pass");
}

#[test]
fn winscp_master_password_leaves_the_secret_missing_and_says_so() {
    let service = Service::start("import-winscp-master");
    let files = vec![file("WinSCP.ini", &sample("winscp/WinSCP-master.ini"))];
    let answer = import(&service, "winscp", files, json!({"secrets": "import"})).expect(200);
    let locked = item(&answer, "locked");
    assert_eq!(locked["status"], "created");
    assert_eq!(locked["secret"], "missing", "{locked}");
    assert!(
        locked["reason"]
            .as_str()
            .unwrap()
            .contains("master password"),
        "{locked}"
    );
    assert!(
        locked["unmapped"].as_array().unwrap().contains(&json!(
            "Password: WinSCP master password in use; not decoded"
        )),
        "{locked}"
    );
}

#[test]
fn winscp_a_file_that_is_not_winscp_ini_is_refused() {
    let service = Service::start("import-winscp-refused");
    let error = import(
        &service,
        "winscp",
        vec![file("other.ini", b"[Other]\r\nkey=value\r\n")],
        json!({}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]: "),
        "{error}"
    );
}
