//! The connection history: one entry per `connect`, newest first, in pages (docs/api.md,
//! "Connection history").
//!
//! Invariants: an entry is a snapshot of where the host pointed when it was used (name,
//! hostname, port, username, auth type), never a credential; it is appended in the
//! transaction that sets the host's `last_used_at`, with the same timestamp; the schema
//! keeps the newest `log_retention.history_kept` entries and drops a host's entries with
//! the host (sql/0006_changes.sql).

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::host::Host;
use crate::store::StoreError;

const INSERT_ENTRY: &str = "INSERT INTO connection_history \
     (host_id, name, hostname, port, username, auth_type, connected_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const SELECT_PAGE: &str = "SELECT seq, host_id, name, hostname, port, username, auth_type, \
     connected_at FROM connection_history WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2";
const SELECT_PAGE_OF_HOST: &str = "SELECT seq, host_id, name, hostname, port, username, \
     auth_type, connected_at FROM connection_history WHERE host_id = ?3 AND seq < ?1 \
     ORDER BY seq DESC LIMIT ?2";
const HOST_EXISTS: &str = "SELECT 1 FROM hosts WHERE id = ?1";

/// One connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    pub seq: i64,
    pub host_id: String,
    pub name: String,
    pub hostname: String,
    pub port: i64,
    pub username: String,
    pub auth_type: String,
    pub connected_at: String,
}

/// Records a connection to `host` at `connected_at`, with the effective values it was made
/// with (`host` flattened, model::inherit, and the auth type it started with). Caller holds
/// the write transaction that set the host's `last_used_at`.
pub fn append(
    conn: &Connection,
    host: &Host,
    auth_type: &str,
    connected_at: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(INSERT_ENTRY)?.execute(params![
        host.id,
        host.name,
        host.hostname,
        host.port.unwrap_or(crate::model::inherit::DEFAULT_PORT),
        host.username.as_deref().unwrap_or_default(),
        auth_type,
        connected_at
    ])?;
    Ok(())
}

/// Entries with `seq` below `before` (all when `None`), newest first, at most `limit`; of
/// one host when `host_id` is given (`HostNotFound` when it names no host).
pub fn page(
    conn: &Connection,
    host_id: Option<&str>,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<HistoryEntry>, StoreError> {
    let before = before.unwrap_or(i64::MAX);
    let entries = match host_id {
        None => conn
            .prepare_cached(SELECT_PAGE)?
            .query_map(params![before, limit], entry_from_row)?
            .collect::<Result<Vec<_>, _>>()?,
        Some(host_id) => {
            conn.prepare_cached(HOST_EXISTS)?
                .query_row([host_id], |_| Ok(()))
                .optional()?
                .ok_or(StoreError::HostNotFound)?;
            conn.prepare_cached(SELECT_PAGE_OF_HOST)?
                .query_map(params![before, limit, host_id], entry_from_row)?
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(entries)
}

fn entry_from_row(row: &Row<'_>) -> rusqlite::Result<HistoryEntry> {
    Ok(HistoryEntry {
        seq: row.get(0)?,
        host_id: row.get(1)?,
        name: row.get(2)?,
        hostname: row.get(3)?,
        port: row.get(4)?,
        username: row.get(5)?,
        auth_type: row.get(6)?,
        connected_at: row.get(7)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rusqlite::params;

    use crate::model::host::Host;
    use crate::store::changes::{set_retention, Retention};
    use crate::store::history::{append, page};
    use crate::store::{hosts, open_in_memory, Db, StoreError};

    const NOW: &str = "2026-01-01T00:00:00.000Z";

    fn add_host(db: &Db, id: &str) -> Host {
        db.write(|tx| {
            tx.execute(
                "INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type,
                     created_at, updated_at)
                 VALUES (?1, ?1, ?1, 'example.com', 22, 'u', 'agent', ?2, ?2)",
                params![id, NOW],
            )?;
            hosts::by_id(tx, id)
        })
        .unwrap()
    }

    fn connect(db: &Db, host: &Host, at: &str) {
        db.write(|tx| append(tx, host, "agent", at)).unwrap();
    }

    fn stamps(db: &Db, host_id: Option<&str>, before: Option<i64>) -> Vec<String> {
        db.read(|conn| page(conn, host_id, before, 10))
            .unwrap()
            .into_iter()
            .map(|entry| entry.connected_at)
            .collect()
    }

    #[test]
    fn pages_are_newest_first_per_host_and_across_hosts() {
        let db = open_in_memory().unwrap();
        let a = add_host(&db, "a");
        let b = add_host(&db, "b");
        connect(&db, &a, "t1");
        connect(&db, &b, "t2");
        connect(&db, &a, "t3");
        assert_eq!(stamps(&db, None, None), ["t3", "t2", "t1"]);
        assert_eq!(stamps(&db, Some("a"), None), ["t3", "t1"]);
        let first = db.read(|conn| page(conn, None, None, 1)).unwrap();
        assert_eq!(stamps(&db, None, Some(first[0].seq)), ["t2", "t1"]);
    }

    #[test]
    fn an_entry_keeps_where_the_host_pointed_then() {
        let db = open_in_memory().unwrap();
        let host = add_host(&db, "a");
        connect(&db, &host, NOW);
        db.write(|tx| {
            tx.execute("UPDATE hosts SET hostname = 'moved.example.com'", [])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let entries = db.read(|conn| page(conn, None, None, 10)).unwrap();
        assert_eq!(entries[0].hostname, "example.com");
        assert_eq!(
            (entries[0].port, entries[0].auth_type.as_str()),
            (22, "agent")
        );
    }

    #[test]
    fn the_history_of_an_unknown_host_is_host_not_found() {
        let db = open_in_memory().unwrap();
        let err = db
            .read(|conn| page(conn, Some("nope"), None, 10))
            .unwrap_err();
        assert!(matches!(err, StoreError::HostNotFound), "{err}");
    }

    #[test]
    fn deleting_a_host_deletes_its_history() {
        let db = open_in_memory().unwrap();
        let a = add_host(&db, "a");
        let b = add_host(&db, "b");
        connect(&db, &a, "t1");
        connect(&db, &b, "t2");
        db.write(|tx| hosts::delete(tx, "a")).unwrap();
        assert_eq!(stamps(&db, None, None), ["t2"]);
    }

    #[test]
    fn history_at_its_bound_keeps_every_entry_and_one_more_drops_the_oldest() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            set_retention(
                tx,
                Retention {
                    changes_kept: 100,
                    history_kept: 3,
                },
            )
        })
        .unwrap();
        let host = add_host(&db, "a");
        for stamp in ["t1", "t2", "t3"] {
            connect(&db, &host, stamp);
        }
        assert_eq!(stamps(&db, None, None), ["t3", "t2", "t1"]);
        connect(&db, &host, "t4");
        assert_eq!(stamps(&db, None, None), ["t4", "t3", "t2"]);
    }
}
