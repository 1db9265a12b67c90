//! Helpers the groups store's unit tests share: groups and hosts added, moved and read
//! back through the store or plain SQL.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::params;

use crate::model::group::{GroupPatch, GroupView, NewGroup};
use crate::model::name::Name;
use crate::store::groups::{self, Placement};
use crate::store::{Db, StoreError};

/// Stamps long past, so that a stamp the store chooses is always later.
pub const NOW: &str = "2000-01-01T00:00:00.000Z";
pub const LATER: &str = "2000-01-02T00:00:00.000Z";

pub fn new_group(name: &str, parent: Option<&str>) -> NewGroup {
    NewGroup {
        name: Name::from_text(name).unwrap(),
        parent_id: parent.map(str::to_owned),
        color: String::new(),
        icon: String::new(),
        defaults: None,
    }
}

/// A distinct id for each group a test adds: the store takes ids as the handlers give them.
pub fn next_id() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("00000000-0000-4000-8000-{n:012x}")
}

pub fn try_add(
    db: &Db,
    name: &str,
    parent: Option<&str>,
) -> Result<(String, Placement), StoreError> {
    let id = next_id();
    let placement = db.write(|tx| groups::insert(tx, &id, &new_group(name, parent)))?;
    Ok((id, placement))
}

pub fn add(db: &Db, name: &str, parent: Option<&str>) -> String {
    let (id, placement) = try_add(db, name, parent).unwrap();
    assert_eq!(placement, Placement::Placed);
    id
}

pub fn move_to(db: &Db, id: &str, parent: Option<&str>) -> Result<Placement, StoreError> {
    let patch = GroupPatch {
        parent_id: Some(parent.map(str::to_owned)),
        ..GroupPatch::default()
    };
    db.write(|tx| groups::update(tx, id, &patch))
}

pub fn add_host(db: &Db, id: &str, group: Option<&str>) {
    db.write(|tx| {
        tx.execute(
            "INSERT INTO hosts (id, name, name_key, hostname, port, username, auth_type,
                 group_id, created_at, updated_at)
             VALUES (?1, ?1, ?1, 'example.org', 22, 'root', 'agent', ?2, ?3, ?3)",
            params![id, group, NOW],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

pub fn delete_host(db: &Db, id: &str) {
    db.write(|tx| {
        tx.execute("DELETE FROM hosts WHERE id = ?1", params![id])?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

pub fn move_host(db: &Db, id: &str, group: Option<&str>) {
    db.write(|tx| {
        tx.execute(
            "UPDATE hosts SET group_id = ?2 WHERE id = ?1",
            params![id, group],
        )?;
        Ok::<_, StoreError>(())
    })
    .unwrap();
}

pub fn host_groups(db: &Db) -> HashMap<String, Option<String>> {
    db.read(|conn| {
        let mut statement = conn.prepare("SELECT id, group_id FROM hosts")?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<HashMap<_, _>, _>>()?;
        Ok::<_, StoreError>(rows)
    })
    .unwrap()
}

/// id -> (parent_id, name, name_key), straight from the table.
pub fn group_rows(db: &Db) -> HashMap<String, (Option<String>, String, String)> {
    db.read(|conn| {
        let mut statement = conn.prepare("SELECT id, parent_id, name, name_key FROM groups")?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get(0)?, (row.get(1)?, row.get(2)?, row.get(3)?)))
            })?
            .collect::<Result<HashMap<_, _>, _>>()?;
        Ok::<_, StoreError>(rows)
    })
    .unwrap()
}

pub fn tree(db: &Db) -> Vec<GroupView> {
    db.read(groups::tree).unwrap()
}

pub fn chain(db: &Db, levels: usize) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for level in 1..=levels {
        let id = add(
            db,
            &format!("level {level}"),
            ids.last().map(String::as_str),
        );
        ids.push(id);
    }
    ids
}
