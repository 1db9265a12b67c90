//! The sync engine's pure core (docs/sync.md): the record clock, the generic record, the
//! merge with its report, the mass-delete guard, the tombstone horizon and the bundle
//! body's encoding. The bundle file's sealing lives in `vault::bundle`.
//!
//! Invariants: no I/O, no clock read (time comes in as arguments), no plaintext secret (a
//! secret field's value arrives sealed). One exception to "plain computation":
//! `merge::merge_into` frees a large spent copy of records on a short-lived thread.

pub mod clock;
pub mod guard;
pub mod merge;
pub mod record;
pub mod wire;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests;
