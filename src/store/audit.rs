//! The audit log: security-relevant events in the order they happened (docs/api.md: "Audit
//! log"), appended inside the transaction of the change they record.
//!
//! Every event kind is either a security event or a routine one (`class`, the one place
//! that decides). Security events are kept by time: none younger than
//! `SECURITY_KEPT_DAYS` is ever dropped, and older ones only once more than
//! `SECURITY_KEPT_ENTRIES` security entries exist. Routine events (the agent's signatures,
//! the TOTP codes handed out) are kept by count (`ROUTINE_KEPT` entries, the oldest go
//! first) and a repeat within the same minute (same event, subject and detail: key,
//! destination, flags) adds to the count of its entry instead of adding one, so no flood of
//! signatures or codes can push a security event out.
//!
//! Invariants: an entry is written only through `append`, by the caller's transaction, so
//! a change and its entry commit or roll back together; the trims run in that transaction;
//! a subject or detail names ids, host names, key types and fingerprints, never a secret.

use rusqlite::{params, Connection};

use crate::store::{now_timestamp, StoreError};

/// docs/api.md "Audit log": routine entries kept (each may stand for many merged events); at
/// about 300 bytes an entry that is 3 MB. A test may set fewer (`set_routine_kept`).
pub const ROUTINE_KEPT: u64 = 10_000;

/// docs/api.md "Audit log": a security event is kept at least this many days.
pub const SECURITY_KEPT_DAYS: u32 = 90;

/// docs/api.md "Audit log": security events older than `SECURITY_KEPT_DAYS` go, oldest first,
/// only while more than this many security entries exist.
pub const SECURITY_KEPT_ENTRIES: i64 = 10_000;

/// Whether an event is kept by time (security) or by count and merged (routine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Security,
    Routine,
}

/// A host key was trusted for the first time for its name (or a new algorithm of it).
pub const HOST_KEY_ACCEPTED: &str = "host_key.accepted";
/// A changed host key replaced the stored ones of its type.
pub const HOST_KEY_REPLACED: &str = "host_key.replaced";
/// A known-hosts entry was deleted through the API.
pub const HOST_KEY_DELETED: &str = "host_key.deleted";
/// A known_hosts text was imported (not for a dry run).
pub const HOST_KEYS_IMPORTED: &str = "host_keys.imported";
/// A host CA was trusted for a host pattern (`POST /api/known-hosts/authorities`), also
/// when it already was (`already_trusted` in the detail).
pub const HOST_CA_ADDED: &str = "host_ca.added";
/// A group's defaults changed, or a group moved, and this many hosts below it now connect
/// with other values (docs/identities.md, "Rotation in one call").
pub const GROUP_DEFAULTS_CHANGED: &str = "group.defaults_changed";
/// `POST /api/hosts/batch` changed or deleted hosts (not for a dry run): how many, which
/// ops, and how they were selected; one entry per batch.
pub const HOSTS_BATCH: &str = "hosts.batch";
/// A host CA was taken away (`DELETE /api/known-hosts/authorities/:id`).
pub const HOST_CA_DELETED: &str = "host_ca.deleted";
/// An identity was created (docs/identities.md): its id, never a secret.
pub const IDENTITY_CREATED: &str = "identity.created";
/// An export carried passwords (`?secrets=include`, docs/import.md "Export"): its format
/// and how many passwords, never one of them.
pub const SECRETS_EXPORTED: &str = "secrets.exported";
/// An identity was changed: the names of the fields that changed and how many hosts follow.
pub const IDENTITY_UPDATED: &str = "identity.updated";
/// An identity was deleted, its direct users moved to `reassigned_to` when given.
pub const IDENTITY_DELETED: &str = "identity.deleted";
/// A TOTP code was handed out (`POST /api/identities/:id/totp`), never the code. Routine:
/// a client may ask every few seconds, and a repeat within its minute is merged.
pub const IDENTITY_TOTP: &str = "identity.totp";
/// The SSH agent made a signature (docs/agent.md "SSH agent"): key, server, forwarded or not.
pub const AGENT_SIGNED: &str = "agent.signed";
/// `ssh-add` stored a key in the vault through the SSH agent.
pub const AGENT_KEY_ADDED: &str = "agent.key_added";
/// `ssh-add -d` or `-D`: the SSH agent stopped offering keys (they stay in the vault).
pub const AGENT_KEYS_DISABLED: &str = "agent.keys_disabled";
/// A forwarded connection asked to add, remove, lock or unlock and was refused (each of
/// the first 16 of a streak, then the 32nd, 64th, ...: `agent_share::refusals`).
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

/// Every event kind and its class: the one place that decides (docs/api.md "Audit log").
/// Only the agent's signatures and TOTP codes come in floods; everything else records a
/// decision about trust, keys, identities or the vault.
pub const EVENTS: &[(&str, Class)] = &[
    (HOST_KEY_ACCEPTED, Class::Security),
    (HOST_KEY_REPLACED, Class::Security),
    (HOST_KEY_DELETED, Class::Security),
    (HOST_KEYS_IMPORTED, Class::Security),
    (HOST_CA_ADDED, Class::Security),
    (HOST_CA_DELETED, Class::Security),
    (IDENTITY_CREATED, Class::Security),
    (IDENTITY_UPDATED, Class::Security),
    (IDENTITY_DELETED, Class::Security),
    (IDENTITY_TOTP, Class::Routine),
    (HOSTS_BATCH, Class::Security),
    (SECRETS_EXPORTED, Class::Security),
    (AGENT_SIGNED, Class::Routine),
    (AGENT_KEY_ADDED, Class::Security),
    (AGENT_KEYS_DISABLED, Class::Security),
    (AGENT_FORWARDED_REFUSED, Class::Security),
    (VAULT_UNLOCKED, Class::Security),
    (VAULT_UNLOCK_FAILED, Class::Security),
    (VAULT_PASSWORD_CHECK_FAILED, Class::Security),
    (VAULT_LOCKED, Class::Security),
    (VAULT_PASSWORD_SET, Class::Security),
    (VAULT_PASSWORD_CHANGED, Class::Security),
    (VAULT_PASSWORD_REMOVED, Class::Security),
];

/// The class of `event`; an event not in `EVENTS` is kept as a security event.
pub fn class(event: &str) -> Class {
    EVENTS
        .iter()
        .find(|(name, _)| *name == event)
        .map_or(Class::Security, |(_, class)| *class)
}

const INSERT_ENTRY: &str =
    "INSERT INTO audit_log (at, event, subject, detail, routine, merge_key) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
/// Adds one to the newest entry with this merge key (the key holds the minute).
const MERGE: &str = "UPDATE audit_log SET count = count + 1 \
     WHERE seq = (SELECT max(seq) FROM audit_log WHERE merge_key = ?1)";
/// Drops the routine entries older than the newest `audit_routine_kept` ones.
const TRIM_ROUTINE: &str = "DELETE FROM audit_log WHERE routine = 1 AND seq <= \
     (SELECT seq FROM audit_log WHERE routine = 1 ORDER BY seq DESC LIMIT 1 \
      OFFSET (SELECT audit_routine_kept FROM log_retention WHERE id = 1))";
/// Drops the security entries older than the cutoff `?1` beyond the newest `?2` ones.
const TRIM_SECURITY: &str = "DELETE FROM audit_log WHERE routine = 0 AND at < ?1 AND seq <= \
     (SELECT seq FROM audit_log WHERE routine = 0 ORDER BY seq DESC LIMIT 1 OFFSET ?2)";
const SECURITY_CUTOFF: &str = "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)";
const SET_ROUTINE_KEPT: &str = "UPDATE log_retention SET audit_routine_kept = ?1 \
     WHERE id = 1 AND audit_routine_kept IS NOT ?1";
const SELECT_PAGE: &str = "SELECT seq, at, event, subject, detail, count FROM audit_log \
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
    /// How many events this entry stands for (more than 1 for merged routine events).
    pub count: i64,
}

/// Appends an entry (or, for a routine event repeated within its minute, adds to its
/// entry's count) and trims the log. Caller holds the write transaction of the change the
/// entry records.
pub fn append(
    conn: &Connection,
    event: &str,
    subject: &str,
    detail: &serde_json::Value,
) -> Result<(), StoreError> {
    append_bounded(conn, event, subject, detail, SECURITY_KEPT_ENTRIES)
}

/// Stores how many routine entries are kept (at start: `ROUTINE_KEPT` unless a test sets
/// fewer); it applies from the next routine entry on.
pub fn set_routine_kept(conn: &Connection, kept: u64) -> Result<(), StoreError> {
    let kept = i64::try_from(kept.max(1)).unwrap_or(i64::MAX);
    conn.prepare_cached(SET_ROUTINE_KEPT)?.execute([kept])?;
    Ok(())
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
            count: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn append_bounded(
    conn: &Connection,
    event: &str,
    subject: &str,
    detail: &serde_json::Value,
    security_kept: i64,
) -> Result<(), StoreError> {
    let at = now_timestamp();
    let detail = detail.to_string();
    if class(event) == Class::Routine {
        // The minute is the first 16 characters of an RFC 3339 time (`2026-11-27T18:05`).
        let minute = at.get(..16).unwrap_or(&at);
        let merge_key = serde_json::json!([event, subject, detail, minute]).to_string();
        if conn.prepare_cached(MERGE)?.execute([&merge_key])? == 0 {
            conn.prepare_cached(INSERT_ENTRY)?
                .execute(params![at, event, subject, detail, 1, merge_key])?;
            conn.prepare_cached(TRIM_ROUTINE)?.execute([])?;
        }
        return Ok(());
    }
    conn.prepare_cached(INSERT_ENTRY)?.execute(params![
        at,
        event,
        subject,
        detail,
        0,
        None::<String>
    ])?;
    let cutoff: String = conn
        .prepare_cached(SECURITY_CUTOFF)?
        .query_row([format!("-{SECURITY_KEPT_DAYS} days")], |row| row.get(0))?;
    conn.prepare_cached(TRIM_SECURITY)?
        .execute(params![cutoff, security_kept])?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::store::audit::{
        append, append_bounded, class, page, set_routine_kept, AuditEntry, Class, AGENT_SIGNED,
        EVENTS, HOST_KEY_ACCEPTED, HOST_KEY_REPLACED, IDENTITY_TOTP, VAULT_UNLOCK_FAILED,
    };
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

    fn entries(db: &crate::store::Db) -> Vec<AuditEntry> {
        db.read(|conn| page(conn, None, 100)).unwrap()
    }

    #[test]
    fn a_security_event_younger_than_90_days_is_never_dropped_and_an_older_one_goes_past_the_bound()
    {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            tx.execute(
                "INSERT INTO audit_log (at, event, subject) VALUES \
                 ('2000-01-01T00:00:00.000Z', 'vault.unlocked', 'old')",
                [],
            )?;
            for n in 0..3 {
                append_bounded(tx, VAULT_UNLOCK_FAILED, &format!("young{n}"), &json!({}), 1)?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let subjects: Vec<String> = entries(&db).into_iter().map(|e| e.subject).collect();
        assert_eq!(subjects, ["young2", "young1", "young0"]);
    }

    #[test]
    fn routine_entries_past_their_bound_drop_the_oldest_routine_one_and_no_security_one() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            set_routine_kept(tx, 2)?;
            append(tx, HOST_KEY_REPLACED, "first", &json!({}))?;
            for key in ["k0", "k1", "k2"] {
                append(tx, AGENT_SIGNED, key, &json!({"fingerprint": key}))?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let subjects: Vec<String> = entries(&db).into_iter().map(|e| e.subject).collect();
        assert_eq!(subjects, ["k2", "k1", "first"]);
    }

    #[test]
    fn a_signature_repeated_within_its_minute_adds_to_its_entry_count() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            for _ in 0..5 {
                append(tx, AGENT_SIGNED, "k", &json!({"host_key_fingerprint": "a"}))?;
            }
            append(tx, AGENT_SIGNED, "k", &json!({"host_key_fingerprint": "b"}))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let all = entries(&db);
        let to_a: Vec<&AuditEntry> = all.iter().filter(|e| e.detail.contains("\"a\"")).collect();
        // Five signatures in one minute are one entry; if the minute turned between them,
        // two entries whose counts add up to five.
        assert!(to_a.len() <= 2, "{to_a:?}");
        assert_eq!(to_a.iter().map(|e| e.count).sum::<i64>(), 5);
        assert_eq!(all.iter().filter(|e| e.detail.contains("\"b\"")).count(), 1);
    }

    #[test]
    fn every_event_kind_has_one_class_and_only_signatures_and_totp_codes_are_routine() {
        for (n, (event, _)) in EVENTS.iter().enumerate() {
            assert!(
                !EVENTS[n + 1..].iter().any(|(other, _)| other == event),
                "{event}"
            );
        }
        assert_eq!(class(AGENT_SIGNED), Class::Routine);
        assert_eq!(class(IDENTITY_TOTP), Class::Routine);
        let routine = EVENTS.iter().filter(|(_, class)| *class == Class::Routine);
        assert_eq!(routine.count(), 2);
        assert_eq!(class("some.new_event"), Class::Security);
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
