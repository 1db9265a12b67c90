//! Bringing the host table to the connection's state from the hosts' change log: each
//! logged host read again, its places in the orders found by the old keys, then merged in
//! by the new ones (docs/performance.md, "How the host list is answered").
//!
//! Invariants: a patched table equals one read afresh (tested in store::list::tests); when
//! it cannot be patched (a host between known `seq`s never seen, an order at odds with the
//! keys) the caller reads everything again.

use rusqlite::Connection;

use crate::store::list::order::SORTS;
use crate::store::list::reading;
use crate::store::list::table::HostTable;
use crate::store::StoreError;

/// Applies the logged changes. `None`: read everything again instead.
pub fn patch(conn: &Connection, mut table: HostTable) -> Result<Option<HostTable>, StoreError> {
    table.forget_kept_sets();
    let mut changed = Vec::new();
    for seq in reading::changed_seqs(conn)? {
        let Some(slot) = table.slot_of(seq) else {
            return Ok(None);
        };
        changed.push((seq, slot));
    }
    // Each changed host's places, found by the keys before any of them changes.
    let live = |table: &HostTable| {
        let slots = changed.iter().map(|(_, slot)| *slot);
        slots
            .filter(|slot| table.live.contains(*slot))
            .collect::<Vec<u32>>()
    };
    let (was_live, mut places) = (live(&table), Vec::new());
    for (order, sort) in table.orders.iter().zip(SORTS) {
        let Some(found) = order.places(&table.keys, sort, &was_live) else {
            return Ok(None);
        };
        places.push(found);
    }
    for (seq, slot) in &changed {
        let chunk = reading::host(conn, *seq)?;
        table.write(*slot, chunk.hosts.first().map(|row| (row, &chunk)));
        let tags = chunk.tags_by_host().next().map(|(_, tags)| tags);
        table.set_tags(*seq, tags.unwrap_or_default(), &chunk.names);
        if let Some(row) = table.rows.get_mut(*slot as usize).and_then(Option::take) {
            table.row_bytes -= row.get().len();
        }
    }
    let mut into = live(&table);
    let same = into == was_live && was_live.len() == changed.len();
    for (at, places) in places.iter().enumerate() {
        let keys = (&table.keys, SORTS[at]);
        if !table.orders[at].reorder(keys, places, &mut into, same) {
            return Ok(None);
        }
    }
    Ok(Some(table))
}
