//! The SQL of `POST /api/hosts/batch` (docs/api.md, Hosts, "Batch"): the selected hosts read
//! in one query each for rows and tags, the edits written row by row with prepared
//! statements, the deletes with their jump-host check. The caller holds one transaction
//! for all of it.
//!
//! Invariants: every changed host's `updated_at` moves once, strictly forward (one revision
//! and one change-feed entry each, by the `hosts_changed` trigger); a host that changes group
//! goes to the end of its new one, in the order of the batch; no secret column is read or
//! written (a delete drops sealed passwords with their rows, and store::scrub sees that);
//! the list's memory learns every write from its temp-trigger logs (store::list).

use std::collections::HashMap;

use rusqlite::{params, Connection};

use crate::model::batch::Edit;
use crate::model::host::Host;
use crate::store::{next_updated_at, StoreError};

/// The columns of `hosts::host_from_row` after the `seq`; `?1` a JSON array of ids.
const SELECT_BY_IDS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision, \
     h.identity_id, h.jumps_set FROM json_each(?1) AS wanted JOIN hosts AS h ON h.id = wanted.value \
     ORDER BY wanted.key";
/// As `SELECT_BY_IDS`, `?1` a JSON array of `seq`s.
const SELECT_BY_SEQS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision, \
     h.identity_id, h.jumps_set FROM json_each(?1) AS wanted JOIN hosts AS h ON h.seq = wanted.value \
     ORDER BY wanted.key";
/// Tags of the hosts whose `seq`s are in the JSON array `?1`, by host, in order.
const SELECT_TAGS: &str = "SELECT host_seq, tag FROM host_tags \
     WHERE host_seq IN (SELECT value FROM json_each(?1)) ORDER BY host_seq, position";
const UPDATE_HOST: &str = "UPDATE hosts SET port = ?2, username = ?3, identity_id = ?4, \
     group_id = ?5, sort_order = ?6, is_favorite = ?7, color = ?8, updated_at = ?9 \
     WHERE seq = ?1";
const DELETE_TAGS: &str = "DELETE FROM host_tags WHERE host_seq = ?1";
const INSERT_TAG: &str = "INSERT INTO host_tags (host_seq, tag, position) VALUES (?1, ?2, ?3)";
const SELECT_MAX_ORDER: &str = "SELECT max(sort_order) FROM hosts WHERE group_id IS ?1";
/// Hosts outside the JSON array of ids `?1` whose chains pass through one inside it, and
/// groups whose default chain names one.
const COUNT_OUTSIDE_USERS: &str = "SELECT \
     (SELECT count(DISTINCT host_id) FROM host_jumps \
      WHERE jump_host_id IN (SELECT value FROM json_each(?1)) \
        AND host_id NOT IN (SELECT value FROM json_each(?1))) + \
     (SELECT count(DISTINCT groups.id) FROM groups, json_each(groups.default_jump_host_ids) AS hop \
      WHERE hop.value IN (SELECT value FROM json_each(?1)))";
const DELETE_JUMPS: &str = "DELETE FROM host_jumps WHERE host_id = ?1";
const DELETE_HOST: &str = "DELETE FROM hosts WHERE seq = ?1";

/// A selected host: its `seq` (the list's number for it) and its fields, tags included;
/// chains and options are not read (a batch never writes them).
pub struct Selected {
    pub seq: i64,
    pub host: Host,
}

/// The hosts of `ids` in their order, and the ids that name no host.
pub fn by_ids(
    conn: &Connection,
    ids: &[String],
) -> Result<(Vec<Selected>, Vec<String>), StoreError> {
    let hosts = read(conn, SELECT_BY_IDS, &json_list(ids)?)?;
    let mut missing = Vec::new();
    if hosts.len() < ids.len() {
        let found: std::collections::HashSet<&str> = hosts
            .iter()
            .map(|selected| selected.host.id.as_str())
            .collect();
        missing = ids
            .iter()
            .filter(|id| !found.contains(id.as_str()))
            .cloned()
            .collect();
    }
    Ok((hosts, missing))
}

/// The hosts of `seqs` (from the list's memory, under the same transaction), in order.
pub fn by_seqs(conn: &Connection, seqs: &[i64]) -> Result<Vec<Selected>, StoreError> {
    read(conn, SELECT_BY_SEQS, &json_list(seqs)?)
}

fn read(conn: &Connection, sql: &str, list: &str) -> Result<Vec<Selected>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut rows = statement.query([list])?;
    let mut hosts = Vec::new();
    let mut index = HashMap::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        index.insert(seq, hosts.len());
        let host = crate::store::hosts::host_from_row(row, 1)??;
        hosts.push(Selected { seq, host });
    }
    let seqs: Vec<i64> = hosts.iter().map(|selected| selected.seq).collect();
    let mut statement = conn.prepare_cached(SELECT_TAGS)?;
    let mut rows = statement.query([json_list(&seqs)?])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        if let Some(at) = index.get(&seq) {
            hosts[*at].host.tags.push(row.get(1)?);
        }
    }
    Ok(hosts)
}

/// Writes each edit of `selected`: fields, place (a host that changes group goes to the end
/// of its new one), tags when they changed, and a new `updated_at`.
pub fn write(conn: &Connection, selected: &[Selected], edits: &[Edit]) -> Result<(), StoreError> {
    let mut ends: HashMap<Option<String>, i64> = HashMap::new();
    let mut update = conn.prepare_cached(UPDATE_HOST)?;
    let mut delete_tags = conn.prepare_cached(DELETE_TAGS)?;
    let mut insert_tag = conn.prepare_cached(INSERT_TAG)?;
    for edit in edits {
        let before = selected.get(edit.index).ok_or_else(|| {
            StoreError::BrokenInvariant("a batch edit names no selected host".into())
        })?;
        let after = &edit.after;
        let order = match after.group_id == before.host.group_id {
            true => before.host.order,
            false => next_place(conn, &mut ends, &after.group_id)?,
        };
        update.execute(params![
            before.seq,
            after.port,
            after.username,
            after.identity_id,
            after.group_id,
            order,
            after.is_favorite,
            after.color,
            next_updated_at(&before.host.updated_at),
        ])?;
        if after.tags != before.host.tags {
            delete_tags.execute([before.seq])?;
            for (position, tag) in after.tags.iter().enumerate() {
                insert_tag.execute(params![before.seq, tag, position as i64])?;
            }
        }
    }
    Ok(())
}

/// The next place at the end of `group_id`, counting those given in this batch already.
fn next_place(
    conn: &Connection,
    ends: &mut HashMap<Option<String>, i64>,
    group_id: &Option<String>,
) -> Result<i64, StoreError> {
    let end = match ends.get(group_id) {
        Some(end) => *end,
        None => {
            let max: Option<i64> = conn
                .prepare_cached(SELECT_MAX_ORDER)?
                .query_row([group_id], |row| row.get(0))?;
            max.unwrap_or(-1)
        }
    };
    // At i64::MAX the hosts share the last place; ties sort by name and id.
    let place = end.saturating_add(1);
    ends.insert(group_id.clone(), place);
    Ok(place)
}

/// How many hosts not in `ids`, and groups' default chains, use one of `ids` as a hop.
pub fn outside_jump_users(conn: &Connection, ids: &[&str]) -> Result<u64, StoreError> {
    let count: i64 = conn
        .prepare_cached(COUNT_OUTSIDE_USERS)?
        .query_row([json_list(ids)?], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// Deletes the hosts (their chains first, so hops deleted in the same batch are no longer
/// referenced; tags, options and history go by cascade).
pub fn delete(conn: &Connection, selected: &[Selected]) -> Result<(), StoreError> {
    let mut delete_jumps = conn.prepare_cached(DELETE_JUMPS)?;
    for host in selected {
        delete_jumps.execute([&host.host.id])?;
    }
    let mut delete_host = conn.prepare_cached(DELETE_HOST)?;
    for host in selected {
        delete_host.execute([host.seq])?;
    }
    Ok(())
}

fn json_list<T: serde::Serialize>(items: &[T]) -> Result<String, StoreError> {
    serde_json::to_string(items).map_err(|err| StoreError::Json(err.to_string()))
}
