//! The host-key trust store in SQL (docs/api.md: "Host keys (known_hosts)"): entries of
//! `known_hosts` (the host CAs among them), and the `changed`/`revoked`/
//! `certificate_invalid` verdicts (`host_key_alerts`, with their reasons) that block
//! `connect`.
//!
//! Invariants: an entry is one host token and one key; the same token, key and marker are
//! never stored twice (a unique index; `insert` reports the existing entry instead); this
//! module never decides trust: which entries match a host (HMAC, globs) and what they mean
//! is decided above it.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::known_hosts::{Marker, Status};
use crate::store::{now_timestamp, StoreError};

const SELECT_ALL: &str = "SELECT seq, id, host, hashed, wildcard, key_type, public_key, \
     fingerprint, marker, comment, source, first_seen, last_seen FROM known_hosts ORDER BY seq";
const SELECT_PAGE: &str = "SELECT seq, id, host, hashed, wildcard, key_type, public_key, \
     fingerprint, marker, comment, source, first_seen, last_seen FROM known_hosts ORDER BY seq \
     LIMIT ?1 OFFSET ?2";
const COUNT_ALL: &str = "SELECT COUNT(*) FROM known_hosts";
const SELECT_BY_ID: &str = "SELECT seq, id, host, hashed, wildcard, key_type, public_key, \
     fingerprint, marker, comment, source, first_seen, last_seen FROM known_hosts WHERE id = ?1";
/// Every entry that may match `?1`: its exact name, and every hashed or wildcard entry
/// (the caller tests those).
const SELECT_CANDIDATES: &str = "SELECT seq, id, host, hashed, wildcard, key_type, public_key, \
     fingerprint, marker, comment, source, first_seen, last_seen FROM known_hosts \
     WHERE host = ?1 OR hashed = 1 OR wildcard = 1 ORDER BY seq";
const SELECT_SAME: &str =
    "SELECT id FROM known_hosts WHERE host = ?1 AND public_key = ?2 AND marker = ?3";
const INSERT_ENTRY: &str = "INSERT INTO known_hosts (id, host, hashed, wildcard, key_type, \
     public_key, fingerprint, marker, comment, source, first_seen, last_seen) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)";
const DELETE_ENTRY: &str = "DELETE FROM known_hosts WHERE id = ?1";
const TOUCH_ENTRY: &str = "UPDATE known_hosts SET last_seen = ?2 WHERE id = ?1";
const UPSERT_ALERT: &str = "INSERT INTO host_key_alerts \
     (host, status, key_type, fingerprint, at, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
     ON CONFLICT (host) DO UPDATE SET status = excluded.status, key_type = excluded.key_type, \
     fingerprint = excluded.fingerprint, at = excluded.at, reason = excluded.reason";
const DELETE_ALERT: &str = "DELETE FROM host_key_alerts WHERE host = ?1";
const DELETE_ALERT_OF: &str = "DELETE FROM host_key_alerts WHERE host = ?1 AND status = ?2";
const SELECT_ALERT: &str =
    "SELECT status, key_type, fingerprint, at, reason FROM host_key_alerts WHERE host = ?1";
const SELECT_AUTHORITIES: &str = "SELECT seq, id, host, hashed, wildcard, key_type, \
     public_key, fingerprint, marker, comment, source, first_seen, last_seen FROM known_hosts \
     WHERE marker = 'cert-authority' ORDER BY seq";
const SELECT_CATALOGUE_NAMES: &str = "SELECT id, hostname, port, group_id FROM hosts ORDER BY seq";

/// One stored entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownHost {
    pub id: String,
    /// The known_hosts token (`example.com`, `[h]:2222`, `*.corp`, `|1|salt|hash`).
    pub host: String,
    pub hashed: bool,
    pub wildcard: bool,
    pub key_type: String,
    /// `<type> <base64>`.
    pub public_key: String,
    pub fingerprint: String,
    pub marker: Marker,
    pub comment: String,
    /// `accept`, `replace` or `import`.
    pub source: String,
    pub first_seen: String,
    pub last_seen: String,
}

/// An entry to store.
pub struct NewKnownHost<'a> {
    pub host: &'a str,
    pub hashed: bool,
    pub wildcard: bool,
    pub key_type: &'a str,
    pub public_key: &'a str,
    pub fingerprint: &'a str,
    pub marker: Marker,
    pub comment: &'a str,
    pub source: &'a str,
}

/// A `changed`, `revoked` or `certificate_invalid` verdict recorded for a lookup name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    pub status: Status,
    pub key_type: String,
    pub fingerprint: String,
    pub at: String,
    /// The verdict's reason (`trust::Verdict::reason`); `""` when it had none.
    pub reason: String,
}

/// Every entry, in the order they were added.
pub fn all(conn: &Connection) -> Result<Vec<KnownHost>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_ALL)?;
    let rows = statement.query_map([], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every `@cert-authority` entry (the host CAs), in the order they were added.
pub fn authorities(conn: &Connection) -> Result<Vec<KnownHost>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_AUTHORITIES)?;
    let rows = statement.query_map([], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One page of every entry, oldest first (`limit` rows from `offset`), and how many
/// entries there are in all.
pub fn page(
    conn: &Connection,
    offset: u64,
    limit: u64,
) -> Result<(Vec<KnownHost>, u64), StoreError> {
    // Both fit i64: the caller's offset is checked to, and a page holds at most 1,000.
    let (offset, limit) = (
        i64::try_from(offset).unwrap_or(i64::MAX),
        i64::try_from(limit).unwrap_or(i64::MAX),
    );
    let mut statement = conn.prepare_cached(SELECT_PAGE)?;
    let rows = statement.query_map(params![limit, offset], from_row)?;
    let entries = rows.collect::<Result<_, _>>()?;
    let total: i64 = conn
        .prepare_cached(COUNT_ALL)?
        .query_row([], |row| row.get(0))?;
    Ok((entries, u64::try_from(total).unwrap_or(0)))
}

pub fn by_id(conn: &Connection, id: &str) -> Result<KnownHost, StoreError> {
    conn.prepare_cached(SELECT_BY_ID)?
        .query_row([id], from_row)
        .optional()?
        .ok_or(StoreError::KnownHostNotFound)
}

/// Entries that may match lookup name `name` (exact ones, and every hashed or wildcard one).
pub fn candidates(conn: &Connection, name: &str) -> Result<Vec<KnownHost>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_CANDIDATES)?;
    let rows = statement.query_map([name], from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Stores `entry` unless the same token, key and marker are stored: `(id, true)` for a new
/// entry, `(existing id, false)` otherwise. Caller holds the write transaction.
pub fn insert(
    conn: &Connection,
    id: &str,
    entry: &NewKnownHost<'_>,
) -> Result<(String, bool), StoreError> {
    let existing: Option<String> = conn
        .prepare_cached(SELECT_SAME)?
        .query_row(
            params![entry.host, entry.public_key, entry.marker.as_str()],
            |row| row.get(0),
        )
        .optional()?;
    if let Some(existing) = existing {
        return Ok((existing, false));
    }
    conn.prepare_cached(INSERT_ENTRY)?.execute(params![
        id,
        entry.host,
        entry.hashed,
        entry.wildcard,
        entry.key_type,
        entry.public_key,
        entry.fingerprint,
        entry.marker.as_str(),
        entry.comment,
        entry.source,
        now_timestamp(),
    ])?;
    Ok((id.to_owned(), true))
}

/// Deletes entry `id`; `KnownHostNotFound` when there is none.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    match conn.prepare_cached(DELETE_ENTRY)?.execute([id])? {
        0 => Err(StoreError::KnownHostNotFound),
        _ => Ok(()),
    }
}

/// Sets `last_seen` of entry `id` to now.
pub fn touch(conn: &Connection, id: &str) -> Result<(), StoreError> {
    conn.prepare_cached(TOUCH_ENTRY)?
        .execute([id, &now_timestamp()])?;
    Ok(())
}

/// A blocking verdict to record: the presented key and why it was refused.
pub struct NewAlert<'a> {
    pub status: Status,
    pub key_type: &'a str,
    pub fingerprint: &'a str,
    pub reason: &'a str,
}

/// Records (or refreshes) a blocking verdict for lookup name `name`, made now.
pub fn record_alert(conn: &Connection, name: &str, alert: &NewAlert<'_>) -> Result<(), StoreError> {
    conn.prepare_cached(UPSERT_ALERT)?.execute(params![
        name,
        alert.status.as_str(),
        alert.key_type,
        alert.fingerprint,
        now_timestamp(),
        alert.reason
    ])?;
    Ok(())
}

/// Clears the verdict of lookup name `name` if it is `status`; true when there was one.
pub fn clear_alert_of(conn: &Connection, name: &str, status: Status) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(DELETE_ALERT_OF)?
        .execute([name, status.as_str()])?
        > 0)
}

/// Clears the verdict of lookup name `name`; true when there was one.
pub fn clear_alert(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    Ok(conn.prepare_cached(DELETE_ALERT)?.execute([name])? > 0)
}

/// The blocking verdict recorded for lookup name `name`, if any.
pub fn alert(conn: &Connection, name: &str) -> Result<Option<Alert>, StoreError> {
    let found = conn
        .prepare_cached(SELECT_ALERT)?
        .query_row([name], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .optional()?;
    Ok(
        found.map(|(status, key_type, fingerprint, at, reason)| Alert {
            // The CHECK constraint allows only the blocking verdicts; anything else reads as
            // changed.
            status: Status::parse(&status).unwrap_or(Status::Changed),
            key_type,
            fingerprint,
            at,
            reason,
        }),
    )
}

/// `(host id, hostname, port)` of every catalogue host, oldest first: what entries link to.
pub fn catalogue_names(conn: &Connection) -> Result<Vec<(String, String, u16)>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_CATALOGUE_NAMES)?;
    let rows = statement.query_map([], |row| {
        let port: Option<u16> = row.get(2)?;
        let group: Option<String> = row.get(3)?;
        Ok((row.get(0)?, row.get(1)?, port, group))
    })?;
    let rows: Vec<(String, String, Option<u16>, Option<String>)> =
        rows.collect::<Result<_, _>>()?;
    // A host that inherits its port has its group's (docs/identities.md): read the groups
    // only when one does.
    let inheritance = match rows.iter().any(|row| row.2.is_none()) {
        true => Some(crate::store::inherit::Inheritance::load(conn)?),
        false => None,
    };
    Ok(rows
        .into_iter()
        .map(|(id, hostname, port, group)| {
            let port = port.unwrap_or_else(|| {
                inheritance
                    .as_ref()
                    .map_or(crate::model::inherit::DEFAULT_PORT, |known| {
                        known.port_for(group.as_deref())
                    })
            });
            (id, hostname, port)
        })
        .collect())
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<KnownHost> {
    let marker: String = row.get(8)?;
    Ok(KnownHost {
        id: row.get(1)?,
        host: row.get(2)?,
        hashed: row.get(3)?,
        wildcard: row.get(4)?,
        key_type: row.get(5)?,
        public_key: row.get(6)?,
        fingerprint: row.get(7)?,
        // The CHECK constraint allows only the three markers.
        marker: Marker::parse(&marker).unwrap_or(Marker::None),
        comment: row.get(9)?,
        source: row.get(10)?,
        first_seen: row.get(11)?,
        last_seen: row.get(12)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::known_hosts::{Marker, Status};
    use crate::store::known_hosts::{
        alert, all, candidates, clear_alert, clear_alert_of, insert, record_alert, Alert, NewAlert,
        NewKnownHost,
    };
    use crate::store::{open_in_memory, StoreError};

    fn entry<'a>(host: &'a str, hashed: bool, wildcard: bool) -> NewKnownHost<'a> {
        NewKnownHost {
            host,
            hashed,
            wildcard,
            key_type: "ssh-ed25519",
            public_key: "ssh-ed25519 AAAA",
            fingerprint: "SHA256:x",
            marker: Marker::None,
            comment: "",
            source: "import",
        }
    }

    #[test]
    fn the_same_host_key_and_marker_are_stored_once() {
        let db = open_in_memory().unwrap();
        let (first, second) = db
            .write(|tx| {
                let first = insert(tx, "a", &entry("h", false, false))?;
                let second = insert(tx, "b", &entry("h", false, false))?;
                Ok::<_, StoreError>((first, second))
            })
            .unwrap();
        assert_eq!(first, ("a".to_owned(), true));
        assert_eq!(second, ("a".to_owned(), false));
        assert_eq!(db.read(all).unwrap().len(), 1);
    }

    #[test]
    fn candidates_are_the_exact_name_and_every_hashed_or_wildcard_entry() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert(tx, "exact", &entry("h", false, false))?;
            insert(tx, "other", &entry("g", false, false))?;
            insert(tx, "hashed", &entry("|1|a|b", true, false))?;
            insert(tx, "wild", &entry("*.corp", false, true))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let ids: Vec<String> = db
            .read(|conn| candidates(conn, "h"))
            .unwrap()
            .into_iter()
            .map(|row| row.id)
            .collect();
        assert_eq!(ids, ["exact", "hashed", "wild"]);
    }

    #[test]
    fn an_alert_is_recorded_refreshed_and_cleared() {
        let db = open_in_memory().unwrap();
        let before = crate::store::now_timestamp();
        let new = |status, fingerprint, reason| NewAlert {
            status,
            key_type: "ssh-ed25519",
            fingerprint,
            reason,
        };
        db.write(|tx| {
            record_alert(tx, "[h]:2222", &new(Status::Changed, "SHA256:x", ""))?;
            record_alert(tx, "[h]:2222", &new(Status::Revoked, "SHA256:y", "why"))
        })
        .unwrap();
        let recorded = db.read(|conn| alert(conn, "[h]:2222")).unwrap().unwrap();
        assert!(recorded.at >= before, "{} < {before}", recorded.at);
        assert_eq!(
            recorded,
            Alert {
                status: Status::Revoked,
                key_type: "ssh-ed25519".into(),
                fingerprint: "SHA256:y".into(),
                at: recorded.at.clone(),
                reason: "why".into(),
            }
        );
        assert_eq!(db.read(|conn| alert(conn, "h")).unwrap(), None);
        assert!(db.write(|tx| clear_alert(tx, "[h]:2222")).unwrap());
        assert!(!db.write(|tx| clear_alert(tx, "[h]:2222")).unwrap());
    }

    #[test]
    fn a_certificate_invalid_alert_is_stored_and_cleared_only_by_its_own_status() {
        let db = open_in_memory().unwrap();
        let new = NewAlert {
            status: Status::CertificateInvalid,
            key_type: "ssh-ed25519",
            fingerprint: "SHA256:x",
            reason: "expired",
        };
        db.write(|tx| record_alert(tx, "h", &new)).unwrap();
        let recorded = db.read(|conn| alert(conn, "h")).unwrap().unwrap();
        assert_eq!(recorded.status, Status::CertificateInvalid);
        assert!(!db
            .write(|tx| clear_alert_of(tx, "h", Status::Changed))
            .unwrap());
        assert!(db
            .write(|tx| clear_alert_of(tx, "h", Status::CertificateInvalid))
            .unwrap());
        assert_eq!(db.read(|conn| alert(conn, "h")).unwrap(), None);
    }
}
