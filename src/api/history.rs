//! `GET /api/history` and `GET /api/hosts/:id/history`: the connections made through
//! `connect`, newest first, in pages (docs/api.md, "Connection history").
//!
//! Invariants: read-only; `before` and `limit` are checked before the database is asked; an
//! entry never carries a credential.

use serde::Serialize;

use crate::api::{number_parameter, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;
use crate::store::history::HistoryEntry;

/// docs/api.md "Connection history": entries a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u64 = 100;

/// docs/api.md "Connection history": the most entries a page holds; more is clamped.
pub const MAX_LIMIT: u64 = 1000;

#[derive(Serialize)]
struct HistoryPage<'a> {
    items: Vec<EntryView<'a>>,
    /// The `before` of the next (older) page; `null` when this page is the last.
    next_before: Option<i64>,
}

#[derive(Serialize)]
struct EntryView<'a> {
    seq: i64,
    host_id: &'a str,
    name: &'a str,
    hostname: &'a str,
    port: i64,
    username: &'a str,
    auth_type: &'a str,
    connected_at: &'a str,
}

/// `GET /api/history`: every host's connections (the app's "recent" list).
pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    page(state, req, None)
}

/// `GET /api/hosts/:id/history`: one host's connections; 404 `HOST_NOT_FOUND` when the host
/// is unknown.
pub fn of_host(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    page(state, req, Some(id))
}

fn page(state: &AppState, req: &Req, host_id: Option<&str>) -> Result<Reply, ApiError> {
    let limit = number_parameter(req, "limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    let before = number_parameter(req, "before", 1, i64::MAX as u64)?
        .map(|before| i64::try_from(before).unwrap_or(i64::MAX));
    let entries = state
        .db
        .read(|conn| store::history::page(conn, host_id, before, limit))?;
    let next_before = match entries.len() == limit as usize {
        true => entries.last().map(|entry| entry.seq),
        false => None,
    };
    Reply::json(
        200,
        &HistoryPage {
            items: entries.iter().map(view).collect(),
            next_before,
        },
    )
}

fn view(entry: &HistoryEntry) -> EntryView<'_> {
    EntryView {
        seq: entry.seq,
        host_id: &entry.host_id,
        name: &entry.name,
        hostname: &entry.hostname,
        port: entry.port,
        username: &entry.username,
        auth_type: &entry.auth_type,
        connected_at: &entry.connected_at,
    }
}
