//! What `connect` hands out besides the credentials (docs/forwards.md, "connect"): the
//! effective enabled forward rules in order with their ids, the startup command, and the
//! environment with every secret value opened; the effective view's rules too.
//!
//! Invariants: read in the caller's database read, opened after it (lock order: vault, then
//! database); each secret value opens with the seal of its own owner (host or group) and
//! name; opened values stay in `Secret`s and are serialized only into the answer.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::api::environment;
use crate::error::ApiError;
use crate::model::environment::EnvValue;
use crate::model::forward_rule::{Owner, Rule, RuleView};
use crate::model::host::Host;
use crate::model::inherit::{Effective, Source, SourcedEnv};
use crate::state::AppState;
use crate::store;
use crate::store::environment::SealedValues;
use crate::store::inherit::Inheritance;
use crate::vault::Secret;

/// A host's session as read, secrets still sealed.
pub struct SealedSession {
    host_id: String,
    rules: Vec<Rule>,
    env: Vec<SourcedEnv>,
    send_env: Vec<String>,
    remote_command: Option<String>,
    request_tty: Option<&'static str>,
    /// Sealed values by owner, for the owners of the secret entries of `env`.
    sealed: Vec<(Owner, SealedValues)>,
}

/// The rules a host's session has: its own, then each group's up the tree (nearest first).
pub fn rules_of(
    conn: &store::Conn,
    host: &Host,
    inheritance: &Inheritance,
) -> Result<Vec<Rule>, ApiError> {
    let groups: Vec<&str> = inheritance
        .levels(host.group_id.as_deref())
        .iter()
        .map(|level| level.id)
        .collect();
    Ok(store::forwards::effective(conn, &host.id, &groups)?)
}

/// Reads `host`'s session: its effective rules, environment and command.
pub fn read(
    conn: &store::Conn,
    host: &Host,
    inheritance: &Inheritance,
    effective: &Effective,
) -> Result<SealedSession, ApiError> {
    let env: Vec<SourcedEnv> = effective.env().into_iter().cloned().collect();
    let mut sealed: Vec<(Owner, SealedValues)> = Vec::new();
    let secrets = env
        .iter()
        .filter(|sourced| matches!(sourced.entry.value, EnvValue::Secret { .. }));
    for sourced in secrets {
        let owner = owner_of(&host.id, sourced);
        if !sealed.iter().any(|(known, _)| *known == owner) {
            let values = store::environment::sealed_of(conn, &owner)?;
            sealed.push((owner, values));
        }
    }
    Ok(SealedSession {
        host_id: host.id.clone(),
        rules: rules_of(conn, host, inheritance)?
            .into_iter()
            .filter(|rule| rule.settings.enabled)
            .collect(),
        env,
        send_env: effective.send_env.clone(),
        remote_command: host.startup.remote_command.clone(),
        request_tty: host.startup.request_tty.map(|tty| tty.as_str()),
        sealed,
    })
}

/// Where an entry's secret value is sealed: the group that set it, else the host.
fn owner_of(host_id: &str, sourced: &SourcedEnv) -> Owner {
    match &sourced.source {
        Source::Group(id) => Owner::Group(id.clone()),
        _ => Owner::Host(host_id.to_owned()),
    }
}

/// The session with its secret values opened.
pub struct OpenedSession {
    sealed: SealedSession,
    /// Each variable in order: its plain value, or the opened secret (`None` when its
    /// sealed value is missing: then it is left out).
    values: Vec<(String, Option<Value>, Option<Secret>)>,
}

/// Opens the secret values of `sealed` (one vault lock per owner).
pub fn open(state: &AppState, sealed: SealedSession) -> Result<OpenedSession, ApiError> {
    let mut values = Vec::with_capacity(sealed.env.len());
    for sourced in &sealed.env {
        let name = sourced.entry.name.clone();
        match &sourced.entry.value {
            EnvValue::Plain(text) => {
                values.push((name, Some(Value::String(text.clone())), None));
            }
            EnvValue::Secret { .. } => {
                let owner = owner_of(&sealed.host_id, sourced);
                let Some((_, bytes)) = sealed.sealed.iter().find(|(known, _)| *known == owner)
                else {
                    continue;
                };
                let entry = std::slice::from_ref(&sourced.entry);
                let opened = environment::open(state, &owner, entry, bytes)?;
                if let Some((_, secret)) = opened.into_iter().next() {
                    values.push((name, None, Some(secret)));
                }
            }
        }
    }
    Ok(OpenedSession { sealed, values })
}

#[derive(Serialize)]
struct SessionView<'a> {
    forwards: Vec<RuleView<'a>>,
    remote_command: Option<&'a str>,
    request_tty: Option<&'static str>,
    environment: EnvironmentView<'a>,
}

#[derive(Serialize)]
struct EnvironmentView<'a> {
    set: Vec<VariableView<'a>>,
    send: &'a [String],
}

#[derive(Serialize)]
struct VariableView<'a> {
    name: &'a str,
    value: &'a str,
}

impl Serialize for OpenedSession {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut set = Vec::with_capacity(self.values.len());
        for (name, plain, secret) in &self.values {
            let value = match (plain, secret) {
                (Some(Value::String(text)), _) => text.as_str(),
                (_, Some(secret)) => secret
                    .expose_str()
                    .ok_or_else(|| serde::ser::Error::custom("a stored secret is not UTF-8"))?,
                _ => continue,
            };
            set.push(VariableView { name, value });
        }
        SessionView {
            forwards: self.sealed.rules.iter().map(Rule::connect_view).collect(),
            remote_command: self.sealed.remote_command.as_deref(),
            request_tty: self.sealed.request_tty,
            environment: EnvironmentView {
                set,
                send: &self.sealed.send_env,
            },
        }
        .serialize(serializer)
    }
}
