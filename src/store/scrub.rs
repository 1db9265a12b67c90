//! Removed secrets leave the data dir: a write that deleted or replaced sealed bytes (a host
//! password, a key's private key or passphrase, an identity's password, literal answers or
//! TOTP secret, a secret environment value, the sync passphrase, the vault's data key) is followed, before
//! its answer, by a checkpoint that copies the WAL into the database file and truncates it
//! to zero bytes. With `secure_delete` on, the pages written back carry zeros where the old
//! bytes were, so no file of the data dir (database, `-wal`, `-shm`) holds the old
//! ciphertext any more (docs/security.md, The vault's threat model).
//!
//! Invariants: temp triggers (per connection, never in the file) note every such write,
//! whichever code path made it; only those writes pay for a checkpoint, ordinary ones pay
//! one statement on a one-row temp table (`take_removed`).

use rusqlite::Connection;

use crate::store::StoreError;

/// The log table (at most one row) and the triggers that fill it.
const CREATE_LOG: &str = "
    CREATE TEMP TABLE IF NOT EXISTS sealed_removed (id INTEGER PRIMARY KEY CHECK (id = 1));
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_host_delete AFTER DELETE ON main.hosts
        WHEN old.password IS NOT NULL BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_host_password
        AFTER UPDATE OF password ON main.hosts
        WHEN old.password IS NOT NULL AND old.password IS NOT new.password BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_env_secret AFTER DELETE ON main.env_secrets
    BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_key_delete AFTER DELETE ON main.keys
    BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_key_secrets
        AFTER UPDATE OF private_key, passphrase ON main.keys
        WHEN old.private_key IS NOT new.private_key
            OR (old.passphrase IS NOT NULL AND old.passphrase IS NOT new.passphrase) BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_identity_password
        AFTER DELETE ON main.identity_methods WHEN old.password IS NOT NULL BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_identity_literal
        AFTER DELETE ON main.identity_answers WHEN old.literal IS NOT NULL BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_identity_delete
        AFTER DELETE ON main.identities WHEN old.totp_secret IS NOT NULL BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_identity_totp
        AFTER UPDATE OF totp_secret ON main.identities
        WHEN old.totp_secret IS NOT NULL AND old.totp_secret IS NOT new.totp_secret BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_sync_passphrase
        AFTER UPDATE OF passphrase ON main.sync_settings
        WHEN old.passphrase IS NOT NULL AND old.passphrase IS NOT new.passphrase BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_vault_update
        AFTER UPDATE OF data_key ON main.vault
        WHEN old.data_key IS NOT new.data_key BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;
    CREATE TEMP TRIGGER IF NOT EXISTS sealed_removed_vault_delete AFTER DELETE ON main.vault
    BEGIN
        INSERT OR IGNORE INTO sealed_removed (id) VALUES (1);
    END;";

/// Empties the log; the count of rows it removed says whether sealed bytes went.
const TAKE: &str = "DELETE FROM temp.sealed_removed";

/// Sets up the connection's log and triggers. Call once per connection, after migrations.
pub fn install(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(CREATE_LOG)?;
    Ok(())
}

/// Whether the current transaction deleted or replaced sealed bytes; clears the note, so
/// call it once, just before the commit (a rollback brings the note back with the bytes).
pub fn take_removed(conn: &Connection) -> Result<bool, StoreError> {
    Ok(conn.prepare_cached(TAKE)?.execute([])? > 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::open_in_memory;
    use crate::store::scrub::take_removed;

    fn run(db: &crate::store::Db, sql: &str) -> bool {
        db.read(|conn| {
            conn.execute_batch(sql)?;
            take_removed(conn)
        })
        .unwrap()
    }

    #[test]
    fn deleting_or_replacing_a_host_password_is_noted_and_other_writes_are_not() {
        let db = open_in_memory().unwrap();
        let insert = "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, \
                      auth_type, password, created_at, updated_at) VALUES \
                      (1, 'a', 'a', 'a', 'h', 22, 'u', 'password', x'01', 't', 't'), \
                      (2, 'b', 'b', 'b', 'h', 22, 'u', 'agent', NULL, 't', 't')";
        assert!(!run(&db, insert), "an insert removes nothing");
        assert!(!run(
            &db,
            "UPDATE hosts SET last_used_at = 'x' WHERE seq = 1"
        ));
        assert!(!run(&db, "UPDATE hosts SET password = x'01' WHERE seq = 1"));
        assert!(!run(&db, "UPDATE hosts SET password = x'02' WHERE seq = 2"));
        assert!(run(&db, "UPDATE hosts SET password = x'03' WHERE seq = 1"));
        assert!(run(&db, "UPDATE hosts SET password = NULL WHERE seq = 2"));
        assert!(
            !run(&db, "DELETE FROM hosts WHERE seq = 2"),
            "no password to remove"
        );
        assert!(run(&db, "DELETE FROM hosts WHERE seq = 1"));
        assert!(!run(&db, "SELECT 1"), "the note is taken once");
    }

    #[test]
    fn deleting_a_key_or_changing_the_vault_key_is_noted() {
        let db = open_in_memory().unwrap();
        let insert = "INSERT INTO keys (id, name, name_key, type, public_key, fingerprint, \
                      has_passphrase, private_key, created_at, updated_at) \
                      VALUES ('k', 'k', 'k', 't', 'p', 'f', 0, x'01', 't', 't')";
        assert!(!run(&db, insert));
        assert!(!run(&db, "UPDATE keys SET comment = 'c'"));
        assert!(run(&db, "DELETE FROM keys"));
        assert!(!run(
            &db,
            "INSERT INTO vault (id, data_key) VALUES (1, x'01')"
        ));
        assert!(run(&db, "UPDATE vault SET data_key = x'02'"));
        assert!(run(&db, "DELETE FROM vault"));
    }

    #[test]
    fn removing_or_replacing_an_identitys_sealed_bytes_is_noted_and_other_writes_are_not() {
        let db = open_in_memory().unwrap();
        let insert = "INSERT INTO identities (id, name, name_key, fold_key, totp_secret, \
                      totp_digits, totp_period, totp_algorithm, created_at, updated_at) VALUES \
                      ('i', 'i', 'i', 'i', x'01', 6, 30, 'SHA1', 't', 't'); \
                      INSERT INTO identity_methods (identity_id, position, type, password) \
                      VALUES ('i', 0, 'password', x'01'), ('i', 1, 'agent', NULL); \
                      INSERT INTO identity_answers (identity_id, position, prompt, answer, \
                      literal) VALUES ('i', 0, 'p', 'literal', x'01'), ('i', 1, 'q', 'totp', NULL)";
        assert!(!run(&db, insert), "an insert removes nothing");
        assert!(!run(&db, "UPDATE identities SET notes = 'n'"));
        assert!(!run(&db, "DELETE FROM identity_methods WHERE position = 1"));
        assert!(run(&db, "DELETE FROM identity_methods WHERE position = 0"));
        assert!(!run(&db, "DELETE FROM identity_answers WHERE position = 1"));
        assert!(run(&db, "DELETE FROM identity_answers WHERE position = 0"));
        assert!(run(&db, "UPDATE identities SET totp_secret = x'02'"));
        assert!(run(&db, "DELETE FROM identities"));
    }
}
