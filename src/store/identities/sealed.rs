//! What other parts read of identities: the public traits inheritance resolves with
//! (`traits`, `traits_of`), and the sealed credentials `connect` opens (`sealed`), and the
//! sealed slots an update keeps (`stored_slots`).
//!
//! Invariants: a trait carries no secret (`auth` is the public view, as the API shows it);
//! sealed bytes leave here exactly as stored, each to be opened with the `SealContext` of
//! its slot (`api::identity_use`): an identity's password, literals and TOTP secret for
//! table `identities` and the identity's id, a key's for table `keys` and the key's id.

// Inheritance and `connect` (docs/identities.md) read `traits` and `sealed`; until they
// do, only the tests call them.

use rusqlite::{Connection, OptionalExtension};

use crate::model::identity::{self, Answer, Method};
use crate::model::totp::TotpSettings;
use crate::store::identities::{by_id, SealedSlots};
use crate::store::StoreError;

const SELECT_PASSWORD: &str = "SELECT password FROM identity_methods \
     WHERE identity_id = ?1 AND type = 'password' AND password IS NOT NULL";
const SELECT_LITERALS: &str = "SELECT position, literal FROM identity_answers \
     WHERE identity_id = ?1 AND literal IS NOT NULL";
const SELECT_TOTP: &str = "SELECT totp_secret FROM identities WHERE id = ?1";
const SELECT_KEY_SECRETS: &str = "SELECT private_key, passphrase FROM keys WHERE id = ?1";

/// An identity's credentials, sealed, for `connect` (`api::identity_use::open`).
pub struct SealedIdentity {
    pub id: String,
    pub methods: Vec<SealedMethod>,
    /// The settings and the sealed secret (field `totp`).
    pub totp: Option<(TotpSettings, Vec<u8>)>,
}

/// A method with its sealed secrets.
pub enum SealedMethod {
    /// The key's sealed private key and passphrase (table `keys`, the key's id).
    Key {
        key_id: String,
        private_key: Vec<u8>,
        passphrase: Option<Vec<u8>>,
    },
    /// The sealed password (field `password`), `None` when none is stored.
    Password(Option<Vec<u8>>),
    Agent,
    KeyboardInteractive {
        answers: Vec<SealedAnswer>,
    },
}

/// A keyboard-interactive rule with its sealed literal.
pub struct SealedAnswer {
    pub prompt: String,
    pub answer: SealedAnswerKind,
}

pub enum SealedAnswerKind {
    Password,
    Totp,
    /// The sealed text (field `answer.<position>`) and its position.
    Literal {
        position: usize,
        sealed: Vec<u8>,
    },
}

/// The sealed slots of an identity as stored (what an update keeps).
pub fn stored_slots(conn: &Connection, id: &str) -> Result<SealedSlots, StoreError> {
    let password = conn
        .prepare_cached(SELECT_PASSWORD)?
        .query_row([id], |row| row.get(0))
        .optional()?;
    let literals = conn
        .prepare_cached(SELECT_LITERALS)?
        .query_map([id], |row| {
            let position: i64 = row.get(0)?;
            Ok((usize::try_from(position).unwrap_or(usize::MAX), row.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let totp = conn
        .prepare_cached(SELECT_TOTP)?
        .query_row([id], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(SealedSlots {
        password,
        literals,
        totp,
    })
}

/// An identity's credentials, sealed; `None` when there is none with this id.
pub fn sealed(conn: &Connection, id: &str) -> Result<Option<SealedIdentity>, StoreError> {
    let identity = match by_id(conn, id) {
        Ok(identity) => identity,
        Err(StoreError::IdentityNotFound) => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut slots = stored_slots(conn, id)?;
    let mut methods = Vec::with_capacity(identity.fields.auth.len());
    for method in &identity.fields.auth {
        methods.push(match method {
            Method::Key { key_id } => {
                let (private_key, passphrase) = conn
                    .prepare_cached(SELECT_KEY_SECRETS)?
                    .query_row([key_id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?
                    .ok_or(StoreError::KeyNotFound)?;
                SealedMethod::Key {
                    key_id: key_id.clone(),
                    private_key,
                    passphrase,
                }
            }
            Method::Password { .. } => SealedMethod::Password(slots.password.take()),
            Method::Agent => SealedMethod::Agent,
            Method::KeyboardInteractive { answers } => SealedMethod::KeyboardInteractive {
                answers: sealed_answers(answers, &mut slots)?,
            },
        });
    }
    let totp = match (identity.fields.totp, slots.totp) {
        (Some(totp), Some(sealed)) => Some((totp.settings, sealed)),
        (None, _) => None,
        (Some(_), None) => return Err(StoreError::CorruptRow("identities.totp_secret")),
    };
    Ok(Some(SealedIdentity {
        id: identity.id,
        methods,
        totp,
    }))
}

fn sealed_answers(
    answers: &[identity::Rule],
    slots: &mut SealedSlots,
) -> Result<Vec<SealedAnswer>, StoreError> {
    let mut sealed = Vec::with_capacity(answers.len());
    for (position, rule) in answers.iter().enumerate() {
        let answer = match rule.answer {
            Answer::Password => SealedAnswerKind::Password,
            Answer::Totp => SealedAnswerKind::Totp,
            Answer::Literal(_) => SealedAnswerKind::Literal {
                position,
                sealed: slots
                    .literals
                    .remove(&position)
                    .ok_or(StoreError::CorruptRow("identity_answers.literal"))?,
            },
        };
        sealed.push(SealedAnswer {
            prompt: rule.prompt.clone(),
            answer,
        });
    }
    Ok(sealed)
}
