//! What a host's session starts with besides its forwards (docs/forwards.md, "Startup
//! command and environment"): the stored `Startup`, the `StartupPatch` a create or update
//! body makes, its application to the stored value, and the JSON both are kept and answered
//! as.
//!
//! Invariants: pure, no I/O; a secret `set_env` value is never here, only that the entry is
//! secret (its sealed value lives in `env_secrets`, by owner and name); applying a patch
//! keeps a secret that the body names without a value only when one is stored under that
//! name, and refuses it otherwise.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::model::environment::{self, EnvEntry, EnvValue, RequestTty};
use crate::model::validate::Invalid;

/// A host's startup command and environment as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Startup {
    pub remote_command: Option<String>,
    pub request_tty: Option<RequestTty>,
    /// Secret entries are `EnvValue::Secret { given: false }`: stored, sealed elsewhere.
    pub set_env: Vec<EnvEntry>,
    pub send_env: Vec<String>,
}

/// The startup fields a body gives; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartupPatch {
    pub remote_command: Option<Option<String>>,
    pub request_tty: Option<Option<RequestTty>>,
    pub set_env: Option<Vec<EnvEntry>>,
    pub send_env: Option<Vec<String>>,
}

impl StartupPatch {
    /// Reads the four fields of a body; `secrets_given` holds the `set_env` indexes whose
    /// secret value the api layer took out.
    pub fn from_json(
        body: &Map<String, Value>,
        secrets_given: &BTreeSet<usize>,
    ) -> Result<StartupPatch, Invalid> {
        Ok(StartupPatch {
            remote_command: body
                .get("remote_command")
                .map(environment::remote_command)
                .transpose()?,
            request_tty: body
                .get("request_tty")
                .map(environment::request_tty)
                .transpose()?,
            set_env: body
                .get("set_env")
                .map(|value| environment::set_env(value, secrets_given))
                .transpose()?,
            send_env: body
                .get("send_env")
                .map(environment::send_env)
                .transpose()?,
        })
    }

    /// The startup this patch makes of `current`. A secret entry without a new value keeps
    /// the one `current` holds under its name; where none is held, it is refused.
    pub fn apply(&self, current: &Startup) -> Result<Startup, Invalid> {
        let set_env = match &self.set_env {
            None => current.set_env.clone(),
            Some(entries) => kept_secrets(entries, &current.set_env)?,
        };
        Ok(Startup {
            remote_command: self
                .remote_command
                .clone()
                .unwrap_or_else(|| current.remote_command.clone()),
            request_tty: self.request_tty.unwrap_or(current.request_tty),
            set_env,
            send_env: self
                .send_env
                .clone()
                .unwrap_or_else(|| current.send_env.clone()),
        })
    }
}

/// `entries` with every secret marked as stored, after checking that each secret without a
/// new value has one stored under its name in `stored`.
pub fn kept_secrets(entries: &[EnvEntry], stored: &[EnvEntry]) -> Result<Vec<EnvEntry>, Invalid> {
    let secret_stored = |name: &str| {
        stored
            .iter()
            .any(|entry| entry.name == name && matches!(entry.value, EnvValue::Secret { .. }))
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| match &entry.value {
            EnvValue::Secret { given: false } if !secret_stored(&entry.name) => Err(Invalid::new(
                &format!("set_env[{index}].value"),
                "is required: no secret value is stored under this name",
            )),
            EnvValue::Secret { .. } => Ok(EnvEntry {
                name: entry.name.clone(),
                value: EnvValue::Secret { given: false },
            }),
            EnvValue::Plain(_) => Ok(entry.clone()),
        })
        .collect()
}

/// `set_env` as answered and stored: `{name, value}` or `{name, secret: true}`.
pub fn env_json(entries: &[EnvEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|entry| match &entry.value {
                EnvValue::Plain(value) => json!({"name": entry.name, "value": value}),
                EnvValue::Secret { .. } => json!({"name": entry.name, "secret": true}),
            })
            .collect(),
    )
}

/// Reads `env_json`'s form back (a stored column); `None` for anything else.
pub fn env_from_json(value: &Value) -> Option<Vec<EnvEntry>> {
    value
        .as_array()?
        .iter()
        .map(|item| {
            let name = item.get("name")?.as_str()?.to_owned();
            let value = match (item.get("value"), item.get("secret")) {
                (Some(Value::String(text)), None) => EnvValue::Plain(text.clone()),
                (None, Some(Value::Bool(true))) => EnvValue::Secret { given: false },
                _ => return None,
            };
            Some(EnvEntry { name, value })
        })
        .collect()
}

/// Reads a stored pattern list (`send_env`); `None` for anything else.
pub fn patterns_from_json(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

impl Startup {
    /// This startup as stored: every secret entry marked as stored (`given: false`).
    pub fn stored(&self) -> Startup {
        Startup {
            set_env: self
                .set_env
                .iter()
                .map(|entry| EnvEntry {
                    name: entry.name.clone(),
                    value: match &entry.value {
                        EnvValue::Secret { .. } => EnvValue::Secret { given: false },
                        plain => plain.clone(),
                    },
                })
                .collect(),
            ..self.clone()
        }
    }

    /// The stored (and answered) object: every field present.
    pub fn to_json(&self) -> Value {
        json!({
            "remote_command": self.remote_command,
            "request_tty": self.request_tty.map(RequestTty::as_str),
            "set_env": env_json(&self.set_env),
            "send_env": self.send_env,
        })
    }

    /// Reads the stored column; `None` when it is not the stored form (a corrupt row).
    /// A missing field is its default, so `{}` is no startup at all.
    pub fn from_stored(text: &str) -> Option<Startup> {
        let value: Value = serde_json::from_str(text).ok()?;
        let object = value.as_object()?;
        let remote_command = match object.get("remote_command") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => return None,
        };
        let request_tty = match object.get("request_tty") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(RequestTty::parse(text)?),
            Some(_) => return None,
        };
        Some(Startup {
            remote_command,
            request_tty,
            set_env: match object.get("set_env") {
                None => Vec::new(),
                Some(value) => env_from_json(value)?,
            },
            send_env: match object.get("send_env") {
                None => Vec::new(),
                Some(value) => patterns_from_json(value)?,
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::environment::{EnvEntry, EnvValue, RequestTty};
    use crate::model::startup::{kept_secrets, Startup};

    fn entry(name: &str, value: EnvValue) -> EnvEntry {
        EnvEntry {
            name: name.into(),
            value,
        }
    }

    #[test]
    fn startup_round_trips_through_its_stored_form() {
        let startup = Startup {
            remote_command: Some("tail -f 100%".into()),
            request_tty: Some(RequestTty::Force),
            set_env: vec![
                entry("A", EnvValue::Plain("x y".into())),
                entry("T", EnvValue::Secret { given: false }),
            ],
            send_env: vec!["LC_*".into()],
        };
        let stored = startup.to_json().to_string();
        assert!(!stored.contains("given"), "{stored}");
        assert_eq!(Startup::from_stored(&stored), Some(startup));
        assert_eq!(Startup::from_stored("{}"), Some(Startup::default()));
        assert_eq!(Startup::from_stored("{\"request_tty\": \"maybe\"}"), None);
    }

    #[test]
    fn a_secret_without_a_value_is_kept_only_where_one_is_stored() {
        let stored = vec![entry("T", EnvValue::Secret { given: false })];
        let asked = vec![entry("T", EnvValue::Secret { given: false })];
        assert_eq!(kept_secrets(&asked, &stored).unwrap(), stored);
        let other = vec![entry("U", EnvValue::Secret { given: false })];
        let refused = kept_secrets(&other, &stored).unwrap_err();
        assert_eq!(refused.field, "set_env[0].value");
        let plain_before = vec![entry("U", EnvValue::Plain("v".into()))];
        assert!(
            kept_secrets(&other, &plain_before).is_err(),
            "a plain value is no secret"
        );
        let given = vec![entry("U", EnvValue::Secret { given: true })];
        assert_eq!(
            kept_secrets(&given, &[]).unwrap(),
            vec![entry("U", EnvValue::Secret { given: false })]
        );
    }
}
