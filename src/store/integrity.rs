//! Refuses to open a damaged database, before anything writes to it (docs/reliability.md, Reliability):
//! - pages that fail SQLite's `PRAGMA quick_check` (a service on such a file would answer
//!   `ok` and spread the damage with every write);
//! - sealed secrets whose vault row is gone (starting would create a new, unprotected vault
//!   beside secrets that were under a master password, and none of them would open).
//!
//! `quick_check` reads every page: about 0.3-0.4 s for the 100 MB of 100,000 hosts, far
//! over the start-up budget. So a clean close records the closed file (on Unix its device,
//! inode, size, modification and change times; on Windows its size, modification and
//! creation times: docs/platforms.md, Platforms) in `host-manager.db-clean`, and a start whose file still
//! matches that record, with no WAL left over, skips the full check: nothing has written to
//! the file since it was last checked or written by us. Any other start (first run, crash,
//! kill, a file copied in or edited) runs the full check. The record is removed at start,
//! so it exists only while the database is closed.
//!
//! That record also says how large the file was when the service last stopped: a database
//! that is empty (0 bytes) or gone while the record says it had content lost its catalogue
//! after the stop (truncated, or replaced by an empty file), and is refused with both sizes
//! instead of being initialised as a fresh install with no master password.
//!
//! Invariants: reads only; the refusal names what is wrong and what to do, and no secret.

use std::fs;
use std::io;
use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;

use crate::platform;
use crate::store::files::sidecar;
use crate::store::migrate::user_version;
use crate::store::StoreError;

/// Beside the database: the record of its last clean close.
const CLEAN_CLOSE_SUFFIX: &str = "-clean";
/// The record's first word, so a file of another format is never taken for one.
const RECORD_FORMAT: &str = "host-manager-clean-close-1";
/// At most this many problems are listed in a refusal.
const QUICK_CHECK: &str = "PRAGMA quick_check(5)";
const VAULT_ROW_PRESENT: &str = "SELECT EXISTS (SELECT 1 FROM vault WHERE id = 1)";
const SEALED_SECRETS: &str = "SELECT (SELECT count(*) FROM keys)
     + (SELECT count(*) FROM hosts WHERE password IS NOT NULL)";
/// Whether the identities' tables exist yet (sql/0012_identities.sql): this check runs
/// before the migrations.
const IDENTITIES_PRESENT: &str =
    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'identities')";
const SEALED_IDENTITY_SECRETS: &str = "SELECT \
     (SELECT count(*) FROM identities WHERE totp_secret IS NOT NULL) \
     + (SELECT count(*) FROM identity_methods WHERE password IS NOT NULL) \
     + (SELECT count(*) FROM identity_answers WHERE literal IS NOT NULL)";

/// Refuses a database file that is empty or missing while its clean-close record says the
/// last clean close left it with content (docs/reliability.md, Reliability): starting would create a
/// fresh database, with an open vault, in its place. Leaves the file and the record as they
/// are, so the next start refuses too. Runs before anything creates or opens the file.
pub fn refuse_lost(db_path: &Path) -> Result<(), StoreError> {
    let record = sidecar(db_path, CLEAN_CLOSE_SUFFIX);
    let Some(recorded) = fs::read_to_string(&record)
        .ok()
        .and_then(|line| recorded_size(&line))
    else {
        return Ok(()); // No record: a first start, or after a crash (the full check runs).
    };
    let found = match fs::symlink_metadata(db_path) {
        Ok(metadata) if metadata.len() > 0 => return Ok(()),
        Ok(_) => "is empty (0 bytes)",
        Err(err) if err.kind() == io::ErrorKind::NotFound => "is missing (0 bytes)",
        Err(_) => return Ok(()), // `files::prepare` says what is wrong with it.
    };
    if recorded == 0 {
        return Ok(());
    }
    Err(StoreError::Unusable(format!(
        "the database {} {found}, but host-manager's last clean close recorded it at \
         {recorded} bytes (in {}): its contents were lost after host-manager stopped \
         (truncated or replaced). host-manager refuses to start rather than create a new, \
         empty database with no master password in its place, and has changed neither file. \
         Restore the data dir from a backup; to start over with an empty catalogue on \
         purpose, remove both files",
        db_path.display(),
        record.display()
    )))
}

/// The database's size in a clean-close record line, `None` for a line of another format.
fn recorded_size(line: &str) -> Option<u64> {
    line.strip_prefix(RECORD_FORMAT)?
        .strip_prefix(' ')?
        .split_whitespace()
        .nth(platform::FILE_IDENTITY_SIZE_FIELD)?
        .parse()
        .ok()
}

/// Checks the database's pages (fully unless the clean-close record matches) before
/// anything else reads or writes it; `Unusable` says what is wrong.
pub fn check_pages(conn: &Connection, db_path: &Path) -> Result<(), StoreError> {
    let record = sidecar(db_path, CLEAN_CLOSE_SUFFIX);
    let clean = closed_cleanly(db_path, &record);
    if let Err(err) = fs::remove_file(&record) {
        if err.kind() != io::ErrorKind::NotFound {
            log::warn!("cannot remove {}: {err}", record.display());
        }
    }
    if !clean {
        let started = Instant::now();
        quick_check(conn, db_path)?;
        log::info!(
            "database checked (PRAGMA quick_check) in {} ms: it was not closed cleanly by \
             host-manager last time, or changed since",
            started.elapsed().as_millis()
        );
    }
    Ok(())
}

/// Writes the clean-close record of the (closed) database at `db_path`. A failure only
/// costs the next start a full check.
pub fn record_clean_close(db_path: &Path) {
    let Some(line) = describe(db_path) else {
        return;
    };
    let record = sidecar(db_path, CLEAN_CLOSE_SUFFIX);
    let written = platform::open_private(fs::OpenOptions::new().write(true).create_new(true))
        .open(&record)
        .and_then(|mut file| io::Write::write_all(&mut file, line.as_bytes()));
    if let Err(err) = written {
        log::warn!(
            "cannot record the clean close in {}: {err}",
            record.display()
        );
    }
}

/// Whether the file is exactly as the last clean close recorded it, with no WAL content.
fn closed_cleanly(db_path: &Path, record: &Path) -> bool {
    let wal_empty = match fs::metadata(sidecar(db_path, "-wal")) {
        Ok(metadata) => metadata.len() == 0,
        Err(err) => err.kind() == io::ErrorKind::NotFound,
    };
    let recorded = fs::read_to_string(record).ok();
    wal_empty && recorded.is_some() && recorded == describe(db_path)
}

/// The record line of a file: what a write changes (on Unix the change time too, which no
/// tool can set back; docs/platforms.md, Platforms).
fn describe(db_path: &Path) -> Option<String> {
    let metadata = fs::symlink_metadata(db_path).ok()?;
    Some(format!(
        "{RECORD_FORMAT} {}\n",
        platform::file_identity(&metadata)
    ))
}

fn quick_check(conn: &Connection, db_path: &Path) -> Result<(), StoreError> {
    let found: Result<Vec<String>, rusqlite::Error> = conn
        .prepare(QUICK_CHECK)
        .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect());
    let problems = match found {
        Ok(lines) if lines == ["ok"] => return Ok(()),
        Ok(lines) => lines.join("; "),
        Err(err) => err.to_string(),
    };
    Err(damaged(db_path, &format!("PRAGMA quick_check: {problems}")))
}

/// The refusal for a file SQLite cannot read as a sound database.
pub fn damaged(db_path: &Path, problem: &str) -> StoreError {
    StoreError::Unusable(format!(
        "the database {} is damaged ({problem}); host-manager refuses to start on it and has \
         not changed it. Restore the data dir from a backup, or save what is readable with \
         `sqlite3 {} .recover` into a new database",
        db_path.display(),
        db_path.display()
    ))
}

/// Sealed secrets without the vault row that holds their data key are refused. Run after
/// `migrate::refuse_newer`: it reads this build's schema.
pub fn vault_row_consistent(conn: &Connection, db_path: &Path) -> Result<(), StoreError> {
    if user_version(conn)? == 0 {
        return Ok(()); // A new file: no tables yet.
    }
    let present: bool = conn.query_row(VAULT_ROW_PRESENT, [], |row| row.get(0))?;
    if present {
        return Ok(());
    }
    let mut sealed: i64 = conn.query_row(SEALED_SECRETS, [], |row| row.get(0))?;
    if conn.query_row(IDENTITIES_PRESENT, [], |row| row.get(0))? {
        sealed += conn.query_row::<i64, _, _>(SEALED_IDENTITY_SECRETS, [], |row| row.get(0))?;
    }
    if sealed == 0 {
        return Ok(());
    }
    Err(StoreError::Unusable(format!(
        "the database {} holds {sealed} sealed secret(s) but its vault row (the data key, \
         wrapped under the master password when one is set) is missing, so none of them can \
         be opened; host-manager refuses to start rather than create a new, unprotected vault \
         beside them, and has not changed the file. Restore the data dir from a backup",
        db_path.display()
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::fs;

    use rusqlite::Connection;

    use crate::store::integrity::{describe, recorded_size, vault_row_consistent};
    use crate::store::migrate::migrate;

    #[test]
    fn the_recorded_size_is_the_file_size_a_clean_close_record_holds_on_this_platform() {
        let path = crate::scratch::fresh("integrity-size").join("db");
        fs::write(&path, vec![7u8; 184_320]).unwrap();
        let line = describe(&path).unwrap();
        fs::remove_file(&path).unwrap();
        assert_eq!(recorded_size(&line), Some(184_320), "{line}");
        assert_eq!(recorded_size("another-format 1 2 184320 4 5\n"), None);
        assert_eq!(recorded_size("host-manager-clean-close-1\n"), None);
    }

    fn schema() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn
    }

    #[test]
    fn a_missing_vault_row_without_secrets_is_accepted() {
        let conn = schema();
        assert!(vault_row_consistent(&conn, "x.db".as_ref()).is_ok());
    }

    #[test]
    fn a_missing_vault_row_with_a_sealed_host_password_is_refused() {
        let conn = schema();
        conn.execute_batch(
            "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, auth_type,
                 password, created_at, updated_at)
             VALUES (1, 'a', 'a', 'a', 'h', 22, 'u', 'password', x'01', 't', 't')",
        )
        .unwrap();
        let err = vault_row_consistent(&conn, "x.db".as_ref())
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 sealed secret(s)"), "{err}");
        conn.execute_batch("INSERT INTO vault (id, data_key) VALUES (1, x'00')")
            .unwrap();
        assert!(vault_row_consistent(&conn, "x.db".as_ref()).is_ok());
    }

    #[test]
    fn a_missing_vault_row_with_a_sealed_identity_secret_is_refused() {
        let conn = schema();
        conn.execute_batch(
            "INSERT INTO identities (id, name, name_key, fold_key, created_at, updated_at)
                 VALUES ('i', 'i', 'i', 'i', 't', 't');
             INSERT INTO identity_answers (identity_id, position, prompt, answer, literal)
                 VALUES ('i', 0, 'p', 'literal', x'01')",
        )
        .unwrap();
        let err = vault_row_consistent(&conn, "x.db".as_ref())
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 sealed secret(s)"), "{err}");
    }
}
