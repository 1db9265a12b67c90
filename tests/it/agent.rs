//! The SSH agent (docs/agent.md "SSH agent") with real OpenSSH as the oracle: `ssh-add` lists,
//! adds and removes through the socket, `ssh` logs in to a throwaway sshd through it with
//! every key type and no private key file, locking the vault empties it, approvals gate
//! signatures, forwarding follows each key's policy, its lock, unlock and policy changes
//! reach the audit log and the change feed; and the socket's own rules.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::agent_wire::{
    assert_a_stalled_message_closes_its_connection, assert_lists_and_signs_every_key_type,
    assert_locked_vault_lists_and_signs_nothing, closed, exchange, key_blob, read_answer,
    sign_request, waiting_sign_requests, DEADLINE,
};
use crate::interop::{assert_logged_in, current_user, Sshd};
use crate::support::{fresh_dir, host_body, id_of, vault_audit, wait_until, Options, Service};

/// The agent's socket, as `GET /api/agent` gives it.
fn socket(service: &Service) -> PathBuf {
    let status = service.get("/api/agent").expect(200);
    assert_eq!(status["enabled"], true, "{status}");
    PathBuf::from(status["socket"].as_str().expect("socket path"))
}

/// What a login through the agent needs, around `service`: a throwaway sshd, the agent's
/// socket, and a work dir for the files the desktop app would write (named after `name`).
fn rig(service: Service, name: &str) -> (Sshd, Service, PathBuf, PathBuf) {
    let sshd = Sshd::start(&format!("{name}-sshd"));
    let socket = socket(&service);
    (sshd, service, socket, fresh_dir(&format!("{name}-work")))
}

/// A host `h` that authenticates with `key`; its id.
fn key_host(service: &Service, key: &Value) -> String {
    let auth = json!({"auth": {"type": "key", "key_id": key["id"]}});
    id_of(
        &service
            .post("/api/hosts", &host_body("h", "h.example.com", auth))
            .expect(201),
    )
}

/// `ssh-add ARGS` against `socket`, with no terminal and no askpass.
fn ssh_add(socket: &Path, args: &[&str]) -> Output {
    Command::new("ssh-add")
        .args(args)
        .env("SSH_AUTH_SOCK", socket)
        .env_remove("SSH_ASKPASS")
        .env_remove("DISPLAY")
        .stdin(Stdio::null())
        .output()
        .expect("ssh-add runs (openssh-client)")
}

/// `ssh-add ARGS` whose passphrase prompts are answered with `answer` through SSH_ASKPASS.
fn ssh_add_answering(socket: &Path, dir: &Path, answer: &str, args: &[&str]) -> Output {
    let askpass = dir.join("askpass");
    if !askpass.exists() {
        std::fs::write(&askpass, "#!/bin/sh\nprintf '%s\\n' \"$HM_TEST_ANSWER\"\n").unwrap();
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    Command::new("ssh-add")
        .args(args)
        .env("SSH_AUTH_SOCK", socket)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .env("HM_TEST_ANSWER", answer)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-add runs")
}

/// The fingerprints `ssh-add -l` lists (field 2 of each line).
fn listed(socket: &Path) -> Vec<String> {
    let output = ssh_add(socket, &["-l"]);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter(|field| field.starts_with("SHA256:"))
        .map(str::to_owned)
        .collect()
}

/// `ssh-keygen -t ... -f DIR/NAME` without a passphrase; the private key file's path.
fn keygen(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-N", "", "-C", &format!("{name}@test"), "-f"])
        .arg(&path)
        .args(args)
        .status()
        .expect("ssh-keygen runs");
    assert!(status.success());
    path
}

/// Field 2 of `ssh-keygen -lf FILE`: the oracle for every fingerprint.
fn keygen_fingerprint(file: &Path) -> String {
    let output = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(file)
        .output()
        .expect("ssh-keygen runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .nth(1)
        .expect("a fingerprint")
        .to_owned()
}

/// Imports the private key file `path` through `POST /api/keys`; the Key object.
fn import(service: &Service, name: &str, path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    service
        .post("/api/keys", &json!({"name": name, "private_key": text}))
        .expect(201)
}

/// Generates a key of `body` in the service; the Key object.
fn generate(service: &Service, body: Value) -> Value {
    service.post("/api/keys", &body).expect(201)
}

fn set_policy(service: &Service, key: &Value, agent: Value) -> Value {
    let path = format!("/api/keys/{}", key["id"].as_str().unwrap());
    service.put(&path, &json!({ "agent": agent })).expect(200)
}

/// A key-auth host for `key` on the local sshd; its id.
fn host_for(service: &Service, sshd: &Sshd, key: &Value) -> String {
    let host = service
        .post(
            "/api/hosts",
            &json!({"name": format!("sshd {}", key["name"].as_str().unwrap()),
                    "hostname": "127.0.0.1", "port": sshd.port, "username": current_user(),
                    "auth": {"type": "key", "key_id": key["id"]}}),
        )
        .expect(201);
    host["id"].as_str().unwrap().to_owned()
}

/// `ssh` to the local sshd through the agent at `socket`, offering only the key whose
/// public half is in `public_file` (as the agent export sets it up), running `echo hello`.
fn ssh_via_agent(sshd: &Sshd, socket: &Path, public_file: &Path) -> Command {
    let agent = format!("IdentityAgent={}", socket.display());
    let mut command = sshd.ssh(
        &current_user(),
        public_file,
        &["-o", &agent, "-o", "BatchMode=yes"],
    );
    command
        .args(["echo", "hello"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("SSH_AUTH_SOCK");
    command
}

/// What the app does with `connect?agent=true`: writes the public key where the ssh config
/// export points (`<dir>/<key_id>.pub`), never a private key. The file's path and the
/// answer's credentials.
fn connect_via_agent(service: &Service, host: &str, dir: &Path) -> (PathBuf, Value) {
    let answer = service
        .post(&format!("/api/hosts/{host}/connect?agent=true"), &json!({}))
        .expect(200);
    let credentials = answer["credentials"].clone();
    assert!(credentials.get("private_key").is_none(), "{credentials}");
    assert!(credentials.get("passphrase").is_none(), "{credentials}");
    let path = dir.join(format!(
        "{}.pub",
        credentials["key_id"].as_str().expect("key_id")
    ));
    std::fs::write(
        &path,
        format!(
            "{}\n",
            credentials["public_key"].as_str().expect("public_key")
        ),
    )
    .unwrap();
    (path, credentials)
}

/// No file under `dir` holds a private key.
#[track_caller]
fn assert_no_private_key_file(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read(entry.path()).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains("PRIVATE KEY"),
            "{} holds a private key",
            entry.path().display()
        );
    }
}

/// Sets a master password (the vault then can lock).
fn set_password(service: &Service, password: &str) {
    service
        .put("/api/vault/password", &json!({ "new_password": password }))
        .expect(200);
}

/// Polls `GET /api/agent/requests` until a request waits; the first one.
fn wait_for_request(service: &Service) -> Value {
    let mut found = Value::Null;
    let appeared = wait_until(DEADLINE, || {
        let items = service.get("/api/agent/requests").expect(200)["items"].clone();
        found = items[0].clone();
        !found.is_null()
    });
    assert!(
        appeared,
        "no sign request appeared in GET /api/agent/requests"
    );
    found
}

/// Waits for `child` to exit within the deadline; its output.
fn finish(mut child: std::process::Child) -> Output {
    let exited = wait_until(DEADLINE, || matches!(child.try_wait(), Ok(Some(_))));
    if !exited {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    assert!(exited, "ssh did not finish: {output:?}");
    output
}

/// The `agent.*` entries of the audit log, oldest first.
fn agent_audit(service: &Service) -> Vec<Value> {
    let page = service.get("/api/audit?limit=1000").expect(200);
    let mut entries: Vec<Value> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["event"].as_str().unwrap().starts_with("agent."))
        .cloned()
        .collect();
    entries.reverse();
    entries
}

/// The `detail` of an audit entry, parsed (it is a JSON object, as text or as JSON).
fn detail(entry: &Value) -> Value {
    match &entry["detail"] {
        Value::String(text) => serde_json::from_str(text).unwrap(),
        other => other.clone(),
    }
}

#[test]
fn ssh_add_lists_the_enabled_keys_with_the_fingerprints_ssh_keygen_prints() {
    let dir = fresh_dir("agent-list-keys");
    let service = Service::start("agent-list");
    let socket = socket(&service);
    let mut expected = Vec::new();
    let mut disabled = String::new();
    for (name, args) in [
        ("ed", &["-t", "ed25519"][..]),
        ("rsa", &["-t", "rsa", "-b", "3072"]),
        ("p384", &["-t", "ecdsa", "-b", "384"]),
        ("off", &["-t", "ecdsa", "-b", "256"]),
    ] {
        let path = keygen(&dir, name, args);
        let key = import(&service, name, &path);
        let fingerprint = keygen_fingerprint(&path.with_extension("pub"));
        assert_eq!(key["fingerprint"], fingerprint.as_str());
        assert_eq!(
            key["agent"],
            json!({"enabled": true, "confirm": "never", "forwarded": "deny"})
        );
        if name == "off" {
            set_policy(&service, &key, json!({"enabled": false}));
            disabled = fingerprint;
        } else {
            expected.push(fingerprint);
        }
    }
    let mut got = listed(&socket);
    got.sort();
    expected.sort();
    assert_eq!(
        got, expected,
        "ssh-add -l lists the enabled keys, by ssh-keygen's fingerprints"
    );
    assert!(!got.contains(&disabled));
    let status = service.get("/api/agent").expect(200);
    let mut served: Vec<String> = status["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["fingerprint"].as_str().unwrap().to_owned())
        .collect();
    served.sort();
    assert_eq!(served, expected);
    assert_eq!(status["pending"], 0);
    // The names are what ssh-add prints after the fingerprint.
    let text = String::from_utf8_lossy(&ssh_add(&socket, &["-l"]).stdout).into_owned();
    assert!(
        text.contains(" ed (ED25519)") && text.contains(" rsa (RSA)"),
        "{text}"
    );
}

#[test]
fn ssh_logs_in_through_the_agent_with_every_key_type_and_no_private_key_file() {
    let (sshd, service, socket, work) = rig(Service::start("agent-login"), "agent-login");
    let keys: Vec<Value> = [
        json!({"name": "ed", "type": "ed25519"}),
        json!({"name": "p256", "type": "ecdsa", "bits": 256}),
        json!({"name": "p384", "type": "ecdsa", "bits": 384}),
        json!({"name": "p521", "type": "ecdsa", "bits": 521}),
        json!({"name": "rsa", "type": "rsa", "bits": 2048}),
    ]
    .into_iter()
    .map(|body| generate(&service, body))
    .collect();
    let authorized: Vec<&str> = keys
        .iter()
        .map(|key| key["public_key"].as_str().unwrap())
        .collect();
    sshd.authorize(&authorized.join("\n"));
    for key in &keys {
        let host = host_for(&service, &sshd, key);
        let (public_file, credentials) = connect_via_agent(&service, &host, &work);
        assert_eq!(credentials["identity_agent"], socket.to_str().unwrap());
        let output = ssh_via_agent(&sshd, &socket, &public_file)
            .output()
            .unwrap();
        assert_logged_in(&output, &sshd);
        // sshd names the key it accepted: this login used this key, through the agent.
        let fingerprint = key["fingerprint"].as_str().unwrap();
        assert!(
            sshd.log()
                .contains(&format!("Accepted publickey for {}", current_user()))
                && sshd.log().contains(fingerprint),
            "sshd did not accept {}: {}",
            key["name"],
            sshd.log()
        );
    }
    assert_no_private_key_file(&work);
    // Every signature is in the audit log, with its key.
    let signed: Vec<String> = agent_audit(&service)
        .iter()
        .filter(|entry| entry["event"] == "agent.signed")
        .map(|entry| detail(entry)["fingerprint"].as_str().unwrap().to_owned())
        .collect();
    let fingerprints: Vec<String> = keys
        .iter()
        .map(|key| key["fingerprint"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        signed, fingerprints,
        "one audited signature per login, in order"
    );
}

#[test]
fn the_agent_export_logs_in_with_ssh_and_only_the_public_key_file_written() {
    let (sshd, service, socket, work) = rig(Service::start("agent-export"), "agent-export");
    let key = generate(&service, json!({"name": "deploy", "type": "ed25519"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    host_for(&service, &sshd, &key);
    let config = service.get("/api/export/ssh-config?agent=true");
    assert_eq!(config.status, 200);
    let key_id = key["id"].as_str().unwrap();
    let text = config
        .text()
        .replace("~/.ssh/host-manager/", &format!("{}/", work.display()));
    assert!(
        text.contains(&format!("IdentityFile {}/{key_id}.pub", work.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("IdentityAgent {}", socket.display())),
        "{text}"
    );
    assert!(text.contains("IdentitiesOnly yes"), "{text}");
    std::fs::write(work.join("config"), format!("{text}\nHost *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    BatchMode yes\n")).unwrap();
    std::fs::write(
        work.join(format!("{key_id}.pub")),
        format!("{}\n", key["public_key"].as_str().unwrap()),
    )
    .unwrap();
    let output = Command::new("ssh")
        .arg("-F")
        .arg(work.join("config"))
        .args(["sshd-deploy", "echo", "hello"])
        .stdin(Stdio::null())
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .unwrap();
    assert_logged_in(&output, &sshd);
    assert_no_private_key_file(&work);
}

#[test]
fn ssh_add_adds_a_key_that_then_appears_in_get_api_keys_and_ssh_add_d_only_disables_it() {
    let dir = fresh_dir("agent-add-keys");
    let service = Service::start("agent-add");
    let socket = socket(&service);
    let path = keygen(&dir, "laptop", &["-t", "ed25519"]);
    let fingerprint = keygen_fingerprint(&path.with_extension("pub"));
    let output = ssh_add(&socket, &[path.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let keys = service.get("/api/keys").expect(200)["items"].clone();
    let added = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["fingerprint"] == fingerprint.as_str())
        .unwrap_or_else(|| panic!("the added key is not in GET /api/keys: {keys}"))
        .clone();
    assert_eq!(added["name"], "laptop@test", "named after its comment");
    assert_eq!(added["agent"]["enabled"], true);
    assert_eq!(listed(&socket), vec![fingerprint.clone()]);
    // The same key again: offered, not stored twice.
    assert!(ssh_add(&socket, &[path.to_str().unwrap()]).status.success());
    assert_eq!(
        service.get("/api/keys").expect(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let removed = ssh_add(
        &socket,
        &["-d", path.with_extension("pub").to_str().unwrap()],
    );
    assert!(removed.status.success(), "{removed:?}");
    assert!(listed(&socket).is_empty());
    let kept = service
        .get(&format!("/api/keys/{}", added["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(
        kept["agent"]["enabled"], false,
        "still in the vault, no longer offered"
    );
    // Adding it again offers it again: an edit of the key, as the disabling was.
    assert!(ssh_add(&socket, &[path.to_str().unwrap()]).status.success());
    assert_eq!(listed(&socket), vec![fingerprint]);
    let offered = service
        .get(&format!("/api/keys/{}", added["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(offered["agent"]["enabled"], true);
    let revisions = [&added, &kept, &offered].map(|key| key["revision"].as_i64().unwrap());
    assert!(
        revisions[0] < revisions[1] && revisions[1] < revisions[2],
        "{revisions:?}"
    );
    assert!(ssh_add(&socket, &["-D"]).status.success());
    assert!(listed(&socket).is_empty());
    let events: Vec<String> = agent_audit(&service)
        .iter()
        .map(|entry| entry["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        events,
        [
            "agent.key_added",
            "agent.keys_disabled",
            "agent.keys_disabled"
        ],
        "added once, disabled by -d then -D (adding it again only offered it)"
    );
    assert_eq!(
        service.get("/api/keys").expect(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn ssh_add_with_a_lifetime_is_refused_and_with_confirm_sets_confirm_always() {
    let dir = fresh_dir("agent-add-constraints");
    let service = Service::start("agent-add-constraints");
    let socket = socket(&service);
    let timed = keygen(&dir, "timed", &["-t", "ed25519"]);
    let refused = ssh_add(&socket, &["-t", "60", timed.to_str().unwrap()]);
    assert!(
        !refused.status.success(),
        "a vault cannot forget a key after 60 s"
    );
    assert_eq!(service.get("/api/keys").expect(200)["items"], json!([]));
    let confirmed = keygen(&dir, "confirmed", &["-t", "ed25519"]);
    let output = ssh_add(&socket, &["-c", confirmed.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let keys = service.get("/api/keys").expect(200)["items"].clone();
    assert_eq!(keys[0]["agent"]["confirm"], "always");
}

#[test]
fn after_the_vault_locks_ssh_add_lists_none_and_a_login_fails_until_ssh_add_x_unlocks() {
    let (sshd, service, socket, work) = rig(Service::start("agent-lock"), "agent-lock");
    set_password(&service, "correct horse");
    let key = generate(&service, json!({"name": "ed", "type": "ed25519"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    assert_logged_in(
        &ssh_via_agent(&sshd, &socket, &public_file)
            .output()
            .unwrap(),
        &sshd,
    );
    service.post("/api/vault/lock", &json!({})).expect(200);
    let listing = ssh_add(&socket, &["-l"]);
    assert!(!listing.status.success());
    assert!(
        String::from_utf8_lossy(&listing.stdout).contains("The agent has no identities."),
        "{listing:?}"
    );
    let refused = ssh_via_agent(&sshd, &socket, &public_file)
        .output()
        .unwrap();
    assert!(
        !refused.status.success(),
        "a login through a locked vault must fail"
    );
    // ssh-add -X with a wrong password leaves it locked; with the master password unlocks.
    let wrong = ssh_add_answering(&socket, &work, "wrong horse", &["-X"]);
    assert!(!wrong.status.success());
    assert_eq!(service.get("/api/vault").expect(200)["vault_locked"], true);
    let right = ssh_add_answering(&socket, &work, "correct horse", &["-X"]);
    assert!(right.status.success(), "{right:?}");
    assert_eq!(service.get("/api/vault").expect(200)["vault_locked"], false);
    assert_eq!(listed(&socket).len(), 1);
    // ssh-add -x locks the vault itself.
    let locked = ssh_add_answering(&socket, &work, "anything", &["-x"]);
    assert!(locked.status.success(), "{locked:?}");
    assert_eq!(service.get("/api/vault").expect(200)["vault_locked"], true);
    assert!(listed(&socket).is_empty());
}

#[test]
fn ssh_add_x_without_a_master_password_is_refused_and_the_vault_stays_open() {
    let service = Service::start("agent-lock-no-password");
    let socket = socket(&service);
    let work = fresh_dir("agent-lock-no-password-work");
    let output = ssh_add_answering(&socket, &work, "anything", &["-x"]);
    assert!(!output.status.success());
    assert_eq!(service.get("/api/vault").expect(200)["vault_locked"], false);
}

#[test]
fn a_confirm_always_key_logs_in_only_after_the_approval_call_and_not_after_a_denial() {
    let (sshd, service, socket, work) = rig(Service::start("agent-confirm"), "agent-confirm");
    let key = generate(&service, json!({"name": "guarded", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "always"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    let host_key = keygen_fingerprint(&sshd.dir.join("host_key.pub"));
    // The known-hosts store trusts the server's key for this host: the agent then knows
    // which catalogue host a signature is for.
    let presented = std::fs::read_to_string(sshd.dir.join("host_key.pub")).unwrap();
    service
        .post(
            "/api/known-hosts/accept",
            &json!({"hostname": "127.0.0.1", "port": sshd.port, "public_key": presented.trim()}),
        )
        .expect(201);

    let since = service.get("/api/changes").expect(200)["next"].clone();
    let mut login = ssh_via_agent(&sshd, &socket, &public_file).spawn().unwrap();
    let request = wait_for_request(&service);
    assert_eq!(request["key_id"], key["id"]);
    assert_eq!(request["key_name"], "guarded");
    assert_eq!(request["reason"], "confirm");
    assert_eq!(request["forwarded"], false);
    assert_eq!(
        request["host_key_fingerprint"],
        host_key.as_str(),
        "the server, from session-bind"
    );
    assert_eq!(
        request["host_id"],
        host.as_str(),
        "the catalogue host, from the known-hosts store"
    );
    assert!(
        matches!(login.try_wait(), Ok(None)),
        "ssh waits for the decision"
    );
    assert_eq!(service.get("/api/agent").expect(200)["pending"], 1);
    let path = format!("/api/agent/requests/{}", request["id"].as_str().unwrap());
    service
        .post(&path, &json!({"decision": "maybe"}))
        .assert_error(400, "VALIDATION_ERROR");
    let decided = service
        .post(&path, &json!({"decision": "allow"}))
        .expect(200);
    assert_eq!(decided, json!({"id": request["id"], "decision": "allow"}));
    assert_logged_in(&finish(login), &sshd);
    service
        .post(&path, &json!({"decision": "allow"}))
        .assert_error(404, "AGENT_REQUEST_NOT_FOUND");

    login = ssh_via_agent(&sshd, &socket, &public_file).spawn().unwrap();
    let request = wait_for_request(&service);
    let path = format!("/api/agent/requests/{}", request["id"].as_str().unwrap());
    service
        .post(&path, &json!({"decision": "deny"}))
        .expect(200);
    let denied = finish(login);
    assert!(!denied.status.success(), "a denied request signs nothing");
    assert_eq!(service.get("/api/agent").expect(200)["pending"], 0);
    let signed: Vec<Value> = agent_audit(&service)
        .into_iter()
        .filter(|entry| entry["event"] == "agent.signed")
        .collect();
    assert_eq!(signed.len(), 1, "the approved signature only: {signed:?}");
    assert_eq!(signed[0]["subject"], "guarded");
    let detail = detail(&signed[0]);
    assert_eq!(detail["host_ids"], json!([host]));
    assert_eq!(detail["host_key_fingerprint"], host_key.as_str());
    assert_eq!(detail["forwarded"], false);
    assert_eq!(detail["approved"], true);
    // Both requests came and went on the change feed, each before its decision was taken.
    let feed = service
        .get(&format!("/api/changes?since={since}&limit=1000"))
        .expect(200);
    let requests: Vec<(String, String)> = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["kind"] == "agent_request")
        .map(|entry| {
            let field = |name: &str| entry[name].as_str().unwrap().to_owned();
            (field("id"), field("op"))
        })
        .collect();
    assert_eq!(requests.len(), 4, "{requests:?}");
    assert_eq!(requests[0].1, "created");
    assert_eq!(requests[1], (requests[0].0.clone(), "deleted".to_owned()));
    assert_eq!(requests[2].1, "created");
    assert_eq!(requests[3], (requests[2].0.clone(), "deleted".to_owned()));
}

#[test]
fn an_undecided_request_fails_at_the_approval_timeout_and_ssh_does_not_hang() {
    let service = Service::start_env(
        "agent-timeout",
        &[("HOST_MANAGER_TEST_AGENT_APPROVAL_TIMEOUT_MS", "300")],
    );
    let (sshd, service, socket, work) = rig(service, "agent-timeout");
    let key = generate(&service, json!({"name": "guarded", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "always"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    let login = ssh_via_agent(&sshd, &socket, &public_file).spawn().unwrap();
    let output = finish(login);
    assert!(!output.status.success(), "nobody approved: no login");
    // The order of events, from the service's own log: asked, then given up.
    let log = service.stderr();
    let asked = log
        .find("waits for approval")
        .expect("the request was made");
    let gave_up = log.find("no decision in time").expect("it timed out");
    assert!(asked < gave_up, "{log}");
    assert!(service.get("/api/agent/requests").expect(200)["items"] == json!([]));
}

#[test]
fn once_per_host_asks_once_per_server_until_the_vault_locks() {
    let (sshd, service, socket, work) = rig(Service::start("agent-once"), "agent-once");
    set_password(&service, "correct horse");
    let key = generate(&service, json!({"name": "once", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "once_per_host"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    let approve_next_login = || {
        let login = ssh_via_agent(&sshd, &socket, &public_file).spawn().unwrap();
        let request = wait_for_request(&service);
        let path = format!("/api/agent/requests/{}", request["id"].as_str().unwrap());
        service
            .post(&path, &json!({"decision": "allow"}))
            .expect(200);
        assert_logged_in(&finish(login), &sshd);
    };
    approve_next_login();
    // Approved for this server: the next login signs without a request.
    let again = ssh_via_agent(&sshd, &socket, &public_file)
        .output()
        .unwrap();
    assert_logged_in(&again, &sshd);
    assert_eq!(service.get("/api/agent").expect(200)["pending"], 0);
    // A lock forgets the approval.
    service.post("/api/vault/lock", &json!({})).expect(200);
    service
        .post("/api/vault/unlock", &json!({"password": "correct horse"}))
        .expect(200);
    approve_next_login();
}

#[test]
fn forwarded_requests_see_and_use_only_keys_whose_policy_allows_forwarding() {
    let (sshd, service, socket, work) = rig(Service::start("agent-forward"), "agent-forward");
    let login_key = generate(&service, json!({"name": "login", "type": "ed25519"}));
    let allowed = generate(&service, json!({"name": "allowed", "type": "ed25519"}));
    set_policy(&service, &allowed, json!({"forwarded": "allow"}));
    sshd.authorize(login_key["public_key"].as_str().unwrap());
    std::fs::write(work.join("message"), b"signed remotely\n").unwrap();
    for key in [&login_key, &allowed] {
        std::fs::write(
            work.join(format!("{}.pub", key["name"].as_str().unwrap())),
            format!("{}\n", key["public_key"].as_str().unwrap()),
        )
        .unwrap();
    }
    // On the far side of `ssh -A`: list the forwarded agent, then sign with each key.
    let remote = format!(
        "ssh-add -l; for k in login allowed; do ssh-keygen -Y sign -n file -f {dir}/$k.pub \
         {dir}/message >/dev/null 2>&1 && echo signed-$k || echo refused-$k; rm -f {dir}/message.sig; done",
        dir = work.display()
    );
    let output = sshd
        .ssh(
            &current_user(),
            &work.join("login.pub"),
            &["-A", "-o", "BatchMode=yes"],
        )
        .arg(remote)
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{output:?}\n{}", sshd.log());
    let allowed_fp = allowed["fingerprint"].as_str().unwrap();
    let login_fp = login_key["fingerprint"].as_str().unwrap();
    assert!(
        text.contains(allowed_fp),
        "forwarding: allow is listed remotely: {text}"
    );
    assert!(
        !text.contains(login_fp),
        "forwarding: deny is hidden remotely: {text}"
    );
    assert!(text.contains("signed-allowed"), "{text}");
    assert!(text.contains("refused-login"), "{text}");
    // Locally, both are listed: the policy is about forwarding only.
    assert_eq!(listed(&socket).len(), 2);
    let forwarded: Vec<Value> = agent_audit(&service)
        .iter()
        .filter(|entry| entry["event"] == "agent.signed")
        .map(detail)
        .filter(|detail| detail["forwarded"] == true)
        .collect();
    assert_eq!(forwarded.len(), 1, "{forwarded:?}");
    assert_eq!(forwarded[0]["fingerprint"], allowed["fingerprint"]);
}

fn connect_socket(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    stream
}

/// The same checks run on Windows' named pipe (`agent_pipe`).
#[test]
fn the_agent_lists_and_signs_with_ed25519_ecdsa_and_rsa_sha2_keys_whose_signatures_verify() {
    let service = Service::start("agent-sign-every-type");
    let socket = socket(&service);
    assert_lists_and_signs_every_key_type(&service, || connect_socket(&socket));
}

#[test]
fn a_message_that_stops_arriving_closes_its_connection_after_the_message_timeout() {
    let service = Service::start_env(
        "agent-stalled",
        &[("HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS", "200")],
    );
    let socket = socket(&service);
    assert_a_stalled_message_closes_its_connection(&service, || connect_socket(&socket));
}

#[test]
fn while_the_vault_is_locked_a_connection_lists_no_key_and_gets_no_signature() {
    let service = Service::start("agent-locked-raw");
    let socket = socket(&service);
    assert_locked_vault_lists_and_signs_nothing(&service, || connect_socket(&socket));
}

#[test]
fn a_message_of_256_kib_is_answered_and_one_byte_more_closes_only_its_connection() {
    let service = Service::start("agent-oversized");
    let socket = socket(&service);
    let mut bystander = connect_socket(&socket);
    let mut at_limit = connect_socket(&socket);
    // An unknown message type of exactly the limit: answered FAILURE, connection kept.
    let mut largest = vec![0u8; 256 * 1024];
    largest[0] = 200;
    assert_eq!(exchange(&mut at_limit, &largest), Some(vec![5]));
    assert_eq!(exchange(&mut at_limit, &[11]), Some(vec![12, 0, 0, 0, 0]));
    let mut over = connect_socket(&socket);
    over.write_all(&(256u32 * 1024 + 1).to_be_bytes()).unwrap();
    assert!(
        closed(&mut over),
        "an oversized length closes the connection"
    );
    // The other connections go on.
    assert_eq!(exchange(&mut bystander, &[11]), Some(vec![12, 0, 0, 0, 0]));
    assert_eq!(exchange(&mut at_limit, &[11]), Some(vec![12, 0, 0, 0, 0]));
}

/// Which of the idle ones goes is `agent::connections`' unit tests' business: a thread
/// marks its connection idle just after its answer is written, so from outside the order
/// the answers arrived in is not quite the order the connections fell idle in.
#[test]
fn at_the_connection_cap_an_idle_connection_is_closed_so_ssh_add_is_served() {
    let service = Service::start("agent-connection-cap");
    let socket = socket(&service);
    // 64 connections, each answered once and then idle.
    let mut open: Vec<UnixStream> = (0..64).map(|_| connect_socket(&socket)).collect();
    for stream in &mut open {
        assert_eq!(exchange(stream, &[11]), Some(vec![12, 0, 0, 0, 0]));
    }
    // The vault holds no key: an answered `ssh-add -l` says so and exits 1 (2 when it
    // cannot talk to the agent).
    let output = ssh_add(&socket, &["-l"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("no identities"), "{said}");
    // Exactly one of the 64 made room; the others are still served.
    crate::agent_wire::assert_one_idle_connection_made_room(&service, &mut open);
}

#[test]
fn a_malformed_message_closes_its_connection_and_an_unknown_one_is_a_failure() {
    let service = Service::start("agent-malformed");
    let socket = socket(&service);
    let mut bystander = connect_socket(&socket);
    let mut unknown = connect_socket(&socket);
    for message_type in [1u8, 20, 24, 26, 99] {
        assert_eq!(
            exchange(&mut unknown, &[message_type]),
            Some(vec![5]),
            "{message_type}"
        );
    }
    let mut query = vec![27, 0, 0, 0, 5];
    query.extend_from_slice(b"query");
    assert_eq!(
        exchange(&mut unknown, &query),
        Some(vec![5]),
        "unknown extension"
    );
    // A sign request whose key blob claims more bytes than the message has.
    let mut malformed = connect_socket(&socket);
    assert_eq!(exchange(&mut malformed, &[13, 0, 0, 1, 0, 1, 2]), None);
    let mut zero = connect_socket(&socket);
    zero.write_all(&[0, 0, 0, 0]).unwrap();
    assert!(closed(&mut zero), "a zero length closes the connection");
    assert_eq!(exchange(&mut bystander, &[11]), Some(vec![12, 0, 0, 0, 0]));
    assert_eq!(exchange(&mut unknown, &[11]), Some(vec![12, 0, 0, 0, 0]));
    assert!(
        service.stderr().contains("malformed"),
        "the close is logged"
    );
}

#[test]
fn the_socket_is_0600_in_a_0700_directory_under_xdg_runtime_dir_and_removed_at_shutdown() {
    let runtime = fresh_dir("agent-runtime");
    let mut service = Service::start_env(
        "agent-runtime",
        &[("XDG_RUNTIME_DIR", &runtime.to_string_lossy())],
    );
    let socket = socket(&service);
    assert_eq!(
        socket.parent(),
        Some(runtime.join("host-manager").as_path())
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&runtime.join("host-manager")), 0o700);
    assert!(service
        .terminate(DEADLINE)
        .is_some_and(|status| status.success()));
    assert!(!socket.exists(), "the socket file goes with the service");
}

#[test]
fn without_a_runtime_dir_the_socket_is_in_the_data_dir() {
    let service = Service::start("agent-data-dir");
    assert_eq!(
        socket(&service),
        service.data_dir.canonicalize().unwrap().join("agent.sock")
    );
}

#[test]
fn no_agent_serves_no_socket_and_agent_modes_of_connect_and_export_are_409() {
    let service = Service::start_args("agent-off", &["--no-agent"]);
    let status = service.get("/api/agent").expect(200);
    assert_eq!(
        status,
        json!({
            "enabled": false,
            "socket": null,
            "location": null,
            "ssh_auth_sock": null,
            "identity_agent": null,
            "reason": "the SSH agent is not served (--no-agent)",
            "keys": [],
            "pending": 0
        })
    );
    assert!(!service.data_dir.join("agent.sock").exists());
    let key = generate(&service, json!({"name": "k", "type": "ed25519"}));
    let host = key_host(&service, &key);
    let path = format!("/api/hosts/{host}/connect");
    service
        .post(&format!("{path}?agent=true"), &json!({}))
        .assert_error(409, "AGENT_UNAVAILABLE");
    let plain = service.post(&path, &json!({})).expect(200);
    assert!(
        plain["credentials"]["private_key"].is_string(),
        "without ?agent=true as before"
    );
    service
        .get("/api/export/ssh-config?agent=true")
        .assert_error(409, "AGENT_UNAVAILABLE");
}

#[test]
fn connect_via_the_agent_is_409_for_a_disabled_key_or_an_unstored_passphrase() {
    let dir = fresh_dir("agent-connect-keys");
    let service = Service::start("agent-connect");
    let key = generate(&service, json!({"name": "off", "type": "ed25519"}));
    set_policy(&service, &key, json!({"enabled": false}));
    let locked_key = dir.join("locked");
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "secret", "-f"])
        .arg(&locked_key)
        .status()
        .unwrap();
    assert!(status.success());
    let encrypted = import(&service, "encrypted", &locked_key);
    for (key, why) in [(&key, "agent.enabled"), (&encrypted, "passphrase")] {
        let host = key_host(&service, key);
        let error = service
            .post(&format!("/api/hosts/{host}/connect?agent=true"), &json!({}))
            .assert_error(409, "AGENT_UNAVAILABLE");
        assert!(error["details"].as_str().unwrap().contains(why), "{error}");
    }
    let served = service.get("/api/agent").expect(200);
    assert_eq!(served["keys"], json!([]), "neither is offered");
}

#[test]
fn connect_agent_parameter_other_than_true_or_false_is_400() {
    let service = Service::start("agent-connect-param");
    let host = service.new_host("h");
    let path = format!("/api/hosts/{host}/connect");
    service
        .post(&format!("{path}?agent=yes"), &json!({}))
        .assert_error(400, "VALIDATION_ERROR");
    service
        .post(&format!("{path}?agent=false"), &json!({}))
        .expect(200);
}

#[test]
fn put_agent_policy_changes_only_the_named_fields_and_refuses_other_values() {
    let service = Service::start("agent-policy");
    let key = generate(&service, json!({"name": "k", "type": "ed25519"}));
    let path = format!("/api/keys/{}", key["id"].as_str().unwrap());
    let changed = service
        .put(&path, &json!({"agent": {"confirm": "once_per_host"}}))
        .expect(200);
    assert_eq!(
        changed["agent"],
        json!({"enabled": true, "confirm": "once_per_host", "forwarded": "deny"})
    );
    assert!(changed["updated_at"].as_str() > key["updated_at"].as_str());
    let changed = service
        .put(
            &path,
            &json!({"agent": {"enabled": false, "forwarded": "confirm"}}),
        )
        .expect(200);
    assert_eq!(
        changed["agent"],
        json!({"enabled": false, "confirm": "once_per_host", "forwarded": "confirm"})
    );
    for (body, field) in [
        (json!({"agent": "on"}), "agent"),
        (json!({"agent": {"enabled": 1}}), "agent.enabled"),
        (json!({"agent": {"confirm": "sometimes"}}), "agent.confirm"),
        (json!({"agent": {"forwarded": "ALLOW"}}), "agent.forwarded"),
    ] {
        let error = service
            .put(&path, &body)
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
    assert_eq!(
        service.get(&path).expect(200)["agent"],
        changed["agent"],
        "unchanged by refusals"
    );
}

#[test]
fn decision_on_an_unknown_request_is_404() {
    let service = Service::start("agent-decide-unknown");
    service
        .post(
            "/api/agent/requests/00000000-0000-4000-8000-000000000000",
            &json!({"decision": "allow"}),
        )
        .assert_error(404, "AGENT_REQUEST_NOT_FOUND");
    assert_eq!(
        service.get("/api/agent/requests").expect(200),
        json!({"items": []})
    );
}

/// A data dir whose path is `length` bytes, not made yet (the service makes it).
fn data_dir_of(name: &str, length: usize) -> PathBuf {
    let base = fresh_dir(name);
    let fill = length - base.as_os_str().len() - 1;
    base.join("d".repeat(fill))
}

/// Starts a service on `data_dir` with `env`.
fn start_on(name: &str, data_dir: &Path, env: &[(&str, &Path)]) -> Service {
    Service::start_with(
        name,
        Options {
            data_dir: Some(data_dir.to_path_buf()),
            env: env
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string_lossy().into_owned()))
                .collect(),
            ..Options::default()
        },
    )
}

/// The agent's socket and location, once `GET /api/agent` says it is enabled.
fn socket_at(service: &Service) -> (PathBuf, String) {
    let status = service.get("/api/agent").expect(200);
    assert_eq!(status["reason"], Value::Null, "{status}");
    let location = status["location"].as_str().expect("location").to_owned();
    (socket(service), location)
}

/// `ssh-add -l` through `socket` lists exactly `key`'s fingerprint.
fn assert_ssh_add_lists(socket: &Path, key: &Value) {
    assert_eq!(listed(socket), [key["fingerprint"].as_str().unwrap()]);
}

#[test]
fn a_200_byte_data_dir_without_a_runtime_dir_starts_and_its_agent_answers_ssh_add_from_a_private_temp_dir(
) {
    let tmp = fresh_dir("agent-long-tmp");
    let data_dir = data_dir_of("agent-long", 200);
    let mut service = start_on("agent-long", &data_dir, &[("TMPDIR", &tmp)]);
    let (socket, location) = socket_at(&service);
    assert_eq!(location, "temp_dir");
    let dir = socket.parent().unwrap().to_path_buf();
    assert_eq!(dir.parent(), Some(tmp.as_path()));
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("host-manager-") && name.len() == 21,
        "{name}"
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&dir), mode(&socket)), (0o700, 0o600));
    let key = generate(&service, json!({"name": "k", "type": "ed25519"}));
    assert_ssh_add_lists(&socket, &key);
    assert!(
        service
            .stderr()
            .contains(&format!("is {} bytes", 200 + "/agent.sock".len())),
        "the log says why the data dir was passed over"
    );
    assert!(service
        .terminate(DEADLINE)
        .is_some_and(|status| status.success()));
    assert!(!dir.exists(), "the private directory goes with the service");
}

#[test]
fn with_no_place_for_the_socket_the_service_starts_without_the_agent_says_why_and_serves_the_rest()
{
    // A regular file as TMPDIR: no private directory can be made in it (tests run as root,
    // so modes cannot stop one).
    let tmp = fresh_dir("agent-nowhere-tmp").join("file");
    std::fs::write(&tmp, b"not a directory").unwrap();
    let data_dir = data_dir_of("agent-nowhere", 200);
    let service = start_on("agent-nowhere", &data_dir, &[("TMPDIR", &tmp)]);
    let status = service.get("/api/agent").expect(200);
    assert_eq!(status["enabled"], false, "{status}");
    assert_eq!(status["socket"], Value::Null);
    assert_eq!(status["location"], Value::Null);
    let reason = status["reason"].as_str().expect("a reason").to_owned();
    for part in [
        "no place",
        "a Unix socket path holds at most",
        "cannot make a private directory",
    ] {
        assert!(reason.contains(part), "{part}: {reason}");
    }
    assert!(service.stderr().contains("WARN") && service.stderr().contains(&reason));
    // The rest of the API works; the agent's modes say why they cannot.
    let key = generate(&service, json!({"name": "k", "type": "ed25519"}));
    let host = key_host(&service, &key);
    let error = service
        .post(&format!("/api/hosts/{host}/connect?agent=true"), &json!({}))
        .assert_error(409, "AGENT_UNAVAILABLE");
    assert_eq!(error["details"], reason.as_str());
    service
        .get("/api/export/ssh-config?agent=true")
        .assert_error(409, "AGENT_UNAVAILABLE");
    assert_eq!(service.get("/api/export/ssh-config").status, 200);
    service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200);
    service.get("/api/agent/requests").expect(200);
}

#[test]
fn xdg_runtime_dir_naming_a_missing_directory_starts_with_the_socket_in_the_data_dir_and_logs_why()
{
    let missing = fresh_dir("agent-missing-runtime").join("gone");
    let service = Service::start_env(
        "agent-missing-runtime",
        &[("XDG_RUNTIME_DIR", &missing.to_string_lossy())],
    );
    let (socket, location) = socket_at(&service);
    assert_eq!(location, "data_dir");
    assert_eq!(
        socket,
        service.data_dir.canonicalize().unwrap().join("agent.sock")
    );
    let key = generate(&service, json!({"name": "k", "type": "ed25519"}));
    assert_ssh_add_lists(&socket, &key);
    assert!(!missing.exists(), "the missing runtime dir is not made");
    let stderr = service.stderr();
    assert!(
        stderr.contains(&format!(
            "cannot create {}",
            missing.join("host-manager").display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_stale_socket_left_by_a_kill_9_run_is_removed_and_the_next_start_listens_there() {
    let tmp = fresh_dir("agent-stale-tmp");
    // One data dir whose socket fits in it, one that needs a private temp directory.
    for (name, length) in [("agent-stale-short", 0), ("agent-stale-long", 200)] {
        let data_dir = match length {
            0 => fresh_dir(name).join("data"),
            _ => data_dir_of(name, length),
        };
        let mut first = start_on(name, &data_dir, &[("TMPDIR", &tmp)]);
        let (socket, location) = socket_at(&first);
        let key = generate(&first, json!({"name": "k", "type": "ed25519"}));
        first.child.kill().unwrap(); // SIGKILL: nothing is cleaned up
        first.child.wait().unwrap();
        assert!(socket.exists(), "{name}: the killed run left its socket");
        let second = start_on(name, &data_dir, &[("TMPDIR", &tmp)]);
        assert_eq!(socket_at(&second), (socket.clone(), location), "{name}");
        assert_ssh_add_lists(&socket, &key);
        assert!(
            second.stderr().contains("removed the stale socket"),
            "{name}"
        );
    }
}

#[test]
fn a_socket_another_process_listens_on_is_not_taken_and_the_agent_goes_to_a_temp_dir() {
    let tmp = fresh_dir("agent-live-tmp");
    let data_dir = fresh_dir("agent-live").join("data");
    std::fs::create_dir(&data_dir).unwrap();
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let theirs = data_dir.join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&theirs).unwrap();
    let service = start_on("agent-live", &data_dir, &[("TMPDIR", &tmp)]);
    let (socket, location) = socket_at(&service);
    assert_eq!(location, "temp_dir");
    assert!(socket.starts_with(&tmp), "{}", socket.display());
    // Theirs still works: a connection to it is queued at the test's listener by the time
    // `connect` returns, so an accept that does not wait finds it.
    let _client = UnixStream::connect(&theirs).expect("their socket is still there");
    listener.set_nonblocking(true).unwrap();
    listener.accept().expect("and still theirs");
    assert!(service.stderr().contains("another running agent owns it"));
}

/// Every change feed entry after `since` as `(kind, op)`, reading page after page (a page
/// ends at a lock entry) until one comes back empty.
fn feed_after(service: &Service, mut since: i64) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    loop {
        let page = service
            .get(&format!("/api/changes?since={since}"))
            .expect(200);
        let items = page["items"].as_array().unwrap().clone();
        if items.is_empty() {
            return seen;
        }
        for item in items {
            let kind = item["kind"].as_str().unwrap().to_owned();
            seen.push((kind, item["op"].as_str().unwrap().to_owned()));
        }
        since = page["next"].as_i64().unwrap();
    }
}

#[test]
fn ssh_add_x_and_capital_x_are_audited_by_the_agent_and_in_the_change_feed_and_a_wrong_one_only_audited(
) {
    let service = Service::start("agent-lock-logged");
    let socket = socket(&service);
    let work = fresh_dir("agent-lock-logged-work");
    set_password(&service, "correct horse");
    let since = service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap();
    let locked = ssh_add_answering(&socket, &work, "anything", &["-x"]);
    assert!(locked.status.success(), "{locked:?}");
    let wrong = ssh_add_answering(&socket, &work, "wrong horse", &["-X"]);
    assert!(!wrong.status.success());
    let right = ssh_add_answering(&socket, &work, "correct horse", &["-X"]);
    assert!(right.status.success(), "{right:?}");
    assert_eq!(
        feed_after(&service, since),
        [("vault", "locked"), ("vault", "unlocked")].map(|(k, o)| (k.to_owned(), o.to_owned())),
        "the agent's lock and unlock are in the feed; the wrong unlock is not"
    );
    let audit = vault_audit(&service);
    assert_eq!(
        audit[audit.len() - 3..],
        [
            ("vault.locked".to_owned(), json!({"by": "agent"})),
            (
                "vault.unlock_failed".to_owned(),
                json!({"consecutive_failures": 1})
            ),
            ("vault.unlocked".to_owned(), json!({"by": "agent"})),
        ]
    );
}

#[test]
fn a_policy_change_and_ssh_add_d_each_bump_the_key_revision_once_and_log_one_feed_entry() {
    let service = Service::start("agent-policy-revision");
    let socket = socket(&service);
    let key = generate(&service, json!({"name": "ed", "type": "ed25519"}));
    assert_eq!(key["revision"], 1);
    let since = service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap();
    let changed = set_policy(&service, &key, json!({"confirm": "always"}));
    assert_eq!(changed["revision"], 2);
    assert_eq!(changed["agent"]["confirm"], "always");
    let removed = ssh_add(&socket, &["-D"]);
    assert!(removed.status.success(), "{removed:?}");
    let path = format!("/api/keys/{}", key["id"].as_str().unwrap());
    let stored = service.get(&path).expect(200);
    assert_eq!(stored["revision"], 3);
    assert_eq!(stored["agent"]["enabled"], false);
    assert_eq!(
        feed_after(&service, since),
        [("key", "updated"), ("key", "updated")].map(|(k, o)| (k.to_owned(), o.to_owned()))
    );
}

/// The `subject`s of the `agent.forwarded_refused` audit entries, oldest first.
fn forwarded_refusals(service: &Service) -> Vec<String> {
    agent_audit(service)
        .iter()
        .filter(|entry| entry["event"] == "agent.forwarded_refused")
        .map(|entry| entry["subject"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_forwarded_connection_cannot_add_remove_lock_or_unlock_and_each_refusal_is_audited() {
    let (sshd, service, socket, work) =
        rig(Service::start("agent-forward-vault"), "agent-forward-vault");
    set_password(&service, "correct horse");
    let kept = generate(&service, json!({"name": "kept", "type": "ed25519"}));
    std::fs::write(
        work.join("kept.pub"),
        format!("{}\n", kept["public_key"].as_str().unwrap()),
    )
    .unwrap();
    // The login uses a key file of its own, so it works while the vault is locked too.
    let login = keygen(&work, "login", &["-t", "ed25519"]);
    sshd.authorize(
        std::fs::read_to_string(login.with_extension("pub"))
            .unwrap()
            .trim(),
    );
    keygen(&work, "added", &["-t", "ed25519"]);
    let askpass = work.join("askpass");
    std::fs::write(&askpass, "#!/bin/sh\nprintf '%s\\n' 'correct horse'\n").unwrap();
    std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
    // On the far side of `ssh -A`, as root there could: every request that changes the
    // vault, each with the right master password where one is asked.
    let forwarded = |remote: &str| {
        let script = format!(
            "export SSH_ASKPASS={askpass} SSH_ASKPASS_REQUIRE=force DISPLAY=:0; {remote}; echo done",
            askpass = askpass.display()
        );
        let output = sshd
            .ssh(&current_user(), &login, &["-A", "-o", "BatchMode=yes"])
            .arg(script)
            .env("SSH_AUTH_SOCK", &socket)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(text.contains("done"), "{output:?}\n{}", sshd.log());
        text
    };
    let dir = work.display();
    let text = forwarded(&format!(
        "ssh-add -D && echo removed-all; ssh-add -d {dir}/kept.pub && echo removed; \
         ssh-add {dir}/added && echo added; ssh-add -x && echo locked"
    ));
    for done in ["removed-all", "removed", "added", "locked"] {
        assert!(!text.contains(done), "{done}: {text}");
    }
    let keys = service.get("/api/keys").expect(200)["items"].clone();
    assert_eq!(keys.as_array().unwrap().len(), 1, "nothing added: {keys}");
    assert_eq!(
        keys[0]["agent"]["enabled"], true,
        "nothing disabled: {keys}"
    );
    assert_eq!(service.get("/api/vault").expect(200)["vault_locked"], false);
    assert_eq!(listed(&socket), [kept["fingerprint"].as_str().unwrap()]);

    service.post("/api/vault/lock", &json!({})).expect(200);
    let text = forwarded("ssh-add -X && echo unlocked");
    assert!(!text.contains("unlocked"), "{text}");
    assert_eq!(service.get("/api/health").expect(200)["vault_locked"], true);
    service
        .post("/api/vault/unlock", &json!({"password": "correct horse"}))
        .expect(200);
    assert_eq!(
        forwarded_refusals(&service),
        ["remove_all", "remove", "add", "lock", "unlock"]
    );
    assert!(service
        .stderr()
        .contains("agent: refused unlock on a forwarded connection"));
}

/// A relay at `at` between clients and the agent at `agent`: every message a client sends
/// goes on to the agent, its answer back, and a copy of the message to the receiver.
fn recording_relay(agent: &Path, at: &Path) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let listener = std::os::unix::net::UnixListener::bind(at).unwrap();
    let (sent, received) = std::sync::mpsc::channel();
    let agent = agent.to_path_buf();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(mut client), sent, agent) = (client, sent.clone(), agent.clone()) else {
                return;
            };
            std::thread::spawn(move || {
                let mut upstream = connect_socket(&agent);
                while let Some(message) = read_answer(&mut client) {
                    let _ = sent.send(message.clone());
                    let Some(answer) = exchange(&mut upstream, &message) else {
                        return;
                    };
                    let framed = [(answer.len() as u32).to_be_bytes().to_vec(), answer].concat();
                    if client.write_all(&framed).is_err() {
                        return;
                    }
                }
            });
        }
    });
    received
}

#[test]
fn a_once_per_host_approval_covers_logins_to_that_server_only_not_other_data_on_a_bound_connection()
{
    let (sshd, service, socket, work) = rig(Service::start("agent-once-scope"), "agent-once-scope");
    let key = generate(&service, json!({"name": "once", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "once_per_host"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    let relay = work.join("relay.sock");
    let copies = recording_relay(&socket, &relay);
    let login = ssh_via_agent(&sshd, &relay, &public_file).spawn().unwrap();
    let request = wait_for_request(&service);
    let path = format!("/api/agent/requests/{}", request["id"].as_str().unwrap());
    service
        .post(&path, &json!({"decision": "allow"}))
        .expect(200);
    assert_logged_in(&finish(login), &sshd);
    let messages: Vec<Vec<u8>> = copies.try_iter().collect();
    let bind = messages
        .iter()
        .find(|message| {
            message[0] == 27
                && message
                    .windows(24)
                    .any(|w| w == b"session-bind@openssh.com")
        })
        .expect("ssh bound its connection")
        .clone();
    let login_request = messages
        .iter()
        .find(|message| message[0] == 13)
        .expect("ssh asked for a signature")
        .clone();

    // Any local process can replay that binding on a connection of its own.
    let mut bound = connect_socket(&socket);
    assert_eq!(exchange(&mut bound, &bind), Some(vec![6]));
    // The login data of that session signs without a question: the approval covers it.
    let signed = exchange(&mut bound, &login_request).unwrap();
    assert_eq!(
        signed[0], 14,
        "a login to the approved server signs at once"
    );
    // Anything else (here what `ssh-keygen -Y sign` would send) is asked again.
    let other = sign_request(&key_blob(&key), b"SSHSIG\0\0\0\x03git");
    let asked = std::thread::spawn(move || exchange(&mut bound, &other));
    let request = wait_for_request(&service);
    assert_eq!(request["reason"], "confirm");
    let path = format!("/api/agent/requests/{}", request["id"].as_str().unwrap());
    service
        .post(&path, &json!({"decision": "deny"}))
        .expect(200);
    assert_eq!(asked.join().unwrap(), Some(vec![5]), "denied: no signature");
    let signed = agent_audit(&service)
        .iter()
        .filter(|entry| entry["event"] == "agent.signed")
        .count();
    assert_eq!(signed, 2, "the login and its replay only");
}

#[test]
fn refused_sign_requests_do_not_keep_the_vault_from_auto_locking() {
    let service = Service::start_with(
        "agent-auto-lock",
        Options {
            args: vec!["--auto-lock".into(), "1".into()],
            env: vec![("HOST_MANAGER_TEST_AUTO_LOCK_MS".into(), "300".into())],
            ..Options::default()
        },
    );
    let socket = socket(&service);
    set_password(&service, "pw");
    let key = generate(&service, json!({"name": "off", "type": "ed25519"}));
    set_policy(&service, &key, json!({"enabled": false}));
    let mut stream = connect_socket(&socket);
    let bogus = sign_request(&key_blob(&key), b"data");
    // A refused request every 20 ms, far more often than the 300 ms auto-lock: were they
    // activity, the vault would never lock.
    let locked = wait_until(DEADLINE, || {
        assert_eq!(exchange(&mut stream, &bogus), Some(vec![5]));
        service.get("/api/health").expect(200)["vault_locked"] == true
    });
    assert!(locked, "refused requests kept the vault open");
    assert!(service
        .stderr()
        .contains("vault locked after 300 ms without a request (--auto-lock)"));
}

#[test]
fn thirty_two_requests_waiting_on_other_connections_do_not_refuse_the_users_login() {
    let (sshd, service, socket, work) = rig(Service::start("agent-pending"), "agent-pending");
    let key = generate(&service, json!({"name": "guarded", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "always"}));
    sshd.authorize(key["public_key"].as_str().unwrap());
    let host = host_for(&service, &sshd, &key);
    let (public_file, _) = connect_via_agent(&service, &host, &work);
    // 32 other connections, each with a sign request waiting for the user.
    let blob = key_blob(&key);
    let flood = waiting_sign_requests(&service, || connect_socket(&socket), &blob, 32);
    let login = ssh_via_agent(&sshd, &socket, &public_file).spawn().unwrap();
    // The login's request is the one bound to a server.
    let mut mine = Value::Null;
    let appeared = wait_until(DEADLINE, || {
        let items = service.get("/api/agent/requests").expect(200)["items"].clone();
        mine = items
            .as_array()
            .unwrap()
            .iter()
            .find(|item| !item["host_key_fingerprint"].is_null())
            .cloned()
            .unwrap_or(Value::Null);
        !mine.is_null()
    });
    assert!(appeared, "the user's request waits as well");
    let path = format!("/api/agent/requests/{}", mine["id"].as_str().unwrap());
    service
        .post(&path, &json!({"decision": "allow"}))
        .expect(200);
    assert_logged_in(&finish(login), &sshd);
    for item in service.get("/api/agent/requests").expect(200)["items"]
        .as_array()
        .unwrap()
    {
        let path = format!("/api/agent/requests/{}", item["id"].as_str().unwrap());
        service
            .post(&path, &json!({"decision": "deny"}))
            .expect(200);
    }
    for waiting in flood {
        assert_eq!(waiting.join().unwrap(), Some(vec![5]));
    }
}

#[test]
fn keys_that_would_pass_256_kib_are_left_out_of_the_list_so_ssh_add_lists_the_rest() {
    let service = Service::start("agent-big-list");
    let socket = socket(&service);
    // 620 keys named with 100 four-byte characters: 447 bytes a key in the answer, so
    // 586 fit in 256 KiB and 34 do not.
    let names: Vec<String> = (0..620)
        .map(|n| format!("{n:04}{}", "\u{1D11E}".repeat(96)))
        .collect();
    for name in &names {
        generate(&service, json!({"name": name, "type": "ed25519"}));
    }
    let output = ssh_add(&socket, &["-l"]);
    assert!(output.status.success(), "{output:?}");
    let listed = String::from_utf8_lossy(&output.stdout).lines().count();
    assert_eq!(listed, 586, "every key that fits is listed");
    assert!(service
        .stderr()
        .contains("34 key(s) left out of the identity list"));
}

#[test]
fn at_the_connection_cap_a_connection_waiting_for_approval_is_never_closed_for_a_new_one() {
    let service = Service::start("agent-connection-cap-busy");
    let socket = socket(&service);
    set_password(&service, "pw");
    let key = generate(&service, json!({"name": "guarded", "type": "ed25519"}));
    set_policy(&service, &key, json!({"confirm": "always"}));
    let blob = key_blob(&key);
    // 64 connections, each with a sign request waiting for the user.
    let waiting = waiting_sign_requests(&service, || connect_socket(&socket), &blob, 64);
    let mut refused = connect_socket(&socket);
    assert!(
        closed(&mut refused),
        "no connection is idle: the new one is closed"
    );
    assert!(service
        .stderr()
        .contains("each answering a request; closed a new one"));
    assert_eq!(
        service.get("/api/agent").expect(200)["pending"],
        64,
        "none was closed"
    );
    // A lock ends every wait with a failure; none of them was cut off.
    service.post("/api/vault/lock", &json!({})).expect(200);
    for answer in waiting {
        assert_eq!(answer.join().unwrap(), Some(vec![5]));
    }
}

/// `ssh-keygen -Y sign` with the agent's key `name` (public key file in `dir`), `times`
/// times in one shell; each signature must succeed.
fn sign_times(socket: &Path, dir: &Path, name: &str, times: usize) {
    let script = format!(
        "for i in $(seq {times}); do rm -f {dir}/message.sig; \
         ssh-keygen -Y sign -n file -f {dir}/{name}.pub {dir}/message >/dev/null 2>&1 || exit 1; done",
        dir = dir.display()
    );
    let output = Command::new("sh")
        .args(["-c", &script])
        .env("SSH_AUTH_SOCK", socket)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

#[test]
fn a_flood_of_signatures_is_merged_per_key_and_minute_and_never_pushes_out_a_security_event() {
    // Two routine entries kept, so a dozen signatures with three keys overflow the bound.
    let service = Service::start_env(
        "agent-audit-flood",
        &[("HOST_MANAGER_TEST_AUDIT_ROUTINE_KEPT", "2")],
    );
    let socket = socket(&service);
    let work = fresh_dir("agent-audit-flood-work");
    set_password(&service, "flood-test-password");
    std::fs::write(work.join("message"), b"signed many times\n").unwrap();
    for (name, times) in [("k0", 3), ("k1", 4), ("k2", 5)] {
        let key = generate(&service, json!({"name": name, "type": "ed25519"}));
        let public = format!("{}\n", key["public_key"].as_str().unwrap());
        std::fs::write(work.join(format!("{name}.pub")), public).unwrap();
        sign_times(&socket, &work, name, times);
    }
    let page = service.get("/api/audit?limit=1000").expect(200);
    let items = page["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|entry| entry["event"] == "vault.password_set"),
        "the security event is kept: {page}"
    );
    let signed: Vec<(String, i64)> = items
        .iter()
        .filter(|entry| entry["event"] == "agent.signed")
        .map(|entry| {
            let subject = entry["subject"].as_str().unwrap().to_owned();
            (subject, entry["count"].as_i64().unwrap())
        })
        .collect();
    // Newest first: k2's five signatures, then k1's four; k0's entry went past the bound.
    // Should a minute have turned during k2's signatures, its two entries are all that is
    // kept, and their counts add up to five.
    match signed.as_slice() {
        [(a, first), (b, second)] if a == "k2" && b == "k2" => assert_eq!(first + second, 5),
        other => assert_eq!(other, [("k2".to_owned(), 5), ("k1".to_owned(), 4)]),
    }
}
