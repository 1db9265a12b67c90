//! `GET /api/export/csv`, `/api/export/termius-csv` and `/api/export/json` (docs/import.md,
//! "Export"): the catalogue in interchange formats, so no one is trapped here.
//!
//! Invariants: passwords only with `?secrets=include` (the route needs the vault unlocked),
//! and each such export is written to the audit log with its format and count, never a value;
//! the sealed bytes are read under the database's lock and opened after it is let go.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::api::{JsonReply, Reply};
use crate::error::ApiError;
use crate::http::Req;
use crate::import::tabular::{self, ExportRow};
use crate::model::group::Group;
use crate::model::host::{AuthType, Host};
use crate::state::AppState;
use crate::store::{self, audit};
use crate::vault::{SealContext, Secret};

/// `?secrets=`: absent or `exclude` is false, `include` is true, anything else is 400.
fn secrets_wanted(req: &Req) -> Result<bool, ApiError> {
    match req.query("secrets") {
        None | Some("exclude") => Ok(false),
        Some("include") => Ok(true),
        Some(_) => Err(ApiError::parameter(
            "secrets",
            "must be \"include\" or \"exclude\"",
        )),
    }
}

/// What every export reads: hosts with effective values, groups, and (with secrets) each
/// host's own password.
struct Catalogue {
    /// Each host as stored, and with its inherited values resolved.
    hosts: Vec<(Host, Host)>,
    groups: Vec<Group>,
    passwords: HashMap<String, Secret>,
}

fn read(state: &AppState, secrets: bool, format: &str) -> Result<Catalogue, ApiError> {
    let load = |conn: &rusqlite::Connection| {
        let mut stored = store::catalogue::all_hosts(conn)?;
        store::catalogue::fill_tags(conn, &mut stored)?;
        let inheritance = store::inherit::Inheritance::load(conn)?;
        let hosts: Vec<(Host, Host)> = stored
            .into_iter()
            .map(|host| {
                let effective = inheritance.resolve(&host).flatten(&host);
                (host, effective)
            })
            .collect();
        Ok::<_, ApiError>((hosts, store::groups::all(conn)?))
    };
    // Only an export with secrets writes (its audit entry); the others are plain reads.
    let ((hosts, groups), sealed) = match secrets {
        false => (state.db.read(load)?, Vec::new()),
        true => state.db.write(|tx| {
            let loaded = load(tx)?;
            // Every sealed password in one query; a host's own are the ones exported.
            let mut all = store::imports::sealed_passwords(tx)?;
            let sealed: Vec<(String, Vec<u8>)> = loaded
                .0
                .iter()
                .filter_map(|(host, _)| all.remove_entry(&host.id))
                .collect();
            let detail = json!({ "format": format, "passwords": sealed.len() });
            audit::append(tx, audit::SECRETS_EXPORTED, format, &detail)?;
            Ok::<_, ApiError>((loaded, sealed))
        })?,
    };
    let mut passwords = HashMap::new();
    for (id, bytes) in sealed {
        let context = SealContext {
            table: "hosts",
            row_id: &id,
            field: "password",
        };
        let opened = state.session.vault().open(context, &bytes)?;
        passwords.insert(id, opened);
    }
    Ok(Catalogue {
        hosts,
        groups,
        passwords,
    })
}

/// Each group's path from the top, names joined with `/`.
fn group_paths(groups: &[Group]) -> HashMap<String, String> {
    let by_id: HashMap<&str, &Group> = groups
        .iter()
        .map(|group| (group.id.as_str(), group))
        .collect();
    let mut paths = HashMap::new();
    for group in groups {
        let mut names = vec![group.name.as_str()];
        let mut parent = group.parent_id.as_deref();
        // The tree's depth is bounded (model::group::MAX_DEPTH); the guard bounds a damaged one.
        while let Some(id) = parent.filter(|_| names.len() <= 64) {
            let Some(above) = by_id.get(id) else {
                break;
            };
            names.push(above.name.as_str());
            parent = above.parent_id.as_deref();
        }
        names.reverse();
        paths.insert(group.id.clone(), names.join("/"));
    }
    paths
}

/// One row per host, in creation order, with effective values.
fn rows<'a>(catalogue: &'a Catalogue, paths: &'a HashMap<String, String>) -> Vec<ExportRow<'a>> {
    let by_id: HashMap<&str, &Host> = catalogue
        .hosts
        .iter()
        .map(|(host, effective)| (host.id.as_str(), effective))
        .collect();
    catalogue
        .hosts
        .iter()
        .map(|(host, effective)| {
            let hops = effective.jump_host_ids.as_deref().unwrap_or_default();
            let proxy_jump = hops
                .iter()
                .filter_map(|id| by_id.get(id.as_str()))
                .map(|hop| address(hop))
                .collect();
            ExportRow {
                name: &host.name,
                hostname: &host.hostname,
                port: effective
                    .port
                    .unwrap_or(crate::model::inherit::DEFAULT_PORT),
                username: effective.username.as_deref().unwrap_or_default(),
                auth: match effective.auth_type {
                    Some(AuthType::Password) => "password",
                    Some(AuthType::Key) => "key",
                    _ => "agent",
                },
                password: catalogue
                    .passwords
                    .get(&host.id)
                    .and_then(Secret::expose_str),
                group_path: host
                    .group_id
                    .as_ref()
                    .and_then(|id| paths.get(id))
                    .map(String::as_str)
                    .unwrap_or_default(),
                tags: &host.tags,
                notes: &host.notes,
                proxy_jump,
            }
        })
        .collect()
}

/// `user@host:port` of a hop, as the CSV's `proxy_jump` writes it.
fn address(hop: &Host) -> String {
    let port = hop.port.unwrap_or(crate::model::inherit::DEFAULT_PORT);
    match &hop.username {
        Some(user) => format!("{user}@{}:{port}", hop.hostname),
        None => format!("{}:{port}", hop.hostname),
    }
}

/// `GET /api/export/csv[?secrets=include]`.
pub fn csv(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let catalogue = read(state, secrets_wanted(req)?, "csv")?;
    let paths = group_paths(&catalogue.groups);
    let text = tabular::write_csv(&rows(&catalogue, &paths));
    Ok(Reply::csv(text))
}

/// `GET /api/export/termius-csv[?secrets=include]`.
pub fn termius_csv(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let catalogue = read(state, secrets_wanted(req)?, "termius-csv")?;
    let paths = group_paths(&catalogue.groups);
    let text = tabular::write_termius(&rows(&catalogue, &paths));
    Ok(Reply::csv(text))
}

/// `GET /api/export/json[?secrets=include]`: groups, identities, keys (public parts) and
/// hosts, each as its own endpoint answers it.
pub fn json(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let secrets = secrets_wanted(req)?;
    let catalogue = read(state, secrets, "json")?;
    let (identities, keys) = state.db.read(|conn| {
        Ok::<_, ApiError>((store::identities::list(conn)?, store::keys::list(conn)?))
    })?;
    let hosts: Vec<Value> = catalogue
        .hosts
        .iter()
        .map(|(host, _)| {
            let mut view = json!(host.view());
            if let Some(password) = catalogue
                .passwords
                .get(&host.id)
                .and_then(Secret::expose_str)
            {
                view["password"] = json!(password);
            }
            view
        })
        .collect();
    let groups: Vec<Value> = catalogue
        .groups
        .iter()
        .map(|group| {
            json!({"id": group.id, "name": group.name, "parent_id": group.parent_id,
                   "color": group.color, "icon": group.icon, "defaults": group.defaults})
        })
        .collect();
    let identities: Vec<Value> = identities
        .iter()
        .map(|identity| json!(identity.view()))
        .collect();
    let keys: Vec<Value> = keys
        .iter()
        .map(|key| {
            json!({"id": key.id, "name": key.name, "key_type": key.key_type,
                   "public_key": key.public_key, "fingerprint": key.fingerprint})
        })
        .collect();
    let body = json!({
        "format": "host-manager",
        "version": 1,
        "groups": groups,
        "identities": identities,
        "keys": keys,
        "hosts": hosts,
    });
    Reply::json(200, &body)
}
