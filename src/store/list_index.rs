//! The host list, answered from memory with one plan; store::hosts `list` reads the rows.
//!
//! Each filter becomes a set of hosts, a bitmap over slots: a group or a tag through its
//! member list, `favorite` through its bitmap, a search through one scan of the search text
//! (store::search_text; the sets of the last few terms are kept until the next change). The
//! sets intersect; the page walks the sort's kept order from the nearer end, a block of 64
//! at a time, or ranks a small set by its members' places in the order.
//!
//! Invariants: the list's order is defined here alone (`Keys::cmp`; README, API: Hosts,
//! "List"). Nothing is answered from a state older than the connection's: each use first
//! applies what the temp triggers logged (per connection, never in the file), or reads
//! everything again after another connection's commit (`data_version`). No secret is read.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde_json::value::RawValue;

use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
use crate::store::search_text::SearchText;
use crate::store::StoreError;

/// The log the triggers fill: hosts added, deleted, or changed in any column, tag, hop or
/// kept option (each is in the host's row as the list shows it).
const CREATE_CHANGE_LOG: &str = "
    CREATE TEMP TABLE IF NOT EXISTS list_changed_hosts (seq INTEGER PRIMARY KEY);
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_added AFTER INSERT ON main.hosts
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (new.seq); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_deleted AFTER DELETE ON main.hosts
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (old.seq); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_changed AFTER UPDATE ON main.hosts
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (old.seq), (new.seq); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_added AFTER INSERT ON main.host_tags
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (new.host_seq); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_dropped AFTER DELETE ON main.host_tags
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (old.host_seq); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_changed AFTER UPDATE ON main.host_tags
        BEGIN INSERT OR IGNORE INTO list_changed_hosts VALUES (old.host_seq), (new.host_seq); END;";
/// The tables whose rows are in a host's row as the list shows it, by `host_id`, and how
/// each of their triggers logs the host.
const HOST_ID_TABLES: [&str; 2] = ["host_jumps", "host_ssh_options"];
const HOST_ID_EVENTS: [(&str, &str); 3] = [
    ("INSERT", "new.host_id"),
    ("DELETE", "old.host_id"),
    ("UPDATE", "old.host_id, new.host_id"),
];
/// `Hosts::write` reads the columns after `seq`; a NULL `id` is a deleted host. The last
/// column is what keeping the host's row as JSON costs, roughly: its texts, and about 430
/// bytes of JSON around them and 30 to keep it (tags, hops and options left out).
const SELECT_HOSTS: &str = "SELECT seq, id, name_key, hostname, created_at, last_used_at, \
     group_id, is_favorite, 460 + length(CAST(name || hostname || username || color || notes \
     AS BLOB)) FROM main.hosts ORDER BY seq";
const SELECT_CHANGED_HOSTS: &str = "SELECT c.seq, h.id, h.name_key, h.hostname, h.created_at, \
     h.last_used_at, h.group_id, h.is_favorite FROM list_changed_hosts AS c \
     LEFT JOIN main.hosts AS h ON h.seq = c.seq ORDER BY c.seq";
/// The changed hosts' `seq`s alone: where they sit is found before their rows are read.
const SELECT_CHANGED_SEQS: &str = "SELECT seq FROM list_changed_hosts ORDER BY seq";
const CLEAR_CHANGED_HOSTS: &str = "DELETE FROM list_changed_hosts";
/// Tags by host (the primary key's order: no sort), of every host or of one.
const SELECT_TAGS: &str = "SELECT host_seq, position, tag FROM main.host_tags ORDER BY host_seq";
const SELECT_TAGS_OF: &str = "SELECT host_seq, position, tag FROM main.host_tags \
     WHERE host_seq = ?1";

/// A set of at most 1/`RANK_SHARE` of the hosts is ranked (a lookup per member, at a
/// random place) rather than walked (a test per host passed, in order, up to half of them).
const RANK_SHARE: usize = 8;
/// The sets of this many tags and search terms are kept, until the next change.
const KEPT_SETS: usize = 16;
/// The hosts' rows as JSON are kept while they take at most this many bytes (README,
/// "How the host list is answered").
const ROW_BYTES: usize = 64 << 20;
/// From this many hosts (every size in unit tests, so the oracle tests cover it) a walk
/// passes whole eighths of an order by their members' count, from bitmaps of each eighth's
/// slots built when first needed after a change (README, "How the host list is answered").
const EIGHTHS_FROM: usize = if cfg!(test) { 1 } else { 1 << 18 };
const SORTS: [Sort; 4] = [
    Sort::Name,
    Sort::Hostname,
    Sort::CreatedAt,
    Sort::LastUsedAt,
];
/// `last_used_at` of a never-used host (last in both orders), and a time that does not
/// parse (after any other).
const NEVER: u64 = u64::MAX;
const UNREADABLE: u64 = u64::MAX - 1;
/// No group (a slot without a host), no tags.
const NONE: u32 = u32::MAX;

/// Sets up the connection's change logs. Call once per connection, after migrations.
pub fn install(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(CREATE_CHANGE_LOG)?;
    for table in HOST_ID_TABLES {
        for (event, ids) in HOST_ID_EVENTS {
            // Our own constants only: no outside text reaches this SQL.
            conn.execute_batch(&format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS list_{table}_{event} AFTER {event} ON \
                 main.{table} BEGIN INSERT OR IGNORE INTO list_changed_hosts \
                 SELECT seq FROM main.hosts WHERE id IN ({ids}); END;"
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

/// Rows this connection changed, by triggers too: while it stays, no change log grew.
pub fn changes(conn: &Connection) -> u64 {
    conn.total_changes()
}

/// The list's memory, beside the connection (`Db`); touched only under its lock.
pub struct ListIndex {
    hosts: Option<Hosts>,
    /// `changes` after the log was last emptied.
    changes_seen: u64,
    /// At most this many bytes of rows as JSON are kept.
    row_bytes: usize,
}

impl Default for ListIndex {
    fn default() -> ListIndex {
        ListIndex::keeping_rows_up_to(ROW_BYTES)
    }
}

/// Every host by slot. Slots follow `seq` (SQLite gives a new host a `seq` above every
/// other); a deleted host's slot stays empty until everything is read again.
#[derive(Default)]
struct Hosts {
    data_version: i64,
    seqs: Vec<i64>,
    live: Bits,
    favorite: Bits,
    keys: Keys,
    /// Each slot's group number (`NONE` without a host); group `""` is no group.
    group_of: Vec<u32>,
    groups: Members,
    /// Each slot's tag numbers in the host's order, `[count, tag...]` at its offset; a
    /// replaced list is garbage until everything is read again.
    tag_at: Vec<u32>,
    tag_lists: Vec<u32>,
    tag_garbage: usize,
    tags: Members,
    /// Per sort (in `SORTS` order) every live slot ascending, and each slot's place in it,
    /// valid below the second number.
    orders: Vec<Vec<u32>>,
    ranks: Vec<(Vec<u32>, usize)>,
    /// Per sort, the slots of each eighth of its order (empty until a walk needs them).
    eighths: Vec<Vec<Bits>>,
    /// The last tags and search terms asked and their sets, the newest last.
    kept: Vec<(Kept, Bits)>,
    /// Each slot's row as the list shows it, once read (`None` again when it changes), and
    /// their bytes; empty when they would pass the `ListIndex`'s bound.
    rows: Vec<Option<Box<RawValue>>>,
    row_bytes: usize,
    keeps_rows: bool,
}

/// What a kept set is the set of.
#[derive(PartialEq)]
enum Kept {
    Tag(String),
    Search(String),
}

/// What the sorts compare, by slot.
#[derive(Default)]
struct Keys {
    text: SearchText,
    /// A UUID as a number (the order of its lowercase text, the only ids the service
    /// writes), another id as its first 16 bytes.
    ids: Vec<u128>,
    created: Vec<u64>,
    last_used: Vec<u64>,
}

/// Names (group ids, tags) by number, and each one's slots, ascending.
#[derive(Default)]
struct Members {
    index: HashMap<String, u32>,
    names: Vec<String>,
    slots: Vec<Vec<u32>>,
}

/// A set of slots.
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

/// A page's hosts in order, and the number of hosts matching.
pub type Page = (Vec<Listed>, u64);

/// A host of a page: its row as JSON, or its `seq` and tags for the rows still to read.
pub enum Listed {
    Row(Box<RawValue>),
    Unread(i64, Vec<String>),
}

impl ListIndex {
    /// A memory that keeps the hosts' rows while they take at most `row_bytes`.
    pub fn keeping_rows_up_to(row_bytes: usize) -> ListIndex {
        ListIndex {
            hosts: None,
            changes_seen: 0,
            row_bytes,
        }
    }

    /// `query`'s page in order, and how many hosts match.
    pub fn page(&mut self, conn: &Connection, query: &HostQuery) -> Result<Page, StoreError> {
        let hosts = self.current(conn)?;
        let set = hosts.matching(query);
        let total = set.as_ref().map_or_else(|| hosts.live.count(), Bits::count);
        let offset = query
            .offset()
            .and_then(|offset| usize::try_from(offset).ok());
        let Some(offset) = offset.filter(|offset| *offset < total) else {
            return Ok((Vec::new(), total as u64));
        };
        let limit = usize::try_from(query.per_page).map_or(total, |limit| limit.min(total));
        let slots = hosts.page(query, offset, limit.min(total - offset), set.as_ref());
        let page = slots.iter().map(|slot| hosts.listed(*slot));
        Ok((page.collect(), total as u64))
    }

    /// Up to `limit` live hosts from slot `from` on whose rows are not kept, and the slot
    /// after the last; none when no row is kept.
    pub fn unread(
        &mut self,
        conn: &Connection,
        from: usize,
        limit: usize,
    ) -> Result<(Vec<Listed>, usize), StoreError> {
        let hosts = self.current(conn)?;
        let mut unread = Vec::new();
        let mut slots = (from..hosts.seqs.len()).filter(|_| hosts.keeps_rows);
        for slot in slots.by_ref() {
            if hosts.live.contains(slot as u32) && hosts.rows.get(slot).is_some_and(Option::is_none)
            {
                unread.push(hosts.listed(slot as u32));
                if unread.len() == limit {
                    break;
                }
            }
        }
        Ok((unread, slots.next().unwrap_or(hosts.seqs.len())))
    }

    /// How many rows are kept.
    #[cfg(test)]
    pub fn kept_rows(&self) -> usize {
        let hosts = self.hosts.as_ref();
        hosts.map_or(0, |hosts| hosts.rows.iter().flatten().count())
    }

    /// Keeps the rows just read for `seq`s (under the lock the page was found under).
    pub fn keep(&mut self, rows: &[(i64, Box<RawValue>)]) {
        let Some(hosts) = self.hosts.as_mut().filter(|hosts| hosts.keeps_rows) else {
            return;
        };
        for (seq, row) in rows {
            if let Some(kept) = hosts
                .seqs
                .binary_search(seq)
                .ok()
                .and_then(|slot| hosts.rows.get_mut(slot))
            {
                let old = kept.replace(row.clone());
                hosts.row_bytes -= old.map_or(0, |old| old.get().len());
                hosts.row_bytes += row.get().len();
            }
        }
        if hosts.row_bytes > self.row_bytes {
            (hosts.rows, hosts.row_bytes, hosts.keeps_rows) = (Vec::new(), 0, false);
        }
    }

    /// The number of hosts directly in each group, by group id.
    pub fn group_host_counts(
        &mut self,
        conn: &Connection,
    ) -> Result<impl Fn(&str) -> u64 + '_, StoreError> {
        let hosts = self.current(conn)?;
        Ok(|id: &str| hosts.groups.of(id).len() as u64)
    }

    /// Reads everything now if it never was (start-up calls it after SERVICE_PORT).
    pub fn warm(&mut self, conn: &Connection) -> Result<(), StoreError> {
        self.current(conn).map(drop)
    }

    /// The memory at the connection's state. A failure leaves nothing behind, so the next
    /// use reads everything again.
    fn current(&mut self, conn: &Connection) -> Result<&mut Hosts, StoreError> {
        let version = data_version(conn)?;
        let fresh = changes(conn) == self.changes_seen;
        // A memory that another connection's commit made stale goes before anything is read,
        // and so does one the log cannot patch: the old and the new never sit in memory
        // together (each is about 130 MiB at a million hosts).
        let kept = self
            .hosts
            .take()
            .filter(|hosts| hosts.data_version == version);
        let hosts = match kept {
            Some(hosts) if fresh => return Ok(self.hosts.insert(hosts)),
            Some(mut hosts) => match hosts.patch(conn)? {
                true => hosts,
                false => {
                    drop(hosts);
                    Hosts::read(conn, version, self.row_bytes)?
                }
            },
            None => Hosts::read(conn, version, self.row_bytes)?,
        };
        conn.prepare_cached(CLEAR_CHANGED_HOSTS)?.execute([])?;
        self.changes_seen = changes(conn);
        Ok(self.hosts.insert(hosts))
    }
}

impl Hosts {
    /// Every host and tag, and the orders sorted from them; the rows are read when pages
    /// show them, and kept when all of them would take at most `row_bytes`.
    fn read(conn: &Connection, data_version: i64, row_bytes: usize) -> Result<Hosts, StoreError> {
        let mut hosts = Hosts {
            data_version,
            ..Hosts::default()
        };
        hosts.groups.intern("");
        let mut statement = conn.prepare_cached(SELECT_HOSTS)?;
        let mut rows = statement.query([])?;
        let mut bytes = 0;
        while let Some(row) = rows.next()? {
            let slot = hosts
                .slot_of(row.get(0)?)
                .ok_or_else(|| too_large("slots"))?;
            hosts.write(slot, Some(row))?;
            bytes += row.get::<_, i64>(8)?;
        }
        hosts.keeps_rows = usize::try_from(bytes).is_ok_and(|bytes| bytes <= row_bytes);
        if hosts.keeps_rows {
            hosts.rows.resize(hosts.seqs.len(), None);
        }
        hosts.read_tags(conn, None)?;
        let keys = &hosts.keys;
        let sorted = SORTS.iter().map(|sort| {
            let live = hosts.live.ones();
            let mut keyed: Vec<_> = live.map(|slot| (keys.prefix(*sort, slot), slot)).collect();
            // The prefix settles most comparisons, so the sort mostly reads one array.
            keyed.sort_unstable_by(|(x, a), (y, b)| x.cmp(y).then_with(|| keys.cmp(*sort, *a, *b)));
            keyed.into_iter().map(|(_, slot)| slot).collect()
        });
        hosts.orders = sorted.collect();
        hosts.ranks = SORTS.iter().map(|_| (Vec::new(), 0)).collect();
        hosts.eighths = SORTS.iter().map(|_| Vec::new()).collect();
        Ok(hosts)
    }

    /// Applies the logged changes. False: read everything again instead (a host between
    /// known `seq`s, never seen; an order at odds with the keys; mostly garbage).
    fn patch(&mut self, conn: &Connection) -> Result<bool, StoreError> {
        self.kept.clear();
        let mut changed = Vec::new();
        let mut seqs = conn.prepare_cached(SELECT_CHANGED_SEQS)?;
        let mut rows = seqs.query([])?;
        while let Some(row) = rows.next()? {
            match self.slot_of(row.get(0)?) {
                Some(slot) => changed.push(slot),
                None => return Ok(false),
            }
        }
        // Each changed host's places, found by the keys before any of them changes.
        let mut places = vec![Vec::new(); SORTS.len()];
        let was_live: Vec<u32> = changed
            .iter()
            .copied()
            .filter(|slot| self.live.contains(*slot))
            .collect();
        for (at, sort) in SORTS.iter().enumerate() {
            for slot in &was_live {
                let found =
                    self.orders[at].binary_search_by(|probe| self.keys.cmp(*sort, *probe, *slot));
                let Ok(place) = found else { return Ok(false) };
                places[at].push(place);
            }
        }
        let mut statement = conn.prepare_cached(SELECT_CHANGED_HOSTS)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let seq = row.get(0)?;
            let host = Some(row).filter(|row| !matches!(row.get_ref(1), Ok(ValueRef::Null)));
            let slot = self.slot_of(seq).ok_or_else(|| too_large("slots"))?;
            self.write(slot, host)?;
            let row = self.rows.get_mut(slot as usize).and_then(Option::take);
            self.row_bytes -= row.map_or(0, |row| row.get().len());
            if host.is_none() || !self.read_tags(conn, Some(seq))? {
                self.set_tags(slot, &[])?;
            }
        }
        let mut into: Vec<u32> = changed
            .iter()
            .copied()
            .filter(|slot| self.live.contains(*slot))
            .collect();
        let same = into == was_live && was_live.len() == changed.len();
        for (at, places) in places.iter_mut().enumerate() {
            places.sort_unstable();
            if !self.reorder(at, places, &mut into, same) {
                return Ok(false);
            }
        }
        Ok(self.tag_garbage <= self.tag_lists.len() / 2 && !self.keys.text.wasteful())
    }

    /// Takes the slots at `places` (ascending) out of order `at` and merges `into` in at
    /// their places by the current keys, moving each stretch between two of them once, in
    /// place; nothing moves when the same hosts changed (`same`) and each still sits between
    /// its neighbours (a host moved, or renamed in another order's key). False when the order
    /// was at odds with the keys.
    fn reorder(&mut self, at: usize, places: &[usize], into: &mut [u32], same: bool) -> bool {
        let (sort, keys, order) = (SORTS[at], &self.keys, &mut self.orders[at]);
        let before = |a: u32, b: u32| keys.cmp(sort, a, b).is_lt();
        let sits = |place: usize| {
            (place == 0 || before(order[place - 1], order[place]))
                && order
                    .get(place + 1)
                    .is_none_or(|next| before(order[place], *next))
        };
        if same && places.iter().all(|place| sits(*place)) {
            return true;
        }
        let mut kept = places.first().copied().unwrap_or(order.len());
        let first = kept;
        for (index, place) in places.iter().enumerate() {
            let next = places.get(index + 1).copied().unwrap_or(order.len());
            order.copy_within(place + 1..next, kept);
            kept += next - place - 1;
        }
        order.truncate(kept);
        // From the back: each slot of `into` lands after the stretch of larger ones.
        into.sort_unstable_by(|a, b| keys.cmp(sort, *a, *b));
        order.resize(kept + into.len(), NONE);
        let mut unread = kept;
        for (index, slot) in into.iter().enumerate().rev() {
            let place = order[..unread].partition_point(|probe| before(*probe, *slot));
            if order[..unread].get(place) == Some(slot) {
                return false;
            }
            order.copy_within(place..unread, place + index + 1);
            order[place + index] = *slot;
            unread = place;
        }
        self.ranks[at].1 = self.ranks[at].1.min(first).min(unread);
        self.eighths[at].clear();
        true
    }

    /// Sets the tags of every host that has some (`None`) or of one, in their positions;
    /// false when there were none.
    fn read_tags(&mut self, conn: &Connection, seq: Option<i64>) -> Result<bool, StoreError> {
        let mut statement = conn.prepare_cached(seq.map_or(SELECT_TAGS, |_| SELECT_TAGS_OF))?;
        let mut rows = match seq {
            Some(seq) => statement.query([seq])?,
            None => statement.query([])?,
        };
        let (mut host, mut tags) = (None, Vec::<(i64, u32)>::new());
        loop {
            let row = rows.next()?;
            let seq = row.map(|row| row.get::<_, i64>(0)).transpose()?;
            if let Some(done) = host.filter(|done| Some(*done) != seq) {
                tags.sort_unstable();
                let numbers: Vec<u32> = tags.drain(..).map(|(_, tag)| tag).collect();
                if let Ok(slot) = self.seqs.binary_search(&done) {
                    self.set_tags(slot as u32, &numbers)?;
                }
            }
            let Some(row) = row else {
                return Ok(host.is_some());
            };
            host = seq;
            let tag = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
            tags.push((row.get(1)?, self.tags.intern(tag)));
        }
    }

    /// Replaces a slot's tag numbers, and its place among each tag's members.
    fn set_tags(&mut self, slot: u32, numbers: &[u32]) -> Result<(), StoreError> {
        let old = self.tag_list(slot).to_vec();
        if old == numbers {
            return Ok(());
        }
        for tag in old.iter().filter(|tag| !numbers.contains(tag)) {
            self.tags.remove(*tag, slot);
        }
        for tag in numbers.iter().filter(|tag| !old.contains(tag)) {
            self.tags.add(*tag, slot);
        }
        self.tag_garbage += old.len() + usize::from(!old.is_empty());
        let at = u32::try_from(self.tag_lists.len()).map_err(|_| too_large("tags"))?;
        self.tag_at[slot as usize] = if numbers.is_empty() { NONE } else { at };
        if !numbers.is_empty() {
            self.tag_lists.push(numbers.len() as u32);
            self.tag_lists.extend_from_slice(numbers);
        }
        Ok(())
    }

    /// A slot as a page lists it: its kept row, else its `seq` and tags.
    fn listed(&self, slot: u32) -> Listed {
        if let Some(Some(row)) = self.rows.get(slot as usize) {
            return Listed::Row(row.clone());
        }
        let tags = self.tag_list(slot).iter();
        let tags = tags.map(|tag| self.tags.names[*tag as usize].clone());
        Listed::Unread(self.seqs[slot as usize], tags.collect())
    }

    fn tag_list(&self, slot: u32) -> &[u32] {
        match self.tag_at.get(slot as usize).map(|at| *at as usize) {
            Some(at) if at != NONE as usize => {
                &self.tag_lists[at + 1..=at + self.tag_lists[at] as usize]
            }
            _ => &[],
        }
    }

    /// The slot of `seq`, a new one when it is above every other; `None` between slots.
    fn slot_of(&mut self, seq: i64) -> Option<u32> {
        if self.seqs.last().is_some_and(|last| *last >= seq) {
            return self.seqs.binary_search(&seq).ok().map(|slot| slot as u32);
        }
        let slot = u32::try_from(self.seqs.len())
            .ok()
            .filter(|slot| *slot != NONE)?;
        self.seqs.push(seq);
        self.keys.ids.push(0);
        self.keys.created.push(NEVER);
        self.keys.last_used.push(NEVER);
        self.group_of.push(NONE);
        self.tag_at.push(NONE);
        if self.keeps_rows {
            self.rows.push(None);
        }
        Some(slot)
    }

    /// Sets a slot's columns, text and group from `row`'s columns 1-7 (`None`: the host is
    /// gone).
    fn write(&mut self, slot: u32, row: Option<&Row<'_>>) -> Result<(), StoreError> {
        let text = |column: usize| column_text(row, column);
        let (index, group) = (slot as usize, row.map(|_| text(6)).transpose()?);
        let group = group.map_or(NONE, |group| self.groups.intern(group));
        let old = std::mem::replace(&mut self.group_of[index], group);
        if old != group {
            self.groups.remove(old, slot);
            self.groups.add(group, slot);
        }
        let Some(row) = row else {
            self.live.remove(slot);
            self.favorite.remove(slot);
            self.keys.text.remove(slot);
            return Ok(());
        };
        self.live.insert(slot);
        match row.get(7)? {
            true => self.favorite.insert(slot),
            false => self.favorite.remove(slot),
        }
        let (keys, id) = (&mut self.keys, text(1)?);
        keys.ids[index] = id_key(id);
        keys.created[index] = time_key(text(4)?).unwrap_or(UNREADABLE);
        keys.last_used[index] = time_key(text(5)?).unwrap_or(NEVER);
        let put = keys.text.put(slot, text(2)?, &text(3)?.to_lowercase());
        put.map_err(|_| too_large("names and hostnames"))
    }

    /// The hosts `query`'s filters keep; `None` when it has none.
    fn matching(&mut self, query: &HostQuery) -> Option<Bits> {
        let slots = self.seqs.len();
        let group = query.group.as_ref().map(|group| match group {
            GroupFilter::Ungrouped => Bits::of(slots, self.groups.of("")),
            GroupFilter::Group(id) => Bits::of(slots, self.groups.of(id)),
        });
        let tag = query
            .tag
            .as_ref()
            .map(|tag| self.kept(Kept::Tag(tag.clone())));
        let favorite = query.favorite.map(|favorite| {
            let mut set = self.live.clone();
            match favorite {
                true => set.and(&self.favorite),
                false => set.and_not(&self.favorite),
            }
            set
        });
        let search = query.search.as_ref();
        let search = search.map(|term| self.kept(Kept::Search(term.to_lowercase())));
        let mut sets = [group, tag, favorite, search].into_iter().flatten();
        let mut set = sets.next()?;
        sets.for_each(|other| set.and(&other));
        Some(set)
    }

    /// The set of a tag (from its members) or a search term (from a scan): kept from an
    /// earlier request, or made and kept.
    fn kept(&mut self, what: Kept) -> Bits {
        let kept = self.kept.iter().position(|(asked, _)| *asked == what);
        let found = match (kept, &what) {
            (Some(at), _) => self.kept.remove(at).1,
            (None, Kept::Tag(tag)) => Bits::of(self.seqs.len(), self.tags.of(tag)),
            (None, Kept::Search(term)) => {
                Bits(self.keys.text.scan(term.as_bytes(), self.seqs.len()))
            }
        };
        if self.kept.len() == KEPT_SETS {
            self.kept.remove(0);
        }
        self.kept.push((what, found.clone()));
        found
    }

    /// The slots of the page at `offset` (below the total), `limit` of them, in the order
    /// `query` asks, among `set` (all hosts without one).
    fn page(
        &mut self,
        query: &HostQuery,
        offset: usize,
        limit: usize,
        set: Option<&Bits>,
    ) -> Vec<u32> {
        let (at, slots) = (sort_at(query.sort), self.seqs.len());
        let (order, len) = (&self.orders[at], self.orders[at].len());
        // Hosts with a key come first in both directions: only never-used ones have none.
        let keyed = match query.sort {
            Sort::LastUsedAt => {
                order.partition_point(|slot| self.keys.last_used[*slot as usize] != NEVER)
            }
            Sort::Name | Sort::Hostname | Sort::CreatedAt => len,
        };
        let desc = query.direction == Direction::Desc;
        let count = set.map_or(len, Bits::count);
        let Some(set) = set.filter(|_| count <= len / RANK_SHARE) else {
            let eighths = &mut self.eighths[at];
            if set.is_some() && len >= EIGHTHS_FROM && eighths.is_empty() {
                let part = len.div_ceil(8);
                *eighths = vec![Bits(vec![0; slots.div_ceil(64)]); len.div_ceil(part)];
                for (place, slot) in order.iter().enumerate() {
                    eighths[place / part].insert(*slot);
                }
            }
            let walk = Walk {
                order,
                eighths,
                set,
                limit,
            };
            // The order as shown: ascending, or each of its two parts backwards.
            let shown = match desc {
                true => [(0..keyed, true), (keyed..len, true)],
                false => [(0..len, false), (len..len, false)],
            };
            if offset <= count - offset - limit {
                return walk.page(shown, offset);
            }
            let [(first, one), (second, two)] = shown;
            let mut page = walk.page([(second, !two), (first, !one)], count - offset - limit);
            page.reverse();
            return page;
        };
        // The ascending place of the host shown at `shown`, and back (its own inverse).
        let place = |shown: usize| match (desc, shown < keyed) {
            (false, _) => shown,
            (true, true) => keyed - 1 - shown,
            (true, false) => keyed + len - 1 - shown,
        };
        let (ranks, ranked) = &mut self.ranks[at];
        ranks.resize(slots, 0);
        for (rank, slot) in order.iter().enumerate().skip(*ranked) {
            ranks[*slot as usize] = rank as u32;
        }
        *ranked = len;
        let mut shown: Vec<usize> = set
            .ones()
            .map(|slot| place(ranks[slot as usize] as usize))
            .collect();
        shown.select_nth_unstable(offset);
        shown.drain(..offset);
        let last = limit.min(shown.len() - 1);
        shown.select_nth_unstable(last);
        shown.truncate(limit);
        shown.sort_unstable();
        shown.into_iter().map(|shown| order[place(shown)]).collect()
    }
}

/// A walk of an order for a page: `limit` slots that `set` holds (all without one).
struct Walk<'a> {
    order: &'a [u32],
    /// The slots of each eighth of the order, or none.
    eighths: &'a [Bits],
    set: Option<&'a Bits>,
    limit: usize,
}

impl Walk<'_> {
    /// The page after the first `skip` slots of `parts` (places in the order, in turn, each
    /// forwards or backwards: `true`). An eighth inside a part is passed by its count alone
    /// (an AND and a count of bits), a block of 64 by its count (a sum without branches).
    fn page(&self, parts: [(Range<usize>, bool); 2], mut skip: usize) -> Vec<u32> {
        let mut page = Vec::with_capacity(self.limit);
        // As `Hosts::page` cuts the eighths.
        let part_len = self.order.len().div_ceil(8).max(1);
        let holds = |slot: &&u32| self.set.is_none_or(|set| set.contains(**slot));
        for (part, backwards) in parts {
            // The part cut where eighths start, in the order walked.
            let mut pieces = Vec::new();
            let mut start = part.start;
            while start < part.end {
                let end = part.end.min((start / part_len + 1) * part_len);
                pieces.push(start..end);
                start = end;
            }
            if backwards {
                pieces.reverse();
            }
            for piece in pieces {
                let eighth = self.eighths.get(piece.start / part_len);
                let whole = piece.start % part_len == 0
                    && (piece.end - piece.start == part_len || piece.end == self.order.len());
                if let (Some(eighth), Some(set), true) = (eighth, self.set, whole && skip > 0) {
                    let count = set.and_count(eighth);
                    if skip >= count {
                        skip -= count;
                        continue;
                    }
                }
                let slots = &self.order[piece];
                let blocks: Box<dyn Iterator<Item = &[u32]>> = match backwards {
                    true => Box::new(slots.rchunks(64)),
                    false => Box::new(slots.chunks(64)),
                };
                for block in blocks {
                    let count = self.set.map_or(block.len(), |set| {
                        block.iter().map(|slot| set.bit(*slot)).sum()
                    });
                    if skip >= count {
                        skip -= count;
                        continue;
                    }
                    let slots: Box<dyn Iterator<Item = &u32>> = match backwards {
                        true => Box::new(block.iter().rev()),
                        false => Box::new(block.iter()),
                    };
                    let wanted = self.limit - page.len();
                    let taken = slots.filter(holds).skip(std::mem::take(&mut skip));
                    page.extend(taken.take(wanted));
                    if page.len() == self.limit {
                        return page;
                    }
                }
            }
        }
        page
    }
}

impl Keys {
    /// `a` against `b` in `sort`'s ascending order: the key, the id, then the slot.
    fn cmp(&self, sort: Sort, a: u32, b: u32) -> Ordering {
        let (x, y) = (a as usize, b as usize);
        let key = match sort {
            Sort::Name => self.text.name(a).cmp(self.text.name(b)),
            Sort::Hostname => self.text.hostname(a).cmp(self.text.hostname(b)),
            Sort::CreatedAt => self.created[x].cmp(&self.created[y]),
            Sort::LastUsedAt => self.last_used[x].cmp(&self.last_used[y]),
        };
        key.then(self.ids[x].cmp(&self.ids[y])).then(a.cmp(&b))
    }

    /// A number that orders like `cmp` wherever it differs: a text key's first 16 bytes, a
    /// time with the id's first half.
    fn prefix(&self, sort: Sort, slot: u32) -> u128 {
        let (index, id) = (slot as usize, self.ids[slot as usize] >> 64);
        match sort {
            Sort::Name => prefix(self.text.name(slot)),
            Sort::Hostname => prefix(self.text.hostname(slot)),
            Sort::CreatedAt => u128::from(self.created[index]) << 64 | id,
            Sort::LastUsedAt => u128::from(self.last_used[index]) << 64 | id,
        }
    }
}

impl Members {
    /// The number of `name`, added when new.
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(number) = self.index.get(name) {
            return *number;
        }
        self.index.insert(name.to_owned(), self.names.len() as u32);
        self.names.push(name.to_owned());
        self.slots.push(Vec::new());
        self.names.len() as u32 - 1
    }

    /// The slots of `name` (none when unknown).
    fn of(&self, name: &str) -> &[u32] {
        let slots = self
            .index
            .get(name)
            .map(|number| &self.slots[*number as usize]);
        slots.map_or(&[], Vec::as_slice)
    }

    fn add(&mut self, number: u32, slot: u32) {
        if let Some(slots) = self.slots.get_mut(number as usize) {
            if let Err(at) = slots.binary_search(&slot) {
                slots.insert(at, slot);
            }
        }
    }

    fn remove(&mut self, number: u32, slot: u32) {
        if let Some(slots) = self.slots.get_mut(number as usize) {
            slots.binary_search(&slot).map(|at| slots.remove(at)).ok();
        }
    }
}

impl Bits {
    /// The set of `members`, ascending: each word is filled in a register, then stored.
    fn of(slots: usize, members: &[u32]) -> Bits {
        let mut words = vec![0u64; slots.div_ceil(64)];
        let mut chunks = members.chunk_by(|a, b| a / 64 == b / 64);
        chunks.try_for_each(|chunk| {
            let word = chunk.iter().fold(0, |word, slot| word | 1 << (slot % 64));
            *words.get_mut(chunk[0] as usize / 64)? |= word;
            Some(())
        });
        Bits(words)
    }

    fn insert(&mut self, slot: u32) {
        let word = slot as usize / 64;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (slot % 64);
    }

    fn remove(&mut self, slot: u32) {
        if let Some(word) = self.0.get_mut(slot as usize / 64) {
            *word &= !(1 << (slot % 64));
        }
    }

    /// 1 when the set holds `slot`, else 0.
    fn bit(&self, slot: u32) -> usize {
        self.0
            .get(slot as usize / 64)
            .map_or(0, |word| (word >> (slot % 64)) as usize & 1)
    }

    fn contains(&self, slot: u32) -> bool {
        self.bit(slot) == 1
    }

    fn count(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    /// The number of slots both sets hold.
    fn and_count(&self, other: &Bits) -> usize {
        let both = self
            .0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a & b).count_ones());
        both.map(|count| count as usize).sum()
    }

    fn and(&mut self, other: &Bits) {
        self.0.truncate(other.0.len());
        self.0
            .iter_mut()
            .zip(&other.0)
            .for_each(|(word, other)| *word &= other);
    }

    fn and_not(&mut self, other: &Bits) {
        self.0
            .iter_mut()
            .zip(&other.0)
            .for_each(|(word, other)| *word &= !other);
    }

    fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(index, word)| {
            let mut word = *word;
            std::iter::from_fn(move || {
                let bit = (word != 0).then(|| word.trailing_zeros())?;
                word &= word - 1;
                Some(index as u32 * 64 + bit)
            })
        })
    }
}

/// Where `sort`'s order is in `Hosts::orders`.
fn sort_at(sort: Sort) -> usize {
    SORTS.iter().position(|kept| *kept == sort).unwrap_or(0)
}

/// Column `column` of `row` as text, `""` for NULL; `HostNotFound` without a row.
fn column_text<'row>(row: Option<&'row Row<'_>>, column: usize) -> Result<&'row str, StoreError> {
    let value = row
        .ok_or(StoreError::HostNotFound)?
        .get_ref(column)?
        .as_str_or_null();
    Ok(value.map_err(rusqlite::Error::from)?.unwrap_or_default())
}

/// An id as the number the orders compare: a UUID's value, another id's first 16 bytes.
fn id_key(id: &str) -> u128 {
    uuid::Uuid::try_parse(id).map_or_else(|_| prefix(id.as_bytes()), |id| id.as_u128())
}

/// The first 16 bytes, big-endian (zeros past the end): ordered like the bytes wherever
/// it differs.
fn prefix(bytes: &[u8]) -> u128 {
    let mut first = [0u8; 16];
    let len = bytes.len().min(16);
    first[..len].copy_from_slice(&bytes[..len]);
    u128::from_be_bytes(first)
}

/// A time in the form the store writes (`2024-01-31T12:00:00.000Z`) as the number its
/// digits make, in the order of the instants; `None` for any other text. So a time the
/// store did not write sorts after every other, or, for `last_used_at`, as never used.
fn time_key(text: &str) -> Option<u64> {
    (text.len() == 24).then_some(())?;
    text.bytes()
        .enumerate()
        .try_fold(0, |number, (at, byte)| match (at, byte) {
            (4 | 7, b'-') | (10, b'T') | (13 | 16, b':') | (19, b'.') | (23, b'Z') => Some(number),
            (4 | 7 | 10 | 13 | 16 | 19 | 23, _) => None,
            (_, b'0'..=b'9') => Some(number * 10 + u64::from(byte - b'0')),
            _ => None,
        })
}

fn too_large(what: &str) -> StoreError {
    StoreError::Sqlite(format!(
        "the hosts' {what} pass what the list's memory can index"
    ))
}
