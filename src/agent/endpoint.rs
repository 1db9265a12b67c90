//! The agent's endpoint: binding it in the first place that takes it (`place` chooses and
//! prepares), removing its socket file at shutdown, and the accept loop that gives every
//! connection a thread of its own.
//!
//! Platform-neutral: the endpoint itself comes from `platform` (docs/platforms.md, Platforms: a
//! Unix socket; on Windows a named pipe, which leaves no file to remove).
//!
//! Invariants (docs/agent.md "SSH agent"): the socket is mode 0600 in a 0700 directory owned by
//! the service's user, so only that user's processes can connect (a pipe: its security
//! descriptor, docs/platforms.md, Platforms); when no place can hold
//! it, the caller gets every place's reason and the service goes on without the agent; the
//! socket file (and a private temp directory made for it) is removed at shutdown; at most
//! `MAX_CONNECTIONS` connections are served at once, and at that cap the
//! longest-idle one is closed for a new client (`agent::connections`).

use std::fs;
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::agent::connections::{Admitted, Connections, Ticket};
use crate::agent::place::{self, Place};
use crate::config::AgentConfig;
use crate::platform::{self, AgentListener, AgentStream};
use crate::state::AppState;

/// Connections served at once. Each is a thread and a descriptor; a client holds one per
/// `ssh` process (and one per forwarded channel), so this is far above real use while
/// keeping a runaway local client from taking the process's descriptors. At the cap the
/// longest-idle connection is closed for the new one.
const MAX_CONNECTIONS: usize = 64;

/// Descriptors the agent's connections may hold at most: each is its socket and a clone of
/// it (to close it from the accept loop at the cap). The HTTP layer keeps them out of its
/// own connection cap (main wires this into `http::Limits`).
pub const DESCRIPTORS: usize = 2 * MAX_CONNECTIONS;

/// Once a message's length has arrived, the rest must arrive within this
/// (`HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS` shortens it for tests).
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(10);

/// A reply not taken by the client within this drops the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The socket's listener; removes the socket file (and its private temp directory, with the
/// data dir's record of it) when dropped, at shutdown.
pub struct Listening {
    path: PathBuf,
    place: Place,
    temp_dir: Option<(PathBuf, PathBuf)>,
}

impl Listening {
    /// Where clients connect.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which place took the socket.
    pub fn place(&self) -> Place {
        self.place
    }
}

/// Binds the socket (mode 0600) in the first place that takes it (docs/agent.md "SSH agent") and
/// starts accepting on a thread of its own; each place passed over is logged with its
/// reason. The state is held weakly, so the database still closes when the server stops.
/// `Err` says why no place could hold the socket.
pub fn listen(
    data_dir: &Path,
    config: &AgentConfig,
    state: Weak<AppState>,
) -> Result<Listening, String> {
    let data_dir = data_dir
        .canonicalize()
        .map_err(|err| format!("cannot resolve data dir {}: {err}", data_dir.display()))?;
    let pipes = platform::agent_pipes(config.user.as_deref(), &config.pipe_suffix);
    let (candidates, mut notes) = place::candidates(
        &data_dir,
        config.runtime_dir.as_deref(),
        &config.temp_dir,
        pipes,
    );
    let message_timeout = config.message_timeout.unwrap_or(MESSAGE_TIMEOUT);
    for candidate in &candidates {
        let (listener, listening) = match bind(candidate, &data_dir) {
            Ok(bound) => bound,
            Err(note) => {
                notes.push(note);
                continue;
            }
        };
        for note in &notes {
            log::warn!("SSH agent: passed over a place: {note}");
        }
        std::thread::Builder::new()
            .name("agent-accept".into())
            .spawn(move || accept_loop(&listener, &state, message_timeout))
            .map_err(|err| format!("cannot start the agent's accept thread: {err}"))?;
        return Ok(listening);
    }
    Err(notes.join("; "))
}

/// Prepares `candidate` and binds the socket there; a private temp directory made for it
/// is removed again when the bind fails.
fn bind(
    candidate: &place::Candidate,
    data_dir: &Path,
) -> Result<(AgentListener, Listening), String> {
    let ready = place::prepare(candidate, data_dir)?;
    match platform::bind_agent(&ready.path) {
        Ok(listener) => Ok((
            listener,
            Listening {
                path: ready.path,
                place: ready.place,
                temp_dir: ready.temp_dir,
            },
        )),
        Err(err) => {
            remove_temp_dir(ready.temp_dir.as_ref());
            Err(format!("cannot listen on {}: {err}", ready.path.display()))
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if !self.place.is_file() {
            return;
        }
        if let Err(err) = fs::remove_file(&self.path) {
            log::warn!(
                "cannot remove the agent socket {}: {err}",
                self.path.display()
            );
        }
        remove_temp_dir(self.temp_dir.as_ref());
    }
}

/// Removes a private temp directory (empty by now) and the data dir's record of it.
fn remove_temp_dir(temp_dir: Option<&(PathBuf, PathBuf)>) {
    let Some((dir, record)) = temp_dir else {
        return;
    };
    if let Err(err) = fs::remove_dir(dir) {
        log::warn!(
            "cannot remove the agent's directory {}: {err}",
            dir.display()
        );
    }
    let _ = fs::remove_file(record);
}

impl crate::agent::connection::Link for AgentStream {
    fn limit_reads(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(timeout)
    }
}

/// Accepts for ever (the process exits at shutdown); each connection gets a thread.
fn accept_loop(listener: &AgentListener, state: &Weak<AppState>, message_timeout: Duration) {
    // A place per connection, given back when its thread ends (also by unwinding).
    let connections = Arc::new(Connections::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept() {
            Ok(stream) => stream,
            Err(err) => {
                // Typically out of descriptors: wait a little instead of spinning.
                log::warn!("agent: accept failed ({err}); retrying");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let Some(ticket) = admit(&connections, &stream) else {
            continue;
        };
        if let Err(err) = stream.set_write_timeout(Some(WRITE_TIMEOUT)) {
            log::warn!("agent: dropped a connection that could not be set up: {err}");
            continue;
        }
        let state = Weak::clone(state);
        let spawned = std::thread::Builder::new()
            .name("agent-connection".into())
            .spawn(move || {
                crate::agent::connection::serve(&state, stream, message_timeout, &ticket);
            });
        if let Err(err) = spawned {
            log::warn!("agent: cannot start a connection thread ({err}); closed it");
        }
    }
}

/// Counts `stream` among the open connections, closing the longest-idle one at the cap
/// (logged); `None` (logged) when it cannot be served.
fn admit(connections: &Arc<Connections>, stream: &AgentStream) -> Option<Ticket> {
    let handle = match stream.try_clone() {
        Ok(handle) => handle,
        Err(err) => {
            log::warn!("agent: dropped a connection that could not be set up: {err}");
            return None;
        }
    };
    let close = Box::new(move || {
        let _ = handle.shutdown(Shutdown::Both);
    });
    match connections.admit(close) {
        Admitted::Room(ticket) => Some(ticket),
        Admitted::Evicted(ticket) => {
            log::info!(
                "agent: {MAX_CONNECTIONS} connections open; closed the longest-idle one for a \
                 new client"
            );
            Some(ticket)
        }
        Admitted::Full => {
            log::warn!(
                "agent: {MAX_CONNECTIONS} connections open, each answering a request; closed \
                 a new one"
            );
            None
        }
    }
}
