//! Forward rules in the change feed (docs/api.md, "Changes"): `kind` `forward`, `op`
//! `created`, `updated` (any edit or move) or `deleted` (also with its host or group), from
//! the rule routes and from an import alike.

use serde_json::{json, Value};

use super::{add_rule, group_rules, host, host_rules};
use crate::support::{id_of, Service};

/// The feed's newest `seq`.
fn newest(service: &Service) -> i64 {
    service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap()
}

/// `(id, op)` of every `forward` entry after `since`, oldest first.
fn forward_entries(service: &Service, since: i64) -> Vec<(String, String)> {
    let page = service
        .get(&format!("/api/changes?since={since}&limit=1000"))
        .expect(200);
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "forward")
        .map(|item| (id_of(item), item["op"].as_str().unwrap().to_owned()))
        .collect()
}

fn entry(id: &str, op: &str) -> (String, String) {
    (id.to_owned(), op.to_owned())
}

fn dynamic(port: u16) -> Value {
    json!({"type": "dynamic", "bind_port": port})
}

#[test]
fn each_rule_write_is_a_forward_entry_and_a_delete_of_its_owner_logs_its_rules_deleted() {
    let service = Service::start("fwd-feed-routes");
    let web = host(&service, "web", json!({}));
    let fleet = service.new_group("fleet");
    let since = newest(&service);
    let a = id_of(&add_rule(&service, &host_rules(&web), dynamic(18810)));
    let b = id_of(&add_rule(&service, &host_rules(&web), dynamic(18811)));
    let g = id_of(&add_rule(&service, &group_rules(&fleet), dynamic(18812)));
    service
        .put(
            &format!("{}/{a}", host_rules(&web)),
            &json!({"description": "x"}),
        )
        .expect(200);
    service
        .put(
            &format!("{}/{b}", host_rules(&web)),
            &json!({"position": 0}),
        )
        .expect(200);
    service
        .delete(&format!("{}/{a}", host_rules(&web)))
        .expect(204);
    let c = id_of(&add_rule(&service, &host_rules(&web), dynamic(18813)));
    service.delete(&format!("/api/hosts/{web}")).expect(204);
    service.delete(&format!("/api/groups/{fleet}")).expect(204);
    let got = forward_entries(&service, since);
    let mut owners_gone = got[7..].to_vec();
    owners_gone.sort();
    let mut expected_gone = vec![
        entry(&b, "deleted"),
        entry(&c, "deleted"),
        entry(&g, "deleted"),
    ];
    expected_gone.sort();
    assert_eq!(
        got[..7],
        [
            entry(&a, "created"),
            entry(&b, "created"),
            entry(&g, "created"),
            entry(&a, "updated"),
            entry(&b, "updated"),
            entry(&a, "deleted"),
            entry(&c, "created")
        ],
        "{got:?}"
    );
    assert_eq!(owners_gone, expected_gone, "{got:?}");
}

#[test]
fn an_import_logs_the_rules_it_creates_updates_and_deletes() {
    let service = Service::start("fwd-feed-import");
    let id = host(&service, "imported", json!({}));
    let kept = id_of(&add_rule(&service, &host_rules(&id), dynamic(18820)));
    let edited = id_of(&add_rule(&service, &host_rules(&id), dynamic(18821)));
    let dropped = id_of(&add_rule(&service, &host_rules(&id), dynamic(18822)));
    let export = service.get("/api/export/ssh-config").text();
    let changed = export
        .replace("DynamicForward 18821", "DynamicForward 18831")
        .replace(
            &format!("# host-manager forward {dropped}\n    DynamicForward 18822\n"),
            "",
        )
        .replace(
            "DynamicForward 18820\n",
            "DynamicForward 18820\n    DynamicForward 18823\n",
        );
    assert_ne!(changed, export);
    let since = newest(&service);
    service
        .post("/api/import/ssh-config", &json!({"config": changed}))
        .expect(200);
    let got = forward_entries(&service, since);
    let rules = service.get(&host_rules(&id)).expect(200)["items"].clone();
    let added = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|rule| rule["bind_port"] == 18823)
        .map(id_of)
        .unwrap_or_else(|| panic!("the new rule: {rules}"));
    for wanted in [
        entry(&edited, "updated"),
        entry(&dropped, "deleted"),
        entry(&added, "created"),
    ] {
        assert!(got.contains(&wanted), "{wanted:?} in {got:?}");
    }
    assert!(
        !got.iter().any(|(rule, _)| *rule == kept),
        "an unchanged rule is not logged: {got:?}"
    );
}

#[test]
fn a_batch_delete_logs_each_deleted_hosts_rules_deleted_and_frees_their_ports() {
    let service = Service::start("fwd-feed-batch");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let a = id_of(&add_rule(&service, &host_rules(&web), dynamic(18840)));
    let b = id_of(&add_rule(&service, &host_rules(&db), dynamic(18841)));
    let since = newest(&service);
    service
        .post(
            "/api/hosts/batch",
            &json!({"ids": [web, db], "delete": true}),
        )
        .expect(200);
    let mut got = forward_entries(&service, since);
    got.sort();
    let mut expected = vec![entry(&a, "deleted"), entry(&b, "deleted")];
    expected.sort();
    assert_eq!(got, expected);
    let other = host(&service, "other", json!({}));
    add_rule(&service, &host_rules(&other), dynamic(18840));
    add_rule(&service, &host_rules(&other), dynamic(18841));
}
