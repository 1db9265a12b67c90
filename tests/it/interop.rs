//! OpenSSH interop (issue #11): ProxyJump chains and kept directives on hosts, import of
//! an `~/.ssh/config`, export judged by OpenSSH's own `ssh -G`, and a real login to a
//! throwaway `sshd` with a key the service generated.

use serde_json::{json, Value};

use crate::support::Service;

/// A valid create body named `name`; `extra` fields are merged in (and may override).
fn host(name: &str, extra: Value) -> Value {
    let mut body = json!({
        "name": name,
        "hostname": format!("{}.example.com", name.to_lowercase()),
        "port": 22,
        "username": "root",
        "auth": {"type": "agent"}
    });
    for (key, value) in extra.as_object().expect("extra is an object") {
        body[key] = value.clone();
    }
    body
}

fn create(service: &Service, name: &str, extra: Value) -> String {
    let created = service.post("/api/hosts", &host(name, extra)).expect(201);
    created["id"].as_str().expect("id").to_owned()
}

#[test]
fn host_responses_always_carry_jump_host_ids_and_ssh_options() {
    let service = Service::start("interop-defaults");
    let id = create(&service, "Plain", json!({}));
    let got = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(got["jump_host_ids"], json!([]));
    assert_eq!(got["ssh_options"], json!([]));
    let list = service.get("/api/hosts").expect(200);
    assert_eq!(list["items"][0]["jump_host_ids"], json!([]));
}

#[test]
fn jump_chain_is_stored_in_order_and_listed() {
    let service = Service::start("interop-chain-order");
    let a = create(&service, "A", json!({}));
    let b = create(&service, "B", json!({}));
    let c = create(&service, "C", json!({"jump_host_ids": [b, a]}));
    let got = service.get(&format!("/api/hosts/{c}")).expect(200);
    assert_eq!(got["jump_host_ids"], json!([b, a]));
    let list = service.get("/api/hosts?search=c.example").expect(200);
    assert_eq!(list["items"][0]["jump_host_ids"], json!([b, a]));
}

#[test]
fn put_without_jump_host_ids_keeps_the_chain_and_empty_or_null_clears_it() {
    let service = Service::start("interop-chain-put");
    let a = create(&service, "A", json!({}));
    let c = create(&service, "C", json!({"jump_host_ids": [a]}));
    let path = format!("/api/hosts/{c}");
    let kept = service.put(&path, &json!({"notes": "n"})).expect(200);
    assert_eq!(kept["jump_host_ids"], json!([a]));
    let cleared = service
        .put(&path, &json!({"jump_host_ids": []}))
        .expect(200);
    assert_eq!(cleared["jump_host_ids"], json!([]));
    service
        .put(&path, &json!({"jump_host_ids": [a]}))
        .expect(200);
    let nulled = service
        .put(&path, &json!({"jump_host_ids": null}))
        .expect(200);
    assert_eq!(nulled["jump_host_ids"], json!([]));
    assert_eq!(service.get(&path).expect(200)["jump_host_ids"], json!([]));
}

#[test]
fn chain_with_an_unknown_host_is_404_naming_jump_host_ids() {
    let service = Service::start("interop-chain-unknown");
    let unknown = "dddddddd-0000-4000-8000-000000000004";
    let error = service
        .post(
            "/api/hosts",
            &host("X", json!({"jump_host_ids": [unknown]})),
        )
        .assert_error(404, "HOST_NOT_FOUND");
    let details = error["details"].as_str().unwrap_or_default();
    assert!(
        details.contains("jump_host_ids") && details.contains(unknown),
        "{error}"
    );
    let list = service.get("/api/hosts").expect(200);
    assert_eq!(list["total"], 0, "nothing was created");
}

#[test]
fn chain_containing_the_host_itself_is_invalid() {
    let service = Service::start("interop-chain-self");
    let a = create(&service, "A", json!({}));
    service
        .put(&format!("/api/hosts/{a}"), &json!({"jump_host_ids": [a]}))
        .assert_error(400, "INVALID_JUMP_CHAIN");
}

#[test]
fn chain_repeating_a_hop_is_invalid() {
    let service = Service::start("interop-chain-repeat");
    let a = create(&service, "A", json!({}));
    service
        .post("/api/hosts", &host("B", json!({"jump_host_ids": [a, a]})))
        .assert_error(400, "INVALID_JUMP_CHAIN");
}

#[test]
fn chain_closing_a_cycle_through_other_hosts_chains_is_invalid() {
    let service = Service::start("interop-chain-cycle");
    let a = create(&service, "A", json!({}));
    let b = create(&service, "B", json!({"jump_host_ids": [a]}));
    let c = create(&service, "C", json!({"jump_host_ids": [b]}));
    let error = service
        .put(&format!("/api/hosts/{a}"), &json!({"jump_host_ids": [c]}))
        .assert_error(400, "INVALID_JUMP_CHAIN");
    assert!(
        error["details"]
            .as_str()
            .unwrap_or_default()
            .contains("cycle"),
        "{error}"
    );
    let got = service.get(&format!("/api/hosts/{a}")).expect(200);
    assert_eq!(
        got["jump_host_ids"],
        json!([]),
        "the refused chain was not stored"
    );
    // The same hops without the loop are fine: a host may reuse a hop's chain.
    let d = create(&service, "D", json!({}));
    service
        .put(&format!("/api/hosts/{a}"), &json!({"jump_host_ids": [d]}))
        .expect(200);
}

#[test]
fn chain_of_8_hops_is_accepted_and_9_is_rejected() {
    let service = Service::start("interop-chain-length");
    let hops: Vec<String> = (0..9)
        .map(|n| create(&service, &format!("H{n}"), json!({})))
        .collect();
    let eight = create(&service, "Eight", json!({"jump_host_ids": hops[..8]}));
    let got = service.get(&format!("/api/hosts/{eight}")).expect(200);
    assert_eq!(got["jump_host_ids"].as_array().map(Vec::len), Some(8));
    let error = service
        .post("/api/hosts", &host("Nine", json!({"jump_host_ids": hops})))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(error["details"]
        .as_str()
        .unwrap_or_default()
        .starts_with("jump_host_ids: "));
}

#[test]
fn deleting_a_jump_host_is_409_host_in_use_until_no_chain_uses_it() {
    let service = Service::start("interop-host-in-use");
    let a = create(&service, "A", json!({}));
    let b = create(&service, "B", json!({"jump_host_ids": [a]}));
    let c = create(&service, "C", json!({"jump_host_ids": [a]}));
    let error = service
        .delete(&format!("/api/hosts/{a}"))
        .assert_error(409, "HOST_IN_USE");
    assert!(
        error["details"]
            .as_str()
            .unwrap_or_default()
            .contains("2 host"),
        "{error}"
    );
    service.delete(&format!("/api/hosts/{b}")).expect(204);
    service
        .put(&format!("/api/hosts/{c}"), &json!({"jump_host_ids": []}))
        .expect(200);
    service.delete(&format!("/api/hosts/{a}")).expect(204);
}

#[test]
fn deleting_a_host_with_a_chain_drops_its_chain() {
    let service = Service::start("interop-delete-chain");
    let a = create(&service, "A", json!({}));
    let b = create(&service, "B", json!({"jump_host_ids": [a]}));
    service.delete(&format!("/api/hosts/{b}")).expect(204);
    service.delete(&format!("/api/hosts/{a}")).expect(204);
}

#[test]
fn connect_answers_the_full_route_as_proxy_jump() {
    let service = Service::start("interop-connect-route");
    let outer = create(
        &service,
        "Outer",
        json!({"hostname": "2001:db8::1", "port": 2200, "username": "ops"}),
    );
    let inner = create(&service, "Inner", json!({"jump_host_ids": [outer]}));
    let target = create(&service, "Target", json!({"jump_host_ids": [inner]}));
    let answer = service
        .post(&format!("/api/hosts/{target}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        answer["credentials"]["proxy_jump"],
        "ops@[2001:db8::1]:2200,root@inner.example.com:22"
    );
    assert_eq!(answer["host"]["jump_host_ids"], json!([inner]));
    let plain = service
        .post(&format!("/api/hosts/{outer}/connect"), &json!({}))
        .expect(200);
    assert!(plain["credentials"].get("proxy_jump").is_none(), "{plain}");
}

#[test]
fn ssh_options_are_kept_verbatim_in_order() {
    let service = Service::start("interop-options");
    let options = json!(["ServerAliveInterval 30", "LocalForward=8080 localhost:80"]);
    let id = create(&service, "Opt", json!({"ssh_options": options}));
    let path = format!("/api/hosts/{id}");
    assert_eq!(service.get(&path).expect(200)["ssh_options"], options);
    let kept = service.put(&path, &json!({"name": "Opt2"})).expect(200);
    assert_eq!(kept["ssh_options"], options);
    let cleared = service
        .put(&path, &json!({"ssh_options": null}))
        .expect(200);
    assert_eq!(cleared["ssh_options"], json!([]));
}

#[test]
fn ssh_options_with_a_newline_or_a_host_keyword_are_rejected() {
    let service = Service::start("interop-options-bad");
    for (options, field) in [
        (
            json!(["ServerAliveInterval 30\nHost evil"]),
            "ssh_options[0]",
        ),
        (json!(["Compression yes", "Host evil"]), "ssh_options[1]"),
        (json!(["Compression"]), "ssh_options[0]"),
        (json!("Compression yes"), "ssh_options"),
    ] {
        let error = service
            .post("/api/hosts", &host("Bad", json!({"ssh_options": options})))
            .assert_error(400, "VALIDATION_ERROR");
        let details = error["details"].as_str().unwrap_or_default();
        assert!(details.starts_with(&format!("{field}: ")), "{error}");
    }
}
