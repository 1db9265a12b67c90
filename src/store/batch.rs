//! The SQL of `POST /api/hosts/batch` (docs/api.md, Hosts, "Batch"): the selected hosts read
//! in one query each for rows and tags, the edits and deletes written by one prepared
//! statement per kind of write for every host at once (rows bound as one JSON array), the
//! deletes with their jump-host check. The caller holds one transaction
//! for all of it.
//!
//! Invariants: every changed host's `updated_at` moves once, strictly forward (one revision
//! and one change-feed entry each, by the `hosts_changed` trigger); a host that changes group
//! goes to the end of its new one, in the order of the batch; no secret column is read or
//! written (a delete drops sealed passwords with their rows, and store::scrub sees that);
//! the list's memory learns every write from its temp-trigger logs (store::list).

use std::collections::HashMap;

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::model::batch::{tag_diff, Edit};
use crate::model::host::Host;
use crate::store::{next_updated_at, StoreError};

/// The columns of `hosts::host_from_row` after the `seq`; `?1` a JSON array of ids.
const SELECT_BY_IDS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision, \
     h.identity_id, h.jumps_set, h.startup FROM json_each(?1) AS wanted JOIN hosts AS h ON h.id = wanted.value \
     ORDER BY wanted.key";
/// As `SELECT_BY_IDS`, `?1` a JSON array of `seq`s.
const SELECT_BY_SEQS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision, \
     h.identity_id, h.jumps_set, h.startup FROM json_each(?1) AS wanted JOIN hosts AS h ON h.seq = wanted.value \
     ORDER BY wanted.key";
/// Tags of the hosts whose `seq`s are in the JSON array `?1`, by host, in order.
const SELECT_TAGS: &str = "SELECT host_seq, tag, position FROM host_tags \
     WHERE host_seq IN (SELECT value FROM json_each(?1)) ORDER BY host_seq, position";
/// `?1`: a JSON array of `[seq, port, username, identity_id, is_favorite, color,
/// updated_at]`, one a host that stays in its group. One statement for all: per-row
/// statements would each journal the pages the transaction already changed, and past the
/// first 64 KiB SQLite spills that journal to a file (most of a 10,000-host batch's time).
const UPDATE_STAYING: &str = "UPDATE hosts SET port = e.value ->> 1, username = e.value ->> 2, \
     identity_id = e.value ->> 3, is_favorite = e.value ->> 4, color = e.value ->> 5, \
     updated_at = e.value ->> 6 FROM json_each(?1) AS e WHERE hosts.seq = e.value ->> 0";
/// As `UPDATE_STAYING`, each array followed by the new `group_id` and `sort_order`.
const UPDATE_MOVED: &str = "UPDATE hosts SET port = e.value ->> 1, username = e.value ->> 2, \
     identity_id = e.value ->> 3, is_favorite = e.value ->> 4, color = e.value ->> 5, \
     updated_at = e.value ->> 6, group_id = e.value ->> 7, sort_order = e.value ->> 8 \
     FROM json_each(?1) AS e WHERE hosts.seq = e.value ->> 0";
/// `?1`: a JSON array of `[seq, tag]` rows to drop.
const DELETE_TAG_ROWS: &str = "DELETE FROM host_tags WHERE (host_seq, tag) IN \
     (SELECT value ->> 0, value ->> 1 FROM json_each(?1))";
/// `?1`: a JSON array of `seq`s whose tags are all rewritten.
const DELETE_TAGS_OF: &str =
    "DELETE FROM host_tags WHERE host_seq IN (SELECT value FROM json_each(?1))";
/// `?1`: a JSON array of `[seq, tag, position]`.
const INSERT_TAG_ROWS: &str = "INSERT INTO host_tags (host_seq, tag, position) \
     SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)";
const SELECT_MAX_ORDER: &str = "SELECT max(sort_order) FROM hosts WHERE group_id IS ?1";
/// Hosts outside the JSON array of ids `?1` whose chains pass through one inside it, and
/// groups whose default chain names one.
const COUNT_OUTSIDE_USERS: &str = "SELECT \
     (SELECT count(DISTINCT host_id) FROM host_jumps \
      WHERE jump_host_id IN (SELECT value FROM json_each(?1)) \
        AND host_id NOT IN (SELECT value FROM json_each(?1))) + \
     (SELECT count(DISTINCT groups.id) FROM groups, json_each(groups.default_jump_host_ids) AS hop \
      WHERE hop.value IN (SELECT value FROM json_each(?1)))";
/// `?1`: a JSON array of host ids.
const DELETE_JUMPS_OF: &str =
    "DELETE FROM host_jumps WHERE host_id IN (SELECT value FROM json_each(?1))";
/// `?1`: a JSON array of `seq`s.
const DELETE_HOSTS: &str = "DELETE FROM hosts WHERE seq IN (SELECT value FROM json_each(?1))";

/// A selected host: its `seq` (the list's number for it) and its fields, tags included;
/// chains and options are not read (a batch never writes them).
pub struct Selected {
    pub seq: i64,
    pub host: Host,
    /// The position after the host's last tag (positions need not follow each other: tags
    /// are read in `position` order).
    next_position: i64,
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
        hosts.push(Selected {
            seq,
            host,
            next_position: 0,
        });
    }
    let seqs: Vec<i64> = hosts.iter().map(|selected| selected.seq).collect();
    let mut statement = conn.prepare_cached(SELECT_TAGS)?;
    let mut rows = statement.query([json_list(&seqs)?])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        if let Some(at) = index.get(&seq) {
            let position: i64 = row.get(2)?;
            let selected = &mut hosts[*at];
            selected.host.tags.push(row.get(1)?);
            selected.next_position = selected.next_position.max(position.saturating_add(1));
        }
    }
    Ok(hosts)
}

/// Writes each edit of `selected`: fields, place (a host that changes group goes to the end
/// of its new one), tags when they changed (only the rows that change when they can,
/// `model::batch::tag_diff`), and a new `updated_at`; a statement per kind of write, each
/// for every host at once.
pub fn write(conn: &Connection, selected: &[Selected], edits: &[Edit]) -> Result<(), StoreError> {
    let mut ends: HashMap<Option<String>, i64> = HashMap::new();
    let (mut staying, mut moved) = (Vec::new(), Vec::new());
    let mut tags = TagRows::default();
    for edit in edits {
        let before = selected.get(edit.index).ok_or_else(|| {
            StoreError::BrokenInvariant("a batch edit names no selected host".into())
        })?;
        let after = &edit.after;
        let mut row = json!([
            before.seq,
            after.port,
            after.username,
            after.identity_id,
            after.is_favorite,
            after.color,
            next_updated_at(&before.host.updated_at),
        ]);
        if after.group_id == before.host.group_id {
            staying.push(row);
        } else {
            let order = next_place(conn, &mut ends, &after.group_id)?;
            if let Value::Array(fields) = &mut row {
                fields.extend([json!(after.group_id), json!(order)]);
            }
            moved.push(row);
        }
        if after.tags != before.host.tags {
            tags.add(before, &after.tags);
        }
    }
    for (sql, rows) in [(UPDATE_STAYING, &staying), (UPDATE_MOVED, &moved)] {
        execute_with_list(conn, sql, rows)?;
    }
    execute_with_list(conn, DELETE_TAG_ROWS, &tags.dropped)?;
    execute_with_list(conn, DELETE_TAGS_OF, &tags.rewritten)?;
    execute_with_list(conn, INSERT_TAG_ROWS, &tags.inserted)
}

/// The tag rows a batch drops, rewrites and inserts.
#[derive(Default)]
struct TagRows {
    dropped: Vec<Value>,
    rewritten: Vec<i64>,
    inserted: Vec<Value>,
}

impl TagRows {
    /// Host `before`'s tags to become `after`: the dropped rows and the new ones appended
    /// after its last, or all of them rewritten when the order changes otherwise.
    fn add(&mut self, before: &Selected, after: &[String]) {
        let seq = before.seq;
        let (appended, first) = match tag_diff(&before.host.tags, after) {
            Some((dropped, appended)) => {
                let rows = dropped.into_iter().map(|tag| json!([seq, tag]));
                self.dropped.extend(rows);
                (appended, before.next_position)
            }
            None => {
                self.rewritten.push(seq);
                (after.iter().map(String::as_str).collect(), 0)
            }
        };
        for (offset, tag) in appended.into_iter().enumerate() {
            let position = first.saturating_add(offset as i64);
            self.inserted.push(json!([seq, tag, position]));
        }
    }
}

/// Runs `sql` with `rows` as its one JSON parameter, unless there are none.
fn execute_with_list<T: serde::Serialize>(
    conn: &Connection,
    sql: &str,
    rows: &[T],
) -> Result<(), StoreError> {
    if !rows.is_empty() {
        conn.prepare_cached(sql)?.execute([json_list(rows)?])?;
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
    let ids: Vec<&str> = selected.iter().map(|host| host.host.id.as_str()).collect();
    let seqs: Vec<i64> = selected.iter().map(|host| host.seq).collect();
    execute_with_list(conn, DELETE_JUMPS_OF, &ids)?;
    execute_with_list(conn, DELETE_HOSTS, &seqs)
}

fn json_list<T: serde::Serialize>(items: &[T]) -> Result<String, StoreError> {
    serde_json::to_string(items).map_err(|err| StoreError::Json(err.to_string()))
}
