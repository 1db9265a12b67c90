//! The data half of schema version 13 (sql/0013_forwards.sql): the directives that now have
//! fields of their own (docs/forwards.md) move out of hosts' `ssh_options` and groups'
//! default `ssh_options` into forward rules, `startup` and the group's default environment.
//!
//! Invariants: runs once, inside the migration's transaction, right after the SQL of version
//! 13; every moved line is read as an import reads it (`SessionReader`); a line that cannot
//! be read into a field is appended to the host's notes (a group has none: it is logged),
//! so nothing is lost silently; lines without a field stay where they were.

use rusqlite::{params, Connection};

use crate::model::forward_rule::Owner;
use crate::model::interop;
use crate::model::ssh_config_session::{BlockSession, SessionReader};
use crate::model::ssh_words::{is_config_blank, split_args, split_keyword};
use crate::store::{forwards, StoreError};

/// A fresh random (version 4) UUID, made by SQLite: the store has no other source of ids.
const NEW_ID: &str = "SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) \
     || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' \
     || substr('89ab', 1 + abs(random()) % 4, 1) || substr(lower(hex(randomblob(2))), 2) \
     || '-' || lower(hex(randomblob(6)))";

/// What one owner's moved lines became, and the lines that could not be read.
struct Moved {
    session: BlockSession,
    unread: Vec<String>,
}

/// Reads `lines` (an owner's options, in order); answers the lines kept as options and what
/// the moved ones became. A group has no command of its own: for one (`for_group`),
/// `RemoteCommand` and `RequestTTY` stay options.
fn read(lines: &[String], for_group: bool) -> (Vec<String>, Moved) {
    let mut reader = SessionReader::default();
    let mut kept = Vec::new();
    let mut moved = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let (keyword, rest) = split_keyword(line.trim_matches(is_config_blank));
        let command =
            ["remotecommand", "requesttty"].contains(&keyword.to_ascii_lowercase().as_str());
        if interop::field_for(keyword).is_none() || (for_group && command) {
            kept.push(line.clone());
            continue;
        }
        let args = split_args(rest).unwrap_or_default();
        reader.directive(index + 1, keyword, &args, rest);
        moved.push((index + 1, line.clone()));
    }
    let (session, warnings) = reader.finish();
    let unread = moved
        .into_iter()
        .filter(|(number, _)| {
            let prefix = format!("line {number}:");
            warnings.iter().any(|warning| warning.starts_with(&prefix))
        })
        .map(|(_, line)| line)
        .collect();
    (kept, Moved { session, unread })
}

/// Moves every host's and group's directives that have fields.
pub fn move_directives(tx: &Connection) -> Result<(), StoreError> {
    let mut by_host: Vec<(String, Vec<String>)> = Vec::new();
    {
        let mut statement =
            tx.prepare("SELECT host_id, option FROM host_ssh_options ORDER BY host_id, position")?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let host_id: String = row.get(0)?;
            let option: String = row.get(1)?;
            match by_host.last_mut() {
                Some((id, options)) if *id == host_id => options.push(option),
                _ => by_host.push((host_id, vec![option])),
            }
        }
    }
    for (host_id, options) in by_host {
        let (kept, moved) = read(&options, false);
        if kept.len() == options.len() {
            continue;
        }
        tx.execute(
            "DELETE FROM host_ssh_options WHERE host_id = ?1",
            [&host_id],
        )?;
        for (position, option) in kept.iter().enumerate() {
            tx.execute(
                "INSERT INTO host_ssh_options (host_id, position, option) VALUES (?1, ?2, ?3)",
                params![host_id, position as i64, option],
            )?;
        }
        write_host(tx, &host_id, &moved)?;
    }
    move_group_directives(tx)
}

fn write_host(tx: &Connection, host_id: &str, moved: &Moved) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE hosts SET startup = ?2 WHERE id = ?1",
        params![host_id, moved.session.startup.to_json().to_string()],
    )?;
    let owner = Owner::Host(host_id.to_owned());
    let mut unread = moved.unread.clone();
    unread.extend(insert_rules(tx, &owner, &moved.session)?);
    if !unread.is_empty() {
        let note = format!(
            "\n\nssh_options lines this version could not read into fields (moved here when \
             the database was upgraded):\n{}",
            unread.join("\n")
        );
        tx.execute(
            "UPDATE hosts SET notes = notes || ?2 WHERE id = ?1",
            params![host_id, note],
        )?;
    }
    Ok(())
}

/// Stores `session`'s rules for `owner`; answers the directives of those it could not hold
/// (past `MAX_FORWARDS`).
fn insert_rules(
    tx: &Connection,
    owner: &Owner,
    session: &BlockSession,
) -> Result<Vec<String>, StoreError> {
    let mut refused = Vec::new();
    for rule in &session.rules {
        let id: String = tx.query_row(NEW_ID, [], |row| row.get(0))?;
        if forwards::insert(tx, owner, &id, &rule.spec, &rule.settings)?.is_err() {
            refused.push(rule.spec.directive());
        }
    }
    Ok(refused)
}

fn move_group_directives(tx: &Connection) -> Result<(), StoreError> {
    let groups: Vec<(String, String)> = {
        let mut statement = tx.prepare(
            "SELECT id, default_ssh_options FROM groups WHERE default_ssh_options <> '[]'",
        )?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    for (group_id, text) in groups {
        let options: Vec<String> = serde_json::from_str(&text).unwrap_or_default();
        let (kept, moved) = read(&options, true);
        if kept.len() == options.len() {
            continue;
        }
        let owner = Owner::Group(group_id.clone());
        let mut unread = moved.unread.clone();
        unread.extend(insert_rules(tx, &owner, &moved.session)?);
        for line in &unread {
            log::warn!(
                "group {group_id}: the default ssh_options line {line:?} could not be read \
                 into a field and was dropped by the upgrade"
            );
        }
        let kept = serde_json::to_string(&kept).map_err(|err| StoreError::Json(err.to_string()))?;
        let startup = &moved.session.startup;
        tx.execute(
            "UPDATE groups SET default_ssh_options = ?2, default_set_env = ?3, \
             default_send_env = ?4 WHERE id = ?1",
            params![
                group_id,
                kept,
                crate::model::startup::env_json(&startup.set_env).to_string(),
                serde_json::Value::from(startup.send_env.clone()).to_string(),
            ],
        )?;
    }
    Ok(())
}
