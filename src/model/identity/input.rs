//! An identity's create and update bodies (docs/identities.md, "Identities") read into a
//! checked `IdentityPatch`, and its application to the stored identity (a create is the
//! patch applied to nothing).
//!
//! Invariants: the secrets were taken out of the body before it gets here (`SecretsGiven`
//! says only where one was given); what a write keeps (a password or literal left out, a
//! TOTP secret left out) is resolved against the stored identity, and a literal left out
//! where none is stored is refused; every refusal names its field (`auth[2].answers[0].
//! prompt`, `totp.digits`), never a value.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::model::identity::{
    Answer, IdentityFields, Method, Rule, Slot, Totp, MAX_ANSWERS, MAX_METHODS,
};
use crate::model::name::Name;
use crate::model::prompt_pattern::PromptPattern;
use crate::model::totp::{self, Algorithm, TotpSettings, UriSettings};
use crate::model::validate::{self, Invalid};

/// Where the body held a secret (taken out into `Secret`s by the api layer first).
#[derive(Debug, Default)]
pub struct SecretsGiven {
    /// `auth[i].password`: `true` for a text, `false` for `null` or `""` (none stored).
    pub passwords: BTreeMap<usize, bool>,
    /// `auth[i].answers[j].answer.literal` given as a string: `(i, j)`.
    pub literals: BTreeSet<(usize, usize)>,
    /// `totp.secret` given: the settings its `otpauth` URI carried (`None` for base32).
    pub totp_secret: Option<Option<UriSettings>>,
}

/// A checked create or update body: each field `None` when the body leaves it out.
#[derive(Debug)]
pub struct IdentityPatch {
    name: Option<Name>,
    username: Option<Option<String>>,
    /// Secret slots: `New` (given), `Empty` (cleared), `Stored` (left out: kept).
    auth: Option<Vec<Method>>,
    /// `Some(None)`: `totp: null`, the identity has none.
    totp: Option<Option<TotpInput>>,
    notes: Option<String>,
}

/// A `totp` object: settings the body gives, and whether it gives a secret.
#[derive(Debug)]
struct TotpInput {
    secret: Option<Option<UriSettings>>,
    digits: Option<u8>,
    period: Option<u32>,
    algorithm: Option<Algorithm>,
}

impl IdentityPatch {
    /// Reads a body. `name` is checked when present; `create` requires it.
    pub fn from_json(
        body: &Map<String, Value>,
        given: &SecretsGiven,
    ) -> Result<IdentityPatch, Invalid> {
        let name = body.get("name").map(Name::parse).transpose()?;
        let username = match body.get("username") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(value) => Some(Some(validate::username(value)?)),
        };
        let auth = match body.get("auth") {
            None => None,
            Some(Value::Null) => Some(Vec::new()),
            Some(value) => Some(auth(value, given)?),
        };
        let totp = match body.get("totp") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::Object(object)) => Some(Some(totp_input(object, given)?)),
            Some(_) => return Err(Invalid::new("totp", "must be an object or null")),
        };
        let notes = match body.get("notes") {
            None => None,
            Some(Value::Null) => Some(String::new()),
            Some(value) => Some(validate::notes(value)?),
        };
        Ok(IdentityPatch {
            name,
            username,
            auth,
            totp,
            notes,
        })
    }

    /// A new identity: the patch applied to nothing (`name` is required).
    pub fn create(self) -> Result<IdentityFields, Invalid> {
        self.apply(None)
    }

    /// The identity after the patch, checked. `current` is the stored one (`None` for a
    /// create): a password left out keeps the stored one, a literal left out keeps the
    /// stored text of a literal rule at that position (else 400), a TOTP object without
    /// `secret` keeps the stored secret and the settings it does not name.
    pub fn apply(self, current: Option<&IdentityFields>) -> Result<IdentityFields, Invalid> {
        let name = match (self.name, current) {
            (Some(name), _) => name,
            (None, Some(current)) => current.name.clone(),
            (None, None) => Name::required(None)?,
        };
        let auth = match (self.auth, current) {
            (Some(auth), current) => resolve_auth(auth, current.map(|c| c.auth.as_slice()))?,
            (None, Some(current)) => current.auth.clone(),
            (None, None) => Vec::new(),
        };
        let stored_totp = current.and_then(|current| current.totp);
        let totp = match self.totp {
            None => stored_totp,
            Some(None) => None,
            Some(Some(input)) => Some(resolve_totp(input, stored_totp)?),
        };
        let fields = IdentityFields {
            name,
            username: match self.username {
                Some(username) => username,
                None => current.and_then(|current| current.username.clone()),
            },
            auth,
            totp,
            notes: match (self.notes, current) {
                (Some(notes), _) => notes,
                (None, Some(current)) => current.notes.clone(),
                (None, None) => String::new(),
            },
        };
        fields.check()?;
        Ok(fields)
    }
}

/// The `auth` array: 0 to 8 method objects.
fn auth(value: &Value, given: &SecretsGiven) -> Result<Vec<Method>, Invalid> {
    let rule = format!("must be an array of at most {MAX_METHODS} methods");
    let items = match value {
        Value::Array(items) if items.len() <= MAX_METHODS => items,
        _ => return Err(Invalid::new("auth", rule)),
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| method(index, item, given))
        .collect()
}

fn method(index: usize, value: &Value, given: &SecretsGiven) -> Result<Method, Invalid> {
    let field = |name: &str| format!("auth[{index}].{name}");
    let Value::Object(object) = value else {
        return Err(Invalid::new(&format!("auth[{index}]"), "must be an object"));
    };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    let password = given.passwords.get(&index).copied();
    if password.is_some() && kind != "password" {
        let rule = "only a method of type password takes a password";
        return Err(Invalid::new(&field("password"), rule));
    }
    let literal_given = given.literals.iter().any(|(at, _)| *at == index);
    if literal_given && kind != "keyboard_interactive" {
        let rule = "only a keyboard_interactive method has answers";
        return Err(Invalid::new(&field("answers"), rule));
    }
    match kind {
        "key" => match object.get("key_id") {
            Some(Value::String(key_id)) if !key_id.is_empty() => Ok(Method::Key {
                key_id: key_id.clone(),
            }),
            _ => Err(Invalid::new(
                &field("key_id"),
                "must be the id of a stored key",
            )),
        },
        "password" => Ok(Method::Password {
            password: match password {
                Some(true) => Slot::New,
                Some(false) => Slot::Empty,
                None => Slot::Stored,
            },
        }),
        "agent" => Ok(Method::Agent),
        "keyboard_interactive" => Ok(Method::KeyboardInteractive {
            answers: answers(index, object.get("answers"), given)?,
        }),
        _ => Err(Invalid::new(
            &field("type"),
            "must be key, password, agent or keyboard_interactive",
        )),
    }
}

fn answers(
    index: usize,
    value: Option<&Value>,
    given: &SecretsGiven,
) -> Result<Vec<Rule>, Invalid> {
    let field = format!("auth[{index}].answers");
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_ANSWERS => items,
        Some(_) => {
            let rule = format!("must be an array of at most {MAX_ANSWERS} answer rules");
            return Err(Invalid::new(&field, rule));
        }
    };
    let mut rules = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let field = format!("{field}[{position}]");
        let Value::Object(object) = item else {
            return Err(Invalid::new(&field, "must be an object {prompt, answer}"));
        };
        let prompt = match object.get("prompt") {
            Some(Value::String(text)) => PromptPattern::parse(text)
                .map(|_| text.clone())
                .map_err(|err| Invalid::new(&format!("{field}.prompt"), err.rule))?,
            _ => {
                let rule = "must be a prompt pattern (a string)";
                return Err(Invalid::new(&format!("{field}.prompt"), rule));
            }
        };
        let kind = object
            .get("answer")
            .and_then(|answer| answer.get("type"))
            .and_then(Value::as_str);
        let literal = given.literals.contains(&(index, position));
        let answer = match kind {
            Some("password") => Answer::Password,
            Some("totp") => Answer::Totp,
            Some("literal") if literal => Answer::Literal(Slot::New),
            Some("literal") => Answer::Literal(Slot::Stored),
            _ => {
                let rule = "must be {\"type\": \"password\"}, {\"type\": \"totp\"} or \
                            {\"type\": \"literal\", \"literal\": ...}";
                return Err(Invalid::new(&format!("{field}.answer"), rule));
            }
        };
        if literal && !matches!(answer, Answer::Literal(_)) {
            let rule = "only a literal answer takes a literal";
            return Err(Invalid::new(&format!("{field}.answer.literal"), rule));
        }
        rules.push(Rule { prompt, answer });
    }
    Ok(rules)
}

/// The body's methods with each secret left out resolved against the stored methods.
fn resolve_auth(mut auth: Vec<Method>, stored: Option<&[Method]>) -> Result<Vec<Method>, Invalid> {
    let stored = stored.unwrap_or_default();
    let stored_password = stored
        .iter()
        .any(|method| matches!(method, Method::Password { password } if password.is_set()));
    let stored_answers: &[Rule] = stored
        .iter()
        .find_map(|method| match method {
            Method::KeyboardInteractive { answers } => Some(answers.as_slice()),
            _ => None,
        })
        .unwrap_or_default();
    for (index, method) in auth.iter_mut().enumerate() {
        match method {
            Method::Password { password } if *password == Slot::Stored => {
                *password = if stored_password {
                    Slot::Stored
                } else {
                    Slot::Empty
                };
            }
            Method::KeyboardInteractive { answers } => {
                for (position, rule) in answers.iter_mut().enumerate() {
                    if rule.answer != Answer::Literal(Slot::Stored) {
                        continue;
                    }
                    let kept = stored_answers.get(position).map(|rule| rule.answer);
                    if !matches!(kept, Some(Answer::Literal(slot)) if slot.is_set()) {
                        let field = format!("auth[{index}].answers[{position}].answer.literal");
                        let rule = "is required: no literal text is stored for this rule";
                        return Err(Invalid::new(&field, rule));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(auth)
}

/// A `totp` object: `secret` (taken out before, see `SecretsGiven`), `digits`, `period`,
/// `algorithm`, each `null` or left out for "not given".
fn totp_input(object: &Map<String, Value>, given: &SecretsGiven) -> Result<TotpInput, Invalid> {
    let number = |name: &str| match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or(()),
    };
    let digits = number("digits")
        .unwrap_or(Some(u64::MAX))
        .map(totp::digits_number)
        .transpose()?;
    let period = number("period")
        .unwrap_or(Some(u64::MAX))
        .map(totp::period_number)
        .transpose()?;
    let algorithm = match object.get("algorithm") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(Algorithm::parse(text)?),
        Some(_) => Some(Algorithm::parse("")?),
    };
    Ok(TotpInput {
        secret: given.totp_secret.clone(),
        digits,
        period,
        algorithm,
    })
}

/// The TOTP a write leaves: a new secret takes what the body leaves out from its URI, then
/// the defaults (6 digits, 30 s, SHA1); without a secret the stored one stays, with the
/// stored settings the body leaves out. A body value that contradicts the URI is refused.
fn resolve_totp(input: TotpInput, stored: Option<Totp>) -> Result<Totp, Invalid> {
    let (secret, uri, base) = match (input.secret, stored) {
        (Some(uri), _) => (Slot::New, uri.unwrap_or_default(), TotpSettings::default()),
        (None, Some(stored)) => (Slot::Stored, UriSettings::default(), stored.settings),
        (None, None) => {
            let rule = "is required: base32 or an otpauth://totp/ URI";
            return Err(Invalid::new(totp::SECRET_FIELD, rule));
        }
    };
    let digits = pick(input.digits, uri.digits, base.digits(), totp::DIGITS_FIELD)?;
    let period = pick(input.period, uri.period, base.period(), totp::PERIOD_FIELD)?;
    let algorithm = pick(
        input.algorithm,
        uri.algorithm,
        base.algorithm(),
        totp::ALGORITHM_FIELD,
    )?;
    let settings = TotpSettings::new(u64::from(digits), u64::from(period), algorithm)?;
    Ok(Totp { settings, secret })
}

/// The body's value, else the URI's, else `base`; a body value the URI contradicts is
/// refused.
fn pick<T: PartialEq + Copy>(
    body: Option<T>,
    uri: Option<T>,
    base: T,
    field: &str,
) -> Result<T, Invalid> {
    match (body, uri) {
        (Some(body), Some(uri)) if body != uri => Err(Invalid::new(
            field,
            "contradicts the otpauth URI's value: leave it out or make them agree",
        )),
        (Some(value), _) | (None, Some(value)) => Ok(value),
        (None, None) => Ok(base),
    }
}
