//! Host keys (docs/api.md "Host keys (known_hosts)" and "Audit log"), with OpenSSH as the
//! oracle: keys scanned from a throwaway sshd with `ssh-keyscan`, trusted through the API,
//! and the export read by `ssh` and `ssh-keygen -F`; `ssh-keygen -H` output imported.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::interop::{assert_logged_in, current_user, host_for_login, write_identity, Sshd};
use crate::support::{fresh_dir, Service};

/// `<type> <base64>` of every key `ssh-keyscan` reads from the sshd (of `types`, e.g.
/// `ed25519`, or all when empty).
fn keyscan(sshd: &Sshd, types: &str) -> Vec<String> {
    let mut command = Command::new("ssh-keyscan");
    command.args(["-p", &sshd.port.to_string()]);
    if !types.is_empty() {
        command.args(["-t", types]);
    }
    let output = command.arg("127.0.0.1").output().expect("ssh-keyscan runs");
    let keys: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            Some(format!("{} {}", fields.next()?, fields.next()?))
        })
        .collect();
    assert!(!keys.is_empty(), "ssh-keyscan read no key: {output:?}");
    keys
}

/// `POST /api/known-hosts/verify` of `public_key` for 127.0.0.1 at `port`, answered 200.
pub(crate) fn verify(service: &Service, port: u16, public_key: &str) -> Value {
    service
        .post(
            "/api/known-hosts/verify",
            &json!({"hostname": "127.0.0.1", "port": port, "public_key": public_key}),
        )
        .expect(200)
}

fn accept_body(port: u16, public_key: &str) -> Value {
    json!({"hostname": "127.0.0.1", "port": port, "public_key": public_key})
}

/// Writes the known-hosts export (`query` appended) to a fresh file.
pub(crate) fn export_to(service: &Service, query: &str, name: &str) -> PathBuf {
    let response = service.get(&format!("/api/export/known-hosts{query}"));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let path = fresh_dir(name).join("known_hosts");
    std::fs::write(&path, response.text()).expect("write export");
    path
}

/// `ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile=<known_hosts>` to the sshd.
pub(crate) fn strict_ssh(sshd: &Sshd, identity: &Path, known_hosts: &Path) -> std::process::Output {
    Command::new("ssh")
        .args(["-F", "/dev/null", "-i"])
        .arg(identity)
        .args(["-o", "StrictHostKeyChecking=yes", "-o"])
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .args([
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "ConnectTimeout=10",
            "-p",
            &sshd.port.to_string(),
        ])
        .arg(format!("{}@127.0.0.1", current_user()))
        .args(["echo", "hello"])
        .stdin(std::process::Stdio::null())
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("ssh runs")
}

/// A fresh ed25519 key pair from ssh-keygen: (`<type> <base64>`, private key path).
pub(crate) fn keygen(dir: &Path, name: &str, kind: &str) -> (String, PathBuf) {
    let path = dir.join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-C", "", "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs");
    assert!(status.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).expect("read .pub");
    let mut fields = public.split_whitespace();
    let key = format!(
        "{} {}",
        fields.next().unwrap_or_default(),
        fields.next().unwrap_or_default()
    );
    (key, path)
}

pub(crate) fn events(service: &Service) -> Vec<String> {
    service.get("/api/audit").expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["event"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn scanned_key_accepted_lets_strict_ssh_log_in_and_a_replaced_server_key_is_changed_and_refused() {
    let sshd = Sshd::start("known-hosts-oracle-sshd");
    let service = Service::start("known-hosts-oracle");
    let answer = host_for_login(&service, &sshd, None);
    let host_id = answer["host"]["id"].as_str().unwrap().to_owned();
    let identity = write_identity(&sshd, &answer["credentials"]);
    let scanned = keyscan(&sshd, "ed25519");
    assert_eq!(
        verify(&service, sshd.port, &scanned[0])["status"],
        "unknown"
    );
    let accepted = service
        .post(
            "/api/known-hosts/accept",
            &accept_body(sshd.port, &scanned[0]),
        )
        .expect(201);
    assert_eq!(accepted["status"], "unknown");
    assert_eq!(
        accepted["entry"]["host"],
        format!("[127.0.0.1]:{}", sshd.port)
    );
    assert_eq!(accepted["entry"]["host_ids"], json!([host_id]));
    assert_eq!(
        verify(&service, sshd.port, &scanned[0])["status"],
        "trusted"
    );
    let export = export_to(&service, "", "known-hosts-oracle-export");
    assert_logged_in(&strict_ssh(&sshd, &identity, &export), &sshd);

    // The server's key is replaced: the next connection presents the new one.
    let host_key = sshd.dir.join("host_key");
    std::fs::remove_file(&host_key).unwrap();
    std::fs::remove_file(host_key.with_extension("pub")).unwrap();
    keygen(&sshd.dir, "host_key", "ed25519");
    let rescanned = keyscan(&sshd, "ed25519");
    assert_ne!(rescanned, scanned);
    let verdict = verify(&service, sshd.port, &rescanned[0]);
    assert_eq!(verdict["status"], "changed", "{verdict}");
    assert_eq!(verdict["blocks_connect"], true);
    assert_eq!(
        verdict["known"][0]["fingerprint"],
        accepted["entry"]["fingerprint"]
    );
    let refused = strict_ssh(&sshd, &identity, &export);
    assert!(!refused.status.success(), "ssh must refuse a changed key");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let blocked = service
        .post(&format!("/api/hosts/{host_id}/connect"), &json!({}))
        .assert_error(409, "HOST_KEY_CHANGED");
    assert!(
        blocked["details"]
            .as_str()
            .unwrap()
            .contains("this host ([127.0.0.1]:"),
        "{blocked}"
    );
    assert!(!blocked.to_string().contains("PRIVATE KEY"), "{blocked}");

    // Replacing needs replace: true; then connect and ssh work again.
    service
        .post(
            "/api/known-hosts/accept",
            &accept_body(sshd.port, &rescanned[0]),
        )
        .assert_error(409, "HOST_KEY_CHANGED");
    let mut body = accept_body(sshd.port, &rescanned[0]);
    body["replace"] = json!(true);
    let replaced = service.post("/api/known-hosts/accept", &body).expect(201);
    assert_eq!(replaced["status"], "changed");
    assert_eq!(replaced["entry"]["source"], "replace");
    assert_eq!(replaced["replaced"][0]["id"], accepted["entry"]["id"]);
    service
        .post(&format!("/api/hosts/{host_id}/connect"), &json!({}))
        .expect(200);
    let export = export_to(&service, "?hashed=true", "known-hosts-oracle-export-2");
    assert_logged_in(&strict_ssh(&sshd, &identity, &export), &sshd);
    assert_eq!(
        events(&service),
        vec!["host_key.replaced", "host_key.accepted"]
    );
}

#[test]
fn a_second_host_key_type_on_the_server_is_new_algorithm_not_changed() {
    let sshd = Sshd::start("known-hosts-new-alg-sshd");
    let service = Service::start("known-hosts-new-alg");
    let answer = host_for_login(&service, &sshd, None);
    let identity = write_identity(&sshd, &answer["credentials"]);
    let ed25519 = keyscan(&sshd, "ed25519");
    service
        .post(
            "/api/known-hosts/accept",
            &accept_body(sshd.port, &ed25519[0]),
        )
        .expect(201);
    keygen(&sshd.dir, "host_key_ecdsa", "ecdsa");
    let ecdsa = keyscan(&sshd, "ecdsa");
    assert!(ecdsa[0].starts_with("ecdsa-sha2-nistp256 "), "{ecdsa:?}");
    let verdict = verify(&service, sshd.port, &ecdsa[0]);
    assert_eq!(verdict["status"], "new_algorithm", "{verdict}");
    assert_eq!(verdict["blocks_connect"], false);
    assert_eq!(verdict["known"][0]["key_type"], "ssh-ed25519");
    // Nothing blocks, and ssh keeps using the algorithm it knows.
    let host_id = answer["host"]["id"].as_str().unwrap();
    service
        .post(&format!("/api/hosts/{host_id}/connect"), &json!({}))
        .expect(200);
    let export = export_to(&service, "", "known-hosts-new-alg-export");
    assert_logged_in(&strict_ssh(&sshd, &identity, &export), &sshd);
    // Accepting it adds a second entry for the host; both are trusted.
    service
        .post(
            "/api/known-hosts/accept",
            &accept_body(sshd.port, &ecdsa[0]),
        )
        .expect(201);
    assert_eq!(verify(&service, sshd.port, &ecdsa[0])["status"], "trusted");
    assert_eq!(
        verify(&service, sshd.port, &ed25519[0])["status"],
        "trusted"
    );
}

/// Three hosts with their keys, as known_hosts text (plain, one line each).
fn sample(dir: &Path) -> (String, Vec<(&'static str, String)>) {
    let hosts = [
        ("web.example.com", "ed25519"),
        ("[db.example.com]:2222", "ecdsa"),
        ("2001:db8::7", "ed25519"),
    ];
    let mut text = String::from("# sample\n");
    let mut keys = Vec::new();
    for (n, (host, kind)) in hosts.iter().enumerate() {
        let (key, _) = keygen(dir, &format!("k{n}"), kind);
        text.push_str(&format!("{host} {key}\n"));
        keys.push((*host, key));
    }
    (text, keys)
}

/// `ssh-keygen -F name -f file`: the matching lines, or `None` when it finds nothing.
fn keygen_find(file: &Path, name: &str) -> Option<String> {
    let output = Command::new("ssh-keygen")
        .args(["-F", name, "-f"])
        .arg(file)
        .output()
        .expect("ssh-keygen runs");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn ssh_keygen_finds_every_exported_entry_plain_and_hashed_and_nothing_else() {
    let service = Service::start("known-hosts-keygen-find");
    let dir = fresh_dir("known-hosts-keygen-find-keys");
    let (text, keys) = sample(&dir);
    let report = service
        .post("/api/import/known-hosts", &json!({"text": text}))
        .expect(200);
    assert_eq!(report["added"], 3, "{report}");
    for (query, hashed) in [("", false), ("?hashed=true", true)] {
        let export = export_to(&service, query, "known-hosts-keygen-find-export");
        let body = std::fs::read_to_string(&export).unwrap();
        let entries: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(entries.len(), 3, "{body}");
        assert_eq!(
            entries.iter().all(|line| line.starts_with("|1|")),
            hashed,
            "{body}"
        );
        for (host, key) in &keys {
            let found = keygen_find(&export, host)
                .unwrap_or_else(|| panic!("ssh-keygen -F {host} found nothing in:\n{body}"));
            assert!(found.contains(key.as_str()), "{host}: {found}");
        }
        assert_eq!(
            keygen_find(&export, "db.example.com"),
            None,
            "port 22 is another host"
        );
        assert_eq!(keygen_find(&export, "other.example.com"), None);
    }
}

#[test]
fn import_of_ssh_keygen_hashed_output_matches_the_same_hosts() {
    let service = Service::start("known-hosts-import-hashed");
    let dir = fresh_dir("known-hosts-import-hashed-keys");
    let (text, keys) = sample(&dir);
    let file = dir.join("known_hosts");
    std::fs::write(&file, &text).unwrap();
    let status = Command::new("ssh-keygen")
        .args(["-q", "-H", "-f"])
        .arg(&file)
        .output()
        .expect("ssh-keygen -H runs");
    assert!(status.status.success(), "{status:?}");
    let hashed = std::fs::read_to_string(&file).unwrap();
    assert!(!hashed.contains("example.com"), "{hashed}");
    let web = service
        .post(
            "/api/hosts",
            &json!({"name": "web", "hostname": "web.example.com", "port": 22,
                    "username": "u", "auth": {"type": "agent"}}),
        )
        .expect(201);
    let report = service
        .post("/api/import/known-hosts", &json!({"text": hashed}))
        .expect(200);
    assert_eq!(
        (report["added"].clone(), report["refused"].clone()),
        (json!(3), json!([]))
    );
    for (host, key) in &keys {
        let (hostname, port) = match host.strip_prefix('[') {
            Some(rest) => {
                let (name, port) = rest.split_once("]:").unwrap();
                (name, port.parse::<u16>().unwrap())
            }
            None => (*host, 22),
        };
        let verdict = service
            .post(
                "/api/known-hosts/verify",
                &json!({"hostname": hostname, "port": port, "public_key": key}),
            )
            .expect(200);
        assert_eq!(verdict["status"], "trusted", "{host}: {verdict}");
    }
    let other = service
        .post(
            "/api/known-hosts/verify",
            &json!({"hostname": "db.example.com", "public_key": keys[1].1}),
        )
        .expect(200);
    assert_eq!(other["status"], "unknown", "port 22 of db is another host");
    let listed = service
        .get("/api/known-hosts?hostname=web.example.com")
        .expect(200);
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["hashed"], true);
    assert_eq!(items[0]["hostname"], Value::Null);
    assert_eq!(items[0]["host_ids"], json!([web["id"]]));
    let by_host = service
        .get(&format!(
            "/api/known-hosts?host_id={}",
            web["id"].as_str().unwrap()
        ))
        .expect(200);
    assert_eq!(by_host["items"], listed["items"]);
}

#[test]
fn import_then_export_then_import_is_stable() {
    let service = Service::start("known-hosts-roundtrip");
    let dir = fresh_dir("known-hosts-roundtrip-keys");
    let (a, _) = keygen(&dir, "a", "ed25519");
    let (b, _) = keygen(&dir, "b", "ecdsa");
    let (ca, _) = keygen(&dir, "ca", "ed25519");
    let (old, _) = keygen(&dir, "old", "ed25519");
    let text = format!(
        "# a comment\n\nweb1,web2,[web3]:2200 {a} ops key\n*.corp {b}\n\
         @cert-authority *.example.com {ca}\n@revoked * {old}\n"
    );
    let first = service
        .post("/api/import/known-hosts", &json!({"text": text}))
        .expect(200);
    assert_eq!(first["added"], 6, "{first}");
    let export = service.get("/api/export/known-hosts").text();
    let again = service
        .post("/api/import/known-hosts", &json!({"text": export}))
        .expect(200);
    assert_eq!(
        (again["added"].clone(), again["unchanged"].clone()),
        (json!(0), json!(6))
    );
    let fresh = Service::start("known-hosts-roundtrip-fresh");
    let copied = fresh
        .post("/api/import/known-hosts", &json!({"text": export}))
        .expect(200);
    assert_eq!(copied["added"], 6);
    assert_eq!(fresh.get("/api/export/known-hosts").text(), export);
    assert!(
        export.contains(&format!("@cert-authority *.example.com {ca}\n")),
        "{export}"
    );
    assert!(
        export.contains(&format!("[web3]:2200 {a} ops key\n")),
        "{export}"
    );
}

#[test]
fn import_refuses_lines_it_cannot_keep_and_names_them() {
    let service = Service::start("known-hosts-import-refused");
    let dir = fresh_dir("known-hosts-import-refused-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let text = format!(
        "good {key}\n*.corp,!secret.corp {key}\n|1|c2hvcnQ=|c2hvcnQ= {key}\n\
         bad ssh-ed25519 AAAAnotakey\n@trusted x {key}\nlonely\n"
    );
    let dry = service
        .post(
            "/api/import/known-hosts",
            &json!({"text": text, "dry_run": true}),
        )
        .expect(200);
    assert_eq!(dry["added"], 1);
    assert_eq!(
        service.get("/api/known-hosts").expect(200)["items"],
        json!([])
    );
    let report = service
        .post("/api/import/known-hosts", &json!({"text": text}))
        .expect(200);
    let lines: Vec<u64> = report["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6], "{report}");
    assert!(report["refused"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("negated"));
    assert!(report["refused"][1]["reason"]
        .as_str()
        .unwrap()
        .contains("20 bytes"));
    assert_eq!(report["added"], 1);
    service
        .post("/api/import/known-hosts", &json!({}))
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn import_splits_fields_on_space_and_tab_only_and_trusts_no_line_ssh_keygen_would_not_find() {
    let service = Service::start("known-hosts-import-blanks");
    let dir = fresh_dir("known-hosts-import-blanks-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let (key_type, base64) = key.split_once(' ').unwrap_or_default();
    let text = format!(
        "\u{a0}good.example {key}\n\
         good.example {key_type}\u{2028}{base64}\n\
         good.example\u{3000}{key}\n\
         tabbed.example\t{key_type}\t{base64}\n"
    );
    let file = dir.join("known_hosts");
    std::fs::write(&file, &text).expect("write known_hosts");
    assert_eq!(
        keygen_find(&file, "good.example"),
        None,
        "ssh-keygen finds none"
    );
    assert!(keygen_find(&file, "tabbed.example").is_some());
    let report = service
        .post("/api/import/known-hosts", &json!({"text": text}))
        .expect(200);
    assert_eq!(report["added"], 1, "{report}");
    for (name, status) in [("good.example", "unknown"), ("tabbed.example", "trusted")] {
        let verdict = service
            .post(
                "/api/known-hosts/verify",
                &json!({"hostname": name, "public_key": key}),
            )
            .expect(200);
        assert_eq!(verdict["status"], status, "{name}: {verdict}");
    }
}

#[test]
fn the_list_is_paged_as_the_host_list_with_page_per_page_and_total() {
    let service = Service::start("known-hosts-paged");
    let dir = fresh_dir("known-hosts-paged-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let mut text: String = (0..7).map(|n| format!("h{n}.example {key}\n")).collect();
    text.push_str(&format!("*.example {key}\n"));
    service
        .post("/api/import/known-hosts", &json!({"text": text}))
        .expect(200);
    let hosts_of = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["host"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let default = service.get("/api/known-hosts").expect(200);
    assert_eq!(
        (&default["total"], &default["page"], &default["per_page"]),
        (&json!(8), &json!(1), &json!(50))
    );
    let mut seen = Vec::new();
    for page in 1..=3 {
        let got = service
            .get(&format!("/api/known-hosts?page={page}&per_page=3"))
            .expect(200);
        assert_eq!((&got["total"], &got["per_page"]), (&json!(8), &json!(3)));
        seen.extend(hosts_of(&got));
    }
    assert_eq!(
        seen,
        hosts_of(&default),
        "the pages, in order, are the whole list"
    );
    let past = service
        .get("/api/known-hosts?page=99999999999999999999")
        .expect(200);
    assert_eq!(
        (past["items"].clone(), &past["total"]),
        (json!([]), &json!(8))
    );
    let clamped = service.get("/api/known-hosts?per_page=5000").expect(200);
    assert_eq!(clamped["per_page"], 1000);
    let matching = service
        .get("/api/known-hosts?hostname=h3.example&per_page=1&page=2")
        .expect(200);
    assert_eq!(matching["total"], 2, "its own entry and *.example");
    assert_eq!(hosts_of(&matching), ["*.example"]);
    for query in ["page=0", "per_page=0", "page=x", "per_page=-1", "page="] {
        let error = service
            .get(&format!("/api/known-hosts?{query}"))
            .assert_error(400, "VALIDATION_ERROR");
        let field = query.split('=').next().unwrap_or_default();
        assert!(
            error["details"]
                .as_str()
                .unwrap_or_default()
                .starts_with(&format!("query parameter {field}: ")),
            "{query}: {error}"
        );
    }
}

#[test]
fn revoked_key_is_revoked_blocks_connect_and_cannot_be_accepted() {
    let service = Service::start("known-hosts-revoked");
    let dir = fresh_dir("known-hosts-revoked-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let (good, _) = keygen(&dir, "g", "ed25519");
    service
        .post(
            "/api/import/known-hosts",
            &json!({"text": format!("@revoked * {key}\n")}),
        )
        .expect(200);
    let host = service
        .post(
            "/api/hosts",
            &json!({"name": "r", "hostname": "r.example.com", "port": 22, "username": "u",
                    "auth": {"type": "agent"}}),
        )
        .expect(201);
    let body = json!({"hostname": "R.example.com", "public_key": key});
    let verdict = service.post("/api/known-hosts/verify", &body).expect(200);
    assert_eq!(verdict["status"], "revoked");
    let connect = format!("/api/hosts/{}/connect", host["id"].as_str().unwrap());
    service
        .post(&connect, &json!({}))
        .assert_error(409, "HOST_KEY_CHANGED");
    let mut replace = body.clone();
    replace["replace"] = json!(true);
    service
        .post("/api/known-hosts/accept", &replace)
        .assert_error(409, "HOST_KEY_REVOKED");
    service
        .post(&connect, &json!({}))
        .assert_error(409, "HOST_KEY_CHANGED");
    // Accepting the host's real key clears the pending verdict.
    service
        .post(
            "/api/known-hosts/accept",
            &json!({"hostname": "r.example.com", "public_key": good}),
        )
        .expect(201);
    service.post(&connect, &json!({})).expect(200);
}

#[test]
fn connect_through_a_hop_whose_key_changed_is_refused_naming_the_hop() {
    let service = Service::start("known-hosts-hop");
    let dir = fresh_dir("known-hosts-hop-keys");
    let (old, _) = keygen(&dir, "old", "ed25519");
    let (new, _) = keygen(&dir, "new", "ed25519");
    let create = |name: &str, hostname: &str, chain: Value| {
        service
            .post(
                "/api/hosts",
                &json!({"name": name, "hostname": hostname, "port": 2200, "username": "u",
                        "auth": {"type": "agent"}, "jump_host_ids": chain}),
            )
            .expect(201)["id"]
            .clone()
    };
    let bastion = create("Bastion", "bastion.example.com", json!([]));
    let target = create("Target", "target.example.com", json!([bastion]));
    let bastion_key = json!({"hostname": "bastion.example.com", "port": 2200, "public_key": old});
    service
        .post("/api/known-hosts/accept", &bastion_key)
        .expect(201);
    let changed = json!({"hostname": "bastion.example.com", "port": 2200, "public_key": new});
    let verdict = service
        .post("/api/known-hosts/verify", &changed)
        .expect(200);
    assert_eq!(verdict["status"], "changed");
    let error = service
        .post(
            &format!("/api/hosts/{}/connect", target.as_str().unwrap()),
            &json!({}),
        )
        .assert_error(409, "HOST_KEY_CHANGED");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.contains("jump host \"Bastion\" ([bastion.example.com]:2200)"),
        "{details}"
    );
    assert!(details.contains("changed"), "{details}");
    // A later trusted verify does not clear it; only an accept or replace does.
    let trusted = service
        .post("/api/known-hosts/verify", &bastion_key)
        .expect(200);
    assert_eq!(trusted["status"], "trusted");
    service
        .post(
            &format!("/api/hosts/{}/connect", target.as_str().unwrap()),
            &json!({}),
        )
        .assert_error(409, "HOST_KEY_CHANGED");
    service
        .post("/api/known-hosts/accept", &bastion_key)
        .expect(200);
    service
        .post(
            &format!("/api/hosts/{}/connect", target.as_str().unwrap()),
            &json!({}),
        )
        .expect(200);
}

#[test]
fn certificate_signed_by_a_trusted_ca_is_ca_trusted_only_for_its_principals() {
    let service = Service::start("known-hosts-ca");
    let dir = fresh_dir("known-hosts-ca-keys");
    let (ca, ca_path) = keygen(&dir, "ca", "ed25519");
    let (_, host_path) = keygen(&dir, "host", "ed25519");
    let signed = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca_path)
        .args(["-I", "host", "-h", "-n", "a.example.com", "-V", "-5m:+1h"])
        .arg(host_path.with_extension("pub"))
        .output()
        .expect("ssh-keygen -s runs");
    assert!(signed.status.success(), "{signed:?}");
    let cert = std::fs::read_to_string(dir.join("host-cert.pub")).unwrap();
    service
        .post(
            "/api/import/known-hosts",
            &json!({"text": format!("@cert-authority *.example.com {ca}\n")}),
        )
        .expect(200);
    let verdict = |hostname: &str| {
        service
            .post(
                "/api/known-hosts/verify",
                &json!({"hostname": hostname, "public_key": cert.trim()}),
            )
            .expect(200)
    };
    let trusted = verdict("a.example.com");
    assert_eq!(trusted["status"], "ca_trusted", "{trusted}");
    assert!(trusted["ca_fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("SHA256:"));
    // Not a principal: refused as `ssh` refuses it, with the reason (it used to read
    // `unknown`, judged by the plain key it carries).
    let not_a_principal = verdict("b.example.com");
    assert_eq!(not_a_principal["status"], "certificate_invalid");
    assert!(not_a_principal["reason"]
        .as_str()
        .unwrap()
        .contains("among its principals, not b.example.com"));
    assert_eq!(
        verdict("a.example.org")["status"],
        "unknown",
        "CA not trusted there"
    );
    service
        .post(
            "/api/known-hosts/accept",
            &json!({"hostname": "a.example.com", "public_key": cert.trim()}),
        )
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn verify_and_accept_bodies_are_checked_on_both_sides_of_each_rule() {
    let service = Service::start("known-hosts-validation");
    let dir = fresh_dir("known-hosts-validation-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let field_of = |body: Value| {
        let error = service
            .post("/api/known-hosts/verify", &body)
            .assert_error(400, "VALIDATION_ERROR");
        error["details"]
            .as_str()
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(field_of(json!({"public_key": key})), "hostname");
    assert_eq!(
        field_of(json!({"hostname": "h:22", "public_key": key})),
        "hostname"
    );
    assert_eq!(
        field_of(json!({"hostname": "h", "port": 0, "public_key": key})),
        "port"
    );
    assert_eq!(
        field_of(json!({"hostname": "h", "port": 65536, "public_key": key})),
        "port"
    );
    assert_eq!(
        field_of(json!({"hostname": "h", "public_key": "ssh-ed25519 AAAA"})),
        "public_key"
    );
    assert_eq!(field_of(json!({"hostname": "h"})), "public_key");
    let at_edge = json!({"hostname": "h", "port": 65535, "public_key": key});
    assert_eq!(
        service
            .post("/api/known-hosts/verify", &at_edge)
            .expect(200)["status"],
        "unknown"
    );
    let mut replace = at_edge.clone();
    replace["replace"] = json!("yes");
    service
        .post("/api/known-hosts/accept", &replace)
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        events(&service),
        Vec::<String>::new(),
        "a refused accept is not logged"
    );
}

#[test]
fn entries_are_got_and_deleted_by_id_and_deletion_is_audited() {
    let service = Service::start("known-hosts-get-delete");
    let dir = fresh_dir("known-hosts-get-delete-keys");
    let (key, _) = keygen(&dir, "k", "ed25519");
    let accepted = service
        .post(
            "/api/known-hosts/accept",
            &json!({"hostname": "h.example.com", "public_key": key}),
        )
        .expect(201);
    let id = accepted["entry"]["id"].as_str().unwrap();
    let got = service.get(&format!("/api/known-hosts/{id}")).expect(200);
    assert_eq!(got, accepted["entry"]);
    assert_eq!(
        (got["hostname"].clone(), got["port"].clone()),
        (json!("h.example.com"), json!(22))
    );
    service
        .delete(&format!("/api/known-hosts/{id}"))
        .expect(204);
    service
        .get(&format!("/api/known-hosts/{id}"))
        .assert_error(404, "KNOWN_HOST_NOT_FOUND");
    service
        .delete(&format!("/api/known-hosts/{id}"))
        .assert_error(404, "KNOWN_HOST_NOT_FOUND");
    let wrong = service.get("/api/known-hosts/verify");
    wrong.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(wrong.header("allow"), Some("POST"));
    let audit = service.get("/api/audit").expect(200);
    assert_eq!(audit["items"][0]["event"], "host_key.deleted");
    assert_eq!(audit["items"][0]["subject"], "h.example.com");
    assert_eq!(audit["items"][1]["event"], "host_key.accepted");
    assert_eq!(
        audit["items"][1]["detail"]["fingerprint"],
        got["fingerprint"]
    );
}

#[test]
fn audit_pages_newest_first_with_limit_and_before() {
    let service = Service::start("known-hosts-audit-pages");
    let dir = fresh_dir("known-hosts-audit-pages-keys");
    for n in 0..3 {
        let (key, _) = keygen(&dir, &format!("k{n}"), "ed25519");
        service
            .post(
                "/api/known-hosts/accept",
                &json!({"hostname": format!("h{n}.example.com"), "public_key": key}),
            )
            .expect(201);
    }
    let first = service.get("/api/audit?limit=2").expect(200);
    let subjects = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["subject"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(subjects(&first), ["h2.example.com", "h1.example.com"]);
    let before = first["next_before"].as_i64().unwrap();
    let second = service
        .get(&format!("/api/audit?limit=2&before={before}"))
        .expect(200);
    assert_eq!(subjects(&second), ["h0.example.com"]);
    assert_eq!(second["next_before"], Value::Null);
    service.get("/api/audit?limit=1").expect(200);
    service.get("/api/audit?limit=5000").expect(200);
    service
        .get("/api/audit?limit=0")
        .assert_error(400, "VALIDATION_ERROR");
    service
        .get("/api/audit?before=x")
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn ssh_config_export_points_user_known_hosts_file_at_the_known_hosts_export() {
    let service = Service::start("known-hosts-ssh-config");
    service
        .post(
            "/api/hosts",
            &json!({"name": "web", "hostname": "web.example.com", "port": 22, "username": "u",
                    "auth": {"type": "agent"}}),
        )
        .expect(201);
    let text = service.get("/api/export/ssh-config").text();
    let config = fresh_dir("known-hosts-ssh-config-file").join("config");
    std::fs::write(&config, &text).unwrap();
    let output = Command::new("ssh")
        .args(["-G", "-F"])
        .arg(&config)
        .arg("web")
        .output()
        .expect("ssh -G runs");
    let resolved = String::from_utf8_lossy(&output.stdout);
    let file = resolved
        .lines()
        .find_map(|line| line.strip_prefix("userknownhostsfile "))
        .unwrap_or_default();
    assert!(
        file.ends_with("/.ssh/host-manager/known_hosts"),
        "{resolved}"
    );
    assert_eq!(
        file.split_whitespace().count(),
        1,
        "only the exported store: {file}"
    );
    let again = service
        .post("/api/import/ssh-config", &json!({"config": text}))
        .expect(200);
    assert_eq!(
        again["unchanged"].as_array().map(Vec::len),
        Some(1),
        "{again}"
    );
}
