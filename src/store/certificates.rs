//! The `key_certificates` table: the OpenSSH user certificates attached to keys, as text
//! (docs/api.md, "Certificates"; sql/0011_key_certificates.sql).
//!
//! Invariants: one certificate per key and principal set (a new one replaces the old, in
//! place); every write moves the key's `updated_at` in the same transaction, so the change
//! feed gets one `key` `updated` entry and the key one revision; the texts are read back in
//! the order they were first attached. Reading a text is the caller's job (`sshkey`).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use crate::model::key::Key;
use crate::store::keys::by_id;
use crate::store::{next_updated_at, now_timestamp, StoreError};

const SELECT_OF_KEY: &str =
    "SELECT certificate FROM key_certificates WHERE key_id = ?1 ORDER BY seq";
const SELECT_ALL: &str = "SELECT key_id, certificate FROM key_certificates ORDER BY seq";
const SELECT_SEQ: &str = "SELECT seq FROM key_certificates WHERE key_id = ?1 AND principals = ?2";
const INSERT: &str = "INSERT INTO key_certificates (key_id, principals, certificate, created_at, \
     announced) VALUES (?1, ?2, ?3, ?4, ?5)";
const REPLACE: &str = "UPDATE key_certificates SET certificate = ?2, created_at = ?3, \
     announced = ?4 WHERE seq = ?1";
const SELECT_WATCHED: &str = "SELECT c.seq, c.key_id, c.certificate, c.announced, k.public_key \
     FROM key_certificates AS c JOIN keys AS k ON k.id = c.key_id ORDER BY c.seq";
const SET_ANNOUNCED: &str = "UPDATE key_certificates SET announced = ?2 WHERE seq = ?1";
const INSERT_KEY_CHANGE: &str = "INSERT INTO changes (at, kind, id, op) \
     VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'key', ?1, 'updated')";
const DELETE_ALL: &str = "DELETE FROM key_certificates WHERE key_id = ?1";
const DELETE_ONE: &str = "DELETE FROM key_certificates WHERE key_id = ?1 AND principals = ?2";
const TOUCH_KEY: &str = "UPDATE keys SET updated_at = ?2 WHERE id = ?1";

/// Attaches `certificate` (its text) to key `key_id`, replacing the one with the same
/// principal set (`principals`, `Certificate::principals_key`), with `status` (its status
/// now) as the one announced. Returns the key as it is now and whether a certificate was
/// replaced. Errors: `KeyNotFound`.
pub fn attach(
    conn: &Connection,
    key_id: &str,
    principals: &str,
    certificate: &str,
    status: &str,
) -> Result<(Key, bool), StoreError> {
    let key = by_id(conn, key_id)?;
    let existing: Option<i64> = conn
        .prepare_cached(SELECT_SEQ)?
        .query_row(params![key_id, principals], |row| row.get(0))
        .optional()?;
    match existing {
        Some(seq) => conn.prepare_cached(REPLACE)?.execute(params![
            seq,
            certificate,
            now_timestamp(),
            status
        ])?,
        None => conn.prepare_cached(INSERT)?.execute(params![
            key_id,
            principals,
            certificate,
            now_timestamp(),
            status
        ])?,
    };
    Ok((touch(conn, &key)?, existing.is_some()))
}

/// Removes key `key_id`'s certificate for the principal set `principals`, or all of them
/// (`None`). Returns the key as it is now and how many were removed (the key is not
/// touched when none was). Errors: `KeyNotFound`.
pub fn remove(
    conn: &Connection,
    key_id: &str,
    principals: Option<&str>,
) -> Result<(Key, usize), StoreError> {
    let key = by_id(conn, key_id)?;
    let removed = match principals {
        Some(principals) => conn
            .prepare_cached(DELETE_ONE)?
            .execute(params![key_id, principals])?,
        None => conn.prepare_cached(DELETE_ALL)?.execute([key_id])?,
    };
    match removed {
        0 => Ok((key, 0)),
        _ => Ok((touch(conn, &key)?, removed)),
    }
}

/// One attached certificate as the expiry watcher reads it.
pub struct Watched {
    pub seq: i64,
    pub key_id: String,
    pub certificate: String,
    /// The status last announced; `""` when none was recorded yet.
    pub announced: String,
    /// The key's public key, which the certificate must certify.
    pub public_key: String,
}

/// Every attached certificate with the status last announced.
pub fn watched(conn: &Connection) -> Result<Vec<Watched>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_WATCHED)?;
    let rows = statement.query_map([], |row| {
        Ok(Watched {
            seq: row.get(0)?,
            key_id: row.get(1)?,
            certificate: row.get(2)?,
            announced: row.get(3)?,
            public_key: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records `status` as certificate `seq`'s announced one; with `log`, appends one `key`
/// `updated` entry for `key_id` to the change feed (the key's view changed; its own row and
/// revision are not touched). Caller holds the write transaction.
pub fn announce(
    conn: &Connection,
    seq: i64,
    key_id: &str,
    status: &str,
    log: bool,
) -> Result<(), StoreError> {
    conn.prepare_cached(SET_ANNOUNCED)?
        .execute(params![seq, status])?;
    if log {
        conn.prepare_cached(INSERT_KEY_CHANGE)?.execute([key_id])?;
    }
    Ok(())
}

/// The texts of key `key_id`'s certificates, oldest attachment first.
pub fn of_key(conn: &Connection, key_id: &str) -> Result<Vec<String>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_OF_KEY)?;
    let rows = statement.query_map([key_id], |row| row.get(0))?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Every key's certificate texts, by key id, oldest attachment first.
pub fn all(conn: &Connection) -> Result<HashMap<String, Vec<String>>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_ALL)?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let mut by_key: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows {
        let (key_id, text) = row?;
        by_key.entry(key_id).or_default().push(text);
    }
    Ok(by_key)
}

/// The time certificates are judged at (docs/api.md, "Certificates"): now, in seconds
/// since 1970 (0 on a clock set before 1970, where every certificate reads as not yet valid).
pub fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// Moves the key's `updated_at` past its previous value: one change-feed entry and one
/// revision (the `keys_changed` trigger).
fn touch(conn: &Connection, key: &Key) -> Result<Key, StoreError> {
    conn.prepare_cached(TOUCH_KEY)?
        .execute(params![key.id, next_updated_at(&key.updated_at)])?;
    by_id(conn, &key.id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::name::Name;
    use crate::store::certificates::{all, attach, of_key, remove};
    use crate::store::keys::{self, NewKey};
    use crate::store::{open_in_memory, Db};

    fn db_with_key() -> Db {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            let name = Name::from_text("k").unwrap();
            keys::insert(tx, &name, &NewKey::for_tests("k1", "SHA256:k1"))
        })
        .unwrap();
        db
    }

    #[test]
    fn a_certificate_for_the_same_principal_set_replaces_the_old_one_in_place() {
        let db = db_with_key();
        let (key, replaced) = db
            .write(|tx| attach(tx, "k1", "[\"a\"]", "cert-a1", "valid"))
            .unwrap();
        assert!(!replaced);
        assert_eq!(key.revision, 2, "attaching is an edit of the key");
        db.write(|tx| attach(tx, "k1", "[\"b\"]", "cert-b", "valid"))
            .unwrap();
        let (_, replaced) = db
            .write(|tx| attach(tx, "k1", "[\"a\"]", "cert-a2", "valid"))
            .unwrap();
        assert!(replaced);
        let texts = db.read(|conn| of_key(conn, "k1")).unwrap();
        assert_eq!(texts, ["cert-a2", "cert-b"]);
        assert_eq!(db.read(all).unwrap()["k1"], texts);
    }

    #[test]
    fn removing_one_set_or_all_and_removing_none_leaves_the_key_untouched() {
        let db = db_with_key();
        db.write(|tx| attach(tx, "k1", "[\"a\"]", "a", "valid"))
            .unwrap();
        db.write(|tx| attach(tx, "k1", "[]", "any", "valid"))
            .unwrap();
        let (key, removed) = db.write(|tx| remove(tx, "k1", Some("[\"x\"]"))).unwrap();
        assert_eq!((key.revision, removed), (3, 0), "nothing removed, no edit");
        let (_, removed) = db.write(|tx| remove(tx, "k1", Some("[]"))).unwrap();
        assert_eq!(removed, 1);
        let (key, removed) = db.write(|tx| remove(tx, "k1", None)).unwrap();
        assert_eq!((key.revision, removed), (5, 1));
        assert!(db.read(|conn| of_key(conn, "k1")).unwrap().is_empty());
        assert!(db.write(|tx| remove(tx, "nope", None)).is_err());
    }
}
