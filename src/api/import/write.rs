//! Carries an import's plan out in its transaction (docs/import.md): groups, identities and
//! hosts through the same checked values as their own endpoints (`NewGroup`, `NewHost`,
//! `HostPatch`, ...), then each host's chain, then the import records.
//!
//! Invariants: an object the checks refuse is reported `invalid` with the rule, and the rest
//! of the import goes on (a refused row writes nothing); a record is written only for an
//! object that exists after this transaction.

use std::collections::{BTreeSet, HashMap};

use rusqlite::Connection;
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::import::plan::{Kind, Plan, Status, Stored, Write};
use crate::import::source::Format;
use crate::model::forward::{ForwardSettings, ForwardSpec};
use crate::model::forward_rule::Owner;
use crate::model::group::{GroupPatch, NewGroup};
use crate::model::host::{HostPatch, NewHost, PasswordField};
use crate::model::identity::{IdentityFields, Method, Slot};
use crate::model::name::Name;
use crate::model::startup::{Startup, StartupPatch};
use crate::store::groups::Placement;
use crate::store::identities::SealedSlots;
use crate::store::{self, imports, StoreError};
use crate::vault::foreign::sha256_hex;

/// Writes every step of `plan`, reporting each refused one in its item.
pub fn apply(
    tx: &Connection,
    format: Format,
    stored: &Stored,
    plan: &mut Plan<'_>,
    sealed: &HashMap<String, Vec<u8>>,
) -> Result<(), ApiError> {
    let Plan {
        items,
        writes,
        chains,
    } = plan;
    for write in writes.iter() {
        let outcome = match write.kind {
            Kind::Group => group(tx, write),
            Kind::Identity => identity(tx, write, sealed.get(&write.id)),
            Kind::Host => host(tx, write, sealed.get(&write.id)),
        };
        if let Err(reason) = outcome? {
            let item = &mut items[write.item];
            item.status = Status::Invalid;
            item.reason = Some(reason);
            if !write.existing {
                item.id = None;
            }
        }
    }
    for (index, id, chain) in chains.iter() {
        if items[*index].status == Status::Invalid {
            continue;
        }
        if let Err(reason) = set_chain(tx, id, chain)? {
            items[*index]
                .unmapped
                .push(format!("jump hosts: the chain was not set: {reason}"));
        }
    }
    for write in writes.iter() {
        let item = &items[write.item];
        if item.status == Status::Invalid {
            continue;
        }
        let mut fields = write.record.clone();
        let password = match sealed.get(&write.id) {
            Some(bytes) => Some(sha256_hex(&[bytes])),
            None => stored
                .password_digests
                .get(&write.id)
                .cloned()
                .filter(|now| {
                    stored
                        .records
                        .get(&(write.kind, item.source_id.clone()))
                        .and_then(|record| record.fields.get("password"))
                        .is_some_and(|last| last == now)
                }),
        };
        fields.insert("password".into(), json!(password));
        imports::record(
            tx,
            format.name(),
            write.kind,
            &item.source_id,
            &write.id,
            &fields,
        )?;
    }
    Ok(())
}

/// A refusal of one object: the rule it broke, for its item's `reason`.
type Refused = Result<(), String>;

fn group(tx: &Connection, write: &Write<'_>) -> Result<Refused, ApiError> {
    let mut body = write.set.clone();
    let defaults = body.remove("defaults");
    if !write.existing {
        let new = match NewGroup::from_json(&body) {
            Ok(new) => new,
            Err(invalid) => return Ok(Err(invalid.to_string())),
        };
        match store::groups::insert(tx, &write.id, &new) {
            Ok(Placement::Placed) => {}
            Ok(_) => return Ok(Err("the folder is nested too deep".into())),
            Err(err) => return refused(err),
        }
    } else if !body.is_empty() {
        let patch = match GroupPatch::from_json(&body) {
            Ok(patch) => patch,
            Err(invalid) => return Ok(Err(invalid.to_string())),
        };
        match store::groups::update(tx, &write.id, &patch) {
            Ok(Placement::Placed) => {}
            Ok(_) => return Ok(Err("the folder cannot move there".into())),
            Err(err) => return refused(err),
        }
    }
    if let Some(defaults) = defaults {
        let mut current = store::groups::by_id(tx, &write.id)?.defaults;
        current.username = defaults["username"].as_str().map(str::to_owned);
        current.port = defaults["port"]
            .as_u64()
            .and_then(|port| u16::try_from(port).ok());
        current.identity_id = defaults["identity_id"].as_str().map(str::to_owned);
        if let Err(err) = store::groups::write_defaults(tx, &write.id, &current) {
            return refused(err);
        }
    }
    Ok(Ok(()))
}

fn identity(
    tx: &Connection,
    write: &Write<'_>,
    sealed: Option<&Vec<u8>>,
) -> Result<Refused, ApiError> {
    if write.set.is_empty() && sealed.is_none() {
        return Ok(Ok(()));
    }
    let (mut fields, mut slots) = match write.existing {
        true => (
            store::identities::by_id(tx, &write.id)?.fields,
            store::identities::sealed::stored_slots(tx, &write.id)?,
        ),
        false => (
            IdentityFields {
                name: Name::from_text("imported")?,
                username: None,
                auth: Vec::new(),
                totp: None,
                notes: String::new(),
            },
            SealedSlots::default(),
        ),
    };
    if let Some(Value::String(name)) = write.set.get("name") {
        fields.name = match Name::from_text(name) {
            Ok(name) => name,
            Err(invalid) => return Ok(Err(invalid.to_string())),
        };
    }
    if let Some(username) = write.set.get("username") {
        fields.username = username.as_str().map(str::to_owned);
    }
    // docs/import.md: a credential with a saved password logs in with it (stored only with
    // secrets imported), one without through the agent.
    match write.set.get("auth").and_then(Value::as_str) {
        Some("password") => {
            fields.auth = vec![Method::Password {
                password: Slot::Empty,
            }]
        }
        Some(_) => fields.auth = vec![Method::Agent],
        None => {}
    }
    if let Some(bytes) = sealed {
        slots.password = Some(bytes.clone());
        let stored = fields
            .auth
            .iter_mut()
            .find(|method| matches!(method, Method::Password { .. }));
        match stored {
            Some(method) => {
                *method = Method::Password {
                    password: Slot::New,
                }
            }
            None => fields.auth.push(Method::Password {
                password: Slot::New,
            }),
        }
    }
    if let Err(invalid) = fields.check() {
        return Ok(Err(invalid.to_string()));
    }
    let outcome = match write.existing {
        true => {
            let current = store::identities::by_id(tx, &write.id)?;
            store::identities::update(tx, &current, &fields, &slots).map(drop)
        }
        false => store::identities::insert(tx, &write.id, &fields, &slots).map(drop),
    };
    match outcome {
        Ok(()) => Ok(Ok(())),
        Err(err) => refused(err),
    }
}

fn host(tx: &Connection, write: &Write<'_>, sealed: Option<&Vec<u8>>) -> Result<Refused, ApiError> {
    let body = host_body(&write.set);
    let password = match sealed {
        Some(_) => PasswordField::Given,
        None => PasswordField::Absent,
    };
    let startup = match StartupPatch::from_json(&body, &BTreeSet::new()) {
        Ok(startup) => startup,
        Err(invalid) => return Ok(Err(invalid.to_string())),
    };
    let written = match write.existing {
        false => {
            let mut host = match NewHost::from_json(&body, password) {
                Ok(host) => host,
                Err(invalid) => return Ok(Err(invalid.to_string())),
            };
            host.startup = match startup.apply(&Startup::default()) {
                Ok(startup) => startup,
                Err(invalid) => return Ok(Err(invalid.to_string())),
            };
            store::hosts::insert(tx, &write.id, &host, sealed.map(Vec::as_slice)).map(drop)
        }
        true => {
            let current = store::hosts::by_id(tx, &write.id)?;
            let mut body = body;
            if sealed.is_some() && !body.contains_key("auth") {
                // A new password alone: the host's auth, with it.
                let auth = current.auth_type.map(|auth| auth.as_str());
                body.insert(
                    "auth".into(),
                    json!({"type": auth, "key_id": current.key_id}),
                );
            }
            let mut patch = match HostPatch::from_json(&body, password) {
                Ok(patch) => patch,
                Err(invalid) => return Ok(Err(invalid.to_string())),
            };
            patch.startup = startup;
            let change = match patch.apply(&current) {
                Ok(change) => change,
                Err(invalid) => return Ok(Err(invalid.to_string())),
            };
            store::hosts::update(tx, &current, &change, sealed.map(Vec::as_slice)).map(drop)
        }
    };
    if let Err(err) = written {
        return refused(err);
    }
    if let Some(Value::Array(directives)) = write.set.get("forwards") {
        forwards(tx, &write.id, directives)?;
    }
    Ok(Ok(()))
}

/// The API body of a host's changed fields (`auth` and `key_id` joined as the API has them).
fn host_body(set: &Map<String, Value>) -> Map<String, Value> {
    let mut body = set.clone();
    body.remove("forwards");
    body.remove("jump_host_ids");
    let key_id = body.remove("key_id");
    if let Some(auth) = body.remove("auth") {
        let auth = match auth {
            Value::String(kind) => json!({"type": kind, "key_id": key_id.unwrap_or(Value::Null)}),
            _ => Value::Null,
        };
        body.insert("auth".into(), auth);
    }
    body
}

/// Makes the host's own rules the source's (each directive read as OpenSSH reads it; one
/// that would listen where another does is stored as manual, as the `~/.ssh/config` import
/// does).
fn forwards(tx: &Connection, id: &str, directives: &[Value]) -> Result<(), ApiError> {
    let owner = Owner::Host(id.to_owned());
    for rule in store::forwards::of_owner(tx, &owner)? {
        store::forwards::delete(tx, &rule)?;
    }
    for directive in directives.iter().filter_map(Value::as_str) {
        let mut words = directive.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        let args: Vec<String> = words.map(str::to_owned).collect();
        let Ok(spec) = ForwardSpec::from_directive(keyword, &args) else {
            continue;
        };
        let rule_id = crate::vault::new_id();
        let mut settings = ForwardSettings::default();
        if store::forwards::conflict(tx, &spec, &rule_id)?.is_some() {
            settings.autostart = false;
        }
        // A rule past the owner's limit is refused by the store; the rest still count.
        let _ = store::forwards::insert(tx, &owner, &rule_id, &spec, &settings)?;
    }
    Ok(())
}

/// Sets a host's chain (an empty one inherits), judged as the hosts' endpoint judges it.
fn set_chain(tx: &Connection, id: &str, chain: &[String]) -> Result<Refused, ApiError> {
    let verdict = store::interop::judge_chain(tx, Some(id), chain)?;
    if let Some(details) = verdict.details() {
        return Ok(Err(details));
    }
    let body = match chain.is_empty() {
        true => json!({"jump_host_ids": null}),
        false => json!({"jump_host_ids": chain}),
    };
    let Value::Object(body) = body else {
        return Ok(Ok(()));
    };
    let current = store::hosts::by_id(tx, id)?;
    let patch = match HostPatch::from_json(&body, PasswordField::Absent) {
        Ok(patch) => patch,
        Err(invalid) => return Ok(Err(invalid.to_string())),
    };
    let change = match patch.apply(&current) {
        Ok(change) => change,
        Err(invalid) => return Ok(Err(invalid.to_string())),
    };
    store::hosts::update(tx, &current, &change, None)?;
    Ok(Ok(()))
}

/// A store refusal of one object (an unknown reference, a taken name) becomes its reason;
/// anything else fails the import.
fn refused(err: StoreError) -> Result<Refused, ApiError> {
    match err {
        StoreError::GroupNotFound
        | StoreError::IdentityNotFound
        | StoreError::KeyNotFound
        | StoreError::IdentityNameTaken
        | StoreError::DuplicateName(_) => Ok(Err(ApiError::from(err).to_string())),
        other => Err(other.into()),
    }
}
