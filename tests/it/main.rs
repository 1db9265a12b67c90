//! The one integration-test crate: every test starts the real binary and
//! talks HTTP to it. One module per area.

#![allow(clippy::unwrap_used)]

mod agent;
mod groups;
mod hosts;
mod http;
mod interop;
mod keys;
mod known_hosts;
mod limits;
mod memory;
mod process;
mod readme;
mod secrets;
mod security;
mod support;
mod vault;
