//! Which requests refused on a forwarded connection go to the audit log (docs/agent.md "SSH
//! agent"): a peer on a forwarded socket may flood refused requests, and one entry each
//! would push the rest of the log out. The first `EACH` refusals of a streak are recorded
//! one by one, then (as for wrong master passwords) only the 32nd, 64th, 128th, ... (each
//! with its count); a streak ends after a quiet minute.
//!
//! Invariants: pure apart from its mutex (the caller passes the time); every refusal is
//! counted, whether recorded or not; a million refusals in one streak make 31 entries.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A streak of refusals ends after this long without one.
pub const QUIET: Duration = Duration::from_secs(60);

/// Refusals of a streak recorded one by one: more than a person's mistakes.
pub const EACH: u64 = 16;

/// The current streak: its length and the time of its last refusal.
#[derive(Default)]
pub struct Streak(Mutex<Option<(u64, Instant)>>);

impl Streak {
    /// Counts one refusal made at `now`; `Some(n)` when it is the n-th of its streak and is
    /// recorded (n at most `EACH`, or a power of two), `None` otherwise.
    pub fn count(&self, now: Instant) -> Option<u64> {
        let mut streak = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let length = match *streak {
            Some((length, last)) if now.saturating_duration_since(last) < QUIET => {
                length.saturating_add(1)
            }
            _ => 1,
        };
        *streak = Some((length, now));
        (length <= EACH || length.is_power_of_two()).then_some(length)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::agent_share::refusals::{Streak, EACH, QUIET};

    #[test]
    fn the_first_16_of_a_streak_are_recorded_then_only_powers_of_two() {
        let streak = Streak::default();
        let now = Instant::now();
        let recorded: Vec<u64> = (0..1_000_000).filter_map(|_| streak.count(now)).collect();
        assert_eq!(recorded.len(), 31);
        assert_eq!(recorded[..16], (1..=16).collect::<Vec<u64>>());
        assert_eq!(recorded[16..18], [32, 64]);
    }

    #[test]
    fn a_quiet_minute_ends_the_streak_and_less_does_not() {
        let streak = Streak::default();
        let start = Instant::now();
        for n in 1..=EACH {
            assert_eq!(streak.count(start), Some(n));
        }
        assert_eq!(streak.count(start + QUIET - Duration::from_millis(1)), None);
        assert_eq!(streak.count(start + QUIET * 3), Some(1));
    }
}
