//! OpenSSH user certificates on keys (docs/api.md, "Certificates") with OpenSSH as the
//! oracle: certificates made by `ssh-keygen -s` with a throwaway CA are attached, shown,
//! replaced, removed and filtered by expiry; `connect` and the ssh_config export carry the
//! one in use; a throwaway sshd that trusts the CA (`TrustedUserCAKeys`, no
//! `authorized_keys`) lets the key in with its certificate only, through `connect`'s output
//! and through the agent, and refuses an expired one and one for other principals.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use crate::interop::{assert_logged_in, current_user, write_identity, Sshd};
use crate::support::{fresh_dir, id_of, Service};

/// A throwaway certificate authority: an ed25519 key made by ssh-keygen in its own dir.
struct Ca {
    dir: PathBuf,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let dir = fresh_dir(name);
        keygen(
            &["-q", "-t", "ed25519", "-N", "", "-C", "ca", "-f"],
            &dir.join("ca"),
        );
        Ca { dir }
    }

    fn public_file(&self) -> PathBuf {
        self.dir.join("ca.pub")
    }

    /// The CA key's fingerprint as `ssh-keygen -l` prints it.
    fn fingerprint(&self) -> String {
        let output = Command::new("ssh-keygen")
            .arg("-lf")
            .arg(self.public_file())
            .output()
            .expect("ssh-keygen runs");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.split_whitespace()
            .nth(1)
            .expect("a fingerprint")
            .to_owned()
    }

    /// A certificate of `public_key` (`<alg> <base64>`) signed with `ssh-keygen -s CA
    /// ARGS`: its line, as the `-cert.pub` file holds it.
    fn sign(&self, public_key: &str, args: &[&str]) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let file = self
            .dir
            .join(format!("key{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let public = file.with_extension("pub");
        std::fs::write(&public, format!("{public_key}\n")).unwrap();
        let mut full = vec!["-q", "-s"];
        let ca = self.dir.join("ca");
        let ca = ca.to_str().unwrap();
        full.push(ca);
        full.extend_from_slice(args);
        keygen(&full, &public);
        let certificate = PathBuf::from(format!("{}-cert.pub", file.display()));
        std::fs::read_to_string(certificate)
            .expect("ssh-keygen wrote the certificate")
            .trim_end()
            .to_owned()
    }
}

/// `ssh-keygen ARGS PATH`, which must succeed.
fn keygen(args: &[&str], path: &std::path::Path) {
    let output = Command::new("ssh-keygen")
        .args(args)
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-keygen runs (openssh-client)");
    assert!(
        output.status.success(),
        "ssh-keygen {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A new ed25519 key in the service.
fn new_key(service: &Service, name: &str) -> Value {
    service
        .post("/api/keys", &json!({"name": name, "type": "ed25519"}))
        .expect(201)
}

fn public_key(key: &Value) -> &str {
    key["public_key"].as_str().unwrap()
}

fn attach_path(key: &Value) -> String {
    format!("/api/keys/{}/certificate", key["id"].as_str().unwrap())
}

/// `PUT /api/keys/:id/certificate` of `certificate` for `key`.
fn attach(service: &Service, key: &Value, certificate: &str) -> crate::support::Response {
    service.put(&attach_path(key), &json!({ "certificate": certificate }))
}

/// `<type> <base64>`: a certificate line without its comment, as the service keeps it.
fn bare(line: &str) -> String {
    line.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn an_attached_user_certificate_is_shown_with_its_fields_and_is_the_one_in_use() {
    let service = Service::start("cert-attach");
    let ca = Ca::new("cert-attach-ca");
    let key = new_key(&service, "k");
    let line = ca.sign(
        public_key(&key),
        &[
            "-I",
            "alice@corp",
            "-n",
            "alice,deploy",
            "-z",
            "42",
            "-O",
            "force-command=/bin/true",
        ],
    );
    let response = attach(&service, &key, &line);
    let view = response.expect(201);
    assert_eq!(
        response.header("etag"),
        Some(format!("\"{}\"", view["revision"]).as_str())
    );
    let cert = &view["certificates"][0];
    assert_eq!(view["certificates"].as_array().unwrap().len(), 1);
    assert_eq!(cert["certificate"], bare(&line));
    assert_eq!(cert["type"], "ssh-ed25519-cert-v01@openssh.com");
    assert_eq!(cert["key_id"], "alice@corp");
    assert_eq!(cert["serial"], 42);
    assert_eq!(cert["principals"], json!(["alice", "deploy"]));
    assert_eq!(cert["critical_options"]["force-command"], "/bin/true");
    assert_eq!(cert["extensions"]["permit-pty"], "");
    assert_eq!(cert["ca_fingerprint"], ca.fingerprint());
    // ssh-keygen without -V: valid from 1970 to forever.
    assert_eq!(cert["valid_after"], "1970-01-01T00:00:00Z");
    assert_eq!(cert["valid_before"], Value::Null);
    assert_eq!(cert["expires_in_s"], Value::Null);
    assert_eq!(cert["status"], "valid");
    assert_eq!(
        view["certificate"], *cert,
        "the one valid certificate is in use"
    );
    let read = service
        .get(&format!("/api/keys/{}", key["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(read["certificates"], view["certificates"]);
    let listed = service.get("/api/keys").expect(200);
    assert_eq!(listed["items"][0]["certificate"], *cert);
}

#[test]
fn a_certificate_for_the_same_principals_replaces_the_old_one_and_for_others_adds_one() {
    let service = Service::start("cert-replace");
    let ca = Ca::new("cert-replace-ca");
    let key = new_key(&service, "k");
    let first = ca.sign(public_key(&key), &["-I", "one", "-n", "a,b", "-z", "1"]);
    attach(&service, &key, &first).expect(201);
    let again = ca.sign(public_key(&key), &["-I", "two", "-n", "b,a,a", "-z", "2"]);
    let view = attach(&service, &key, &again).expect(200);
    let serials: Vec<&Value> = view["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["serial"])
        .collect();
    assert_eq!(
        serials,
        [&json!(2)],
        "the same principal set replaced the first"
    );
    let other = ca.sign(public_key(&key), &["-I", "three", "-n", "c", "-z", "3"]);
    let view = attach(&service, &key, &other).expect(201);
    let serials: Vec<&Value> = view["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["serial"])
        .collect();
    assert_eq!(serials, [&json!(2), &json!(3)], "oldest attachment first");
}

#[test]
fn attach_refuses_anything_but_a_user_certificate_of_the_key_and_takes_one() {
    let service = Service::start("cert-refusals");
    let ca = Ca::new("cert-refusals-ca");
    let key = new_key(&service, "k");
    let other = new_key(&service, "other");
    let path = attach_path(&key);
    let refused = |body: Value, status: u16, code: &str, says: &str| {
        let error = service.put(&path, &body).assert_error(status, code);
        let details = error["details"].as_str().unwrap_or_default();
        assert!(details.contains(says), "{body}: {details}");
    };
    refused(
        json!({"certificate": public_key(&key)}),
        400,
        "INVALID_CERTIFICATE",
        "not an OpenSSH certificate",
    );
    let others = ca.sign(public_key(&other), &["-I", "x", "-n", "a"]);
    refused(
        json!({"certificate": others}),
        400,
        "INVALID_CERTIFICATE",
        "another public key",
    );
    let host = ca.sign(public_key(&key), &["-I", "x", "-h", "-n", "host.example"]);
    refused(
        json!({"certificate": host}),
        400,
        "INVALID_CERTIFICATE",
        "host certificate",
    );
    refused(
        json!({"certificate": "ssh-ed25519-cert-v01@openssh.com AAAA*not-base64"}),
        400,
        "INVALID_CERTIFICATE",
        "does not read",
    );
    let good = ca.sign(public_key(&key), &["-I", "x", "-n", "a"]);
    let (algorithm, base64) = good.split_once(' ').unwrap();
    let base64 = base64.split_whitespace().next().unwrap();
    let changed = format!("{algorithm} {}A{}", &base64[..40], &base64[41..]);
    if changed != good {
        refused(
            json!({"certificate": changed}),
            400,
            "INVALID_CERTIFICATE",
            "",
        );
    }
    refused(
        json!({"certificate": 7}),
        400,
        "VALIDATION_ERROR",
        "certificate",
    );
    refused(json!({}), 400, "VALIDATION_ERROR", "certificate");
    service
        .put(
            "/api/keys/00000000-0000-4000-8000-000000000000/certificate",
            &json!({"certificate": good}),
        )
        .assert_error(404, "KEY_NOT_FOUND");
    let view = service
        .get(&format!("/api/keys/{}", key["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(
        view["certificates"],
        json!([]),
        "nothing refused was attached"
    );
    service
        .put(&path, &json!({"certificate": good}))
        .expect(201);
}

#[test]
fn attach_and_remove_honour_if_match_and_a_stale_revision_changes_nothing() {
    let service = Service::start("cert-if-match");
    let ca = Ca::new("cert-if-match-ca");
    let key = new_key(&service, "k");
    let line = ca.sign(public_key(&key), &["-I", "x", "-n", "a"]);
    let body = json!({ "certificate": line }).to_string();
    let put = |revision: &Value| {
        let headers = [("If-Match", format!("\"{revision}\""))];
        service.request_raw_body("PUT", &attach_path(&key), &headers, Some(body.as_bytes()))
    };
    put(&json!(99)).assert_error(412, "PRECONDITION_FAILED");
    let view = service
        .get(&format!("/api/keys/{}", key["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(
        view["certificates"],
        json!([]),
        "a stale revision attached nothing"
    );
    let attached = put(&key["revision"]).expect(201);
    let headers = [("If-Match", format!("\"{}\"", key["revision"]))];
    service
        .request_raw_body("DELETE", &attach_path(&key), &headers, None)
        .assert_error(412, "PRECONDITION_FAILED");
    let headers = [("If-Match", format!("\"{}\"", attached["revision"]))];
    service
        .request_raw_body("DELETE", &attach_path(&key), &headers, None)
        .expect(200);
}

#[test]
fn a_certificate_text_of_65536_bytes_is_read_and_of_65537_is_refused() {
    let service = Service::start("cert-size");
    let ca = Ca::new("cert-size-ca");
    let key = new_key(&service, "k");
    let line = bare(&ca.sign(public_key(&key), &["-I", "x", "-n", "a"]));
    let padded = |total: usize| format!("{line} {}", "c".repeat(total - line.len() - 1));
    let error = attach(&service, &key, &padded(65_537)).assert_error(400, "INVALID_CERTIFICATE");
    assert!(
        error["details"]
            .as_str()
            .unwrap()
            .contains("at most 65536 bytes"),
        "{error}"
    );
    attach(&service, &key, &padded(65_536)).expect(201);
}

#[test]
fn delete_removes_one_principal_set_or_all_and_is_404_when_nothing_matches() {
    let service = Service::start("cert-delete");
    let ca = Ca::new("cert-delete-ca");
    let key = new_key(&service, "k");
    let path = attach_path(&key);
    for principals in ["alice,deploy", "bob"] {
        let line = ca.sign(public_key(&key), &["-I", principals, "-n", principals]);
        service
            .put(&path, &json!({"certificate": line}))
            .expect(201);
    }
    service
        .delete(&format!("{path}?principals=carol"))
        .assert_error(404, "CERTIFICATE_NOT_FOUND");
    let view = service
        .delete(&format!("{path}?principals=deploy,alice"))
        .expect(200);
    assert_eq!(view["certificates"].as_array().unwrap().len(), 1);
    assert_eq!(view["certificates"][0]["principals"], json!(["bob"]));
    let view = service.delete(&path).expect(200);
    assert_eq!(view["certificates"], json!([]));
    assert_eq!(view["certificate"], Value::Null);
    service
        .delete(&path)
        .assert_error(404, "CERTIFICATE_NOT_FOUND");
    service
        .delete("/api/keys/00000000-0000-4000-8000-000000000000/certificate")
        .assert_error(404, "KEY_NOT_FOUND");
}

#[test]
fn expired_and_expiring_certificates_are_flagged_in_the_view_and_by_the_list_filter() {
    let service = Service::start("cert-expiry");
    let ca = Ca::new("cert-expiry-ca");
    let expired = new_key(&service, "expired");
    let expiring = new_key(&service, "expiring");
    let lasting = new_key(&service, "lasting");
    for (key, validity) in [
        (&expired, "-2d:-1d"),
        (&expiring, "-1d:+1d"),
        (&lasting, "-1d:+30d"),
    ] {
        let line = ca.sign(public_key(key), &["-I", "x", "-n", "a", "-V", validity]);
        attach(&service, key, &line).expect(201);
    }
    let listed = service.get("/api/keys").expect(200);
    let by_name = |name: &str| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|key| key["name"] == name)
            .unwrap()
            .clone()
    };
    let gone = by_name("expired");
    assert_eq!(
        gone["certificate"],
        Value::Null,
        "an expired certificate is not in use"
    );
    assert_eq!(gone["certificates"][0]["status"], "expired");
    let left = gone["certificates"][0]["expires_in_s"].as_i64().unwrap();
    assert!((-86_400 * 2..0).contains(&left), "{left}");
    let soon = by_name("expiring");
    assert_eq!(soon["certificate"]["status"], "expiring");
    let left = soon["certificate"]["expires_in_s"].as_i64().unwrap();
    assert!((0..=86_400).contains(&left), "{left}");
    assert_eq!(by_name("lasting")["certificate"]["status"], "valid");
    let names = |query: &str| -> Vec<String> {
        service
            .get(&format!("/api/keys?certificate={query}"))
            .expect(200)["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|key| key["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("expired"), ["expired"]);
    assert_eq!(names("expiring"), ["expiring"]);
    service
        .get("/api/keys?certificate=soon")
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn attaching_and_removing_a_certificate_are_each_one_key_update_in_the_change_feed() {
    let service = Service::start("cert-feed");
    let ca = Ca::new("cert-feed-ca");
    let key = new_key(&service, "k");
    let id = key["id"].as_str().unwrap();
    let start = service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap();
    let line = ca.sign(public_key(&key), &["-I", "x", "-n", "a"]);
    let attached = attach(&service, &key, &line).expect(201);
    assert_eq!(attached["revision"], key["revision"].as_i64().unwrap() + 1);
    assert_ne!(attached["updated_at"], key["updated_at"]);
    let removed = service.delete(&attach_path(&key)).expect(200);
    assert_eq!(removed["revision"], key["revision"].as_i64().unwrap() + 2);
    let page = service
        .get(&format!("/api/changes?since={start}"))
        .expect(200);
    let entries: Vec<(&str, &str, &str)> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let text = |field: &str| item[field].as_str().unwrap();
            (text("kind"), text("id"), text("op"))
        })
        .collect();
    assert_eq!(entries, [("key", id, "updated"), ("key", id, "updated")]);
}

/// docs/api.md "Certificates": the watcher (its tick set short for the test) logs one `key`
/// `updated` entry when an attached certificate's status changes on its own, here when it
/// expires; the key then shows it `expired`. The entry is waited for with the feed's own
/// long poll, not a sleep.
#[test]
fn a_certificate_that_expires_on_its_own_is_a_key_update_in_the_change_feed() {
    let service = Service::start_env(
        "cert-expiry-feed",
        &[("HOST_MANAGER_TEST_CERTIFICATE_TICK_MS", "100")],
    );
    let ca = Ca::new("cert-expiry-feed-ca");
    let key = new_key(&service, "k");
    let id = key["id"].as_str().unwrap();
    let line = ca.sign(public_key(&key), &["-I", "x", "-n", "a", "-V", "-1m:+3s"]);
    let attached = attach(&service, &key, &line).expect(201);
    assert_eq!(attached["certificate"]["status"], "expiring");
    let after_attach = service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap();
    let page = service
        .get(&format!("/api/changes?since={after_attach}&wait=30"))
        .expect(200);
    let entries: Vec<(&str, &str)> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["kind"].as_str().unwrap(), item["id"].as_str().unwrap()))
        .collect();
    assert_eq!(entries, [("key", id)], "{page}");
    let now = service.get(&format!("/api/keys/{id}")).expect(200);
    assert_eq!(now["certificates"][0]["status"], "expired", "{now}");
    assert_eq!(
        now["revision"], attached["revision"],
        "the key itself was not edited"
    );
}

/// A key-auth host for `key` on `port` as `user`; its id.
fn key_host(service: &Service, key: &Value, port: u16, user: &str) -> String {
    id_of(
        &service
            .post(
                "/api/hosts",
                &json!({"name": format!("h {user}"), "hostname": "127.0.0.1", "port": port,
                        "username": user, "auth": {"type": "key", "key_id": key["id"]}}),
            )
            .expect(201),
    )
}

fn connect(service: &Service, host: &str, query: &str) -> Value {
    service
        .post(&format!("/api/hosts/{host}/connect{query}"), &json!({}))
        .expect(200)["credentials"]
        .clone()
}

#[test]
fn connect_hands_out_the_certificate_for_the_host_user_and_the_export_names_its_file() {
    let service = Service::start("cert-connect");
    let ca = Ca::new("cert-connect-ca");
    let key = new_key(&service, "k");
    let key_id = key["id"].as_str().unwrap();
    let alice = key_host(&service, &key, 22, "alice");
    let bob = key_host(&service, &key, 22, "bob");
    assert!(
        connect(&service, &alice, "").get("certificate").is_none(),
        "none attached"
    );
    let old = ca.sign(
        public_key(&key),
        &["-I", "old", "-n", "alice", "-V", "-2d:-1d"],
    );
    attach(&service, &key, &old).expect(201);
    assert!(
        connect(&service, &alice, "").get("certificate").is_none(),
        "expired"
    );
    let line = ca.sign(
        public_key(&key),
        &["-I", "new", "-n", "alice", "-V", "-1d:+30d"],
    );
    attach(&service, &key, &line).expect(200);
    assert_eq!(connect(&service, &alice, "")["certificate"], bare(&line));
    assert_eq!(
        connect(&service, &alice, "?agent=true")["certificate"],
        bare(&line)
    );
    assert!(
        connect(&service, &bob, "").get("certificate").is_none(),
        "other principals"
    );
    let export = service.get("/api/export/ssh-config").text();
    let certificate_file = format!("    CertificateFile ~/.ssh/host-manager/{key_id}-cert.pub\n");
    let blocks: Vec<&str> = export.split("\nHost ").collect();
    let block_of = |user: &str| {
        blocks
            .iter()
            .find(|block| block.contains(&format!("    User {user}\n")))
            .unwrap()
            .to_string()
    };
    assert!(
        block_of("alice").contains(&format!(
            "    IdentityFile ~/.ssh/host-manager/{key_id}\n{certificate_file}"
        )),
        "{export}"
    );
    assert!(!block_of("bob").contains("CertificateFile"), "{export}");
}

/// A throwaway sshd trusting `ca` for user certificates, with no `authorized_keys`.
fn sshd_trusting(name: &str, ca: &Ca) -> Sshd {
    Sshd::start_with_config(
        name,
        &format!("TrustedUserCAKeys {}\n", ca.public_file().display()),
    )
}

/// `ssh` as `user` with `identity` and, when given, `certificate` written beside it as the
/// desktop app writes what `connect` answers; `echo hello` on the server.
fn ssh_with(
    sshd: &Sshd,
    identity: &std::path::Path,
    certificate: Option<&str>,
    user: &str,
) -> std::process::Output {
    let certificate_file = identity.with_file_name("identity-cert");
    let _ = std::fs::remove_file(&certificate_file);
    let mut options = vec!["-o".to_owned(), "BatchMode=yes".to_owned()];
    if let Some(line) = certificate {
        std::fs::write(&certificate_file, format!("{line}\n")).unwrap();
        options.push("-o".into());
        options.push(format!("CertificateFile={}", certificate_file.display()));
    }
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    sshd.ssh(user, identity, &options)
        .args(["echo", "hello"])
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("ssh runs")
}

#[test]
fn ssh_logs_in_with_the_certificate_from_connect_where_the_key_alone_is_refused() {
    let ca = Ca::new("cert-login-ca");
    let sshd = sshd_trusting("cert-login-sshd", &ca);
    let service = Service::start("cert-login");
    let user = current_user();
    let key = new_key(&service, "k");
    let host = key_host(&service, &key, sshd.port, &user);
    let credentials = connect(&service, &host, "");
    let identity = write_identity(&sshd, &credentials);
    let refused = ssh_with(&sshd, &identity, None, &user);
    assert!(
        !refused.status.success(),
        "no authorized_keys: the key alone is refused"
    );
    let line = ca.sign(
        public_key(&key),
        &["-I", "login", "-n", &user, "-V", "-1h:+1h"],
    );
    attach(&service, &key, &line).expect(201);
    let credentials = connect(&service, &host, "");
    let certificate = credentials["certificate"]
        .as_str()
        .expect("connect's certificate");
    let output = ssh_with(&sshd, &identity, Some(certificate), &user);
    assert_logged_in(&output, &sshd);
    assert!(
        sshd.log().contains("ID login"),
        "sshd accepted the certificate: {}",
        sshd.log()
    );
}

#[test]
fn sshd_refuses_an_expired_certificate_and_one_for_other_principals_and_the_service_flags_both() {
    let ca = Ca::new("cert-refused-ca");
    let sshd = sshd_trusting("cert-refused-sshd", &ca);
    let service = Service::start("cert-refused");
    let user = current_user();
    let key = new_key(&service, "k");
    let host = key_host(&service, &key, sshd.port, &user);
    let identity = write_identity(&sshd, &connect(&service, &host, ""));
    let expired = ca.sign(
        public_key(&key),
        &["-I", "old", "-n", &user, "-V", "-2d:-1d"],
    );
    let others = ca.sign(public_key(&key), &["-I", "else", "-n", "someone-else"]);
    for line in [&expired, &others] {
        let output = ssh_with(&sshd, &identity, Some(line), &user);
        assert!(!output.status.success(), "sshd let {line} in");
        attach(&service, &key, line).expect(201);
    }
    assert!(
        connect(&service, &host, "").get("certificate").is_none(),
        "neither is handed out"
    );
    let view = service
        .get(&format!("/api/keys/{}", key["id"].as_str().unwrap()))
        .expect(200);
    assert_eq!(view["certificates"][0]["status"], "expired");
    assert!(view["certificates"][0]["expires_in_s"].as_i64().unwrap() < 0);
    assert_eq!(
        view["certificates"][1]["principals"],
        json!(["someone-else"])
    );
    let flagged = service.get("/api/keys?certificate=expired").expect(200);
    assert_eq!(flagged["items"][0]["id"], key["id"]);
}

/// docs/agent.md "SSH agent": `ssh-add -d k.pub` with `k-cert.pub` beside it asks the agent to
/// remove the key, then its certificate; both succeed (ssh-add prints no "Could not remove
/// identity"), and the agent offers neither any more.
#[cfg(unix)]
#[test]
fn ssh_add_d_of_a_key_beside_its_certificate_removes_both_without_an_error() {
    let ca = Ca::new("cert-remove-ca");
    let service = Service::start("cert-remove");
    let status = service.get("/api/agent").expect(200);
    let socket = PathBuf::from(status["socket"].as_str().expect("the agent's socket"));
    let work = fresh_dir("cert-remove-work");
    let key = new_key(&service, "k");
    let line = ca.sign(
        public_key(&key),
        &["-I", "x", "-n", "alice", "-V", "-1h:+1d"],
    );
    attach(&service, &key, &line).expect(201);
    assert_eq!(agent_lines(&socket).len(), 2, "the key and its certificate");
    let public_file = work.join("k.pub");
    std::fs::write(&public_file, format!("{}\n", public_key(&key))).unwrap();
    std::fs::write(work.join("k-cert.pub"), format!("{line}\n")).unwrap();
    // ssh-add reads `k.pub` for `k` and looks for `k-cert.pub` beside it.
    let output = Command::new("ssh-add")
        .arg("-d")
        .arg(work.join("k"))
        .env("SSH_AUTH_SOCK", &socket)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-add runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(!said.contains("Could not remove"), "{said}");
    assert_eq!(said.matches("Identity removed").count(), 2, "{said}");
    let left = agent_lines(&socket);
    assert!(
        !left.iter().any(|line| line.starts_with("ssh-")),
        "nothing offered: {left:?}"
    );
}

/// `ssh-add -L` against the agent at `socket`: the lines it lists.
#[cfg(unix)]
fn agent_lines(socket: &std::path::Path) -> Vec<String> {
    let output = Command::new("ssh-add")
        .arg("-L")
        .env("SSH_AUTH_SOCK", socket)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-add runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(bare)
        .collect()
}

#[cfg(unix)]
#[test]
fn the_agent_offers_key_and_valid_certificate_and_ssh_logs_in_through_it_never_with_an_expired_one()
{
    let ca = Ca::new("cert-agent-ca");
    let sshd = sshd_trusting("cert-agent-sshd", &ca);
    let service = Service::start("cert-agent");
    let status = service.get("/api/agent").expect(200);
    let socket = PathBuf::from(status["socket"].as_str().expect("the agent's socket"));
    let work = fresh_dir("cert-agent-work");
    let user = current_user();
    let key = new_key(&service, "k");
    let public_file = work.join("k.pub");
    std::fs::write(&public_file, format!("{}\n", public_key(&key))).unwrap();
    let certificate_file = work.join("k-cert.pub");
    // As the agent export sets it up: the public key, its certificate, the agent, only them.
    let login = || {
        let agent = format!("IdentityAgent={}", socket.display());
        let certificate = format!("CertificateFile={}", certificate_file.display());
        sshd.ssh(
            &user,
            &public_file,
            &["-o", &agent, "-o", &certificate, "-o", "BatchMode=yes"],
        )
        .args(["echo", "hello"])
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("ssh runs")
    };
    let expired = ca.sign(
        public_key(&key),
        &["-I", "old", "-n", &user, "-V", "-2d:-1d"],
    );
    std::fs::write(&certificate_file, format!("{expired}\n")).unwrap();
    attach(&service, &key, &expired).expect(201);
    assert_eq!(
        agent_lines(&socket),
        [bare(public_key(&key))],
        "never an expired certificate"
    );
    assert!(!login().status.success(), "no valid certificate: refused");
    let line = ca.sign(
        public_key(&key),
        &["-I", "agent-login", "-n", &user, "-V", "-1h:+1h"],
    );
    std::fs::write(&certificate_file, format!("{line}\n")).unwrap();
    attach(&service, &key, &line).expect(200);
    assert_eq!(agent_lines(&socket), [bare(public_key(&key)), bare(&line)]);
    let output = login();
    assert_logged_in(&output, &sshd);
    assert!(sshd.log().contains("ID agent-login"), "{}", sshd.log());
}

/// The binary form of a key or certificate line (its base64 field).
#[cfg(unix)]
fn blob_of(line: &str) -> Vec<u8> {
    use base64ct::Encoding;
    base64ct::Base64::decode_vec(line.split_whitespace().nth(1).unwrap()).unwrap()
}

/// A `SIGN_REQUEST` (13) for `blob` over `data`, flags 0, on a fresh connection to the
/// agent at `socket`: the answer.
#[cfg(unix)]
fn sign_request(socket: &std::path::Path, blob: &[u8], data: &[u8]) -> Vec<u8> {
    let mut message = vec![13u8];
    for field in [blob, data] {
        message.extend_from_slice(&(field.len() as u32).to_be_bytes());
        message.extend_from_slice(field);
    }
    message.extend_from_slice(&0u32.to_be_bytes());
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(crate::support::EVENT_DEADLINE))
        .unwrap();
    crate::agent_wire::exchange(&mut stream, &message).expect("an answer")
}

/// OpenSSH's `ssh` signs a certificate login with the plain key the agent lists; other
/// clients name the certificate itself in the sign request, as the protocol allows.
#[cfg(unix)]
#[test]
fn the_agent_signs_for_a_valid_attached_certificate_with_its_key_and_not_for_an_expired_one() {
    use rsa::signature::Verifier;
    let ca = Ca::new("cert-agent-sign-ca");
    let service = Service::start("cert-agent-sign");
    let status = service.get("/api/agent").expect(200);
    let socket = PathBuf::from(status["socket"].as_str().expect("the agent's socket"));
    let key = new_key(&service, "k");
    let valid = ca.sign(public_key(&key), &["-I", "v", "-n", "a", "-V", "-1h:+1h"]);
    let expired = ca.sign(public_key(&key), &["-I", "e", "-n", "b", "-V", "-2d:-1d"]);
    let unattached = ca.sign(public_key(&key), &["-I", "u", "-n", "c", "-V", "-1h:+1h"]);
    for line in [&valid, &expired] {
        attach(&service, &key, line).expect(201);
    }
    let data = b"data to sign";
    let answer = sign_request(&socket, &blob_of(&valid), data);
    assert_eq!(answer[0], 14, "SIGN_RESPONSE for the valid certificate");
    let signature = &answer[5..];
    let public = ssh_key::PublicKey::from_openssh(public_key(&key)).unwrap();
    let signature = ssh_key::Signature::try_from(signature).unwrap();
    assert!(
        Verifier::verify(public.key_data(), data, &signature).is_ok(),
        "signed with the certified key"
    );
    for line in [&expired, &unattached] {
        let answer = sign_request(&socket, &blob_of(line), data);
        assert_eq!(answer, [5], "FAILURE for {line}");
    }
}
