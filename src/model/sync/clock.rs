//! The hybrid logical clock (Kulkarni et al., 2014) that stamps every change a device makes
//! to a record (docs/sync.md, "The record clock").
//!
//! A stamp packs wall-clock milliseconds (48 bits, enough until the year 10889) and a logical
//! counter (16 bits) into one `u64`, so that comparing the packed numbers compares (ms,
//! counter); the device id breaks the remaining ties, which makes the order total. A local
//! change takes `max(last + 1, now << 16)`: never behind what this device has seen, and the
//! wall clock again as soon as it passes. A counter that would overflow carries into the
//! milliseconds, which is still a later stamp.
//!
//! Invariants: no clock read (the time comes in as an argument); a device's stamps strictly
//! increase; a stamp more than `MAX_AHEAD_MS` ahead of this device's wall clock is refused
//! by `observe` (and by `check_future` for a whole state), so a device whose clock is years
//! ahead cannot drag every other device's clock with it.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Bits of the logical counter in a packed stamp.
pub const COUNTER_BITS: u32 = 16;

/// How far ahead of this device's wall clock a remote stamp may be: one day. A bundle with a
/// stamp further ahead is refused (not merged) until the clocks agree (docs/sync.md).
pub const MAX_AHEAD_MS: u64 = 24 * 60 * 60 * 1000;

/// The largest wall-clock time a stamp can hold (48 bits of milliseconds).
pub const MAX_MS: u64 = (1 << (64 - COUNTER_BITS)) - 1;

/// A device's id: shared, since a catalogue holds millions of stamps naming a few devices.
pub type DeviceId = Arc<str>;

/// One change's place in the total order: (ms, counter) packed in `hlc`, then `device`.
#[derive(Clone, Eq)]
pub struct Stamp {
    pub hlc: u64,
    pub device: DeviceId,
}

impl PartialEq for Stamp {
    /// As derived, but a shared device id is not compared byte by byte (a decoded state
    /// shares one `Arc` a device).
    fn eq(&self, other: &Stamp) -> bool {
        self.hlc == other.hlc
            && (Arc::ptr_eq(&self.device, &other.device) || self.device == other.device)
    }
}

impl std::hash::Hash for Stamp {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.hlc.hash(state);
        self.device.hash(state);
    }
}

impl Stamp {
    #[cfg(test)] // the service's stamps come from `Clock::tick` or its own packed times
    pub fn new(ms: u64, counter: u16, device: &str) -> Stamp {
        Stamp {
            hlc: pack(ms, counter),
            device: Arc::from(device),
        }
    }

    /// The wall-clock part, in milliseconds since the Unix epoch.
    pub fn ms(&self) -> u64 {
        self.hlc >> COUNTER_BITS
    }

    /// The logical counter.
    pub fn counter(&self) -> u16 {
        (self.hlc & 0xFFFF) as u16
    }
}

impl Ord for Stamp {
    fn cmp(&self, other: &Stamp) -> Ordering {
        self.hlc
            .cmp(&other.hlc)
            .then_with(|| self.device.cmp(&other.device))
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Stamp) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}@{}", self.ms(), self.counter(), self.device)
    }
}

/// Packs `ms` (clamped to 48 bits) and `counter`.
pub fn pack(ms: u64, counter: u16) -> u64 {
    (ms.min(MAX_MS) << COUNTER_BITS) | u64::from(counter)
}

/// A remote stamp too far in the future (see `MAX_AHEAD_MS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AheadOfClock {
    pub device: DeviceId,
    /// How far ahead of this device's wall clock, in milliseconds.
    pub ahead_ms: u64,
}

/// One device's clock: the last stamp it issued or observed.
#[derive(Debug, Clone)]
pub struct Clock {
    device: DeviceId,
    last: u64,
}

impl Clock {
    /// A clock for `device` that resumes after `last` (the packed value persisted with the
    /// catalogue; 0 for a new device).
    pub fn new(device: &str, last: u64) -> Clock {
        Clock {
            device: Arc::from(device),
            last,
        }
    }

    /// The packed value to persist, so a restart never issues an earlier stamp.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The stamp of a local change at wall-clock time `now_ms`: later than every stamp this
    /// clock issued or observed, and `now_ms` itself whenever the wall clock is ahead.
    pub fn tick(&mut self, now_ms: u64) -> Stamp {
        self.last = self.last.saturating_add(1).max(pack(now_ms, 0));
        Stamp {
            hlc: self.last,
            device: self.device.clone(),
        }
    }

    /// Takes a merged remote stamp into account, so that the next local change is stamped
    /// after it even when this device's wall clock is behind. A stamp more than
    /// `MAX_AHEAD_MS` ahead of `now_ms` is refused and leaves the clock as it was.
    pub fn observe(&mut self, stamp: &Stamp, now_ms: u64) -> Result<(), AheadOfClock> {
        let ahead_ms = stamp.ms().saturating_sub(now_ms);
        if ahead_ms > MAX_AHEAD_MS {
            return Err(AheadOfClock {
                device: stamp.device.clone(),
                ahead_ms,
            });
        }
        self.last = self.last.max(stamp.hlc);
        Ok(())
    }
}
