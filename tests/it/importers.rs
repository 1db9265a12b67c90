//! Importers from other SSH clients and the interchange exports (docs/import.md,
//! docs/import-formats.md), black-box: each format from realistic sample files
//! (`tests/samples/import/`) with its known traps, re-import (twice = nothing new, a changed
//! source updates, an edit here is kept), dry runs, encodings, saved passwords opened only
//! when asked, and the exports read back.

use serde_json::{json, Value};

use crate::support::{base64, Response, Service};

mod export;
mod mobaxterm;
mod mremoteng;
mod putty;
mod reimport;
mod remmina;
mod requests;
mod securecrt;
mod tabular;
mod winscp;

/// The bytes of `tests/samples/import/<path>`.
fn sample(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/samples/import/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|err| panic!("{full}: {err}"))
}

/// A `files` entry carrying `bytes` as `content_base64`.
fn file(name: &str, bytes: &[u8]) -> Value {
    json!({"name": name, "content_base64": base64(bytes, b"+/")})
}

/// `POST /api/import/<format>` with `files` and the other body fields of `extra`.
fn import(service: &Service, format: &str, files: Vec<Value>, extra: Value) -> Response {
    let mut body = json!({"files": files});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    service.post(&format!("/api/import/{format}"), &body)
}

/// The answer's item whose `source_id` is `source_id`.
fn item<'a>(answer: &'a Value, source_id: &str) -> &'a Value {
    answer["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["source_id"] == source_id))
        .unwrap_or_else(|| panic!("no item {source_id} in {answer:#}"))
}

/// The field a 400 `VALIDATION_ERROR` names (its `details` are `<field>: <rule>`).
fn field_of(response: &Response) -> String {
    let body = response.assert_error(400, "VALIDATION_ERROR");
    let details = body["details"].as_str().unwrap_or_default();
    details.split(": ").next().unwrap_or_default().to_owned()
}

/// The password a `connect` answer hands out: the host's own (`credentials.password`), or
/// its identity's password method's (`credentials.methods[].password`); null when none.
fn connect_password(connected: &Value) -> Value {
    let credentials = &connected["credentials"];
    if !credentials["password"].is_null() {
        return credentials["password"].clone();
    }
    credentials["methods"]
        .as_array()
        .and_then(|methods| methods.iter().find(|method| method["type"] == "password"))
        .map(|method| method["password"].clone())
        .unwrap_or(Value::Null)
}
