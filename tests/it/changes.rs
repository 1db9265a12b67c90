//! `GET /api/changes` (docs/api.md, "Change feed"): a waiting client receives every change another
//! client makes, in order; `seq` survives a restart; a reader behind the trim is reset; the
//! vault's lock reaches waiting readers before the 401s; waiting requests end at shutdown.
//!
//! No test asserts a wall time: a waiting request that was answered by a write, not by its
//! timeout, is told apart by its body (a timeout answers `items: []`).

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{
    field_names, fresh_dir, id_of, wait_until, Client, Options, Service, EVENT_DEADLINE,
};

/// What a waiting reader asks for: long enough that a timeout is never mistaken for a
/// write's answer, shorter than the harness's socket timeout (`IO_TIMEOUT`).
const WAIT: &str = "15";

/// How long the test waits for the reader to report an entry. Generous: the reader is woken
/// within milliseconds.
const REPORT_DEADLINE: Duration = Duration::from_secs(60);

/// How many times a feed request started to wait (a debug line each; tests run with
/// `RUST_LOG=debug`). Polled before acting on a waiting request.
fn waits_begun(service: &Service) -> usize {
    service
        .stderr()
        .matches("change feed: a request waits for the next change")
        .count()
}

/// Polls until `count` feed requests have begun to wait.
#[track_caller]
fn await_waits(service: &Service, count: usize) {
    assert!(
        wait_until(REPORT_DEADLINE, || waits_begun(service) >= count),
        "no feed request waits"
    );
}

fn feed(service: &Service, query: &str) -> Value {
    service.get(&format!("/api/changes?{query}")).expect(200)
}

/// The newest `seq` now (a request without `since`).
fn newest(service: &Service) -> i64 {
    let page = service.get("/api/changes").expect(200);
    assert_eq!(page["items"], json!([]), "{page}");
    page["next"].as_i64().unwrap()
}

/// `(kind, id, op)` of every item of a page.
fn entries(page: &Value) -> Vec<(String, String, String)> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let text = |field: &str| item[field].as_str().unwrap().to_owned();
            (text("kind"), text("id"), text("op"))
        })
        .collect()
}

fn entry(kind: &str, id: &str, op: &str) -> (String, String, String) {
    (kind.to_owned(), id.to_owned(), op.to_owned())
}

/// A reader on its own keep-alive connection that follows the feed from `since` with long
/// waits, sends every non-empty page's items to `pages`, and stops after `wanted` items.
/// Returns every page it received, empty ones included.
fn follow(addr: String, since: i64, wanted: usize, pages: mpsc::Sender<Value>) -> Vec<Value> {
    let mut client = Client::connect(&addr);
    let mut since = since;
    let mut received = Vec::new();
    let mut items = 0;
    while items < wanted {
        let response = client.request(
            "GET",
            &format!("/api/changes?since={since}&wait={WAIT}"),
            None,
        );
        let page = response.expect(200);
        since = page["next"].as_i64().unwrap();
        items += page["items"].as_array().unwrap().len();
        received.push(page.clone());
        if pages.send(page).is_err() {
            break;
        }
    }
    received
}

#[test]
fn a_waiting_client_receives_every_change_of_hosts_groups_and_keys_in_order() {
    let service = Service::start("changes-follow");
    let start = newest(&service);
    let (pages_tx, pages) = mpsc::channel();
    const WRITES: usize = 13;
    let reader = {
        let addr = service.addr();
        thread::spawn(move || follow(addr, start, WRITES, pages_tx))
    };
    let mut expected = Vec::new();
    let mut seen = Vec::new();
    // One write at a time: the next starts once the reader reported this one, so nearly
    // every write finds the reader waiting and has to wake it.
    let mut step = |expected_entry: (String, String, String)| {
        expected.push(expected_entry);
        while seen.len() < expected.len() {
            let page = pages
                .recv_timeout(REPORT_DEADLINE)
                .expect("the reader reports the change");
            seen.extend(entries(&page));
        }
    };

    let parent = service.new_group("parent");
    step(entry("group", &parent, "created"));
    let child = service.new_group("child");
    step(entry("group", &child, "created"));
    service
        .put(
            &format!("/api/groups/{parent}"),
            &json!({"name": "renamed"}),
        )
        .expect(200);
    step(entry("group", &parent, "updated"));
    service
        .put(
            &format!("/api/groups/{child}/move"),
            &json!({"parent_id": parent}),
        )
        .expect(200);
    step(entry("group", &child, "updated"));
    let key = id_of(
        &service
            .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
            .expect(201),
    );
    step(entry("key", &key, "created"));
    service
        .put(&format!("/api/keys/{key}"), &json!({"comment": "c"}))
        .expect(200);
    step(entry("key", &key, "updated"));
    let host = id_of(
        &service
            .post(
                "/api/hosts",
                &json!({"name": "h", "hostname": "h.example.com", "port": 22, "username": "u",
                    "auth": {"type": "key", "key_id": key}, "group_id": parent}),
            )
            .expect(201),
    );
    step(entry("host", &host, "created"));
    service
        .put(&format!("/api/hosts/{host}"), &json!({"port": 2222}))
        .expect(200);
    step(entry("host", &host, "updated"));
    service
        .put(
            &format!("/api/hosts/{host}/move"),
            &json!({"group_id": child}),
        )
        .expect(200);
    step(entry("host", &host, "updated"));
    service.delete(&format!("/api/hosts/{host}")).expect(204);
    step(entry("host", &host, "deleted"));
    service.delete(&format!("/api/keys/{key}")).expect(204);
    step(entry("key", &key, "deleted"));
    service.delete(&format!("/api/groups/{child}")).expect(204);
    step(entry("group", &child, "deleted"));
    service.delete(&format!("/api/groups/{parent}")).expect(204);
    step(entry("group", &parent, "deleted"));

    let received = reader.join().unwrap();
    assert_eq!(seen, expected);
    // Every page the reader got was a write's answer, none its wait running out.
    for page in &received {
        assert_ne!(page["items"], json!([]), "a wait ran out: {received:?}");
        assert_eq!(page["reset"], false);
    }
    let items: Vec<&Value> = received
        .iter()
        .flat_map(|page| page["items"].as_array().unwrap())
        .collect();
    let seqs: Vec<i64> = items
        .iter()
        .map(|item| item["seq"].as_i64().unwrap())
        .collect();
    let consecutive: Vec<i64> = (start + 1..=start + WRITES as i64).collect();
    assert_eq!(seqs, consecutive, "one entry per write, in commit order");
    for item in items {
        assert_eq!(
            field_names(item),
            ["at", "id", "kind", "op", "seq"],
            "{item}"
        );
        let at = item["at"].as_str().unwrap();
        assert_eq!(at.len(), "2026-01-01T00:00:00.000Z".len(), "{at}");
        assert!(at.ends_with('Z'), "{at}");
    }
}

#[test]
fn a_request_without_since_starts_at_the_newest_entry() {
    let service = Service::start("changes-no-since");
    assert_eq!(newest(&service), 0);
    let group = service.new_group("g");
    assert_eq!(newest(&service), 1);
    let all = feed(&service, "since=0");
    assert_eq!(entries(&all), [entry("group", &group, "created")]);
    assert_eq!(
        (all["next"].as_i64(), &all["reset"]),
        (Some(1), &json!(false))
    );
}

#[test]
fn a_page_holds_limit_entries_and_next_continues_it() {
    let service = Service::start("changes-limit");
    for name in ["a", "b", "c"] {
        service.new_group(name);
    }
    let first = feed(&service, "since=0&limit=2");
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["next"], 2);
    let rest = feed(&service, "since=2&limit=1000");
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert_eq!(rest["items"][0]["seq"], 3);
    // Above 1,000 is clamped, not refused.
    let clamped = feed(&service, "since=0&limit=1001");
    assert_eq!(clamped["items"].as_array().unwrap().len(), 3);
}

#[test]
fn feed_parameters_that_are_not_plain_digits_or_a_zero_limit_are_400() {
    let service = Service::start("changes-params");
    for query in [
        "since=-1",
        "since=x",
        "wait=1.5",
        "wait=-1",
        "limit=0",
        "limit=",
        "since=1&since=2",
    ] {
        let error = service
            .get(&format!("/api/changes?{query}"))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"]
                .as_str()
                .unwrap()
                .contains("query parameter"),
            "{query}: {error}"
        );
    }
    feed(&service, "since=0&wait=0&limit=1");
}

#[test]
fn a_wait_of_30_and_of_31_seconds_are_both_accepted_and_run_out_with_nothing_new() {
    // The wait is capped at 50 ms here (a test-only override), so both run out at once.
    let service = Service::start_env(
        "changes-wait",
        &[("HOST_MANAGER_TEST_FEED_MAX_WAIT_MS", "50")],
    );
    service.new_group("g");
    for wait in ["30", "31"] {
        let page = feed(&service, &format!("since=1&wait={wait}"));
        assert_eq!(
            page,
            json!({"items": [], "next": 1, "reset": false}),
            "wait={wait}"
        );
    }
}

#[test]
fn seq_keeps_growing_across_a_restart_and_a_cursor_from_before_reads_on() {
    let data_dir = fresh_dir("changes-restart").join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut first = Service::start_with("changes-restart-1", options());
    let before = first.new_group("before");
    let cursor = newest(&first);
    assert_eq!(
        entries(&feed(&first, "since=0")),
        [entry("group", &before, "created")]
    );
    let status = first.terminate(EVENT_DEADLINE).expect("stops");
    assert!(status.success(), "{status:?}");

    let second = Service::start_with("changes-restart-2", options());
    assert_eq!(newest(&second), cursor);
    let after = second.new_group("after");
    let page = feed(&second, &format!("since={cursor}"));
    assert_eq!(entries(&page), [entry("group", &after, "created")]);
    assert_eq!(page["reset"], false);
    assert!(page["items"][0]["seq"].as_i64().unwrap() > cursor);
}

#[test]
fn seq_is_never_given_twice_even_after_its_entry_was_trimmed() {
    let service = Service::start_env(
        "changes-no-reuse",
        &[("HOST_MANAGER_TEST_CHANGES_KEPT", "1")],
    );
    for name in ["a", "b", "c"] {
        service.new_group(name);
    }
    // Only the newest entry is kept; the next one still gets the next number.
    let cursor = newest(&service);
    assert_eq!(cursor, 3);
    service.new_group("d");
    let page = feed(&service, "since=3");
    assert_eq!(page["items"][0]["seq"], 4);
}

#[test]
fn a_reader_behind_the_trim_is_reset_and_one_at_the_trim_reads_on() {
    let service = Service::start_env("changes-trim", &[("HOST_MANAGER_TEST_CHANGES_KEPT", "3")]);
    let groups: Vec<String> = (0..5)
        .map(|n| service.new_group(&format!("g{n}")))
        .collect();
    // Entries 1 and 2 were trimmed; 3, 4 and 5 are kept.
    let at_trim = feed(&service, "since=2");
    assert_eq!(at_trim["reset"], false);
    let expected: Vec<_> = groups[2..]
        .iter()
        .map(|id| entry("group", id, "created"))
        .collect();
    assert_eq!(entries(&at_trim), expected);
    for behind in ["since=1", "since=0", "since=1&wait=30"] {
        let page = feed(&service, behind);
        assert_eq!(
            page,
            json!({"items": [], "next": 5, "reset": true}),
            "{behind}"
        );
    }
}

#[test]
fn a_cursor_at_the_newest_seq_is_followed_and_one_past_it_is_reset() {
    let service = Service::start("changes-future");
    service.new_group("g");
    assert_eq!(
        feed(&service, "since=1"),
        json!({"items": [], "next": 1, "reset": false})
    );
    assert_eq!(
        feed(&service, "since=2"),
        json!({"items": [], "next": 1, "reset": true})
    );
}

#[test]
fn deleting_a_group_logs_the_group_and_every_host_and_child_it_moves_up() {
    let service = Service::start("changes-group-delete");
    let parent = service.new_group("parent");
    let child = service
        .post(
            "/api/groups",
            &json!({"name": "child", "parent_id": parent}),
        )
        .expect(201);
    let host = service
        .post(
            "/api/hosts",
            &json!({"name": "h", "hostname": "h.example.com", "port": 22, "username": "u",
                "auth": {"type": "agent"}, "group_id": parent}),
        )
        .expect(201);
    let cursor = newest(&service);
    service.delete(&format!("/api/groups/{parent}")).expect(204);
    let mut logged = entries(&feed(&service, &format!("since={cursor}")));
    logged.sort();
    let mut expected = vec![
        entry("group", &parent, "deleted"),
        entry("group", &id_of(&child), "updated"),
        entry("host", &id_of(&host), "updated"),
    ];
    expected.sort();
    assert_eq!(logged, expected);
}

#[test]
fn an_import_logs_each_host_it_creates() {
    let service = Service::start("changes-import");
    let cursor = newest(&service);
    let config = "Host one\n  HostName 192.0.2.1\nHost two\n  HostName 192.0.2.2\n";
    let answer = service
        .post("/api/import/ssh-config", &json!({"config": config}))
        .expect(200);
    let created: Vec<String> = answer["created"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(created.len(), 2);
    let logged = entries(&feed(&service, &format!("since={cursor}")));
    let expected: Vec<_> = created
        .iter()
        .map(|id| entry("host", id, "created"))
        .collect();
    assert_eq!(logged, expected);
    // A dry run logs nothing: it rolls back.
    let dry = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": "Host three\n  HostName 192.0.2.3\n", "dry_run": true}),
        )
        .expect(200);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(newest(&service), cursor + 2);
}

#[test]
fn known_hosts_entries_are_logged_when_added_and_deleted() {
    let service = Service::start("changes-known-hosts");
    let key = service
        .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
        .expect(201);
    let public_key = key["public_key"].as_str().unwrap();
    let cursor = newest(&service);
    service
        .post(
            "/api/import/known-hosts",
            &json!({"text": format!("server.example.com {public_key}\n")}),
        )
        .expect(200);
    let list = service.get("/api/known-hosts").expect(200);
    let id = id_of(&list["items"][0]);
    service
        .delete(&format!("/api/known-hosts/{id}"))
        .expect(204);
    assert_eq!(
        entries(&feed(&service, &format!("since={cursor}"))),
        [
            entry("known_host", &id, "created"),
            entry("known_host", &id, "deleted")
        ]
    );
}

#[test]
fn a_connect_is_a_history_entry_of_its_host() {
    let service = Service::start("changes-connect");
    let host = service.new_host("h");
    let cursor = newest(&service);
    service
        .request("POST", &format!("/api/hosts/{host}/connect"), None)
        .expect(200);
    assert_eq!(
        entries(&feed(&service, &format!("since={cursor}"))),
        [entry("history", &host, "created")]
    );
}

#[test]
fn entries_carry_no_field_value() {
    let service = Service::start("changes-no-values");
    let marker = "feed-secret-marker-7f3a";
    let body = json!({"name": format!("name-{marker}"), "hostname": "h.example.com", "port": 22,
        "username": format!("user-{marker}"), "notes": marker,
        "auth": {"type": "password", "password": marker}});
    let host = id_of(&service.post("/api/hosts", &body).expect(201));
    service
        .put(
            &format!("/api/hosts/{host}"),
            &json!({"notes": format!("again {marker}")}),
        )
        .expect(200);
    let page = service.get("/api/changes?since=0");
    assert!(!page.text().contains(marker), "{}", page.text());
    assert_eq!(
        entries(&page.json()),
        [
            entry("host", &host, "created"),
            entry("host", &host, "updated")
        ]
    );
}

#[test]
fn a_waiting_reader_gets_the_lock_entry_then_401_until_an_unlock_it_then_reads() {
    let service = Service::start("changes-lock");
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    let cursor = newest(&service);
    assert_eq!(
        entries(&feed(&service, &format!("since={}", cursor - 1))),
        [entry("vault", "vault", "updated")]
    );
    let (pages_tx, pages) = mpsc::channel();
    let reader = {
        let addr = service.addr();
        thread::spawn(move || follow(addr, cursor, 1, pages_tx))
    };
    await_waits(&service, 1);
    service.post("/api/vault/lock", &json!({})).expect(200);
    let page = pages.recv_timeout(REPORT_DEADLINE).expect("the lock entry");
    reader.join().unwrap();
    assert_eq!(entries(&page), [entry("vault", "vault", "locked")]);
    let lock_seq = page["next"].as_i64().unwrap();
    service
        .get(&format!("/api/changes?since={lock_seq}"))
        .assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/vault/unlock", &json!({"password": "pw"}))
        .expect(200);
    let host = service.new_host("after the unlock");
    assert_eq!(
        entries(&feed(&service, &format!("since={lock_seq}"))),
        [
            entry("vault", "vault", "unlocked"),
            entry("host", &host, "created")
        ]
    );
}

#[test]
fn a_page_ends_at_a_lock_entry_even_when_more_follow() {
    let service = Service::start("changes-lock-page");
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    let cursor = newest(&service);
    service.post("/api/vault/lock", &json!({})).expect(200);
    service
        .post("/api/vault/unlock", &json!({"password": "pw"}))
        .expect(200);
    let page = feed(&service, &format!("since={cursor}"));
    assert_eq!(entries(&page), [entry("vault", "vault", "locked")]);
    assert_eq!(page["next"], cursor + 1);
    let rest = feed(&service, &format!("since={}", cursor + 1));
    assert_eq!(entries(&rest), [entry("vault", "vault", "unlocked")]);
}

#[test]
fn polling_the_feed_does_not_keep_the_vault_open() {
    let service = Service::start_args("changes-auto-lock-polls", &["--auto-lock", "1"]);
    let cursor = newest(&service);
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    // Polls every 20 ms, far more often than the 1 s auto-lock: were they activity, the
    // vault would never lock. Once it is locked, the vault gate answers them 401.
    let path = format!("/api/changes?since={cursor}");
    let locked = wait_until(REPORT_DEADLINE, || service.get(&path).status == 401);
    assert!(locked, "the vault never locked");
    service.get(&path).assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/vault/unlock", &json!({"password": "pw"}))
        .expect(200);
    // The page ends at the lock; the unlock follows it.
    let page = feed(&service, &format!("since={cursor}"));
    assert_eq!(
        entries(&page),
        [
            entry("vault", "vault", "updated"),
            entry("vault", "vault", "locked")
        ]
    );
    let next = page["next"].as_i64().unwrap();
    assert_eq!(
        entries(&feed(&service, &format!("since={next}"))),
        [entry("vault", "vault", "unlocked")]
    );
}

#[test]
fn a_reader_waiting_when_the_vault_locks_itself_gets_the_lock_entry() {
    let service = Service::start_args("changes-auto-lock", &["--auto-lock", "2"]);
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    let cursor = newest(&service);
    let (pages_tx, pages) = mpsc::channel();
    let reader = {
        let addr = service.addr();
        thread::spawn(move || follow(addr, cursor, 1, pages_tx))
    };
    let page = pages
        .recv_timeout(REPORT_DEADLINE)
        .expect("the auto-lock entry");
    let received = reader.join().unwrap();
    assert_eq!(entries(&page), [entry("vault", "vault", "locked")]);
    assert_eq!(
        received.len(),
        1,
        "the first wait ended with the lock: {received:?}"
    );
    service
        .get(&format!("/api/changes?since={}", cursor + 1))
        .assert_error(401, "VAULT_LOCKED");
}

#[test]
fn a_request_waiting_on_the_feed_is_answered_at_shutdown() {
    let mut service = Service::start("changes-shutdown");
    let cursor = newest(&service);
    let mut client = service.client();
    client.send(
        "GET",
        &format!("/api/changes?since={cursor}&wait={WAIT}"),
        &[],
        None,
    );
    let waiting = thread::spawn(move || client.read_response());
    await_waits(&service, 1);
    let status = service.terminate(Duration::from_secs(20)).expect("stops");
    assert!(status.success(), "{status:?}");
    let response = waiting.join().unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        json!({"items": [], "next": cursor, "reset": false})
    );
}

/// docs/api.md "Change feed": at most the waiter cap of requests wait at once; one more that
/// would wait is 503 `BUSY` with `Retry-After` at once, and the waiting one still gets the
/// next change.
#[test]
fn past_the_waiter_cap_a_long_poll_is_503_busy_with_retry_after_and_the_waiter_still_gets_its_change(
) {
    let service = Service::start_env(
        "changes-waiter-cap",
        &[("HOST_MANAGER_TEST_FEED_MAX_WAITERS", "1")],
    );
    let since = newest(&service);
    let waiter = {
        let addr = service.addr();
        thread::spawn(move || {
            Client::connect(&addr)
                .request(
                    "GET",
                    &format!("/api/changes?since={since}&wait={WAIT}"),
                    None,
                )
                .expect(200)
        })
    };
    await_waits(&service, 1);
    let refused = service.get(&format!("/api/changes?since={since}&wait={WAIT}"));
    refused.assert_error(503, "BUSY");
    assert_eq!(refused.header("Retry-After"), Some("1"));
    // Without a wait nothing is held: answered as always.
    feed(&service, &format!("since={since}"));
    let group = service.new_group("woken");
    let page = waiter.join().unwrap();
    assert_eq!(entries(&page), vec![entry("group", &group, "created")]);
}
