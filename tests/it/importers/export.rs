//! The interchange exports (docs/import.md, "Export"): the CSV with effective values that the
//! `csv` importer reads back into the same catalogue, Termius's template, the JSON document,
//! and passwords only with `?secrets=include`, audited.

use serde_json::{json, Value};

use super::{import, item};
use crate::support::Service;

/// A group `Prod/Web` whose defaults give the user, a bastion, and a host below it that
/// inherits its user and goes through the bastion; returns (bastion id, web id).
fn catalogue(service: &Service) -> (String, String) {
    let prod = service
        .post("/api/groups", &json!({"name": "Prod"}))
        .expect(201);
    let web = service
        .post(
            "/api/groups",
            &json!({"name": "Web", "parent_id": prod["id"], "defaults": {"username": "deploy"}}),
        )
        .expect(201);
    let bastion = service
        .post(
            "/api/hosts",
            &json!({"name": "bastion", "hostname": "192.0.2.1", "port": 2222, "username": "jump",
                    "auth": {"type": "agent"}}),
        )
        .expect(201);
    let host = service
        .post(
            "/api/hosts",
            &json!({"name": "web, \"one\"", "hostname": "web1.example.com", "group_id": web["id"],
                    "auth": {"type": "password", "password": "Export-pw-51d3"},
                    "tags": ["prod", "web"], "notes": "line one\nline two",
                    "jump_host_ids": [bastion["id"]]}),
        )
        .expect(201);
    (
        bastion["id"].as_str().unwrap().to_owned(),
        host["id"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn the_csv_export_writes_effective_values_in_the_import_header_and_quotes_by_rfc_4180() {
    let service = Service::start("export-csv");
    catalogue(&service);
    let response = service.get("/api/export/csv");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    let text = response.text();
    let mut lines = text.split("\r\n");
    assert_eq!(
        lines.next(),
        Some("name,hostname,port,username,auth,password,group_path,tags,notes,proxy_jump")
    );
    assert_eq!(lines.next(), Some("bastion,192.0.2.1,2222,jump,agent,,,,,"));
    // The inherited user and port resolved, the password left out, the chain as addresses.
    assert!(
        text.contains(
            "\"web, \"\"one\"\"\",web1.example.com,22,deploy,password,,Prod/Web,prod;web,\"line one\nline two\",jump@192.0.2.1:2222\r\n"
        ),
        "{text}"
    );
    assert!(!text.contains("Export-pw-51d3"));
}

#[test]
fn the_csv_export_imports_back_into_the_same_catalogue() {
    let source = Service::start("export-roundtrip-source");
    catalogue(&source);
    let text = source.get("/api/export/csv?secrets=include").text();
    let target = Service::start("export-roundtrip-target");
    let file = json!({"name": "export.csv", "content": text});
    let answer = import(&target, "csv", vec![file], json!({"secrets": "import"})).expect(200);
    assert_eq!(answer["summary"]["created"], 2, "{answer:#}");
    let web = item(&answer, "Prod/Web/web, \"one\"");
    assert_eq!(web["secret"], "imported");
    let id = web["id"].as_str().unwrap();
    let host = target.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(host["hostname"], "web1.example.com");
    assert_eq!(host["username"], "deploy");
    assert_eq!(host["tags"], json!(["prod", "web"]));
    assert_eq!(host["notes"], "line one\nline two");
    let bastion = item(&answer, "bastion")["id"].clone();
    assert_eq!(host["jump_host_ids"], json!([bastion]), "{answer:#}");
    let connected = target
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    assert_eq!(connected["credentials"]["password"], "Export-pw-51d3");
    // And the export of the copy is the export of the original.
    assert_eq!(target.get("/api/export/csv?secrets=include").text(), text);
}

#[test]
fn the_termius_export_writes_its_template() {
    let service = Service::start("export-termius");
    catalogue(&service);
    let text = service.get("/api/export/termius-csv").text();
    let mut lines = text.split("\r\n");
    assert_eq!(
        lines.next(),
        Some("Groups,Label,Tags,Hostname/IP,Protocol,Port,Username,Password")
    );
    assert_eq!(lines.next(), Some(",bastion,,192.0.2.1,ssh,2222,jump,"));
    assert_eq!(
        lines.next(),
        Some("Prod/Web,\"web, \"\"one\"\"\",\"prod,web\",web1.example.com,ssh,22,deploy,")
    );
}

#[test]
fn the_json_export_holds_every_kind_and_passwords_only_when_asked() {
    let service = Service::start("export-json");
    let (_, web) = catalogue(&service);
    let document = service.get("/api/export/json").expect(200);
    assert_eq!(document["format"], "host-manager");
    assert_eq!(document["version"], 1);
    assert_eq!(document["groups"].as_array().unwrap().len(), 2);
    assert_eq!(document["hosts"].as_array().unwrap().len(), 2);
    assert!(document["identities"].is_array() && document["keys"].is_array());
    assert!(!document.to_string().contains("Export-pw-51d3"));
    let with = service.get("/api/export/json?secrets=include").expect(200);
    let host = with["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|host| host["id"] == web.as_str())
        .unwrap();
    assert_eq!(host["password"], "Export-pw-51d3");
}

#[test]
fn an_export_with_secrets_is_audited_with_a_count_and_a_bad_value_is_400() {
    let service = Service::start("export-audit");
    catalogue(&service);
    assert_eq!(service.get("/api/export/csv?secrets=include").status, 200);
    assert_eq!(service.get("/api/export/csv").status, 200);
    let audit = service.get("/api/audit?limit=1000").expect(200);
    let exports: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["event"] == "secrets.exported")
        .collect();
    assert_eq!(exports.len(), 1, "only the export with secrets: {audit:#}");
    assert_eq!(
        exports[0]["detail"],
        json!({"format": "csv", "passwords": 1})
    );
    assert!(!audit.to_string().contains("Export-pw-51d3"));
    let refused = service.get("/api/export/csv?secrets=yes");
    let body = refused.assert_error(400, "VALIDATION_ERROR");
    assert!(
        body["details"].as_str().unwrap().contains("secrets"),
        "{body}"
    );
    assert_eq!(service.get("/api/export/csv?secrets=exclude").status, 200);
}

#[test]
fn exports_need_the_vault_unlocked() {
    let service = Service::start("export-locked");
    catalogue(&service);
    service
        .put(
            "/api/vault/password",
            &json!({"new_password": "export master 1"}),
        )
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    for path in [
        "/api/export/csv",
        "/api/export/termius-csv",
        "/api/export/json",
    ] {
        service.get(path).assert_error(401, "VAULT_LOCKED");
    }
}
