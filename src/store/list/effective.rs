//! What the query language's keys on inherited values (`user:`, `port:`, `identity:`,
//! `key:`, `via:`, `has:`) compare, for a host known by its group, its own values'
//! combination and its flags (store::list::own): the effective values, resolved as
//! `GET /api/hosts/:id/effective` resolves them (`Inheritance::resolve`), once per distinct
//! triple a query meets (docs/performance.md, "Queries").
//!
//! Invariants: the groups' defaults come from the list's memory (current for the query),
//! identities, key names and the groups with forward rules are read per query, so a change
//! of any of them is seen by the next query; reads only, never a secret (an identity's
//! methods by their public view).

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use crate::model::host::{AuthType, Host};
use crate::model::query::HostFacts;
use crate::store::inherit::Inheritance;
use crate::store::list::group_tree::GroupTree;
use crate::store::list::own::{Own, FORWARDS, NOTES};
use crate::store::StoreError;

/// A host as the memory knows it: its group's number, its combination's, its flags.
pub type Known = (u32, u32, u8);

/// The context of one query, and the facts of each triple met so far.
pub struct Resolver {
    inheritance: Inheritance,
    identity_names: HashMap<String, String>,
    key_names: HashMap<String, String>,
    hop_names: HashMap<String, String>,
    group_forwards: HashSet<String>,
    facts: HashMap<Known, HostFacts>,
}

impl Resolver {
    /// The context, the groups taken from the list's memory (which is current).
    pub fn load(conn: &Connection, tree: &GroupTree) -> Result<Resolver, StoreError> {
        let mut statement = conn
            .prepare_cached("SELECT DISTINCT group_id FROM forwards WHERE group_id IS NOT NULL")?;
        let groups = statement.query_map([], |row| row.get(0))?;
        Ok(Resolver {
            inheritance: Inheritance::with_groups(conn, tree.groups())?,
            identity_names: names(conn, "SELECT id, name FROM identities")?,
            key_names: names(conn, "SELECT id, name FROM keys")?,
            hop_names: HashMap::new(),
            group_forwards: groups.collect::<Result<_, _>>()?,
            facts: HashMap::new(),
        })
    }

    /// The facts of a host in group `group_id` (`""`: none) with `own` values and `flags`.
    pub fn facts(
        &mut self,
        conn: &Connection,
        known: Known,
        group_id: &str,
        own: &Own,
    ) -> Result<&HostFacts, StoreError> {
        if !self.facts.contains_key(&known) {
            let facts = self.resolve(conn, known.2, group_id, own)?;
            self.facts.insert(known, facts);
        }
        self.facts
            .get(&known)
            .ok_or_else(|| StoreError::BrokenInvariant("a resolved host was not kept".into()))
    }

    fn resolve(
        &mut self,
        conn: &Connection,
        flags: u8,
        group_id: &str,
        own: &Own,
    ) -> Result<HostFacts, StoreError> {
        let host = host_of(group_id, own);
        let effective = self.inheritance.resolve(&host);
        let hops = &effective.jump_host_ids.value;
        let missing: Vec<&String> = hops
            .iter()
            .filter(|id| !self.hop_names.contains_key(*id))
            .collect();
        if !missing.is_empty() {
            self.hop_names.extend(host_names(conn, &missing)?);
        }
        let name = |names: &HashMap<String, String>, id: &str| names.get(id).cloned();
        let lineage = self.inheritance.levels(host.group_id.as_deref());
        let group_forwards = lineage
            .iter()
            .any(|level| self.group_forwards.contains(level.id));
        Ok(HostFacts {
            notes: if flags & NOTES != 0 {
                "-".into()
            } else {
                String::new()
            },
            user: effective.username().map(str::to_owned),
            port: effective.port(),
            identity: effective
                .identity_id()
                .and_then(|id| name(&self.identity_names, id)),
            keys: effective
                .auth_keys()
                .iter()
                .filter_map(|id| name(&self.key_names, id))
                .collect(),
            chain: hops
                .iter()
                .filter_map(|id| name(&self.hop_names, id))
                .collect(),
            has_password: effective.holds_password(),
            has_forwards: flags & FORWARDS != 0 || group_forwards,
            ..HostFacts::default()
        })
    }
}

/// A host with only what resolving reads: its group and its own inheritable values.
fn host_of(group_id: &str, own: &Own) -> Host {
    Host {
        port: own.port,
        username: own.username.clone(),
        auth_type: own.auth_type.as_deref().and_then(AuthType::parse),
        key_id: own.key_id.clone(),
        has_password: own.has_password,
        identity_id: own.identity_id.clone(),
        group_id: (!group_id.is_empty()).then(|| group_id.to_owned()),
        jump_host_ids: own.chain.clone(),
        ..Host::inheriting_everything("")
    }
}

/// `id -> name` from a two-column query of our own.
fn names(conn: &Connection, sql: &str) -> Result<HashMap<String, String>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The names of the hosts `ids` (those still there).
fn host_names(conn: &Connection, ids: &[&String]) -> Result<HashMap<String, String>, StoreError> {
    let ids = serde_json::to_string(ids).map_err(|err| StoreError::Json(err.to_string()))?;
    let mut statement = conn.prepare_cached(
        "SELECT h.id, h.name FROM json_each(?1) AS wanted JOIN hosts AS h ON h.id = wanted.value",
    )?;
    let rows = statement.query_map([&ids], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
