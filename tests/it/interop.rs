//! OpenSSH interop: ProxyJump chains and kept directives on hosts, import of
//! an `~/.ssh/config`, export judged by OpenSSH's own `ssh -G`, and a real login to a
//! throwaway `sshd` with a key the service generated.

use serde_json::{json, Value};

use crate::support::{host_body, Service};

/// A valid create body named `name`, at `<name>.example.com`; `extra` fields are merged in
/// (and may override).
fn host(name: &str, extra: Value) -> Value {
    let hostname = format!("{}.example.com", name.to_lowercase());
    host_body(name, &hostname, extra)
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
    assert_eq!(got["jump_host_ids"], json!(null), "absent: inherited");
    assert_eq!(got["ssh_options"], json!([]));
    let list = service.get("/api/hosts").expect(200);
    assert_eq!(list["items"][0]["jump_host_ids"], json!(null));
    let direct = create(&service, "Direct", json!({"jump_host_ids": []}));
    let got = service.get(&format!("/api/hosts/{direct}")).expect(200);
    assert_eq!(
        got["jump_host_ids"],
        json!([]),
        "[]: a direct connection of its own"
    );
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
fn put_without_jump_host_ids_keeps_the_chain_empty_clears_it_and_null_inherits() {
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
    assert_eq!(nulled["jump_host_ids"], json!(null), "null: inherited");
    assert_eq!(service.get(&path).expect(200)["jump_host_ids"], json!(null));
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
        json!(null),
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
    // While B's chain names A, A cannot go.
    service
        .delete(&format!("/api/hosts/{a}"))
        .assert_error(409, "HOST_IN_USE");
    service.delete(&format!("/api/hosts/{b}")).expect(204);
    // B's chain went with B: A is nobody's hop any more.
    service.delete(&format!("/api/hosts/{a}")).expect(204);
    service
        .get(&format!("/api/hosts/{a}"))
        .assert_error(404, "HOST_NOT_FOUND");
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
    let options = json!(["ServerAliveInterval 30", "Compression=yes"]);
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

/// Runs OpenSSH's evaluator: `ssh -G -F config alias`, as `keyword -> value` (first wins).
pub(crate) fn ssh_g(
    config: &std::path::Path,
    alias: &str,
) -> std::collections::HashMap<String, String> {
    let output = std::process::Command::new("ssh")
        .args(["-G", "-F"])
        .arg(config)
        .arg(alias)
        .output()
        .expect("ssh (openssh-client) runs; scripts/test installs it");
    assert!(
        output.status.success(),
        "ssh -G {alias} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut values = std::collections::HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if let Some((keyword, value)) = line.split_once(' ') {
            values
                .entry(keyword.to_owned())
                .or_insert_with(|| value.to_owned());
        }
    }
    values
}

/// A catalogue with nested groups, IPv6 hosts, a 3-hop chain whose first hop has its own
/// chain, a key host, clashing names and kept directives. Returns (group ids, host ids).
fn build_catalogue(service: &Service) -> (Vec<String>, Vec<String>) {
    let group = |name: &str, parent: Option<&str>| {
        let created = service
            .post("/api/groups", &json!({"name": name, "parent_id": parent}))
            .expect(201);
        created["id"].as_str().expect("group id").to_owned()
    };
    let prod = group("Prod", None);
    let eu = group("EU", Some(&prod));
    let edge = create(
        service,
        "Edge",
        json!({"hostname": "edge.example.net", "port": 2022, "username": "gate"}),
    );
    let bastion = create(
        service,
        "Bastion V6",
        json!({"hostname": "2001:db8::10", "port": 2201, "username": "ops",
               "jump_host_ids": [edge]}),
    );
    let relay = create(
        service,
        "relay",
        json!({"hostname": "10.1.2.3", "group_id": prod}),
    );
    let inner = create(
        service,
        "Inner",
        json!({"hostname": "fd00::7", "port": 22022, "username": "admin", "group_id": eu}),
    );
    let key = service
        .post("/api/keys", &json!({"name": "deploy", "type": "ed25519"}))
        .expect(201);
    let target = create(
        service,
        "Web 1",
        json!({"hostname": "web1.eu.example.com", "port": 8022, "username": "deploy",
               "group_id": eu, "jump_host_ids": [bastion, relay, inner],
               "auth": {"type": "key", "key_id": key["id"]},
               "ssh_options": ["ServerAliveInterval 30", "Compression=yes"]}),
    );
    let twin = create(service, "web 1", json!({"hostname": "web1b.example.com"}));
    (
        vec![prod, eu],
        vec![edge, bastion, relay, inner, target, twin],
    )
}

#[test]
fn ssh_g_resolves_every_exported_host_exactly_as_the_catalogue_holds_it() {
    let service = Service::start("interop-export-ssh-g");
    build_catalogue(&service);
    let response = service.get("/api/export/ssh-config");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let text = response.text();
    let dir = crate::support::fresh_dir("interop-export-ssh-g-conf");
    let config = dir.join("exported.conf");
    std::fs::write(&config, &text).expect("write config");
    let hosts = service.get("/api/hosts?per_page=100").expect(200);
    let items = hosts["items"].as_array().expect("items");
    assert_eq!(items.len(), 6);
    let alias_of = |host: &Value| -> String {
        let id = host["id"].as_str().expect("id");
        let name = host["name"].as_str().expect("name");
        // The export names each host in a comment right above its Host line.
        let marker = format!("# host-manager name: {name}\nHost ");
        let mut found = text.match_indices(&marker).map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            rest.lines().next().unwrap_or_default().to_owned()
        });
        let alias = found.next().expect("host exported");
        if let Some(other) = found.next() {
            panic!("name {name} ({id}) exported twice: {alias}, {other}");
        }
        alias
    };
    let by_id: std::collections::HashMap<String, &Value> = items
        .iter()
        .map(|host| (host["id"].as_str().unwrap().to_owned(), host))
        .collect();
    let mut seen_aliases = std::collections::HashSet::new();
    for host in items {
        let alias = alias_of(host);
        assert!(seen_aliases.insert(alias.clone()), "alias {alias} repeats");
        let resolved = ssh_g(&config, &alias);
        assert_eq!(
            resolved["hostname"].to_lowercase(),
            host["hostname"].as_str().unwrap().to_lowercase(),
            "{alias}"
        );
        assert_eq!(resolved["port"], host["port"].to_string(), "{alias}");
        assert_eq!(
            resolved["user"],
            host["username"].as_str().unwrap(),
            "{alias}"
        );
        // No groups here: a chain that inherits (null) is the built-in direct connection.
        let chain: Vec<String> = host["jump_host_ids"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|id| alias_of(by_id[id.as_str().unwrap()]))
            .collect();
        match chain.is_empty() {
            true => assert!(!resolved.contains_key("proxyjump"), "{alias}: {resolved:?}"),
            false => assert_eq!(resolved["proxyjump"], chain.join(","), "{alias}"),
        }
    }
    let web = items.iter().find(|h| h["name"] == "Web 1").unwrap();
    let resolved = ssh_g(&config, &alias_of(web));
    assert_eq!(resolved["serveraliveinterval"], "30");
    assert_eq!(resolved["compression"], "yes");
    let key_id = web["auth"]["key_id"].as_str().unwrap();
    assert!(
        resolved["identityfile"].ends_with(&format!("/.ssh/host-manager/{key_id}")),
        "{resolved:?}"
    );
    assert!(!text.contains("PRIVATE KEY"), "no secret in the export");
}

#[test]
fn ssh_g_reads_exported_paths_holding_percent_tokens_literally() {
    let runtime = crate::support::fresh_dir("interop-percent").join("run%d%h%%");
    std::fs::create_dir_all(&runtime).expect("runtime dir");
    let service = Service::start_env(
        "interop-percent",
        &[("XDG_RUNTIME_DIR", &runtime.to_string_lossy())],
    );
    let agent = service.get("/api/agent").expect(200);
    let socket = agent["socket"].as_str().expect("socket path").to_owned();
    assert!(socket.contains("%d%h%%"), "{socket}");
    let key = service
        .post("/api/keys", &json!({"name": "deploy", "type": "ed25519"}))
        .expect(201);
    create(
        &service,
        "Web",
        json!({"auth": {"type": "key", "key_id": key["id"]}}),
    );
    let text = service.get("/api/export/ssh-config?agent=true").text();
    let config = runtime.join("exported.conf");
    std::fs::write(&config, &text).expect("write config");
    let resolved = ssh_g(&config, "web");
    assert_eq!(resolved["identityagent"], socket, "{text}");
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(
        resolved["userknownhostsfile"],
        format!("{home}/.ssh/host-manager/known_hosts"),
        "{text}"
    );
}

#[test]
fn export_of_a_group_holds_its_subtree_and_the_hops_their_chains_need() {
    let service = Service::start("interop-export-group");
    let (groups, hosts) = build_catalogue(&service);
    let text = service
        .get(&format!("/api/export/ssh-config?group={}", groups[1]))
        .text();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# host-manager name: "))
        .collect();
    // EU holds Inner and Web 1; Web 1's chain needs Bastion V6 (which needs Edge) and relay.
    assert_eq!(names, vec!["Edge", "Bastion V6", "relay", "Inner", "Web 1"]);
    let all = service.get("/api/export/ssh-config").text();
    for line in text.lines().filter(|line| line.starts_with("Host ")) {
        assert!(
            all.contains(line),
            "{line} keeps its alias in the full export"
        );
    }
    service
        .get("/api/export/ssh-config?group=dddddddd-0000-4000-8000-000000000004")
        .assert_error(404, "GROUP_NOT_FOUND");
    assert_eq!(hosts.len(), 6);
}

/// Starts a service whose environment says `USER` and `LOGNAME` as given (`""`: nothing),
/// and no `USERNAME`.
fn service_run_by(name: &str, user: &str, logname: &str) -> Service {
    Service::start_env(
        name,
        &[("USER", user), ("LOGNAME", logname), ("USERNAME", "")],
    )
}

/// The username the import gave the one block of `config`.
fn imported_username(service: &Service, config: &str) -> Value {
    let answer = service
        .post("/api/import/ssh-config", &json!({"config": config}))
        .expect(200);
    let id = answer["created"][0]["id"]
        .as_str()
        .expect("created")
        .to_owned();
    service.get(&format!("/api/hosts/{id}")).expect(200)["username"].clone()
}

#[test]
fn block_without_user_gets_user_then_logname_then_root_from_the_start_environment() {
    let config = "Host plain\n HostName plain.example.com\n";
    let by_user = service_run_by("interop-user-user", "ann", "bob");
    assert_eq!(imported_username(&by_user, config), "ann");
    let by_logname = service_run_by("interop-user-logname", "", "bob");
    assert_eq!(imported_username(&by_logname, config), "bob");
    let by_nobody = service_run_by("interop-user-root", "", "");
    assert_eq!(imported_username(&by_nobody, config), "root");
    let given = "Host given\n HostName given.example.com\n User carol\n";
    assert_eq!(imported_username(&by_user, given), "carol", "User wins");
}

#[test]
fn import_of_an_export_gives_back_the_same_hosts_and_reimport_changes_nothing() {
    let service = Service::start("interop-roundtrip");
    build_catalogue(&service);
    let text = service.get("/api/export/ssh-config").text();
    let again = service
        .post("/api/import/ssh-config", &json!({"config": text}))
        .expect(200);
    assert_eq!(again["created"], json!([]), "{again}");
    assert_eq!(again["updated"], json!([]), "{again}");
    assert_eq!(
        again["unchanged"].as_array().map(Vec::len),
        Some(6),
        "{again}"
    );
    assert_eq!(again["missing_keys"], json!([]), "{again}");

    // Into an empty catalogue: the same hosts, chains and directives (keys are missing
    // there: reported, and the IdentityFile line is kept).
    let fresh = Service::start("interop-roundtrip-fresh");
    let answer = fresh
        .post("/api/import/ssh-config", &json!({"config": text}))
        .expect(200);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(6),
        "{answer}"
    );
    assert_eq!(answer["skipped"], json!([]), "{answer}");
    assert_eq!(answer["missing_keys"].as_array().map(Vec::len), Some(1));
    let summary = |service: &Service| {
        let list = service.get("/api/hosts?per_page=100").expect(200);
        let items = list["items"].as_array().unwrap().clone();
        let name_of = |id: &Value| {
            items
                .iter()
                .find(|h| h["id"] == *id)
                .map(|h| h["name"].clone())
                .unwrap()
        };
        let mut rows: Vec<Value> = items
            .iter()
            .map(|h| {
                // An inherited chain with no group is the direct connection an import
                // writes as [] (docs/identities.md).
                let chain: Vec<Value> = h["jump_host_ids"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(name_of)
                    .collect();
                let options: Vec<Value> = h["ssh_options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|o| !o.as_str().unwrap().starts_with("IdentityFile"))
                    .cloned()
                    .collect();
                json!([
                    h["name"],
                    h["hostname"],
                    h["port"],
                    h["username"],
                    chain,
                    options
                ])
            })
            .collect();
        rows.sort_by_key(|row| row.to_string());
        rows
    };
    assert_eq!(summary(&fresh), summary(&service));
}

const REALISTIC: &str = r#"# ~/.ssh/config of a busy admin
Include ~/.ssh/config.d/*

Host *
    ServerAliveInterval 60
    AddKeysToAgent yes

Host bastion
    HostName bastion.example.com
    User   jump
    Port=2222

HOST app app.prod
    hostname = 10.0.0.5
    user=deploy
    ProxyJump bastion
    LocalForward 8080 localhost:80
    IdentityFile ~/.ssh/id_app

Host "quoted host"
    HostName q.example.com
Host db
    HostName db.internal   # trailing comment
    User "db_admin"
    RemoteCommand "tmux new -A -s main"
    IdentityFile ~/.ssh/id_db

Host *.corp !secret.corp
    User corp

Match host *.example.org exec "test -f /tmp/x"
    User matcher

Host lost
    HostName lost.example.com
    ProxyJump nowhere

Host broken
    Port 99999
"#;

#[test]
fn realistic_config_reports_each_blocks_outcome() {
    let service = Service::start("interop-import-realistic");
    let key_file = crate::support::fresh_dir("interop-realistic-key").join("id_db");
    let key = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "db", "-f"])
        .arg(&key_file)
        .status()
        .expect("ssh-keygen runs");
    assert!(key.success());
    let private_key = std::fs::read_to_string(&key_file).unwrap();
    let body = json!({"config": REALISTIC, "keys": {"~/.ssh/id_db": private_key}});
    let dry = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": REALISTIC, "dry_run": true, "keys": body["keys"]}),
        )
        .expect(200);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        service.get("/api/hosts").expect(200)["total"],
        0,
        "a dry run writes nothing"
    );
    assert_eq!(service.get("/api/keys").expect(200)["items"], json!([]));

    let answer = service.post("/api/import/ssh-config", &body).expect(200);
    assert_eq!(answer["dry_run"], false);
    let names = |list: &str| -> Vec<String> {
        answer[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names("created"),
        vec!["bastion", "app", "quoted host", "db", "lost"]
    );
    assert_eq!(
        dry["created"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].clone())
            .collect::<Vec<_>>(),
        answer["created"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].clone())
            .collect::<Vec<_>>(),
        "the dry run announced exactly this"
    );
    assert!(dry["created"][0]["id"].is_null());
    let skipped: Vec<(String, String)> = answer["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["block"].as_str().unwrap().to_owned(),
                s["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert!(skipped[0].0.starts_with("Include") && skipped[0].1.contains("not supported"));
    assert!(skipped[1].0.starts_with("Host *") && skipped[1].1.contains("wildcard"));
    assert!(skipped[2].0.starts_with("Host *.corp !secret.corp"));
    assert!(skipped[3].0.starts_with("Match host *.example.org"));
    assert!(skipped[4].0.starts_with("Host broken") && skipped[4].1.contains("Port"));
    assert_eq!(
        answer["missing_keys"],
        json!([{"block": "Host app app.prod (line 13)", "identity_file": "~/.ssh/id_app"}])
    );
    let warnings = answer["warnings"].to_string();
    assert!(warnings.contains("nowhere"), "{warnings}");

    let hosts = service.get("/api/hosts?per_page=100").expect(200);
    let find = |name: &str| -> Value {
        hosts["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"] == name)
            .cloned()
            .unwrap()
    };
    let bastion = find("bastion");
    assert_eq!(
        (
            bastion["hostname"].clone(),
            bastion["port"].clone(),
            bastion["username"].clone()
        ),
        (json!("bastion.example.com"), json!(2222), json!("jump"))
    );
    let app = find("app");
    assert_eq!(app["hostname"], "10.0.0.5");
    assert_eq!(app["username"], "deploy");
    assert_eq!(app["jump_host_ids"], json!([bastion["id"]]));
    assert_eq!(app["auth"]["type"], "agent");
    assert_eq!(app["ssh_options"], json!(["IdentityFile ~/.ssh/id_app"]));
    // docs/forwards.md: a forward becomes a rule, not an option.
    let rules = service
        .get(&format!(
            "/api/hosts/{}/forwards",
            app["id"].as_str().unwrap()
        ))
        .expect(200);
    assert_eq!(rules["items"].as_array().map(Vec::len), Some(1), "{rules}");
    assert_eq!(
        (
            rules["items"][0]["type"].clone(),
            rules["items"][0]["bind_port"].clone(),
            rules["items"][0]["target_host"].clone(),
            rules["items"][0]["target_port"].clone()
        ),
        (json!("local"), json!(8080), json!("localhost"), json!(80))
    );
    let quoted = find("quoted host");
    assert_eq!(quoted["hostname"], "q.example.com");
    let db = find("db");
    assert_eq!(db["hostname"], "db.internal");
    assert_eq!(db["username"], "db_admin", "quotes removed");
    assert_eq!(db["auth"]["type"], "key");
    assert_eq!(db["ssh_options"], json!([]));
    // ssh takes the rest of a RemoteCommand line as it is, quotes included.
    assert_eq!(db["remote_command"], "\"tmux new -A -s main\"");
    let keys = service.get("/api/keys").expect(200);
    assert_eq!(keys["items"][0]["name"], "id_db");
    assert_eq!(keys["items"][0]["id"], db["auth"]["key_id"]);
    let lost = find("lost");
    assert_eq!(lost["jump_host_ids"], json!([]));
    assert_eq!(lost["ssh_options"], json!(["ProxyJump nowhere"]));

    let again = service.post("/api/import/ssh-config", &body).expect(200);
    assert_eq!(again["created"], json!([]), "{again}");
    assert_eq!(
        again["unchanged"].as_array().map(Vec::len),
        Some(5),
        "{again}"
    );
    assert_eq!(
        service.get("/api/keys").expect(200)["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// A throwaway OpenSSH server on a loopback port with its own host key and config, killed
/// on drop. Fails the test (never skips it) when sshd cannot be started. Its config also
/// names `host_key_ecdsa`, missing at start: sshd loads host keys again for each
/// connection, so a test that creates that file (or rewrites `host_key`) changes what the
/// server presents from the next connection on (tests/it/known_hosts.rs).
pub(crate) struct Sshd {
    child: std::process::Child,
    pub(crate) port: u16,
    pub(crate) dir: std::path::PathBuf,
}

impl Sshd {
    /// `ssh` to this server as `user` with `identity` alone (`-i`, `IdentitiesOnly`), no
    /// known-hosts file and no config file, `options` (such as `-o BatchMode=yes`) added
    /// before the destination; the caller adds the remote command. stdin is closed.
    pub(crate) fn ssh(
        &self,
        user: &str,
        identity: &std::path::Path,
        options: &[&str],
    ) -> std::process::Command {
        let mut command = std::process::Command::new("ssh");
        command
            .args(["-F", "/dev/null", "-i"])
            .arg(identity)
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "PreferredAuthentications=publickey",
                "-o",
                // A deadline for a hang, not a measure: the local sshd answers in
                // milliseconds.
                "ConnectTimeout=60",
            ])
            .args(options)
            .arg("-p")
            .arg(self.port.to_string())
            .arg(format!("{user}@127.0.0.1"))
            .stdin(std::process::Stdio::null());
        command
    }

    pub(crate) fn start(name: &str) -> Sshd {
        Sshd::start_with(name, |_| String::new())
    }

    /// `start`, with `extra` lines (such as `TrustedUserCAKeys FILE`) at the end of the
    /// server's config.
    pub(crate) fn start_with_config(name: &str, extra: &str) -> Sshd {
        Sshd::start_with(name, |_| extra.to_string())
    }

    /// `start`, with the lines `extra` returns added to sshd_config; `extra` is given the
    /// server's directory, which holds its ed25519 `host_key` (and `host_key.pub`) already
    /// (to sign a `HostCertificate`, say).
    pub(crate) fn start_with(name: &str, extra: impl FnOnce(&std::path::Path) -> String) -> Sshd {
        let sshd = std::path::Path::new("/usr/sbin/sshd");
        assert!(
            sshd.exists(),
            "/usr/sbin/sshd is missing: install openssh-server (scripts/test does so as root)"
        );
        let dir = crate::support::fresh_dir(name);
        let host_key = dir.join("host_key");
        let keygen = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&host_key)
            .status()
            .expect("ssh-keygen runs");
        assert!(keygen.success(), "ssh-keygen could not make a host key");
        if is_root() {
            // sshd running as root insists on its privilege separation directory, which
            // the system's service unit normally creates at boot.
            std::fs::create_dir_all("/run/sshd").expect("create /run/sshd as root");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let config = dir.join("sshd_config");
        let extra = extra(&dir);
        std::fs::write(
            &config,
            // `extra` first: sshd keeps the first value of a keyword, so a test's line
            // (`PasswordAuthentication yes`) overrides these defaults.
            format!(
                "{extra}\nPort {port}\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\nHostKey {}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 StrictModes no\nUsePAM no\nPidFile none\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n",
                host_key.display(),
                dir.join("host_key_ecdsa").display(),
                dir.join("authorized_keys").display()
            ),
        )
        .expect("write sshd_config");
        let stderr = std::fs::File::create(dir.join("sshd.log")).expect("sshd log");
        let child = std::process::Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn /usr/sbin/sshd");
        let mut server = Sshd { child, port, dir };
        let listening = crate::support::wait_until(crate::support::EVENT_DEADLINE, || {
            server.log().contains("Server listening")
        });
        if !listening {
            let exited = server.child.try_wait().ok().flatten();
            panic!(
                "sshd did not start (exit: {exited:?}); its log:\n{}",
                server.log()
            );
        }
        server
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    pub(crate) fn authorize(&self, public_key: &str) {
        std::fs::write(self.dir.join("authorized_keys"), format!("{public_key}\n"))
            .expect("write authorized_keys");
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_root() -> bool {
    current_user() == "root"
}

pub(crate) fn current_user() -> String {
    let output = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("id -un runs");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Generates a key in the service (with `passphrase` when given), authorizes it on
/// `sshd`, stores a host for it and answers `connect`'s reply.
pub(crate) fn host_for_login(service: &Service, sshd: &Sshd, passphrase: Option<&str>) -> Value {
    let mut body = json!({"name": "login", "type": "ed25519"});
    if let Some(passphrase) = passphrase {
        body["passphrase"] = json!(passphrase);
    }
    let key = service.post("/api/keys", &body).expect(201);
    sshd.authorize(key["public_key"].as_str().expect("public_key"));
    let host = create(
        service,
        "Local sshd",
        json!({"hostname": "127.0.0.1", "port": sshd.port, "username": current_user(),
               "auth": {"type": "key", "key_id": key["id"]}}),
    );
    service
        .post(&format!("/api/hosts/{host}/connect"), &json!({}))
        .expect(200)
}

/// Writes the private key from `connect` as a 0600 file, as the desktop app does.
pub(crate) fn write_identity(sshd: &Sshd, credentials: &Value) -> std::path::PathBuf {
    use crate::support::WithMode;
    let path = sshd.dir.join("identity");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .with_mode(0o600)
        .open(&path)
        .expect("create identity file");
    std::io::Write::write_all(
        &mut file,
        credentials["private_key"]
            .as_str()
            .expect("private_key")
            .as_bytes(),
    )
    .expect("write identity");
    path
}

/// `ssh` to the local sshd as `credentials.username` with `options`, running `echo hello`.
fn ssh_login(
    sshd: &Sshd,
    credentials: &Value,
    identity: &std::path::Path,
    options: &[&str],
) -> std::process::Command {
    let user = credentials["username"].as_str().expect("username");
    let mut command = sshd.ssh(user, identity, options);
    command.args(["echo", "hello"]).env_remove("SSH_AUTH_SOCK");
    command
}

#[test]
fn ssh_logs_in_with_a_key_the_service_generated() {
    let sshd = Sshd::start("interop-login-sshd");
    let service = Service::start("interop-login");
    let answer = host_for_login(&service, &sshd, None);
    let credentials = &answer["credentials"];
    let identity = write_identity(&sshd, credentials);
    let output = ssh_login(&sshd, credentials, &identity, &["-o", "BatchMode=yes"])
        .output()
        .expect("ssh runs");
    assert_logged_in(&output, &sshd);
}

#[test]
fn ssh_logs_in_with_a_passphrase_protected_key_and_the_passphrase_from_connect() {
    let sshd = Sshd::start("interop-login-pass-sshd");
    let service = Service::start("interop-login-pass");
    let answer = host_for_login(&service, &sshd, Some("correct horse 11"));
    let credentials = &answer["credentials"];
    assert_eq!(credentials["passphrase"], "correct horse 11");
    let identity = write_identity(&sshd, credentials);
    // Without the passphrase the key does not open: the login below proves it was used.
    let refused = std::process::Command::new("ssh-keygen")
        .args(["-y", "-P", "", "-f"])
        .arg(&identity)
        .output()
        .expect("ssh-keygen runs");
    assert!(!refused.status.success(), "the key must be encrypted");
    // ssh asks SSH_ASKPASS for the passphrase; the script answers what connect gave.
    let askpass = sshd.dir.join("askpass");
    {
        use crate::support::WithMode;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .with_mode(0o700)
            .open(&askpass)
            .expect("create askpass");
        std::io::Write::write_all(
            &mut file,
            b"#!/bin/sh\nprintf '%s\\n' \"$HM_TEST_PASSPHRASE\"\n",
        )
        .expect("write askpass");
    }
    let output = ssh_login(&sshd, credentials, &identity, &[])
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .env(
            "HM_TEST_PASSPHRASE",
            credentials["passphrase"].as_str().expect("passphrase"),
        )
        .output()
        .expect("ssh runs");
    assert_logged_in(&output, &sshd);
}

#[test]
fn import_body_errors_name_the_field() {
    let service = Service::start("interop-import-errors");
    let path = "/api/import/ssh-config";
    let details = |error: Value| error["details"].as_str().unwrap_or_default().to_owned();
    let error = service
        .post(path, &json!({}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(details(error).starts_with("config: "));
    let error = service
        .post(path, &json!({"config": "Host a\n", "dry_run": "yes"}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(details(error).starts_with("dry_run: "));
    let error = service
        .post(path, &json!({"config": "Host a\n", "keys": ["x"]}))
        .assert_error(400, "VALIDATION_ERROR");
    assert!(details(error).starts_with("keys: "));
    let error = service
        .post(
            path,
            &json!({"config": "Host a\n IdentityFile ~/k\n", "keys": {"~/k": "not a key"}}),
        )
        .assert_error(400, "INVALID_KEY");
    assert!(details(error).starts_with("keys[~/k]: "));
    service
        .post(
            path,
            &json!({"config": "Host a\n", "group_id": "dddddddd-0000-4000-8000-000000000004"}),
        )
        .assert_error(404, "GROUP_NOT_FOUND");
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 0);
    service
        .put(path, &json!({}))
        .assert_error(405, "METHOD_NOT_ALLOWED");
    service
        .post("/api/export/ssh-config", &json!({}))
        .assert_error(405, "METHOD_NOT_ALLOWED");
}

#[test]
fn import_skips_blocks_whose_fields_the_hosts_api_refuses_so_connect_never_hands_them_out() {
    let service = Service::start("interop-import-field-rules");
    let config = "Host opt\n HostName opt.example.com\n User -oProxyCommand=touch${IFS}/tmp/pwn\n\
                  Host spaced\n HostName spaced.example.com\n User \"a -oProxyCommand=x\"\n\
                  Host at\n HostName at.example.com\n User ops@127.0.0.1\n\
                  Host dash\n HostName -oProxyCommand=x\n User ops\n\
                  Host good\n HostName good.example.com\n User ops\n";
    let answer = service
        .post("/api/import/ssh-config", &json!({"config": config}))
        .expect(200);
    let skipped = answer["skipped"].as_array().expect("skipped");
    let reasons: Vec<(&str, &str)> = skipped
        .iter()
        .map(|skip| {
            (
                skip["block"].as_str().unwrap_or_default(),
                skip["reason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(reasons.len(), 4, "{answer}");
    for (index, label) in ["Host opt ", "Host spaced ", "Host at "].iter().enumerate() {
        assert!(reasons[index].0.starts_with(label), "{answer}");
        assert!(reasons[index].1.starts_with("User must not"), "{answer}");
    }
    assert!(reasons[3].0.starts_with("Host dash ") && reasons[3].1.starts_with("HostName"));
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    let hosts = service.get("/api/hosts").expect(200);
    assert_eq!(hosts["total"], 1);
    let id = hosts["items"][0]["id"].as_str().expect("id");
    let connect = service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200);
    assert_eq!(connect["credentials"]["username"], "ops", "{connect}");
}

#[test]
fn import_into_a_group_and_a_proxyjump_loop_keeps_one_direction() {
    let service = Service::start("interop-import-loop");
    let group = service
        .post("/api/groups", &json!({"name": "Imported"}))
        .expect(201);
    let config = "Host a\n HostName a.example.com\n User u\n ProxyJump b\n\
                  Host b\n HostName b.example.com\n User u\n ProxyJump a\n";
    let answer = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": config, "group_id": group["id"]}),
        )
        .expect(200);
    assert_eq!(
        answer["created"].as_array().map(Vec::len),
        Some(2),
        "{answer}"
    );
    let warnings = answer["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{answer}");
    assert!(warnings[0]["block"].as_str().unwrap().starts_with("Host b"));
    assert!(warnings[0]["message"].as_str().unwrap().contains("cycle"));
    let hosts = service.get("/api/hosts?sort=name").expect(200);
    let items = hosts["items"].as_array().unwrap();
    assert_eq!(items[0]["jump_host_ids"], json!([items[1]["id"]]));
    assert_eq!(items[1]["jump_host_ids"], json!([]));
    assert!(items.iter().all(|h| h["group_id"] == group["id"]));
    assert!(items.iter().all(|h| h["username"] == "u"));
}

#[test]
fn imported_private_key_is_sealed_at_rest_and_never_exported() {
    let service = Service::start("interop-import-secret");
    let key_file = crate::support::fresh_dir("interop-secret-key").join("id_secret");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "c", "-f"])
        .arg(&key_file)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    let private_key = std::fs::read_to_string(&key_file).unwrap();
    let body: String = private_key
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let config = "Host s\n HostName s.example.com\n User u\n IdentityFile ~/.ssh/id_secret\n";
    let answer = service
        .post(
            "/api/import/ssh-config",
            &json!({"config": config, "keys": {"~/.ssh/id_secret": private_key}}),
        )
        .expect(200);
    assert_eq!(answer["missing_keys"], json!([]), "{answer}");
    let export = service.get("/api/export/ssh-config").text();
    assert!(!export.contains(&body[..40]), "{export}");
    assert!(
        export.contains("IdentityFile ~/.ssh/host-manager/"),
        "{export}"
    );
    for (path, bytes) in crate::support::read_all_files(&service.data_dir) {
        assert!(
            !crate::support::contains_bytes(&bytes, &body.as_bytes()[..40]),
            "private key text in {}",
            path.display()
        );
    }
}

#[test]
fn import_and_export_answer_401_while_the_vault_is_locked() {
    let service = Service::start("interop-locked");
    service
        .put(
            "/api/vault/password",
            &json!({"new_password": "master pw 1"}),
        )
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    service
        .get("/api/export/ssh-config")
        .assert_error(401, "VAULT_LOCKED");
    service
        .post("/api/import/ssh-config", &json!({"config": "Host a\n"}))
        .assert_error(401, "VAULT_LOCKED");
}

#[test]
fn ssh_reaches_a_host_through_the_proxy_jump_route_connect_answers() {
    let sshd = Sshd::start("interop-login-jump-sshd");
    let service = Service::start("interop-login-jump");
    let first = host_for_login(&service, &sshd, None);
    let key_id = first["credentials"]["key_id"].clone();
    let hop = |name: &str, hostname: &str, chain: Value| {
        create(
            &service,
            name,
            json!({"hostname": hostname, "port": sshd.port, "username": current_user(),
                   "auth": {"type": "key", "key_id": key_id}, "jump_host_ids": chain}),
        )
    };
    // Target <- Inner hop <- Outer hop (the login host itself), all on the one sshd under
    // different names (ssh refuses a hop that names its own destination).
    let outer = first["host"]["id"].clone();
    let inner = hop("Inner hop", "127.0.0.2", json!([outer]));
    let target = hop("Target", "localhost", json!([inner]));
    let answer = service
        .post(&format!("/api/hosts/{target}/connect"), &json!({}))
        .expect(200);
    let credentials = &answer["credentials"];
    let user = current_user();
    let port = sshd.port;
    assert_eq!(
        credentials["proxy_jump"],
        format!("{user}@127.0.0.1:{port},{user}@127.0.0.2:{port}")
    );
    let identity = write_identity(&sshd, credentials);
    // ssh hands -F to the ssh it starts for each hop, so the hops use the same identity.
    let config = sshd.dir.join("client_config");
    std::fs::write(
        &config,
        format!(
            "Host *\n    IdentityFile {}\n    IdentitiesOnly yes\n    BatchMode yes\n    \
             StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    LogLevel ERROR\n",
            identity.display()
        ),
    )
    .expect("write client config");
    let output = std::process::Command::new("ssh")
        .arg("-F")
        .arg(&config)
        .arg("-J")
        .arg(credentials["proxy_jump"].as_str().expect("proxy_jump"))
        .args(["-p", &port.to_string()])
        .arg(format!("{user}@localhost"))
        .args(["echo", "hello"])
        .stdin(std::process::Stdio::null())
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("ssh runs");
    assert_logged_in(&output, &sshd);
    // Three logins: two hops and the target.
    assert_eq!(
        sshd.log().matches("Accepted publickey").count(),
        3,
        "{}",
        sshd.log()
    );
}

/// The login ran the remote command: ssh exited 0 and printed what `echo hello` prints.
#[track_caller]
pub(crate) fn assert_logged_in(output: &std::process::Output, sshd: &Sshd) {
    assert!(
        output.status.success(),
        "ssh failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        sshd.log()
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "hello");
}
