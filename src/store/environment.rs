//! The sealed values of secret `set_env` entries (docs/forwards.md), by owner (a host or a
//! group) and variable name, in `env_secrets`.
//!
//! Invariants: values go in and out as opaque sealed bytes (this module never knows whether
//! the vault is locked); after `write` an owner holds a sealed value for exactly the secret
//! entries of its `set_env`, so a secret dropped from the list is gone from the file.

use rusqlite::{params, Connection};

use crate::model::environment::{EnvEntry, EnvValue};
use crate::model::forward_rule::Owner;
use crate::store::StoreError;

const INSERT: &str =
    "INSERT INTO env_secrets (host_id, group_id, name, sealed) VALUES (?1, ?2, ?3, ?4)";

fn owner_column(owner: &Owner) -> &'static str {
    match owner {
        Owner::Host(_) => "host_id",
        Owner::Group(_) => "group_id",
    }
}

/// Sealed values by variable name.
pub type SealedValues = Vec<(String, Vec<u8>)>;

/// Where a secret value is sealed: its owner and name (`<owner id>/<NAME>`), so a sealed
/// value copied to another row or name does not open.
pub fn seal_row(owner: &Owner, name: &str) -> String {
    format!("{}/{name}", owner.id())
}

/// The table and field of `SealContext` for these values.
pub const SEAL_TABLE: &str = "env_secrets";
pub const SEAL_FIELD: &str = "value";

/// Stores the `sealed` values (by name) and drops every stored value whose name is no
/// longer a secret entry of `entries`. Caller holds a write transaction.
pub fn write(
    conn: &Connection,
    owner: &Owner,
    entries: &[EnvEntry],
    sealed: &[(String, Vec<u8>)],
) -> Result<(), StoreError> {
    let secret_names: Vec<&str> = entries
        .iter()
        .filter(|entry| matches!(entry.value, EnvValue::Secret { .. }))
        .map(|entry| entry.name.as_str())
        .collect();
    let names =
        serde_json::to_string(&secret_names).map_err(|err| StoreError::Json(err.to_string()))?;
    let column = owner_column(owner);
    conn.prepare_cached(&format!(
        "DELETE FROM env_secrets WHERE {column} = ?1 \
         AND name NOT IN (SELECT value FROM json_each(?2))"
    ))?
    .execute(params![owner.id(), names])?;
    let (host_id, group_id) = match owner {
        Owner::Host(id) => (Some(id.as_str()), None),
        Owner::Group(id) => (None, Some(id.as_str())),
    };
    let mut replace = conn.prepare_cached(&format!(
        "DELETE FROM env_secrets WHERE {column} = ?1 AND name = ?2"
    ))?;
    let mut insert = conn.prepare_cached(INSERT)?;
    for (name, bytes) in sealed {
        replace.execute(params![owner.id(), name])?;
        insert.execute(params![host_id, group_id, name, bytes])?;
    }
    Ok(())
}

/// The sealed values of `owner`, by name.
pub fn sealed_of(conn: &Connection, owner: &Owner) -> Result<SealedValues, StoreError> {
    let column = owner_column(owner);
    let mut statement = conn.prepare_cached(&format!(
        "SELECT name, sealed FROM env_secrets WHERE {column} = ?1"
    ))?;
    let rows = statement.query_map([owner.id()], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
