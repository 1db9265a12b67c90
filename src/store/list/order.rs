//! The list's orders: what the sorts compare per slot (`SortKeys`) and each sort's order of
//! the live slots (`Order`), sorted once and then patched in place (docs/api.md, API: Hosts,
//! "List"; docs/performance.md, "How the host list is answered").
//!
//! Invariants: the list's order is defined here alone (`SortKeys::cmp`: the key, then the
//! id, then the slot, so no two hosts tie); an `Order` holds every live slot once,
//! ascending by `cmp`, or `reorder` says it was at odds with the keys.

use std::cmp::Ordering;

use crate::model::host_query::Sort;
use crate::store::list::search_text::SearchText;
use crate::store::list::sets::SlotSet;

/// The sorts, in `Sort`'s order (the orders are indexed by `sort as usize`).
pub const SORTS: [Sort; 4] = [
    Sort::Name,
    Sort::Hostname,
    Sort::CreatedAt,
    Sort::LastUsedAt,
];
/// `last_used_at` of a never-used host (last in both directions), and a time that does not
/// parse (after any other).
pub const NEVER: u64 = u64::MAX;
pub const UNREADABLE: u64 = u64::MAX - 1;
/// A place not yet filled in a merge.
const UNFILLED: u32 = u32::MAX;

/// What the sorts compare, by slot.
#[derive(Default)]
pub struct SortKeys {
    /// Name keys and lowercased hostnames, which the search scans too.
    pub text: SearchText,
    /// A UUID as a number (the order of its lowercase text, the only ids the service
    /// writes), another id as its first 16 bytes.
    pub ids: Vec<u128>,
    pub created: Vec<u64>,
    pub last_used: Vec<u64>,
}

/// One sort's order: every live slot, ascending.
#[derive(Default)]
pub struct Order {
    pub slots: Vec<u32>,
    /// Each slot's place in `slots`, right for the places below `ranked`.
    pub ranks: Vec<u32>,
    pub ranked: usize,
    /// Per direction, the slots of each eighth of the order as shown (when a walk needs them).
    pub eighths: [Vec<SlotSet>; 2],
}

impl SortKeys {
    /// `a` against `b` in `sort`'s ascending order: the key, the id, then the slot.
    pub fn cmp(&self, sort: Sort, a: u32, b: u32) -> Ordering {
        let (x, y) = (a as usize, b as usize);
        let key = match sort {
            Sort::Name => self.text.field(a, 0).cmp(self.text.field(b, 0)),
            Sort::Hostname => self.text.field(a, 1).cmp(self.text.field(b, 1)),
            Sort::CreatedAt => self.created[x].cmp(&self.created[y]),
            Sort::LastUsedAt => self.last_used[x].cmp(&self.last_used[y]),
        };
        key.then(self.ids[x].cmp(&self.ids[y])).then(a.cmp(&b))
    }

    /// A number that orders like `cmp` wherever it differs: a text key's first 16 bytes, a
    /// time with the id's first half.
    fn prefix(&self, sort: Sort, slot: u32) -> u128 {
        let (index, id) = (slot as usize, self.ids[slot as usize] >> 64);
        match sort {
            Sort::Name => prefix(self.text.field(slot, 0)),
            Sort::Hostname => prefix(self.text.field(slot, 1)),
            Sort::CreatedAt => u128::from(self.created[index]) << 64 | id,
            Sort::LastUsedAt => u128::from(self.last_used[index]) << 64 | id,
        }
    }
}

impl Order {
    /// The `live` slots sorted by `sort`.
    pub fn sorted(keys: &SortKeys, sort: Sort, live: &SlotSet) -> Order {
        let mut keyed: Vec<_> = live
            .ones()
            .map(|slot| (keys.prefix(sort, slot), slot))
            .collect();
        // The prefix settles most comparisons, so the sort mostly reads one array.
        keyed.sort_unstable_by(|(x, a), (y, b)| x.cmp(y).then_with(|| keys.cmp(sort, *a, *b)));
        Order {
            slots: keyed.into_iter().map(|(_, slot)| slot).collect(),
            ..Order::default()
        }
    }

    /// The places of `slots` (each must be in the order), ascending; `None` when one is
    /// not where the keys say (the order was at odds with them).
    pub fn places(&self, keys: &SortKeys, sort: Sort, slots: &[u32]) -> Option<Vec<usize>> {
        let search = |slot: &u32| {
            self.slots
                .binary_search_by(|probe| keys.cmp(sort, *probe, *slot))
        };
        let mut found = slots
            .iter()
            .map(search)
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        found.sort_unstable();
        Some(found)
    }

    /// Takes the slots at `places` (ascending) out and merges `into` in at their places by
    /// the current keys, moving each stretch between two of them once, in place: one path
    /// for one change and for thousands (an import). Nothing moves when the same hosts
    /// changed (`same`) and each still sits between its neighbours (a host moved, made a
    /// favorite, retagged, its notes edited). False when the order was at odds with the keys.
    pub fn reorder(
        &mut self,
        (keys, sort): (&SortKeys, Sort),
        places: &[usize],
        into: &mut [u32],
        same: bool,
    ) -> bool {
        let order = &mut self.slots;
        let before = |a: u32, b: u32| keys.cmp(sort, a, b).is_lt();
        let sits = |place: usize| {
            (place == 0 || before(order[place - 1], order[place]))
                && order
                    .get(place + 1)
                    .is_none_or(|next| before(order[place], *next))
        };
        if same && places.iter().all(|place| sits(*place)) {
            return true;
        }
        let mut kept = places.first().copied().unwrap_or(order.len());
        let first = kept;
        for (index, place) in places.iter().enumerate() {
            let next = places.get(index + 1).copied().unwrap_or(order.len());
            order.copy_within(place + 1..next, kept);
            kept += next - place - 1;
        }
        order.truncate(kept);
        // From the back: each slot of `into` lands after the stretch of larger ones.
        into.sort_unstable_by(|a, b| keys.cmp(sort, *a, *b));
        order.resize(kept + into.len(), UNFILLED);
        let mut unread = kept;
        for (index, slot) in into.iter().enumerate().rev() {
            let place = order[..unread].partition_point(|probe| before(*probe, *slot));
            if order[..unread].get(place) == Some(slot) {
                return false;
            }
            order.copy_within(place..unread, place + index + 1);
            order[place + index] = *slot;
            unread = place;
        }
        self.ranked = self.ranked.min(first).min(unread);
        self.eighths = Default::default();
        true
    }
}

/// An id as the number the orders compare: a UUID's value, another id's first 16 bytes.
pub fn id_key(id: &str) -> u128 {
    uuid::Uuid::try_parse(id).map_or_else(|_| prefix(id.as_bytes()), |id| id.as_u128())
}

/// The first 16 bytes, big-endian (zeros past the end): ordered like the bytes wherever
/// it differs.
fn prefix(bytes: &[u8]) -> u128 {
    let mut first = [0u8; 16];
    let len = bytes.len().min(16);
    first[..len].copy_from_slice(&bytes[..len]);
    u128::from_be_bytes(first)
}

/// A time in the form the store writes (`2024-01-31T12:00:00.000Z`) as the number its
/// digits make, in the order of the instants; `None` for any other text. So a time the
/// store did not write sorts after every other, or, for `last_used_at`, as never used.
pub fn time_key(text: &str) -> Option<u64> {
    (text.len() == 24).then_some(())?;
    text.bytes()
        .enumerate()
        .try_fold(0, |number, (at, byte)| match (at, byte) {
            (4 | 7, b'-') | (10, b'T') | (13 | 16, b':') | (19, b'.') | (23, b'Z') => Some(number),
            (4 | 7 | 10 | 13 | 16 | 19 | 23, _) => None,
            (_, b'0'..=b'9') => Some(number * 10 + u64::from(byte - b'0')),
            _ => None,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{id_key, prefix, time_key, Order, SortKeys, NEVER};
    use crate::model::host_query::Sort;
    use crate::store::list::sets::SlotSet;

    /// Keys of hosts named `names`, created at `created` (as `time_key` numbers), ids in slot order.
    fn keys(names: &[&str], created: &[u64]) -> SortKeys {
        let mut keys = SortKeys::default();
        for (slot, name) in names.iter().enumerate() {
            keys.text.put(slot as u32, name, "h");
            keys.ids.push(slot as u128);
            keys.created.push(created[slot]);
            keys.last_used.push(NEVER);
        }
        keys
    }

    #[test]
    fn times_the_store_writes_order_as_instants_and_other_texts_have_no_key() {
        let early = time_key("2024-01-31T12:00:00.000Z");
        let late = time_key("2024-02-01T00:00:00.000Z");
        assert!(early.is_some() && early < late);
        assert_eq!(time_key("2024-01-31 12:00:00.000Z"), None);
        assert_eq!(time_key("2024-01-31T12:00:00Z"), None);
    }

    #[test]
    fn uuids_order_as_their_lowercase_text_and_other_ids_by_their_first_bytes() {
        let a = "00000000-0000-4000-8000-00000000000a";
        let b = "00000000-0000-4000-8000-0000000000b0";
        assert!(id_key(a) < id_key(b) && a < b);
        assert!(id_key("abc") < id_key("abd"));
        assert_eq!(prefix(b"ab"), prefix(b"ab\0"));
    }

    #[test]
    fn equal_keys_fall_back_to_the_id_and_a_sorted_order_follows_cmp() {
        let keys = keys(&["b", "a", "b", "c"], &[3, 3, 1, 2]);
        let live = SlotSet::of(4, &[0, 1, 2, 3]);
        assert_eq!(Order::sorted(&keys, Sort::Name, &live).slots, [1, 0, 2, 3]);
        assert_eq!(
            Order::sorted(&keys, Sort::CreatedAt, &live).slots,
            [2, 3, 0, 1]
        );
    }

    #[test]
    fn a_reorder_moves_changed_slots_to_their_new_places_and_keeps_the_rest() {
        let mut keys = keys(&["a", "b", "c", "d"], &[0; 4]);
        let live = SlotSet::of(4, &[0, 1, 2, 3]);
        let mut order = Order::sorted(&keys, Sort::Name, &live);
        let places = order.places(&keys, Sort::Name, &[0, 2]).unwrap();
        assert_eq!(places, [0, 2]);
        keys.text.put(0, "z", "h");
        keys.text.put(2, "0", "h");
        assert!(order.reorder((&keys, Sort::Name), &places, &mut [0, 2], true));
        assert_eq!(order.slots, [2, 1, 3, 0]);
    }

    #[test]
    fn a_reorder_reports_an_order_at_odds_with_the_keys() {
        let keys = keys(&["a", "b"], &[0; 2]);
        let mut order = Order {
            slots: vec![0, 1],
            ..Order::default()
        };
        // Slot 1 is merged in while it is still there: the order was at odds with the keys.
        assert!(!order.reorder((&keys, Sort::Name), &[], &mut [1], false));
    }
}
