//! The list's read side in memory, beside the connection (`Db`): the host list's orders,
//! member sets, search text and kept rows (`HostTable`), and the group tree, answered from
//! one plan (docs/performance.md, "How the host list is answered"; docs/api.md, API: Hosts
//! "List" and Groups).
//!
//! Invariants: one change tracker for hosts and groups: nothing is answered from a state
//! older than the connection's: each use first applies what the temp triggers logged (per
//! connection, never in the file), or reads everything again after another connection's
//! commit (`data_version`). One lock (`Db`'s list lock), after the connection's; a table
//! built aside at start-up (`Building`) is read a chunk under the connection's lock and
//! put together and sorted holding neither.
//! A failure leaves nothing behind, so the next use reads everything again. No secret.

mod effective;
pub mod group_tree;
mod inherited;
mod notes;
mod order;
mod own;
mod paging;
mod patch;
mod query;
pub mod reading;
pub mod rows;
pub mod search_text;
mod sets;
mod table;
#[cfg(test)]
mod tests;
mod tree_body;

use rusqlite::Connection;
use serde_json::value::RawValue;

pub use reading::{data_version, install};
pub use table::Listed;

use crate::model::host_query::HostQuery;
use crate::store::list::group_tree::GroupTree;
use crate::store::list::paging::Window;
use crate::store::list::table::HostTable;
use crate::store::StoreError;

/// The hosts' rows as JSON are kept while they take at most this many bytes.
const ROW_BYTES: usize = 64 << 20;
/// Hosts read a chunk at a time (one query each, and a lock each when built aside); small
/// in unit tests, so they cross chunks. Small on purpose: a chunk's rows are freed while the
/// table grows, and with chunks of 32,768 hosts the holes they left kept about 18 MiB more
/// resident at a million hosts (180 against 163 MiB once the first list is answered, same
/// data dir); 1,024 costs nothing measurable in the start-up read (docs/performance.md).
const CHUNK: usize = if cfg!(test) { 16 } else { 1024 };

/// The list's memory; touched only under `Db`'s list lock.
pub struct ListMemory {
    hosts: Option<HostTable>,
    tree: Option<GroupTree>,
    tracker: Tracker,
    /// At most this many bytes of rows as JSON are kept.
    row_bytes: usize,
    /// The start-up read of a table aside is under way (`Db::warm_list`).
    warming: bool,
}

/// How fresh the memory is: the `data_version` it was read at and the connection's
/// `total_changes` after the logs were last emptied (while it stays, no log grew).
#[derive(Default)]
struct Tracker {
    data_version: Option<i64>,
    changes_seen: Option<u64>,
}

/// What the memory must do before answering.
#[derive(PartialEq, Eq)]
enum Freshness {
    Current,
    /// This connection wrote: apply the logs.
    Logged,
    /// Another connection committed: read everything again.
    Stale,
}

/// A page's hosts in order, and the number of hosts matching.
pub struct Page {
    pub hosts: Vec<Listed>,
    pub total: u64,
}

/// A host table being read a chunk at a time, perhaps aside (no lock held between chunks).
pub struct Building {
    table: HostTable,
    data_version: i64,
    after: i64,
    bytes: i64,
    row_bound: usize,
    done: bool,
}

impl Default for ListMemory {
    fn default() -> ListMemory {
        ListMemory::keeping_rows_up_to(ROW_BYTES)
    }
}

impl Tracker {
    fn check(&self, conn: &Connection, version: i64) -> Freshness {
        if self.data_version != Some(version) {
            Freshness::Stale
        } else if self.changes_seen != Some(conn.total_changes()) {
            Freshness::Logged
        } else {
            Freshness::Current
        }
    }
}

impl ListMemory {
    /// A memory that keeps the hosts' rows while they take at most `row_bytes`.
    pub fn keeping_rows_up_to(row_bytes: usize) -> ListMemory {
        ListMemory {
            hosts: None,
            tree: None,
            tracker: Tracker::default(),
            row_bytes,
            warming: false,
        }
    }

    /// Marks the start-up read of a table aside as under way, or over.
    pub fn set_warming(&mut self, warming: bool) {
        self.warming = warming;
    }

    /// True while a use would read a table that the start-up read is about to take in.
    pub fn waits_for_warm_up(&self) -> bool {
        self.warming && self.hosts.is_none()
    }

    /// `query`'s page in order, and how many hosts match.
    pub fn page(&mut self, conn: &Connection, query: &HostQuery) -> Result<Page, StoreError> {
        let inherited = inherited::matching(conn, query)?;
        self.current(conn)?;
        let (Some(hosts), Some(tree)) = (self.hosts.as_mut(), self.tree.as_ref()) else {
            return Err(StoreError::BrokenInvariant(
                "the list's memory is current without hosts or groups".into(),
            ));
        };
        let mut set = hosts.matching(query);
        if let Some(seqs) = inherited {
            let other = hosts.set_of_seqs(&seqs);
            set = Some(match set {
                Some(mut set) => {
                    set.and(&other, false);
                    set
                }
                None => other,
            });
        }
        if let Some(find) = query
            .find
            .as_ref()
            .filter(|find| !find.query.terms.is_empty())
        {
            let found = query::select(conn, (hosts, tree), set, &find.query, find.now)?;
            set = Some(found);
        }
        let total = set
            .as_ref()
            .map_or_else(|| hosts.live.count(), |set| set.count());
        let offset = query
            .offset()
            .and_then(|offset| usize::try_from(offset).ok());
        let Some(offset) = offset.filter(|offset| *offset < total) else {
            let (hosts, total) = (Vec::new(), total as u64);
            return Ok(Page { hosts, total });
        };
        let limit = usize::try_from(query.per_page)
            .unwrap_or(total)
            .min(total - offset);
        let slots = hosts.page(query, Window { offset, limit }, set.as_ref());
        let hosts = slots.into_iter().map(|slot| hosts.listed(slot)).collect();
        Ok(Page {
            hosts,
            total: total as u64,
        })
    }

    /// Every tag some host carries and how many do, ordered by name (`GET /api/tags`).
    pub fn tag_counts(&mut self, conn: &Connection) -> Result<Vec<(String, usize)>, StoreError> {
        Ok(self.current(conn)?.tag_counts())
    }

    /// The `seq`s of the hosts `query`'s filters keep (every host when it has none),
    /// ascending: what a batch by filter selects (docs/api.md, Hosts, "Batch").
    pub fn matching_seqs(
        &mut self,
        conn: &Connection,
        query: &HostQuery,
    ) -> Result<Vec<i64>, StoreError> {
        let hosts = self.current(conn)?;
        let set = hosts.matching(query);
        let kept = |slot: u32| {
            hosts.live.contains(slot) && set.as_ref().is_none_or(|set| set.contains(slot))
        };
        Ok((0..hosts.seqs.len())
            .filter(|slot| kept(*slot as u32))
            .map(|slot| hosts.seqs[slot])
            .collect())
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

    /// Keeps the rows just read for `seq`s (under the lock the page was found under, or
    /// with nothing changed since: `Db::warm_list`); past the bound, drops them all and keeps
    /// none until everything is read again.
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

    /// The `{ items: [Group] }` body of `GET /api/groups`, with the host counts of the
    /// hosts' member sets.
    pub fn group_tree(&mut self, conn: &Connection) -> Result<Vec<u8>, StoreError> {
        self.current(conn)?;
        let (Some(hosts), Some(tree)) = (&self.hosts, &self.tree) else {
            return Err(StoreError::BrokenInvariant(
                "the list's memory is current without hosts or groups".into(),
            ));
        };
        Ok(tree.render(|id| hosts.groups.of(id).len() as u64))
    }

    /// A table to read aside of this memory (start-up; see `install`).
    pub fn building(&self, conn: &Connection) -> Result<Building, StoreError> {
        Building::start(conn, self.row_bytes)
    }

    /// Takes in a table read aside, unless the memory has one already or another
    /// connection committed since it was started; then brings it up to the connection's
    /// state from the logs, which hold every write of this connection since. True when
    /// it was taken in.
    pub fn install(&mut self, conn: &Connection, built: Building) -> Result<bool, StoreError> {
        if self.hosts.is_some() || data_version(conn)? != built.data_version {
            return Ok(false);
        }
        if self.tracker.data_version != Some(built.data_version) {
            self.tree = None;
        }
        self.hosts = Some(built.table);
        self.tracker = Tracker {
            data_version: Some(built.data_version),
            changes_seen: None,
        };
        self.current(conn).map(|_| true)
    }

    /// The memory at the connection's state.
    fn current(&mut self, conn: &Connection) -> Result<&mut HostTable, StoreError> {
        let version = data_version(conn)?;
        let freshness = self.tracker.check(conn, version);
        // A memory that another connection's commit made stale goes before anything is read,
        // and so does one the log cannot patch: the old and the new never sit in memory
        // together (each is over 100 MiB at a million hosts).
        let (kept, tree) = match freshness {
            Freshness::Stale => (None, None),
            Freshness::Current | Freshness::Logged => (self.hosts.take(), self.tree.take()),
        };
        if freshness == Freshness::Current && kept.is_some() && tree.is_some() {
            (self.hosts, self.tree) = (kept, tree);
            return self.hosts.as_mut().ok_or_else(|| {
                StoreError::BrokenInvariant("a current list memory lost its hosts".into())
            });
        }
        let patched = match kept {
            Some(hosts) => patch::patch(conn, hosts)?,
            None => None,
        };
        let hosts = match patched {
            Some(hosts) => hosts,
            None => Building::start(conn, self.row_bytes)?.read_all(conn)?,
        };
        let mut tree = tree.unwrap_or_default();
        tree.refresh(conn)?;
        reading::clear_changed(conn)?;
        self.tracker = Tracker {
            data_version: Some(version),
            changes_seen: Some(conn.total_changes()),
        };
        self.tree = Some(tree);
        Ok(self.hosts.insert(hosts))
    }
}

impl Building {
    fn start(conn: &Connection, row_bound: usize) -> Result<Building, StoreError> {
        Ok(Building {
            table: HostTable::new(),
            data_version: data_version(conn)?,
            after: i64::MIN,
            bytes: 0,
            row_bound,
            done: false,
        })
    }

    /// Reads the next chunk (under the caller's lock); false when none is left. A chunk
    /// read after another connection committed is not read: `install` drops the table.
    pub fn read_chunk(&mut self, conn: &Connection) -> Result<Option<reading::Chunk>, StoreError> {
        if self.done || data_version(conn)? != self.data_version {
            return Ok(None);
        }
        let chunk = reading::chunk(conn, self.after, CHUNK)?;
        self.done = chunk.hosts.len() < CHUNK;
        Ok(Some(chunk))
    }

    /// Puts a chunk's hosts in the table (no lock needed).
    pub fn apply(&mut self, chunk: reading::Chunk) -> Result<(), StoreError> {
        for host in &chunk.hosts {
            self.table.put(host, &chunk)?;
            self.bytes += host.row_bytes;
            self.after = host.seq;
        }
        for (seq, tags) in chunk.tags_by_host() {
            self.table.set_tags(seq, tags, &chunk.names);
        }
        Ok(())
    }

    /// Sorts the orders (no lock needed).
    pub fn finish(&mut self) {
        self.table.finish(self.bytes, self.row_bound);
    }

    /// Every chunk, under the caller's lock, and the sorted table.
    fn read_all(mut self, conn: &Connection) -> Result<HostTable, StoreError> {
        while let Some(chunk) = self.read_chunk(conn)? {
            self.apply(chunk)?;
        }
        self.finish();
        Ok(self.table)
    }
}
