//! The SSH agent served by the same process (docs/agent.md "SSH agent"): `ssh`, `ssh-add` and git
//! talk to it on a Unix socket (on Windows a named pipe, docs/platforms.md, Platforms), and it
//! signs with keys that never leave the vault.
//!
//! Shape: `place` chooses where the socket goes, `endpoint` owns the socket (made by
//! `platform`) and gives every
//! connection a thread of its own; `connection` reads length-framed messages under their
//! limits; `proto` parses them (pure, fuzzed); `respond` answers them with the vault, the
//! store and each key's policy. The agent's share of the state (its socket's status, the
//! sign requests waiting for the user in `approvals`, the forwarded refusals' streak) is
//! `agent_share`, below the state.
//!
//! Invariants: no HTTP and no SQL text here (the store and the vault's pub fns do the
//! work); a private key is opened only to sign and wiped right after; a malformed or
//! oversized message closes its own connection and nothing else; nothing a client sends
//! can make a request wait for ever.

mod connection;
mod connections;
mod endpoint;
mod place;
pub mod proto;
mod respond;
mod userauth;
mod wire;

use std::sync::Arc;

use crate::platform;
use crate::state::AppState;

pub use crate::agent::endpoint::{Listening, DESCRIPTORS};

/// Starts the agent unless `--no-agent` was given: binds its socket and starts accepting.
/// The returned value removes the socket file when it drops (at shutdown). The agent never
/// stops the service (docs/agent.md "SSH agent"): when no place can hold its socket, it is off,
/// `GET /api/agent` says why, and a warning is logged.
pub fn start(state: &Arc<AppState>) -> Option<Listening> {
    let Some(config) = state.config.agent.as_ref() else {
        log::info!("SSH agent off (--no-agent)");
        return None;
    };
    if let Some(reason) = platform::AGENT_UNAVAILABLE {
        log::warn!("SSH agent off: {reason}");
        return None;
    }
    match endpoint::listen(&state.config.data_dir, config, Arc::downgrade(state)) {
        Ok(listening) => {
            let (path, place) = (listening.path().to_path_buf(), listening.place());
            log::info!(
                "SSH agent listening on {} (location {})",
                path.display(),
                place.name()
            );
            // Set before SERVICE_PORT is printed, so no request ever sees it unset.
            state.agent.listening(path, place.name());
            Some(listening)
        }
        Err(why) => {
            let reason = format!("the SSH agent is off: no place could hold its socket ({why})");
            log::warn!("{reason}");
            state.agent.no_place(reason);
            None
        }
    }
}
