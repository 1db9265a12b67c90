//! The host list's rows: a page found in the list's memory, then the rows the memory does
//! not keep, read by `seq` in one query and rendered as the list shows them (docs/api.md,
//! API: Hosts, "List"); and the pieces of the start-up read of every row (`Db::warm_list`),
//! which renders with no lock held.
//!
//! Invariants: no secret is read (`password IS NOT NULL` only); a row rendered with no lock
//! held is kept only when nothing was written since it was read.

use std::collections::HashMap;

use rusqlite::Connection;
use serde_json::value::RawValue;

use crate::model::host::Host;
use crate::model::host_query::HostQuery;
use crate::store::list::{ListMemory, Listed};
use crate::store::StoreError;

/// Rows of a page: `?1` is a JSON array of `seq`s (the tags are in the list's memory).
const SELECT_ROWS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision, \
     h.identity_id, h.jumps_set, h.startup FROM json_each(?1) AS page JOIN hosts AS h ON h.seq = page.value";
/// Whether any host has a jump chain or kept ssh options (most catalogues have none, and a
/// page then needs no query for them).
const ANY_EXTENSIONS: &str = "SELECT EXISTS (SELECT 1 FROM host_jumps) \
     OR EXISTS (SELECT 1 FROM host_ssh_options)";

/// One page of hosts as JSON (`Host::view`), jump chains and kept options included, and
/// the number of hosts matching the filters: the page from the list's memory, then the rows
/// it does not keep.
pub fn list(
    conn: &Connection,
    memory: &mut ListMemory,
    query: &HostQuery,
) -> Result<(Vec<Box<RawValue>>, u64), StoreError> {
    let page = memory.page(conn, query)?;
    let read = render(read_hosts(conn, &page.hosts)?)?;
    memory.keep(&read);
    let mut read: HashMap<_, _> = read.into_iter().collect();
    let rows = page.hosts.into_iter().filter_map(|listed| match listed {
        Listed::Row(row) => Some(row),
        Listed::Unread(seq, _) => read.remove(&seq),
    });
    Ok((rows.collect(), page.total))
}

/// Moves with every write of this connection and every commit of another.
pub fn stamp(conn: &Connection) -> Result<(i64, u64), StoreError> {
    Ok((super::data_version(conn)?, conn.total_changes()))
}

/// The hosts of `page` not kept yet, by `seq`, tags and extensions included.
pub fn read_hosts(conn: &Connection, page: &[Listed]) -> Result<Vec<(i64, Host)>, StoreError> {
    let mut unread: HashMap<i64, Vec<String>> = HashMap::new();
    for listed in page {
        if let Listed::Unread(seq, tags) = listed {
            unread.insert(*seq, tags.clone());
        }
    }
    let seqs: Vec<i64> = unread.keys().copied().collect();
    hosts_of(conn, &seqs, |seq| unread.remove(&seq).unwrap_or_default())
}

/// The hosts of `seqs` by `seq` (in no set order), each with the tags `tags_of` gives,
/// extensions included.
fn hosts_of(
    conn: &Connection,
    seqs: &[i64],
    mut tags_of: impl FnMut(i64) -> Vec<String>,
) -> Result<Vec<(i64, Host)>, StoreError> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let seq_list = serde_json::to_string(seqs).map_err(|err| StoreError::Json(err.to_string()))?;
    let mut statement = conn.prepare_cached(SELECT_ROWS)?;
    let mut cursor = statement.query([&seq_list])?;
    let (mut read, mut hosts) = (Vec::new(), Vec::new());
    while let Some(row) = cursor.next()? {
        let seq = row.get(0)?;
        hosts.push(Host {
            tags: tags_of(seq),
            ..crate::store::hosts::host_from_row(row, 1)??
        });
        read.push(seq);
    }
    let any: bool = conn
        .prepare_cached(ANY_EXTENSIONS)?
        .query_row([], |row| row.get(0))?;
    if any {
        crate::store::interop::fill_extensions(conn, &mut hosts)?;
    }
    Ok(read.into_iter().zip(hosts).collect())
}

/// Hosts as the list shows them.
pub fn render(hosts: Vec<(i64, Host)>) -> Result<Vec<(i64, Box<RawValue>)>, StoreError> {
    let rows = hosts
        .into_iter()
        .map(|(seq, host)| serde_json::value::to_raw_value(&host.view()).map(|row| (seq, row)));
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|err| StoreError::Json(err.to_string()))
}
