//! The plan of an `~/.ssh/config` import (docs/api.md, "Jump chains, extra options, and
//! `~/.ssh/config`"): which block becomes which host (a new one or a matched one), with what
//! auth, chain and kept directives; the answer that reports it is `ssh_config_report`.
//! `store::ssh_config_import` carries the plan out inside the import's transaction.
//!
//! Invariants: pure, no I/O: the stored hosts and keys it decides against are handed in, and
//! so is the maker of new ids; a block's directives that cannot be kept are reported, never
//! silently dropped; hosts match on name (case-insensitively), hostname (ASCII
//! case-insensitively), port and username, so importing the same text twice creates nothing.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::model::environment::EnvValue;
use crate::model::host::{
    AuthChange, AuthType, Host, HostChange, HostFields, HostPatch, NewHost, PasswordAction,
};
use crate::model::interop::{self, ChainVerdict, MAX_JUMP_HOPS, MAX_SSH_OPTIONS};
use crate::model::name;
use crate::model::ssh_config::{HostBlock, Outcome, IDENTITY_DIR, PUBLIC_KEY_SUFFIX};
use crate::model::ssh_config_report::{ImportReport, Item, MissingKey, Skip};
use crate::model::startup::{Startup, StartupPatch};
use crate::model::validate::{self, Invalid};

/// A checked `POST /api/import/ssh-config` body, without its `keys` (the api layer reads
/// those into secrets first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportRequest {
    pub config: String,
    pub group_id: Option<String>,
    pub dry_run: bool,
}

/// What the plan is decided against: the stored hosts and keys, read in the import's
/// transaction after the supplied keys were stored.
pub struct Catalogue<'a> {
    /// Every host, oldest first (with chains and kept directives).
    pub hosts: &'a [Host],
    /// IdentityFile path (as written) -> id of the key supplied for it with the import.
    pub supplied_keys: &'a HashMap<String, String>,
    /// The id of every stored key (an exported `~/.ssh/host-manager/<key_id>` names one).
    pub stored_keys: &'a HashSet<String>,
}

/// The whole import: the hosts it places, and the answer so far.
pub struct ImportPlan<'a> {
    pub placed: Vec<Placed<'a>>,
    pub report: ImportReport,
    group_id: Option<String>,
}

/// A block matched to its host: created (a fresh id) or an existing one.
pub struct Placed<'a> {
    pub block: &'a HostBlock,
    pub id: String,
    pub existing: Option<Host>,
    /// The block's name, hostname, port and user, checked by the API's field rules.
    pub fields: HostFields,
    /// `None`: a matched host that inherits its auth keeps inheriting it.
    pub auth: Option<AuthChange>,
    pub options: Vec<String>,
    pub hops: Vec<String>,
    /// The block's startup command and environment (a secret it names is kept only where the
    /// matched host stores one under that name).
    pub startup: Startup,
}

/// Decision of this service: hosts match when name (case-insensitively), hostname, port
/// and username all do; that is what makes a re-import create nothing new.
type MatchKey = (String, String, u16, String);

impl ImportRequest {
    /// Checks the body: `config` is required text; `group_id` `null` or `""` is none;
    /// `dry_run` `null` is false.
    pub fn from_json(body: &Map<String, Value>) -> Result<ImportRequest, Invalid> {
        let config = match body.get("config") {
            Some(Value::String(text)) => text.clone(),
            _ => return Err(Invalid::new("config", "is required: the ssh_config text")),
        };
        let group_id = match body.get("group_id") {
            None => None,
            Some(value) => validate::optional_id("group_id", value)?,
        };
        let dry_run = match body.get("dry_run") {
            None | Some(Value::Null) => false,
            Some(value) => validate::boolean("dry_run", value)?,
        };
        Ok(ImportRequest {
            config,
            group_id,
            dry_run,
        })
    }
}

impl<'a> ImportPlan<'a> {
    /// Places every concrete block of `outcomes` (skipped sections go straight into the
    /// report), settles each one's auth and kept directives, and resolves the ProxyJump
    /// hops. A block without `User` gets `default_user`; a new host gets its id from
    /// `new_id`.
    pub fn new(
        outcomes: &'a [Outcome],
        catalogue: &Catalogue<'_>,
        request: &ImportRequest,
        default_user: &str,
        mut new_id: impl FnMut() -> String,
    ) -> ImportPlan<'a> {
        let mut plan = ImportPlan {
            placed: Vec::new(),
            report: ImportReport {
                dry_run: request.dry_run,
                ..ImportReport::default()
            },
            group_id: request.group_id.clone(),
        };
        let mut matches: HashMap<MatchKey, &Host> = HashMap::new();
        for host in catalogue.hosts {
            // A host's own values: one that inherits its port or user matches by the
            // built-in port and no user (docs/identities.md).
            let key = match_key(
                &host.name,
                &host.hostname,
                host.port.unwrap_or(crate::model::inherit::DEFAULT_PORT),
                host.username.as_deref().unwrap_or_default(),
            );
            matches.entry(key).or_insert(host);
        }
        let mut claimed: HashSet<MatchKey> = HashSet::new();
        for outcome in outcomes {
            let block = match outcome {
                Outcome::Skipped { block, reason } => {
                    plan.report.skipped.push(Skip {
                        block: block.clone(),
                        reason: reason.clone(),
                    });
                    continue;
                }
                Outcome::Host(block) => block,
            };
            let Some(fields) = plan.report.fields_of(block, default_user) else {
                continue;
            };
            let key = match_key(
                fields.name(),
                fields.hostname(),
                fields.port(),
                fields.username(),
            );
            if !claimed.insert(key.clone()) {
                plan.report.skipped.push(Skip {
                    block: block.label.clone(),
                    reason: "an earlier block of this import describes the same host".into(),
                });
                continue;
            }
            let current = matches.get(&key).map(|host| (*host).clone());
            for warning in &block.warnings {
                plan.report.warn(block, warning.clone());
            }
            let (auth, mut options) = plan.report.auth_of(block, catalogue, current.as_ref());
            options.extend(block.options.iter().cloned());
            let options = plan.report.checked_options(block, options);
            let startup = plan.report.startup_of(block, current.as_ref());
            plan.placed.push(Placed {
                block,
                id: current
                    .as_ref()
                    .map_or_else(&mut new_id, |host| host.id.clone()),
                existing: current,
                fields,
                auth,
                options,
                hops: Vec::new(),
                startup,
            });
        }
        plan.resolve_hops(catalogue.hosts);
        plan
    }

    /// The group every imported host goes into (`None`: new hosts ungrouped, matched ones
    /// where they are).
    pub fn group_id(&self) -> Option<&str> {
        self.group_id.as_deref()
    }

    /// Resolves each block's ProxyJump hops: an alias of this import first, else a stored
    /// host of that name (case-insensitively, the oldest). A hop that resolves to nothing,
    /// or a chain too long, is reported and the directive kept verbatim instead.
    fn resolve_hops(&mut self, existing: &[Host]) {
        let mut by_alias: HashMap<&str, String> = HashMap::new();
        for place in &self.placed {
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
        for place in &mut self.placed {
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
                    self.report.warn(block, message);
                    let raw = format!("ProxyJump {}", block.proxy_jump.join(","));
                    match interop::ssh_option(&raw) {
                        Ok(raw) if place.options.len() < MAX_SSH_OPTIONS => place.options.push(raw),
                        Ok(_) => self.report.warn(
                            block,
                            format!("more than {MAX_SSH_OPTIONS} directives; dropped: {raw}"),
                        ),
                        Err(rule) => self
                            .report
                            .warn(block, format!("directive dropped ({rule}): {raw}")),
                    }
                }
            }
        }
    }
}

impl Placed<'_> {
    /// The host a block that matched no stored host becomes (its chain is written once
    /// every new host exists: a hop may be one of them).
    pub fn new_host(&self, group_id: Option<&str>) -> NewHost {
        NewHost {
            startup: self.startup.clone(),
            ..self.fields.new_host(
                self.auth.clone(),
                group_id.map(str::to_owned),
                self.options.clone(),
            )
        }
    }

    /// What the import changes in the matched host `current`, with `hops` as its chain:
    /// `None` when nothing (auth, kept directives, chain, and the group when one is given).
    pub fn change(
        &self,
        current: &Host,
        hops: Vec<String>,
        group_id: Option<&str>,
    ) -> Result<Option<HostChange>, Invalid> {
        let group_id = group_id.map(str::to_owned);
        let auth_type = self.auth.as_ref().map(|auth| auth.auth_type);
        let key_id = self.auth.as_ref().and_then(|auth| auth.key_id.clone());
        // A host that inherits its chain and a block without ProxyJump agree: it keeps
        // inheriting (docs/identities.md).
        let chain_same = match &current.jump_host_ids {
            None => hops.is_empty(),
            Some(chain) => *chain == hops,
        };
        let same = current.auth_type == auth_type
            && current.key_id == key_id
            && current.ssh_options == self.options
            && current.startup == self.startup
            && chain_same
            && (group_id.is_none() || current.group_id == group_id);
        if same {
            return Ok(None);
        }
        let patch = HostPatch {
            group_id: group_id.map(Some),
            jump_host_ids: (!chain_same).then_some(Some(hops)),
            ssh_options: Some(self.options.clone()),
            startup: StartupPatch {
                remote_command: Some(self.startup.remote_command.clone()),
                request_tty: Some(self.startup.request_tty),
                set_env: Some(self.startup.set_env.clone()),
                send_env: Some(self.startup.send_env.clone()),
            },
            ..HostPatch::default()
        };
        let mut change = patch.apply(current)?;
        change.host.auth_type = auth_type;
        change.host.key_id = key_id;
        change.password = self
            .auth
            .as_ref()
            .map_or(PasswordAction::Keep, |auth| auth.password);
        Ok(Some(change))
    }

    fn item(&self, id: Option<String>) -> Item {
        Item {
            id,
            name: self.block.name.clone(),
            block: self.block.label.clone(),
        }
    }
}

impl ImportReport {
    /// A block's startup: a secret variable it names (the export writes only the name) is
    /// kept where the matched host stores a value under that name, else reported and left
    /// out.
    fn startup_of(&mut self, block: &HostBlock, current: Option<&Host>) -> Startup {
        let mut startup = block.session.startup.clone();
        let stored = |name: &str| {
            current.is_some_and(|host| {
                host.startup.set_env.iter().any(|entry| {
                    entry.name == name && matches!(entry.value, EnvValue::Secret { .. })
                })
            })
        };
        let mut missing = Vec::new();
        startup.set_env.retain(|entry| {
            let keep = !matches!(entry.value, EnvValue::Secret { .. }) || stored(&entry.name);
            if !keep {
                missing.push(entry.name.clone());
            }
            keep
        });
        for name in missing {
            self.warn(
                block,
                format!("secret env {name} has no value stored here; left out (set it with PUT /api/hosts/:id)"),
            );
        }
        // The export writes plain values on one SetEnv line and secrets after it: the same
        // entries in another order are the host's own order.
        if let Some(host) = current {
            let same = host.startup.set_env.len() == startup.set_env.len()
                && host
                    .startup
                    .set_env
                    .iter()
                    .all(|entry| startup.set_env.contains(entry));
            if same {
                startup.set_env = host.startup.set_env.clone();
            }
        }
        startup
    }

    /// The chain `place` gets once `verdict` judged its hops against the stored chains: its
    /// hops when fine; otherwise a warning, and an existing host keeps the chain it had.
    pub fn settle_chain(&mut self, place: &Placed<'_>, verdict: &ChainVerdict) -> Vec<String> {
        let Some(details) = verdict.details() else {
            return place.hops.clone();
        };
        self.warn(place.block, format!("ProxyJump not imported: {details}"));
        place
            .existing
            .as_ref()
            .and_then(|host| host.jump_host_ids.clone())
            .unwrap_or_default()
    }

    /// `place` was stored as a new host (its id stays out of a dry run's answer).
    pub fn created(&mut self, place: &Placed<'_>) {
        let id = (!self.dry_run).then(|| place.id.clone());
        self.created.push(place.item(id));
    }

    pub fn updated(&mut self, place: &Placed<'_>) {
        self.updated.push(place.item(Some(place.id.clone())));
    }

    pub fn unchanged(&mut self, place: &Placed<'_>) {
        self.unchanged.push(place.item(Some(place.id.clone())));
    }

    /// The auth of a block: the first `IdentityFile` whose key is known (supplied with the
    /// import, or an exported `~/.ssh/host-manager/<key_id>` of a stored key), else agent
    /// for a new host and the current auth for an existing one. Identity files without a
    /// key are reported missing and kept verbatim, so nothing is lost.
    fn auth_of(
        &mut self,
        block: &HostBlock,
        catalogue: &Catalogue<'_>,
        current: Option<&Host>,
    ) -> (Option<AuthChange>, Vec<String>) {
        let mut key_id = None;
        let mut kept = Vec::new();
        for (path, raw) in &block.identity_files {
            // An agent export names the public key file (docs/agent.md "SSH agent").
            let exported = path
                .strip_prefix(IDENTITY_DIR)
                .map(|file| file.strip_suffix(PUBLIC_KEY_SUFFIX).unwrap_or(file))
                .filter(|id| catalogue.stored_keys.contains(*id));
            let known = match (catalogue.supplied_keys.get(path), exported) {
                (Some(id), _) => Some(id.clone()),
                (None, Some(id)) => Some(id.to_owned()),
                (None, None) => None,
            };
            match (known, &key_id) {
                (Some(id), None) => key_id = Some(id),
                (Some(_), Some(_)) => kept.push(raw.clone()),
                (None, _) => {
                    self.missing_keys.push(MissingKey {
                        block: block.label.clone(),
                        identity_file: path.clone(),
                    });
                    kept.push(raw.clone());
                }
            }
        }
        // An existing host that inherits its auth keeps inheriting it (`None`).
        let auth = match (key_id, current) {
            (Some(key_id), _) => Some(AuthChange {
                auth_type: AuthType::Key,
                key_id: Some(key_id),
                password: PasswordAction::Clear,
            }),
            (None, Some(host)) => host.auth_type.map(|auth_type| AuthChange {
                auth_type,
                key_id: host.key_id.clone(),
                password: PasswordAction::Keep,
            }),
            (None, None) => Some(AuthChange {
                auth_type: AuthType::Agent,
                key_id: None,
                password: PasswordAction::Clear,
            }),
        };
        (auth, kept)
    }
}

/// The names of the files an import's blocks read keys from: the supplied keys worth
/// reading (others are ignored).
pub fn identity_paths(outcomes: &[Outcome]) -> HashSet<&str> {
    outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            Outcome::Host(block) => Some(block),
            Outcome::Skipped { .. } => None,
        })
        .flat_map(|block| block.identity_files.iter().map(|(path, _)| path.as_str()))
        .collect()
}

fn match_key(name: &str, hostname: &str, port: u16, username: &str) -> MatchKey {
    (
        name::sort_key(name),
        hostname.to_ascii_lowercase(),
        port,
        username.trim().to_owned(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use serde_json::json;

    use crate::model::host::{AuthType, Host, PasswordAction};
    use crate::model::interop::{ChainProblem, ChainVerdict};
    use crate::model::ssh_config::{self, Outcome};
    use crate::model::ssh_config_import::{Catalogue, ImportPlan, ImportRequest};

    fn stored(id: &str, name: &str, hostname: &str, username: &str) -> Host {
        Host {
            id: id.into(),
            name: name.into(),
            hostname: hostname.into(),
            port: Some(22),
            username: Some(username.into()),
            auth_type: Some(AuthType::Password),
            key_id: None,
            has_password: true,
            identity_id: None,
            group_id: None,
            tags: Vec::new(),
            is_favorite: false,
            color: String::new(),
            order: 0,
            notes: String::new(),
            created_at: "2000-01-01T00:00:00.000Z".into(),
            updated_at: "2000-01-01T00:00:00.000Z".into(),
            last_used_at: None,
            jump_host_ids: Some(Vec::new()),
            ssh_options: Vec::new(),
            startup: Default::default(),
            revision: 1,
        }
    }

    fn outcomes(config: &str) -> Vec<Outcome> {
        ssh_config::interpret(&ssh_config::parse(config))
    }

    fn request(dry_run: bool) -> ImportRequest {
        ImportRequest {
            config: String::new(),
            group_id: None,
            dry_run,
        }
    }

    /// The plan of `config` against `hosts`, with key ids `k-<path>` for `supplied` paths
    /// and new ids `new-1`, `new-2`, ...
    fn plan<'a>(
        outcomes: &'a [Outcome],
        hosts: &[Host],
        supplied: &[&str],
        stored_keys: &[&str],
    ) -> ImportPlan<'a> {
        let supplied: HashMap<String, String> = supplied
            .iter()
            .map(|path| (path.to_string(), format!("k-{path}")))
            .collect();
        let stored_keys: HashSet<String> = stored_keys.iter().map(|id| id.to_string()).collect();
        let catalogue = Catalogue {
            hosts,
            supplied_keys: &supplied,
            stored_keys: &stored_keys,
        };
        let mut next = 0;
        let new_id = || {
            next += 1;
            format!("new-{next}")
        };
        ImportPlan::new(outcomes, &catalogue, &request(false), "me", new_id)
    }

    #[test]
    fn request_needs_config_text_and_checks_group_id_and_dry_run() {
        let parse = |body: serde_json::Value| {
            ImportRequest::from_json(body.as_object().unwrap()).map_err(|err| err.field)
        };
        assert_eq!(parse(json!({})).unwrap_err(), "config");
        assert_eq!(parse(json!({"config": 1})).unwrap_err(), "config");
        assert_eq!(
            parse(json!({"config": "", "group_id": 5})).unwrap_err(),
            "group_id"
        );
        assert_eq!(
            parse(json!({"config": "", "dry_run": "yes"})).unwrap_err(),
            "dry_run"
        );
        let request = parse(json!({"config": "x", "group_id": "", "dry_run": null})).unwrap();
        assert_eq!(
            request,
            ImportRequest {
                config: "x".into(),
                group_id: None,
                dry_run: false,
            }
        );
    }

    #[test]
    fn a_block_matching_name_hostname_port_and_user_is_the_stored_host() {
        let hosts = [stored("h1", "Web", "WEB.example.com", "me")];
        let outcomes = outcomes("Host web\n HostName web.example.com\n");
        let plan = plan(&outcomes, &hosts, &[], &[]);
        assert_eq!(plan.placed.len(), 1);
        assert_eq!(plan.placed[0].id, "h1");
        assert_eq!(plan.placed[0].fields.username(), "me", "the default user");
        let auth = plan.placed[0].auth.as_ref().unwrap();
        assert_eq!(
            (auth.auth_type, auth.password),
            (AuthType::Password, PasswordAction::Keep),
            "a matched host keeps its auth"
        );
    }

    #[test]
    fn a_block_differing_in_user_or_port_is_a_new_host_with_agent_auth() {
        let hosts = [stored("h1", "web", "web.example.com", "me")];
        for config in [
            "Host web\n HostName web.example.com\n User other\n",
            "Host web\n HostName web.example.com\n Port 2222\n",
        ] {
            let outcomes = outcomes(config);
            let plan = plan(&outcomes, &hosts, &[], &[]);
            assert_eq!(plan.placed[0].id, "new-1", "{config}");
            assert_eq!(
                plan.placed[0].auth.as_ref().unwrap().auth_type,
                AuthType::Agent,
                "{config}"
            );
        }
    }

    #[test]
    fn a_block_whose_user_the_hosts_api_refuses_is_skipped_with_the_rule() {
        let config = "Host a\n User -oProxyCommand=touch${IFS}/tmp/x\n\
                      Host b\n User \"a -oProxyCommand=x\"\n\
                      Host c\n User ops@127.0.0.1\n\
                      Host d\n User ok\n";
        let outcomes = outcomes(config);
        let plan = plan(&outcomes, &[], &[], &[]);
        assert_eq!(plan.placed.len(), 1);
        assert_eq!(plan.placed[0].fields.username(), "ok");
        let skipped = &plan.report.skipped;
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        for (skip, label) in skipped.iter().zip(["Host a ", "Host b ", "Host c "]) {
            assert!(skip.block.starts_with(label), "{skip:?}");
            assert!(skip.reason.starts_with("User must not"), "{skip:?}");
            assert!(!skip.reason.contains("ProxyCommand"), "no echo: {skip:?}");
        }
    }

    #[test]
    fn a_default_user_the_hosts_api_refuses_skips_blocks_without_user() {
        let outcomes = outcomes("Host a\nHost b\n User ok\n");
        let (hosts, supplied, stored_keys) = ([], HashMap::new(), HashSet::new());
        let catalogue = Catalogue {
            hosts: &hosts,
            supplied_keys: &supplied,
            stored_keys: &stored_keys,
        };
        let plan = ImportPlan::new(&outcomes, &catalogue, &request(false), "-oX=y", || {
            "new".to_owned()
        });
        assert_eq!(plan.placed.len(), 1);
        assert_eq!(plan.report.skipped.len(), 1);
        assert!(plan.report.skipped[0]
            .reason
            .starts_with("the default user"));
    }

    #[test]
    fn a_block_whose_name_or_hostname_the_hosts_api_refuses_is_skipped_naming_the_field() {
        let long = "n".repeat(101);
        let config = format!(
            "Host a\n HostName %h.example.com\nHost b\n HostName -oProxyCommand=x\n\
             # host-manager name: {long}\nHost c\nHost d\n Port 65535\n"
        );
        let outcomes = outcomes(&config);
        let plan = plan(&outcomes, &[], &[], &[]);
        let reasons: Vec<&str> = plan
            .report
            .skipped
            .iter()
            .map(|skip| skip.reason.as_str())
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].starts_with("HostName"), "{reasons:?}");
        assert!(reasons[1].starts_with("HostName"), "{reasons:?}");
        assert!(reasons[2].starts_with("the name"), "{reasons:?}");
        assert_eq!(plan.placed[0].fields.port(), 65535);
    }

    #[test]
    fn an_unresolved_proxy_jump_kept_verbatim_meets_the_ssh_options_rule() {
        let hop = "h".repeat(1100);
        let config = format!("Host app\n ProxyJump {hop}\n");
        let outcomes = outcomes(&config);
        let plan = plan(&outcomes, &[], &[], &[]);
        assert!(plan.placed[0].options.is_empty(), "over 1,024 characters");
        assert!(plan.report.warnings[1]
            .message
            .starts_with("directive dropped"));
    }

    #[test]
    fn a_second_block_for_the_same_host_is_skipped() {
        let outcomes =
            outcomes("Host a\n HostName x.example.com\nHost a\n HostName x.example.com\n");
        let plan = plan(&outcomes, &[], &[], &[]);
        assert_eq!(plan.placed.len(), 1);
        assert_eq!(plan.report.skipped.len(), 1);
        assert!(plan.report.skipped[0].reason.contains("same host"));
    }

    #[test]
    fn supplied_or_exported_keys_give_key_auth_and_others_are_missing_and_kept() {
        let outcomes = outcomes(
            "Host a\n IdentityFile ~/.ssh/lost\n IdentityFile ~/.ssh/id_a\n\
             Host b\n IdentityFile ~/.ssh/host-manager/k9.pub\n",
        );
        let plan = plan(&outcomes, &[], &["~/.ssh/id_a"], &["k9"]);
        let (a, b) = (&plan.placed[0], &plan.placed[1]);
        assert_eq!(
            a.auth.as_ref().unwrap().key_id.as_deref(),
            Some("k-~/.ssh/id_a")
        );
        assert_eq!(a.options, ["IdentityFile ~/.ssh/lost"]);
        assert_eq!(b.auth.as_ref().unwrap().key_id.as_deref(), Some("k9"));
        assert_eq!(plan.report.missing_keys.len(), 1);
        assert_eq!(plan.report.missing_keys[0].identity_file, "~/.ssh/lost");
    }

    #[test]
    fn an_exported_path_of_a_key_not_stored_is_missing() {
        let outcomes = outcomes("Host a\n IdentityFile ~/.ssh/host-manager/gone\n");
        let plan = plan(&outcomes, &[], &[], &[]);
        assert_eq!(
            plan.placed[0].auth.as_ref().unwrap().auth_type,
            AuthType::Agent
        );
        assert_eq!(plan.report.missing_keys.len(), 1);
    }

    #[test]
    fn hops_resolve_to_aliases_of_the_import_first_then_stored_names() {
        let hosts = [
            stored("old-bastion", "Bastion", "b.example.com", "x"),
            stored("old-jump", "jump", "j.example.com", "x"),
        ];
        let outcomes =
            outcomes("Host bastion\n HostName nb.example.com\nHost app\n ProxyJump bastion,JUMP\n");
        let plan = plan(&outcomes, &hosts, &[], &[]);
        assert_eq!(plan.placed[1].hops, ["new-1", "old-jump"]);
    }

    #[test]
    fn an_unresolved_hop_is_warned_about_and_kept_verbatim() {
        let outcomes = outcomes("Host app\n ProxyJump nowhere\n");
        let plan = plan(&outcomes, &[], &[], &[]);
        assert!(plan.placed[0].hops.is_empty());
        assert_eq!(plan.placed[0].options, ["ProxyJump nowhere"]);
        assert!(plan.report.warnings[0].message.contains("nowhere"));
    }

    #[test]
    fn a_refused_chain_is_warned_about_and_an_existing_host_keeps_its_chain() {
        let mut current = stored("h1", "app", "app", "me");
        current.jump_host_ids = Some(vec!["kept".into()]);
        let hosts = [current];
        let outcomes = outcomes("Host app\n");
        let mut plan = plan(&outcomes, &hosts, &[], &[]);
        let refused = ChainVerdict::Invalid(ChainProblem("a loop".into()));
        let ImportPlan { placed, report, .. } = &mut plan;
        assert_eq!(report.settle_chain(&placed[0], &refused), ["kept"]);
        assert!(report.warnings[0].message.contains("a loop"));
        assert!(report
            .settle_chain(&placed[0], &ChainVerdict::Fine)
            .is_empty());
    }

    #[test]
    fn a_matched_host_with_nothing_new_is_unchanged_and_a_new_directive_changes_it() {
        let hosts = [stored("h1", "app", "app", "me")];
        let same = outcomes("Host app\n");
        let plan_same = plan(&same, &hosts, &[], &[]);
        let change = plan_same.placed[0]
            .change(&hosts[0], Vec::new(), None)
            .unwrap();
        assert_eq!(change, None);
        let more = outcomes("Host app\n ForwardAgent yes\n");
        let plan_more = plan(&more, &hosts, &[], &[]);
        let change = plan_more.placed[0]
            .change(&hosts[0], Vec::new(), None)
            .unwrap()
            .unwrap();
        assert_eq!(change.host.ssh_options, ["ForwardAgent yes"]);
        assert_eq!(change.password, PasswordAction::Keep);
    }

    #[test]
    fn a_dry_run_reports_created_hosts_without_ids() {
        let outcomes = outcomes("Host app\n");
        let catalogue_hosts: [Host; 0] = [];
        let (supplied, stored_keys) = (HashMap::new(), HashSet::new());
        let catalogue = Catalogue {
            hosts: &catalogue_hosts,
            supplied_keys: &supplied,
            stored_keys: &stored_keys,
        };
        let mut plan = ImportPlan::new(&outcomes, &catalogue, &request(true), "me", || {
            "new".to_owned()
        });
        let ImportPlan { placed, report, .. } = &mut plan;
        report.created(&placed[0]);
        assert_eq!(report.created[0].id, None);
        assert!(report.dry_run);
    }
}
