//! The vault's one row: the KDF header (when a master password is set) and the data key
//! (raw, or sealed under the password-derived key).
//!
//! Invariants: the store never interprets the bytes (the vault does) and never knows whether
//! the vault is locked; the header and the key are written in one statement, so a crash
//! never leaves a header beside the other password's key.

use rusqlite::{params, Connection, OptionalExtension};

use crate::store::StoreError;

const SELECT_VAULT: &str = "SELECT header, data_key FROM vault WHERE id = 1";
const UPSERT_VAULT: &str = "INSERT INTO vault (id, header, data_key) VALUES (1, ?1, ?2)
     ON CONFLICT (id) DO UPDATE SET header = excluded.header, data_key = excluded.data_key";

/// The stored vault row, as bytes.
pub struct VaultRow {
    pub header: Option<Vec<u8>>,
    pub data_key: Vec<u8>,
}

pub fn load(conn: &Connection) -> Result<Option<VaultRow>, StoreError> {
    Ok(conn
        .query_row(SELECT_VAULT, [], |row| {
            Ok(VaultRow {
                header: row.get(0)?,
                data_key: row.get(1)?,
            })
        })
        .optional()?)
}

/// Replaces the vault row in one statement.
pub fn save(conn: &Connection, header: Option<&[u8]>, data_key: &[u8]) -> Result<(), StoreError> {
    conn.execute(UPSERT_VAULT, params![header, data_key])?;
    Ok(())
}
