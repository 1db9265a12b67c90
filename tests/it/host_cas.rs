//! Host certificate authorities (docs/api.md "Host keys (known_hosts)"): the
//! `/api/known-hosts/authorities` endpoints, and host certificates judged through them, with
//! OpenSSH as the oracle: a throwaway sshd presents a `HostCertificate` signed by
//! `ssh-keygen -s`, and `ssh -o StrictHostKeyChecking=yes` reads the service's known_hosts
//! export. A revoked CA, an expired certificate and one whose principals do not name the
//! host are refused by verify (with the reason), by `connect` and by `ssh` alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::interop::{assert_logged_in, current_user, write_identity, Sshd};
use crate::known_hosts::{events, export_to, keygen, strict_ssh, verify};
use crate::support::{fresh_dir, host_body, id_of, Service};

const AUTHORITIES: &str = "/api/known-hosts/authorities";

/// Signs `public_key_path` as a host certificate with the CA at `ca_path`: `-n principals
/// -V validity` as `ssh-keygen` takes them. Answers the certificate's path.
fn sign_host(ca_path: &Path, public_key_path: &Path, principals: &str, validity: &str) -> PathBuf {
    let signed = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(ca_path)
        .args(["-I", "test-host", "-h", "-n", principals, "-V", validity])
        .arg(public_key_path)
        .output()
        .expect("ssh-keygen -s runs");
    assert!(signed.status.success(), "{signed:?}");
    let name = public_key_path.file_stem().unwrap().to_string_lossy();
    public_key_path.with_file_name(format!("{name}-cert.pub"))
}

/// A CA, and an sshd whose host key it signed for `principals` and `validity`, presented
/// as its `HostCertificate`: (CA public key, CA private key path, sshd, certificate text).
fn certified_sshd(name: &str, principals: &str, validity: &str) -> (String, PathBuf, Sshd, String) {
    let (ca, ca_path) = keygen(&fresh_dir(&format!("{name}-ca")), "ca", "ed25519");
    let mut certificate = PathBuf::new();
    let sshd = Sshd::start_with(name, |dir| {
        certificate = sign_host(&ca_path, &dir.join("host_key.pub"), principals, validity);
        format!("HostCertificate {}\n", certificate.display())
    });
    let text = std::fs::read_to_string(&certificate).expect("read the certificate");
    (ca, ca_path, sshd, text.trim().to_owned())
}

/// A key generated in the service and authorized on `sshd`, and a catalogue host for the
/// sshd using it: (host id, the private key written as `ssh`'s identity file).
fn login_host(service: &Service, sshd: &Sshd) -> (String, PathBuf) {
    let key = service
        .post("/api/keys", &json!({"name": "login", "type": "ed25519"}))
        .expect(201);
    sshd.authorize(key["public_key"].as_str().unwrap());
    let body = host_body(
        "Certified sshd",
        "127.0.0.1",
        json!({"port": sshd.port, "username": current_user(),
               "auth": {"type": "key", "key_id": key["id"]}}),
    );
    let host = id_of(&service.post("/api/hosts", &body).expect(201));
    let connect = service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200);
    (host, write_identity(sshd, &connect["credentials"]))
}

fn trust_ca(service: &Service, pattern: &str, ca: &str) -> Value {
    service
        .post(AUTHORITIES, &json!({"pattern": pattern, "public_key": ca}))
        .expect(201)
}

/// `connect`'s refusal of `host`: its 409 `HOST_KEY_CHANGED` message and details, as text.
fn connect_refusal(service: &Service, host: &str) -> String {
    let refused = service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .assert_error(409, "HOST_KEY_CHANGED");
    refused.to_string()
}

/// `ssh`'s refusal: it failed and said why on stderr.
fn assert_ssh_refused(output: &std::process::Output, why: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "ssh logged in: {stderr}");
    assert!(stderr.contains(why), "ssh said: {stderr}");
}

#[test]
fn an_authority_is_stored_once_listed_exported_deleted_audited_and_in_the_change_feed() {
    let service = Service::start("host-cas-crud");
    let (ca, _) = keygen(&fresh_dir("host-cas-crud-keys"), "ca", "ed25519");
    let created = service
        .post(
            AUTHORITIES,
            &json!({"pattern": "*.Example.COM", "public_key": format!("{ca} ops CA")}),
        )
        .expect(201);
    let id = id_of(&created);
    assert_eq!(created["pattern"], "*.example.com");
    assert_eq!(created["key_type"], "ssh-ed25519");
    assert_eq!(created["public_key"], ca.as_str());
    assert_eq!(created["comment"], "ops CA");
    assert!(created["fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("SHA256:"));
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    let again = service
        .post(
            AUTHORITIES,
            &json!({"pattern": "*.example.com", "public_key": ca}),
        )
        .expect(200);
    assert_eq!(again, created, "the same pattern and key are one authority");
    let listed = service.get(AUTHORITIES).expect(200);
    assert_eq!(listed, json!({"items": [created.clone()]}));
    let entry = service.get(&format!("/api/known-hosts/{id}")).expect(200);
    assert_eq!(
        (entry["marker"].as_str(), entry["source"].as_str()),
        (Some("cert-authority"), Some("accept"))
    );
    let export = service.get("/api/export/known-hosts").text();
    assert!(
        export.contains(&format!("@cert-authority *.example.com {ca} ops CA\n")),
        "{export}"
    );

    // A plain entry is not an authority: its id is not found here.
    let plain = service
        .post(
            "/api/known-hosts/accept",
            &json!({"hostname": "a.example.com", "public_key": ca}),
        )
        .expect(201);
    service
        .delete(&format!(
            "{AUTHORITIES}/{}",
            plain["entry"]["id"].as_str().unwrap()
        ))
        .assert_error(404, "KNOWN_HOST_NOT_FOUND");
    service.delete(&format!("{AUTHORITIES}/{id}")).expect(204);
    service
        .delete(&format!("{AUTHORITIES}/{id}"))
        .assert_error(404, "KNOWN_HOST_NOT_FOUND");
    assert_eq!(service.get(AUTHORITIES).expect(200), json!({"items": []}));
    let audited = events(&service);
    assert_eq!(
        audited[..4],
        [
            "host_ca.deleted",
            "host_key.accepted",
            "host_ca.added",
            "host_ca.added"
        ]
    );
    let feed = service.get("/api/changes?since=0").expect(200);
    let of_authority: Vec<&str> = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["kind"] == "known_host" && change["id"] == id.as_str())
        .map(|change| change["op"].as_str().unwrap())
        .collect();
    assert_eq!(of_authority, ["created", "deleted"]);
}

#[test]
fn authority_bodies_are_checked_on_both_sides_of_each_rule() {
    let service = Service::start("host-cas-validation");
    let dir = fresh_dir("host-cas-validation-keys");
    let (ca, ca_path) = keygen(&dir, "ca", "ed25519");
    let (_, host_path) = keygen(&dir, "host", "ed25519");
    let certificate = sign_host(&ca_path, &host_path.with_extension("pub"), "h", "-5m:+1h");
    let certificate = std::fs::read_to_string(certificate).unwrap();
    let refused = |body: Value, field: &str| {
        let answer = service
            .post(AUTHORITIES, &body)
            .assert_error(400, "VALIDATION_ERROR");
        let details = answer["details"].as_str().unwrap_or_default();
        assert!(
            details.starts_with(&format!("{field}: ")),
            "{body}: {answer}"
        );
    };
    let longest = "a".repeat(1_024);
    service
        .post(AUTHORITIES, &json!({"pattern": longest, "public_key": ca}))
        .expect(201);
    refused(
        json!({"pattern": format!("{longest}a"), "public_key": ca}),
        "pattern",
    );
    refused(json!({"public_key": ca}), "pattern");
    refused(json!({"pattern": "", "public_key": ca}), "pattern");
    refused(
        json!({"pattern": "a.example,b.example", "public_key": ca}),
        "pattern",
    );
    refused(
        json!({"pattern": "!a.example", "public_key": ca}),
        "pattern",
    );
    refused(
        json!({"pattern": "|1|c2FsdA==|aGFzaA==", "public_key": ca}),
        "pattern",
    );
    refused(json!({"pattern": "[h]:0", "public_key": ca}), "pattern");
    service
        .post(
            AUTHORITIES,
            &json!({"pattern": "[h]:65535", "public_key": ca}),
        )
        .expect(201);
    refused(
        json!({"pattern": "*", "public_key": certificate.trim()}),
        "public_key",
    );
    refused(
        json!({"pattern": "*", "public_key": "ssh-ed25519 AAAA"}),
        "public_key",
    );
    refused(json!({"pattern": "*"}), "public_key");
    let padded = format!("{ca} {}", "c".repeat(16_384 - ca.len() - 1));
    service
        .post(AUTHORITIES, &json!({"pattern": "*", "public_key": padded}))
        .expect(201);
    refused(
        json!({"pattern": "*", "public_key": format!("{padded}c")}),
        "public_key",
    );
}

#[test]
fn a_host_certificate_of_a_trusted_ca_is_ca_trusted_and_strict_ssh_logs_in_through_the_export() {
    // No end (`always:forever`), as `ssh-keygen -s` signs without `-V`: the common case.
    let (ca, _, sshd, certificate) =
        certified_sshd("host-cas-login-sshd", "127.0.0.1", "always:forever");
    let service = Service::start("host-cas-login");
    let (host, identity) = login_host(&service, &sshd);
    let name = format!("[127.0.0.1]:{}", sshd.port);
    let authority = trust_ca(&service, &name, &ca);
    let verdict = verify(&service, sshd.port, &certificate);
    assert_eq!(verdict["status"], "ca_trusted", "{verdict}");
    assert_eq!(verdict["ca_fingerprint"], authority["fingerprint"]);
    assert_eq!(verdict["blocks_connect"], false);
    // Only the CA is trusted: the server's plain key alone is not.
    let plain = std::fs::read_to_string(sshd.dir.join("host_key.pub")).unwrap();
    assert_eq!(
        verify(&service, sshd.port, plain.trim())["status"],
        "unknown"
    );
    let export = export_to(&service, "", "host-cas-login-export");
    assert_logged_in(&strict_ssh(&sshd, &identity, &export), &sshd);
    service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200);
}

#[test]
fn a_revoked_ca_is_revoked_with_its_reason_blocks_connect_cannot_be_added_and_ssh_refuses_it() {
    let (ca, _, sshd, certificate) =
        certified_sshd("host-cas-revoked-sshd", "127.0.0.1", "-5m:+1h");
    let service = Service::start("host-cas-revoked");
    let (host, identity) = login_host(&service, &sshd);
    let name = format!("[127.0.0.1]:{}", sshd.port);
    let authority = trust_ca(&service, &name, &ca);
    service
        .post(
            "/api/import/known-hosts",
            &json!({"text": format!("@revoked {name} {ca}\n")}),
        )
        .expect(200);
    service
        .post(AUTHORITIES, &json!({"pattern": name, "public_key": ca}))
        .assert_error(409, "HOST_KEY_REVOKED");
    let verdict = verify(&service, sshd.port, &certificate);
    assert_eq!(verdict["status"], "revoked", "{verdict}");
    let fingerprint = authority["fingerprint"].as_str().unwrap();
    let reason = verdict["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("CA {fingerprint} is marked @revoked")),
        "{reason}"
    );
    assert_eq!(verdict["blocks_connect"], true);
    let refusal = connect_refusal(&service, &host);
    assert!(refusal.contains("is marked @revoked"), "{refusal}");
    let export = export_to(&service, "", "host-cas-revoked-export");
    assert_ssh_refused(&strict_ssh(&sshd, &identity, &export), "revoked");
}

#[test]
fn an_expired_host_certificate_is_certificate_invalid_with_its_reason_until_a_valid_one_is_verified(
) {
    let (ca, ca_path, sshd, certificate) =
        certified_sshd("host-cas-expired-sshd", "127.0.0.1", "20200101:20200102");
    let service = Service::start("host-cas-expired");
    let (host, identity) = login_host(&service, &sshd);
    trust_ca(&service, &format!("[127.0.0.1]:{}", sshd.port), &ca);
    let verdict = verify(&service, sshd.port, &certificate);
    assert_eq!(verdict["status"], "certificate_invalid", "{verdict}");
    let reason = verdict["reason"].as_str().unwrap();
    assert!(reason.contains("expired at 2020-01-02"), "{reason}");
    assert_eq!(verdict["blocks_connect"], true);
    let refusal = connect_refusal(&service, &host);
    assert!(
        refusal.contains("certificate_invalid") && refusal.contains("expired at"),
        "{refusal}"
    );
    let export = export_to(&service, "", "host-cas-expired-export");
    assert_ssh_refused(&strict_ssh(&sshd, &identity, &export), "expired");

    // The certificate renewed: a verify that finds it valid lets connect through again.
    let renewal_dir = fresh_dir("host-cas-expired-renewal");
    let renewal_key = renewal_dir.join("host_key.pub");
    std::fs::copy(sshd.dir.join("host_key.pub"), &renewal_key).unwrap();
    let renewed = sign_host(&ca_path, &renewal_key, "127.0.0.1", "-5m:+1h");
    let renewed = std::fs::read_to_string(renewed).unwrap();
    assert_eq!(
        verify(&service, sshd.port, renewed.trim())["status"],
        "ca_trusted"
    );
    service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200);
}

#[test]
fn a_host_certificate_whose_principals_do_not_name_the_host_is_certificate_invalid_and_ssh_refuses_it(
) {
    let (ca, _, sshd, certificate) = certified_sshd(
        "host-cas-principals-sshd",
        "other.example,*.other.example",
        "-5m:+1h",
    );
    let service = Service::start("host-cas-principals");
    let (host, identity) = login_host(&service, &sshd);
    trust_ca(&service, &format!("[127.0.0.1]:{}", sshd.port), &ca);
    let verdict = verify(&service, sshd.port, &certificate);
    assert_eq!(verdict["status"], "certificate_invalid", "{verdict}");
    let reason = verdict["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            r#"names "other.example", "*.other.example" among its principals, not 127.0.0.1"#
        ),
        "{reason}"
    );
    let refusal = connect_refusal(&service, &host);
    assert!(refusal.contains("among its principals"), "{refusal}");
    let export = export_to(&service, "", "host-cas-principals-export");
    assert_ssh_refused(&strict_ssh(&sshd, &identity, &export), "principal");
}
