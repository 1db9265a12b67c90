//! Group rows: the tree read, create, update (which covers move), and the delete that hands
//! hosts and child groups to the parent.
//!
//! Invariants: no write leaves a cycle, a group deeper than `MAX_DEPTH`, or two siblings
//! whose names share a caseless match key (`fold_key`, model::fold); a delete never loses
//! a host or a group.
//! Functions that write expect to run inside the caller's IMMEDIATE transaction
//! (`Db::write`), so every check and its write see the same rows. Direct host counts come
//! from `group_host_counts`, which triggers on `hosts` keep (sql/0001_init.sql).

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

use crate::model::fold;
use crate::model::group::{Group, GroupPatch, GroupView, NewGroup, MAX_DEPTH};
use crate::model::inherit::GroupDefaults;
use crate::model::name::Name;
use crate::model::startup::{env_from_json, env_json, patterns_from_json};
use crate::model::tree;
use crate::store::{key_or_rename, now_timestamp, StoreError};

const SELECT_ALL_GROUPS: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at, revision, default_username, default_port, default_identity_id, default_jump_host_ids, default_ssh_options, default_set_env, default_send_env FROM groups";

const SELECT_GROUP_BY_ID: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at, revision, default_username, default_port, default_identity_id, default_jump_host_ids, default_ssh_options, default_set_env, default_send_env FROM groups WHERE id = ?1";

/// The group `?1` and its ancestors, at most `?2` of them (so a corrupt cycle of parents
/// ends), in no order.
const SELECT_LINEAGE: &str = "WITH RECURSIVE up(id, depth) AS (
         SELECT ?1, 1
         UNION ALL
         SELECT groups.parent_id, up.depth + 1 FROM groups JOIN up ON groups.id = up.id
         WHERE groups.parent_id IS NOT NULL AND up.depth < ?2
     )
     SELECT g.id, g.parent_id, g.name, g.name_key, g.color, g.icon, g.created_at, g.updated_at,
     g.revision, g.default_username, g.default_port, g.default_identity_id,
     g.default_jump_host_ids, g.default_ssh_options, g.default_set_env, g.default_send_env FROM groups AS g
     WHERE g.id IN (SELECT id FROM up)";

const SELECT_CHILDREN: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at, revision, default_username, default_port, default_identity_id, default_jump_host_ids, default_ssh_options, default_set_env, default_send_env FROM groups WHERE parent_id = ?1 ORDER BY name_key, id";

/// The group `?1` and every group below it. `UNION` (not `UNION ALL`) stops on a repeated
/// id, so even a corrupt cycle cannot make this run forever.
const SELECT_SUBTREE: &str = "WITH RECURSIVE subtree(id) AS (
         SELECT id FROM groups WHERE id = ?1
         UNION
         SELECT groups.id FROM groups JOIN subtree ON groups.parent_id = subtree.id
     )
     SELECT g.id, g.parent_id, g.name, g.name_key, g.color, g.icon, g.created_at, g.updated_at,
     g.revision, g.default_username, g.default_port, g.default_identity_id,
     g.default_jump_host_ids, g.default_ssh_options, g.default_set_env, g.default_send_env FROM groups AS g JOIN subtree ON g.id = subtree.id";

/// Direct host counts from the trigger-kept `group_host_counts` table (sql/0001_init.sql):
/// one row per group, never a scan of the hosts.
#[cfg(test)]
const SELECT_HOST_COUNTS: &str = "SELECT group_id, host_count FROM group_host_counts
     WHERE host_count > 0";

const SELECT_SUBTREE_HOST_COUNTS: &str = "WITH RECURSIVE subtree(id) AS (
         SELECT id FROM groups WHERE id = ?1
         UNION
         SELECT groups.id FROM groups JOIN subtree ON groups.parent_id = subtree.id
     )
     SELECT counts.group_id, counts.host_count
     FROM subtree JOIN group_host_counts AS counts ON counts.group_id = subtree.id
     WHERE counts.host_count > 0";

/// Walks up from `?1`: its depth (1 = top level) and whether `?2` is `?1` or one of its
/// ancestors. The walk stops after `?3` steps, so a corrupt cycle cannot hang it.
const WALK_ANCESTORS: &str = "WITH RECURSIVE ancestors(id, depth) AS (
         SELECT ?1, 1
         UNION ALL
         SELECT groups.parent_id, ancestors.depth + 1
         FROM groups JOIN ancestors ON groups.id = ancestors.id
         WHERE groups.parent_id IS NOT NULL AND ancestors.depth < ?3
     )
     SELECT max(depth), coalesce(max(id = ?2), 0) FROM ancestors";

/// How many levels the subtree of `?1` spans (1 = no children), counting at most `?2`.
const SUBTREE_HEIGHT: &str = "WITH RECURSIVE subtree(id, level) AS (
         SELECT ?1, 1
         UNION ALL
         SELECT groups.id, subtree.level + 1
         FROM groups JOIN subtree ON groups.parent_id = subtree.id
         WHERE subtree.level < ?2
     )
     SELECT max(level) FROM subtree";

/// Matches the expression of the `groups_sibling_fold` unique index, so it is a lookup.
const SIBLING_NAME_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM groups
     WHERE coalesce(parent_id, '') = coalesce(?1, '') AND fold_key = ?2 AND id <> ?3)";

/// Names, not stored keys: a row a tool inserted without its key still counts.
const SELECT_SIBLING_NAMES: &str = "SELECT name FROM groups
     WHERE coalesce(parent_id, '') = coalesce(?1, '')";

const INSERT_GROUP: &str = "INSERT INTO groups
     (id, parent_id, name, name_key, fold_key, color, icon, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)";

const UPDATE_GROUP: &str = "UPDATE groups SET parent_id = ?2, name = ?3, name_key = ?4,
     fold_key = ?5, color = ?6, icon = ?7, updated_at = ?8 WHERE id = ?1";

const UPDATE_DEFAULTS: &str = "UPDATE groups SET default_username = ?2, default_port = ?3,
     default_identity_id = ?4, default_jump_host_ids = ?5, default_ssh_options = ?6,
     default_set_env = ?7, default_send_env = ?8 WHERE id = ?1";

const REPARENT_GROUP: &str = "UPDATE groups SET parent_id = ?2, name = ?3, name_key = ?4,
     fold_key = ?5, updated_at = ?6 WHERE id = ?1";

/// Rows without a match key (sql/0005_fold_keys.sql), oldest first: the oldest of a
/// clashing pair keeps its name.
const SELECT_UNKEYED: &str = "SELECT id, parent_id, name FROM groups WHERE fold_key IS NULL
     ORDER BY created_at, id";
const SET_FOLD_KEY: &str = "UPDATE groups SET fold_key = ?2 WHERE id = ?1";
const RENAME_UNKEYED: &str = "UPDATE groups SET name = ?2, name_key = ?3, fold_key = ?4,
     updated_at = ?5 WHERE id = ?1";

const REPARENT_HOSTS: &str = "UPDATE hosts SET group_id = ?2, updated_at = ?3
     WHERE group_id = ?1";

const DELETE_GROUP: &str = "DELETE FROM groups WHERE id = ?1";

const CREATE_CHANGE_LOG: &str = "
    CREATE TEMP TABLE IF NOT EXISTS list_changed_groups (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_added AFTER INSERT ON main.groups
        BEGIN INSERT OR IGNORE INTO list_changed_groups VALUES (new.id); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_deleted AFTER DELETE ON main.groups
        BEGIN INSERT OR IGNORE INTO list_changed_groups VALUES (old.id); END;
    CREATE TEMP TRIGGER IF NOT EXISTS list_group_changed AFTER UPDATE ON main.groups
        BEGIN INSERT OR IGNORE INTO list_changed_groups VALUES (old.id), (new.id); END;";
/// The groups the triggers logged, changed or deleted (no row).
const SELECT_CHANGED_GROUPS: &str = "SELECT g.id, g.parent_id, g.name, g.name_key, g.color,
     g.icon, g.created_at, g.updated_at, g.revision, g.default_username, g.default_port,
     g.default_identity_id, g.default_jump_host_ids, g.default_ssh_options, g.default_set_env,
     g.default_send_env, c.id
     FROM list_changed_groups AS c
     LEFT JOIN groups AS g ON g.id = c.id";
const CLEAR_CHANGED_GROUPS: &str = "DELETE FROM list_changed_groups";

/// Whether a create or update could put the group where it asked to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Placed,
    /// The new parent is the group itself or one of its descendants.
    UnderItself,
    /// The group, or the deepest group below it, would sit deeper than `MAX_DEPTH`.
    TooDeep,
}

/// Sets up the log of changed groups the temp triggers fill (per connection, never in the
/// file), for the group tree (store::list::group_tree). Called by store::list `install`.
pub fn install_change_log(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(CREATE_CHANGE_LOG)?;
    Ok(())
}

/// Every group, in no order.
pub fn all(conn: &Connection) -> Result<Vec<Group>, StoreError> {
    query_groups(conn, SELECT_ALL_GROUPS, params![])
}

/// Group `id` and every group above it (one query), in no order; none for an unknown id.
pub fn lineage(conn: &Connection, id: &str) -> Result<Vec<Group>, StoreError> {
    query_groups(conn, SELECT_LINEAGE, params![id, MAX_DEPTH as i64])
}

/// The groups changed since the last call, each id with its row (`None`: deleted), and
/// empties the log. Their only reader is the group tree (store::list::group_tree).
pub fn take_changed(conn: &Connection) -> Result<Vec<(String, Option<Group>)>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_CHANGED_GROUPS)?;
    let changed = statement
        .query_map([], |row| {
            let group = match row.get_ref(0)? {
                rusqlite::types::ValueRef::Null => None,
                _ => Some(group_from_row(row)?),
            };
            Ok((row.get(16)?, group))
        })?
        .collect::<Result<_, _>>()?;
    conn.prepare_cached(CLEAR_CHANGED_GROUPS)?.execute([])?;
    Ok(changed)
}

/// The whole forest: one query for the groups, one for the direct host counts. The oracle
/// the group tree's rendering (store::list::group_tree) is tested against.
#[cfg(test)]
pub fn tree(conn: &Connection) -> Result<Vec<GroupView>, StoreError> {
    let groups = query_groups(conn, SELECT_ALL_GROUPS, params![])?;
    let counts = query_counts(conn, SELECT_HOST_COUNTS, params![])?;
    Ok(tree::build(groups, &counts))
}

/// One group with its counts and its subtree. `GroupNotFound` when `id` is unknown.
pub fn view(conn: &Connection, id: &str) -> Result<GroupView, StoreError> {
    let groups = query_groups(conn, SELECT_SUBTREE, params![id])?;
    let counts = query_counts(conn, SELECT_SUBTREE_HOST_COUNTS, params![id])?;
    // The subtree's root is the only row whose parent is not in it, so it is the one item.
    tree::build(groups, &counts)
        .into_iter()
        .find(|view| view.id == id)
        .ok_or(StoreError::GroupNotFound)
}

/// One stored row. `GroupNotFound` when `id` is unknown.
pub fn by_id(conn: &Connection, id: &str) -> Result<Group, StoreError> {
    // docs/api.md, Common behaviour: an id that is not a UUID is simply not found, so no parse first.
    conn.prepare_cached(SELECT_GROUP_BY_ID)?
        .query_row(params![id], group_from_row)
        .optional()?
        .ok_or(StoreError::GroupNotFound)
}

/// Inserts a new group `id`. Errors: `GroupNotFound` for an unknown parent, `DuplicateName`
/// for a sibling with the same name; `TooDeep` when the parent is at `MAX_DEPTH`.
pub fn insert(conn: &Connection, id: &str, group: &NewGroup) -> Result<Placement, StoreError> {
    if let Some(parent) = group.parent_id.as_deref() {
        by_id(conn, parent)?;
        let (parent_depth, _) = walk_ancestors(conn, parent, id)?;
        // MAX_DEPTH (model::group): the new group sits one level below its parent.
        if parent_depth + 1 > MAX_DEPTH {
            return Ok(Placement::TooDeep);
        }
    }
    ensure_name_free(conn, group.parent_id.as_deref(), group.name.fold_key(), id)?;
    conn.execute(
        INSERT_GROUP,
        params![
            id,
            group.parent_id,
            group.name.as_str(),
            group.name.key(),
            group.name.fold_key(),
            group.color,
            group.icon,
            now_timestamp()
        ],
    )?;
    Ok(Placement::Placed)
}

/// Writes group `id`'s defaults (docs/identities.md, "Group defaults") in the caller's
/// transaction, which also moves the group's `updated_at` (one edit, one revision).
/// `IdentityNotFound` for an unknown identity; a default chain is judged like a host's:
/// `JumpChain` with the verdict for an unknown hop or a repeat.
pub fn write_defaults(
    conn: &Connection,
    id: &str,
    defaults: &GroupDefaults,
) -> Result<(), StoreError> {
    if let Some(identity_id) = &defaults.identity_id {
        let known = conn
            .prepare_cached("SELECT 1 FROM identities WHERE id = ?1")?
            .query_row([identity_id], |_| Ok(()))
            .optional()?;
        if known.is_none() {
            return Err(StoreError::IdentityNotFound);
        }
    }
    let chain = defaults
        .jump_host_ids
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|err| StoreError::Json(err.to_string()))?;
    let options = serde_json::to_string(&defaults.ssh_options)
        .map_err(|err| StoreError::Json(err.to_string()))?;
    conn.prepare_cached(UPDATE_DEFAULTS)?.execute(params![
        id,
        defaults.username,
        defaults.port,
        defaults.identity_id,
        chain,
        options,
        env_json(&defaults.set_env).to_string(),
        serde_json::Value::from(defaults.send_env.clone()).to_string(),
    ])?;
    Ok(())
}

/// Applies `patch` to group `id`; a new `parent_id` moves it, with the same checks as a move.
/// Errors in this order: `GroupNotFound` (the group, then the new parent), then the
/// placement (`UnderItself`, `TooDeep`), then `DuplicateName` at the destination.
pub fn update(conn: &Connection, id: &str, patch: &GroupPatch) -> Result<Placement, StoreError> {
    let current = by_id(conn, id)?;
    let parent_id = match &patch.parent_id {
        Some(parent_id) => parent_id.clone(),
        None => current.parent_id.clone(),
    };
    if let Some(Some(parent)) = &patch.parent_id {
        by_id(conn, parent)?;
        let placement = check_placement(conn, id, parent)?;
        if placement != Placement::Placed {
            return Ok(placement);
        }
    }
    let (name, name_key, fold_key) = match &patch.name {
        Some(name) => (name.as_str(), name.key(), name.fold_key().to_owned()),
        None => (
            current.name.as_str(),
            current.name_key.as_str(),
            fold::key(&current.name),
        ),
    };
    ensure_name_free(conn, parent_id.as_deref(), &fold_key, id)?;
    let color = patch.color.as_deref().unwrap_or(&current.color);
    let icon = patch.icon.as_deref().unwrap_or(&current.icon);
    conn.execute(
        UPDATE_GROUP,
        params![
            id,
            parent_id,
            name,
            name_key,
            fold_key,
            color,
            icon,
            now_timestamp()
        ],
    )?;
    Ok(Placement::Placed)
}

/// Deletes group `id` and gives its hosts and child groups to its parent (or makes them
/// ungrouped / top-level). A child whose name clashes at the destination is renamed
/// `name (2)`, `name (3)`, ... Every moved row gets `updated_at = now`.
/// Must run inside the caller's transaction: it defers foreign keys until that commit.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let now = now_timestamp();
    let group = by_id(conn, id)?;
    let destination = group.parent_id.as_deref();
    let children = query_groups(conn, SELECT_CHILDREN, params![id])?;

    // The group row goes first, so a child named like it does not clash with it; the
    // references to it are repaired below, before the commit checks them.
    conn.pragma_update(None, "defer_foreign_keys", true)?;
    conn.execute(DELETE_GROUP, params![id])?;

    let mut taken = sibling_fold_keys(conn, destination)?;
    let child_keys: Vec<String> = children
        .iter()
        .map(|child| fold::key(&child.name))
        .collect();
    let clashes: Vec<bool> = child_keys.iter().map(|key| taken.contains(key)).collect();
    // Children keep their names unless they clash, so a renamed child must not take the
    // name of one that moves along unchanged.
    taken.extend(child_keys.iter().cloned());
    for ((child, clashes), fold_key) in children.iter().zip(clashes).zip(child_keys) {
        // docs/api.md, Groups: a child whose name clashes at the destination gets " (2)", ...
        let (name, name_key, fold_key) = if clashes {
            let renamed = Name::free(&child.name, &taken);
            taken.insert(renamed.fold_key().to_owned());
            (
                renamed.as_str().to_owned(),
                renamed.key().to_owned(),
                renamed.fold_key().to_owned(),
            )
        } else {
            (child.name.clone(), child.name_key.clone(), fold_key)
        };
        conn.execute(
            REPARENT_GROUP,
            params![child.id, destination, name, name_key, fold_key, now],
        )?;
    }
    // docs/api.md, Groups: hosts move to the parent, or become ungrouped.
    conn.execute(REPARENT_HOSTS, params![id, destination, now])?;
    Ok(())
}

/// Gives every group without a match key its key (sql/0005_fold_keys.sql: the rows the
/// migration found, and any a tool inserted since). A group whose name now clashes with an
/// older sibling's is renamed `name (2)`, ... and the change logged. Returns how many rows
/// it touched; writes nothing when none lacks a key.
pub fn fill_fold_keys(conn: &mut Connection) -> Result<usize, StoreError> {
    let unkeyed: Vec<(String, Option<String>, String)> = conn
        .prepare(SELECT_UNKEYED)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<Result<_, _>>()?;
    if unkeyed.is_empty() {
        return Ok(0);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = now_timestamp();
    for (id, parent, name) in &unkeyed {
        let taken = |key: &str| -> Result<bool, StoreError> {
            Ok(tx
                .prepare_cached(SIBLING_NAME_TAKEN)?
                .query_row(params![parent, key, id], |row| row.get(0))?)
        };
        let scope = || sibling_fold_keys(&tx, parent.as_deref());
        let step = [SET_FOLD_KEY, RENAME_UNKEYED];
        if let Some(renamed) = key_or_rename(&tx, step, id, name, &now, taken, scope)? {
            log::warn!(
                "group {id} renamed to \"{}\": its name matches a sibling's when compared \
                 caselessly (docs/api.md, Groups)",
                renamed.as_str()
            );
        }
    }
    tx.commit()?;
    Ok(unkeyed.len())
}

/// Whether `id` may move under `parent`: not under itself or a descendant, not too deep.
fn check_placement(conn: &Connection, id: &str, parent: &str) -> Result<Placement, StoreError> {
    let (parent_depth, is_ancestor) = walk_ancestors(conn, parent, id)?;
    // docs/api.md, Groups: under itself or any descendant is refused.
    if is_ancestor {
        return Ok(Placement::UnderItself);
    }
    let height = subtree_height(conn, id)?;
    if parent_depth + height > MAX_DEPTH {
        return Ok(Placement::TooDeep);
    }
    Ok(Placement::Placed)
}

/// The depth of `start` (1 = top level, capped just past `MAX_DEPTH`) and whether `target`
/// is `start` or one of its ancestors.
fn walk_ancestors(
    conn: &Connection,
    start: &str,
    target: &str,
) -> Result<(usize, bool), StoreError> {
    let limit = MAX_DEPTH as i64 + 1;
    let (depth, found): (i64, bool) = conn
        .prepare_cached(WALK_ANCESTORS)?
        .query_row(params![start, target, limit], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    Ok((usize::try_from(depth).unwrap_or(usize::MAX), found))
}

/// Levels spanned by the subtree of `id` (1 = a leaf), capped just past `MAX_DEPTH`.
fn subtree_height(conn: &Connection, id: &str) -> Result<usize, StoreError> {
    let limit = MAX_DEPTH as i64 + 1;
    let height: i64 = conn
        .prepare_cached(SUBTREE_HEIGHT)?
        .query_row(params![id, limit], |row| row.get(0))?;
    Ok(usize::try_from(height).unwrap_or(usize::MAX))
}

/// `DuplicateName` when a sibling under `parent` other than `id` has this match key.
fn ensure_name_free(
    conn: &Connection,
    parent: Option<&str>,
    fold_key: &str,
    id: &str,
) -> Result<(), StoreError> {
    // docs/api.md, Groups: unique among siblings, compared case-insensitively, by the caseless
    // match key (full case folding, canonical equivalence).
    let taken: bool = conn
        .prepare_cached(SIBLING_NAME_TAKEN)?
        .query_row(params![parent, fold_key, id], |row| row.get(0))?;
    if taken {
        return Err(StoreError::DuplicateName(
            "another group under the same parent already has this name (names compare \
             ignoring case, with Unicode's full case folding and canonical equivalence: \
             Straße = STRASSE)"
                .into(),
        ));
    }
    Ok(())
}

fn sibling_fold_keys(
    conn: &Connection,
    parent: Option<&str>,
) -> Result<HashSet<String>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_SIBLING_NAMES)?;
    let names = statement
        .query_map(params![parent], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(names.iter().map(|name| fold::key(name)).collect())
}

fn query_groups(
    conn: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Result<Vec<Group>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let groups = statement
        .query_map(args, group_from_row)?
        .collect::<Result<Vec<Group>, _>>()?;
    Ok(groups)
}

fn query_counts(
    conn: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Result<HashMap<String, u64>, StoreError> {
    let mut statement = conn.prepare_cached(sql)?;
    let counts = statement
        .query_map(args, |row| {
            let count: i64 = row.get(1)?;
            Ok((row.get(0)?, u64::try_from(count).unwrap_or(0)))
        })?
        .collect::<Result<HashMap<String, u64>, _>>()?;
    Ok(counts)
}

fn group_from_row(row: &Row<'_>) -> rusqlite::Result<Group> {
    Ok(Group {
        id: row.get(0)?,
        parent_id: row.get(1)?,
        name: row.get(2)?,
        name_key: row.get(3)?,
        color: row.get(4)?,
        icon: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        revision: row.get(8)?,
        defaults: defaults_from_row(row)?,
    })
}

/// Columns 9-15: a group's defaults (sql/0012_identities.sql, sql/0013_forwards.sql). A JSON
/// array that does not parse, or a port out of range, reads as unset rather than failing
/// every group read.
fn defaults_from_row(row: &Row<'_>) -> rusqlite::Result<GroupDefaults> {
    let port: Option<i64> = row.get(10)?;
    let chain: Option<String> = row.get(12)?;
    let options: String = row.get(13)?;
    let set_env: String = row.get(14)?;
    let send_env: String = row.get(15)?;
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
    Ok(GroupDefaults {
        username: row.get(9)?,
        port: port
            .and_then(|port| u16::try_from(port).ok())
            .filter(|port| *port > 0),
        identity_id: row.get(11)?,
        jump_host_ids: chain.and_then(|text| serde_json::from_str(&text).ok()),
        ssh_options: serde_json::from_str(&options).unwrap_or_default(),
        set_env: json(&set_env)
            .and_then(|value| env_from_json(&value))
            .unwrap_or_default(),
        send_env: json(&send_env)
            .and_then(|value| patterns_from_json(&value))
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod sequences;
#[cfg(test)]
mod test_support;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use rusqlite::params;

    use crate::model::group::MAX_DEPTH;
    use crate::store::groups::test_support::*;
    use crate::store::groups::{self, Placement};
    use crate::store::{open_in_memory, Db, StoreError};

    #[test]
    fn delete_gives_hosts_and_children_to_the_parent_and_renames_a_clash() {
        let db = open_in_memory().unwrap();
        let top = add(&db, "top", None);
        let web = add(&db, "Web", Some(&top));
        let middle = add(&db, "middle", Some(&top));
        let clashing = add(&db, "web", Some(&middle));
        let plain = add(&db, "db", Some(&middle));
        add_host(&db, "h-middle", Some(&middle));
        add_host(&db, "h-clashing", Some(&clashing));

        db.write(|tx| groups::delete(tx, &middle)).unwrap();

        let rows = group_rows(&db);
        assert!(!rows.contains_key(&middle));
        assert_eq!(rows[&clashing].0.as_deref(), Some(top.as_str()));
        assert_eq!(rows[&clashing].1, "web (2)");
        assert_eq!(rows[&plain], (Some(top.clone()), "db".into(), "db".into()));
        assert_eq!(
            rows[&web].1, "Web",
            "the sibling already there keeps its name"
        );
        let hosts = host_groups(&db);
        assert_eq!(hosts["h-middle"].as_deref(), Some(top.as_str()));
        assert_eq!(hosts["h-clashing"].as_deref(), Some(clashing.as_str()));
    }

    #[test]
    fn delete_of_top_level_group_makes_children_top_level_and_hosts_ungrouped() {
        let db = open_in_memory().unwrap();
        let top = add(&db, "top", None);
        let child = add(&db, "child", Some(&top));
        add_host(&db, "h", Some(&top));
        db.write(|tx| groups::delete(tx, &top)).unwrap();
        assert_eq!(group_rows(&db)[&child].0, None);
        assert_eq!(host_groups(&db)["h"], None);
    }

    #[test]
    fn child_named_like_its_deleted_parent_keeps_its_name() {
        let db = open_in_memory().unwrap();
        let parent = add(&db, "Same", None);
        let child = add(&db, "same", Some(&parent));
        db.write(|tx| groups::delete(tx, &parent)).unwrap();
        assert_eq!(
            group_rows(&db)[&child],
            (None, "same".into(), "same".into())
        );
    }

    #[test]
    fn renamed_child_skips_names_taken_at_the_destination_and_by_its_siblings() {
        let db = open_in_memory().unwrap();
        let middle = add(&db, "middle", None);
        add(&db, "A", None);
        add(&db, "a (2)", None);
        let clashing = add(&db, "a", Some(&middle));
        let sibling = add(&db, "A (3)", Some(&middle));
        db.write(|tx| groups::delete(tx, &middle)).unwrap();
        let rows = group_rows(&db);
        assert_eq!(rows[&clashing].1, "a (4)");
        assert_eq!(rows[&sibling].1, "A (3)");
    }

    #[test]
    fn delete_sets_updated_at_of_moved_rows_only() {
        let db = open_in_memory().unwrap();
        let top = add(&db, "top", None);
        let other = add(&db, "other", Some(&top));
        let middle = add(&db, "middle", Some(&top));
        let child = add(&db, "child", Some(&middle));
        add_host(&db, "h", Some(&middle));
        add_host(&db, "stays", Some(&other));
        // Every row was last changed long ago, so the moved ones' new stamp stands out.
        db.write(|tx| {
            tx.execute("UPDATE groups SET updated_at = ?1", [NOW])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        db.write(|tx| groups::delete(tx, &middle)).unwrap();
        let stamp = |sql: &str, id: &str| -> String {
            db.read(|conn| {
                conn.query_row(sql, [id], |row| row.get(0))
                    .map_err(StoreError::from)
            })
            .unwrap()
        };
        let group_stamp = "SELECT updated_at FROM groups WHERE id = ?1";
        let host_stamp = "SELECT updated_at FROM hosts WHERE id = ?1";
        assert!(stamp(group_stamp, &child).as_str() > NOW);
        assert!(stamp(host_stamp, "h").as_str() > NOW);
        assert_eq!(stamp(group_stamp, &other), NOW);
        assert_eq!(stamp(group_stamp, &top), NOW);
        assert_eq!(stamp(host_stamp, "stays"), NOW);
    }

    #[test]
    fn host_counts_follow_host_inserts_moves_and_deletes() {
        let db = open_in_memory().unwrap();
        let a = add(&db, "a", None);
        let b = add(&db, "b", Some(&a));
        add_host(&db, "h1", Some(&a));
        add_host(&db, "h2", Some(&a));
        add_host(&db, "h3", None);
        let counts = |db: &Db| -> Vec<(u64, u64)> {
            let forest = tree(db);
            let b_view = &forest[0].children[0];
            vec![
                (forest[0].host_count, forest[0].total_host_count),
                (b_view.host_count, b_view.total_host_count),
            ]
        };
        assert_eq!(counts(&db), [(2, 2), (0, 0)]);
        move_host(&db, "h1", Some(&b));
        move_host(&db, "h3", Some(&b));
        assert_eq!(counts(&db), [(1, 3), (2, 2)]);
        move_host(&db, "h3", Some(&b));
        move_host(&db, "h2", None);
        assert_eq!(counts(&db), [(0, 2), (2, 2)]);
        delete_host(&db, "h1");
        assert_eq!(counts(&db), [(0, 1), (1, 1)]);
        db.write(|tx| groups::delete(tx, &b)).unwrap();
        assert_eq!(tree(&db)[0].host_count, 1, "h3 went up to a with its count");
        let leftover: i64 = db
            .read(|conn| {
                conn.query_row(
                    "SELECT count(*) FROM group_host_counts WHERE group_id = ?1",
                    [&b],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)
            })
            .unwrap();
        assert_eq!(leftover, 0, "a deleted group's count row goes with it");
    }

    #[test]
    fn group_at_depth_32_is_placed_and_33_is_too_deep() {
        let db = open_in_memory().unwrap();
        let ids = chain(&db, MAX_DEPTH);
        let (_, placement) = try_add(&db, "too deep", ids.last().map(String::as_str)).unwrap();
        assert_eq!(placement, Placement::TooDeep);
        assert_eq!(group_rows(&db).len(), MAX_DEPTH);
    }

    #[test]
    fn move_that_would_push_a_subtree_past_depth_32_is_too_deep() {
        let db = open_in_memory().unwrap();
        let ids = chain(&db, MAX_DEPTH - 1);
        let pair_top = add(&db, "pair", None);
        add(&db, "below", Some(&pair_top));
        // Under level 30 the pair spans levels 31-32: allowed; under level 31 it would not be.
        assert_eq!(
            move_to(&db, &pair_top, Some(&ids[29])).unwrap(),
            Placement::Placed
        );
        assert_eq!(
            move_to(&db, &pair_top, Some(&ids[30])).unwrap(),
            Placement::TooDeep
        );
    }

    #[test]
    fn move_under_itself_or_a_descendant_is_refused_and_changes_nothing() {
        let db = open_in_memory().unwrap();
        let ids = chain(&db, 5);
        let before = group_rows(&db);
        for target in &ids {
            assert_eq!(
                move_to(&db, &ids[0], Some(target)).unwrap(),
                Placement::UnderItself,
                "target {target}"
            );
        }
        assert_eq!(group_rows(&db), before);
    }

    #[test]
    fn move_to_the_current_parent_is_not_a_clash_with_itself() {
        let db = open_in_memory().unwrap();
        let top = add(&db, "top", None);
        let child = add(&db, "child", Some(&top));
        assert_eq!(move_to(&db, &child, Some(&top)).unwrap(), Placement::Placed);
    }

    #[test]
    fn view_of_a_middle_group_holds_only_its_subtree() {
        let db = open_in_memory().unwrap();
        let ids = chain(&db, 4);
        add_host(&db, "h1", Some(&ids[0]));
        add_host(&db, "h3", Some(&ids[2]));
        add_host(&db, "h4", Some(&ids[3]));
        let view = db.read(|conn| groups::view(conn, &ids[1])).unwrap();
        assert_eq!((view.host_count, view.total_host_count), (0, 2));
        assert_eq!(view.parent_id.as_deref(), Some(ids[0].as_str()));
        assert_eq!(view.children[0].children[0].id, ids[3]);
    }

    #[test]
    fn view_of_unknown_group_is_group_not_found() {
        let db = open_in_memory().unwrap();
        let err = db.read(|conn| groups::view(conn, "nope")).unwrap_err();
        assert!(matches!(err, StoreError::GroupNotFound), "{err}");
    }

    /// Rows as a version-3 database or an outside tool holds them: no match key yet.
    fn insert_unkeyed(
        conn: &rusqlite::Connection,
        id: &str,
        parent: Option<&str>,
        name: &str,
        at: &str,
    ) {
        conn.execute(
            "INSERT INTO groups (id, parent_id, name, name_key, created_at, updated_at)
             VALUES (?1, ?2, ?3, lower(?3), ?4, ?4)",
            params![id, parent, name, at],
        )
        .unwrap();
    }

    #[test]
    fn filling_match_keys_renames_the_newer_of_two_siblings_that_now_clash() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        insert_unkeyed(&conn, "old", None, "Straße", NOW);
        insert_unkeyed(&conn, "new", None, "STRASSE", LATER);
        insert_unkeyed(&conn, "apart", Some("old"), "strasse", LATER);
        assert_eq!(groups::fill_fold_keys(&mut conn).unwrap(), 3);
        let names: HashMap<String, (String, String)> = conn
            .prepare("SELECT id, name, fold_key FROM groups")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(names["old"], ("Straße".to_owned(), "strasse".to_owned()));
        assert_eq!(
            names["new"],
            ("STRASSE (2)".to_owned(), "strasse (2)".to_owned())
        );
        assert_eq!(names["apart"], ("strasse".to_owned(), "strasse".to_owned()));
        assert_eq!(
            groups::fill_fold_keys(&mut conn).unwrap(),
            0,
            "nothing left to fill"
        );
    }

    #[test]
    fn a_sibling_name_equal_under_case_folding_is_a_duplicate() {
        let db = open_in_memory().unwrap();
        db.write(|tx| groups::insert(tx, "a", &new_group("Straße", None)))
            .unwrap();
        let clash = db.write(|tx| groups::insert(tx, "b", &new_group("STRASSE", None)));
        assert!(
            matches!(clash, Err(StoreError::DuplicateName(_))),
            "{clash:?}"
        );
        let elsewhere = db.write(|tx| groups::insert(tx, "c", &new_group("STRASSE", Some("a"))));
        assert_eq!(elsewhere.unwrap(), Placement::Placed);
    }
}
