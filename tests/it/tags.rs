//! `GET /api/tags` and `POST /api/tags/rename` (docs/api.md, Hosts, "Tags"): every tag with
//! the number of hosts that carry it, agreeing with the list's `tag` filter, and a rename (or
//! merge) on every host in one transaction. All over HTTP against the binary.

use serde_json::{json, Value};

use crate::support::{host_body, id_of, Service};

fn tagged(service: &Service, name: &str, tags: Value) -> String {
    id_of(
        &service
            .post(
                "/api/hosts",
                &host_body(name, "h.example.com", json!({ "tags": tags })),
            )
            .expect(201),
    )
}

fn tags(service: &Service) -> Value {
    service.get("/api/tags").expect(200)["items"].clone()
}

fn total(service: &Service, tag: &str) -> Value {
    service.get(&format!("/api/hosts?tag={tag}")).expect(200)["total"].clone()
}

#[test]
fn tags_are_listed_by_name_with_counts_that_follow_edits_and_deletes() {
    let service = Service::start("tags-list");
    assert_eq!(tags(&service), json!([]));
    let a = tagged(&service, "a", json!(["prod", "web"]));
    tagged(&service, "b", json!(["prod"]));
    tagged(&service, "c", json!(["Prod"]));
    assert_eq!(
        tags(&service),
        json!([{"name": "Prod", "count": 1}, {"name": "prod", "count": 2}, {"name": "web", "count": 1}])
    );
    assert_eq!(total(&service, "prod"), 2, "the list's filter agrees");
    service
        .put(&format!("/api/hosts/{a}"), &json!({"tags": ["web"]}))
        .expect(200);
    service.delete(&format!("/api/hosts/{a}")).expect(204);
    assert_eq!(
        tags(&service),
        json!([{"name": "Prod", "count": 1}, {"name": "prod", "count": 1}]),
        "a tag no live host carries is gone"
    );
}

#[test]
fn a_rename_retags_every_host_and_into_an_existing_tag_merges() {
    let service = Service::start("tags-rename");
    let a = tagged(&service, "a", json!(["nginx", "prod"]));
    let b = tagged(&service, "b", json!(["web", "nginx"]));
    let c = tagged(&service, "c", json!(["db"]));
    let renamed = service
        .post("/api/tags/rename", &json!({"from": "nginx", "to": "web"}))
        .expect(200);
    assert_eq!(
        (
            renamed["from"].clone(),
            renamed["to"].clone(),
            renamed["count"].clone()
        ),
        (json!("nginx"), json!("web"), json!(2))
    );
    let tags_of = |id: &str| service.get(&format!("/api/hosts/{id}")).expect(200)["tags"].clone();
    assert_eq!(tags_of(&a), json!(["prod", "web"]), "renamed, at the end");
    assert_eq!(tags_of(&b), json!(["web"]), "merged: one web");
    assert_eq!(tags_of(&c), json!(["db"]), "untouched");
    assert_eq!(
        tags(&service),
        json!([{"name": "db", "count": 1}, {"name": "prod", "count": 1}, {"name": "web", "count": 2}])
    );
    let none = service
        .post("/api/tags/rename", &json!({"from": "nginx", "to": "web"}))
        .expect(200);
    assert_eq!(none["count"], 0, "no host carries it any more");
}

#[test]
fn a_dry_run_rename_answers_each_change_and_writes_nothing() {
    let service = Service::start("tags-rename-dry");
    let a = tagged(&service, "a", json!(["old"]));
    let before = service.get(&format!("/api/hosts/{a}")).expect(200);
    let dry = service
        .post(
            "/api/tags/rename",
            &json!({"from": "old", "to": "new", "dry_run": true}),
        )
        .expect(200);
    assert_eq!(dry["items"][0]["id"], a.as_str());
    assert_eq!(
        dry["items"][0]["changes"]["tags"],
        json!({"from": ["old"], "to": ["new"]})
    );
    let after = service.get(&format!("/api/hosts/{a}")).expect(200);
    assert_eq!(after["revision"], before["revision"]);
    assert_eq!(after["tags"], json!(["old"]));
}

#[test]
fn a_rename_names_the_field_that_breaks_the_tag_rule_on_either_side_of_its_edges() {
    let service = Service::start("tags-rename-rules");
    tagged(&service, "a", json!(["x"]));
    let long = "t".repeat(64);
    service
        .post("/api/tags/rename", &json!({"from": "x", "to": long}))
        .expect(200);
    for (body, field) in [
        (json!({"to": "y"}), "from"),
        (json!({"from": "x"}), "to"),
        (json!({"from": "", "to": "y"}), "from"),
        (json!({"from": "x", "to": "   "}), "to"),
        (json!({"from": "x", "to": "t".repeat(65)}), "to"),
        (json!({"from": 3, "to": "y"}), "from"),
        (json!({"from": "same", "to": " same "}), "to"),
        (json!({"from": "x", "to": "y", "dry_run": "yes"}), "dry_run"),
    ] {
        let refused = service
            .post("/api/tags/rename", &body)
            .assert_error(400, "VALIDATION_ERROR");
        let details = refused["details"].as_str().unwrap_or_default();
        assert!(details.starts_with(field), "{body}: {details}");
    }
}
