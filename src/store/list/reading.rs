//! The SQL of the list's memory: the per-connection change log the temp triggers fill, and
//! the hosts' sort and filter columns read into typed rows (`SlotRow`), a chunk or a host at
//! a time (docs/performance.md, "How the host list is answered").
//!
//! Invariants: reads only; no secret column is named; the change log lives in `temp`, per
//! connection, never in the file; our own constants are the only text formatted into SQL.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use rusqlite::{Connection, Row};

use crate::store::list::order::{id_key, time_key, NEVER, UNREADABLE};
use crate::store::StoreError;

/// The columns `SlotRow::from_row` reads. The last is what keeping the host's row as JSON
/// costs, roughly: its texts, about 430 bytes of JSON around them and 30 to keep it.
/// Then the host's own values the query language's keys on inherited values read
/// (docs/query.md): port, username, identity, auth, whether its chain is its own, and
/// whether it has notes; never the password itself.
const COLUMNS: &str = "seq, id, name_key, hostname, created_at, last_used_at, group_id, \
     is_favorite, 460 + length(CAST(name || hostname || coalesce(username, '') || color || notes AS BLOB)), \
     port, username, identity_id, auth_type, key_id, password IS NOT NULL, jumps_set, notes <> ''";
/// Tags by host (the primary key's order) of the hosts from `seq` ?1 to ?2.
const SELECT_TAGS: &str = "SELECT host_seq, position, tag FROM main.host_tags \
     WHERE host_seq BETWEEN ?1 AND ?2 ORDER BY host_seq";
/// The jump chains of the hosts from `seq` ?1 to ?2, by host, each in order.
const SELECT_JUMPS: &str = "SELECT h.seq, j.jump_host_id FROM main.host_jumps AS j \
     JOIN main.hosts AS h ON h.id = j.host_id WHERE h.seq BETWEEN ?1 AND ?2 \
     ORDER BY h.seq, j.position";
/// Whether any host has a chain of its own, and any a forward rule of its own.
const ANY_JUMPS_OR_FORWARDS: &str = "SELECT EXISTS (SELECT 1 FROM main.host_jumps), \
     EXISTS (SELECT 1 FROM main.forwards WHERE host_id IS NOT NULL)";
/// The hosts from `seq` ?1 to ?2 that have forward rules of their own.
const SELECT_FORWARDS: &str = "SELECT DISTINCT h.seq FROM main.forwards AS f \
     JOIN main.hosts AS h ON h.id = f.host_id WHERE h.seq BETWEEN ?1 AND ?2";
/// The tables whose rows are in a host's row as the list shows it, or in what the memory
/// keeps of it (`Own`), and the column that names the host: a change to any of them is
/// logged (`install`).
const LOGGED: [(&str, &str); 5] = [
    ("hosts", "seq"),
    ("host_tags", "host_seq"),
    ("host_jumps", "host_id"),
    ("host_ssh_options", "host_id"),
    ("forwards", "host_id"),
];

/// A host as the list's memory holds it: its sort keys, group and favorite bit; its texts
/// are in its `Chunk`'s (one buffer a chunk, not a string a host).
pub struct SlotRow {
    pub seq: i64,
    pub id: u128,
    pub name_key: Range<usize>,
    /// Lowercased.
    pub hostname: Range<usize>,
    pub created: u64,
    pub last_used: u64,
    /// Its number in the chunk's `names`; `""` is no group.
    pub group: usize,
    pub favorite: bool,
    /// About what the host's row as JSON costs to keep.
    pub row_bytes: i64,
    pub own: OwnRow,
}

/// A host's own values that can be inherited (`None`: inherited), its texts numbers in its
/// chunk's `names`, and two facts the query language's `has:` reads.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OwnRow {
    pub port: Option<u16>,
    pub username: Option<usize>,
    pub identity: Option<usize>,
    pub auth_type: Option<usize>,
    pub key: Option<usize>,
    pub has_password: bool,
    /// The chain is the host's own (its hops are in the chunk's `jumps`), else inherited.
    pub jumps_set: bool,
    pub has_notes: bool,
}

/// A host's tag at a position, its name a number in the chunk's `names`.
pub struct TagRow {
    pub seq: i64,
    pub position: i64,
    pub name: usize,
}

/// Hosts in `seq` order with their tags (by host), and the texts and names they point into.
#[derive(Default)]
pub struct Chunk {
    pub hosts: Vec<SlotRow>,
    pub tags: Vec<TagRow>,
    text: String,
    pub names: Vec<String>,
    numbers: HashMap<String, usize>,
    /// Each host's own chain, hop ids as numbers in `names`, in order (hosts without one
    /// are not here).
    pub jumps: HashMap<i64, Vec<usize>>,
    /// The hosts with forward rules of their own.
    pub forwards: HashSet<i64>,
    /// Tells this chunk's `names` numbering from every other read's (0: a test's chunk).
    pub generation: u64,
}

/// The next chunk's `generation` (never 0).
fn next_generation() -> u64 {
    static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Chunk {
    /// The text at `range` of this chunk's buffer.
    pub fn text(&self, range: &Range<usize>) -> &str {
        self.text.get(range.clone()).unwrap_or_default()
    }

    fn push_text(&mut self, text: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(text);
        start..self.text.len()
    }

    fn name(&mut self, name: &str) -> usize {
        if let Some(number) = self.numbers.get(name) {
            return *number;
        }
        self.names.push(name.to_owned());
        self.numbers.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// Adds a host (never used, created at 0, its id its `seq`), for unit tests.
    #[cfg(test)]
    pub fn push_host(&mut self, seq: i64, name_key: &str, group: &str, favorite: bool) {
        let hostname = self.push_text(&format!("{name_key}.example"));
        let name_key = self.push_text(name_key);
        let group = self.name(group);
        self.hosts.push(SlotRow {
            seq,
            id: seq as u128,
            name_key,
            hostname,
            created: 0,
            last_used: NEVER,
            group,
            favorite,
            row_bytes: 0,
            own: OwnRow::default(),
        });
    }

    /// Adds a host's tag, for unit tests.
    #[cfg(test)]
    pub fn push_tag(&mut self, seq: i64, position: i64, tag: &str) {
        let name = self.name(tag);
        self.tags.push(TagRow {
            seq,
            position,
            name,
        });
    }

    /// Each host's tags in `tags`' order: `(seq, [(position, name)])`.
    pub fn tags_by_host(&self) -> impl Iterator<Item = (i64, Vec<(i64, usize)>)> + '_ {
        self.tags.chunk_by(|a, b| a.seq == b.seq).map(|tags| {
            let pairs = tags.iter().map(|tag| (tag.position, tag.name)).collect();
            (tags[0].seq, pairs)
        })
    }
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
    let mut chunk = Chunk {
        generation: next_generation(),
        ..Chunk::default()
    };
    while let Some(row) = rows.next()? {
        let host = SlotRow::from_row(row, &mut chunk)?;
        chunk.hosts.push(host);
    }
    let range = chunk
        .hosts
        .first()
        .map(|first| first.seq)
        .zip(chunk.hosts.last().map(|last| last.seq));
    if let Some((first, last)) = range {
        read_tags(conn, first, last, &mut chunk)?;
        read_jumps_and_forwards(conn, first, last, &mut chunk)?;
    }
    Ok(chunk)
}

/// One host's row (none: gone) and its tags (maybe none), as a chunk.
pub fn host(conn: &Connection, seq: i64) -> Result<Chunk, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM main.hosts WHERE seq = ?1");
    let mut statement = conn.prepare_cached(&sql)?;
    let mut chunk = Chunk {
        generation: next_generation(),
        ..Chunk::default()
    };
    if let Some(row) = statement.query([seq])?.next()? {
        let host = SlotRow::from_row(row, &mut chunk)?;
        chunk.hosts.push(host);
    }
    read_tags(conn, seq, seq, &mut chunk)?;
    read_jumps_and_forwards(conn, seq, seq, &mut chunk)?;
    Ok(chunk)
}

/// The own chains and the hosts with forward rules of the hosts from `first` to `last`,
/// into `chunk`.
fn read_jumps_and_forwards(
    conn: &Connection,
    first: i64,
    last: i64,
    chunk: &mut Chunk,
) -> Result<(), StoreError> {
    // Most catalogues have no chains and no host's own forward rules: then the per-host
    // lookups of the two reads below (a million at a million hosts) are skipped whole.
    let (any_jumps, any_forwards): (bool, bool) = conn
        .prepare_cached(ANY_JUMPS_OR_FORWARDS)?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    if any_jumps {
        read_jumps(conn, first, last, chunk)?;
    }
    if !any_forwards {
        return Ok(());
    }
    let mut statement = conn.prepare_cached(SELECT_FORWARDS)?;
    let seqs = statement.query_map([first, last], |row| row.get(0))?;
    for seq in seqs {
        chunk.forwards.insert(seq?);
    }
    Ok(())
}

/// The own chains of the hosts from `first` to `last`, into `chunk`.
fn read_jumps(
    conn: &Connection,
    first: i64,
    last: i64,
    chunk: &mut Chunk,
) -> Result<(), StoreError> {
    let mut statement = conn.prepare_cached(SELECT_JUMPS)?;
    let mut rows = statement.query([first, last])?;
    while let Some(row) = rows.next()? {
        let hop = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let hop = chunk.name(hop);
        chunk.jumps.entry(row.get(0)?).or_default().push(hop);
    }
    Ok(())
}

/// The tags of the hosts from `first` to `last`, by host, into `chunk`.
fn read_tags(
    conn: &Connection,
    first: i64,
    last: i64,
    chunk: &mut Chunk,
) -> Result<(), StoreError> {
    let mut statement = conn.prepare_cached(SELECT_TAGS)?;
    let mut rows = statement.query([first, last])?;
    while let Some(row) = rows.next()? {
        let tag = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        let name = chunk.name(tag);
        let (seq, position) = (row.get(0)?, row.get(1)?);
        chunk.tags.push(TagRow {
            seq,
            position,
            name,
        });
    }
    Ok(())
}

impl SlotRow {
    fn from_row(row: &Row<'_>, chunk: &mut Chunk) -> Result<SlotRow, StoreError> {
        let text = |column: usize| -> Result<&str, StoreError> {
            let value = row.get_ref(column)?.as_str_or_null();
            Ok(value.map_err(rusqlite::Error::from)?.unwrap_or_default())
        };
        let mut name = |column: usize| -> Result<Option<usize>, StoreError> {
            let value = row.get_ref(column)?.as_str_or_null();
            Ok(value
                .map_err(rusqlite::Error::from)?
                .map(|text| chunk.name(text)))
        };
        let own = OwnRow {
            port: row
                .get::<_, Option<i64>>(9)?
                .and_then(|port| u16::try_from(port).ok()),
            username: name(10)?,
            identity: name(11)?,
            auth_type: name(12)?,
            key: name(13)?,
            has_password: row.get(14)?,
            jumps_set: row.get(15)?,
            has_notes: row.get(16)?,
        };
        Ok(SlotRow {
            seq: row.get(0)?,
            id: id_key(text(1)?),
            name_key: chunk.push_text(text(2)?),
            hostname: chunk.push_text(&text(3)?.to_lowercase()),
            created: time_key(text(4)?).unwrap_or(UNREADABLE),
            last_used: time_key(text(5)?).unwrap_or(NEVER),
            group: chunk.name(text(6)?),
            favorite: row.get(7)?,
            row_bytes: row.get(8)?,
            own,
        })
    }
}
