//! The SQL of the list's memory: the per-connection change log the temp triggers fill, and
//! the hosts' sort and filter columns read into typed rows (`SlotRow`), a chunk or a host at
//! a time (docs/performance.md, "How the host list is answered").
//!
//! Invariants: reads only; no secret column is named; the change log lives in `temp`, per
//! connection, never in the file; our own constants are the only text formatted into SQL.

use rusqlite::{Connection, Row};

use crate::store::list::order::{id_key, time_key, NEVER, UNREADABLE};
use crate::store::StoreError;

/// The columns `SlotRow::from_row` reads. The last is what keeping the host's row as JSON
/// costs, roughly: its texts, about 430 bytes of JSON around them and 30 to keep it.
const COLUMNS: &str = "seq, id, name_key, hostname, created_at, last_used_at, group_id, \
     is_favorite, 460 + length(CAST(name || hostname || username || color || notes AS BLOB))";
/// Tags by host (the primary key's order) of the hosts from `seq` ?1 to ?2.
const SELECT_TAGS: &str = "SELECT host_seq, position, tag FROM main.host_tags \
     WHERE host_seq BETWEEN ?1 AND ?2 ORDER BY host_seq";
/// The tables whose rows are in a host's row as the list shows it, and the column that
/// names the host: a change to any of them is logged (`install`).
const LOGGED: [(&str, &str); 4] = [
    ("hosts", "seq"),
    ("host_tags", "host_seq"),
    ("host_jumps", "host_id"),
    ("host_ssh_options", "host_id"),
];

/// A host as the list's memory holds it: its sort keys, group and favorite bit.
pub struct SlotRow {
    pub seq: i64,
    pub id: u128,
    pub name_key: String,
    /// Lowercased.
    pub hostname: String,
    pub created: u64,
    pub last_used: u64,
    /// `""`: no group.
    pub group: String,
    pub favorite: bool,
    /// About what the host's row as JSON costs to keep.
    pub row_bytes: i64,
}

/// A host's tags as `(position, tag)` pairs, by `seq`.
pub struct HostTags {
    pub seq: i64,
    pub tags: Vec<(i64, String)>,
}

/// Up to `limit` hosts after `seq` `after`, in `seq` order, with their tags.
pub struct Chunk {
    pub hosts: Vec<SlotRow>,
    pub tags: Vec<HostTags>,
}

/// Sets up the connection's change logs of hosts and groups. Call once per connection,
/// after migrations.
pub fn install(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS list_changed_hosts (seq INTEGER PRIMARY KEY)",
    )?;
    for (table, column) in LOGGED {
        for (event, rows) in [("INSERT", "new"), ("DELETE", "old"), ("UPDATE", "old new")] {
            let rows: Vec<String> = rows
                .split(' ')
                .map(|row| format!("{row}.{column}"))
                .collect();
            let logged = match column {
                "host_id" => format!(
                    "SELECT seq FROM main.hosts WHERE id IN ({})",
                    rows.join(",")
                ),
                _ => format!("VALUES ({})", rows.join("), (")),
            };
            // Our own constants only: no outside text reaches this SQL.
            conn.execute_batch(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS list_{table}_{event} AFTER {event} ON \
                 main.{table} BEGIN INSERT OR IGNORE INTO list_changed_hosts {logged}; END;"
            ))?;
        }
    }
    crate::store::groups::install_change_log(conn)
}

/// Moves whenever another connection commits; this connection's writes are logged instead.
pub fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    let mut statement = conn.prepare_cached("PRAGMA data_version")?;
    Ok(statement.query_row([], |row| row.get(0))?)
}

/// The hosts the log holds, ascending.
pub fn changed_seqs(conn: &Connection) -> Result<Vec<i64>, StoreError> {
    let mut statement = conn.prepare_cached("SELECT seq FROM list_changed_hosts ORDER BY seq")?;
    let seqs = statement.query_map([], |row| row.get(0))?;
    Ok(seqs.collect::<Result<_, _>>()?)
}

/// Empties the hosts' log.
pub fn clear_changed(conn: &Connection) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM list_changed_hosts")?
        .execute([])?;
    Ok(())
}

/// The next chunk of hosts after `after`, `limit` at most.
pub fn chunk(conn: &Connection, after: i64, limit: usize) -> Result<Chunk, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM main.hosts WHERE seq > ?1 ORDER BY seq LIMIT ?2");
    let mut statement = conn.prepare_cached(&sql)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = statement.query(rusqlite::params![after, limit])?;
    let mut hosts = Vec::new();
    while let Some(row) = rows.next()? {
        hosts.push(SlotRow::from_row(row)?);
    }
    let tags = match (hosts.first(), hosts.last()) {
        (Some(first), Some(last)) => tags(conn, first.seq, last.seq)?,
        _ => Vec::new(),
    };
    Ok(Chunk { hosts, tags })
}

/// One host's row (`None`: gone) and its tags (maybe none).
pub fn host(conn: &Connection, seq: i64) -> Result<(Option<SlotRow>, HostTags), StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM main.hosts WHERE seq = ?1");
    let mut statement = conn.prepare_cached(&sql)?;
    let row = match statement.query([seq])?.next()? {
        Some(row) => Some(SlotRow::from_row(row)?),
        None => None,
    };
    let tags = tags(conn, seq, seq)?.pop();
    Ok((
        row,
        tags.unwrap_or(HostTags {
            seq,
            tags: Vec::new(),
        }),
    ))
}

/// The tags of the hosts from `first` to `last`, by host; hosts without tags are left out.
fn tags(conn: &Connection, first: i64, last: i64) -> Result<Vec<HostTags>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_TAGS)?;
    let mut rows = statement.query([first, last])?;
    let mut hosts: Vec<HostTags> = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let tag = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        let pair = (row.get::<_, i64>(1)?, tag.to_owned());
        match hosts.last_mut().filter(|host| host.seq == seq) {
            Some(host) => host.tags.push(pair),
            None => hosts.push(HostTags {
                seq,
                tags: vec![pair],
            }),
        }
    }
    Ok(hosts)
}

impl SlotRow {
    fn from_row(row: &Row<'_>) -> Result<SlotRow, StoreError> {
        let text = |column: usize| -> Result<&str, StoreError> {
            let value = row.get_ref(column)?.as_str_or_null();
            Ok(value.map_err(rusqlite::Error::from)?.unwrap_or_default())
        };
        Ok(SlotRow {
            seq: row.get(0)?,
            id: id_key(text(1)?),
            name_key: text(2)?.to_owned(),
            hostname: text(3)?.to_lowercase(),
            created: time_key(text(4)?).unwrap_or(UNREADABLE),
            last_used: time_key(text(5)?).unwrap_or(NEVER),
            group: text(6)?.to_owned(),
            favorite: row.get(7)?,
            row_bytes: row.get(8)?,
        })
    }
}
