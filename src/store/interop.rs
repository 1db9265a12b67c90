//! The OpenSSH host extensions in SQL: ProxyJump chains (`host_jumps`: write, judge against
//! the stored chains, follow, count users) and kept directives
//! (`host_ssh_options`).
//!
//! Invariants: a chain is written only after the caller judged it (`model::interop`)
//! inside the same transaction; the extensions of a page of hosts are read in one query
//! per table, never one per host; whole-catalogue reads live in `store::catalogue`. It
//! names no other store module: store::hosts calls it (and turns a route into hosts).

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension};

use crate::model::host::Host;
use crate::model::interop::{self, ChainVerdict};
use crate::store::StoreError;

const INSERT_JUMP: &str =
    "INSERT INTO host_jumps (host_id, position, jump_host_id) VALUES (?1, ?2, ?3)";
const DELETE_JUMPS: &str = "DELETE FROM host_jumps WHERE host_id = ?1";
const INSERT_OPTION: &str =
    "INSERT INTO host_ssh_options (host_id, position, option) VALUES (?1, ?2, ?3)";
const DELETE_OPTIONS: &str = "DELETE FROM host_ssh_options WHERE host_id = ?1";
/// `?1` is a JSON array of host ids.
const SELECT_JUMPS_OF: &str = "SELECT host_id, jump_host_id FROM host_jumps \
     WHERE host_id IN (SELECT value FROM json_each(?1)) ORDER BY host_id, position";
/// `?1` is a JSON array of host ids.
const SELECT_OPTIONS_OF: &str = "SELECT host_id, option FROM host_ssh_options \
     WHERE host_id IN (SELECT value FROM json_each(?1)) ORDER BY host_id, position";
const COUNT_JUMP_USERS: &str =
    "SELECT count(DISTINCT host_id) FROM host_jumps WHERE jump_host_id = ?1";
/// Groups whose default chain (a JSON array, sql/0012_identities.sql) names host `?1`.
const COUNT_DEFAULT_CHAIN_USERS: &str = "SELECT count(DISTINCT groups.id) FROM groups, \
     json_each(groups.default_jump_host_ids) AS hop WHERE hop.value = ?1";
const HOST_EXISTS: &str = "SELECT 1 FROM hosts WHERE id = ?1";

/// Fills `jump_host_ids` and `ssh_options` of every host in `hosts` (two queries in all).
pub fn fill_extensions(conn: &Connection, hosts: &mut [Host]) -> Result<(), StoreError> {
    if hosts.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = hosts.iter().map(|host| host.id.as_str()).collect();
    let id_list = serde_json::to_string(&ids).map_err(|err| StoreError::Json(err.to_string()))?;
    let mut index: HashMap<String, usize> = HashMap::with_capacity(hosts.len());
    for (position, host) in hosts.iter().enumerate() {
        index.insert(host.id.clone(), position);
    }
    let mut statement = conn.prepare_cached(SELECT_JUMPS_OF)?;
    let mut rows = statement.query([&id_list])?;
    while let Some(row) = rows.next()? {
        let host_id: String = row.get(0)?;
        if let Some(chain) = index
            .get(&host_id)
            .and_then(|position| hosts[*position].jump_host_ids.as_mut())
        {
            chain.push(row.get(1)?);
        }
    }
    let mut statement = conn.prepare_cached(SELECT_OPTIONS_OF)?;
    let mut rows = statement.query([&id_list])?;
    while let Some(row) = rows.next()? {
        let host_id: String = row.get(0)?;
        if let Some(position) = index.get(&host_id) {
            hosts[*position].ssh_options.push(row.get(1)?);
        }
    }
    Ok(())
}

/// Replaces a host's chain. Caller holds a write transaction and judged the chain.
pub fn write_jumps(conn: &Connection, host_id: &str, chain: &[String]) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_JUMPS)?.execute([host_id])?;
    let mut insert = conn.prepare_cached(INSERT_JUMP)?;
    for (position, hop) in chain.iter().enumerate() {
        insert.execute(params![host_id, position as i64, hop])?;
    }
    Ok(())
}

/// Replaces a host's kept directives.
pub fn write_options(
    conn: &Connection,
    host_id: &str,
    options: &[String],
) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_OPTIONS)?.execute([host_id])?;
    let mut insert = conn.prepare_cached(INSERT_OPTION)?;
    for (position, option) in options.iter().enumerate() {
        insert.execute(params![host_id, position as i64, option])?;
    }
    Ok(())
}

/// Judges `chain` as the new chain of `host_id` (`None`: a host not stored yet) against
/// the stored hosts and chains. Caller holds the transaction the chain will be written in.
pub fn judge_chain(
    conn: &Connection,
    host_id: Option<&str>,
    chain: &[String],
) -> Result<ChainVerdict, StoreError> {
    if chain.is_empty() {
        return Ok(ChainVerdict::Fine);
    }
    // Self and repeats first: the host itself may not be stored yet.
    if let Err(problem) = interop::check_chain(host_id, chain, &HashMap::new()) {
        return Ok(ChainVerdict::Invalid(problem));
    }
    if let Some(unknown) = first_unknown_host(conn, chain)? {
        return Ok(ChainVerdict::UnknownHop(unknown.to_owned()));
    }
    let chains = chains_from(conn, chain, host_id)?;
    Ok(match interop::check_chain(host_id, chain, &chains) {
        Ok(()) => ChainVerdict::Fine,
        Err(problem) => ChainVerdict::Invalid(problem),
    })
}

/// The first id of `ids` that names no stored host.
pub fn first_unknown_host<'a>(
    conn: &Connection,
    ids: &'a [String],
) -> Result<Option<&'a str>, StoreError> {
    let mut statement = conn.prepare_cached(HOST_EXISTS)?;
    for id in ids {
        if statement.query_row([id], |_| Ok(())).optional()?.is_none() {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The stored chains of every host reachable from `start` through chains, keyed by host
/// id (hosts without a chain are left out). Stops at `stop_at`, whose chain is not read.
pub fn chains_from(
    conn: &Connection,
    start: &[String],
    stop_at: Option<&str>,
) -> Result<HashMap<String, Vec<String>>, StoreError> {
    let mut chains: HashMap<String, Vec<String>> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut frontier: Vec<String> = start.to_vec();
    while !frontier.is_empty() {
        frontier.retain(|id| Some(id.as_str()) != stop_at && seen.insert(id.clone()));
        let id_list =
            serde_json::to_string(&frontier).map_err(|err| StoreError::Json(err.to_string()))?;
        let mut next = Vec::new();
        let mut statement = conn.prepare_cached(SELECT_JUMPS_OF)?;
        let mut rows = statement.query([&id_list])?;
        while let Some(row) = rows.next()? {
            let host_id: String = row.get(0)?;
            let hop: String = row.get(1)?;
            next.push(hop.clone());
            chains.entry(host_id).or_default().push(hop);
        }
        frontier = next;
    }
    Ok(chains)
}

/// How many hosts, and groups' default chains (docs/identities.md), use `host_id` as a hop.
pub fn jump_users(conn: &Connection, host_id: &str) -> Result<u64, StoreError> {
    let mut users = 0u64;
    for sql in [COUNT_JUMP_USERS, COUNT_DEFAULT_CHAIN_USERS] {
        let count: i64 = conn
            .prepare_cached(sql)?
            .query_row([host_id], |row| row.get(0))?;
        users = users.saturating_add(u64::try_from(count).unwrap_or(0));
    }
    Ok(users)
}
