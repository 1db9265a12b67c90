//! The query language over HTTP (docs/query.md): `GET /api/hosts?q=` with each key, its
//! errors (400 `INVALID_QUERY` with the column of the fault), its hits, how it combines with
//! the list's other filters and follows edits; `GET /api/search` over hosts, groups,
//! identities and keys; and the saved searches `/api/searches`.

use serde_json::{json, Value};

use crate::support::{host_body, id_of, Service};

/// `q` as a URL query value: spaces, quotes and the rest percent-encoded.
fn encoded(q: &str) -> String {
    let mut out = String::new();
    for byte in q.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The names `GET /api/hosts?q=<q>` lists (by name), and its total.
fn found(service: &Service, q: &str) -> Vec<String> {
    let page = service
        .get(&format!("/api/hosts?per_page=1000&q={}", encoded(q)))
        .expect(200);
    let names: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| host["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(page["total"], names.len(), "q={q}: total counts the items");
    names
}

fn host(service: &Service, name: &str, hostname: &str, extra: Value) -> String {
    id_of(
        &service
            .post("/api/hosts", &host_body(name, hostname, extra))
            .expect(201),
    )
}

/// A small catalogue where each key of the language has hosts on both sides of it.
fn catalogue(service: &Service) {
    let dc1 = service.new_group("DC1");
    let web = id_of(
        &service
            .post("/api/groups", &json!({"name": "Web", "parent_id": dc1, "defaults": {"username": "deploy", "port": 2200}}))
            .expect(201),
    );
    let deploy = service.new_key("deploy-key");
    let ops = id_of(
        &service
            .post("/api/identities", &json!({"name": "Ops", "username": "opsuser", "auth": [{"type": "key", "key_id": deploy}]}))
            .expect(201),
    );
    let bastion = host(
        service,
        "bastion",
        "bastion.example.com",
        json!({"tags": ["edge"]}),
    );
    let inherit = json!({"port": null, "username": null, "group_id": web, "tags": ["prod", "web"]});
    host(service, "web-1", "web1.example.com", inherit.clone());
    let mut web2 = inherit;
    web2["is_favorite"] = json!(true);
    web2["jump_host_ids"] = json!([bastion]);
    let web2 = host(service, "Web-2", "web2.example.com", web2);
    service
        .post(
            &format!("/api/hosts/{web2}/forwards"),
            &json!({"type": "local", "bind_port": 18080, "target_host": "localhost", "target_port": 80}),
        )
        .expect(201);
    host(
        service,
        "db-1",
        "10.0.0.5",
        json!({"tags": ["prod", "legacy"], "port": 5432, "auth": {"type": "password", "password": "pw"}, "notes": "Primary; owner Ops"}),
    );
    host(
        service,
        "db-2",
        "2001:db8::5",
        json!({"tags": ["dev"], "username": null, "auth": null, "identity_id": ops}),
    );
}

#[test]
fn each_key_finds_the_hosts_it_names_and_no_other() {
    let service = Service::start("query-keys");
    catalogue(&service);
    let cases: &[(&str, &[&str])] = &[
        ("web", &["web-1", "Web-2"]),
        ("WEB-2", &["Web-2"]),
        ("example.com", &["bastion", "web-1", "Web-2"]),
        ("notes:owner", &["db-1"]),
        ("tag:prod", &["db-1", "web-1", "Web-2"]),
        ("tag:Prod", &[]),
        ("tag:edge,dev", &["bastion", "db-2"]),
        ("-tag:prod", &["bastion", "db-2"]),
        ("group:dc1", &["web-1", "Web-2"]),
        ("group:\"DC1 / web\"", &["web-1", "Web-2"]),
        ("group:web", &[]),
        ("host:web?.example.com", &["web-1", "Web-2"]),
        ("host:*.EXAMPLE.com", &["bastion", "web-1", "Web-2"]),
        ("host:10.0.0.0/8", &["db-1"]),
        ("host:2001:db8::/32", &["db-2"]),
        ("host:2001:db8:0::5", &["db-2"]),
        ("user:deploy", &["web-1", "Web-2"]),
        ("user:opsuser", &["db-2"]),
        ("user:root", &["bastion", "db-1"]),
        ("user:Root", &[]),
        ("port:2200", &["web-1", "Web-2"]),
        ("port:22,5000-6000", &["bastion", "db-1", "db-2"]),
        ("identity:ops", &["db-2"]),
        ("key:DEPLOY-KEY", &["db-2"]),
        ("via:Bastion", &["Web-2"]),
        ("has:forwards", &["Web-2"]),
        ("has:password", &["db-1"]),
        ("has:key", &["db-2"]),
        ("has:notes", &["db-1"]),
        ("has:chain", &["Web-2"]),
        ("is:favorite", &["Web-2"]),
        ("-is:favorite tag:web", &["web-1"]),
        ("used:never", &["bastion", "db-1", "db-2", "web-1", "Web-2"]),
        ("used:<7d", &[]),
        (
            "created:<1d",
            &["bastion", "db-1", "db-2", "web-1", "Web-2"],
        ),
        ("created:>1d", &[]),
        (
            "tag:prod -tag:legacy port:2200-2299 web",
            &["web-1", "Web-2"],
        ),
        ("", &["bastion", "db-1", "db-2", "web-1", "Web-2"]),
    ];
    for (q, names) in cases {
        let mut expected: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        expected.sort_by_key(|name| name.to_lowercase());
        assert_eq!(found(&service, q), expected, "q={q}");
    }
}

#[test]
fn a_used_host_is_found_by_used_within_and_no_longer_by_never() {
    let service = Service::start("query-used");
    let id = host(&service, "a", "a.example.com", json!({}));
    host(&service, "b", "b.example.com", json!({}));
    assert_eq!(found(&service, "used:never"), ["a", "b"]);
    service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    assert_eq!(found(&service, "used:never"), ["b"]);
    assert_eq!(found(&service, "used:<1h"), ["a"]);
    assert_eq!(found(&service, "used:>1h"), Vec::<String>::new());
    assert_eq!(found(&service, "-used:<1h"), ["b"]);
}

#[test]
fn a_query_follows_edits_of_hosts_groups_and_identities_made_after_it_was_asked() {
    let service = Service::start("query-follows");
    let group = service.new_group("G");
    service
        .put(
            &format!("/api/groups/{group}"),
            &json!({"defaults": {"username": "x"}}),
        )
        .expect(200);
    let id = host(
        &service,
        "a",
        "a.example.com",
        json!({"group_id": group, "username": null}),
    );
    assert_eq!(found(&service, "tag:t"), Vec::<String>::new());
    service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"tags": ["t"], "notes": "Now with notes"}),
        )
        .expect(200);
    assert_eq!(found(&service, "tag:t notes:notes"), ["a"]);
    service
        .put(
            &format!("/api/groups/{group}"),
            &json!({"defaults": {"username": "alice"}}),
        )
        .expect(200);
    assert_eq!(
        found(&service, "user:alice"),
        ["a"],
        "a group's new default is inherited"
    );
    service
        .put(
            &format!("/api/groups/{group}"),
            &json!({"defaults": {"username": "bob"}}),
        )
        .expect(200);
    assert_eq!(found(&service, "user:alice"), Vec::<String>::new());
    assert_eq!(found(&service, "user:bob group:g"), ["a"]);
    service
        .put(&format!("/api/groups/{group}"), &json!({"name": "H"}))
        .expect(200);
    assert_eq!(
        found(&service, "group:g"),
        Vec::<String>::new(),
        "a renamed group"
    );
    assert_eq!(found(&service, "group:h"), ["a"]);
    assert_eq!(found(&service, "has:forwards"), Vec::<String>::new());
    let rule = id_of(
        &service
            .post(
                &format!("/api/hosts/{id}/forwards"),
                &json!({"type": "dynamic", "bind_port": 1080, "autostart": false}),
            )
            .expect(201),
    );
    assert_eq!(
        found(&service, "has:forwards"),
        ["a"],
        "a rule added after the query"
    );
    service
        .delete(&format!("/api/hosts/{id}/forwards/{rule}"))
        .expect(204);
    assert_eq!(found(&service, "has:forwards"), Vec::<String>::new());
    let hop = host(&service, "hop", "hop.example.com", json!({}));
    assert_eq!(found(&service, "via:hop"), Vec::<String>::new());
    service
        .put(
            &format!("/api/hosts/{id}"),
            &json!({"jump_host_ids": [hop]}),
        )
        .expect(200);
    assert_eq!(
        found(&service, "via:hop has:chain"),
        ["a"],
        "a chain set after the query"
    );
    let ops = id_of(
        &service
            .post(
                "/api/identities",
                &json!({"name": "ops", "username": "carol", "auth": [{"type": "agent"}]}),
            )
            .expect(201),
    );
    service
        .put(&format!("/api/hosts/{id}"), &json!({"identity_id": ops}))
        .expect(200);
    assert_eq!(found(&service, "identity:ops user:carol"), ["a"]);
    service
        .put(
            &format!("/api/identities/{ops}"),
            &json!({"name": "ops2", "username": "dave"}),
        )
        .expect(200);
    assert_eq!(
        found(&service, "identity:ops"),
        Vec::<String>::new(),
        "a renamed identity"
    );
    assert_eq!(found(&service, "identity:ops2 user:dave"), ["a"]);
    service.delete(&format!("/api/hosts/{id}")).expect(204);
    assert_eq!(found(&service, "group:h"), Vec::<String>::new());
}

#[test]
fn q_is_anded_with_the_other_filters_and_search_and_pages_like_the_list() {
    let service = Service::start("query-and");
    for n in 0..12 {
        let tags = if n % 2 == 0 {
            json!(["even"])
        } else {
            json!(["odd"])
        };
        host(
            &service,
            &format!("node-{n:02}"),
            &format!("n{n}.example.com"),
            json!({"tags": tags, "is_favorite": n % 3 == 0}),
        );
    }
    let page = |params: &str| service.get(&format!("/api/hosts?{params}")).expect(200);
    let names = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let both = page(&format!("tag=even&q={}", encoded("is:favorite")));
    assert_eq!(names(&both), ["node-00", "node-06"]);
    let searched = page(&format!("search=node-1&q={}", encoded("tag:odd")));
    assert_eq!(names(&searched), ["node-11"], "search and q both hold");
    let first = page(&format!(
        "per_page=4&sort=name&order=desc&q={}",
        encoded("tag:even")
    ));
    assert_eq!(
        (first["total"].clone(), names(&first)),
        (
            json!(6),
            vec!["node-10", "node-08", "node-06", "node-04"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        )
    );
    let second = page(&format!(
        "per_page=4&page=2&sort=name&order=desc&q={}",
        encoded("tag:even")
    ));
    assert_eq!(names(&second), ["node-02", "node-00"]);
    let past = page(&format!("per_page=4&page=3&q={}", encoded("tag:even")));
    assert_eq!(
        (past["total"].clone(), past["items"].clone()),
        (json!(6), json!([]))
    );
}

#[test]
fn hits_give_character_offsets_into_the_fields_as_stored_and_marks_for_other_keys() {
    let service = Service::start("query-hits");
    let id = host(
        &service,
        "Über-Web",
        "WEB.example.com",
        json!({"notes": "Ünicode web notes", "tags": ["prod"]}),
    );
    let page = service
        .get(&format!(
            "/api/hosts?q={}",
            encoded("web notes:WEB tag:prod -tag:x host:*.com")
        ))
        .expect(200);
    let hits = page["hits"][&id].clone();
    assert_eq!(
        hits,
        json!([
            {"field": "name", "start": 5, "end": 8},
            {"field": "hostname", "start": 0, "end": 3},
            {"field": "notes", "start": 8, "end": 11},
            {"field": "tag", "start": 0, "end": 0},
            {"field": "hostname", "start": 0, "end": 15}
        ]),
        "in characters (Ü is one), negated terms mark nothing"
    );
    let plain = service.get("/api/hosts").expect(200);
    assert!(plain.get("hits").is_none(), "no q, no hits: {plain}");
    let empty = service.get("/api/hosts?q=").expect(200);
    assert_eq!(
        empty["hits"][&id],
        json!([]),
        "an empty q matches with no hit"
    );
}

#[test]
fn a_query_that_does_not_parse_is_400_invalid_query_naming_its_column_and_a_hint() {
    let service = Service::start("query-errors");
    let cases: &[(&str, usize, &str)] = &[
        ("tgs:web", 1, "did you mean `tag`"),
        ("web tgs:x", 5, "did you mean `tag`"),
        ("port:0", 6, "port"),
        ("port:65536", 6, "port"),
        ("port:22-21", 6, "port"),
        ("used:soon", 6, "used"),
        ("created:never", 9, "created"),
        ("tag:", 5, "needs a value"),
        ("tag:a,", 7, "needs a value"),
        ("\"web 1", 1, "quote"),
        ("ab\"c", 3, "quote"),
        ("tag:a -", 7, "`-`"),
        ("\"\"", 1, "empty word"),
        ("host:10.0.0.0/33", 6, "host"),
        ("has:everything", 5, "has"),
    ];
    for (q, column, hint) in cases {
        for path in ["/api/hosts", "/api/search"] {
            let refused = service
                .get(&format!("{path}?q={}", encoded(q)))
                .assert_error(400, "INVALID_QUERY");
            let details = refused["details"].as_str().unwrap();
            assert!(
                details.starts_with(&format!("q: column {column}: ")) && details.contains(hint),
                "{path} q={q}: {details}"
            );
        }
    }
}

#[test]
fn the_query_limits_hold_on_both_sides_of_their_edges() {
    let service = Service::start("query-limits");
    host(&service, "a", "a.example.com", json!({}));
    let word = |chars: usize| "a".repeat(chars);
    service
        .get(&format!("/api/hosts?q={}", word(512)))
        .expect(200);
    let long = service
        .get(&format!("/api/hosts?q={}", word(513)))
        .assert_error(400, "INVALID_QUERY");
    assert!(
        long["details"]
            .as_str()
            .unwrap()
            .starts_with("q: column 513: "),
        "{long}"
    );
    let terms = |n: usize| vec!["a"; n].join(" ");
    assert_eq!(found(&service, &terms(32)), ["a"]);
    let many = service
        .get(&format!("/api/hosts?q={}", encoded(&terms(33))))
        .assert_error(400, "INVALID_QUERY");
    assert!(
        many["details"]
            .as_str()
            .unwrap()
            .starts_with("q: column 65: "),
        "{many}"
    );
    let alternatives = |n: usize| format!("port:{}", vec!["22"; n].join(","));
    assert_eq!(found(&service, &alternatives(16)), ["a"]);
    service
        .get(&format!("/api/hosts?q={}", encoded(&alternatives(17))))
        .assert_error(400, "INVALID_QUERY");
    service
        .get("/api/hosts?q=a%00b")
        .assert_error(400, "INVALID_QUERY");
}

#[test]
fn search_finds_hosts_groups_identities_and_keys_and_a_keyed_term_keeps_its_own_kind() {
    let service = Service::start("query-search");
    catalogue(&service);
    let search = |q: &str| {
        service
            .get(&format!("/api/search?q={}", encoded(q)))
            .expect(200)
    };
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|item| item["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let web = search("web");
    assert_eq!(names(&web["hosts"]["items"]), ["web-1", "Web-2"]);
    assert_eq!(web["hosts"]["total"], 2);
    assert_eq!(names(&web["groups"]), ["Web"]);
    assert_eq!(web["groups"][0]["path"], json!(["DC1", "Web"]));
    assert_eq!(
        (web["identities"].clone(), web["keys"].clone()),
        (json!([]), json!([]))
    );
    let ops = search("ops");
    assert_eq!(names(&ops["identities"]), ["Ops"]);
    assert_eq!(names(&ops["hosts"]["items"]), Vec::<String>::new());
    let key = search("key:deploy-key");
    assert_eq!(names(&key["keys"]), ["deploy-key"]);
    assert_eq!(
        names(&key["hosts"]["items"]),
        ["db-2"],
        "hosts whose auth uses it"
    );
    assert_eq!(key["groups"], json!([]), "key: asks nothing of groups");
    let groups = search("group:dc1");
    assert_eq!(
        names(&groups["groups"]),
        ["DC1", "Web"],
        "the group and those below it"
    );
    let tagged = search("web tag:prod");
    assert_eq!(tagged["groups"], json!([]), "tag: is for hosts only");
    let all = search("");
    assert_eq!(all["hosts"]["total"], 5);
    assert_eq!(names(&all["keys"]), ["deploy-key"]);
}

#[test]
fn saved_searches_are_created_read_renamed_and_deleted() {
    let service = Service::start("query-saved");
    assert_eq!(
        service.get("/api/searches").expect(200),
        json!({"items": []})
    );
    let prod = service
        .post(
            "/api/searches",
            &json!({"name": " Production ", "q": "tag:prod -tag:legacy"}),
        )
        .expect(201);
    assert_eq!(
        (prod["name"].clone(), prod["q"].clone()),
        (json!("Production"), json!("tag:prod -tag:legacy"))
    );
    let id = id_of(&prod);
    let edge = id_of(
        &service
            .post("/api/searches", &json!({"name": "edge", "q": ""}))
            .expect(201),
    );
    let listed = service.get("/api/searches").expect(200);
    assert_eq!(listed["items"][0]["id"], edge.as_str(), "by name");
    assert_eq!(listed["items"][1], prod);
    assert_eq!(
        service.get(&format!("/api/searches/{id}")).expect(200),
        prod
    );
    let renamed = service
        .put(&format!("/api/searches/{id}"), &json!({"name": "Prod"}))
        .expect(200);
    assert_eq!(
        (renamed["name"].clone(), renamed["q"].clone()),
        (json!("Prod"), prod["q"].clone())
    );
    let requeried = service
        .put(&format!("/api/searches/{id}"), &json!({"q": "is:favorite"}))
        .expect(200);
    assert_eq!(
        (requeried["name"].clone(), requeried["q"].clone()),
        (json!("Prod"), json!("is:favorite"))
    );
    assert!(requeried["updated_at"].as_str() > prod["updated_at"].as_str());
    service
        .post("/api/searches", &json!({"name": "PROD", "q": "x"}))
        .assert_error(409, "DUPLICATE_NAME");
    service
        .put(&format!("/api/searches/{edge}"), &json!({"name": "prod"}))
        .assert_error(409, "DUPLICATE_NAME");
    service.delete(&format!("/api/searches/{id}")).expect(204);
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(json!({"name": "x"}))),
        ("DELETE", None),
    ] {
        service
            .request(method, &format!("/api/searches/{id}"), body.as_ref())
            .assert_error(404, "SEARCH_NOT_FOUND");
    }
}

#[test]
fn a_saved_search_names_the_field_that_breaks_a_rule_on_either_side_of_its_edges() {
    let service = Service::start("query-saved-rules");
    let ok = |body: Value| service.post("/api/searches", &body).expect(201);
    ok(json!({"name": "n".repeat(100), "q": "a".repeat(512)}));
    ok(json!({"name": "x", "q": ""}));
    for (body, code, field) in [
        (
            json!({"name": "n".repeat(101), "q": "a"}),
            "VALIDATION_ERROR",
            "name",
        ),
        (json!({"name": "   ", "q": "a"}), "VALIDATION_ERROR", "name"),
        (json!({"q": "a"}), "VALIDATION_ERROR", "name"),
        (json!({"name": "y"}), "VALIDATION_ERROR", "q"),
        (json!({"name": "y", "q": 3}), "VALIDATION_ERROR", "q"),
        (json!({"name": "y", "q": null}), "VALIDATION_ERROR", "q"),
        (
            json!({"name": "y", "q": "a".repeat(513)}),
            "INVALID_QUERY",
            "q: column 513",
        ),
        (
            json!({"name": "y", "q": "tgs:x"}),
            "INVALID_QUERY",
            "q: column 1",
        ),
    ] {
        let refused = service.post("/api/searches", &body).assert_error(400, code);
        let details = refused["details"].as_str().unwrap_or_default();
        assert!(details.starts_with(field), "{body}: {details}");
    }
    let id = id_of(&ok(json!({"name": "z", "q": "a"})));
    let refused = service
        .put(&format!("/api/searches/{id}"), &json!({"q": "port:x"}))
        .assert_error(400, "INVALID_QUERY");
    assert!(refused["details"]
        .as_str()
        .unwrap()
        .starts_with("q: column 6"));
    assert_eq!(
        service.get(&format!("/api/searches/{id}")).expect(200)["q"],
        "a",
        "nothing changed"
    );
}
