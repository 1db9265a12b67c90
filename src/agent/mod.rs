//! The SSH agent served by the same process (docs/agent.md "SSH agent"): `ssh`, `ssh-add` and git
//! talk to it on a Unix socket, and it signs with keys that never leave the vault. Not
//! served on Windows yet (docs/platforms.md, Platforms).
//!
//! Shape: `place` chooses where the socket goes, `endpoint` owns the socket (made by
//! `platform`) and gives every
//! connection a thread of its own; `connection` reads length-framed messages under their
//! limits; `proto` parses them (pure, fuzzed); `respond` answers them with the vault, the
//! store and each key's policy; `approvals` holds sign requests waiting for the user.
//!
//! Invariants: no HTTP and no SQL text here (the store and the vault's pub fns do the
//! work); a private key is opened only to sign and wiped right after; a malformed or
//! oversized message closes its own connection and nothing else; nothing a client sends
//! can make a request wait for ever.

pub mod approvals;
mod connection;
mod connections;
mod endpoint;
mod place;
pub mod proto;
mod refusals;
mod respond;
mod userauth;
mod wire;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::agent::approvals::{Approvals, APPROVAL_TIMEOUT};
use crate::config::AgentConfig;
use crate::platform;
use crate::state::AppState;

pub use crate::agent::endpoint::{Listening, DESCRIPTORS};
pub use crate::agent::place::Place;

/// The agent's share of `AppState`.
pub struct Agent {
    /// The socket path and the place that took it, set once when the endpoint listens;
    /// empty with `--no-agent`, on Windows, or when no place could hold it. Written once at
    /// start, before any request.
    socket: OnceLock<(PathBuf, Place)>,
    /// Why there is no socket, for `GET /api/agent` and the 409 `AGENT_UNAVAILABLE`:
    /// `--no-agent` or the platform, unless `no_place` says more.
    off_because: &'static str,
    /// Why no place could hold the socket, set at start when that happened.
    no_place: OnceLock<String>,
    /// Sign requests waiting for the user, and approvals remembered until the vault locks.
    pub approvals: Approvals,
    /// Requests refused on forwarded connections, for their audit entries.
    forwarded_refusals: refusals::Streak,
}

impl Agent {
    pub fn new(config: Option<&AgentConfig>) -> Agent {
        let timeout = config
            .and_then(|config| config.approval_timeout)
            .unwrap_or(APPROVAL_TIMEOUT);
        Agent {
            socket: OnceLock::new(),
            off_because: match (config, platform::AGENT_UNAVAILABLE) {
                (None, _) => "the SSH agent is not served (--no-agent)",
                (Some(_), Some(reason)) => reason,
                (Some(_), None) => "the SSH agent is not served",
            },
            no_place: OnceLock::new(),
            approvals: Approvals::new(timeout),
            forwarded_refusals: refusals::Streak::default(),
        }
    }

    /// Where clients connect (`SSH_AUTH_SOCK`); `None` when the agent is not served.
    pub fn socket(&self) -> Option<&Path> {
        self.socket.get().map(|(path, _)| path.as_path())
    }

    /// Which place holds the socket; `None` when the agent is not served.
    pub fn place(&self) -> Option<Place> {
        self.socket.get().map(|(_, place)| *place)
    }

    /// Why the agent is not served (`--no-agent`, Windows, or no place for its socket),
    /// when `socket` is `None`.
    pub fn off_because(&self) -> &str {
        self.no_place.get().map_or(self.off_because, String::as_str)
    }
}

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
            let _ = state.agent.socket.set((path, place));
            Some(listening)
        }
        Err(why) => {
            let reason = format!("the SSH agent is off: no place could hold its socket ({why})");
            log::warn!("{reason}");
            let _ = state.agent.no_place.set(reason);
            None
        }
    }
}
