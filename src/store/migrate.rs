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
    include_str!("../../sql/0003_list_counts.sql"),
    include_str!("../../sql/0004_known_hosts.sql"),
    include_str!("../../sql/0005_fold_keys.sql"),
    include_str!("../../sql/0006_changes.sql"),
    include_str!("../../sql/0007_agent.sql"),
    include_str!("../../sql/0008_list_in_memory.sql"),
    include_str!("../../sql/0009_audit_retention.sql"),
    include_str!("../../sql/0010_host_cas.sql"),
    include_str!("../../sql/0011_key_certificates.sql"),
    include_str!("../../sql/0012_identities.sql"),
    include_str!("../../sql/0013_forwards.sql"),
    include_str!("../../sql/0014_certificate_status.sql"),
    include_str!("../../sql/0015_import_records.sql"),
    include_str!("../../sql/0016_saved_searches.sql"),
    include_str!("../../sql/0017_snapshots.sql"),
    include_str!("../../sql/0018_sync.sql"),
];

/// The version whose SQL is followed by a data step in Rust: directives move out of
/// `ssh_options` into the fields of sql/0013_forwards.sql (store::migrate_session).
const SESSION_FIELDS_VERSION: usize = 13;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub fn user_version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

/// Fails, without writing anything, when the database was written by a newer build.
pub fn refuse_newer(conn: &Connection) -> Result<(), StoreError> {
    let found = user_version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Unusable(format!(
            "the database has schema version {found}, newer than the {SCHEMA_VERSION} this build \
             knows; it was written by a newer host-manager and is left untouched"
        )));
    }
    Ok(())
}

/// Applies every pending migration in one transaction.
///
/// Foreign keys are off while they run and checked before the commit (SQLite's documented
/// way to change a table's columns: build the new table, copy, drop the old one, rename):
/// with them on, dropping the old `hosts` table would delete every row that refers to it by
/// cascade. A migration that leaves a dangling reference fails and rolls back whole.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    refuse_newer(conn)?;
    if user_version(conn)? >= SCHEMA_VERSION {
        return Ok(());
    }
    let enforced: bool = conn.query_row("PRAGMA foreign_keys", [], |row| row.get(0))?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let applied = apply_pending(conn);
    conn.pragma_update(None, "foreign_keys", enforced)?;
    applied
}

fn apply_pending(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction()?;
    let found = user_version(&tx)?;
    for (index, script) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(script)?;
        if index + 1 == SESSION_FIELDS_VERSION {
            crate::store::migrate_session::move_directives(&tx)?;
        }
        log::info!("applied schema migration {}", index + 1);
    }
    let dangling: i64 =
        tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| {
            row.get(0)
        })?;
    if dangling > 0 {
        return Err(StoreError::Unusable(format!(
            "the schema migration would leave {dangling} rows referring to rows that do not \
             exist; nothing was changed"
        )));
    }
    // PRAGMA takes no bound parameters; the value is our own constant.
    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
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

    /// A database at `version` holding two hosts and three tags.
    fn database_at(version: usize) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = conn.transaction().unwrap();
        for script in &super::MIGRATIONS[..version] {
            tx.execute_batch(script).unwrap();
        }
        tx.execute_batch(&format!(
            "PRAGMA user_version = {version};
             INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, auth_type,
                 created_at, updated_at)
             VALUES (1, 'a', 'A', 'a', 'a', 22, 'u', 'agent', 't', 't'),
                    (2, 'b', 'B', 'b', 'b', 22, 'u', 'agent', 't', 't');
             INSERT INTO host_tags (host_seq, tag, position) VALUES (1, 'x', 0), (2, 'x', 0),
                 (2, 'y', 1);"
        ))
        .unwrap();
        tx.commit().unwrap();
        conn
    }

    /// Schema 10 keeps the blocking verdicts a version 9 database holds (with no reason) and
    /// takes the new `certificate_invalid` one.
    #[test]
    fn version_10_keeps_the_alerts_of_a_version_9_database_and_takes_certificate_invalid() {
        let mut conn = database_at(9);
        conn.execute_batch(
            "INSERT INTO host_key_alerts (host, status, key_type, fingerprint, at)
             VALUES ('h', 'revoked', 'ssh-ed25519', 'SHA256:x', 't')",
        )
        .unwrap();
        let refused = conn.execute_batch(
            "INSERT INTO host_key_alerts (host, status, key_type, fingerprint, at)
             VALUES ('g', 'certificate_invalid', 'ssh-ed25519', 'SHA256:y', 't')",
        );
        assert!(refused.is_err(), "version 9 knows no certificate_invalid");
        migrate(&mut conn).unwrap();
        let kept: (String, String) = conn
            .query_row(
                "SELECT status, reason FROM host_key_alerts WHERE host = 'h'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(kept, ("revoked".to_owned(), String::new()));
        conn.execute_batch(
            "INSERT INTO host_key_alerts (host, status, key_type, fingerprint, at, reason)
             VALUES ('g', 'certificate_invalid', 'ssh-ed25519', 'SHA256:y', 't', 'expired')",
        )
        .unwrap();
    }

    /// Schema 12 rebuilds the hosts table (port, username and auth become nullable) and
    /// keeps every row that refers to a host: tags, chains, options, history, group counts;
    /// the rebuilt table's triggers log and count as before, and hosts keep their own values
    /// (nothing is inherited until a user clears a field).
    #[test]
    fn version_12_rebuilds_hosts_and_keeps_everything_that_refers_to_them() {
        let mut conn = database_at(11);
        conn.execute_batch(
            "INSERT INTO groups (id, name, name_key, created_at, updated_at)
                 VALUES ('g', 'G', 'g', 't', 't');
             UPDATE hosts SET group_id = 'g' WHERE id = 'b';
             INSERT INTO host_jumps (host_id, position, jump_host_id) VALUES ('b', 0, 'a');
             INSERT INTO host_ssh_options (host_id, position, option)
                 VALUES ('b', 0, 'Compression yes');
             INSERT INTO connection_history (host_id, name, hostname, port, username,
                 auth_type, connected_at) VALUES ('a', 'A', 'a', 22, 'u', 'agent', 't');",
        )
        .unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        migrate(&mut conn).unwrap();
        let enforced: bool = conn
            .query_row("PRAGMA foreign_keys", [], |row| row.get(0))
            .unwrap();
        assert!(enforced, "foreign keys are on again after the migration");
        let kept: (i64, i64, i64, i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM hosts), (SELECT count(*) FROM host_tags), \
                 (SELECT count(*) FROM host_jumps), (SELECT count(*) FROM host_ssh_options), \
                 (SELECT count(*) FROM connection_history), \
                 (SELECT host_count FROM group_host_counts WHERE group_id = 'g')",
                [],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(kept, (2, 3, 1, 1, 1, 1));
        let own: (i64, String, String, i64) = conn
            .query_row(
                "SELECT port, username, auth_type, jumps_set FROM hosts WHERE id = 'b'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
            )
            .unwrap();
        assert_eq!(own, (22, "u".to_owned(), "agent".to_owned(), 1));
        conn.execute(
            "UPDATE hosts SET updated_at = 'u', group_id = NULL WHERE id = 'b'",
            [],
        )
        .unwrap();
        let after: (i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT revision FROM hosts WHERE id = 'b'), \
                 (SELECT count(*) FROM changes WHERE kind = 'host' AND id = 'b' AND op = 'updated'), \
                 (SELECT host_count FROM group_host_counts WHERE group_id = 'g')",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        assert_eq!(after, (2, 1, 0));
        conn.execute(
            "UPDATE hosts SET port = NULL, username = NULL WHERE id = 'a'",
            [],
        )
        .unwrap();
        let refused = conn.execute("DELETE FROM hosts WHERE id = 'a'", []);
        assert!(refused.is_err(), "a host still used as a hop cannot go");
    }

    /// Schema 3 counts the hosts and tags already stored when it is applied.
    /// Schema 13 moves the directives that now have fields out of `ssh_options`: forwards
    /// become rules (an `ExitOnForwardFailure no` makes them manual), the command and the
    /// environment become `startup`, a group's `SetEnv` its default; a line no field can
    /// hold is appended to the host's notes; every other option stays in order.
    #[test]
    fn version_13_moves_forwards_command_and_environment_out_of_ssh_options() {
        let mut conn = database_at(12);
        conn.execute_batch(
            "INSERT INTO groups (id, name, name_key, created_at, updated_at, default_ssh_options)
                 VALUES ('g', 'G', 'g', 't', 't',
                 '[\"SetEnv TEAM=ops\", \"RemoteCommand top\", \"Compression yes\"]');
             INSERT INTO host_ssh_options (host_id, position, option) VALUES
                 ('a', 0, 'ServerAliveInterval 30'),
                 ('a', 1, 'LocalForward 8080 localhost:80'),
                 ('a', 2, 'SetEnv LANG=C \"GREETING=hello world\"'),
                 ('a', 3, 'RemoteCommand echo 100%%'),
                 ('a', 4, 'LocalForward not-a-forward'),
                 ('a', 5, 'ExitOnForwardFailure no'),
                 ('a', 6, 'DynamicForward 1080'),
                 ('a', 7, 'Compression yes');",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let options: Vec<String> = conn
            .prepare("SELECT option FROM host_ssh_options WHERE host_id = 'a' ORDER BY position")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(options, ["ServerAliveInterval 30", "Compression yes"]);
        let rules: Vec<(i64, String, i64, bool)> = conn
            .prepare(
                "SELECT position, type, bind_port, autostart FROM forwards \
                      WHERE host_id = 'a' ORDER BY position",
            )
            .unwrap()
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rules,
            [
                (0, "local".into(), 8080, false),
                (1, "dynamic".into(), 1080, false)
            ]
        );
        let (startup, notes): (String, String) = conn
            .query_row(
                "SELECT startup, notes FROM hosts WHERE id = 'a'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        let startup: serde_json::Value = serde_json::from_str(&startup).unwrap();
        assert_eq!(startup["remote_command"], "echo 100%");
        assert_eq!(
            startup["set_env"],
            serde_json::json!([{"name": "LANG", "value": "C"},
                               {"name": "GREETING", "value": "hello world"}])
        );
        assert!(notes.ends_with("\nLocalForward not-a-forward"), "{notes}");
        let (options, set_env): (String, String) = conn
            .query_row(
                "SELECT default_ssh_options, default_set_env FROM groups WHERE id = 'g'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(options, r#"["RemoteCommand top","Compression yes"]"#);
        assert_eq!(set_env, r#"[{"name":"TEAM","value":"ops"}]"#);
        let untouched: String = conn
            .query_row("SELECT startup FROM hosts WHERE id = 'b'", [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(untouched, "{}");
    }

    #[test]
    fn version_3_counts_the_hosts_and_tags_a_version_2_database_holds() {
        let conn = database_at(2);
        conn.execute_batch(super::MIGRATIONS[2]).unwrap();
        let total: i64 = conn
            .query_row("SELECT host_count FROM host_total", [], |row| row.get(0))
            .unwrap();
        let tags: Vec<(String, i64)> = conn
            .prepare("SELECT tag, host_count FROM tag_counts ORDER BY tag")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(total, 2);
        assert_eq!(tags, vec![("x".to_owned(), 2), ("y".to_owned(), 1)]);
        // The triggers keep them from here on, down to a tag's last host.
        conn.execute("DELETE FROM hosts WHERE seq = 2", []).unwrap();
        let counts: (i64, i64) = conn
            .query_row(
                "SELECT (SELECT host_count FROM host_total), (SELECT count(*) FROM tag_counts)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(counts, (1, 1));
    }

    /// Schema 8 (sql/0008_list_in_memory.sql) drops the list's sort indexes and counts, and
    /// keeps every host and tag, and the change log's triggers still log an edit.
    #[test]
    fn the_in_memory_list_schema_drops_sort_indexes_and_counts_and_keeps_rows() {
        let mut conn = database_at(3);
        migrate(&mut conn).unwrap();
        assert_eq!(user_version(&conn).unwrap(), SCHEMA_VERSION);
        let left: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE name LIKE 'hosts_by_%' \
                 OR name IN ('host_total', 'tag_counts') ORDER BY name",
            )
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            left,
            [
                "hosts_by_created",
                "hosts_by_group_order",
                "hosts_by_identity",
                "hosts_by_key"
            ]
        );
        let rows: (i64, i64) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM hosts), (SELECT count(*) FROM host_tags)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(rows, (2, 3));
        conn.execute("UPDATE hosts SET updated_at = 'u' WHERE id = 'a'", [])
            .unwrap();
        let logged: (i64, i64) = conn
            .query_row(
                "SELECT (SELECT revision FROM hosts WHERE id = 'a'), \
                 (SELECT count(*) FROM changes WHERE kind = 'host' AND id = 'a')",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(logged, (2, 1));
    }

    /// The change log migration (sql/0006_changes.sql) gives the rows already stored
    /// revision 1 and logs nothing for them; changes after it are logged.
    #[test]
    fn the_change_log_migration_starts_existing_rows_at_revision_1_with_an_empty_log() {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = conn.transaction().unwrap();
        for script in &super::MIGRATIONS[..3] {
            tx.execute_batch(script).unwrap();
        }
        tx.execute_batch(
            "PRAGMA user_version = 3;
             INSERT INTO groups (id, name, name_key, created_at, updated_at)
             VALUES ('g', 'G', 'g', 't', 't');
             INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, auth_type,
                 created_at, updated_at)
             VALUES (1, 'h', 'H', 'h', 'h', 22, 'u', 'agent', 't', 't');",
        )
        .unwrap();
        tx.commit().unwrap();
        migrate(&mut conn).unwrap();
        let read = |sql: &str| -> i64 { conn.query_row(sql, [], |row| row.get(0)).unwrap() };
        assert_eq!(read("SELECT revision FROM hosts WHERE id = 'h'"), 1);
        assert_eq!(read("SELECT revision FROM groups WHERE id = 'g'"), 1);
        assert_eq!(read("SELECT count(*) FROM changes"), 0);
        conn.execute("UPDATE hosts SET updated_at = 'u' WHERE id = 'h'", [])
            .unwrap();
        assert_eq!(read("SELECT revision FROM hosts WHERE id = 'h'"), 2);
        assert_eq!(read("SELECT count(*) FROM changes WHERE kind = 'host'"), 1);
    }
}
