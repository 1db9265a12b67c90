//! The one integration-test crate: every test starts the real binary and
//! talks HTTP to it. One module per area.

#![allow(clippy::unwrap_used)]

/// The SSH agent on a Unix socket; on Windows, on a named pipe (docs/platforms.md, Platforms).
#[cfg(unix)]
mod agent;
#[cfg(windows)]
mod agent_pipe;
mod agent_wire;
mod batch;
mod certificates;
mod changes;
mod forwards;
mod groups;
mod history;
mod host_cas;
mod hosts;
mod http;
mod identities;
mod identity_use;
mod importers;
mod inheritance;
mod interop;
mod keys;
mod known_hosts;
mod limits;
/// Reads the service's memory through `/proc`: Linux only.
#[cfg(target_os = "linux")]
mod memory;
mod platform;
mod process;
mod query;
mod readme;
mod revisions;
mod secrets;
mod security;
mod snapshots;
mod support;
mod sync;
mod sync_git;
mod tags;
mod upgrade;
mod vault;
mod vault_audit;
