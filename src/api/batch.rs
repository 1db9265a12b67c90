//! `POST /api/hosts/batch` (docs/api.md, Hosts, "Batch"): edit or delete many hosts in one
//! transaction, selected by ids or by the list's own filters, or a dry run that answers
//! what each host would become.
//!
//! Invariants: the body becomes a checked `model::batch::BatchRequest` before the database
//! is touched, so a bad op changes nothing; the selection, the checks (references, hosts
//! left with no username or auth, hops in use) and the writes run in one transaction, all
//! or nothing; a dry run takes the same steps up to the writes and rolls back; one audit
//! entry per batch that changed something; no secret is read or answered.

use serde_json::{json, Map, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::batch::{changes, Action, BatchOps, BatchRequest, Edit, Selection};
use crate::state::AppState;
use crate::store;
use crate::store::batch::Selected;
use crate::store::inherit::Inheritance;
use crate::store::list::ListMemory;
use crate::store::{Conn, Ending};

/// Unknown ids named in a 404, at most.
const NAMED_UNKNOWN: usize = 5;

/// `POST /api/hosts/batch` → 200: a dry run `{items: [{id, changes}], count, matched}`
/// (`{id, deleted: true}` items for a delete), else `{count, matched, ids}`: the hosts
/// changed (or deleted), and how many the selection held.
pub fn run(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let request = BatchRequest::from_json(&body)?;
    Reply::json(200, &carry_out(state, &request)?)
}

/// `POST /api/tags/rename` `{from, to, dry_run?}` (docs/api.md, "Tags"): every host tagged
/// `from` is tagged `to` instead, in one transaction, as a batch by the `tag` filter that
/// removes `from` and adds `to` (a host that has both keeps one: a merge). Answers `{from,
/// to, count, matched}` (and a dry run's `items`).
pub fn rename_tag(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let tag = |field: &str| -> Result<String, ApiError> {
        let value = body
            .get(field)
            .ok_or_else(|| ApiError::validation(field, "is required: a tag"))?;
        let mut one = crate::model::validate::tags(&Value::Array(vec![value.clone()]))
            .map_err(|err| ApiError::validation(field, err.rule))?;
        one.pop()
            .ok_or_else(|| ApiError::validation(field, "is required: a tag"))
    };
    let (from, to) = (tag("from")?, tag("to")?);
    if from == to {
        return Err(ApiError::validation("to", "must differ from from"));
    }
    let request = BatchRequest::from_json(
        json!({
            "filter": {"tag": from},
            "ops": {"tags": {"remove": [from], "add": [to]}},
            "dry_run": body.get("dry_run").cloned().unwrap_or(Value::Null),
        })
        .as_object()
        .ok_or_else(|| ApiError::internal("a rename's batch is an object"))?,
    )?;
    let (Action::Edit(ops), Selection::Filter(query)) = (&request.action, &request.selection)
    else {
        return Err(ApiError::internal("a rename is a batch edit by filter"));
    };
    // No id to find, group or identity to check, no delete: the filter and the edit alone.
    let ending = Ending::dry_run_if(request.dry_run);
    let mut answer = state.db.write_listed(ending, |tx, memory| {
        let selected = store::batch::by_seqs(tx, &memory.matching_seqs(tx, query)?)?;
        edit(tx, &selected, ops, &request)
    })?;
    answer["from"] = Value::String(from);
    answer["to"] = Value::String(to);
    Reply::json(200, &answer)
}

/// Runs a checked batch request in one transaction (a dry run rolls back) and answers it.
fn carry_out(state: &AppState, request: &BatchRequest) -> Result<Value, ApiError> {
    if matches!(request.action, Action::Delete) && !request.dry_run {
        crate::api::snapshot_before(state, store::snapshots::Reason::BatchDelete)?;
    }
    let ending = Ending::dry_run_if(request.dry_run);
    let answer = state.db.write_listed(ending, |tx, memory| {
        let selected = select(tx, memory, &request.selection)?;
        match &request.action {
            Action::Delete => delete(tx, &selected, request),
            Action::Edit(ops) => {
                check_references(tx, ops)?;
                edit(tx, &selected, ops, request)
            }
        }
    })?;
    Ok(answer)
}

/// The selected hosts: every id must name a host (404 `HOST_NOT_FOUND` naming some that do
/// not), or the hosts the list's filters keep, found in the list's memory.
fn select(
    tx: &Conn,
    memory: &mut ListMemory,
    selection: &Selection,
) -> Result<Vec<Selected>, ApiError> {
    match selection {
        Selection::Filter(query) => {
            let seqs = memory.matching_seqs(tx, query)?;
            Ok(store::batch::by_seqs(tx, &seqs)?)
        }
        Selection::Ids(ids) => {
            let (selected, missing) = store::batch::by_ids(tx, ids)?;
            if missing.is_empty() {
                return Ok(selected);
            }
            let named: Vec<&str> = missing
                .iter()
                .take(NAMED_UNKNOWN)
                .map(String::as_str)
                .collect();
            let more = match missing.len() - named.len() {
                0 => String::new(),
                more => format!(" and {more} more"),
            };
            Err(ApiError::HostsNotFound(format!(
                "ids: no host has the id {}{more}; nothing was changed",
                named.join(", ")
            )))
        }
    }
}

/// Plans the ops over the selection, checks them, and writes them (or, for a dry run,
/// answers each host's changes).
fn edit(
    tx: &Conn,
    selected: &[Selected],
    ops: &BatchOps,
    request: &BatchRequest,
) -> Result<Value, ApiError> {
    let edits = ops.plan(selected.iter().map(|selected| &selected.host))?;
    check_connectable(tx, &edits)?;
    let matched = selected.len();
    if request.dry_run {
        let items: Vec<Value> = edits
            .iter()
            .map(|edit| {
                let before = &selected[edit.index].host;
                json!({"id": before.id, "changes": changes(before, &edit.after)})
            })
            .collect();
        return Ok(json!({"items": items, "count": edits.len(), "matched": matched}));
    }
    store::batch::write(tx, selected, &edits)?;
    let ids: Vec<&str> = edits.iter().map(|edit| edit.after.id.as_str()).collect();
    audit(tx, request, &ops.names(), ids.len())?;
    Ok(json!({"count": ids.len(), "matched": matched, "ids": ids}))
}

/// Deletes the selection, unless a host outside it (or a group's default chain) uses one of
/// them as a hop: 409 `HOST_IN_USE`.
fn delete(tx: &Conn, selected: &[Selected], request: &BatchRequest) -> Result<Value, ApiError> {
    let ids: Vec<&str> = selected.iter().map(|host| host.host.id.as_str()).collect();
    let users = store::batch::outside_jump_users(tx, &ids)?;
    if users > 0 {
        return Err(ApiError::HostInUse(users));
    }
    let count = ids.len();
    if request.dry_run {
        let items: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "deleted": true}))
            .collect();
        return Ok(json!({"items": items, "count": count, "matched": count}));
    }
    store::batch::delete(tx, selected)?;
    audit(tx, request, &["delete"], count)?;
    Ok(json!({"count": count, "matched": count, "ids": ids}))
}

/// A group or identity the ops name must exist (404 `GROUP_NOT_FOUND`,
/// `IDENTITY_NOT_FOUND`).
fn check_references(tx: &Conn, ops: &BatchOps) -> Result<(), ApiError> {
    if let Some(Some(group_id)) = &ops.group_id {
        if !store::hosts::group_exists(tx, group_id)? {
            return Err(ApiError::GroupNotFound);
        }
    }
    if let Some(Some(identity_id)) = &ops.identity_id {
        store::hosts::check_identity(tx, Some(identity_id))?;
    }
    Ok(())
}

/// docs/identities.md: a host the ops leave with no username or no auth (nothing of its
/// own, of its identity or of its groups' defaults) refuses the batch, 400 naming the
/// field and how many hosts it would leave so.
fn check_connectable(tx: &Conn, edits: &[Edit]) -> Result<(), ApiError> {
    if edits.is_empty() {
        return Ok(());
    }
    let inheritance = Inheritance::load(tx)?;
    let mut stranded: Option<(&'static str, usize)> = None;
    for edit in edits {
        if let Some(field) = inheritance.resolve(&edit.after).missing() {
            let (first, count) = stranded.unwrap_or((field, 0));
            stranded = Some((first, count + 1));
        }
    }
    match stranded {
        None => Ok(()),
        Some((field, count)) => Err(ApiError::validation(
            field,
            format!(
                "the ops would leave {count} host(s) with no {field}: set it on them, on \
                 their identity, or keep a group default that gives it"
            ),
        )),
    }
}

/// One audit entry for a batch that changed `count` hosts (none when it changed nothing).
fn audit(tx: &Conn, request: &BatchRequest, ops: &[&str], count: usize) -> Result<(), ApiError> {
    if count == 0 {
        return Ok(());
    }
    let selection = match request.selection {
        Selection::Ids(_) => "ids",
        Selection::Filter(_) => "filter",
    };
    let detail = json!({"count": count, "ops": ops, "selection": selection});
    Ok(store::audit::append(
        tx,
        store::audit::HOSTS_BATCH,
        "hosts",
        &detail,
    )?)
}
