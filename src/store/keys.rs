//! The `keys` table: insert, read, rename and delete keys; their sealed private key and
//! passphrase are stored as the vault's bytes and never read back here except by `connect`
//! (store::hosts).
//!
//! Invariants: never sees a plaintext secret; the `public_key` column holds
//! `<algorithm> <base64>` without a comment (the view appends the current comment, so a
//! comment change touches one column); uniqueness of the name's caseless match key
//! (`fold_key`, model::fold, computed here from the name) and of `fingerprint` is checked
//! inside the caller's transaction and reported as `DuplicateName` / `DuplicateKey`, never
//! as a raw constraint error. `name_key` (the lowercase) only sorts.

use std::collections::HashSet;

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

use crate::model::agent::AgentPolicy;
use crate::model::fold;
use crate::model::key::Key;
use crate::model::name::{sort_key, Name};
use crate::store::{key_or_rename, next_updated_at, now_timestamp, StoreError};

const SELECT_KEY_BY_ID: &str = "SELECT id, name, type, public_key, fingerprint, comment, \
     has_passphrase, created_at, updated_at, agent_enabled, agent_confirm, agent_forwarded, \
     revision FROM keys WHERE id = ?1";
// docs/api.md, Keys (decided here): keys are listed by name, case-insensitively, then id.
const SELECT_KEYS: &str = "SELECT id, name, type, public_key, fingerprint, comment, \
     has_passphrase, created_at, updated_at, agent_enabled, agent_confirm, agent_forwarded, \
     revision FROM keys ORDER BY name_key, id";
const NAME_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM keys WHERE fold_key = ?1 AND id <> ?2)";
const FINGERPRINT_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM keys WHERE fingerprint = ?1)";
const SELECT_ID_BY_FINGERPRINT: &str = "SELECT id FROM keys WHERE fingerprint = ?1";
const INSERT_KEY: &str = "INSERT INTO keys (id, name, name_key, fold_key, type, public_key, \
     fingerprint, comment, has_passphrase, private_key, passphrase, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?12, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)";
const UPDATE_KEY: &str = "UPDATE keys SET name = ?2, name_key = ?3, fold_key = ?6, comment = ?4, \
     updated_at = ?5 WHERE id = ?1";
/// Rows without a match key (sql/0005_fold_keys.sql), oldest first: the oldest of a
/// clashing pair keeps its name.
const SELECT_UNKEYED: &str = "SELECT id, name FROM keys WHERE fold_key IS NULL \
     ORDER BY created_at, id";
const SELECT_NAMES: &str = "SELECT name FROM keys";
const SET_FOLD_KEY: &str = "UPDATE keys SET fold_key = ?2 WHERE id = ?1";
const RENAME_UNKEYED: &str =
    "UPDATE keys SET name = ?2, name_key = ?3, fold_key = ?4, updated_at = ?5 WHERE id = ?1";
const USING_KEY: &str = "SELECT (SELECT count(*) FROM hosts WHERE key_id = ?1), \
     (SELECT count(DISTINCT identity_id) FROM identity_methods WHERE key_id = ?1)";
const DELETE_KEY: &str = "DELETE FROM keys WHERE id = ?1";

/// A key to insert, but for its name: validated fields and the vault's sealed bytes.
#[derive(Clone, Copy)]
pub struct NewKey<'a> {
    pub id: &'a str,
    pub key_type: &'a str,
    /// `<algorithm> <base64>`, no comment.
    pub public_key: &'a str,
    pub fingerprint: &'a str,
    pub comment: &'a str,
    pub has_passphrase: bool,
    pub sealed_private_key: &'a [u8],
    pub sealed_passphrase: Option<&'a [u8]>,
}

impl<'a> NewKey<'a> {
    /// An unencrypted ed25519 key with made-up sealed bytes, for tests to adjust.
    #[cfg(test)]
    pub fn for_tests(id: &'a str, fingerprint: &'a str) -> NewKey<'a> {
        NewKey {
            id,
            key_type: "ssh-ed25519",
            public_key: "ssh-ed25519 AAAA",
            fingerprint,
            comment: "",
            has_passphrase: false,
            sealed_private_key: b"sealed",
            sealed_passphrase: None,
        }
    }
}

/// The fields `PUT /api/keys/:id` may change: `None` keeps the stored value.
#[derive(Default)]
pub struct KeyUpdate<'a> {
    pub name: Option<&'a Name>,
    pub comment: Option<&'a str>,
}

/// Inserts a key. Errors: `DuplicateName` when another key has the name (compared
/// case-insensitively), `DuplicateKey` when a key with the fingerprint is stored. The name
/// is checked first.
pub fn insert(conn: &Connection, name: &Name, key: &NewKey<'_>) -> Result<Key, StoreError> {
    ensure_name_free(conn, name.fold_key(), key.id)?;
    if fingerprint_taken(conn, key.fingerprint)? {
        return Err(StoreError::DuplicateKey);
    }
    conn.prepare_cached(INSERT_KEY)?.execute(params![
        key.id,
        name.as_str(),
        name.key(),
        key.key_type,
        key.public_key,
        key.fingerprint,
        key.comment,
        key.has_passphrase,
        key.sealed_private_key,
        key.sealed_passphrase,
        now_timestamp(),
        name.fold_key(),
    ])?;
    by_id(conn, key.id)
}

/// One key. Errors: `KeyNotFound`.
pub fn by_id(conn: &Connection, id: &str) -> Result<Key, StoreError> {
    conn.prepare_cached(SELECT_KEY_BY_ID)?
        .query_row([id], key_from_row)
        .optional()?
        .ok_or(StoreError::KeyNotFound)
}

/// Every key, by name (case-insensitively) then id.
pub fn list(conn: &Connection) -> Result<Vec<Key>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_KEYS)?;
    let rows = statement.query_map([], key_from_row)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// True when a key other than `except_id` has a name matching `name` caselessly. `name`
/// may be the name or its lowercase: both have the same match key.
pub fn name_taken(conn: &Connection, name: &str, except_id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(NAME_TAKEN)?
        .query_row(params![fold::key(name), except_id], |row| row.get(0))?)
}

/// The name for a key that comes without one of its own (an ssh_config import names it after
/// its file, the agent's `ssh-add` after its comment): `wanted` trimmed, else the first free
/// of `wanted (2)`, `wanted (3)`, ... (docs/api.md, Keys). `None` when `wanted` breaks the name
/// rule.
pub fn free_name(conn: &Connection, wanted: &str) -> Result<Option<Name>, StoreError> {
    let Ok(name) = Name::from_text(wanted) else {
        return Ok(None);
    };
    if !name_taken(conn, name.as_str(), "")? {
        return Ok(Some(name));
    }
    Ok(Some(Name::free(name.as_str(), &all_fold_keys(conn)?)))
}

/// True when a key with this fingerprint is stored.
pub fn fingerprint_taken(conn: &Connection, fingerprint: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(FINGERPRINT_TAKEN)?
        .query_row([fingerprint], |row| row.get(0))?)
}

/// The id of the stored key with this fingerprint.
pub fn id_by_fingerprint(
    conn: &Connection,
    fingerprint: &str,
) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached(SELECT_ID_BY_FINGERPRINT)?
        .query_row([fingerprint], |row| row.get(0))
        .optional()?)
}

/// Renames or re-comments a key; `updated_at` moves past its previous value (docs/api.md,
/// Keys: it changes on every successful update). Errors: `KeyNotFound`, `DuplicateName`.
pub fn update(conn: &Connection, id: &str, update: &KeyUpdate<'_>) -> Result<Key, StoreError> {
    let current = by_id(conn, id)?;
    let (name, name_key, fold_key) = match update.name {
        Some(name) => (
            name.as_str(),
            name.key().to_owned(),
            name.fold_key().to_owned(),
        ),
        None => (
            current.name.as_str(),
            sort_key(&current.name),
            fold::key(&current.name),
        ),
    };
    ensure_name_free(conn, &fold_key, id)?;
    conn.prepare_cached(UPDATE_KEY)?.execute(params![
        id,
        name,
        name_key,
        update.comment.unwrap_or(&current.comment),
        next_updated_at(&current.updated_at),
        fold_key,
    ])?;
    by_id(conn, id)
}

/// Deletes a key and its sealed secrets. Errors: `KeyNotFound`, `KeyInUse` while hosts or
/// identities reference it (docs/api.md, Keys; docs/identities.md). Run it in one
/// transaction: the count and the delete must see the same users.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    by_id(conn, id)?;
    let (hosts, identities): (i64, i64) = conn
        .prepare_cached(USING_KEY)?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))?;
    if hosts > 0 || identities > 0 {
        return Err(StoreError::KeyInUse {
            hosts: hosts.unsigned_abs(),
            identities: identities.unsigned_abs(),
        });
    }
    conn.prepare_cached(DELETE_KEY)?.execute([id])?;
    Ok(())
}

/// Gives every key without a match key its key (sql/0005_fold_keys.sql), renaming one whose
/// name now clashes with an older key's to `name (2)`, ... (logged). Returns how many rows it
/// touched; writes nothing when none lacks a key.
pub fn fill_fold_keys(conn: &mut Connection) -> Result<usize, StoreError> {
    let unkeyed: Vec<(String, String)> = conn
        .prepare(SELECT_UNKEYED)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if unkeyed.is_empty() {
        return Ok(0);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_timestamp();
    for (id, name) in &unkeyed {
        let taken = |key: &str| name_taken(&tx, key, id);
        let scope = || all_fold_keys(&tx);
        let step = [SET_FOLD_KEY, RENAME_UNKEYED];
        if let Some(renamed) = key_or_rename(&tx, step, id, name, &now, taken, scope)? {
            log::warn!(
                "key {id} renamed to \"{}\": its name matches another key's when compared \
                 caselessly (docs/api.md, Keys)",
                renamed.as_str()
            );
        }
    }
    tx.commit()?;
    Ok(unkeyed.len())
}

/// The match keys of every stored key's name (computed from the names: rows not keyed yet
/// count too).
fn all_fold_keys(conn: &Connection) -> Result<HashSet<String>, StoreError> {
    Ok(conn
        .prepare_cached(SELECT_NAMES)?
        .query_map([], |row| row.get::<_, String>(0))?
        .map(|name| name.map(|name| fold::key(&name)))
        .collect::<Result<_, _>>()?)
}

fn ensure_name_free(conn: &Connection, fold_key: &str, id: &str) -> Result<(), StoreError> {
    // docs/api.md, Keys: key names are unique, compared case-insensitively, by the caseless
    // match key (full case folding, canonical equivalence).
    if name_taken(conn, fold_key, id)? {
        return Err(StoreError::DuplicateName(
            "another key already has this name (names compare ignoring case, \
             with Unicode's full case folding and canonical equivalence: Straße = STRASSE)"
                .into(),
        ));
    }
    Ok(())
}

fn key_from_row(row: &Row<'_>) -> rusqlite::Result<Key> {
    Ok(Key {
        id: row.get(0)?,
        name: row.get(1)?,
        key_type: row.get(2)?,
        public_key: row.get(3)?,
        fingerprint: row.get(4)?,
        comment: row.get(5)?,
        has_passphrase: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
        agent: AgentPolicy::from_stored(
            row.get(9)?,
            &row.get::<_, String>(10)?,
            &row.get::<_, String>(11)?,
        ),
        revision: row.get(12)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::key::Key;
    use crate::model::name::Name;
    use crate::store::keys::{self, KeyUpdate, NewKey};
    use crate::store::{open_in_memory, Db, StoreError};

    /// A key `id` named `name` with this fingerprint.
    fn row<'a>(id: &'a str, name: &str, fingerprint: &'a str) -> (Name, NewKey<'a>) {
        (
            Name::from_text(name).unwrap(),
            NewKey::for_tests(id, fingerprint),
        )
    }

    fn insert(db: &Db, (name, key): &(Name, NewKey<'_>)) -> Result<Key, StoreError> {
        db.write(|tx| keys::insert(tx, name, key))
    }

    fn db_with(rows: &[(Name, NewKey<'_>)]) -> Db {
        let db = open_in_memory().unwrap();
        for row in rows {
            insert(&db, row).unwrap();
        }
        db
    }

    #[test]
    fn list_sorts_by_lowercase_name_then_id() {
        let db = db_with(&[
            row("3", "beta", "SHA256:c"),
            row("2", "Alpha", "SHA256:b"),
            row("1", "Ärger", "SHA256:a"),
        ]);
        let names: Vec<String> = db
            .read(keys::list)
            .unwrap()
            .into_iter()
            .map(|key| key.name)
            .collect();
        assert_eq!(names, ["Alpha", "beta", "Ärger"]);
    }

    #[test]
    fn same_name_in_another_case_is_a_duplicate_name() {
        let db = db_with(&[row("1", "Work", "SHA256:a")]);
        let err = insert(&db, &row("2", "WORK", "SHA256:b")).unwrap_err();
        assert!(matches!(err, StoreError::DuplicateName(_)), "{err}");
    }

    #[test]
    fn key_names_equal_under_case_folding_or_composition_are_duplicate_names() {
        let db = db_with(&[
            row("1", "Straße", "SHA256:a"),
            row("2", "Cafe\u{301}", "SHA256:b"),
        ]);
        for (id, name, fingerprint) in
            [("3", "STRASSE", "SHA256:c"), ("4", "CAF\u{c9}", "SHA256:d")]
        {
            let err = insert(&db, &row(id, name, fingerprint)).unwrap_err();
            assert!(matches!(err, StoreError::DuplicateName(_)), "{name}: {err}");
            // The early check api::keys makes with the lowercase agrees.
            let taken = db
                .read(|conn| keys::name_taken(conn, &name.to_lowercase(), ""))
                .unwrap();
            assert!(taken, "{name}");
        }
        insert(&db, &row("5", "Strase", "SHA256:e")).unwrap();
    }

    #[test]
    fn filling_match_keys_renames_the_newer_of_two_keys_that_now_clash() {
        let db = open_in_memory().unwrap();
        db.read(|conn| {
            conn.execute_batch(
                "INSERT INTO keys (id, name, name_key, type, public_key, fingerprint,
                     has_passphrase, private_key, created_at, updated_at)
                 VALUES ('old', 'Straße', 'straße', 't', 'p', 'a', 0, x'00', '1', '1'),
                        ('new', 'STRASSE', 'strasse', 't', 'p', 'b', 0, x'00', '2', '2')",
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let mut conn = db.conn.lock().unwrap();
        assert_eq!(keys::fill_fold_keys(&mut conn).unwrap(), 2);
        let renamed: String = conn
            .query_row("SELECT name FROM keys WHERE id = 'new'", [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(renamed, "STRASSE (2)");
        assert_eq!(keys::fill_fold_keys(&mut conn).unwrap(), 0);
    }

    #[test]
    fn same_fingerprint_is_a_duplicate_key() {
        let db = db_with(&[row("1", "one", "SHA256:a")]);
        let err = insert(&db, &row("2", "two", "SHA256:a")).unwrap_err();
        assert!(matches!(err, StoreError::DuplicateKey), "{err}");
    }

    #[test]
    fn renaming_a_key_to_its_own_name_in_another_case_is_allowed() {
        let db = db_with(&[row("1", "work", "SHA256:a")]);
        let name = Name::from_text("WORK").unwrap();
        let update = KeyUpdate {
            name: Some(&name),
            comment: Some("c"),
        };
        let key = db.write(|tx| keys::update(tx, "1", &update)).unwrap();
        assert_eq!((key.name.as_str(), key.comment.as_str()), ("WORK", "c"));
    }

    #[test]
    fn an_update_keeps_what_it_does_not_name_and_moves_updated_at_past_the_old_one() {
        let db = db_with(&[row("1", "work", "SHA256:a")]);
        // A stamp from the future: the update must still move past it.
        db.write(|tx| {
            tx.execute(
                "UPDATE keys SET comment = 'c', updated_at = '2999-01-01T00:00:00.000Z'",
                [],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let key = db
            .write(|tx| keys::update(tx, "1", &KeyUpdate::default()))
            .unwrap();
        assert_eq!((key.name.as_str(), key.comment.as_str()), ("work", "c"));
        assert_eq!(key.updated_at, "2999-01-01T00:00:00.001Z");
    }

    #[test]
    fn renaming_onto_another_keys_name_is_a_duplicate_name() {
        let db = db_with(&[row("1", "one", "SHA256:a"), row("2", "two", "SHA256:b")]);
        let name = Name::from_text("One").unwrap();
        let update = KeyUpdate {
            name: Some(&name),
            comment: None,
        };
        let err = db.write(|tx| keys::update(tx, "2", &update)).unwrap_err();
        assert!(matches!(err, StoreError::DuplicateName(_)), "{err}");
    }

    #[test]
    fn deleting_a_key_used_by_two_hosts_reports_two() {
        let db = db_with(&[row("k", "key", "SHA256:a")]);
        db.write(|tx| {
            for id in ["h1", "h2"] {
                tx.execute(
                    "INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type, \
                     key_id, created_at, updated_at) VALUES (?1, 'h', 'h', 'example.com', 22, \
                     'u', 'key', 'k', 'now', 'now')",
                    [id],
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let err = db.write(|tx| keys::delete(tx, "k")).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::KeyInUse {
                    hosts: 2,
                    identities: 0
                }
            ),
            "{err}"
        );
        db.write(|tx| {
            tx.execute("DELETE FROM hosts", [])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        db.write(|tx| keys::delete(tx, "k")).unwrap();
        let err = db.read(|conn| keys::by_id(conn, "k")).unwrap_err();
        assert!(matches!(err, StoreError::KeyNotFound));
    }

    #[test]
    fn deleting_an_unknown_key_is_not_found() {
        let db = db_with(&[]);
        let err = db.write(|tx| keys::delete(tx, "nope")).unwrap_err();
        assert!(matches!(err, StoreError::KeyNotFound));
    }
}
