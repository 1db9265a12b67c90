//! Port forwards, startup command and environment (docs/forwards.md), black-box: the rule
//! routes under hosts and groups, every edge of the rules' table, port conflicts, the host
//! fields `remote_command`, `request_tty`, `set_env` and `send_env` (secret values never
//! answered but by `connect`), `connect`'s and the effective view's answer, the export as
//! OpenSSH's own `ssh -G` reads it, the import back, and real tunnels through a test sshd
//! from the exported config.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::interop::{current_user, Sshd};
use crate::support::{fresh_dir, id_of, Response, Service};

mod conflicts;
mod connect;
mod environment;
mod export;
mod feed;
mod import;
mod net;
mod rules;
mod tunnels;
mod validation;

/// sshd lines the forward tests need (the test sshd's own defaults follow them): forwards
/// allowed, remote forwards bound on loopback only, the test's variables accepted.
const FORWARD_SSHD: &str = "AllowTcpForwarding yes\nAllowStreamLocalForwarding yes\n\
    GatewayPorts no\nPermitTTY yes\nAcceptEnv HM_*\n";

/// A test sshd on a loopback port that allows forwards and accepts `HM_*` variables.
fn forward_sshd(name: &str) -> Sshd {
    Sshd::start_with_config(name, FORWARD_SSHD)
}

/// An ed25519 key made by ssh-keygen in `dir` (no passphrase): its private key file and its
/// public line.
fn client_key(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("client_key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "", "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success(), "ssh-keygen");
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, public.trim().to_owned())
}

/// A host `name` (agent auth, at `<name>.example.com`) with `extra` fields; its id.
fn host(service: &Service, name: &str, extra: Value) -> String {
    let hostname = format!("{}.example.com", name.to_lowercase());
    let body = crate::support::host_body(name, &hostname, extra);
    id_of(&service.post("/api/hosts", &body).expect(201))
}

/// `/api/hosts/<id>/forwards`.
fn host_rules(id: &str) -> String {
    format!("/api/hosts/{id}/forwards")
}

/// `/api/groups/<id>/forwards`.
fn group_rules(id: &str) -> String {
    format!("/api/groups/{id}/forwards")
}

/// POSTs `body` to the rules at `path`, expecting 201; the created rule.
fn add_rule(service: &Service, path: &str, body: Value) -> Value {
    service.post(path, &body).expect(201)
}

/// The error's `details` text.
fn details(error: &Value) -> String {
    error["details"].as_str().unwrap_or_default().to_owned()
}

/// Asserts a 400 `VALIDATION_ERROR` whose `details` starts with `field`.
#[track_caller]
fn assert_invalid(response: &Response, field: &str) -> Value {
    let error = response.assert_error(400, "VALIDATION_ERROR");
    assert!(
        details(&error).starts_with(field),
        "details should name {field}: {error}"
    );
    error
}

/// The export's text with `~/.ssh/host-manager/` pointed at `dir`, the private key of
/// `connect`'s answer written where it then says (`<dir>/<key_id>`, mode 0600), written to
/// `<dir>/exported.conf`; its path.
fn usable_export(service: &Service, answer: &Value, dir: &Path) -> PathBuf {
    use crate::support::WithMode;
    let credentials = &answer["credentials"];
    let key_id = credentials["key_id"].as_str().expect("a key host");
    let key_file = dir.join(key_id);
    if !key_file.exists() {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .with_mode(0o600)
            .open(&key_file)
            .unwrap();
        let private_key = credentials["private_key"].as_str().expect("private_key");
        std::io::Write::write_all(&mut file, private_key.as_bytes()).unwrap();
    }
    let text = service
        .get("/api/export/ssh-config")
        .text()
        .replace("~/.ssh/host-manager/", &format!("{}/", dir.display()));
    let config = dir.join("exported.conf");
    std::fs::write(&config, text).unwrap();
    config
}

/// A key host on `sshd` (a key the service generated, authorized there, logging in as the
/// current user) with `extra` fields: (host id, its `connect` answer).
fn sshd_host(service: &Service, sshd: &Sshd, name: &str, extra: Value) -> (String, Value) {
    let key = service
        .post("/api/keys", &json!({"name": name, "type": "ed25519"}))
        .expect(201);
    sshd.authorize(key["public_key"].as_str().unwrap());
    let mut body = json!({"name": name, "hostname": "127.0.0.1", "port": sshd.port,
        "username": current_user(), "auth": {"type": "key", "key_id": key["id"]}});
    for (field, value) in extra.as_object().unwrap() {
        body[field] = value.clone();
    }
    let id = id_of(&service.post("/api/hosts", &body).expect(201));
    let answer = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    (id, answer)
}

/// The alias the export gave the host named `name` (the line after its name comment).
fn alias_in(export: &str, name: &str) -> String {
    let marker = format!("# host-manager name: {name}\nHost ");
    let at = export
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} not exported:\n{export}"));
    let rest = &export[at + marker.len()..];
    rest.lines().next().unwrap_or_default().to_owned()
}

/// A fresh directory for a test's files.
fn work_dir(name: &str) -> PathBuf {
    fresh_dir(name)
}
