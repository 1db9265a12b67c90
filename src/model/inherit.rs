//! Inheritance: the value a host's connection field takes and where it comes from
//! (docs/identities.md, "Host fields that inherit").
//!
//! The walk goes through levels from the host up: the host, its group, each parent group.
//! At each level the level's own value wins, else the value of the identity that level
//! names, else the next level; after the top, the built-in default. The first value found
//! is the field's value; the second is what it hides.
//!
//! Invariants: pure, no I/O and no secret: an identity is seen only through its public
//! traits (username, which methods it has). `resolve` never fails: a host with no username
//! or no auth gets `None` for them, and the writers refuse such hosts (`missing`).

use serde::Serialize;
use serde_json::{json, Value};

use crate::model::environment::EnvEntry;
use crate::model::host::Host;
use crate::model::ssh_words::split_keyword;
use crate::model::startup::{env_json, Startup};

/// The built-in port when no level sets one.
pub const DEFAULT_PORT: u16 = 22;

/// A group's defaults (docs/identities.md, "Group defaults"); every field optional, and
/// answered with every field (`null` when unset).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GroupDefaults {
    pub username: Option<String>,
    pub port: Option<u16>,
    pub identity_id: Option<String>,
    /// `Some(vec![])`: connect directly, hiding a chain set higher up.
    pub jump_host_ids: Option<Vec<String>>,
    /// Merged, not replaced: see `ssh_options`.
    pub ssh_options: Vec<String>,
    /// Merged by name, nearest first (docs/forwards.md, "Inheritance"); a secret's value is
    /// sealed under the group.
    #[serde(serialize_with = "crate::model::inherit::env_field")]
    pub set_env: Vec<EnvEntry>,
    /// Added up, each pattern once.
    pub send_env: Vec<String>,
}

/// `set_env` as answered: `{name, value}` or `{name, secret: true}`.
fn env_field<S: serde::Serializer>(entries: &[EnvEntry], out: S) -> Result<S::Ok, S::Error> {
    env_json(entries).serialize(out)
}

/// What the walk needs to know of an identity: never a secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdentityTraits {
    pub username: Option<String>,
    /// The public view of its methods (`[{type, key_id?}]`); empty: it sets no auth.
    pub auth: Vec<Value>,
}

/// One group on the way up, nearest first.
#[derive(Clone, Copy, Debug)]
pub struct GroupLevel<'a> {
    pub id: &'a str,
    pub defaults: &'a GroupDefaults,
}

/// Which level a value was found at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Host,
    Group(String),
    /// An identity's value, named at the level `via`.
    Identity {
        id: String,
        via: Box<Source>,
    },
    Default,
}

impl Source {
    /// `host`, `group:<id>`, `identity:<id>`, `default`.
    pub fn label(&self) -> String {
        match self {
            Source::Host => "host".to_owned(),
            Source::Group(id) => format!("group:{id}"),
            Source::Identity { id, .. } => format!("identity:{id}"),
            Source::Default => "default".to_owned(),
        }
    }

    fn describe(&self, value: Value) -> Value {
        let mut out = json!({"value": value, "source": self.label()});
        if let Source::Identity { via, .. } = self {
            out["via"] = Value::String(via.label());
        }
        out
    }
}

/// A field's value, where it comes from, and the value it hides (if a lower-priority level
/// sets the field too).
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
    pub hides: Option<(T, Source)>,
}

impl<T: Serialize> Sourced<T> {
    fn describe(&self) -> Value {
        let mut out = self.source.describe(json!(self.value));
        if let Some((value, source)) = &self.hides {
            out["hides"] = source.describe(json!(value));
        }
        out
    }
}

/// A host's own auth, or an identity's methods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AuthValue {
    /// `{type, key_id?, has_password}` as the host view shows it.
    Host(Value),
    /// The identity's methods in order (`[{type, key_id?}]`).
    Identity(Vec<Value>),
}

/// One extra ssh_config option and the level it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcedOption {
    pub option: String,
    pub source: Source,
    /// Set when a nearer level already gave this keyword (`ssh` takes the first).
    pub hidden: bool,
}

/// One `set_env` entry and the level it comes from (a secret's value is sealed there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcedEnv {
    pub entry: EnvEntry,
    pub source: Source,
    /// Set when a nearer level already set this name (`ssh` takes the first).
    pub hidden: bool,
}

/// Every connection field of a host, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective {
    pub username: Option<Sourced<String>>,
    pub port: Sourced<u16>,
    pub auth: Option<Sourced<AuthValue>>,
    pub identity_id: Option<Sourced<String>>,
    pub jump_host_ids: Sourced<Vec<String>>,
    pub ssh_options: Vec<SourcedOption>,
    /// docs/forwards.md, "Inheritance": merged by name, nearest first.
    pub set_env: Vec<SourcedEnv>,
    /// Added up, host first, each pattern once.
    pub send_env: Vec<String>,
}

impl Effective {
    /// The username, if any level sets one.
    pub fn username(&self) -> Option<&str> {
        self.username.as_ref().map(|field| field.value.as_str())
    }

    pub fn port(&self) -> u16 {
        self.port.value
    }

    pub fn identity_id(&self) -> Option<&str> {
        self.identity_id.as_ref().map(|field| field.value.as_str())
    }

    /// The options `ssh` would apply, in order (hidden ones left out).
    pub fn options(&self) -> Vec<String> {
        self.ssh_options
            .iter()
            .filter(|entry| !entry.hidden)
            .map(|entry| entry.option.clone())
            .collect()
    }

    /// The `set_env` entries `ssh` would send, in order (hidden ones left out).
    pub fn env(&self) -> Vec<&SourcedEnv> {
        self.set_env
            .iter()
            .filter(|sourced| !sourced.hidden)
            .collect()
    }

    /// The first field a connection needs and no level gives: `username` or `auth`.
    pub fn missing(&self) -> Option<&'static str> {
        match (&self.username, &self.auth) {
            (None, _) => Some("username"),
            (_, None) => Some("auth"),
            _ => None,
        }
    }

    /// `GET /api/hosts/:id/effective`'s `fields` (docs/identities.md).
    pub fn describe(&self, host: &Host) -> Value {
        let absent = |field: &Option<Value>| field.clone().unwrap_or(Value::Null);
        let entries: Vec<Value> = self
            .ssh_options
            .iter()
            .map(|entry| {
                let mut out = json!({"option": entry.option, "source": entry.source.label()});
                if let Source::Identity { via, .. } = &entry.source {
                    out["via"] = Value::String(via.label());
                }
                if entry.hidden {
                    out["hidden"] = Value::Bool(true);
                }
                out
            })
            .collect();
        json!({
            "hostname": Source::Host.describe(json!(host.hostname)),
            "username": absent(&self.username.as_ref().map(Sourced::describe)),
            "port": self.port.describe(),
            "auth": absent(&self.auth.as_ref().map(Sourced::describe)),
            "identity_id": absent(&self.identity_id.as_ref().map(Sourced::describe)),
            "jump_host_ids": self.jump_host_ids.describe(),
            "ssh_options": {"value": self.options(), "source": "merged", "entries": entries},
            "set_env": {
                "value": env_json(&self.env().into_iter().map(|e| e.entry.clone()).collect::<Vec<_>>()),
                "source": "merged",
                "entries": self.set_env.iter().map(|sourced| {
                    let mut out = json!({"name": sourced.entry.name, "source": sourced.source.label()});
                    if sourced.hidden {
                        out["hidden"] = Value::Bool(true);
                    }
                    out
                }).collect::<Vec<_>>(),
            },
            "send_env": {"value": self.send_env, "source": "merged"},
            "remote_command": Source::Host.describe(json!(host.startup.remote_command)),
            "request_tty": Source::Host.describe(json!(host.startup.request_tty.map(|tty| tty.as_str()))),
        })
    }
}

/// One level's own value and its identity's, as candidates in priority order.
fn candidates<T: Clone>(
    own: Option<T>,
    level: &Source,
    identity: Option<(&str, &IdentityTraits)>,
    from_identity: impl Fn(&IdentityTraits) -> Option<T>,
    out: &mut Vec<(T, Source)>,
) {
    if let Some(value) = own {
        out.push((value, level.clone()));
    }
    if let Some((id, traits)) = identity {
        if let Some(value) = from_identity(traits) {
            out.push((
                value,
                Source::Identity {
                    id: id.to_owned(),
                    via: Box::new(level.clone()),
                },
            ));
        }
    }
}

/// The first candidate, with the second as what it hides.
fn first_two<T>(mut found: Vec<(T, Source)>) -> Option<Sourced<T>> {
    found.truncate(2);
    let hides = if found.len() == 2 { found.pop() } else { None };
    let (value, source) = found.pop()?;
    Some(Sourced {
        value,
        source,
        hides,
    })
}

/// Resolves every connection field of `host` under `groups` (its group first, then up).
/// `identity` looks an identity up by id; an id it does not know sets nothing.
pub fn resolve<'a>(
    host: &Host,
    groups: &[GroupLevel<'_>],
    identity: impl Fn(&str) -> Option<&'a IdentityTraits>,
) -> Effective {
    // Each level: its source, and the identity it names with that identity's traits.
    let mut levels: Vec<(Source, Option<(&str, &IdentityTraits)>)> = Vec::new();
    let host_identity = host
        .identity_id
        .as_deref()
        .and_then(|id| identity(id).map(|traits| (id, traits)));
    levels.push((Source::Host, host_identity));
    for group in groups {
        let traits = group
            .defaults
            .identity_id
            .as_deref()
            .and_then(|id| identity(id).map(|traits| (id, traits)));
        levels.push((Source::Group(group.id.to_owned()), traits));
    }
    let own_levels =
        || std::iter::once(None).chain(groups.iter().map(|group| Some(group.defaults)));

    let mut usernames = Vec::new();
    let mut auths = Vec::new();
    for ((source, identity), defaults) in levels.iter().zip(own_levels()) {
        let own_username = match defaults {
            None => host.username.clone(),
            Some(defaults) => defaults.username.clone(),
        };
        candidates(
            own_username,
            source,
            *identity,
            |t| t.username.clone(),
            &mut usernames,
        );
        let own_auth = match defaults {
            None => host.auth_view().map(AuthValue::Host),
            Some(_) => None,
        };
        candidates(own_auth, source, *identity, identity_auth, &mut auths);
    }
    let mut ports = Vec::new();
    let mut identities = Vec::new();
    let mut jumps = Vec::new();
    for ((source, _), defaults) in levels.iter().zip(own_levels()) {
        let (port, identity_id, chain) = match defaults {
            None => (
                host.port,
                host.identity_id.clone(),
                host.jump_host_ids.clone(),
            ),
            Some(defaults) => (
                defaults.port,
                defaults.identity_id.clone(),
                defaults.jump_host_ids.clone(),
            ),
        };
        // A default chain that passes through the host itself is not its route (the hop
        // would jump through itself): the host skips that level's chain.
        let chain = chain.filter(|chain| defaults.is_none() || !chain.contains(&host.id));
        candidates(port, source, None, |_| None, &mut ports);
        candidates(identity_id, source, None, |_| None, &mut identities);
        candidates(chain, source, None, |_| None, &mut jumps);
    }
    ports.push((DEFAULT_PORT, Source::Default));
    jumps.push((Vec::new(), Source::Default));
    Effective {
        username: first_two(usernames),
        port: first_two(ports).unwrap_or_else(|| built_in(DEFAULT_PORT)),
        auth: first_two(auths),
        identity_id: first_two(identities),
        jump_host_ids: first_two(jumps).unwrap_or_else(|| built_in(Vec::new())),
        ssh_options: merged_options(host, groups),
        set_env: merged_env(host, groups),
        send_env: merged_patterns(host, groups),
    }
}

/// A built-in default (never reached: the default is always the last candidate).
fn built_in<T>(value: T) -> Sourced<T> {
    Sourced {
        value,
        source: Source::Default,
        hides: None,
    }
}

/// The host's `set_env`, then each group's nearest first; a name set before is hidden.
fn merged_env(host: &Host, groups: &[GroupLevel<'_>]) -> Vec<SourcedEnv> {
    let levels = std::iter::once((Source::Host, &host.startup.set_env)).chain(
        groups
            .iter()
            .map(|group| (Source::Group(group.id.to_owned()), &group.defaults.set_env)),
    );
    let mut out: Vec<SourcedEnv> = Vec::new();
    for (source, entries) in levels {
        for entry in entries {
            let hidden = out
                .iter()
                .any(|seen| !seen.hidden && seen.entry.name == entry.name);
            out.push(SourcedEnv {
                entry: entry.clone(),
                source: source.clone(),
                hidden,
            });
        }
    }
    out
}

/// The host's `send_env` patterns, then each group's, each pattern once.
fn merged_patterns(host: &Host, groups: &[GroupLevel<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let levels = std::iter::once(&host.startup.send_env)
        .chain(groups.iter().map(|group| &group.defaults.send_env));
    for pattern in levels.flatten() {
        if !out.contains(pattern) {
            out.push(pattern.clone());
        }
    }
    out
}

fn identity_auth(traits: &IdentityTraits) -> Option<AuthValue> {
    match traits.auth.is_empty() {
        true => None,
        false => Some(AuthValue::Identity(traits.auth.clone())),
    }
}

/// The host's options, then each group's nearest first; a keyword seen before is hidden,
/// as `ssh` keeps the first value it obtains for each.
fn merged_options(host: &Host, groups: &[GroupLevel<'_>]) -> Vec<SourcedOption> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let levels =
        std::iter::once((Source::Host, &host.ssh_options)).chain(groups.iter().map(|group| {
            (
                Source::Group(group.id.to_owned()),
                &group.defaults.ssh_options,
            )
        }));
    for (source, options) in levels {
        for option in options {
            let keyword = split_keyword(option).0.to_ascii_lowercase();
            let hidden = seen.contains(&keyword);
            if !hidden {
                seen.push(keyword);
            }
            out.push(SourcedOption {
                option: option.clone(),
                source: source.clone(),
                hidden,
            });
        }
    }
    out
}

impl Effective {
    /// `host` with its inheritable fields set to their effective values: port, username
    /// (`None` only when no level gives one), identity and chain. The auth stays the host's
    /// own: an identity's methods are not one auth type (see `auth_label`).
    pub fn flatten(&self, host: &Host) -> Host {
        Host {
            port: Some(self.port()),
            username: self.username().map(str::to_owned),
            identity_id: self.identity_id().map(str::to_owned),
            jump_host_ids: Some(self.jump_host_ids.value.clone()),
            ssh_options: self.options(),
            startup: Startup {
                set_env: self
                    .env()
                    .into_iter()
                    .map(|sourced| sourced.entry.clone())
                    .collect(),
                send_env: self.send_env.clone(),
                ..host.startup.clone()
            },
            ..host.clone()
        }
    }

    /// The auth type a connection starts with: the host's own, or the first method of the
    /// identity it resolves to (`""` when there is none).
    pub fn auth_label(&self) -> String {
        let Some(auth) = &self.auth else {
            return String::new();
        };
        let first = match &auth.value {
            AuthValue::Host(view) => view.get("type"),
            AuthValue::Identity(methods) => methods.first().and_then(|method| method.get("type")),
        };
        first.and_then(Value::as_str).unwrap_or_default().to_owned()
    }
}

impl Effective {
    /// Every key the effective auth uses, in order: the host's own key, or each key method
    /// of the identity it resolves to (the query language's `key:` and `has:key`).
    pub fn auth_keys(&self) -> Vec<String> {
        let Some(auth) = &self.auth else {
            return Vec::new();
        };
        let methods = match &auth.value {
            AuthValue::Host(view) => std::slice::from_ref(view),
            AuthValue::Identity(methods) => methods.as_slice(),
        };
        methods.iter().filter_map(method_key).collect()
    }

    /// Whether the effective auth holds a password: the host's own stored one, or a
    /// `password` method of the identity it resolves to (the query language's
    /// `has:password`).
    pub fn holds_password(&self) -> bool {
        let kind = |method: &Value| method.get("type").and_then(Value::as_str) == Some("password");
        match self.auth.as_ref().map(|auth| &auth.value) {
            Some(AuthValue::Host(view)) => {
                kind(view) && view.get("has_password").and_then(Value::as_bool) == Some(true)
            }
            Some(AuthValue::Identity(methods)) => methods.iter().any(kind),
            None => false,
        }
    }

    /// The key a connection offers first: the host's own key, or the first key method of the
    /// identity it resolves to.
    pub fn auth_key(&self) -> Option<String> {
        self.auth_keys().into_iter().next()
    }
}

/// The key id of a `key` method (`{type, key_id}`), else `None`.
fn method_key(method: &Value) -> Option<String> {
    match method.get("type").and_then(Value::as_str) {
        Some("key") => method
            .get("key_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::model::host::{AuthType, Host};
    use crate::model::inherit::{
        resolve, AuthValue, GroupDefaults, GroupLevel, IdentityTraits, Source,
    };

    fn host() -> Host {
        Host {
            group_id: Some("g1".into()),
            ..Host::for_tests("h")
        }
    }

    fn identity(username: Option<&str>) -> IdentityTraits {
        IdentityTraits {
            username: username.map(str::to_owned),
            auth: vec![json!({"type": "key", "key_id": "k"})],
        }
    }

    #[test]
    fn nothing_set_anywhere_gives_the_built_in_port_and_chain_and_no_username_or_auth() {
        let effective = resolve(&host(), &[], |_| None);
        assert_eq!(effective.port.value, 22);
        assert_eq!(effective.port.source, Source::Default);
        assert!(effective.jump_host_ids.value.is_empty());
        assert_eq!(effective.missing(), Some("username"));
        let mut named = host();
        named.username = Some("u".into());
        assert_eq!(resolve(&named, &[], |_| None).missing(), Some("auth"));
    }

    /// At one level the level's own value beats its identity's; a nearer level's identity
    /// beats a farther level's own value.
    #[test]
    fn a_levels_own_value_beats_its_identity_and_a_nearer_identity_beats_a_farther_value() {
        let near = GroupDefaults {
            identity_id: Some("i".into()),
            ..GroupDefaults::default()
        };
        let far = GroupDefaults {
            username: Some("far".into()),
            ..GroupDefaults::default()
        };
        let traits = identity(Some("from-identity"));
        let levels = [
            GroupLevel {
                id: "g1",
                defaults: &near,
            },
            GroupLevel {
                id: "g2",
                defaults: &far,
            },
        ];
        let effective = resolve(&host(), &levels, |id| (id == "i").then_some(&traits));
        let username = effective.username.unwrap();
        assert_eq!(username.value, "from-identity");
        assert_eq!(
            username.source,
            Source::Identity {
                id: "i".into(),
                via: Box::new(Source::Group("g1".into()))
            }
        );
        assert_eq!(
            username.hides,
            Some(("far".into(), Source::Group("g2".into())))
        );
        assert!(matches!(
            effective.auth.unwrap().value,
            AuthValue::Identity(_)
        ));

        let mut own = host();
        own.username = Some("mine".into());
        own.auth_type = Some(AuthType::Agent);
        let effective = resolve(&own, &levels, |id| (id == "i").then_some(&traits));
        let username = effective.username.unwrap();
        assert_eq!(
            (username.value.as_str(), &username.source),
            ("mine", &Source::Host)
        );
        assert_eq!(effective.auth.unwrap().source, Source::Host);
    }

    #[test]
    fn an_empty_chain_is_a_value_that_hides_a_chain_above_and_options_merge_by_keyword() {
        let near = GroupDefaults {
            jump_host_ids: Some(Vec::new()),
            ssh_options: vec!["serveraliveinterval 5".into()],
            ..GroupDefaults::default()
        };
        let far = GroupDefaults {
            jump_host_ids: Some(vec!["bastion".into()]),
            ssh_options: vec!["ServerAliveInterval 30".into(), "Compression yes".into()],
            ..GroupDefaults::default()
        };
        let levels = [
            GroupLevel {
                id: "g1",
                defaults: &near,
            },
            GroupLevel {
                id: "g2",
                defaults: &far,
            },
        ];
        let effective = resolve(&host(), &levels, |_| None);
        assert!(effective.jump_host_ids.value.is_empty());
        assert_eq!(effective.jump_host_ids.source, Source::Group("g1".into()));
        assert_eq!(
            effective.jump_host_ids.hides,
            Some((vec!["bastion".to_owned()], Source::Group("g2".into())))
        );
        assert_eq!(
            effective.options(),
            ["serveraliveinterval 5", "Compression yes"],
            "ssh compares keywords case-insensitively and keeps the first"
        );
    }

    #[test]
    fn an_unknown_identity_sets_nothing() {
        let mut named = host();
        named.identity_id = Some("gone".into());
        let effective = resolve(&named, &[], |_| None);
        assert_eq!(effective.username, None);
        assert_eq!(effective.identity_id.unwrap().value, "gone");
    }
}
