//! The `~/.ssh/config` export of forwards, startup command and environment
//! (docs/forwards.md, "The `~/.ssh/config` export and import"), judged by OpenSSH's own
//! `ssh -G`: every rule, `RemoteCommand`, `RequestTTY`, `SetEnv`, `SendEnv` and
//! `ExitOnForwardFailure` resolve exactly as stored, quoting edge cases included; disabled
//! rules and secret values are comments only.

use std::path::Path;

use serde_json::{json, Value};

use super::{add_rule, alias_in, group_rules, host, host_rules, work_dir};
use crate::support::{id_of, Service};

/// `ssh -G -F config alias`: every output line.
fn ssh_g_lines(config: &Path, alias: &str) -> Vec<String> {
    let output = std::process::Command::new("ssh")
        .args(["-G", "-F"])
        .arg(config)
        .arg(alias)
        .output()
        .expect("ssh runs");
    assert!(
        output.status.success(),
        "ssh -G {alias}: {}\nconfig:\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(config).unwrap_or_default()
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The lines of `lines` whose keyword is one of `keywords`, in order.
fn only(lines: &[String], keywords: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter(|line| keywords.contains(&line.split(' ').next().unwrap_or_default()))
        .cloned()
        .collect()
}

const FORWARD_KEYWORDS: [&str; 3] = ["localforward", "remoteforward", "dynamicforward"];

/// The service's export written to a file in `dir`: (its path, its text).
fn export_to(service: &Service, dir: &Path) -> (std::path::PathBuf, String) {
    let text = service.get("/api/export/ssh-config").text();
    let path = dir.join("exported.conf");
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

/// `ssh -G` of a hand-written config holding `lines` in one host block: what OpenSSH makes
/// of directives written the plain way.
fn ssh_g_of(dir: &Path, lines: &[String]) -> Vec<String> {
    let path = dir.join("hand-written.conf");
    let mut text = "Host oracle\n    HostName oracle.example.com\n".to_owned();
    for line in lines {
        text.push_str(&format!("    {line}\n"));
    }
    std::fs::write(&path, text).unwrap();
    ssh_g_lines(&path, "oracle")
}

/// A rule's directive as a person writes it, from its stored fields.
fn plain_directive(rule: &Value) -> String {
    let keyword = match rule["type"].as_str().unwrap() {
        "local" => "LocalForward",
        "remote" => "RemoteForward",
        _ => "DynamicForward",
    };
    let bind = match (&rule["bind_socket"], &rule["bind_address"]) {
        (Value::String(socket), _) => socket.clone(),
        (_, Value::String(address)) => format!("{address}:{}", rule["bind_port"]),
        _ => rule["bind_port"].to_string(),
    };
    let target = match (&rule["target_socket"], &rule["target_host"]) {
        (Value::String(socket), _) => format!(" {socket}"),
        (_, Value::String(host)) if host.contains(':') => {
            format!(" [{host}]:{}", rule["target_port"])
        }
        (_, Value::String(host)) => format!(" {host}:{}", rule["target_port"]),
        _ => String::new(),
    };
    format!("{keyword} {bind}{target}")
}

#[test]
fn ssh_g_of_the_export_shows_every_enabled_rule_as_a_hand_written_config_does() {
    let service = Service::start("fwd-export-rules");
    let dir = work_dir("fwd-export-rules");
    let group = service.new_group("fleet");
    let id = host(&service, "tunnels", json!({"group_id": group}));
    let rules = host_rules(&id);
    let bodies = [
        json!({"type": "local", "bind_port": 18080, "target_host": "db.internal", "target_port": 5432, "description": "staging database"}),
        json!({"type": "local", "bind_address": "127.0.0.1", "bind_port": 18081, "target_host": "2001:db8::5", "target_port": 22}),
        json!({"type": "local", "bind_address": "[::1]", "bind_port": 18082, "target_socket": "/run/app.sock"}),
        json!({"type": "local", "bind_socket": "/tmp/hm-export.sock", "target_host": "10.0.0.5", "target_port": 80}),
        json!({"type": "local", "bind_address": "*", "bind_port": 18083, "target_host": "localhost", "target_port": 80, "autostart": false}),
        json!({"type": "dynamic", "bind_port": 11080}),
        json!({"type": "dynamic", "bind_address": "localhost", "bind_port": 11081}),
        json!({"type": "remote", "bind_port": 19000, "target_host": "localhost", "target_port": 3000}),
        json!({"type": "remote", "bind_port": 0, "target_host": "localhost", "target_port": 3001}),
        json!({"type": "remote", "bind_port": 19001}),
        json!({"type": "remote", "bind_socket": "/tmp/hm-remote.sock", "target_socket": "/tmp/hm-target.sock"}),
    ];
    let mut enabled: Vec<Value> = bodies
        .iter()
        .map(|body| add_rule(&service, &rules, body.clone()))
        .collect();
    let off = json!({"type": "remote", "bind_port": 19002, "target_host": "localhost",
        "target_port": 3002, "enabled": false});
    let disabled = add_rule(&service, &rules, off);
    enabled.push(add_rule(
        &service,
        &group_rules(&group),
        json!({"type": "dynamic", "bind_port": 11082}),
    ));
    let (config, text) = export_to(&service, &dir);
    let exported = only(
        &ssh_g_lines(&config, &alias_in(&text, "tunnels")),
        &FORWARD_KEYWORDS,
    );
    let plain: Vec<String> = enabled.iter().map(plain_directive).collect();
    assert_eq!(
        exported,
        only(&ssh_g_of(&dir, &plain), &FORWARD_KEYWORDS),
        "export:\n{text}"
    );
    assert!(
        !exported.iter().any(|line| line.contains("19002")),
        "the disabled rule is not started"
    );
    let marker = format!("# host-manager forward {} disabled\n", id_of(&disabled));
    assert!(text.contains(&marker), "{text}");
    let commented = format!("# {}\n", plain_directive(&disabled));
    let after = text.split(&marker).nth(1).unwrap_or_default();
    assert!(
        after.lines().next().map(str::trim_start) == Some(commented.trim_end()),
        "a disabled rule's directive is a comment under its marker:\n{text}"
    );
    let first = format!(
        "# host-manager forward {}: staging database\n",
        id_of(&enabled[0])
    );
    assert!(text.contains(&first), "{text}");
    let manual = format!("# host-manager forward {} manual\n", id_of(&enabled[4]));
    assert!(text.contains(&manual), "{text}");
}

#[test]
fn ssh_g_of_the_export_shows_command_tty_environment_and_exit_on_forward_failure_as_stored() {
    let service = Service::start("fwd-export-session");
    let dir = work_dir("fwd-export-session");
    let id = host(
        &service,
        "session",
        json!({"remote_command": "tail -f /var/log/app.log | grep 100%", "request_tty": "force",
               "set_env": [{"name": "LANG", "value": "C.UTF-8"}, {"name": "GREETING", "value": "hello world"},
                           {"name": "API_TOKEN", "value": "Export-secret-5d1f", "secret": true}],
               "send_env": ["LC_*", "EDITOR"]}),
    );
    add_rule(
        &service,
        &host_rules(&id),
        json!({"type": "dynamic", "bind_port": 11090}),
    );
    let manual_only = host(&service, "manual", json!({}));
    add_rule(
        &service,
        &host_rules(&manual_only),
        json!({"type": "dynamic", "bind_port": 11091, "autostart": false}),
    );
    let (config, text) = export_to(&service, &dir);
    assert!(!text.contains("Export-secret-5d1f"), "{text}");
    assert!(
        text.contains("# host-manager secret env: API_TOKEN"),
        "{text}"
    );
    let lines = ssh_g_lines(&config, &alias_in(&text, "session"));
    let keywords = [
        "remotecommand",
        "requesttty",
        "setenv",
        "sendenv",
        "exitonforwardfailure",
    ];
    let mut got = only(&lines, &keywords);
    got.sort();
    let mut expected = vec![
        "exitonforwardfailure yes".to_owned(),
        "remotecommand tail -f /var/log/app.log | grep 100%".to_owned(),
        "requesttty force".to_owned(),
        "sendenv EDITOR".to_owned(),
        "sendenv LC_*".to_owned(),
        "setenv GREETING=hello world".to_owned(),
        "setenv LANG=C.UTF-8".to_owned(),
    ];
    expected.sort();
    assert_eq!(got, expected, "export:\n{text}");
    let manual = ssh_g_lines(&config, &alias_in(&text, "manual"));
    assert_eq!(
        only(&manual, &["exitonforwardfailure"]),
        ["exitonforwardfailure no"],
        "only a manual rule: {text}"
    );
    assert_eq!(
        only(&manual, &["dynamicforward"]),
        ["dynamicforward 11091"],
        "a manual rule is written: {text}"
    );
}

/// Values with blanks, quotes, `=`, `%`, `#` and backslashes.
const TRICKY_VALUES: [&str; 12] = [
    "hello world",
    "say \"hi\"",
    "it's",
    "a=b=c",
    "100%",
    "#hash",
    "a #b",
    "back\\slash",
    "trailing\\",
    "\"\"",
    "mix 'q' \"d\" \\ # % =",
    "%h %%",
];

/// Commands whose quotes balance as `ssh` reads a config line.
const TRICKY_COMMANDS: [&str; 8] = [
    "echo \"a b\" 'c d'",
    "grep 100% /var/log/x",
    "printf '%s\\n' x",
    "echo a=b #c",
    "echo back\\\\slash",
    "echo it\\'s",
    "sh -c \"echo \\\"nested\\\"\"",
    "echo %%",
];

#[test]
fn quoting_edge_cases_in_set_env_and_remote_command_round_trip_to_ssh_g() {
    let service = Service::start("fwd-export-quoting");
    let dir = work_dir("fwd-export-quoting");
    // One host per value, so that each SetEnv line is the block's only one.
    for (n, value) in TRICKY_VALUES.iter().enumerate() {
        host(
            &service,
            &format!("env{n}"),
            json!({"set_env": [{"name": "HM_V", "value": value}]}),
        );
    }
    for (n, command) in TRICKY_COMMANDS.iter().enumerate() {
        host(
            &service,
            &format!("cmd{n}"),
            json!({"remote_command": command}),
        );
    }
    let (config, text) = export_to(&service, &dir);
    for (n, value) in TRICKY_VALUES.iter().enumerate() {
        let lines = ssh_g_lines(&config, &alias_in(&text, &format!("env{n}")));
        assert_eq!(
            only(&lines, &["setenv"]),
            [format!("setenv HM_V={value}")],
            "value {value:?}; export:\n{text}"
        );
    }
    for (n, command) in TRICKY_COMMANDS.iter().enumerate() {
        let lines = ssh_g_lines(&config, &alias_in(&text, &format!("cmd{n}")));
        assert_eq!(
            only(&lines, &["remotecommand"]),
            [format!("remotecommand {command}")],
            "command {command:?}; export:\n{text}"
        );
    }
}

#[test]
fn ssh_g_of_the_export_resolves_every_set_env_variable_of_a_host() {
    let service = Service::start("fwd-export-many-env");
    let dir = work_dir("fwd-export-many-env");
    let entries: Vec<Value> = (0..5)
        .map(|n| json!({"name": format!("HM_{n}"), "value": format!("v {n}")}))
        .collect();
    host(&service, "many", json!({"set_env": entries}));
    let (config, text) = export_to(&service, &dir);
    let mut got = only(&ssh_g_lines(&config, &alias_in(&text, "many")), &["setenv"]);
    got.sort();
    let expected: Vec<String> = (0..5).map(|n| format!("setenv HM_{n}=v {n}")).collect();
    assert_eq!(
        got, expected,
        "ssh takes these variables from the export:\n{text}"
    );
}

/// Socket paths the rules' table allows that `ssh` reads specially: blanks, quotes, `#`,
/// a backslash, `%` (a token to ssh) and `${...}` (an environment variable to ssh).
const TRICKY_SOCKETS: [&str; 8] = [
    "/tmp/hm a.sock",
    "/tmp/hm\"q.sock",
    "/tmp/hm'q.sock",
    "/tmp/hm#h.sock",
    "/tmp/hm\\b.sock",
    "/tmp/hm%d.sock",
    "/tmp/hm%%.sock",
    "/tmp/hm${HOME}.sock",
];

#[test]
fn every_socket_path_a_rule_accepts_reaches_ssh_g_unchanged() {
    let service = Service::start("fwd-export-sockets");
    let dir = work_dir("fwd-export-sockets");
    let mut kept = Vec::new();
    for (n, path) in TRICKY_SOCKETS.iter().enumerate() {
        let id = host(&service, &format!("sock{n}"), json!({}));
        let local = json!({"type": "local", "bind_socket": path, "target_socket": path});
        let remote = json!({"type": "remote", "bind_socket": path, "target_socket": path});
        let answer = service.post(&host_rules(&id), &local);
        match answer.status {
            201 => {
                add_rule(&service, &host_rules(&id), remote);
                kept.push((n, path));
            }
            // Refusing a path ssh would read otherwise is fine too.
            _ => {
                super::assert_invalid(&answer, "bind_socket");
            }
        }
    }
    let (config, text) = export_to(&service, &dir);
    let mut wrong = Vec::new();
    for (n, path) in kept {
        let lines = ssh_g_lines(&config, &alias_in(&text, &format!("sock{n}")));
        let expected = [
            format!("localforward {path} {path}"),
            format!("remoteforward {path} {path}"),
        ];
        let got = only(&lines, &["localforward", "remoteforward"]);
        if got != expected {
            wrong.push(format!("{path:?}: ssh -G reads {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}\nexport:\n{text}");
}

#[test]
fn a_remote_command_ssh_would_read_otherwise_is_refused_or_reaches_ssh_g_unchanged() {
    let service = Service::start("fwd-export-command-edges");
    let dir = work_dir("fwd-export-command-edges");
    let mut kept = Vec::new();
    for (n, command) in ["=echo x", "= echo x", "echo ${HOME}", "echo a\\"]
        .iter()
        .enumerate()
    {
        let body = crate::support::host_body(
            &format!("edge{n}"),
            "edge.example.com",
            json!({"remote_command": command}),
        );
        let answer = service.post("/api/hosts", &body);
        match answer.status {
            201 => kept.push((n, command)),
            _ => {
                super::assert_invalid(&answer, "remote_command");
            }
        }
    }
    let (config, text) = export_to(&service, &dir);
    for (n, command) in kept {
        let lines = ssh_g_lines(&config, &alias_in(&text, &format!("edge{n}")));
        assert_eq!(
            only(&lines, &["remotecommand"]),
            [format!("remotecommand {command}")],
            "export:\n{text}"
        );
    }
}

#[test]
fn set_env_values_with_blanks_at_either_end_reach_ssh_g_unchanged() {
    let service = Service::start("fwd-export-env-blanks");
    let dir = work_dir("fwd-export-env-blanks");
    let entries = json!([{"name": "HM_LEAD", "value": "  lead"}, {"name": "HM_TRAIL", "value": "trail  "},
                         {"name": "HM_EMPTY", "value": ""}, {"name": "HM_EQ", "value": "=x"}]);
    let created = crate::support::host_body("blanks", "b.example.com", json!({"set_env": entries}));
    let stored = service.post("/api/hosts", &created).expect(201)["set_env"].clone();
    let (config, text) = export_to(&service, &dir);
    let mut got = only(
        &ssh_g_lines(&config, &alias_in(&text, "blanks")),
        &["setenv"],
    );
    got.sort();
    let mut expected: Vec<String> = stored
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            format!(
                "setenv {}={}",
                entry["name"].as_str().unwrap(),
                entry["value"].as_str().unwrap()
            )
        })
        .collect();
    expected.sort();
    assert_eq!(got, expected, "export:\n{text}");
}
