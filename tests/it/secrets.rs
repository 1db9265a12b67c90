//! Secrets at rest (docs/api.md, Vault): host passwords, private keys, passphrases and
//! identities' passwords, literal answers and TOTP secrets never rest in plaintext. Distinctive secrets are stored, some are deleted, and the raw bytes of
//! every file in the data dir (db, wal, shm) and the log are scanned for each secret in raw,
//! hex and base64 forms: before and after the delete, with and without a master password.
//! And a deleted or replaced secret's ciphertext is gone from every file of the data dir
//! once the change is answered (docs/security.md, The vault's threat model), also across kill -9.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

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

/// RFC 4648 base32 without padding (what TOTP secrets are pasted as).
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits = String::new();
    for byte in bytes {
        bits.push_str(&format!("{byte:08b}"));
    }
    bits.as_bytes()
        .chunks(5)
        .map(|chunk| {
            let mut value = 0usize;
            for index in 0..5 {
                value = value * 2 + usize::from(chunk.get(index) == Some(&b'1'));
            }
            ALPHABET[value] as char
        })
        .collect()
}

/// An identity with a password, a literal answer and a TOTP secret, each distinctive; returns
/// them (the TOTP secret as raw bytes and as the base32 it was pasted as).
fn identity_with_secrets(service: &Service, label: &str) -> Vec<String> {
    let password = format!("Ident-pw-{label}-3a7f");
    let literal = format!("Ident-literal-{label}-c21d");
    let totp = format!("Totp-raw-{label}-9e04");
    let body = json!({"name": "scanned", "totp": {"secret": base32(totp.as_bytes())},
        "auth": [{"type": "password", "password": password}, {"type": "keyboard_interactive",
            "answers": [{"prompt": "^Site:", "answer": {"type": "literal", "literal": literal}}]}]});
    service.post("/api/identities", &body).expect(201);
    vec![password, literal, base32(totp.as_bytes()), totp]
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
    let identity_secrets = identity_with_secrets(&service, label);
    secrets.extend(identity_secrets);
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

// ---- removed ciphertext ------------------------------------------------------------------

/// A sealed column's bytes as the database holds them now (read-only, beside the service).
pub(crate) fn sealed_bytes(data_dir: &Path, sql: &str, id: &str) -> Vec<u8> {
    let conn = rusqlite::Connection::open_with_flags(
        data_dir.join("host-manager.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let bytes: Vec<u8> = conn.query_row(sql, [id], |row| row.get(0)).unwrap();
    assert!(bytes.len() >= 32, "a sealed value: {} bytes", bytes.len());
    bytes
}

/// The 16-byte pieces of a ciphertext: any one of them left in a file is a leftover.
fn pieces(sealed: &[u8]) -> impl Iterator<Item = &[u8]> {
    sealed.chunks_exact(16)
}

/// Fails unless some file of the data dir holds every piece of `sealed` (so that the
/// checks after a removal can fail at all).
#[track_caller]
pub(crate) fn assert_present(data_dir: &Path, sealed: &[u8], what: &str) {
    let files = read_all_files(data_dir);
    for piece in pieces(sealed) {
        assert!(
            files.iter().any(|(_, bytes)| contains_bytes(bytes, piece)),
            "{what}: the ciphertext should be stored before its removal"
        );
    }
}

/// Fails when any file of the data dir (db, wal, shm, lock, ...) holds a piece of `sealed`.
#[track_caller]
pub(crate) fn assert_gone(data_dir: &Path, sealed: &[u8], what: &str) {
    let files = read_all_files(data_dir);
    assert!(!files.is_empty(), "{what}: the data dir has files");
    for (path, bytes) in &files {
        for piece in pieces(sealed) {
            assert!(
                !contains_bytes(bytes, piece),
                "{what}: a piece of the old ciphertext is still in {} ({} bytes)",
                path.display(),
                bytes.len()
            );
        }
    }
}

fn password_host(service: &Service, password: &str) -> String {
    let body = json!({"name": "pw", "hostname": "example.org", "port": 22, "username": "u",
        "auth": {"type": "password", "password": password}});
    service.post("/api/hosts", &body).expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

const SELECT_PASSWORD: &str = "SELECT password FROM hosts WHERE id = ?1";

#[test]
fn a_deleted_host_password_leaves_no_piece_of_its_ciphertext_in_any_file() {
    let service = Service::start("scrub-host-delete");
    let id = password_host(&service, "Delete-me-pw-1c9e");
    let sealed = sealed_bytes(&service.data_dir, SELECT_PASSWORD, &id);
    assert_present(&service.data_dir, &sealed, "before the delete");
    service.delete(&format!("/api/hosts/{id}")).expect(204);
    assert_gone(&service.data_dir, &sealed, "after the delete");
}

#[test]
fn a_replaced_host_password_leaves_no_piece_of_its_old_ciphertext_in_any_file() {
    let service = Service::start("scrub-host-replace");
    let id = password_host(&service, "Old-pw-77ab");
    let old = sealed_bytes(&service.data_dir, SELECT_PASSWORD, &id);
    assert_present(&service.data_dir, &old, "before the change");
    service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"auth": {"password": "New-pw-0e41"}}),
        )
        .expect(200);
    assert_gone(&service.data_dir, &old, "after the change");
    let new = sealed_bytes(&service.data_dir, SELECT_PASSWORD, &id);
    assert_present(&service.data_dir, &new, "the new password");
}

#[test]
fn a_deleted_key_leaves_no_piece_of_its_private_key_or_passphrase_ciphertext_in_any_file() {
    let dir = fresh_dir("scrub-key-delete-keys");
    let passphrase = "Key-pass-5d3a";
    let (encrypted, _) = ssh_keygen(&dir, "encrypted", passphrase);
    let service = Service::start("scrub-key-delete");
    let key: Value = service
        .post(
            "/api/keys",
            &json!({"name": "gone", "private_key": encrypted, "passphrase": passphrase}),
        )
        .expect(201);
    let id = key["id"].as_str().unwrap();
    let private_key = sealed_bytes(
        &service.data_dir,
        "SELECT private_key FROM keys WHERE id = ?1",
        id,
    );
    let sealed_passphrase = sealed_bytes(
        &service.data_dir,
        "SELECT passphrase FROM keys WHERE id = ?1",
        id,
    );
    assert_present(&service.data_dir, &private_key, "the private key");
    assert_present(&service.data_dir, &sealed_passphrase, "the passphrase");
    service.delete(&format!("/api/keys/{id}")).expect(204);
    assert_gone(&service.data_dir, &private_key, "the private key");
    assert_gone(&service.data_dir, &sealed_passphrase, "the passphrase");
}

#[test]
fn removed_ciphertext_stays_gone_after_kill_9_and_a_restart() {
    let dir = fresh_dir("scrub-kill");
    let data_dir = dir.join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut service = Service::start_with("scrub-kill-1", options());
    let deleted = password_host(&service, "Killed-pw-31f0");
    let replaced = password_host(&service, "Replaced-pw-9a2c");
    let deleted_sealed = sealed_bytes(&data_dir, SELECT_PASSWORD, &deleted);
    let replaced_sealed = sealed_bytes(&data_dir, SELECT_PASSWORD, &replaced);
    service.delete(&format!("/api/hosts/{deleted}")).expect(204);
    service
        .put(
            &format!("/api/hosts/{replaced}"),
            &json!({"auth": {"type": "agent"}}),
        )
        .expect(200);
    service.child.kill().unwrap(); // SIGKILL: no clean close, no last checkpoint.
    service.child.wait().unwrap();
    drop(service);
    assert_gone(&data_dir, &deleted_sealed, "deleted, after kill -9");
    assert_gone(&data_dir, &replaced_sealed, "dropped, after kill -9");
    let service = Service::start_with("scrub-kill-2", options());
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 1);
    assert_gone(&data_dir, &deleted_sealed, "deleted, after the restart");
    assert_gone(&data_dir, &replaced_sealed, "dropped, after the restart");
}

/// An identity with every kind of sealed secret; its id and the three ciphertexts.
fn identity_ciphertexts(service: &Service, password: &str) -> (String, [Vec<u8>; 3]) {
    let body = json!({"name": "scrubbed", "totp": {"secret": "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"},
        "auth": [{"type": "password", "password": password}, {"type": "keyboard_interactive",
            "answers": [{"prompt": "^Site:", "answer": {"type": "literal", "literal": "Lit-5e2b"}}]}]});
    let id = service.post("/api/identities", &body).expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = &service.data_dir;
    let sealed = [
        sealed_bytes(
            dir,
            "SELECT password FROM identity_methods WHERE identity_id = ?1 AND type = 'password'",
            &id,
        ),
        sealed_bytes(
            dir,
            "SELECT literal FROM identity_answers WHERE identity_id = ?1",
            &id,
        ),
        sealed_bytes(dir, "SELECT totp_secret FROM identities WHERE id = ?1", &id),
    ];
    for bytes in &sealed {
        assert_present(dir, bytes, "before the removal");
    }
    (id, sealed)
}

#[test]
fn a_deleted_identity_leaves_no_piece_of_its_password_literal_or_totp_ciphertext_in_any_file() {
    let service = Service::start("scrub-identity-delete");
    let (id, sealed) = identity_ciphertexts(&service, "Ident-delete-pw-6c1a");
    service.delete(&format!("/api/identities/{id}")).expect(204);
    for (bytes, what) in sealed
        .iter()
        .zip(["the password", "the literal", "the TOTP secret"])
    {
        assert_gone(&service.data_dir, bytes, what);
    }
}

#[test]
fn a_replaced_identity_password_or_totp_secret_leaves_no_piece_of_the_old_ciphertext() {
    let service = Service::start("scrub-identity-replace");
    let (id, [password, literal, totp]) = identity_ciphertexts(&service, "Ident-old-pw-2b8e");
    let body = json!({"auth": [{"type": "password", "password": "Ident-new-pw-0d4f"},
        {"type": "keyboard_interactive", "answers": [{"prompt": "^Site:", "answer": {"type": "literal"}}]}],
        "totp": {"secret": "JBSWY3DPEHPK3PXP"}});
    service
        .put(&format!("/api/identities/{id}"), &body)
        .expect(200);
    assert_gone(&service.data_dir, &password, "the old password");
    assert_gone(&service.data_dir, &totp, "the old TOTP secret");
    assert_present(&service.data_dir, &literal, "the kept literal");
}
