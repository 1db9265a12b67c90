//! Who uses an identity (docs/identities.md): the hosts and groups that resolve to it
//! (`usages`, `resolving_hosts`), its direct users (`direct_users`), and moving them to
//! another identity (`reassign`). The change-feed entries of the hosts that follow an edit
//! are `store::inherit::log_followers`'.
//!
//! Resolution: a host's identity is its own `identity_id`, else its group's; a group's is
//! its `default_identity_id`, else its parent's, up to the top (one recursive query over
//! `groups.parent_id`, from the top groups down, so a damaged loop that no top group reaches
//! is never walked).
//!
//! Invariants: runs in the caller's transaction; a reassigned host or group moves its
//! `updated_at` (its trigger bumps the revision and logs the change).

use rusqlite::{params, Connection};

use crate::store::{next_updated_at, StoreError};

/// Each group with the identity it resolves to and the group that names it (`via`).
const RESOLVED: &str = "WITH RECURSIVE resolved (id, identity_id, via) AS ( \
     SELECT id, default_identity_id, \
         CASE WHEN default_identity_id IS NULL THEN NULL ELSE id END \
     FROM groups WHERE parent_id IS NULL \
     UNION ALL \
     SELECT g.id, coalesce(g.default_identity_id, r.identity_id), \
         CASE WHEN g.default_identity_id IS NULL THEN r.via ELSE g.id END \
     FROM groups g JOIN resolved r ON g.parent_id = r.id) ";
const GROUPS_RESOLVING: &str = "SELECT g.id, g.name, \
     CASE WHEN r.via = g.id THEN 'direct' ELSE 'group:' || r.via END \
     FROM resolved r JOIN groups g ON g.id = r.id WHERE r.identity_id = ?1 \
     ORDER BY g.name_key, g.id";
const HOSTS_RESOLVING: &str = "SELECT id, name, via FROM ( \
     SELECT id, name, 'direct' AS via, name_key FROM hosts WHERE identity_id = ?1 \
     UNION ALL \
     SELECT h.id, h.name, 'group:' || r.via, h.name_key \
     FROM resolved r JOIN hosts h ON h.group_id = r.id \
     WHERE r.identity_id = ?1 AND h.identity_id IS NULL) \
     ORDER BY name_key, id";
const HOSTS_DIRECT: &str = "SELECT count(*) FROM hosts WHERE identity_id = ?1";
const GROUPS_DIRECT: &str = "SELECT count(*) FROM groups WHERE default_identity_id = ?1";
const SELECT_HOSTS_DIRECT: &str = "SELECT id, updated_at FROM hosts WHERE identity_id = ?1";
const SELECT_GROUPS_DIRECT: &str =
    "SELECT id, updated_at FROM groups WHERE default_identity_id = ?1";
const MOVE_HOST: &str = "UPDATE hosts SET identity_id = ?2, updated_at = ?3 WHERE id = ?1";
const MOVE_GROUP: &str =
    "UPDATE groups SET default_identity_id = ?2, updated_at = ?3 WHERE id = ?1";

/// A host or group that resolves to an identity, and how: `direct` or `group:<id>` (the
/// group that names it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    pub id: String,
    pub name: String,
    pub via: String,
}

/// Every host and group that resolves to an identity, each by name then id.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Usages {
    pub hosts: Vec<Usage>,
    pub groups: Vec<Usage>,
}

/// The direct users of an identity: hosts naming it, groups naming it as their default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectUsers {
    pub hosts: u64,
    pub groups: u64,
}

/// The hosts and groups that resolve to identity `id`.
pub fn usages(conn: &Connection, id: &str) -> Result<Usages, StoreError> {
    let read = |sql: &str| -> Result<Vec<Usage>, StoreError> {
        let mut statement = conn.prepare_cached(&format!("{RESOLVED}{sql}"))?;
        let rows = statement.query_map([id], |row| {
            Ok(Usage {
                id: row.get(0)?,
                name: row.get(1)?,
                via: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    Ok(Usages {
        hosts: read(HOSTS_RESOLVING)?,
        groups: read(GROUPS_RESOLVING)?,
    })
}

/// The ids of the hosts that resolve to identity `id`.
pub fn resolving_hosts(conn: &Connection, id: &str) -> Result<Vec<String>, StoreError> {
    let mut statement = conn.prepare_cached(&format!("{RESOLVED}{HOSTS_RESOLVING}"))?;
    let rows = statement.query_map([id], |row| row.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many hosts and groups name identity `id` themselves.
pub fn direct_users(conn: &Connection, id: &str) -> Result<DirectUsers, StoreError> {
    let count = |sql: &str| -> Result<u64, StoreError> {
        let count: i64 = conn
            .prepare_cached(sql)?
            .query_row([id], |row| row.get(0))?;
        Ok(count.unsigned_abs())
    };
    Ok(DirectUsers {
        hosts: count(HOSTS_DIRECT)?,
        groups: count(GROUPS_DIRECT)?,
    })
}

/// Moves every direct user of identity `from` to identity `to` (which the caller checked
/// exists), each a change of its own row.
pub fn reassign(conn: &Connection, from: &str, to: &str) -> Result<DirectUsers, StoreError> {
    let mut moved = DirectUsers::default();
    for (select, update, count) in [
        (SELECT_HOSTS_DIRECT, MOVE_HOST, &mut moved.hosts),
        (SELECT_GROUPS_DIRECT, MOVE_GROUP, &mut moved.groups),
    ] {
        let rows: Vec<(String, String)> = conn
            .prepare_cached(select)?
            .query_map([from], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut statement = conn.prepare_cached(update)?;
        for (id, updated_at) in &rows {
            statement.execute(params![id, to, next_updated_at(updated_at)])?;
        }
        *count = u64::try_from(rows.len()).unwrap_or(u64::MAX);
    }
    Ok(moved)
}
