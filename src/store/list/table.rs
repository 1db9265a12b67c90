//! The hosts in the list's memory, by slot (`HostTable`): filled from typed rows a chunk at
//! a time, sorted once, then patched host by host; each filter becomes a `SlotSet`, and the
//! sets of the last tags and search terms asked are kept until the next change
//! (docs/performance.md, "How the host list is answered").
//!
//! Invariants: pure memory, no SQL (rows come from store::list::reading); slots follow `seq`
//! (SQLite gives a new host a `seq` above every other) and a deleted host's slot stays
//! empty until everything is read again; no secret is held.

use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
use crate::store::list::order::{Order, SortKeys, NEVER, SORTS};
use crate::store::list::own::OwnFields;
use crate::store::list::paging::{self, Shown, Window};
use crate::store::list::reading::{Chunk, SlotRow};
use crate::store::list::sets::{MemberSets, SlotSet};
use crate::store::StoreError;

/// The sets of this many tags and search terms are kept, until the next change.
const KEPT_SETS: usize = 16;
/// The group of a slot without a host.
const NO_SLOT_GROUP: u32 = u32::MAX;

/// Every host by slot.
#[derive(Default)]
pub struct HostTable {
    pub seqs: Vec<i64>,
    pub live: SlotSet,
    favorite: SlotSet,
    pub keys: SortKeys,
    /// Each slot's group number; group `""` is no group.
    group_of: Vec<u32>,
    pub groups: MemberSets,
    tags: MemberSets,
    /// Each slot's tag numbers in the host's order, as a number in `tag_lists` (hosts share
    /// lists: a number a slot is all a host costs). List 0 is no tags.
    tags_of: Vec<u32>,
    tag_lists: Vec<Vec<u32>>,
    tag_list_numbers: HashMap<Vec<u32>, u32>,
    /// One per sort, by `sort as usize`.
    pub orders: Vec<Order>,
    /// The sets of the last tags and search terms asked, the newest last.
    kept: Vec<KeptSet>,
    /// Each slot's row as the list shows it, once read (`None` again when it changes), and
    /// their bytes; empty when they would pass the memory's bound.
    pub rows: Vec<Option<Box<RawValue>>>,
    pub row_bytes: usize,
    pub keeps_rows: bool,
    /// Each slot's own inheritable values (the query language's keys on inherited values).
    pub own: OwnFields,
}

/// A filter asked before, and its hosts.
struct KeptSet {
    filter: Filter,
    hosts: SlotSet,
}

/// A filter whose set is worth keeping: a tag, or a lowercased search term.
#[derive(PartialEq, Eq)]
enum Filter {
    Tag(String),
    Search(String),
}

/// A host of a page: its row as JSON, or its `seq` and tags when the row is still to read.
pub enum Listed {
    Row(Box<RawValue>),
    Unread(i64, Vec<String>),
}

impl HostTable {
    /// Every tag some live host carries, with how many do, by name (a deleted host's slot
    /// may keep its tags until everything is read again: it is not counted).
    pub fn tag_counts(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = self
            .tags
            .members()
            .map(|(name, slots)| {
                let live = slots.iter().filter(|slot| self.live.contains(**slot));
                (name.to_owned(), live.count())
            })
            .filter(|(_, count)| *count > 0)
            .collect();
        counts.sort();
        counts
    }

    /// An empty table, ready for `put`.
    pub fn new() -> HostTable {
        let mut table = HostTable::default();
        table.groups.intern("");
        table.tag_lists.push(Vec::new());
        table.tag_list_numbers.insert(Vec::new(), 0);
        table
    }

    /// Sorts the orders once every host is in, and keeps rows from now on when all of
    /// them would take at most `bound` bytes (`bytes`: what the rows read cost).
    pub fn finish(&mut self, bytes: i64, bound: usize) {
        self.keeps_rows = usize::try_from(bytes).is_ok_and(|bytes| bytes <= bound);
        if self.keeps_rows {
            self.rows.resize(self.seqs.len(), None);
        }
        self.keys.text.shrink();
        let orders = SORTS.map(|sort| Order::sorted(&self.keys, sort, &self.live));
        self.orders = orders.into_iter().collect();
    }

    /// The slot of `seq`, a new one when it is above every other; `None` between slots.
    pub fn slot_of(&mut self, seq: i64) -> Option<u32> {
        if self.seqs.last().is_some_and(|last| *last >= seq) {
            return self.seqs.binary_search(&seq).ok().map(|slot| slot as u32);
        }
        let slot = u32::try_from(self.seqs.len()).ok()?;
        self.seqs.push(seq);
        self.keys.ids.push(0);
        self.keys.created.push(NEVER);
        self.keys.last_used.push(NEVER);
        self.group_of.push(NO_SLOT_GROUP);
        self.tags_of.push(0);
        self.own.push();
        if self.keeps_rows {
            self.rows.push(None);
        }
        Some(slot)
    }

    /// Puts a new host (above every other) in its slot.
    pub fn put(&mut self, row: &SlotRow, chunk: &Chunk) -> Result<(), StoreError> {
        let slot = self.slot_of(row.seq).ok_or(StoreError::ListFull)?;
        self.write(slot, Some((row, chunk)));
        Ok(())
    }

    /// Sets a slot's keys, text and group from a row of `chunk` (`None`: the host is gone).
    pub fn write(&mut self, slot: u32, row: Option<(&SlotRow, &Chunk)>) {
        let group = row.map_or(NO_SLOT_GROUP, |(row, chunk)| {
            let name = chunk.names.get(row.group).map_or("", String::as_str);
            self.groups.intern(name)
        });
        let old = std::mem::replace(&mut self.group_of[slot as usize], group);
        self.groups.remove(old, slot);
        self.groups.add(group, slot);
        let (keys, index) = (&mut self.keys, slot as usize);
        let Some((row, chunk)) = row else {
            self.live.remove(slot);
            self.favorite.remove(slot);
            keys.text.put(slot, "", "");
            self.own.set_row(slot, None);
            return;
        };
        self.own.set_row(slot, Some((row, chunk)));
        self.live.insert(slot);
        match row.favorite {
            true => self.favorite.insert(slot),
            false => self.favorite.remove(slot),
        }
        keys.ids[index] = row.id;
        keys.created[index] = row.created;
        keys.last_used[index] = row.last_used;
        keys.text
            .put(slot, chunk.text(&row.name_key), chunk.text(&row.hostname));
    }

    /// Replaces host `seq`'s tags (`(position, name)` pairs, names numbered in `names`; none
    /// when empty), in their member sets too.
    pub fn set_tags(&mut self, seq: i64, mut tags: Vec<(i64, usize)>, names: &[String]) {
        let Ok(slot) = self.seqs.binary_search(&seq) else {
            return;
        };
        tags.sort_unstable_by_key(|(position, _)| *position);
        let name = |number: usize| names.get(number).map_or("", String::as_str);
        let numbers: Vec<u32> = tags
            .iter()
            .map(|(_, tag)| self.tags.intern(name(*tag)))
            .collect();
        let (slot, old) = (slot as u32, self.tags_of[slot] as usize);
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

    /// A slot as a page lists it: its kept row, else its `seq` and tags.
    pub fn listed(&self, slot: u32) -> Listed {
        match self.rows.get(slot as usize) {
            Some(Some(row)) => Listed::Row(row.clone()),
            _ => {
                let tags = self.tag_lists[self.tags_of[slot as usize] as usize].iter();
                let tags = tags.map(|tag| self.tags.name(*tag).to_owned());
                Listed::Unread(self.seqs[slot as usize], tags.collect())
            }
        }
    }

    /// Forgets the kept sets (a host changed).
    pub fn forget_kept_sets(&mut self) {
        self.kept.clear();
    }

    /// The set of the live hosts among `seqs` (sorted).
    pub fn set_of_seqs(&self, seqs: &[i64]) -> SlotSet {
        let slots: Vec<u32> = seqs
            .iter()
            .filter_map(|seq| self.seqs.binary_search(seq).ok())
            .filter_map(|slot| u32::try_from(slot).ok())
            .collect();
        let mut set = SlotSet::of(self.seqs.len(), &slots);
        set.and(&self.live, false);
        set
    }

    /// The hosts `query`'s filters keep; `None` when it has none.
    pub fn matching(&mut self, query: &HostQuery) -> Option<SlotSet> {
        let slots = self.seqs.len();
        let group = query.group.as_ref().map(|group| match group {
            GroupFilter::Ungrouped => SlotSet::of(slots, self.groups.of("")),
            GroupFilter::Group(id) => SlotSet::of(slots, self.groups.of(id)),
        });
        let tag = query
            .tag
            .as_ref()
            .map(|tag| self.kept(Filter::Tag(tag.clone())));
        let favorite = query.favorite.map(|favorite| {
            let mut set = self.live.clone();
            set.and(&self.favorite, !favorite);
            set
        });
        let search = query
            .search
            .as_ref()
            .map(|term| self.kept(Filter::Search(term.to_lowercase())));
        let mut sets = [group, tag, favorite, search].into_iter().flatten();
        let mut set = sets.next()?;
        sets.for_each(|other| set.and(&other, false));
        Some(set)
    }

    /// The hosts tagged `tag` (kept as the `tag` filter's set is).
    pub fn tag_set(&mut self, tag: &str) -> SlotSet {
        self.kept(Filter::Tag(tag.to_owned()))
    }

    /// The hosts whose name or hostname holds `term` (kept as the `search` filter's set is).
    pub fn search_set(&mut self, term: &str) -> SlotSet {
        self.kept(Filter::Search(term.to_lowercase()))
    }

    /// The number of the slot's group in `groups` (`""`, no group, is a number too).
    pub fn group_number(&self, slot: u32) -> u32 {
        self.group_of
            .get(slot as usize)
            .copied()
            .unwrap_or(NO_SLOT_GROUP)
    }

    /// The favorite hosts.
    pub fn favorites(&self) -> &SlotSet {
        &self.favorite
    }

    /// The set of a tag (from its members) or a search term (from a scan): kept from an
    /// earlier request, or made and kept.
    fn kept(&mut self, filter: Filter) -> SlotSet {
        let hosts = match self.kept.iter().position(|kept| kept.filter == filter) {
            Some(at) => self.kept.remove(at).hosts,
            None => match &filter {
                Filter::Tag(tag) => SlotSet::of(self.seqs.len(), self.tags.of(tag)),
                Filter::Search(term) => SlotSet::from_words(self.keys.text.scan(term.as_bytes())),
            },
        };
        if self.kept.len() == KEPT_SETS {
            self.kept.remove(0);
        }
        let found = hosts.clone();
        self.kept.push(KeptSet { filter, hosts });
        found
    }

    /// The slots of the page `window` in the order `query` asks, among `set` (all hosts
    /// without one).
    pub fn page(&mut self, query: &HostQuery, window: Window, set: Option<&SlotSet>) -> Vec<u32> {
        let (keys, slots) = (&self.keys, self.seqs.len());
        let order = &mut self.orders[query.sort as usize];
        let len = order.slots.len();
        // Hosts with a key come first in both directions: only never-used ones have none.
        let keyed = match query.sort {
            Sort::LastUsedAt => order
                .slots
                .partition_point(|slot| keys.last_used[*slot as usize] != NEVER),
            Sort::Name | Sort::Hostname | Sort::CreatedAt => len,
        };
        let desc = query.direction == Direction::Desc;
        paging::page(order, Shown { desc, keyed, len }, window, set, slots)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{HostTable, Listed};
    use crate::model::host_query::HostQuery;
    use crate::store::list::reading::Chunk;

    fn query(pairs: &[(&str, &str)]) -> HostQuery {
        HostQuery::parse(|name| pairs.iter().find(|(key, _)| *key == name).map(|(_, v)| *v))
            .unwrap()
    }

    fn table() -> HostTable {
        let mut chunk = Chunk::default();
        chunk.push_host(1, "web", "g", true);
        chunk.push_host(2, "db", "", false);
        chunk.push_host(5, "mail", "g", false);
        chunk.push_tag(1, 0, "prod");
        chunk.push_tag(1, 1, "eu");
        chunk.push_tag(5, 0, "prod");
        let mut table = HostTable::new();
        for host in &chunk.hosts {
            table.put(host, &chunk).unwrap();
        }
        for (seq, tags) in chunk.tags_by_host() {
            table.set_tags(seq, tags, &chunk.names);
        }
        table.finish(0, 1 << 20);
        table
    }

    fn slots(table: &mut HostTable, pairs: &[(&str, &str)]) -> Vec<u32> {
        let set = table.matching(&query(pairs));
        set.map_or_else(|| table.live.ones().collect(), |set| set.ones().collect())
    }

    #[test]
    fn each_filter_keeps_its_hosts_and_filters_intersect() {
        let mut table = table();
        assert_eq!(slots(&mut table, &[("group", "g")]), [0, 2]);
        assert_eq!(slots(&mut table, &[("group", "")]), [1]);
        assert_eq!(slots(&mut table, &[("tag", "prod")]), [0, 2]);
        assert_eq!(
            slots(&mut table, &[("favorite", "false"), ("tag", "prod")]),
            [2]
        );
        assert_eq!(slots(&mut table, &[("search", "MAIL.ex")]), [2]);
        assert_eq!(slots(&mut table, &[]), [0, 1, 2]);
    }

    #[test]
    fn a_gone_host_leaves_its_slot_empty_and_every_set() {
        let mut table = table();
        table.write(0, None);
        table.forget_kept_sets();
        assert_eq!(slots(&mut table, &[("group", "g")]), [2]);
        assert_eq!(slots(&mut table, &[("search", "web")]), Vec::<u32>::new());
        assert_eq!(table.slot_of(1), Some(0));
        assert_eq!(
            table.slot_of(3),
            None,
            "a seq between known ones has no slot"
        );
    }

    #[test]
    fn an_unread_host_is_listed_with_its_tags_in_their_order() {
        let table = table();
        let Listed::Unread(seq, tags) = table.listed(0) else {
            panic!("no row was kept");
        };
        assert_eq!((seq, tags), (1, vec!["prod".to_string(), "eu".to_string()]));
    }
}
