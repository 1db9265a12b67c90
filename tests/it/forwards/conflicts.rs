//! Port conflicts (docs/forwards.md, "Port conflicts"): two enabled autostart local or
//! dynamic rules that would listen on the same port on overlapping addresses (or the same
//! socket), across every host's and group's rules, are 409 `PORT_CONFLICT` naming the other
//! rule and its owner; disabled, manual and remote rules never conflict.

use serde_json::{json, Value};

use super::{add_rule, details, group_rules, host, host_rules};
use crate::support::{id_of, Response, Service};

fn local(port: u16, address: Value) -> Value {
    let mut body = json!({"type": "local", "bind_port": port, "target_host": "db.internal",
        "target_port": 5432});
    if !address.is_null() {
        body["bind_address"] = address;
    }
    body
}

/// Asserts a 409 `PORT_CONFLICT` whose details name `rule` and its owner (`owner`'s id or
/// its name, as the service names it).
#[track_caller]
fn assert_conflict(service: &Service, response: &Response, rule: &str, owner: &str) {
    let error = response.assert_error(409, "PORT_CONFLICT");
    let text = details(&error);
    assert!(
        text.contains(rule),
        "details should name rule {rule}: {error}"
    );
    let name = [
        format!("/api/hosts/{owner}"),
        format!("/api/groups/{owner}"),
    ]
    .iter()
    .map(|path| service.get(path))
    .find(|answer| answer.status == 200)
    .map(|answer| {
        answer.json()["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
    .unwrap_or_default();
    assert!(
        text.contains(owner) || (!name.is_empty() && text.contains(&name)),
        "details should name the owner {owner} ({name}): {error}"
    );
}

#[test]
fn the_same_port_on_two_hosts_is_409_port_conflict_naming_the_other_rule_and_host() {
    let service = Service::start("fwd-conflict-hosts");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let first = id_of(&add_rule(
        &service,
        &host_rules(&web),
        local(18600, Value::Null),
    ));
    assert_conflict(
        &service,
        &service.post(&host_rules(&db), &local(18600, Value::Null)),
        &first,
        &web,
    );
    assert_eq!(
        service.get(&host_rules(&db)).expect(200)["items"],
        json!([])
    );
    let dynamic = json!({"type": "dynamic", "bind_port": 18600});
    assert_conflict(
        &service,
        &service.post(&host_rules(&db), &dynamic),
        &first,
        &web,
    );
    assert_conflict(
        &service,
        &service.post(&host_rules(&web), &dynamic),
        &first,
        &web,
    );
}

#[test]
fn a_group_rule_and_a_host_rule_on_the_same_port_conflict_both_ways() {
    let service = Service::start("fwd-conflict-group");
    let group = service.new_group("fleet");
    let web = host(&service, "web", json!({}));
    let group_rule = id_of(&add_rule(
        &service,
        &group_rules(&group),
        local(18610, Value::Null),
    ));
    assert_conflict(
        &service,
        &service.post(&host_rules(&web), &local(18610, Value::Null)),
        &group_rule,
        &group,
    );
    let host_rule = id_of(&add_rule(
        &service,
        &host_rules(&web),
        local(18611, Value::Null),
    ));
    assert_conflict(
        &service,
        &service.post(&group_rules(&group), &local(18611, Value::Null)),
        &host_rule,
        &web,
    );
    let other = service.new_group("other");
    assert_conflict(
        &service,
        &service.post(&group_rules(&other), &local(18610, Value::Null)),
        &group_rule,
        &group,
    );
}

#[test]
fn listening_addresses_conflict_when_they_overlap_as_the_doc_says() {
    let service = Service::start("fwd-conflict-addresses");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let cases: [(Value, Value, bool); 15] = [
        (Value::Null, json!("localhost"), true),
        (Value::Null, json!("127.0.0.1"), true),
        (Value::Null, json!("[::1]"), true),
        (json!("localhost"), json!("[::1]"), true),
        (json!("*"), json!("127.0.0.1"), true),
        (json!("*"), json!("[::1]"), true),
        (json!("*"), Value::Null, true),
        (json!("0.0.0.0"), json!("127.0.0.1"), true),
        (json!("0.0.0.0"), json!("*"), true),
        (json!("[::]"), json!("[::1]"), true),
        (json!("127.0.0.1"), json!("127.0.0.1"), true),
        (json!("0.0.0.0"), json!("[::1]"), false),
        (json!("[::]"), json!("127.0.0.1"), false),
        (json!("127.0.0.1"), json!("[::1]"), false),
        (json!("127.0.0.1"), json!("127.0.0.2"), false),
    ];
    for (n, (first, second, conflict)) in cases.into_iter().enumerate() {
        let port = 18620 + n as u16;
        let kept = id_of(&add_rule(
            &service,
            &host_rules(&web),
            local(port, first.clone()),
        ));
        let answer = service.post(&host_rules(&db), &local(port, second.clone()));
        match conflict {
            true => assert_conflict(&service, &answer, &kept, &web),
            false => assert_eq!(
                answer.status,
                201,
                "{first} then {second}: {}",
                answer.text()
            ),
        }
    }
}

#[test]
fn the_same_socket_path_conflicts_and_another_does_not() {
    let service = Service::start("fwd-conflict-socket");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let socket = |path: &str| json!({"type": "local", "bind_socket": path, "target_host": "db.internal", "target_port": 1});
    let kept = id_of(&add_rule(
        &service,
        &host_rules(&web),
        socket("/tmp/hm-conflict.sock"),
    ));
    assert_conflict(
        &service,
        &service.post(&host_rules(&db), &socket("/tmp/hm-conflict.sock")),
        &kept,
        &web,
    );
    add_rule(&service, &host_rules(&db), socket("/tmp/hm-other.sock"));
}

#[test]
fn disabled_and_manual_rules_do_not_conflict_until_an_update_makes_them_enabled_autostart() {
    let service = Service::start("fwd-conflict-flags");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let kept = id_of(&add_rule(
        &service,
        &host_rules(&web),
        local(18700, Value::Null),
    ));
    let mut disabled = local(18700, Value::Null);
    disabled["enabled"] = json!(false);
    let disabled = id_of(&add_rule(&service, &host_rules(&db), disabled));
    let mut manual = local(18700, Value::Null);
    manual["autostart"] = json!(false);
    let manual = id_of(&add_rule(&service, &host_rules(&db), manual));
    // The kept rule may still be edited: the others do not count.
    service
        .put(
            &format!("{}/{kept}", host_rules(&web)),
            &json!({"description": "still fine"}),
        )
        .expect(200);
    let enable = format!("{}/{disabled}", host_rules(&db));
    assert_conflict(
        &service,
        &service.put(&enable, &json!({"enabled": true})),
        &kept,
        &web,
    );
    assert_eq!(
        service.get(&enable).expect(200)["enabled"],
        false,
        "nothing changed"
    );
    let start = format!("{}/{manual}", host_rules(&db));
    assert_conflict(
        &service,
        &service.put(&start, &json!({"autostart": true})),
        &kept,
        &web,
    );
    // Once the kept rule is manual itself, the port is free for one autostart rule.
    service
        .put(
            &format!("{}/{kept}", host_rules(&web)),
            &json!({"autostart": false}),
        )
        .expect(200);
    service.put(&start, &json!({"autostart": true})).expect(200);
}

#[test]
fn an_update_that_moves_a_rule_onto_a_taken_port_is_409_and_changes_nothing() {
    let service = Service::start("fwd-conflict-update");
    let web = host(&service, "web", json!({}));
    let kept = id_of(&add_rule(
        &service,
        &host_rules(&web),
        local(18710, Value::Null),
    ));
    let moving = add_rule(&service, &host_rules(&web), local(18711, Value::Null));
    let path = format!("{}/{}", host_rules(&web), id_of(&moving));
    assert_conflict(
        &service,
        &service.put(&path, &json!({"bind_port": 18710})),
        &kept,
        &web,
    );
    assert_eq!(service.get(&path).expect(200), moving);
    // A rule never conflicts with itself.
    service
        .put(&path, &json!({"bind_port": 18711, "description": "same"}))
        .expect(200);
}

#[test]
fn remote_rules_never_conflict() {
    let service = Service::start("fwd-conflict-remote");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let remote = json!({"type": "remote", "bind_port": 18720, "target_host": "localhost", "target_port": 3000});
    add_rule(&service, &host_rules(&web), remote.clone());
    add_rule(&service, &host_rules(&db), remote.clone());
    add_rule(&service, &host_rules(&web), remote);
    add_rule(&service, &host_rules(&db), local(18720, Value::Null));
}

#[test]
fn of_racing_creates_on_one_port_exactly_one_wins_and_the_others_are_409() {
    let service = Service::start("fwd-conflict-race");
    let hosts: Vec<String> = (0..8)
        .map(|n| host(&service, &format!("racer{n}"), json!({})))
        .collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(hosts.len()));
    let racers: Vec<_> = hosts
        .iter()
        .map(|id| {
            let (addr, barrier, path) = (service.addr(), barrier.clone(), host_rules(id));
            std::thread::spawn(move || {
                let mut client = crate::support::Client::connect(&addr);
                barrier.wait();
                client
                    .request("POST", &path, Some(&local(18800, Value::Null)))
                    .status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = racers
        .into_iter()
        .map(|racer| racer.join().unwrap())
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
}
