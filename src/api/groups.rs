//! `/api/groups` endpoints: the tree, one group, create, update, move and delete.
//!
//! Every group response (create, get, update, move) has the same shape as an item of the
//! tree: the stored fields plus `host_count`, `total_host_count` and the sorted `children`.
//! Bodies are read as JSON objects so that validation, not serde, names the offending field;
//! unknown fields are ignored. Writes to one group check its `If-Match` or body `revision`
//! after the group is found and before anything moves (412, README "Revisions and
//! If-Match"); single-group answers carry the revision as the `ETag`.

use serde_json::{Map, Value};

use crate::api::group_tree::GroupTree;
use crate::api::revision::{etag, Precondition};
use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::model::group::{parse_color, parse_icon, GroupName, GroupPatch, GroupView, NewGroup};
use crate::state::AppState;
use crate::store;
use crate::store::changes::Revised;
use crate::store::groups::Placement;

/// `GET /api/groups`: the top-level groups with their subtrees and counts, rendered from
/// the groups kept in memory (api::group_tree) and the host counts of the list's memory.
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let body = state.db.read_list(|conn, index| {
        let mut tree = state.group_tree.lock().unwrap_or_else(|poisoned| {
            // A panic mid-patch may leave it half done: start it afresh.
            let mut tree = poisoned.into_inner();
            *tree = GroupTree::default();
            tree
        });
        tree.refresh(conn)?;
        Ok::<_, ApiError>(tree.render(index.group_host_counts(conn)?))
    })?;
    Ok(Reply::json_bytes(200, body))
}

/// `POST /api/groups` → 201 with the new group.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let group = new_group(&body)?;
    let id = crate::vault::new_id();
    let now = store::now_timestamp();
    let view = state.db.write(|tx| {
        match store::groups::insert(tx, &id, &group, &now)? {
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

/// `GET /api/groups/:id` (extension, README, Groups).
pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let view = state.db.read(|conn| store::groups::view(conn, id))?;
    group_reply(200, &view)
}

/// `PUT /api/groups/:id`: a partial update; a `parent_id` moves the group as `move` does.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    let patch = group_patch(&body)?;
    let precondition = Precondition::with_body(req, &body)?;
    apply(state, id, &patch, &precondition)
}

/// `DELETE /api/groups/:id` → 204. Hosts and child groups go to the parent (README, Groups).
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req)?;
    let now = store::now_timestamp();
    state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
        Ok::<_, ApiError>(store::groups::delete(tx, id, &now)?)
    })?;
    Ok(Reply::no_content())
}

/// `PUT /api/groups/:id/move` with `{ parent_id }`: `null` or `""` for the top level.
pub fn move_to(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body = req.json::<Map<String, Value>>()?;
    // A move names its destination: a missing parent_id is a mistake, not "top level".
    let Some(parent) = body.get("parent_id") else {
        return Err(ApiError::validation(
            "parent_id",
            "is required: a group id, or null or \"\" for the top level",
        ));
    };
    let patch = GroupPatch {
        parent_id: Some(parent_field(parent)?),
        ..GroupPatch::default()
    };
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
    let now = store::now_timestamp();
    let view = state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Group, id)?;
        precondition.check(Revised::Group, current)?;
        match store::groups::update(tx, id, patch, &now)? {
            Placement::Placed => {}
            // README, Groups: under itself or a descendant is INVALID_MOVE.
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

fn new_group(body: &Map<String, Value>) -> Result<NewGroup, ApiError> {
    let name = match body.get("name") {
        Some(value) => name_field(value)?,
        None => return Err(ApiError::validation("name", "is required")),
    };
    Ok(NewGroup {
        name,
        parent_id: body
            .get("parent_id")
            .map(parent_field)
            .transpose()?
            .flatten(),
        color: text_field(body, "color", parse_color)?.unwrap_or_default(),
        icon: text_field(body, "icon", parse_icon)?.unwrap_or_default(),
    })
}

fn group_patch(body: &Map<String, Value>) -> Result<GroupPatch, ApiError> {
    Ok(GroupPatch {
        name: body.get("name").map(name_field).transpose()?,
        parent_id: body.get("parent_id").map(parent_field).transpose()?,
        color: text_field(body, "color", parse_color)?,
        icon: text_field(body, "icon", parse_icon)?,
    })
}

fn name_field(value: &Value) -> Result<GroupName, ApiError> {
    match value {
        Value::String(text) => {
            GroupName::parse(text).map_err(|rule| ApiError::validation("name", rule))
        }
        _ => Err(ApiError::validation(
            "name",
            "must be a string of 1-100 characters",
        )),
    }
}

/// `null` and `""` mean the top level (README, Groups); any other string is a group id,
/// looked up later (an unknown or non-UUID id is 404 `GROUP_NOT_FOUND`).
fn parent_field(value: &Value) -> Result<Option<String>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.is_empty() => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(ApiError::validation(
            "parent_id",
            "must be a group id string, or null or \"\" for the top level",
        )),
    }
}

/// An optional text field checked by `parse`: absent is `None` (unchanged on update),
/// `null` is the same as `""` (none).
fn text_field(
    body: &Map<String, Value>,
    field: &str,
    parse: fn(&str) -> Result<String, &'static str>,
) -> Result<Option<String>, ApiError> {
    match body.get(field) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(String::new())),
        Some(Value::String(text)) => parse(text)
            .map(Some)
            .map_err(|rule| ApiError::validation(field, rule)),
        Some(_) => Err(ApiError::validation(field, "must be a string")),
    }
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
