//! `POST /api/import/ssh-config` and `GET /api/export/ssh-config`: an
//! `~/.ssh/config` in, hosts with chains, keys and kept directives out, and back.
//!
//! Invariants: an import runs in one transaction (a dry run runs the very same steps and
//! rolls back); private keys supplied with an import are read into `Secret`s and sealed
//! before the transaction; the export never carries a secret (keys appear only as the
//! path the desktop app writes them to).

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::agent::ExportAgent;
use crate::api::hosts::judge_chain;
use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::model::host::{AuthChange, AuthType, Host, HostPatch, NewHost, PasswordAction};
use crate::model::interop::{self, MAX_JUMP_HOPS, MAX_SSH_OPTIONS};
use crate::model::key;
use crate::model::name::{self, Name};
use crate::model::ssh_config::{
    self, ExportHost, HostBlock, Outcome, IDENTITY_DIR, PUBLIC_KEY_SUFFIX,
};
use crate::model::validate;
use crate::sshkey::{self, OpenSshKey};
use crate::state::AppState;
use crate::store::{self, keys::NewKeyRow};
use crate::vault::{SealContext, Secret};

/// `POST /api/import/ssh-config` `{config, group_id?, dry_run?, keys?}`.
pub fn import(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let mut body: Map<String, Value> = req.json()?;
    let supplied = take_keys(&mut body)?;
    let config = match body.get("config") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            return Err(ApiError::validation(
                "config",
                "is required: the ssh_config text",
            ))
        }
    };
    let group_id = match body.get("group_id") {
        None => None,
        Some(value) => validate::optional_id("group_id", value)?,
    };
    let dry_run = match body.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(value) => validate::boolean("dry_run", value)?,
    };
    let outcomes = ssh_config::interpret(&ssh_config::parse(&config));
    let keys = read_keys(state, &outcomes, supplied)?;
    let plan = Plan {
        outcomes: &outcomes,
        keys: &keys,
        group_id: group_id.as_deref(),
        default_user: default_user(),
        dry_run,
    };
    let answer = match state.db.write(|tx| match plan.run(tx) {
        Ok(answer) if dry_run => Err(Flow::DryRun(Box::new(answer))),
        Ok(answer) => Ok(answer),
        Err(err) => Err(Flow::Failed(err)),
    }) {
        Ok(answer) => answer,
        Err(Flow::DryRun(answer)) => *answer,
        Err(Flow::Failed(err)) => return Err(err),
    };
    Reply::json(200, &answer)
}

/// `GET /api/export/ssh-config[?group=ID][&agent=true]`: text/plain.
pub fn export(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let group = req.query("group").map(str::to_owned);
    let agent = crate::api::agent::export_agent(state, req)?;
    let hosts = state.db.read(|conn| {
        let all = store::catalogue::all_hosts(conn)?;
        let Some(group) = &group else {
            return Ok::<_, ApiError>((all.clone(), all));
        };
        // README, Hosts: an unknown group id in a path or body is GROUP_NOT_FOUND.
        if !store::hosts::group_exists(conn, group)? {
            return Err(ApiError::GroupNotFound);
        }
        let members = store::catalogue::hosts_under_group(conn, group)?;
        Ok((all, members))
    })?;
    Ok(Reply::text(export_text(&hosts.0, &hosts.1, agent.as_ref())))
}

/// The body of an import answer.
#[derive(Serialize, Default)]
struct Answer {
    created: Vec<Item>,
    updated: Vec<Item>,
    unchanged: Vec<Item>,
    skipped: Vec<Skip>,
    missing_keys: Vec<MissingKey>,
    warnings: Vec<Warning>,
    dry_run: bool,
}

#[derive(Serialize)]
struct Item {
    /// `null` in a dry run's `created` (nothing was stored).
    id: Option<String>,
    name: String,
    block: String,
}

#[derive(Serialize)]
struct Skip {
    block: String,
    reason: String,
}

#[derive(Serialize)]
struct MissingKey {
    block: String,
    identity_file: String,
}

#[derive(Serialize)]
struct Warning {
    block: String,
    message: String,
}

/// How the import transaction ends: committed with an answer, rolled back with one (a
/// dry run), or rolled back with an error.
enum Flow {
    DryRun(Box<Answer>),
    Failed(ApiError),
}

impl From<store::StoreError> for Flow {
    fn from(err: store::StoreError) -> Flow {
        Flow::Failed(err.into())
    }
}

/// A key supplied with the import, read and sealed under a fresh id.
struct SuppliedKey {
    id: String,
    path: String,
    key: OpenSshKey,
    sealed_private_key: Vec<u8>,
}

struct Plan<'a> {
    outcomes: &'a [Outcome],
    keys: &'a [SuppliedKey],
    group_id: Option<&'a str>,
    default_user: String,
    dry_run: bool,
}

/// A block matched to its host: created (fresh id) or an existing one.
struct Placed<'a> {
    block: &'a HostBlock,
    id: String,
    existing: Option<Host>,
    username: String,
    auth: AuthChange,
    options: Vec<String>,
    hops: Vec<String>,
}

/// Decision of this service: hosts match when name (case-insensitively), hostname, port
/// and username all do; that is what makes a re-import create nothing new.
type MatchKey = (String, String, u16, String);

impl<'a> Plan<'a> {
    /// Every step of the import, inside the caller's transaction.
    fn run(&self, conn: &store::Conn) -> Result<Answer, ApiError> {
        let mut answer = Answer {
            dry_run: self.dry_run,
            ..Answer::default()
        };
        if let Some(group_id) = self.group_id {
            // README, Hosts: an unknown group in a body is GROUP_NOT_FOUND.
            if !store::hosts::group_exists(conn, group_id)? {
                return Err(ApiError::GroupNotFound);
            }
        }
        let existing = store::catalogue::all_hosts(conn)?;
        let key_ids = self.store_keys(conn)?;
        let mut placed = self.place(&existing, &key_ids, conn, &mut answer)?;
        resolve_hops(&mut placed, &existing, &mut answer);
        self.write(conn, &placed, &mut answer)?;
        Ok(answer)
    }

    /// Stores the supplied keys not stored yet (matched by fingerprint); path -> key id.
    fn store_keys(&self, conn: &store::Conn) -> Result<HashMap<String, String>, ApiError> {
        let mut ids = HashMap::new();
        for supplied in self.keys {
            let info = &supplied.key.info;
            if let Some(id) = store::keys::id_by_fingerprint(conn, &info.fingerprint)? {
                ids.insert(supplied.path.clone(), id);
                continue;
            }
            let name = free_key_name(conn, &supplied.path)?;
            let comment = key::comment_from_key_file(&info.comment);
            let row = NewKeyRow {
                id: &supplied.id,
                name: &name,
                key_type: info.key_type,
                public_key: &info.public_key,
                fingerprint: &info.fingerprint,
                comment: &comment,
                has_passphrase: supplied.key.encrypted,
                sealed_private_key: &supplied.sealed_private_key,
                sealed_passphrase: None,
            };
            store::keys::insert(conn, &row)?;
            ids.insert(supplied.path.clone(), supplied.id.clone());
        }
        Ok(ids)
    }

    /// Matches each concrete block to an existing host or a new id, and settles its auth
    /// and kept directives. Skipped sections go straight into the answer.
    fn place(
        &self,
        existing: &[Host],
        key_ids: &HashMap<String, String>,
        conn: &store::Conn,
        answer: &mut Answer,
    ) -> Result<Vec<Placed<'a>>, ApiError> {
        let mut matches: HashMap<MatchKey, &Host> = HashMap::new();
        for host in existing {
            let key = match_key(&host.name, &host.hostname, host.port, &host.username);
            matches.entry(key).or_insert(host);
        }
        let mut claimed: HashSet<MatchKey> = HashSet::new();
        let mut placed = Vec::new();
        for outcome in self.outcomes {
            let block = match outcome {
                Outcome::Skipped { block, reason } => {
                    answer.skipped.push(Skip {
                        block: block.clone(),
                        reason: reason.clone(),
                    });
                    continue;
                }
                Outcome::Host(block) => block,
            };
            let username = match &block.username {
                Some(user) => user.trim().to_owned(),
                None => self.default_user.clone(),
            };
            let key = match_key(&block.name, &block.hostname, block.port, &username);
            if !claimed.insert(key.clone()) {
                answer.skipped.push(Skip {
                    block: block.label.clone(),
                    reason: "an earlier block of this import describes the same host".into(),
                });
                continue;
            }
            let current = matches.get(&key).map(|host| (*host).clone());
            for warning in &block.warnings {
                warn(answer, block, warning.clone());
            }
            let (auth, mut options) =
                self.auth_of(block, key_ids, conn, current.as_ref(), answer)?;
            options.extend(block.options.iter().cloned());
            let options = checked_options(block, options, answer);
            placed.push(Placed {
                block,
                id: current
                    .as_ref()
                    .map_or_else(crate::vault::new_id, |host| host.id.clone()),
                existing: current,
                username,
                auth,
                options,
                hops: Vec::new(),
            });
        }
        Ok(placed)
    }

    /// The auth of a block: the first `IdentityFile` whose key is known (supplied with the
    /// import, or an exported `~/.ssh/host-manager/<key_id>` of a stored key), else agent
    /// for a new host and the current auth for an existing one. Identity files without a
    /// key are reported missing and kept verbatim, so nothing is lost.
    fn auth_of(
        &self,
        block: &HostBlock,
        key_ids: &HashMap<String, String>,
        conn: &store::Conn,
        current: Option<&Host>,
        answer: &mut Answer,
    ) -> Result<(AuthChange, Vec<String>), ApiError> {
        let mut key_id = None;
        let mut kept = Vec::new();
        for (path, raw) in &block.identity_files {
            // An agent export names the public key file (README "SSH agent").
            let exported = path
                .strip_prefix(IDENTITY_DIR)
                .map(|file| file.strip_suffix(PUBLIC_KEY_SUFFIX).unwrap_or(file));
            let known = match (key_ids.get(path), exported) {
                (Some(id), _) => Some(id.clone()),
                (None, Some(id)) if store::hosts::key_exists(conn, id)? => Some(id.to_owned()),
                _ => None,
            };
            match (known, &key_id) {
                (Some(id), None) => key_id = Some(id),
                (Some(_), Some(_)) => kept.push(raw.clone()),
                (None, _) => {
                    answer.missing_keys.push(MissingKey {
                        block: block.label.clone(),
                        identity_file: path.clone(),
                    });
                    kept.push(raw.clone());
                }
            }
        }
        let auth = match (key_id, current) {
            (Some(key_id), _) => AuthChange {
                auth_type: AuthType::Key,
                key_id: Some(key_id),
                password: PasswordAction::Clear,
            },
            (None, Some(host)) => AuthChange {
                auth_type: host.auth_type,
                key_id: host.key_id.clone(),
                password: PasswordAction::Keep,
            },
            (None, None) => AuthChange {
                auth_type: AuthType::Agent,
                key_id: None,
                password: PasswordAction::Clear,
            },
        };
        Ok((auth, kept))
    }

    /// Creates the new hosts, then updates the matched ones and sets every chain (a hop
    /// may be a host this import creates).
    fn write(
        &self,
        conn: &store::Conn,
        placed: &[Placed<'_>],
        answer: &mut Answer,
    ) -> Result<(), ApiError> {
        for place in placed.iter().filter(|place| place.existing.is_none()) {
            let host = NewHost {
                name: place.block.name.clone(),
                name_key: name::sort_key(&place.block.name),
                hostname: place.block.hostname.clone(),
                port: place.block.port,
                username: place.username.clone(),
                auth: place.auth.clone(),
                group_id: self.group_id.map(str::to_owned),
                tags: Vec::new(),
                is_favorite: false,
                color: String::new(),
                order: None,
                notes: String::new(),
                jump_host_ids: Vec::new(),
                ssh_options: place.options.clone(),
            };
            store::hosts::insert(conn, &place.id, &host, None)?;
        }
        for place in placed {
            let hops = match judge_chain(store::interop::judge_chain(
                conn,
                Some(&place.id),
                &place.hops,
            )?) {
                Ok(()) => place.hops.clone(),
                // A refused chain leaves an existing host's chain as it was.
                Err(err) => {
                    let message = format!(
                        "ProxyJump not imported: {}",
                        err.details().unwrap_or_default()
                    );
                    warn(answer, place.block, message);
                    place
                        .existing
                        .as_ref()
                        .map(|host| host.jump_host_ids.clone())
                        .unwrap_or_default()
                }
            };
            let item = |id: Option<String>| Item {
                id,
                name: place.block.name.clone(),
                block: place.block.label.clone(),
            };
            let Some(current) = &place.existing else {
                store::interop::write_jumps(conn, &place.id, &hops)?;
                answer
                    .created
                    .push(item((!self.dry_run).then(|| place.id.clone())));
                continue;
            };
            let group_id = self.group_id.map(str::to_owned);
            let same = current.auth_type == place.auth.auth_type
                && current.key_id == place.auth.key_id
                && current.ssh_options == place.options
                && current.jump_host_ids == hops
                && (group_id.is_none() || current.group_id == group_id);
            if same {
                answer.unchanged.push(item(Some(place.id.clone())));
                continue;
            }
            let patch = HostPatch {
                group_id: group_id.map(Some),
                jump_host_ids: Some(hops),
                ssh_options: Some(place.options.clone()),
                ..HostPatch::default()
            };
            let mut change = patch.apply(current)?;
            change.host.auth_type = place.auth.auth_type;
            change.host.key_id = place.auth.key_id.clone();
            change.password = place.auth.password;
            store::hosts::update(conn, current, &change, None)?;
            answer.updated.push(item(Some(place.id.clone())));
        }
        Ok(())
    }
}

/// Resolves each block's ProxyJump hops: an alias of this import first, else a stored
/// host of that name (case-insensitively, the oldest). A hop that resolves to nothing, or
/// a chain too long, is reported and the directive kept verbatim instead.
fn resolve_hops(placed: &mut [Placed<'_>], existing: &[Host], answer: &mut Answer) {
    let mut by_alias: HashMap<&str, String> = HashMap::new();
    for place in placed.iter() {
        for alias in &place.block.aliases {
            by_alias
                .entry(alias.as_str())
                .or_insert_with(|| place.id.clone());
        }
    }
    let mut by_name: HashMap<String, String> = HashMap::new();
    for host in existing {
        by_name
            .entry(host.name.to_lowercase())
            .or_insert_with(|| host.id.clone());
    }
    for place in placed.iter_mut() {
        let block = place.block;
        if block.proxy_jump.is_empty() {
            continue;
        }
        let mut hops = Vec::new();
        let mut unresolved = Vec::new();
        for hop in &block.proxy_jump {
            let found = by_alias
                .get(hop.as_str())
                .or_else(|| by_name.get(&hop.to_lowercase()));
            match found {
                Some(id) => hops.push(id.clone()),
                None => unresolved.push(hop.as_str()),
            }
        }
        let problem = match (unresolved.is_empty(), hops.len() > MAX_JUMP_HOPS) {
            (false, _) => Some(format!(
                "ProxyJump hop(s) {} name no host of this import or the catalogue; the \
                 directive is kept verbatim in ssh_options",
                unresolved.join(", ")
            )),
            (true, true) => Some(format!(
                "ProxyJump has more than {MAX_JUMP_HOPS} hops; the directive is kept \
                 verbatim in ssh_options"
            )),
            (true, false) => None,
        };
        match problem {
            None => place.hops = hops,
            Some(message) => {
                warn(answer, block, message);
                let raw = format!("ProxyJump {}", block.proxy_jump.join(","));
                if place.options.len() < MAX_SSH_OPTIONS {
                    place.options.push(raw);
                }
            }
        }
    }
}

/// The directives a block keeps, each checked like `ssh_options` of the hosts API; one
/// that fails (or beyond the count limit) is reported and dropped.
fn checked_options(block: &HostBlock, options: Vec<String>, answer: &mut Answer) -> Vec<String> {
    let mut kept = Vec::new();
    for option in options {
        match interop::ssh_option(&option) {
            Ok(_) if kept.len() >= MAX_SSH_OPTIONS => warn(
                answer,
                block,
                format!("more than {MAX_SSH_OPTIONS} directives; dropped: {option}"),
            ),
            Ok(option) => kept.push(option),
            Err(rule) => warn(
                answer,
                block,
                format!("directive dropped ({rule}): {option}"),
            ),
        }
    }
    kept
}

fn warn(answer: &mut Answer, block: &HostBlock, message: String) {
    answer.warnings.push(Warning {
        block: block.label.clone(),
        message,
    });
}

fn match_key(name: &str, hostname: &str, port: u16, username: &str) -> MatchKey {
    (
        name.trim().to_lowercase(),
        hostname.to_ascii_lowercase(),
        port,
        username.trim().to_owned(),
    )
}

/// Decision of this service: a block without `User` gets the login name of the user the
/// service runs as (`$USER`, else `$LOGNAME`, else `root`): the desktop app's user, which
/// is exactly what `ssh` itself would use.
fn default_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|user| user.trim().to_owned())
        .find(|user| !user.is_empty() && user.chars().count() <= validate::MAX_USERNAME_CHARS)
        .unwrap_or_else(|| "root".to_owned())
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
    let named: HashSet<&str> = outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            Outcome::Host(block) => Some(block),
            Outcome::Skipped { .. } => None,
        })
        .flat_map(|block| block.identity_files.iter().map(|(path, _)| path.as_str()))
        .collect();
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
        let sealed_private_key = state.vault().seal(context, key.text.expose())?;
        keys.push(SuppliedKey {
            id,
            path,
            key,
            sealed_private_key,
        });
    }
    Ok(keys)
}

/// A key name from an IdentityFile path: its file name, made unique with ` (2)`, ` (3)`;
/// `imported key` when the file name is not a valid name.
fn free_key_name(conn: &store::Conn, path: &str) -> Result<Name, ApiError> {
    let base = path.rsplit('/').next().unwrap_or(path);
    if let Some(name) = store::keys::free_name(conn, base)? {
        return Ok(name);
    }
    store::keys::free_name(conn, "imported key")?
        .ok_or_else(|| ApiError::internal("\"imported key\" is a valid key name"))
}

/// The export of `members` plus every host their chains pass through. Aliases are given
/// over the whole catalogue, oldest host first, so a host keeps its alias in every export.
/// With `agent` (its socket and the ids of the keys it serves), hosts whose key it serves
/// point at it.
fn export_text(all: &[Host], members: &[Host], agent: Option<&ExportAgent>) -> String {
    let mut taken = HashSet::new();
    let aliases: HashMap<&str, String> = all
        .iter()
        .map(|host| {
            (
                host.id.as_str(),
                ssh_config::alias_for(&host.name, &mut taken),
            )
        })
        .collect();
    let by_id: HashMap<&str, &Host> = all.iter().map(|host| (host.id.as_str(), host)).collect();
    let mut included: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = members.iter().map(|host| host.id.as_str()).collect();
    while let Some(id) = stack.pop() {
        if !included.insert(id) {
            continue;
        }
        if let Some(host) = by_id.get(id) {
            stack.extend(host.jump_host_ids.iter().map(String::as_str));
        }
    }
    let hosts: Vec<ExportHost> = all
        .iter()
        .filter(|host| included.contains(host.id.as_str()))
        .map(|host| ExportHost {
            alias: aliases.get(host.id.as_str()).cloned().unwrap_or_default(),
            name: host.name.clone(),
            hostname: host.hostname.clone(),
            port: host.port,
            username: host.username.clone(),
            key_id: match host.auth_type {
                AuthType::Key => host.key_id.clone(),
                AuthType::Password | AuthType::Agent => None,
            },
            identity_agent: agent
                .filter(|agent| {
                    host.auth_type == AuthType::Key
                        && host
                            .key_id
                            .as_ref()
                            .is_some_and(|id| agent.key_ids.contains(id))
                })
                .map(|agent| agent.socket.clone()),
            proxy_jump: host
                .jump_host_ids
                .iter()
                .filter_map(|id| aliases.get(id.as_str()).cloned())
                .collect(),
            options: host.ssh_options.clone(),
        })
        .collect();
    ssh_config::render(&hosts)
}
