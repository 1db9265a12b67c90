//! Each host's own values that can be inherited (port, username, identity, auth, chain) and
//! two facts (`has:notes`, own forward rules), as the list's memory keeps them for the query
//! language's keys on inherited values (docs/query.md; docs/performance.md, "Queries").
//!
//! Hosts share few combinations of these (most inherit everything, or set the same few
//! values), so a slot holds a number: its combination (`Own`) in a table of the distinct
//! ones, and a byte of flags. At a million hosts that is 5 MB, whatever the values.
//!
//! Invariants: pure memory, no SQL (rows come from store::list::reading); combination 0 is
//! "everything inherited", the value of a slot without a host; a combination keeps its
//! number for the memory's life; no secret (a stored password is a bit).

use std::collections::HashMap;

use crate::store::list::reading::{Chunk, OwnRow, SlotRow};

/// The slot's host has non-empty notes.
pub const NOTES: u8 = 1;
/// The slot's host has forward rules of its own.
pub const FORWARDS: u8 = 2;

/// A host's own inheritable values: `None` where it inherits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Own {
    pub port: Option<u16>,
    pub username: Option<String>,
    pub identity_id: Option<String>,
    /// `password`, `key` or `agent`.
    pub auth_type: Option<String>,
    pub key_id: Option<String>,
    pub has_password: bool,
    /// Hop ids in order; `Some([])`: a direct connection of its own.
    pub chain: Option<Vec<String>>,
}

impl Own {
    /// A row's flags.
    fn flags_of(row: &SlotRow, chunk: &Chunk) -> u8 {
        let mut flags = 0;
        if row.own.has_notes {
            flags |= NOTES;
        }
        if chunk.forwards.contains(&row.seq) {
            flags |= FORWARDS;
        }
        flags
    }

    /// A row's own values, its texts looked up in its chunk.
    fn of_row(row: &SlotRow, chunk: &Chunk) -> Own {
        let name = |number: Option<usize>| number.and_then(|at| chunk.names.get(at)).cloned();
        let hops = |hops: &Vec<usize>| hops.iter().filter_map(|at| name(Some(*at))).collect();
        let own = &row.own;
        let chain = own
            .jumps_set
            .then(|| chunk.jumps.get(&row.seq).map(hops).unwrap_or_default());
        Own {
            port: own.port,
            username: name(own.username),
            identity_id: name(own.identity),
            auth_type: name(own.auth_type),
            key_id: name(own.key),
            has_password: own.has_password,
            chain,
        }
    }
}

/// The combinations by slot, numbered.
pub struct OwnFields {
    combination_of: Vec<u32>,
    flags: Vec<u8>,
    combinations: Vec<Own>,
    numbers: HashMap<Own, u32>,
    /// The combination of each `OwnRow` of one chunk (its `generation`) met so far: a
    /// chunk's hosts share few, so most rows are numbered without building their `Own`.
    chunk_numbers: (u64, HashMap<OwnRow, u32>),
}

impl Default for OwnFields {
    fn default() -> OwnFields {
        OwnFields {
            combination_of: Vec::new(),
            flags: Vec::new(),
            combinations: vec![Own::default()],
            numbers: HashMap::from([(Own::default(), 0)]),
            chunk_numbers: (0, HashMap::new()),
        }
    }
}

impl OwnFields {
    /// Room for one more slot, with everything inherited.
    pub fn push(&mut self) {
        self.combination_of.push(0);
        self.flags.push(0);
    }

    /// Sets a slot's values from its row (`None`: no host, everything back to inherited).
    /// A row without a chain of its own is numbered through the chunk's cache.
    pub fn set_row(&mut self, slot: u32, row: Option<(&SlotRow, &Chunk)>) {
        let Some((row, chunk)) = row else {
            return self.put(slot, 0, 0);
        };
        let flags = Own::flags_of(row, chunk);
        let cached = chunk.generation != 0 && !row.own.jumps_set;
        if cached && self.chunk_numbers.0 != chunk.generation {
            self.chunk_numbers = (chunk.generation, HashMap::new());
        }
        if let Some(number) = self.chunk_numbers.1.get(&row.own).filter(|_| cached) {
            return self.put(slot, *number, flags);
        }
        let number = self.number(Own::of_row(row, chunk));
        if cached {
            self.chunk_numbers.1.insert(row.own, number);
        }
        self.put(slot, number, flags);
    }

    /// Sets a slot's values (`None`: no host, everything back to inherited).
    #[cfg(test)]
    pub fn set(&mut self, slot: u32, own: Option<(Own, u8)>) {
        let (own, flags) = own.unwrap_or_default();
        let number = self.number(own);
        self.put(slot, number, flags);
    }

    /// The number of a combination, a new one when it was never met.
    fn number(&mut self, own: Own) -> u32 {
        match self.numbers.get(&own) {
            Some(number) => *number,
            None => {
                let number = self.combinations.len() as u32;
                self.combinations.push(own.clone());
                self.numbers.insert(own, number);
                number
            }
        }
    }

    fn put(&mut self, slot: u32, number: u32, flags: u8) {
        if let (Some(kept), Some(kept_flags)) = (
            self.combination_of.get_mut(slot as usize),
            self.flags.get_mut(slot as usize),
        ) {
            (*kept, *kept_flags) = (number, flags);
        }
    }

    /// The slot's combination number and flags.
    pub fn of(&self, slot: u32) -> (u32, u8) {
        let at = slot as usize;
        (
            self.combination_of.get(at).copied().unwrap_or(0),
            self.flags.get(at).copied().unwrap_or(0),
        )
    }

    /// Combination `number`'s values.
    pub fn combination(&self, number: u32) -> &Own {
        &self.combinations[number as usize]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{Own, OwnFields, FORWARDS, NOTES};

    #[test]
    fn equal_values_share_a_number_and_a_gone_host_inherits_everything() {
        let mut fields = OwnFields::default();
        (0..3).for_each(|_| fields.push());
        let root = Own {
            username: Some("root".into()),
            ..Own::default()
        };
        fields.set(0, Some((root.clone(), NOTES)));
        fields.set(1, Some((root.clone(), FORWARDS)));
        fields.set(2, Some((Own::default(), 0)));
        let (first, second) = (fields.of(0), fields.of(1));
        assert_eq!(
            (first.0, first.1, second.0, second.1),
            (1, NOTES, 1, FORWARDS)
        );
        assert_eq!(fields.combination(1), &root);
        assert_eq!(fields.of(2), (0, 0));
        fields.set(0, None);
        assert_eq!(fields.of(0), (0, 0));
        fields.set(2, Some((root.clone(), 0)));
        assert_eq!(fields.of(2), (1, 0), "no combination twice");
    }
}
