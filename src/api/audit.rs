//! `GET /api/audit?limit&before`: the audit log, newest first, in pages (docs/api.md: "Audit
//! log").
//!
//! Invariants: read-only; `before` and `limit` are checked before the database is asked;
//! an entry's `detail` is returned as the JSON object it was written as.

use serde::Serialize;
use serde_json::Value;

use crate::api::{JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;
use crate::store;

/// docs/api.md "Audit log": 100 entries a page unless `limit` says otherwise.
pub const DEFAULT_AUDIT_LIMIT: u32 = 100;

/// docs/api.md "Audit log": at most 1,000 entries a page.
pub const MAX_AUDIT_LIMIT: u32 = 1000;

#[derive(Serialize)]
struct AuditPage {
    items: Vec<AuditView>,
    /// The `before` of the next (older) page; `null` when this page is the last.
    next_before: Option<i64>,
}

#[derive(Serialize)]
struct AuditView {
    seq: i64,
    at: String,
    event: String,
    subject: String,
    detail: Value,
    /// How many events the entry stands for: routine ones repeated within a minute are
    /// merged (docs/api.md "Audit log").
    count: i64,
}

pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let limit = match req.query("limit") {
        None => DEFAULT_AUDIT_LIMIT,
        Some(text) => match positive(text) {
            Some(limit) => u32::try_from(limit)
                .unwrap_or(u32::MAX)
                .min(MAX_AUDIT_LIMIT),
            None => {
                return Err(ApiError::parameter(
                    "limit",
                    "must be an integer of at least 1",
                ))
            }
        },
    };
    let before = match req.query("before") {
        None => None,
        Some(text) => match positive(text) {
            Some(before) => Some(before),
            None => {
                return Err(ApiError::parameter(
                    "before",
                    "must be an integer of at least 1",
                ))
            }
        },
    };
    let entries = state
        .db
        .read(|conn| store::audit::page(conn, before, limit))?;
    let next_before = match entries.len() as u32 == limit {
        true => entries.last().map(|entry| entry.seq),
        false => None,
    };
    let items = entries
        .into_iter()
        .map(|entry| AuditView {
            seq: entry.seq,
            detail: serde_json::from_str(&entry.detail).unwrap_or(Value::Null),
            at: entry.at,
            event: entry.event,
            subject: entry.subject,
            count: entry.count,
        })
        .collect();
    Reply::json(200, &AuditPage { items, next_before })
}

/// Plain digits, at least 1, within `i64` (a larger number is clamped by the callers).
fn positive(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    match text.parse::<i64>() {
        Ok(0) => None,
        Ok(number) => Some(number),
        Err(_) => Some(i64::MAX),
    }
}
