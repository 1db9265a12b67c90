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

use crate::model::forward::ForwardSettings;
use crate::model::forward_rule::{Owner, Rule};
use crate::model::host::Host;
use crate::model::ssh_config_import::{Catalogue, ImportPlan, Placed};
use crate::model::ssh_config_session::ReadRule;
use crate::store::keys::NewKey;
use crate::store::{catalogue, forwards, hosts, interop, keys, StoreError};

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
/// updates the matched hosts that change (forward rules included), reporting each in
/// `plan.report`. New rules get their id from `new_id` unless the block gave a free one.
pub fn apply(
    conn: &Connection,
    plan: &mut ImportPlan<'_>,
    new_id: &mut dyn FnMut() -> String,
) -> Result<(), StoreError> {
    let group_id = plan.group_id().map(str::to_owned);
    let group_id = group_id.as_deref();
    for place in plan.placed.iter().filter(|place| place.existing.is_none()) {
        hosts::insert(conn, &place.id, &place.new_host(group_id), None)?;
    }
    // Every rule read once: the groups' ids (the export writes inherited rules too) and each
    // host's own rules.
    let mut group_rules: HashSet<String> = HashSet::new();
    let mut host_rules: HashMap<String, Vec<Rule>> = HashMap::new();
    for rule in forwards::all(conn)? {
        match &rule.owner {
            Owner::Group(_) => {
                group_rules.insert(rule.id);
            }
            Owner::Host(id) => host_rules.entry(id.clone()).or_default().push(rule),
        }
    }
    let ImportPlan { placed, report, .. } = plan;
    for place in placed.iter() {
        let verdict = interop::judge_chain(conn, Some(&place.id), &place.hops)?;
        let hops = report.settle_chain(place, &verdict);
        let mut warnings = Vec::new();
        let current = host_rules
            .get(&place.id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let rules = Rules {
            current,
            of_groups: &group_rules,
        };
        let rules_changed = sync_rules(conn, place, &rules, new_id, &mut warnings)?;
        for warning in warnings {
            report.warn(place.block, warning);
        }
        let Some(current) = &place.existing else {
            interop::write_jumps(conn, &place.id, &hops)?;
            report.created(place);
            continue;
        };
        // The patch names no auth, the one part of an update that can break a rule.
        let change = place.change(current, hops, group_id).map_err(|err| {
            StoreError::BrokenInvariant(format!("an import's update broke {err}"))
        })?;
        match (change, rules_changed) {
            (None, false) => report.unchanged(place),
            (None, true) => report.updated(place),
            (Some(change), _) => {
                hosts::update(conn, current, &change, None)?;
                report.updated(place);
            }
        }
    }
    Ok(())
}

/// Makes the host's own forward rules the block's, leaving out those a group gives (by
/// id: the export writes inherited rules too). `true` when anything changed. A block rule
/// whose id is one of the host's rules updates that rule in place (revision, creation time
/// kept); the host's rules the block does not name are deleted; others are added, under the
/// block's id when no rule has it. A rule that would collide with a listening rule is
/// stored as manual, with a warning.
fn sync_rules(
    conn: &Connection,
    place: &Placed<'_>,
    rules: &Rules<'_>,
    new_id: &mut dyn FnMut() -> String,
    warnings: &mut Vec<String>,
) -> Result<bool, StoreError> {
    let owner = Owner::Host(place.id.clone());
    let wanted: Vec<&ReadRule> = place
        .block
        .session
        .rules
        .iter()
        .filter(|rule| {
            !rule
                .id
                .as_ref()
                .is_some_and(|id| rules.of_groups.contains(id))
        })
        .collect();
    let current = rules.current;
    let same = current.len() == wanted.len()
        && current.iter().zip(&wanted).all(|(now, read)| {
            now.spec == read.spec
                && now.settings == read.settings
                && read.id.as_ref().is_none_or(|id| *id == now.id)
        });
    if same {
        return Ok(false);
    }
    let named: HashSet<&str> = wanted
        .iter()
        .filter_map(|read| read.id.as_deref())
        .collect();
    for rule in current
        .iter()
        .filter(|rule| !named.contains(rule.id.as_str()))
    {
        forwards::delete(conn, rule)?;
    }
    let mut order = Vec::new();
    for read in wanted {
        let existing = current
            .iter()
            .find(|rule| read.id.as_deref() == Some(rule.id.as_str()));
        let id = match (existing, &read.id) {
            (Some(rule), _) => rule.id.clone(),
            (None, Some(id)) if usable_id(id) && !forwards::exists(conn, id)? => id.clone(),
            (None, _) => new_id(),
        };
        let settings = listening_or_manual(conn, read, &id, warnings)?;
        match existing {
            Some(rule) if rule.spec == read.spec && rule.settings == settings => {}
            Some(rule) => {
                forwards::update(conn, rule, &read.spec, &settings, None)?;
            }
            None => {
                if let Err(refused) = forwards::insert(conn, &owner, &id, &read.spec, &settings)? {
                    warnings.push(format!("{}: {}", read.spec.directive(), refused));
                    continue;
                }
            }
        }
        order.push(id);
    }
    forwards::reorder(conn, &order)?;
    Ok(true)
}

/// `read`'s settings, made manual (with a warning) when the rule would listen where another
/// listening rule does.
fn listening_or_manual(
    conn: &Connection,
    read: &ReadRule,
    id: &str,
    warnings: &mut Vec<String>,
) -> Result<ForwardSettings, StoreError> {
    let mut settings = read.settings.clone();
    if settings.enabled && settings.autostart {
        if let Some(other) = forwards::conflict(conn, &read.spec, id)? {
            settings.autostart = false;
            warnings.push(format!(
                "{} would listen where {} does; imported as manual (autostart false)",
                read.spec.directive(),
                other.named()
            ));
        }
    }
    Ok(settings)
}

/// The stored rules an import's host is matched against.
struct Rules<'a> {
    /// The host's own rules, in order (none for a new host).
    current: &'a [Rule],
    /// The ids of every group's rules.
    of_groups: &'a HashSet<String>,
}

/// A rule id from outside text is kept only when it looks like one of ours.
fn usable_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
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
