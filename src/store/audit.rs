//! The audit log: security-relevant events in the order they happened (README: "Audit
//! log"), appended inside the transaction of the change they record.
//!
//! Invariants: an entry is written only through `append`, by the caller's transaction, so
//! a change and its entry commit or roll back together; the log never holds more than
//! `AUDIT_MAX_ENTRIES` entries (the oldest go first, in the same transaction); a subject or
//! detail names ids, host names, key types and fingerprints, never a secret.

use rusqlite::{params, Connection};

use crate::store::{now_timestamp, StoreError};

/// README "Audit log": the newest 10,000 entries are kept. At about 300 bytes an entry that
/// is 3 MB, while a year of accepting a few host keys a day stays far below it.
pub const AUDIT_MAX_ENTRIES: i64 = 10_000;

/// A host key was trusted for the first time for its name (or a new algorithm of it).
pub const HOST_KEY_ACCEPTED: &str = "host_key.accepted";
/// A changed host key replaced the stored ones of its type.
pub const HOST_KEY_REPLACED: &str = "host_key.replaced";
/// A known-hosts entry was deleted through the API.
pub const HOST_KEY_DELETED: &str = "host_key.deleted";
/// A known_hosts text was imported (not for a dry run).
pub const HOST_KEYS_IMPORTED: &str = "host_keys.imported";
/// The SSH agent made a signature (README "SSH agent"): key, server, forwarded or not.
pub const AGENT_SIGNED: &str = "agent.signed";
/// `ssh-add` stored a key in the vault through the SSH agent.
pub const AGENT_KEY_ADDED: &str = "agent.key_added";
/// `ssh-add -d` or `-D`: the SSH agent stopped offering keys (they stay in the vault).
pub const AGENT_KEYS_DISABLED: &str = "agent.keys_disabled";
/// A forwarded connection asked to add, remove, lock or unlock and was refused (each of
/// the first 16 of a streak, then the 32nd, 64th, ...: `agent::refusals`).
pub const AGENT_FORWARDED_REFUSED: &str = "agent.forwarded_refused";
/// The vault was unlocked with the master password.
pub const VAULT_UNLOCKED: &str = "vault.unlocked";
/// An unlock was refused: the master password was wrong (logged for the 1st, 2nd, 4th, 8th,
/// ... failure of a streak, so a flood of guesses cannot push the rest of the log out).
pub const VAULT_UNLOCK_FAILED: &str = "vault.unlock_failed";
/// A password change or removal was refused: the current password was wrong (logged like
/// `VAULT_UNLOCK_FAILED`).
pub const VAULT_PASSWORD_CHECK_FAILED: &str = "vault.password_check_failed";
/// The vault was locked, by a request or by `--auto-lock`.
pub const VAULT_LOCKED: &str = "vault.locked";
/// A first master password was set.
pub const VAULT_PASSWORD_SET: &str = "vault.password_set";
/// The master password was changed.
pub const VAULT_PASSWORD_CHANGED: &str = "vault.password_changed";
/// The master password was removed.
pub const VAULT_PASSWORD_REMOVED: &str = "vault.password_removed";

const INSERT_ENTRY: &str =
    "INSERT INTO audit_log (at, event, subject, detail) VALUES (?1, ?2, ?3, ?4)";
/// Sequence numbers are dense (AUTOINCREMENT, rolled-back inserts leave no gap because the
/// counter update rolls back too), so everything at or below `max - limit` is the overflow.
const TRIM: &str = "DELETE FROM audit_log WHERE seq <= (SELECT max(seq) FROM audit_log) - ?1";
const SELECT_PAGE: &str = "SELECT seq, at, event, subject, detail FROM audit_log \
     WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2";

/// One stored entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    pub seq: i64,
    pub at: String,
    pub event: String,
    pub subject: String,
    /// A JSON object, as text.
    pub detail: String,
}

/// Appends an entry and trims the log to `AUDIT_MAX_ENTRIES`. Caller holds the write
/// transaction of the change the entry records.
pub fn append(
    conn: &Connection,
    event: &str,
    subject: &str,
    detail: &serde_json::Value,
) -> Result<(), StoreError> {
    append_bounded(conn, event, subject, detail, AUDIT_MAX_ENTRIES)
}

/// Entries with `seq` below `before` (all when `None`), newest first, at most `limit`.
pub fn page(
    conn: &Connection,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<AuditEntry>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_PAGE)?;
    let rows = statement.query_map(params![before.unwrap_or(i64::MAX), limit], |row| {
        Ok(AuditEntry {
            seq: row.get(0)?,
            at: row.get(1)?,
            event: row.get(2)?,
            subject: row.get(3)?,
            detail: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn append_bounded(
    conn: &Connection,
    event: &str,
    subject: &str,
    detail: &serde_json::Value,
    max_entries: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(INSERT_ENTRY)?.execute(params![
        now_timestamp(),
        event,
        subject,
        detail.to_string()
    ])?;
    conn.prepare_cached(TRIM)?.execute([max_entries])?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::store::audit::{append, append_bounded, page, HOST_KEY_ACCEPTED};
    use crate::store::{open_in_memory, StoreError};

    #[test]
    fn entries_page_newest_first_below_before() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            for n in 0..5 {
                append(tx, HOST_KEY_ACCEPTED, &format!("h{n}"), &json!({"n": n}))?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let first = db.read(|conn| page(conn, None, 2)).unwrap();
        let subjects: Vec<&str> = first.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["h4", "h3"]);
        assert_eq!(first[0].detail, r#"{"n":4}"#);
        let next = db.read(|conn| page(conn, Some(first[1].seq), 10)).unwrap();
        let subjects: Vec<&str> = next.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["h2", "h1", "h0"]);
    }

    #[test]
    fn log_at_its_bound_keeps_every_entry_and_one_more_drops_the_oldest() {
        let db = open_in_memory().unwrap();
        let add = |n: i64| {
            db.write(|tx| append_bounded(tx, HOST_KEY_ACCEPTED, &format!("h{n}"), &json!({}), 3))
                .unwrap()
        };
        for n in 0..3 {
            add(n);
        }
        let kept = db.read(|conn| page(conn, None, 10)).unwrap();
        assert_eq!(kept.len(), 3);
        add(3);
        let kept = db.read(|conn| page(conn, None, 10)).unwrap();
        let subjects: Vec<&str> = kept.iter().map(|e| e.subject.as_str()).collect();
        assert_eq!(subjects, ["h3", "h2", "h1"]);
    }

    #[test]
    fn an_entry_rolled_back_with_its_change_leaves_nothing() {
        let db = open_in_memory().unwrap();
        let failed: Result<(), StoreError> = db.write(|tx| {
            append(tx, HOST_KEY_ACCEPTED, "h", &json!({}))?;
            Err(StoreError::KnownHostNotFound)
        });
        assert!(matches!(failed, Err(StoreError::KnownHostNotFound)));
        assert_eq!(db.read(|conn| page(conn, None, 10)).unwrap(), vec![]);
    }
}
