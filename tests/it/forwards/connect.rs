//! What `connect` and the effective view answer about forwards, command and environment
//! (docs/forwards.md, "Inheritance" and "connect"): enabled rules only, the host's own then
//! each group's nearest first, each with its id, source and directive; `set_env` merged by
//! name (the nearest wins and hides), `send_env` the union host first; secrets opened by
//! `connect` alone.

use serde_json::{json, Value};

use super::{add_rule, group_rules, host, host_rules};
use crate::support::{field_names, id_of, Service};

fn local(port: u16) -> Value {
    json!({"type": "local", "bind_port": port, "target_host": "db.internal", "target_port": 5432})
}

fn group(service: &Service, name: &str, parent: Option<&str>, defaults: Value) -> String {
    let body = json!({"name": name, "parent_id": parent, "defaults": defaults});
    id_of(&service.post("/api/groups", &body).expect(201))
}

/// A host in group `child` (below `parent`), each level with rules, `set_env` and
/// `send_env`: (host id, [own rule ids], [child's], [parent's]).
struct Tree {
    host: String,
    child: String,
    parent: String,
    own: Vec<String>,
    child_rules: Vec<String>,
    parent_rules: Vec<String>,
}

fn tree(service: &Service) -> Tree {
    let parent = group(
        service,
        "parent",
        None,
        json!({"set_env": [{"name": "HM_SHARED", "value": "parent"}, {"name": "HM_TOP", "value": "top"}],
               "send_env": ["LC_*", "HM_P"]}),
    );
    let child = group(
        service,
        "child",
        Some(&parent),
        json!({"set_env": [{"name": "HM_SHARED", "value": "child"}, {"name": "HM_MID", "value": "mid", "secret": true}],
               "send_env": ["HM_C", "LC_*"]}),
    );
    let host = host(
        service,
        "leaf",
        json!({"group_id": child, "remote_command": "tmux new -A -s main", "request_tty": "force",
               "set_env": [{"name": "HM_OWN", "value": "own"}, {"name": "HM_SHARED", "value": "host"}],
               "send_env": ["HM_H", "LC_*"]}),
    );
    let own = vec![
        id_of(&add_rule(service, &host_rules(&host), local(18900))),
        id_of(&add_rule(
            service,
            &host_rules(&host),
            json!({"type": "dynamic", "bind_port": 18901, "autostart": false, "description": "socks"}),
        )),
    ];
    let mut off = local(18902);
    off["enabled"] = json!(false);
    add_rule(service, &host_rules(&host), off.clone());
    let child_rules = vec![id_of(&add_rule(
        service,
        &group_rules(&child),
        json!({"type": "remote", "bind_port": 19900, "target_host": "localhost", "target_port": 3000}),
    ))];
    off["bind_port"] = json!(18903);
    add_rule(service, &group_rules(&child), off);
    let parent_rules = vec![id_of(&add_rule(
        service,
        &group_rules(&parent),
        json!({"type": "dynamic", "bind_port": 18904}),
    ))];
    Tree {
        host,
        child,
        parent,
        own,
        child_rules,
        parent_rules,
    }
}

#[test]
fn connect_answers_the_enabled_rules_own_first_then_each_groups_nearest_first_with_directives() {
    let service = Service::start("fwd-connect-rules");
    let tree = tree(&service);
    let answer = service
        .post(&format!("/api/hosts/{}/connect", tree.host), &json!({}))
        .expect(200);
    let forwards = answer["forwards"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    let ids: Vec<String> = forwards.iter().map(id_of).collect();
    let expected: Vec<String> = tree
        .own
        .iter()
        .chain(&tree.child_rules)
        .chain(&tree.parent_rules)
        .cloned()
        .collect();
    assert_eq!(ids, expected, "{answer}");
    let sources: Vec<&str> = forwards
        .iter()
        .map(|rule| rule["source"].as_str().unwrap())
        .collect();
    let (child, parent) = (
        format!("group:{}", tree.child),
        format!("group:{}", tree.parent),
    );
    assert_eq!(sources, ["host", "host", child.as_str(), parent.as_str()]);
    let directives: Vec<&str> = forwards
        .iter()
        .map(|rule| rule["directive"].as_str().unwrap())
        .collect();
    assert_eq!(
        directives,
        [
            "LocalForward 18900 db.internal:5432",
            "DynamicForward 18901",
            "RemoteForward 19900 localhost:3000",
            "DynamicForward 18904"
        ]
    );
    assert_eq!(
        (
            forwards[1]["autostart"].clone(),
            forwards[1]["description"].clone()
        ),
        (json!(false), json!("socks"))
    );
    // Exactly the fields docs/forwards.md lists for connect's rules.
    assert_eq!(
        field_names(&forwards[0]),
        [
            "autostart",
            "bind_address",
            "bind_port",
            "bind_socket",
            "description",
            "directive",
            "id",
            "source",
            "target_host",
            "target_port",
            "target_socket",
            "type"
        ]
    );
}

#[test]
fn connect_answers_the_command_and_the_effective_environment_with_secrets_opened() {
    let service = Service::start("fwd-connect-env");
    let tree = tree(&service);
    let answer = service
        .post(&format!("/api/hosts/{}/connect", tree.host), &json!({}))
        .expect(200);
    assert_eq!(answer["remote_command"], "tmux new -A -s main");
    assert_eq!(answer["request_tty"], "force");
    let mut set: Vec<Value> = answer["environment"]["set"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .clone();
    set.sort_by_key(|entry| entry["name"].as_str().unwrap().to_owned());
    assert_eq!(
        set,
        [
            json!({"name": "HM_MID", "value": "mid"}),
            json!({"name": "HM_OWN", "value": "own"}),
            json!({"name": "HM_SHARED", "value": "host"}),
            json!({"name": "HM_TOP", "value": "top"})
        ]
    );
    assert_eq!(
        answer["environment"]["send"],
        json!(["HM_H", "LC_*", "HM_C", "HM_P"]),
        "the union, host first, each once"
    );
    let plain = host(&service, "plain", json!({}));
    let bare = service
        .post(&format!("/api/hosts/{plain}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        json!([
            bare["forwards"],
            bare["remote_command"],
            bare["request_tty"],
            bare["environment"]
        ]),
        json!([[], null, null, {"set": [], "send": []}])
    );
}

#[test]
fn the_effective_view_merges_forwards_set_env_and_send_env_with_their_sources() {
    let service = Service::start("fwd-effective");
    let tree = tree(&service);
    let answer = service
        .get(&format!("/api/hosts/{}/effective", tree.host))
        .expect(200);
    let view = &answer["fields"];
    assert_eq!(view["forwards"]["source"], "merged", "{view}");
    let rules = view["forwards"]["value"].as_array().unwrap();
    let ids: Vec<String> = rules.iter().map(id_of).collect();
    // The effective view lists the rules as the host has them; connect leaves out the
    // disabled ones.
    for id in tree
        .own
        .iter()
        .chain(&tree.child_rules)
        .chain(&tree.parent_rules)
    {
        assert!(ids.contains(id), "{id} in {view}");
    }
    let position = |id: &String| ids.iter().position(|known| known == id).unwrap();
    assert!(
        position(&tree.own[1]) < position(&tree.child_rules[0]),
        "own rules first"
    );
    assert!(
        position(&tree.child_rules[0]) < position(&tree.parent_rules[0]),
        "nearest group first"
    );
    assert_eq!(
        rules[position(&tree.parent_rules[0])]["source"],
        format!("group:{}", tree.parent)
    );
    let set_env = &view["set_env"];
    assert_eq!(set_env["source"], "merged");
    let mut value = set_env["value"].as_array().unwrap().clone();
    value.sort_by_key(|entry| entry["name"].as_str().unwrap().to_owned());
    assert_eq!(
        value,
        [
            json!({"name": "HM_MID", "secret": true}),
            json!({"name": "HM_OWN", "value": "own"}),
            json!({"name": "HM_SHARED", "value": "host"}),
            json!({"name": "HM_TOP", "value": "top"})
        ]
    );
    let entries = set_env["entries"].as_array().unwrap();
    let shared: Vec<(Value, Value)> = entries
        .iter()
        .filter(|entry| entry["name"] == "HM_SHARED")
        .map(|entry| {
            (
                entry["source"].clone(),
                entry.get("hidden").cloned().unwrap_or(json!(false)),
            )
        })
        .collect();
    assert_eq!(
        shared,
        [
            (json!("host"), json!(false)),
            (json!(format!("group:{}", tree.child)), json!(true)),
            (json!(format!("group:{}", tree.parent)), json!(true))
        ],
        "{set_env}"
    );
    assert_eq!(
        view["send_env"],
        json!({"value": ["HM_H", "LC_*", "HM_C", "HM_P"], "source": "merged"})
    );
    assert_eq!(
        view["remote_command"],
        json!({"value": "tmux new -A -s main", "source": "host"})
    );
    assert_eq!(
        view["request_tty"],
        json!({"value": "force", "source": "host"})
    );
}

#[test]
fn a_group_rule_turned_off_leaves_every_host_below_it() {
    let service = Service::start("fwd-group-off");
    let tree = tree(&service);
    let other = host(&service, "other", json!({"group_id": tree.child}));
    let path = format!("{}/{}", group_rules(&tree.child), tree.child_rules[0]);
    service.put(&path, &json!({"enabled": false})).expect(200);
    for id in [&tree.host, &other] {
        let answer = service
            .post(&format!("/api/hosts/{id}/connect"), &json!({}))
            .expect(200);
        let ids: Vec<String> = answer["forwards"]
            .as_array()
            .unwrap()
            .iter()
            .map(id_of)
            .collect();
        assert!(!ids.contains(&tree.child_rules[0]), "{answer}");
        assert!(ids.contains(&tree.parent_rules[0]), "{answer}");
    }
}

#[test]
fn each_directive_connect_answers_is_the_line_the_export_writes_for_its_rule() {
    let service = Service::start("fwd-connect-directives");
    let id = host(&service, "lines", json!({}));
    for body in [
        json!({"type": "local", "bind_address": "[::1]", "bind_port": 18950, "target_host": "2001:db8::5", "target_port": 22}),
        json!({"type": "local", "bind_socket": "/tmp/hm d.sock", "target_socket": "/run/app.sock"}),
        json!({"type": "dynamic", "bind_address": "*", "bind_port": 18951}),
        json!({"type": "remote", "bind_port": 0, "target_host": "localhost", "target_port": 3000}),
        json!({"type": "remote", "bind_port": 19950}),
    ] {
        add_rule(&service, &host_rules(&id), body);
    }
    let answer = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    let export = service.get("/api/export/ssh-config").text();
    let forwards = answer["forwards"].as_array().unwrap();
    assert_eq!(forwards.len(), 5, "{answer}");
    for rule in forwards {
        let directive = rule["directive"].as_str().unwrap();
        assert!(
            export.contains(&format!("    {directive}\n")),
            "{directive} not in the export:\n{export}"
        );
    }
}

#[test]
fn a_hosts_plain_value_hides_a_groups_secret_of_that_name_and_a_hosts_secret_hides_a_groups_plain()
{
    let service = Service::start("fwd-connect-secret-shadow");
    let fleet = group(
        &service,
        "fleet",
        None,
        json!({"set_env": [{"name": "HM_X", "value": "Group-secret-x-93d0", "secret": true}, {"name": "HM_Y", "value": "group y"}]}),
    );
    let id = host(
        &service,
        "shadow",
        json!({"group_id": fleet, "set_env": [{"name": "HM_X", "value": "host x"},
               {"name": "HM_Y", "value": "Host-secret-y-5e21", "secret": true}]}),
    );
    let answer = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    let mut set = answer["environment"]["set"].as_array().unwrap().clone();
    set.sort_by_key(|entry| entry["name"].as_str().unwrap().to_owned());
    assert_eq!(
        set,
        [
            json!({"name": "HM_X", "value": "host x"}),
            json!({"name": "HM_Y", "value": "Host-secret-y-5e21"})
        ]
    );
    let view = service
        .get(&format!("/api/hosts/{id}/effective"))
        .expect(200);
    let text = view.to_string();
    assert!(
        !text.contains("Group-secret-x-93d0") && !text.contains("Host-secret-y-5e21"),
        "{text}"
    );
    let mut value = view["fields"]["set_env"]["value"]
        .as_array()
        .unwrap()
        .clone();
    value.sort_by_key(|entry| entry["name"].as_str().unwrap().to_owned());
    assert_eq!(
        value,
        [
            json!({"name": "HM_X", "value": "host x"}),
            json!({"name": "HM_Y", "secret": true})
        ]
    );
}

#[test]
fn group_defaults_answer_set_env_and_send_env_and_keep_their_rules() {
    let service = Service::start("fwd-group-env-rules");
    let fleet = group(&service, "fleet", None, json!({}));
    let path = format!("/api/groups/{fleet}");
    let got = service.get(&path).expect(200);
    assert_eq!(
        json!([got["defaults"]["set_env"], got["defaults"]["send_env"]]),
        json!([[], []]),
        "{got}"
    );
    for (defaults, field) in [
        (
            json!({"set_env": [{"name": "1A", "value": "x"}]}),
            "defaults.set_env",
        ),
        (
            json!({"set_env": [{"name": "A", "value": "a\nb"}]}),
            "defaults.set_env",
        ),
        (
            json!({"set_env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}),
            "defaults.set_env",
        ),
        (
            json!({"set_env": [{"name": "A", "secret": true}]}),
            "defaults.set_env",
        ),
        (json!({"send_env": ["A-B"]}), "defaults.send_env"),
    ] {
        super::assert_invalid(&service.put(&path, &json!({"defaults": defaults})), field);
    }
    let set = service
        .put(
            &path,
            &json!({"defaults": {"set_env": [{"name": "A", "value": "1"}], "send_env": ["LC_*"]}}),
        )
        .expect(200);
    assert_eq!(
        set["defaults"]["set_env"],
        json!([{"name": "A", "value": "1"}])
    );
    assert_eq!(set["defaults"]["send_env"], json!(["LC_*"]));
}

#[test]
fn moving_a_host_or_its_group_changes_which_group_rules_connect_answers() {
    let service = Service::start("fwd-connect-moves");
    let north = group(&service, "north", None, json!({}));
    let south = group(&service, "south", None, json!({}));
    let rack = group(&service, "rack", Some(&north), json!({}));
    let of_north = id_of(&add_rule(&service, &group_rules(&north), local(18960)));
    let of_south = id_of(&add_rule(&service, &group_rules(&south), local(18961)));
    let id = host(&service, "mover", json!({"group_id": rack}));
    let ids = |service: &Service| -> Vec<String> {
        let answer = service
            .post(&format!("/api/hosts/{id}/connect"), &json!({}))
            .expect(200);
        answer["forwards"]
            .as_array()
            .unwrap()
            .iter()
            .map(id_of)
            .collect()
    };
    assert_eq!(ids(&service), std::slice::from_ref(&of_north));
    service
        .put(
            &format!("/api/groups/{rack}/move"),
            &json!({"parent_id": south}),
        )
        .expect(200);
    assert_eq!(ids(&service), [of_south], "the group's new parent");
    service
        .put(
            &format!("/api/hosts/{id}/move"),
            &json!({"group_id": north}),
        )
        .expect(200);
    assert_eq!(ids(&service), [of_north], "the host's new group");
    service
        .put(&format!("/api/hosts/{id}/move"), &json!({"group_id": null}))
        .expect(200);
    assert_eq!(
        ids(&service),
        Vec::<String>::new(),
        "no group, no group rules"
    );
}
