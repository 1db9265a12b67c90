//! Sets of hosts by slot: `SlotSet`, a bitmap a filter becomes, and `MemberSets`, the names
//! (group ids, tags) by number with each one's slots (docs/performance.md, "How the host
//! list is answered").
//!
//! Invariants: pure memory, no SQL; a `MemberSets` name keeps its number for the memory's
//! life, and its slots stay ascending without repeats.

use std::collections::HashMap;

/// A set of slots: bit `s % 64` of word `s / 64`.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct SlotSet(Vec<u64>);

impl SlotSet {
    /// The set of the bitmap `words` (as `SearchText::scan` answers it).
    pub fn from_words(words: Vec<u64>) -> SlotSet {
        SlotSet(words)
    }

    /// The set of `members`, ascending: each word is filled in a register, then stored.
    pub fn of(slots: usize, members: &[u32]) -> SlotSet {
        let mut words = vec![0u64; slots.div_ceil(64)];
        for chunk in members.chunk_by(|a, b| a / 64 == b / 64) {
            let word = chunk.iter().fold(0, |word, slot| word | 1 << (slot % 64));
            words[chunk[0] as usize / 64] |= word;
        }
        SlotSet(words)
    }

    pub fn insert(&mut self, slot: u32) {
        let word = slot as usize / 64;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (slot % 64);
    }

    pub fn remove(&mut self, slot: u32) {
        if let Some(word) = self.0.get_mut(slot as usize / 64) {
            *word &= !(1 << (slot % 64));
        }
    }

    /// 1 when the set holds `slot`, else 0.
    pub fn bit(&self, slot: u32) -> usize {
        let word = self.0.get(slot as usize / 64);
        word.map_or(0, |word| (word >> (slot % 64)) as usize & 1)
    }

    pub fn contains(&self, slot: u32) -> bool {
        self.bit(slot) == 1
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    /// The number of slots both sets hold.
    pub fn and_count(&self, other: &SlotSet) -> usize {
        let both = self
            .0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a & b).count_ones());
        both.map(|count| count as usize).sum()
    }

    /// Keeps the slots `other` holds, or with `not` those it does not.
    pub fn and(&mut self, other: &SlotSet, not: bool) {
        for (at, word) in self.0.iter_mut().enumerate() {
            let other = other.0.get(at).copied().unwrap_or(0);
            *word &= if not { !other } else { other };
        }
    }

    /// Adds the slots `other` holds.
    pub fn or(&mut self, other: &SlotSet) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }

    /// The slots, ascending.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(index, word)| {
            let mut word = *word;
            std::iter::from_fn(move || {
                let bit = (word != 0).then(|| word.trailing_zeros())?;
                word &= word - 1;
                Some(index as u32 * 64 + bit)
            })
        })
    }
}

/// Names (group ids, tags) by number, and each one's slots, ascending.
#[derive(Default)]
pub struct MemberSets {
    numbers: HashMap<String, u32>,
    names: Vec<String>,
    slots: Vec<Vec<u32>>,
}

impl MemberSets {
    /// The number of `name`, added when new.
    pub fn intern(&mut self, name: &str) -> u32 {
        let next = self.slots.len() as u32;
        if let Some(number) = self.numbers.get(name) {
            return *number;
        }
        self.numbers.insert(name.to_owned(), next);
        self.names.push(name.to_owned());
        self.slots.push(Vec::new());
        next
    }

    /// The name of number `number`.
    pub fn name(&self, number: u32) -> &str {
        self.names.get(number as usize).map_or("", String::as_str)
    }

    /// The slots of `name` (none when unknown).
    pub fn of(&self, name: &str) -> &[u32] {
        self.numbers
            .get(name)
            .map_or(&[], |number| &self.slots[*number as usize])
    }

    /// Every name and its slots, in no order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &[u32])> + '_ {
        self.names
            .iter()
            .zip(&self.slots)
            .map(|(name, slots)| (name.as_str(), slots.as_slice()))
    }

    pub fn add(&mut self, number: u32, slot: u32) {
        if let Some(slots) = self.slots.get_mut(number as usize) {
            if let Err(at) = slots.binary_search(&slot) {
                slots.insert(at, slot);
            }
        }
    }

    pub fn remove(&mut self, number: u32, slot: u32) {
        if let Some(slots) = self.slots.get_mut(number as usize) {
            slots.binary_search(&slot).map(|at| slots.remove(at)).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MemberSets, SlotSet};

    #[test]
    fn a_slot_set_of_members_holds_exactly_them_across_words() {
        let members = [0, 1, 63, 64, 65, 200];
        let set = SlotSet::of(256, &members);
        assert_eq!(set.ones().collect::<Vec<_>>(), members);
        assert_eq!(set.count(), members.len());
        assert!(set.contains(63) && !set.contains(62) && !set.contains(1_000));
    }

    #[test]
    fn inserts_grow_the_set_and_removes_of_unknown_slots_change_nothing() {
        let mut set = SlotSet::default();
        set.insert(130);
        set.insert(3);
        set.remove(9_999);
        set.remove(3);
        assert_eq!(set.ones().collect::<Vec<_>>(), [130]);
    }

    #[test]
    fn and_keeps_the_common_slots_and_and_not_the_others() {
        let all = SlotSet::of(130, &[1, 2, 70, 129]);
        let some = SlotSet::of(70, &[2, 69]);
        assert_eq!(all.and_count(&some), 1);
        let mut both = all.clone();
        both.and(&some, false);
        assert_eq!(both.ones().collect::<Vec<_>>(), [2]);
        let mut rest = all;
        rest.and(&some, true);
        assert_eq!(rest.ones().collect::<Vec<_>>(), [1, 70, 129]);
    }

    #[test]
    fn member_sets_number_names_once_and_keep_slots_ascending_without_repeats() {
        let mut sets = MemberSets::default();
        let (a, b) = (sets.intern("a"), sets.intern("b"));
        assert_eq!((a, b, sets.intern("a")), (0, 1, 0));
        for slot in [5, 1, 5, 3] {
            sets.add(a, slot);
        }
        sets.remove(a, 3);
        sets.remove(b, 3);
        assert_eq!(sets.of("a"), [1, 5]);
        assert!(sets.of("b").is_empty() && sets.of("unknown").is_empty());
        assert_eq!(sets.name(b), "b");
    }
}
