//! `/api/hosts/:id/forwards` and `/api/groups/:id/forwards` (docs/forwards.md, "Rules"): a
//! host's or group's forward rules, one rule, create, partial update (with a move) and
//! delete.
//!
//! Invariants: the owner is answered before the rule (404 `HOST_NOT_FOUND` before
//! `FORWARD_NOT_FOUND`), the rule before its precondition (412), the precondition before the
//! body's rules (400); a write that leaves a rule listening is checked against every other
//! listening rule in the same transaction, so two racing writes cannot both take a port.

use serde_json::{json, Map, Value};

use crate::api::revision::{etag, Precondition};
use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::forward::{ForwardSettings, ForwardSpec};
use crate::model::forward_rule::{Owner, Rule};
use crate::state::AppState;
use crate::store;
use crate::store::changes::Revised;
use crate::store::Conn;

pub fn host_list(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    list(state, Owner::Host(id.to_owned()))
}

pub fn host_create(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    create(state, req, Owner::Host(id.to_owned()))
}

pub fn host_get(state: &AppState, _req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    get(state, Owner::Host(id.to_owned()), rule)
}

pub fn host_update(state: &AppState, req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    update(state, req, Owner::Host(id.to_owned()), rule)
}

pub fn host_delete(state: &AppState, req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    delete(state, req, Owner::Host(id.to_owned()), rule)
}

pub fn group_list(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    list(state, Owner::Group(id.to_owned()))
}

pub fn group_create(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    create(state, req, Owner::Group(id.to_owned()))
}

pub fn group_get(state: &AppState, _req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    get(state, Owner::Group(id.to_owned()), rule)
}

pub fn group_update(state: &AppState, req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    update(state, req, Owner::Group(id.to_owned()), rule)
}

pub fn group_delete(state: &AppState, req: &Req, id: &str, rule: &str) -> Result<Reply, ApiError> {
    delete(state, req, Owner::Group(id.to_owned()), rule)
}

fn list(state: &AppState, owner: Owner) -> Result<Reply, ApiError> {
    let rules = state
        .db
        .read(|conn| store::forwards::of_owner(conn, &owner))?;
    let items: Vec<_> = rules.iter().map(Rule::view).collect();
    Reply::json(200, &json!({ "items": items }))
}

fn get(state: &AppState, owner: Owner, id: &str) -> Result<Reply, ApiError> {
    let rule = state
        .db
        .read(|conn| store::forwards::by_id(conn, &owner, id))?;
    rule_reply(200, &rule)
}

fn create(state: &AppState, req: &Req, owner: Owner) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let id = crate::vault::new_id();
    let rule = state.db.write(|tx| {
        // The owner first: an unknown host is 404 whatever the body holds.
        store::forwards::of_owner(tx, &owner)?;
        let spec = ForwardSpec::from_json(&body)?;
        let settings = ForwardSettings::default().patched(&body)?;
        refuse_conflict(tx, &spec, &settings, &id)?;
        Ok::<_, ApiError>(store::forwards::insert(tx, &owner, &id, &spec, &settings)??)
    })?;
    rule_reply(201, &rule)
}

fn update(state: &AppState, req: &Req, owner: Owner, id: &str) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let precondition = Precondition::with_body(req, &body);
    let rule = state.db.write(|tx| {
        let current = store::forwards::by_id(tx, &owner, id)?;
        precondition?.check(Revised::Forward, current.revision)?;
        let spec = current.spec.patched(&body)?;
        let settings = current.settings.patched(&body)?;
        let position = position(&body)?;
        refuse_conflict(tx, &spec, &settings, id)?;
        Ok::<_, ApiError>(store::forwards::update(
            tx, &current, &spec, &settings, position,
        )?)
    })?;
    rule_reply(200, &rule)
}

fn delete(state: &AppState, req: &Req, owner: Owner, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req);
    state.db.write(|tx| {
        let current = store::forwards::by_id(tx, &owner, id)?;
        precondition?.check(Revised::Forward, current.revision)?;
        Ok::<_, ApiError>(store::forwards::delete(tx, &current)?)
    })?;
    Ok(Reply::no_content())
}

/// `position`: absent or `null` keeps the place; else an integer from 0 (the first).
fn position(body: &Map<String, Value>) -> Result<Option<i64>, ApiError> {
    match body.get("position") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(position) if position >= 0 => Ok(Some(position)),
            _ => Err(ApiError::validation(
                "position",
                "must be an integer from 0 (the first rule)",
            )),
        },
    }
}

/// 409 `PORT_CONFLICT` when a rule with `spec` and `settings` would listen where another
/// listening rule does (docs/forwards.md, "Port conflicts").
fn refuse_conflict(
    tx: &Conn,
    spec: &ForwardSpec,
    settings: &ForwardSettings,
    id: &str,
) -> Result<(), ApiError> {
    if !(settings.enabled && settings.autostart) {
        return Ok(());
    }
    match store::forwards::conflict(tx, spec, id)? {
        None => Ok(()),
        Some(other) => Err(ApiError::PortConflict(format!(
            "{} ({}) already listens there; disable one, make one manual (autostart false), \
             or pick another port",
            other.named(),
            other.spec.directive()
        ))),
    }
}

fn rule_reply(status: u16, rule: &Rule) -> Result<Reply, ApiError> {
    Ok(Reply::json(status, &rule.view())?.with_header("ETag", etag(rule.revision)))
}
