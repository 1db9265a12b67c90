//! Host rows and their tags: create, read one, update, delete, favorite, move, last use,
//! and the sealed credentials `connect` opens. The list is store::list's.
//!
//! Invariants: sealed passwords go in and out as opaque bytes (this module never knows
//! whether the vault is locked); every reference (group, key) is checked inside the caller's
//! transaction before it is written; `updated_at` strictly increases on every change.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::model::host::{AuthType, Host, HostChange, NewHost, OrderChange, PasswordAction};
use crate::model::startup::Startup;
use crate::store::{next_updated_at, now_timestamp, StoreError};

const SELECT_HOST_BY_ID: &str = "SELECT id, name, hostname, port, username, auth_type, key_id, \
     password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, last_used_at, revision, identity_id, jumps_set, startup FROM hosts WHERE id = ?1";
const INSERT_HOST: &str = "INSERT INTO hosts (id, name, name_key, hostname, port, username, \
     auth_type, key_id, password, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, identity_id, jumps_set, startup) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15, ?16, ?17, ?18)";
/// Name and hostname (with `name_key`) have an UPDATE of their own, run only when they
/// change.
const UPDATE_HOST: &str = "UPDATE hosts SET port = ?2, username = ?3, auth_type = ?4, \
     key_id = ?5, group_id = ?6, is_favorite = ?7, color = ?8, sort_order = ?9, notes = ?10, \
     updated_at = ?11, identity_id = ?12, jumps_set = ?13, startup = ?14 WHERE id = ?1";
const UPDATE_HOST_NAMES: &str =
    "UPDATE hosts SET name = ?2, name_key = ?3, hostname = ?4 WHERE id = ?1";
const UPDATE_PASSWORD: &str = "UPDATE hosts SET password = ?2 WHERE id = ?1";
const UPDATE_FAVORITE: &str = "UPDATE hosts SET is_favorite = ?2, updated_at = ?3 WHERE id = ?1";
const UPDATE_GROUP: &str =
    "UPDATE hosts SET group_id = ?2, sort_order = ?3, updated_at = ?4 WHERE id = ?1";
const UPDATE_LAST_USED: &str = "UPDATE hosts SET last_used_at = ?2 WHERE id = ?1";
const DELETE_HOST: &str = "DELETE FROM hosts WHERE id = ?1";
const SELECT_PASSWORD: &str = "SELECT password FROM hosts WHERE id = ?1";
/// The end of a group: one probe of `hosts_by_group_order`. `IS` matches NULL (ungrouped
/// counts as one group); the host itself is left out so moving it never counts it.
const SELECT_MAX_ORDER: &str =
    "SELECT max(sort_order) FROM hosts WHERE group_id IS ?1 AND id IS NOT ?2";
const GROUP_EXISTS: &str = "SELECT 1 FROM groups WHERE id = ?1";
const KEY_EXISTS: &str = "SELECT 1 FROM keys WHERE id = ?1";
const IDENTITY_EXISTS: &str = "SELECT 1 FROM identities WHERE id = ?1";
const SELECT_KEY_SECRETS: &str = "SELECT private_key, passphrase FROM keys WHERE id = ?1";

const SELECT_SEQ: &str = "SELECT seq FROM hosts WHERE id = ?1";
const INSERT_TAG: &str = "INSERT INTO host_tags (host_seq, tag, position) VALUES (?1, ?2, ?3)";
const DELETE_TAGS: &str = "DELETE FROM host_tags WHERE host_seq = ?1";
const SELECT_TAGS: &str = "SELECT tag FROM host_tags \
     WHERE host_seq = (SELECT seq FROM hosts WHERE id = ?1) ORDER BY position";

/// A host's stored secrets, still sealed.
pub enum SealedCredentials {
    Password(Option<Vec<u8>>),
    Key {
        key_id: String,
        private_key: Vec<u8>,
        passphrase: Option<Vec<u8>>,
    },
    Agent,
}

/// Inserts a checked host with id `id`. Fails with `GroupNotFound`/`KeyNotFound` for a
/// reference that does not exist. Caller holds a write transaction.
pub fn insert(
    conn: &Connection,
    id: &str,
    host: &NewHost,
    sealed_password: Option<&[u8]>,
) -> Result<Host, StoreError> {
    let key_id = host.auth.as_ref().and_then(|auth| auth.key_id.as_deref());
    check_references(conn, host.group_id.as_deref(), key_id)?;
    check_identity(conn, host.identity_id.as_deref())?;
    let order = match host.order {
        Some(order) => order,
        None => end_of_group(conn, host.group_id.as_deref(), None)?,
    };
    let now = now_timestamp();
    let password = match host.auth.as_ref().map(|auth| auth.password) {
        Some(PasswordAction::Store) => sealed_password,
        _ => None,
    };
    let auth_type = host.auth.as_ref().map(|auth| auth.auth_type);
    conn.prepare_cached(INSERT_HOST)?.execute(params![
        id,
        host.name,
        host.name_key,
        host.hostname,
        host.port,
        host.username,
        auth_type.map(AuthType::as_str),
        key_id,
        password,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        now,
        host.identity_id,
        host.jump_host_ids.is_some(),
        host.startup.to_json().to_string(),
    ])?;
    write_tags(conn, conn.last_insert_rowid(), &host.tags)?;
    crate::store::interop::write_jumps(conn, id, host.jump_host_ids.as_deref().unwrap_or(&[]))?;
    crate::store::interop::write_options(conn, id, &host.ssh_options)?;
    Ok(Host {
        id: id.to_owned(),
        name: host.name.clone(),
        hostname: host.hostname.clone(),
        port: host.port,
        username: host.username.clone(),
        auth_type,
        key_id: key_id.map(str::to_owned),
        has_password: password.is_some(),
        identity_id: host.identity_id.clone(),
        group_id: host.group_id.clone(),
        tags: host.tags.clone(),
        is_favorite: host.is_favorite,
        color: host.color.clone(),
        order,
        notes: host.notes.clone(),
        created_at: now.clone(),
        updated_at: now,
        last_used_at: None,
        jump_host_ids: host.jump_host_ids.clone(),
        ssh_options: host.ssh_options.clone(),
        startup: host.startup.stored(),
        revision: 1,
    })
}

/// One host with its tags; `HostNotFound` for any id that is not stored (UUID or not).
pub fn by_id(conn: &Connection, id: &str) -> Result<Host, StoreError> {
    let mut host = conn
        .prepare_cached(SELECT_HOST_BY_ID)?
        .query_row([id], |row| host_from_row(row, 0))
        .optional()?
        .ok_or(StoreError::HostNotFound)??;
    host.tags = conn
        .prepare_cached(SELECT_TAGS)?
        .query_map([id], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    crate::store::interop::fill_extensions(conn, std::slice::from_mut(&mut host))?;
    Ok(host)
}

/// Writes `change`, computed from the current row `previous`. Checks references, places
/// the host, bumps `updated_at` past the previous value; `sealed_password` is written when
/// the change says `Store`. Caller holds a write transaction.
pub fn update(
    conn: &Connection,
    previous: &Host,
    change: &HostChange,
    sealed_password: Option<&[u8]>,
) -> Result<Host, StoreError> {
    let host = &change.host;
    check_references(conn, host.group_id.as_deref(), host.key_id.as_deref())?;
    if host.identity_id != previous.identity_id {
        check_identity(conn, host.identity_id.as_deref())?;
    }
    let order = match change.order {
        OrderChange::To(order) => order,
        OrderChange::End => end_of_group(conn, host.group_id.as_deref(), Some(&host.id))?,
    };
    let updated_at = next_updated_at(&previous.updated_at);
    if host.name != previous.name || host.hostname != previous.hostname {
        conn.prepare_cached(UPDATE_HOST_NAMES)?.execute(params![
            host.id,
            host.name,
            change.name_key,
            host.hostname
        ])?;
    }
    conn.prepare_cached(UPDATE_HOST)?.execute(params![
        host.id,
        host.port,
        host.username,
        host.auth_type.map(AuthType::as_str),
        host.key_id,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        updated_at,
        host.identity_id,
        host.jump_host_ids.is_some(),
        host.startup.to_json().to_string(),
    ])?;
    let has_password = match (change.password, sealed_password) {
        (PasswordAction::Keep, _) => previous.has_password,
        (PasswordAction::Store, Some(sealed)) => {
            conn.prepare_cached(UPDATE_PASSWORD)?
                .execute(params![host.id, sealed])?;
            true
        }
        (PasswordAction::Store, None) | (PasswordAction::Clear, _) => {
            conn.prepare_cached(UPDATE_PASSWORD)?
                .execute(params![host.id, None::<Vec<u8>>])?;
            false
        }
    };
    if host.tags != previous.tags {
        let seq: i64 = conn
            .prepare_cached(SELECT_SEQ)?
            .query_row([&host.id], |row| row.get(0))?;
        write_tags(conn, seq, &host.tags)?;
    }
    if host.jump_host_ids != previous.jump_host_ids {
        let chain = host.jump_host_ids.as_deref().unwrap_or(&[]);
        crate::store::interop::write_jumps(conn, &host.id, chain)?;
    }
    if host.ssh_options != previous.ssh_options {
        crate::store::interop::write_options(conn, &host.id, &host.ssh_options)?;
    }
    Ok(Host {
        order,
        updated_at,
        has_password,
        // The schema's hosts_changed trigger adds one for the statement that set updated_at.
        revision: previous.revision + 1,
        ..host.clone()
    })
}

/// Deletes a host and (by cascade) its tags. With `secure_delete` on, its sealed password
/// is overwritten in the file, not just unlinked.
pub fn delete(conn: &Connection, id: &str) -> Result<(), StoreError> {
    match conn.prepare_cached(DELETE_HOST)?.execute([id])? {
        0 => Err(StoreError::HostNotFound),
        _ => Ok(()),
    }
}

/// Flips `is_favorite` and bumps `updated_at`; returns the new value.
pub fn toggle_favorite(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    let host = by_id(conn, id)?;
    let favorite = !host.is_favorite;
    conn.prepare_cached(UPDATE_FAVORITE)?.execute(params![
        id,
        favorite,
        next_updated_at(&host.updated_at)
    ])?;
    Ok(favorite)
}

/// Moves a host to `group_id` (`None`: ungrouped). A host that changes group goes to the
/// end of the new one; a move to its own group keeps its place. Bumps `updated_at`.
pub fn move_to(conn: &Connection, id: &str, group_id: Option<&str>) -> Result<Host, StoreError> {
    let host = by_id(conn, id)?;
    check_references(conn, group_id, None)?;
    let order = match host.group_id.as_deref() == group_id {
        true => host.order,
        false => end_of_group(conn, group_id, Some(id))?,
    };
    let updated_at = next_updated_at(&host.updated_at);
    conn.prepare_cached(UPDATE_GROUP)?
        .execute(params![id, group_id, order, updated_at])?;
    Ok(Host {
        group_id: group_id.map(str::to_owned),
        order,
        updated_at,
        revision: host.revision + 1,
        ..host
    })
}

/// Sets `last_used_at` to now and nothing else (not `updated_at`).
pub fn touch_last_used(conn: &Connection, id: &str) -> Result<Host, StoreError> {
    let host = by_id(conn, id)?;
    let now = now_timestamp();
    conn.prepare_cached(UPDATE_LAST_USED)?
        .execute(params![id, now])?;
    Ok(Host {
        last_used_at: Some(now),
        ..host
    })
}

/// The sealed secrets `host`'s own auth type needs to connect (`None`: the host has no auth
/// of its own; it inherits an identity's).
pub fn credentials(
    conn: &Connection,
    host: &Host,
) -> Result<Option<SealedCredentials>, StoreError> {
    let Some(auth_type) = host.auth_type else {
        return Ok(None);
    };
    sealed_for(conn, host, auth_type).map(Some)
}

fn sealed_for(
    conn: &Connection,
    host: &Host,
    auth_type: AuthType,
) -> Result<SealedCredentials, StoreError> {
    match (auth_type, host.key_id.as_deref()) {
        (AuthType::Password, _) => Ok(SealedCredentials::Password(sealed_password(
            conn, &host.id,
        )?)),
        (AuthType::Key, Some(key_id)) => sealed_key(conn, key_id),
        (AuthType::Key, None) => Err(StoreError::KeyNotFound),
        (AuthType::Agent, _) => Ok(SealedCredentials::Agent),
    }
}

/// A host's own sealed password as stored (`None`: none stored); `HostNotFound` when the
/// host is not stored.
pub fn sealed_password(conn: &Connection, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
    conn.prepare_cached(SELECT_PASSWORD)?
        .query_row([id], |row| row.get(0))
        .optional()?
        .ok_or(StoreError::HostNotFound)
}

/// A stored key's sealed private key and passphrase.
pub fn sealed_key(conn: &Connection, key_id: &str) -> Result<SealedCredentials, StoreError> {
    let (private_key, passphrase) = conn
        .prepare_cached(SELECT_KEY_SECRETS)?
        .query_row([key_id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .ok_or(StoreError::KeyNotFound)?;
    Ok(SealedCredentials::Key {
        key_id: key_id.to_owned(),
        private_key,
        passphrase,
    })
}

/// True when a group with this id exists.
pub fn group_exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(GROUP_EXISTS)?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// True when a key with this id exists.
pub fn key_exists(conn: &Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached(KEY_EXISTS)?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// A host from the columns of `SELECT_HOST_BY_ID` starting at column `first`; tags are left empty. The outer
/// error is SQLite's; the inner one a stored value this build does not understand.
pub(crate) fn host_from_row(
    row: &Row<'_>,
    first: usize,
) -> rusqlite::Result<Result<Host, StoreError>> {
    let auth_type: Option<String> = row.get(first + 5)?;
    let port: Option<i64> = row.get(first + 3)?;
    let auth_type = match auth_type.as_deref().map(AuthType::parse) {
        None => None,
        Some(Some(auth_type)) => Some(auth_type),
        Some(None) => return Ok(Err(corrupt())),
    };
    let port = match port.map(u16::try_from) {
        None => None,
        Some(Ok(port)) if port > 0 => Some(port),
        Some(_) => return Ok(Err(corrupt())),
    };
    let jumps_set: bool = row.get(first + 18)?;
    let startup: String = row.get(first + 19)?;
    let Some(startup) = Startup::from_stored(&startup) else {
        return Ok(Err(corrupt()));
    };
    Ok(Ok(Host {
        id: row.get(first)?,
        name: row.get(first + 1)?,
        hostname: row.get(first + 2)?,
        port,
        username: row.get(first + 4)?,
        auth_type,
        key_id: row.get(first + 6)?,
        has_password: row.get(first + 7)?,
        identity_id: row.get(first + 17)?,
        group_id: row.get(first + 8)?,
        tags: Vec::new(),
        is_favorite: row.get(first + 9)?,
        color: row.get(first + 10)?,
        order: row.get(first + 11)?,
        notes: row.get(first + 12)?,
        created_at: row.get(first + 13)?,
        updated_at: row.get(first + 14)?,
        last_used_at: row.get(first + 15)?,
        jump_host_ids: jumps_set.then(Vec::new),
        ssh_options: Vec::new(),
        startup,
        revision: row.get(first + 16)?,
    }))
}

fn corrupt() -> StoreError {
    StoreError::CorruptRow("a hosts row has an auth_type, port or startup this build does not know")
}

/// `IdentityNotFound` when the identity does not exist.
pub fn check_identity(conn: &Connection, identity_id: Option<&str>) -> Result<(), StoreError> {
    let Some(identity_id) = identity_id else {
        return Ok(());
    };
    match conn
        .prepare_cached(IDENTITY_EXISTS)?
        .query_row([identity_id], |_| Ok(()))
        .optional()?
    {
        Some(()) => Ok(()),
        None => Err(StoreError::IdentityNotFound),
    }
}

/// `GroupNotFound`/`KeyNotFound` when a reference does not exist.
fn check_references(
    conn: &Connection,
    group_id: Option<&str>,
    key_id: Option<&str>,
) -> Result<(), StoreError> {
    if let Some(group_id) = group_id {
        if !group_exists(conn, group_id)? {
            return Err(StoreError::GroupNotFound);
        }
    }
    if let Some(key_id) = key_id {
        if !key_exists(conn, key_id)? {
            return Err(StoreError::KeyNotFound);
        }
    }
    Ok(())
}

/// docs/api.md, Hosts: without an `order`, a host goes after every other host of its group.
fn end_of_group(
    conn: &Connection,
    group_id: Option<&str>,
    except_id: Option<&str>,
) -> Result<i64, StoreError> {
    let max: Option<i64> = conn
        .prepare_cached(SELECT_MAX_ORDER)?
        .query_row(params![group_id, except_id], |row| row.get(0))?;
    // At i64::MAX the host shares the last place; ties sort by name and id.
    Ok(max.map_or(0, |max| max.saturating_add(1)))
}

/// Replaces a host's tags, keeping their order.
fn write_tags(conn: &Connection, seq: i64, tags: &[String]) -> Result<(), StoreError> {
    conn.prepare_cached(DELETE_TAGS)?.execute([seq])?;
    let mut insert = conn.prepare_cached(INSERT_TAG)?;
    for (position, tag) in tags.iter().enumerate() {
        insert.execute(params![seq, tag, position as i64])?;
    }
    Ok(())
}

/// A host `name` at `hostname` (port 22, user `u`, agent auth) with the fields of `extra`
/// over those, for the store's tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub fn new_host_for_tests(name: &str, hostname: &str, extra: serde_json::Value) -> NewHost {
    let mut body = serde_json::json!({
        "name": name, "hostname": hostname, "port": 22, "username": "u",
        "auth": {"type": "agent"}
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    NewHost::from_json(
        body.as_object().unwrap(),
        crate::model::host::PasswordField::Absent,
    )
    .unwrap()
}

/// A top-level group named like its id, through the groups store, for the tests below.
#[cfg(test)]
pub fn insert_group_for_tests(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let group = crate::model::group::NewGroup {
        name: crate::model::name::Name::from_text(id)
            .map_err(|err| StoreError::BrokenInvariant(err.to_string()))?,
        parent_id: None,
        color: String::new(),
        icon: String::new(),
        defaults: None,
    };
    crate::store::groups::insert(conn, id, &group)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::store::hosts::{
        by_id, delete, insert, insert_group_for_tests, move_to, toggle_favorite, touch_last_used,
    };
    use crate::store::{open_in_memory, StoreError};

    use crate::store::hosts::new_host_for_tests as new_host;

    /// A port out of range (written past the store, say by an older build or a tool) is named
    /// as a corrupt row, not passed off as SQLite's fault.
    #[test]
    fn a_stored_port_out_of_range_is_a_corrupt_row_error() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert(tx, "a", &new_host("a", "a", json!({})), None)?;
            tx.execute_batch(
                "PRAGMA ignore_check_constraints = ON;
                 UPDATE hosts SET port = 70000 WHERE id = 'a';
                 PRAGMA ignore_check_constraints = OFF;",
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let err = db.read(|conn| by_id(conn, "a")).unwrap_err();
        assert!(matches!(err, StoreError::CorruptRow(_)), "{err}");
    }

    #[test]
    fn hosts_without_order_go_to_the_end_of_their_group() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert_group_for_tests(tx, "g")?;
            let a = insert(tx, "a", &new_host("a", "a", json!({"order": 7})), None)?;
            let b = insert(tx, "b", &new_host("b", "b", json!({})), None)?;
            let c = insert(tx, "c", &new_host("c", "c", json!({"group_id": "g"})), None)?;
            assert_eq!((a.order, b.order, c.order), (7, 8, 0));
            let moved = move_to(tx, "c", None)?;
            assert_eq!(moved.order, 9);
            let back = move_to(tx, "c", Some("g"))?;
            assert_eq!(back.order, 0);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn favorite_toggle_and_touch_change_the_right_timestamps() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            let host = insert(tx, "a", &new_host("a", "a", json!({})), None)?;
            assert!(toggle_favorite(tx, "a")?);
            let toggled = by_id(tx, "a")?;
            assert!(toggled.updated_at > host.updated_at);
            let touched = touch_last_used(tx, "a")?;
            assert_eq!(by_id(tx, "a")?.updated_at, toggled.updated_at);
            assert_eq!(by_id(tx, "a")?.last_used_at, touched.last_used_at);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    #[test]
    fn missing_rows_are_not_found() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            assert!(matches!(by_id(tx, "nope"), Err(StoreError::HostNotFound)));
            assert!(matches!(delete(tx, "nope"), Err(StoreError::HostNotFound)));
            let err = insert(tx, "a", &new_host("a", "a", json!({"group_id": "g"})), None);
            assert!(matches!(err, Err(StoreError::GroupNotFound)));
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }
}
