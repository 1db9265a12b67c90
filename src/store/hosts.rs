//! Host rows, their tags, and the list query (filters, sorts, pages) over the `hosts` and
//! `host_tags` tables, with the in-memory orders and search text of `store::list_index`.
//!
//! Invariants: sealed passwords go in and out as opaque bytes (this module never knows
//! whether the vault is locked); every reference (group, key) is checked inside the caller's
//! transaction before it is written; `updated_at` strictly increases on every change.
//!
//! The list's page is chosen in memory (store::list_index); this module reads the rows the
//! memory does not keep, by `seq` in one query, and renders them as the list shows them.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::value::RawValue;

use crate::model::host::{AuthType, Host, HostChange, NewHost, OrderChange, PasswordAction};
use crate::model::host_query::HostQuery;
use crate::store::list_index::{ListIndex, Listed};
use crate::store::{next_updated_at, now_timestamp, StoreError};

const SELECT_HOST_BY_ID: &str = "SELECT id, name, hostname, port, username, auth_type, key_id, \
     password IS NOT NULL, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at, last_used_at, revision FROM hosts WHERE id = ?1";
const INSERT_HOST: &str = "INSERT INTO hosts (id, name, name_key, hostname, port, username, \
     auth_type, key_id, password, group_id, is_favorite, color, sort_order, notes, created_at, \
     updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15)";
/// Name and hostname (with `name_key`) have an UPDATE of their own, run only when they
/// change.
const UPDATE_HOST: &str = "UPDATE hosts SET port = ?2, username = ?3, auth_type = ?4, \
     key_id = ?5, group_id = ?6, is_favorite = ?7, color = ?8, sort_order = ?9, notes = ?10, \
     updated_at = ?11 WHERE id = ?1";
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
const SELECT_KEY_SECRETS: &str = "SELECT private_key, passphrase FROM keys WHERE id = ?1";

const SELECT_SEQ: &str = "SELECT seq FROM hosts WHERE id = ?1";
const INSERT_TAG: &str = "INSERT INTO host_tags (host_seq, tag, position) VALUES (?1, ?2, ?3)";
const DELETE_TAGS: &str = "DELETE FROM host_tags WHERE host_seq = ?1";
const SELECT_TAGS: &str = "SELECT tag FROM host_tags \
     WHERE host_seq = (SELECT seq FROM hosts WHERE id = ?1) ORDER BY position";

/// Rows of a page: `?1` is a JSON array of `seq`s (the tags are in the list's memory).
const SELECT_ROWS: &str = "SELECT h.seq, h.id, h.name, h.hostname, h.port, h.username, \
     h.auth_type, h.key_id, h.password IS NOT NULL, h.group_id, h.is_favorite, h.color, \
     h.sort_order, h.notes, h.created_at, h.updated_at, h.last_used_at, h.revision \
     FROM json_each(?1) AS page JOIN hosts AS h ON h.seq = page.value";
/// Whether any host has a jump chain or kept ssh options (most catalogues have none, and a
/// page then needs no query for them).
const ANY_EXTENSIONS: &str = "SELECT EXISTS (SELECT 1 FROM host_jumps) \
     OR EXISTS (SELECT 1 FROM host_ssh_options)";

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
    check_references(conn, host.group_id.as_deref(), host.auth.key_id.as_deref())?;
    let order = match host.order {
        Some(order) => order,
        None => end_of_group(conn, host.group_id.as_deref(), None)?,
    };
    let now = now_timestamp();
    let password = match host.auth.password {
        PasswordAction::Store => sealed_password,
        PasswordAction::Keep | PasswordAction::Clear => None,
    };
    conn.prepare_cached(INSERT_HOST)?.execute(params![
        id,
        host.name,
        host.name_key,
        host.hostname,
        host.port,
        host.username,
        host.auth.auth_type.as_str(),
        host.auth.key_id,
        password,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        now,
    ])?;
    write_tags(conn, conn.last_insert_rowid(), &host.tags)?;
    crate::store::interop::write_jumps(conn, id, &host.jump_host_ids)?;
    crate::store::interop::write_options(conn, id, &host.ssh_options)?;
    Ok(Host {
        id: id.to_owned(),
        name: host.name.clone(),
        hostname: host.hostname.clone(),
        port: host.port,
        username: host.username.clone(),
        auth_type: host.auth.auth_type,
        key_id: host.auth.key_id.clone(),
        has_password: password.is_some(),
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
        host.auth_type.as_str(),
        host.key_id,
        host.group_id,
        host.is_favorite,
        host.color,
        order,
        host.notes,
        updated_at,
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
        crate::store::interop::write_jumps(conn, &host.id, &host.jump_host_ids)?;
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

/// The sealed secrets `host`'s auth type needs to connect.
pub fn credentials(conn: &Connection, host: &Host) -> Result<SealedCredentials, StoreError> {
    match (host.auth_type, host.key_id.as_deref()) {
        (AuthType::Password, _) => {
            let sealed: Option<Vec<u8>> = conn
                .prepare_cached(SELECT_PASSWORD)?
                .query_row([&host.id], |row| row.get(0))
                .optional()?
                .ok_or(StoreError::HostNotFound)?;
            Ok(SealedCredentials::Password(sealed))
        }
        (AuthType::Key, Some(key_id)) => {
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
        (AuthType::Key, None) => Err(StoreError::KeyNotFound),
        (AuthType::Agent, _) => Ok(SealedCredentials::Agent),
    }
}

/// One page of hosts as JSON (`Host::view`), jump chains and kept options included, and
/// the number of hosts matching the filters: the page from the list's memory, then the rows
/// it does not keep.
pub fn list(
    conn: &Connection,
    index: &mut ListIndex,
    query: &HostQuery,
) -> Result<(Vec<Box<RawValue>>, u64), StoreError> {
    let (page, total) = index.page(conn, query)?;
    let mut read: HashMap<_, _> = read_rows(conn, index, &page)?.into_iter().collect();
    let rows = page.into_iter().filter_map(|listed| match listed {
        Listed::Row(row) => Some(row),
        Listed::Unread(seq, _) => read.remove(&seq),
    });
    Ok((rows.collect(), total))
}

/// Reads the rows the list's memory does not keep yet, `limit` at a time from slot `*from`
/// on (start-up, a lock at a time); false when none is left.
pub fn read_unread_rows(
    conn: &Connection,
    index: &mut ListIndex,
    from: &mut usize,
    limit: usize,
) -> Result<bool, StoreError> {
    let (unread, next) = index.unread(conn, *from, limit)?;
    read_rows(conn, index, &unread)?;
    *from = next;
    Ok(!unread.is_empty())
}

/// The rows of `page`'s unread hosts, rendered; the memory keeps them.
fn read_rows(
    conn: &Connection,
    index: &mut ListIndex,
    page: &[Listed],
) -> Result<Vec<(i64, Box<RawValue>)>, StoreError> {
    let mut unread: HashMap<i64, &[String]> = HashMap::new();
    for listed in page {
        if let Listed::Unread(seq, tags) = listed {
            unread.insert(*seq, tags);
        }
    }
    if unread.is_empty() {
        return Ok(Vec::new());
    }
    let seqs: Vec<i64> = unread.keys().copied().collect();
    let json = |err: serde_json::Error| StoreError::Json(err.to_string());
    let seq_list = serde_json::to_string(&seqs).map_err(json)?;
    let mut statement = conn.prepare_cached(SELECT_ROWS)?;
    let mut cursor = statement.query([&seq_list])?;
    let (mut read, mut hosts) = (Vec::new(), Vec::new());
    while let Some(row) = cursor.next()? {
        let seq = row.get(0)?;
        let tags = unread.get(&seq).map_or_else(Vec::new, |tags| tags.to_vec());
        hosts.push(Host {
            tags,
            ..host_from_row(row, 1)??
        });
        read.push(seq);
    }
    let any: bool = conn
        .prepare_cached(ANY_EXTENSIONS)?
        .query_row([], |row| row.get(0))?;
    if any {
        crate::store::interop::fill_extensions(conn, &mut hosts)?;
    }
    let rows = read
        .into_iter()
        .zip(&hosts)
        .map(|(seq, host)| serde_json::value::to_raw_value(&host.view()).map(|row| (seq, row)));
    let rows = rows.collect::<Result<Vec<_>, _>>().map_err(json)?;
    index.keep(&rows);
    Ok(rows)
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
    let auth_type: String = row.get(first + 5)?;
    let port: i64 = row.get(first + 3)?;
    let (Some(auth_type), Ok(port)) = (AuthType::parse(&auth_type), u16::try_from(port)) else {
        return Ok(Err(StoreError::CorruptRow(
            "a hosts row has an auth_type or port this build does not know",
        )));
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
        group_id: row.get(first + 8)?,
        tags: Vec::new(),
        is_favorite: row.get(first + 9)?,
        color: row.get(first + 10)?,
        order: row.get(first + 11)?,
        notes: row.get(first + 12)?,
        created_at: row.get(first + 13)?,
        updated_at: row.get(first + 14)?,
        last_used_at: row.get(first + 15)?,
        jump_host_ids: Vec::new(),
        ssh_options: Vec::new(),
        revision: row.get(first + 16)?,
    }))
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

/// A top-level group named like its id, through the groups store, for the tests below.
#[cfg(test)]
pub fn insert_group_for_tests(conn: &Connection, id: &str) -> Result<(), StoreError> {
    let group = crate::model::group::NewGroup {
        name: crate::model::name::Name::from_text(id)
            .map_err(|err| StoreError::BrokenInvariant(err.to_string()))?,
        parent_id: None,
        color: String::new(),
        icon: String::new(),
    };
    crate::store::groups::insert(conn, id, &group)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use serde_json::{json, Value};

    use crate::model::host::{NewHost, PasswordField};
    use crate::model::host_query::{Direction, GroupFilter, HostQuery, Sort};
    use crate::store::hosts::{
        by_id, delete, insert, insert_group_for_tests, list, move_to, read_unread_rows,
        toggle_favorite, touch_last_used,
    };
    use crate::store::list_index::ListIndex;
    use crate::store::{open_in_memory, StoreError};
    use rusqlite::params;

    fn new_host(name: &str, hostname: &str, extra: Value) -> NewHost {
        let mut body = json!({
            "name": name, "hostname": hostname, "port": 22, "username": "u",
            "auth": {"type": "agent"}
        });
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        NewHost::from_json(body.as_object().unwrap(), PasswordField::Absent).unwrap()
    }

    fn query(pairs: &[(&str, &str)]) -> HostQuery {
        HostQuery::parse(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| *value)
        })
        .unwrap()
    }

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

    #[test]
    fn tags_keep_their_order_and_pages_carry_them() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert(
                tx,
                "a",
                &new_host("a", "a", json!({"tags": ["z", "a", "m"]})),
                None,
            )?;
            insert(tx, "b", &new_host("b", "b", json!({"tags": ["q"]})), None)?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let (hosts, total) = db
            .read_list(|conn, index| list(conn, index, &query(&[])))
            .unwrap();
        let hosts: Vec<Value> = hosts
            .iter()
            .map(|row| serde_json::from_str(row.get()).unwrap())
            .collect();
        assert_eq!(total, 2);
        assert_eq!(hosts[0]["tags"], json!(["z", "a", "m"]));
        assert_eq!(hosts[1]["tags"], json!(["q"]));
    }

    #[test]
    fn search_is_a_case_insensitive_substring_with_literal_wildcards() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert(
                tx,
                "1",
                &new_host("Ünïcode Prod", "db1.example.com", json!({})),
                None,
            )?;
            insert(
                tx,
                "2",
                &new_host("50%_off", "x.example.org", json!({})),
                None,
            )?;
            insert(
                tx,
                "3",
                &new_host("plain", "y.example.org", json!({})),
                None,
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let found = |term: &str| -> HashSet<String> {
            let query = query(&[("search", term)]);
            let ids =
                db.read_list(|conn, index| Ok::<_, StoreError>(listed(conn, index, &query).0));
            ids.unwrap().into_iter().collect()
        };
        let ids =
            |list: &[&str]| -> HashSet<String> { list.iter().map(|s| s.to_string()).collect() };
        assert_eq!(found("ünï"), ids(&["1"]));
        assert_eq!(found("ÜN"), ids(&["1"]));
        assert_eq!(found("DB1.EX"), ids(&["1"]));
        assert_eq!(found("%_"), ids(&["2"]));
        assert_eq!(found("0%_"), ids(&["2"]));
        assert_eq!(found("_"), ids(&["2"]));
        assert_eq!(found("\"x"), ids(&[]));
        assert_eq!(found("example"), ids(&["1", "2", "3"]));
        assert_eq!(found("ex"), ids(&["1", "2", "3"]));
    }

    /// Host `n`'s id: a UUID, in an order unrelated to `n`.
    fn id_of(n: usize) -> String {
        format!(
            "{:08x}-0000-4000-8000-{n:012x}",
            (n * 37) % 61 * 0x0444_4444
        )
    }

    /// Host `n`'s id in a catalogue of other ids (the service writes only UUIDs; others sort
    /// by their first 16 bytes).
    fn short_id_of(n: usize) -> String {
        format!("host-{:02x}", (n * 37) % 61)
    }

    /// A catalogue with repeated names, two groups, tags of several shares, favorites and
    /// some used hosts.
    fn varied_catalogue() -> crate::store::Db {
        catalogue_with_ids(id_of)
    }

    fn catalogue_with_ids(id_of: fn(usize) -> String) -> crate::store::Db {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            insert_group_for_tests(tx, "g1")?;
            insert_group_for_tests(tx, "g2")?;
            for n in 0..60 {
                let mut tags = vec![json!("all")];
                if n % 3 == 0 {
                    tags.push(json!("third"));
                }
                if n == 7 {
                    tags.push(json!("rare"));
                }
                let group = match n % 4 {
                    0 => Value::Null,
                    1 | 2 => json!("g1"),
                    _ => json!("g2"),
                };
                let name = format!("{}-{}", ["Web", "db", "web", "Cache"][n % 4], n % 5);
                let hostname = format!("h{}.Example.com", (n * 7) % 13);
                // Mixed case: case-insensitive and binary orders differ.
                let hostname = match n % 2 {
                    0 => hostname.to_uppercase(),
                    _ => hostname,
                };
                let extra = json!({"tags": tags, "group_id": group, "is_favorite": n % 5 == 0});
                insert(tx, &id_of(n), &new_host(&name, &hostname, extra), None)?;
                if n % 3 == 1 {
                    touch_last_used(tx, &id_of(n))?;
                }
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        db
    }

    /// `query`'s page and total from one plain SQL query over every row, independent of the
    /// list's memory: a WHERE clause for the filters, an ORDER BY for the sort.
    fn oracle(conn: &rusqlite::Connection, query: &HostQuery) -> (Vec<String>, u64) {
        let mut clauses = vec!["1".to_owned()];
        let mut values: Vec<String> = Vec::new();
        match &query.group {
            None => {}
            Some(GroupFilter::Ungrouped) => clauses.push("group_id IS NULL".into()),
            Some(GroupFilter::Group(id)) => {
                values.push(id.clone());
                clauses.push(format!("group_id = ?{}", values.len()));
            }
        }
        if let Some(tag) = &query.tag {
            values.push(tag.clone());
            let at = values.len();
            clauses.push(format!(
                "seq IN (SELECT host_seq FROM host_tags WHERE tag = ?{at})"
            ));
        }
        if let Some(favorite) = query.favorite {
            clauses.push(format!("is_favorite = {}", i32::from(favorite)));
        }
        if let Some(term) = &query.search {
            values.push(term.to_lowercase());
            let at = values.len();
            clauses.push(format!(
                "(instr(name_key, ?{at}) > 0 OR instr(lower(hostname), ?{at}) > 0)"
            ));
        }
        let key = match query.sort {
            Sort::Name => "name_key",
            Sort::Hostname => "lower(hostname)",
            Sort::CreatedAt => "created_at",
            Sort::LastUsedAt => "last_used_at",
        };
        let order = match query.direction {
            Direction::Asc => format!("{key} IS NULL, {key}, id"),
            Direction::Desc => format!("{key} IS NULL, {key} DESC, id DESC"),
        };
        let sql = format!(
            "SELECT id FROM hosts WHERE {} ORDER BY {order}",
            clauses.join(" AND ")
        );
        let all: Vec<String> = conn
            .prepare(&sql)
            .unwrap()
            .query_map(rusqlite::params_from_iter(&values), |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let offset = query.offset().unwrap() as usize;
        let page = all.iter().skip(offset).take(query.per_page as usize);
        (page.cloned().collect(), all.len() as u64)
    }

    /// The ids of `query`'s page and the total, after asserting that each row the page
    /// shows (kept in memory or read) is the host as `by_id` reads it now, whole.
    fn listed(
        conn: &rusqlite::Connection,
        index: &mut ListIndex,
        query: &HostQuery,
    ) -> (Vec<String>, u64) {
        let (rows, total) = list(conn, index, query).unwrap();
        let ids = rows.iter().map(|row| {
            let shown: Value = serde_json::from_str(row.get()).unwrap();
            let id = shown["id"].as_str().unwrap().to_owned();
            let now = serde_json::to_value(by_id(conn, &id).unwrap().view()).unwrap();
            assert_eq!(shown, now, "a listed row is the host as it is now");
            id
        });
        (ids.collect(), total)
    }

    /// Asserts that `list` answers what the oracle does, each row whole and as it is now,
    /// with the rows kept in memory and without; returns the page's size.
    fn assert_list_matches_the_oracle(db: &crate::store::Db, pairs: &[(&str, &str)]) -> usize {
        let query = query(pairs);
        db.read_list(|conn, index| {
            let (ids, total) = listed(conn, index, &query);
            let mut without_rows = ListIndex::keeping_rows_up_to(0);
            assert_eq!(
                listed(conn, &mut without_rows, &query),
                (ids.clone(), total)
            );
            let size = ids.len();
            assert_eq!((ids, total), oracle(conn, &query), "{pairs:?}");
            Ok::<_, StoreError>(size)
        })
        .unwrap()
    }

    /// Filters whose sets are ranked (at most an eighth of the hosts: `rare`, the three
    /// combinations) and walked (the rest), empty ones included.
    const FILTERS: [&[(&str, &str)]; 14] = [
        &[],
        &[("tag", "third")],
        &[("tag", "rare")],
        &[("tag", "none-such")],
        &[("group", "g1")],
        &[("group", "")],
        &[("group", "unknown")],
        &[("favorite", "true")],
        &[("favorite", "false")],
        &[("search", "web")],
        &[("search", "B-")],
        &[("tag", "third"), ("search", "web")],
        &[("tag", "third"), ("favorite", "true")],
        &[
            ("tag", "all"),
            ("group", "g1"),
            ("favorite", "false"),
            ("search", "eb"),
        ],
    ];

    /// Every filter, sort and direction, and pages near both ends and past the end.
    fn every_query() -> Vec<Vec<(&'static str, &'static str)>> {
        let mut queries = Vec::new();
        for filter in FILTERS {
            for sort in ["name", "hostname", "created_at", "last_used_at"] {
                for order in ["asc", "desc"] {
                    for (page, per_page) in [("1", "7"), ("2", "7"), ("3", "50"), ("5", "3")] {
                        let mut pairs = filter.to_vec();
                        pairs.extend([
                            ("sort", sort),
                            ("order", order),
                            ("page", page),
                            ("per_page", per_page),
                        ]);
                        queries.push(pairs);
                    }
                }
            }
        }
        queries
    }

    #[test]
    fn list_answers_what_plain_sql_answers_for_every_filter_sort_direction_and_page() {
        for ids in [id_of, short_id_of] {
            let db = catalogue_with_ids(ids);
            let mut filled = 0;
            for pairs in every_query() {
                filled += usize::from(assert_list_matches_the_oracle(&db, &pairs) > 0);
            }
            assert!(filled > 200, "only {filled} non-empty pages compared");
        }
    }

    /// The rows are kept while they take at most the memory's bound: hosts with long notes
    /// that pass it drop every kept row, a catalogue over it keeps none from its first
    /// read, and every page still answers what plain SQL answers, each row as it is now.
    #[test]
    fn rows_past_the_bound_are_not_kept_and_pages_stay_right() {
        let db = varied_catalogue();
        let everything = query(&[("per_page", "1000")]);
        let mut index = ListIndex::keeping_rows_up_to(40_000);
        let kept_after_a_list = |index: &mut ListIndex| {
            db.read_list(|conn, _| {
                let (ids, total) = listed(conn, index, &everything);
                assert_eq!((ids, total), oracle(conn, &everything));
                Ok::<_, StoreError>(index.kept_rows())
            })
            .unwrap()
        };
        assert_eq!(kept_after_a_list(&mut index), 60);
        db.write(|tx| {
            let notes = json!({"notes": "n".repeat(4_000)});
            for n in 0..5 {
                insert(
                    tx,
                    &id_of(100 + n),
                    &new_host("long", "l", notes.clone()),
                    None,
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_eq!(kept_after_a_list(&mut index), 0);
        assert_eq!(kept_after_a_list(&mut index), 0);
        let mut fresh = ListIndex::keeping_rows_up_to(40_000);
        assert_eq!(kept_after_a_list(&mut fresh), 0);
        assert_eq!(
            kept_after_a_list(&mut ListIndex::keeping_rows_up_to(60_000)),
            65
        );
    }

    /// Start-up's reading of the rows (`read_unread_rows`, a batch at a time) keeps every
    /// live host's row before any page is asked, each as `by_id` reads it, and then stops.
    #[test]
    fn start_up_reads_every_row_in_batches_before_any_page() {
        let db = varied_catalogue();
        db.write(|tx| delete(tx, &id_of(5))).unwrap();
        let mut index = ListIndex::default();
        let (mut from, mut batches) = (0, 0);
        db.read_list(|conn, _| {
            while read_unread_rows(conn, &mut index, &mut from, 7)? {
                batches += 1;
            }
            assert_eq!((index.kept_rows(), batches), (59, 9));
            let everything = query(&[("per_page", "1000")]);
            assert_eq!(
                listed(conn, &mut index, &everything),
                oracle(conn, &everything)
            );
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }

    /// A batch of changed hosts of any size (creates, deletes, uses and renames mixed) is
    /// patched into every order in one pass; one of 1, 16, 17 or 56 changes, every filter,
    /// sort, direction and page answers what plain SQL answers.
    #[test]
    fn batches_of_1_to_56_changed_hosts_list_what_plain_sql_lists() {
        for batch in [1, 16, 17, 56] {
            let db = varied_catalogue();
            assert_list_matches_the_oracle(&db, &[]);
            db.write(|tx| {
                for n in 0..batch {
                    match n % 4 {
                        0 => drop(insert(
                            tx,
                            &id_of(2000 + n),
                            &new_host(&format!("B{n}"), "batch.example", json!({})),
                            None,
                        )?),
                        1 => delete(tx, &id_of(n))?,
                        2 => drop(touch_last_used(tx, &id_of(n))?),
                        _ => drop(tx.execute(
                            "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                            params![id_of(n), format!("Ä{n}"), format!("ä{n}")],
                        )?),
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
            for pairs in every_query().iter().step_by(2) {
                assert_list_matches_the_oracle(&db, pairs);
            }
        }
    }

    /// A tag's or a search term's set is kept between requests but never past a change: a
    /// tag asked before a retag, a term asked before a rename, a delete or a create answer
    /// the new state the next time.
    #[test]
    fn a_kept_tag_or_search_answers_what_changed_after_it_was_asked() {
        let db = varied_catalogue();
        let ids = |filter: &str, value: &str| -> Vec<String> {
            let query = query(&[(filter, value)]);
            let ids =
                db.read_list(|conn, index| Ok::<_, StoreError>(listed(conn, index, &query).0));
            let mut ids = ids.unwrap();
            ids.sort();
            ids
        };
        let found = |term: &str| ids("search", term);
        let tagged = |tag: &str| ids("tag", tag);
        let before = found("zebra");
        assert!(before.is_empty(), "{before:?}");
        assert_eq!(found("zebra"), before, "asked again, unchanged");
        db.write(|tx| {
            tx.execute(
                "UPDATE hosts SET name = 'Zebra', name_key = 'zebra' WHERE id = ?1",
                [id_of(3)],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_eq!(
            found("zebra"),
            vec![id_of(3)],
            "a rename after the term was asked"
        );
        db.write(|tx| {
            insert(
                tx,
                &id_of(3000),
                &new_host("zebra-2", "z.example", json!({})),
                None,
            )?;
            delete(tx, &id_of(3))
        })
        .unwrap();
        assert_eq!(found("zebra"), vec![id_of(3000)], "a create and a delete");
        for _ in 0..10 {
            found(&format!("other-term-{}", found("zebra").len()));
        }
        assert_eq!(
            found("zebra"),
            vec![id_of(3000)],
            "after more terms than are kept"
        );
        assert!(tagged("zebra-tag").is_empty());
        db.write(|tx| {
            tx.execute(
                "INSERT INTO host_tags (host_seq, tag, position) \
                 SELECT seq, 'zebra-tag', 99 FROM hosts WHERE id = ?1",
                [id_of(5)],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_eq!(
            tagged("zebra-tag"),
            vec![id_of(5)],
            "a tag added after it was asked"
        );
    }

    /// The memory follows every kind of change made after it was read, through the store
    /// or through plain SQL on the same connection.
    #[test]
    fn list_follows_every_kind_of_change_made_after_its_memory_was_read() {
        let db = varied_catalogue();
        let check = |db: &crate::store::Db| {
            for pairs in every_query().iter().step_by(3) {
                assert_list_matches_the_oracle(db, pairs);
            }
        };
        check(&db);
        db.write(|tx| {
            let extra = json!({"tags": ["third"], "is_favorite": true});
            insert(
                tx,
                &id_of(1001),
                &new_host("ZZ web", "zz.example.com", extra),
                None,
            )?;
            tx.execute(
                "UPDATE hosts SET name = 'Web renamed', name_key = 'web renamed' WHERE id = ?1",
                [id_of(3)],
            )?;
            delete(tx, &id_of(10))?;
            touch_last_used(tx, &id_of(20))?;
            move_to(tx, &id_of(21), Some("g2"))?;
            toggle_favorite(tx, &id_of(22))?;
            tx.execute(
                "UPDATE hosts SET notes = 'new notes', port = 2222, username = 'root', \
                 color = '#ff0000', password = x'00', revision = revision + 1 WHERE id = ?1",
                [id_of(23)],
            )?;
            crate::store::interop::write_jumps(tx, &id_of(24), &[id_of(25), id_of(26)])?;
            crate::store::interop::write_options(
                tx,
                &id_of(25),
                &["ServerAliveInterval 30".into()],
            )?;
            tx.execute(
                "DELETE FROM host_tags WHERE tag = 'third' AND host_seq < 20",
                [],
            )?;
            tx.execute("DELETE FROM host_tags WHERE host_seq = 3", [])?;
            tx.execute(
                "UPDATE host_tags SET position = 5 - position WHERE host_seq = 4",
                [],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        check(&db);
        // Renames and tag changes, each seen by a list, leave most of the text and of the
        // tag lists unowned: the memory is then read afresh, and answers the same.
        for round in 0..240 {
            db.write(|tx| {
                let name = format!("Renamed {round}");
                match round < 120 {
                    true => tx.execute(
                        "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                        params![id_of(round % 7), name, name.to_lowercase()],
                    )?,
                    false => tx.execute(
                        "UPDATE host_tags SET position = position + 1 WHERE host_seq = ?1",
                        [round as i64 % 9 + 1],
                    )?,
                };
                Ok::<_, StoreError>(())
            })
            .unwrap();
            assert_list_matches_the_oracle(&db, &[("search", "renamed"), ("sort", "hostname")]);
        }
        check(&db);
        db.read(|conn| {
            conn.execute(
                "UPDATE hosts SET hostname = 'web.other.example' WHERE id = ?1",
                [id_of(30)],
            )?;
            conn.execute(
                "UPDATE hosts SET notes = 'by SQL' WHERE id = ?1",
                [id_of(32)],
            )?;
            conn.execute("DELETE FROM host_jumps WHERE host_id = ?1", [id_of(24)])?;
            conn.execute("UPDATE host_ssh_options SET option = 'Compression yes'", [])?;
            conn.execute(
                "INSERT INTO host_tags (host_seq, tag, position) SELECT seq, 'rare', 9 \
                 FROM hosts WHERE id = ?1",
                [id_of(31)],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        check(&db);
    }

    /// An import of 1,001 hosts in one transaction is merged into the orders and answers
    /// what plain SQL answers.
    #[test]
    fn an_import_of_1001_hosts_at_once_answers_what_plain_sql_answers() {
        let db = varied_catalogue();
        assert_list_matches_the_oracle(&db, &[]);
        db.write(|tx| {
            for n in 0..1_001 {
                let name = format!("Batch {}", n % 17);
                insert(
                    tx,
                    &id_of(2000 + n),
                    &new_host(&name, "b.example", json!({})),
                    None,
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
        for pairs in every_query().iter().step_by(5) {
            assert_list_matches_the_oracle(&db, pairs);
        }
    }

    /// A host whose `seq` falls between those the memory holds (SQLite reuses the top one
    /// after a delete; another tool may write any) makes it read everything again.
    #[test]
    fn a_host_with_a_seq_between_known_ones_is_listed_after_a_full_read() {
        let db = varied_catalogue();
        assert_list_matches_the_oracle(&db, &[("per_page", "100")]);
        db.read(|conn| {
            conn.execute("DELETE FROM hosts WHERE seq = 5", [])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_list_matches_the_oracle(&db, &[("per_page", "100")]);
        db.read(|conn| {
            conn.execute(
                "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, \
                 auth_type, created_at, updated_at) VALUES (5, '00000000-0000-4000-8000-00000000b0ac', 'Back', 'back', \
                 'b.example', 22, 'u', 'agent', '2024-01-01T00:00:00.000Z', \
                 '2024-01-01T00:00:00.000Z')",
                [],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        assert_eq!(
            assert_list_matches_the_oracle(&db, &[("per_page", "100")]),
            60
        );
    }

    /// Orders patched host by host through random adds, deletes, renames (in any case),
    /// last uses, and changes that keep every sort key (a move, a favorite, a name written
    /// again) equal orders sorted afresh, and plain SQL, in every sort and direction, with
    /// and without a group or favorite filter.
    #[test]
    fn patched_orders_equal_orders_sorted_afresh_after_random_changes() {
        let db = varied_catalogue();
        let mut state: u64 = 7;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % bound
        };
        for round in 0..40 {
            db.write(|tx| {
                for step in 0..1 + next(4) {
                    let id = id_of(next(60) as usize);
                    let exists = by_id(tx, &id).is_ok();
                    match (next(8), exists) {
                        (0, _) | (_, false) => {
                            let new_id = id_of(3000 + round * 10 + step as usize);
                            let host =
                                new_host(&format!("N{}", next(9)), "Added.example", json!({}));
                            insert(tx, &new_id, &host, None)?;
                        }
                        (1, true) => delete(tx, &id)?,
                        (2, true) => drop(touch_last_used(tx, &id)?),
                        (3, true) => {
                            let name = ["web-0", "Zeta", "ärger", "WEB-0", "a"][next(5) as usize];
                            tx.execute(
                                "UPDATE hosts SET name = ?2, name_key = ?3 WHERE id = ?1",
                                params![id, name, name.to_lowercase()],
                            )?;
                        }
                        (5, true) => drop(toggle_favorite(tx, &id)?),
                        (6, true) => {
                            let group = [None, Some("g1"), Some("g2")][next(3) as usize];
                            drop(move_to(tx, &id, group)?);
                        }
                        (7, true) => {
                            tx.execute(
                                "UPDATE hosts SET name = name, name_key = name_key, \
                                 hostname = hostname WHERE id = ?1",
                                params![id],
                            )?;
                        }
                        _ => {
                            let hostname =
                                ["h1.example.com", "H1.EXAMPLE.COM", "z", "A"][next(4) as usize];
                            tx.execute(
                                "UPDATE hosts SET hostname = ?2 WHERE id = ?1",
                                params![id, hostname],
                            )?;
                        }
                    }
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let filters = [None, Some(("group", "g1")), Some(("favorite", "true"))];
            for (sort, order, filter) in ["name", "hostname", "created_at", "last_used_at"]
                .into_iter()
                .flat_map(|sort| ["asc", "desc"].map(|order| (sort, order)))
                .flat_map(|(sort, order)| filters.map(|filter| (sort, order, filter)))
            {
                let mut pairs = vec![("sort", sort), ("order", order), ("per_page", "1000")];
                pairs.extend(filter);
                let query = query(&pairs);
                let ids = |index: &mut ListIndex, conn: &rusqlite::Connection| {
                    listed(conn, index, &query).0
                };
                db.read_list(|conn, index| {
                    let patched = ids(index, conn);
                    assert_eq!(patched, ids(&mut ListIndex::default(), conn), "{round}");
                    assert_eq!(patched, oracle(conn, &query).0, "round {round}");
                    Ok::<_, StoreError>(())
                })
                .unwrap();
            }
        }
    }
}
