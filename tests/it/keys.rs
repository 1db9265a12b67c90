//! Keys (docs/api.md, "Keys"): import and generation checked against the real `ssh-keygen`,
//! passphrases, refused formats, duplicates, rename, delete while in use, a 4096-bit
//! generation that does not hold up other requests, and no private key or passphrase in
//! any response, log line or file.

use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};
use ssh_key::private::{KeypairData, RsaKeypair};
use ssh_key::{Cipher, Kdf, LineEnding, Mpint, PrivateKey};

use crate::support::{
    contains_bytes, field_names, fresh_dir, leak_forms, read_all_files, Options, Response, Service,
    WithMode, EVENT_DEADLINE,
};

/// The comment every ssh-keygen key of these tests carries.
const KEYGEN_COMMENT: &str = "made@by-keygen";

fn ssh_keygen(args: &[&str]) -> Output {
    Command::new("ssh-keygen")
        .args(args)
        .output()
        .expect("ssh-keygen must be installed (scripts/test installs openssh-client)")
}

/// A key made by `ssh-keygen -q -f DIR/id -C made@by-keygen ARGS`: its path and text.
fn keygen(dir: &Path, args: &[&str]) -> (PathBuf, String) {
    let path = dir.join("id");
    let mut all = vec!["-q", "-f", path.to_str().unwrap(), "-C", KEYGEN_COMMENT];
    all.extend_from_slice(args);
    let output = ssh_keygen(&all);
    assert!(output.status.success(), "ssh-keygen {all:?}: {output:?}");
    let text = fs::read_to_string(&path).unwrap();
    (path, text)
}

/// Field 2 of `ssh-keygen -lf FILE` (FILE may be a private or a public key).
fn keygen_fingerprint(path: &Path) -> String {
    let output = ssh_keygen(&["-l", "-f", path.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let line = String::from_utf8(output.stdout).unwrap();
    line.split_whitespace().nth(1).unwrap().to_owned()
}

/// Field 1 of `ssh-keygen -lf FILE`: the key size in bits.
fn keygen_bits(path: &Path) -> String {
    let output = ssh_keygen(&["-l", "-f", path.to_str().unwrap()]);
    let line = String::from_utf8(output.stdout).unwrap();
    line.split_whitespace().next().unwrap().to_owned()
}

/// `<algorithm> <base64>` of `ssh-keygen -y -f FILE [-P passphrase]`.
fn keygen_public(path: &Path, passphrase: Option<&str>) -> String {
    let mut args = vec!["-y", "-f", path.to_str().unwrap()];
    if let Some(passphrase) = passphrase {
        args.extend_from_slice(&["-P", passphrase]);
    }
    let output = ssh_keygen(&args);
    assert!(output.status.success(), "ssh-keygen -y: {output:?}");
    bare(&String::from_utf8(output.stdout).unwrap())
}

fn bare(line: &str) -> String {
    line.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `bytes` to a new file with mode 0600 (ssh-keygen refuses wider private keys).
fn write_private(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .with_mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn import(service: &Service, name: &str, text: &str, passphrase: Option<&str>) -> Response {
    let mut body = json!({ "name": name, "private_key": text });
    if let Some(passphrase) = passphrase {
        body["passphrase"] = json!(passphrase);
    }
    service.post("/api/keys", &body)
}

/// Asserts the Key object's shape: exactly its fields, none of them a secret.
#[track_caller]
fn assert_key_shape(key: &Value) {
    assert_eq!(
        field_names(key),
        [
            "agent",
            "certificate",
            "certificates",
            "comment",
            "created_at",
            "fingerprint",
            "has_passphrase",
            "id",
            "name",
            "public_key",
            "revision",
            "type",
            "updated_at"
        ],
        "{key}"
    );
    let agent = &key["agent"];
    assert!(agent["enabled"].is_boolean(), "{key}");
    assert!(["never", "once_per_host", "always"].contains(&agent["confirm"].as_str().unwrap()));
    assert!(["deny", "confirm", "allow"].contains(&agent["forwarded"].as_str().unwrap()));
    let id = key["id"].as_str().unwrap();
    assert_eq!(id.len(), 36, "UUID: {id}");
    assert_eq!(id, id.to_lowercase());
    let created = key["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.len() == 24, "{created}");
    assert!(key["fingerprint"].as_str().unwrap().starts_with("SHA256:"));
}

/// The error's `details` text.
fn details(body: &Value) -> &str {
    body["details"].as_str().unwrap_or_default()
}

#[test]
fn keys_made_by_ssh_keygen_import_with_its_fingerprint_and_public_key() {
    let service = Service::start("keys-import-types");
    for (args, key_type) in [
        (&["-t", "ed25519"][..], "ssh-ed25519"),
        (&["-t", "rsa", "-b", "3072"], "ssh-rsa"),
        (&["-t", "ecdsa", "-b", "256"], "ecdsa-sha2-nistp256"),
        (&["-t", "ecdsa", "-b", "384"], "ecdsa-sha2-nistp384"),
        (&["-t", "ecdsa", "-b", "521"], "ecdsa-sha2-nistp521"),
    ] {
        let dir = fresh_dir("keys-import-type");
        let mut all = args.to_vec();
        all.extend_from_slice(&["-N", ""]);
        let (path, text) = keygen(&dir, &all);
        let key = import(&service, key_type, &text, None).expect(201);
        assert_key_shape(&key);
        assert_eq!(key["type"], key_type);
        assert_eq!(key["fingerprint"], keygen_fingerprint(&path), "{key_type}");
        let public = keygen_public(&path, None);
        assert_eq!(
            key["public_key"],
            format!("{public} {KEYGEN_COMMENT}"),
            "the file's comment ends the line"
        );
        assert_eq!(key["comment"], KEYGEN_COMMENT);
        assert_eq!(key["has_passphrase"], false);
        assert_eq!(key["created_at"], key["updated_at"]);
    }
    assert_eq!(key_count(&service), 5);
}

#[test]
fn encrypted_key_with_the_right_passphrase_is_stored_with_has_passphrase() {
    let service = Service::start("keys-enc-right");
    let dir = fresh_dir("keys-enc-right");
    let (path, text) = keygen(&dir, &["-t", "ed25519", "-N", "secret"]);
    let key = import(&service, "enc", &text, Some("secret")).expect(201);
    assert_eq!(key["has_passphrase"], true);
    assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
    assert_eq!(
        key["comment"], KEYGEN_COMMENT,
        "read from the decrypted part"
    );
}

#[test]
fn encrypted_key_with_a_wrong_passphrase_is_invalid_passphrase_and_not_stored() {
    let service = Service::start("keys-enc-wrong");
    let dir = fresh_dir("keys-enc-wrong");
    let (_, text) = keygen(&dir, &["-t", "ecdsa", "-N", "secret"]);
    let body =
        import(&service, "enc", &text, Some("Secret")).assert_error(400, "INVALID_PASSPHRASE");
    assert!(!body.to_string().contains("Secret"));
    assert_eq!(service.get("/api/keys").expect(200)["items"], json!([]));
}

#[test]
fn encrypted_key_without_a_passphrase_is_stored_as_is_with_has_passphrase() {
    let service = Service::start("keys-enc-none");
    let dir = fresh_dir("keys-enc-none");
    let (path, text) = keygen(&dir, &["-t", "rsa", "-b", "2048", "-N", "secret"]);
    for passphrase in [None, Some("")] {
        let key = import(&service, "enc", &text, passphrase).expect(201);
        assert_eq!(key["has_passphrase"], true);
        assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
        assert_eq!(key["public_key"], keygen_public(&path, Some("secret")));
        assert_eq!(
            key["comment"], "",
            "the comment is inside the encrypted part"
        );
        let id = key["id"].as_str().unwrap();
        service.delete(&format!("/api/keys/{id}")).expect(204);
    }
}

#[test]
fn unencrypted_key_with_a_passphrase_is_a_validation_error() {
    let service = Service::start("keys-plain-pass");
    let dir = fresh_dir("keys-plain-pass");
    let (_, text) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    let body = import(&service, "plain", &text, Some("pass")).assert_error(400, "VALIDATION_ERROR");
    assert!(
        details(&body).starts_with("passphrase: the key is not encrypted"),
        "{body}"
    );
}

#[test]
fn pem_and_pkcs8_keys_are_invalid_key_with_the_conversion_hint() {
    let service = Service::start("keys-pem");
    for (args, what) in [
        (
            &["-t", "rsa", "-b", "2048", "-m", "PEM", "-N", ""][..],
            "PEM (PKCS#1) RSA",
        ),
        (
            &["-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "secret"],
            "PEM (PKCS#1) RSA",
        ),
        (&["-t", "ecdsa", "-m", "PEM", "-N", ""], "PEM (SEC1) EC"),
        (
            &["-t", "rsa", "-b", "2048", "-m", "PKCS8", "-N", ""],
            "a PKCS#8",
        ),
        (
            &["-t", "ecdsa", "-m", "PKCS8", "-N", "secret"],
            "an encrypted PKCS#8",
        ),
    ] {
        let dir = fresh_dir("keys-pem");
        let (_, text) = keygen(&dir, args);
        let body = import(&service, "pem", &text, None).assert_error(400, "INVALID_KEY");
        let details = details(&body);
        assert!(details.contains(what), "{args:?}: {details}");
        assert!(details.contains("`ssh-keygen -p -f FILE`"), "{details}");
    }
}

#[test]
fn pem_key_imports_after_the_suggested_ssh_keygen_conversion() {
    let service = Service::start("keys-pem-convert");
    let dir = fresh_dir("keys-pem-convert");
    let (path, text) = keygen(
        &dir,
        &["-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "secret"],
    );
    import(&service, "pem", &text, Some("secret")).assert_error(400, "INVALID_KEY");
    let file = path.to_str().unwrap();
    let output = ssh_keygen(&["-p", "-f", file, "-P", "secret", "-N", "secret"]);
    assert!(output.status.success(), "{output:?}");
    let converted = fs::read_to_string(&path).unwrap();
    let key = import(&service, "pem", &converted, Some("secret")).expect(201);
    assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
}

#[test]
fn public_key_pasted_as_the_private_key_is_invalid_key_saying_so() {
    let service = Service::start("keys-public");
    let dir = fresh_dir("keys-public");
    let (path, _) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    let public = fs::read_to_string(path.with_extension("pub")).unwrap();
    let body = import(&service, "pub", &public, None).assert_error(400, "INVALID_KEY");
    assert!(details(&body).starts_with("this is a public key"), "{body}");
}

#[test]
fn garbage_is_invalid_key() {
    let service = Service::start("keys-garbage");
    for text in [
        "hello",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    ] {
        import(&service, "junk", text, None).assert_error(400, "INVALID_KEY");
    }
}

#[test]
fn private_key_text_of_64_kib_is_imported_and_one_byte_more_is_a_validation_error() {
    const CAP: usize = 64 * 1024;
    let service = Service::start("keys-text-cap");
    let dir = fresh_dir("keys-text-cap-files");
    let (_, text) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    // Blank lines after the key: ssh-keygen reads it the same, and so does an import.
    let padded = |len: usize| format!("{text}{}", "\n".repeat(len - text.len()));
    import(&service, "at-cap", &padded(CAP), None).expect(201);
    let body =
        import(&service, "over", &padded(CAP + 1), None).assert_error(400, "VALIDATION_ERROR");
    assert!(
        details(&body).starts_with("private_key: must be at most 65536 bytes"),
        "{body}"
    );
    let config = "Host a\n IdentityFile ~/k\n";
    let body = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": config, "keys": {"~/k": padded(CAP + 1)}}),
        )
        .assert_error(400, "INVALID_KEY");
    assert!(
        details(&body).starts_with("keys[~/k]: must be at most 65536 bytes"),
        "{body}"
    );
}

#[test]
fn empty_or_non_string_private_key_is_a_validation_error() {
    let service = Service::start("keys-empty");
    for value in [json!(""), json!("   "), json!(42), json!({"a": 1})] {
        let body = service
            .post("/api/keys", &json!({ "name": "k", "private_key": value }))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(details(&body).starts_with("private_key: "), "{body}");
    }
}

#[test]
fn openssh_dsa_key_is_invalid_key_as_unsupported() {
    let service = Service::start("keys-dsa");
    let dir = fresh_dir("keys-dsa");
    let (_, text) = keygen(&dir, &["-t", "dsa", "-N", ""]);
    let body = import(&service, "dsa", &text, None).assert_error(400, "INVALID_KEY");
    assert!(
        details(&body).contains("ssh-dss are not supported"),
        "{body}"
    );
}

#[test]
fn same_key_under_another_name_is_duplicate_key_even_re_encrypted() {
    let service = Service::start("keys-dup-key");
    let dir = fresh_dir("keys-dup-key");
    let (path, text) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    import(&service, "first", &text, None).expect(201);
    import(&service, "second", &text, None).assert_error(409, "DUPLICATE_KEY");
    let file = path.to_str().unwrap();
    assert!(ssh_keygen(&["-p", "-f", file, "-P", "", "-N", "secret"])
        .status
        .success());
    let encrypted = fs::read_to_string(&path).unwrap();
    import(&service, "third", &encrypted, Some("secret")).assert_error(409, "DUPLICATE_KEY");
    assert_eq!(key_count(&service), 1);
}

#[test]
fn same_name_in_another_case_is_duplicate_name_for_import_and_generation() {
    let service = Service::start("keys-dup-name");
    service
        .post(
            "/api/keys",
            &json!({"name": "Work Laptop", "type": "ed25519"}),
        )
        .expect(201);
    service
        .post(
            "/api/keys",
            &json!({"name": "  work LAPTOP ", "type": "ed25519"}),
        )
        .assert_error(409, "DUPLICATE_NAME");
    let dir = fresh_dir("keys-dup-name");
    let (_, text) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    import(&service, "WORK laptop", &text, None).assert_error(409, "DUPLICATE_NAME");
}

#[test]
fn body_with_neither_private_key_nor_type_generates_ed25519_by_default() {
    let service = Service::start("keys-default-type");
    let key = service.post("/api/keys", &json!({"name": "k"})).expect(201);
    assert_eq!(key["type"], "ssh-ed25519");
    assert_eq!(key["has_passphrase"], false);
    // ed25519 takes no bits, default or not.
    let body = service
        .post("/api/keys", &json!({"name": "k2", "bits": 256}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(details(&body).starts_with("bits: "), "{body}");
}

#[test]
fn generation_refuses_bad_names_types_and_sizes_naming_the_field() {
    let service = Service::start("keys-gen-invalid");
    for (body, field) in [
        (json!({"type": "ed25519"}), "name"),
        (json!({"name": "", "type": "ed25519"}), "name"),
        (json!({"name": "x".repeat(101), "type": "ed25519"}), "name"),
        (json!({"name": "k", "type": "dsa"}), "type"),
        (json!({"name": "k", "type": 1}), "type"),
        (json!({"name": "k", "type": "rsa", "bits": 1024}), "bits"),
        (json!({"name": "k", "type": "rsa", "bits": "3072"}), "bits"),
        (json!({"name": "k", "type": "ecdsa", "bits": 512}), "bits"),
        (json!({"name": "k", "type": "ed25519", "bits": 256}), "bits"),
        (
            json!({"name": "k", "type": "ed25519", "comment": "a\nb"}),
            "comment",
        ),
        (
            json!({"name": "k", "type": "ed25519", "passphrase": 5}),
            "passphrase",
        ),
    ] {
        let error = service
            .post("/api/keys", &body)
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            details(&error).starts_with(&format!("{field}: ")),
            "{body}: {error}"
        );
    }
    service
        .post("/api/keys", &json!([1]))
        .assert_error(400, "VALIDATION_ERROR");
    let response = service.request_raw_body(
        "POST",
        "/api/keys",
        &[("Content-Type", "application/json".into())],
        Some(b"{not json"),
    );
    response.assert_error(400, "INVALID_JSON");
    assert_eq!(service.get("/api/keys").expect(200)["items"], json!([]));
}

#[test]
fn name_of_100_characters_is_accepted_trimmed() {
    let service = Service::start("keys-name-100");
    let name = "n".repeat(100);
    let key = service
        .post(
            "/api/keys",
            &json!({"name": format!(" {name} "), "type": "ed25519"}),
        )
        .expect(201);
    assert_eq!(key["name"], name);
}

#[test]
fn generated_public_keys_of_every_type_and_size_are_read_by_ssh_keygen() {
    let service = Service::start("keys-gen-types");
    let dir = fresh_dir("keys-gen-types");
    for (body, key_type, bits) in [
        (json!({"type": "ed25519"}), "ssh-ed25519", "256"),
        (json!({"type": "ecdsa"}), "ecdsa-sha2-nistp256", "256"),
        (
            json!({"type": "ecdsa", "bits": 384}),
            "ecdsa-sha2-nistp384",
            "384",
        ),
        (
            json!({"type": "ecdsa", "bits": 521}),
            "ecdsa-sha2-nistp521",
            "521",
        ),
        (json!({"type": "rsa", "bits": 2048}), "ssh-rsa", "2048"),
        (json!({"type": "rsa"}), "ssh-rsa", "3072"),
    ] {
        let mut body = body;
        body["name"] = json!(format!("{key_type}-{bits}"));
        body["comment"] = json!("made by host-manager");
        let key = service.post("/api/keys", &body).expect(201);
        assert_key_shape(&key);
        assert_eq!(key["type"], key_type);
        assert_eq!(key["has_passphrase"], false);
        let line = key["public_key"].as_str().unwrap();
        assert!(line.ends_with(" made by host-manager"), "{line}");
        let path = dir.join(format!("{key_type}-{bits}.pub"));
        fs::write(&path, format!("{line}\n")).unwrap();
        assert_eq!(
            keygen_fingerprint(&path),
            key["fingerprint"].as_str().unwrap()
        );
        assert_eq!(keygen_bits(&path), bits, "{body}");
    }
}

#[test]
fn generated_key_with_a_passphrase_has_passphrase() {
    let service = Service::start("keys-gen-pass");
    let key = service
        .post(
            "/api/keys",
            &json!({"name": "k", "type": "ecdsa", "passphrase": "correct horse"}),
        )
        .expect(201);
    assert_eq!(key["has_passphrase"], true);
    assert_eq!(key["comment"], "");
}

/// Generates keys, takes each from `POST /api/hosts/:id/connect` and checks it with
/// `ssh-keygen -y` (with its passphrase when it has one; a wrong one is refused).
#[test]
fn generated_private_keys_taken_from_connect_are_read_by_ssh_keygen_only_with_their_passphrase() {
    let service = Service::start("keys-gen-connect");
    let dir = fresh_dir("keys-gen-connect");
    for (index, (body, passphrase)) in [
        (json!({"type": "ed25519"}), None),
        (json!({"type": "ecdsa", "bits": 256}), None),
        (json!({"type": "ecdsa", "bits": 384}), None),
        (json!({"type": "ecdsa", "bits": 521}), None),
        (json!({"type": "rsa", "bits": 2048}), None),
        (
            json!({"type": "ed25519", "passphrase": "pass phrase"}),
            Some("pass phrase"),
        ),
        (
            json!({"type": "rsa", "bits": 2048, "passphrase": "p"}),
            Some("p"),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut body = body;
        body["name"] = json!(format!("key {index}"));
        let key = service.post("/api/keys", &body).expect(201);
        let host = json!({
            "name": format!("host {index}"), "hostname": "example.com", "port": 22,
            "username": "me", "auth": {"type": "key", "key_id": key["id"]}
        });
        let response = service.post("/api/hosts", &host);
        let host_id = response.expect(201)["id"].as_str().unwrap().to_owned();
        let connect = service
            .post(&format!("/api/hosts/{host_id}/connect"), &json!({}))
            .expect(200);
        let credentials = &connect["credentials"];
        assert_eq!(credentials["key_id"], key["id"]);
        assert_eq!(credentials["passphrase"].as_str(), passphrase);
        let path = dir.join(format!("id{index}"));
        write_private(
            &path,
            credentials["private_key"].as_str().unwrap().as_bytes(),
        );
        assert_eq!(
            keygen_public(&path, passphrase),
            bare(key["public_key"].as_str().unwrap()),
            "{body}"
        );
        assert_eq!(
            keygen_fingerprint(&path),
            key["fingerprint"].as_str().unwrap()
        );
        if passphrase.is_some() {
            let wrong = ssh_keygen(&["-y", "-P", "wrong", "-f", path.to_str().unwrap()]);
            assert!(
                !wrong.status.success(),
                "{body}: opened with a wrong passphrase"
            );
        }
    }
}

/// `ssh-keygen -t ecdsa -b 521` until a key's private scalar is written short (about 1 in 4;
/// see `sshkey/ecdsa_workaround.rs`), as ssh-key alone cannot read it: `unreadable` judges.
fn short_scalar_p521(dir: &Path, passphrase: &str, unreadable: impl Fn(&str) -> bool) -> String {
    for _ in 0..64 {
        let _ = fs::remove_file(dir.join("id"));
        let _ = fs::remove_file(dir.join("id.pub"));
        let (_, text) = keygen(dir, &["-t", "ecdsa", "-b", "521", "-N", passphrase]);
        if unreadable(&text) {
            return text;
        }
    }
    panic!("64 P-521 keys in a row had a full-size scalar (odds about 1e-8)");
}

#[test]
fn p521_key_with_a_short_scalar_from_ssh_keygen_imports_with_its_fingerprint() {
    let service = Service::start("keys-p521-short");
    let dir = fresh_dir("keys-p521-short");
    let text = short_scalar_p521(&dir, "", |text| PrivateKey::from_openssh(text).is_err());
    let key = import(&service, "short", &text, None).expect(201);
    let path = dir.join("id");
    assert_eq!(key["type"], "ecdsa-sha2-nistp521");
    assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
    let public = fs::read_to_string(path.with_extension("pub")).unwrap();
    assert_eq!(bare(key["public_key"].as_str().unwrap()), bare(&public));
    assert_eq!(key["comment"], KEYGEN_COMMENT);
}

#[test]
fn encrypted_p521_key_with_a_short_scalar_from_ssh_keygen_opens_with_its_passphrase_only() {
    let service = Service::start("keys-p521-short-enc");
    let dir = fresh_dir("keys-p521-short-enc");
    let text = short_scalar_p521(&dir, "secret", |text| {
        let key = PrivateKey::from_openssh(text).unwrap();
        !matches!(key.decrypt("secret"), Ok(_) | Err(ssh_key::Error::Crypto))
    });
    import(&service, "short", &text, Some("wrong")).assert_error(400, "INVALID_PASSPHRASE");
    let key = import(&service, "short", &text, Some("secret")).expect(201);
    assert_eq!(key["has_passphrase"], true);
    assert_eq!(key["fingerprint"], keygen_fingerprint(&dir.join("id")));
    assert_eq!(
        key["comment"], KEYGEN_COMMENT,
        "read from the decrypted part"
    );
}

#[test]
fn keys_encrypted_by_ssh_keygen_with_aes256_gcm_or_chacha20_import_with_their_passphrase_only() {
    let service = Service::start("keys-aead");
    for cipher in ["aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com"] {
        let dir = fresh_dir("keys-aead");
        let (path, text) = keygen(&dir, &["-t", "ed25519", "-N", "secret", "-Z", cipher]);
        import(&service, cipher, &text, Some("wrong")).assert_error(400, "INVALID_PASSPHRASE");
        let key = import(&service, cipher, &text, Some("secret")).expect(201);
        assert_eq!(key["fingerprint"], keygen_fingerprint(&path), "{cipher}");
        assert_eq!(key["comment"], KEYGEN_COMMENT, "{cipher}");
    }
}

/// A key pasted from a Windows clipboard: CRLF line ends, blanks around it, no final
/// newline. ssh and ssh-keygen refuse such a file ("error in libcrypto"); the stored text is
/// one they read.
#[test]
fn key_pasted_with_crlf_line_ends_and_no_final_newline_is_stored_so_ssh_keygen_reads_it() {
    let service = Service::start("keys-crlf");
    let dir = fresh_dir("keys-crlf");
    let (path, text) = keygen(&dir, &["-t", "ed25519", "-N", ""]);
    let pasted = format!("  \r\n{}", text.trim_end().replace('\n', "\r\n"));
    let key = import(&service, "pasted", &pasted, None).expect(201);
    assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
    let host = json!({"name": "h", "hostname": "example.com", "port": 22, "username": "me",
        "auth": {"type": "key", "key_id": key["id"]}});
    let host_id = service.post("/api/hosts", &host).expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connect = service
        .post(&format!("/api/hosts/{host_id}/connect"), &json!({}))
        .expect(200);
    let stored = connect["credentials"]["private_key"].as_str().unwrap();
    assert_eq!(
        stored, text,
        "LF line ends and one final newline, as ssh-keygen wrote it"
    );
    let copy = dir.join("stored");
    write_private(&copy, stored.as_bytes());
    assert_eq!(
        keygen_public(&copy, None),
        bare(key["public_key"].as_str().unwrap())
    );
}

/// docs/api.md "Keys": RSA-4096 takes seconds with ssh-key 0.6; while it runs, health and a
/// db-backed list are still answered (no lock is held during generation). Rounds of both
/// go on until the generation's answer arrives; at least one must finish before it.
#[test]
fn health_and_key_list_answer_while_a_4096_bit_key_is_generated() {
    let service = Service::start("keys-rsa-4096");
    let addr = service.addr();
    let (done, generation) = mpsc::channel();
    thread::spawn(move || {
        let body = json!({"name": "big", "type": "rsa", "bits": 4096});
        let _ = done.send(post_without_timeout(&addr, "/api/keys", &body));
    });
    let mut answered = 0;
    let (status, key) = loop {
        // Waits for the generation's answer, between rounds: the pause leaves the cores to
        // the generation rather than to a busy loop of requests.
        match generation.recv_timeout(Duration::from_millis(50)) {
            Ok(answer) => break answer,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the generation thread died"),
        }
        assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
        // The new key may be listed already: it is stored before its answer arrives here.
        assert!(service.get("/api/keys").expect(200)["items"].is_array());
        answered += 1;
    };
    assert_eq!(status, 201, "{key}");
    assert!(
        answered >= 1,
        "the generation was answered before any round of health and list"
    );
    let dir = fresh_dir("keys-rsa-4096");
    let path = dir.join("big.pub");
    fs::write(&path, format!("{}\n", key["public_key"].as_str().unwrap())).unwrap();
    assert_eq!(keygen_bits(&path), "4096");
    assert_eq!(
        keygen_fingerprint(&path),
        key["fingerprint"].as_str().unwrap()
    );
}

/// POSTs `body` on a socket that waits as long as the answer takes (the harness's client
/// gives up after `IO_TIMEOUT`; RSA-4096 in a debug build on a busy machine can take longer), and
/// returns the status and JSON body.
fn post_without_timeout(addr: &str, path: &str, body: &Value) -> (u16, Value) {
    post_closing(patient_stream(addr), path, body)
}

/// `post_without_timeout` on a connection that has already served a health request, so
/// that several of them start at once.
fn post_warm_without_timeout(addr: &str, path: &str, body: &Value) -> (u16, Value) {
    let mut stream = patient_stream(addr);
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(&mut stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    reader.read_exact(&mut vec![0; length]).unwrap();
    post_closing(stream, path, body)
}

/// A connection whose reads wait up to 5 minutes.
fn patient_stream(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    stream
}

/// POSTs `body` asking for the connection to be closed, and reads the whole answer.
fn post_closing(mut stream: TcpStream, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8(response).unwrap();
    let (head, json) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(json).unwrap())
}

#[test]
fn list_is_sorted_by_name_case_insensitively() {
    let service = Service::start("keys-list");
    for name in ["beta", "Alpha", "gamma", "ärger"] {
        service
            .post("/api/keys", &json!({"name": name, "type": "ed25519"}))
            .expect(201);
    }
    let list = service.get("/api/keys").expect(200);
    assert_eq!(list.as_object().unwrap().len(), 1, "only items: {list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| {
            assert_key_shape(key);
            key["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, ["Alpha", "beta", "gamma", "ärger"]);
}

#[test]
fn get_returns_the_key_as_created() {
    let service = Service::start("keys-get");
    let key = service
        .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
        .expect(201);
    let id = key["id"].as_str().unwrap();
    assert_eq!(service.get(&format!("/api/keys/{id}")).expect(200), key);
}

#[test]
fn unknown_key_id_is_key_not_found() {
    let service = Service::start("keys-unknown");
    for id in ["2b1f2f63-4a55-4c4e-9d2e-0f0f0f0f0f0f", "not-a-uuid"] {
        let path = format!("/api/keys/{id}");
        service.get(&path).assert_error(404, "KEY_NOT_FOUND");
        service
            .put(&path, &json!({"name": "x"}))
            .assert_error(404, "KEY_NOT_FOUND");
        service.delete(&path).assert_error(404, "KEY_NOT_FOUND");
    }
}

#[test]
fn put_renames_and_re_comments_and_moves_updated_at() {
    let service = Service::start("keys-put");
    let key = service
        .post(
            "/api/keys",
            &json!({"name": "old", "type": "ed25519", "comment": "a"}),
        )
        .expect(201);
    let id = key["id"].as_str().unwrap();
    let path = format!("/api/keys/{id}");
    let bare_key = bare(key["public_key"].as_str().unwrap());
    let mut sent_back = key.clone();
    sent_back["name"] = json!("  New Name ");
    sent_back["comment"] = json!("me@laptop");
    sent_back["fingerprint"] = json!("SHA256:ignored");
    let updated = service.put(&path, &sent_back).expect(200);
    assert_eq!(updated["name"], "New Name");
    assert_eq!(updated["comment"], "me@laptop");
    assert_eq!(updated["public_key"], format!("{bare_key} me@laptop"));
    assert_eq!(
        updated["fingerprint"], key["fingerprint"],
        "read-only fields ignored"
    );
    assert_eq!(updated["created_at"], key["created_at"]);
    assert!(updated["updated_at"].as_str() > key["updated_at"].as_str());
    let cleared = service.put(&path, &json!({"comment": null})).expect(200);
    assert_eq!(cleared["public_key"], bare_key);
    assert_eq!(cleared["name"], "New Name", "absent fields are kept");
    assert!(cleared["updated_at"].as_str() > updated["updated_at"].as_str());
    assert_eq!(service.get(&path).expect(200), cleared);
}

#[test]
fn put_refuses_key_changes_bad_names_and_taken_names() {
    let service = Service::start("keys-put-invalid");
    service
        .post("/api/keys", &json!({"name": "taken", "type": "ed25519"}))
        .expect(201);
    let key = service
        .post("/api/keys", &json!({"name": "mine", "type": "ed25519"}))
        .expect(201);
    let path = format!("/api/keys/{}", key["id"].as_str().unwrap());
    for (body, field) in [
        (json!({"passphrase": "new"}), "passphrase"),
        (json!({"private_key": "x"}), "private_key"),
        (json!({"bits": 4096}), "bits"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(101)}), "name"),
        (json!({"comment": 5}), "comment"),
    ] {
        let error = service
            .put(&path, &body)
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            details(&error).starts_with(&format!("{field}: ")),
            "{error}"
        );
    }
    service
        .put(&path, &json!({"name": "TAKEN"}))
        .assert_error(409, "DUPLICATE_NAME");
    let renamed = service.put(&path, &json!({"name": "MINE"})).expect(200);
    assert_eq!(
        renamed["name"], "MINE",
        "a key may change its own name's case"
    );
    assert_eq!(service.get(&path).expect(200), renamed);
}

/// Stops `service` (SIGTERM, clean exit), runs `change` on its data dir, and starts a new
/// service on the same dir.
fn restart_after(service: Service, name: &str, change: impl FnOnce(&Path)) -> Service {
    let mut service = service;
    let status = service.terminate(EVENT_DEADLINE);
    assert!(status.is_some_and(|status| status.success()), "{status:?}");
    change(&service.data_dir);
    Service::start_with(
        name,
        Options {
            data_dir: Some(service.data_dir.clone()),
            ..Options::default()
        },
    )
}

/// Runs `sql` on the database in `data_dir` (while no service runs on it).
fn execute(data_dir: &Path, sql: &str, params: &[&str]) {
    let conn = rusqlite::Connection::open(data_dir.join("host-manager.db")).unwrap();
    conn.execute(sql, rusqlite::params_from_iter(params))
        .unwrap();
}

const INSERT_KEY_HOST: &str = "INSERT INTO hosts (id, name, name_key, hostname, port, username, \
     auth_type, key_id, created_at, updated_at) VALUES (?1, 'h', 'h', 'example.com', 22, 'me', \
     'key', ?2, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')";

#[test]
fn key_used_by_hosts_cannot_be_deleted_until_they_are_gone() {
    let service = Service::start("keys-in-use");
    let key = service
        .post("/api/keys", &json!({"name": "used", "type": "ed25519"}))
        .expect(201);
    let id = key["id"].as_str().unwrap().to_owned();
    let path = format!("/api/keys/{id}");
    let service = restart_after(service, "keys-in-use", |data_dir| {
        for host in [
            "00000000-0000-4000-8000-000000000001",
            "00000000-0000-4000-8000-000000000002",
        ] {
            execute(data_dir, INSERT_KEY_HOST, &[host, &id]);
        }
    });
    let body = service.delete(&path).assert_error(409, "KEY_IN_USE");
    assert_eq!(details(&body), "the key is used by 2 host(s)");
    assert_eq!(service.get(&path).expect(200), key, "still there");

    let service = restart_after(service, "keys-in-use", |data_dir| {
        execute(data_dir, "DELETE FROM hosts", &[]);
    });
    service.delete(&path).expect(204);
    service.get(&path).assert_error(404, "KEY_NOT_FOUND");
    service.delete(&path).assert_error(404, "KEY_NOT_FOUND");
}

/// The bytes of a PEM text's base64 body.
fn pem_bytes(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digits: Vec<u32> = text
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .flat_map(str::bytes)
        .filter_map(|byte| ALPHABET.iter().position(|a| *a == byte))
        .map(|value| value as u32)
        .collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | d << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
        .unwrap()
}

/// Asserts none of `markers` is in the data dir's files, the stderr log or `responses`.
#[track_caller]
fn assert_nowhere(service: &Service, markers: &[Vec<u8>], responses: &[Vec<u8>], when: &str) {
    let stderr = service.stderr().into_bytes();
    for marker in markers {
        let shown = String::from_utf8_lossy(marker);
        for (path, bytes) in read_all_files(&service.data_dir) {
            assert!(
                !contains_bytes(&bytes, marker),
                "{when}: {shown} in {}",
                path.display()
            );
        }
        assert!(
            !contains_bytes(&stderr, marker),
            "{when}: {shown} in stderr"
        );
        for response in responses {
            assert!(
                !contains_bytes(response, marker),
                "{when}: {shown} in a response"
            );
        }
    }
}

#[test]
fn private_keys_and_passphrases_appear_in_no_response_log_or_file() {
    let service = Service::start("keys-secrets");
    let (_, plain) = keygen(&fresh_dir("keys-secrets"), &["-t", "ed25519", "-N", ""]);
    let passphrase = "pass-marker-7f3a9c";
    let (_, encrypted) = keygen(
        &fresh_dir("keys-secrets"),
        &["-t", "ecdsa", "-N", passphrase],
    );
    let mut markers = leak_forms(passphrase.as_bytes());
    markers.push(plain.as_bytes().to_vec());
    markers.push(encrypted.as_bytes().to_vec());
    // The ed25519 seed: the 32 bytes before the private half's public copy, which ends
    // where the comment's length field starts (PROTOCOL.key).
    let binary = pem_bytes(&plain);
    let comment_at = find(&binary, KEYGEN_COMMENT.as_bytes()) - 4;
    markers.extend(leak_forms(&binary[comment_at - 64..comment_at - 32]));
    // The tail of the encrypted key's ciphertext.
    let binary = pem_bytes(&encrypted);
    markers.extend(leak_forms(&binary[binary.len() - 32..]));
    let mut responses = Vec::new();
    let created = import(&service, "plain", &plain, None);
    responses.push(created.body.clone());
    let plain_id = created.expect(201)["id"].as_str().unwrap().to_owned();
    let created = import(&service, "encrypted", &encrypted, Some(passphrase));
    responses.push(created.body.clone());
    let encrypted_id = created.expect(201)["id"].as_str().unwrap().to_owned();
    responses.push(import(&service, "again", &encrypted, Some("wrong")).body);
    responses.push(service.get("/api/keys").body);
    for id in [&plain_id, &encrypted_id] {
        responses.push(service.get(&format!("/api/keys/{id}")).body);
        responses.push(
            service
                .put(&format!("/api/keys/{id}"), &json!({"comment": "c"}))
                .body,
        );
    }
    assert_nowhere(&service, &markers, &responses, "stored");
    for id in [&plain_id, &encrypted_id] {
        service.delete(&format!("/api/keys/{id}")).expect(204);
    }
    assert_nowhere(&service, &markers, &[], "deleted");
}

#[test]
fn keys_answer_401_while_locked_and_are_all_there_after_unlock() {
    let service = Service::start("keys-locked");
    let dir = fresh_dir("keys-locked");
    let (_, text) = keygen(&dir, &["-t", "ed25519", "-N", "secret"]);
    let key = import(&service, "before", &text, Some("secret")).expect(201);
    service
        .put("/api/vault/password", &json!({"new_password": "master"}))
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    service.get("/api/keys").assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
        .assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/vault/unlock", &json!({"password": "master"}))
        .expect(200);
    let generated = service
        .post("/api/keys", &json!({"name": "after", "type": "ed25519"}))
        .expect(201);
    let items = service.get("/api/keys").expect(200)["items"].clone();
    assert_eq!(items, json!([generated, key]), "by name: after, before");
}

/// How many keys `GET /api/keys` lists.
fn key_count(service: &Service) -> usize {
    service.get("/api/keys").expect(200)["items"]
        .as_array()
        .unwrap()
        .len()
}

/// An ed25519 key encrypted with `passphrase` (aes256-ctr, bcrypt-pbkdf) whose key file asks
/// for `rounds` bcrypt rounds. It is encrypted at 1 round, then the count is rewritten: the
/// KDF options are not authenticated, so the file reads as the key's author could write it
/// and costs nothing to make. Only a wrong passphrase, or none, makes sense with it.
fn key_asking_for_rounds(rounds: u32) -> String {
    let key =
        PrivateKey::random(&mut ssh_key::rand_core::OsRng, ssh_key::Algorithm::Ed25519).unwrap();
    let salt = [7u8; 16];
    let encrypted = key
        .encrypt_with(
            Cipher::Aes256Ctr,
            Kdf::Bcrypt {
                salt: salt.to_vec(),
                rounds: 1,
            },
            42,
            "secret",
        )
        .unwrap();
    let mut bytes = encrypted.to_bytes().unwrap().to_vec();
    let at = find(&bytes, &salt) + salt.len();
    bytes[at..at + 4].copy_from_slice(&rounds.to_be_bytes());
    PrivateKey::from_bytes(&bytes)
        .unwrap()
        .to_openssh(LineEnding::LF)
        .unwrap()
        .to_string()
}

/// docs/api.md "Keys": bcrypt-pbkdf checks of a passphrase (up to 1,024 rounds, ~8 s of CPU)
/// run at most two at once; a third is 503 `BUSY`, and the rest of the service answers.
#[test]
fn passphrase_checks_beyond_two_at_once_are_busy_and_health_still_answers() {
    let service = Service::start("keys-bcrypt-cap");
    // 256 rounds: about 2 s of CPU each, more on a busy machine; three sent at once overlap.
    let slow = key_asking_for_rounds(256);
    let checks: Vec<_> = (0..3)
        .map(|n| {
            let addr = service.addr();
            let body =
                json!({"name": format!("slow-{n}"), "private_key": slow, "passphrase": "wrong"});
            thread::spawn(move || post_warm_without_timeout(&addr, "/api/keys", &body))
        })
        .collect();
    while checks.iter().any(|check| !check.is_finished()) {
        assert_eq!(service.get("/api/health").status, 200);
    }
    let mut answers: Vec<(u16, Value)> = checks
        .into_iter()
        .map(|check| check.join().unwrap())
        .collect();
    answers.sort_by_key(|(status, _)| *status);
    let codes: Vec<(u16, &Value)> = answers
        .iter()
        .map(|(status, body)| (*status, &body["code"]))
        .collect();
    let (invalid, busy) = (json!("INVALID_PASSPHRASE"), json!("BUSY"));
    assert_eq!(codes, [(400, &invalid), (400, &invalid), (503, &busy)]);
    // Both places are given back: the next check runs.
    let cheap = key_asking_for_rounds(1);
    import(&service, "cheap", &cheap, Some("wrong")).assert_error(400, "INVALID_PASSPHRASE");
    assert_eq!(key_count(&service), 0);
}

/// docs/api.md "Keys": a key file asking for more than 1,024 bcrypt rounds is refused whether or
/// not a passphrase comes with it (OpenSSH would spend that work on every use of the key).
#[test]
fn key_asking_for_over_1024_bcrypt_rounds_is_invalid_key_even_without_a_passphrase() {
    let service = Service::start("keys-rounds-over");
    for rounds in [1025, u32::MAX] {
        let text = key_asking_for_rounds(rounds);
        for passphrase in [None, Some("secret")] {
            let body =
                import(&service, "absurd", &text, passphrase).assert_error(400, "INVALID_KEY");
            assert!(
                details(&body).contains(&format!("asks for {rounds} bcrypt rounds"))
                    && details(&body).contains("at most 1024"),
                "{body}"
            );
        }
    }
    assert_eq!(key_count(&service), 0);
}

#[test]
fn key_asking_for_exactly_1024_bcrypt_rounds_is_stored_without_a_passphrase() {
    let service = Service::start("keys-rounds-cap");
    let key = import(&service, "slow", &key_asking_for_rounds(1024), None).expect(201);
    assert_eq!(key["has_passphrase"], true);
    assert_eq!(key_count(&service), 1);
}

/// docs/api.md "Keys": RSA keys under 2,048 bits are refused, as generation refuses them, also
/// when encrypted and sent without their passphrase (the size is public).
#[test]
fn rsa_key_of_2047_bits_is_refused_naming_private_key_and_2048_bits_is_stored() {
    let service = Service::start("keys-rsa-size");
    for (bits, passphrase) in [("1024", ""), ("2047", ""), ("2047", "secret")] {
        let dir = fresh_dir("keys-rsa-size");
        let (_, text) = keygen(&dir, &["-t", "rsa", "-b", bits, "-N", passphrase]);
        let body = import(&service, "small", &text, None).assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            details(&body),
            format!("private_key: an RSA key must have at least 2048 bits; this one has {bits}"),
            "{body}"
        );
    }
    let dir = fresh_dir("keys-rsa-size");
    let (path, text) = keygen(&dir, &["-t", "rsa", "-b", "2048", "-N", ""]);
    let key = import(&service, "edge", &text, None).expect(201);
    assert_eq!(key["fingerprint"], keygen_fingerprint(&path));
    assert_eq!(key_count(&service), 1);
}

/// `text` (an unencrypted OpenSSH RSA key) with its private numbers changed by `change`.
fn rsa_with(text: &str, change: impl FnOnce(&mut RsaKeypair)) -> String {
    let key = PrivateKey::from_openssh(text).unwrap();
    let mut keypair = key.key_data().rsa().unwrap().clone();
    change(&mut keypair);
    PrivateKey::new(KeypairData::from(keypair), KEYGEN_COMMENT)
        .unwrap()
        .to_openssh(LineEnding::LF)
        .unwrap()
        .to_string()
}

/// A change to an RSA key's private numbers.
type Change = Box<dyn Fn(&mut RsaKeypair)>;

/// Random bytes of `len` with the top bit set, as a positive multi-precision integer.
fn random_mpint(len: usize) -> Mpint {
    let mut bytes = vec![0u8; len];
    ssh_key::rand_core::RngCore::fill_bytes(&mut ssh_key::rand_core::OsRng, &mut bytes);
    bytes[0] |= 0x80;
    Mpint::from_positive_bytes(&bytes).unwrap()
}

/// docs/api.md "Keys": an RSA key whose private numbers do not belong to its public key (its
/// signatures would never verify) is refused, with or without a passphrase to decrypt it.
#[test]
fn rsa_key_whose_private_numbers_do_not_fit_its_public_key_is_invalid_key() {
    let service = Service::start("keys-rsa-consistency");
    let dir = fresh_dir("keys-rsa-consistency");
    let (_, text) = keygen(&dir, &["-t", "rsa", "-b", "2048", "-N", ""]);
    let length = |mpint: &Mpint| mpint.as_positive_bytes().unwrap().len();
    let changes: [(&str, Change); 4] = [
        (
            "d",
            Box::new(move |key| key.private.d = random_mpint(length(&key.private.d))),
        ),
        (
            "p and q",
            Box::new(move |key| {
                key.private.p = random_mpint(length(&key.private.p));
                key.private.q = random_mpint(length(&key.private.q));
            }),
        ),
        (
            "p and q swapped, so iqmp no longer fits",
            Box::new(|key| {
                std::mem::swap(&mut key.private.p, &mut key.private.q);
            }),
        ),
        (
            "iqmp",
            Box::new(move |key| key.private.iqmp = random_mpint(length(&key.private.iqmp))),
        ),
    ];
    for (what, change) in changes {
        let broken = rsa_with(&text, change);
        let body = import(&service, "broken", &broken, None).assert_error(400, "INVALID_KEY");
        assert!(
            details(&body).contains("private numbers do not belong to its public key"),
            "{what}: {body}"
        );
        let encrypted = PrivateKey::from_openssh(&broken)
            .unwrap()
            .encrypt(&mut ssh_key::rand_core::OsRng, "secret")
            .unwrap()
            .to_openssh(LineEnding::LF)
            .unwrap()
            .to_string();
        import(&service, "broken", &encrypted, Some("secret")).assert_error(400, "INVALID_KEY");
    }
    assert_eq!(key_count(&service), 0);
    import(&service, "intact", &rsa_with(&text, |_| {}), None).expect(201);
}
