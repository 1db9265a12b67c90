//! The connection history (docs/api.md, "Connection history"): each `connect` is an entry, read
//! newest first per host and across hosts, in pages; bounded; gone with its host; never a
//! credential.

use serde_json::{json, Value};

use crate::support::Service;

fn new_host(service: &Service, name: &str, password: &str) -> String {
    let body = json!({"name": name, "hostname": format!("{name}.example.com"), "port": 2222,
        "username": "ops", "auth": {"type": "password", "password": password}});
    service.post("/api/hosts", &body).expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Connects to `host`; returns the `last_used_at` it set.
fn connect(service: &Service, host: &str) -> String {
    let answer = service
        .request("POST", &format!("/api/hosts/{host}/connect"), None)
        .expect(200);
    answer["host"]["last_used_at"].as_str().unwrap().to_owned()
}

fn names(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_connect_is_an_entry_of_where_the_host_pointed_then() {
    let service = Service::start("history-entry");
    let host = new_host(&service, "web", "pw");
    let connected_at = connect(&service, &host);
    service
        .put(
            &format!("/api/hosts/{host}"),
            &json!({"name": "renamed", "port": 22}),
        )
        .expect(200);
    let page = service
        .get(&format!("/api/hosts/{host}/history"))
        .expect(200);
    let item = &page["items"][0];
    let seq = item["seq"].as_i64().unwrap();
    assert_eq!(
        page,
        json!({"items": [{"seq": seq, "host_id": host, "name": "web",
            "hostname": "web.example.com", "port": 2222, "username": "ops",
            "auth_type": "password", "connected_at": connected_at}],
            "next_before": null})
    );
}

#[test]
fn history_is_newest_first_per_host_and_across_hosts() {
    let service = Service::start("history-order");
    let a = new_host(&service, "a", "pw");
    let b = new_host(&service, "b", "pw");
    for host in [&a, &b, &a] {
        connect(&service, host);
    }
    assert_eq!(
        names(&service.get("/api/history").expect(200)),
        ["a", "b", "a"]
    );
    let of_a = service.get(&format!("/api/hosts/{a}/history")).expect(200);
    assert_eq!(names(&of_a), ["a", "a"]);
    let seqs: Vec<i64> = of_a["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs[0] > seqs[1], "{seqs:?}");
}

#[test]
fn pages_follow_next_before_to_the_last_one() {
    let service = Service::start("history-pages");
    let host = new_host(&service, "h", "pw");
    let stamps: Vec<String> = (0..5).map(|_| connect(&service, &host)).collect();
    let mut seen = Vec::new();
    let mut path = "/api/history?limit=2".to_owned();
    loop {
        let page = service.get(&path).expect(200);
        for item in page["items"].as_array().unwrap() {
            seen.push(item["connected_at"].as_str().unwrap().to_owned());
        }
        match page["next_before"].as_i64() {
            Some(before) => path = format!("/api/history?limit=2&before={before}"),
            None => break,
        }
    }
    let newest_first: Vec<String> = stamps.into_iter().rev().collect();
    assert_eq!(seen, newest_first);
}

#[test]
fn history_limit_of_1_is_accepted_and_0_or_a_bad_before_is_400() {
    let service = Service::start("history-params");
    let host = new_host(&service, "h", "pw");
    connect(&service, &host);
    connect(&service, &host);
    let one = service.get("/api/history?limit=1").expect(200);
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    assert!(one["next_before"].is_i64());
    let clamped = service.get("/api/history?limit=1001").expect(200);
    assert_eq!(clamped["items"].as_array().unwrap().len(), 2);
    for query in ["limit=0", "limit=x", "before=0", "before=-3", "before=1.5"] {
        service
            .get(&format!("/api/history?{query}"))
            .assert_error(400, "VALIDATION_ERROR");
        service
            .get(&format!("/api/hosts/{host}/history?{query}"))
            .assert_error(400, "VALIDATION_ERROR");
    }
    let before_the_first = service.get("/api/history?before=1").expect(200);
    assert_eq!(before_the_first, json!({"items": [], "next_before": null}));
}

#[test]
fn history_of_an_unknown_host_is_404() {
    let service = Service::start("history-unknown");
    service
        .get("/api/hosts/dddddddd-0000-4000-8000-000000000004/history")
        .assert_error(404, "HOST_NOT_FOUND");
    service
        .get("/api/hosts/not-a-uuid/history")
        .assert_error(404, "HOST_NOT_FOUND");
}

#[test]
fn deleting_a_host_deletes_its_history() {
    let service = Service::start("history-delete");
    let gone = new_host(&service, "gone", "pw");
    let kept = new_host(&service, "kept", "pw");
    connect(&service, &gone);
    connect(&service, &kept);
    service.delete(&format!("/api/hosts/{gone}")).expect(204);
    assert_eq!(names(&service.get("/api/history").expect(200)), ["kept"]);
}

#[test]
fn history_at_its_bound_keeps_every_entry_and_one_more_drops_the_oldest() {
    let service = Service::start_env("history-bound", &[("HOST_MANAGER_TEST_HISTORY_KEPT", "3")]);
    let hosts: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|name| new_host(&service, name, "pw"))
        .collect();
    for host in &hosts[..3] {
        connect(&service, host);
    }
    assert_eq!(
        names(&service.get("/api/history").expect(200)),
        ["c", "b", "a"]
    );
    connect(&service, &hosts[3]);
    assert_eq!(
        names(&service.get("/api/history").expect(200)),
        ["d", "c", "b"]
    );
}

#[test]
fn history_never_carries_a_password() {
    let service = Service::start("history-no-secret");
    let marker = "history-secret-marker-91c2";
    let host = new_host(&service, "h", marker);
    connect(&service, &host);
    for path in [
        "/api/history".to_owned(),
        format!("/api/hosts/{host}/history"),
    ] {
        let page = service.get(&path);
        assert_eq!(page.status, 200);
        assert!(!page.text().contains(marker), "{}", page.text());
        assert_eq!(names(&page.json()), ["h"]);
    }
}

#[test]
fn history_needs_the_vault_unlocked() {
    let service = Service::start("history-locked");
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    service
        .get("/api/history")
        .assert_error(401, "VAULT_LOCKED");
}
