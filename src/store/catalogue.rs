//! Whole-catalogue reads: every host (or the hosts of a group and its descendants, or of a
//! list of ids) with its jump chain and kept directives, in a stable order, for the
//! `~/.ssh/config` export and import and for the checks of what many hosts inherit.
//!
//! Invariants: read-only; hosts come oldest first (then in insertion order within one
//! millisecond), so export aliases given in this order are stable; one query for the rows
//! and one per extension table, never one per host; tags are left empty unless the caller
//! asks (`fill_tags`, one query too).

use rusqlite::Connection;

use crate::model::host::Host;
use crate::store::hosts::host_from_row;
use crate::store::interop::fill_extensions;
use crate::store::StoreError;

/// Every host, oldest first, and in the order they were added within one millisecond (`seq`).
const SELECT_ALL_HOSTS: &str = "SELECT id, name, hostname, port, username, auth_type, key_id, \
     password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, last_used_at, revision, identity_id, jumps_set, startup FROM hosts \
     ORDER BY created_at, seq";
/// The hosts of group `?1` and of all its descendants, in the same order.
const SELECT_HOSTS_UNDER_GROUP: &str = "WITH RECURSIVE subtree(id) AS ( \
     SELECT ?1 UNION SELECT groups.id FROM groups JOIN subtree ON groups.parent_id = subtree.id) \
     SELECT id, name, hostname, port, username, auth_type, key_id, password IS NOT NULL, \
     group_id, is_favorite, color, sort_order, notes, created_at, updated_at, last_used_at, \
     revision, identity_id, jumps_set, startup FROM hosts WHERE group_id IN (SELECT id FROM subtree) ORDER BY created_at, seq";

/// The hosts of `?1`, a JSON array of ids, in the same order.
const SELECT_HOSTS_OF: &str = "SELECT id, name, hostname, port, username, auth_type, key_id, \
     password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, last_used_at, revision, identity_id, jumps_set, startup FROM hosts \
     WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY created_at, seq";

/// Every host's tags, in order (one query).
const SELECT_ALL_TAGS: &str = "SELECT hosts.id, host_tags.tag FROM host_tags \
     JOIN hosts ON hosts.seq = host_tags.host_seq ORDER BY host_tags.host_seq, host_tags.position";

/// Fills each host's `tags` (the whole-catalogue reads leave them empty).
pub fn fill_tags(conn: &Connection, hosts: &mut [Host]) -> Result<(), StoreError> {
    let mut by_id: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    let mut statement = conn.prepare_cached(SELECT_ALL_TAGS)?;
    let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get(1)?)))?;
    for row in rows {
        let (id, tag) = row?;
        by_id.entry(id).or_default().push(tag);
    }
    for host in hosts {
        host.tags = by_id.remove(&host.id).unwrap_or_default();
    }
    Ok(())
}

/// Every host, oldest first, with chains and kept directives.
pub fn all_hosts(conn: &Connection) -> Result<Vec<Host>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_ALL_HOSTS)?;
    let rows = statement.query([])?;
    hosts_from(conn, rows)
}

/// The hosts of `group_id` and of every group below it, oldest first, with chains and kept
/// directives.
pub fn hosts_under_group(conn: &Connection, group_id: &str) -> Result<Vec<Host>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_HOSTS_UNDER_GROUP)?;
    let rows = statement.query([group_id])?;
    hosts_from(conn, rows)
}

/// The hosts of `ids` that exist (one query, not one per host), oldest first, with chains and
/// kept directives.
pub fn hosts_of(conn: &Connection, ids: &[String]) -> Result<Vec<Host>, StoreError> {
    let list = serde_json::to_string(ids).map_err(|err| StoreError::Json(err.to_string()))?;
    let mut statement = conn.prepare_cached(SELECT_HOSTS_OF)?;
    let rows = statement.query([&list])?;
    hosts_from(conn, rows)
}

fn hosts_from(conn: &Connection, mut rows: rusqlite::Rows<'_>) -> Result<Vec<Host>, StoreError> {
    let mut hosts = Vec::new();
    while let Some(row) = rows.next()? {
        hosts.push(host_from_row(row, 0)??);
    }
    fill_extensions(conn, &mut hosts)?;
    Ok(hosts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::catalogue::{all_hosts, hosts_under_group};
    use crate::store::{open_in_memory, StoreError};

    #[test]
    fn all_hosts_come_oldest_first_then_in_insertion_order_with_their_chains() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            tx.execute_batch(
                "INSERT INTO groups (id, name, name_key, created_at, updated_at)
                     VALUES ('top', 'top', 'top', '1', '1'), ('other', 'other', 'other', '1', '1');
                 INSERT INTO groups (id, parent_id, name, name_key, created_at, updated_at)
                     VALUES ('below', 'top', 'below', 'below', '1', '1');
                 INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type,
                     group_id, created_at, updated_at) VALUES
                     ('late', 'late', 'late', 'l.example', 22, 'u', 'agent', 'top', '2', '2'),
                     ('b', 'b', 'b', 'b.example', 22, 'u', 'agent', 'below', '1', '1'),
                     ('a', 'a', 'a', 'a.example', 22, 'u', 'agent', 'other', '1', '1'),
                     ('free', 'free', 'free', 'f.example', 22, 'u', 'agent', NULL, '1', '1');
                 INSERT INTO host_jumps (host_id, position, jump_host_id) VALUES ('b', 0, 'a');",
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let all = db.read(all_hosts).unwrap();
        let ids: Vec<&str> = all.iter().map(|host| host.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "free", "late"]);
        assert_eq!(all[0].jump_host_ids, Some(vec!["a".to_owned()]));
        let under = db.read(|conn| hosts_under_group(conn, "top")).unwrap();
        let ids: Vec<&str> = under.iter().map(|host| host.id.as_str()).collect();
        assert_eq!(ids, ["b", "late"], "the group and its descendants only");
    }
}
