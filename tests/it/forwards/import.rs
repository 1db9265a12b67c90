//! The import of forwards, command and environment (docs/forwards.md, "The `~/.ssh/config`
//! export and import"): directives become fields, not `ssh_options`; the export's comments
//! give back rule ids, flags, descriptions and kept secrets; export, import, export gives
//! the same bytes.

use serde_json::{json, Value};

use super::{add_rule, group_rules, host, host_rules};
use crate::support::{id_of, Service};

fn import(service: &Service, config: &str) -> Value {
    service
        .post("/api/import/ssh-config", &json!({"config": config}))
        .expect(200)
}

/// The one host named `name`.
fn host_named(service: &Service, name: &str) -> Value {
    let list = service.get("/api/hosts?per_page=100").expect(200);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|host| host["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no host {name}: {list}"))
}

/// The rules of host `id` as (type, bind_address, bind_port, target_host, target_port,
/// enabled, autostart).
fn rules_of(service: &Service, id: &str) -> Vec<Value> {
    service.get(&host_rules(id)).expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            json!([
                rule["type"],
                rule["bind_address"],
                rule["bind_port"],
                rule["bind_socket"],
                rule["target_host"],
                rule["target_port"],
                rule["enabled"],
                rule["autostart"]
            ])
        })
        .collect()
}

const SESSION_CONFIG: &str = "Host tunnel
    HostName t.example.com
    User ops
    LocalForward 18080 db.internal:5432
    LocalForward 127.0.0.1:18081 [2001:db8::5]:22
    DynamicForward 11080
    RemoteForward 19000
    RemoteForward 0 localhost:3000
    RemoteCommand tail -f /var/log/app.log | grep 100%%
    RequestTTY force
    SetEnv LANG=C.UTF-8 \"GREETING=hello world\"
    SendEnv LC_* EDITOR
    ServerAliveInterval 30
";

#[test]
fn forwards_command_and_environment_directives_become_fields_not_ssh_options() {
    let service = Service::start("fwd-import-fields");
    let answer = import(&service, SESSION_CONFIG);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    let imported = host_named(&service, "tunnel");
    assert_eq!(imported["ssh_options"], json!(["ServerAliveInterval 30"]));
    assert_eq!(
        imported["remote_command"],
        "tail -f /var/log/app.log | grep 100%"
    );
    assert_eq!(imported["request_tty"], "force");
    assert_eq!(
        imported["set_env"],
        json!([{"name": "LANG", "value": "C.UTF-8"}, {"name": "GREETING", "value": "hello world"}])
    );
    assert_eq!(imported["send_env"], json!(["LC_*", "EDITOR"]));
    assert_eq!(
        rules_of(&service, &id_of(&imported)),
        [
            json!(["local", null, 18080, null, "db.internal", 5432, true, true]),
            json!([
                "local",
                "127.0.0.1",
                18081,
                null,
                "2001:db8::5",
                22,
                true,
                true
            ]),
            json!(["dynamic", null, 11080, null, null, null, true, true]),
            json!(["remote", null, 19000, null, null, null, true, true]),
            json!(["remote", null, 0, null, "localhost", 3000, true, true]),
        ]
    );
}

#[test]
fn exit_on_forward_failure_no_makes_the_blocks_imported_rules_manual() {
    let service = Service::start("fwd-import-manual");
    let config = "Host manual\n    HostName m.example.com\n    ExitOnForwardFailure no\n    \
                  LocalForward 18180 db.internal:5432\n    DynamicForward 11180\n\
                  Host started\n    HostName s.example.com\n    ExitOnForwardFailure yes\n    \
                  DynamicForward 11181\n";
    import(&service, config);
    let manual = host_named(&service, "manual");
    let flags: Vec<Value> = rules_of(&service, &id_of(&manual))
        .iter()
        .map(|rule| json!([rule[6], rule[7]]))
        .collect();
    assert_eq!(flags, [json!([true, false]), json!([true, false])]);
    assert!(
        !manual["ssh_options"]
            .to_string()
            .contains("ExitOnForwardFailure"),
        "{manual}"
    );
    let started = host_named(&service, "started");
    assert_eq!(rules_of(&service, &id_of(&started))[0][7], true);
    assert_eq!(
        started["ssh_options"],
        json!([]),
        "the export's own line is not kept"
    );
}

#[test]
fn a_remote_command_with_a_percent_token_or_a_broken_forward_is_warned_and_left_out() {
    let service = Service::start("fwd-import-warned");
    let config = "Host warned\n    HostName w.example.com\n    RemoteCommand echo %h\n    \
                  LocalForward 18280\n    DynamicForward 18281 db.internal:1\n    LocalForward 18282 db.internal:5432\n";
    let answer = import(&service, config);
    let warnings = answer["warnings"].to_string();
    assert!(warnings.contains("RemoteCommand"), "{answer}");
    assert!(warnings.contains("LocalForward"), "{answer}");
    let warned = host_named(&service, "warned");
    assert_eq!(warned["remote_command"], Value::Null);
    assert_eq!(
        warned["ssh_options"],
        json!([]),
        "left out, not kept as options: {warned}"
    );
    assert_eq!(
        rules_of(&service, &id_of(&warned)),
        [json!([
            "local",
            null,
            18282,
            null,
            "db.internal",
            5432,
            true,
            true
        ])]
    );
}

/// A catalogue with every kind of rule, flags, descriptions, a command, plain and secret
/// environment, and group rules and environment; the host that has them.
fn session_catalogue(service: &Service) -> String {
    let group = id_of(
        &service
            .post(
                "/api/groups",
                &json!({"name": "fleet", "defaults": {"set_env": [{"name": "HM_G", "value": "g v"}], "send_env": ["HM_S*"]}}),
            )
            .expect(201),
    );
    add_rule(
        service,
        &group_rules(&group),
        json!({"type": "dynamic", "bind_port": 11380, "description": "group socks"}),
    );
    let id = host(
        service,
        "roundtrip",
        json!({"group_id": group, "remote_command": "echo \"a b\" 100%", "request_tty": "yes",
               "set_env": [{"name": "HM_A", "value": "it's \"x\" # \\"}, {"name": "HM_T", "value": "Import-secret-81ac", "secret": true}],
               "send_env": ["LC_*"]}),
    );
    own_rules(service, &id);
    id
}

/// Rules of every kind, with flags and descriptions, on host `id`.
fn own_rules(service: &Service, id: &str) {
    let rules = host_rules(id);
    for body in [
        json!({"type": "local", "bind_port": 18380, "target_host": "db.internal", "target_port": 5432, "description": "staging database"}),
        json!({"type": "local", "bind_address": "[::1]", "bind_port": 18381, "target_host": "::1", "target_port": 22, "autostart": false}),
        json!({"type": "local", "bind_socket": "/tmp/hm-import.sock", "target_socket": "/run/app.sock"}),
        json!({"type": "remote", "bind_port": 0, "target_host": "localhost", "target_port": 3000, "enabled": false, "description": "off"}),
        json!({"type": "remote", "bind_address": "*", "bind_port": 19380}),
        json!({"type": "dynamic", "bind_port": 11381, "autostart": false, "enabled": false}),
    ] {
        add_rule(service, &rules, body);
    }
}

#[test]
fn export_import_into_the_same_service_and_export_again_gives_the_same_bytes() {
    let service = Service::start("fwd-import-roundtrip");
    let id = session_catalogue(&service);
    let rules_before = service.get(&host_rules(&id)).expect(200);
    let first = service.get("/api/export/ssh-config").text();
    let answer = import(&service, &first);
    assert_eq!(answer["created"], json!([]), "{answer}");
    let second = service.get("/api/export/ssh-config").text();
    assert_eq!(second, first);
    let rules_after = service.get(&host_rules(&id)).expect(200);
    let ids = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(id_of)
            .collect()
    };
    assert_eq!(
        ids(&rules_after),
        ids(&rules_before),
        "the comments gave back each rule's id"
    );
    let connect = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    assert!(
        connect["environment"]["set"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "HM_T", "value": "Import-secret-81ac"})),
        "the secret comment kept the stored secret: {connect}"
    );
}

#[test]
fn a_host_with_its_own_rules_exports_the_same_bytes_after_an_import_into_a_fresh_service() {
    let service = Service::start("fwd-import-fresh-source");
    let id = host(
        &service,
        "own",
        json!({"remote_command": "htop", "request_tty": "force",
               "set_env": [{"name": "HM_A", "value": "a b"}, {"name": "HM_B", "value": "100%"}], "send_env": ["LC_*", "HM_?"]}),
    );
    own_rules(&service, &id);
    let first = service.get("/api/export/ssh-config").text();
    let fresh = Service::start("fwd-import-fresh");
    let answer = import(&fresh, &first);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    assert_eq!(fresh.get("/api/export/ssh-config").text(), first);
}

#[test]
fn an_edited_export_imported_again_updates_each_rule_under_its_id() {
    let service = Service::start("fwd-import-edit");
    let id = host(&service, "edited", json!({}));
    own_rules(&service, &id);
    let before = service.get(&host_rules(&id)).expect(200)["items"].clone();
    let export = service.get("/api/export/ssh-config").text();
    assert!(
        export.contains("LocalForward 18380 db.internal:5432"),
        "{export}"
    );
    let edited = export.replace(
        "LocalForward 18380 db.internal:5432",
        "LocalForward 18390 db.internal:6432",
    );
    let answer = import(&service, &edited);
    assert_eq!(answer["created"], json!([]), "{answer}");
    let after = service.get(&host_rules(&id)).expect(200)["items"].clone();
    let ids =
        |items: &Value| -> Vec<String> { items.as_array().unwrap().iter().map(id_of).collect() };
    assert_eq!(ids(&after), ids(&before), "each rule kept its id");
    assert_eq!(
        (
            after[0]["bind_port"].clone(),
            after[0]["target_port"].clone()
        ),
        (json!(18390), json!(6432))
    );
    assert_eq!(after[0]["description"], "staging database");
    assert_eq!(
        after[0]["created_at"], before[0]["created_at"],
        "created once"
    );
    assert_eq!(
        after[0]["revision"], 2,
        "an edit through the import is a new revision"
    );
    assert_eq!(
        after[1], before[1],
        "an unedited rule is unchanged, timestamps included"
    );
}

#[test]
fn a_dry_run_import_of_forwards_and_environment_writes_nothing() {
    let service = Service::start("fwd-import-dry");
    let answer = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": SESSION_CONFIG, "dry_run": true}),
        )
        .expect(200);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 0);
    // The port of the dry run's rule is free: nothing holds it.
    let other = host(&service, "other", json!({}));
    add_rule(
        &service,
        &host_rules(&other),
        json!({"type": "dynamic", "bind_port": 18080}),
    );
}

#[test]
fn an_imported_block_reusing_another_hosts_rule_id_gets_a_new_id_and_leaves_no_conflict() {
    let service = Service::start("fwd-import-reused-id");
    let id = host(&service, "first", json!({}));
    let rule = add_rule(
        &service,
        &host_rules(&id),
        json!({"type": "local", "bind_port": 18480, "target_host": "db.internal", "target_port": 5432}),
    );
    let export = service.get("/api/export/ssh-config").text();
    let block = &export[export.find("# host-manager name: first").expect("exported")..];
    let copied = block
        .replace("# host-manager name: first", "# host-manager name: second")
        .replace("Host first", "Host second")
        .replace("first.example.com", "second.example.com");
    let answer = import(&service, &copied);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    let second = id_of(&host_named(&service, "second"));
    let rules = service.get(&host_rules(&second)).expect(200)["items"].clone();
    assert_eq!(rules.as_array().map(Vec::len), Some(1), "{rules}");
    assert_ne!(
        rules[0]["id"], rule["id"],
        "the id belongs to the first host's rule"
    );
    assert_eq!(
        service
            .get(&format!("{}/{}", host_rules(&id), id_of(&rule)))
            .expect(200),
        rule
    );
    // The same port twice: the import must not leave two listening rules on it.
    let listening = rules[0]["enabled"] == true && rules[0]["autostart"] == true;
    assert!(
        !listening,
        "a conflicting imported rule is not started: {rules} {answer}"
    );
}

#[test]
fn an_import_reads_the_first_set_env_line_of_a_block_as_ssh_does_and_warns_about_the_others() {
    let service = Service::start("fwd-import-setenv-lines");
    let config =
        "Host lines\n    HostName l.example.com\n    SetEnv HM_A=1 \"HM_B=two words\"\n    \
                  SetEnv HM_C=3\n";
    let answer = import(&service, config);
    assert!(
        answer["warnings"].to_string().contains("SetEnv"),
        "{answer}"
    );
    let imported = host_named(&service, "lines");
    assert_eq!(
        imported["set_env"],
        json!([{"name": "HM_A", "value": "1"}, {"name": "HM_B", "value": "two words"}])
    );
    assert_eq!(imported["ssh_options"], json!([]), "{imported}");
}

#[test]
fn descriptions_and_flags_come_back_from_the_export_comments_into_a_fresh_service() {
    let service = Service::start("fwd-import-descriptions");
    let id = host(&service, "described", json!({}));
    let long = "x".repeat(200);
    let descriptions = [
        "staging: db",
        "a # b",
        "  padded  ",
        "manual",
        "disabled",
        "ünïcödé ✓",
        ": colon first",
        "tab\there",
        long.as_str(),
    ];
    for (n, description) in descriptions.iter().enumerate() {
        let body = json!({"type": "dynamic", "bind_port": 18600 + n as u16, "description": description,
            "autostart": n % 2 == 0, "enabled": n % 3 != 0});
        let answer = service.post(&host_rules(&id), &body);
        if answer.status != 201 {
            // A description the rules refuse (a tab, say) is not this test's concern.
            super::assert_invalid(&answer, "description");
        }
    }
    let kept = service.get(&host_rules(&id)).expect(200)["items"].clone();
    let export = service.get("/api/export/ssh-config").text();
    let fresh = Service::start("fwd-import-descriptions-fresh");
    import(&fresh, &export);
    let again = id_of(&host_named(&fresh, "described"));
    let got = fresh.get(&host_rules(&again)).expect(200)["items"].clone();
    let summary = |items: &Value| -> Vec<Value> {
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|rule| {
                json!([
                    rule["id"],
                    rule["bind_port"],
                    rule["description"],
                    rule["enabled"],
                    rule["autostart"]
                ])
            })
            .collect()
    };
    assert_eq!(summary(&got), summary(&kept), "export:\n{export}");
}

#[test]
fn a_secret_env_comment_without_a_stored_value_leaves_no_entry_connect_cannot_open() {
    let service = Service::start("fwd-import-secret-comment");
    host(
        &service,
        "sealed",
        json!({"set_env": [{"name": "HM_A", "value": "a"}, {"name": "HM_T", "value": "Comment-secret-4a2c", "secret": true}]}),
    );
    let export = service.get("/api/export/ssh-config").text();
    assert!(
        export.contains("# host-manager secret env: HM_T"),
        "{export}"
    );
    let fresh = Service::start("fwd-import-secret-comment-fresh");
    import(&fresh, &export);
    let imported = host_named(&fresh, "sealed");
    let connect = fresh
        .post(
            &format!("/api/hosts/{}/connect", id_of(&imported)),
            &json!({}),
        )
        .expect(200);
    let opened: Vec<&str> = connect["environment"]["set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    let listed: Vec<&str> = imported["set_env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed, opened,
        "every listed variable is one connect hands out: {imported}"
    );
    assert_eq!(opened, ["HM_A"]);
}

#[test]
fn the_import_reads_request_tty_remote_command_and_send_env_as_ssh_does() {
    let service = Service::start("fwd-import-grammar");
    let config = "Host truthy\n    HostName t.example.com\n    RequestTTY true\n    RemoteCommand none\n\
                  Host upper\n    HostName u.example.com\n    requesttty FORCE\n    remotecommand=echo \"a  b\"\n\
                  Host removing\n    HostName r.example.com\n    SendEnv LC_* EDITOR\n    SendEnv -EDITOR\n";
    let answer = import(&service, config);
    let truthy = host_named(&service, "truthy");
    assert_eq!(
        json!([truthy["request_tty"], truthy["remote_command"]]),
        json!(["yes", null]),
        "{answer}"
    );
    let upper = host_named(&service, "upper");
    assert_eq!(
        json!([upper["request_tty"], upper["remote_command"]]),
        json!(["force", "echo \"a  b\""])
    );
    let removing = host_named(&service, "removing");
    assert!(
        answer["warnings"].to_string().contains("SendEnv"),
        "{answer}"
    );
    assert_eq!(removing["ssh_options"], json!([]), "{removing}");
    assert!(
        !removing["send_env"].to_string().contains('-'),
        "{removing}"
    );
}

#[test]
fn an_imported_block_with_more_than_64_forwards_keeps_64_and_warns() {
    let service = Service::start("fwd-import-limit");
    let mut config = "Host many\n    HostName m.example.com\n".to_owned();
    for n in 0..65 {
        config.push_str(&format!("    DynamicForward {}\n", 20000 + n));
    }
    let answer = import(&service, &config);
    let many = host_named(&service, "many");
    let rules = rules_of(&service, &id_of(&many));
    assert_eq!(rules.len(), 64, "{answer}");
    assert_eq!(rules[63][2], 20063, "the first 64, in order");
    assert!(
        answer["warnings"].to_string().contains("20064"),
        "the one left out is named: {answer}"
    );
}

#[test]
fn an_imported_block_past_the_environment_limits_is_imported_within_them_and_warned() {
    let service = Service::start("fwd-import-env-limit");
    let vars: Vec<String> = (0..65).map(|n| format!("HM_{n}=v")).collect();
    let patterns: Vec<String> = (0..65).map(|n| format!("P{n}")).collect();
    let config = format!(
        "Host wide\n    HostName w.example.com\n    SetEnv {}\n    SendEnv {}\n",
        vars.join(" "),
        patterns.join(" ")
    );
    let answer = import(&service, &config);
    let wide = host_named(&service, "wide");
    let count = |field: &str| wide[field].as_array().map(Vec::len);
    assert!(
        count("set_env") <= Some(64) && count("send_env") <= Some(64),
        "{wide}"
    );
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("SetEnv") && warnings.contains("SendEnv"),
        "{answer}"
    );
}
