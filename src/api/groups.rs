//! `/api/groups` endpoints: the tree, one group, create, update, move and delete.
//!
//! Every group response (create, get, update, move) has the same shape as an item of the
//! tree: the stored fields plus `host_count`, `total_host_count` and the sorted `children`.
//! Bodies are read as JSON objects so that validation, not serde, names the offending field;
//! unknown fields are ignored. Writes to one group check its `If-Match` or body `revision`
//! after the group is found and before anything moves (412, docs/api.md "Revisions and
//! If-Match"); single-group answers carry the revision as the `ETag`.
//!
//! Invariants: bodies become `model::group` values before any store call; a write to one
//! group runs in one transaction (precondition, placement, write, read back); no SQL text and
//! no time chosen here (the store stamps its rows).

use serde_json::{Map, Value};

use crate::api::revision::{etag, Precondition};
use crate::api::{environment, refuse_chain, JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::environment::EnvValue;
use crate::model::forward_rule::Owner;
use crate::model::group::{DefaultsPatch, GroupPatch, GroupView, NewGroup};
use crate::model::inherit::GroupDefaults;
use crate::model::startup::kept_secrets;
use crate::state::AppState;
use crate::store;
use crate::store::changes::Revised;
use crate::store::groups::Placement;
use crate::store::inherit::Inheritance;

/// `GET /api/groups`: the top-level groups with their subtrees and counts, rendered from
/// the list's memory (store::list: the groups kept between requests and the hosts' member
/// sets).
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let body = state.db.read_list(|conn, memory| memory.group_tree(conn))?;
    Ok(Reply::json_bytes(200, body))
}

/// `POST /api/groups` → 201 with the new group.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut body = req.json::<Map<String, Value>>()?;
    let env = take_env(&mut body)?;
    let mut group = NewGroup::from_json(&body)?;
    mark_given(group.defaults.as_mut(), &env);
    let id = crate::vault::new_id();
    let sealed_env = seal_env(state, &id, group.defaults.as_ref(), env)?;
    let view = state.db.write(|tx| {
        match store::groups::insert(tx, &id, &group)? {
            Placement::Placed => {}
            Placement::TooDeep => return Err(too_deep_for_parent()),
            Placement::UnderItself => {
                return Err(ApiError::internal("a new group was placed under itself"))
            }
        }
        if let Some(patch) = &group.defaults {
            write_defaults(tx, &id, patch, &GroupDefaults::default(), &sealed_env)?;
        }
        Ok(store::groups::view(tx, &id)?)
    })?;
    group_reply(201, &view, None)
}

/// `GET /api/groups/:id` (extension, docs/api.md, Groups).
pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let view = state.db.read(|conn| store::groups::view(conn, id))?;
    group_reply(200, &view, None)
}

/// `PUT /api/groups/:id`: a partial update; a `parent_id` moves the group as `move` does.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let mut body = req.json::<Map<String, Value>>()?;
    let env = take_env(&mut body)?;
    let mut patch = GroupPatch::from_json(&body)?;
    mark_given(patch.defaults.as_mut(), &env);
    let precondition = Precondition::with_body(req, &body)?;
    let sealed_env = seal_env(state, id, patch.defaults.as_ref(), env)?;
    apply(state, id, &patch, &precondition, &sealed_env)
}

/// Takes the secret values of `defaults.set_env` out of the body (api::environment).
fn take_env(body: &mut Map<String, Value>) -> Result<environment::TakenEnv, ApiError> {
    match body.get_mut("defaults") {
        Some(Value::Object(defaults)) => environment::take(defaults, "defaults."),
        _ => environment::take(&mut Map::new(), "defaults."),
    }
}

/// Marks the `set_env` entries whose secret value the body gave.
fn mark_given(defaults: Option<&mut DefaultsPatch>, env: &environment::TakenEnv) {
    let Some(entries) = defaults.and_then(|defaults| defaults.set_env.as_mut()) else {
        return;
    };
    for (index, entry) in entries.iter_mut().enumerate() {
        if env.given.contains(&index) {
            entry.value = EnvValue::Secret { given: true };
        }
    }
}

/// Seals the taken secret values for group `id` under their names.
fn seal_env(
    state: &AppState,
    id: &str,
    defaults: Option<&DefaultsPatch>,
    env: environment::TakenEnv,
) -> Result<Vec<(String, Vec<u8>)>, ApiError> {
    let entries = defaults
        .and_then(|defaults| defaults.set_env.clone())
        .unwrap_or_default();
    env.seal(state, &Owner::Group(id.to_owned()), &entries)
}

/// `DELETE /api/groups/:id` → 204. Hosts and child groups go to the parent (docs/api.md, Groups).
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req)?;
    state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
        let below: Vec<String> = store::catalogue::hosts_under_group(tx, id)?
            .into_iter()
            .map(|host| host.id)
            .collect();
        store::groups::delete(tx, id)?;
        // docs/identities.md: the hosts below move up and inherit from there; a delete that
        // leaves one with no username or auth is refused whole, as a change of defaults is.
        let moved = store::catalogue::hosts_of(tx, &below)?;
        let after = Inheritance::load(tx)?;
        if let Err((field, count)) = store::inherit::followers(&moved, &after, &after, None) {
            return Err(ApiError::validation(
                field,
                format!(
                    "{count} host(s) below the group would have no {field} once it is gone: set \
                     it on them, or as a default of the group above"
                ),
            ));
        }
        Ok(())
    })?;
    Ok(Reply::no_content())
}

/// `PUT /api/groups/:id/move` with `{ parent_id }`: `null` or `""` for the top level.
pub fn move_to(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let patch = GroupPatch::move_from_json(&body)?;
    let precondition = Precondition::with_body(req, &body)?;
    apply(state, id, &patch, &precondition, &[])
}

/// Writes `patch` when `precondition` holds and answers 200 with the group as it is now.
fn apply(
    state: &AppState,
    id: &str,
    patch: &GroupPatch,
    precondition: &Precondition,
    sealed_env: &[(String, Vec<u8>)],
) -> Result<Reply, ApiError> {
    let (view, affected) = state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
        // docs/identities.md: new defaults or a new place change what hosts below inherit.
        let before = match patch.defaults.is_some() || patch.parent_id.is_some() {
            true => Some(Inheritance::load(tx)?),
            false => None,
        };
        match store::groups::update(tx, id, patch)? {
            Placement::Placed => {}
            // docs/api.md, Groups: under itself or a descendant is INVALID_MOVE.
            Placement::UnderItself => {
                return Err(ApiError::InvalidMove(
                    "a group cannot move under itself or one of its descendants".into(),
                ))
            }
            Placement::TooDeep => {
                return Err(ApiError::InvalidMove(format!(
                    "the group or a group below it would sit deeper than {} levels",
                    crate::model::group::MAX_DEPTH
                )))
            }
        }
        if let Some(defaults) = &patch.defaults {
            let current = store::groups::by_id(tx, id)?.defaults;
            write_defaults(tx, id, defaults, &current, sealed_env)?;
        }
        let affected = match before {
            Some(before) => Some(follow(tx, id, &before)?),
            None => None,
        };
        Ok((store::groups::view(tx, id)?, affected))
    })?;
    group_reply(200, &view, affected)
}

/// Checks a group's new defaults (a default chain like a host's; a secret variable named
/// without a value must be stored under that name) and writes them, with the sealed secret
/// values.
fn write_defaults(
    tx: &store::Conn,
    id: &str,
    patch: &DefaultsPatch,
    current: &GroupDefaults,
    sealed_env: &[(String, Vec<u8>)],
) -> Result<(), ApiError> {
    let mut defaults = patch.apply(current);
    if let Some(entries) = &patch.set_env {
        defaults.set_env = kept_secrets(entries, &current.set_env)
            .map_err(|err| ApiError::validation(&format!("defaults.{}", err.field), err.rule))?;
    }
    if let Some(chain) = &defaults.jump_host_ids {
        refuse_chain(store::interop::judge_chain(tx, None, chain)?, "defaults.")?;
    }
    store::groups::write_defaults(tx, id, &defaults)?;
    if patch.set_env.is_some() {
        let owner = Owner::Group(id.to_owned());
        store::environment::write(tx, &owner, &defaults.set_env, sealed_env)?;
    }
    Ok(())
}

/// docs/identities.md, "Rotation in one call": the hosts below group `id` whose effective
/// values changed get a change-feed entry each and the change one audit entry; a change
/// that leaves any of them with no username or auth is refused (400 naming the field).
/// Answers how many hosts followed.
fn follow(tx: &store::Conn, id: &str, before: &Inheritance) -> Result<usize, ApiError> {
    let hosts = store::catalogue::hosts_under_group(tx, id)?;
    let after = Inheritance::load(tx)?;
    let changed =
        store::inherit::followers(&hosts, before, &after, None).map_err(|(field, count)| {
            ApiError::validation(
                field,
                format!(
                    "{count} host(s) below the group would have no {field}: set it on them, on \
                 their identity, or keep a default that gives it"
                ),
            )
        })?;
    store::inherit::log_followers(tx, &changed)?;
    if !changed.is_empty() {
        let detail = serde_json::json!({"group_id": id, "affected_hosts": changed.len()});
        store::audit::append(tx, store::audit::GROUP_DEFAULTS_CHANGED, id, &detail)?;
    }
    Ok(changed.len())
}

/// A single group (with its subtree) as an answer, with its revision as the `ETag`; after a
/// change of its defaults or place, with `affected_hosts` (docs/identities.md).
fn group_reply(status: u16, view: &GroupView, affected: Option<usize>) -> Result<Reply, ApiError> {
    let reply = match affected {
        None => Reply::json(status, view)?,
        Some(affected) => {
            let mut body = serde_json::to_value(view).map_err(ApiError::internal)?;
            body["affected_hosts"] = serde_json::json!(affected);
            Reply::json(status, &body)?
        }
    };
    Ok(reply.with_header("ETag", etag(view.revision)))
}

fn too_deep_for_parent() -> ApiError {
    ApiError::validation(
        "parent_id",
        format!(
            "the parent is already {} levels deep, the most a group may be",
            crate::model::group::MAX_DEPTH
        ),
    )
}
