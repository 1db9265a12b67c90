//! Builds the nested group tree from flat rows in one pass: children sorted by name
//! case-insensitively (then id), direct and total host counts.
//!
//! Invariants: pure, no I/O; every input group appears exactly once in the output, whatever
//! the input holds. A group whose parent is not among the input (an orphan, or the root of a
//! subtree) becomes a top-level item; a cycle, which the store never writes, is broken by
//! making one of its members top-level instead of looping or dropping groups.

use std::collections::{HashMap, HashSet};

use crate::model::group::{Group, GroupView};

/// Nests `groups` under their parents. `direct_counts` maps a group id to the number of hosts
/// directly in it; groups missing from it have none. Returns the top-level items, sorted.
pub fn build(mut groups: Vec<Group>, direct_counts: &HashMap<String, u64>) -> Vec<GroupView> {
    // docs/api.md, Groups: children sorted by name, case-insensitively; id breaks ties so the
    // order never depends on the query plan.
    groups.sort_unstable_by(|a, b| (&a.name_key, &a.id).cmp(&(&b.name_key, &b.id)));
    let count = groups.len();
    let parents = parent_indexes(&groups);

    // Indexes only from here on: positions in the sorted vector, so every list built in
    // index order is already sorted.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut roots = Vec::new();
    for (index, parent) in parents.iter().enumerate() {
        match parent {
            Some(parent) if *parent != index => children[*parent].push(index),
            _ => roots.push(index),
        }
    }

    let mut visited = vec![false; count];
    let mut attached: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut preorder = Vec::with_capacity(count);
    for &root in &roots {
        walk(root, &children, &mut visited, &mut attached, &mut preorder);
    }
    // Whatever is still unvisited sits in or below a cycle: make the cycle member above it
    // top-level, which places the rest of that cycle and everything below it.
    for index in 0..count {
        if !visited[index] {
            let entry = cycle_member_above(index, &parents);
            roots.push(entry);
            walk(entry, &children, &mut visited, &mut attached, &mut preorder);
        }
    }
    roots.sort_unstable();

    let mut rows: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    let mut views: Vec<Option<GroupView>> = vec![None; count];
    for &index in preorder.iter().rev() {
        let Some(group) = rows[index].take() else {
            continue;
        };
        let nested: Vec<GroupView> = attached[index]
            .iter()
            .filter_map(|&child| views[child].take())
            .collect();
        let host_count = direct_counts.get(&group.id).copied().unwrap_or(0);
        let total_host_count = nested.iter().fold(host_count, |sum, child| {
            sum.saturating_add(child.total_host_count)
        });
        views[index] = Some(GroupView {
            id: group.id,
            name: group.name,
            parent_id: group.parent_id,
            color: group.color,
            icon: group.icon,
            created_at: group.created_at,
            updated_at: group.updated_at,
            revision: group.revision,
            defaults: group.defaults,
            host_count,
            total_host_count,
            children: nested,
        });
    }
    roots
        .iter()
        .filter_map(|&root| views[root].take())
        .collect()
}

/// The position of each group's parent in `groups`, `None` for top level or unknown.
fn parent_indexes(groups: &[Group]) -> Vec<Option<usize>> {
    let positions: HashMap<&str, usize> = groups
        .iter()
        .enumerate()
        .map(|(index, group)| (group.id.as_str(), index))
        .collect();
    groups
        .iter()
        .map(|group| {
            group
                .parent_id
                .as_deref()
                .and_then(|parent| positions.get(parent).copied())
        })
        .collect()
}

/// Walks up from `start` (which no top-level group reaches, so its ancestors loop) to the
/// first group met twice: a member of the cycle.
fn cycle_member_above(start: usize, parents: &[Option<usize>]) -> usize {
    let mut seen = HashSet::new();
    let mut node = start;
    while seen.insert(node) {
        match parents[node] {
            Some(parent) => node = parent,
            None => return node,
        }
    }
    node
}

/// Depth-first from `start`, recording the preorder and which children each node keeps.
/// A child already visited (the way back into a cycle) is not attached twice.
fn walk(
    start: usize,
    children: &[Vec<usize>],
    visited: &mut [bool],
    attached: &mut [Vec<usize>],
    preorder: &mut Vec<usize>,
) {
    visited[start] = true;
    let mut stack = vec![start];
    while let Some(node) = stack.pop() {
        preorder.push(node);
        for &child in &children[node] {
            if !visited[child] {
                visited[child] = true;
                attached[node].push(child);
                stack.push(child);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use crate::model::group::{Group, GroupView};
    use crate::model::tree::build;

    fn group(id: &str, parent: Option<&str>, name: &str) -> Group {
        Group {
            id: id.into(),
            parent_id: parent.map(str::to_owned),
            name: name.into(),
            name_key: name.to_lowercase(),
            color: String::new(),
            icon: String::new(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            revision: 1,
            defaults: Default::default(),
        }
    }

    fn names(views: &[GroupView]) -> Vec<&str> {
        views.iter().map(|view| view.name.as_str()).collect()
    }

    fn count_nodes(views: &[GroupView]) -> usize {
        views
            .iter()
            .map(|view| 1 + count_nodes(&view.children))
            .sum()
    }

    #[test]
    fn siblings_sort_by_name_case_insensitively() {
        let tree = build(
            vec![
                group("1", None, "b"),
                group("2", None, "C"),
                group("3", None, "A"),
                group("4", Some("1"), "zeta"),
                group("5", Some("1"), "Alpha"),
            ],
            &HashMap::new(),
        );
        assert_eq!(names(&tree), ["A", "b", "C"]);
        assert_eq!(names(&tree[1].children), ["Alpha", "zeta"]);
    }

    #[test]
    fn equal_names_sort_by_id() {
        let tree = build(
            vec![group("b", None, "Same"), group("a", None, "same")],
            &HashMap::new(),
        );
        let ids: Vec<&str> = tree.iter().map(|view| view.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn leaf_has_empty_children_and_zero_counts() {
        let tree = build(vec![group("1", None, "solo")], &HashMap::new());
        assert!(tree[0].children.is_empty());
        assert_eq!((tree[0].host_count, tree[0].total_host_count), (0, 0));
        let json = serde_json::to_value(&tree[0]).unwrap();
        assert_eq!(json["children"], serde_json::json!([]));
        assert_eq!(json["parent_id"], serde_json::Value::Null);
    }

    #[test]
    fn totals_add_every_descendant_level() {
        // root(1) -> mid(2) -> leaf(4); root -> side(3)
        let counts: HashMap<String, u64> = [("1", 1), ("2", 10), ("3", 100), ("4", 1000)]
            .into_iter()
            .map(|(id, n)| (id.to_owned(), n))
            .collect();
        let tree = build(
            vec![
                group("4", Some("2"), "leaf"),
                group("3", Some("1"), "side"),
                group("2", Some("1"), "mid"),
                group("1", None, "root"),
            ],
            &counts,
        );
        let root = &tree[0];
        assert_eq!((root.host_count, root.total_host_count), (1, 1111));
        let mid = &root.children[0];
        assert_eq!((mid.name.as_str(), mid.total_host_count), ("mid", 1010));
        assert_eq!(mid.children[0].total_host_count, 1000);
        assert_eq!(root.children[1].total_host_count, 100);
    }

    #[test]
    fn counts_for_unknown_groups_are_ignored() {
        let counts: HashMap<String, u64> = [("ghost".to_owned(), 7)].into_iter().collect();
        let tree = build(vec![group("1", None, "a")], &counts);
        assert_eq!(tree[0].total_host_count, 0);
    }

    #[test]
    fn orphan_becomes_top_level_instead_of_vanishing() {
        let tree = build(
            vec![group("1", None, "a"), group("2", Some("missing"), "orphan")],
            &HashMap::new(),
        );
        assert_eq!(names(&tree), ["a", "orphan"]);
    }

    #[test]
    fn cycle_terminates_and_keeps_every_group() {
        // 1 -> 2 -> 3 -> 1, plus 4 below 3 and an unrelated top-level 5.
        let tree = build(
            vec![
                group("1", Some("3"), "one"),
                group("2", Some("1"), "two"),
                group("3", Some("2"), "three"),
                group("4", Some("3"), "four"),
                group("5", None, "five"),
                group("6", Some("6"), "self"),
            ],
            &HashMap::new(),
        );
        assert_eq!(count_nodes(&tree), 6);
        // Walking up from "four" (first unplaced in key order) meets the cycle at "three".
        assert_eq!(names(&tree), ["five", "self", "three"]);
        let three = &tree[2];
        assert_eq!(names(&three.children), ["four", "one"]);
        assert_eq!(names(&three.children[1].children), ["two"]);
        assert!(three.children[1].children[0].children.is_empty());
    }

    #[test]
    fn empty_input_gives_empty_tree() {
        assert!(build(Vec::new(), &HashMap::new()).is_empty());
    }
}
