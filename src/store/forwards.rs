//! Forward rules in SQL (docs/forwards.md): a host's or a group's rules in order, one rule,
//! insert at the end, update (with a move), delete, the rules a host inherits, and the
//! listening rule another one would collide with.
//!
//! Invariants: positions of an owner's rules are 0..n with no gap after every write; a
//! rule is found only under its own owner (another owner's id is `ForwardNotFound`);
//! `updated_at` strictly increases on every change (the schema's trigger bumps `revision`
//! and logs the feed entry).

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};

use crate::model::forward::{ForwardKind, ForwardSettings, ForwardSpec, MAX_FORWARDS};
use crate::model::forward_rule::{Owner, Rule};
use crate::model::validate::Invalid;
use crate::store::{next_updated_at, now_timestamp, StoreError};

const COLUMNS: &str = "id, host_id, group_id, position, type, bind_address, bind_port, \
     bind_socket, target_host, target_port, target_socket, enabled, autostart, description, \
     created_at, updated_at, revision";
const INSERT: &str = "INSERT INTO forwards (id, host_id, group_id, position, type, \
     bind_address, bind_port, bind_socket, target_host, target_port, target_socket, enabled, \
     autostart, description, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15)";
const UPDATE: &str = "UPDATE forwards SET type = ?2, bind_address = ?3, bind_port = ?4, \
     bind_socket = ?5, target_host = ?6, target_port = ?7, target_socket = ?8, enabled = ?9, \
     autostart = ?10, description = ?11, updated_at = ?12 WHERE id = ?1";
const SET_POSITION: &str = "UPDATE forwards SET position = ?2 WHERE id = ?1";
const DELETE: &str = "DELETE FROM forwards WHERE id = ?1";
const HOST_EXISTS: &str = "SELECT 1 FROM hosts WHERE id = ?1";
const GROUP_EXISTS: &str = "SELECT 1 FROM groups WHERE id = ?1";

/// Which rules listen (enabled, autostart) on port `?1` or socket `?2`, but rule `?3`.
const LISTENING_ON: &str =
    "WHERE enabled = 1 AND autostart = 1 AND (bind_port = ?1 OR bind_socket = ?2) AND id <> ?3";

fn select_of(owner: &Owner) -> String {
    format!(
        "SELECT {COLUMNS} FROM forwards WHERE {}_id = ?1 ORDER BY position",
        owner.kind()
    )
}

/// The rules of `owner`, in order; `HostNotFound` / `GroupNotFound` for no such owner.
pub fn of_owner(conn: &Connection, owner: &Owner) -> Result<Vec<Rule>, StoreError> {
    check_owner(conn, owner)?;
    rules_of(conn, owner)
}

fn rules_of(conn: &Connection, owner: &Owner) -> Result<Vec<Rule>, StoreError> {
    let mut statement = conn.prepare_cached(&select_of(owner))?;
    let rows = statement.query_map([owner.id()], rule_from_row)?;
    rows.map(|row| row?).collect()
}

/// The rules a host's session has (docs/forwards.md, "Inheritance"): its own, then each
/// group's of `groups` (nearest first), each list in order.
pub fn effective(
    conn: &Connection,
    host_id: &str,
    groups: &[&str],
) -> Result<Vec<Rule>, StoreError> {
    let mut out = rules_of(conn, &Owner::Host(host_id.to_owned()))?;
    for group in groups {
        out.extend(rules_of(conn, &Owner::Group((*group).to_owned()))?);
    }
    Ok(out)
}

/// Every rule of every host and group (the export), in owner and position order.
pub fn all(conn: &Connection) -> Result<Vec<Rule>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM forwards ORDER BY host_id, group_id, position");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map([], rule_from_row)?;
    rows.map(|row| row?).collect()
}

/// Whether any rule (of any owner) has the id `id`.
pub fn exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM forwards WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Rule `id` of `owner`: `ForwardNotFound` when it is not one of its rules.
pub fn by_id(conn: &Connection, owner: &Owner, id: &str) -> Result<Rule, StoreError> {
    check_owner(conn, owner)?;
    let sql = format!(
        "SELECT {COLUMNS} FROM forwards WHERE id = ?1 AND {}_id = ?2",
        owner.kind()
    );
    conn.prepare_cached(&sql)?
        .query_row(params![id, owner.id()], rule_from_row)
        .optional()?
        .ok_or(StoreError::ForwardNotFound)?
}

/// Adds a rule at the end of `owner`'s rules. `Err(Ok(invalid))` when the owner already
/// has `MAX_FORWARDS` rules. Caller holds a write transaction and checked conflicts.
pub fn insert(
    conn: &Connection,
    owner: &Owner,
    id: &str,
    spec: &ForwardSpec,
    settings: &ForwardSettings,
) -> Result<Result<Rule, Invalid>, StoreError> {
    check_owner(conn, owner)?;
    let count: i64 = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM forwards WHERE {}_id = ?1",
            owner.kind()
        ))?
        .query_row([owner.id()], |row| row.get(0))?;
    if count >= MAX_FORWARDS as i64 {
        return Ok(Err(Invalid::new(
            "forwards",
            format!("a host or group has at most {MAX_FORWARDS} rules"),
        )));
    }
    let now = now_timestamp();
    let (host_id, group_id) = match owner {
        Owner::Host(id) => (Some(id.as_str()), None),
        Owner::Group(id) => (None, Some(id.as_str())),
    };
    let mut values: Vec<SqlValue> = vec![
        id.to_owned().into(),
        host_id.map(str::to_owned).into(),
        group_id.map(str::to_owned).into(),
        count.into(),
    ];
    values.extend(rule_values(spec, settings));
    values.push(now.clone().into());
    conn.prepare_cached(INSERT)?
        .execute(params_from_iter(values))?;
    Ok(Ok(Rule {
        id: id.to_owned(),
        owner: owner.clone(),
        position: count,
        spec: spec.clone(),
        settings: settings.clone(),
        created_at: now.clone(),
        updated_at: now,
        revision: 1,
    }))
}

/// A rule's own columns, `type` to `description`, in the order `INSERT` and `UPDATE` bind
/// them (after the id and owner, before the time).
fn rule_values(spec: &ForwardSpec, settings: &ForwardSettings) -> [SqlValue; 10] {
    let port = |port: Option<u16>| SqlValue::from(port.map(i64::from));
    [
        spec.kind.as_str().to_owned().into(),
        spec.bind_address.clone().into(),
        port(spec.bind_port),
        spec.bind_socket.clone().into(),
        spec.target_host.clone().into(),
        port(spec.target_port),
        spec.target_socket.clone().into(),
        settings.enabled.into(),
        settings.autostart.into(),
        settings.description.clone().into(),
    ]
}

/// Writes the new spec and settings of `previous`, and moves it to `position` (clamped to
/// the end) when given. Caller holds a write transaction and checked conflicts.
pub fn update(
    conn: &Connection,
    previous: &Rule,
    spec: &ForwardSpec,
    settings: &ForwardSettings,
    position: Option<i64>,
) -> Result<Rule, StoreError> {
    let updated_at = next_updated_at(&previous.updated_at);
    let mut values: Vec<SqlValue> = vec![previous.id.clone().into()];
    values.extend(rule_values(spec, settings));
    values.push(updated_at.clone().into());
    conn.prepare_cached(UPDATE)?
        .execute(params_from_iter(values))?;
    let position = match position {
        Some(position) => place(conn, previous, position)?,
        None => previous.position,
    };
    Ok(Rule {
        spec: spec.clone(),
        settings: settings.clone(),
        position,
        updated_at,
        revision: previous.revision + 1,
        ..previous.clone()
    })
}

/// Moves `rule` to `position` among its owner's rules and renumbers them; the place it
/// got.
fn place(conn: &Connection, rule: &Rule, position: i64) -> Result<i64, StoreError> {
    let mut ids: Vec<String> = rules_of(conn, &rule.owner)?
        .into_iter()
        .map(|other| other.id)
        .filter(|id| *id != rule.id)
        .collect();
    let at = usize::try_from(position.max(0))
        .unwrap_or(usize::MAX)
        .min(ids.len());
    ids.insert(at, rule.id.clone());
    reorder(conn, &ids)?;
    Ok(at as i64)
}

/// Gives the rules `ids` (all of one owner's) the positions of their order.
pub fn reorder(conn: &Connection, ids: &[String]) -> Result<(), StoreError> {
    let mut statement = conn.prepare_cached(SET_POSITION)?;
    for (position, id) in ids.iter().enumerate() {
        statement.execute(params![id, position as i64])?;
    }
    Ok(())
}

/// Copies `from`'s rules to `to` in order (a duplicated host), ids from `new_id`; a rule that
/// would listen where another one listens (the original's own, above all) is copied as
/// manual, so a copy never takes a port.
pub fn copy(
    conn: &Connection,
    from: &Owner,
    to: &Owner,
    new_id: &mut dyn FnMut() -> String,
) -> Result<(), StoreError> {
    for rule in rules_of(conn, from)? {
        let id = new_id();
        let mut settings = rule.settings.clone();
        if settings.enabled && settings.autostart && conflict(conn, &rule.spec, &id)?.is_some() {
            settings.autostart = false;
        }
        if let Err(refused) = insert(conn, to, &id, &rule.spec, &settings)? {
            return Err(StoreError::BrokenInvariant(format!(
                "a copy holds no more rules than its original: {refused}"
            )));
        }
    }
    Ok(())
}

/// Deletes `rule` and closes the gap it leaves.
pub fn delete(conn: &Connection, rule: &Rule) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE)?.execute([&rule.id])?;
    let ids: Vec<String> = rules_of(conn, &rule.owner)?
        .into_iter()
        .map(|other| other.id)
        .collect();
    reorder(conn, &ids)
}

/// The first listening rule (but `except`) that `spec` would collide with, if `spec` is a
/// rule that listens locally (docs/forwards.md, "Port conflicts").
pub fn conflict(
    conn: &Connection,
    spec: &ForwardSpec,
    except: &str,
) -> Result<Option<Rule>, StoreError> {
    if spec.kind == ForwardKind::Remote {
        return Ok(None);
    }
    let sql = format!("SELECT {COLUMNS} FROM forwards {LISTENING_ON}");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(
        params![spec.bind_port, spec.bind_socket, except],
        rule_from_row,
    )?;
    for row in rows {
        let other = row??;
        if other.spec.overlaps(spec) {
            return Ok(Some(other));
        }
    }
    Ok(None)
}

fn check_owner(conn: &Connection, owner: &Owner) -> Result<(), StoreError> {
    let (sql, missing) = match owner {
        Owner::Host(_) => (HOST_EXISTS, StoreError::HostNotFound),
        Owner::Group(_) => (GROUP_EXISTS, StoreError::GroupNotFound),
    };
    let found = conn
        .prepare_cached(sql)?
        .query_row([owner.id()], |_| Ok(()))
        .optional()?;
    found.ok_or(missing)
}

fn corrupt() -> StoreError {
    StoreError::CorruptRow("a forwards row has a type, port or owner this build does not know")
}

/// A rule from the columns of `COLUMNS`. The outer error is SQLite's; the inner one a stored
/// value this build does not understand.
fn rule_from_row(row: &Row<'_>) -> rusqlite::Result<Result<Rule, StoreError>> {
    let host_id: Option<String> = row.get(1)?;
    let group_id: Option<String> = row.get(2)?;
    let owner = match (host_id, group_id) {
        (Some(id), None) => Owner::Host(id),
        (None, Some(id)) => Owner::Group(id),
        _ => return Ok(Err(corrupt())),
    };
    let kind: String = row.get(4)?;
    let Some(kind) = ForwardKind::parse(&kind) else {
        return Ok(Err(corrupt()));
    };
    let port = |index: usize| -> rusqlite::Result<Result<Option<u16>, StoreError>> {
        let value: Option<i64> = row.get(index)?;
        Ok(match value.map(u16::try_from) {
            None => Ok(None),
            Some(Ok(port)) => Ok(Some(port)),
            Some(Err(_)) => Err(corrupt()),
        })
    };
    let (bind_port, target_port) = match (port(6)?, port(9)?) {
        (Ok(bind), Ok(target)) => (bind, target),
        _ => return Ok(Err(corrupt())),
    };
    Ok(Ok(Rule {
        id: row.get(0)?,
        owner,
        position: row.get(3)?,
        spec: ForwardSpec {
            kind,
            bind_address: row.get(5)?,
            bind_port,
            bind_socket: row.get(7)?,
            target_host: row.get(8)?,
            target_port,
            target_socket: row.get(10)?,
        },
        settings: ForwardSettings {
            enabled: row.get(11)?,
            autostart: row.get(12)?,
            description: row.get(13)?,
        },
        created_at: row.get(14)?,
        updated_at: row.get(15)?,
        revision: row.get(16)?,
    }))
}
