//! `/api/groups` black-box tests (docs/api.md, Groups and Common behaviour): every endpoint, every rule on
//! both sides of its edge, the five-level tree and its counts, cycles, and deletes that lose
//! nothing.

use std::collections::HashMap;
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::support::{id_of, wait_until, Service, EVENT_DEADLINE};

// ---- helpers ---------------------------------------------------------------------------

/// Creates a group and returns its JSON (asserting 201).
fn create(service: &Service, name: &str, parent: Option<&str>) -> Value {
    service
        .post("/api/groups", &json!({ "name": name, "parent_id": parent }))
        .expect(201)
}

fn create_id(service: &Service, name: &str, parent: Option<&str>) -> String {
    id_of(&create(service, name, parent))
}

fn group(service: &Service, id: &str) -> Value {
    service.get(&format!("/api/groups/{id}")).expect(200)
}

fn tree(service: &Service) -> Vec<Value> {
    let body = service.get("/api/groups").expect(200);
    body["items"].as_array().unwrap().clone()
}

fn names(groups: &Value) -> Vec<String> {
    groups
        .as_array()
        .unwrap()
        .iter()
        .map(|group| group["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Depth-first search of the tree for `id`.
fn find(groups: &[Value], id: &str) -> Option<Value> {
    groups.iter().find_map(|group| {
        if group["id"] == id {
            return Some(group.clone());
        }
        find(group["children"].as_array().unwrap(), id)
    })
}

fn count_groups(groups: &[Value]) -> usize {
    groups
        .iter()
        .map(|group| 1 + count_groups(group["children"].as_array().unwrap()))
        .sum()
}

fn counts(group: &Value) -> (u64, u64) {
    (
        group["host_count"].as_u64().unwrap(),
        group["total_host_count"].as_u64().unwrap(),
    )
}

fn move_group(service: &Service, id: &str, parent: Value) -> crate::support::Response {
    service.put(
        &format!("/api/groups/{id}/move"),
        &json!({ "parent_id": parent }),
    )
}

/// Asserts a 400 `VALIDATION_ERROR` whose `details` names `field`.
#[track_caller]
fn assert_invalid(response: &crate::support::Response, field: &str) {
    let body = response.assert_error(400, "VALIDATION_ERROR");
    let details = body["details"].as_str().unwrap();
    assert!(
        details.starts_with(&format!("{field}:")),
        "details should name {field}: {details}"
    );
}

/// Waits until the wall clock shows a later millisecond than `stamp`, so the next write
/// gets a different `updated_at`.
fn wait_past(stamp: &str) {
    let later = || {
        humantime::format_rfc3339_millis(SystemTime::now())
            .to_string()
            .as_str()
            > stamp
    };
    assert!(wait_until(EVENT_DEADLINE, later));
}

/// Creates one host per `(host name, group id)` through `POST /api/hosts`.
fn seed_hosts(service: &Service, hosts: &[(&str, Option<&str>)]) {
    for (host, group) in hosts {
        let body = json!({
            "name": host, "hostname": "example.org", "port": 22, "username": "root",
            "auth": {"type": "agent"}, "group_id": group,
        });
        service.post("/api/hosts", &body).expect(201);
    }
}

/// Host name -> group id, as `GET /api/hosts` reports them.
fn host_groups(service: &Service) -> HashMap<String, Option<String>> {
    let list = service.get("/api/hosts?per_page=1000").expect(200);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| {
            let group = host
                .get("group_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            (host["name"].as_str().unwrap().to_owned(), group)
        })
        .collect()
}

// ---- create ----------------------------------------------------------------------------

#[test]
fn create_answers_201_with_the_full_group_shape() {
    let service = Service::start("groups-create-shape");
    let body = service
        .post(
            "/api/groups",
            &json!({ "name": "Prod", "color": "#A1b2C3", "icon": "server-rack_2" }),
        )
        .expect(201);
    let id = body["id"].as_str().unwrap();
    assert_eq!(id.len(), 36, "UUID form: {id}");
    assert_eq!(id, id.to_lowercase());
    assert_eq!(body["name"], "Prod");
    assert_eq!(body["parent_id"], Value::Null);
    assert_eq!(body["color"], "#A1b2C3");
    assert_eq!(body["icon"], "server-rack_2");
    assert_eq!(body["host_count"], 0);
    assert_eq!(body["total_host_count"], 0);
    assert_eq!(body["children"], json!([]));
    let created = body["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.len() == 24, "{created}");
    assert_eq!(body["updated_at"], body["created_at"]);
    assert_eq!(group(&service, id), body, "GET shows what POST answered");
}

#[test]
fn create_without_color_or_icon_answers_empty_strings() {
    let service = Service::start("groups-create-defaults");
    let body = create(&service, "Plain", None);
    assert_eq!(
        (body["color"].as_str(), body["icon"].as_str()),
        (Some(""), Some(""))
    );
}

#[test]
fn name_is_stored_trimmed() {
    let service = Service::start("groups-name-trimmed");
    assert_eq!(create(&service, "  Staging \t", None)["name"], "Staging");
}

#[test]
fn name_of_100_chars_is_accepted() {
    let service = Service::start("groups-name-100");
    // 100 characters but 200 bytes: the limit counts characters.
    let name = "é".repeat(100);
    assert_eq!(create(&service, &name, None)["name"], name.as_str());
}

#[test]
fn name_of_101_chars_is_rejected() {
    let service = Service::start("groups-name-101");
    let response = service.post("/api/groups", &json!({ "name": "a".repeat(101) }));
    assert_invalid(&response, "name");
    assert!(tree(&service).is_empty());
}

#[test]
fn name_empty_after_trimming_is_rejected() {
    let service = Service::start("groups-name-blank");
    for blank in ["", "   ", "\t\n"] {
        assert_invalid(
            &service.post("/api/groups", &json!({ "name": blank })),
            "name",
        );
    }
}

#[test]
fn name_missing_null_or_not_a_string_is_rejected() {
    let service = Service::start("groups-name-type");
    for body in [json!({}), json!({ "name": null }), json!({ "name": 7 })] {
        assert_invalid(&service.post("/api/groups", &body), "name");
    }
}

#[test]
fn duplicate_name_among_siblings_differing_only_in_case_is_409() {
    let service = Service::start("groups-dup-case");
    create(&service, "Prod", None);
    service
        .post("/api/groups", &json!({ "name": "prod" }))
        .assert_error(409, "DUPLICATE_NAME");
    service
        .post("/api/groups", &json!({ "name": " PROD " }))
        .assert_error(409, "DUPLICATE_NAME");
    assert_eq!(tree(&service).len(), 1);
}

#[test]
fn duplicate_name_with_non_ascii_case_is_409() {
    let service = Service::start("groups-dup-unicode");
    create(&service, "Ärzte", None);
    service
        .post("/api/groups", &json!({ "name": "ärzte" }))
        .assert_error(409, "DUPLICATE_NAME");
}

#[test]
fn sibling_names_equal_under_full_case_folding_are_409() {
    let service = Service::start("groups-dup-folding");
    for (first, second) in [
        ("Straße", "STRASSE"),
        ("ſsh", "SSH"),
        ("ıstanbul", "ISTANBUL"),
        ("İzmir", "izmir"),
        ("ﬁles", "FILES"),
        ("ΟΔΟΣ", "οδος"),
    ] {
        create(&service, first, None);
        let error = service
            .post("/api/groups", &json!({ "name": second }))
            .assert_error(409, "DUPLICATE_NAME");
        assert!(
            error["details"]
                .as_str()
                .unwrap()
                .contains("Straße = STRASSE"),
            "{error}"
        );
    }
    assert_eq!(tree(&service).len(), 6);
}

#[test]
fn composed_and_decomposed_spellings_of_a_sibling_name_are_409() {
    let service = Service::start("groups-dup-nfd");
    let decomposed = "Cafe\u{301}";
    let created = create(&service, decomposed, None);
    assert_eq!(created["name"], decomposed, "stored as given");
    service
        .post("/api/groups", &json!({ "name": "Caf\u{e9}" }))
        .assert_error(409, "DUPLICATE_NAME");
    service
        .post("/api/groups", &json!({ "name": "CAF\u{c9}" }))
        .assert_error(409, "DUPLICATE_NAME");
}

#[test]
fn sibling_names_that_differ_by_a_letter_or_an_accent_are_accepted() {
    let service = Service::start("groups-folding-distinct");
    for name in ["Café", "Cafe", "Strasse", "Strase", "Ärzte", "Arzte"] {
        create(&service, name, None);
    }
    assert_eq!(tree(&service).len(), 6);
}

#[test]
fn renaming_or_moving_onto_a_caselessly_equal_sibling_name_is_409() {
    let service = Service::start("groups-folding-rename");
    let parent = create_id(&service, "EU", None);
    create(&service, "Straße", Some(&parent));
    let other = create_id(&service, "Other", Some(&parent));
    service
        .put(
            &format!("/api/groups/{other}"),
            &json!({ "name": "STRASSE" }),
        )
        .assert_error(409, "DUPLICATE_NAME");
    let loose = create_id(&service, "strasse", None);
    move_group(&service, &loose, json!(parent)).assert_error(409, "DUPLICATE_NAME");
}

#[test]
fn deleting_a_parent_renames_a_child_that_clashes_caselessly_at_the_destination() {
    let service = Service::start("groups-folding-delete");
    create(&service, "Straße", None);
    let parent = create_id(&service, "Parent", None);
    let child = create_id(&service, "STRASSE", Some(&parent));
    service.delete(&format!("/api/groups/{parent}")).expect(204);
    assert_eq!(group(&service, &child)["name"], "STRASSE (2)");
}

#[test]
fn same_name_under_another_parent_is_accepted() {
    let service = Service::start("groups-same-name-elsewhere");
    let eu = create_id(&service, "EU", None);
    let us = create_id(&service, "US", None);
    create(&service, "Prod", Some(&eu));
    create(&service, "prod", Some(&us));
    create(&service, "PROD", None);
    assert_eq!(count_groups(&tree(&service)), 5);
}

#[test]
fn color_rrggbb_of_either_case_and_empty_are_accepted() {
    let service = Service::start("groups-color-ok");
    for (index, color) in ["#000000", "#ffFFff", "#1a2B3c", ""].iter().enumerate() {
        let body = service
            .post(
                "/api/groups",
                &json!({ "name": format!("g{index}"), "color": color }),
            )
            .expect(201);
        assert_eq!(body["color"], *color);
    }
}

#[test]
fn color_not_rrggbb_is_rejected() {
    let service = Service::start("groups-color-bad");
    for color in [
        json!("#12345"),
        json!("#1234567"),
        json!("123456"),
        json!("#12345g"),
        json!("red"),
        json!(123456),
    ] {
        let response = service.post("/api/groups", &json!({ "name": "g", "color": color }));
        assert_invalid(&response, "color");
    }
}

#[test]
fn icon_of_64_chars_is_accepted() {
    let service = Service::start("groups-icon-64");
    let icon = format!("{}-_9", "a".repeat(61));
    assert_eq!(icon.len(), 64);
    let body = service
        .post("/api/groups", &json!({ "name": "g", "icon": icon }))
        .expect(201);
    assert_eq!(body["icon"], icon.as_str());
}

#[test]
fn icon_of_65_chars_or_outside_a_z_0_9_is_rejected() {
    let service = Service::start("groups-icon-bad");
    for icon in [
        json!("a".repeat(65)),
        json!("Server"),
        json!("two words"),
        json!("dot.ted"),
        json!(true),
    ] {
        let response = service.post("/api/groups", &json!({ "name": "g", "icon": icon }));
        assert_invalid(&response, "icon");
    }
}

#[test]
fn parent_id_null_empty_or_absent_means_top_level() {
    let service = Service::start("groups-parent-top");
    let bodies = [
        json!({ "name": "a", "parent_id": null }),
        json!({ "name": "b", "parent_id": "" }),
        json!({ "name": "c" }),
    ];
    for body in bodies {
        let group = service.post("/api/groups", &body).expect(201);
        assert_eq!(group["parent_id"], Value::Null);
    }
    assert_eq!(names(&json!(tree(&service))), ["a", "b", "c"]);
}

#[test]
fn create_under_a_parent_nests_it() {
    let service = Service::start("groups-create-nested");
    let parent = create_id(&service, "Parent", None);
    let child = create(&service, "Child", Some(&parent));
    assert_eq!(child["parent_id"], parent.as_str());
    let top = tree(&service);
    assert_eq!(names(&top[0]["children"]), ["Child"]);
}

#[test]
fn unknown_parent_is_404_group_not_found() {
    let service = Service::start("groups-parent-unknown");
    for parent in ["6f1c1f7e-8d1e-4a7e-9a53-3a3c1e0b2f10", "not-a-uuid"] {
        service
            .post("/api/groups", &json!({ "name": "g", "parent_id": parent }))
            .assert_error(404, "GROUP_NOT_FOUND");
    }
    assert!(tree(&service).is_empty());
}

#[test]
fn parent_id_of_wrong_type_is_rejected() {
    let service = Service::start("groups-parent-type");
    for parent in [json!(5), json!(["x"]), json!({})] {
        let response = service.post("/api/groups", &json!({ "name": "g", "parent_id": parent }));
        assert_invalid(&response, "parent_id");
    }
}

#[test]
fn body_that_is_not_json_is_400_invalid_json() {
    let service = Service::start("groups-not-json");
    for body in [&b"{name: x"[..], b"", b"nope"] {
        service
            .request_raw_body(
                "POST",
                "/api/groups",
                &[("Content-Type", "application/json".into())],
                Some(body),
            )
            .assert_error(400, "INVALID_JSON");
    }
}

#[test]
fn body_that_is_json_but_not_an_object_is_rejected() {
    let service = Service::start("groups-not-object");
    for body in [json!(["Prod"]), json!("Prod"), json!(null)] {
        service
            .post("/api/groups", &body)
            .assert_error(400, "VALIDATION_ERROR");
    }
}

#[test]
fn unknown_fields_are_ignored() {
    let service = Service::start("groups-unknown-fields");
    let body = service
        .post(
            "/api/groups",
            &json!({ "name": "g", "host_count": 99, "extra": true }),
        )
        .expect(201);
    assert_eq!(body["host_count"], 0);
}

// ---- get -------------------------------------------------------------------------------

#[test]
fn empty_tree_is_an_empty_items_array() {
    let service = Service::start("groups-empty");
    assert_eq!(
        service.get("/api/groups").expect(200),
        json!({ "items": [] })
    );
}

#[test]
fn get_unknown_group_is_404_group_not_found() {
    let service = Service::start("groups-get-unknown");
    for id in ["6f1c1f7e-8d1e-4a7e-9a53-3a3c1e0b2f10", "nope", "%20"] {
        service
            .get(&format!("/api/groups/{id}"))
            .assert_error(404, "GROUP_NOT_FOUND");
    }
}

#[test]
fn reads_do_not_change_updated_at() {
    let service = Service::start("groups-reads-pure");
    let created = create(&service, "g", None);
    wait_past(created["updated_at"].as_str().unwrap());
    tree(&service);
    let again = group(&service, &id_of(&created));
    assert_eq!(again["updated_at"], created["updated_at"]);
}

// ---- the tree and its counts -----------------------------------------------------------

#[test]
fn tree_five_levels_deep_with_hosts_at_several_levels_has_direct_and_total_counts() {
    let name = "groups-five-levels";
    let service = Service::start(name);
    let mut levels: Vec<String> = Vec::new();
    for level in 1..=5 {
        let parent = levels.last().map(String::as_str);
        levels.push(create_id(&service, &format!("Level {level}"), parent));
    }
    let side = create_id(&service, "side", Some(&levels[0]));
    let mut hosts: Vec<(String, Option<String>)> = vec![("l1-a".into(), Some(levels[0].clone()))];
    hosts.extend((0..2).map(|n| (format!("l3-{n}"), Some(levels[2].clone()))));
    hosts.extend((0..3).map(|n| (format!("l5-{n}"), Some(levels[4].clone()))));
    hosts.extend((0..4).map(|n| (format!("side-{n}"), Some(side.clone()))));
    hosts.push(("ungrouped".into(), None));
    let rows: Vec<(&str, Option<&str>)> = hosts
        .iter()
        .map(|(host, group)| (host.as_str(), group.as_deref()))
        .collect();
    seed_hosts(&service, &rows);

    let top = tree(&service);
    assert_eq!(top.len(), 1);
    let level1 = &top[0];
    assert_eq!(counts(level1), (1, 10));
    assert_eq!(names(&level1["children"]), ["Level 2", "side"]);
    let level2 = &level1["children"][0];
    assert_eq!(counts(level2), (0, 5));
    assert_eq!(counts(&level1["children"][1]), (4, 4));
    let level3 = &level2["children"][0];
    assert_eq!(counts(level3), (2, 5));
    let level4 = &level3["children"][0];
    assert_eq!(counts(level4), (0, 3));
    let level5 = &level4["children"][0];
    assert_eq!(counts(level5), (3, 3));
    assert_eq!(level5["children"], json!([]));
    assert_eq!(level5["parent_id"], levels[3].as_str());

    // GET /api/groups/:id shows the same node, subtree and counts.
    assert_eq!(group(&service, &levels[2]), *level3);
    assert_eq!(counts(&group(&service, &levels[4])), (3, 3));
}

#[test]
fn children_sort_by_name_case_insensitively() {
    let service = Service::start("groups-sorted");
    let parent = create_id(&service, "parent", None);
    for name in ["beta", "Alpha", "gamma", "Delta", "ÉCHO", "echo2"] {
        create(&service, name, Some(&parent));
    }
    for name in ["b", "A", "C"] {
        create(&service, name, None);
    }
    let top = tree(&service);
    assert_eq!(names(&json!(top)), ["A", "b", "C", "parent"]);
    let parent_node = find(&top, &parent).unwrap();
    assert_eq!(
        names(&parent_node["children"]),
        ["Alpha", "beta", "Delta", "echo2", "gamma", "ÉCHO"],
        "lowercase keys compare by code point: é sorts after the ASCII letters"
    );
}

// ---- update ----------------------------------------------------------------------------

#[test]
fn update_changes_only_the_given_fields_and_sets_updated_at() {
    let service = Service::start("groups-update-partial");
    let created = service
        .post(
            "/api/groups",
            &json!({ "name": "Prod", "color": "#111111", "icon": "box" }),
        )
        .expect(201);
    let id = id_of(&created);
    wait_past(created["updated_at"].as_str().unwrap());
    let updated = service
        .put(&format!("/api/groups/{id}"), &json!({ "color": "#222222" }))
        .expect(200);
    assert_eq!(updated["color"], "#222222");
    assert_eq!(updated["name"], "Prod");
    assert_eq!(updated["icon"], "box");
    assert_eq!(updated["created_at"], created["created_at"]);
    assert!(
        updated["updated_at"].as_str() > created["updated_at"].as_str(),
        "{updated}"
    );
    assert_eq!(group(&service, &id), updated);
}

#[test]
fn update_renames_and_clears_color_and_icon_with_null_or_empty() {
    let service = Service::start("groups-update-clear");
    let created = service
        .post(
            "/api/groups",
            &json!({ "name": "Prod", "color": "#111111", "icon": "box" }),
        )
        .expect(201);
    let updated = service
        .put(
            &format!("/api/groups/{}", id_of(&created)),
            &json!({ "name": " Production ", "color": null, "icon": "" }),
        )
        .expect(200);
    assert_eq!(
        (&updated["name"], &updated["color"], &updated["icon"]),
        (&json!("Production"), &json!(""), &json!(""))
    );
}

#[test]
fn update_to_a_sibling_name_is_409_and_changes_nothing() {
    let service = Service::start("groups-update-dup");
    create(&service, "Prod", None);
    let staging = create(&service, "Staging", None);
    service
        .put(
            &format!("/api/groups/{}", id_of(&staging)),
            &json!({ "name": "PROD" }),
        )
        .assert_error(409, "DUPLICATE_NAME");
    assert_eq!(group(&service, &id_of(&staging)), staging);
}

#[test]
fn update_changing_only_the_case_of_its_own_name_is_accepted() {
    let service = Service::start("groups-update-own-case");
    let id = create_id(&service, "prod", None);
    let updated = service
        .put(&format!("/api/groups/{id}"), &json!({ "name": "Prod" }))
        .expect(200);
    assert_eq!(updated["name"], "Prod");
}

#[test]
fn update_breaking_a_rule_is_rejected_naming_the_field() {
    let service = Service::start("groups-update-invalid");
    let id = create_id(&service, "g", None);
    let path = format!("/api/groups/{id}");
    assert_invalid(&service.put(&path, &json!({ "name": null })), "name");
    assert_invalid(&service.put(&path, &json!({ "name": " " })), "name");
    assert_invalid(
        &service.put(&path, &json!({ "name": "x".repeat(101) })),
        "name",
    );
    assert_invalid(&service.put(&path, &json!({ "color": "#abc" })), "color");
    assert_invalid(&service.put(&path, &json!({ "icon": "A" })), "icon");
    assert_invalid(&service.put(&path, &json!({ "parent_id": 1 })), "parent_id");
}

#[test]
fn update_of_unknown_group_is_404() {
    let service = Service::start("groups-update-unknown");
    service
        .put("/api/groups/nope", &json!({ "name": "x" }))
        .assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn update_with_parent_id_moves_the_group_under_the_same_rules_as_move() {
    let service = Service::start("groups-update-moves");
    let a = create_id(&service, "a", None);
    let b = create_id(&service, "b", None);
    let moved = service
        .put(&format!("/api/groups/{b}"), &json!({ "parent_id": a }))
        .expect(200);
    assert_eq!(moved["parent_id"], a.as_str());
    service
        .put(&format!("/api/groups/{a}"), &json!({ "parent_id": b }))
        .assert_error(400, "INVALID_MOVE");
    let top = service
        .put(&format!("/api/groups/{b}"), &json!({ "parent_id": null }))
        .expect(200);
    assert_eq!(top["parent_id"], Value::Null);
}

// ---- move ------------------------------------------------------------------------------

#[test]
fn move_under_another_group_answers_200_with_the_new_parent_and_subtree() {
    let service = Service::start("groups-move-ok");
    let target = create_id(&service, "target", None);
    let mover = create(&service, "mover", None);
    create(&service, "passenger", Some(&id_of(&mover)));
    wait_past(mover["updated_at"].as_str().unwrap());
    let moved = move_group(&service, &id_of(&mover), json!(target)).expect(200);
    assert_eq!(moved["parent_id"], target.as_str());
    assert_eq!(names(&moved["children"]), ["passenger"]);
    assert!(moved["updated_at"].as_str() > mover["updated_at"].as_str());
    assert_eq!(names(&json!(tree(&service))), ["target"]);
}

#[test]
fn move_with_null_or_empty_parent_makes_it_top_level() {
    let service = Service::start("groups-move-top");
    let parent = create_id(&service, "parent", None);
    let child = create_id(&service, "child", Some(&parent));
    let moved = move_group(&service, &child, Value::Null).expect(200);
    assert_eq!(moved["parent_id"], Value::Null);
    move_group(&service, &child, json!(parent)).expect(200);
    let moved = move_group(&service, &child, json!("")).expect(200);
    assert_eq!(moved["parent_id"], Value::Null);
    assert_eq!(tree(&service).len(), 2);
}

#[test]
fn move_to_the_current_parent_is_accepted() {
    let service = Service::start("groups-move-same");
    let parent = create_id(&service, "parent", None);
    let child = create_id(&service, "child", Some(&parent));
    let moved = move_group(&service, &child, json!(parent)).expect(200);
    assert_eq!(moved["parent_id"], json!(parent));
    assert_eq!(moved["name"], "child");
    assert_eq!(tree(&service)[0]["children"][0]["id"], json!(child));
}

#[test]
fn move_under_itself_is_invalid_move() {
    let service = Service::start("groups-move-self");
    let id = create_id(&service, "g", None);
    move_group(&service, &id, json!(id)).assert_error(400, "INVALID_MOVE");
}

#[test]
fn move_under_its_own_child_is_invalid_move_and_changes_nothing() {
    let service = Service::start("groups-move-child");
    let parent = create_id(&service, "parent", None);
    let child = create_id(&service, "child", Some(&parent));
    let before = tree(&service);
    move_group(&service, &parent, json!(child)).assert_error(400, "INVALID_MOVE");
    assert_eq!(tree(&service), before);
}

#[test]
fn move_under_a_descendant_four_levels_down_is_invalid_move() {
    let service = Service::start("groups-move-depth4");
    let mut ids: Vec<String> = Vec::new();
    for level in 1..=5 {
        let parent = ids.last().map(String::as_str);
        ids.push(create_id(&service, &format!("level {level}"), parent));
    }
    let before = tree(&service);
    move_group(&service, &ids[0], json!(ids[4])).assert_error(400, "INVALID_MOVE");
    move_group(&service, &ids[1], json!(ids[4])).assert_error(400, "INVALID_MOVE");
    assert_eq!(tree(&service), before);
    // A move the other way (a descendant up to the top) is fine.
    move_group(&service, &ids[4], Value::Null).expect(200);
}

#[test]
fn move_with_a_name_clash_at_the_destination_is_409() {
    let service = Service::start("groups-move-clash");
    let dest = create_id(&service, "dest", None);
    create(&service, "Web", Some(&dest));
    let web = create_id(&service, "web", None);
    move_group(&service, &web, json!(dest)).assert_error(409, "DUPLICATE_NAME");
    assert_eq!(group(&service, &web)["parent_id"], Value::Null);
}

#[test]
fn move_to_an_unknown_parent_is_404() {
    let service = Service::start("groups-move-unknown-parent");
    let id = create_id(&service, "g", None);
    move_group(&service, &id, json!("6f1c1f7e-8d1e-4a7e-9a53-3a3c1e0b2f10"))
        .assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn move_of_an_unknown_group_is_404() {
    let service = Service::start("groups-move-unknown");
    move_group(&service, "nope", Value::Null).assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn move_without_parent_id_or_with_a_wrong_type_is_rejected() {
    let service = Service::start("groups-move-invalid");
    let id = create_id(&service, "g", None);
    let path = format!("/api/groups/{id}/move");
    assert_invalid(&service.put(&path, &json!({})), "parent_id");
    assert_invalid(&service.put(&path, &json!({ "parent_id": 3 })), "parent_id");
    service
        .request_raw_body("PUT", &path, &[], Some(b"{"))
        .assert_error(400, "INVALID_JSON");
}

// ---- depth -----------------------------------------------------------------------------

#[test]
fn group_at_depth_32_is_accepted_and_at_33_is_rejected() {
    let service = Service::start("groups-depth");
    let mut ids: Vec<String> = Vec::new();
    for level in 1..=32 {
        let parent = ids.last().map(String::as_str);
        ids.push(create_id(&service, &format!("{level}"), parent));
    }
    let response = service.post(
        "/api/groups",
        &json!({ "name": "33", "parent_id": ids[31] }),
    );
    assert_invalid(&response, "parent_id");
    // A second top-level chain of two cannot go below level 31.
    let pair = create_id(&service, "pair", None);
    create(&service, "pair child", Some(&pair));
    move_group(&service, &pair, json!(ids[30])).assert_error(400, "INVALID_MOVE");
    move_group(&service, &pair, json!(ids[29])).expect(200);
}

// ---- delete ----------------------------------------------------------------------------

#[test]
fn delete_answers_204_and_the_group_is_gone() {
    let service = Service::start("groups-delete-204");
    let id = create_id(&service, "g", None);
    service.delete(&format!("/api/groups/{id}")).expect(204);
    service
        .get(&format!("/api/groups/{id}"))
        .assert_error(404, "GROUP_NOT_FOUND");
    service
        .delete(&format!("/api/groups/{id}"))
        .assert_error(404, "GROUP_NOT_FOUND");
    assert!(tree(&service).is_empty());
}

#[test]
fn delete_of_a_middle_group_keeps_every_host_and_group_under_the_right_parent() {
    let name = "groups-delete-middle";
    let service = Service::start(name);
    let root = create_id(&service, "Root", None);
    create(&service, "Web", Some(&root));
    create(&service, "web (2)", Some(&root));
    let middle = create_id(&service, "Middle", Some(&root));
    let clashing = create(&service, "web", Some(&middle));
    let clashing_id = id_of(&clashing);
    let deep = create_id(&service, "deep", Some(&clashing_id));
    let plain = create_id(&service, "db", Some(&middle));
    let namesake = create_id(&service, "middle", Some(&middle));
    let groups_before = count_groups(&tree(&service));
    seed_hosts(
        &service,
        &[
            ("r1", Some(&root)),
            ("m1", Some(&middle)),
            ("m2", Some(&middle)),
            ("w1", Some(&clashing_id)),
            ("d1", Some(&deep)),
            ("u1", None),
        ],
    );
    wait_past(clashing["updated_at"].as_str().unwrap());

    service.delete(&format!("/api/groups/{middle}")).expect(204);

    let top = tree(&service);
    assert_eq!(
        count_groups(&top),
        groups_before - 1,
        "only the deleted group is gone"
    );
    let root_node = find(&top, &root).unwrap();
    assert_eq!(
        names(&root_node["children"]),
        ["db", "middle", "Web", "web (2)", "web (3)"],
        "children moved up; the clashing one renamed to the first free number"
    );
    let renamed = find(&top, &clashing_id).unwrap();
    assert_eq!(renamed["name"], "web (3)");
    assert_eq!(renamed["parent_id"], root.as_str());
    assert!(renamed["updated_at"].as_str() > clashing["updated_at"].as_str());
    assert_eq!(
        names(&renamed["children"]),
        ["deep"],
        "grandchildren stay put"
    );
    for id in [&plain, &namesake] {
        assert_eq!(find(&top, id).unwrap()["parent_id"], root.as_str());
    }
    assert_eq!(counts(&root_node), (3, 5));
    assert_eq!(counts(&renamed), (1, 2));

    let hosts = host_groups(&service);
    assert_eq!(hosts.len(), 6, "no host lost: {hosts:?}");
    for host in ["r1", "m1", "m2"] {
        assert_eq!(hosts[host].as_deref(), Some(root.as_str()), "{host}");
    }
    assert_eq!(hosts["w1"].as_deref(), Some(clashing_id.as_str()));
    assert_eq!(hosts["d1"].as_deref(), Some(deep.as_str()));
    assert_eq!(hosts["u1"], None);
}

#[test]
fn delete_of_a_top_level_group_makes_children_top_level_and_hosts_ungrouped() {
    let name = "groups-delete-top";
    let service = Service::start(name);
    let top = create_id(&service, "Top", None);
    let child = create_id(&service, "child", Some(&top));
    create(&service, "Other", None);
    let clash = create_id(&service, "other", Some(&top));
    seed_hosts(&service, &[("t1", Some(&top)), ("c1", Some(&child))]);

    service.delete(&format!("/api/groups/{top}")).expect(204);

    let forest = tree(&service);
    assert_eq!(names(&json!(forest)), ["child", "Other", "other (2)"]);
    assert_eq!(find(&forest, &clash).unwrap()["parent_id"], Value::Null);
    let hosts = host_groups(&service);
    assert_eq!(
        hosts["t1"], None,
        "hosts of a top-level group become ungrouped"
    );
    assert_eq!(hosts["c1"].as_deref(), Some(child.as_str()));
}
