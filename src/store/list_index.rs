//! The host list, answered from memory with one plan; store::hosts `list` reads the rows.
//!
//! Each filter of a query becomes a set of hosts, a bitmap over slots: a group or a tag
//! through its member list, `favorite` through its bitmap, a search through one scan of the
//! search text (store::search_text). The sets intersect. The page then walks the sort's
//! kept order testing the set, from whichever end is nearer; a small set is instead ranked
//! by each member's place in that order.
//!
//! Invariants: the list's order is defined here alone (`Keys::cmp`; README, API: Hosts,
//! "List"): name by `name_key`, hostname by its lowercase, times by instant with never-used
//! hosts last, ties by id. Nothing is answered from a state older than the connection's:
//! every use first applies what the temp triggers logged since the last one (per
//! connection, never in the file), or reads everything again after another connection's
//! commit (`data_version`). No secret is ever read here.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use rusqlite::{Connection, Row};

use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
use crate::store::search_text::{SearchText, TooLarge};
use crate::store::StoreError;

/// The change logs the triggers fill (temp tables: per connection, never in the file): the
/// hosts added, deleted, or changed in a column or a tag the list reads; the groups changed
/// (for the group tree, api::groups).
const CREATE_CHANGE_LOGS: &str = "
    CREATE TEMP TABLE IF NOT EXISTS list_changed_hosts (seq INTEGER PRIMARY KEY);
    CREATE TEMP TABLE IF NOT EXISTS list_changed_groups (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_added AFTER INSERT ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (new.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_deleted AFTER DELETE ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (old.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_host_changed AFTER UPDATE OF seq, id, name_key,
        hostname, created_at, last_used_at, group_id, is_favorite ON main.hosts BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (old.seq), (new.seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_added AFTER INSERT ON main.host_tags BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (new.host_seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_dropped AFTER DELETE ON main.host_tags BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (old.host_seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_tag_changed AFTER UPDATE ON main.host_tags BEGIN
        INSERT OR IGNORE INTO list_changed_hosts VALUES (old.host_seq), (new.host_seq);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_added AFTER INSERT ON main.groups BEGIN
        INSERT OR IGNORE INTO list_changed_groups VALUES (new.id);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_deleted AFTER DELETE ON main.groups BEGIN
        INSERT OR IGNORE INTO list_changed_groups VALUES (old.id);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_changed AFTER UPDATE ON main.groups BEGIN
        INSERT OR IGNORE INTO list_changed_groups VALUES (old.id), (new.id);
    END;";
/// The columns `HostValues::read` takes, after `seq`.
const SELECT_HOSTS: &str = "SELECT seq, id, name_key, hostname, created_at, last_used_at, \
     group_id, is_favorite FROM main.hosts ORDER BY seq";
const SELECT_CHANGED_HOSTS: &str = "SELECT c.seq, h.id, h.name_key, h.hostname, h.created_at, \
     h.last_used_at, h.group_id, h.is_favorite FROM list_changed_hosts AS c \
     LEFT JOIN main.hosts AS h ON h.seq = c.seq ORDER BY c.seq";
const COUNT_CHANGED_HOSTS: &str = "SELECT count(*) FROM list_changed_hosts";
/// Every tag, by host (the primary key's order: no sort).
const SELECT_TAGS: &str = "SELECT host_seq, position, tag FROM main.host_tags ORDER BY host_seq";
const SELECT_TAGS_OF_HOST: &str = "SELECT position, tag FROM main.host_tags WHERE host_seq = ?1";
const CLEAR_CHANGED_HOSTS: &str = "DELETE FROM list_changed_hosts";
const DATA_VERSION: &str = "PRAGMA data_version";

/// More changed hosts than this at once (an import) and the orders are sorted again
/// instead of moving each host: a move is two binary searches and two shifts of the order.
const RESORT_FROM: usize = 1_000;

/// A set holding at most 1/`RANK_SHARE` of the hosts is ranked: it costs a lookup per
/// member, where a walk costs a test per host passed (up to half of them).
const RANK_SHARE: usize = 8;

/// The sorts, in the order of `Hosts::orders`.
const SORTS: [Sort; 4] = [
    Sort::Name,
    Sort::Hostname,
    Sort::CreatedAt,
    Sort::LastUsedAt,
];

/// `last_used_at` of a never-used host: after every time.
const NEVER: u64 = u64::MAX;
/// A stored time that does not parse: after every time, before never.
const UNREADABLE: u64 = u64::MAX - 1;
/// The id key of an id that is not a lowercase hyphenated UUID (its text is in `odd_ids`).
const ODD_ID: u128 = u128::MAX;
/// The group of a slot with no host.
const NO_GROUP: u32 = u32::MAX;
/// The tag list offset of a slot with no tags.
const NO_TAGS: u32 = u32::MAX;

/// Sets up the connection's change logs. Call once per connection, after migrations.
pub fn install(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(CREATE_CHANGE_LOGS)?;
    Ok(())
}

/// Moves whenever another connection commits (SQLite's `PRAGMA data_version`); this
/// connection's own writes are in the change logs instead.
pub fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(DATA_VERSION)?
        .query_row([], |row| row.get(0))?)
}

/// Rows this connection has changed since it opened, triggers' included: while it stays,
/// none of the change logs gained a row.
pub fn changes(conn: &Connection) -> u64 {
    conn.total_changes()
}

/// The list's memory. Lives beside the connection (`Db`) and is only touched while the
/// connection's lock is held.
#[derive(Default)]
pub struct ListIndex {
    hosts: Option<Hosts>,
    /// The connection's `total_changes` after the log was last emptied: while it stays,
    /// nothing was logged, and the log need not be read.
    changes_seen: u64,
}

/// Every host's slot: slots follow `seq` (SQLite gives a new host a `seq` above every
/// other), and a deleted host's slot stays, empty, until everything is read again.
struct Hosts {
    data_version: i64,
    seqs: Vec<i64>,
    live: Bits,
    favorite: Bits,
    keys: Keys,
    /// The group of each slot (`NO_GROUP` for no host), and the groups' members; `""`
    /// (the first) is no group.
    group_of: Vec<u32>,
    groups: Members,
    /// The tags of each slot, in the host's order, and the tags' members.
    tag_lists: TagLists,
    tags: Members,
    /// One per sort, in `SORTS` order.
    orders: Vec<Order>,
}

/// What the sorts compare, by slot.
#[derive(Default)]
struct Keys {
    text: SearchText,
    ids: Vec<u128>,
    odd_ids: HashMap<u32, Box<str>>,
    created: Vec<u64>,
    last_used: Vec<u64>,
}

/// One sort's slots in ascending order, and each slot's place in it, kept valid below
/// `ranked` (moves invalidate from where they shift the order).
#[derive(Default)]
struct Order {
    slots: Vec<u32>,
    rank: Vec<u32>,
    ranked: usize,
}

/// Names (group ids, tags) by number, and the slots of each, ascending.
#[derive(Default)]
struct Members {
    index: HashMap<String, u32>,
    names: Vec<String>,
    slots: Vec<Vec<u32>>,
}

/// Each slot's tag numbers, in one arena: `[count, tag...]` at the slot's offset. A
/// replaced list stays as garbage until compaction.
#[derive(Default)]
struct TagLists {
    numbers: Vec<u32>,
    at: Vec<u32>,
    garbage: usize,
}

/// A set of slots.
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

/// One host's columns as the list reads them.
struct HostValues<'a> {
    id: &'a str,
    id_key: u128,
    name_key: &'a str,
    hostname: Cow<'a, str>,
    created: u64,
    last_used: u64,
    group_id: Option<&'a str>,
    favorite: bool,
}

/// A host of a page: its `seq` and its tags, in their stored order.
pub type PageHost = (i64, Vec<String>);

impl ListIndex {
    /// The `seq`s of `query`'s page, in order, each with its tags, and how many hosts
    /// match the query's filters.
    pub fn page(
        &mut self,
        conn: &Connection,
        query: &HostQuery,
    ) -> Result<(Vec<PageHost>, u64), StoreError> {
        let hosts = self.current(conn)?;
        let set = hosts.matching(query);
        let total = set.as_ref().map_or_else(|| hosts.live.count(), Bits::count);
        let offset = query
            .offset()
            .and_then(|offset| usize::try_from(offset).ok());
        let Some(offset) = offset.filter(|offset| *offset < total) else {
            return Ok((Vec::new(), total as u64));
        };
        let limit = usize::try_from(query.per_page)
            .map_or(total - offset, |limit| limit.min(total - offset));
        let slots = hosts.page(query, offset, limit, set.as_ref().map(|set| (set, total)));
        let page = slots.iter().map(|slot| {
            let tags = hosts.tag_lists.get(*slot).iter();
            let tags = tags.map(|tag| hosts.tags.names[*tag as usize].clone());
            (hosts.seqs[*slot as usize], tags.collect())
        });
        Ok((page.collect(), total as u64))
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

    /// The memory, brought to the connection's state. A failure leaves nothing behind, so
    /// the next use reads everything again.
    fn current(&mut self, conn: &Connection) -> Result<&mut Hosts, StoreError> {
        let version = data_version(conn)?;
        let unchanged = changes(conn) == self.changes_seen;
        let hosts = match self.hosts.take() {
            Some(hosts) if hosts.data_version == version && unchanged => {
                return Ok(self.hosts.insert(hosts));
            }
            Some(mut hosts) if hosts.data_version == version => match hosts.patch(conn)? {
                true => hosts,
                false => Hosts::read(conn, version)?,
            },
            _ => Hosts::read(conn, version)?,
        };
        conn.prepare_cached(CLEAR_CHANGED_HOSTS)?.execute([])?;
        self.changes_seen = changes(conn);
        Ok(self.hosts.insert(hosts))
    }
}

impl Hosts {
    /// Every host and tag, and the orders sorted from them.
    fn read(conn: &Connection, data_version: i64) -> Result<Hosts, StoreError> {
        let mut hosts = Hosts {
            data_version,
            seqs: Vec::new(),
            live: Bits::default(),
            favorite: Bits::default(),
            keys: Keys::default(),
            group_of: Vec::new(),
            groups: Members::default(),
            tag_lists: TagLists::default(),
            tags: Members::default(),
            orders: Vec::new(),
        };
        hosts.groups.intern("");
        let mut statement = conn.prepare_cached(SELECT_HOSTS)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let slot = hosts.slot_of(row.get(0)?).ok_or_else(out_of_order)?;
            hosts.write(slot, Some(HostValues::read(row)?))?;
        }
        hosts.read_tags(conn.prepare_cached(SELECT_TAGS)?.query([])?)?;
        hosts.orders = SORTS.iter().map(|sort| hosts.sorted(*sort)).collect();
        Ok(hosts)
    }

    /// Applies the logged changes. `Ok(false)`: a host cannot be placed (a `seq` below
    /// every other that was never seen); read everything again instead.
    fn patch(&mut self, conn: &Connection) -> Result<bool, StoreError> {
        let changed: i64 = conn
            .prepare_cached(COUNT_CHANGED_HOSTS)?
            .query_row([], |row| row.get(0))?;
        let resort = usize::try_from(changed).map_or(true, |changed| changed > RESORT_FROM);
        let mut statement = conn.prepare_cached(SELECT_CHANGED_HOSTS)?;
        let mut rows = statement.query([])?;
        let mut tags = conn.prepare_cached(SELECT_TAGS_OF_HOST)?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let host = match row.get_ref(1)? {
                rusqlite::types::ValueRef::Null => None,
                _ => Some(HostValues::read(row)?),
            };
            let Some(slot) = self.slot_of(seq) else {
                return Ok(false);
            };
            let live = host.is_some();
            if !self.move_host(slot, host, resort)? {
                return Ok(false);
            }
            let mut names: Vec<(i64, String)> = match live {
                true => tags
                    .query_map([seq], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect::<Result<_, _>>()?,
                false => Vec::new(),
            };
            names.sort_unstable();
            let names: Vec<&str> = names.iter().map(|(_, name)| name.as_str()).collect();
            self.set_tags(slot, &names)?;
        }
        if resort {
            self.orders = SORTS.iter().map(|sort| self.sorted(*sort)).collect();
        }
        Ok(true)
    }

    /// Sets the tags of every host in `rows` (`SELECT_TAGS` columns, by host), in their
    /// positions.
    fn read_tags(&mut self, mut rows: rusqlite::Rows<'_>) -> Result<(), StoreError> {
        let mut host: Option<i64> = None;
        let mut tags: Vec<(i64, String)> = Vec::new();
        loop {
            let row = rows.next()?;
            let seq = row.map(|row| row.get::<_, i64>(0)).transpose()?;
            if let Some(done) = host.filter(|done| Some(*done) != seq) {
                tags.sort_unstable();
                let names: Vec<&str> = tags.iter().map(|(_, tag)| tag.as_str()).collect();
                if let Ok(slot) = self.seqs.binary_search(&done) {
                    self.set_tags(slot as u32, &names)?;
                }
                tags.clear();
            }
            let Some(row) = row else {
                return Ok(());
            };
            host = seq;
            tags.push((row.get(1)?, row.get(2)?));
        }
    }

    /// Replaces a slot's tags, and its place among each tag's members.
    fn set_tags(&mut self, slot: u32, names: &[&str]) -> Result<(), StoreError> {
        let numbers: Vec<u32> = names.iter().map(|name| self.tags.intern(name)).collect();
        let old = self.tag_lists.get(slot).to_vec();
        for tag in old.iter().filter(|tag| !numbers.contains(tag)) {
            self.tags.remove(*tag, slot);
        }
        for tag in numbers.iter().filter(|tag| !old.contains(tag)) {
            self.tags.add(*tag, slot);
        }
        self.tag_lists.set(slot, &numbers)
    }

    /// The slot of `seq`, a new one when it is above every other; `None` when it falls
    /// between slots.
    fn slot_of(&mut self, seq: i64) -> Option<u32> {
        let search = match self.seqs.last() {
            Some(last) if *last < seq => Err(self.seqs.len()),
            _ => self.seqs.binary_search(&seq),
        };
        match search {
            Ok(slot) => u32::try_from(slot).ok(),
            Err(slot) if slot == self.seqs.len() => {
                let slot = u32::try_from(slot).ok().filter(|slot| *slot != NO_GROUP)?;
                self.seqs.push(seq);
                self.keys.ids.push(0);
                self.keys.created.push(NEVER);
                self.keys.last_used.push(NEVER);
                self.group_of.push(NO_GROUP);
                Some(slot)
            }
            Err(_) => None,
        }
    }

    /// Writes a changed host and moves it in every order whose key it changed (all of
    /// them at once later instead, when `resort`). `Ok(false)`: the orders disagree with
    /// the keys; read everything again.
    fn move_host(
        &mut self,
        slot: u32,
        host: Option<HostValues<'_>>,
        resort: bool,
    ) -> Result<bool, StoreError> {
        let was_live = self.live.contains(slot);
        let moved = SORTS.map(|sort| match &host {
            Some(host) => !was_live || self.keys.differ(sort, slot, host),
            None => was_live,
        });
        let moving = |index: usize| !resort && moved[index];
        for (index, sort) in SORTS.iter().enumerate() {
            if moving(index) && was_live && !self.orders[index].remove(&self.keys, *sort, slot) {
                return Ok(false);
            }
        }
        let live = host.is_some();
        self.write(slot, host)?;
        for (index, sort) in SORTS.iter().enumerate() {
            if moving(index) && live && !self.orders[index].insert(&self.keys, *sort, slot) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sets a slot's columns, text and group (`None`: the host is gone).
    fn write(&mut self, slot: u32, host: Option<HostValues<'_>>) -> Result<(), StoreError> {
        let index = slot as usize;
        let group = match &host {
            None => NO_GROUP,
            Some(host) => self.groups.intern(host.group_id.unwrap_or_default()),
        };
        let old = std::mem::replace(&mut self.group_of[index], group);
        if old != group {
            self.groups.remove(old, slot);
            self.groups.add(group, slot);
        }
        let Some(host) = host else {
            self.live.remove(slot);
            self.favorite.remove(slot);
            self.keys.text.remove(slot);
            self.keys.odd_ids.remove(&slot);
            return Ok(());
        };
        self.live.insert(slot);
        match host.favorite {
            true => self.favorite.insert(slot),
            false => self.favorite.remove(slot),
        }
        let keys = &mut self.keys;
        keys.ids[index] = host.id_key;
        match host.id_key {
            ODD_ID => keys.odd_ids.insert(slot, host.id.into()),
            _ => keys.odd_ids.remove(&slot),
        };
        keys.created[index] = host.created;
        keys.last_used[index] = host.last_used;
        keys.text
            .put(slot, host.name_key, &host.hostname)
            .map_err(|TooLarge| {
                StoreError::Sqlite("the hosts' names and hostnames pass 4 GiB".into())
            })
    }

    /// Every live slot in `sort`'s ascending order. Most comparisons are settled by the
    /// first 16 bytes of the key, held beside each slot, so the sort mostly reads one array.
    fn sorted(&self, sort: Sort) -> Order {
        let mut keyed: Vec<(u128, u32)> = self
            .live
            .ones()
            .map(|slot| (self.keys.prefix(sort, slot), slot))
            .collect();
        keyed.sort_unstable_by(|(a_prefix, a), (b_prefix, b)| {
            a_prefix
                .cmp(b_prefix)
                .then_with(|| self.keys.cmp(sort, *a, *b))
        });
        Order {
            slots: keyed.into_iter().map(|(_, slot)| slot).collect(),
            rank: Vec::new(),
            ranked: 0,
        }
    }

    /// The hosts `query`'s filters keep; `None` when it has none.
    fn matching(&self, query: &HostQuery) -> Option<Bits> {
        let slots = self.seqs.len();
        let mut sets = Vec::new();
        if let Some(group) = &query.group {
            let id = match group {
                GroupFilter::Ungrouped => "",
                GroupFilter::Group(id) => id,
            };
            sets.push(Bits::of(slots, self.groups.of(id)));
        }
        if let Some(tag) = &query.tag {
            sets.push(Bits::of(slots, self.tags.of(tag)));
        }
        if let Some(favorite) = query.favorite {
            let mut set = self.live.clone();
            match favorite {
                true => set.and(&self.favorite),
                false => set.and_not(&self.favorite),
            }
            sets.push(set);
        }
        if let Some(term) = &query.search {
            let needle = term.to_lowercase();
            sets.push(Bits(self.keys.text.scan(needle.as_bytes(), slots)));
        }
        let mut sets = sets.into_iter();
        let mut set = sets.next()?;
        sets.for_each(|other| set.and(&other));
        Some(set)
    }

    /// The slots of the page at `offset` (below the total), at most `limit`, in the order
    /// `query` asks. `set`: the filtered hosts and how many they are.
    fn page(
        &mut self,
        query: &HostQuery,
        offset: usize,
        limit: usize,
        set: Option<(&Bits, usize)>,
    ) -> Vec<u32> {
        let sort = SORTS
            .iter()
            .position(|sort| *sort == query.sort)
            .unwrap_or(0);
        let slot_count = self.seqs.len();
        let order = &mut self.orders[sort];
        let (len, direction) = (order.slots.len(), query.direction);
        // Hosts with a key come first in both directions: only never-used ones have none.
        let keyed = match query.sort {
            Sort::LastUsedAt => order
                .slots
                .partition_point(|slot| self.keys.last_used[*slot as usize] != NEVER),
            Sort::Name | Sort::Hostname | Sort::CreatedAt => len,
        };
        // The ascending place of the host shown at `at`, and back (its own inverse).
        let place = |at: usize| match direction {
            Direction::Asc => at,
            Direction::Desc if at < keyed => keyed - 1 - at,
            Direction::Desc => keyed + len - 1 - at,
        };
        match set {
            None => (offset..offset + limit)
                .map(|at| order.slots[place(at)])
                .collect(),
            Some((set, count)) if count <= len / RANK_SHARE => {
                let ranks = order.ranks(slot_count);
                let mut shown: Vec<(usize, u32)> = set
                    .ones()
                    .map(|slot| (place(ranks[slot as usize] as usize), slot))
                    .collect();
                shown.select_nth_unstable(offset);
                shown.drain(..offset);
                if shown.len() > limit {
                    shown.select_nth_unstable(limit);
                    shown.truncate(limit);
                }
                shown.sort_unstable();
                shown.into_iter().map(|(_, slot)| slot).collect()
            }
            Some((set, count)) => {
                let slots = &order.slots;
                let kept = |at: &usize| set.contains(slots[place(*at)]);
                let mut page: Vec<usize> = match offset <= count - offset - limit {
                    true => (0..len).filter(kept).skip(offset).take(limit).collect(),
                    false => {
                        let skip = count - offset - limit;
                        (0..len).rev().filter(kept).skip(skip).take(limit).collect()
                    }
                };
                page.sort_unstable();
                page.into_iter().map(|at| slots[place(at)]).collect()
            }
        }
    }
}

impl Keys {
    /// `a` against `b` in `sort`'s ascending order: the key, then the id.
    fn cmp(&self, sort: Sort, a: u32, b: u32) -> Ordering {
        let (x, y) = (a as usize, b as usize);
        let key = match sort {
            Sort::Name => self.text.name(a).cmp(self.text.name(b)),
            Sort::Hostname => self.text.hostname(a).cmp(self.text.hostname(b)),
            Sort::CreatedAt => self.created[x].cmp(&self.created[y]),
            Sort::LastUsedAt => self.last_used[x].cmp(&self.last_used[y]),
        };
        key.then_with(|| match (self.ids[x], self.ids[y]) {
            (ODD_ID, _) | (_, ODD_ID) => self.id(a).cmp(&self.id(b)),
            (a, b) => a.cmp(&b),
        })
    }

    /// A number that orders like `cmp` wherever it differs: the first 16 bytes of a text
    /// key, big-endian; a time with the first half of the id when every id is a UUID.
    fn prefix(&self, sort: Sort, slot: u32) -> u128 {
        let index = slot as usize;
        let id = match self.odd_ids.is_empty() {
            true => self.ids[index] >> 64,
            false => 0,
        };
        let text = match sort {
            Sort::Name => self.text.name(slot),
            Sort::Hostname => self.text.hostname(slot),
            Sort::CreatedAt => return u128::from(self.created[index]) << 64 | id,
            Sort::LastUsedAt => return u128::from(self.last_used[index]) << 64 | id,
        };
        let mut bytes = [0u8; 16];
        let len = text.len().min(16);
        bytes[..len].copy_from_slice(&text[..len]);
        u128::from_be_bytes(bytes)
    }

    /// True when `host` would put `slot` elsewhere in `sort` than its current key does.
    fn differ(&self, sort: Sort, slot: u32, host: &HostValues<'_>) -> bool {
        let index = slot as usize;
        let id_differs = match host.id_key {
            ODD_ID => self.odd_ids.get(&slot).map(|id| &**id) != Some(host.id),
            key => self.ids[index] != key,
        };
        id_differs
            || match sort {
                Sort::Name => self.text.name(slot) != host.name_key.as_bytes(),
                Sort::Hostname => self.text.hostname(slot) != host.hostname.as_bytes(),
                Sort::CreatedAt => self.created[index] != host.created,
                Sort::LastUsedAt => self.last_used[index] != host.last_used,
            }
    }

    /// The slot's id as stored.
    fn id(&self, slot: u32) -> Cow<'_, str> {
        if let Some(id) = self.odd_ids.get(&slot) {
            return Cow::Borrowed(id);
        }
        let key = self.ids[slot as usize];
        let part = |shift: u32, mask: u128| (key >> shift) & mask;
        Cow::Owned(format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            part(96, 0xffff_ffff),
            part(80, 0xffff),
            part(64, 0xffff),
            part(48, 0xffff),
            part(0, 0xffff_ffff_ffff)
        ))
    }
}

impl Order {
    /// Takes `slot` out, found by its current keys. False when it is not there.
    fn remove(&mut self, keys: &Keys, sort: Sort, slot: u32) -> bool {
        match self
            .slots
            .binary_search_by(|probe| keys.cmp(sort, *probe, slot))
        {
            Ok(at) => {
                self.slots.remove(at);
                self.ranked = self.ranked.min(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Puts `slot` in its place by its current keys. False when it is there already.
    fn insert(&mut self, keys: &Keys, sort: Sort, slot: u32) -> bool {
        match self
            .slots
            .binary_search_by(|probe| keys.cmp(sort, *probe, slot))
        {
            Ok(_) => false,
            Err(at) => {
                self.slots.insert(at, slot);
                self.ranked = self.ranked.min(at);
                true
            }
        }
    }

    /// Each slot's ascending place (only those in the order mean anything).
    fn ranks(&mut self, slot_count: usize) -> &[u32] {
        self.rank.resize(slot_count, 0);
        for (at, slot) in self.slots.iter().enumerate().skip(self.ranked) {
            self.rank[*slot as usize] = at as u32;
        }
        self.ranked = self.slots.len();
        &self.rank
    }
}

impl<'a> HostValues<'a> {
    /// Columns 1-7 of `SELECT_HOSTS`.
    fn read(row: &'a Row<'_>) -> Result<HostValues<'a>, StoreError> {
        let text = |column: usize| -> Result<Option<&'a str>, StoreError> {
            Ok(row
                .get_ref(column)?
                .as_str_or_null()
                .map_err(rusqlite::Error::from)?)
        };
        let id = text(1)?.unwrap_or_default();
        let hostname = text(3)?.unwrap_or_default();
        Ok(HostValues {
            id,
            id_key: uuid_key(id).unwrap_or(ODD_ID),
            name_key: text(2)?.unwrap_or_default(),
            hostname: match hostname
                .bytes()
                .any(|byte| byte.is_ascii_uppercase() || !byte.is_ascii())
            {
                true => Cow::Owned(hostname.to_lowercase()),
                false => Cow::Borrowed(hostname),
            },
            created: time_key(text(4)?).unwrap_or(UNREADABLE),
            last_used: text(5)?.map_or(NEVER, |time| time_key(Some(time)).unwrap_or(UNREADABLE)),
            group_id: text(6)?,
            favorite: row.get(7)?,
        })
    }
}

impl Members {
    /// The number of `name`, added when new.
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(number) = self.index.get(name) {
            return *number;
        }
        let number = self.names.len() as u32;
        self.index.insert(name.to_owned(), number);
        self.names.push(name.to_owned());
        self.slots.push(Vec::new());
        number
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
        let Some(slots) = self.slots.get_mut(number as usize) else {
            return;
        };
        match slots.last() {
            Some(last) if *last >= slot => {
                if let Err(at) = slots.binary_search(&slot) {
                    slots.insert(at, slot);
                }
            }
            _ => slots.push(slot),
        }
    }

    fn remove(&mut self, number: u32, slot: u32) {
        let Some(slots) = self.slots.get_mut(number as usize) else {
            return;
        };
        if let Ok(at) = slots.binary_search(&slot) {
            slots.remove(at);
        }
    }
}

impl TagLists {
    fn get(&self, slot: u32) -> &[u32] {
        let Some(&at) = self.at.get(slot as usize).filter(|at| **at != NO_TAGS) else {
            return &[];
        };
        let at = at as usize;
        let count = self.numbers[at] as usize;
        &self.numbers[at + 1..at + 1 + count]
    }

    fn set(&mut self, slot: u32, numbers: &[u32]) -> Result<(), StoreError> {
        let old = self.get(slot).len();
        self.garbage += old + usize::from(old > 0);
        let index = slot as usize;
        if self.at.len() <= index {
            self.at.resize(index + 1, NO_TAGS);
        }
        self.at[index] = NO_TAGS;
        if !numbers.is_empty() {
            let at = u32::try_from(self.numbers.len())
                .ok()
                .filter(|at| *at != NO_TAGS)
                .ok_or_else(|| StoreError::Sqlite("the hosts' tags pass 4 G entries".into()))?;
            self.numbers.push(numbers.len() as u32);
            self.numbers.extend_from_slice(numbers);
            self.at[index] = at;
        }
        if self.garbage > self.numbers.len() / 2 {
            let mut compact = TagLists::default();
            for slot in 0..self.at.len() as u32 {
                compact.set(slot, self.get(slot))?;
            }
            *self = compact;
        }
        Ok(())
    }
}

impl Bits {
    fn with_slots(slots: usize) -> Bits {
        Bits(vec![0; slots.div_ceil(64)])
    }

    fn of(slots: usize, members: &[u32]) -> Bits {
        let mut set = Bits::with_slots(slots);
        members.iter().for_each(|slot| set.insert(*slot));
        set
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

    fn contains(&self, slot: u32) -> bool {
        self.0
            .get(slot as usize / 64)
            .is_some_and(|word| word & (1 << (slot % 64)) != 0)
    }

    fn count(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    fn and(&mut self, other: &Bits) {
        self.0.truncate(other.0.len());
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= b);
    }

    fn and_not(&mut self, other: &Bits) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= !b);
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

/// A lowercase hyphenated UUID as a number, in the same order as its text.
fn uuid_key(id: &str) -> Option<u128> {
    if id.len() != 36 {
        return None;
    }
    let mut key: u128 = 0;
    for (at, byte) in id.bytes().enumerate() {
        let digit = match (at, byte) {
            (8 | 13 | 18 | 23, b'-') => continue,
            (8 | 13 | 18 | 23, _) => return None,
            (_, b'0'..=b'9') => byte - b'0',
            (_, b'a'..=b'f') => byte - b'a' + 10,
            _ => return None,
        };
        key = key << 4 | u128::from(digit);
    }
    Some(key).filter(|key| *key != ODD_ID)
}

/// A stored time as a number in the order of the instants: the digits of its canonical
/// form (`2024-01-31T12:00:00.000Z`, what the store writes), through humantime for others.
fn time_key(text: Option<&str>) -> Option<u64> {
    let digits = |text: &str| -> Option<u64> {
        let bytes = text.as_bytes();
        if bytes.len() != 24 {
            return None;
        }
        bytes
            .iter()
            .enumerate()
            .try_fold(0, |number, (at, byte)| match (at, byte) {
                (4 | 7, b'-') | (10, b'T') | (13 | 16, b':') | (19, b'.') | (23, b'Z') => {
                    Some(number)
                }
                (4 | 7 | 10 | 13 | 16 | 19 | 23, _) => None,
                (_, b'0'..=b'9') => Some(number * 10 + u64::from(byte - b'0')),
                _ => None,
            })
    };
    let text = text?;
    digits(text).or_else(|| {
        let time = humantime::parse_rfc3339_weak(text).ok()?;
        digits(&humantime::format_rfc3339_millis(time).to_string())
    })
}

/// The store's data disagrees with itself (hosts not in `seq` order).
fn out_of_order() -> StoreError {
    StoreError::Sqlite("the hosts table did not come in seq order".into())
}
