//! `/api/identities` endpoints (docs/identities.md, "Identities"): list, create, get,
//! update (partial, with `If-Match`), delete (refused while in use, or moving the users
//! with `?reassign_to=`), the hosts and groups that resolve to an identity (`usages`), and
//! its current TOTP code (`totp`).
//!
//! Invariants: every secret of a body (a password method's `password`, a literal answer's
//! `literal`, `totp.secret`) is moved out of the parsed body into a `Secret` before the body
//! is judged, and sealed for its identity and slot before the transaction
//! (`identity_use::seal_context`); no answer here carries one (only `totp` carries a code);
//! for routes with an id, 404 before 412 before 400; an update of what a connection uses
//! (username, auth, TOTP) logs one `host` `updated` change per host that resolves to the
//! identity, in its transaction, and answers their number (`affected_hosts`); every write
//! and every code handed out is audited in the transaction it records, never with a secret.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::api::identity_use::{self, literal_field, seal_context};
use crate::api::revision::{etag, Precondition};
use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::identity::Method;
use crate::model::identity::{Answer, Identity, IdentityFields, IdentityPatch, IdentityView};
use crate::model::identity::{SecretsGiven, Slot};
use crate::model::totp::{self, TotpSecret};
use crate::state::AppState;
use crate::store;
use crate::store::audit;
use crate::store::changes::Revised;
use crate::store::identities::{self as stored, sealed::stored_slots, usage, SealedSlots};
use crate::store::inherit::Inheritance;
use crate::vault::Secret;

/// `GET /api/identities`: `{items}`, by name (case-insensitively) then id.
pub fn list(state: &AppState) -> Result<Reply, ApiError> {
    let identities = state.db.read(stored::list)?;
    let items: Vec<IdentityView<'_>> = identities.iter().map(Identity::view).collect();
    Reply::json(200, &json!({ "items": items }))
}

/// `POST /api/identities` → 201 with the new identity.
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let id = crate::vault::new_id();
    let (patch, new) = check_body(state, &mut body, &id)?;
    let fields = patch.create()?;
    let slots = slots_for(&fields, new, SealedSlots::default());
    let identity = state.db.write(|tx| {
        check_keys(tx, &fields)?;
        let identity = stored::insert(tx, &id, &fields, &slots?)?;
        let detail = json!({ "id": id });
        audit::append(tx, audit::IDENTITY_CREATED, fields.name.as_str(), &detail)?;
        Ok::<_, ApiError>(identity)
    })?;
    identity_reply(201, &identity, None)
}

pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let identity = state.db.read(|conn| stored::by_id(conn, id))?;
    identity_reply(200, &identity, None)
}

/// `PUT /api/identities/:id`: every field optional; answers the identity and
/// `affected_hosts`.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let precondition = Precondition::with_body(req, &body);
    let checked = check_body(state, &mut body, id);
    let (identity, affected) = state.db.write(|tx| {
        let current = stored::by_id(tx, id)?;
        precondition?.check(Revised::Identity, current.revision)?;
        let (patch, new) = checked?;
        let fields = patch.apply(Some(&current.fields))?;
        check_keys(tx, &fields)?;
        let slots = slots_for(&fields, new, stored_slots(tx, id)?)?;
        let credentials = current.fields.credentials_differ(&fields);
        let before = match credentials {
            true => Some(Inheritance::load(tx)?),
            false => None,
        };
        let identity = stored::update(tx, &current, &fields, &slots)?;
        let mut affected = Vec::new();
        if let Some(before) = before {
            affected = refuse_stranding(tx, id, &before)?;
            store::inherit::log_followers(tx, &affected)?;
        }
        let detail = json!({
            "id": id,
            "fields": current.fields.changed_fields(&fields),
            "affected_hosts": affected.len(),
        });
        audit::append(tx, audit::IDENTITY_UPDATED, fields.name.as_str(), &detail)?;
        Ok::<_, ApiError>((identity, affected.len()))
    })?;
    identity_reply(200, &identity, Some(affected))
}

/// `DELETE /api/identities/:id`: 409 `IDENTITY_IN_USE` while hosts or groups name it,
/// unless `?reassign_to=<id>` moves them to that identity in the same transaction. A
/// `reassign_to` that is no id at all is refused first, as a malformed query is.
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let reassign_to = reassign_parameter(req)?;
    let precondition = Precondition::of(req);
    state.db.write(|tx| {
        let current = stored::by_id(tx, id)?;
        precondition?.check(Revised::Identity, current.revision)?;
        let users = match &reassign_to {
            Some(target) if target == id => {
                let rule = "must be another identity's id, not the deleted one's";
                return Err(ApiError::parameter("reassign_to", rule));
            }
            Some(target) => {
                stored::by_id(tx, target)?;
                let before = Inheritance::load(tx)?;
                let moved = usage::reassign(tx, id, target)?;
                // Hosts below a moved group default follow it; the moved hosts logged their
                // own change.
                let followers = refuse_stranding(tx, target, &before)?;
                store::inherit::log_followers(tx, &followers)?;
                moved
            }
            None => {
                let users = usage::direct_users(tx, id)?;
                if users.hosts > 0 || users.groups > 0 {
                    return Err(ApiError::IdentityInUse {
                        hosts: users.hosts,
                        groups: users.groups,
                    });
                }
                users
            }
        };
        stored::delete(tx, id)?;
        let detail = json!({
            "id": id,
            "reassigned_to": req.query("reassign_to"),
            "hosts": users.hosts,
            "groups": users.groups,
        });
        audit::append(
            tx,
            audit::IDENTITY_DELETED,
            current.fields.name.as_str(),
            &detail,
        )?;
        Ok(())
    })?;
    Ok(Reply::no_content())
}

/// `GET /api/identities/:id/usages`: every host and group that resolves to the identity.
pub fn usages(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let usages = state.db.read(|conn| {
        stored::by_id(conn, id)?;
        usage::usages(conn, id)
    })?;
    let view = json!({
        "hosts": usages.hosts,
        "groups": usages.groups,
        "host_count": usages.hosts.len(),
        "group_count": usages.groups.len(),
    });
    Reply::json(200, &view)
}

/// `POST /api/identities/:id/totp`: `{code, valid_for_s}`; 409 `TOTP_NOT_SET` without a
/// secret. Audited before it is answered (a code that cannot be audited is not handed out).
pub fn totp(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let (identity, slots) = state
        .db
        .read(|conn| Ok::<_, ApiError>((stored::by_id(conn, id)?, stored_slots(conn, id)?)))?;
    let (Some(settings), Some(sealed)) = (identity.fields.totp, slots.totp) else {
        return Err(ApiError::TotpNotSet);
    };
    let code = identity_use::totp_code(state, id, &settings.settings, &sealed)?;
    state.db.write(|tx| {
        let detail = json!({ "id": id });
        audit::append(
            tx,
            audit::IDENTITY_TOTP,
            identity.fields.name.as_str(),
            &detail,
        )
    })?;
    let text = code
        .code
        .expose_str()
        .ok_or_else(|| ApiError::internal("a TOTP code is not UTF-8"))?;
    let view = json!({ "code": text, "valid_for_s": code.valid_for_s });
    Ok(Reply::json(200, &view)?.with_header("Cache-Control", "no-store"))
}

/// A single identity as an answer (with `affected_hosts` after an update), its revision as
/// the `ETag`.
fn identity_reply(
    status: u16,
    identity: &Identity,
    affected_hosts: Option<usize>,
) -> Result<Reply, ApiError> {
    let view = match affected_hosts {
        Some(affected) => identity.view().with_affected_hosts(affected),
        None => identity.view(),
    };
    Ok(Reply::json(status, &view)?.with_header("ETag", etag(identity.revision)))
}

/// `?reassign_to=`: `None` when absent; an id is letters, digits, `-` and `_`, 1 to 64.
fn reassign_parameter(req: &Req) -> Result<Option<String>, ApiError> {
    let Some(text) = req.query("reassign_to") else {
        return Ok(None);
    };
    let shaped = (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    match shaped {
        true => Ok(Some(text.to_owned())),
        false => Err(ApiError::parameter(
            "reassign_to",
            "must be an identity id (1 to 64 letters, digits, '-' or '_')",
        )),
    }
}

/// docs/identities.md, "Host fields that inherit": a write that leaves a host resolving to
/// identity `id` with no username or no way to authenticate is refused (400 naming the
/// field and how many hosts it leaves so). Answers the hosts whose effective values changed
/// since `before` or who connect with this identity's username or auth.
fn refuse_stranding(
    tx: &store::Conn,
    id: &str,
    before: &Inheritance,
) -> Result<Vec<String>, ApiError> {
    let hosts = store::catalogue::hosts_of(tx, &usage::resolving_hosts(tx, id)?)?;
    let after = Inheritance::load(tx)?;
    store::inherit::followers(&hosts, before, &after, Some(id)).map_err(|(field, count)| {
        ApiError::validation(
            field,
            format!(
                "{count} host(s) that use this identity would have no {field}: set it on \
                 them, or keep it on the identity"
            ),
        )
    })
}

/// Every key method names a stored key (404 `KEY_NOT_FOUND`).
fn check_keys(conn: &crate::store::Conn, fields: &IdentityFields) -> Result<(), ApiError> {
    for method in &fields.auth {
        if let Method::Key { key_id } = method {
            crate::store::keys::by_id(conn, key_id)?;
        }
    }
    Ok(())
}

/// The newly given secrets, sealed for their identity and slot: passwords by method index,
/// literals by (method index, answer position).
#[derive(Default)]
struct NewSealed {
    passwords: BTreeMap<usize, Vec<u8>>,
    literals: BTreeMap<(usize, usize), Vec<u8>>,
    totp: Option<Vec<u8>>,
}

/// A body's secrets taken out, the rest checked, the secrets sealed (before any database
/// lock is taken: the vault comes first in the lock order).
fn check_body(
    state: &AppState,
    body: &mut Map<String, Value>,
    id: &str,
) -> Result<(IdentityPatch, NewSealed), ApiError> {
    let (mut given, taken) = take_secrets(body)?;
    let totp_secret: Option<TotpSecret> = match &taken.totp {
        Some(text) => {
            let text = text.expose_str().unwrap_or_default();
            let (secret, uri) = totp::parse_secret(text)?;
            given.totp_secret = Some(uri);
            Some(secret)
        }
        None => None,
    };
    let patch = IdentityPatch::from_json(body, &given)?;
    let vault = state.session.vault();
    let mut sealed = NewSealed::default();
    for (index, password) in &taken.passwords {
        let bytes = vault.seal(seal_context(id, "password"), password.expose())?;
        sealed.passwords.insert(*index, bytes);
    }
    for ((index, position), literal) in &taken.literals {
        let field = literal_field(*position)?;
        let bytes = vault.seal(seal_context(id, field), literal.expose())?;
        sealed.literals.insert((*index, *position), bytes);
    }
    if let Some(secret) = &totp_secret {
        sealed.totp = Some(vault.seal(seal_context(id, "totp"), secret.expose_bytes())?);
    }
    Ok((patch, sealed))
}

/// The sealed bytes of each slot the checked fields name: new ones, or the stored ones
/// they keep.
fn slots_for(
    fields: &IdentityFields,
    mut new: NewSealed,
    mut stored: SealedSlots,
) -> Result<SealedSlots, ApiError> {
    let mut slots = SealedSlots::default();
    let pick = |slot: Slot, new: Option<Vec<u8>>, kept: Option<Vec<u8>>| match slot {
        Slot::New => new.ok_or_else(|| ApiError::internal("a new secret was not sealed")),
        Slot::Stored => kept.ok_or_else(|| ApiError::internal("a kept secret is not stored")),
        Slot::Empty => Err(ApiError::internal("an empty slot has no bytes")),
    };
    for (index, method) in fields.auth.iter().enumerate() {
        match method {
            Method::Password { password } if password.is_set() => {
                let bytes = pick(
                    *password,
                    new.passwords.remove(&index),
                    stored.password.take(),
                );
                slots.password = Some(bytes?);
            }
            Method::KeyboardInteractive { answers } => {
                for (position, rule) in answers.iter().enumerate() {
                    if let Answer::Literal(slot) = rule.answer {
                        let fresh = new.literals.remove(&(index, position));
                        let bytes = pick(slot, fresh, stored.literals.remove(&position))?;
                        slots.literals.insert(position, bytes);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(totp) = fields.totp {
        slots.totp = Some(pick(totp.secret, new.totp.take(), stored.totp.take())?);
    }
    Ok(slots)
}

/// A body's secrets, moved out into `Secret`s.
#[derive(Default)]
struct TakenSecrets {
    passwords: Vec<(usize, Secret)>,
    literals: Vec<((usize, usize), Secret)>,
    totp: Option<Secret>,
}

/// Moves every secret out of the body, before anything else reads it: `auth[i].password`
/// (a string; `null` or `""` for none), `auth[i].answers[j].answer.literal` (a string),
/// `totp.secret` (a string).
fn take_secrets(body: &mut Map<String, Value>) -> Result<(SecretsGiven, TakenSecrets), ApiError> {
    let mut given = SecretsGiven::default();
    let mut taken = TakenSecrets::default();
    if let Some(Value::Array(methods)) = body.get_mut("auth") {
        for (index, method) in methods.iter_mut().enumerate() {
            let Value::Object(method) = method else {
                continue;
            };
            match method.remove("password") {
                None => {}
                Some(Value::Null) => drop(given.passwords.insert(index, false)),
                Some(Value::String(text)) if text.is_empty() => {
                    given.passwords.insert(index, false);
                }
                Some(Value::String(text)) => {
                    given.passwords.insert(index, true);
                    taken.passwords.push((index, Secret::from_string(text)));
                }
                Some(_) => {
                    let field = format!("auth[{index}].password");
                    return Err(ApiError::validation(&field, "must be a string or null"));
                }
            }
            take_literals(index, method, &mut given, &mut taken)?;
        }
    }
    if let Some(Value::Object(totp)) = body.get_mut("totp") {
        match totp.remove("secret") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => taken.totp = Some(Secret::from_string(text)),
            Some(_) => {
                let rule = "must be a string: base32 or an otpauth://totp/ URI";
                return Err(ApiError::validation(totp::SECRET_FIELD, rule));
            }
        }
    }
    Ok((given, taken))
}

fn take_literals(
    index: usize,
    method: &mut Map<String, Value>,
    given: &mut SecretsGiven,
    taken: &mut TakenSecrets,
) -> Result<(), ApiError> {
    let Some(Value::Array(answers)) = method.get_mut("answers") else {
        return Ok(());
    };
    for (position, rule) in answers.iter_mut().enumerate() {
        let Some(Value::Object(answer)) = rule.get_mut("answer") else {
            continue;
        };
        match answer.remove("literal") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                given.literals.insert((index, position));
                taken
                    .literals
                    .push(((index, position), Secret::from_string(text)));
            }
            Some(_) => {
                let field = format!("auth[{index}].answers[{position}].answer.literal");
                return Err(ApiError::validation(&field, "must be a string"));
            }
        }
    }
    Ok(())
}
