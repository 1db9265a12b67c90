//! The request of `POST /api/import/{format}` (docs/import.md, "The request"): every field's
//! rule at its edges, the formats list, an unknown format, and the importers' own body limit
//! (32 MiB, while every other route keeps 1 MiB).

use serde_json::{json, Value};

use super::{field_of, import};
use crate::support::Service;

/// A one-row CSV in our own format.
const CSV: &str = "name,hostname,port,username,auth,password,group_path,tags,notes,proxy_jump\r\n\
                   web,web.example.com,22,deploy,agent,,,,,\r\n";

fn csv_file() -> Value {
    json!({"name": "hosts.csv", "content": CSV})
}

#[test]
fn formats_lists_every_importer_with_what_to_send() {
    let service = Service::start("import-formats");
    let answer = service.get("/api/import/formats").expect(200);
    let names: Vec<&str> = answer["formats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|format| format["format"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mobaxterm",
            "putty",
            "winscp",
            "securecrt",
            "mremoteng",
            "remmina",
            "termius-csv",
            "csv"
        ]
    );
    for format in answer["formats"].as_array().unwrap() {
        assert!(!format["files"].as_str().unwrap().is_empty(), "{format}");
    }
}

#[test]
fn an_unknown_format_is_404_not_found_and_the_older_import_routes_still_answer() {
    let service = Service::start("import-unknown");
    import(&service, "xshell", vec![csv_file()], json!({})).assert_error(404, "NOT_FOUND");
    // The ssh_config route is not a format of this one.
    let body = json!({"config": "Host a\n  HostName a.example.com\n", "dry_run": true});
    service.post("/api/import/ssh-config", &body).expect(200);
}

#[test]
fn files_must_be_1_to_20000_objects_each_with_a_name_and_one_content() {
    let service = Service::start("import-files-rule");
    let field = |response: crate::support::Response| field_of(&response);
    let post = |body: Value| service.post("/api/import/csv", &body);
    assert_eq!(field(post(json!({}))), "files");
    assert_eq!(field(post(json!({"files": []}))), "files");
    assert_eq!(field(post(json!({"files": "x"}))), "files");
    // Small files, so the edge is about the count and not the body's size.
    let tiny = json!({"name": "h.csv", "content": "name,hostname\r\n"});
    let many: Vec<Value> = (0..20_001).map(|_| tiny.clone()).collect();
    assert_eq!(field(post(json!({"files": many}))), "files");
    let most: Vec<Value> = (0..20_000).map(|_| tiny.clone()).collect();
    post(json!({"files": most, "dry_run": true})).expect(200);
    assert_eq!(field(post(json!({"files": [7]}))), "files[0]");
    let both = json!({"name": "a", "content": CSV, "content_base64": "YQ=="});
    assert_eq!(field(post(json!({"files": [both]}))), "files[0]");
    let neither = json!({"name": "a"});
    assert_eq!(
        field(post(json!({"files": [csv_file(), neither]}))),
        "files[1]"
    );
    let bad = json!({"name": "a", "content_base64": "not base64!"});
    assert_eq!(
        field(post(json!({"files": [bad]}))),
        "files[0].content_base64"
    );
    let nameless = json!({"name": "", "content": CSV});
    assert_eq!(field(post(json!({"files": [nameless]}))), "files[0].name");
    let long = json!({"name": "n".repeat(256), "content": CSV});
    assert_eq!(field(post(json!({"files": [long]}))), "files[0].name");
    let longest = json!({"name": "n".repeat(255), "content": CSV});
    post(json!({"files": [longest], "dry_run": true})).expect(200);
}

#[test]
fn secrets_encoding_passphrase_parent_and_dry_run_follow_their_rules() {
    let service = Service::start("import-options-rule");
    let post = |extra: Value| import(&service, "csv", vec![csv_file()], extra);
    let field = |extra: Value| field_of(&post(extra));
    assert_eq!(field(json!({"secrets": "all"})), "secrets");
    assert_eq!(field(json!({"secrets": true})), "secrets");
    assert_eq!(field(json!({"encoding": "latin1"})), "encoding");
    assert_eq!(field(json!({"passphrase": ""})), "passphrase");
    assert_eq!(field(json!({"passphrase": "p".repeat(1025)})), "passphrase");
    assert_eq!(field(json!({"dry_run": "yes"})), "dry_run");
    assert_eq!(field(json!({"parent_group_id": 5})), "parent_group_id");
    for ok in [
        json!({"secrets": "skip", "dry_run": true}),
        json!({"secrets": "import", "passphrase": "p".repeat(1024), "dry_run": true}),
        json!({"encoding": "gbk", "dry_run": true}),
        json!({"encoding": "utf-16", "dry_run": true}),
        json!({"parent_group_id": null, "dry_run": null}),
    ] {
        post(ok.clone()).expect(200);
    }
    let unknown = json!({"parent_group_id": "00000000-0000-4000-8000-000000000000"});
    post(unknown).assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn a_passphrase_never_comes_back_in_an_answer_or_the_log() {
    let service = Service::start("import-passphrase-quiet");
    let passphrase = "correct horse battery staple 7f3a";
    let answer = import(
        &service,
        "csv",
        vec![csv_file()],
        json!({"secrets": "import", "passphrase": passphrase}),
    )
    .expect(200);
    assert!(!answer.to_string().contains(passphrase));
    let refused = import(
        &service,
        "csv",
        vec![json!({"name": "x"})],
        json!({"passphrase": passphrase}),
    );
    assert!(!refused.text().contains(passphrase));
    assert!(!service.stderr().contains(passphrase));
}

#[test]
fn an_import_body_may_pass_1_mib_while_other_routes_keep_the_limit() {
    let service = Service::start("import-body-limit");
    // About 1.5 MiB of CSV rows: past every other route's limit.
    let mut csv = String::from(CSV);
    let row =
        "host-{i},h{i}.example.com,22,deploy,agent,,bulk,,padding padding padding padding,\r\n";
    let mut i = 0;
    while csv.len() < 1_600_000 {
        csv.push_str(&row.replace("{i}", &i.to_string()));
        i += 1;
    }
    let body = json!({"files": [{"name": "big.csv", "content": csv}], "dry_run": true});
    let answer = service.post("/api/import/csv", &body).expect(200);
    assert_eq!(answer["summary"]["created"], i + 1);
    let too_big = json!({"name": "x", "notes": "n".repeat(1_600_000), "hostname": "h"});
    service
        .post("/api/hosts", &too_big)
        .assert_error(413, "PAYLOAD_TOO_LARGE");
}

#[test]
fn an_import_body_past_32_mib_is_413_from_its_declared_length() {
    let service = Service::start("import-body-over");
    let declared = 32 * 1024 * 1024 + 1;
    let text = service.raw(
        format!(
            "POST /api/import/csv HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {declared}\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("PAYLOAD_TOO_LARGE"), "{text}");
    assert!(
        text.contains(&format!("the limit is {} bytes", declared - 1)),
        "{text}"
    );
    // The same length to an unknown format is held to the common limit.
    let other = service.raw(
        b"POST /api/import/xshell HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2000000\r\n\r\n",
    );
    assert!(other.contains("the limit is 1048576 bytes"), "{other}");
}
