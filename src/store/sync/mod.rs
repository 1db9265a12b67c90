//! Sync's own rows (sql/0018_sync.sql; docs/sync.md): this device's settings, the peers and
//! files seen in the folder, the records the catalogue could not take, and the conflicts;
//! and the catalogue as records and back (`project`, `apply`, by the table of `kinds`).
//!
//! Invariants: the sync passphrase goes in and out sealed by the vault (this module never
//! knows whether the vault is locked); nothing here is catalogue (no snapshot holds it).

pub mod apply;
pub mod kinds;
pub mod project;

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension};

use crate::model::sync::record::RecordKey;
use crate::store::{now_timestamp, StoreError};

/// The vault slot of the sealed sync passphrase.
pub const PASSPHRASE_TABLE: &str = "sync_settings";
pub const PASSPHRASE_ROW: &str = "1";
pub const PASSPHRASE_SLOT: &str = "passphrase";

/// Conflicts kept (the newest).
pub const CONFLICTS_KEPT: i64 = 1000;

/// This device's sync settings.
#[derive(Clone)]
pub struct Settings {
    pub device_id: String,
    pub device_name: String,
    /// The folder, while sync is set up.
    pub dir: Option<String>,
    /// The sync passphrase sealed by the vault, while sync is set up.
    pub passphrase: Option<Vec<u8>>,
    /// The record clock's last packed value.
    pub clock: u64,
    pub last_write_at: Option<String>,
    pub last_merge_at: Option<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Settings({}, {:?}, <passphrase>)",
            self.device_id, self.dir
        )
    }
}

const SELECT_SETTINGS: &str = "SELECT device_id, device_name, dir, passphrase, clock, \
     last_write_at, last_merge_at FROM sync_settings WHERE id = 1";

/// The settings, if made.
pub fn read_settings(conn: &Connection) -> Result<Option<Settings>, StoreError> {
    let settings = conn
        .query_row(SELECT_SETTINGS, [], |row| {
            Ok(Settings {
                device_id: row.get(0)?,
                device_name: row.get(1)?,
                dir: row.get(2)?,
                passphrase: row.get(3)?,
                clock: row.get::<_, i64>(4)? as u64,
                last_write_at: row.get(5)?,
                last_merge_at: row.get(6)?,
            })
        })
        .optional()?;
    Ok(settings)
}

/// The settings, made on first use with the device id `fresh_id` and the name
/// `default_name`. Caller holds a write transaction.
pub fn settings(
    conn: &Connection,
    fresh_id: &str,
    default_name: &str,
) -> Result<Settings, StoreError> {
    if let Some(found) = read_settings(conn)? {
        return Ok(found);
    }
    conn.execute(
        "INSERT OR IGNORE INTO sync_settings (id, device_id, device_name) VALUES (1, ?1, ?2)",
        params![fresh_id, default_name],
    )?;
    read_settings(conn)?
        .ok_or_else(|| StoreError::BrokenInvariant("sync settings not written".into()))
}

/// Sets up sync: the folder, the sealed passphrase and the device name.
pub fn enable(
    conn: &Connection,
    dir: &str,
    sealed_passphrase: &[u8],
    device_name: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE sync_settings SET dir = ?1, passphrase = ?2, device_name = ?3 WHERE id = 1",
        params![dir, sealed_passphrase, device_name],
    )?;
    Ok(())
}

/// Stops sync: forgets the folder, the passphrase, the peers and files seen and the
/// records held back; keeps the device id, the clock and the conflicts.
pub fn disable(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "UPDATE sync_settings SET dir = NULL, passphrase = NULL WHERE id = 1;
         DELETE FROM sync_peers; DELETE FROM sync_files; DELETE FROM sync_unapplied;",
    )?;
    Ok(())
}

/// Saves the clock and, when given, the times of the last write and merge (now).
pub fn save_progress(
    conn: &Connection,
    clock: u64,
    wrote: bool,
    merged: bool,
) -> Result<(), StoreError> {
    let now = now_timestamp();
    conn.execute(
        "UPDATE sync_settings SET clock = max(clock, ?1), \
         last_write_at = CASE WHEN ?2 THEN ?4 ELSE last_write_at END, \
         last_merge_at = CASE WHEN ?3 THEN ?4 ELSE last_merge_at END WHERE id = 1",
        params![clock as i64, wrote, merged, now],
    )?;
    Ok(())
}

/// A peer as seen in the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub device_id: String,
    pub device_name: String,
    pub last_seen_at: String,
    pub records: u64,
}

pub fn peers(conn: &Connection) -> Result<Vec<Peer>, StoreError> {
    let mut statement = conn.prepare(
        "SELECT device_id, device_name, last_seen_at, records FROM sync_peers ORDER BY device_id",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(Peer {
            device_id: row.get(0)?,
            device_name: row.get(1)?,
            last_seen_at: row.get(2)?,
            records: row.get::<_, i64>(3)? as u64,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn save_peer(
    conn: &Connection,
    device_id: &str,
    name: &str,
    records: u64,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO sync_peers (device_id, device_name, last_seen_at, records) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (device_id) DO UPDATE SET \
         device_name = excluded.device_name, last_seen_at = excluded.last_seen_at, \
         records = excluded.records",
        params![device_id, name, now_timestamp(), records as i64],
    )?;
    Ok(())
}

/// What each file read looked like (`size:mtime`), by file name.
pub fn files_seen(conn: &Connection) -> Result<BTreeMap<String, String>, StoreError> {
    let mut statement = conn.prepare("SELECT name, seen FROM sync_files")?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn save_file_seen(conn: &Connection, name: &str, seen: &str) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO sync_files (name, seen) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET seen = excluded.seen",
        params![name, seen],
    )?;
    Ok(())
}

/// The records held back, with why.
pub fn unapplied(conn: &Connection) -> Result<BTreeMap<RecordKey, String>, StoreError> {
    let mut statement = conn.prepare("SELECT kind, id, problem FROM sync_unapplied")?;
    let rows = statement.query_map([], |row| Ok(((row.get(0)?, row.get(1)?), row.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records `applied` leave the held-back list; `held` join it.
pub fn save_unapplied(
    conn: &Connection,
    applied: &[RecordKey],
    held: &[(RecordKey, String)],
) -> Result<(), StoreError> {
    let mut remove =
        conn.prepare_cached("DELETE FROM sync_unapplied WHERE kind = ?1 AND id = ?2")?;
    for (kind, id) in applied {
        remove.execute(params![kind, id])?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO sync_unapplied (kind, id, problem) VALUES (?1, ?2, ?3) \
         ON CONFLICT (kind, id) DO UPDATE SET problem = excluded.problem",
    )?;
    for ((kind, id), problem) in held {
        insert.execute(params![kind, id, problem])?;
    }
    Ok(())
}

/// A conflict as kept: the sides as JSON text (`{"value", "device_id", "at"}`).
#[derive(Debug, Clone)]
pub struct StoredConflict {
    pub detected_at: String,
    pub kind: String,
    pub id: String,
    pub field: String,
    pub winner: String,
    pub loser: String,
}

pub fn add_conflicts(conn: &Connection, conflicts: &[StoredConflict]) -> Result<(), StoreError> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO sync_conflicts (detected_at, kind, id, field, winner, loser) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for c in conflicts {
        insert.execute(params![
            c.detected_at,
            c.kind,
            c.id,
            c.field,
            c.winner,
            c.loser
        ])?;
    }
    conn.execute(
        "DELETE FROM sync_conflicts WHERE seq <= (SELECT max(seq) FROM sync_conflicts) - ?1",
        [CONFLICTS_KEPT],
    )?;
    Ok(())
}

/// The conflicts kept, newest first.
pub fn conflicts(conn: &Connection) -> Result<Vec<StoredConflict>, StoreError> {
    let mut statement = conn.prepare(
        "SELECT detected_at, kind, id, field, winner, loser FROM sync_conflicts ORDER BY seq DESC",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(StoredConflict {
            detected_at: row.get(0)?,
            kind: row.get(1)?,
            id: row.get(2)?,
            field: row.get(3)?,
            winner: row.get(4)?,
            loser: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn conflict_count(conn: &Connection) -> Result<u64, StoreError> {
    Ok(
        conn.query_row("SELECT count(*) FROM sync_conflicts", [], |row| {
            row.get::<_, i64>(0)
        })? as u64,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
