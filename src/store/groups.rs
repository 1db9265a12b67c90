//! Group rows: the tree read, create, update (which covers move), and the delete that hands
//! hosts and child groups to the parent.
//!
//! Invariants: no write leaves a cycle, a group deeper than `MAX_DEPTH`, or two siblings
//! whose names compare equal case-insensitively; a delete never loses a host or a group.
//! Functions that write expect to run inside the caller's IMMEDIATE transaction
//! (`Db::write`), so every check and its write see the same rows.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::group::{free_name, Group, GroupPatch, GroupView, NewGroup, MAX_DEPTH};
use crate::model::tree;
use crate::store::StoreError;

const SELECT_ALL_GROUPS: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at FROM groups";

const SELECT_GROUP_BY_ID: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at FROM groups WHERE id = ?1";

const SELECT_CHILDREN: &str = "SELECT id, parent_id, name, name_key, color, icon, created_at,
     updated_at FROM groups WHERE parent_id = ?1 ORDER BY name_key, id";

/// The group `?1` and every group below it. `UNION` (not `UNION ALL`) stops on a repeated
/// id, so even a corrupt cycle cannot make this run forever.
const SELECT_SUBTREE: &str = "WITH RECURSIVE subtree(id) AS (
         SELECT id FROM groups WHERE id = ?1
         UNION
         SELECT groups.id FROM groups JOIN subtree ON groups.parent_id = subtree.id
     )
     SELECT g.id, g.parent_id, g.name, g.name_key, g.color, g.icon, g.created_at, g.updated_at
     FROM groups AS g JOIN subtree ON g.id = subtree.id";

/// Direct host counts, one row per non-empty group; walks the covering `hosts_by_group` index.
const COUNT_HOSTS_PER_GROUP: &str = "SELECT group_id, count(*) FROM hosts
     WHERE group_id IS NOT NULL GROUP BY group_id";

const COUNT_SUBTREE_HOSTS_PER_GROUP: &str = "WITH RECURSIVE subtree(id) AS (
         SELECT id FROM groups WHERE id = ?1
         UNION
         SELECT groups.id FROM groups JOIN subtree ON groups.parent_id = subtree.id
     )
     SELECT hosts.group_id, count(*) FROM subtree JOIN hosts ON hosts.group_id = subtree.id
     GROUP BY hosts.group_id";

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

/// Matches the expression of the `groups_sibling_name` unique index, so it is a lookup.
const SIBLING_NAME_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM groups
     WHERE coalesce(parent_id, '') = coalesce(?1, '') AND name_key = ?2 AND id <> ?3)";

const SELECT_SIBLING_KEYS: &str = "SELECT name_key FROM groups
     WHERE coalesce(parent_id, '') = coalesce(?1, '')";

const INSERT_GROUP: &str = "INSERT INTO groups
     (id, parent_id, name, name_key, color, icon, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)";

const UPDATE_GROUP: &str = "UPDATE groups SET parent_id = ?2, name = ?3, name_key = ?4,
     color = ?5, icon = ?6, updated_at = ?7 WHERE id = ?1";

const REPARENT_GROUP: &str = "UPDATE groups SET parent_id = ?2, name = ?3, name_key = ?4,
     updated_at = ?5 WHERE id = ?1";

const REPARENT_HOSTS: &str = "UPDATE hosts SET group_id = ?2, updated_at = ?3
     WHERE group_id = ?1";

const DELETE_GROUP: &str = "DELETE FROM groups WHERE id = ?1";

/// Whether a create or update could put the group where it asked to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Placed,
    /// The new parent is the group itself or one of its descendants.
    UnderItself,
    /// The group, or the deepest group below it, would sit deeper than `MAX_DEPTH`.
    TooDeep,
}

/// The whole forest: one query for the groups, one for the direct host counts.
pub fn tree(conn: &Connection) -> Result<Vec<GroupView>, StoreError> {
    let groups = query_groups(conn, SELECT_ALL_GROUPS, params![])?;
    let counts = query_counts(conn, COUNT_HOSTS_PER_GROUP, params![])?;
    Ok(tree::build(groups, &counts))
}

/// One group with its counts and its subtree. `GroupNotFound` when `id` is unknown.
pub fn view(conn: &Connection, id: &str) -> Result<GroupView, StoreError> {
    let groups = query_groups(conn, SELECT_SUBTREE, params![id])?;
    let counts = query_counts(conn, COUNT_SUBTREE_HOSTS_PER_GROUP, params![id])?;
    // The subtree's root is the only row whose parent is not in it, so it is the one item.
    tree::build(groups, &counts)
        .into_iter()
        .find(|view| view.id == id)
        .ok_or(StoreError::GroupNotFound)
}

/// One stored row. `GroupNotFound` when `id` is unknown (any text, UUID or not).
pub fn by_id(conn: &Connection, id: &str) -> Result<Group, StoreError> {
    conn.prepare_cached(SELECT_GROUP_BY_ID)?
        .query_row(params![id], group_from_row)
        .optional()?
        .ok_or(StoreError::GroupNotFound)
}

/// Inserts a new group `id`. Errors: `GroupNotFound` for an unknown parent, `DuplicateName`
/// for a sibling with the same name; `TooDeep` when the parent is at `MAX_DEPTH`.
pub fn insert(
    conn: &Connection,
    id: &str,
    group: &NewGroup,
    now: &str,
) -> Result<Placement, StoreError> {
    if let Some(parent) = group.parent_id.as_deref() {
        by_id(conn, parent)?;
        let (parent_depth, _) = walk_ancestors(conn, parent, id)?;
        // MAX_DEPTH (model::group): the new group sits one level below its parent.
        if parent_depth + 1 > MAX_DEPTH {
            return Ok(Placement::TooDeep);
        }
    }
    ensure_name_free(conn, group.parent_id.as_deref(), group.name.key(), id)?;
    conn.execute(
        INSERT_GROUP,
        params![
            id,
            group.parent_id,
            group.name.as_str(),
            group.name.key(),
            group.color,
            group.icon,
            now
        ],
    )?;
    Ok(Placement::Placed)
}

/// Applies `patch` to group `id`; a new `parent_id` moves it, with the same checks as a move.
/// Errors in this order: `GroupNotFound` (the group, then the new parent), then the
/// placement (`UnderItself`, `TooDeep`), then `DuplicateName` at the destination.
pub fn update(
    conn: &Connection,
    id: &str,
    patch: &GroupPatch,
    now: &str,
) -> Result<Placement, StoreError> {
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
    let (name, name_key) = match &patch.name {
        Some(name) => (name.as_str(), name.key()),
        None => (current.name.as_str(), current.name_key.as_str()),
    };
    ensure_name_free(conn, parent_id.as_deref(), name_key, id)?;
    let color = patch.color.as_deref().unwrap_or(&current.color);
    let icon = patch.icon.as_deref().unwrap_or(&current.icon);
    conn.execute(
        UPDATE_GROUP,
        params![id, parent_id, name, name_key, color, icon, now],
    )?;
    Ok(Placement::Placed)
}

/// Deletes group `id` and gives its hosts and child groups to its parent (or makes them
/// ungrouped / top-level). A child whose name clashes at the destination is renamed
/// `name (2)`, `name (3)`, ... Every moved row gets `updated_at = now`.
/// Must run inside the caller's transaction: it defers foreign keys until that commit.
pub fn delete(conn: &Connection, id: &str, now: &str) -> Result<(), StoreError> {
    let group = by_id(conn, id)?;
    let destination = group.parent_id.as_deref();
    let children = query_groups(conn, SELECT_CHILDREN, params![id])?;

    // The group row goes first, so a child named like it does not clash with it; the
    // references to it are repaired below, before the commit checks them.
    conn.pragma_update(None, "defer_foreign_keys", true)?;
    conn.execute(DELETE_GROUP, params![id])?;

    let mut taken = sibling_keys(conn, destination)?;
    let clashes: Vec<bool> = children
        .iter()
        .map(|child| taken.contains(&child.name_key))
        .collect();
    // Children keep their names unless they clash, so a renamed child must not take the
    // name of one that moves along unchanged.
    taken.extend(children.iter().map(|child| child.name_key.clone()));
    for (child, clashes) in children.iter().zip(clashes) {
        // api-decisions §4: a child whose name clashes at the destination gets " (2)", ...
        let (name, name_key) = if clashes {
            let renamed = free_name(&child.name, &taken);
            taken.insert(renamed.key().to_owned());
            (renamed.as_str().to_owned(), renamed.key().to_owned())
        } else {
            (child.name.clone(), child.name_key.clone())
        };
        conn.execute(
            REPARENT_GROUP,
            params![child.id, destination, name, name_key, now],
        )?;
    }
    // api-decisions §4 and the spec: hosts move to the parent, or become ungrouped.
    conn.execute(REPARENT_HOSTS, params![id, destination, now])?;
    Ok(())
}

/// Whether `id` may move under `parent`: not under itself or a descendant, not too deep.
fn check_placement(conn: &Connection, id: &str, parent: &str) -> Result<Placement, StoreError> {
    let (parent_depth, is_ancestor) = walk_ancestors(conn, parent, id)?;
    // api-decisions §4: under itself or any descendant is refused.
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

/// `DuplicateName` when a sibling under `parent` other than `id` has this key.
fn ensure_name_free(
    conn: &Connection,
    parent: Option<&str>,
    name_key: &str,
    id: &str,
) -> Result<(), StoreError> {
    // api-decisions §4: unique among siblings, compared case-insensitively (name_key).
    let taken: bool = conn
        .prepare_cached(SIBLING_NAME_TAKEN)?
        .query_row(params![parent, name_key, id], |row| row.get(0))?;
    if taken {
        return Err(StoreError::DuplicateName(
            "another group under the same parent already has this name (names compare case-insensitively)"
                .into(),
        ));
    }
    Ok(())
}

fn sibling_keys(conn: &Connection, parent: Option<&str>) -> Result<HashSet<String>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_SIBLING_KEYS)?;
    let keys = statement
        .query_map(params![parent], |row| row.get(0))?
        .collect::<Result<HashSet<String>, _>>()?;
    Ok(keys)
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
    })
}
