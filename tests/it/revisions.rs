//! Revisions, `ETag` and `If-Match` (docs/api.md, "Revisions and If-Match"): every host, group and
//! key carries a revision bumped by each edit; writes based on an older one get 412
//! `PRECONDITION_FAILED` and change nothing; of two racing writes exactly one wins.

use std::sync::{Arc, Barrier};
use std::thread;

use serde_json::{json, Value};

use crate::support::{host_body, id_of, Options, Response, Service};

/// A request with an `If-Match` header (and a JSON body when given).
fn with_if_match(
    service: &Service,
    method: &str,
    path: &str,
    if_match: &str,
    body: Option<&Value>,
) -> Response {
    let text = body.map(Value::to_string);
    let mut headers = vec![("If-Match", if_match.to_owned())];
    if text.is_some() {
        headers.push(("Content-Type", "application/json".to_owned()));
    }
    service.request_raw_body(method, path, &headers, text.as_deref().map(str::as_bytes))
}

fn revision(service: &Service, path: &str) -> i64 {
    service.get(path).expect(200)["revision"].as_i64().unwrap()
}

/// Asserts a 412 naming `current` in `details` and the `ETag` header.
#[track_caller]
fn assert_stale(response: &Response, resource: &str, current: i64) {
    let error = response.assert_error(412, "PRECONDITION_FAILED");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.contains(&format!("{resource} is at revision {current}")),
        "{details}"
    );
    assert_eq!(
        response.header("etag"),
        Some(format!("\"{current}\"").as_str())
    );
}

#[test]
fn every_host_group_and_key_answer_carries_its_revision_and_etag() {
    let service = Service::start("revisions-shapes");
    let host = service
        .post("/api/hosts", &host_body("h", "h.example.com", json!({})))
        .expect(201);
    let id = id_of(&host);
    assert_eq!(host["revision"], 1);
    let created = service.post("/api/groups", &json!({"name": "g"}));
    assert_eq!(created.header("etag"), Some("\"1\""));
    assert_eq!(created.json()["revision"], 1);
    let key = service.post("/api/keys", &json!({"name": "k", "type": "ed25519"}));
    assert_eq!(key.header("etag"), Some("\"1\""));
    assert_eq!(key.json()["revision"], 1);

    let get = service.get(&format!("/api/hosts/{id}"));
    assert_eq!(
        (get.header("etag"), get.json()["revision"].as_i64()),
        (Some("\"1\""), Some(1))
    );
    let put = service.put(&format!("/api/hosts/{id}"), &json!({"port": 2222}));
    assert_eq!(
        (put.header("etag"), put.json()["revision"].as_i64()),
        (Some("\"2\""), Some(2))
    );
    let favorite = service.request("PATCH", &format!("/api/hosts/{id}/favorite"), None);
    assert_eq!(favorite.header("etag"), Some("\"3\""));
    assert_eq!(
        favorite.expect(200),
        json!({"id": id, "is_favorite": true, "revision": 3})
    );
    let moved = service.put(&format!("/api/hosts/{id}/move"), &json!({"group_id": null}));
    assert_eq!(
        (moved.header("etag"), moved.json()["revision"].as_i64()),
        (Some("\"4\""), Some(4))
    );
    // Lists carry it in the body; a read changes nothing.
    let list = service.get("/api/hosts").expect(200);
    assert_eq!(list["items"][0]["revision"], 4);
    assert_eq!(
        service.get("/api/groups").expect(200)["items"][0]["revision"],
        1
    );
    assert_eq!(
        service.get("/api/keys").expect(200)["items"][0]["revision"],
        1
    );
    assert_eq!(revision(&service, &format!("/api/hosts/{id}")), 4);
}

#[test]
fn connect_leaves_the_revision_alone() {
    let service = Service::start("revisions-connect");
    let id = service.new_host("h");
    let answer = service
        .request("POST", &format!("/api/hosts/{id}/connect"), None)
        .expect(200);
    assert_eq!(answer["host"]["revision"], 1);
    assert_eq!(revision(&service, &format!("/api/hosts/{id}")), 1);
}

#[test]
fn deleting_a_group_bumps_the_revision_of_each_host_and_child_it_moves() {
    let service = Service::start("revisions-group-delete");
    let parent = service.new_group("parent");
    let child = id_of(
        &service
            .post(
                "/api/groups",
                &json!({"name": "child", "parent_id": parent}),
            )
            .expect(201),
    );
    let host = id_of(
        &service
            .post(
                "/api/hosts",
                &json!({"name": "h", "hostname": "h.example.com", "port": 22, "username": "u",
                    "auth": {"type": "agent"}, "group_id": parent}),
            )
            .expect(201),
    );
    service.delete(&format!("/api/groups/{parent}")).expect(204);
    assert_eq!(revision(&service, &format!("/api/groups/{child}")), 2);
    assert_eq!(revision(&service, &format!("/api/hosts/{host}")), 2);
}

#[test]
fn two_clients_putting_the_same_host_with_if_match_one_wins_and_one_gets_412() {
    let service = Service::start("revisions-lost-update");
    let id = service.new_host("original");
    let path = format!("/api/hosts/{id}");
    // Both clients read the host: the same revision.
    let read_a = service.get(&path);
    let read_b = service.get(&path);
    let etag = read_a.header("etag").unwrap().to_owned();
    assert_eq!(read_b.header("etag"), Some(etag.as_str()));

    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["from-a", "from-b"]
        .into_iter()
        .map(|name| {
            let mut client = service.client();
            let barrier = Arc::clone(&barrier);
            let path = path.clone();
            let etag = etag.clone();
            thread::spawn(move || {
                let body = json!({"name": name, "notes": format!("written by {name}")}).to_string();
                let headers = [
                    ("If-Match", etag),
                    ("Content-Type", "application/json".to_owned()),
                ];
                barrier.wait();
                client.send("PUT", &path, &headers, Some(body.as_bytes()));
                (name, client.read_response())
            })
        })
        .collect();
    let answers: Vec<(&str, Response)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let winners: Vec<&(&str, Response)> = answers
        .iter()
        .filter(|(_, answer)| answer.status == 200)
        .collect();
    let losers: Vec<&(&str, Response)> = answers
        .iter()
        .filter(|(_, answer)| answer.status == 412)
        .collect();
    assert_eq!(
        (winners.len(), losers.len()),
        (1, 1),
        "{:?}",
        answers
            .iter()
            .map(|(_, answer)| answer.text())
            .collect::<Vec<_>>()
    );
    let (winner, won) = winners[0];
    assert_stale(&losers[0].1, "host", 2);
    let stored = service.get(&path).expect(200);
    assert_eq!(stored["name"], *winner);
    assert_eq!(stored["notes"], format!("written by {winner}"));
    assert_eq!(stored["revision"], 2);
    assert_eq!(won.json(), stored);
}

/// Runs a write with `If-Match` of the revision before the current one (412, nothing
/// changes), then of the current one (2xx).
#[track_caller]
fn stale_then_current(
    service: &Service,
    method: &str,
    path: &str,
    read_path: &str,
    resource: &str,
    body: Option<&Value>,
) -> Response {
    let before = service.get(read_path).expect(200);
    let current = before["revision"].as_i64().unwrap();
    let stale = with_if_match(service, method, path, &format!("\"{}\"", current - 1), body);
    assert_stale(&stale, resource, current);
    assert_eq!(
        service.get(read_path).expect(200),
        before,
        "a 412 changes nothing"
    );
    with_if_match(service, method, path, &format!("\"{current}\""), body)
}

#[test]
fn host_writes_with_the_current_revision_pass_and_with_the_one_before_get_412() {
    let service = Service::start("revisions-host-writes");
    let id = service.new_host("h");
    let item = format!("/api/hosts/{id}");
    service.put(&item, &json!({"port": 23})).expect(200);
    let put = stale_then_current(
        &service,
        "PUT",
        &item,
        &item,
        "host",
        Some(&json!({"port": 24})),
    );
    assert_eq!(put.expect(200)["port"], 24);
    let favorite = format!("{item}/favorite");
    let toggled = stale_then_current(&service, "PATCH", &favorite, &item, "host", None);
    assert_eq!(toggled.expect(200)["is_favorite"], true);
    let moved = stale_then_current(
        &service,
        "PUT",
        &format!("{item}/move"),
        &item,
        "host",
        Some(&json!({"group_id": null})),
    );
    assert_eq!(moved.expect(200)["revision"], 5);
    stale_then_current(&service, "DELETE", &item, &item, "host", None).expect(204);
    service.get(&item).assert_error(404, "HOST_NOT_FOUND");
}

#[test]
fn group_writes_with_the_current_revision_pass_and_with_the_one_before_get_412() {
    let service = Service::start("revisions-group-writes");
    let id = service.new_group("g");
    let item = format!("/api/groups/{id}");
    service.put(&item, &json!({"color": "#112233"})).expect(200);
    let put = stale_then_current(
        &service,
        "PUT",
        &item,
        &item,
        "group",
        Some(&json!({"name": "n"})),
    );
    assert_eq!(put.expect(200)["name"], "n");
    let moved = stale_then_current(
        &service,
        "PUT",
        &format!("{item}/move"),
        &item,
        "group",
        Some(&json!({"parent_id": null})),
    );
    assert_eq!(moved.expect(200)["revision"], 4);
    stale_then_current(&service, "DELETE", &item, &item, "group", None).expect(204);
    service.get(&item).assert_error(404, "GROUP_NOT_FOUND");
}

#[test]
fn key_writes_with_the_current_revision_pass_and_with_the_one_before_get_412() {
    let service = Service::start("revisions-key-writes");
    let id = service.new_key("k");
    let item = format!("/api/keys/{id}");
    service.put(&item, &json!({"comment": "one"})).expect(200);
    let put = stale_then_current(
        &service,
        "PUT",
        &item,
        &item,
        "key",
        Some(&json!({"comment": "two"})),
    );
    assert_eq!(put.expect(200)["comment"], "two");
    stale_then_current(&service, "DELETE", &item, &item, "key", None).expect(204);
    service.get(&item).assert_error(404, "KEY_NOT_FOUND");
}

#[test]
fn a_body_revision_works_like_if_match() {
    let service = Service::start("revisions-body");
    let host = service.new_host("h");
    let group = service.new_group("g");
    let key = service.new_key("k");
    for (path, resource, body) in [
        (format!("/api/hosts/{host}"), "host", json!({"port": 2})),
        (
            format!("/api/groups/{group}"),
            "group",
            json!({"icon": "x"}),
        ),
        (format!("/api/keys/{key}"), "key", json!({"comment": "c"})),
    ] {
        let mut stale = body.clone();
        stale["revision"] = json!(2);
        assert_stale(&service.put(&path, &stale), resource, 1);
        let mut current = body.clone();
        current["revision"] = json!(1);
        assert_eq!(service.put(&path, &current).expect(200)["revision"], 2);
        // A client may send back the object it read: its revision is the condition.
        let read = service.get(&path).expect(200);
        assert_eq!(service.put(&path, &read).expect(200)["revision"], 3);
        assert_stale(&service.put(&path, &read), resource, 3);
    }
    let moved = service.put(
        &format!("/api/hosts/{host}/move"),
        &json!({"group_id": group, "revision": 1}),
    );
    assert_stale(&moved, "host", 3);
}

#[test]
fn a_body_revision_of_1_is_accepted_and_0_or_not_an_integer_is_400() {
    let service = Service::start("revisions-body-edges");
    let host = service.new_host("h");
    let path = format!("/api/hosts/{host}");
    for bad in [json!(0), json!(-1), json!(1.5), json!("1"), json!(true)] {
        let error = service
            .put(&path, &json!({"port": 2, "revision": bad}))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with("revision: "),
            "{error}"
        );
    }
    service
        .put(&path, &json!({"port": 2, "revision": null}))
        .expect(200);
    service
        .put(&path, &json!({"port": 3, "revision": 2}))
        .expect(200);
}

#[test]
fn writes_without_a_precondition_behave_as_before() {
    let service = Service::start("revisions-none");
    let host = service.new_host("h");
    let path = format!("/api/hosts/{host}");
    for port in [2, 3, 4] {
        service.put(&path, &json!({"port": port})).expect(200);
    }
    assert_eq!(revision(&service, &path), 4);
    service.delete(&path).expect(204);
}

#[test]
fn if_match_star_a_list_or_a_weak_tag_are_read_as_rfc_9110_says() {
    let service = Service::start("revisions-if-match-forms");
    let host = service.new_host("h");
    let path = format!("/api/hosts/{host}");
    let put = |if_match: &str| {
        with_if_match(
            &service,
            "PUT",
            &path,
            if_match,
            Some(&json!({"notes": if_match})),
        )
    };
    assert_eq!(put("*").status, 200);
    assert_eq!(put("\"1\", \"2\", \"9\"").status, 200);
    assert_stale(&put("W/\"3\""), "host", 3);
    assert_stale(&put("\"abc\""), "host", 3);
    for malformed in ["3", "\"3", "*, \"3\"", ""] {
        let error = put(malformed).assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with("If-Match: "),
            "{malformed:?}: {error}"
        );
    }
    assert_eq!(revision(&service, &path), 3);
}

#[test]
fn an_unknown_host_is_404_before_its_precondition_and_a_stale_one_412_before_the_body() {
    let service = Service::start("revisions-order");
    let unknown = "/api/hosts/dddddddd-0000-4000-8000-000000000004";
    with_if_match(&service, "PUT", unknown, "\"1\"", Some(&json!({"port": 0})))
        .assert_error(404, "HOST_NOT_FOUND");
    with_if_match(&service, "DELETE", unknown, "\"1\"", None).assert_error(404, "HOST_NOT_FOUND");
    let host = service.new_host("h");
    let path = format!("/api/hosts/{host}");
    let stale = with_if_match(&service, "PUT", &path, "\"7\"", Some(&json!({"port": 0})));
    assert_stale(&stale, "host", 1);
    with_if_match(&service, "PUT", &path, "\"1\"", Some(&json!({"port": 0})))
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
fn pages_of_an_allowed_origin_may_send_if_match_and_read_the_etag() {
    let origin = "http://app.example";
    let service = Service::start_with(
        "revisions-cors",
        Options {
            args: vec!["--allow-origin".into(), origin.into()],
            ..Options::default()
        },
    );
    let preflight = service.request_raw_body(
        "OPTIONS",
        "/api/hosts/x",
        &[
            ("Origin", origin.to_owned()),
            ("Access-Control-Request-Method", "PUT".to_owned()),
            ("Access-Control-Request-Headers", "if-match".to_owned()),
        ],
        None,
    );
    let allowed = preflight.header("access-control-allow-headers").unwrap();
    assert!(allowed.contains("If-Match"), "{allowed}");
    let get = service.request_raw_body("GET", "/api/hosts", &[("Origin", origin.to_owned())], None);
    assert_eq!(get.header("access-control-expose-headers"), Some("ETag"));
}
