//! `POST /api/import/csv` and `/api/import/termius-csv` (docs/import.md, docs/import-formats.md
//! "Our CSV" and "Termius CSV template"), black-box on tests/samples/import/{csv,termius-csv}.

use serde_json::{json, Value};

use super::{file, import, item, sample};
use crate::support::Service;

fn import_csv(service: &Service, format: &str, secrets: &str) -> Value {
    let path = format!("{format}/hosts.csv");
    import(
        service,
        format,
        vec![file("hosts.csv", &sample(&path))],
        json!({"secrets": secrets}),
    )
    .expect(200)
}

fn host(service: &Service, answer: &Value, source_id: &str) -> Value {
    let id = item(answer, source_id)["id"].as_str().unwrap().to_owned();
    service.get(&format!("/api/hosts/{id}")).expect(200)
}

fn connect_password(service: &Service, answer: &Value, source_id: &str) -> Value {
    let id = item(answer, source_id)["id"].as_str().unwrap().to_owned();
    service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200)["credentials"]["password"]
        .clone()
}

#[test]
fn csv_rows_become_hosts_in_nested_groups_and_broken_rows_are_invalid() {
    let service = Service::start("import-csv-items");
    let answer = import_csv(&service, "csv", "skip");
    assert_eq!(answer["source"]["format"], "csv");
    let web = item(&answer, "Prod/Web/web 1");
    assert_eq!(
        (web["kind"].clone(), web["status"].clone()),
        (json!("host"), json!("created"))
    );
    assert_eq!(web["group_path"], "Prod/Web");
    assert_eq!(web["secret"], "skipped");
    assert_eq!(item(&answer, "Prod/Web")["kind"], "group");
    assert_eq!(
        item(&answer, "Lab/CI/Runners/build")["group_path"],
        "Lab/CI/Runners"
    );
    let none = item(&answer, "Lab/no host");
    assert_eq!(
        (none["status"].clone(), none["reason"].clone()),
        (json!("invalid"), json!("hostname: is required"))
    );
    let port = item(&answer, "Lab/bad port");
    assert_eq!(port["status"], "invalid");
    assert!(
        port["reason"].as_str().unwrap().starts_with("port:"),
        "{port}"
    );
    assert_eq!(item(&answer, "Lab/bad auth")["status"], "invalid");
    let router = host(&service, &answer, "router");
    assert_eq!(
        router["hostname"], "2001:db8::7",
        "a bracketed IPv6 cell is the bare address"
    );
    let fetched = host(&service, &answer, "Prod/Web/web 1");
    assert_eq!(fetched["hostname"], "web1.example.com");
    let mut tags: Vec<String> = serde_json::from_value(fetched["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["nginx", "web"]);
    assert_eq!(
        fetched["notes"],
        "Front web server.\r\nPatched monthly, on Tuesdays."
    );
}

#[test]
fn csv_passwords_are_sealed_with_secrets_import_and_answered_by_connect() {
    let service = Service::start("import-csv-secrets");
    let answer = import_csv(&service, "csv", "import");
    assert_eq!(item(&answer, "Prod/Web/web 1")["secret"], "imported");
    assert_eq!(item(&answer, "Prod/DB/db 2")["secret"], "imported");
    assert_eq!(item(&answer, "Prod/bastion")["secret"], "none");
    assert_eq!(
        connect_password(&service, &answer, "Prod/Web/web 1"),
        "s3cr3t-web"
    );
    assert_eq!(
        connect_password(&service, &answer, "Prod/DB/db 2"),
        "pässwörd €"
    );
    assert!(
        !answer.to_string().contains("s3cr3t-web"),
        "the answer never echoes a password"
    );
}

#[test]
fn csv_proxy_jump_naming_a_row_is_that_rows_host_and_an_address_finds_or_makes_one() {
    let service = Service::start("import-csv-jumps");
    let answer = import_csv(&service, "csv", "skip");
    let bastion = item(&answer, "Prod/bastion")["id"].clone();
    let web = host(&service, &answer, "Prod/Web/web 1");
    assert_eq!(web["jump_host_ids"], json!([bastion]));
    // jump@bastion.example.com:2022 is the bastion row's address: the same host.
    let web2 = host(&service, &answer, "Prod/Web/web 2");
    assert_eq!(web2["jump_host_ids"], json!([bastion]));
    let db = host(&service, &answer, "Prod/DB/db 1");
    let chain = db["jump_host_ids"].as_array().unwrap();
    assert_eq!(chain.len(), 2, "{db}");
    assert_eq!(chain[0], bastion);
    assert_ne!(chain[1], bastion);
}

#[test]
fn csv_columns_that_are_not_ours_are_named_in_unmapped() {
    let service = Service::start("import-csv-unmapped");
    let text = "NAME,Colour,HostName\r\nweb,red,web.example\r\n";
    let answer = import(
        &service,
        "csv",
        vec![json!({"name": "a.csv", "content": text})],
        json!({}),
    )
    .expect(200);
    let web = item(&answer, "web");
    assert_eq!(web["status"], "created");
    assert_eq!(
        web["unmapped"],
        json!(["column Colour: not a field of ours"])
    );
}

#[test]
fn a_file_that_is_not_our_csv_is_400_naming_its_index() {
    let service = Service::start("import-csv-unreadable");
    let good = file("hosts.csv", &sample("csv/hosts.csv"));
    for (files, field) in [
        (
            vec![json!({"name": "x.csv", "content": "Groups,Label\r\n"})],
            "files[0]",
        ),
        (
            vec![good, json!({"name": "y.xml", "content": "<a/>"})],
            "files[1]",
        ),
    ] {
        let error = import(&service, "csv", files, json!({})).assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
    assert_eq!(
        service.get("/api/hosts").expect(200)["total"],
        0,
        "nothing is written"
    );
}

#[test]
fn csv_in_windows_1252_is_read_by_auto_and_refused_when_named_utf8() {
    let service = Service::start("import-csv-encoding");
    let bytes = b"name,hostname\r\nB\xfcro,office.example\r\n".to_vec();
    let strict = import(
        &service,
        "csv",
        vec![file("a.csv", &bytes)],
        json!({"encoding": "utf-8"}),
    );
    let error = strict.assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]"),
        "{error}"
    );
    let answer = import(&service, "csv", vec![file("a.csv", &bytes)], json!({})).expect(200);
    assert_eq!(item(&answer, "Büro")["status"], "created");
}

#[test]
fn termius_rows_become_hosts_tags_split_on_commas_and_other_protocols_are_skipped() {
    let service = Service::start("import-termius-items");
    let answer = import_csv(&service, "termius-csv", "import");
    let telnet = item(&answer, "Office/old switch");
    assert_eq!(
        (telnet["status"].clone(), telnet["reason"].clone()),
        (json!("skipped"), json!("protocol telnet is not SSH"))
    );
    assert_eq!(
        item(&answer, "Prod/Web/web 2")["status"],
        "created",
        "an empty Protocol is SSH"
    );
    assert_eq!(
        item(&answer, "Lab/Deep/Nested/no host")["status"],
        "invalid"
    );
    let port = item(&answer, "Lab/bad port");
    assert!(
        port["reason"].as_str().unwrap().starts_with("Port:"),
        "{port}"
    );
    let db = host(&service, &answer, "Prod/DB/db 1");
    let mut tags: Vec<String> = serde_json::from_value(db["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["db", "postgres"]);
    assert_eq!(db["port"], 5432);
    assert_eq!(item(&answer, "Prod/Web/web 1")["secret"], "imported");
    assert_eq!(
        connect_password(&service, &answer, "Prod/Web/web 1"),
        "s3cr3t-web"
    );
    assert_eq!(connect_password(&service, &answer, "router"), "hunter2");
}

#[test]
fn a_csv_without_the_termius_header_is_400_for_termius_csv() {
    let service = Service::start("import-termius-unreadable");
    let ours = file("hosts.csv", &sample("csv/hosts.csv"));
    let error = import(&service, "termius-csv", vec![ours], json!({}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("files[0]"),
        "{error}"
    );
}

#[test]
fn importing_the_same_csv_twice_changes_nothing_the_second_time() {
    let service = Service::start("import-csv-twice");
    import_csv(&service, "csv", "skip");
    let again = import_csv(&service, "csv", "skip");
    assert_eq!(item(&again, "Prod/Web/web 1")["status"], "unchanged");
    assert_eq!(again["summary"]["created"], 0);
}
