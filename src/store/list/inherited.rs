//! The list's filters on inherited values, `identity` and `username` (docs/identities.md):
//! the hosts whose effective value is the one asked, as `seq`s. The memory keeps each host's
//! own fields only, so these read the groups' and identities' resolution (store::inherit)
//! and ask SQL for the hosts that name it or inherit it.
//!
//! Invariants: one query per filter, whatever the number of groups and identities (their ids
//! go in as JSON arrays); the sets agree with `Inheritance::resolve` host by host (tested).

use rusqlite::Connection;

use crate::model::host_query::HostQuery;
use crate::store::inherit::{GroupField, Inheritance};
use crate::store::StoreError;

/// Own identity `?1`, or none of its own in a group of `?2`.
const BY_IDENTITY: &str = "SELECT seq FROM hosts WHERE identity_id = ?1 \
     OR (identity_id IS NULL AND group_id IN (SELECT value FROM json_each(?2)))";
/// Own username `?1`; or none, and an identity of `?2` (their username is `?1`); or none,
/// an identity of `?3` or none (they set no username), and a group of `?4`.
const BY_USERNAME: &str = "SELECT seq FROM hosts WHERE username = ?1 \
     OR (username IS NULL AND identity_id IN (SELECT value FROM json_each(?2))) \
     OR (username IS NULL \
         AND (identity_id IS NULL OR identity_id IN (SELECT value FROM json_each(?3))) \
         AND group_id IN (SELECT value FROM json_each(?4)))";

/// The `seq`s of the hosts `query`'s inherited filters keep, each filter's set intersected;
/// `None` when it has none.
pub fn matching(conn: &Connection, query: &HostQuery) -> Result<Option<Vec<i64>>, StoreError> {
    if !query.inherits() {
        return Ok(None);
    }
    let inheritance = Inheritance::load(conn)?;
    let mut sets: Vec<Vec<i64>> = Vec::new();
    if let Some(identity) = &query.identity {
        let groups = json(&inheritance.groups_giving(GroupField::Identity, identity))?;
        sets.push(seqs(conn, BY_IDENTITY, &[identity, &groups])?);
    }
    if let Some(username) = &query.username {
        let named = json(&inheritance.identities_with_username(Some(username)))?;
        let unnamed = json(&inheritance.identities_with_username(None))?;
        let groups = json(&inheritance.groups_giving(GroupField::Username, username))?;
        sets.push(seqs(
            conn,
            BY_USERNAME,
            &[username, &named, &unnamed, &groups],
        )?);
    }
    let mut sets = sets.into_iter();
    let Some(mut found) = sets.next() else {
        return Ok(None);
    };
    for other in sets {
        found.retain(|seq| other.binary_search(seq).is_ok());
    }
    Ok(Some(found))
}

fn seqs(conn: &Connection, sql: &str, args: &[&String]) -> Result<Vec<i64>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map(rusqlite::params_from_iter(args), |row| row.get(0))?;
    let mut seqs: Vec<i64> = rows.collect::<Result<_, _>>()?;
    seqs.sort_unstable();
    Ok(seqs)
}

fn json(ids: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(ids).map_err(|err| StoreError::Json(err.to_string()))
}
