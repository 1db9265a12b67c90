//! The SSH agent served by the same process (README "SSH agent"): `ssh`, `ssh-add` and git
//! talk to it on a Unix socket, and it signs with keys that never leave the vault. Not
//! served on Windows yet (README, Platforms).
//!
//! Shape: `endpoint` owns the socket (made by `platform`) and gives every
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
pub mod proto;
mod refusals;
mod respond;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::agent::approvals::{Approvals, APPROVAL_TIMEOUT};
use crate::config::AgentConfig;
use crate::platform;
use crate::state::AppState;

pub use crate::agent::endpoint::Listening;

/// The agent's share of `AppState`.
pub struct Agent {
    /// The socket path, set once when the endpoint listens; empty with `--no-agent` or
    /// on Windows. Written once at start, before any request.
    socket: OnceLock<PathBuf>,
    /// Why there is no socket, for the 409 `AGENT_UNAVAILABLE` that says so.
    off_because: &'static str,
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
            approvals: Approvals::new(timeout),
            forwarded_refusals: refusals::Streak::default(),
        }
    }

    /// Where clients connect (`SSH_AUTH_SOCK`); `None` when the agent is not served.
    pub fn socket(&self) -> Option<&Path> {
        self.socket.get().map(PathBuf::as_path)
    }

    /// Why the agent is not served (`--no-agent`, or Windows), when `socket` is `None`.
    pub fn off_because(&self) -> &'static str {
        self.off_because
    }
}

/// Starts the agent unless `--no-agent` was given: binds its socket and starts accepting.
/// The returned value removes the socket file when it drops (at shutdown). An error is a
/// start-up error (README "SSH agent": a socket path over the 108-byte limit, a socket
/// directory owned by someone else).
pub fn start(state: &Arc<AppState>) -> Result<Option<Listening>, String> {
    let Some(config) = state.config.agent.as_ref() else {
        log::info!("SSH agent off (--no-agent)");
        return Ok(None);
    };
    if let Some(reason) = platform::AGENT_UNAVAILABLE {
        log::warn!("SSH agent off: {reason}");
        return Ok(None);
    }
    let path = endpoint::socket_path(&state.config.data_dir, config.runtime_dir.as_deref())?;
    let listening = endpoint::listen(&path, Arc::downgrade(state))?;
    log::info!("SSH agent listening on {}", path.display());
    // Set before SERVICE_PORT is printed, so no request ever sees it unset.
    let _ = state.agent.socket.set(path);
    Ok(Some(listening))
}
