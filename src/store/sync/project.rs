//! The catalogue as sync records (docs/sync.md, "What travels"): every row of every kind of
//! `kinds::KINDS` as a record of fields, the rows beside it as array fields, and its secrets
//! as they are sealed by the vault, each with the slot that opens it.
//!
//! Invariants: reads only (one statement a table, not one a record); never opens a secret
//! (that needs the vault: the caller does it); plain fields are the column values as JSON
//! (text, integer, null), so `apply` writes back exactly what it reads.

use std::collections::BTreeMap;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{json, Value};

use crate::model::identity::literal_slot;
use crate::model::sync::record::RecordKey;
use crate::store::environment::{SEAL_FIELD, SEAL_TABLE};
use crate::store::sync::kinds::{self, Kind, ANSWER_PREFIX, ENV_PREFIX, METHOD_PASSWORD};
use crate::store::StoreError;

/// A record's fields as the catalogue holds them (secret fields apart).
pub type Fields = BTreeMap<String, Value>;

/// A secret field as the catalogue holds it: sealed by the vault in `slot` of `row_id` in
/// `table`.
pub struct SealedField {
    pub key: RecordKey,
    pub field: String,
    pub table: &'static str,
    pub row_id: String,
    pub slot: &'static str,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for SealedField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealedField({:?}, {}, <sealed>)", self.key, self.field)
    }
}

/// The whole catalogue as records.
#[derive(Debug, Default)]
pub struct Projected {
    pub records: BTreeMap<RecordKey, Fields>,
    pub sealed: Vec<SealedField>,
}

/// Reads every synced record of the catalogue.
pub fn project(conn: &Connection) -> Result<Projected, StoreError> {
    let mut out = Projected::default();
    for kind in kinds::KINDS {
        read_rows(conn, kind, &mut out)?;
    }
    read_host_children(conn, &mut out)?;
    read_env(conn, &mut out)?;
    read_certificates(conn, &mut out)?;
    read_identity_children(conn, &mut out)?;
    Ok(out)
}

/// A column value as a field value.
pub fn json_of(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => json!(n),
        ValueRef::Real(x) => json!(x),
        ValueRef::Text(text) => Value::String(String::from_utf8_lossy(text).into_owned()),
        ValueRef::Blob(_) => Value::Null,
    }
}

fn key(kind: &str, id: String) -> RecordKey {
    (kind.to_owned(), id)
}

fn read_rows(conn: &Connection, kind: &Kind, out: &mut Projected) -> Result<(), StoreError> {
    let secrets: Vec<&str> = kind.secrets.iter().map(|secret| secret.column).collect();
    let columns = [kind.fields, &secrets[..]].concat().join(", ");
    let sql = format!("SELECT id, {columns} FROM {}", kind.table);
    let mut statement = conn.prepare(&sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let mut fields = Fields::new();
        for (index, name) in kind.fields.iter().enumerate() {
            fields.insert((*name).to_owned(), json_of(row.get_ref(index + 1)?));
        }
        for (index, secret) in kind.secrets.iter().enumerate() {
            let bytes: Option<Vec<u8>> = row.get(kind.fields.len() + 1 + index)?;
            match bytes {
                Some(bytes) => out.sealed.push(SealedField {
                    key: key(kind.kind, id.clone()),
                    field: secret.column.to_owned(),
                    table: kind.table,
                    row_id: id.clone(),
                    slot: secret.slot,
                    bytes,
                }),
                None => {
                    fields.insert(secret.column.to_owned(), Value::Null);
                }
            }
        }
        for child in kinds::child_fields(kind) {
            fields.insert((*child).to_owned(), Value::Array(Vec::new()));
        }
        out.records.insert(key(kind.kind, id), fields);
    }
    Ok(())
}

/// Appends `value` to the array field `field` of the record `(kind, id)`, if it is read.
fn push(out: &mut Projected, kind: &str, id: String, field: &str, value: Value) {
    if let Some(Value::Array(items)) = out
        .records
        .get_mut(&key(kind, id))
        .and_then(|fields| fields.get_mut(field))
    {
        items.push(value);
    }
}

fn read_host_children(conn: &Connection, out: &mut Projected) -> Result<(), StoreError> {
    const LISTS: [(&str, &str); 3] = [
        (
            "tags",
            "SELECT h.id, t.tag FROM host_tags AS t JOIN hosts AS h ON h.seq = t.host_seq \
             ORDER BY t.host_seq, t.position",
        ),
        (
            "jumps",
            "SELECT host_id, jump_host_id FROM host_jumps ORDER BY host_id, position",
        ),
        (
            "ssh_options",
            "SELECT host_id, option FROM host_ssh_options ORDER BY host_id, position",
        ),
    ];
    for (field, sql) in LISTS {
        let mut statement = conn.prepare(sql)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let value = json_of(row.get_ref(1)?);
            push(out, "host", row.get(0)?, field, value);
        }
    }
    Ok(())
}

fn read_env(conn: &Connection, out: &mut Projected) -> Result<(), StoreError> {
    let mut statement = conn.prepare("SELECT host_id, group_id, name, sealed FROM env_secrets")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let host: Option<String> = row.get(0)?;
        let group: Option<String> = row.get(1)?;
        let name: String = row.get(2)?;
        let (kind, owner) = match (host, group) {
            (Some(host), _) => ("host", host),
            (None, Some(group)) => ("group", group),
            (None, None) => continue,
        };
        out.sealed.push(SealedField {
            key: key(kind, owner.clone()),
            field: format!("{ENV_PREFIX}{name}"),
            table: SEAL_TABLE,
            row_id: format!("{owner}/{name}"),
            slot: SEAL_FIELD,
            bytes: row.get(3)?,
        });
    }
    Ok(())
}

fn read_certificates(conn: &Connection, out: &mut Projected) -> Result<(), StoreError> {
    let mut statement = conn.prepare(
        "SELECT key_id, principals, certificate, created_at, announced FROM key_certificates \
         ORDER BY key_id, seq",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let value = json!({
            "principals": json_of(row.get_ref(1)?),
            "certificate": json_of(row.get_ref(2)?),
            "created_at": json_of(row.get_ref(3)?),
            "announced": json_of(row.get_ref(4)?),
        });
        push(out, "key", row.get(0)?, "certificates", value);
    }
    Ok(())
}

fn read_identity_children(conn: &Connection, out: &mut Projected) -> Result<(), StoreError> {
    let mut statement = conn.prepare(
        "SELECT identity_id, type, key_id, password FROM identity_methods \
         ORDER BY identity_id, position",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let value = json!({"type": json_of(row.get_ref(1)?), "key_id": json_of(row.get_ref(2)?)});
        if let Some(bytes) = row.get::<_, Option<Vec<u8>>>(3)? {
            out.sealed.push(SealedField {
                key: key("identity", id.clone()),
                field: METHOD_PASSWORD.to_owned(),
                table: "identities",
                row_id: id.clone(),
                slot: "password",
                bytes,
            });
        }
        push(out, "identity", id, "methods", value);
    }
    let mut statement = conn.prepare(
        "SELECT identity_id, position, prompt, answer, literal FROM identity_answers \
         ORDER BY identity_id, position",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let position: i64 = row.get(1)?;
        let value = json!({"prompt": json_of(row.get_ref(2)?), "answer": json_of(row.get_ref(3)?)});
        let slot = usize::try_from(position).ok().and_then(literal_slot);
        if let (Some(bytes), Some(slot)) = (row.get::<_, Option<Vec<u8>>>(4)?, slot) {
            out.sealed.push(SealedField {
                key: key("identity", id.clone()),
                field: format!("{ANSWER_PREFIX}{position}"),
                table: "identities",
                row_id: id.clone(),
                slot,
                bytes,
            });
        }
        push(out, "identity", id, "answers", value);
    }
    Ok(())
}
