//! Slows down master password guessing: a growing delay after each consecutive wrong
//! password (docs/api.md, "Vault").
//!
//! The delay after the n-th consecutive failure is `FIRST_DELAY * 2^(n-1)`, capped at
//! `MAX_DELAY` (0.25 s, 0.5 s, 1 s, 2 s, then 4 s). The streak ends with a right password, or
//! after `FORGET_AFTER` without a wrong one: a guesser that waits that long between guesses
//! is slower than the capped delay already, and the user's next typo after an attack is
//! back to the first delay. The streak is the whole service's: every client of a loopback
//! port looks the same, so there is nobody else to count it for.
//!
//! Invariants: never sleeps itself (the caller serves the delay, holding no lock and no
//! place for a key derivation); the mutex is held only to read and write the streak.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Delay after the first wrong password in a row.
pub const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The delay stops growing here: slow for a script, bearable for a user with a typo.
pub const MAX_DELAY: Duration = Duration::from_secs(4);
/// A streak of wrong passwords is forgotten after this long without another one.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

/// Shared by every request that checks a master password.
#[derive(Debug, Default)]
pub struct PasswordThrottle {
    streak: Mutex<Streak>,
}

#[derive(Debug, Default)]
struct Streak {
    /// Consecutive wrong passwords since the last right one.
    failures: u32,
    /// When the last of them was counted.
    last: Option<Instant>,
}

impl PasswordThrottle {
    /// Counts a wrong password; returns how long its answer must wait and how many
    /// consecutive wrong passwords the streak now holds.
    pub fn failed(&self) -> (Duration, u32) {
        self.failed_at(Instant::now())
    }

    /// A right password: the next wrong one starts again at `FIRST_DELAY`.
    pub fn succeeded(&self) {
        *self.streak() = Streak::default();
    }

    /// `failed`, with the clock given (tests).
    fn failed_at(&self, now: Instant) -> (Duration, u32) {
        let mut streak = self.streak();
        let forgotten = streak
            .last
            .is_some_and(|last| now.saturating_duration_since(last) >= FORGET_AFTER);
        let failures = match forgotten {
            true => 1,
            false => streak.failures.saturating_add(1),
        };
        *streak = Streak {
            failures,
            last: Some(now),
        };
        (delay_after(failures), failures)
    }

    /// The streak, recovering from a poisoned lock (it is written in one assignment).
    fn streak(&self) -> MutexGuard<'_, Streak> {
        self.streak
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
    use std::time::{Duration, Instant};

    use crate::vault::throttle::{delay_after, PasswordThrottle, FORGET_AFTER};

    #[test]
    fn delay_doubles_from_a_quarter_second_and_stops_at_four_seconds() {
        let millis: Vec<u128> = (0..8).map(|n| delay_after(n).as_millis()).collect();
        assert_eq!(millis, vec![0, 250, 500, 1000, 2000, 4000, 4000, 4000]);
        assert_eq!(delay_after(u32::MAX), Duration::from_secs(4));
    }

    #[test]
    fn right_password_resets_the_delay() {
        let throttle = PasswordThrottle::default();
        assert_eq!(throttle.failed(), (Duration::from_millis(250), 1));
        assert_eq!(throttle.failed(), (Duration::from_millis(500), 2));
        throttle.succeeded();
        assert_eq!(throttle.failed(), (Duration::from_millis(250), 1));
    }

    #[test]
    fn wrong_password_just_under_a_minute_after_the_last_continues_the_streak() {
        let throttle = PasswordThrottle::default();
        let start = Instant::now();
        for _ in 0..5 {
            throttle.failed_at(start);
        }
        let next = start + FORGET_AFTER - Duration::from_millis(1);
        assert_eq!(throttle.failed_at(next), (Duration::from_secs(4), 6));
    }

    #[test]
    fn wrong_password_a_minute_after_the_last_starts_a_new_streak() {
        let throttle = PasswordThrottle::default();
        let start = Instant::now();
        for _ in 0..5 {
            throttle.failed_at(start);
        }
        let next = start + FORGET_AFTER;
        assert_eq!(throttle.failed_at(next), (Duration::from_millis(250), 1));
        assert_eq!(
            throttle.failed_at(next),
            (Duration::from_millis(500), 2),
            "and grows again from there"
        );
    }
}
