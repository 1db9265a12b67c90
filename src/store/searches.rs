//! The SQL of saved searches (`saved_searches`, docs/query.md "Saved searches"): a name and a
//! query text, listed by name.
//!
//! Invariants: names are unique by their caseless match key, checked in the caller's
//! transaction (`DuplicateName`); the query text is stored as given, the caller has checked
//! it parses.

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

use crate::model::name::Name;
use crate::model::query::Named;
use crate::store::{now_timestamp, StoreError};

const COLUMNS: &str = "id, name, q, created_at, updated_at";
const NAME_TAKEN: &str =
    "SELECT EXISTS (SELECT 1 FROM saved_searches WHERE fold_key = ?1 AND id <> ?2)";
const INSERT: &str = "INSERT INTO saved_searches (id, name, name_key, fold_key, q, created_at, \
     updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)";
const UPDATE: &str = "UPDATE saved_searches SET name = ?2, name_key = ?3, fold_key = ?4, q = ?5, \
     updated_at = ?6 WHERE id = ?1";
const DELETE: &str = "DELETE FROM saved_searches WHERE id = ?1";

/// A saved search as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SavedSearch {
    pub id: String,
    pub name: String,
    pub q: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Every saved search, by name (then id).
pub fn list(conn: &Connection) -> Result<Vec<SavedSearch>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM saved_searches ORDER BY name_key, id");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map([], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn by_id(conn: &Connection, id: &str) -> Result<SavedSearch, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM saved_searches WHERE id = ?1");
    let mut statement = conn.prepare_cached(&sql)?;
    let found = statement.query_row([id], from_row).optional()?;
    found.ok_or(StoreError::SearchNotFound)
}

/// Saves a new search. Errors: `DuplicateName`.
pub fn insert(
    conn: &Connection,
    id: &str,
    name: &Name,
    q: &str,
) -> Result<SavedSearch, StoreError> {
    write(conn, INSERT, (id, name, q), &now_timestamp())
}

/// Replaces a search's name and query. Errors: `SearchNotFound`, `DuplicateName`.
pub fn update(
    conn: &Connection,
    id: &str,
    name: &Name,
    q: &str,
) -> Result<SavedSearch, StoreError> {
    let old = by_id(conn, id)?;
    let now = crate::store::next_updated_at(&old.updated_at);
    write(conn, UPDATE, (id, name, q), &now)
}

/// Runs `INSERT` or `UPDATE` (the same parameters) after the name's check.
fn write(
    conn: &Connection,
    sql: &str,
    (id, name, q): (&str, &Name, &str),
    now: &str,
) -> Result<SavedSearch, StoreError> {
    ensure_name_free(conn, name, id)?;
    conn.prepare_cached(sql)?.execute(params![
        id,
        name.as_str(),
        name.key(),
        name.fold_key(),
        q,
        now
    ])?;
    by_id(conn, id)
}

/// Errors: `SearchNotFound`.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    match conn.prepare_cached(DELETE)?.execute([id])? {
        0 => Err(StoreError::SearchNotFound),
        _ => Ok(()),
    }
}

fn ensure_name_free(conn: &Connection, name: &Name, id: &str) -> Result<(), StoreError> {
    match crate::store::fold_key_taken(conn, NAME_TAKEN, name.fold_key(), id)? {
        true => Err(StoreError::DuplicateName(
            "another saved search already has this name (names compare ignoring case)".into(),
        )),
        false => Ok(()),
    }
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<SavedSearch> {
    Ok(SavedSearch {
        id: row.get(0)?,
        name: row.get(1)?,
        q: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

/// `(id, name)` of every identity (`identities`) or key (`keys`), by name: what
/// `GET /api/search` looks through besides hosts and groups.
pub fn names(conn: &Connection, of: Named) -> Result<Vec<(String, String)>, StoreError> {
    let sql = match of {
        Named::Identity => "SELECT id, name FROM identities ORDER BY name_key, id",
        Named::Key => "SELECT id, name FROM keys ORDER BY name_key, id",
        Named::Group => "SELECT id, name FROM groups ORDER BY name_key, id",
    };
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
