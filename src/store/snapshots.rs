//! Snapshots of the catalogue (docs/reliability.md, "Snapshots"): a copy of the whole
//! database in `<data dir>/snapshots/<id>.sqlite` made by SQLite's `VACUUM INTO`, a row of
//! `snapshots` (sql/0017_snapshots.sql) naming it, the retention, and the restore that puts
//! a snapshot's catalogue back in one transaction.
//!
//! Invariants: a snapshot file is created owner-only (mode 0600 in a 0700 directory, as the
//! database itself) before SQLite writes into it, and holds only what the database holds
//! (secrets sealed); a file that failed half-way is removed; a restore replaces exactly the
//! tables of `CATALOGUE` (and `group_host_counts`, which follows them), all or nothing, and
//! never the vault row, the audit log, the change log's bookkeeping or the snapshots
//! themselves; the connection history of the hosts that remain is kept; after a restore the
//! change feed answers `reset` to every cursor from before it and the list's memory is read
//! again; the newest `KEEP_AUTOMATIC` automatic snapshots are kept, manual ones until
//! deleted, at most `MAX_MANUAL`.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::platform;
use crate::store::{changes, list, migrate, now_timestamp, scrub, Db, StoreError};

/// The directory of the snapshot files, inside the data dir.
pub const SNAPSHOT_DIR: &str = "snapshots";

/// docs/reliability.md "Snapshots": automatic snapshots kept (the oldest go first).
pub const KEEP_AUTOMATIC: usize = 10;

/// docs/reliability.md "Snapshots": manual snapshots kept at most; one more is refused.
pub const MAX_MANUAL: usize = 20;

/// One table of the catalogue: its name, its emptying and its copy from the attached
/// snapshot (`snap`). Literal SQL, so no text is ever formatted into a statement.
macro_rules! table {
    ($name:literal) => {
        (
            $name,
            concat!("DELETE FROM main.", $name),
            concat!("INSERT INTO main.", $name, " SELECT * FROM snap.", $name),
        )
    };
}

/// The tables that hold the user's catalogue, parents first: hosts, groups, keys, their
/// certificates, identities, forwards, secret environment values, the trust store (known
/// hosts and their alerts), the import records (they name the objects restored with
/// them) and the saved searches. Not the vault row (the key the secrets are sealed with), the audit log, the
/// change log and its retention, the connection history (a log: kept for the hosts that
/// remain) or the snapshots.
const CATALOGUE: &[(&str, &str, &str)] = &[
    table!("identities"),
    table!("groups"),
    table!("keys"),
    table!("key_certificates"),
    table!("identity_methods"),
    table!("identity_answers"),
    table!("hosts"),
    table!("host_tags"),
    table!("host_jumps"),
    table!("host_ssh_options"),
    table!("forwards"),
    table!("env_secrets"),
    table!("known_hosts"),
    table!("host_key_alerts"),
    table!("import_records"),
    table!("saved_searches"),
];

const SELECT_COUNTS: &str = "SELECT (SELECT count(*) FROM hosts), (SELECT count(*) FROM groups), \
     (SELECT count(*) FROM keys), (SELECT count(*) FROM identities)";
const SELECT_SNAPSHOT_COLUMNS: &str = "SELECT id, created_at, reason, label, schema_version, \
     host_count, group_count, key_count, identity_count, size_bytes FROM snapshots";
const INSERT_SNAPSHOT: &str = "INSERT INTO snapshots (id, created_at, reason, label, \
     schema_version, host_count, group_count, key_count, identity_count, size_bytes) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
const COUNT_MANUAL: &str = "SELECT count(*) FROM snapshots WHERE reason = 'manual'";
/// The automatic snapshots past the newest `?1`, oldest last.
const SELECT_PRUNED: &str = "SELECT id FROM snapshots WHERE reason <> 'manual' \
     ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?1";
const DELETE_SNAPSHOT: &str = "DELETE FROM snapshots WHERE id = ?1";
/// Every catalogue table's definition that differs between the database and the snapshot.
const SELECT_SCHEMA_DIFFERENCES: &str = "SELECT count(*) FROM main.sqlite_master AS m \
     LEFT JOIN snap.sqlite_master AS s ON s.type = m.type AND s.name = m.name \
     WHERE m.type = 'table' AND m.sql IS NOT s.sql AND m.name IN (SELECT value FROM json_each(?1))";
const DELETE_ORPHAN_HISTORY: &str =
    "DELETE FROM connection_history WHERE host_id NOT IN (SELECT id FROM hosts)";
/// Every cursor from before the restore is behind the trim: its reader reloads (`reset`).
const RESET_FEED: &str = "UPDATE log_retention SET changes_trimmed_through = ?1 WHERE id = 1";
const DELETE_FEED_THROUGH: &str = "DELETE FROM changes WHERE seq <= ?1";

/// Why a snapshot was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Manual,
    Import,
    BatchDelete,
    /// Taken by a restore, of the state it replaces (so the restore can be undone).
    Restore,
    SyncMerge,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Manual => "manual",
            Reason::Import => "import",
            Reason::BatchDelete => "batch_delete",
            Reason::Restore => "restore",
            Reason::SyncMerge => "sync_merge",
        }
    }

    fn parse(text: &str) -> Option<Reason> {
        [
            Reason::Manual,
            Reason::Import,
            Reason::BatchDelete,
            Reason::Restore,
            Reason::SyncMerge,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == text)
    }
}

/// How many of each main kind of record a catalogue holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub hosts: i64,
    pub groups: i64,
    pub keys: i64,
    pub identities: i64,
}

/// One snapshot's row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub id: String,
    pub created_at: String,
    pub reason: Reason,
    pub label: Option<String>,
    pub schema_version: i64,
    pub counts: Counts,
    pub size_bytes: i64,
}

/// One sealed value of a snapshot and where it was sealed (table, row, field), to check
/// that today's vault key opens it before a restore.
pub struct SealedSample {
    pub table: &'static str,
    pub row_id: String,
    pub field: &'static str,
    pub bytes: Vec<u8>,
}

/// What a restore puts back: the whole catalogue, or only these hosts (each with its tags,
/// jump chain, options, forward rules and secret environment values, as the snapshot
/// holds them; the rest of the catalogue stays as it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    All,
    Hosts(&'a [String]),
}

/// What a restore changed: the counts of the catalogue before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restored {
    pub before: Counts,
    pub after: Counts,
}

fn counts(conn: &Connection) -> Result<Counts, StoreError> {
    Ok(conn.query_row(SELECT_COUNTS, [], |row| {
        Ok(Counts {
            hosts: row.get(0)?,
            groups: row.get(1)?,
            keys: row.get(2)?,
            identities: row.get(3)?,
        })
    })?)
}

fn snapshot_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Snapshot> {
    let reason: String = row.get(2)?;
    Ok(Snapshot {
        id: row.get(0)?,
        created_at: row.get(1)?,
        reason: Reason::parse(&reason).unwrap_or(Reason::Manual),
        label: row.get(3)?,
        schema_version: row.get(4)?,
        counts: Counts {
            hosts: row.get(5)?,
            groups: row.get(6)?,
            keys: row.get(7)?,
            identities: row.get(8)?,
        },
        size_bytes: row.get(9)?,
    })
}

/// Every snapshot, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Snapshot>, StoreError> {
    let sql = concat_order(SELECT_SNAPSHOT_COLUMNS);
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map([], snapshot_of)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn concat_order(select: &str) -> String {
    [select, " ORDER BY created_at DESC, rowid DESC"].concat()
}

/// One snapshot's row; `SnapshotNotFound` when none has this id.
pub fn get(conn: &Connection, id: &str) -> Result<Snapshot, StoreError> {
    let sql = [SELECT_SNAPSHOT_COLUMNS, " WHERE id = ?1"].concat();
    conn.prepare_cached(&sql)?
        .query_row([id], snapshot_of)
        .optional()?
        .ok_or(StoreError::SnapshotNotFound)
}

/// The automatic snapshots past the newest `KEEP_AUTOMATIC`, deleted from the table; their
/// ids, whose files the caller removes after the commit.
fn prune(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let kept = i64::try_from(KEEP_AUTOMATIC).unwrap_or(i64::MAX);
    let pruned: Vec<String> = conn
        .prepare_cached(SELECT_PRUNED)?
        .query_map([kept], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for id in &pruned {
        conn.prepare_cached(DELETE_SNAPSHOT)?.execute([id])?;
    }
    Ok(pruned)
}

/// The snapshot directory, made 0700 when missing; a symlink or a file there is refused,
/// and a directory open to others narrowed (never widened).
fn prepare_dir(dir: &Path) -> Result<(), StoreError> {
    match fs::symlink_metadata(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => platform::create_private_dir(dir)
            .map_err(|err| cannot(dir, "create the snapshot directory", &err)),
        Err(err) => Err(cannot(dir, "read the metadata of", &err)),
        Ok(metadata) if !metadata.is_dir() => Err(StoreError::Unusable(format!(
            "{} is not a directory (a symbolic link or a file); move it out of the data dir",
            dir.display()
        ))),
        Ok(metadata) if platform::is_open_to_others(&metadata) => {
            platform::narrow_private_dir(dir).map_err(|err| cannot(dir, "restrict", &err))
        }
        Ok(_) => Ok(()),
    }
}

fn cannot(path: &Path, what: &str, err: &io::Error) -> StoreError {
    if err.kind() == io::ErrorKind::StorageFull {
        return StoreError::StorageFull(format!("{what} {}: {err}", path.display()));
    }
    StoreError::Unusable(format!("cannot {what} {}: {err}", path.display()))
}

/// A snapshot file's path as SQLite takes it (text).
fn path_text(path: &Path) -> Result<&str, StoreError> {
    path.to_str().ok_or_else(|| {
        StoreError::Unusable(format!(
            "the snapshot path {} is not UTF-8; SQLite cannot be given it",
            path.display()
        ))
    })
}

/// Removes a snapshot file that is no longer wanted; a failure is logged (it is only space).
fn remove_file(path: &Path) {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => log::warn!("cannot remove the snapshot file {}: {err}", path.display()),
    }
}

impl Db {
    /// `<data dir>/snapshots`; `None` for an in-memory database (unit tests and the
    /// request fuzzer), whose snapshots are rows without a file (a restore of one is
    /// `SnapshotIncompatible`: its file is missing).
    fn snapshot_dir(&self) -> Option<PathBuf> {
        self.path
            .as_ref()
            .and_then(|path| path.parent())
            .map(|dir| dir.join(SNAPSHOT_DIR))
    }

    /// The file of snapshot `id` (an id read from the table, never a request's text).
    fn snapshot_file(&self, id: &str) -> Option<PathBuf> {
        Some(self.snapshot_dir()?.join([id, ".sqlite"].concat()))
    }

    /// The counts and schema version of now, and (with a directory) the copy of the
    /// database into `<dir>/<id>.sqlite`, created owner-only first; a failed copy leaves no
    /// file. A manual snapshot past `MAX_MANUAL` is refused before anything is written.
    fn copy_now(&self, file: Option<&Path>, reason: Reason) -> Result<(Counts, u32), StoreError> {
        let target = file.map(path_text).transpose()?;
        let copied = self.read(|conn| {
            if reason == Reason::Manual {
                let manual: i64 = conn.query_row(COUNT_MANUAL, [], |row| row.get(0))?;
                if usize::try_from(manual).unwrap_or(usize::MAX) >= MAX_MANUAL {
                    return Err(StoreError::SnapshotLimit(MAX_MANUAL));
                }
            }
            if let (Some(file), Some(target)) = (file, target) {
                // Created owner-only and empty first: SQLite writes into it, keeping its mode.
                platform::open_private(OpenOptions::new().write(true).create_new(true))
                    .open(file)
                    .map_err(|err| cannot(file, "create the snapshot file", &err))?;
                conn.execute("VACUUM INTO ?1", [target])?;
                strip_vault(file)?;
            }
            Ok((counts(conn)?, migrate::user_version(conn)?))
        });
        if let (Err(err), Some(file)) = (&copied, file) {
            if !matches!(err, StoreError::SnapshotLimit(_)) {
                remove_file(file);
            }
        }
        copied
    }

    /// Takes a snapshot `id` (a new UUID, chosen by the caller) of the whole database and
    /// prunes the automatic ones past the newest `KEEP_AUTOMATIC`. A manual one past
    /// `MAX_MANUAL` is refused (`SnapshotLimit`) before anything is written; a full disk is
    /// `StorageFull` and leaves no file behind.
    pub fn take_snapshot(
        &self,
        id: &str,
        reason: Reason,
        label: Option<&str>,
    ) -> Result<Snapshot, StoreError> {
        if let Some(dir) = self.snapshot_dir() {
            prepare_dir(&dir)?;
        }
        let file = self.snapshot_file(id);
        let (counts, schema_version) = self.copy_now(file.as_deref(), reason)?;
        let size = file
            .as_ref()
            .and_then(|file| fs::metadata(file).ok())
            .map_or(0, |meta| meta.len());
        let snapshot = Snapshot {
            id: id.to_owned(),
            created_at: now_timestamp(),
            reason,
            label: label.map(str::to_owned),
            schema_version: i64::from(schema_version),
            counts,
            size_bytes: i64::try_from(size).unwrap_or(i64::MAX),
        };
        let pruned = self.write(|tx| {
            insert(tx, &snapshot)?;
            prune(tx)
        });
        match pruned {
            Ok(pruned) => {
                for gone in pruned.iter().filter_map(|gone| self.snapshot_file(gone)) {
                    remove_file(&gone);
                }
                Ok(snapshot)
            }
            Err(err) => {
                if let Some(file) = &file {
                    remove_file(file);
                }
                Err(err)
            }
        }
    }

    /// Deletes snapshot `id`: its row, then its file.
    pub fn delete_snapshot(&self, id: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            get(tx, id)?;
            tx.prepare_cached(DELETE_SNAPSHOT)?.execute([id])?;
            Ok::<_, StoreError>(())
        })?;
        if let Some(file) = self.snapshot_file(id) {
            remove_file(&file);
        }
        Ok(())
    }

    /// Snapshot `id`'s row and one sealed value of its file (none when it holds no
    /// secret), read from the file alone. A missing or unreadable file, or one from a newer
    /// schema, is `SnapshotIncompatible`.
    pub fn snapshot_sample(
        &self,
        id: &str,
    ) -> Result<(Snapshot, Option<SealedSample>), StoreError> {
        let snapshot = self.read(|conn| get(conn, id))?;
        let file = self.snapshot_file(id).unwrap_or_default();
        let unreadable = |err: rusqlite::Error| {
            log::warn!("cannot read the snapshot file {}: {err}", file.display());
            StoreError::SnapshotIncompatible(
                "its file is missing or unreadable (see the service's log)".into(),
            )
        };
        if !file.is_file() {
            return Err(unreadable(rusqlite::Error::InvalidPath(file.clone())));
        }
        let conn = Connection::open_with_flags(&file, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(unreadable)?;
        let version = migrate::user_version(&conn)?;
        if version > migrate::SCHEMA_VERSION {
            return Err(StoreError::SnapshotIncompatible(format!(
                "it was taken at schema version {version}, newer than this build's {}",
                migrate::SCHEMA_VERSION
            )));
        }
        let sample = sealed_sample(&conn).map_err(unreadable)?;
        Ok((snapshot, sample))
    }

    /// Replaces the catalogue with snapshot `id`'s in one transaction (all or nothing),
    /// from a migrated copy when the snapshot's schema is older; then reads the list's
    /// memory again. The caller checked the vault key (`snapshot_sample`) and took the
    /// `restore` snapshot of now.
    pub fn restore_snapshot(&self, id: &str, scope: Scope<'_>) -> Result<Restored, StoreError> {
        let snapshot = self.read(|conn| get(conn, id))?;
        let file = self.snapshot_file(id).unwrap_or_default();
        let migrated = match u32::try_from(snapshot.schema_version) {
            Ok(version) if version == migrate::SCHEMA_VERSION => None,
            _ => Some(migrated_copy(&file)?),
        };
        let source = migrated.as_ref().map_or(&file, |copy| &copy.0);
        let restored = self.restore_from(path_text(source)?, scope);
        drop(migrated);
        let restored = restored?;
        if let Scope::Hosts(_) = scope {
            // The hosts' writes are in the list's logs, as any write's.
            return Ok(restored);
        }
        if let Err(err) = self.warm_list() {
            // The restore is committed; the next list request reads the memory itself.
            log::warn!("the list's memory was not read again after a restore: {err}");
        }
        Ok(restored)
    }

    /// The restore proper, under the connection's lock: attach, copy in one transaction,
    /// detach; then the list's memory is emptied (the caller reads it again) and the
    /// feed's waiting requests are woken.
    fn restore_from(&self, source: &str, scope: Scope<'_>) -> Result<Restored, StoreError> {
        let mut conn = self.lock();
        conn.execute("ATTACH DATABASE ?1 AS snap", [source])?;
        // Detached whatever happened, so the next restore can attach again.
        let copied = copy_with_keys_off(&mut conn, scope);
        let detached = conn.execute("DETACH DATABASE snap", []);
        let (restored, latest, removed_sealed) = copied?;
        detached?;
        self.scrub_after(&conn, removed_sealed);
        if scope == Scope::All {
            list::reading::clear_changed(&conn)?;
            *self.lock_list() = list::ListMemory::default();
        }
        drop(conn);
        self.feed.committed(Some(latest));
        Ok(restored)
    }

    fn scrub_after(&self, conn: &Connection, removed_sealed: bool) {
        if removed_sealed
            || self
                .scrub_pending
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.scrub(conn);
        }
    }
}

fn insert(conn: &Connection, snapshot: &Snapshot) -> Result<(), StoreError> {
    conn.prepare_cached(INSERT_SNAPSHOT)?.execute(params![
        snapshot.id,
        snapshot.created_at,
        snapshot.reason.as_str(),
        snapshot.label,
        snapshot.schema_version,
        snapshot.counts.hosts,
        snapshot.counts.groups,
        snapshot.counts.keys,
        snapshot.counts.identities,
        snapshot.size_bytes,
    ])?;
    Ok(())
}

/// A host's sealed password, else a key's sealed private key: the first found.
fn sealed_sample(conn: &Connection) -> rusqlite::Result<Option<SealedSample>> {
    let host = conn
        .query_row(
            "SELECT id, password FROM hosts WHERE password IS NOT NULL LIMIT 1",
            [],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?)),
        )
        .optional()?;
    if let Some((row_id, bytes)) = host {
        return Ok(Some(SealedSample {
            table: "hosts",
            row_id,
            field: "password",
            bytes,
        }));
    }
    let key = conn
        .query_row("SELECT id, private_key FROM keys LIMIT 1", [], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .optional()?;
    Ok(key.map(|(row_id, bytes)| SealedSample {
        table: "keys",
        row_id,
        field: "private_key",
        bytes,
    }))
}

/// A private copy of an older snapshot, migrated to this build's schema; removed on drop.
struct MigratedCopy(PathBuf);

impl Drop for MigratedCopy {
    fn drop(&mut self) {
        remove_file(&self.0);
    }
}

fn migrated_copy(file: &Path) -> Result<MigratedCopy, StoreError> {
    let mut name = file.as_os_str().to_owned();
    name.push(".migrating");
    let copy = MigratedCopy(PathBuf::from(name));
    remove_file(&copy.0);
    let mut target = platform::open_private(OpenOptions::new().write(true).create_new(true))
        .open(&copy.0)
        .map_err(|err| cannot(&copy.0, "create", &err))?;
    let mut source = fs::File::open(file).map_err(|err| {
        log::warn!("cannot read the snapshot file {}: {err}", file.display());
        StoreError::SnapshotIncompatible("its file is missing or unreadable".into())
    })?;
    io::copy(&mut source, &mut target).map_err(|err| cannot(&copy.0, "write", &err))?;
    drop(target);
    let mut conn = Connection::open(&copy.0)?;
    migrate::migrate(&mut conn)?;
    crate::store::groups::fill_fold_keys(&mut conn)?;
    crate::store::keys::fill_fold_keys(&mut conn)?;
    drop(conn);
    Ok(copy)
}

/// `copy_in` with foreign keys off (checked before its commit), so that emptying the hosts
/// cascades to nothing (their connection history among others); they are set back after.
/// Removes the vault's row (the data key, wrapped by the master password or, without one,
/// in the clear) from a snapshot file, its bytes overwritten (`secure_delete`): a snapshot
/// holds sealed secrets only, never what opens them, so a master password set later
/// protects the snapshots as it protects the database (docs/security.md). A restore never
/// reads it: it keeps this vault and checks its key against the snapshot's sealed values.
fn strip_vault(file: &Path) -> Result<(), StoreError> {
    let conn = Connection::open_with_flags(file, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    // The journal in memory: the row's old page never goes to a file beside the snapshot.
    conn.execute_batch(
        "PRAGMA journal_mode = MEMORY; PRAGMA secure_delete = ON; DELETE FROM vault;",
    )?;
    conn.close().map_err(|(_, err)| StoreError::from(err))
}

fn copy_with_keys_off(
    conn: &mut Connection,
    scope: Scope<'_>,
) -> Result<(Restored, i64, bool), StoreError> {
    let enforced: bool = conn.query_row("PRAGMA foreign_keys", [], |row| row.get(0))?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let copied = copy_in(conn, scope);
    conn.pragma_update(None, "foreign_keys", enforced)?;
    copied
}

/// The copy in one IMMEDIATE transaction: every catalogue table emptied, then filled from
/// `snap`; the group counts copied; the history of hosts gone dropped; references checked;
/// the feed reset. Answers the counts, the feed's newest seq and whether sealed bytes went.
fn copy_in(conn: &mut Connection, scope: Scope<'_>) -> Result<(Restored, i64, bool), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let names: Vec<&str> = CATALOGUE.iter().map(|(name, _, _)| *name).collect();
    let names = serde_json::to_string(&names).map_err(|err| StoreError::Json(err.to_string()))?;
    let differing: i64 = tx.query_row(SELECT_SCHEMA_DIFFERENCES, [names], |row| row.get(0))?;
    if differing > 0 {
        return Err(StoreError::SnapshotIncompatible(
            "its tables are not this database's (another schema)".into(),
        ));
    }
    let before = counts(&tx)?;
    match scope {
        Scope::All => copy_catalogue(&tx)?,
        Scope::Hosts(ids) => {
            for id in ids {
                copy_host(&tx, id)?;
            }
        }
    }
    let dangling: i64 = tx.query_row(
        "SELECT count(*) FROM main.pragma_foreign_key_check",
        [],
        |row| row.get(0),
    )?;
    if dangling > 0 {
        return Err(StoreError::SnapshotIncompatible(format!(
            "{dangling} of the rows it would restore refer to rows that are not there (a \
             host's group, key, identity or jump host deleted since: restore it first, or \
             the whole snapshot); nothing was changed"
        )));
    }
    let after = counts(&tx)?;
    let latest = changes::latest(&tx)?;
    if scope == Scope::All {
        tx.execute(DELETE_FEED_THROUGH, [latest])?;
        tx.execute(RESET_FEED, [latest])?;
    }
    let removed_sealed = scrub::take_removed(&tx)?;
    tx.commit()?;
    Ok((Restored { before, after }, latest, removed_sealed))
}

/// Every catalogue table emptied, then filled from `snap`; the group counts copied; the
/// history of hosts gone dropped.
fn copy_catalogue(tx: &Connection) -> Result<(), StoreError> {
    for (_, empty, _) in CATALOGUE.iter().rev() {
        tx.execute(empty, [])?;
    }
    for (_, _, fill) in CATALOGUE {
        tx.execute(fill, [])?;
    }
    tx.execute("DELETE FROM main.group_host_counts", [])?;
    tx.execute(
        "INSERT INTO main.group_host_counts SELECT * FROM snap.group_host_counts",
        [],
    )?;
    tx.execute(DELETE_ORPHAN_HISTORY, [])?;
    Ok(())
}

/// One host's steps (`?1` its id): its row read aside, given its current `seq` (else the
/// snapshot's while free, else one past the largest), its own rows and itself removed, then
/// written back from the snapshot. The triggers log the feed's entries and the list's.
const COPY_HOST: &[&str] = &[
    "DROP TABLE IF EXISTS temp.restored_host",
    "CREATE TEMP TABLE restored_host AS SELECT * FROM snap.hosts WHERE 0",
    "INSERT INTO temp.restored_host SELECT * FROM snap.hosts WHERE id = ?1",
    "UPDATE temp.restored_host SET seq = coalesce((SELECT seq FROM main.hosts WHERE id = ?1), \
     CASE WHEN seq IN (SELECT seq FROM main.hosts) \
     THEN (SELECT max(seq) + 1 FROM main.hosts) ELSE seq END)",
    "DELETE FROM main.host_tags WHERE host_seq = (SELECT seq FROM main.hosts WHERE id = ?1)",
    "DELETE FROM main.host_jumps WHERE host_id = ?1",
    "DELETE FROM main.host_ssh_options WHERE host_id = ?1",
    "DELETE FROM main.forwards WHERE host_id = ?1",
    "DELETE FROM main.env_secrets WHERE host_id = ?1",
    "DELETE FROM main.hosts WHERE id = ?1",
    "INSERT INTO main.hosts SELECT * FROM temp.restored_host",
    "INSERT INTO main.host_tags SELECT (SELECT seq FROM temp.restored_host), t.tag, t.position \
     FROM snap.host_tags AS t JOIN snap.hosts AS h ON h.seq = t.host_seq WHERE h.id = ?1",
    "INSERT INTO main.host_jumps SELECT * FROM snap.host_jumps WHERE host_id = ?1",
    "INSERT INTO main.host_ssh_options SELECT * FROM snap.host_ssh_options WHERE host_id = ?1",
    "INSERT INTO main.forwards SELECT * FROM snap.forwards WHERE host_id = ?1",
    "INSERT INTO main.env_secrets SELECT * FROM snap.env_secrets WHERE host_id = ?1",
    "DROP TABLE temp.restored_host",
];

/// Host `id` as the snapshot holds it; `HostNotFound` when the snapshot has no such host.
fn copy_host(tx: &Connection, id: &str) -> Result<(), StoreError> {
    let held: i64 = tx.query_row(
        "SELECT count(*) FROM snap.hosts WHERE id = ?1",
        [id],
        |row| row.get(0),
    )?;
    if held == 0 {
        return Err(StoreError::HostNotFound);
    }
    for step in COPY_HOST {
        let mut statement = tx.prepare(step)?;
        match statement.parameter_count() {
            0 => statement.execute([])?,
            _ => statement.execute([id])?,
        };
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::snapshots::{Reason, CATALOGUE};

    #[test]
    fn every_reason_reads_back_from_its_text() {
        for reason in [
            Reason::Manual,
            Reason::Import,
            Reason::BatchDelete,
            Reason::Restore,
            Reason::SyncMerge,
        ] {
            assert_eq!(Reason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(Reason::parse("other"), None);
    }

    /// Every table of the schema is either restored or named here as not the catalogue's:
    /// a new table must be placed on one side or the other.
    #[test]
    fn every_table_is_either_catalogue_or_named_as_kept() {
        const KEPT: &[&str] = &[
            "vault",
            "audit_log",
            "changes",
            "log_retention",
            "connection_history",
            "group_host_counts",
            "snapshots",
            "sqlite_sequence",
            // Sync's own rows (docs/sync.md): this device's, not the catalogue's; a restore
            // reaches the other devices as this device's edits at its next sync cycle.
            "sync_settings",
            "sync_peers",
            "sync_files",
            "sync_unapplied",
            "sync_conflicts",
        ];
        let db = crate::store::open_in_memory().unwrap();
        let tables: Vec<String> = db
            .read(|conn| {
                let mut statement =
                    conn.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table'")?;
                let names = statement.query_map([], |row| row.get(0))?;
                Ok::<_, crate::store::StoreError>(names.collect::<Result<_, _>>()?)
            })
            .unwrap();
        for table in &tables {
            let restored = CATALOGUE.iter().any(|(name, _, _)| name == table);
            assert!(
                restored != KEPT.contains(&table.as_str()),
                "{table}: restored {restored}"
            );
        }
        assert_eq!(tables.len(), CATALOGUE.len() + KEPT.len());
    }
}
