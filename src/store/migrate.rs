//! Numbered schema migrations from sql/*.sql, tracked with `PRAGMA user_version`.
//!
//! Invariants: all pending migrations and the version bump commit in one transaction; a
//! database whose version is above `MIGRATIONS.len()` is refused and never modified.

use rusqlite::Connection;

use crate::store::StoreError;

/// Migration N (1-based) brings the schema to version N. Append only; never edit a file
/// that has shipped.
const MIGRATIONS: &[&str] = &[
    include_str!("../../sql/0001_init.sql"),
    include_str!("../../sql/0002_ssh_interop.sql"),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub fn user_version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

/// Fails, without writing anything, when the database was written by a newer build.
pub fn refuse_newer(conn: &Connection) -> Result<(), StoreError> {
    let found = user_version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Sqlite(format!(
            "the database has schema version {found}, newer than the {SCHEMA_VERSION} this build \
             knows; it was written by a newer host-manager and is left untouched"
        )));
    }
    Ok(())
}

/// Applies every pending migration in one transaction.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    refuse_newer(conn)?;
    let tx = conn.transaction()?;
    let found = user_version(&tx)?;
    for (index, script) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(script)?;
        log::info!("applied schema migration {}", index + 1);
    }
    if found < SCHEMA_VERSION {
        // PRAGMA takes no bound parameters; the value is our own constant.
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rusqlite::Connection;

    use crate::store::migrate::{migrate, user_version, SCHEMA_VERSION};

    #[test]
    fn fresh_database_reaches_the_latest_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn migrating_twice_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn newer_database_is_refused_and_untouched() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
            .unwrap();
        assert_eq!(tables, 0);
    }

    #[test]
    fn trigram_search_is_available() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let options: Vec<String> = conn
            .prepare("PRAGMA compile_options")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(options.iter().any(|option| option == "ENABLE_FTS5"));
    }
}
