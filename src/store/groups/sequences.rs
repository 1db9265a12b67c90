//! A property test of the groups store: seeded random creates, moves, renames, deletes
//! and host moves, after each of which the tree stays sound (no cycle, no group past
//! `MAX_DEPTH`, siblings' names distinct) and its counts match a recount.

#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};

use crate::fuzz::Rng;
use crate::model::group::{GroupPatch, GroupView, MAX_DEPTH};
use crate::model::name::Name;
use crate::store::groups::test_support::*;
use crate::store::groups::{self, Placement};
use crate::store::{open_in_memory, Db, StoreError};

/// Seeded random create / move / rename / delete / host-assign steps; after every step
/// the invariants hold and the tree's counts match a recount.
#[test]
fn random_sequences_keep_the_tree_sound_and_lose_nothing() {
    for seed in [0x9E37_79B9_7F4A_7C15_u64, 0xDEAD_BEEF_CAFE_F00D, 42] {
        run_sequence(seed, 300);
    }
}

const NAMES: [&str; 8] = ["a", "A", "b", "Web", "web", "a (2)", "db", "É"];
const HOSTS: usize = 60;

/// One random step against the groups as they are (`rows`, `ids` sorted).
struct Step<'a> {
    db: &'a Db,
    rng: &'a mut Rng,
    rows: &'a HashMap<String, (Option<String>, String, String)>,
    ids: &'a [String],
    context: &'a str,
}

fn run_sequence(seed: u64, steps: usize) {
    let db = open_in_memory().unwrap();
    let mut rng = Rng::new(seed);
    for index in 0..HOSTS {
        add_host(&db, &format!("host-{index}"), None);
    }
    for step in 0..steps {
        let rows = group_rows(&db);
        let mut ids: Vec<String> = rows.keys().cloned().collect();
        ids.sort();
        let context = format!("seed {seed:#x} step {step}");
        let kind = rng.below(10);
        let mut step_ = Step {
            db: &db,
            rng: &mut rng,
            rows: &rows,
            ids: &ids,
            context: &context,
        };
        let done = match kind {
            0..=3 => step_.create(),
            4..=5 => step_.move_group(),
            6 => step_.rename(),
            7..=8 => step_.delete(),
            _ => step_.move_host(),
        };
        if done.is_some() {
            check_invariants(&db, HOSTS, &format!("seed {seed:#x} after step {step}"));
        }
    }
}

impl Step<'_> {
    /// A group picked at random (`None`: there is none, and the step is skipped).
    fn pick(&mut self) -> Option<String> {
        self.rng.pick_any(self.ids).cloned()
    }

    fn create(&mut self) -> Option<()> {
        let name = NAMES[self.rng.below(NAMES.len())];
        let parent = self
            .rng
            .pick_any(self.ids)
            .filter(|_| self.rng.below(4) != 0)
            .cloned();
        match try_add(self.db, name, parent.as_deref()) {
            Ok(_) | Err(StoreError::DuplicateName(_)) => Some(()),
            Err(err) => panic!("{}: create failed: {err}", self.context),
        }
    }

    fn move_group(&mut self) -> Option<()> {
        let (id, context) = (self.pick()?, self.context);
        let target = self
            .rng
            .pick_any(self.ids)
            .filter(|_| self.rng.below(5) != 0)
            .cloned();
        let expect_under_itself = target
            .as_deref()
            .is_some_and(|target| is_ancestor_or_self(self.rows, &id, target));
        match move_to(self.db, &id, target.as_deref()) {
            Ok(Placement::UnderItself) => assert!(expect_under_itself, "{context}"),
            Ok(_) | Err(StoreError::DuplicateName(_)) => {
                assert!(!expect_under_itself, "{context}: cycle accepted")
            }
            Err(err) => panic!("{context}: move failed: {err}"),
        }
        Some(())
    }

    fn rename(&mut self) -> Option<()> {
        let id = self.pick()?;
        let patch = GroupPatch {
            name: Some(Name::from_text(NAMES[self.rng.below(NAMES.len())]).unwrap()),
            ..GroupPatch::default()
        };
        match self.db.write(|tx| groups::update(tx, &id, &patch)) {
            Ok(_) | Err(StoreError::DuplicateName(_)) => Some(()),
            Err(err) => panic!("{}: rename failed: {err}", self.context),
        }
    }

    /// A delete gives the group's children and hosts to its parent and loses nothing else.
    fn delete(&mut self) -> Option<()> {
        let (id, context, rows) = (self.pick()?, self.context, self.rows);
        let parent = rows[&id].0.clone();
        let children: Vec<&String> = rows
            .iter()
            .filter(|(_, row)| row.0.as_deref() == Some(id.as_str()))
            .map(|(child, _)| child)
            .collect();
        let hosts_before = host_groups(self.db);
        self.db.write(|tx| groups::delete(tx, &id)).unwrap();
        let after = group_rows(self.db);
        assert_eq!(after.len(), rows.len() - 1, "{context}");
        for child in children {
            assert_eq!(after[child].0, parent, "{context}: child not at the parent");
        }
        for (host, group) in host_groups(self.db) {
            let was_in_deleted = hosts_before[&host].as_deref() == Some(id.as_str());
            let expected = match was_in_deleted {
                true => parent.clone(),
                false => hosts_before[&host].clone(),
            };
            assert_eq!(group, expected, "{context}: host {host}");
        }
        Some(())
    }

    /// Host moves and re-creations drive every count trigger.
    fn move_host(&mut self) -> Option<()> {
        let host = format!("host-{}", self.rng.below(HOSTS));
        let group = self
            .rng
            .pick_any(self.ids)
            .filter(|_| self.rng.below(5) != 0)
            .cloned();
        if self.rng.below(2) == 0 {
            move_host(self.db, &host, group.as_deref());
        } else {
            delete_host(self.db, &host);
            add_host(self.db, &host, group.as_deref());
        }
        Some(())
    }
}

fn is_ancestor_or_self(
    rows: &HashMap<String, (Option<String>, String, String)>,
    ancestor: &str,
    start: &str,
) -> bool {
    let mut node = Some(start.to_owned());
    let mut steps = 0;
    while let Some(current) = node {
        if current == ancestor {
            return true;
        }
        steps += 1;
        assert!(steps <= rows.len(), "cycle in the parent chain");
        node = rows.get(&current).and_then(|row| row.0.clone());
    }
    false
}

fn check_invariants(db: &Db, hosts: usize, context: &str) {
    let rows = group_rows(db);
    let mut sibling_keys = HashSet::new();
    for (id, (parent, name, key)) in &rows {
        if let Some(parent) = parent {
            assert!(
                rows.contains_key(parent),
                "{context}: parent of {id} is missing"
            );
        }
        // No cycle, and no group deeper than MAX_DEPTH.
        let mut depth = 1;
        let mut node = parent.clone();
        while let Some(current) = node {
            assert_ne!(&current, id, "{context}: {id} is its own ancestor");
            depth += 1;
            assert!(
                depth <= MAX_DEPTH,
                "{context}: {id} is deeper than {MAX_DEPTH}"
            );
            node = rows[&current].0.clone();
        }
        assert_eq!(key, &name.to_lowercase(), "{context}");
        assert!(name.chars().count() <= 100, "{context}");
        assert!(
            sibling_keys.insert((parent.clone(), key.clone())),
            "{context}: two siblings named {key}"
        );
    }
    let host_rows = host_groups(db);
    assert_eq!(host_rows.len(), hosts, "{context}: a host was lost");
    for (host, group) in &host_rows {
        if let Some(group) = group {
            assert!(
                rows.contains_key(group),
                "{context}: {host} is in a missing group"
            );
        }
    }

    let forest = tree(db);
    let mut seen = HashSet::new();
    check_nodes(&forest, None, &rows, &host_rows, &mut seen, context);
    assert_eq!(
        seen.len(),
        rows.len(),
        "{context}: tree does not hold every group once"
    );
}

/// Checks each node against a recount; returns the total hosts below `views`.
fn check_nodes(
    views: &[GroupView],
    parent: Option<&str>,
    rows: &HashMap<String, (Option<String>, String, String)>,
    hosts: &HashMap<String, Option<String>>,
    seen: &mut HashSet<String>,
    context: &str,
) -> u64 {
    let mut total = 0;
    let mut previous: Option<(String, String)> = None;
    for view in views {
        assert!(seen.insert(view.id.clone()), "{context}: {} twice", view.id);
        assert_eq!(view.parent_id.as_deref(), parent, "{context}");
        let sort_key = (rows[&view.id].2.clone(), view.id.clone());
        if let Some(previous) = &previous {
            assert!(previous < &sort_key, "{context}: children out of order");
        }
        previous = Some(sort_key);
        let direct = hosts
            .values()
            .filter(|group| group.as_deref() == Some(view.id.as_str()))
            .count() as u64;
        assert_eq!(
            view.host_count, direct,
            "{context}: host_count of {}",
            view.id
        );
        let below = check_nodes(&view.children, Some(&view.id), rows, hosts, seen, context);
        assert_eq!(
            view.total_host_count,
            direct + below,
            "{context}: total of {}",
            view.id
        );
        total += direct + below;
    }
    total
}
