//! The SQL of the importers (docs/import.md): the catalogue an import's plan is made
//! against, and the import records (`import_records`: where each imported object came
//! from and what the import last wrote into it).
//!
//! Invariants: runs in the caller's transaction; a record is written for every object an
//! import created, matched or updated, in the same transaction as the object, so a record
//! never names an object this import did not write; a password is recorded only by the
//! digest of its sealed bytes.

use std::collections::HashMap;

use rusqlite::{params, Connection};
use serde_json::{Map, Value};

use crate::import::plan::{Kind, Record, Stored};
use crate::model::forward_rule::Owner;
use crate::store::{catalogue, forwards, groups, identities, keys, now_timestamp, StoreError};
use crate::vault::foreign::sha256_hex;

const SELECT_RECORDS: &str =
    "SELECT kind, source_id, object_id, fields FROM import_records WHERE format = ?1";
const UPSERT_RECORD: &str = "INSERT INTO import_records (format, kind, source_id, object_id, \
     fields, imported_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (format, kind, source_id) \
     DO UPDATE SET object_id = excluded.object_id, fields = excluded.fields, \
     imported_at = excluded.imported_at";
const SELECT_HOST_PASSWORDS: &str = "SELECT id, password FROM hosts WHERE password IS NOT NULL";
const SELECT_IDENTITY_PASSWORDS: &str = "SELECT identity_id, password FROM identity_methods \
     WHERE type = 'password' AND password IS NOT NULL";

/// Everything the plan of an import of `format` decides against; `sealed` is
/// `sealed_passwords`, read once by the caller (which opens some of them).
pub fn stored(
    conn: &Connection,
    format: &str,
    sealed: &HashMap<String, Vec<u8>>,
) -> Result<Stored, StoreError> {
    let mut hosts = catalogue::all_hosts(conn)?;
    catalogue::fill_tags(conn, &mut hosts)?;
    let hosts: HashMap<_, _> = hosts
        .into_iter()
        .map(|host| (host.id.clone(), host))
        .collect();
    let mut host_rules: HashMap<String, Vec<String>> = HashMap::new();
    for rule in forwards::all(conn)? {
        if let Owner::Host(id) = &rule.owner {
            host_rules
                .entry(id.clone())
                .or_default()
                .push(rule.spec.directive());
        }
    }
    let key_names = keys::list(conn)?
        .into_iter()
        .map(|key| (crate::model::fold::key(&key.name), key.id))
        .collect();
    Ok(Stored {
        groups: groups::all(conn)?,
        hosts,
        host_rules,
        identities: identities::list(conn)?,
        key_names,
        records: records(conn, format)?,
        password_digests: sealed
            .iter()
            .map(|(id, bytes)| (id.clone(), sha256_hex(&[bytes])))
            .collect(),
    })
}

fn records(conn: &Connection, format: &str) -> Result<HashMap<(Kind, String), Record>, StoreError> {
    let mut statement = conn.prepare_cached(SELECT_RECORDS)?;
    let rows = statement.query_map([format], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
        ))
    })?;
    let mut out = HashMap::new();
    for row in rows {
        let (kind, source_id, object_id, fields) = row?;
        let kind = match kind.as_str() {
            "host" => Kind::Host,
            "group" => Kind::Group,
            _ => Kind::Identity,
        };
        let fields = match serde_json::from_str(&fields) {
            Ok(Value::Object(fields)) => fields,
            _ => Map::new(),
        };
        out.insert((kind, source_id), Record { object_id, fields });
    }
    Ok(out)
}

/// Records that `(format, kind, source_id)` is `object_id` with `fields` as written.
pub fn record(
    conn: &Connection,
    format: &str,
    kind: Kind,
    source_id: &str,
    object_id: &str,
    fields: &Map<String, Value>,
) -> Result<(), StoreError> {
    conn.prepare_cached(UPSERT_RECORD)?.execute(params![
        format,
        kind.as_str(),
        source_id,
        object_id,
        Value::Object(fields.clone()).to_string(),
        now_timestamp(),
    ])?;
    Ok(())
}

/// The sealed bytes of every stored host and identity password, by object id (an import
/// opens the ones the last import wrote, to compare them with the source's).
pub fn sealed_passwords(conn: &Connection) -> Result<HashMap<String, Vec<u8>>, StoreError> {
    let mut out = HashMap::new();
    for query in [SELECT_HOST_PASSWORDS, SELECT_IDENTITY_PASSWORDS] {
        let mut statement = conn.prepare_cached(query)?;
        let rows = statement.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?))
        })?;
        for row in rows {
            let (id, sealed) = row?;
            out.insert(id, sealed);
        }
    }
    Ok(out)
}
