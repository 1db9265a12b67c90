//! The writing half of an `~/.ssh/config` import (docs/api.md, "Jump chains, extra options, and
//! `~/.ssh/config`"): the keys supplied with it, then the hosts and chains of the plan that
//! `model::ssh_config_import` made.
//!
//! Invariants: runs inside the caller's one transaction (a dry run rolls the very same
//! writes back); a supplied key already stored (same fingerprint) is reused, never stored
//! twice; every new host exists before any chain is judged (a hop may be one of them), and
//! each chain is judged against the stored chains before it is written, so no import can
//! store a loop.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use crate::model::host::Host;
use crate::model::ssh_config_import::{Catalogue, ImportPlan};
use crate::store::keys::NewKey;
use crate::store::{catalogue, hosts, interop, keys, StoreError};

/// A private key supplied with the import for an `IdentityFile` path, read and sealed
/// under a fresh id before the transaction.
pub struct ImportedKey<'a> {
    /// The path as the config writes it; the key is named after its file name.
    pub path: &'a str,
    pub key: NewKey<'a>,
}

/// What a plan is made against: the stored hosts and keys once the supplied keys are in.
pub struct Stored {
    pub hosts: Vec<Host>,
    pub supplied_keys: HashMap<String, String>,
    pub stored_keys: HashSet<String>,
}

impl Stored {
    pub fn catalogue(&self) -> Catalogue<'_> {
        Catalogue {
            hosts: &self.hosts,
            supplied_keys: &self.supplied_keys,
            stored_keys: &self.stored_keys,
        }
    }
}

/// Checks the target group, stores the supplied keys not stored yet (matched by
/// fingerprint, named after their file: docs/api.md, Keys), and reads what the plan needs.
/// Errors: `GroupNotFound` for an unknown `group_id`; `DuplicateName` cannot happen (names
/// are made free).
pub fn prepare(
    conn: &Connection,
    group_id: Option<&str>,
    supplied: &[ImportedKey<'_>],
) -> Result<Stored, StoreError> {
    if let Some(group_id) = group_id {
        // docs/api.md, Hosts: an unknown group in a body is GROUP_NOT_FOUND.
        if !hosts::group_exists(conn, group_id)? {
            return Err(StoreError::GroupNotFound);
        }
    }
    let mut supplied_keys = HashMap::new();
    for key in supplied {
        let id = match keys::id_by_fingerprint(conn, key.key.fingerprint)? {
            Some(id) => id,
            None => insert_key(conn, key)?,
        };
        supplied_keys.insert(key.path.to_owned(), id);
    }
    Ok(Stored {
        hosts: catalogue::all_hosts(conn)?,
        supplied_keys,
        stored_keys: keys::list(conn)?.into_iter().map(|key| key.id).collect(),
    })
}

/// Carries out `plan`: creates the new hosts, then judges and writes every chain and
/// updates the matched hosts that change, reporting each in `plan.report`.
pub fn apply(conn: &Connection, plan: &mut ImportPlan<'_>) -> Result<(), StoreError> {
    let group_id = plan.group_id().map(str::to_owned);
    let group_id = group_id.as_deref();
    for place in plan.placed.iter().filter(|place| place.existing.is_none()) {
        hosts::insert(conn, &place.id, &place.new_host(group_id), None)?;
    }
    let ImportPlan { placed, report, .. } = plan;
    for place in placed.iter() {
        let verdict = interop::judge_chain(conn, Some(&place.id), &place.hops)?;
        let hops = report.settle_chain(place, &verdict);
        let Some(current) = &place.existing else {
            interop::write_jumps(conn, &place.id, &hops)?;
            report.created(place);
            continue;
        };
        // The patch names no auth, the one part of an update that can break a rule.
        let change = place.change(current, hops, group_id).map_err(|err| {
            StoreError::BrokenInvariant(format!("an import's update broke {err}"))
        })?;
        match change {
            None => report.unchanged(place),
            Some(change) => {
                hosts::update(conn, current, &change, None)?;
                report.updated(place);
            }
        }
    }
    Ok(())
}

/// Stores a supplied key under the first free name made from its file name (`imported
/// key` when the file name cannot be a name). Returns its id.
fn insert_key(conn: &Connection, key: &ImportedKey<'_>) -> Result<String, StoreError> {
    let file_name = key.path.rsplit('/').next().unwrap_or(key.path);
    let name = match keys::free_name(conn, file_name)? {
        Some(name) => name,
        None => keys::free_name(conn, "imported key")?.ok_or_else(|| {
            StoreError::BrokenInvariant("\"imported key\" is a valid key name".into())
        })?,
    };
    Ok(keys::insert(conn, &name, &key.key)?.id)
}
