//! Slows down master password guessing: a growing delay after each consecutive wrong
//! password, and a cap on how many password checks run at once.
//!
//! api-decisions §2: repeated wrong passwords are slowed down and never lock the user out
//! for good. The delay after the n-th consecutive failure is `FIRST_DELAY * 2^(n-1)`,
//! capped at `MAX_DELAY` (0.25 s, 0.5 s, 1 s, 2 s, then 4 s); one right password resets
//! it. The delay is slept by the worker that made the wrong guess, holding no lock, so
//! every other request is served meanwhile; at most `MAX_CONCURRENT_CHECKS` checks (each a
//! PBKDF2 derivation, maybe followed by a delay) run at once, so guesses in parallel cannot
//! take the workers away from other requests, and they gain an attacker at most that
//! factor: about one guess per second once the delay has reached its cap.
//!
//! Invariants: only counters (atomics), no lock; never sleeps itself (callers do).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

/// Delay after the first wrong password in a row.
pub const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The delay stops growing here: slow for a script, bearable for a user with a typo.
pub const MAX_DELAY: Duration = Duration::from_secs(4);
/// Password checks (unlock, password change, password removal) running at once. Beyond
/// it the service answers 503 `BUSY` at once; 4 of the 16 workers at most are taken.
pub const MAX_CONCURRENT_CHECKS: usize = 4;

/// Shared by every request that checks a master password.
#[derive(Debug, Default)]
pub struct PasswordThrottle {
    /// Consecutive wrong passwords since the last right one.
    failures: AtomicU32,
    /// Password checks in progress.
    in_flight: AtomicUsize,
}

/// One running password check; frees its slot when dropped.
#[derive(Debug)]
pub struct CheckSlot<'a>(&'a AtomicUsize);

impl PasswordThrottle {
    /// A slot for one password check, or `None` when `MAX_CONCURRENT_CHECKS` are running.
    pub fn begin(&self) -> Option<CheckSlot<'_>> {
        self.in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |running| {
                (running < MAX_CONCURRENT_CHECKS).then_some(running + 1)
            })
            .ok()
            .map(|_| CheckSlot(&self.in_flight))
    }

    /// Counts a wrong password and returns how long its answer must wait.
    pub fn failed(&self) -> Duration {
        let failures = self
            .failures
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1);
        delay_after(failures)
    }

    /// A right password: the next wrong one starts again at `FIRST_DELAY`.
    pub fn succeeded(&self) {
        self.failures.store(0, Ordering::SeqCst);
    }
}

impl Drop for CheckSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The delay after `failures` consecutive wrong passwords (0 for none).
pub fn delay_after(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        // 2^4 * 0.25 s = 4 s: every larger count is capped, so the shift never overflows.
        n => FIRST_DELAY
            .saturating_mul(1 << (n - 1).min(4))
            .min(MAX_DELAY),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::vault::throttle::{delay_after, PasswordThrottle, MAX_CONCURRENT_CHECKS};

    #[test]
    fn delay_doubles_from_a_quarter_second_and_stops_at_four_seconds() {
        let millis: Vec<u128> = (0..8).map(|n| delay_after(n).as_millis()).collect();
        assert_eq!(millis, vec![0, 250, 500, 1000, 2000, 4000, 4000, 4000]);
        assert_eq!(delay_after(u32::MAX), Duration::from_secs(4));
    }

    #[test]
    fn right_password_resets_the_delay() {
        let throttle = PasswordThrottle::default();
        assert_eq!(throttle.failed(), Duration::from_millis(250));
        assert_eq!(throttle.failed(), Duration::from_millis(500));
        throttle.succeeded();
        assert_eq!(throttle.failed(), Duration::from_millis(250));
    }

    #[test]
    fn checks_beyond_the_cap_are_refused_until_one_ends() {
        let throttle = PasswordThrottle::default();
        let slots: Vec<_> = (0..MAX_CONCURRENT_CHECKS)
            .map(|_| throttle.begin().expect("below the cap"))
            .collect();
        assert!(throttle.begin().is_none());
        drop(slots);
        assert!(throttle.begin().is_some());
    }
}
