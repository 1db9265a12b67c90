//! `GET /api/snapshots`, `POST /api/snapshots`, `POST /api/snapshots/:id/restore` and
//! `DELETE /api/snapshots/:id` (docs/api.md, "Snapshots"): the copies of the catalogue taken
//! before every import, batch delete and sync merge, or on request, and their restore.
//!
//! Invariants: the label is checked before anything is written; a restore first checks that
//! today's vault key opens the snapshot's secrets (with no database lock held: lock order
//! vault, then db) and that its schema is not newer, then takes a `restore` snapshot of now
//! (so it can be undone), then replaces the catalogue in one transaction; no secret is read
//! into an answer.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::name::Name;
use crate::state::AppState;
use crate::store::snapshots::{Counts, Reason, Scope, SealedSample, Snapshot};
use crate::vault::SealContext;

/// A snapshot as the API shows it (a struct, so `id` comes first, as in every resource).
#[derive(Serialize)]
struct SnapshotView<'a> {
    id: &'a str,
    created_at: &'a str,
    reason: &'static str,
    label: Option<&'a str>,
    counts: CountsView,
    size_bytes: i64,
    schema_version: i64,
}

#[derive(Serialize)]
struct CountsView {
    hosts: i64,
    groups: i64,
    keys: i64,
    identities: i64,
}

fn view(snapshot: &Snapshot) -> SnapshotView<'_> {
    SnapshotView {
        id: &snapshot.id,
        created_at: &snapshot.created_at,
        reason: snapshot.reason.as_str(),
        label: snapshot.label.as_deref(),
        counts: counts_view(&snapshot.counts),
        size_bytes: snapshot.size_bytes,
        schema_version: snapshot.schema_version,
    }
}

fn counts_view(counts: &Counts) -> CountsView {
    CountsView {
        hosts: counts.hosts,
        groups: counts.groups,
        keys: counts.keys,
        identities: counts.identities,
    }
}

/// `GET /api/snapshots` → 200 `{items}`, newest first.
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let snapshots = state.db.read(crate::store::snapshots::list)?;
    let items: Vec<SnapshotView<'_>> = snapshots.iter().map(view).collect();
    Reply::json(200, &json!({ "items": items }))
}

/// `POST /api/snapshots` `{label?}` (the body may be empty) → 201 with the snapshot.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = match req.body_is_empty() {
        true => Map::new(),
        false => req.json()?,
    };
    let label = match body.get("label") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            Name::parse(value)
                .map_err(|err| ApiError::validation("label", err.rule))?
                .into_string(),
        ),
    };
    let id = crate::vault::new_id();
    let snapshot = state
        .db
        .take_snapshot(&id, Reason::Manual, label.as_deref())?;
    Reply::json(201, &view(&snapshot))
}

/// `DELETE /api/snapshots/:id` → 204.
pub fn delete(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    state.db.delete_snapshot(id)?;
    Ok(Reply::no_content())
}

/// The most hosts one restore of hosts names (docs/api.md, "Snapshots").
pub const MAX_RESTORED_HOSTS: usize = 1000;

/// `POST /api/snapshots/:id/restore` `{hosts?}` (the body may be empty) → 200 `{restored,
/// undo, before, after}`: the snapshot restored, the `restore` snapshot of the state it
/// replaced, and the catalogue's counts before and after. With `hosts`, only those hosts
/// are put back as the snapshot holds them.
pub fn restore(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let hosts = restored_hosts(req)?;
    let scope = match &hosts {
        Some(hosts) => Scope::Hosts(hosts),
        None => Scope::All,
    };
    let (snapshot, sample) = state.db.snapshot_sample(id)?;
    if let Some(sample) = sample {
        same_vault_key(state, &sample)?;
    }
    let undo = state
        .db
        .take_snapshot(&crate::vault::new_id(), Reason::Restore, None)?;
    let restored = match state.db.restore_snapshot(&snapshot.id, scope) {
        Ok(restored) => restored,
        Err(err) => {
            // Nothing was restored: the snapshot of now would undo nothing.
            if let Err(gone) = state.db.delete_snapshot(&undo.id) {
                log::warn!("the restore snapshot of a failed restore stays: {gone}");
            }
            return Err(err.into());
        }
    };
    Reply::json(
        200,
        &json!({
            "restored": view(&snapshot),
            "undo": view(&undo),
            "before": counts_view(&restored.before),
            "after": counts_view(&restored.after),
        }),
    )
}

/// The body's `hosts`: `None` without a body or without the field; else 1 to
/// `MAX_RESTORED_HOSTS` ids, each named once.
fn restored_hosts(req: &Req) -> Result<Option<Vec<String>>, ApiError> {
    if req.body_is_empty() {
        return Ok(None);
    }
    let body: Map<String, Value> = req.json()?;
    let rule = "must be an array of 1 to 1000 host ids, each named once";
    let ids = match body.get("hosts") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(ids)) if !ids.is_empty() && ids.len() <= MAX_RESTORED_HOSTS => ids,
        Some(_) => return Err(ApiError::validation("hosts", rule)),
    };
    let mut hosts: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        match id.as_str() {
            Some(id) if !id.is_empty() && !hosts.iter().any(|seen| seen == id) => {
                hosts.push(id.to_owned())
            }
            _ => return Err(ApiError::validation("hosts", rule)),
        }
    }
    Ok(Some(hosts))
}

/// 409 `SNAPSHOT_INCOMPATIBLE` when today's vault key does not open the snapshot's sealed
/// value (it was sealed under another data key); the opened value is dropped (wiped) at
/// once.
fn same_vault_key(state: &AppState, sample: &SealedSample) -> Result<(), ApiError> {
    let context = SealContext {
        table: sample.table,
        row_id: &sample.row_id,
        field: sample.field,
    };
    let vault = state.session.vault();
    match vault.open(context, &sample.bytes) {
        Ok(_) => Ok(()),
        Err(crate::vault::VaultError::Locked) => Err(ApiError::VaultLocked),
        Err(_) => Err(ApiError::SnapshotIncompatible(
            "its secrets are sealed under another vault key than this vault's".into(),
        )),
    }
}
