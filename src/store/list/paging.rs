//! Finding a page in a sort's order (docs/performance.md, "How the host list is
//! answered"): without a filter, the page is read off the order; a small set is ranked (a
//! lookup per member); a large one is walked from the nearer end, an eighth or 64 hosts at
//! a time.
//!
//! Invariants: pure memory; every strategy answers the same slots, in the order asked.

use crate::store::list::order::Order;
use crate::store::list::sets::SlotSet;

/// A set of at most 1/`RANK_SHARE` of the hosts is ranked (a lookup per member) rather than
/// walked (a test per host passed).
const RANK_SHARE: usize = 8;

/// Where a page is in an order: `limit` hosts after the first `offset` shown, among a set.
#[derive(Clone, Copy)]
pub struct Window {
    pub offset: usize,
    pub limit: usize,
}

/// An order as shown: ascending or descending, with the hosts that have no key (`keyed`
/// onwards: never-used hosts by last use) last in both directions.
#[derive(Clone, Copy)]
pub struct Shown {
    pub desc: bool,
    pub keyed: usize,
    pub len: usize,
}

impl Shown {
    /// The place in the order of the host shown at `shown`, and back (its own inverse).
    fn place(self, shown: usize) -> usize {
        match (self.desc, shown < self.keyed) {
            (false, _) => shown,
            (true, true) => self.keyed - 1 - shown,
            (true, false) => self.keyed + self.len - 1 - shown,
        }
    }
}

/// The slots of the page `window` (its offset below the set's count) in `order` as `shown`,
/// among `set` (all hosts without one); `slots` is the number of slots in the memory.
pub fn page(
    order: &mut Order,
    shown: Shown,
    window: Window,
    set: Option<&SlotSet>,
    slots: usize,
) -> Vec<u32> {
    match set {
        None => (window.offset..window.offset + window.limit)
            .map(|at| order.slots[shown.place(at)])
            .collect(),
        Some(set) if set.count() <= shown.len / RANK_SHARE => {
            ranked(order, shown, window, set, slots)
        }
        Some(set) => walked(order, shown, window, set),
    }
}

/// A small set's page: each member's place from the ranks, then the page selected.
fn ranked(
    order: &mut Order,
    shown: Shown,
    window: Window,
    set: &SlotSet,
    slots: usize,
) -> Vec<u32> {
    order.ranks.resize(slots, 0);
    for (rank, slot) in order.slots.iter().enumerate().skip(order.ranked) {
        order.ranks[*slot as usize] = rank as u32;
    }
    order.ranked = shown.len;
    let mut places: Vec<usize> = set
        .ones()
        .map(|slot| shown.place(order.ranks[slot as usize] as usize))
        .collect();
    places.select_nth_unstable(window.offset);
    let page = &mut places[window.offset..];
    if window.limit < page.len() {
        page.select_nth_unstable(window.limit);
    }
    let page = &mut page[..window.limit];
    page.sort_unstable();
    page.iter()
        .map(|at| order.slots[shown.place(*at)])
        .collect()
}

/// A large set's page, walked from the nearer end: the members after the first `skip`.
fn walked(order: &mut Order, shown: Shown, window: Window, set: &SlotSet) -> Vec<u32> {
    let (len, Window { offset, limit }) = (shown.len, window);
    let part = len.div_ceil(8);
    fill_eighths(order, shown, part);
    let (slots, eighths) = (&order.slots, &order.eighths[usize::from(shown.desc)]);
    let count = set.count();
    let back = offset > count - offset - limit;
    let mut skip = if back { count - offset - limit } else { offset };
    let at = |step: usize| if back { len - 1 - step } else { step };
    let (mut page, mut step) = (Vec::with_capacity(limit), 0);
    while page.len() < limit && step < len {
        let (here, first) = (at(step), at(step) / part * part);
        let size = part.min(len - first);
        // The steps left in this eighth: all of it at its start, where its members' count
        // (an AND and a count of bits) may pass it whole.
        let left = if back {
            here - first + 1
        } else {
            first + size - here
        };
        let members = (left == size).then(|| set.and_count(&eighths[here / part]));
        if let Some(members) = members.filter(|members| skip >= *members) {
            skip -= members;
            step += size;
            continue;
        }
        // Then 64 hosts at a time, passed by their count (a sum without branches).
        let block = (step..step + left.min(64)).map(|step| slots[shown.place(at(step))]);
        let members: usize = block.clone().map(|slot| set.bit(slot)).sum();
        if skip >= members {
            skip -= members;
        } else {
            let taken = block
                .filter(|slot| set.contains(*slot))
                .skip(std::mem::take(&mut skip));
            page.extend(taken.take(limit - page.len()));
        }
        step += left.min(64);
    }
    if back {
        page.reverse();
    }
    page
}

/// Makes the slots of each eighth of `order` as `shown` when a walk first needs them.
fn fill_eighths(order: &mut Order, shown: Shown, part: usize) {
    let eighths = &mut order.eighths[usize::from(shown.desc)];
    if eighths.is_empty() {
        *eighths = vec![SlotSet::default(); 8];
        for at in 0..shown.len {
            eighths[at / part].insert(order.slots[shown.place(at)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{page, Shown, Window};
    use crate::store::list::order::Order;
    use crate::store::list::sets::SlotSet;

    /// The page as a plain filter over the order as shown would answer it.
    fn oracle(order: &[u32], shown: Shown, window: Window, set: &SlotSet) -> Vec<u32> {
        let mut all: Vec<u32> = (0..shown.len).map(|at| order[shown.place(at)]).collect();
        all.retain(|slot| set.contains(*slot));
        all.into_iter()
            .skip(window.offset)
            .take(window.limit)
            .collect()
    }

    /// Every page of every window, in both directions, for sets small enough to be ranked
    /// and large enough to be walked, over an order with some hosts without a key.
    #[test]
    fn ranked_and_walked_pages_equal_a_plain_filter_of_the_order() {
        let len = 300u32;
        // A scrambled order: slot `s` at place `s * 7 % len`.
        let mut slots = vec![0; len as usize];
        (0..len).for_each(|slot| slots[(slot * 7 % len) as usize] = slot);
        let sets = [
            SlotSet::of(len as usize, &[5, 17, 250]),
            SlotSet::of(
                len as usize,
                &(0..len).filter(|s| s % 3 != 0).collect::<Vec<_>>(),
            ),
        ];
        for set in &sets {
            for (desc, keyed) in [(false, 300), (true, 300), (true, 211), (false, 211)] {
                let shown = Shown {
                    desc,
                    keyed,
                    len: len as usize,
                };
                for offset in (0..set.count()).step_by(7) {
                    for limit in [1, 5, 64, 200] {
                        let limit = limit.min(set.count() - offset);
                        let window = Window { offset, limit };
                        let mut order = Order {
                            slots: slots.clone(),
                            ..Order::default()
                        };
                        let found = page(&mut order, shown, window, Some(set), len as usize);
                        assert_eq!(
                            found,
                            oracle(&slots, shown, window, set),
                            "{offset} {limit}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn without_a_set_the_page_is_read_off_the_order_as_shown() {
        let mut order = Order {
            slots: vec![4, 3, 2, 1, 0],
            ..Order::default()
        };
        let shown = Shown {
            desc: true,
            keyed: 3,
            len: 5,
        };
        let window = Window {
            offset: 1,
            limit: 4,
        };
        assert_eq!(page(&mut order, shown, window, None, 5), [3, 4, 0, 1]);
    }
}
