//! Plain domain types, their validation and their pure rules: no I/O at all.
//!
//! Invariants: never touches the database, the network, the clock or the vault; never holds
//! a secret value (the api layer keeps those in `vault::Secret`).

pub mod host;
pub mod validate;
