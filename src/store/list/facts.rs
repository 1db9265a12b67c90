//! What the query language's keys on stored and inherited values read (docs/query.md:
//! `notes:`, `user:`, `port:`, `identity:`, `key:`, `via:`, `has:`): each host's
//! `HostFacts`, read from the database for the hosts the memory's own terms left, every
//! effective value resolved as `GET /api/hosts/:id/effective` resolves it
//! (docs/performance.md, "Queries").
//!
//! Invariants: reads only, never a secret (a password is known by `IS NOT NULL` alone, an
//! identity's methods by their public view); a chunk of hosts at a time, a few queries a
//! chunk whatever the number of groups and identities; the walk up the groups stops after
//! `MAX_DEPTH` levels.

use std::collections::{BTreeSet, HashMap, HashSet};

use rusqlite::Connection;

use crate::model::group::MAX_DEPTH;
use crate::model::query::{matches, HostFacts, Query};
use crate::store::inherit::Inheritance;
use crate::store::list::rows::read_hosts_with_tags;
use crate::store::StoreError;

/// Hosts read at a time.
const CHUNK: usize = 512;

/// Everything but the hosts themselves: groups, identities, keys and the owners of forward
/// rules, read once per query.
pub struct Context {
    inheritance: Inheritance,
    /// Group id -> (name, parent id).
    groups: HashMap<String, (String, Option<String>)>,
    identity_names: HashMap<String, String>,
    key_names: HashMap<String, String>,
    forward_hosts: HashSet<String>,
    forward_groups: HashSet<String>,
}

/// The `seq`s among `seqs` of the hosts `query` matches, ascending.
pub fn matching(
    conn: &Connection,
    seqs: &[i64],
    query: &Query,
    now: i64,
) -> Result<Vec<i64>, StoreError> {
    let context = Context::load(conn)?;
    let mut kept = Vec::new();
    for chunk in seqs.chunks(CHUNK) {
        for (seq, facts) in context.facts(conn, chunk, now)? {
            if matches(query, &facts).is_some() {
                kept.push(seq);
            }
        }
    }
    kept.sort_unstable();
    Ok(kept)
}

impl Context {
    pub fn load(conn: &Connection) -> Result<Context, StoreError> {
        let groups = crate::store::groups::all(conn)?
            .into_iter()
            .map(|group| (group.id, (group.name, group.parent_id)))
            .collect();
        let (mut forward_hosts, mut forward_groups) = (HashSet::new(), HashSet::new());
        let mut statement = conn.prepare_cached(
            "SELECT DISTINCT host_id, group_id FROM forwards ORDER BY host_id, group_id",
        )?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let (host, group): (Option<String>, Option<String>) = (row.get(0)?, row.get(1)?);
            forward_hosts.extend(host);
            forward_groups.extend(group);
        }
        Ok(Context {
            inheritance: Inheritance::load(conn)?,
            groups,
            identity_names: names(conn, "SELECT id, name FROM identities")?,
            key_names: names(conn, "SELECT id, name FROM keys")?,
            forward_hosts,
            forward_groups,
        })
    }

    /// The facts of the hosts of `seqs` still there (at most `CHUNK` at once is cheapest).
    pub fn facts(
        &self,
        conn: &Connection,
        seqs: &[i64],
        now: i64,
    ) -> Result<Vec<(i64, HostFacts)>, StoreError> {
        let hosts = read_hosts_with_tags(conn, seqs)?;
        let effective: Vec<_> = hosts
            .iter()
            .map(|(_, host)| self.inheritance.resolve(host))
            .collect();
        let hops: BTreeSet<&String> = effective
            .iter()
            .flat_map(|effective| &effective.jump_host_ids.value)
            .collect();
        let hop_names = host_names(conn, &hops)?;
        let facts = hosts
            .iter()
            .zip(&effective)
            .map(|((seq, host), effective)| {
                let lineage = self.lineage(host.group_id.as_deref());
                let name_of = |names: &HashMap<String, String>, id: &str| names.get(id).cloned();
                let facts = HostFacts {
                    name: host.name.clone(),
                    hostname: host.hostname.clone(),
                    notes: host.notes.clone(),
                    tags: host.tags.clone(),
                    group_path: lineage.iter().map(|(_, name)| name.clone()).collect(),
                    group_ids: lineage.iter().map(|(id, _)| id.clone()).collect(),
                    user: effective.username().map(str::to_owned),
                    port: effective.port(),
                    identity: effective
                        .identity_id()
                        .and_then(|id| name_of(&self.identity_names, id)),
                    keys: effective
                        .auth_keys()
                        .iter()
                        .filter_map(|id| name_of(&self.key_names, id))
                        .collect(),
                    chain: effective
                        .jump_host_ids
                        .value
                        .iter()
                        .filter_map(|id| name_of(&hop_names, id))
                        .collect(),
                    has_password: effective.holds_password(),
                    has_forwards: self.forward_hosts.contains(&host.id)
                        || lineage
                            .iter()
                            .any(|(id, _)| self.forward_groups.contains(id)),
                    is_favorite: host.is_favorite,
                    last_used_at: host.last_used_at.as_deref().and_then(unix_seconds),
                    created_at: unix_seconds(&host.created_at).unwrap_or(0),
                    now,
                };
                (*seq, facts)
            });
        Ok(facts.collect())
    }

    /// The host's group and the groups above it, from the top: `(id, name)`.
    fn lineage(&self, group_id: Option<&str>) -> Vec<(String, String)> {
        let mut lineage = Vec::new();
        let mut next = group_id;
        while let Some(id) = next.filter(|_| lineage.len() < MAX_DEPTH) {
            let Some((name, parent)) = self.groups.get(id) else {
                break;
            };
            lineage.push((id.to_owned(), name.clone()));
            next = parent.as_deref();
        }
        lineage.reverse();
        lineage
    }
}

/// A stored time (`2024-01-31T12:00:00.000Z`) in Unix seconds; `None` when it does not parse.
pub fn unix_seconds(text: &str) -> Option<i64> {
    let time = humantime::parse_rfc3339(text).ok()?;
    let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_secs()).ok()
}

/// `id -> name` from a two-column query of our own.
fn names(conn: &Connection, sql: &str) -> Result<HashMap<String, String>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The names of the hosts `ids` (those still there).
fn host_names(
    conn: &Connection,
    ids: &BTreeSet<&String>,
) -> Result<HashMap<String, String>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let ids = serde_json::to_string(ids).map_err(|err| StoreError::Json(err.to_string()))?;
    let mut statement = conn.prepare_cached(
        "SELECT h.id, h.name FROM json_each(?1) AS wanted JOIN hosts AS h ON h.id = wanted.value",
    )?;
    let rows = statement.query_map([&ids], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
