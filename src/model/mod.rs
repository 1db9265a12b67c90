//! Plain domain types, validation rules and tree logic: no I/O, no other module of ours.

pub mod group;
pub mod key;
pub mod tree;
