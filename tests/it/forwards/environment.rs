//! The host fields `remote_command`, `request_tty`, `set_env` and `send_env`
//! (docs/forwards.md, "Startup command and environment"): both sides of each rule, secret
//! values never answered (but by `connect`) nor resting in plaintext, `ssh_options` refusing
//! the directives that now have fields, and the exported lines reaching a real server.

use serde_json::{json, Value};

use super::{assert_invalid, host};
use crate::secrets::{assert_gone, assert_present, sealed_bytes};
use crate::support::{contains_bytes, host_body, id_of, leak_forms, read_all_files, Service};

fn create(service: &Service, extra: Value) -> crate::support::Response {
    service.post("/api/hosts", &host_body("env", "env.example.com", extra))
}

/// Creates a host with `extra` (201 expected) and deletes it again; its answer.
#[track_caller]
fn accepted(service: &Service, extra: Value) -> Value {
    let created = create(service, extra).expect(201);
    service
        .delete(&format!("/api/hosts/{}", id_of(&created)))
        .expect(204);
    created
}

#[test]
fn a_host_always_answers_remote_command_request_tty_set_env_and_send_env() {
    let service = Service::start("fwd-env-shape");
    let id = host(&service, "plain", json!({}));
    let expected = json!([null, null, [], []]);
    let fields = |host: &Value| {
        json!([
            host["remote_command"],
            host["request_tty"],
            host["set_env"],
            host["send_env"]
        ])
    };
    let got = service.get(&format!("/api/hosts/{id}")).expect(200);
    for field in ["remote_command", "request_tty", "set_env", "send_env"] {
        assert!(got.get(field).is_some(), "{field} answered: {got}");
    }
    assert_eq!(fields(&got), expected);
    assert_eq!(
        fields(&service.get("/api/hosts").expect(200)["items"][0]),
        expected
    );
    let set = service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"remote_command": "uptime", "request_tty": "no",
                    "set_env": [{"name": "HM_A", "value": "1"}], "send_env": ["LC_*"]}),
        )
        .expect(200);
    assert_eq!(
        fields(&set),
        json!(["uptime", "no", [{"name": "HM_A", "value": "1"}], ["LC_*"]])
    );
    let kept = service
        .put(&format!("/api/hosts/{id}"), &json!({"notes": "n"}))
        .expect(200);
    assert_eq!(fields(&kept), fields(&set), "a PUT without them keeps them");
    let cleared = service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"remote_command": null, "request_tty": null, "set_env": null, "send_env": null}),
        )
        .expect(200);
    assert_eq!(fields(&cleared), expected);
}

#[test]
fn remote_command_is_trimmed_empty_is_null_one_line_of_at_most_4096_with_balanced_quotes() {
    let service = Service::start("fwd-env-command");
    let command =
        |text: &str| accepted(&service, json!({"remote_command": text}))["remote_command"].clone();
    assert_eq!(
        command("  tail -f /var/log/app.log  "),
        "tail -f /var/log/app.log"
    );
    assert_eq!(command(""), Value::Null);
    assert_eq!(command("   "), Value::Null);
    assert_eq!(
        command("echo \"it's\" 'a \"b\"' 100% #x"),
        "echo \"it's\" 'a \"b\"' 100% #x"
    );
    let long = format!("echo {}", "x".repeat(4091));
    assert_eq!(long.chars().count(), 4096);
    assert_eq!(command(&long), json!(long));
    let refused = |value: Value| {
        assert_invalid(
            &create(&service, json!({"remote_command": value})),
            "remote_command",
        )
    };
    refused(json!(format!("echo {}", "x".repeat(4092))));
    for bad in [
        "echo a\nrm -rf /",
        "echo \"open",
        "echo 'open",
        "echo a\u{0}b",
        "echo \"a' b",
    ] {
        refused(json!(bad));
    }
    refused(json!(5));
    // ssh reads these as no command, or skips the leading `=`.
    for bad in ["none", "NONE", "None", "=echo x", "= echo x"] {
        refused(json!(bad));
    }
    assert_eq!(command("echo none"), "echo none");
    assert_eq!(command("echo a=b"), "echo a=b");
}

#[test]
fn request_tty_is_null_or_one_of_auto_yes_no_force() {
    let service = Service::start("fwd-env-tty");
    for value in ["auto", "yes", "no", "force"] {
        assert_eq!(
            accepted(&service, json!({"request_tty": value}))["request_tty"],
            value
        );
    }
    assert_eq!(
        accepted(&service, json!({"request_tty": null}))["request_tty"],
        Value::Null
    );
    for bad in [json!("Force"), json!("always"), json!(""), json!(true)] {
        assert_invalid(
            &create(&service, json!({"request_tty": bad})),
            "request_tty",
        );
    }
}

#[test]
fn set_env_names_are_portable_and_unique_values_one_line_of_at_most_4096_and_64_entries() {
    let service = Service::start("fwd-env-set");
    let one = |name: &str, value: &str| json!({"set_env": [{"name": name, "value": value}]});
    for name in ["A", "_x", "HM_TOKEN_2", &format!("N{}", "a".repeat(127))] {
        accepted(&service, one(name, "v"));
    }
    for name in [
        "1A",
        "A-B",
        "A B",
        "",
        "É",
        "A=B",
        &format!("N{}", "a".repeat(128)),
    ] {
        assert_invalid(&create(&service, one(name, "v")), "set_env");
    }
    let long = "v".repeat(4096);
    assert_eq!(
        accepted(&service, one("A", &long))["set_env"][0]["value"],
        json!(long)
    );
    for value in [
        "v".repeat(4097),
        "a\nb".to_owned(),
        "a\rb".to_owned(),
        "a\u{0}b".to_owned(),
    ] {
        assert_invalid(&create(&service, one("A", &value)), "set_env");
    }
    accepted(&service, one("A", ""));
    let twice = json!({"set_env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]});
    assert_invalid(&create(&service, twice), "set_env");
    assert_invalid(
        &create(&service, json!({"set_env": [{"name": "A"}]})),
        "set_env",
    );
    assert_invalid(&create(&service, json!({"set_env": "A=1"})), "set_env");
    let entries = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
            .collect()
    };
    let full = accepted(&service, json!({"set_env": entries(64)}));
    assert_eq!(full["set_env"].as_array().map(Vec::len), Some(64));
    assert_eq!(
        full["set_env"][63],
        json!({"name": "V63", "value": "x"}),
        "kept in order"
    );
    assert_invalid(
        &create(&service, json!({"set_env": entries(65)})),
        "set_env",
    );
}

#[test]
fn send_env_patterns_are_letters_digits_underscore_star_question_at_most_128_and_64() {
    let service = Service::start("fwd-env-send");
    let patterns = json!(["LC_*", "EDITOR", "A?", "*", "x_1"]);
    assert_eq!(
        accepted(&service, json!({"send_env": patterns}))["send_env"],
        patterns
    );
    accepted(&service, json!({"send_env": ["a".repeat(128)]}));
    for bad in [
        json!(["A-B"]),
        json!([""]),
        json!(["A B"]),
        json!(["!A"]),
        json!(["A=1"]),
        json!(["a".repeat(129)]),
        json!("LC_*"),
        json!([5]),
    ] {
        assert_invalid(&create(&service, json!({"send_env": bad})), "send_env");
    }
    let many = |n: usize| -> Value { (0..n).map(|i| json!(format!("P{i}"))).collect() };
    assert_eq!(
        accepted(&service, json!({"send_env": many(64)}))["send_env"]
            .as_array()
            .map(Vec::len),
        Some(64)
    );
    assert_invalid(&create(&service, json!({"send_env": many(65)})), "send_env");
}

#[test]
fn ssh_options_refuse_each_directive_that_has_a_field_naming_the_field_to_use() {
    let service = Service::start("fwd-env-options");
    let group = service.new_group("fleet");
    for (line, field) in [
        ("LocalForward 8080 localhost:80", "forward"),
        ("RemoteForward 9000 localhost:3000", "forward"),
        ("DynamicForward 1080", "forward"),
        ("localforward=8080 localhost:80", "forward"),
        ("ExitOnForwardFailure yes", "autostart"),
        ("RemoteCommand tmux", "remote_command"),
        ("REQUESTTTY force", "request_tty"),
        ("SetEnv A=1", "set_env"),
        ("SendEnv LANG", "send_env"),
    ] {
        let error = assert_invalid(
            &create(&service, json!({"ssh_options": ["Compression yes", line]})),
            "ssh_options[1]",
        );
        assert!(
            super::details(&error).contains(field),
            "{line} should name {field}: {error}"
        );
        let group_error = service
            .put(
                &format!("/api/groups/{group}"),
                &json!({"defaults": {"ssh_options": [line]}}),
            )
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            super::details(&group_error).contains(field),
            "{line}: {group_error}"
        );
    }
}

/// The 200 answer of GET `path`, as text.
#[track_caller]
fn text_at(service: &Service, path: &str) -> String {
    let response = service.get(path);
    assert_eq!(response.status, 200, "{path}: {}", response.text());
    response.text()
}

/// Asserts that no form of any of `secrets` is in `texts` (answers), in any file of the
/// data dir, or in the log.
#[track_caller]
fn assert_nowhere(service: &Service, texts: &[String], secrets: &[&String]) {
    let files = read_all_files(&service.data_dir);
    let log = service.stderr();
    for secret in secrets {
        for form in leak_forms(secret.as_bytes()) {
            for text in texts {
                assert!(
                    !contains_bytes(text.as_bytes(), &form),
                    "secret in an answer: {text}"
                );
            }
            for (path, bytes) in &files {
                assert!(
                    !contains_bytes(bytes, &form),
                    "secret in {}",
                    path.display()
                );
            }
            assert!(!contains_bytes(log.as_bytes(), &form), "secret in the log");
        }
    }
}

/// A distinctive secret value for `label`.
fn secret(label: &str) -> String {
    format!("Env-secret-{label}-7c3e91")
}

#[test]
fn a_secret_set_env_value_is_never_answered_nor_stored_in_plaintext_and_connect_opens_it() {
    let service = Service::start("fwd-env-secret");
    let value = secret("host");
    let group_value = secret("group");
    let group = service.new_group("fleet");
    service
        .put(
            &format!("/api/groups/{group}"),
            &json!({"defaults": {"set_env": [{"name": "HM_GROUP_TOKEN", "value": group_value, "secret": true}]}}),
        )
        .expect(200);
    let created = create(
        &service,
        json!({"group_id": group, "set_env": [{"name": "HM_PLAIN", "value": "p"},
            {"name": "HM_TOKEN", "value": value, "secret": true}]}),
    )
    .expect(201);
    let id = id_of(&created);
    let answered =
        json!([{"name": "HM_PLAIN", "value": "p"}, {"name": "HM_TOKEN", "secret": true}]);
    assert_eq!(created["set_env"], answered);
    assert_eq!(
        service.get(&format!("/api/hosts/{id}")).expect(200)["set_env"],
        answered
    );
    let mut texts = vec![
        text_at(&service, "/api/hosts"),
        text_at(&service, &format!("/api/hosts/{id}")),
        text_at(&service, &format!("/api/hosts/{id}/effective")),
        text_at(&service, &format!("/api/groups/{group}")),
        text_at(&service, "/api/groups"),
        text_at(&service, &format!("/api/hosts/{id}/history")),
        text_at(&service, "/api/history"),
        text_at(&service, "/api/changes"),
        text_at(&service, "/api/audit?limit=1000"),
    ];
    let export = service.get("/api/export/ssh-config").text();
    assert!(
        export.contains("# host-manager secret env: HM_TOKEN"),
        "{export}"
    );
    assert!(
        export.contains("# host-manager secret env: HM_GROUP_TOKEN"),
        "{export}"
    );
    texts.push(export);
    let connect = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    let set = &connect["environment"]["set"];
    assert!(
        set.as_array()
            .unwrap()
            .contains(&json!({"name": "HM_TOKEN", "value": value})),
        "{connect}"
    );
    assert!(
        set.as_array()
            .unwrap()
            .contains(&json!({"name": "HM_GROUP_TOKEN", "value": group_value})),
        "{connect}"
    );
    assert_nowhere(&service, &texts, &[&value, &group_value]);
}

#[test]
fn a_secret_resent_without_value_keeps_the_stored_one_and_is_400_when_none_is_stored() {
    let service = Service::start("fwd-env-secret-keep");
    let value = secret("kept");
    let id = id_of(
        &create(
            &service,
            json!({"set_env": [{"name": "HM_TOKEN", "value": value, "secret": true}]}),
        )
        .expect(201),
    );
    let path = format!("/api/hosts/{id}");
    let resent =
        json!({"set_env": [{"name": "HM_A", "value": "1"}, {"name": "HM_TOKEN", "secret": true}]});
    let kept = service.put(&path, &resent).expect(200);
    assert_eq!(
        kept["set_env"],
        json!([{"name": "HM_A", "value": "1"}, {"name": "HM_TOKEN", "secret": true}])
    );
    let opened = service
        .post(&format!("{path}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        opened["environment"]["set"],
        json!([{"name": "HM_A", "value": "1"}, {"name": "HM_TOKEN", "value": value}])
    );
    let unknown = json!({"set_env": [{"name": "HM_OTHER", "secret": true}]});
    assert_invalid(&service.put(&path, &unknown), "set_env");
    assert_invalid(
        &create(
            &service,
            json!({"set_env": [{"name": "HM_TOKEN", "secret": true}]}),
        ),
        "set_env",
    );
    assert_eq!(
        service.get(&path).expect(200)["set_env"],
        kept["set_env"],
        "nothing changed"
    );
    // Dropped from the list, the secret is gone: sending it back without a value is 400.
    service.put(&path, &json!({"set_env": []})).expect(200);
    assert_invalid(
        &service.put(
            &path,
            &json!({"set_env": [{"name": "HM_TOKEN", "secret": true}]}),
        ),
        "set_env",
    );
    let replaced = secret("replaced");
    service
        .put(
            &path,
            &json!({"set_env": [{"name": "HM_TOKEN", "value": replaced, "secret": true}]}),
        )
        .expect(200);
    let opened = service
        .post(&format!("{path}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        opened["environment"]["set"],
        json!([{"name": "HM_TOKEN", "value": replaced}])
    );
}

#[test]
fn the_exported_command_and_environment_reach_the_server_through_ssh() {
    let sshd = super::forward_sshd("fwd-env-login-sshd");
    let service = Service::start("fwd-env-login");
    let dir = super::work_dir("fwd-env-login");
    let command = "printf '%s|%s|%s\\n' \"$HM_GREETING\" \"$HM_SECOND\" \"$HM_SENT\"";
    let (_, answer) = super::sshd_host(
        &service,
        &sshd,
        "session",
        json!({"remote_command": command, "request_tty": "no", "send_env": ["HM_SENT"],
               "set_env": [{"name": "HM_GREETING", "value": "hello \"quoted\" world"},
                           {"name": "HM_SECOND", "value": "100% #2"}]}),
    );
    let config = super::usable_export(&service, &answer, &dir);
    let export = std::fs::read_to_string(&config).unwrap();
    let output = std::process::Command::new("ssh")
        .arg("-F")
        .arg(&config)
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
        .args([
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "ConnectTimeout=60",
        ])
        .arg(super::alias_in(&export, "session"))
        .env("HM_SENT", "sent by the client")
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ssh failed: {}\nsshd log:\n{}\nexport:\n{export}",
        String::from_utf8_lossy(&output.stderr),
        sshd.log()
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        "hello \"quoted\" world|100% #2|sent by the client",
        "export:\n{export}"
    );
}

#[test]
fn a_secret_set_env_write_and_connect_need_the_vault_unlocked() {
    let service = Service::start("fwd-env-locked");
    let id = id_of(
        &create(
            &service,
            json!({"set_env": [{"name": "HM_TOKEN", "value": secret("locked"), "secret": true}]}),
        )
        .expect(201),
    );
    service
        .put(
            "/api/vault/password",
            &json!({"new_password": "master pw 1"}),
        )
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    let path = format!("/api/hosts/{id}");
    service
        .put(
            &path,
            &json!({"set_env": [{"name": "HM_TOKEN", "value": secret("new"), "secret": true}]}),
        )
        .assert_error(401, "VAULT_LOCKED");
    service
        .post(&format!("{path}/connect"), &json!({}))
        .assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/vault/unlock", &json!({"password": "master pw 1"}))
        .expect(200);
    let opened = service
        .post(&format!("{path}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        opened["environment"]["set"],
        json!([{"name": "HM_TOKEN", "value": secret("locked")}]),
        "the refused write changed nothing"
    );
}

#[test]
fn a_duplicated_host_carries_its_rules_command_and_environment_with_the_secret_opened_for_the_copy()
{
    let service = Service::start("fwd-env-duplicate");
    let value = secret("duplicate");
    let id = id_of(
        &create(
            &service,
            json!({"remote_command": "htop", "request_tty": "force", "send_env": ["LC_*"],
                   "set_env": [{"name": "HM_A", "value": "a"}, {"name": "HM_TOKEN", "value": value, "secret": true}]}),
        )
        .expect(201),
    );
    let rules = super::host_rules(&id);
    let local = json!({"type": "local", "bind_port": 18580, "target_host": "db", "target_port": 1});
    super::add_rule(&service, &rules, local);
    let remote =
        json!({"type": "remote", "bind_port": 19580, "target_host": "db", "target_port": 2});
    super::add_rule(&service, &rules, remote);
    let copy = service
        .post(
            &format!("/api/hosts/{id}/duplicate"),
            &json!({"name": "env copy"}),
        )
        .expect(201);
    let copied = service.get(&super::host_rules(&id_of(&copy))).expect(200)["items"].clone();
    let flags: Vec<Value> = copied
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| json!([rule["bind_port"], rule["enabled"], rule["autostart"]]))
        .collect();
    assert_eq!(
        flags,
        [json!([18580, true, false]), json!([19580, true, true])],
        "the copy's rule on a listening port is manual, so no two rules listen on it"
    );
    let original = service.get(&format!("/api/hosts/{id}")).expect(200);
    for field in ["remote_command", "request_tty", "set_env", "send_env"] {
        assert_eq!(copy[field], original[field], "{field}");
    }
    let opened = service
        .post(&format!("/api/hosts/{}/connect", id_of(&copy)), &json!({}))
        .expect(200);
    assert_eq!(
        opened["environment"]["set"],
        json!([{"name": "HM_A", "value": "a"}, {"name": "HM_TOKEN", "value": value}])
    );
    // The copy's secret is its own: replacing it leaves the original's.
    service
        .put(
            &format!("/api/hosts/{}", id_of(&copy)),
            &json!({"set_env": [{"name": "HM_TOKEN", "value": secret("copy"), "secret": true}]}),
        )
        .expect(200);
    let first = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        first["environment"]["set"][1],
        json!({"name": "HM_TOKEN", "value": value})
    );
}

#[test]
fn a_secret_value_keeps_the_value_rules_and_a_pattern_is_never_stored_twice() {
    let service = Service::start("fwd-env-secret-rules");
    let secret_entry =
        |value: Value| json!({"set_env": [{"name": "HM_S", "value": value, "secret": true}]});
    for bad in [
        json!("a\nb"),
        json!("v".repeat(4097)),
        json!(5),
        json!("a\u{0}b"),
    ] {
        assert_invalid(&create(&service, secret_entry(bad)), "set_env");
    }
    let at_limit = accepted(&service, secret_entry(json!("v".repeat(4096))));
    assert_eq!(
        at_limit["set_env"],
        json!([{"name": "HM_S", "secret": true}])
    );
    assert_invalid(
        &create(&service, json!({"set_env": [{"name": "HM_N", "value": 5}]})),
        "set_env",
    );
    assert_invalid(
        &create(
            &service,
            json!({"set_env": [{"name": "HM_S", "value": "x", "secret": "yes"}]}),
        ),
        "set_env",
    );
    let twice = create(&service, json!({"send_env": ["LC_*", "EDITOR", "LC_*"]}));
    match twice.status {
        201 => assert_eq!(
            twice.json()["send_env"],
            json!(["LC_*", "EDITOR"]),
            "each pattern once"
        ),
        _ => {
            assert_invalid(&twice, "send_env");
        }
    }
}

const SELECT_HOST_SECRET: &str = "SELECT sealed FROM env_secrets WHERE host_id = ?1";
const SELECT_GROUP_SECRET: &str = "SELECT sealed FROM env_secrets WHERE group_id = ?1";

fn secret_entry(label: &str) -> Value {
    json!({"set_env": [{"name": "HM_T", "value": secret(label), "secret": true}]})
}

/// A host with one secret env value: its id and that value's ciphertext (present on disk).
fn host_with_secret(service: &Service) -> (String, Vec<u8>) {
    let id = id_of(&create(service, secret_entry("first")).expect(201));
    let sealed = sealed_bytes(&service.data_dir, SELECT_HOST_SECRET, &id);
    assert_present(&service.data_dir, &sealed, "the stored value");
    (id, sealed)
}

#[test]
fn a_replaced_secret_env_value_leaves_no_piece_of_its_ciphertext() {
    let service = Service::start("fwd-env-scrub-replace");
    let (id, sealed) = host_with_secret(&service);
    service
        .put(&format!("/api/hosts/{id}"), &secret_entry("second"))
        .expect(200);
    assert_gone(&service.data_dir, &sealed, "after its replacement");
}

#[test]
fn a_secret_env_value_dropped_from_the_list_leaves_no_piece_of_its_ciphertext() {
    let service = Service::start("fwd-env-scrub-drop");
    let (id, sealed) = host_with_secret(&service);
    service
        .put(&format!("/api/hosts/{id}"), &json!({"set_env": []}))
        .expect(200);
    assert_gone(&service.data_dir, &sealed, "after it left the list");
}

#[test]
fn a_deleted_hosts_secret_env_value_leaves_no_piece_of_its_ciphertext() {
    let service = Service::start("fwd-env-scrub-host");
    let (id, sealed) = host_with_secret(&service);
    service.delete(&format!("/api/hosts/{id}")).expect(204);
    assert_gone(&service.data_dir, &sealed, "after the host's delete");
}

#[test]
fn a_replaced_or_deleted_groups_secret_env_value_leaves_no_piece_of_its_ciphertext() {
    let service = Service::start("fwd-env-scrub-group");
    let data = &service.data_dir;
    let group = service.new_group("fleet");
    let path = format!("/api/groups/{group}");
    service
        .put(&path, &json!({"defaults": secret_entry("group")}))
        .expect(200);
    let first = sealed_bytes(data, SELECT_GROUP_SECRET, &group);
    assert_present(data, &first, "the group's value");
    service
        .put(&path, &json!({"defaults": secret_entry("group 2")}))
        .expect(200);
    assert_gone(data, &first, "after its replacement");
    let second = sealed_bytes(data, SELECT_GROUP_SECRET, &group);
    service.delete(&path).expect(204);
    assert_gone(data, &second, "after the group's delete");
}

/// Runs `ssh -F <export> <alias>` (no command of its own: the export's RemoteCommand runs)
/// against the test sshd; its stdout.
fn session_output(config: &std::path::Path, alias: &str, sshd: &crate::interop::Sshd) -> String {
    let output = std::process::Command::new("ssh")
        .arg("-F")
        .arg(config)
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
        .args([
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "ConnectTimeout=60",
        ])
        .arg(alias)
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ssh failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        sshd.log()
    );
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned()
}

#[test]
fn the_exported_request_tty_decides_whether_the_server_gives_the_command_a_terminal() {
    let sshd = super::forward_sshd("fwd-env-tty-sshd");
    let service = Service::start("fwd-env-tty-login");
    let dir = super::work_dir("fwd-env-tty-login");
    let command = "if [ -t 0 ]; then echo terminal; else echo none; fi";
    let (_, answer) = super::sshd_host(
        &service,
        &sshd,
        "forced",
        json!({"remote_command": command, "request_tty": "force"}),
    );
    let refused = service
        .post(
            "/api/hosts",
            &json!({"name": "refused", "hostname": "127.0.0.1", "port": sshd.port,
                    "username": crate::interop::current_user(),
                    "auth": answer["host"]["auth"], "remote_command": command, "request_tty": "no"}),
        )
        .expect(201);
    assert_eq!(refused["request_tty"], "no");
    let config = super::usable_export(&service, &answer, &dir);
    let export = std::fs::read_to_string(&config).unwrap();
    assert_eq!(
        session_output(&config, &super::alias_in(&export, "forced"), &sshd),
        "terminal",
        "{export}"
    );
    assert_eq!(
        session_output(&config, &super::alias_in(&export, "refused"), &sshd),
        "none",
        "{export}"
    );
}
