//! The mass-delete guard: a merge that would delete too much is held until the user
//! confirms it (docs/sync.md, "The mass-delete guard"; the API answers 409 MASS_DELETE).
//!
//! Invariants: pure; the thresholds are the named constants below and nowhere else.

use crate::model::sync::merge::Report;

/// A merge may always delete this many records without being held.
pub const MASS_DELETE_MIN: usize = 10;

/// ...and above that minimum, up to this share of the local live records (percent).
pub const MASS_DELETE_PERCENT: usize = 25;

/// A device whose previous bundle held at least this many live records and whose new one
/// holds none is held by itself (an emptied folder, a wiped install, a broken migration).
pub const EMPTIED_DEVICE_MIN: usize = 10;

/// Why a merge is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// It would delete `deleted` of the `live` local records.
    TooManyDeletes { deleted: usize, live: usize },
    /// The remote device held `previously` live records and now holds none.
    DeviceEmptied { previously: usize },
}

/// The counts the guard weighs besides the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Live records on this side before the merge.
    pub local_live: usize,
    /// Live records in the remote device's previous bundle (`None` on first contact).
    pub remote_previous_live: Option<usize>,
    /// Live records in the remote device's bundle now.
    pub remote_live: usize,
}

/// The largest number of deletions a merge over `live` local records makes unheld:
/// `max(MASS_DELETE_MIN, MASS_DELETE_PERCENT% of live)`.
pub fn allowed_deletes(live: usize) -> usize {
    MASS_DELETE_MIN.max(live.saturating_mul(MASS_DELETE_PERCENT) / 100)
}

/// `Some` when the merge that produced `report` must wait for confirmation.
pub fn check(report: &Report, counts: Counts) -> Option<Hold> {
    if let Some(previously) = counts.remote_previous_live {
        if previously >= EMPTIED_DEVICE_MIN && counts.remote_live == 0 {
            return Some(Hold::DeviceEmptied { previously });
        }
    }
    let deleted = report.deleted.len();
    if deleted > allowed_deletes(counts.local_live) {
        return Some(Hold::TooManyDeletes {
            deleted,
            live: counts.local_live,
        });
    }
    None
}
