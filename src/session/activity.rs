//! The `--auto-lock` clock (docs/api.md "Vault"): when the last request that counts as
//! activity started or ended, and how many of them are still running.
//!
//! Invariants: lock-free (every request writes it, the auto-lock thread only reads it); an
//! `Activity` counts its request in flight until it drops, also when a panic unwinds; the
//! countdown restarts from a request's end before the request stops counting, so an idle
//! check in between sees one or the other.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The last activity and the requests in flight.
pub struct ActivityClock {
    /// When the process started; the zero of `last_activity_ms`.
    started: Instant,
    /// Milliseconds after `started` of the last request that counts as activity for
    /// `--auto-lock`. Lock-free on purpose: every request writes it (one relaxed store),
    /// and the auto-lock thread only compares it with the clock; a read racing a write
    /// costs at most one tick of lateness.
    last_activity_ms: AtomicU64,
    /// Requests that count as activity and have not ended yet. A counter moved only by
    /// `Activity` (up when a request starts, down when it ends); `Session::lock_if_idle`
    /// reads it under the vault lock and never locks while it is above zero.
    in_flight: AtomicUsize,
}

/// A request counted as activity for `--auto-lock` while it lives.
#[must_use = "the request stops counting as soon as this drops"]
pub struct Activity<'a>(&'a ActivityClock);

impl ActivityClock {
    pub fn new() -> ActivityClock {
        ActivityClock {
            started: Instant::now(),
            last_activity_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// Counts a request as activity until the returned value drops: the auto-lock
    /// countdown restarts now and again when it ends, and never runs out in between.
    pub fn activity(&self) -> Activity<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Activity(self)
    }

    /// Records activity now: the auto-lock countdown starts again.
    pub(super) fn touch(&self) {
        self.last_activity_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// How long since the last activity (or since start, before any).
    pub fn idle_for(&self) -> Duration {
        let last = self.last_activity_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.elapsed_ms().saturating_sub(last))
    }

    /// Whether a request that counts as activity is running now.
    pub fn in_flight(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Drop for Activity<'_> {
    fn drop(&mut self) {
        // The countdown restarts from the end of the request, then the request stops
        // counting: in this order, an idle check in between still sees one or the other.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use crate::session::activity::ActivityClock;

    #[test]
    fn a_request_counts_as_in_flight_until_its_activity_drops() {
        let clock = ActivityClock::new();
        assert!(!clock.in_flight());
        let first = clock.activity();
        let second = clock.activity();
        drop(first);
        assert!(clock.in_flight(), "one request still runs");
        drop(second);
        assert!(!clock.in_flight());
    }
}
