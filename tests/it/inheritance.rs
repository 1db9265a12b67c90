//! Group defaults and inheritance, black-box (docs/identities.md): three levels of groups
//! with overrides at each, the effective view's sources and hidden values, moves, the
//! change-feed entries of a rotation, refusals that would strand a host, and the
//! `~/.ssh/config` export read back by OpenSSH's own `ssh -G`.

use serde_json::{json, Value};

use crate::support::{id_of, Service};

fn group(service: &Service, name: &str, parent: Option<&str>, defaults: Value) -> String {
    let body = json!({"name": name, "parent_id": parent, "defaults": defaults});
    id_of(&service.post("/api/groups", &body).expect(201))
}

fn host(service: &Service, name: &str, body: Value) -> String {
    let mut full = json!({"name": name, "hostname": format!("{name}.example.com")});
    for (key, value) in body.as_object().unwrap() {
        full[key] = value.clone();
    }
    id_of(&service.post("/api/hosts", &full).expect(201))
}

fn effective(service: &Service, id: &str) -> Value {
    service
        .get(&format!("/api/hosts/{id}/effective"))
        .expect(200)["fields"]
        .clone()
}

/// Top sets username/port/options, middle overrides the port and adds an option, bottom
/// overrides the username; the host overrides nothing, then the port.
fn three_levels(service: &Service) -> (String, String, String) {
    let top = group(
        service,
        "top",
        None,
        json!({"username": "topuser", "port": 2201, "ssh_options": ["ServerAliveInterval 30", "Compression yes"]}),
    );
    let middle = group(
        service,
        "middle",
        Some(&top),
        json!({"port": 2202, "ssh_options": ["ServerAliveInterval 10"]}),
    );
    let bottom = group(
        service,
        "bottom",
        Some(&middle),
        json!({"username": "bottomuser"}),
    );
    (top, middle, bottom)
}

#[test]
fn each_field_comes_from_the_nearest_level_that_sets_it_and_names_what_it_hides() {
    let service = Service::start("inherit-levels");
    let (top, middle, bottom) = three_levels(&service);
    let id = host(
        &service,
        "h",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    let fields = effective(&service, &id);
    assert_eq!(fields["username"]["value"], "bottomuser");
    assert_eq!(fields["username"]["source"], format!("group:{bottom}"));
    assert_eq!(fields["username"]["hides"]["value"], "topuser");
    assert_eq!(
        fields["username"]["hides"]["source"],
        format!("group:{top}")
    );
    assert_eq!(fields["port"]["value"], 2202);
    assert_eq!(fields["port"]["source"], format!("group:{middle}"));
    assert_eq!(fields["port"]["hides"]["value"], 2201);
    assert_eq!(fields["auth"]["source"], "host");
    assert_eq!(fields["hostname"]["source"], "host");
    assert_eq!(
        fields["jump_host_ids"],
        json!({"value": [], "source": "default"})
    );
    assert_eq!(
        fields["identity_id"],
        Value::Null,
        "no level names an identity"
    );
    // Options merge as ssh reads them: the nearer ServerAliveInterval wins, the top's is hidden.
    assert_eq!(
        fields["ssh_options"]["value"],
        json!(["ServerAliveInterval 10", "Compression yes"])
    );
    let hidden: Vec<&Value> = fields["ssh_options"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["hidden"] == true)
        .collect();
    assert_eq!(hidden.len(), 1);
    assert_eq!(hidden[0]["source"], format!("group:{top}"));

    // The host's own value wins and names the group value it hides.
    service
        .put(&format!("/api/hosts/{id}"), &json!({"port": 2299}))
        .expect(200);
    let fields = effective(&service, &id);
    assert_eq!(fields["port"]["value"], 2299);
    assert_eq!(fields["port"]["source"], "host");
    assert_eq!(fields["port"]["hides"]["source"], format!("group:{middle}"));
    // null gives it back to the groups.
    service
        .put(&format!("/api/hosts/{id}"), &json!({"port": null}))
        .expect(200);
    assert_eq!(effective(&service, &id)["port"]["value"], 2202);
}

#[test]
fn connect_uses_the_effective_values_and_the_host_view_shows_only_its_own() {
    let service = Service::start("inherit-connect");
    let (_, _, bottom) = three_levels(&service);
    let id = host(
        &service,
        "h",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    let own = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(
        (own["port"].clone(), own["username"].clone()),
        (Value::Null, Value::Null)
    );
    let connected = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    assert_eq!(connected["effective"]["port"], 2202);
    assert_eq!(connected["effective"]["username"], "bottomuser");
    assert_eq!(connected["credentials"]["username"], "bottomuser");
    assert_eq!(connected["credentials"]["type"], "agent");
    let history = service.get(&format!("/api/hosts/{id}/history")).expect(200);
    assert_eq!(history["items"][0]["port"], 2202, "{history}");
    assert_eq!(history["items"][0]["username"], "bottomuser");
}

#[test]
fn moving_a_host_or_a_group_changes_what_it_inherits() {
    let service = Service::start("inherit-moves");
    let (_, _, bottom) = three_levels(&service);
    let other = group(
        &service,
        "other",
        None,
        json!({"username": "otheruser", "port": 2400}),
    );
    let id = host(
        &service,
        "h",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    service
        .put(
            &format!("/api/hosts/{id}/move"),
            &json!({"group_id": other}),
        )
        .expect(200);
    let fields = effective(&service, &id);
    assert_eq!(fields["username"]["value"], "otheruser");
    assert_eq!(fields["port"]["value"], 2400);
    // Moving the bottom group to the top level drops what middle and top gave it.
    service
        .put(
            &format!("/api/hosts/{id}/move"),
            &json!({"group_id": bottom}),
        )
        .expect(200);
    let moved = service
        .put(
            &format!("/api/groups/{bottom}/move"),
            &json!({"parent_id": null}),
        )
        .expect(200);
    assert_eq!(moved["affected_hosts"], 1, "{moved}");
    let fields = effective(&service, &id);
    assert_eq!(fields["port"], json!({"value": 22, "source": "default"}));
    assert_eq!(fields["username"]["value"], "bottomuser");
}

#[test]
fn a_default_change_reaches_every_inheriting_host_with_one_feed_entry_each() {
    let service = Service::start("inherit-rotation");
    let (top, _, bottom) = three_levels(&service);
    let a = host(
        &service,
        "a",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    let b = host(
        &service,
        "b",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    let own = host(
        &service,
        "own",
        json!({"group_id": top, "username": "mine", "port": 22, "auth": {"type": "agent"}}),
    );
    let next = service.get("/api/changes").expect(200)["next"].clone();
    let changed = service
        .put(
            &format!("/api/groups/{top}"),
            &json!({"defaults": {"username": "rotated"}}),
        )
        .expect(200);
    // a takes its username from bottom, and `own` sets username and port itself: only b follows.
    assert_eq!(changed["affected_hosts"], 1, "{changed}");
    assert_eq!(changed["defaults"]["username"], "rotated");
    assert_eq!(
        changed["defaults"]["port"], 2201,
        "fields not named are kept"
    );
    let feed = service
        .get(&format!("/api/changes?since={next}"))
        .expect(200);
    let hosts: Vec<&str> = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["kind"] == "host")
        .map(|entry| entry["id"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, [b.as_str()], "{feed}");
    assert_eq!(effective(&service, &b)["username"]["value"], "rotated");
    assert_eq!(effective(&service, &a)["username"]["value"], "bottomuser");
    assert_eq!(effective(&service, &own)["username"]["value"], "mine");
    let revision = service.get(&format!("/api/hosts/{b}")).expect(200)["revision"].clone();
    assert_eq!(
        revision, 1,
        "a follower's own fields and revision are untouched"
    );
}

#[test]
fn a_change_that_leaves_a_host_without_username_or_auth_is_refused_whole() {
    let service = Service::start("inherit-stranded");
    let top = group(&service, "top", None, json!({"username": "u"}));
    let id = host(
        &service,
        "h",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    let error = service
        .put(
            &format!("/api/groups/{top}"),
            &json!({"defaults": {"username": null, "port": 2000}}),
        )
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("username"),
        "{error}"
    );
    let kept = service.get(&format!("/api/groups/{top}")).expect(200);
    assert_eq!(kept["defaults"]["username"], "u");
    assert_eq!(
        kept["defaults"]["port"],
        Value::Null,
        "nothing of the refused change stayed"
    );
    // The host side: moving it out of the group, or clearing what it has, is refused too.
    service
        .put(&format!("/api/hosts/{id}/move"), &json!({"group_id": null}))
        .assert_error(400, "VALIDATION_ERROR");
    service
        .put(&format!("/api/hosts/{id}"), &json!({"auth": null}))
        .assert_error(400, "VALIDATION_ERROR");
    // Without a username anywhere, creating one is refused naming it.
    let error = service
        .post(
            "/api/hosts",
            &json!({"name": "x", "hostname": "x.example.com", "auth": {"type": "agent"}}),
        )
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("username"),
        "{error}"
    );
}

#[test]
fn group_defaults_are_checked_and_named_on_both_sides_of_each_rule() {
    let service = Service::start("inherit-rules");
    let top = group(&service, "top", None, json!({}));
    let path = format!("/api/groups/{top}");
    for (defaults, field) in [
        (json!({"port": 0}), "defaults.port"),
        (json!({"port": 65536}), "defaults.port"),
        (json!({"port": "22"}), "defaults.port"),
        (json!({"username": ""}), "defaults.username"),
        (json!({"username": "a".repeat(101)}), "defaults.username"),
        (json!({"ssh_options": ["Host x"]}), "defaults.ssh_options"),
        (json!("x"), "defaults"),
    ] {
        let error = service
            .put(&path, &json!({ "defaults": defaults }))
            .assert_error(400, "VALIDATION_ERROR");
        assert!(
            error["details"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
    for defaults in [
        json!({"port": 1}),
        json!({"port": 65535}),
        json!({"username": "a".repeat(100)}),
    ] {
        service
            .put(&path, &json!({ "defaults": defaults }))
            .expect(200);
    }
    service
        .put(
            &path,
            &json!({"defaults": {"identity_id": "dddddddd-0000-4000-8000-000000000001"}}),
        )
        .assert_error(404, "IDENTITY_NOT_FOUND");
    service
        .put(
            &path,
            &json!({"defaults": {"jump_host_ids": ["dddddddd-0000-4000-8000-000000000002"]}}),
        )
        .assert_error(404, "HOST_NOT_FOUND");
    let cleared = service.put(&path, &json!({"defaults": null})).expect(200);
    assert_eq!(
        cleared["defaults"],
        json!({"username": null, "port": null, "identity_id": null, "jump_host_ids": null,
               "ssh_options": [], "set_env": [], "send_env": []})
    );
}

#[test]
fn a_default_chain_applies_below_and_its_hop_cannot_be_deleted() {
    let service = Service::start("inherit-chain");
    let bastion = host(
        &service,
        "bastion",
        json!({"username": "jump", "auth": {"type": "agent"}}),
    );
    let top = group(
        &service,
        "top",
        None,
        json!({"jump_host_ids": [bastion], "username": "u"}),
    );
    let inner = group(&service, "inner", Some(&top), json!({"jump_host_ids": []}));
    let far = host(
        &service,
        "far",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    let near = host(
        &service,
        "near",
        json!({"group_id": inner, "auth": {"type": "agent"}}),
    );
    let connected = service
        .post(&format!("/api/hosts/{far}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        connected["credentials"]["proxy_jump"],
        "jump@bastion.example.com:22"
    );
    let connected = service
        .post(&format!("/api/hosts/{near}/connect"), &json!({}))
        .expect(200);
    assert!(
        connected["credentials"].get("proxy_jump").is_none(),
        "[] hides the chain above"
    );
    service
        .delete(&format!("/api/hosts/{bastion}"))
        .assert_error(409, "HOST_IN_USE");
}

#[test]
fn the_ssh_config_export_of_inherited_hosts_resolves_under_ssh_g_to_the_effective_values() {
    let service = Service::start("inherit-export");
    let (_, _, bottom) = three_levels(&service);
    let id = host(
        &service,
        "inherited-one",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    let text = service.get("/api/export/ssh-config").text();
    let config = crate::support::fresh_dir("inherit-export-config").join("config");
    std::fs::write(&config, &text).unwrap();
    let resolved = crate::interop::ssh_g(&config, "inherited-one");
    let fields = effective(&service, &id);
    assert_eq!(
        resolved["user"],
        fields["username"]["value"].as_str().unwrap()
    );
    assert_eq!(resolved["port"], fields["port"]["value"].to_string());
    assert_eq!(
        resolved["serveraliveinterval"], "10",
        "the nearer group's option: {text}"
    );
    assert_eq!(resolved["compression"], "yes");
}

fn listed(service: &Service, query: &str) -> Vec<String> {
    let page = service.get(&format!("/api/hosts?{query}")).expect(200);
    let mut names: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| host["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(page["total"], names.len(), "{page}");
    names
}

#[test]
fn the_list_filters_on_the_effective_username_as_the_effective_view_gives_it() {
    let service = Service::start("inherit-list-username");
    let (top, _, bottom) = three_levels(&service);
    host(
        &service,
        "a",
        json!({"group_id": bottom, "auth": {"type": "agent"}}),
    );
    host(
        &service,
        "b",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    host(
        &service,
        "c",
        json!({"group_id": bottom, "username": "topuser", "auth": {"type": "agent"}}),
    );
    host(
        &service,
        "d",
        json!({"username": "other", "auth": {"type": "agent"}}),
    );
    assert_eq!(listed(&service, "username=topuser"), ["b", "c"]);
    assert_eq!(listed(&service, "username=bottomuser"), ["a"]);
    assert_eq!(
        listed(&service, &format!("username=topuser&group={bottom}")),
        ["c"]
    );
    assert_eq!(listed(&service, "username=nobody"), Vec::<String>::new());
    service
        .get("/api/hosts?username=")
        .assert_error(400, "VALIDATION_ERROR");
    service
        .get("/api/hosts?identity=")
        .assert_error(400, "VALIDATION_ERROR");
    // A rotation of the top group's default moves b (and only b) to the new name.
    service
        .put(
            &format!("/api/groups/{top}"),
            &json!({"defaults": {"username": "rotated"}}),
        )
        .expect(200);
    assert_eq!(listed(&service, "username=rotated"), ["b"]);
    assert_eq!(listed(&service, "username=topuser"), ["c"]);
}

/// A host key trusted for `[name]:2222` belongs to the host that inherits port 2222: the
/// known-hosts entry names it, and the host's own entry list finds it.
#[test]
fn known_host_entries_match_hosts_by_their_inherited_port() {
    let service = Service::start("inherit-known-hosts");
    let top = group(
        &service,
        "top",
        None,
        json!({"port": 2222, "username": "u"}),
    );
    let id = host(
        &service,
        "h",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    let body = json!({"hostname": "h.example.com", "port": 2222, "public_key": key});
    let accepted = service.post("/api/known-hosts/accept", &body).expect(201);
    assert_eq!(accepted["entry"]["host_ids"], json!([id]), "{accepted}");
    let listed = service
        .get(&format!("/api/known-hosts?host_id={id}"))
        .expect(200);
    assert_eq!(listed["total"], 1, "{listed}");
    let on_22 = json!({"hostname": "h.example.com", "port": 22, "public_key": key});
    let other = service.post("/api/known-hosts/accept", &on_22).expect(201);
    assert_eq!(
        other["entry"]["host_ids"],
        json!([]),
        "port 22 is not the host's: {other}"
    );
}

/// A hop's own route comes first even when the hop inherits its chain; a group chain
/// that passes through a host is not that host's route; chains that loop through groups
/// are refused at connect, naming the loop.
#[test]
fn inherited_chains_of_hops_make_the_route_and_a_loop_through_groups_is_refused() {
    let service = Service::start("inherit-route");
    let outer = host(
        &service,
        "outer",
        json!({"username": "o", "auth": {"type": "agent"}}),
    );
    let dmz = group(
        &service,
        "dmz",
        None,
        json!({"jump_host_ids": [outer], "username": "b"}),
    );
    let bastion = host(
        &service,
        "bastion",
        json!({"group_id": dmz, "auth": {"type": "agent"}}),
    );
    let top = group(
        &service,
        "top",
        None,
        json!({"jump_host_ids": [bastion], "username": "u"}),
    );
    let far = host(
        &service,
        "far",
        json!({"group_id": top, "auth": {"type": "agent"}}),
    );
    let connected = service
        .post(&format!("/api/hosts/{far}/connect"), &json!({}))
        .expect(200);
    assert_eq!(
        connected["credentials"]["proxy_jump"],
        "o@outer.example.com:22,b@bastion.example.com:22"
    );
    // The bastion moved into the group whose default chain names it connects directly.
    service
        .put(
            &format!("/api/hosts/{bastion}/move"),
            &json!({"group_id": top}),
        )
        .expect(200);
    let direct = service
        .post(&format!("/api/hosts/{bastion}/connect"), &json!({}))
        .expect(200);
    assert!(
        direct["credentials"].get("proxy_jump").is_none(),
        "{direct}"
    );
    // Back in dmz, then outer jumps through far, whose route passes bastion and outer again:
    // a loop only the groups' chains make, which no write of a host's own chain can see.
    service
        .put(
            &format!("/api/hosts/{bastion}/move"),
            &json!({"group_id": dmz}),
        )
        .expect(200);
    service
        .put(
            &format!("/api/hosts/{outer}"),
            &json!({"jump_host_ids": [far]}),
        )
        .expect(200);
    let error = service
        .post(&format!("/api/hosts/{far}/connect"), &json!({}))
        .assert_error(400, "INVALID_JUMP_CHAIN");
    assert!(
        error["details"].as_str().unwrap().contains("loops"),
        "{error}"
    );
}

/// An identity named by a group default gives the host its username and auth: the effective
/// view says `identity:<id>` via `group:<id>` and what the identity's username hides; the
/// export points `IdentityFile` at the identity's key, and `ssh -G` reads it back.
#[test]
fn an_identity_named_by_a_group_default_is_a_source_via_that_group_in_view_and_export() {
    let service = Service::start("inherit-identity-source");
    let key = service
        .post("/api/keys", &json!({"name": "team-key", "type": "ed25519"}))
        .expect(201);
    let key_id = key["id"].as_str().unwrap().to_owned();
    let identity = id_of(
        &service
            .post(
                "/api/identities",
                &json!({"name": "team", "username": "teamuser", "auth": [{"type": "key", "key_id": key_id}]}),
            )
            .expect(201),
    );
    let top = group(&service, "top", None, json!({"username": "topuser"}));
    let middle = group(
        &service,
        "middle",
        Some(&top),
        json!({"identity_id": identity}),
    );
    let id = host(&service, "via-identity", json!({"group_id": middle}));
    let fields = effective(&service, &id);
    let via_identity = json!(format!("identity:{identity}"));
    assert_eq!(fields["username"]["value"], "teamuser");
    assert_eq!(fields["username"]["source"], via_identity);
    assert_eq!(fields["username"]["via"], format!("group:{middle}"));
    assert_eq!(
        fields["username"]["hides"],
        json!({"value": "topuser", "source": format!("group:{top}")})
    );
    assert_eq!(fields["auth"]["source"], via_identity);
    assert_eq!(fields["auth"]["value"][0]["key_id"], json!(key_id));
    assert_eq!(
        fields["identity_id"],
        json!({"value": identity, "source": format!("group:{middle}")})
    );
    // The host's own identity hides the group's.
    let own = id_of(
        &service
            .post(
                "/api/identities",
                &json!({"name": "own", "username": "ownuser", "auth": [{"type": "agent"}]}),
            )
            .expect(201),
    );
    service
        .put(&format!("/api/hosts/{id}"), &json!({"identity_id": own}))
        .expect(200);
    let fields = effective(&service, &id);
    assert_eq!(fields["identity_id"]["source"], "host");
    assert_eq!(fields["identity_id"]["hides"]["value"], json!(identity));
    assert_eq!(fields["username"]["value"], "ownuser");
    assert_eq!(fields["username"]["via"], "host");
    service
        .put(&format!("/api/hosts/{id}"), &json!({"identity_id": null}))
        .expect(200);
    let text = service.get("/api/export/ssh-config").text();
    let config = crate::support::fresh_dir("inherit-identity-config").join("config");
    std::fs::write(&config, &text).unwrap();
    let resolved = crate::interop::ssh_g(&config, "via-identity");
    assert_eq!(resolved["user"], "teamuser");
    assert!(
        resolved["identityfile"].contains(&key_id),
        "the identity's key: {resolved:?}\n{text}"
    );
}

/// Deleting a group moves its hosts up, where they inherit from the parent: a delete that
/// would leave one without a username is refused and changes nothing; one that does not,
/// goes through.
#[test]
fn deleting_the_group_that_gives_hosts_their_username_is_refused_whole() {
    let service = Service::start("inherit-group-delete");
    let top = group(&service, "top", None, json!({"port": 2200}));
    let giver = group(&service, "giver", Some(&top), json!({"username": "given"}));
    let id = host(
        &service,
        "h",
        json!({"group_id": giver, "auth": {"type": "agent"}}),
    );
    let error = service
        .delete(&format!("/api/groups/{giver}"))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        error["details"].as_str().unwrap().starts_with("username"),
        "{error}"
    );
    let kept = service.get(&format!("/api/hosts/{id}")).expect(200);
    assert_eq!(kept["group_id"], json!(giver), "nothing moved");
    service
        .put(
            &format!("/api/groups/{top}"),
            &json!({"defaults": {"username": "above"}}),
        )
        .expect(200);
    let status = service.delete(&format!("/api/groups/{giver}")).status;
    assert_eq!(status, 204);
    let fields = effective(&service, &id);
    assert_eq!(fields["username"]["value"], "above");
    assert_eq!(fields["port"]["value"], 2200);
}
