//! `GET /api/search` (one query over hosts, groups, identities and keys) and the saved
//! searches `/api/searches` (docs/query.md, "Search" and "Saved searches").
//!
//! Invariants: a query is checked before anything is read (400 `INVALID_QUERY`); the hosts
//! come from the same page the host list answers (`query_use::host_page`), so a search's
//! hosts are `GET /api/hosts?q=` with the same `q`; a saved query is checked when written,
//! never when listed.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::{query_use, JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::group::MAX_DEPTH;
use crate::model::host_query::HostQuery;
use crate::model::name::Name;
use crate::model::query::{named_matches, Named, Query};
use crate::state::AppState;
use crate::store;

/// A group, identity or key a search found.
#[derive(Serialize)]
struct Found {
    id: String,
    name: String,
    /// A group's names from the top, its own last.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<Vec<String>>,
}

/// `GET /api/search?q=`: `{hosts: <host list page>, groups, identities, keys}`.
pub fn search(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut query = HostQuery::parse(|name| req.query(name))
        .map_err(|err| ApiError::parameter(&err.field, err.rule))?;
    query.find = query_use::find(req)?;
    let text = query
        .find
        .as_ref()
        .map(|find| find.query.clone())
        .unwrap_or_default();
    let hosts = query_use::host_page(state, &query)?;
    let (groups, identities, keys) = state.db.read(|conn| {
        let groups = found_groups(&text, store::groups::all(conn)?);
        let identities = found(
            &text,
            Named::Identity,
            store::searches::names(conn, Named::Identity)?,
        );
        let keys = found(&text, Named::Key, store::searches::names(conn, Named::Key)?);
        Ok::<_, ApiError>((groups, identities, keys))
    })?;
    let answer = SearchAnswer {
        hosts,
        groups,
        identities,
        keys,
    };
    Reply::json(200, &answer)
}

/// `GET /api/search`'s answer (the hosts' rows stay as the list keeps them).
#[derive(Serialize)]
struct SearchAnswer {
    hosts: query_use::HostPage,
    groups: Vec<Found>,
    identities: Vec<Found>,
    keys: Vec<Found>,
}

fn found(query: &Query, kind: Named, names: Vec<(String, String)>) -> Vec<Found> {
    names
        .into_iter()
        .filter(|(_, name)| named_matches(query, kind, name, &[]))
        .map(|(id, name)| Found {
            id,
            name,
            path: None,
        })
        .collect()
}

/// The groups `query` finds, by path.
fn found_groups(query: &Query, groups: Vec<crate::model::group::Group>) -> Vec<Found> {
    let by_id: HashMap<&str, (&str, Option<&str>)> = groups
        .iter()
        .map(|group| {
            (
                group.id.as_str(),
                (group.name.as_str(), group.parent_id.as_deref()),
            )
        })
        .collect();
    let mut found: Vec<Found> = groups
        .iter()
        .filter_map(|group| {
            let mut path = vec![group.name.clone()];
            let mut parent = group.parent_id.as_deref();
            while let Some((name, above)) = parent
                .filter(|_| path.len() <= MAX_DEPTH)
                .and_then(|id| by_id.get(id))
            {
                path.push((*name).to_owned());
                parent = *above;
            }
            path.reverse();
            named_matches(query, Named::Group, &group.name, &path).then(|| Found {
                id: group.id.clone(),
                name: group.name.clone(),
                path: Some(path),
            })
        })
        .collect();
    found.sort_by(|a, b| (&a.path, &a.id).cmp(&(&b.path, &b.id)));
    found
}

/// `GET /api/searches`: `{items: [SavedSearch]}` by name.
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let items = state.db.read(store::searches::list)?;
    Reply::json(200, &json!({ "items": items }))
}

pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let search = state.db.read(|conn| store::searches::by_id(conn, id))?;
    Reply::json(200, &search)
}

/// `POST /api/searches {name, q}`: 201 with the saved search.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let name = Name::required(body.get("name"))?;
    let q = query_text(body.get("q"))?;
    let id = crate::vault::new_id();
    let search = state
        .db
        .write(|tx| store::searches::insert(tx, &id, &name, &q))?;
    Reply::json(201, &search)
}

/// `PUT /api/searches/:id {name?, q?}`: what is given replaces what was saved.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let search = state.db.write(|tx| {
        let old = store::searches::by_id(tx, id)?;
        let name = match body.get("name") {
            None => Name::from_text(&old.name)?,
            given => Name::required(given)?,
        };
        let q = match body.get("q") {
            None => old.q,
            given => query_text(given)?,
        };
        Ok::<_, ApiError>(store::searches::update(tx, id, &name, &q)?)
    })?;
    Reply::json(200, &search)
}

pub fn delete(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    state.db.write(|tx| store::searches::delete(tx, id))?;
    Ok(Reply::no_content())
}

/// A saved search's `q`: a string that parses (docs/query.md); an empty one finds every host.
fn query_text(value: Option<&Value>) -> Result<String, ApiError> {
    match value {
        Some(Value::String(text)) => {
            query_use::parse("q", text)?;
            Ok(text.clone())
        }
        _ => Err(ApiError::validation(
            "q",
            "is required: a string, a query of the query language (docs/query.md)",
        )),
    }
}
