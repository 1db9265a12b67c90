//! What the handlers that take a query of the query language share (docs/query.md): reading
//! `q` into a checked query (400 `INVALID_QUERY` naming the column of the fault and a hint),
//! the time it is answered at, and a page of hosts with their hits for highlighting
//! (`GET /api/hosts` and the hosts of `GET /api/search`).
//!
//! Invariants: an error's text quotes nothing of the query but the faulty token
//! (`model::query` cuts it); "now" is read once per request, so every host of one answer is
//! judged against the same time.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api::Req;
use crate::error::ApiError;
use crate::model::host_query::{Find, HostQuery};
use crate::model::query::{self, Hit, Query};
use crate::state::AppState;
use crate::store;

/// The API: list of hosts `{ items, total, page, per_page }`, each item a `HostView`; with
/// `q`, each item's hits by host id too (docs/query.md, "Highlighting").
#[derive(serde::Serialize)]
pub struct HostPage {
    items: Vec<Box<RawValue>>,
    total: u64,
    page: u64,
    per_page: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    hits: Option<BTreeMap<String, Vec<HitView>>>,
}

/// A page of `query`'s hosts, with their hits when it has a `q`.
pub fn host_page(state: &AppState, query: &HostQuery) -> Result<HostPage, ApiError> {
    let (items, total) = state
        .db
        .read_list(|conn, memory| store::list::rows::list(conn, memory, query))?;
    let hits = query.find.as_ref().map(|find| hits(&find.query, &items));
    Ok(HostPage {
        items,
        total,
        page: query.page,
        per_page: query.per_page,
        hits,
    })
}

/// The query text of `field` (a parameter or a body field) checked, or 400 `INVALID_QUERY`
/// whose details are `<field>: column N: <what> (<hint>)`.
pub fn parse(field: &str, text: &str) -> Result<Query, ApiError> {
    query::parse(text).map_err(|err| ApiError::InvalidQuery(format!("{field}: {err}")))
}

/// The request's `q` with the time it is answered at; `None` without `q`.
pub fn find(req: &Req) -> Result<Option<Find>, ApiError> {
    let Some(text) = req.query("q") else {
        return Ok(None);
    };
    Ok(Some(Find {
        query: parse("q", text)?,
        now: now_seconds(),
    }))
}

/// Unix seconds now (0 on a clock before 1970).
pub fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}

/// What a listed host's row gives the hits.
#[derive(Deserialize)]
struct Texts<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    hostname: String,
    #[serde(default)]
    notes: String,
}

/// One hit as answered: `{field, start, end}`.
#[derive(serde::Serialize)]
pub struct HitView {
    field: &'static str,
    start: usize,
    end: usize,
}

/// The hits of each listed host (rows as the list shows them), by host id.
pub fn hits(query: &Query, rows: &[Box<RawValue>]) -> BTreeMap<String, Vec<HitView>> {
    let mut all = BTreeMap::new();
    for row in rows {
        let Ok(texts) = serde_json::from_str::<Texts>(row.get()) else {
            continue;
        };
        let hits = query::hits(query, &texts.name, &texts.hostname, &texts.notes);
        let views = hits
            .into_iter()
            .map(|Hit { field, start, end }| HitView { field, start, end });
        all.insert(texts.id.into_owned(), views.collect());
    }
    all
}
