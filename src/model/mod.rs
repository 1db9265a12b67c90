//! Plain domain types, their validation and their pure rules: no I/O at all.

pub mod key;
