//! The change log behind `GET /api/changes` (docs/api.md, "Change feed"): reading the entries
//! after a cursor, recording the vault's events, the current revision of a host, group or
//! key, the logs' retention, and the `Feed` that requests waiting for a change share.
//!
//! Invariants: entries of hosts, groups, keys, identities, known-hosts entries and
//! connections are written by the schema's triggers (sql/0006_changes.sql,
//! sql/0012_identities.sql) in the transaction of their change, never here; the vault's
//! events are the only entries written from Rust here, in the transaction of the vault row
//! where there is one, and the SSH agent's sign requests waiting for approval (they are not
//! rows either), besides the hosts that follow a group's or an identity's edit
//! (`store::inherit::log_followers`); an entry names a resource and what
//! happened to it, never a value; a reader whose cursor fell behind the trim, or points past
//! the newest entry, gets `reset` and no entries; a waiting request holds no lock (the
//! `Feed`'s own is taken only to compare a counter), and every commit wakes every waiting
//! request at once; the readers a commit wakes read the database once between them (the
//! `Feed`'s loading lock, taken before the database's); at most the cap handed to
//! `try_wait_place` wait at once.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use rusqlite::{params, Connection, OptionalExtension};

use crate::store::{Db, StoreError};

/// docs/api.md "Change feed": the newest 10,000 entries are kept (about 1 MB). A window that was
/// away for longer than that many changes reloads instead of replaying them.
pub const CHANGES_KEPT: u64 = 10_000;

/// docs/api.md "Connection history": the newest 10,000 connections are kept, across all hosts.
pub const HISTORY_KEPT: u64 = 10_000;

const SELECT_AFTER: &str =
    "SELECT seq, at, kind, id, op FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2";
/// The newest `seq` ever given, also when its entry was trimmed: AUTOINCREMENT keeps it in
/// `sqlite_sequence`, across restarts.
const SELECT_LATEST: &str =
    "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0)";
const SELECT_TRIMMED_THROUGH: &str =
    "SELECT changes_trimmed_through FROM log_retention WHERE id = 1";
const INSERT_VAULT_CHANGE: &str = "INSERT INTO changes (at, kind, id, op) \
     VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'vault', 'vault', ?1)";
const INSERT_AGENT_REQUEST_CHANGE: &str = "INSERT INTO changes (at, kind, id, op) \
     VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'agent_request', ?1, ?2)";
/// Writes only when a bound differs, so a start with the usual bounds writes nothing.
const UPDATE_RETENTION: &str = "UPDATE log_retention SET changes_kept = ?1, history_kept = ?2 \
     WHERE id = 1 AND (changes_kept IS NOT ?1 OR history_kept IS NOT ?2)";
const SELECT_HOST_REVISION: &str = "SELECT revision FROM hosts WHERE id = ?1";
const SELECT_GROUP_REVISION: &str = "SELECT revision FROM groups WHERE id = ?1";
const SELECT_KEY_REVISION: &str = "SELECT revision FROM keys WHERE id = ?1";
const SELECT_IDENTITY_REVISION: &str = "SELECT revision FROM identities WHERE id = ?1";
const SELECT_FORWARD_REVISION: &str = "SELECT revision FROM forwards WHERE id = ?1";

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub seq: i64,
    pub at: String,
    /// `host`, `group`, `key`, `identity`, `known_host`, `history`, `vault` or
    /// `agent_request`.
    pub kind: String,
    /// The resource's id; the host's for `history`; `vault` for the vault.
    pub id: String,
    /// `created`, `updated`, `deleted`; for the vault `locked`, `unlocked` or `updated`.
    pub op: String,
}

/// What a reader gets: entries after its cursor, and the cursor to ask with next.
#[derive(Debug, PartialEq, Eq)]
pub struct ChangePage {
    pub items: Vec<Change>,
    /// The `seq` of the last item, or the cursor asked with when there is none; after a
    /// reset, the newest `seq`.
    pub next: i64,
    /// Entries after the cursor were trimmed (or the cursor is from another log): reload
    /// everything, then follow from `next`.
    pub reset: bool,
}

/// A vault event for the log (the vault has no row per event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaultChange {
    Locked,
    Unlocked,
    /// A master password was set, changed or removed.
    PasswordChanged,
}

/// A resource that carries a revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revised {
    Host,
    Group,
    Key,
    Identity,
    Forward,
}

/// How many entries of each log are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub changes_kept: u64,
    pub history_kept: u64,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            changes_kept: CHANGES_KEPT,
            history_kept: HISTORY_KEPT,
        }
    }
}

/// The newest `seq` given so far; 0 before the first change.
pub fn latest(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(SELECT_LATEST)?
        .query_row([], |row| row.get(0))?)
}

/// At most `limit` entries after `since`, oldest first, or a reset when entries after
/// `since` are gone or `since` is past the newest `seq`.
pub fn after(conn: &Connection, since: i64, limit: u32) -> Result<ChangePage, StoreError> {
    let latest = latest(conn)?;
    let trimmed_through: i64 = conn
        .prepare_cached(SELECT_TRIMMED_THROUGH)?
        .query_row([], |row| row.get(0))?;
    if since > latest || since < trimmed_through {
        return Ok(ChangePage {
            items: Vec::new(),
            next: latest,
            reset: true,
        });
    }
    let mut statement = conn.prepare_cached(SELECT_AFTER)?;
    let items = statement
        .query_map(params![since, limit], |row| {
            Ok(Change {
                seq: row.get(0)?,
                at: row.get(1)?,
                kind: row.get(2)?,
                id: row.get(3)?,
                op: row.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let next = items.last().map_or(since, |item| item.seq);
    Ok(ChangePage {
        items,
        next,
        reset: false,
    })
}

/// Appends a vault event. Caller holds the write transaction (of the vault row, when the
/// event changes it).
pub fn record_vault(conn: &Connection, change: VaultChange) -> Result<(), StoreError> {
    let op = match change {
        VaultChange::Locked => "locked",
        VaultChange::Unlocked => "unlocked",
        VaultChange::PasswordChanged => "updated",
    };
    conn.prepare_cached(INSERT_VAULT_CHANGE)?.execute([op])?;
    Ok(())
}

/// Appends an SSH agent sign request's event (docs/agent.md "SSH agent"): `created` when request
/// `id` starts waiting for a decision, `deleted` when it ends.
pub fn record_agent_request(conn: &Connection, id: &str, waiting: bool) -> Result<(), StoreError> {
    let op = match waiting {
        true => "created",
        false => "deleted",
    };
    conn.prepare_cached(INSERT_AGENT_REQUEST_CHANGE)?
        .execute([id, op])?;
    Ok(())
}

/// The current revision of a host, group or key; its `*NotFound` when there is none.
pub fn revision(conn: &Connection, resource: Revised, id: &str) -> Result<i64, StoreError> {
    let (sql, missing) = match resource {
        Revised::Host => (SELECT_HOST_REVISION, StoreError::HostNotFound),
        Revised::Group => (SELECT_GROUP_REVISION, StoreError::GroupNotFound),
        Revised::Key => (SELECT_KEY_REVISION, StoreError::KeyNotFound),
        Revised::Identity => (SELECT_IDENTITY_REVISION, StoreError::IdentityNotFound),
        Revised::Forward => (SELECT_FORWARD_REVISION, StoreError::ForwardNotFound),
    };
    conn.prepare_cached(sql)?
        .query_row([id], |row| row.get(0))
        .optional()?
        .ok_or(missing)
}

/// Stores the bounds the triggers trim to; they apply from the next entry on.
pub fn set_retention(conn: &Connection, retention: Retention) -> Result<(), StoreError> {
    let clamp = |count: u64| i64::try_from(count.max(1)).unwrap_or(i64::MAX);
    conn.execute(
        UPDATE_RETENTION,
        params![clamp(retention.changes_kept), clamp(retention.history_kept)],
    )?;
    Ok(())
}

/// What the requests following the feed share: the commit count they wait on (every commit
/// wakes them all at once), the newest `seq`, and the last page read, so that the readers
/// woken by one commit, all asking for the same page, read the database once, and a reader
/// already at the newest `seq` does not read it at all.
#[derive(Default)]
pub struct Feed {
    state: Mutex<FeedState>,
    changed: Condvar,
    /// Held while a page is read from the database, so that the readers a commit wakes
    /// read it once between them and the others take the kept page (lock order: this, then
    /// the database, then `state`; a writer takes none of it but `state`).
    loading: Mutex<()>,
}

#[derive(Default)]
struct FeedState {
    /// Commits so far; a waiter compares it with the value it read before its page.
    generation: u64,
    /// The newest `seq` after the last commit; `None` until known.
    latest: Option<i64>,
    /// The last page read, and the generation it was read in.
    kept: Option<KeptPage>,
    /// Shutdown started: waits return at once.
    stopped: bool,
    /// Requests waiting on the feed now (each holds a `WaitPlace`).
    waiting: usize,
}

/// A request's place among those waiting on the feed; given back on drop.
pub struct WaitPlace<'a> {
    feed: &'a Feed,
}

impl Drop for WaitPlace<'_> {
    fn drop(&mut self) {
        let mut state = self.feed.lock();
        state.waiting = state.waiting.saturating_sub(1);
    }
}

struct KeptPage {
    generation: u64,
    since: i64,
    limit: u32,
    page: Arc<ChangePage>,
}

impl Feed {
    /// Counts a commit, with the newest `seq` after it (`None` when it could not be read),
    /// and wakes every waiter. Called after the commit, so a woken waiter reads it.
    pub fn committed(&self, latest: Option<i64>) {
        {
            let mut state = self.lock();
            state.generation += 1;
            state.latest = latest;
            state.kept = None;
        }
        self.changed.notify_all();
    }

    /// The commit count now; read it before the page, then wait past it.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// A place among the requests waiting on the feed, or `None` when `max` wait already.
    pub fn try_wait_place(&self, max: usize) -> Option<WaitPlace<'_>> {
        let mut state = self.lock();
        if state.waiting >= max {
            return None;
        }
        state.waiting += 1;
        Some(WaitPlace { feed: self })
    }

    /// The page after `since` (see `after`), from the database at most once per commit for
    /// all the readers asking for the same page: the first reads it, the others wait for
    /// it on `loading` and take the kept page.
    pub fn page(&self, db: &Db, since: i64, limit: u32) -> Result<Arc<ChangePage>, StoreError> {
        if let Some(page) = self.known_page(since, limit) {
            return Ok(page);
        }
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another reader may have read it while this one waited its turn.
        if let Some(page) = self.known_page(since, limit) {
            return Ok(page);
        }
        self.read_page(db, since, limit)
    }

    /// The page after `since` without reading the database, when the feed knows it.
    fn known_page(&self, since: i64, limit: u32) -> Option<Arc<ChangePage>> {
        let state = self.lock();
        if let Some(latest) = state.latest {
            if since == latest {
                return Some(Arc::new(ChangePage {
                    items: Vec::new(),
                    next: since,
                    reset: false,
                }));
            }
        }
        state
            .kept
            .as_ref()
            .filter(|kept| {
                (kept.generation, kept.since, kept.limit) == (state.generation, since, limit)
            })
            .map(|kept| Arc::clone(&kept.page))
    }

    /// Reads the page after `since` from the database and keeps it for the other readers
    /// of this generation.
    fn read_page(&self, db: &Db, since: i64, limit: u32) -> Result<Arc<ChangePage>, StoreError> {
        let generation = self.lock().generation;
        let (page, latest) =
            db.read(|conn| Ok::<_, StoreError>((after(conn, since, limit)?, latest(conn)?)))?;
        let page = Arc::new(page);
        let mut state = self.lock();
        if state.generation == generation {
            state.latest = Some(latest);
            state.kept = Some(KeptPage {
                generation,
                since,
                limit,
                page: Arc::clone(&page),
            });
        }
        Ok(page)
    }

    /// Waits until a commit after `seen`, `deadline`, or shutdown. True when a commit came.
    pub fn wait_past(&self, seen: u64, deadline: Instant) -> bool {
        let mut state = self.lock();
        loop {
            if state.generation != seen {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.stopped || left.is_zero() {
                return false;
            }
            state = match self.changed.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Ends every wait now and every later one at once (shutdown).
    pub fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, FeedState> {
        // Nothing panics while it is held: a poisoned state is still whole.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    use rusqlite::params;

    use crate::store::changes::{
        after, latest, record_vault, revision, set_retention, Feed, Retention, Revised, VaultChange,
    };
    use crate::store::{open_in_memory, Db, StoreError};

    const NOW: &str = "2026-01-01T00:00:00.000Z";

    fn add_group(db: &Db, id: &str, name: &str) {
        db.write(|tx| {
            tx.execute(
                "INSERT INTO groups (id, name, name_key, created_at, updated_at)
                 VALUES (?1, ?2, ?2, ?3, ?3)",
                params![id, name, NOW],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    fn rename_group(db: &Db, id: &str, name: &str) {
        db.write(|tx| {
            tx.execute(
                "UPDATE groups SET name = ?2, name_key = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, name, NOW],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    fn ops(db: &Db, since: i64) -> Vec<(i64, String, String, String)> {
        db.read(|conn| after(conn, since, 100))
            .unwrap()
            .items
            .into_iter()
            .map(|change| (change.seq, change.kind, change.id, change.op))
            .collect()
    }

    #[test]
    fn every_row_change_is_one_entry_in_order() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        rename_group(&db, "g1", "b");
        db.write(|tx| {
            tx.execute("DELETE FROM groups WHERE id = 'g1'", [])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let entry = |seq: i64, op: &str| (seq, "group".to_owned(), "g1".to_owned(), op.into());
        assert_eq!(
            ops(&db, 0),
            vec![
                entry(1, "created"),
                entry(2, "updated"),
                entry(3, "deleted")
            ]
        );
        assert_eq!(db.read(latest).unwrap(), 3);
    }

    #[test]
    fn a_statement_that_leaves_updated_at_alone_logs_nothing_and_keeps_the_revision() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        db.write(|tx| {
            tx.execute("UPDATE groups SET color = '#000000' WHERE id = 'g1'", [])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_eq!(ops(&db, 0).len(), 1);
        let current = db
            .read(|conn| revision(conn, Revised::Group, "g1"))
            .unwrap();
        assert_eq!(current, 1);
    }

    #[test]
    fn each_edit_bumps_the_revision_by_one() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        rename_group(&db, "g1", "b");
        rename_group(&db, "g1", "c");
        let current = db
            .read(|conn| revision(conn, Revised::Group, "g1"))
            .unwrap();
        assert_eq!(current, 3);
    }

    #[test]
    fn revision_of_an_unknown_resource_is_its_not_found() {
        let db = open_in_memory().unwrap();
        let err = db
            .read(|conn| revision(conn, Revised::Key, "nope"))
            .unwrap_err();
        assert!(matches!(err, StoreError::KeyNotFound), "{err}");
    }

    #[test]
    fn a_rolled_back_change_leaves_no_entry_and_no_gap() {
        let db = open_in_memory().unwrap();
        let failed: Result<(), StoreError> = db.write(|tx| {
            tx.execute(
                "INSERT INTO groups (id, name, name_key, created_at, updated_at)
                 VALUES ('g0', 'x', 'x', ?1, ?1)",
                [NOW],
            )?;
            Err(StoreError::GroupNotFound)
        });
        assert!(failed.is_err());
        assert_eq!(db.read(latest).unwrap(), 0);
        add_group(&db, "g1", "a");
        assert_eq!(ops(&db, 0)[0].0, 1);
    }

    #[test]
    fn vault_events_are_entries_without_a_value() {
        let db = open_in_memory().unwrap();
        for change in [
            VaultChange::PasswordChanged,
            VaultChange::Locked,
            VaultChange::Unlocked,
        ] {
            db.write(|tx| record_vault(tx, change)).unwrap();
        }
        let vault = |seq: i64, op: &str| (seq, "vault".to_owned(), "vault".to_owned(), op.into());
        assert_eq!(
            ops(&db, 0),
            vec![
                vault(1, "updated"),
                vault(2, "locked"),
                vault(3, "unlocked")
            ]
        );
    }

    #[test]
    fn a_page_holds_at_most_limit_entries_and_next_continues_it() {
        let db = open_in_memory().unwrap();
        for n in 0..5 {
            add_group(&db, &format!("g{n}"), &format!("n{n}"));
        }
        let first = db.read(|conn| after(conn, 0, 2)).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.next, 2);
        let rest = db.read(|conn| after(conn, first.next, 10)).unwrap();
        let seqs: Vec<i64> = rest.items.iter().map(|change| change.seq).collect();
        assert_eq!(seqs, vec![3, 4, 5]);
        let none = db.read(|conn| after(conn, 5, 10)).unwrap();
        assert_eq!((none.items.len(), none.next, none.reset), (0, 5, false));
    }

    #[test]
    fn a_cursor_at_the_trim_mark_reads_on_and_one_below_it_is_reset() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            set_retention(
                tx,
                Retention {
                    changes_kept: 3,
                    history_kept: 3,
                },
            )
        })
        .unwrap();
        for n in 0..5 {
            add_group(&db, &format!("g{n}"), &format!("n{n}"));
        }
        // Entries 1 and 2 are gone; 3, 4 and 5 are kept.
        let kept = db.read(|conn| after(conn, 2, 10)).unwrap();
        assert!(!kept.reset);
        assert_eq!(kept.items.len(), 3);
        let behind = db.read(|conn| after(conn, 1, 10)).unwrap();
        assert_eq!(
            (behind.items.len(), behind.next, behind.reset),
            (0, 5, true)
        );
    }

    #[test]
    fn a_cursor_at_the_newest_seq_waits_and_one_past_it_is_reset() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        let at_newest = db.read(|conn| after(conn, 1, 10)).unwrap();
        assert_eq!((at_newest.next, at_newest.reset), (1, false));
        let past = db.read(|conn| after(conn, 2, 10)).unwrap();
        assert_eq!((past.next, past.reset), (1, true));
    }

    #[test]
    fn a_commit_wakes_a_waiter_that_read_the_generation_before_it() {
        let feed = Arc::new(Feed::default());
        let seen = feed.generation();
        let waiter = {
            let feed = Arc::clone(&feed);
            thread::spawn(move || feed.wait_past(seen, Instant::now() + Duration::from_secs(60)))
        };
        feed.committed(Some(1));
        assert!(waiter.join().unwrap());
        // A commit before the wait began is not lost either.
        assert!(feed.wait_past(seen, Instant::now()));
    }

    #[test]
    fn a_wait_without_a_commit_ends_at_its_deadline_or_at_stop() {
        let feed = Feed::default();
        let seen = feed.generation();
        assert!(!feed.wait_past(seen, Instant::now() + Duration::from_millis(1)));
        feed.stop();
        // Not a timing bound: a stop that did not end the wait would hold it for 600 s.
        let started = Instant::now();
        assert!(!feed.wait_past(seen, started + Duration::from_secs(600)));
        assert!(started.elapsed() < Duration::from_secs(300));
    }

    #[test]
    fn the_feed_reads_what_the_database_holds_through_each_commit() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        let feed = db.feed();
        let first = feed.page(&db, 0, 10).unwrap();
        assert_eq!(first.items.len(), 1);
        // At the newest seq: nothing, without a read; past it: a reset.
        assert_eq!(feed.page(&db, 1, 10).unwrap().items.len(), 0);
        assert!(feed.page(&db, 2, 10).unwrap().reset);
        add_group(&db, "g2", "b");
        let second = feed.page(&db, 1, 10).unwrap();
        assert_eq!(second.items.len(), 1);
        assert_eq!(second.items[0].id, "g2");
        assert_eq!(feed.page(&db, 0, 10).unwrap().items.len(), 2);
    }

    #[test]
    fn readers_asking_the_same_page_between_two_commits_share_one_read() {
        let db = open_in_memory().unwrap();
        add_group(&db, "g1", "a");
        let feed = db.feed();
        let first = feed.page(&db, 0, 10).unwrap();
        let again = feed.page(&db, 0, 10).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other_limit = feed.page(&db, 0, 5).unwrap();
        assert!(!Arc::ptr_eq(&first, &other_limit));
        rename_group(&db, "g1", "b");
        let after_commit = feed.page(&db, 0, 10).unwrap();
        assert_eq!(after_commit.items.len(), 2);
    }

    #[test]
    fn at_most_the_cap_of_requests_hold_a_wait_place_and_a_dropped_one_comes_back() {
        let feed = Feed::default();
        let first = feed.try_wait_place(2).unwrap();
        let _second = feed.try_wait_place(2).unwrap();
        assert!(feed.try_wait_place(2).is_none(), "one past the cap");
        drop(first);
        assert!(feed.try_wait_place(2).is_some(), "given back on drop");
    }
}
