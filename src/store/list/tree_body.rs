//! The body of `GET /api/groups` written from the group tree kept in memory
//! (store::list::group_tree): each group's JSON head, then its direct and total host counts
//! and its children, in tree order (docs/api.md, API: Groups).
//!
//! Invariants: no answer is kept; the bytes equal the serialized `model::tree::build` of the
//! stored groups and counts (tested in store::list::group_tree).

use crate::store::list::group_tree::{GroupTree, Node};

impl GroupTree {
    /// The `{ items: [Group] }` body (docs/api.md, Groups), with `count`'s direct host counts and their
    /// sums over each subtree.
    pub fn render(&self, count: impl Fn(&str) -> u64) -> Vec<u8> {
        let shape = self.shape.as_deref().unwrap_or_default();
        let direct: Vec<u64> = shape
            .iter()
            .map(|node| count(&self.entries[node.entry].group.id))
            .collect();
        let mut totals = direct.clone();
        for at in (0..shape.len()).rev() {
            let mut child = at + 1;
            while child < shape[at].end {
                totals[at] = totals[at].saturating_add(totals[child]);
                child = shape[child].end;
            }
        }
        let size = self.entries.iter().map(|entry| entry.head.len() + 80);
        let mut body = Vec::with_capacity(size.sum::<usize>() + 16);
        body.extend_from_slice(br#"{"items":["#);
        let mut at = 0;
        while at < shape.len() {
            if at > 0 {
                body.push(b',');
            }
            at = self.render_node(&mut body, shape, (&direct, &totals), at);
        }
        body.extend_from_slice(b"]}");
        body
    }

    /// Writes the group at `at` and its subtree; returns where the subtree ends.
    fn render_node(
        &self,
        body: &mut Vec<u8>,
        shape: &[Node],
        (direct, totals): (&[u64], &[u64]),
        at: usize,
    ) -> usize {
        let node = shape[at];
        body.extend_from_slice(self.entries[node.entry].head.as_bytes());
        body.extend_from_slice(br#""host_count":"#);
        push_number(body, direct[at]);
        body.extend_from_slice(br#","total_host_count":"#);
        push_number(body, totals[at]);
        body.extend_from_slice(br#","children":["#);
        let mut child = at + 1;
        while child < node.end {
            if child > at + 1 {
                body.push(b',');
            }
            child = self.render_node(body, shape, (direct, totals), child);
        }
        body.extend_from_slice(b"]}");
        node.end
    }
}

/// Appends `number` in decimal.
fn push_number(body: &mut Vec<u8>, mut number: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (number % 10) as u8;
        number /= 10;
        if number == 0 {
            break;
        }
    }
    body.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::push_number;

    #[test]
    fn numbers_are_written_in_decimal_without_leading_zeros() {
        for number in [0, 7, 10, 1_234_567, u64::MAX] {
            let mut body = Vec::new();
            push_number(&mut body, number);
            assert_eq!(body, number.to_string().into_bytes());
        }
    }
}
