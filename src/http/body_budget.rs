//! The budget of bytes that request bodies may hold across all connections at once (docs/security.md,
//! "Threat model of the HTTP layer"): a request takes its body's share before a byte of the
//! body is read, and gives it back when its handler is done (the body lives until then).
//!
//! Invariants: the bytes taken never exceed the budget; a share is given back when its
//! `BodyShare` drops, also on unwind; lock-free (one atomic counter), so no lock order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub struct BodyBudget {
    taken: AtomicUsize,
    max: usize,
}

/// Bytes of the budget held by one request; given back on drop.
pub struct BodyShare {
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl BodyBudget {
    pub fn new(max: usize) -> BodyBudget {
        BodyBudget {
            taken: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes `bytes` of the budget, or `None` when they do not fit beside what is taken.
    pub fn try_take(self: &Arc<Self>, bytes: usize) -> Option<BodyShare> {
        self.taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
                taken.checked_add(bytes).filter(|total| *total <= self.max)
            })
            .ok()
            .map(|_| BodyShare {
                budget: Arc::clone(self),
                bytes,
            })
    }
}

impl Drop for BodyShare {
    fn drop(&mut self) {
        self.budget.taken.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use crate::http::body_budget::BodyBudget;

    #[test]
    fn shares_fit_up_to_the_budget_exactly_and_come_back_on_drop() {
        let budget = Arc::new(BodyBudget::new(100));
        let first = budget.try_take(60).unwrap();
        let second = budget.try_take(40).unwrap();
        assert!(budget.try_take(1).is_none(), "one byte past the budget");
        drop(first);
        assert!(budget.try_take(60).is_some(), "given back on drop");
        assert!(budget.try_take(usize::MAX).is_none(), "no overflow");
        drop(second);
    }
}
