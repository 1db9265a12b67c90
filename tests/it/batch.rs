//! `POST /api/hosts/:id/duplicate` and `POST /api/hosts/batch` (docs/api.md, Hosts): a copy
//! keeps every field and connects with the same password; a batch selects by ids or by the
//! list's filters, checks every op before it writes, writes all or nothing, and the list
//! shows what it wrote. All over HTTP against the binary.

use serde_json::{json, Value};

use crate::support::{host_body, id_of, Service};

const UNKNOWN: &str = "dddddddd-0000-4000-8000-000000000004";

/// A service with one identity (username `deploy`, no methods), and its id.
fn start_with_identity(name: &str) -> (Service, String) {
    let service = Service::start(name);
    let identity = service
        .post(
            "/api/identities",
            &json!({"name": "ops", "username": "deploy"}),
        )
        .expect(201);
    (service, id_of(&identity))
}

fn create(service: &Service, name: &str, extra: Value) -> Value {
    service
        .post("/api/hosts", &host_body(name, "web.example.com", extra))
        .expect(201)
}

fn duplicate(service: &Service, id: &str, body: Option<&Value>) -> crate::support::Response {
    service.request("POST", &format!("/api/hosts/{id}/duplicate"), body)
}

/// The fields a copy must share with its original.
const KEPT: &[&str] = &[
    "hostname",
    "port",
    "username",
    "auth",
    "identity_id",
    "group_id",
    "tags",
    "is_favorite",
    "color",
    "notes",
    "jump_host_ids",
    "ssh_options",
    "remote_command",
    "request_tty",
    "set_env",
    "send_env",
];

#[test]
fn a_duplicate_keeps_every_field_and_connects_with_the_same_password() {
    let (service, identity) = start_with_identity("batch-duplicate-fields");
    let group = service.new_group("g");
    let hop = id_of(&create(&service, "hop", json!({})));
    let earlier = create(&service, "earlier", json!({"group_id": group}));
    let original = create(
        &service,
        "web 1",
        json!({
            "auth": {"type": "password", "password": "s3cret-dup"},
            "identity_id": identity, "group_id": group, "tags": ["b", "a"],
            "is_favorite": true, "color": "#A0B1C2", "notes": "n\u{e9}",
            "jump_host_ids": [hop], "ssh_options": ["ServerAliveInterval 30"],
        }),
    );
    let id = id_of(&original);
    service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    let response = duplicate(&service, &id, None);
    let copy = response.expect(201);
    assert_eq!(response.header("etag"), Some("\"1\""));
    for field in KEPT {
        assert_eq!(copy[field], original[field], "{field}: {copy}");
    }
    assert_ne!(id_of(&copy), id);
    assert_eq!(copy["name"], "web 1 (copy)");
    assert_eq!(copy["revision"], 1);
    assert_eq!(copy["last_used_at"], Value::Null);
    assert!(copy["created_at"].as_str() >= original["updated_at"].as_str());
    assert!(copy["order"].as_i64() > original["order"].as_i64());
    assert!(original["order"].as_i64() > earlier["order"].as_i64());
    let fetched = service
        .get(&format!("/api/hosts/{}", id_of(&copy)))
        .expect(200);
    assert_eq!(fetched, copy);
    let connected = service
        .request(
            "POST",
            &format!("/api/hosts/{}/connect", id_of(&copy)),
            None,
        )
        .expect(200);
    assert_eq!(connected["credentials"]["password"], "s3cret-dup");
    assert_eq!(connected["credentials"]["username"], "root");
}

#[test]
fn a_duplicate_keeps_an_inherited_chain_inherited_and_a_direct_one_direct() {
    let service = Service::start("batch-duplicate-chain");
    for chain in [Value::Null, json!([])] {
        let id = id_of(&create(&service, "c", json!({ "jump_host_ids": chain })));
        let copy = duplicate(&service, &id, Some(&json!({}))).expect(201);
        assert_eq!(copy["jump_host_ids"], chain);
    }
}

/// docs/identities.md "Batch edits and duplicates": a copy has the original's forward rules
/// (new ids, same order), the ones that would listen where the original's do made manual,
/// and its secret environment value sealed again for the copy (connect opens it).
#[test]
fn a_duplicate_copies_forward_rules_as_manual_and_its_secret_env_opens() {
    let service = Service::start("batch-duplicate-session");
    let env = json!([{"name": "TOKEN", "value": "t0ken-value", "secret": true}]);
    let id = id_of(&create(&service, "s", json!({ "set_env": env })));
    let rules = format!("/api/hosts/{id}/forwards");
    let local =
        json!({"type": "local", "bind_port": 18080, "target_host": "db", "target_port": 5432});
    let remote = json!({"type": "remote", "bind_port": 9000, "target_host": "localhost", "target_port": 3000});
    let local_id = id_of(&service.post(&rules, &local).expect(201));
    service.post(&rules, &remote).expect(201);
    let copy = id_of(&duplicate(&service, &id, None).expect(201));
    let copied = service
        .get(&format!("/api/hosts/{copy}/forwards"))
        .expect(200);
    let items = copied["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{copied}");
    assert_eq!(items[0]["bind_port"], 18080);
    assert_ne!(
        items[0]["id"],
        local_id.as_str(),
        "a copy has ids of its own"
    );
    assert_eq!(
        items[0]["autostart"], false,
        "the original listens on 18080"
    );
    assert_eq!(items[1]["type"], "remote");
    assert_eq!(
        items[1]["autostart"], true,
        "a remote rule takes no local port"
    );
    let connect = service
        .post(&format!("/api/hosts/{copy}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        connect["environment"]["set"],
        json!([{"name": "TOKEN", "value": "t0ken-value"}])
    );
}

#[test]
fn a_duplicate_name_defaults_to_copy_within_100_characters_and_a_given_name_meets_the_rule() {
    let service = Service::start("batch-duplicate-name");
    let long = "\u{e9}".repeat(100);
    let id = id_of(&create(&service, &long, json!({})));
    let copy = duplicate(&service, &id, Some(&json!({"name": null}))).expect(201);
    let name = copy["name"].as_str().unwrap();
    assert_eq!(name.chars().count(), 100);
    assert_eq!(name, format!("{} (copy)", "\u{e9}".repeat(93)));
    let copy = duplicate(&service, &id, Some(&json!({"name": "  db 2  "}))).expect(201);
    assert_eq!(copy["name"], "db 2");
    let copy = duplicate(&service, &id, Some(&json!({"name": "x".repeat(100)}))).expect(201);
    assert_eq!(copy["name"], "x".repeat(100));
    for refused in [json!(""), json!("   "), json!("x".repeat(101)), json!(5)] {
        let error = duplicate(&service, &id, Some(&json!({ "name": refused })))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(error["details"].as_str().unwrap().starts_with("name: "));
    }
    duplicate(&service, UNKNOWN, Some(&json!({"name": ""}))).assert_error(404, "HOST_NOT_FOUND");
    let total = service.get("/api/hosts").expect(200)["total"].clone();
    assert_eq!(total, 4, "the refusals wrote nothing");
}

fn batch(service: &Service, body: &Value) -> crate::support::Response {
    service.post("/api/hosts/batch", body)
}

fn host(service: &Service, id: &str) -> Value {
    service.get(&format!("/api/hosts/{id}")).expect(200)
}

/// The newest change-feed `seq` now.
fn newest_change(service: &Service) -> i64 {
    service.get("/api/changes").expect(200)["next"]
        .as_i64()
        .unwrap()
}

/// `(kind, id, op)` of every change-feed entry after `since`.
fn changes_since(service: &Service, since: i64) -> Vec<(String, String, String)> {
    let page = service
        .get(&format!("/api/changes?since={since}&limit=1000"))
        .expect(200);
    let items = page["items"].as_array().unwrap().iter();
    let text = |item: &Value, field: &str| item[field].as_str().unwrap().to_owned();
    items
        .map(|item| (text(item, "kind"), text(item, "id"), text(item, "op")))
        .collect()
}

/// The audit entries of batches, newest first.
fn batch_audit(service: &Service) -> Vec<Value> {
    let page = service.get("/api/audit?limit=1000").expect(200);
    let items = page["items"].as_array().unwrap().iter();
    items
        .filter(|item| item["event"] == "hosts.batch")
        .cloned()
        .collect()
}

/// The ids of a list page, in order.
fn listed(service: &Service, query: &str) -> Vec<String> {
    let page = service.get(&format!("/api/hosts?{query}")).expect(200);
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect()
}

/// Asserts a batch is refused 400 with details naming `field`.
#[track_caller]
fn assert_refused(service: &Service, body: &Value, field: &str) {
    let error = batch(service, body).assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.starts_with(&format!("{field}: ")),
        "{body}: details should name {field}: {details}"
    );
}

#[test]
fn a_batch_by_ids_moves_retags_and_sets_fields_writing_each_changed_host_once() {
    let service = Service::start("batch-ids");
    let group = service.new_group("g");
    let already = id_of(&create(&service, "already", json!({"group_id": group})));
    let a = id_of(&create(&service, "a", json!({"tags": ["x", "keep"]})));
    let b = id_of(&create(&service, "b", json!({"tags": ["x"]})));
    let untouched = id_of(&create(&service, "c", json!({"tags": ["x"]})));
    let created_b = host(&service, &b);
    // The list's memory is read before the batch, so the batch must reach it.
    assert_eq!(listed(&service, "tag=x").len(), 3);
    let since = newest_change(&service);
    let body = json!({"ids": [b, a, b], "ops": {
        "group_id": group, "tags": {"remove": ["x"], "add": ["y", "keep"]}, "port": 2222,
        "username": "ops", "is_favorite": true, "color": "#112233"}});
    let answer = batch(&service, &body).expect(200);
    assert_eq!(answer, json!({"count": 2, "matched": 2, "ids": [b, a]}));
    let (a, b) = (host(&service, &a), host(&service, &b));
    assert_eq!(a["tags"], json!(["keep", "y"]));
    assert_eq!(b["tags"], json!(["y", "keep"]));
    for moved in [&a, &b] {
        assert_eq!(moved["group_id"], json!(group));
        assert_eq!(
            (&moved["port"], &moved["username"]),
            (&json!(2222), &json!("ops"))
        );
        assert_eq!(
            (&moved["is_favorite"], &moved["color"]),
            (&json!(true), &json!("#112233"))
        );
        assert_eq!(moved["revision"], 2, "one new revision: {moved}");
    }
    let already = host(&service, &already);
    let order = |host: &Value| host["order"].as_i64().unwrap();
    assert!(
        order(&already) < order(&b) && order(&b) < order(&a),
        "batch order, at the end"
    );
    assert_eq!(host(&service, &untouched)["revision"], 1);
    assert!(b["updated_at"].as_str() > created_b["updated_at"].as_str());
    let mut tagged = listed(&service, "tag=y");
    tagged.sort();
    let mut expected = vec![id_of(&a), id_of(&b)];
    expected.sort();
    assert_eq!(tagged, expected);
    assert_eq!(listed(&service, "tag=x"), vec![untouched.clone()]);
    assert_eq!(listed(&service, &format!("group={group}")).len(), 3);
    let mut fed = changes_since(&service, since);
    fed.sort();
    let mut expected = vec![
        ("host".to_owned(), id_of(&a), "updated".to_owned()),
        ("host".to_owned(), id_of(&b), "updated".to_owned()),
    ];
    expected.sort();
    assert_eq!(fed, expected, "one feed entry per changed host");
    let audit = batch_audit(&service);
    assert_eq!(audit.len(), 1, "{audit:?}");
    let detail = &audit[0]["detail"];
    assert_eq!(detail["count"], 2, "{detail}");
    assert_eq!(detail["selection"], "ids");
    assert_eq!(
        detail["ops"],
        json!([
            "group_id",
            "tags",
            "port",
            "username",
            "is_favorite",
            "color"
        ])
    );
}

#[test]
fn a_batch_by_filter_selects_what_the_list_selects_and_the_list_shows_the_new_tags() {
    let service = Service::start("batch-filter");
    let group = service.new_group("g");
    let mut old = Vec::new();
    for index in 0..5 {
        let extra = json!({"tags": ["old"], "is_favorite": index % 2 == 0});
        old.push(id_of(&create(&service, &format!("web-{index}"), extra)));
    }
    let grouped = id_of(&create(
        &service,
        "web-g",
        json!({"tags": ["old"], "group_id": group}),
    ));
    let other = id_of(&create(&service, "db", json!({"tags": ["other"]})));
    // The list's memory is read before the batch, so the batch must reach it.
    assert_eq!(listed(&service, "tag=old").len(), 6);
    let body = json!({"filter": {"tag": "old", "group": null, "favorite": true},
        "ops": {"tags": {"set": ["new"]}}});
    let answer = batch(&service, &body).expect(200);
    let favorites = [&old[0], &old[2], &old[4]];
    assert_eq!(answer["count"], 3, "{answer}");
    let mut listed_new = listed(&service, "tag=new");
    listed_new.sort();
    let mut expected: Vec<String> = favorites.iter().map(|id| id.to_string()).collect();
    expected.sort();
    assert_eq!(listed_new, expected);
    assert_eq!(listed(&service, "tag=old").len(), 3, "web-1, web-3, web-g");
    let body = json!({"filter": {"search": "WEB-"}, "ops": {"group_id": group}});
    assert_eq!(
        batch(&service, &body).expect(200)["count"],
        5,
        "web-g is there already"
    );
    let in_group = listed(&service, &format!("group={group}"));
    assert_eq!(in_group.len(), 6);
    assert!(in_group.contains(&grouped) && !in_group.contains(&other));
    let body = json!({"filter": {}, "ops": {"color": "#000000"}});
    assert_eq!(
        batch(&service, &body).expect(200)["count"],
        7,
        "{{}} is every host"
    );
}

#[test]
fn each_op_is_accepted_within_its_rule_and_refused_past_it_naming_the_op() {
    let (service, identity) = start_with_identity("batch-op-rules");
    let group = service.new_group("g");
    let id = id_of(&create(&service, "a", json!({})));
    let ids = json!([id]);
    let accepted = [
        json!({"port": 1}),
        json!({"port": 65535}),
        json!({"port": null}),
        json!({"username": "deploy"}),
        json!({"color": "#abcdef"}),
        json!({"color": ""}),
        json!({"is_favorite": true}),
        json!({"group_id": group}),
        json!({"group_id": ""}),
        json!({"identity_id": identity}),
        json!({"identity_id": null}),
        json!({"tags": {"set": (0..64).map(|n| format!("t{n}")).collect::<Vec<_>>()}}),
        json!({"tags": {"remove": ["t0"], "add": ["t0"]}}),
    ];
    for ops in accepted {
        batch(&service, &json!({"ids": ids, "ops": ops})).expect(200);
    }
    let refused = [
        (json!({"port": 0}), "ops.port"),
        (json!({"port": 65536}), "ops.port"),
        (json!({"port": "22"}), "ops.port"),
        (json!({"username": "a@b"}), "ops.username"),
        (json!({"username": ""}), "ops.username"),
        (json!({"color": "red"}), "ops.color"),
        (json!({"is_favorite": "yes"}), "ops.is_favorite"),
        (json!({"group_id": 5}), "ops.group_id"),
        (json!({"identity_id": []}), "ops.identity_id"),
        (json!({"tags": {"add": ["new"]}}), "ops.tags.add"),
        (json!({"tags": {"add": ["ok", " "]}}), "ops.tags.add[1]"),
        (json!({"tags": {"set": [], "add": ["x"]}}), "ops.tags.set"),
        (json!({"tags": {"keep": []}}), "ops.tags.keep"),
        (json!({"tags": []}), "ops.tags"),
        (json!({"name": "x"}), "ops.name"),
        (json!({}), "ops"),
        (json!({"username": null}), "username"),
    ];
    for (ops, field) in refused {
        assert_refused(&service, &json!({"ids": ids, "ops": ops}), field);
    }
    let unknown = json!({"ids": ids, "ops": {"group_id": UNKNOWN}});
    batch(&service, &unknown).assert_error(404, "GROUP_NOT_FOUND");
    let unknown = json!({"ids": ids, "ops": {"identity_id": UNKNOWN}});
    batch(&service, &unknown).assert_error(404, "IDENTITY_NOT_FOUND");
    let selections = [
        (
            json!({"ids": ids, "filter": {}, "ops": {"port": 22}}),
            "filter",
        ),
        (json!({"ops": {"port": 22}}), "ids"),
        (json!({"ids": [], "ops": {"port": 22}}), "ids"),
        (json!({"ids": [5], "ops": {"port": 22}}), "ids[0]"),
        (
            json!({"filter": {"sort": "name"}, "ops": {"port": 22}}),
            "filter.sort",
        ),
        (
            json!({"filter": {"tag": ""}, "ops": {"port": 22}}),
            "filter.tag",
        ),
        (
            json!({"filter": {"favorite": "true"}, "ops": {"port": 22}}),
            "filter.favorite",
        ),
        (
            json!({"ids": ids, "delete": true, "ops": {"port": 22}}),
            "delete",
        ),
        (json!({"ids": ids}), "ops"),
        (
            json!({"ids": ids, "ops": {"port": 22}, "dry_run": 1}),
            "dry_run",
        ),
    ];
    for (body, field) in selections {
        assert_refused(&service, &body, field);
    }
    let now = host(&service, &id);
    assert_eq!(now["tags"].as_array().unwrap().len(), 64);
    assert_eq!(
        (&now["tags"][0], &now["tags"][63]),
        (&json!("t1"), &json!("t0"))
    );
    assert_eq!((&now["port"], &now["color"]), (&Value::Null, &json!("")));
}

#[test]
fn one_host_a_batch_would_strand_or_one_unknown_id_changes_no_host() {
    let (service, identity) = start_with_identity("batch-atomic");
    let with_identity = id_of(&create(&service, "i", json!({"identity_id": identity})));
    let plain = id_of(&create(&service, "p", json!({})));
    let body = json!({"ids": [with_identity, plain], "ops": {"username": null, "port": 2200}});
    let error = batch(&service, &body).assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.starts_with("username: the ops would leave 1 host(s)"),
        "{details}"
    );
    for id in [&with_identity, &plain] {
        let now = host(&service, id);
        assert_eq!((&now["revision"], &now["port"]), (&json!(1), &json!(22)));
        assert_eq!(now["username"], "root");
    }
    let body = json!({"ids": [with_identity, UNKNOWN], "ops": {"port": 2200}});
    let error = batch(&service, &body).assert_error(404, "HOST_NOT_FOUND");
    assert!(
        error["details"].as_str().unwrap().contains(UNKNOWN),
        "{error}"
    );
    assert_eq!(host(&service, &with_identity)["port"], 22);
    let body = json!({"ids": [with_identity], "ops": {"username": null}});
    assert_eq!(
        batch(&service, &body).expect(200)["count"],
        1,
        "the identity gives one"
    );
    assert!(
        batch_audit(&service).len() == 1,
        "refused batches are not audited"
    );
}

#[test]
fn a_dry_run_answers_each_change_and_writes_nothing() {
    let service = Service::start("batch-dry-run");
    let a = id_of(&create(&service, "a", json!({"tags": ["x"]})));
    let b = id_of(&create(&service, "b", json!({"tags": ["x"], "port": 2222})));
    let since = newest_change(&service);
    let body = json!({"ids": [a, b], "ops": {"port": 2222, "tags": {"add": ["y"]}},
        "dry_run": true});
    let answer = batch(&service, &body).expect(200);
    let tags = json!({"from": ["x"], "to": ["x", "y"]});
    assert_eq!(
        answer,
        json!({"count": 2, "matched": 2, "items": [
            {"id": a, "changes": {"port": {"from": 22, "to": 2222}, "tags": tags}},
            {"id": b, "changes": {"tags": tags}},
        ]})
    );
    for id in [&a, &b] {
        let now = host(&service, id);
        assert_eq!((&now["revision"], &now["tags"]), (&json!(1), &json!(["x"])));
    }
    assert_eq!(listed(&service, "tag=y"), Vec::<String>::new());
    let body = json!({"ids": [a], "delete": true, "dry_run": true});
    let answer = batch(&service, &body).expect(200);
    assert_eq!(answer["items"], json!([{"id": a, "deleted": true}]));
    host(&service, &a);
    assert_eq!(changes_since(&service, since), vec![]);
    assert_eq!(batch_audit(&service), Vec::<Value>::new());
}

#[test]
fn a_batch_delete_of_a_hop_used_outside_it_is_409_and_with_its_users_deletes_them_all() {
    let service = Service::start("batch-delete");
    let hop = id_of(&create(&service, "hop", json!({})));
    let user = id_of(&create(&service, "user", json!({"jump_host_ids": [hop]})));
    let other = id_of(&create(&service, "other", json!({})));
    let body = json!({"ids": [hop, other], "delete": true});
    batch(&service, &body).assert_error(409, "HOST_IN_USE");
    host(&service, &hop);
    host(&service, &other);
    let body = json!({"ids": [hop, user], "delete": true});
    let answer = batch(&service, &body).expect(200);
    assert_eq!(
        answer,
        json!({"count": 2, "matched": 2, "ids": [hop, user]})
    );
    for gone in [&hop, &user] {
        service
            .get(&format!("/api/hosts/{gone}"))
            .assert_error(404, "HOST_NOT_FOUND");
    }
    assert_eq!(listed(&service, ""), vec![other]);
}

#[test]
fn a_batch_that_leaves_a_host_as_it_is_does_not_write_it() {
    let service = Service::start("batch-unchanged");
    let id = id_of(&create(&service, "a", json!({"color": "#111111"})));
    let body = json!({"ids": [id], "ops": {"color": "#111111", "port": 22}});
    let answer = batch(&service, &body).expect(200);
    assert_eq!(answer, json!({"count": 0, "matched": 1, "ids": []}));
    assert_eq!(host(&service, &id)["revision"], 1);
}
