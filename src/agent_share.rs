//! The SSH agent's share of `AppState` (docs/agent.md "SSH agent"), below both the state and
//! `agent/`: where its socket listens (path and location name) or why it is off, the sign
//! requests waiting for the user (`approvals`), and the streak of refusals on forwarded
//! connections. `agent::start` fills in the socket; `GET /api/agent` reads it.
//!
//! Invariants: the socket or the reason it is off is set once at start, before
//! `SERVICE_PORT` is printed, so no request sees it unset; nothing here names the agent's
//! types, so the state does not depend on `agent/`.

pub mod refusals;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::approvals::{Approvals, APPROVAL_TIMEOUT};
use crate::config::AgentConfig;
use crate::platform;

/// The agent's share of `AppState`.
pub struct AgentShare {
    /// The socket path (on Windows the pipe's name) and the name of the place that took it
    /// (`runtime_dir`, `data_dir`, `temp_dir`, `openssh_pipe`, `user_pipe`), set once when
    /// the endpoint listens; empty with `--no-agent`, or when no place could hold it.
    socket: OnceLock<(PathBuf, &'static str)>,
    /// Why there is no socket, for `GET /api/agent` and the 409 `AGENT_UNAVAILABLE`:
    /// `--no-agent` or the platform, unless `no_place` says more.
    off_because: &'static str,
    /// Why no place could hold the socket, set at start when that happened.
    no_place: OnceLock<String>,
    /// Sign requests waiting for the user, and approvals remembered until the vault locks.
    pub approvals: Approvals,
    /// Requests refused on forwarded connections, for their audit entries.
    pub forwarded_refusals: refusals::Streak,
}

impl AgentShare {
    pub fn new(config: Option<&AgentConfig>) -> AgentShare {
        let timeout = config
            .and_then(|config| config.approval_timeout)
            .unwrap_or(APPROVAL_TIMEOUT);
        AgentShare {
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

    /// The agent listens at `path`, in the place named `location`. Set once, at start.
    pub fn listening(&self, path: PathBuf, location: &'static str) {
        let _ = self.socket.set((path, location));
    }

    /// No place could hold the socket, for `reason`. Set once, at start.
    pub fn no_place(&self, reason: String) {
        let _ = self.no_place.set(reason);
    }

    /// Where clients connect (`SSH_AUTH_SOCK`); `None` when the agent is not served.
    pub fn socket(&self) -> Option<&Path> {
        self.socket.get().map(|(path, _)| path.as_path())
    }

    /// The name of the place that holds the socket; `None` when the agent is not served.
    pub fn location(&self) -> Option<&'static str> {
        self.socket.get().map(|(_, location)| *location)
    }

    /// Why the agent is not served (`--no-agent`, the platform, or no place for its socket),
    /// when `socket` is `None`.
    pub fn off_because(&self) -> &str {
        self.no_place.get().map_or(self.off_because, String::as_str)
    }
}
