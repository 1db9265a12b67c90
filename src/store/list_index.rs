//! What the host list keeps in memory between requests, beside the one connection:
//! - `Order`: every host's `seq` in one sort's ascending order, read from the sort's index
//!   in one pass. A deep page is a slice of it, and a filtered page walks it, testing each
//!   host against the filter's set, instead of re-reading an index from the start (OFFSET)
//!   or sorting every match. A host added, deleted or changed in a sort key is moved to its
//!   place by binary search (reading the keys it passes), so a write costs the next list
//!   about 0.1 ms per order instead of a new read of the index (8-10 ms at 100,000 hosts).
//! - `SearchText`: each host's lowercased name and hostname, scanned for the substring of a
//!   search (any length: 1-2 characters too, which no trigram index answers). Temp triggers
//!   (per connection, never in the file) note the `seq` of every host added, deleted or
//!   renamed, and the next search re-reads only those rows.
//!
//! - Recent sets (of a search term or a tag) and list page bodies, for repeated queries.
//!
//! Invariants: nothing here is used unless it matches the connection's current state.
//! Orders and the search text carry `data_version` (another connection's commit forces a
//! full re-read) and are patched from their change logs (temp tables the triggers fill)
//! before every use; sets and pages carry the connection's `total_changes` too, so any
//! change at all drops them. No secret is ever read into these structures.

use std::collections::HashSet;
use std::sync::Arc;

use rusqlite::Connection;

use crate::model::host::{Direction, Sort};
use crate::store::{hosts, StoreError};

/// Creates the changed-host table and its triggers in the connection's temp schema.
const CREATE_CHANGE_LOG: &str = "
    CREATE TEMP TABLE IF NOT EXISTS list_changed_hosts (seq INTEGER PRIMARY KEY);
    CREATE TEMP TABLE IF NOT EXISTS list_reordered_hosts (seq INTEGER PRIMARY KEY);
    CREATE TEMP TRIGGER IF NOT EXISTS list_changed_on_insert AFTER INSERT ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts (seq) VALUES (new.seq);
        INSERT OR IGNORE INTO list_reordered_hosts (seq) VALUES (new.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_changed_on_delete AFTER DELETE ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts (seq) VALUES (old.seq);
        INSERT OR IGNORE INTO list_reordered_hosts (seq) VALUES (old.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_changed_on_rename
        AFTER UPDATE OF name, name_key, hostname ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts (seq) VALUES (new.seq);
        INSERT OR IGNORE INTO list_reordered_hosts (seq) VALUES (new.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_changed_on_sort_keys
        AFTER UPDATE OF id, created_at, last_used_at ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_reordered_hosts (seq) VALUES (new.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_changed_on_renumber AFTER UPDATE OF seq ON main.hosts
    BEGIN
        INSERT OR IGNORE INTO list_changed_hosts (seq) VALUES (old.seq), (new.seq);
        INSERT OR IGNORE INTO list_reordered_hosts (seq) VALUES (old.seq), (new.seq);
    END;";
const SELECT_REORDERED: &str = "SELECT seq FROM list_reordered_hosts";
const CLEAR_REORDERED: &str = "DELETE FROM list_reordered_hosts";
/// Every sort key of one host (store::hosts `order_by`), or no row when it was deleted.
const SELECT_SORT_KEYS: &str =
    "SELECT name_key, hostname, created_at, last_used_at, id FROM main.hosts WHERE seq = ?1";

/// Read the kept orders again instead of moving hosts once more than this many changed: a
/// move costs a scan and a shift of the order (about 0.1 ms at 100,000 hosts), a read 8-10 ms.
const MOVE_LIMIT: usize = 64;
const SELECT_CHANGED: &str = "SELECT c.seq, h.name_key, h.hostname FROM list_changed_hosts AS c \
     LEFT JOIN main.hosts AS h ON h.seq = c.seq";
const COUNT_CHANGED: &str = "SELECT count(*) FROM list_changed_hosts";
const CLEAR_CHANGED: &str = "DELETE FROM list_changed_hosts";
const SELECT_ALL_TEXT: &str = "SELECT seq, name_key, hostname FROM main.hosts ORDER BY seq";
const COUNT_HOSTS: &str = "SELECT host_count FROM main.host_total";
const DATA_VERSION: &str = "PRAGMA data_version";

/// From this many hosts a search scans on two threads (a thread costs about 50 µs to start;
/// the scan about 15 ns a host).
const PARALLEL_SCAN_FROM: usize = 20_000;

/// Re-read the whole search text instead of patching it once this share (1/n) of the
/// hosts changed since the last search.
const PATCH_LIMIT_DIVISOR: usize = 8;

/// Sets up the connection's change log. Call once per connection, after migrations.
pub fn install(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(CREATE_CHANGE_LOG)?;
    Ok(())
}

/// The connection's state an in-memory structure was read at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    changes: u64,
    data_version: i64,
}

/// The connection's state now: any change by it (`total_changes`) or by another connection
/// (`data_version`) moves it.
fn stamp(conn: &Connection) -> Result<Stamp, StoreError> {
    Ok(Stamp {
        changes: conn.total_changes(),
        data_version: data_version(conn)?,
    })
}

fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(DATA_VERSION)?
        .query_row([], |row| row.get(0))?)
}

/// The list's in-memory structures. Lives beside the connection (`Db`), and is only
/// touched while the connection's lock is held.
#[derive(Default)]
pub struct ListIndex {
    orders: Vec<(Sort, Order)>,
    /// `data_version` when `orders` were read; they are patched from their log since.
    orders_version: Option<i64>,
    /// The sets of the last few searches and tags, newest last.
    recent_sets: Vec<(SetKey, Arc<SeqSet>)>,
    /// Bodies of recent list pages, by canonical query, and their total size.
    pages: Vec<(String, Arc<[u8]>)>,
    page_bytes: usize,
    /// When `orders`, `recent_sets` and `pages` were read.
    stamp: Option<Stamp>,
    search: Option<SearchText>,
}

/// What a kept set of hosts is the answer to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetKey {
    Search(String),
    Tag(String),
}

/// Sets kept for repeated queries (a search box re-sends a term; a tree click repeats): at
/// most 12.5 KB each at 100,000 hosts.
const RECENT_SETS: usize = 8;

/// Bodies kept for repeated queries (host list pages, the group tree): at most this many,
/// this many bytes in all, each at most half of that (a 50-host page is about 25 KB, the
/// tree of 2,000 groups 576 KiB).
const KEPT_PAGES: usize = 16;
const KEPT_PAGE_BYTES: usize = 2 << 20;

impl std::fmt::Debug for ListIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListIndex")
            .field("orders", &self.orders.len())
            .field("search_slots", &self.search.as_ref().map(|s| s.seqs.len()))
            .finish()
    }
}

impl ListIndex {
    /// Every host's `seq` in `sort`'s ascending order: the kept one, patched to the current
    /// state, or read now.
    pub fn order(&mut self, conn: &Connection, sort: Sort) -> Result<&Order, StoreError> {
        self.patch_orders(conn)?;
        let position = match self.orders.iter().position(|(kept, _)| *kept == sort) {
            Some(position) => position,
            None => {
                self.orders.push((sort, Order::read(conn, sort)?));
                self.orders.len() - 1
            }
        };
        Ok(&self.orders[position].1)
    }

    /// Brings the kept orders to the current state: moves each host the log names, or drops
    /// them all (another connection wrote, or too much changed). Empties the log either way.
    fn patch_orders(&mut self, conn: &Connection) -> Result<(), StoreError> {
        let version = data_version(conn)?;
        let changed: Vec<i64> = conn
            .prepare_cached(SELECT_REORDERED)?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        if self.orders_version != Some(version) || changed.len() > MOVE_LIMIT {
            self.orders.clear();
            self.orders_version = Some(version);
        }
        if changed.is_empty() {
            return Ok(());
        }
        let mut keys = conn.prepare_cached(SELECT_SORT_KEYS)?;
        let mut placed = true;
        for (sort, order) in &mut self.orders {
            for seq in &changed {
                if placed {
                    placed = order.relocate(*seq, |seq| SortKey::read(&mut keys, *sort, seq))?;
                }
            }
        }
        if !placed {
            self.orders.clear();
        }
        self.empty_log(conn, CLEAR_REORDERED)
    }

    /// Empties one of this index's change logs. The DELETE counts in the connection's
    /// `total_changes` but changes no host: what was current before it stays current.
    fn empty_log(&mut self, conn: &Connection, clear: &str) -> Result<(), StoreError> {
        let before = stamp(conn)?;
        conn.prepare_cached(clear)?.execute([])?;
        if self.stamp == Some(before) {
            self.stamp = Some(stamp(conn)?);
        }
        Ok(())
    }

    /// Drops what was read before the connection's current state.
    fn refresh(&mut self, conn: &Connection) -> Result<(), StoreError> {
        let now = stamp(conn)?;
        if self.stamp != Some(now) {
            self.recent_sets.clear();
            self.pages.clear();
            self.page_bytes = 0;
            self.stamp = Some(now);
        }
        Ok(())
    }

    /// The body of a list page answered for `key` at the current state, if one was kept.
    pub fn kept_page(
        &mut self,
        conn: &Connection,
        key: &str,
    ) -> Result<Option<Arc<[u8]>>, StoreError> {
        self.refresh(conn)?;
        Ok(self
            .pages
            .iter()
            .find(|(kept, _)| kept == key)
            .map(|(_, body)| Arc::clone(body)))
    }

    /// Keeps the body just answered for `key`, read at the current state (the caller has
    /// held the connection's lock since it read it). Only bodies without secrets are kept:
    /// host list pages (has_password is a flag) and the group tree.
    pub fn keep_page(
        &mut self,
        conn: &Connection,
        key: String,
        body: Arc<[u8]>,
    ) -> Result<(), StoreError> {
        self.refresh(conn)?;
        if body.len() > KEPT_PAGE_BYTES / 2 {
            return Ok(());
        }
        while self.pages.len() >= KEPT_PAGES || self.page_bytes + body.len() > KEPT_PAGE_BYTES {
            let (_, dropped) = self.pages.remove(0);
            self.page_bytes -= dropped.len();
        }
        self.page_bytes += body.len();
        self.pages.push((key, body));
        Ok(())
    }

    /// The set `key` names: kept from a recent query at the current state, or read by
    /// `read` now (and kept).
    pub fn set(
        &mut self,
        conn: &Connection,
        key: SetKey,
        read: impl FnOnce(&mut ListIndex) -> Result<Vec<i64>, StoreError>,
    ) -> Result<Arc<SeqSet>, StoreError> {
        self.refresh(conn)?;
        if let Some((_, set)) = self.recent_sets.iter().find(|(kept, _)| *kept == key) {
            return Ok(Arc::clone(set));
        }
        let set = Arc::new(SeqSet::new(&read(self)?));
        if self.recent_sets.len() >= RECENT_SETS {
            self.recent_sets.remove(0);
        }
        self.recent_sets.push((key, Arc::clone(&set)));
        Ok(set)
    }

    /// The `seq`s of the hosts whose name or hostname contains `term`, compared in
    /// lowercase (README, Hosts: case-insensitive substring, no wildcards). In no order.
    pub fn search(&mut self, conn: &Connection, term: &str) -> Result<Vec<i64>, StoreError> {
        let version = data_version(conn)?;
        let reusable = match &self.search {
            Some(text) if text.data_version == version => {
                let changed: i64 = conn
                    .prepare_cached(COUNT_CHANGED)?
                    .query_row([], |row| row.get(0))?;
                usize::try_from(changed).unwrap_or(usize::MAX)
                    <= text.seqs.len() / PATCH_LIMIT_DIVISOR
            }
            _ => false,
        };
        let text = match (reusable, self.search.take()) {
            (true, Some(mut text)) => match text.patch(conn)? {
                true => text,
                false => SearchText::read(conn, version)?,
            },
            _ => SearchText::read(conn, version)?,
        };
        self.empty_log(conn, CLEAR_CHANGED)?;
        let needle = term.to_lowercase();
        let found = text.matching(&needle);
        self.search = Some(text);
        Ok(found)
    }
}

/// One sort's ascending order: `seqs[..nulls_from]` have a sort key, the rest (only
/// `last_used_at` has them: never-used hosts) do not, ordered by id.
#[derive(Debug)]
pub struct Order {
    seqs: Vec<i64>,
    nulls_from: usize,
}

impl Order {
    fn read(conn: &Connection, sort: Sort) -> Result<Order, StoreError> {
        // The list's own ascending ORDER BY and index (store::hosts), and whether the host
        // has no sort key (only `last_used_at` can lack one).
        let keyless = match sort {
            Sort::LastUsedAt => "last_used_at IS NULL",
            Sort::Name | Sort::Hostname | Sort::CreatedAt => "0",
        };
        let sql = format!(
            "SELECT seq, {keyless} FROM hosts INDEXED BY {} ORDER BY {}",
            hosts::sort_index(sort, Direction::Asc),
            hosts::order_by(sort, Direction::Asc)
        );
        let mut seqs = Vec::new();
        let mut nulls_from = None;
        let mut statement = conn.prepare_cached(&sql)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            if nulls_from.is_none() && row.get::<_, bool>(1)? {
                nulls_from = Some(seqs.len());
            }
            seqs.push(row.get(0)?);
        }
        let nulls_from = nulls_from.unwrap_or(seqs.len());
        Ok(Order { seqs, nulls_from })
    }

    /// Moves host `seq` to its place: takes it out, and puts it back (unless it was
    /// deleted) where a binary search over the keys `key_of` reads puts it. `Ok(false)`: a
    /// key cannot be compared here (a non-text value); read the order again instead.
    fn relocate(
        &mut self,
        seq: i64,
        mut key_of: impl FnMut(i64) -> Result<Found, StoreError>,
    ) -> Result<bool, StoreError> {
        if let Some(position) = self.seqs.iter().position(|kept| *kept == seq) {
            self.seqs.remove(position);
            if position < self.nulls_from {
                self.nulls_from -= 1;
            }
        }
        let (key, has_key) = match key_of(seq)? {
            Found::Key { key, has_key } => (key, has_key),
            Found::Deleted => return Ok(true),
            Found::Uncomparable => return Ok(false),
        };
        let (mut low, mut high) = match has_key {
            true => (0, self.nulls_from),
            false => (self.nulls_from, self.seqs.len()),
        };
        while low < high {
            let middle = low + (high - low) / 2;
            let Found::Key { key: other, .. } = key_of(self.seqs[middle])? else {
                return Ok(false);
            };
            match other < key {
                true => low = middle + 1,
                false => high = middle,
            }
        }
        self.seqs.insert(low, seq);
        if has_key {
            self.nulls_from += 1;
        }
        Ok(true)
    }

    /// The hosts in `direction`. Descending reverses both parts but keeps the hosts without
    /// a key last (README, Hosts: never-used hosts last in both orders).
    pub fn iter(&self, direction: Direction) -> impl Iterator<Item = i64> + '_ {
        let (keyed, nulls) = self.seqs.split_at(self.nulls_from);
        let (ascending, descending) = match direction {
            Direction::Asc => (Some(self.seqs.iter()), None),
            Direction::Desc => (None, Some(keyed.iter().rev().chain(nulls.iter().rev()))),
        };
        ascending
            .into_iter()
            .flatten()
            .chain(descending.into_iter().flatten())
            .copied()
    }

    /// Up to `limit` hosts of `filter`, skipping the first `offset` of them, in `direction`.
    pub fn page(
        &self,
        direction: Direction,
        offset: u64,
        limit: u64,
        filter: impl Fn(i64) -> bool,
    ) -> Vec<i64> {
        let mut skipped = 0;
        let mut page = Vec::new();
        for seq in self.iter(direction) {
            if page.len() as u64 >= limit {
                break;
            }
            if !filter(seq) {
                continue;
            }
            match skipped < offset {
                true => skipped += 1,
                false => page.push(seq),
            }
        }
        page
    }

    /// `limit` hosts after the first `offset`, unfiltered: a slice, whatever the depth.
    pub fn slice(&self, direction: Direction, offset: u64, limit: u64) -> Vec<i64> {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        self.iter(direction).skip(offset).take(limit).collect()
    }
}

/// A host's place in one sort, compared as SQLite orders it (store::hosts `order_by`):
/// `primary` is the sort column's text, byte for byte (BINARY), or ASCII-lowercased for
/// the hostname (NOCASE folds ASCII only, then compares bytes and length, as this does);
/// ties go by `id`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    primary: Vec<u8>,
    id: Vec<u8>,
}

/// What reading a host's sort key found.
enum Found {
    /// `has_key`: false only for a never-used host under `last_used_at` (placed last).
    Key {
        key: SortKey,
        has_key: bool,
    },
    Deleted,
    /// A value that is not text: SQLite would order it by type first.
    Uncomparable,
}

impl SortKey {
    fn read(
        keys: &mut rusqlite::CachedStatement<'_>,
        sort: Sort,
        seq: i64,
    ) -> Result<Found, StoreError> {
        use rusqlite::types::ValueRef;
        let mut rows = keys.query([seq])?;
        let Some(row) = rows.next()? else {
            return Ok(Found::Deleted);
        };
        let column = match sort {
            Sort::Name => 0,
            Sort::Hostname => 1,
            Sort::CreatedAt => 2,
            Sort::LastUsedAt => 3,
        };
        let (primary, id) = (row.get_ref(column)?, row.get_ref(4)?);
        let (ValueRef::Text(id), ValueRef::Text(_) | ValueRef::Null) = (id, primary) else {
            return Ok(Found::Uncomparable);
        };
        let (primary, has_key) = match (primary, sort) {
            (ValueRef::Text(text), Sort::Hostname) => (text.to_ascii_lowercase(), true),
            (ValueRef::Text(text), _) => (text.to_vec(), true),
            (_, Sort::LastUsedAt) => (Vec::new(), false),
            _ => return Ok(Found::Uncomparable),
        };
        let key = SortKey {
            primary,
            id: id.to_vec(),
        };
        Ok(Found::Key { key, has_key })
    }
}

/// A set of `seq`s: a bitmap when they are dense enough (the usual case, as SQLite hands
/// out `seq`s in sequence), a hash set otherwise.
pub enum SeqSet {
    Bits(Vec<u64>, u64),
    Hashed(HashSet<i64>),
}

impl SeqSet {
    /// How many `seq`s the set holds.
    pub fn len(&self) -> u64 {
        match self {
            SeqSet::Bits(_, count) => *count,
            SeqSet::Hashed(set) => set.len() as u64,
        }
    }

    /// The `seq`s, in no particular order.
    pub fn to_vec(&self) -> Vec<i64> {
        match self {
            SeqSet::Bits(bits, _) => {
                let mut seqs = Vec::new();
                for (word_index, word) in bits.iter().enumerate() {
                    let mut word = *word;
                    while word != 0 {
                        let bit = i64::from(word.trailing_zeros());
                        seqs.push(word_index as i64 * 64 + bit);
                        word &= word - 1;
                    }
                }
                seqs
            }
            SeqSet::Hashed(set) => set.iter().copied().collect(),
        }
    }

    pub fn new(seqs: &[i64]) -> SeqSet {
        let max = seqs.iter().copied().max().unwrap_or(0);
        let dense = seqs.iter().all(|seq| *seq >= 0)
            && u64::try_from(max).unwrap_or(u64::MAX) / 64 <= (seqs.len() as u64 + 1024) * 64;
        match dense {
            true => {
                let words = usize::try_from(max / 64 + 1).unwrap_or(0);
                let mut bits = vec![0u64; words];
                let mut count = 0;
                for seq in seqs.iter().filter(|seq| **seq >= 0) {
                    let word = (*seq / 64) as usize;
                    count += u64::from(bits[word] & (1 << (seq % 64)) == 0);
                    bits[word] |= 1 << (seq % 64);
                }
                SeqSet::Bits(bits, count)
            }
            false => SeqSet::Hashed(seqs.iter().copied().collect()),
        }
    }

    pub fn contains(&self, seq: i64) -> bool {
        match self {
            SeqSet::Bits(bits, _) => {
                seq >= 0
                    && usize::try_from(seq / 64)
                        .ok()
                        .and_then(|word| bits.get(word))
                        .is_some_and(|word| word & (1 << (seq % 64)) != 0)
            }
            SeqSet::Hashed(set) => set.contains(&seq),
        }
    }
}

/// Lowercased `name_key` and hostname of every host, joined by a NUL (which neither a
/// stored name nor a search term holds), by `seq`. The texts sit in one buffer, scanned in
/// one sweep. Slots stay in ascending `seq` order (SQLite gives a new host a `seq` above
/// every other), so a host is found by binary search; a changed host's new text is
/// appended, a deleted host's slot emptied, and both kinds of waste dropped once they are
/// half the buffer. About 60 bytes a host.
struct SearchText {
    data_version: i64,
    seqs: Vec<i64>,
    /// Byte range of each slot's text in `buffer`; empty for a deleted host.
    spans: Vec<(u32, u32)>,
    buffer: String,
    /// Bytes of `buffer` no slot points at.
    garbage: usize,
}

/// A host the search text cannot place without reading everything again.
struct Unplaceable;

impl SearchText {
    /// No hosts yet, with room for `hosts` of them (about 40 bytes of text each).
    fn empty(data_version: i64, hosts: usize) -> SearchText {
        SearchText {
            data_version,
            seqs: Vec::with_capacity(hosts),
            spans: Vec::with_capacity(hosts),
            buffer: String::with_capacity(hosts.saturating_mul(40)),
            garbage: 0,
        }
    }

    fn read(conn: &Connection, data_version: i64) -> Result<SearchText, StoreError> {
        let hosts: i64 = conn
            .prepare_cached(COUNT_HOSTS)?
            .query_row([], |row| row.get(0))?;
        let mut text = SearchText::empty(data_version, usize::try_from(hosts).unwrap_or(0));
        {
            let mut statement = conn.prepare_cached(SELECT_ALL_TEXT)?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                let name: &str = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                let hostname: &str = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
                text.put(row.get(0)?, name, hostname)
                    .map_err(|Unplaceable| too_large())?;
            }
        }
        Ok(text)
    }

    /// Re-reads the hosts the triggers noted since the last read (the caller then empties
    /// the log). `Ok(false)`: a host could not be placed; read everything again instead.
    fn patch(&mut self, conn: &Connection) -> Result<bool, StoreError> {
        {
            let mut statement = conn.prepare_cached(SELECT_CHANGED)?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(0)?;
                let name: Option<String> = row.get(1)?;
                let hostname: Option<String> = row.get(2)?;
                let placed = match (name, hostname) {
                    (Some(name), Some(hostname)) => self.put(seq, &name, &hostname),
                    _ => {
                        self.remove(seq);
                        Ok(())
                    }
                };
                if placed.is_err() {
                    return Ok(false);
                }
            }
        }
        if self.garbage > self.buffer.len() / 2 {
            self.compact();
        }
        Ok(true)
    }

    /// `name_key` is already lowercase (Rust's Unicode lowercase, model::host); hostnames
    /// are ASCII, lowercased here the same way.
    fn put(&mut self, seq: i64, name_key: &str, hostname: &str) -> Result<(), Unplaceable> {
        let slot = self.seqs.binary_search(&seq);
        if let Err(slot) = slot {
            if slot != self.seqs.len() {
                return Err(Unplaceable);
            }
        }
        let start = u32::try_from(self.buffer.len()).map_err(|_| Unplaceable)?;
        self.buffer.push_str(name_key);
        self.buffer.push('\0');
        self.buffer
            .extend(hostname.chars().flat_map(char::to_lowercase));
        let end = u32::try_from(self.buffer.len()).map_err(|_| Unplaceable)?;
        match slot {
            Ok(slot) => {
                let old = std::mem::replace(&mut self.spans[slot], (start, end));
                self.garbage += (old.1 - old.0) as usize;
            }
            Err(_) => {
                self.seqs.push(seq);
                self.spans.push((start, end));
            }
        }
        Ok(())
    }

    fn remove(&mut self, seq: i64) {
        if let Ok(slot) = self.seqs.binary_search(&seq) {
            let old = std::mem::take(&mut self.spans[slot]);
            self.garbage += (old.1 - old.0) as usize;
        }
    }

    /// Drops deleted hosts' slots and every byte no slot points at.
    fn compact(&mut self) {
        let mut buffer = String::with_capacity(self.buffer.len() - self.garbage);
        let mut seqs = Vec::with_capacity(self.seqs.len());
        let mut spans = Vec::with_capacity(self.spans.len());
        for (seq, span) in self.seqs.iter().zip(&self.spans) {
            let Some(text) = self.buffer.get(span.0 as usize..span.1 as usize) else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            let start = buffer.len() as u32;
            buffer.push_str(text);
            seqs.push(*seq);
            spans.push((start, buffer.len() as u32));
        }
        self.buffer = buffer;
        self.seqs = seqs;
        self.spans = spans;
        self.garbage = 0;
    }

    /// `needle` is already lowercase and not empty. A needle holding the separator
    /// matches nothing.
    fn matching(&self, needle: &str) -> Vec<i64> {
        if needle.contains('\0') {
            return Vec::new();
        }
        if self.seqs.len() < PARALLEL_SCAN_FROM {
            return self.matching_in(needle, 0..self.seqs.len());
        }
        // The scan is most of a new term's cost (about 15 ns a host): the first half on a
        // thread of its own, the second here. A thread that cannot start, or fails, leaves
        // its half to this one.
        let middle = self.seqs.len() / 2;
        std::thread::scope(|scope| {
            let first = std::thread::Builder::new()
                .name("search-scan".into())
                .spawn_scoped(scope, || self.matching_in(needle, 0..middle));
            let mut second = self.matching_in(needle, middle..self.seqs.len());
            let mut found = match first.map(|handle| handle.join()) {
                Ok(Ok(found)) => found,
                _ => self.matching_in(needle, 0..middle),
            };
            found.append(&mut second);
            found
        })
    }

    /// `matching` over the slots in `range`.
    fn matching_in(&self, needle: &str, range: std::ops::Range<usize>) -> Vec<i64> {
        let (Some(spans), Some(seqs)) = (self.spans.get(range.clone()), self.seqs.get(range))
        else {
            return Vec::new();
        };
        let texts = spans.iter().map(|span| {
            self.buffer
                .get(span.0 as usize..span.1 as usize)
                .unwrap_or_default()
        });
        match needle.as_bytes() {
            // One byte (an ASCII character): a plain loop beats memchr's setup on ~40-byte
            // texts.
            [byte] => texts
                .zip(seqs)
                .filter(|(text, _)| text.as_bytes().iter().any(|b| b == byte))
                .map(|(_, seq)| *seq)
                .collect(),
            _ => texts
                .zip(seqs)
                .filter(|(text, _)| text.contains(needle))
                .map(|(_, seq)| *seq)
                .collect(),
        }
    }
}

fn too_large() -> StoreError {
    StoreError::Sqlite("the hosts' names and hostnames exceed the search text's 4 GiB".into())
}

#[cfg(test)]
mod tests {
    use crate::store::list_index::{SearchText, SeqSet};

    /// The search text finds what it holds after renames, deletes, re-adds and
    /// compaction, and refuses (for a full re-read) a host it cannot place in order.
    #[test]
    fn search_text_follows_puts_and_removes_through_compaction() {
        let mut text = SearchText::empty(0, 0);
        for (seq, name) in [(1, "web-1"), (2, "db-2"), (3, "web-3")] {
            assert!(text.put(seq, name, "Host.Example").is_ok());
        }
        assert_eq!(text.matching("web"), vec![1, 3]);
        assert_eq!(
            text.matching("host.ex"),
            vec![1, 2, 3],
            "hostnames are lowercased"
        );
        assert_eq!(
            text.matching("1\0h"),
            Vec::<i64>::new(),
            "no match across the fields"
        );
        assert!(text.put(1, "renamed", "h").is_ok());
        text.remove(3);
        assert_eq!(text.matching("web"), Vec::<i64>::new());
        assert!(text.put(3, "web-again", "h").is_ok());
        assert!(text.put(9, "web-9", "h").is_ok());
        assert!(
            text.put(5, "web-5", "h").is_err(),
            "a seq below the last one is unplaceable"
        );
        text.remove(2);
        text.compact();
        assert_eq!(text.garbage, 0);
        assert_eq!(text.seqs, vec![1, 3, 9]);
        assert_eq!(text.matching("web"), vec![3, 9]);
        assert_eq!(text.matching("renamed"), vec![1]);
    }

    /// From `PARALLEL_SCAN_FROM` hosts the scan runs on two threads, and finds
    /// exactly what one pass over every host finds, for one-byte, longer and non-ASCII terms.
    #[test]
    fn a_scan_on_two_threads_finds_what_one_pass_finds() {
        let mut text = SearchText::empty(0, 0);
        let hosts = super::PARALLEL_SCAN_FROM as i64 + 5_000;
        for seq in 1..=hosts {
            let name = format!("näme-{seq}");
            let hostname = format!("H{}.Example.com", seq % 977);
            assert!(text.put(seq, &name, &hostname).is_ok());
        }
        for needle in ["7", "ä", "me-12", "h97.", "xyz", "e"] {
            let one_pass: Vec<i64> = (1..=hosts)
                .filter(|seq| format!("näme-{seq}\0h{}.example.com", seq % 977).contains(needle))
                .collect();
            let mut found = text.matching(needle);
            found.sort_unstable();
            assert_eq!(found, one_pass, "{needle}");
            assert_eq!(
                text.matching_in(needle, 0..text.seqs.len()).len(),
                one_pass.len()
            );
        }
    }

    /// A set answers membership and size the same whether it is a bitmap or hashed.
    #[test]
    fn seq_sets_hold_exactly_their_members_in_both_shapes() {
        let dense = SeqSet::new(&[1, 5, 64, 65, 5]);
        assert!(matches!(dense, SeqSet::Bits(..)));
        let sparse = SeqSet::new(&[3, 1 << 40]);
        assert!(matches!(sparse, SeqSet::Hashed(_)));
        let negative = SeqSet::new(&[-7, 2]);
        assert!(matches!(negative, SeqSet::Hashed(_)));
        for (set, members, outsiders) in [
            (&dense, &[1, 5, 64, 65][..], &[0, 2, 63, 66, 1000, -1][..]),
            (&sparse, &[3, 1 << 40], &[0, 4, (1 << 40) + 1]),
            (&negative, &[-7, 2], &[0, 7, -2]),
        ] {
            assert_eq!(set.len(), members.len() as u64);
            assert!(members.iter().all(|seq| set.contains(*seq)));
            assert!(!outsiders.iter().any(|seq| set.contains(*seq)));
            let mut listed = set.to_vec();
            listed.sort_unstable();
            assert_eq!(listed, members);
        }
    }
}
