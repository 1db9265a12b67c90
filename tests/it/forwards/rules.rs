//! The rule routes (docs/forwards.md, "Rules"): create defaults, position order and moves,
//! partial `PUT`, `If-Match`, `DELETE`, and the 404s, under hosts and groups alike.

use serde_json::{json, Value};

use super::{add_rule, group_rules, host, host_rules};
use crate::support::{field_names, id_of, Response, Service};

/// A local rule on `port` to db.internal:5432.
fn local(port: u16) -> Value {
    json!({"type": "local", "bind_port": port, "target_host": "db.internal", "target_port": 5432})
}

/// The ids of the rules listed at `path`, in the answer's order, with their positions.
fn listed(service: &Service, path: &str) -> Vec<(String, i64)> {
    service.get(path).expect(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|rule| (id_of(rule), rule["position"].as_i64().expect("position")))
        .collect()
}

fn with_if_match(
    service: &Service,
    method: &str,
    path: &str,
    tag: &str,
    body: Option<&Value>,
) -> Response {
    let text = body.map(Value::to_string);
    let mut headers = vec![("If-Match", tag.to_owned())];
    if text.is_some() {
        headers.push(("Content-Type", "application/json".to_owned()));
    }
    service.request_raw_body(method, path, &headers, text.as_deref().map(str::as_bytes))
}

#[test]
fn a_new_host_rule_is_enabled_autostart_with_an_empty_description_and_answers_every_field() {
    let service = Service::start("fwd-create");
    let id = host(&service, "web", json!({}));
    let created = add_rule(&service, &host_rules(&id), local(18080));
    assert_eq!(
        field_names(&created),
        [
            "autostart",
            "bind_address",
            "bind_port",
            "bind_socket",
            "created_at",
            "description",
            "enabled",
            "host_id",
            "id",
            "position",
            "revision",
            "target_host",
            "target_port",
            "target_socket",
            "type",
            "updated_at",
            "warnings"
        ]
    );
    assert_eq!(created["host_id"], json!(id));
    assert_eq!(created["position"], 0);
    assert_eq!(created["type"], "local");
    assert_eq!(created["bind_address"], Value::Null);
    assert_eq!(created["bind_port"], 18080);
    assert_eq!(created["bind_socket"], Value::Null);
    assert_eq!(created["target_host"], "db.internal");
    assert_eq!(created["target_port"], 5432);
    assert_eq!(created["target_socket"], Value::Null);
    assert_eq!(
        (created["enabled"].clone(), created["autostart"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(created["description"], "");
    assert_eq!(created["warnings"], json!([]));
    assert_eq!(created["revision"], 1);
    let path = format!("{}/{}", host_rules(&id), id_of(&created));
    assert_eq!(service.get(&path).expect(200), created);
    assert_eq!(
        service.get(&host_rules(&id)).expect(200)["items"],
        json!([created])
    );
}

#[test]
fn a_group_rule_names_its_group_instead_of_a_host() {
    let service = Service::start("fwd-create-group");
    let group = service.new_group("fleet");
    let created = add_rule(
        &service,
        &group_rules(&group),
        json!({"type": "dynamic", "bind_port": 11080}),
    );
    assert_eq!(created["group_id"], json!(group));
    assert!(created.get("host_id").is_none(), "{created}");
    assert_eq!(created["position"], 0);
    let listed = service.get(&group_rules(&group)).expect(200);
    assert_eq!(listed["items"], json!([created]));
}

#[test]
fn rules_are_listed_in_position_order_and_a_put_with_position_moves_one_clamped_to_the_end() {
    let service = Service::start("fwd-positions");
    for owner in ["host", "group"] {
        let path = match owner {
            "host" => host_rules(&host(&service, "web", json!({}))),
            _ => group_rules(&service.new_group("fleet")),
        };
        let ids: Vec<String> = (0..3)
            .map(|n| {
                id_of(&add_rule(
                    &service,
                    &path,
                    local(18100 + n + if owner == "host" { 0 } else { 10 }),
                ))
            })
            .collect();
        let (a, b, c) = (ids[0].clone(), ids[1].clone(), ids[2].clone());
        assert_eq!(
            listed(&service, &path),
            [(a.clone(), 0), (b.clone(), 1), (c.clone(), 2)]
        );
        let moved = service
            .put(&format!("{path}/{c}"), &json!({"position": 0}))
            .expect(200);
        assert_eq!(moved["position"], 0, "{owner}");
        assert_eq!(
            listed(&service, &path),
            [(c.clone(), 0), (a.clone(), 1), (b.clone(), 2)]
        );
        let clamped = service
            .put(&format!("{path}/{c}"), &json!({"position": 99}))
            .expect(200);
        assert_eq!(clamped["position"], 2, "{owner}: clamped to the end");
        assert_eq!(
            listed(&service, &path),
            [(a.clone(), 0), (b.clone(), 1), (c.clone(), 2)]
        );
        service.delete(&format!("{path}/{a}")).expect(204);
        assert_eq!(
            listed(&service, &path),
            [(b, 0), (c, 1)],
            "{owner}: positions close up"
        );
    }
}

#[test]
fn put_is_partial_keeps_unnamed_fields_and_bumps_the_revision() {
    let service = Service::start("fwd-put-partial");
    let id = host(&service, "web", json!({}));
    let created = add_rule(
        &service,
        &host_rules(&id),
        json!({"type": "local", "bind_address": "127.0.0.1", "bind_port": 18200,
               "target_host": "db.internal", "target_port": 5432, "description": "db"}),
    );
    let path = format!("{}/{}", host_rules(&id), id_of(&created));
    let renamed = service
        .put(&path, &json!({"description": "staging database"}))
        .expect(200);
    assert_eq!(renamed["description"], "staging database");
    assert_eq!(renamed["revision"], 2);
    for field in [
        "type",
        "bind_address",
        "bind_port",
        "target_host",
        "target_port",
        "enabled",
        "autostart",
        "position",
        "created_at",
    ] {
        assert_eq!(renamed[field], created[field], "{field} kept");
    }
    let manual = service
        .put(&path, &json!({"autostart": false, "enabled": false}))
        .expect(200);
    assert_eq!(
        (manual["autostart"].clone(), manual["enabled"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(manual["description"], "staging database");
    let cleared = service
        .put(&path, &json!({"bind_address": null, "target_port": 6432}))
        .expect(200);
    assert_eq!(
        cleared["bind_address"],
        Value::Null,
        "null clears an optional field"
    );
    assert_eq!(cleared["target_port"], 6432);
    assert_eq!(cleared["revision"], 4);
    assert_eq!(service.get(&path).expect(200), cleared);
}

#[test]
fn put_and_delete_with_a_stale_if_match_are_412_and_change_nothing() {
    let service = Service::start("fwd-if-match");
    let id = host(&service, "web", json!({}));
    let created = add_rule(&service, &host_rules(&id), local(18300));
    let path = format!("{}/{}", host_rules(&id), id_of(&created));
    assert_eq!(service.get(&path).header("etag"), Some("\"1\""));
    let edited = with_if_match(
        &service,
        "PUT",
        &path,
        "\"1\"",
        Some(&json!({"description": "one"})),
    );
    assert_eq!(edited.expect(200)["revision"], 2);
    with_if_match(
        &service,
        "PUT",
        &path,
        "\"1\"",
        Some(&json!({"description": "two"})),
    )
    .assert_error(412, "PRECONDITION_FAILED");
    with_if_match(&service, "DELETE", &path, "\"1\"", None)
        .assert_error(412, "PRECONDITION_FAILED");
    service
        .put(&path, &json!({"description": "three", "revision": 1}))
        .assert_error(412, "PRECONDITION_FAILED");
    let now = service.get(&path).expect(200);
    assert_eq!(
        (now["description"].clone(), now["revision"].clone()),
        (json!("one"), json!(2))
    );
    with_if_match(&service, "DELETE", &path, "\"2\"", None).expect(204);
    service.get(&path).assert_error(404, "FORWARD_NOT_FOUND");
    assert_eq!(
        service.get(&host_rules(&id)).expect(200)["items"],
        json!([])
    );
}

#[test]
fn another_hosts_rule_id_is_404_forward_not_found_and_an_unknown_owner_is_404() {
    let service = Service::start("fwd-404");
    let web = host(&service, "web", json!({}));
    let db = host(&service, "db", json!({}));
    let group = service.new_group("fleet");
    let rule = id_of(&add_rule(&service, &host_rules(&web), local(18400)));
    let group_rule = id_of(&add_rule(&service, &group_rules(&group), local(18401)));
    for path in [
        format!("{}/{rule}", host_rules(&db)),
        format!("{}/{group_rule}", host_rules(&web)),
        format!("{}/{rule}", group_rules(&group)),
        format!("{}/dddddddd-0000-4000-8000-000000000004", host_rules(&web)),
    ] {
        service.get(&path).assert_error(404, "FORWARD_NOT_FOUND");
        service
            .put(&path, &json!({"description": "x"}))
            .assert_error(404, "FORWARD_NOT_FOUND");
        service.delete(&path).assert_error(404, "FORWARD_NOT_FOUND");
    }
    assert_eq!(
        service
            .get(&format!("{}/{rule}", host_rules(&web)))
            .expect(200)["description"],
        ""
    );
    let unknown = "dddddddd-0000-4000-8000-000000000005";
    service
        .get(&host_rules(unknown))
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .post(&host_rules(unknown), &local(18402))
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .get(&format!("{}/{rule}", host_rules(unknown)))
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .get(&group_rules(unknown))
        .assert_error(404, "GROUP_NOT_FOUND");
    service
        .post(&group_rules(unknown), &local(18403))
        .assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn deleting_a_host_or_group_deletes_its_rules() {
    let service = Service::start("fwd-owner-delete");
    let web = host(&service, "web", json!({}));
    let group = service.new_group("fleet");
    add_rule(&service, &host_rules(&web), local(18500));
    add_rule(&service, &group_rules(&group), local(18501));
    service.delete(&format!("/api/hosts/{web}")).expect(204);
    service.delete(&format!("/api/groups/{group}")).expect(204);
    // Their ports are free again: no rule of theirs is left to conflict.
    let other = host(&service, "other", json!({}));
    add_rule(&service, &host_rules(&other), local(18500));
    add_rule(&service, &host_rules(&other), local(18501));
}

#[test]
fn at_most_64_rules_per_host_and_per_group() {
    let service = Service::start("fwd-limit");
    let web = host(&service, "web", json!({}));
    let group = service.new_group("fleet");
    for (path, base) in [(host_rules(&web), 20000u16), (group_rules(&group), 21000)] {
        for n in 0..64 {
            add_rule(&service, &path, local(base + n));
        }
        let refused = service.post(&path, &local(base + 64));
        assert_eq!(refused.status, 400, "the 65th rule: {}", refused.text());
        assert_eq!(
            service.get(&path).expect(200)["items"]
                .as_array()
                .map(Vec::len),
            Some(64)
        );
    }
}

#[test]
fn a_malformed_rule_id_is_404_and_a_body_that_is_not_an_object_is_400() {
    let service = Service::start("fwd-malformed");
    let id = host(&service, "web", json!({}));
    for sub in ["not-a-uuid", "%20", "..", "x'y"] {
        service
            .get(&format!("{}/{sub}", host_rules(&id)))
            .assert_error(404, "FORWARD_NOT_FOUND");
    }
    for body in [json!([]), json!("local"), json!(null), json!(5)] {
        let answer = service.post(&host_rules(&id), &body);
        assert_eq!(answer.status, 400, "{body}: {}", answer.text());
    }
    let raw = service.request_raw_body(
        "POST",
        &host_rules(&id),
        &[("Content-Type", "application/json".to_owned())],
        Some(b"{\"type\": "),
    );
    raw.assert_error(400, "INVALID_JSON");
    assert_eq!(
        service.get(&host_rules(&id)).expect(200)["items"],
        json!([])
    );
}
