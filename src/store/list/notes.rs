//! The query language's `notes:` (docs/query.md): the notes are not in the list's memory,
//! so they are read from the database for the hosts the other terms left, a chunk at a time,
//! and judged by the plain evaluator (docs/performance.md, "Queries").
//!
//! Invariants: reads only the notes column of hosts that have notes; a host whose notes are
//! empty is judged with empty notes (so `-notes:x` keeps it), never skipped.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::model::query::{matches, HostFacts, Query};
use crate::store::StoreError;

/// Hosts read at a time.
const CHUNK: usize = 1024;
/// The non-empty notes of the hosts whose `seq`s are in the JSON array `?1`.
const SELECT_NOTES: &str = "SELECT h.seq, h.notes FROM json_each(?1) AS page \
     JOIN hosts AS h ON h.seq = page.value WHERE h.notes <> ''";

/// The `seq`s among `seqs` (ascending) whose notes `query` (of `notes:` terms) keeps.
pub fn matching(conn: &Connection, seqs: &[i64], query: &Query) -> Result<Vec<i64>, StoreError> {
    let mut kept = Vec::new();
    let mut statement = conn.prepare_cached(SELECT_NOTES)?;
    for chunk in seqs.chunks(CHUNK) {
        let list = serde_json::to_string(chunk).map_err(|err| StoreError::Json(err.to_string()))?;
        let rows = statement.query_map([&list], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let mut notes: HashMap<i64, String> = rows.collect::<Result<_, _>>()?;
        for seq in chunk {
            let facts = HostFacts {
                notes: notes.remove(seq).unwrap_or_default(),
                ..HostFacts::default()
            };
            if matches(query, &facts).is_some() {
                kept.push(*seq);
            }
        }
    }
    Ok(kept)
}
