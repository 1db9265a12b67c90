//! `GET /api/tags` (docs/api.md, "Tags"): every tag a host carries, with how many hosts
//! carry it, from the list's memory (renaming and merging tags is a batch edit:
//! `api::batch::rename_tag`).
//!
//! Invariants: answers from the same memory the host list's `tag` filter uses, so a tag's
//! `count` is the `total` of `GET /api/hosts?tag=<name>`; reads only.

use serde_json::{json, Value};

use crate::api::{JsonReply, Reply};
use crate::error::ApiError;
use crate::state::AppState;

/// `{items: [{name, count}]}`, ordered by name (byte order: tags compare exactly).
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let counts = state.db.read_list(|conn, memory| memory.tag_counts(conn))?;
    let items: Vec<Value> = counts
        .into_iter()
        .map(|(name, count)| json!({"name": name, "count": count}))
        .collect();
    Reply::json(200, &json!({ "items": items }))
}
