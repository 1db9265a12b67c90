//! `/api/hosts` endpoints: list, create, get, update, delete, favorite toggle, move,
//! duplicate, and the effective values (`connect` is api/connect.rs, batches api/batch.rs).
//!
//! Invariants: a request's `auth.password` is moved out of the parsed body into a `Secret`
//! before anything else looks at the body, sealed before the database transaction, and
//! never returned; `connect` is the one reply that carries secrets, built in a buffer of its
//! final size (no reallocation copies) and sent with `Cache-Control: no-store`. For routes
//! with an id, an unknown host is answered before the body is judged (404 before 400), and a
//! stale `If-Match` or `revision` between the two (412, docs/api.md "Revisions and If-Match").

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::revision::{etag, Precondition};
use crate::api::{
    environment, query_use, refuse_chain, session_use, JsonBody, JsonReply, Reply, Req,
};
use crate::error::ApiError;
use crate::model::forward_rule::{Owner, Rule};
use crate::model::host::{AuthType, Host, HostPatch, NewHost, PasswordAction, PasswordField};
use crate::model::host_query::HostQuery;
use crate::model::name::Name;
use crate::model::startup::{Startup, StartupPatch};
use crate::model::validate;
use crate::state::AppState;
use crate::store;
use crate::store::changes::Revised;
use crate::vault::{SealContext, Secret};

/// The API: `PATCH /api/hosts/:id/favorite` answers `{ id, is_favorite }`, plus the host's
/// new `revision` (docs/api.md, "Revisions and If-Match").
#[derive(Serialize)]
struct FavoriteView<'a> {
    id: &'a str,
    is_favorite: bool,
    revision: i64,
}

pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut query = HostQuery::parse(|name| req.query(name))
        .map_err(|err| ApiError::parameter(&err.field, err.rule))?;
    query.find = query_use::find(req)?;
    Reply::json(200, &query_use::host_page(state, &query)?)
}

pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let (password_field, password) = take_password(&mut body)?;
    let env = environment::take(&mut body, "")?;
    let mut host = NewHost::from_json(&body, password_field)?;
    host.startup = StartupPatch::from_json(&body, &env.given)?.apply(&Startup::default())?;
    let id = crate::vault::new_id();
    let owner = Owner::Host(id.clone());
    let sealed_env = env.seal(state, &owner, &host.startup.set_env)?;
    let sealed = match (host.auth.as_ref().map(|auth| auth.password), password) {
        (Some(PasswordAction::Store), Some(password)) => {
            Some(seal_password(state, &id, &password)?)
        }
        _ => None,
    };
    let host = state.db.write(|tx| {
        if let Some(chain) = &host.jump_host_ids {
            refuse_chain(store::interop::judge_chain(tx, None, chain)?, "")?;
        }
        let host = store::hosts::insert(tx, &id, &host, sealed.as_deref())?;
        store::environment::write(tx, &owner, &host.startup.set_env, &sealed_env)?;
        connectable(tx, &host)?;
        Ok::<_, ApiError>(host)
    })?;
    host_reply(201, &host)
}

pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let host = state.db.read(|conn| store::hosts::by_id(conn, id))?;
    host_reply(200, &host)
}

/// `GET /api/hosts/:id/effective` (docs/identities.md): every connection field with its
/// value, its source and what it hides; `missing` names a field no level sets.
pub fn effective(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let (host, effective, rules) = state.db.read(|conn| {
        let host = store::hosts::by_id(conn, id)?;
        let inheritance = store::inherit::Inheritance::for_host(conn, &host)?;
        let effective = inheritance.resolve(&host);
        let rules = session_use::rules_of(conn, &host, &inheritance)?;
        Ok::<_, ApiError>((host, effective, rules))
    })?;
    let mut fields = effective.describe(&host);
    let rules: Vec<_> = rules.iter().map(Rule::sourced_view).collect();
    fields["forwards"] = serde_json::json!({"value": rules, "source": "merged"});
    let body = serde_json::json!({
        "host_id": host.id,
        "fields": fields,
        "missing": effective.missing(),
    });
    Reply::json(200, &body)
}

/// The API: every field optional (partial update). See `HostPatch::from_json` for `null`.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let precondition = Precondition::with_body(req, &body);
    let checked = check_patch(state, &mut body, id);
    let host = state.db.write(|tx| {
        let current = store::hosts::by_id(tx, id)?;
        precondition?.check(Revised::Host, current.revision)?;
        let (patch, sealed, sealed_env) = checked?;
        let change = patch.apply(&current)?;
        if let Some(Some(chain)) = &patch.jump_host_ids {
            refuse_chain(store::interop::judge_chain(tx, Some(id), chain)?, "")?;
        }
        let host = store::hosts::update(tx, &current, &change, sealed.as_deref())?;
        if patch.startup.set_env.is_some() {
            let owner = Owner::Host(id.to_owned());
            store::environment::write(tx, &owner, &host.startup.set_env, &sealed_env)?;
        }
        connectable(tx, &host)?;
        Ok::<_, ApiError>(host)
    })?;
    host_reply(200, &host)
}

/// A host still used as a jump host answers 409 `HOST_IN_USE`.
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req);
    state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Host, id)?;
        precondition?.check(Revised::Host, current)?;
        let users = store::interop::jump_users(tx, id)?;
        if users > 0 {
            return Err(ApiError::HostInUse(users));
        }
        Ok(store::hosts::delete(tx, id)?)
    })?;
    Ok(Reply::no_content())
}

pub fn toggle_favorite(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req);
    let (is_favorite, revision) = state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Host, id)?;
        precondition?.check(Revised::Host, current)?;
        let is_favorite = store::hosts::toggle_favorite(tx, id)?;
        let revision = store::changes::revision(tx, Revised::Host, id)?;
        Ok::<_, ApiError>((is_favorite, revision))
    })?;
    let view = FavoriteView {
        id,
        is_favorite,
        revision,
    };
    Ok(Reply::json(200, &view)?.with_header("ETag", etag(revision)))
}

/// The API: `{ group_id }`; docs/api.md, Hosts: absent, `null` or `""` means ungrouped.
pub fn move_to(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let precondition = Precondition::with_body(req, &body);
    let group_id = match body.get("group_id") {
        None => Ok(None),
        Some(value) => validate::optional_id("group_id", value).map_err(ApiError::from),
    };
    let host = state.db.write(|tx| {
        let current = store::hosts::by_id(tx, id)?;
        precondition?.check(Revised::Host, current.revision)?;
        let group_id = group_id?;
        let host = store::hosts::move_to(tx, id, group_id.as_deref())?;
        connectable(tx, &host)?;
        Ok::<_, ApiError>(host)
    })?;
    host_reply(200, &host)
}

/// `POST /api/hosts/:id/duplicate` `{name?}` → 201 with the copy (docs/api.md, Hosts): every
/// field of the host as read, a new id, times and place (the end of its group); `name`
/// defaults to `<name> (copy)`. A stored password is opened and sealed again for the copy's
/// row (a seal is bound to its row: the ciphertext copied would not open). The vault is
/// used between the read and the write, never inside a transaction (lock order: vault,
/// then database); the write checks every reference again.
pub fn duplicate(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let source_owner = Owner::Host(id.to_owned());
    let (source, sealed, sealed_env) = state.db.read(|conn| {
        let host = store::hosts::by_id(conn, id)?;
        let sealed = match host.auth_type {
            Some(AuthType::Password) => store::hosts::sealed_password(conn, id)?,
            _ => None,
        };
        let sealed_env = store::environment::sealed_of(conn, &source_owner)?;
        Ok::<_, ApiError>((host, sealed, sealed_env))
    })?;
    let body: Map<String, Value> = match req.body_is_empty() {
        true => Map::new(),
        false => req.json()?,
    };
    let name = match body.get("name") {
        None | Some(Value::Null) => Name::copy_of(&source.name),
        Some(value) => Name::parse(value)?,
    };
    let copy_id = crate::vault::new_id();
    let resealed = match &sealed {
        Some(sealed) => Some(reseal_password(state, id, &copy_id, sealed)?),
        None => None,
    };
    let action = match resealed {
        Some(_) => PasswordAction::Store,
        None => PasswordAction::Clear,
    };
    let copy = source.duplicate(name, action);
    let copy_owner = Owner::Host(copy_id.clone());
    let copy_env = environment::reseal(state, &source_owner, &copy_owner, &sealed_env)?;
    let host = state.db.write(|tx| {
        if let Some(chain) = &copy.jump_host_ids {
            refuse_chain(store::interop::judge_chain(tx, None, chain)?, "")?;
        }
        let host = store::hosts::insert(tx, &copy_id, &copy, resealed.as_deref())?;
        store::environment::write(tx, &copy_owner, &host.startup.set_env, &copy_env)?;
        store::forwards::copy(tx, &source_owner, &copy_owner, &mut crate::vault::new_id)?;
        connectable(tx, &host)?;
        Ok::<_, ApiError>(host)
    })?;
    host_reply(201, &host)
}

/// Opens host `from`'s sealed password and seals it for row `to`; the plaintext lives only
/// in a `Secret`, under the vault lock.
fn reseal_password(
    state: &AppState,
    from: &str,
    to: &str,
    sealed: &[u8],
) -> Result<Vec<u8>, ApiError> {
    let context = |row_id| SealContext {
        table: "hosts",
        row_id,
        field: "password",
    };
    let vault = state.session.vault();
    let password = vault.open(context(from), sealed)?;
    Ok(vault.seal(context(to), password.expose())?)
}

/// docs/identities.md: a host written, created or moved must still resolve to a username
/// and a way to authenticate; else 400 naming the field (the caller's transaction rolls
/// back).
fn connectable(conn: &store::Conn, host: &Host) -> Result<(), ApiError> {
    let effective = store::inherit::Inheritance::for_host(conn, host)?.resolve(host);
    match effective.missing() {
        None => Ok(()),
        Some(field) => Err(ApiError::validation(
            field,
            "is required: set it on the host, name an identity that sets it, or set it as \
             a default of a group above the host",
        )),
    }
}

/// A single host as an answer, with its revision as the `ETag`.
fn host_reply(status: u16, host: &Host) -> Result<Reply, ApiError> {
    Ok(Reply::json(status, &host.view())?.with_header("ETag", etag(host.revision)))
}

/// Moves `auth.password` out of the body into a `Secret`, and says what kind of value it
/// was. The API: the password is a string, and the empty string is allowed.
fn take_password(
    body: &mut Map<String, Value>,
) -> Result<(PasswordField, Option<Secret>), ApiError> {
    let Some(Value::Object(auth)) = body.get_mut("auth") else {
        return Ok((PasswordField::Absent, None));
    };
    match auth.remove("password") {
        None => Ok((PasswordField::Absent, None)),
        Some(Value::Null) => Ok((PasswordField::Cleared, None)),
        Some(Value::String(text)) if text.is_empty() => Ok((PasswordField::Cleared, None)),
        Some(Value::String(text)) => Ok((PasswordField::Given, Some(Secret::from_string(text)))),
        Some(_) => Err(ApiError::validation(
            "auth.password",
            "must be a string or null",
        )),
    }
}

/// A checked update: the patch, the sealed password and the sealed secret env values.
type CheckedPatch = (HostPatch, Option<Vec<u8>>, Vec<(String, Vec<u8>)>);

/// Checks an update body and seals its password and secret env values (before any database
/// lock is taken).
fn check_patch(
    state: &AppState,
    body: &mut Map<String, Value>,
    id: &str,
) -> Result<CheckedPatch, ApiError> {
    let (password_field, password) = take_password(body)?;
    let env = environment::take(body, "")?;
    let mut patch = HostPatch::from_json(body, password_field)?;
    patch.startup = StartupPatch::from_json(body, &env.given)?;
    let entries = patch.startup.set_env.clone().unwrap_or_default();
    let sealed_env = env.seal(state, &Owner::Host(id.to_owned()), &entries)?;
    let sealed = match password {
        Some(password) => Some(seal_password(state, id, &password)?),
        None => None,
    };
    Ok((patch, sealed, sealed_env))
}

/// Seals a host password bound to its row. Takes the vault lock only for the seal.
fn seal_password(state: &AppState, id: &str, password: &Secret) -> Result<Vec<u8>, ApiError> {
    let context = SealContext {
        table: "hosts",
        row_id: id,
        field: "password",
    };
    Ok(state.session.vault().seal(context, password.expose())?)
}
