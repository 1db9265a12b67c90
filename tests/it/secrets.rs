//! Secrets at rest (api-decisions §2): host passwords, private keys and passphrases never
//! rest in plaintext. Distinctive secrets are stored, some are deleted, and the raw bytes of
//! every file in the data dir (db, wal, shm) and the log are scanned for each secret in raw,
//! hex and base64 forms: before and after the delete, with and without a master password.

use std::fs;
use std::process::Command;

use serde_json::json;

use crate::support::{contains_bytes, fresh_dir, leak_forms, read_all_files, Options, Service};

const MASTER: &str = "Master-scan-pw-4e1d";

/// An ed25519 key made by ssh-keygen: (private key text, its base64 body lines).
fn ssh_keygen(dir: &std::path::Path, name: &str, passphrase: &str) -> (String, Vec<String>) {
    let path = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-C", "", "-N", passphrase, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs (scripts/test installs openssh-client)");
    assert!(status.success());
    let text = fs::read_to_string(&path).unwrap();
    let body = text
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .map(str::to_owned)
        .collect();
    (text, body)
}

fn assert_nowhere(service: &Service, secrets: &[String], when: &str) {
    let files = read_all_files(&service.data_dir);
    assert!(
        files.len() >= 3,
        "{when}: db, wal and shm are scanned: {files:?}"
    );
    let stderr = service.stderr();
    for secret in secrets {
        for form in leak_forms(secret.as_bytes()) {
            let shown = String::from_utf8_lossy(&form);
            for (path, bytes) in &files {
                assert!(
                    !contains_bytes(bytes, &form),
                    "{when}: {shown} in {}",
                    path.display()
                );
            }
            assert!(
                !contains_bytes(stderr.as_bytes(), &form),
                "{when}: {shown} in stderr"
            );
        }
    }
}

fn scan_with(master_password: bool) {
    let label = if master_password {
        "secrets-master"
    } else {
        "secrets-plain"
    };
    let dir = fresh_dir(label);
    let data_dir = dir.join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let service = Service::start_with(label, options());
    if master_password {
        service
            .put("/api/vault/password", &json!({"new_password": MASTER}))
            .expect(200);
    }

    let host_password = format!("Host-pw-{label}-91c2e7");
    let passphrase = format!("Pass-{label}-5b08d3");
    let (encrypted, encrypted_body) = ssh_keygen(&dir, "encrypted", &passphrase);
    let (plain, plain_body) = ssh_keygen(&dir, "plain", "");
    let mut secrets = vec![host_password.clone(), passphrase.clone()];
    secrets.extend(
        encrypted_body
            .into_iter()
            .chain(plain_body)
            .filter(|line| line.len() >= 40),
    );

    let kept_key = service
        .post(
            "/api/keys",
            &json!({"name": "kept", "private_key": encrypted, "passphrase": passphrase}),
        )
        .expect(201)["id"]
        .clone();
    let dropped_key = service
        .post(
            "/api/keys",
            &json!({"name": "dropped", "private_key": plain}),
        )
        .expect(201)["id"]
        .clone();
    let host = |name: &str, auth: serde_json::Value| {
        let body = json!({"name": name, "hostname": "example.org", "port": 22, "username": "u", "auth": auth});
        service.post("/api/hosts", &body).expect(201)["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let password_host = host("pw", json!({"type": "password", "password": host_password}));
    let key_host = host("key", json!({"type": "key", "key_id": kept_key}));
    // The secrets really are stored: connect opens them.
    let connect = service
        .post(&format!("/api/hosts/{key_host}/connect"), &json!({}))
        .expect(200);
    assert_eq!(connect["credentials"]["passphrase"], passphrase.as_str());
    assert_nowhere(&service, &secrets, "while stored");

    service
        .delete(&format!("/api/hosts/{password_host}"))
        .expect(204);
    service
        .delete(&format!("/api/keys/{}", dropped_key.as_str().unwrap()))
        .expect(204);
    assert_nowhere(&service, &secrets, "after deleting some");

    drop(service);
    let service = Service::start_with(&format!("{label}-restart"), options());
    if master_password {
        service
            .post("/api/vault/unlock", &json!({"password": MASTER}))
            .expect(200);
    }
    let connect = service
        .post(&format!("/api/hosts/{key_host}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        connect["credentials"]["passphrase"],
        passphrase.as_str(),
        "still readable after restart"
    );
    assert_nowhere(&service, &secrets, "after a restart");
}

#[test]
fn secrets_never_rest_in_plaintext_without_a_master_password() {
    scan_with(false);
}

#[test]
fn secrets_never_rest_in_plaintext_with_a_master_password() {
    scan_with(true);
}
