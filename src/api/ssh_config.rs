//! `POST /api/import/ssh-config` and `GET /api/export/ssh-config`: an `~/.ssh/config` in,
//! hosts with chains, keys and kept directives out, and back (docs/api.md, "Jump chains, extra
//! options, and `~/.ssh/config`").
//!
//! Only the request and the answer live here: the import's plan is `model::ssh_config_import`
//! (pure), its writes `store::ssh_config_import`, the export's text `model::ssh_config`.
//!
//! Invariants: an import runs in one transaction (a dry run runs the very same steps and
//! rolls back); private keys supplied with an import are read into `Secret`s and sealed
//! before the transaction; the export never carries a secret (keys appear only as the
//! path the desktop app writes them to); nothing here reads the environment (the default
//! user of an import is `Config::import_user`, read at start-up).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::forward_rule::{Owner, Rule};
use crate::model::host::Host;
use crate::model::key;
use crate::model::ssh_config::{self, Outcome};
use crate::model::ssh_config_export;
use crate::model::ssh_config_import::{self, ImportPlan, ImportRequest};
use crate::model::ssh_config_session::WrittenRule;
use crate::sshkey::{self, OpenSshKey};
use crate::state::AppState;
use crate::store::keys::NewKey;
use crate::store::ssh_config_import::{self as import_store, ImportedKey};
use crate::store::{self, Ending};
use crate::vault::{SealContext, Secret};

/// `POST /api/import/ssh-config` `{config, group_id?, dry_run?, keys?}`.
pub fn import(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let supplied = take_keys(&mut body)?;
    let request = ImportRequest::from_json(&body)?;
    let outcomes = ssh_config::interpret(&ssh_config::parse(&request.config));
    let keys = read_keys(state, &outcomes, supplied)?;
    let imported: Vec<ImportedKey<'_>> = keys.iter().map(SuppliedKey::imported).collect();
    if !request.dry_run {
        crate::api::snapshot_before(state, store::snapshots::Reason::Import)?;
    }
    let ending = Ending::dry_run_if(request.dry_run);
    let report = state.db.write_ending(ending, |tx| {
        let stored = import_store::prepare(tx, request.group_id.as_deref(), &imported)?;
        let mut plan = ImportPlan::new(
            &outcomes,
            &stored.catalogue(),
            &request,
            &state.config.import_user,
            crate::vault::new_id,
        );
        import_store::apply(tx, &mut plan, &mut crate::vault::new_id)?;
        Ok::<_, ApiError>(plan.report)
    })?;
    Reply::json(200, &report)
}

/// `GET /api/export/ssh-config[?group=ID][&agent=true]`: text/plain.
pub fn export(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let group = req.query("group").map(str::to_owned);
    let agent = crate::api::agent_use::export_agent(state, req)?;
    let hosts = state.db.read(|conn| {
        let stored = store::catalogue::all_hosts(conn)?;
        let inheritance = store::inherit::Inheritance::load(conn)?;
        // docs/identities.md: the export writes effective values.
        let all: Vec<(Host, Option<String>)> = stored
            .iter()
            .map(|host| {
                let effective = inheritance.resolve(host);
                (effective.flatten(host), effective.auth_key())
            })
            .collect();
        let rules = effective_rules(&stored, &inheritance, store::forwards::all(conn)?);
        let Some(group) = &group else {
            return Ok::<_, ApiError>((all, stored, rules));
        };
        // docs/api.md, Hosts: an unknown group id in a path or body is GROUP_NOT_FOUND.
        if !store::hosts::group_exists(conn, group)? {
            return Err(ApiError::GroupNotFound);
        }
        let members = store::catalogue::hosts_under_group(conn, group)?;
        Ok((all, members, rules))
    })?;
    let certified = crate::api::certified_keys(state)?;
    Ok(Reply::text(ssh_config_export::export(
        &hosts.0,
        &hosts.1,
        agent.as_ref(),
        &certified,
        &hosts.2,
    )))
}

/// Each host's rules as the export writes them (docs/forwards.md, "Inheritance"): its own,
/// then each group's up the tree, by host id.
fn effective_rules(
    hosts: &[Host],
    inheritance: &store::inherit::Inheritance,
    rules: Vec<Rule>,
) -> HashMap<String, Vec<WrittenRule>> {
    let mut by_owner: HashMap<Owner, Vec<WrittenRule>> = HashMap::new();
    for rule in rules {
        by_owner
            .entry(rule.owner.clone())
            .or_default()
            .push(WrittenRule {
                id: rule.id,
                spec: rule.spec,
                settings: rule.settings,
            });
    }
    let mut out = HashMap::new();
    for host in hosts {
        let levels = inheritance.levels(host.group_id.as_deref());
        let owners = std::iter::once(Owner::Host(host.id.clone()))
            .chain(levels.iter().map(|level| Owner::Group(level.id.to_owned())));
        let written: Vec<WrittenRule> = owners
            .filter_map(|owner| by_owner.get(&owner))
            .flatten()
            .cloned()
            .collect();
        if !written.is_empty() {
            out.insert(host.id.clone(), written);
        }
    }
    out
}

/// A key supplied with the import, read and sealed under a fresh id.
struct SuppliedKey {
    id: String,
    path: String,
    key: OpenSshKey,
    comment: String,
    sealed_private_key: Vec<u8>,
}

impl SuppliedKey {
    fn imported(&self) -> ImportedKey<'_> {
        ImportedKey {
            path: &self.path,
            key: NewKey {
                id: &self.id,
                key_type: self.key.info.key_type,
                public_key: &self.key.info.public_key,
                fingerprint: &self.key.info.fingerprint,
                comment: &self.comment,
                has_passphrase: self.key.encrypted,
                sealed_private_key: &self.sealed_private_key,
                sealed_passphrase: None,
            },
        }
    }
}

/// `keys`: an object of IdentityFile path (as written in the config) -> private key text.
fn take_keys(body: &mut Map<String, Value>) -> Result<Vec<(String, Secret)>, ApiError> {
    let rule = "must be an object of IdentityFile path -> private key text";
    match body.remove("keys") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .into_iter()
            .map(|(path, value)| match value {
                Value::String(text) => Ok((path, Secret::from_string(text))),
                _ => Err(ApiError::validation("keys", rule)),
            })
            .collect(),
        Some(_) => Err(ApiError::validation("keys", rule)),
    }
}

/// Reads and seals the supplied keys some block names in an `IdentityFile` (others are
/// ignored). A key that is not a readable OpenSSH private key is 400 `INVALID_KEY`.
/// Runs before the transaction: the vault lock is taken and released per seal.
fn read_keys(
    state: &AppState,
    outcomes: &[Outcome],
    supplied: Vec<(String, Secret)>,
) -> Result<Vec<SuppliedKey>, ApiError> {
    let named = ssh_config_import::identity_paths(outcomes);
    let mut keys = Vec::new();
    for (path, text) in supplied {
        if !named.contains(path.as_str()) {
            continue;
        }
        let key = sshkey::import(&text, None)
            .map_err(|err| ApiError::InvalidKey(format!("keys[{path}]: {err}")))?;
        let id = crate::vault::new_id();
        let context = SealContext {
            table: "keys",
            row_id: &id,
            field: "private_key",
        };
        let sealed_private_key = state.session.vault().seal(context, key.text.expose())?;
        keys.push(SuppliedKey {
            comment: key::comment_from_key_file(&key.info.comment),
            id,
            path,
            key,
            sealed_private_key,
        });
    }
    Ok(keys)
}
