//! An identity's secrets opened with the vault: the TOTP code of `POST
//! /api/identities/:id/totp`, and the credentials `connect` hands out for a host that
//! resolves to an identity (docs/identities.md), shared so that no handler calls into
//! another handler's file.
//!
//! Invariants: each sealed value is opened with the `SealContext` of its own slot (table
//! `identities` and the identity's id, field `password`, `answer.<position>` or `totp`; a
//! key's for table `keys` and the key's id), so a ciphertext copied to another slot or row
//! fails to open; opened values stay in `Secret`s (wiped on drop) and are serialized only
//! into the caller's answer; the vault lock is taken once per call and no database lock is
//! held meanwhile.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

use crate::error::ApiError;
use crate::model::identity::literal_slot;
use crate::model::totp::{self, TotpSettings};
use crate::state::AppState;
use crate::store::identities::sealed::{SealedAnswerKind, SealedMethod};
use crate::store::identities::SealedIdentity;
use crate::vault::{SealContext, Secret, Vault};

/// The context an identity's secret in slot `field` is sealed with.
pub fn seal_context<'a>(identity_id: &'a str, field: &'static str) -> SealContext<'a> {
    SealContext {
        table: "identities",
        row_id: identity_id,
        field,
    }
}

/// The slot name of the literal answer at `position`.
pub fn literal_field(position: usize) -> Result<&'static str, ApiError> {
    literal_slot(position)
        .ok_or_else(|| ApiError::internal("a literal answer past the last position"))
}

/// A TOTP code and how many seconds it stays valid.
pub struct Code {
    pub code: Secret,
    pub valid_for_s: u32,
}

/// The code of a sealed TOTP secret now (RFC 6238).
pub fn totp_code(
    state: &AppState,
    identity_id: &str,
    settings: &TotpSettings,
    sealed: &[u8],
) -> Result<Code, ApiError> {
    let vault = state.session.vault();
    code_with(&vault, identity_id, settings, sealed)
}

fn code_with(
    vault: &Vault,
    identity_id: &str,
    settings: &TotpSettings,
    sealed: &[u8],
) -> Result<Code, ApiError> {
    let secret = vault.open(seal_context(identity_id, "totp"), sealed)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (code, valid_for_s) = totp::code(secret.expose(), settings, now);
    Ok(Code {
        code: Secret::from_string(code),
        valid_for_s,
    })
}

/// An identity's credentials, opened: serializes as `{methods: [...], totp?: {code,
/// valid_for_s}}` (the username is `connect`'s own, the effective one). Each method is
/// `{type: "key", key_id, private_key, passphrase?}` (with `?agent=true`: `{type: "key",
/// key_id, public_key, identity_agent}`, no secret), `{type: "password", password?}`,
/// `{type: "agent"}` or `{type: "keyboard_interactive", answers: [{prompt, answer}]}`, an
/// answer being the password, the current TOTP code or the literal text. For `connect` only.
pub struct OpenedIdentity {
    methods: Vec<OpenedMethod>,
    totp: Option<Code>,
}

enum OpenedMethod {
    Key {
        key_id: String,
        private_key: Secret,
        passphrase: Option<Secret>,
    },
    /// `?agent=true`: the agent signs with the key; its public half and the socket.
    KeyViaAgent {
        key_id: String,
        public_key: String,
        socket: String,
    },
    Password(Option<Secret>),
    Agent,
    KeyboardInteractive(Vec<(String, Option<Secret>)>),
}

/// Opens every secret of `sealed` (the vault lock once, no database lock). With
/// `keys_via_agent` (`connect?agent=true`) no private key is opened: each key method names
/// the agent instead, or the answer is 409 `AGENT_UNAVAILABLE` when the agent would not sign
/// with it (the app asked not to get private keys, so it gets none).
pub fn open(
    state: &AppState,
    sealed: &SealedIdentity,
    keys_via_agent: bool,
) -> Result<OpenedIdentity, ApiError> {
    let mut agent_keys = Vec::new();
    if keys_via_agent {
        for method in &sealed.methods {
            if let SealedMethod::Key { key_id, .. } = method {
                let agent = crate::api::agent_use::connect_credentials(state, key_id)?;
                agent_keys.push((key_id.clone(), agent.public_key, agent.socket));
            }
        }
    }
    let mut agent_keys = agent_keys.into_iter();
    let vault = state.session.vault();
    let totp = match &sealed.totp {
        Some((settings, bytes)) => Some(code_with(&vault, &sealed.id, settings, bytes)?),
        None => None,
    };
    let context = |field| seal_context(&sealed.id, field);
    let mut password = None;
    let mut methods = Vec::with_capacity(sealed.methods.len());
    for method in &sealed.methods {
        if let SealedMethod::Password(Some(bytes)) = method {
            password = Some(vault.open(context("password"), bytes)?);
        }
    }
    for method in &sealed.methods {
        methods.push(match method {
            SealedMethod::Key { key_id, .. } if keys_via_agent => match agent_keys.next() {
                Some((key_id, public_key, socket)) => OpenedMethod::KeyViaAgent {
                    key_id,
                    public_key,
                    socket,
                },
                None => {
                    return Err(ApiError::internal(format!(
                        "key {key_id} of an identity was not looked up in the agent"
                    )))
                }
            },
            SealedMethod::Key {
                key_id,
                private_key,
                passphrase,
            } => open_key(&vault, key_id, private_key, passphrase.as_deref())?,
            SealedMethod::Password(_) => OpenedMethod::Password(copy(password.as_ref())),
            SealedMethod::Agent => OpenedMethod::Agent,
            SealedMethod::KeyboardInteractive { answers } => {
                let mut opened = Vec::with_capacity(answers.len());
                for rule in answers {
                    let answer = match &rule.answer {
                        SealedAnswerKind::Password => copy(password.as_ref()),
                        SealedAnswerKind::Totp => copy(totp.as_ref().map(|code| &code.code)),
                        SealedAnswerKind::Literal { position, sealed } => {
                            let field = literal_field(*position)?;
                            Some(vault.open(context(field), sealed)?)
                        }
                    };
                    opened.push((rule.prompt.clone(), answer));
                }
                OpenedMethod::KeyboardInteractive(opened)
            }
        });
    }
    Ok(OpenedIdentity { methods, totp })
}

/// A key method's private key and passphrase, opened with the seals of the key's row.
fn open_key(
    vault: &Vault,
    key_id: &str,
    private_key: &[u8],
    passphrase: Option<&[u8]>,
) -> Result<OpenedMethod, ApiError> {
    let key = |field| SealContext {
        table: "keys",
        row_id: key_id,
        field,
    };
    Ok(OpenedMethod::Key {
        key_id: key_id.to_owned(),
        private_key: vault.open(key("private_key"), private_key)?,
        passphrase: match passphrase {
            Some(bytes) => Some(vault.open(key("passphrase"), bytes)?),
            None => None,
        },
    })
}

/// A second wiped copy of a secret (the password answers a prompt and its method both).
fn copy(secret: Option<&Secret>) -> Option<Secret> {
    secret.map(|secret| Secret::new(secret.expose().to_vec()))
}

#[derive(Serialize)]
struct OpenedView<'a> {
    methods: Vec<MethodView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    totp: Option<CodeView<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum MethodView<'a> {
    Key {
        key_id: &'a str,
        private_key: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        passphrase: Option<&'a str>,
    },
    Password {
        #[serde(skip_serializing_if = "Option::is_none")]
        password: Option<&'a str>,
    },
    #[serde(rename = "key")]
    KeyViaAgent {
        key_id: &'a str,
        public_key: &'a str,
        identity_agent: &'a str,
    },
    Agent,
    KeyboardInteractive {
        answers: Vec<AnswerView<'a>>,
    },
}

#[derive(Serialize)]
struct AnswerView<'a> {
    prompt: &'a str,
    answer: Option<&'a str>,
}

#[derive(Serialize)]
struct CodeView<'a> {
    code: &'a str,
    valid_for_s: u32,
}

/// A secret as text: every secret arrived as a JSON string, so it is UTF-8.
fn text_of<E: serde::ser::Error>(secret: &Secret) -> Result<&str, E> {
    secret
        .expose_str()
        .ok_or_else(|| E::custom("a stored secret is not UTF-8"))
}

fn optional_text<E: serde::ser::Error>(secret: Option<&Secret>) -> Result<Option<&str>, E> {
    secret.map(text_of).transpose()
}

impl Serialize for OpenedIdentity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = text_of::<S::Error>;
        let optional = optional_text::<S::Error>;
        let mut methods = Vec::with_capacity(self.methods.len());
        for method in &self.methods {
            methods.push(match method {
                OpenedMethod::Key {
                    key_id,
                    private_key,
                    passphrase,
                } => MethodView::Key {
                    key_id,
                    private_key: text(private_key)?,
                    passphrase: optional(passphrase.as_ref())?,
                },
                OpenedMethod::Password(password) => MethodView::Password {
                    password: optional(password.as_ref())?,
                },
                OpenedMethod::KeyViaAgent {
                    key_id,
                    public_key,
                    socket,
                } => MethodView::KeyViaAgent {
                    key_id,
                    public_key,
                    identity_agent: socket,
                },
                OpenedMethod::Agent => MethodView::Agent,
                OpenedMethod::KeyboardInteractive(answers) => MethodView::KeyboardInteractive {
                    answers: answers
                        .iter()
                        .map(|(prompt, answer)| {
                            Ok(AnswerView {
                                prompt,
                                answer: optional(answer.as_ref())?,
                            })
                        })
                        .collect::<Result<_, S::Error>>()?,
                },
            });
        }
        let totp = match &self.totp {
            Some(code) => Some(CodeView {
                code: text(&code.code)?,
                valid_for_s: code.valid_for_s,
            }),
            None => None,
        };
        OpenedView { methods, totp }.serialize(serializer)
    }
}
