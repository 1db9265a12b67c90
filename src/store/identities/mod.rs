//! The `identities`, `identity_methods` and `identity_answers` tables (sql/0012_identities.sql,
//! docs/identities.md "Identities"): insert, read, update and delete identities; who uses
//! them (`usage`); and what inheritance and `connect` read of them (`sealed`).
//!
//! Invariants: never sees a plaintext secret (the sealed bytes come from the api layer and
//! are written to the slot the fields name: a password method's row, a literal rule's row,
//! the TOTP columns); the name's caseless match key (`fold_key`) is unique, checked in the
//! caller's transaction and reported as `IdentityNameTaken`, never as a raw constraint
//! error; a write replaces every method and answer row of the identity in its transaction,
//! and moves `updated_at` (the trigger bumps the revision and logs the change).

pub mod sealed;
#[cfg(test)]
mod tests;
pub mod usage;

use std::collections::{BTreeMap, HashMap};

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::identity::{Answer, Identity, IdentityFields, Method, Rule, Slot, Totp};
use crate::model::name::Name;
use crate::model::totp::{Algorithm, TotpSettings};
use crate::store::{next_updated_at, now_timestamp, StoreError};

// What inheritance and `connect` read (docs/identities.md); until they do, only tests.
#[allow(unused_imports)]
pub use sealed::{sealed, SealedIdentity};

const COLUMNS: &str = "SELECT id, name, username, totp_secret IS NOT NULL, totp_digits, \
     totp_period, totp_algorithm, notes, created_at, updated_at, revision FROM identities";
const SELECT_METHODS: &str = "SELECT identity_id, type, key_id, password IS NOT NULL \
     FROM identity_methods WHERE ?1 IS NULL OR identity_id = ?1 ORDER BY identity_id, position";
const SELECT_ANSWERS: &str = "SELECT identity_id, prompt, answer, literal IS NOT NULL \
     FROM identity_answers WHERE ?1 IS NULL OR identity_id = ?1 ORDER BY identity_id, position";
const NAME_TAKEN: &str =
    "SELECT EXISTS (SELECT 1 FROM identities WHERE fold_key = ?1 AND id <> ?2)";
const INSERT: &str = "INSERT INTO identities (id, name, name_key, fold_key, username, \
     totp_secret, totp_digits, totp_period, totp_algorithm, notes, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)";
const UPDATE: &str = "UPDATE identities SET name = ?2, name_key = ?3, fold_key = ?4, \
     username = ?5, totp_secret = ?6, totp_digits = ?7, totp_period = ?8, \
     totp_algorithm = ?9, notes = ?10, updated_at = ?11 WHERE id = ?1";
const DELETE_METHODS: &str = "DELETE FROM identity_methods WHERE identity_id = ?1";
const DELETE_ANSWERS: &str = "DELETE FROM identity_answers WHERE identity_id = ?1";
const INSERT_METHOD: &str = "INSERT INTO identity_methods (identity_id, position, type, \
     key_id, password) VALUES (?1, ?2, ?3, ?4, ?5)";
const INSERT_ANSWER: &str = "INSERT INTO identity_answers (identity_id, position, prompt, \
     answer, literal) VALUES (?1, ?2, ?3, ?4, ?5)";
const DELETE: &str = "DELETE FROM identities WHERE id = ?1";

/// The sealed bytes a write stores, each in the slot the fields name: the password
/// method's, each literal rule's by its position, the TOTP secret. Each was sealed for its
/// identity and slot (`api::identities`), new or kept from the stored row.
#[derive(Debug, Default)]
pub struct SealedSlots {
    pub password: Option<Vec<u8>>,
    pub literals: BTreeMap<usize, Vec<u8>>,
    pub totp: Option<Vec<u8>>,
}

/// One identity. Errors: `IdentityNotFound`.
pub fn by_id(conn: &Connection, id: &str) -> Result<Identity, StoreError> {
    let head = conn
        .prepare_cached(&format!("{COLUMNS} WHERE id = ?1"))?
        .query_row([id], head_from_row)
        .optional()?
        .ok_or(StoreError::IdentityNotFound)?;
    let mut parts = parts(conn, Some(id))?;
    head.finish(parts.remove(id).unwrap_or_default())
}

/// Every identity, by name (case-insensitively) then id.
pub fn list(conn: &Connection) -> Result<Vec<Identity>, StoreError> {
    let heads: Vec<Head> = conn
        .prepare_cached(&format!("{COLUMNS} ORDER BY name_key, id"))?
        .query_map([], head_from_row)?
        .collect::<Result<_, _>>()?;
    let mut parts = parts(conn, None)?;
    heads
        .into_iter()
        .map(|head| {
            let own = parts.remove(&head.id).unwrap_or_default();
            head.finish(own)
        })
        .collect()
}

/// Inserts an identity. Errors: `IdentityNameTaken`.
pub fn insert(
    conn: &Connection,
    id: &str,
    fields: &IdentityFields,
    sealed: &SealedSlots,
) -> Result<Identity, StoreError> {
    ensure_name_free(conn, &fields.name, id)?;
    let (digits, period, algorithm) = totp_columns(fields.totp);
    conn.prepare_cached(INSERT)?.execute(params![
        id,
        fields.name.as_str(),
        fields.name.key(),
        fields.name.fold_key(),
        fields.username,
        totp_bytes(fields, sealed)?,
        digits,
        period,
        algorithm,
        fields.notes,
        now_timestamp(),
    ])?;
    write_parts(conn, id, fields, sealed)?;
    by_id(conn, id)
}

/// Replaces `current`'s fields. Errors: `IdentityNameTaken`.
pub fn update(
    conn: &Connection,
    current: &Identity,
    fields: &IdentityFields,
    sealed: &SealedSlots,
) -> Result<Identity, StoreError> {
    ensure_name_free(conn, &fields.name, &current.id)?;
    let (digits, period, algorithm) = totp_columns(fields.totp);
    conn.prepare_cached(UPDATE)?.execute(params![
        current.id,
        fields.name.as_str(),
        fields.name.key(),
        fields.name.fold_key(),
        fields.username,
        totp_bytes(fields, sealed)?,
        digits,
        period,
        algorithm,
        fields.notes,
        next_updated_at(&current.updated_at),
    ])?;
    write_parts(conn, &current.id, fields, sealed)?;
    by_id(conn, &current.id)
}

/// Deletes an identity and its methods and answers (their sealed bytes with them, noted for
/// the scrub by their tables' triggers). The caller has moved or refused its direct users
/// (`usage::direct_users`).
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_METHODS)?.execute([id])?;
    conn.prepare_cached(DELETE_ANSWERS)?.execute([id])?;
    match conn.prepare_cached(DELETE)?.execute([id])? {
        0 => Err(StoreError::IdentityNotFound),
        _ => Ok(()),
    }
}

fn ensure_name_free(conn: &Connection, name: &Name, id: &str) -> Result<(), StoreError> {
    match crate::store::fold_key_taken(conn, NAME_TAKEN, name.fold_key(), id)? {
        true => Err(StoreError::IdentityNameTaken),
        false => Ok(()),
    }
}

fn totp_columns(totp: Option<Totp>) -> (Option<u8>, Option<u32>, Option<&'static str>) {
    match totp {
        Some(totp) => (
            Some(totp.settings.digits()),
            Some(totp.settings.period()),
            Some(totp.settings.algorithm().as_str()),
        ),
        None => (None, None, None),
    }
}

/// The sealed TOTP secret the fields call for.
fn totp_bytes<'a>(
    fields: &IdentityFields,
    sealed: &'a SealedSlots,
) -> Result<Option<&'a [u8]>, StoreError> {
    match fields.totp {
        None => Ok(None),
        Some(_) => sealed
            .totp
            .as_deref()
            .map(Some)
            .ok_or_else(|| missing("the TOTP secret")),
    }
}

/// A method's or answer's position as stored (at most 16).
fn column_position(position: usize) -> i64 {
    i64::try_from(position).unwrap_or(i64::MAX)
}

fn missing(what: &str) -> StoreError {
    StoreError::BrokenInvariant(format!("{what} of an identity write has no sealed bytes"))
}

/// Writes the method and answer rows afresh.
fn write_parts(
    conn: &Connection,
    id: &str,
    fields: &IdentityFields,
    sealed: &SealedSlots,
) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_METHODS)?.execute([id])?;
    conn.prepare_cached(DELETE_ANSWERS)?.execute([id])?;
    for (position, method) in fields.auth.iter().enumerate() {
        let (key_id, password) = match method {
            Method::Key { key_id } => (Some(key_id.as_str()), None),
            Method::Password { password } if password.is_set() => {
                let bytes = sealed.password.as_deref();
                (None, Some(bytes.ok_or_else(|| missing("the password"))?))
            }
            _ => (None, None),
        };
        conn.prepare_cached(INSERT_METHOD)?.execute(params![
            id,
            column_position(position),
            method.type_name(),
            key_id,
            password
        ])?;
        if let Method::KeyboardInteractive { answers } = method {
            write_answers(conn, id, answers, sealed)?;
        }
    }
    Ok(())
}

fn write_answers(
    conn: &Connection,
    id: &str,
    answers: &[Rule],
    sealed: &SealedSlots,
) -> Result<(), StoreError> {
    for (position, rule) in answers.iter().enumerate() {
        let literal = match rule.answer {
            Answer::Literal(slot) if slot.is_set() => {
                let bytes = sealed.literals.get(&position).map(Vec::as_slice);
                Some(bytes.ok_or_else(|| missing("a literal answer"))?)
            }
            _ => None,
        };
        conn.prepare_cached(INSERT_ANSWER)?.execute(params![
            id,
            column_position(position),
            rule.prompt,
            rule.answer.type_name(),
            literal
        ])?;
    }
    Ok(())
}

/// An identity's own row, before its methods are joined.
struct Head {
    id: String,
    name: String,
    username: Option<String>,
    totp: TotpColumns,
    notes: String,
    created_at: String,
    updated_at: String,
    revision: i64,
}

/// `totp_secret IS NOT NULL`, `totp_digits`, `totp_period`, `totp_algorithm`.
type TotpColumns = (bool, Option<i64>, Option<i64>, Option<String>);

/// Methods by identity id, each keyboard-interactive method with its answers.
type Parts = HashMap<String, Vec<Method>>;

impl Head {
    fn finish(self, auth: Vec<Method>) -> Result<Identity, StoreError> {
        let name =
            Name::from_text(&self.name).map_err(|_| StoreError::CorruptRow("identities.name"))?;
        Ok(Identity {
            id: self.id,
            fields: IdentityFields {
                name,
                username: self.username,
                auth,
                totp: totp_from_columns(self.totp)?,
                notes: self.notes,
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
            revision: self.revision,
        })
    }
}

fn head_from_row(row: &Row<'_>) -> rusqlite::Result<Head> {
    Ok(Head {
        id: row.get(0)?,
        name: row.get(1)?,
        username: row.get(2)?,
        totp: (row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?),
        notes: row.get(7)?,
        created_at: row.get(8)?,
        updated_at: row.get(9)?,
        revision: row.get(10)?,
    })
}

/// The TOTP columns read back: all set with a secret, or all NULL.
fn totp_from_columns(columns: TotpColumns) -> Result<Option<Totp>, StoreError> {
    let corrupt = StoreError::CorruptRow("identities.totp_*");
    match columns {
        (true, Some(digits), Some(period), Some(algorithm)) => {
            let (digits, period) = (digits.unsigned_abs(), period.unsigned_abs());
            let settings = Algorithm::parse(&algorithm)
                .and_then(|algorithm| TotpSettings::new(digits, period, algorithm))
                .map_err(|_| corrupt)?;
            Ok(Some(Totp {
                settings,
                secret: Slot::Stored,
            }))
        }
        (false, None, None, None) => Ok(None),
        _ => Err(corrupt),
    }
}

/// The methods (with answers) of one identity, or of all when `id` is `None`.
fn parts(conn: &Connection, id: Option<&str>) -> Result<Parts, StoreError> {
    let mut answers: HashMap<String, Vec<Rule>> = HashMap::new();
    let mut statement = conn.prepare_cached(SELECT_ANSWERS)?;
    let mut rows = statement.query([id])?;
    while let Some(row) = rows.next()? {
        let kind: String = row.get(2)?;
        let answer = match (kind.as_str(), row.get::<_, bool>(3)?) {
            ("password", _) => Answer::Password,
            ("totp", _) => Answer::Totp,
            ("literal", true) => Answer::Literal(Slot::Stored),
            _ => return Err(StoreError::CorruptRow("identity_answers.answer")),
        };
        let rule = Rule {
            prompt: row.get(1)?,
            answer,
        };
        answers.entry(row.get(0)?).or_default().push(rule);
    }
    let mut parts = Parts::new();
    let mut statement = conn.prepare_cached(SELECT_METHODS)?;
    let mut rows = statement.query([id])?;
    while let Some(row) = rows.next()? {
        let owner: String = row.get(0)?;
        let kind: String = row.get(1)?;
        let method = match (kind.as_str(), row.get::<_, Option<String>>(2)?) {
            ("key", Some(key_id)) => Method::Key { key_id },
            ("password", _) => Method::Password {
                password: if row.get(3)? {
                    Slot::Stored
                } else {
                    Slot::Empty
                },
            },
            ("agent", _) => Method::Agent,
            ("keyboard_interactive", _) => Method::KeyboardInteractive {
                answers: answers.remove(&owner).unwrap_or_default(),
            },
            _ => return Err(StoreError::CorruptRow("identity_methods.type")),
        };
        parts.entry(owner).or_default().push(method);
    }
    Ok(parts)
}
