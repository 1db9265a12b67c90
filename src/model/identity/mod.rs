//! Identities (docs/identities.md, "Identities"): a named credential set (a username, the
//! ways to authenticate in the order a client tries them, an optional TOTP) that hosts and
//! groups refer to, as stored and shown, and the rules a whole identity keeps.
//!
//! Invariants: pure, no I/O; never holds a secret: each secret place (the password, a
//! literal answer, the TOTP secret) is a `Slot` saying only whether a value is stored, kept
//! or brought new by a write (the api layer holds the values, as `vault::Secret`s); an
//! `IdentityFields` that left `check` keeps every rule of the contract, so nothing unchecked
//! reaches the store; a refusal is an `Invalid` naming the field and the rule, never a value.

mod input;
#[cfg(test)]
mod tests;

use serde::Serialize;
use serde_json::{json, Value};

pub use input::{IdentityPatch, SecretsGiven};

use crate::model::name::Name;
use crate::model::totp::TotpSettings;
use crate::model::validate::Invalid;

/// docs/identities.md: an identity has 0 to 8 methods.
pub const MAX_METHODS: usize = 8;
/// docs/identities.md: a keyboard-interactive method has at most 16 answer rules.
pub const MAX_ANSWERS: usize = 16;

/// The slot names of the literal answers, by position (a seal context names its field
/// statically).
pub const LITERAL_FIELDS: [&str; MAX_ANSWERS] = [
    "answer.0",
    "answer.1",
    "answer.2",
    "answer.3",
    "answer.4",
    "answer.5",
    "answer.6",
    "answer.7",
    "answer.8",
    "answer.9",
    "answer.10",
    "answer.11",
    "answer.12",
    "answer.13",
    "answer.14",
    "answer.15",
];

/// The slot name of the literal answer at `position`; `None` past the last.
pub fn literal_slot(position: usize) -> Option<&'static str> {
    LITERAL_FIELDS.get(position).copied()
}

/// A secret's place: whether a value is there, and where a write takes it from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// No value.
    Empty,
    /// The value already stored (as read, or kept by a write).
    Stored,
    /// A value the write brings (sealed by the api layer).
    New,
}

impl Slot {
    pub fn is_set(self) -> bool {
        self != Slot::Empty
    }
}

/// One way to authenticate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    /// A stored key (`keys.id`).
    Key { key_id: String },
    /// The identity's password (sealed; `Empty` when none is stored).
    Password { password: Slot },
    /// The keys the SSH agent holds.
    Agent,
    /// Ordered answer rules: the first whose prompt pattern matches answers the prompt.
    KeyboardInteractive { answers: Vec<Rule> },
}

impl Method {
    /// The `type` of the API and of the `identity_methods.type` column.
    pub fn type_name(&self) -> &'static str {
        match self {
            Method::Key { .. } => "key",
            Method::Password { .. } => "password",
            Method::Agent => "agent",
            Method::KeyboardInteractive { .. } => "keyboard_interactive",
        }
    }
}

/// A keyboard-interactive answer rule: a prompt pattern (checked by
/// `model::prompt_pattern`) and what answers a prompt it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub prompt: String,
    pub answer: Answer,
}

/// What answers a matched prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The identity's password (needs a password method).
    Password,
    /// The identity's current TOTP code (needs `totp`).
    Totp,
    /// A fixed text, sealed like a password.
    Literal(Slot),
}

impl Answer {
    /// The `type` of the API and of the `identity_answers.answer` column.
    pub fn type_name(self) -> &'static str {
        match self {
            Answer::Password => "password",
            Answer::Totp => "totp",
            Answer::Literal(_) => "literal",
        }
    }
}

/// The TOTP settings and the place of the sealed secret (always set once stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totp {
    pub settings: TotpSettings,
    pub secret: Slot,
}

/// Everything an identity holds but its id, stamps and revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityFields {
    pub name: Name,
    pub username: Option<String>,
    pub auth: Vec<Method>,
    pub totp: Option<Totp>,
    pub notes: String,
}

/// An identity as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub id: String,
    pub fields: IdentityFields,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

impl IdentityFields {
    /// The rules of a whole identity (docs/identities.md): 0 to 8 methods, at most one
    /// each of password, agent and keyboard_interactive, a key at most once, at most 16
    /// answer rules, a password answer only with a password method, a TOTP answer only with
    /// `totp`.
    pub fn check(&self) -> Result<(), Invalid> {
        if self.auth.len() > MAX_METHODS {
            return Err(Invalid::new("auth", methods_rule()));
        }
        for (index, method) in self.auth.iter().enumerate() {
            let earlier = &self.auth[..index];
            let repeated = match method {
                Method::Key { key_id } => earlier
                    .iter()
                    .any(|other| matches!(other, Method::Key { key_id: id } if id == key_id)),
                _ => earlier
                    .iter()
                    .any(|other| other.type_name() == method.type_name()),
            };
            if repeated {
                return Err(Invalid::new(&format!("auth[{index}]"), repeat_rule(method)));
            }
            if let Method::KeyboardInteractive { answers } = method {
                self.check_answers(index, answers)?;
            }
        }
        Ok(())
    }

    fn check_answers(&self, index: usize, answers: &[Rule]) -> Result<(), Invalid> {
        if answers.len() > MAX_ANSWERS {
            let field = format!("auth[{index}].answers");
            return Err(Invalid::new(&field, answers_rule()));
        }
        let has_password = self
            .auth
            .iter()
            .any(|method| matches!(method, Method::Password { .. }));
        for (position, rule) in answers.iter().enumerate() {
            let field = format!("auth[{index}].answers[{position}].answer");
            match rule.answer {
                Answer::Password if !has_password => {
                    return Err(Invalid::new(
                        &field,
                        "a password answer needs a method of type password in auth",
                    ))
                }
                Answer::Totp if self.totp.is_none() => {
                    return Err(Invalid::new(
                        &field,
                        "a totp answer needs the identity's totp to be set",
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether what a connection uses changed between `self` and `after` (username, auth,
    /// TOTP; a new secret counts as a change): the hosts that resolve to the identity follow.
    pub fn credentials_differ(&self, after: &IdentityFields) -> bool {
        self.username != after.username || self.auth != after.auth || self.totp != after.totp
    }

    /// The names of the fields that differ, for the audit entry (never a value).
    pub fn changed_fields(&self, after: &IdentityFields) -> Vec<&'static str> {
        let mut fields = Vec::new();
        if self.name != after.name {
            fields.push("name");
        }
        if self.username != after.username {
            fields.push("username");
        }
        if self.auth != after.auth {
            fields.push("auth");
        }
        if self.totp != after.totp {
            fields.push("totp");
        }
        if self.notes != after.notes {
            fields.push("notes");
        }
        fields
    }
}

/// The API's Identity object: secrets only as `has_password`, `has_literal` and
/// `has_secret`; after an update, `affected_hosts` too.
#[derive(Debug, Serialize)]
pub struct IdentityView<'a> {
    id: &'a str,
    name: &'a str,
    username: Option<&'a str>,
    auth: Value,
    totp: Option<TotpView>,
    notes: &'a str,
    created_at: &'a str,
    updated_at: &'a str,
    revision: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    affected_hosts: Option<usize>,
}

#[derive(Debug, Serialize)]
struct TotpView {
    digits: u8,
    period: u32,
    algorithm: &'static str,
    has_secret: bool,
}

impl Identity {
    pub fn view(&self) -> IdentityView<'_> {
        let fields = &self.fields;
        IdentityView {
            id: &self.id,
            name: fields.name.as_str(),
            username: fields.username.as_deref(),
            auth: auth_view(&fields.auth),
            totp: fields.totp.map(|totp| TotpView {
                digits: totp.settings.digits(),
                period: totp.settings.period(),
                algorithm: totp.settings.algorithm().as_str(),
                has_secret: totp.secret.is_set(),
            }),
            notes: &fields.notes,
            created_at: &self.created_at,
            updated_at: &self.updated_at,
            revision: self.revision,
            affected_hosts: None,
        }
    }
}

impl IdentityView<'_> {
    /// The answer of an update: how many hosts follow it (docs/identities.md, "Rotation in
    /// one call").
    pub fn with_affected_hosts(self, affected_hosts: usize) -> Self {
        IdentityView {
            affected_hosts: Some(affected_hosts),
            ..self
        }
    }
}

/// The API's `auth` array: each method without its secrets.
pub fn auth_view(auth: &[Method]) -> Value {
    let methods = auth.iter().map(|method| match method {
        Method::Key { key_id } => json!({"type": "key", "key_id": key_id}),
        Method::Password { password } => {
            json!({"type": "password", "has_password": password.is_set()})
        }
        Method::Agent => json!({"type": "agent"}),
        Method::KeyboardInteractive { answers } => json!({
            "type": "keyboard_interactive",
            "answers": answers.iter().map(rule_view).collect::<Vec<_>>(),
        }),
    });
    Value::Array(methods.collect())
}

fn rule_view(rule: &Rule) -> Value {
    let answer = match rule.answer {
        Answer::Literal(literal) => {
            json!({"type": "literal", "has_literal": literal.is_set()})
        }
        other => json!({"type": other.type_name()}),
    };
    json!({"prompt": rule.prompt, "answer": answer})
}

fn methods_rule() -> String {
    format!("must be an array of at most {MAX_METHODS} methods")
}

fn answers_rule() -> String {
    format!("must be an array of at most {MAX_ANSWERS} answer rules")
}

fn repeat_rule(method: &Method) -> &'static str {
    match method {
        Method::Key { .. } => "this key is already a method of the identity (a key at most once)",
        Method::Password { .. } => "at most one method of type password",
        Method::Agent => "at most one method of type agent",
        Method::KeyboardInteractive { .. } => "at most one method of type keyboard_interactive",
    }
}
