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
use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::group::{GroupPatch, GroupView, NewGroup};
use crate::state::AppState;
use crate::store;
use crate::store::changes::Revised;
use crate::store::groups::Placement;

/// `GET /api/groups`: the top-level groups with their subtrees and counts, rendered from
/// the list's memory (store::list: the groups kept between requests and the hosts' member
/// sets).
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let body = state.db.read_list(|conn, memory| memory.group_tree(conn))?;
    Ok(Reply::json_bytes(200, body))
}

/// `POST /api/groups` → 201 with the new group.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let group = NewGroup::from_json(&body)?;
    let id = crate::vault::new_id();
    let view = state.db.write(|tx| {
        match store::groups::insert(tx, &id, &group)? {
            Placement::Placed => {}
            Placement::TooDeep => return Err(too_deep_for_parent()),
            Placement::UnderItself => {
                return Err(ApiError::internal("a new group was placed under itself"))
            }
        }
        Ok(store::groups::view(tx, &id)?)
    })?;
    group_reply(201, &view)
}

/// `GET /api/groups/:id` (extension, docs/api.md, Groups).
pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let view = state.db.read(|conn| store::groups::view(conn, id))?;
    group_reply(200, &view)
}

/// `PUT /api/groups/:id`: a partial update; a `parent_id` moves the group as `move` does.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let patch = GroupPatch::from_json(&body)?;
    let precondition = Precondition::with_body(req, &body)?;
    apply(state, id, &patch, &precondition)
}

/// `DELETE /api/groups/:id` → 204. Hosts and child groups go to the parent (docs/api.md, Groups).
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req)?;
    state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
        Ok::<_, ApiError>(store::groups::delete(tx, id)?)
    })?;
    Ok(Reply::no_content())
}

/// `PUT /api/groups/:id/move` with `{ parent_id }`: `null` or `""` for the top level.
pub fn move_to(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let patch = GroupPatch::move_from_json(&body)?;
    let precondition = Precondition::with_body(req, &body)?;
    apply(state, id, &patch, &precondition)
}

/// Writes `patch` when `precondition` holds and answers 200 with the group as it is now.
fn apply(
    state: &AppState,
    id: &str,
    patch: &GroupPatch,
    precondition: &Precondition,
) -> Result<Reply, ApiError> {
    let view = state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
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
        Ok(store::groups::view(tx, id)?)
    })?;
    group_reply(200, &view)
}

/// A single group (with its subtree) as an answer, with its revision as the `ETag`.
fn group_reply(status: u16, view: &GroupView) -> Result<Reply, ApiError> {
    Ok(Reply::json(status, view)?.with_header("ETag", etag(view.revision)))
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
