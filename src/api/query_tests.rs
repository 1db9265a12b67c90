//! The query language's property test (docs/query.md): random catalogues built through the
//! real handlers, random queries from the grammar, and every page the list answers equal to
//! what the plain evaluator (`model::query::matches`) keeps over the same rows, in the same
//! order and pages. The plain side reads each host's facts on its own (one host's effective
//! values as `GET /api/hosts/:id/effective` resolves them), not through the list's code.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use rusqlite::Connection;
use serde_json::{json, Value};
use zeroize::Zeroizing;

use crate::fuzz::{settings, Rng};
use crate::http::{Method, Req};
use crate::model::host::Host;
use crate::model::host_query::{Find, HostQuery};
use crate::model::query::{matches, parse, HostFacts};
use crate::router;
use crate::state::AppState;
use crate::store;
use crate::store::inherit::Inheritance;
use crate::vault::{DataKey, Vault};

const NAMES: &[&str] = &[
    "Web",
    "web",
    "DB",
    "db-Prod",
    "Cache",
    "Ünïcode",
    "İstanbul",
    "edge",
];
const HOSTNAMES: &[&str] = &[
    "web1.example.com",
    "WEB2.Example.com",
    "db.lan",
    "10.0.0.5",
    "10.1.2.3",
    "192.168.1.20",
    "2001:db8::5",
    "2001:DB8:0::9",
    "cache-a.internal",
];
const TAGS: &[&str] = &["prod", "Prod", "dev", "eu", "a b"];
const USERS: &[&str] = &["root", "deploy", "Root"];
const GROUP_NAMES: &[&str] = &["DC1", "Web", "db", "Edge", "dc2"];

fn call(state: &AppState, method: Method, target: &str, body: Value) -> (u16, Value) {
    let bytes = match body {
        Value::Null => Vec::new(),
        body => body.to_string().into_bytes(),
    };
    let req = Req::new(method, target, Zeroizing::new(bytes)).unwrap();
    match router::route(state, &req) {
        Ok(reply) => (
            reply.status,
            serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
        ),
        Err(err) => (err.status(), Value::Null),
    }
}

fn created(state: &AppState, target: &str, body: Value) -> Option<String> {
    let (status, reply) = call(state, Method::Post, target, body);
    (status == 201).then(|| reply["id"].as_str().unwrap().to_owned())
}

/// Up to `n` of `items`, none twice.
fn some<T: Clone + PartialEq>(rng: &mut Rng, items: &[T], n: usize) -> Vec<T> {
    let mut picked: Vec<T> = Vec::new();
    for _ in 0..rng.below(n + 1) {
        if let Some(item) = rng.pick_any(items) {
            if !picked.contains(item) {
                picked.push(item.clone());
            }
        }
    }
    picked
}

/// A random catalogue: keys, identities, nested groups with defaults, hosts with every
/// field the query language reads, forwards, and times spread over months.
fn catalogue(rng: &mut Rng) -> AppState {
    let state = AppState::for_tests(Vault::NoPassword(DataKey::generate()));
    let keys: Vec<String> = ["deploy", "Laptop", "ci"]
        .iter()
        .filter_map(|name| {
            created(
                &state,
                "/api/keys",
                json!({"name": name, "type": "ed25519"}),
            )
        })
        .collect();
    let mut identities = Vec::new();
    for name in ["ops", "Admin", "backup"] {
        let mut auth = vec![];
        if rng.below(2) == 0 {
            auth.push(json!({"type": "key", "key_id": rng.pick(&keys)}));
        }
        match rng.below(3) {
            0 => auth.push(json!({"type": "password", "password": "pw"})),
            1 => auth.push(json!({"type": "agent"})),
            _ => {}
        }
        let mut body = json!({"name": name, "auth": auth});
        if rng.below(2) == 0 {
            body["username"] = json!(rng.pick(USERS));
        }
        identities.extend(created(&state, "/api/identities", body));
    }
    let mut groups: Vec<String> = Vec::new();
    for _ in 0..6 {
        let mut body = json!({"name": rng.pick(GROUP_NAMES)});
        if let Some(parent) = rng.pick_any(&groups).filter(|_| rng.below(3) > 0) {
            body["parent_id"] = json!(parent);
        }
        let mut defaults = serde_json::Map::new();
        if rng.below(3) == 0 {
            defaults.insert("username".into(), json!(rng.pick(USERS)));
        }
        if rng.below(3) == 0 {
            defaults.insert("port".into(), json!([22, 2200, 2222][rng.below(3)]));
        }
        if rng.below(3) == 0 {
            defaults.insert("identity_id".into(), json!(rng.pick(&identities)));
        }
        body["defaults"] = Value::Object(defaults);
        if let Some(id) = created(&state, "/api/groups", body) {
            if rng.below(4) == 0 {
                let rule = json!({"type": "dynamic", "bind_port": 1080 + groups.len(), "autostart": false});
                created(&state, &format!("/api/groups/{id}/forwards"), rule);
            }
            groups.push(id);
        }
    }
    let mut hosts: Vec<String> = Vec::new();
    for n in 0..40 {
        let name = format!("{}-{}", rng.pick(NAMES), n % 7);
        let mut body = json!({"name": name, "hostname": rng.pick(HOSTNAMES)});
        match rng.below(4) {
            0 => body["auth"] = json!({"type": "agent"}),
            1 => body["auth"] = json!({"type": "password", "password": "x"}),
            2 => body["auth"] = json!({"type": "key", "key_id": rng.pick(&keys)}),
            _ => body["identity_id"] = json!(rng.pick(&identities)),
        }
        if rng.below(2) == 0 {
            body["username"] = json!(rng.pick(USERS));
        }
        if rng.below(2) == 0 {
            body["port"] = json!([22, 2201, 2299, 8022][rng.below(4)]);
        }
        if let Some(group) = rng.pick_any(&groups).filter(|_| rng.below(4) > 0) {
            body["group_id"] = json!(group);
        }
        body["tags"] = json!(some(rng, TAGS, 2));
        body["is_favorite"] = json!(rng.below(4) == 0);
        if rng.below(3) == 0 {
            body["notes"] = json!(["Behind the LB", "owner: Ops", "ÜBER note"][rng.below(3)]);
        }
        if rng.below(4) == 0 && !hosts.is_empty() {
            body["jump_host_ids"] = json!(some(rng, &hosts, 2));
        }
        let Some(id) = created(&state, "/api/hosts", body) else {
            continue;
        };
        if rng.below(5) == 0 {
            let rule = json!({"type": "local", "bind_port": 20000 + n, "target_host": "db", "target_port": 5432, "autostart": false});
            created(&state, &format!("/api/hosts/{id}/forwards"), rule);
        }
        hosts.push(id);
    }
    state
        .db
        .write(|tx| {
            for id in &hosts {
                let created = time(NOW - rng.below(90 * 86_400) as i64);
                let used = (rng.below(3) > 0).then(|| time(NOW - rng.below(60 * 86_400) as i64));
                tx.execute(
                    "UPDATE hosts SET created_at = ?2, last_used_at = ?3 WHERE id = ?1",
                    rusqlite::params![id, created, used],
                )?;
            }
            Ok::<_, store::StoreError>(())
        })
        .unwrap();
    state
}

/// "Now" of every query: 2026-06-01T00:00:00Z.
const NOW: i64 = 1_780_272_000;

fn time(seconds: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds as u64);
    humantime::format_rfc3339_millis(at).to_string()
}

/// A random query text from the grammar, its values drawn from what catalogues hold (and
/// some they do not).
fn random_query(rng: &mut Rng) -> String {
    let mut terms = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let values: Vec<String> = (0..1 + rng.below(2)).map(|_| value(rng)).collect();
        let (key, _) = values[0].split_once('\u{1}').unwrap();
        let values: Vec<String> = values
            .iter()
            .filter(|value| value.starts_with(&format!("{key}\u{1}")))
            .map(|value| value.split_once('\u{1}').unwrap().1.to_owned())
            .collect();
        let sign = if rng.below(4) == 0 { "-" } else { "" };
        terms.push(match key {
            "" => format!("{sign}{}", values[0]),
            key => format!("{sign}{key}:{}", values.join(",")),
        });
    }
    terms.join(" ")
}

/// `key\u{1}value` (the key empty for a word), a value quoted when it must be.
fn value(rng: &mut Rng) -> String {
    let quoted = |text: &str| match text.contains([' ', ',']) {
        true => format!("\"{text}\""),
        false => text.to_owned(),
    };
    let (key, value): (&str, String) = match rng.below(13) {
        0 => (
            "",
            rng.pick(&["web", "DB", "ünï", "1", "example", "b-", "i̇s"])
                .to_string(),
        ),
        1 => (
            "notes",
            rng.pick(&["lb", "OPS", "über", "nothing"]).to_string(),
        ),
        2 => ("tag", quoted(TAGS[rng.below(TAGS.len())])),
        3 => {
            let path: Vec<&str> = (0..1 + rng.below(2))
                .map(|_| *rng.pick(GROUP_NAMES))
                .collect();
            ("group", path.join("/").to_lowercase())
        }
        4 => (
            "host",
            rng.pick(&[
                "*.example.com",
                "web?.*",
                "10.0.0.0/8",
                "2001:db8::/32",
                "10.0.0.5",
                "db.lan",
                "*",
            ])
            .to_string(),
        ),
        5 => ("user", rng.pick(USERS).to_string()),
        6 => (
            "port",
            rng.pick(&["22", "2200-2299", "8022", "1-100"]).to_string(),
        ),
        7 => (
            "identity",
            rng.pick(&["ops", "ADMIN", "backup", "none"]).to_string(),
        ),
        8 => ("key", rng.pick(&["deploy", "laptop", "CI"]).to_string()),
        9 => (
            "via",
            format!("{}-{}", rng.pick(NAMES).to_lowercase(), rng.below(7)),
        ),
        10 => (
            "has",
            rng.pick(&["forwards", "password", "key", "notes", "chain"])
                .to_string(),
        ),
        11 => ("is", "favorite".to_string()),
        _ => {
            let key = if rng.below(2) == 0 { "used" } else { "created" };
            let value = rng
                .pick(&["<7d", ">30d", "<2w", ">1h", "<45d", "never"])
                .to_string();
            (
                key,
                if key == "created" && value == "never" {
                    ">1d".into()
                } else {
                    value
                },
            )
        }
    };
    format!("{key}\u{1}{value}")
}

/// One host's facts, read on its own (the plain side of the property).
fn facts_of(conn: &Connection, host: &Host) -> HostFacts {
    let effective = Inheritance::for_host(conn, host).unwrap().resolve(host);
    let mut lineage = Vec::new();
    let mut next = host.group_id.clone();
    while let Some(id) = next {
        let group = store::groups::by_id(conn, &id).unwrap();
        lineage.push((group.id.clone(), group.name.clone()));
        next = group.parent_id;
    }
    lineage.reverse();
    let ids: Vec<&String> = lineage.iter().map(|(id, _)| id).collect();
    let forwards: i64 = conn
        .query_row(
            "SELECT count(*) FROM forwards WHERE host_id = ?1 OR group_id IN (SELECT value FROM json_each(?2))",
            rusqlite::params![host.id, serde_json::to_string(&ids).unwrap()],
            |row| row.get(0),
        )
        .unwrap();
    let seconds = |text: &str| {
        let at = humantime::parse_rfc3339(text).unwrap();
        at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
    };
    HostFacts {
        name: host.name.clone(),
        hostname: host.hostname.clone(),
        notes: host.notes.clone(),
        tags: host.tags.clone(),
        group_path: lineage.iter().map(|(_, name)| name.clone()).collect(),
        group_ids: lineage.iter().map(|(id, _)| id.clone()).collect(),
        user: effective.username().map(str::to_owned),
        port: effective.port(),
        identity: effective.identity_id().map(|id| {
            store::identities::by_id(conn, id)
                .unwrap()
                .fields
                .name
                .as_str()
                .to_owned()
        }),
        keys: effective
            .auth_keys()
            .iter()
            .map(|id| store::keys::by_id(conn, id).unwrap().name)
            .collect(),
        chain: effective
            .jump_host_ids
            .value
            .iter()
            .map(|id| store::hosts::by_id(conn, id).unwrap().name)
            .collect(),
        has_password: effective.holds_password(),
        has_forwards: forwards > 0,
        is_favorite: host.is_favorite,
        last_used_at: host.last_used_at.as_deref().map(seconds),
        created_at: seconds(&host.created_at),
        now: NOW,
    }
}

/// Every host id in `sort`'s order as the list defines it (key, then id; never-used last).
fn ordered_ids(conn: &Connection, sort: &str, desc: bool) -> Vec<String> {
    let key = match sort {
        "hostname" => "lower(hostname)",
        "created_at" => "created_at",
        "last_used_at" => "last_used_at",
        _ => "name_key",
    };
    let order = match desc {
        false => format!("{key} IS NULL, {key}, id"),
        true => format!("{key} IS NULL, {key} DESC, id DESC"),
    };
    let mut statement = conn
        .prepare(&format!("SELECT id FROM hosts ORDER BY {order}"))
        .unwrap();
    let ids = statement.query_map([], |row| row.get(0)).unwrap();
    ids.collect::<Result<_, _>>().unwrap()
}

#[test]
fn every_query_page_equals_the_plain_evaluators_over_the_same_rows() {
    let (iterations, seed) = settings("query property", 0x0051_EA7C);
    let mut rng = Rng::new(seed);
    let catalogues = (iterations / 2_000).clamp(3, 50);
    let (mut nonempty, mut checked) = (0, 0);
    for _ in 0..catalogues {
        let state = catalogue(&mut rng);
        let (hosts, facts): (Vec<Host>, HashMap<String, HostFacts>) = state
            .db
            .read(|conn| {
                let mut hosts = store::catalogue::all_hosts(conn)?;
                store::catalogue::fill_tags(conn, &mut hosts)?;
                crate::store::interop::fill_extensions(conn, &mut hosts)?;
                let facts = hosts
                    .iter()
                    .map(|host| (host.id.clone(), facts_of(conn, host)));
                let facts = facts.collect();
                Ok::<_, store::StoreError>((hosts, facts))
            })
            .unwrap();
        assert!(hosts.len() > 10, "the catalogue has hosts to find");
        for _ in 0..40 {
            let text = random_query(&mut rng);
            let query = parse(&text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
            let sort = *rng.pick(&["name", "hostname", "created_at", "last_used_at"]);
            let desc = rng.below(2) == 0;
            let (page, per_page) = (1 + rng.below(3) as u64, 1 + rng.below(15) as u64);
            let pairs = [
                ("sort", sort.to_owned()),
                ("order", (if desc { "desc" } else { "asc" }).to_owned()),
                ("page", page.to_string()),
                ("per_page", per_page.to_string()),
            ];
            let mut list_query = HostQuery::parse(|name| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.as_str())
            })
            .unwrap();
            list_query.find = Some(Find {
                query: query.clone(),
                now: NOW,
            });
            let (rows, total) = state
                .db
                .read_list(|conn, memory| store::list::rows::list(conn, memory, &list_query))
                .unwrap();
            let listed: Vec<String> = rows
                .iter()
                .map(|row| {
                    serde_json::from_str::<Value>(row.get()).unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            let kept: Vec<String> = state
                .db
                .read(|conn| Ok::<_, store::StoreError>(ordered_ids(conn, sort, desc)))
                .unwrap()
                .into_iter()
                .filter(|id| matches(&query, &facts[id]).is_some())
                .collect();
            let skip = ((page - 1) * per_page) as usize;
            let expected: Vec<String> = kept
                .iter()
                .skip(skip)
                .take(per_page as usize)
                .cloned()
                .collect();
            assert_eq!(
                (listed, total),
                (expected, kept.len() as u64),
                "q={text:?} sort={sort} desc={desc} page={page} per_page={per_page}"
            );
            checked += 1;
            nonempty += usize::from(!kept.is_empty() && kept.len() < hosts.len());
        }
    }
    assert!(
        nonempty * 4 > checked,
        "most queries keep some hosts but not all ({nonempty} of {checked})"
    );
}
