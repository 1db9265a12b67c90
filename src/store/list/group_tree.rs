//! The group tree of `GET /api/groups`, kept in the list's memory between requests and
//! rendered for every request (docs/api.md, API: Groups).
//!
//! Each group's row and JSON head (its stored fields, serialized once) are patched from the
//! groups' change log (store::groups `take_changed`) when the list's memory is brought to
//! the connection's state (store::list, the one freshness check); the tree's shape is
//! worked out again after any group change, and the host counts come from the hosts'
//! member sets for each request, so no answer is ever kept.
//!
//! Invariants: the body equals the serialized `model::tree::build` of the stored groups and
//! counts (tests below): children sorted by name key then id, every group exactly once. A
//! shape the fast path cannot place (a cycle, which the store never writes) comes from
//! `tree::build` itself.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::model::group::{Group, GroupView, MAX_DEPTH};
use crate::model::tree;
use crate::store::StoreError;

/// The groups kept between requests.
#[derive(Default)]
pub struct GroupTree {
    /// Whether every group was read (else `refresh` reads them all).
    read: bool,
    pub(super) entries: Vec<Entry>,
    /// Entry by group id.
    index: HashMap<String, usize>,
    /// Entries by name key, then id: the order of siblings.
    sorted: Vec<usize>,
    /// The entries in tree order (each parent before its sorted children), `None` after a
    /// change.
    pub(super) shape: Option<Vec<Node>>,
}

pub(super) struct Entry {
    pub(super) group: Group,
    /// Its view's JSON up to the counts.
    pub(super) head: String,
}

/// A group in the shape, and where its subtree ends in the shape.
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub(super) entry: usize,
    pub(super) end: usize,
}

/// No entry.
const NONE: usize = usize::MAX;

impl GroupTree {
    /// Brings the rows and the shape to the connection's state: every group when none was
    /// read, then what the groups' log holds (emptying it). The caller (store::list) drops
    /// the tree after another connection's commit.
    pub fn refresh(&mut self, conn: &Connection) -> Result<(), StoreError> {
        if !self.read {
            for group in crate::store::groups::all(conn)? {
                self.put(group)?;
            }
            self.read = true;
        }
        for (id, group) in crate::store::groups::take_changed(conn)? {
            match group {
                Some(group) => self.put(group)?,
                None => self.remove(&id),
            }
        }
        if self.shape.is_none() {
            self.shape = Some(self.shaped().unwrap_or_else(|| self.built()));
        }
        Ok(())
    }

    /// Every group kept, in no order.
    pub fn groups(&self) -> impl Iterator<Item = &Group> {
        self.entries.iter().map(|entry| &entry.group)
    }

    /// The ids of the groups at the path `keys` from the top (caseless name keys, as
    /// `model::fold::key` gives them) and of every group below them: what `group:` of the
    /// query language selects (docs/query.md). A walk up stops after `MAX_DEPTH` levels.
    pub fn at_path_and_below(&self, keys: &[String]) -> Vec<&str> {
        let mut found = Vec::new();
        for entry in &self.entries {
            let mut path = vec![crate::model::fold::key(&entry.group.name)];
            let mut parent = entry.group.parent_id.as_deref();
            while let Some(id) = parent.filter(|_| path.len() <= MAX_DEPTH) {
                let Some(above) = self.index.get(id).map(|at| &self.entries[*at].group) else {
                    break;
                };
                path.push(crate::model::fold::key(&above.name));
                parent = above.parent_id.as_deref();
            }
            path.reverse();
            if parent.is_none() && path.len() >= keys.len() && path[..keys.len()] == *keys {
                found.push(entry.group.id.as_str());
            }
        }
        found
    }

    /// Keeps a group's row and serializes its head: its view's JSON up to the counts.
    fn put(&mut self, group: Group) -> Result<(), StoreError> {
        let view = GroupView {
            id: group.id.clone(),
            name: group.name.clone(),
            parent_id: group.parent_id.clone(),
            color: group.color.clone(),
            icon: group.icon.clone(),
            created_at: group.created_at.clone(),
            updated_at: group.updated_at.clone(),
            revision: group.revision,
            defaults: group.defaults.clone(),
            host_count: 0,
            total_host_count: 0,
            children: Vec::new(),
        };
        let json = serde_json::to_string(&view).map_err(|err| StoreError::Json(err.to_string()))?;
        let head = json
            .strip_suffix(r#""host_count":0,"total_host_count":0,"children":[]}"#)
            .ok_or_else(|| {
                StoreError::BrokenInvariant("a group view serialized in another shape".into())
            })?
            .to_owned();
        self.remove(&group.id);
        let entry = self.entries.len();
        let at = self.sorted.partition_point(|other| {
            let other = &self.entries[*other].group;
            (&other.name_key, &other.id) < (&group.name_key, &group.id)
        });
        self.sorted.insert(at, entry);
        self.index.insert(group.id.clone(), entry);
        self.entries.push(Entry { group, head });
        self.shape = None;
        Ok(())
    }

    /// Forgets a group (nothing when it is not kept).
    fn remove(&mut self, id: &str) {
        let Some(entry) = self.index.remove(id) else {
            return;
        };
        self.sorted.retain(|kept| *kept != entry);
        // The last entry takes the removed one's place.
        let last = self.entries.len() - 1;
        self.entries.swap_remove(entry);
        if entry != last {
            self.index
                .insert(self.entries[entry].group.id.clone(), entry);
            self.sorted
                .iter_mut()
                .filter(|kept| **kept == last)
                .for_each(|kept| *kept = entry);
        }
        self.shape = None;
    }

    /// The shape from the kept order: children listed by walking the sorted entries,
    /// parents first from the top. `None` when some group is not reached from the top (a
    /// cycle).
    fn shaped(&self) -> Option<Vec<Node>> {
        let count = self.entries.len();
        let (mut first_child, mut next_sibling) = (vec![NONE; count], vec![NONE; count]);
        let mut roots = Vec::new();
        for &entry in self.sorted.iter().rev() {
            let parent = self.entries[entry].group.parent_id.as_ref();
            match parent.and_then(|id| self.index.get(id)) {
                Some(&parent) if parent != entry => {
                    next_sibling[entry] = first_child[parent];
                    first_child[parent] = entry;
                }
                // Top level, or an unknown parent (tree::build places those at the top too).
                _ => roots.push(entry),
            }
        }
        let mut shape: Vec<Node> = Vec::with_capacity(count);
        for &root in roots.iter().rev() {
            let mut pending = vec![(root, shape.len())];
            // Depth first: a node, then each child's subtree, then the node's end.
            while let Some((entry, at)) = pending.pop() {
                if entry == NONE {
                    shape[at].end = shape.len();
                    continue;
                }
                pending.push((NONE, shape.len()));
                shape.push(Node { entry, end: 0 });
                let mut children = Vec::new();
                let mut child = first_child[entry];
                while child != NONE {
                    children.push(child);
                    child = next_sibling[child];
                }
                pending.extend(children.into_iter().rev().map(|child| (child, 0)));
            }
        }
        (shape.len() == count).then_some(shape)
    }

    /// The shape as `tree::build` nests the groups, for what `shaped` cannot place.
    fn built(&self) -> Vec<Node> {
        let bare = self.entries.iter().map(|entry| Group {
            id: entry.group.id.clone(),
            parent_id: entry.group.parent_id.clone(),
            name: String::new(),
            name_key: entry.group.name_key.clone(),
            color: String::new(),
            icon: String::new(),
            created_at: String::new(),
            updated_at: String::new(),
            revision: 0,
            defaults: Default::default(),
        });
        let mut shape = Vec::with_capacity(self.entries.len());
        self.flatten(tree::build(bare.collect(), &HashMap::new()), &mut shape);
        shape
    }

    /// Appends `views` and their subtrees in tree order.
    fn flatten(&self, views: Vec<GroupView>, shape: &mut Vec<Node>) {
        for view in views {
            let Some(&entry) = self.index.get(&view.id) else {
                continue;
            };
            let at = shape.len();
            shape.push(Node { entry, end: 0 });
            self.flatten(view.children, shape);
            shape[at].end = shape.len();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use crate::model::group::{GroupPatch, NewGroup};
    use crate::model::name::Name;
    use crate::store::{self, Db, StoreError};

    const NOW: &str = "2024-01-01T00:00:00.000Z";

    fn add(db: &Db, id: &str, name: &str, parent: Option<&str>) {
        let group = NewGroup {
            name: Name::from_text(name).unwrap(),
            parent_id: parent.map(str::to_owned),
            color: String::new(),
            icon: String::new(),
            defaults: None,
        };
        db.write(|tx| store::groups::insert(tx, id, &group))
            .unwrap();
    }

    fn host_in(db: &Db, seq: i64, group: &str) {
        db.write(|tx| {
            tx.execute(
                "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, \
                 auth_type, group_id, created_at, updated_at) \
                 VALUES (?1, 'h' || ?1, 'h', 'h', 'h', 22, 'u', 'agent', ?2, ?3, ?3)",
                rusqlite::params![seq, group, NOW],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    /// Asserts that the rendered body is the serialized tree `store::groups::tree` builds
    /// from SQL (rows and trigger-kept counts).
    fn assert_renders_the_sql_tree(db: &Db) {
        db.read_list(|conn, memory| {
            let body: Value = serde_json::from_slice(&memory.group_tree(conn)?).unwrap();
            let oracle = json!({ "items": store::groups::tree(conn)? });
            assert_eq!(body, oracle);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    /// Renames that reorder siblings, moves, creates, deletes (children moving up) and
    /// host changes each show in the next body, which equals the tree built from SQL.
    #[test]
    fn the_rendered_tree_equals_the_tree_built_from_sql_after_every_kind_of_change() {
        let db = store::open_in_memory().unwrap();
        assert_renders_the_sql_tree(&db);
        add(&db, "a", "Alpha", None);
        add(&db, "b", "beta", None);
        add(&db, "c", "Charlie", Some("a"));
        add(&db, "d", "delta", Some("a"));
        add(&db, "e", "Echo", Some("c"));
        host_in(&db, 1, "e");
        host_in(&db, 2, "a");
        assert_renders_the_sql_tree(&db);
        let rename = GroupPatch {
            name: Some(Name::from_text("aaa").unwrap()),
            ..GroupPatch::default()
        };
        db.write(|tx| store::groups::update(tx, "d", &rename))
            .unwrap();
        assert_renders_the_sql_tree(&db);
        let to_top = GroupPatch {
            parent_id: Some(None),
            color: Some("#112233".into()),
            ..GroupPatch::default()
        };
        db.write(|tx| store::groups::update(tx, "c", &to_top))
            .unwrap();
        host_in(&db, 3, "c");
        assert_renders_the_sql_tree(&db);
        db.write(|tx| store::groups::delete(tx, "c")).unwrap();
        add(&db, "f", "Foxtrot \"quoted\"", Some("e"));
        assert_renders_the_sql_tree(&db);
        db.write(|tx| store::groups::delete(tx, "a")).unwrap();
        assert_renders_the_sql_tree(&db);
    }

    /// Groups the store never writes, through plain SQL: a parent that does not exist puts
    /// a group at the top, and a cycle is placed as `tree::build` places it.
    #[test]
    fn orphans_and_cycles_render_as_the_tree_built_from_sql() {
        let db = store::open_in_memory().unwrap();
        add(&db, "a", "a", None);
        add(&db, "b", "b", Some("a"));
        add(&db, "c", "c", Some("b"));
        assert_renders_the_sql_tree(&db);
        db.read(|conn| {
            conn.execute_batch(
                "PRAGMA foreign_keys = OFF;
                 UPDATE groups SET parent_id = 'c' WHERE id = 'a';
                 INSERT INTO groups (id, parent_id, name, name_key, created_at, updated_at)
                     VALUES ('o', 'missing', 'orphan', 'orphan', 't', 't');
                 PRAGMA foreign_keys = ON;",
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_renders_the_sql_tree(&db);
    }
}
