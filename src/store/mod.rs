//! All SQL lives below this module: opening the database, pragmas, migrations, and the
//! mutex-guarded connection every request goes through.
//!
//! Invariants: the only module that names rusqlite; never knows whether the vault is
//! locked (it stores sealed bytes as given); never maps errors to HTTP statuses; never opens
//! a database that fails its integrity checks (store::integrity), and never writes to one
//! before they passed; a write that removed sealed bytes is checkpointed before it returns
//! (store::scrub).

pub mod agent;
pub mod audit;
pub mod batch;
pub mod catalogue;
pub mod certificates;
pub mod changes;
pub mod environment;
pub mod files;
pub mod forwards;
pub mod groups;
pub mod history;
pub mod hosts;
pub mod identities;
pub mod imports;
pub mod inherit;
pub mod integrity;
pub mod interop;
pub mod keys;
pub mod known_hosts;
pub mod list;
pub mod migrate;
mod migrate_session;
pub mod scrub;
pub mod searches;
pub mod snapshots;
pub mod ssh_config_import;
pub mod sync;
pub mod vault_meta;

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use rusqlite::ffi;
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// How long a statement waits on a lock held by another connection (a backup tool, the
/// sqlite3 shell) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Copies every WAL frame into the database file, then truncates the WAL to zero bytes.
const CHECKPOINT_TRUNCATE: &str = "PRAGMA wal_checkpoint(TRUNCATE)";

/// The connection type, for api code that splits work done inside one `Db::write` into
/// functions (the import): it names this alias, never rusqlite.
pub type Conn = Connection;

/// SQLite's page cache for the connection, in KiB.
const PAGE_CACHE_KIB: i64 = 32 * 1024;

/// Prepared statements kept per connection.
const STATEMENT_CACHE_CAPACITY: usize = 64;

/// Rows read into the list's memory a batch at a time at start-up, a lock each.
const WARM_ROWS: usize = 1024;

/// The database file inside the data dir.
pub const DB_FILE: &str = "host-manager.db";

/// What the store can fail with. Variants carry ids and names, never secret values.
#[derive(Debug)]
pub enum StoreError {
    HostNotFound,
    GroupNotFound,
    KeyNotFound,
    KnownHostNotFound,
    IdentityNotFound,
    SearchNotFound,
    /// Another identity has this name (compared caselessly).
    IdentityNameTaken,
    ForwardNotFound,
    DuplicateName(String),
    /// A key with this fingerprint is already stored.
    DuplicateKey,
    /// A key is still referenced by this many hosts and identities.
    KeyInUse {
        hosts: u64,
        identities: u64,
    },
    /// The disk holding the data dir is full (SQLite's `SQLITE_FULL`, or a `-shm` file that
    /// cannot grow); nothing was written. The text is for the log only.
    StorageFull(String),
    /// The data dir or database cannot be used as it is (damaged, a symlink, a newer
    /// schema); the text says why and what to do, and names no secret.
    Unusable(String),
    /// Anything else from SQLite; the text is for the log only.
    Sqlite(String),
    /// A stored row holds a value this build does not understand (which table and column).
    CorruptRow(&'static str),
    /// A list bound as one JSON parameter (`json_each`) or a row rendered as JSON could not
    /// be encoded; the text is serde_json's, for the log only.
    Json(String),
    /// A rule the store keeps itself was found broken (what it was); never the input's fault.
    BrokenInvariant(String),
    /// The WAL checkpoint after a write that removed sealed bytes was blocked by another
    /// connection's reader (store::scrub retries after the next write).
    CheckpointBlocked,
    /// The hosts' slots passed what the list's memory can number (`u32`).
    ListFull,
    /// No snapshot has this id.
    SnapshotNotFound,
    /// A snapshot that cannot be restored here; the text says why (names no secret).
    SnapshotIncompatible(String),
    /// As many manual snapshots as may be kept (the number) are kept already.
    SnapshotLimit(usize),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::HostNotFound => write!(f, "host not found"),
            StoreError::GroupNotFound => write!(f, "group not found"),
            StoreError::KeyNotFound => write!(f, "key not found"),
            StoreError::KnownHostNotFound => write!(f, "known host entry not found"),
            StoreError::IdentityNotFound => write!(f, "identity not found"),
            StoreError::SearchNotFound => write!(f, "saved search not found"),
            StoreError::IdentityNameTaken => write!(f, "identity name taken"),
            StoreError::ForwardNotFound => write!(f, "forward rule not found"),
            StoreError::DuplicateName(what) => write!(f, "duplicate name: {what}"),
            StoreError::DuplicateKey => write!(f, "duplicate key"),
            StoreError::KeyInUse { hosts, identities } => {
                write!(
                    f,
                    "key used by {hosts} host(s) and {identities} identity(ies)"
                )
            }
            StoreError::StorageFull(cause) => write!(f, "the disk is full: {cause}"),
            StoreError::Unusable(why) => write!(f, "{why}"),
            StoreError::Sqlite(cause) => write!(f, "sqlite: {cause}"),
            StoreError::CorruptRow(what) => write!(f, "a stored row is corrupt: {what}"),
            StoreError::Json(cause) => write!(f, "cannot encode JSON: {cause}"),
            StoreError::BrokenInvariant(what) => write!(f, "a store invariant broke: {what}"),
            StoreError::CheckpointBlocked => {
                write!(f, "the WAL checkpoint was blocked by another connection")
            }
            StoreError::ListFull => {
                write!(f, "the hosts' slots pass what the list's memory can index")
            }
            StoreError::SnapshotNotFound => write!(f, "snapshot not found"),
            StoreError::SnapshotIncompatible(why) => write!(f, "snapshot not restorable: {why}"),
            StoreError::SnapshotLimit(max) => write!(f, "{max} manual snapshots are kept already"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> StoreError {
        match err.sqlite_error() {
            // SQLite's unix VFS turns ENOSPC on a write into SQLITE_FULL; a `-shm` file that
            // cannot grow is SQLITE_IOERR_SHMSIZE.
            Some(failure)
                if failure.code == rusqlite::ErrorCode::DiskFull
                    || failure.extended_code == ffi::SQLITE_IOERR_SHMSIZE =>
            {
                StoreError::StorageFull(err.to_string())
            }
            _ => StoreError::Sqlite(err.to_string()),
        }
    }
}

/// How a `Db::write_ending` ends once its work succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Commit,
    /// A dry run: the same steps, rolled back.
    RollBack,
}

impl Ending {
    /// `RollBack` for a request's `dry_run: true`, else `Commit`.
    pub fn dry_run_if(dry_run: bool) -> Ending {
        match dry_run {
            true => Ending::RollBack,
            false => Ending::Commit,
        }
    }
}

/// The one connection, behind a mutex. Handlers reach SQL only through `read`, `read_list`
/// and `write`.
pub struct Db {
    conn: Mutex<Connection>,
    /// The list's read side in memory (store::list): the host list and the group tree.
    /// Lock order: `conn`, then `list`; `conn` is never taken while `list` is held.
    list: Mutex<list::ListMemory>,
    /// Told when the start-up read of the list's memory ends (`warm_list`), which list
    /// requests wait for, holding no lock, rather than reading it a second time.
    warmed: Condvar,
    /// Told of every commit of `write`: wakes the change feed's waiting requests.
    feed: changes::Feed,
    /// Set when the checkpoint after a write that removed sealed bytes failed (another
    /// connection's reader blocked it): the next write tries again. Read and written only
    /// while `conn` is locked; atomic only so `Db` needs no second mutex.
    scrub_pending: AtomicBool,
    /// The database file, for the clean-close record (store::integrity); `None` in memory.
    path: Option<std::path::PathBuf>,
    /// Set by `close`, which runs once.
    closed: AtomicBool,
}

impl Db {
    /// Runs `work` on the connection outside any explicit transaction.
    pub fn read<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        work(&self.lock())
    }

    /// Runs `work` on the connection and the list's memory (store::list), outside any
    /// explicit transaction. While the start-up read of the memory runs aside, waits for
    /// it holding no lock (other requests go on meanwhile).
    pub fn read_list<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&Connection, &mut list::ListMemory) -> Result<T, E>,
    ) -> Result<T, E> {
        let (mut conn, mut memory) = (self.lock(), self.lock_list());
        while memory.waits_for_warm_up() {
            drop(conn);
            let woken = self.warmed.wait(memory);
            // Lock order: the connection first, so the list's lock is let go and taken again.
            drop(woken.unwrap_or_else(|poisoned| poisoned.into_inner()));
            (conn, memory) = (self.lock(), self.lock_list());
        }
        work(&conn, &mut memory)
    }

    /// Reads the list's memory, then every row it keeps, at start-up (after SERVICE_PORT):
    /// the hosts a chunk under the connection's lock alone and put in a table with no lock
    /// held, sorted with none, taken in under a brief lock; then the rows a batch a lock,
    /// rendered with none. Requests are answered between; list requests wait for the table
    /// (docs/performance.md, Performance).
    pub fn warm_list(&self) -> Result<(), StoreError> {
        let warming = Warming::start(self);
        let mut building = {
            let conn = self.lock();
            let building = self.lock_list().building(&conn);
            building?
        };
        while let Some(chunk) = self.read(|conn| building.read_chunk(conn))? {
            building.apply(chunk)?;
        }
        building.finish();
        {
            let conn = self.lock();
            self.lock_list().install(&conn, building)?;
        }
        drop(warming);
        self.warm_rows()
    }

    /// The rows of the list's memory, a batch a lock, rendered with no lock held.
    fn warm_rows(&self) -> Result<(), StoreError> {
        let mut from = 0;
        loop {
            let (read_at, hosts, next) = self.read_list(|conn, memory| {
                let (unread, next) = memory.unread(conn, from, WARM_ROWS)?;
                Ok::<_, StoreError>((
                    list::rows::stamp(conn)?,
                    list::rows::read_hosts(conn, &unread)?,
                    next,
                ))
            })?;
            if hosts.is_empty() {
                return Ok(());
            }
            let rows = list::rows::render(hosts)?;
            self.read_list(|conn, memory| {
                if list::rows::stamp(conn)? == read_at {
                    memory.keep(&rows);
                }
                Ok::<_, StoreError>(())
            })?;
            from = next;
        }
    }

    fn lock_list(&self) -> MutexGuard<'_, list::ListMemory> {
        self.list.lock().unwrap_or_else(|poisoned| {
            // A panic mid-update may leave it half patched: start it afresh.
            let mut memory = poisoned.into_inner();
            *memory = list::ListMemory::default();
            memory
        })
    }

    /// Runs `work` in one IMMEDIATE transaction, committed only when `work` returns `Ok`.
    /// Any early return or panic rolls back through the transaction's `Drop`. When the
    /// transaction deleted or replaced sealed bytes, the WAL is checkpointed and truncated
    /// before this returns (store::scrub), so the old ciphertext is in no file any more.
    pub fn write<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_ending(Ending::Commit, work)
    }

    /// `write`, ended as `ending` says: a dry run (`Ending::RollBack`) takes the very same
    /// steps, answers what they found, and rolls them all back (docs/api.md: the imports'
    /// `dry_run`).
    pub fn write_ending<T, E: From<StoreError>>(
        &self,
        ending: Ending,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let value = work(&tx)?;
        if ending == Ending::RollBack {
            // Dropped without a commit: nothing was written, so nothing to scrub or tell.
            return Ok(value);
        }
        // A hint for the feed, read where it cannot be stale; without it the feed reads the
        // log itself, so a failure here does not fail the write.
        let latest = changes::latest(&tx).ok();
        let removed_sealed = scrub::take_removed(&tx)?;
        tx.commit().map_err(StoreError::from)?;
        if removed_sealed || self.scrub_pending.load(Ordering::Relaxed) {
            self.scrub(&conn);
        }
        drop(conn);
        self.feed.committed(latest);
        Ok(value)
    }

    /// `write_ending` with the list's memory too (store::list), for a write that selects
    /// its rows by the list's filters (`POST /api/hosts/batch`). Waits first, holding no
    /// lock, for the start-up read of the memory (as `read_list` does); then takes the
    /// connection, then the list (the lock order). What the memory reads inside the
    /// transaction is committed state: a rolled-back write leaves it its logs to read again.
    pub fn write_listed<T, E: From<StoreError>>(
        &self,
        ending: Ending,
        work: impl FnOnce(&Transaction<'_>, &mut list::ListMemory) -> Result<T, E>,
    ) -> Result<T, E> {
        self.read_list(|_, _| Ok::<_, StoreError>(()))?;
        self.write_ending(ending, |tx| work(tx, &mut self.lock_list()))
    }

    /// The change feed's shared state: what its requests wait on and read through.
    pub fn feed(&self) -> &changes::Feed {
        &self.feed
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        migrate::user_version(&self.lock())
    }

    /// Checkpoints after a write that removed sealed bytes; a failure is retried after the
    /// next write. Caller holds the connection lock.
    fn scrub(&self, conn: &Connection) {
        match checkpoint(conn) {
            Ok(()) => self.scrub_pending.store(false, Ordering::Relaxed),
            Err(err) => {
                log::warn!(
                    "removed secrets stay in the WAL until the next checkpoint succeeds: {err}"
                );
                self.scrub_pending.store(true, Ordering::Relaxed);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // Safe to recover: a panicking request's Transaction rolled back when it unwound.
        self.conn.lock().unwrap_or_else(|poisoned| {
            log::warn!("recovered the database lock after a panic in another request");
            poisoned.into_inner()
        })
    }
}

/// The start-up read of the list's memory under way: list requests wait until it drops
/// (also on an error or a panic), which wakes them.
struct Warming<'db>(&'db Db);

impl Warming<'_> {
    fn start(db: &Db) -> Warming<'_> {
        db.lock_list().set_warming(true);
        Warming(db)
    }
}

impl Drop for Warming<'_> {
    fn drop(&mut self) {
        self.0.lock_list().set_warming(false);
        self.0.warmed.notify_all();
    }
}

impl Db {
    /// Closes the connection at shutdown (SQLite checkpoints and removes the WAL), then
    /// records the closed file so the next start can skip the full page check
    /// (store::integrity). Call it once the server has stopped; a request still running
    /// afterwards fails. Runs at most once; dropping the `Db` runs it too.
    pub fn close(&self) {
        let Some(path) = self
            .path
            .as_ref()
            .filter(|_| !self.closed.swap(true, Ordering::SeqCst))
        else {
            return;
        };
        let Ok(placeholder) = Connection::open_in_memory() else {
            return;
        };
        let closing = std::mem::replace(&mut *self.lock(), placeholder);
        match closing.close() {
            Ok(()) => integrity::record_clean_close(path),
            Err((_, err)) => log::warn!("the database did not close cleanly: {err}"),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.close();
    }
}

/// Opens (creating when missing) the database in `data_dir`, checks it, sets the pragmas and
/// applies pending migrations. A database from a newer build, a damaged one, one emptied or
/// removed since its last clean close, or one reached through a symlink is refused untouched
/// (docs/reliability.md, Reliability).
pub fn open(data_dir: &Path) -> Result<Db, StoreError> {
    let path = data_dir.join(DB_FILE);
    integrity::refuse_lost(&path)?;
    files::prepare(&path)?;
    let mut conn = Connection::open(&path)?;
    integrity::check_pages(&conn, &path)?;
    migrate::refuse_newer(&conn)?;
    integrity::vault_row_consistent(&conn, &path)?;
    set_pragmas(&conn)?;
    migrate::migrate(&mut conn)?;
    groups::fill_fold_keys(&mut conn)?;
    keys::fill_fold_keys(&mut conn)?;
    list::install(&conn)?;
    scrub::install(&conn)?;
    files::restrict_sidecars(&path);
    Ok(Db {
        conn: Mutex::new(conn),
        list: Mutex::default(),
        warmed: Condvar::new(),
        feed: changes::Feed::default(),
        scrub_pending: AtomicBool::new(false),
        path: Some(path),
        closed: AtomicBool::new(false),
    })
}

/// Opens an in-memory database with the full schema, for unit tests of store functions.
#[cfg(test)]
pub fn open_in_memory() -> Result<Db, StoreError> {
    let mut conn = Connection::open_in_memory()?;
    set_pragmas(&conn)?;
    migrate::migrate(&mut conn)?;
    list::install(&conn)?;
    scrub::install(&conn)?;
    Ok(Db {
        conn: Mutex::new(conn),
        list: Mutex::default(),
        warmed: Condvar::new(),
        feed: changes::Feed::default(),
        scrub_pending: AtomicBool::new(false),
        path: None,
        closed: AtomicBool::new(false),
    })
}

/// Moves the WAL into the database file and empties it, so that the previous versions of
/// rows changed since the last checkpoint are no longer in the `-wal` file (with
/// `secure_delete` on, their old bytes are zeroed in the pages written back). Runs outside
/// any transaction; fails when another connection's reader blocks it.
pub fn checkpoint(conn: &Connection) -> Result<(), StoreError> {
    let blocked: i64 = conn.query_row(CHECKPOINT_TRUNCATE, [], |row| row.get(0))?;
    if blocked != 0 {
        return Err(StoreError::CheckpointBlocked);
    }
    Ok(())
}

/// The one step of giving a stored name its match key (sql/0005_fold_keys.sql), for groups
/// and keys alike: `set_key` (`?1` id, `?2` key) when `taken` says no other name in the row's
/// scope has that key; else `rename` (`?1` id, `?2` name, `?3` name_key, `?4` fold_key, `?5`
/// updated_at) to the first free `name (N)` among `scope_keys`, which is returned so the
/// caller can log it.
pub(crate) fn key_or_rename(
    conn: &Connection,
    [set_key, rename]: [&str; 2],
    id: &str,
    name: &str,
    now: &str,
    taken: impl FnOnce(&str) -> Result<bool, StoreError>,
    scope_keys: impl FnOnce() -> Result<std::collections::HashSet<String>, StoreError>,
) -> Result<Option<crate::model::name::Name>, StoreError> {
    let key = crate::model::fold::key(name);
    if !taken(&key)? {
        conn.execute(set_key, rusqlite::params![id, key])?;
        return Ok(None);
    }
    let renamed = crate::model::name::Name::free(name, &scope_keys()?);
    conn.execute(
        rename,
        rusqlite::params![id, renamed.as_str(), renamed.key(), renamed.fold_key(), now],
    )?;
    Ok(Some(renamed))
}

/// Whether another row than `id` has the caseless name key `fold_key`: `sql` is a table's
/// `SELECT EXISTS (... WHERE fold_key = ?1 AND id <> ?2)` (identities, saved searches).
pub fn fold_key_taken(
    conn: &Connection,
    sql: &str,
    fold_key: &str,
    id: &str,
) -> Result<bool, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    Ok(statement.query_row(rusqlite::params![fold_key, id], |row| row.get(0))?)
}

/// The current time as stored and returned everywhere: RFC 3339 UTC with milliseconds and
/// `Z` (docs/api.md, Common behaviour). The store chooses every stamp it writes: callers never
/// pass one in.
pub fn now_timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A new `updated_at` strictly later than `previous`: now, or `previous` + 1 ms when the
/// clock has not moved past it (two changes in one millisecond, or a clock stepped back), so
/// that `updated_at` changes on every update (docs/api.md, Hosts and Keys).
pub fn next_updated_at(previous: &str) -> String {
    let now = SystemTime::now();
    let floor = humantime::parse_rfc3339(previous)
        .ok()
        .and_then(|time| time.checked_add(Duration::from_millis(1)));
    let chosen = match floor {
        Some(floor) if floor > now => floor,
        _ => now,
    };
    humantime::format_rfc3339_millis(chosen).to_string()
}

/// The connection pragmas, each with its reason. Called once per connection.
fn set_pragmas(conn: &Connection) -> Result<(), StoreError> {
    // SQLite ships with foreign keys off; group/key references rely on them.
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // WAL: readers never block the writer, and a crash never corrupts the file.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // NORMAL (docs/reliability.md, Reliability level: a crash of the process never loses an acknowledged write):
    // each commit is in the WAL, in the OS's page cache, before the 201/200 leaves, and
    // scripts/fault kills the service mid-write to prove it. The WAL is fsynced at each
    // checkpoint, so a power loss can lose only the commits since the last one. FULL would
    // fsync every commit: 0.27 ms of the 1.2 ms a create took. Vault changes
    // checkpoint at once (api::vault), so they are on disk before their answer.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Freed pages are zeroed, so deleted rows (even sealed secrets) do not linger.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // The host list reads each page's rows by seq, scattered over the table: a cache that
    // holds the table (24 MB at 100,000 hosts) serves them from memory, where SQLite's
    // default 2 MB read most of them from the file (docs/performance.md, Performance).
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // rusqlite keeps 16 by default, fewer than a mix of requests runs: each would be parsed
    // again in turn.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::open_in_memory;

    #[test]
    fn foreign_keys_secure_delete_and_synchronous_normal_are_set() {
        let db = open_in_memory().unwrap();
        db.read(|conn| {
            let fk: i64 = conn.query_row("PRAGMA foreign_keys", [], |row| row.get(0))?;
            let secure: i64 = conn.query_row("PRAGMA secure_delete", [], |row| row.get(0))?;
            // NORMAL (1): the reliability issue's level, see set_pragmas.
            let synchronous: i64 = conn.query_row("PRAGMA synchronous", [], |row| row.get(0))?;
            assert_eq!((fk, secure, synchronous), (1, 1, 1));
            let cache: i64 = conn.query_row("PRAGMA cache_size", [], |row| row.get(0))?;
            assert_eq!(cache, -crate::store::PAGE_CACHE_KIB);
            Ok::<_, crate::store::StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn a_rolled_back_write_answers_its_value_and_leaves_nothing_behind() {
        use crate::store::{Ending, StoreError};
        let db = open_in_memory().unwrap();
        let insert = |tx: &rusqlite::Transaction<'_>| {
            tx.execute(
                "INSERT INTO groups (id, name, name_key, created_at, updated_at)
                 VALUES ('g', 'g', 'g', 'now', 'now')",
                [],
            )?;
            let count: i64 = tx.query_row("SELECT count(*) FROM groups", [], |row| row.get(0))?;
            Ok::<_, StoreError>(count)
        };
        assert_eq!(db.write_ending(Ending::RollBack, insert).unwrap(), 1);
        let count = |conn: &rusqlite::Connection| {
            conn.query_row("SELECT count(*) FROM groups", [], |row| {
                row.get::<_, i64>(0)
            })
            .map_err(StoreError::from)
        };
        assert_eq!(db.read(count).unwrap(), 0, "rolled back");
        assert_eq!(db.write_ending(Ending::Commit, insert).unwrap(), 1);
        assert_eq!(db.read(count).unwrap(), 1, "committed");
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        let stamp = crate::store::now_timestamp();
        assert_eq!(stamp.len(), "2026-01-01T00:00:00.000Z".len(), "{stamp}");
        assert!(stamp.ends_with('Z'));
    }

    #[test]
    fn next_updated_at_is_one_millisecond_after_a_future_stamp() {
        let far_future = "2999-01-01T00:00:00.000Z";
        assert_eq!(
            crate::store::next_updated_at(far_future),
            "2999-01-01T00:00:00.001Z"
        );
    }

    #[test]
    fn next_updated_at_is_now_after_a_past_stamp_and_later_than_now_within_a_millisecond() {
        let before = crate::store::now_timestamp();
        let stamp = crate::store::next_updated_at("2000-01-01T00:00:00.000Z");
        assert!(stamp >= before, "{stamp} < {before}");
        assert!(stamp.as_str() < "2999-01-01T00:00:00.000Z", "{stamp}");
        let now = crate::store::now_timestamp();
        assert!(crate::store::next_updated_at(&now) > now);
    }
}
