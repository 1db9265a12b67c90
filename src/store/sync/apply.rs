//! A merge's outcome written to the catalogue (docs/sync.md, "Applying a merge"): each
//! changed record upserted by id or deleted, in the caller's one transaction, foreign keys
//! checked at its commit; then the references a merge can leave dangling (a host in a group
//! another device deleted) cleared, and group cycles (two devices each moving one group
//! under the other) broken.
//!
//! Invariants: a record that cannot be written (a value of the wrong type, a constraint)
//! is rolled back alone (a savepoint each) and answered as unapplied, never half written;
//! every clash is settled the same way on every device (the smaller id keeps a name or a
//! unique value), so devices converge; each write sets `updated_at`, so the change log,
//! revisions and the list's memory follow as for any edit (their triggers).

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use serde_json::Value;

use crate::model::identity::literal_slot;
use crate::model::name::Name;
use crate::model::sync::record::RecordKey;
use crate::store::sync::kinds::{self, Kind, Naming, ANSWER_PREFIX, ENV_PREFIX, METHOD_PASSWORD};
use crate::store::sync::project::Fields;
use crate::store::{next_updated_at, now_timestamp, StoreError};

/// One record to write: its fields (secret fields apart) or `None` to delete it, and its
/// secret fields sealed by the vault (an absent one is none).
pub struct Incoming {
    pub key: RecordKey,
    pub fields: Option<Fields>,
    pub sealed: BTreeMap<String, Vec<u8>>,
}

/// What `apply` did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Records written (upserted or deleted).
    pub applied: Vec<RecordKey>,
    /// Records not written, with why (the catalogue keeps what it had).
    pub unapplied: Vec<(RecordKey, String)>,
    /// Whether applying settled a clash here (renamed a row, cleared a reference, broke a
    /// cycle): then the catalogue differs from the merged records, and the difference is
    /// this device's change to stamp.
    pub settled: bool,
}

/// Writes `incoming` (kinds in `kinds::KINDS` order) and tidies the references. Caller holds
/// the write transaction.
pub fn apply(conn: &Connection, incoming: &[Incoming]) -> Result<Outcome, StoreError> {
    conn.execute_batch("PRAGMA defer_foreign_keys = ON")?;
    let mut outcome = Outcome::default();
    let mut remaps = Vec::new();
    let columns = ColumnTypes::read(conn)?;
    for kind in kinds::KINDS {
        for record in incoming.iter().filter(|record| record.key.0 == kind.kind) {
            conn.execute_batch("SAVEPOINT sync_record")?;
            let written = match &record.fields {
                None => delete(conn, kind, &record.key.1),
                Some(fields) => upsert(
                    conn,
                    kind,
                    record,
                    fields,
                    &columns,
                    &mut remaps,
                    &mut outcome.settled,
                ),
            };
            match written {
                Ok(Written::Done) => {
                    conn.execute_batch("RELEASE sync_record")?;
                    outcome.applied.push(record.key.clone());
                }
                Ok(Written::Displaced(other, why)) => {
                    conn.execute_batch("RELEASE sync_record")?;
                    outcome.applied.push(record.key.clone());
                    outcome.unapplied.push(((kind.kind.to_owned(), other), why));
                }
                Ok(Written::Refused(why)) => {
                    conn.execute_batch("ROLLBACK TO sync_record; RELEASE sync_record")?;
                    outcome.unapplied.push((record.key.clone(), why));
                }
                Err(StoreError::Sqlite(why)) => {
                    conn.execute_batch("ROLLBACK TO sync_record; RELEASE sync_record")?;
                    outcome.unapplied.push((record.key.clone(), why));
                }
                Err(err) => return Err(err),
            }
        }
    }
    let before: i64 = conn.query_row("SELECT total_changes()", [], |row| row.get(0))?;
    tidy(conn, &remaps)?;
    let after: i64 = conn.query_row("SELECT total_changes()", [], |row| row.get(0))?;
    outcome.settled |= after != before;
    Ok(outcome)
}

enum Written {
    Done,
    /// Written, and the row with this id (the same key or entry) was taken out for it.
    Displaced(String, String),
    /// Not written: why.
    Refused(String),
}

fn delete(conn: &Connection, kind: &Kind, id: &str) -> Result<Written, StoreError> {
    conn.prepare_cached(&format!("DELETE FROM {} WHERE id = ?1", kind.table))?
        .execute([id])?;
    Ok(Written::Done)
}

/// The declared type of every column of the synced tables.
struct ColumnTypes(HashMap<(String, String), String>);

impl ColumnTypes {
    fn read(conn: &Connection) -> Result<ColumnTypes, StoreError> {
        let mut types = HashMap::new();
        for kind in kinds::KINDS {
            let mut statement = conn.prepare("SELECT name, type FROM pragma_table_info(?1)")?;
            let mut rows = statement.query([kind.table])?;
            while let Some(row) = rows.next()? {
                let name: String = row.get(0)?;
                let declared: String = row.get(1)?;
                types.insert((kind.table.to_owned(), name), declared.to_uppercase());
            }
        }
        Ok(ColumnTypes(types))
    }

    /// The field's value as the column takes it, or why it does not fit.
    fn value(&self, table: &str, column: &str, value: &Value) -> Result<Sql, String> {
        let declared = self
            .0
            .get(&(table.to_owned(), column.to_owned()))
            .map(String::as_str)
            .unwrap_or("");
        match (value, declared) {
            (Value::Null, _) => Ok(Sql::Null),
            (Value::String(text), "TEXT") => Ok(Sql::Text(text.clone())),
            (Value::Number(n), "INTEGER") if n.is_i64() => {
                Ok(Sql::Integer(n.as_i64().unwrap_or(0)))
            }
            (Value::Bool(b), "INTEGER") => Ok(Sql::Integer(i64::from(*b))),
            _ => Err(format!(
                "{column}: a value of the wrong type for this catalogue"
            )),
        }
    }
}

fn text_field<'f>(fields: &'f Fields, name: &str) -> Option<&'f str> {
    fields.get(name).and_then(Value::as_str)
}

fn upsert(
    conn: &Connection,
    kind: &Kind,
    record: &Incoming,
    fields: &Fields,
    columns: &ColumnTypes,
    remaps: &mut Vec<(String, String)>,
    settled: &mut bool,
) -> Result<Written, StoreError> {
    let id = &record.key.1;
    let mut names: Vec<&str> = Vec::new();
    let mut values: Vec<Sql> = Vec::new();
    // A field the record does not hold (written by a build before the column existed) is
    // left out: a new row takes the column's default, an existing one keeps its value.
    for field in kind
        .fields
        .iter()
        .filter(|field| fields.contains_key(**field))
    {
        let value = fields.get(*field).unwrap_or(&Value::Null);
        match columns.value(kind.table, field, value) {
            Ok(value) => values.push(value),
            Err(why) => return Ok(Written::Refused(why)),
        }
        names.push(field);
    }
    for secret in kind.secrets {
        names.push(secret.column);
        values.push(match record.sealed.get(secret.column) {
            Some(bytes) => Sql::Blob(bytes.clone()),
            None => Sql::Null,
        });
    }
    let mut displaced = None;
    if !kind.unique.is_empty() {
        match unique_clash(conn, kind, id, fields)? {
            Clash::None => {}
            Clash::Keep(other) => {
                remaps.push((id.clone(), other.clone()));
                return Ok(Written::Refused(format!(
                    "the same {} as {other}",
                    kind.kind
                )));
            }
            Clash::Displace(other) => {
                delete(conn, kind, &other)?;
                remaps.push((other.clone(), id.clone()));
                displaced = Some((other, format!("the same {} as {id}", kind.kind)));
            }
        }
    }
    if kind.naming != Naming::None {
        let Some(text) = text_field(fields, "name") else {
            return Ok(Written::Refused("name: missing".into()));
        };
        let name = match named(conn, kind, id, text, fields, settled)? {
            Ok(name) => name,
            Err(why) => return Ok(Written::Refused(why)),
        };
        match names.iter().position(|n| *n == "name") {
            Some(at) => values[at] = Sql::Text(name.as_str().to_owned()),
            None => return Ok(Written::Refused("name: missing".into())),
        }
        if name.as_str() != text {
            *settled = true;
        }
        names.push("name_key");
        values.push(Sql::Text(name.key().to_owned()));
        if kind.naming != Naming::Sorted {
            names.push("fold_key");
            values.push(Sql::Text(name.fold_key().to_owned()));
        }
    }
    if kind.has_updated_at {
        names.push("updated_at");
        values.push(Sql::Text(next_stamp(conn, kind, id)?));
    }
    write_row(conn, kind, id, &names, values)?;
    write_children(conn, kind, record, fields)?;
    Ok(match displaced {
        Some((other, why)) => Written::Displaced(other, why),
        None => Written::Done,
    })
}

/// The `updated_at` of a write: later than the row's own, when it has one.
fn next_stamp(conn: &Connection, kind: &Kind, id: &str) -> Result<String, StoreError> {
    let previous: Option<String> = conn
        .prepare_cached(&format!(
            "SELECT updated_at FROM {} WHERE id = ?1",
            kind.table
        ))?
        .query_row([id], |row| row.get(0))
        .optional()?;
    Ok(match previous {
        Some(previous) => next_updated_at(&previous),
        None => now_timestamp(),
    })
}

/// An UPDATE of the row by id, else an INSERT. (Not an UPSERT: an outer `ON CONFLICT`
/// overrides the `OR IGNORE` of the list's temp triggers, which then fail.)
fn write_row(
    conn: &Connection,
    kind: &Kind,
    id: &str,
    names: &[&str],
    mut values: Vec<Sql>,
) -> Result<(), StoreError> {
    let sets: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(index, name)| format!("{name} = ?{}", index + 2))
        .collect();
    let update = format!(
        "UPDATE {} SET {} WHERE id = ?1",
        kind.table,
        sets.join(", ")
    );
    let mut all = Vec::with_capacity(values.len() + 2);
    all.push(Sql::Text(id.to_owned()));
    all.extend(values.iter().cloned());
    if conn
        .prepare_cached(&update)?
        .execute(params_from_iter(&all))?
        > 0
    {
        return Ok(());
    }
    let mut insert_names = names.to_vec();
    if kind.kind == "host_key" {
        // A host key's last_seen is this device's own; a new entry starts at its first_seen.
        insert_names.push("last_seen");
        let first_seen = names.iter().position(|n| *n == "first_seen");
        values.push(first_seen.map_or(Sql::Null, |at| values[at].clone()));
        all.push(values[values.len() - 1].clone());
    }
    let placeholders: Vec<String> = (2..=insert_names.len() + 1)
        .map(|n| format!("?{n}"))
        .collect();
    let insert = format!(
        "INSERT INTO {} (id, {}) VALUES (?1, {})",
        kind.table,
        insert_names.join(", "),
        placeholders.join(", "),
    );
    conn.prepare_cached(&insert)?
        .execute(params_from_iter(all))?;
    Ok(())
}

enum Clash {
    None,
    /// Another row holds the same unique value and keeps it (its id is smaller).
    Keep(String),
    /// Another row holds it and gives way (this id is smaller).
    Displace(String),
}

fn unique_clash(
    conn: &Connection,
    kind: &Kind,
    id: &str,
    fields: &Fields,
) -> Result<Clash, StoreError> {
    let wheres: Vec<String> = kind
        .unique
        .iter()
        .enumerate()
        .map(|(index, column)| format!("{column} = ?{}", index + 2))
        .collect();
    let sql = format!(
        "SELECT id FROM {} WHERE id <> ?1 AND {}",
        kind.table,
        wheres.join(" AND ")
    );
    let mut values = vec![Sql::Text(id.to_owned())];
    for column in kind.unique {
        values.push(match fields.get(*column) {
            Some(Value::String(text)) => Sql::Text(text.clone()),
            _ => Sql::Null,
        });
    }
    let other: Option<String> = conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(values), |row| row.get(0))
        .optional()?;
    Ok(match other {
        None => Clash::None,
        Some(other) if other.as_str() < id => Clash::Keep(other),
        Some(other) => Clash::Displace(other),
    })
}

/// The name the record is written with: its own, unless another row in its scope holds it
/// caselessly; then the row with the smaller id keeps it and the other takes `name (2)`...
/// (an existing row that gives way is renamed here).
fn named(
    conn: &Connection,
    kind: &Kind,
    id: &str,
    text: &str,
    fields: &Fields,
    settled: &mut bool,
) -> Result<Result<Name, String>, StoreError> {
    let name = match Name::from_text(text) {
        Ok(name) => name,
        Err(_) => return Ok(Err("name: not a valid name".into())),
    };
    if kind.naming == Naming::Sorted {
        return Ok(Ok(name));
    }
    let scope = match kind.naming {
        Naming::UniqueAmongSiblings => " AND coalesce(parent_id, '') = coalesce(?2, '')",
        _ => " AND ?2 IS ?2",
    };
    let parent = text_field(fields, "parent_id").map(str::to_owned);
    let sql = format!(
        "SELECT id, name, fold_key FROM {} WHERE id <> ?1{scope}",
        kind.table
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![id, parent], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, Option<String>>(2)?.unwrap_or_default(),
        ))
    })?;
    let others: Vec<(String, String, String)> = rows.collect::<Result<_, _>>()?;
    let mut taken: HashSet<String> = others.iter().map(|(_, _, fold)| fold.clone()).collect();
    let Some((holder, holder_name, _)) = others.iter().find(|(_, _, fold)| fold == name.fold_key())
    else {
        return Ok(Ok(name));
    };
    if holder.as_str() < id {
        return Ok(Ok(Name::free(name.as_str(), &taken)));
    }
    taken.insert(name.fold_key().to_owned());
    let renamed = Name::free(holder_name, &taken);
    *settled = true;
    let stamp = next_stamp(conn, kind, holder)?;
    conn.prepare_cached(&format!(
        "UPDATE {} SET name = ?2, name_key = ?3, fold_key = ?4, updated_at = ?5 WHERE id = ?1",
        kind.table
    ))?
    .execute(params![
        holder,
        renamed.as_str(),
        renamed.key(),
        renamed.fold_key(),
        stamp
    ])?;
    Ok(Ok(name))
}

fn array<'f>(fields: &'f Fields, name: &str) -> &'f [Value] {
    fields
        .get(name)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn write_children(
    conn: &Connection,
    kind: &Kind,
    record: &Incoming,
    fields: &Fields,
) -> Result<(), StoreError> {
    let id = record.key.1.as_str();
    match kind.kind {
        "host" => {
            let seq: i64 = conn
                .prepare_cached("SELECT seq FROM hosts WHERE id = ?1")?
                .query_row([id], |row| row.get(0))?;
            conn.prepare_cached("DELETE FROM host_tags WHERE host_seq = ?1")?
                .execute([seq])?;
            let mut insert = conn.prepare_cached(
                "INSERT OR IGNORE INTO host_tags (host_seq, tag, position) VALUES (?1, ?2, ?3)",
            )?;
            for (position, tag) in array(fields, "tags").iter().enumerate() {
                insert.execute(params![seq, tag.as_str(), position as i64])?;
            }
            replace_list(
                conn,
                "host_jumps",
                "jump_host_id",
                id,
                array(fields, "jumps"),
            )?;
            replace_list(
                conn,
                "host_ssh_options",
                "option",
                id,
                array(fields, "ssh_options"),
            )?;
            write_env(conn, "host_id", id, record)
        }
        "group" => write_env(conn, "group_id", id, record),
        "key" => {
            conn.prepare_cached("DELETE FROM key_certificates WHERE key_id = ?1")?
                .execute([id])?;
            let mut insert = conn.prepare_cached(
                "INSERT OR IGNORE INTO key_certificates \
                 (key_id, principals, certificate, created_at, announced) \
                 VALUES (?1, ?2, ?3, ?4, coalesce(?5, ''))",
            )?;
            for certificate in array(fields, "certificates") {
                let text = |name: &str| certificate.get(name).and_then(Value::as_str);
                insert.execute(params![
                    id,
                    text("principals"),
                    text("certificate"),
                    text("created_at"),
                    text("announced")
                ])?;
            }
            Ok(())
        }
        "identity" => write_identity_children(conn, id, record, fields),
        _ => Ok(()),
    }
}

fn replace_list(
    conn: &Connection,
    table: &str,
    column: &str,
    id: &str,
    items: &[Value],
) -> Result<(), StoreError> {
    conn.prepare_cached(&format!("DELETE FROM {table} WHERE host_id = ?1"))?
        .execute([id])?;
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO {table} (host_id, position, {column}) VALUES (?1, ?2, ?3)"
    ))?;
    for (position, item) in items.iter().enumerate() {
        insert.execute(params![id, position as i64, item.as_str()])?;
    }
    Ok(())
}

fn write_env(
    conn: &Connection,
    column: &str,
    id: &str,
    record: &Incoming,
) -> Result<(), StoreError> {
    conn.prepare_cached(&format!("DELETE FROM env_secrets WHERE {column} = ?1"))?
        .execute([id])?;
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO env_secrets ({column}, name, sealed) VALUES (?1, ?2, ?3)"
    ))?;
    for (field, bytes) in &record.sealed {
        if let Some(name) = field.strip_prefix(ENV_PREFIX) {
            insert.execute(params![id, name, bytes])?;
        }
    }
    Ok(())
}

fn write_identity_children(
    conn: &Connection,
    id: &str,
    record: &Incoming,
    fields: &Fields,
) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM identity_methods WHERE identity_id = ?1")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM identity_answers WHERE identity_id = ?1")?
        .execute([id])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO identity_methods (identity_id, position, type, key_id, password) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (position, method) in array(fields, "methods").iter().enumerate() {
        let kind = method.get("type").and_then(Value::as_str);
        let password = match kind {
            Some("password") => record.sealed.get(METHOD_PASSWORD),
            _ => None,
        };
        let key_id = method.get("key_id").and_then(Value::as_str);
        insert.execute(params![id, position as i64, kind, key_id, password])?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO identity_answers (identity_id, position, prompt, answer, literal) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (position, answer) in array(fields, "answers").iter().enumerate() {
        let literal = literal_slot(position)
            .and_then(|_| record.sealed.get(&format!("{ANSWER_PREFIX}{position}")));
        insert.execute(params![
            id,
            position as i64,
            answer.get("prompt").and_then(Value::as_str),
            answer.get("answer").and_then(Value::as_str),
            literal
        ])?;
    }
    Ok(())
}

/// The statements that clear what a merge can leave pointing nowhere.
const TIDY: &str = "
    UPDATE groups SET parent_id = NULL
        WHERE parent_id IS NOT NULL AND parent_id NOT IN (SELECT id FROM groups);
    UPDATE groups SET default_identity_id = NULL WHERE default_identity_id IS NOT NULL
        AND default_identity_id NOT IN (SELECT id FROM identities);
    UPDATE hosts SET group_id = NULL
        WHERE group_id IS NOT NULL AND group_id NOT IN (SELECT id FROM groups);
    DELETE FROM group_host_counts WHERE group_id NOT IN (SELECT id FROM groups);
    UPDATE hosts SET key_id = NULL
        WHERE key_id IS NOT NULL AND key_id NOT IN (SELECT id FROM keys);
    UPDATE hosts SET identity_id = NULL
        WHERE identity_id IS NOT NULL AND identity_id NOT IN (SELECT id FROM identities);
    DELETE FROM host_jumps WHERE jump_host_id NOT IN (SELECT id FROM hosts);
    DELETE FROM host_jumps WHERE host_id NOT IN (SELECT id FROM hosts);
    DELETE FROM host_ssh_options WHERE host_id NOT IN (SELECT id FROM hosts);
    DELETE FROM forwards WHERE (host_id IS NOT NULL AND host_id NOT IN (SELECT id FROM hosts))
        OR (group_id IS NOT NULL AND group_id NOT IN (SELECT id FROM groups));
    DELETE FROM env_secrets WHERE (host_id IS NOT NULL AND host_id NOT IN (SELECT id FROM hosts))
        OR (group_id IS NOT NULL AND group_id NOT IN (SELECT id FROM groups));
    UPDATE identity_methods SET key_id = NULL
        WHERE key_id IS NOT NULL AND key_id NOT IN (SELECT id FROM keys);
    DELETE FROM key_certificates WHERE key_id NOT IN (SELECT id FROM keys);";

/// Points references of a key given way to at the key kept, clears dangling references and
/// breaks group cycles.
fn tidy(conn: &Connection, remaps: &[(String, String)]) -> Result<(), StoreError> {
    for (from, to) in remaps {
        conn.prepare_cached("UPDATE hosts SET key_id = ?2 WHERE key_id = ?1")?
            .execute(params![from, to])?;
        conn.prepare_cached("UPDATE identity_methods SET key_id = ?2 WHERE key_id = ?1")?
            .execute(params![from, to])?;
    }
    conn.execute_batch(TIDY)?;
    let mut statement = conn.prepare("SELECT id, parent_id FROM groups")?;
    let parents: HashMap<String, Option<String>> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for id in cycle_breakers(&parents) {
        conn.prepare_cached("UPDATE groups SET parent_id = NULL WHERE id = ?1")?
            .execute([id])?;
    }
    Ok(())
}

/// For each cycle of parent links, its group with the largest id (every device picks the
/// same one), which is moved to the top level.
pub fn cycle_breakers(parents: &HashMap<String, Option<String>>) -> Vec<String> {
    let mut done: HashSet<&str> = HashSet::new();
    let mut breakers = Vec::new();
    let mut ids: Vec<&String> = parents.keys().collect();
    ids.sort();
    for start in ids {
        let mut path: Vec<&str> = Vec::new();
        let mut at = Some(start.as_str());
        while let Some(id) = at {
            if done.contains(id) {
                break;
            }
            if let Some(from) = path.iter().position(|seen| *seen == id) {
                if let Some(largest) = path[from..].iter().max() {
                    breakers.push((*largest).to_owned());
                }
                break;
            }
            path.push(id);
            at = parents.get(id).and_then(|parent| parent.as_deref());
        }
        done.extend(path);
    }
    breakers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parents(links: &[(&str, Option<&str>)]) -> HashMap<String, Option<String>> {
        links
            .iter()
            .map(|(id, parent)| (id.to_string(), parent.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn a_cycle_of_groups_is_broken_at_its_largest_id_and_a_tree_is_left_alone() {
        let tree = parents(&[("a", None), ("b", Some("a")), ("c", Some("b"))]);
        assert!(cycle_breakers(&tree).is_empty());
        let cycle = parents(&[("a", Some("b")), ("b", Some("a")), ("c", Some("a"))]);
        assert_eq!(cycle_breakers(&cycle), vec!["b".to_string()]);
        let own = parents(&[("x", Some("x"))]);
        assert_eq!(cycle_breakers(&own), vec!["x".to_string()]);
        let two = parents(&[
            ("a", Some("b")),
            ("b", Some("a")),
            ("p", Some("q")),
            ("q", Some("p")),
        ]);
        let mut found = cycle_breakers(&two);
        found.sort();
        assert_eq!(found, vec!["b".to_string(), "q".to_string()]);
    }
}
