//! The host list, answered from memory with one plan; store::hosts `list` reads the rows.
//!
//! Each filter becomes a set of hosts, a bitmap over slots: a group or a tag from its
//! members, `favorite` from its bits, a search from a scan of the search text
//! (store::search_text; the last terms' sets are kept until the next change). The sets
//! intersect; the page is then found in the sort's kept order, walked from its nearer end,
//! or ranked when the set is small (docs/performance.md, "How the host list is answered").
//!
//! Invariants: the list's order is defined here alone (`Keys::cmp`; docs/api.md, API: Hosts,
//! "List"). Nothing is answered from a state older than the connection's: each use first
//! applies what the temp triggers logged (per connection, never in the file), or reads
//! everything again after another connection's commit (`data_version`). No secret is read.

use std::cmp::Ordering;
use std::collections::HashMap;

use rusqlite::{params_from_iter, Connection, Row};
use serde_json::value::RawValue;

use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
use crate::store::search_text::SearchText;
use crate::store::StoreError;

/// The columns `Hosts::write` reads after `seq`. The last is what keeping the host's row as
/// JSON costs, roughly: its texts, about 430 bytes of JSON around them and 30 to keep it.
const COLUMNS: &str = "seq, id, name_key, hostname, created_at, last_used_at, group_id, \
     is_favorite, 460 + length(CAST(name || hostname || username || color || notes AS BLOB))";
/// Tags by host (the primary key's order), of every host or of one.
const SELECT_TAGS: &str = "SELECT host_seq, position, tag FROM main.host_tags ORDER BY host_seq";
const SELECT_TAGS_OF: &str = "SELECT host_seq, position, tag FROM main.host_tags \
     WHERE host_seq = ?1";
/// The tables whose rows are in a host's row as the list shows it, and the column that
/// names the host: a change to any of them is logged (`install`).
const LOGGED: [(&str, &str); 4] = [
    ("hosts", "seq"),
    ("host_tags", "host_seq"),
    ("host_jumps", "host_id"),
    ("host_ssh_options", "host_id"),
];
/// A set of at most 1/`RANK_SHARE` of the hosts is ranked (a lookup per member) rather than
/// walked (a test per host passed).
const RANK_SHARE: usize = 8;
/// The sets of this many tags and search terms are kept, until the next change.
const KEPT_SETS: usize = 16;
/// The hosts' rows as JSON are kept while they take at most this many bytes.
const ROW_BYTES: usize = 64 << 20;
/// The sorts, in `Sort`'s order (`Hosts::orders` is indexed by `sort as usize`).
const SORTS: [Sort; 4] = [
    Sort::Name,
    Sort::Hostname,
    Sort::CreatedAt,
    Sort::LastUsedAt,
];
/// `last_used_at` of a never-used host (last in both directions), and a time that does not
/// parse (after any other).
const NEVER: u64 = u64::MAX;
const UNREADABLE: u64 = u64::MAX - 1;
/// The group of a slot without a host, and a place not yet filled in a merge.
const NONE: u32 = u32::MAX;

/// Sets up the connection's change log. Call once per connection, after migrations.
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
    /// Each slot's group number; group `""` is no group.
    group_of: Vec<u32>,
    groups: Members,
    tags: Members,
    /// Each slot's tag numbers in the host's order, as a number in `tag_lists` (hosts share
    /// lists: a number a slot is all a host costs). List 0 is no tags.
    tags_of: Vec<u32>,
    tag_lists: Vec<Vec<u32>>,
    tag_list_numbers: HashMap<Vec<u32>, u32>,
    /// One per sort, by `sort as usize`.
    orders: Vec<Order>,
    /// The last tags (`true`) and search terms asked, and their sets, the newest last.
    kept: Vec<((bool, String), Bits)>,
    /// Each slot's row as the list shows it, once read (`None` again when it changes), and
    /// their bytes; empty when they would pass the `ListIndex`'s bound.
    rows: Vec<Option<Box<RawValue>>>,
    row_bytes: usize,
    keeps_rows: bool,
}

/// One sort's order: every live slot, ascending.
#[derive(Default)]
struct Order {
    slots: Vec<u32>,
    /// Each slot's place in `slots`, right for the places below `ranked`.
    ranks: Vec<u32>,
    ranked: usize,
    /// Per direction, the slots of each eighth of the order as shown (when a walk needs them).
    eighths: [Vec<Bits>; 2],
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

/// A host of a page: its row as JSON, or its `seq` and tags when the row is still to read.
pub enum Listed {
    Row(Box<RawValue>),
    Unread(i64, Vec<String>),
}

impl ListIndex {
    /// A memory that keeps the hosts' rows while they take at most `row_bytes`.
    pub fn keeping_rows_up_to(row_bytes: usize) -> ListIndex {
        let hosts = None;
        ListIndex {
            hosts,
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
        let limit = usize::try_from(query.per_page)
            .unwrap_or(total)
            .min(total - offset);
        let slots = hosts.page(query, offset, limit, set.as_ref());
        Ok((
            slots.into_iter().map(|slot| hosts.listed(slot)).collect(),
            total as u64,
        ))
    }

    /// Up to `limit` live hosts from slot `from` on whose rows are not kept (none when no
    /// row is kept), and the slot to go on from.
    pub fn unread(
        &mut self,
        conn: &Connection,
        from: usize,
        limit: usize,
    ) -> Result<(Vec<Listed>, usize), StoreError> {
        let hosts = self.current(conn)?;
        let mut slots = (from..hosts.rows.len())
            .filter(|slot| hosts.live.contains(*slot as u32) && hosts.rows[*slot].is_none());
        let unread = slots
            .by_ref()
            .take(limit)
            .map(|slot| hosts.listed(slot as u32))
            .collect();
        Ok((unread, slots.next().unwrap_or(hosts.rows.len())))
    }

    /// How many rows are kept.
    #[cfg(test)]
    pub fn kept_rows(&self) -> usize {
        self.hosts
            .as_ref()
            .map_or(0, |hosts| hosts.rows.iter().flatten().count())
    }

    /// Keeps the rows just read for `seq`s (under the lock the page was found under); past
    /// the bound, drops them all and keeps none until everything is read again.
    pub fn keep(&mut self, rows: &[(i64, Box<RawValue>)]) {
        let Some(hosts) = self.hosts.as_mut().filter(|hosts| hosts.keeps_rows) else {
            return;
        };
        for (seq, row) in rows {
            let slot = hosts.seqs.binary_search(seq).ok();
            if let Some(kept) = slot.and_then(|slot| hosts.rows.get_mut(slot)) {
                hosts.row_bytes += row.get().len();
                hosts.row_bytes -= kept.replace(row.clone()).map_or(0, |old| old.get().len());
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
        // together (each is over 100 MiB at a million hosts).
        let kept = self
            .hosts
            .take()
            .filter(|hosts| hosts.data_version == version);
        let patched = match kept {
            Some(hosts) if fresh => return Ok(self.hosts.insert(hosts)),
            Some(hosts) => hosts.patch(conn)?,
            None => None,
        };
        let hosts = match patched {
            Some(hosts) => hosts,
            None => Hosts::read(conn, version, self.row_bytes)?,
        };
        conn.prepare_cached("DELETE FROM list_changed_hosts")?
            .execute([])?;
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
        hosts.tag_lists.push(Vec::new());
        hosts.tag_list_numbers.insert(Vec::new(), 0);
        let mut statement =
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM main.hosts ORDER BY seq"))?;
        let (mut rows, mut bytes) = (statement.query([])?, 0);
        while let Some(row) = rows.next()? {
            let slot = hosts.slot_of(row.get(0)?).ok_or_else(too_large)?;
            hosts.write(slot, Some(row))?;
            bytes += row.get::<_, i64>(8)?;
        }
        hosts.keeps_rows = usize::try_from(bytes).is_ok_and(|bytes| bytes <= row_bytes);
        if hosts.keeps_rows {
            hosts.rows.resize(hosts.seqs.len(), None);
        }
        hosts.read_tags(conn, None)?;
        hosts.keys.text.shrink();
        let keys = &hosts.keys;
        let orders = SORTS.iter().map(|sort| {
            let live = hosts.live.ones();
            let mut keyed: Vec<_> = live.map(|slot| (keys.prefix(*sort, slot), slot)).collect();
            // The prefix settles most comparisons, so the sort mostly reads one array.
            keyed.sort_unstable_by(|(x, a), (y, b)| x.cmp(y).then_with(|| keys.cmp(*sort, *a, *b)));
            let slots = keyed.into_iter().map(|(_, slot)| slot).collect();
            Order {
                slots,
                ..Order::default()
            }
        });
        hosts.orders = orders.collect();
        Ok(hosts)
    }

    /// Applies the logged changes. `None`: read everything again instead (a host between
    /// known `seq`s, never seen; an order at odds with the keys).
    fn patch(mut self, conn: &Connection) -> Result<Option<Hosts>, StoreError> {
        self.kept.clear();
        let mut statement =
            conn.prepare_cached("SELECT seq FROM list_changed_hosts ORDER BY seq")?;
        let seqs: Result<Vec<i64>, _> = statement.query_map([], |row| row.get(0))?.collect();
        let mut changed = Vec::new();
        for seq in seqs? {
            let Some(slot) = self.slot_of(seq) else {
                return Ok(None);
            };
            changed.push((seq, slot));
        }
        // Each changed host's places, found by the keys before any of them changes.
        let live = |hosts: &Hosts| {
            let slots = changed.iter().map(|(_, slot)| *slot);
            slots
                .filter(|slot| hosts.live.contains(*slot))
                .collect::<Vec<u32>>()
        };
        let (was_live, mut places) = (live(&self), Vec::new());
        for (order, sort) in self.orders.iter().zip(SORTS) {
            let search = |slot: &u32| {
                order
                    .slots
                    .binary_search_by(|probe| self.keys.cmp(sort, *probe, *slot))
            };
            let Ok(mut found) = was_live.iter().map(search).collect::<Result<Vec<_>, _>>() else {
                return Ok(None);
            };
            found.sort_unstable();
            places.push(found);
        }
        let mut statement =
            conn.prepare_cached(&format!("SELECT {COLUMNS} FROM main.hosts WHERE seq = ?1"))?;
        for (seq, slot) in &changed {
            self.write(*slot, statement.query([seq])?.next()?)?;
            self.read_tags(conn, Some(*seq))?;
            if let Some(row) = self.rows.get_mut(*slot as usize).and_then(Option::take) {
                self.row_bytes -= row.get().len();
            }
        }
        let mut into = live(&self);
        let same = into == was_live && was_live.len() == changed.len();
        for (at, places) in places.iter().enumerate() {
            if !self.reorder(at, places, &mut into, same) {
                return Ok(None);
            }
        }
        Ok(Some(self))
    }

    /// Takes the slots at `places` (ascending) out of order `at` and merges `into` in at
    /// their places by the current keys, moving each stretch between two of them once, in
    /// place: one path for one change and for thousands (an import). Nothing moves when the
    /// same hosts changed (`same`) and each still sits between its neighbours (a host moved,
    /// made a favorite, retagged, its notes edited). False when the order was at odds with
    /// the keys.
    fn reorder(&mut self, at: usize, places: &[usize], into: &mut [u32], same: bool) -> bool {
        let (sort, keys) = (SORTS[at], &self.keys);
        let Order {
            slots: order,
            ranked,
            eighths,
            ..
        } = &mut self.orders[at];
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
        *ranked = (*ranked).min(first).min(unread);
        *eighths = Default::default();
        true
    }

    /// Sets the tags of every host that has some (`None`), or of one, none included.
    fn read_tags(&mut self, conn: &Connection, of: Option<i64>) -> Result<(), StoreError> {
        let mut statement = conn.prepare_cached(of.map_or(SELECT_TAGS, |_| SELECT_TAGS_OF))?;
        let mut rows = statement.query(params_from_iter(of))?;
        let (mut host, mut tags) = (None, Vec::new());
        loop {
            let row = rows.next()?;
            let seq = row.map(|row| row.get::<_, i64>(0)).transpose()?;
            let slot = host.filter(|done| Some(*done) != seq);
            if let Some(Ok(slot)) = slot.map(|done| self.seqs.binary_search(&done)) {
                self.set_tags(slot as u32, &mut tags);
            }
            let Some(row) = row else {
                let untagged = of.filter(|_| host.is_none());
                if let Some(Ok(slot)) = untagged.map(|seq| self.seqs.binary_search(&seq)) {
                    self.set_tags(slot as u32, &mut []);
                }
                return Ok(());
            };
            if host != seq {
                (host, tags) = (seq, Vec::new());
            }
            let tag = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
            tags.push((row.get::<_, i64>(1)?, self.tags.intern(tag)));
        }
    }

    /// Replaces a slot's tags (`(position, number)` pairs), in their members too.
    fn set_tags(&mut self, slot: u32, tags: &mut [(i64, u32)]) {
        tags.sort_unstable();
        let numbers: Vec<u32> = tags.iter().map(|(_, number)| *number).collect();
        let old = self.tags_of[slot as usize] as usize;
        if self.tag_lists[old] == numbers {
            return;
        }
        for number in &self.tag_lists[old] {
            self.tags.remove(*number, slot);
        }
        for number in &numbers {
            self.tags.add(*number, slot);
        }
        let next = self.tag_lists.len() as u32;
        let list = *self.tag_list_numbers.entry(numbers.clone()).or_insert(next);
        if list == next {
            self.tag_lists.push(numbers);
        }
        self.tags_of[slot as usize] = list;
    }

    /// A slot as a page lists it: its kept row, else its `seq`.
    fn listed(&self, slot: u32) -> Listed {
        match self.rows.get(slot as usize) {
            Some(Some(row)) => Listed::Row(row.clone()),
            _ => {
                let tags = self.tag_lists[self.tags_of[slot as usize] as usize].iter();
                let tags = tags.map(|tag| self.tags.names[*tag as usize].clone());
                Listed::Unread(self.seqs[slot as usize], tags.collect())
            }
        }
    }

    /// The slot of `seq`, a new one when it is above every other; `None` between slots.
    fn slot_of(&mut self, seq: i64) -> Option<u32> {
        if self.seqs.last().is_some_and(|last| *last >= seq) {
            return self.seqs.binary_search(&seq).ok().map(|slot| slot as u32);
        }
        let slot = u32::try_from(self.seqs.len()).ok()?;
        self.seqs.push(seq);
        self.keys.ids.push(0);
        self.keys.created.push(NEVER);
        self.keys.last_used.push(NEVER);
        self.group_of.push(NONE);
        self.tags_of.push(0);
        if self.keeps_rows {
            self.rows.push(None);
        }
        Some(slot)
    }

    /// Sets a slot's columns, text and group from `row`'s columns 1-7 (`None`: the host is
    /// gone).
    fn write(&mut self, slot: u32, row: Option<&Row<'_>>) -> Result<(), StoreError> {
        let text = |column: usize| column_text(row, column);
        let group = match row {
            Some(_) => self.groups.intern(text(6)?),
            None => NONE,
        };
        let old = std::mem::replace(&mut self.group_of[slot as usize], group);
        self.groups.remove(old, slot);
        self.groups.add(group, slot);
        let (keys, index) = (&mut self.keys, slot as usize);
        let Some(row) = row else {
            self.live.remove(slot);
            self.favorite.remove(slot);
            keys.text.put(slot, "", "");
            return Ok(());
        };
        self.live.insert(slot);
        match row.get(7)? {
            true => self.favorite.insert(slot),
            false => self.favorite.remove(slot),
        }
        keys.ids[index] = id_key(text(1)?);
        keys.created[index] = time_key(text(4)?).unwrap_or(UNREADABLE);
        keys.last_used[index] = time_key(text(5)?).unwrap_or(NEVER);
        keys.text.put(slot, text(2)?, &text(3)?.to_lowercase());
        Ok(())
    }

    /// The hosts `query`'s filters keep; `None` when it has none.
    fn matching(&mut self, query: &HostQuery) -> Option<Bits> {
        let slots = self.seqs.len();
        let group = query.group.as_ref().map(|group| match group {
            GroupFilter::Ungrouped => Bits::of(slots, self.groups.of("")),
            GroupFilter::Group(id) => Bits::of(slots, self.groups.of(id)),
        });
        let tag = query.tag.as_ref().map(|tag| self.kept((true, tag.clone())));
        let favorite = query.favorite.map(|favorite| {
            let mut set = self.live.clone();
            set.and(&self.favorite, !favorite);
            set
        });
        let search = query
            .search
            .as_ref()
            .map(|term| self.kept((false, term.to_lowercase())));
        let mut sets = [group, tag, favorite, search].into_iter().flatten();
        let mut set = sets.next()?;
        sets.for_each(|other| set.and(&other, false));
        Some(set)
    }

    /// The set of a tag (from its members) or a search term (from a scan): kept from an
    /// earlier request, or made and kept.
    fn kept(&mut self, asked: (bool, String)) -> Bits {
        let found = match self.kept.iter().position(|(kept, _)| *kept == asked) {
            Some(at) => self.kept.remove(at).1,
            None if asked.0 => Bits::of(self.seqs.len(), self.tags.of(&asked.1)),
            None => Bits(self.keys.text.scan(asked.1.as_bytes())),
        };
        if self.kept.len() == KEPT_SETS {
            self.kept.remove(0);
        }
        self.kept.push((asked, found.clone()));
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
        let (keys, all) = (&self.keys, self.seqs.len());
        let Order {
            slots,
            ranks,
            ranked,
            eighths,
        } = &mut self.orders[query.sort as usize];
        let (len, desc) = (slots.len(), query.direction == Direction::Desc);
        // Hosts with a key come first in both directions: only never-used ones have none.
        let keyed = match query.sort {
            Sort::LastUsedAt => {
                slots.partition_point(|slot| keys.last_used[*slot as usize] != NEVER)
            }
            Sort::Name | Sort::Hostname | Sort::CreatedAt => len,
        };
        // The place in `slots` of the host shown at `shown`, and back (its own inverse).
        let place = |shown: usize| match (desc, shown < keyed) {
            (false, _) => shown,
            (true, true) => keyed - 1 - shown,
            (true, false) => keyed + len - 1 - shown,
        };
        let Some(set) = set else {
            return (offset..offset + limit)
                .map(|shown| slots[place(shown)])
                .collect();
        };
        let count = set.count();
        if count <= len / RANK_SHARE {
            ranks.resize(all, 0);
            for (rank, slot) in slots.iter().enumerate().skip(*ranked) {
                ranks[*slot as usize] = rank as u32;
            }
            *ranked = len;
            let mut shown: Vec<usize> = set
                .ones()
                .map(|slot| place(ranks[slot as usize] as usize))
                .collect();
            shown.select_nth_unstable(offset);
            let page = &mut shown[offset..];
            if limit < page.len() {
                page.select_nth_unstable(limit);
            }
            let page = &mut page[..limit];
            page.sort_unstable();
            return page.iter().map(|shown| slots[place(*shown)]).collect();
        }
        let (part, eighths) = (len.div_ceil(8), &mut eighths[usize::from(desc)]);
        if eighths.is_empty() {
            *eighths = vec![Bits::default(); 8];
            for shown in 0..len {
                eighths[shown / part].insert(slots[place(shown)]);
            }
        }
        // From the nearer end: the page is the members after the first `skip` walked.
        let back = offset > count - offset - limit;
        let mut skip = if back { count - offset - limit } else { offset };
        let at = |step: usize| if back { len - 1 - step } else { step };
        let (mut page, mut step) = (Vec::with_capacity(limit), 0);
        while page.len() < limit && step < len {
            let (shown, first) = (at(step), at(step) / part * part);
            let size = part.min(len - first);
            // The steps left in this eighth: all of it at its start, where its members'
            // count (an AND and a count of bits) may pass it whole.
            let left = if back {
                shown - first + 1
            } else {
                first + size - shown
            };
            let members = (left == size).then(|| set.and_count(&eighths[shown / part]));
            if let Some(members) = members.filter(|members| skip >= *members) {
                skip -= members;
                step += size;
                continue;
            }
            // Then 64 hosts at a time, passed by their count (a sum without branches).
            let block = (step..step + left.min(64)).map(|step| slots[place(at(step))]);
            let members: usize = block.clone().map(|slot| set.bit(slot)).sum();
            if skip >= members {
                skip -= members;
            } else {
                let taken = block
                    .filter(|slot| set.contains(*slot))
                    .skip(std::mem::take(&mut skip));
                page.extend(taken.take(limit - page.len()));
            }
            step += left.min(64);
        }
        if back {
            page.reverse();
        }
        page
    }
}

impl Keys {
    /// `a` against `b` in `sort`'s ascending order: the key, the id, then the slot.
    fn cmp(&self, sort: Sort, a: u32, b: u32) -> Ordering {
        let (x, y) = (a as usize, b as usize);
        let key = match sort {
            Sort::Name => self.text.field(a, 0).cmp(self.text.field(b, 0)),
            Sort::Hostname => self.text.field(a, 1).cmp(self.text.field(b, 1)),
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
            Sort::Name => prefix(self.text.field(slot, 0)),
            Sort::Hostname => prefix(self.text.field(slot, 1)),
            Sort::CreatedAt => u128::from(self.created[index]) << 64 | id,
            Sort::LastUsedAt => u128::from(self.last_used[index]) << 64 | id,
        }
    }
}

impl Members {
    /// The number of `name`, added when new.
    fn intern(&mut self, name: &str) -> u32 {
        let next = self.slots.len() as u32;
        if let Some(number) = self.index.get(name) {
            return *number;
        }
        self.index.insert(name.to_owned(), next);
        self.names.push(name.to_owned());
        self.slots.push(Vec::new());
        next
    }

    /// The slots of `name` (none when unknown).
    fn of(&self, name: &str) -> &[u32] {
        self.index
            .get(name)
            .map_or(&[], |number| &self.slots[*number as usize])
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
        for chunk in members.chunk_by(|a, b| a / 64 == b / 64) {
            let word = chunk.iter().fold(0, |word, slot| word | 1 << (slot % 64));
            words[chunk[0] as usize / 64] |= word;
        }
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
        let word = self.0.get(slot as usize / 64);
        word.map_or(0, |word| (word >> (slot % 64)) as usize & 1)
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

    /// Keeps the slots `other` holds, or with `not` those it does not.
    fn and(&mut self, other: &Bits, not: bool) {
        for (at, word) in self.0.iter_mut().enumerate() {
            let other = other.0.get(at).copied().unwrap_or(0);
            *word &= if not { !other } else { other };
        }
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

fn too_large() -> StoreError {
    StoreError::ListFull
}
