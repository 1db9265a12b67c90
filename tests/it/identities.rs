//! Identities (docs/identities.md, "Identities") against the real binary: create, read,
//! list, partial update with `If-Match`, delete (refused while in use, or moving the users
//! with `reassign_to`), each validation rule on both sides of its edge, secrets never in an
//! answer, a key an identity uses cannot be deleted, who resolves to an identity through two
//! levels of group defaults, a rotation's count and change-feed entries, and the TOTP code
//! checked against RFC 6238 computed by Python's `hmac` (an oracle independent of the
//! service's code).

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::support::{id_of, Response, Service};

/// RFC 6238's SHA1 test secret, "12345678901234567890", in base32.
const RFC_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

fn create(service: &Service, body: Value) -> Response {
    service.post("/api/identities", &body)
}

fn new_identity(service: &Service, body: Value) -> String {
    id_of(&create(service, body).expect(201))
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

#[track_caller]
fn assert_refused(response: &Response, field: &str) {
    let error = response.assert_error(400, "VALIDATION_ERROR");
    let details = error["details"].as_str().unwrap();
    assert!(details.starts_with(&format!("{field}:")), "{details}");
}

#[test]
fn an_identity_is_created_read_listed_updated_in_part_and_deleted() {
    let service = Service::start("identity-crud");
    let created = create(
        &service,
        json!({"name": " ops ", "username": "deploy", "notes": "n", "auth": [{"type": "agent"}]}),
    );
    assert_eq!(created.header("etag"), Some("\"1\""));
    let identity = created.expect(201);
    let id = id_of(&identity);
    assert_eq!(identity["name"], "ops");
    assert_eq!(identity["auth"], json!([{"type": "agent"}]));
    assert_eq!(identity["totp"], Value::Null);
    assert_eq!(
        service.get(&format!("/api/identities/{id}")).expect(200),
        identity
    );
    let list = service.get("/api/identities").expect(200);
    assert_eq!(list["items"], json!([identity]));
    let path = format!("/api/identities/{id}");
    let updated = service.put(&path, &json!({"notes": "changed"})).expect(200);
    assert_eq!(updated["username"], "deploy", "left out: kept");
    assert_eq!(updated["auth"], json!([{"type": "agent"}]));
    assert_eq!(
        (updated["notes"].as_str(), updated["revision"].as_i64()),
        (Some("changed"), Some(2))
    );
    assert_eq!(updated["affected_hosts"], 0);
    let cleared = service.put(&path, &json!({"username": null})).expect(200);
    assert_eq!(cleared["username"], Value::Null);
    service.delete(&path).expect(204);
    service.get(&path).assert_error(404, "IDENTITY_NOT_FOUND");
    service
        .put(&path, &json!({"name": "x"}))
        .assert_error(404, "IDENTITY_NOT_FOUND");
    service
        .delete(&path)
        .assert_error(404, "IDENTITY_NOT_FOUND");
    let changes = service.get("/api/changes?since=0").expect(200);
    let ops: Vec<&str> = changes["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["kind"] == "identity")
        .map(|change| change["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["created", "updated", "updated", "deleted"]);
}

#[test]
fn a_write_based_on_an_older_revision_is_refused_and_changes_nothing() {
    let service = Service::start("identity-if-match");
    let id = new_identity(&service, json!({"name": "a"}));
    let path = format!("/api/identities/{id}");
    let moved = with_if_match(
        &service,
        "PUT",
        &path,
        "\"1\"",
        Some(&json!({"notes": "x"})),
    );
    assert_eq!(moved.header("etag"), Some("\"2\""));
    moved.expect(200);
    let stale = with_if_match(
        &service,
        "PUT",
        &path,
        "\"1\"",
        Some(&json!({"notes": "y"})),
    );
    stale.assert_error(412, "PRECONDITION_FAILED");
    assert_eq!(stale.header("etag"), Some("\"2\""));
    let body_revision = service.put(&path, &json!({"notes": "y", "revision": 1}));
    body_revision.assert_error(412, "PRECONDITION_FAILED");
    with_if_match(&service, "DELETE", &path, "\"1\"", None)
        .assert_error(412, "PRECONDITION_FAILED");
    assert_eq!(service.get(&path).expect(200)["notes"], "x");
    with_if_match(&service, "DELETE", &path, "\"2\"", None).expect(204);
}

#[test]
fn names_and_usernames_are_taken_inside_their_bounds_and_refused_past_them() {
    let service = Service::start("identity-names");
    new_identity(&service, json!({"name": "x".repeat(100)}));
    assert_refused(&create(&service, json!({"name": "y".repeat(101)})), "name");
    assert_refused(&create(&service, json!({"name": "  "})), "name");
    assert_refused(&create(&service, json!({})), "name");
    new_identity(&service, json!({"name": "Straße"}));
    create(&service, json!({"name": "STRASSE"})).assert_error(409, "IDENTITY_NAME_TAKEN");
    new_identity(&service, json!({"name": "u", "username": "u".repeat(100)}));
    assert_refused(
        &create(&service, json!({"name": "v", "username": "u".repeat(101)})),
        "username",
    );
    assert_refused(
        &create(&service, json!({"name": "v", "username": ""})),
        "username",
    );
    let other = new_identity(&service, json!({"name": "other"}));
    let rename = service.put(
        &format!("/api/identities/{other}"),
        &json!({"name": "straße"}),
    );
    rename.assert_error(409, "IDENTITY_NAME_TAKEN");
}

fn keys(service: &Service, count: usize) -> Vec<Value> {
    (0..count)
        .map(|n| json!({"type": "key", "key_id": service.new_key(&format!("k{n}"))}))
        .collect()
}

#[test]
fn auth_takes_eight_methods_one_of_each_kind_and_stored_keys_only() {
    let service = Service::start("identity-auth");
    let mut methods = keys(&service, 9);
    let ninth = methods.pop().unwrap();
    new_identity(&service, json!({"name": "eight", "auth": methods}));
    methods.push(ninth);
    assert_refused(
        &create(&service, json!({"name": "nine", "auth": methods})),
        "auth",
    );
    for kind in ["password", "agent", "keyboard_interactive"] {
        let body = json!({"name": kind, "auth": [{"type": kind}, {"type": kind}]});
        assert_refused(&create(&service, body), "auth[1]");
    }
    let key = methods[0].clone();
    assert_refused(
        &create(&service, json!({"name": "twice", "auth": [key, key]})),
        "auth[1]",
    );
    let unknown = json!({"name": "unknown", "auth": [{"type": "key", "key_id": "00000000-0000-4000-8000-000000000000"}]});
    create(&service, unknown).assert_error(404, "KEY_NOT_FOUND");
    assert_refused(
        &create(&service, json!({"name": "t", "auth": [{"type": "telnet"}]})),
        "auth[0].type",
    );
}

fn rules(count: usize) -> Value {
    let rules: Vec<Value> = (0..count)
        .map(|n| json!({"prompt": format!("^Q{n}:"), "answer": {"type": "password"}}))
        .collect();
    json!([{"type": "password", "password": "p"}, {"type": "keyboard_interactive", "answers": rules}])
}

#[test]
fn answer_rules_take_sixteen_portable_prompts_and_need_what_they_answer_with() {
    let service = Service::start("identity-answers");
    new_identity(&service, json!({"name": "sixteen", "auth": rules(16)}));
    assert_refused(
        &create(&service, json!({"name": "seventeen", "auth": rules(17)})),
        "auth[1].answers",
    );
    let prompt = |prompt: &str| {
        json!({"name": prompt, "auth": [{"type": "password"}, {"type": "keyboard_interactive",
            "answers": [{"prompt": prompt, "answer": {"type": "password"}}]}]})
    };
    new_identity(&service, prompt("(?i)^password:"));
    assert_refused(
        &create(&service, prompt("(?<=a)b")),
        "auth[1].answers[0].prompt",
    );
    let ki = |answer: Value| json!([{"type": "keyboard_interactive", "answers": [{"prompt": "x", "answer": answer}]}]);
    let no_password = json!({"name": "np", "auth": ki(json!({"type": "password"}))});
    assert_refused(&create(&service, no_password), "auth[0].answers[0].answer");
    let no_totp = json!({"name": "nt", "auth": ki(json!({"type": "totp"}))});
    assert_refused(&create(&service, no_totp), "auth[0].answers[0].answer");
    let with_totp =
        json!({"name": "wt", "auth": ki(json!({"type": "totp"})), "totp": {"secret": RFC_SECRET}});
    new_identity(&service, with_totp);
    let no_literal = json!({"name": "nl", "auth": ki(json!({"type": "literal"}))});
    assert_refused(
        &create(&service, no_literal),
        "auth[0].answers[0].answer.literal",
    );
}

#[test]
fn totp_settings_are_checked_at_their_bounds_and_a_uri_fills_what_the_body_leaves_out() {
    let service = Service::start("identity-totp-rules");
    let totp = |name: &str, totp: Value| create(&service, json!({"name": name, "totp": totp}));
    for (name, digits) in [("d6", 6), ("d8", 8)] {
        let made = totp(name, json!({"secret": RFC_SECRET, "digits": digits})).expect(201);
        assert_eq!(made["totp"]["digits"], digits);
    }
    for digits in [5, 9] {
        assert_refused(
            &totp("d", json!({"secret": RFC_SECRET, "digits": digits})),
            "totp.digits",
        );
    }
    totp("p1", json!({"secret": RFC_SECRET, "period": 1})).expect(201);
    totp("p3600", json!({"secret": RFC_SECRET, "period": 3600})).expect(201);
    for period in [0, 3601] {
        assert_refused(
            &totp("p", json!({"secret": RFC_SECRET, "period": period})),
            "totp.period",
        );
    }
    assert_refused(&totp("none", json!({"digits": 6})), "totp.secret");
    let uri = format!(
        "otpauth://totp/Ops:deploy?secret={RFC_SECRET}&digits=8&algorithm=SHA256&period=60"
    );
    let made = totp("uri", json!({"secret": uri})).expect(201);
    assert_eq!(
        made["totp"],
        json!({"digits": 8, "period": 60, "algorithm": "SHA256", "has_secret": true})
    );
    assert_refused(
        &totp("contradiction", json!({"secret": uri, "digits": 6})),
        "totp.digits",
    );
    totp("agree", json!({"secret": uri, "digits": 8})).expect(201);
}

#[test]
fn secrets_are_never_answered_and_left_out_ones_are_kept() {
    let service = Service::start("identity-secrets");
    let (password, literal) = ("Ident-pw-4f1c9e", "Ident-literal-8b2d7a");
    let body = json!({"name": "s", "totp": {"secret": RFC_SECRET},
        "auth": [{"type": "password", "password": password}, {"type": "keyboard_interactive",
            "answers": [{"prompt": "^Site:", "answer": {"type": "literal", "literal": literal}}]}]});
    let created = create(&service, body);
    let id = id_of(&created.json());
    let path = format!("/api/identities/{id}");
    let keep = json!({"auth": [{"type": "password"}, {"type": "keyboard_interactive",
        "answers": [{"prompt": "^Site:", "answer": {"type": "literal"}}]}], "totp": {"digits": 8}});
    let answers = [
        created,
        service.get(&path),
        service.get("/api/identities"),
        service.get(&format!("{path}/usages")),
        service.put(&path, &keep),
    ];
    for answer in &answers {
        let text = answer.text();
        for secret in [password, literal, RFC_SECRET] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    let kept = answers[4].json();
    assert_eq!(
        kept["auth"][0],
        json!({"type": "password", "has_password": true})
    );
    let literal_view = &kept["auth"][1]["answers"][0]["answer"];
    assert_eq!(
        literal_view,
        &json!({"type": "literal", "has_literal": true})
    );
    assert_eq!(kept["totp"]["has_secret"], true);
    assert_eq!(kept["affected_hosts"], 0, "no host resolves to it");
    let audit = service.get("/api/audit?limit=100").expect(200).to_string();
    for secret in [password, literal, RFC_SECRET] {
        assert!(!audit.contains(secret), "{secret} in the audit log");
    }
    assert!(audit.contains("identity.created") && audit.contains("identity.updated"));
}

#[test]
fn a_key_an_identity_uses_cannot_be_deleted_until_the_identity_goes() {
    let service = Service::start("identity-key-in-use");
    let key = service.new_key("k");
    let id = new_identity(
        &service,
        json!({"name": "i", "auth": [{"type": "key", "key_id": key}]}),
    );
    let details = |service: &Service| {
        let refused = service
            .delete(&format!("/api/keys/{key}"))
            .assert_error(409, "KEY_IN_USE");
        refused["details"].as_str().unwrap().to_owned()
    };
    assert_eq!(details(&service), "the key is used by 1 identity(ies)");
    let host = json!({"name": "h", "hostname": "h.example.com", "port": 22, "username": "u",
        "auth": {"type": "key", "key_id": key}});
    let host = id_of(&service.post("/api/hosts", &host).expect(201));
    assert_eq!(
        details(&service),
        "the key is used by 1 host(s) and 1 identity(ies)"
    );
    service.delete(&format!("/api/hosts/{host}")).expect(204);
    service.delete(&format!("/api/identities/{id}")).expect(204);
    service.delete(&format!("/api/keys/{key}")).expect(204);
}

#[test]
fn delete_refuses_a_reassign_target_that_is_unknown_itself_or_no_id() {
    let service = Service::start("identity-reassign");
    let id = new_identity(&service, json!({"name": "a"}));
    let other = new_identity(&service, json!({"name": "b"}));
    let path = |query: &str| format!("/api/identities/{id}?reassign_to={query}");
    service
        .delete(&path("00000000-0000-4000-8000-000000000000"))
        .assert_error(404, "IDENTITY_NOT_FOUND");
    service
        .delete(&path(&id))
        .assert_error(400, "VALIDATION_ERROR");
    service
        .delete(&path(""))
        .assert_error(400, "VALIDATION_ERROR");
    service
        .delete(&path("a%2Fb"))
        .assert_error(400, "VALIDATION_ERROR");
    let usages = service
        .get(&format!("/api/identities/{id}/usages"))
        .expect(200);
    assert_eq!(
        usages,
        json!({"hosts": [], "groups": [], "host_count": 0, "group_count": 0})
    );
    service.delete(&path(&other)).expect(204);
    service.get(&format!("/api/identities/{other}")).expect(200);
    service
        .get("/api/identities/nope/usages")
        .assert_error(404, "IDENTITY_NOT_FOUND");
}

/// RFC 6238 codes (SHA1, 30 s, 6 digits) of `secret` at each time, by Python's `hmac`.
fn python_codes(secret: &[u8], times: &[u64]) -> Vec<String> {
    let script = "import hmac, hashlib, struct, sys\n\
        key = bytes.fromhex(sys.argv[1])\n\
        for t in sys.argv[2:]:\n\
        \x20   h = hmac.new(key, struct.pack('>Q', int(t) // 30), hashlib.sha1).digest()\n\
        \x20   o = h[-1] & 15\n\
        \x20   print('%06d' % ((struct.unpack('>I', h[o:o + 4])[0] & 0x7fffffff) % 10**6))\n";
    let hex: String = secret.iter().map(|byte| format!("{byte:02x}")).collect();
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(hex)
        .args(times.iter().map(u64::to_string))
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn the_totp_code_is_rfc_6238s_for_the_time_it_is_asked_and_audited_without_it() {
    // The oracle itself, on RFC 6238 appendix B's first SHA1 vector (59 s: 94287082, whose
    // last six digits are a 6-digit code).
    assert_eq!(python_codes(b"12345678901234567890", &[59]), ["287082"]);
    let service = Service::start("identity-totp");
    let id = new_identity(
        &service,
        json!({"name": "otp", "totp": {"secret": RFC_SECRET}}),
    );
    let before = unix_now();
    let answer = service.post(&format!("/api/identities/{id}/totp"), &json!({}));
    let after = unix_now();
    assert_eq!(answer.header("cache-control"), Some("no-store"));
    let answer = answer.expect(200);
    let valid_for_s = answer["valid_for_s"].as_u64().unwrap();
    assert!((1..=30).contains(&valid_for_s), "{answer}");
    let expected = python_codes(b"12345678901234567890", &[before, after]);
    let code = answer["code"].as_str().unwrap();
    assert!(
        expected.iter().any(|one| one == code),
        "{code} not in {expected:?}"
    );
    let audit = service.get("/api/audit?limit=10").expect(200);
    let entry = &audit["items"][0];
    assert_eq!(
        (entry["event"].as_str(), entry["subject"].as_str()),
        (Some("identity.totp"), Some("otp"))
    );
    assert!(!audit.to_string().contains(code), "the code is not audited");
    let plain = new_identity(&service, json!({"name": "plain"}));
    service
        .post(&format!("/api/identities/{plain}/totp"), &json!({}))
        .assert_error(409, "TOTP_NOT_SET");
    service
        .post("/api/identities/nope/totp", &json!({}))
        .assert_error(404, "IDENTITY_NOT_FOUND");
}

#[test]
fn identities_need_the_vault_unlocked() {
    let service = Service::start("identity-locked");
    service
        .put(
            "/api/vault/password",
            &json!({"new_password": "Master-ident-pw"}),
        )
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    let body = json!({"name": "i", "auth": [{"type": "password", "password": "p"}]});
    create(&service, body).assert_error(401, "VAULT_LOCKED");
    service
        .get("/api/identities")
        .assert_error(401, "VAULT_LOCKED");
}

/// An identity that gives its hosts a username and a way to authenticate.
fn usable(name: &str) -> Value {
    json!({"name": name, "username": "u", "auth": [{"type": "agent"}]})
}

fn group(service: &Service, name: &str, parent: Option<&str>, defaults: Value) -> String {
    let body = json!({"name": name, "parent_id": parent, "defaults": defaults});
    id_of(&service.post("/api/groups", &body).expect(201))
}

fn host(service: &Service, name: &str, group_id: &str, identity_id: Option<&str>) -> String {
    let body = json!({"name": name, "hostname": format!("{name}.example.com"),
        "group_id": group_id, "identity_id": identity_id});
    id_of(&service.post("/api/hosts", &body).expect(201))
}

fn usages(service: &Service, id: &str) -> Value {
    service
        .get(&format!("/api/identities/{id}/usages"))
        .expect(200)
}

#[test]
fn usages_follow_group_defaults_through_two_levels_and_stop_at_a_nearer_default() {
    let service = Service::start("identity-usages");
    let a = new_identity(&service, usable("a"));
    let b = new_identity(&service, usable("b"));
    let top = group(&service, "top", None, json!({"identity_id": a}));
    let middle = group(&service, "middle", Some(&top), json!({}));
    let bottom = group(&service, "bottom", Some(&middle), json!({"identity_id": b}));
    let inherits = host(&service, "h1", &middle, None);
    let direct = host(&service, "h2", &bottom, Some(&a));
    let other = host(&service, "h3", &bottom, None);
    let via_top = format!("group:{top}");
    assert_eq!(
        usages(&service, &a),
        json!({"hosts": [{"id": inherits, "name": "h1", "via": via_top},
                         {"id": direct, "name": "h2", "via": "direct"}],
               "groups": [{"id": middle, "name": "middle", "via": via_top},
                          {"id": top, "name": "top", "via": "direct"}],
               "host_count": 2, "group_count": 2})
    );
    assert_eq!(
        usages(&service, &b),
        json!({"hosts": [{"id": other, "name": "h3", "via": format!("group:{bottom}")}],
               "groups": [{"id": bottom, "name": "bottom", "via": "direct"}],
               "host_count": 1, "group_count": 1})
    );
}

#[test]
fn deleting_an_identity_in_use_is_refused_and_reassign_moves_its_users_in_one_go() {
    let service = Service::start("identity-in-use");
    let a = new_identity(&service, usable("a"));
    let b = new_identity(&service, usable("b"));
    let g = group(&service, "g", None, json!({"identity_id": a}));
    let direct = host(&service, "direct", &g, Some(&a));
    let below = host(&service, "below", &g, None);
    let refused = service.delete(&format!("/api/identities/{a}"));
    let error = refused.assert_error(409, "IDENTITY_IN_USE");
    assert!(
        error["details"]
            .as_str()
            .unwrap()
            .starts_with("hosts: 1, groups: 1"),
        "{error}"
    );
    service.get(&format!("/api/identities/{a}")).expect(200);
    service
        .delete(&format!("/api/identities/{a}?reassign_to={b}"))
        .expect(204);
    service
        .get(&format!("/api/identities/{a}"))
        .assert_error(404, "IDENTITY_NOT_FOUND");
    let moved = service.get(&format!("/api/hosts/{direct}")).expect(200);
    assert_eq!(
        (moved["identity_id"].as_str(), moved["revision"].as_i64()),
        (Some(b.as_str()), Some(2))
    );
    let group = service.get(&format!("/api/groups/{g}")).expect(200);
    assert_eq!(group["defaults"]["identity_id"], b.as_str());
    let users = usages(&service, &b);
    assert_eq!(
        (users["host_count"].as_u64(), users["group_count"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(users.to_string().contains(&below));
}

/// The change feed's cursor now.
fn cursor(service: &Service) -> i64 {
    service.get("/api/changes?since=0&limit=1000").expect(200)["next"]
        .as_i64()
        .unwrap()
}

/// The ids of the `host` `updated` entries after `since`, sorted.
fn host_updates(service: &Service, since: i64) -> Vec<String> {
    let page = service
        .get(&format!("/api/changes?since={since}&limit=1000"))
        .expect(200);
    let mut ids: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["kind"] == "host" && change["op"] == "updated")
        .map(|change| change["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_password_rotation_counts_and_logs_every_host_that_uses_the_identity_and_a_rename_none() {
    let service = Service::start("identity-rotation");
    let body = json!({"name": "ops", "username": "deploy", "auth": [{"type": "password", "password": "old-pw"}]});
    let ops = new_identity(&service, body);
    let g = group(&service, "g", None, json!({"identity_id": ops}));
    let mut users = vec![
        host(&service, "a", &g, None),
        host(&service, "b", &g, None),
        host(&service, "c", &g, Some(&ops)),
    ];
    users.sort();
    let mine = json!({"name": "own", "hostname": "own.example.com", "username": "me", "auth": {"type": "agent"}});
    let own = id_of(&service.post("/api/hosts", &mine).expect(201));
    let since = cursor(&service);
    let path = format!("/api/identities/{ops}");
    let rotated = service.put(
        &path,
        &json!({"auth": [{"type": "password", "password": "new-pw"}]}),
    );
    assert_eq!(rotated.expect(200)["affected_hosts"], 3);
    assert_eq!(host_updates(&service, since), users);
    for id in &users {
        let host = service.get(&format!("/api/hosts/{id}")).expect(200);
        assert_eq!(
            host["revision"], 1,
            "a following host's own row is untouched"
        );
    }
    assert_eq!(
        service.get(&format!("/api/hosts/{own}")).expect(200)["revision"],
        1
    );
    let since = cursor(&service);
    let renamed = service.put(&path, &json!({"name": "ops-2026", "notes": "rotated"}));
    assert_eq!(renamed.expect(200)["affected_hosts"], 0);
    assert!(host_updates(&service, since).is_empty());
}

#[test]
fn an_identity_edit_that_would_leave_a_host_without_username_or_auth_is_refused_whole() {
    let service = Service::start("identity-stranding");
    let a = new_identity(&service, usable("a"));
    let g = group(&service, "g", None, json!({}));
    host(&service, "h", &g, Some(&a));
    let path = format!("/api/identities/{a}");
    assert_refused(
        &service.put(&path, &json!({"username": null, "notes": "x"})),
        "username",
    );
    assert_refused(&service.put(&path, &json!({"auth": []})), "auth");
    let kept = service.get(&path).expect(200);
    assert_eq!(
        (kept["username"].as_str(), kept["notes"].as_str()),
        (Some("u"), Some(""))
    );
}
