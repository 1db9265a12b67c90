//! The agent's Unix socket: where it lives, who may reach it, and the accept loop that gives
//! every connection a thread of its own.
//!
//! Platform-neutral: the socket itself comes from `platform` (README, Platforms: a Unix
//! socket; on Windows the agent is not served yet, and `agent::start` stops before this).
//!
//! Invariants (README "SSH agent"): the socket is mode 0600 in a 0700 directory owned by
//! the service's user (`$XDG_RUNTIME_DIR/host-manager`, else the data dir), so only that
//! user's processes can connect; a path longer than a socket address can hold is a clear
//! start-up error, never a silently cut path; a stale socket of a previous run is replaced
//! (the data dir's lock proves no other service owns it), anything else at its path is
//! left alone and refused; at most `MAX_CONNECTIONS` connections are served at once, and at
//! that cap the longest-idle one is closed for a new client (`agent::connections`).

use std::fs;
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::agent::connections::{Admitted, Connections, Ticket};
use crate::platform::{self, AgentListener, AgentStream, MAX_SOCKET_PATH_BYTES};
use crate::state::AppState;

/// The socket file under the data dir, when no runtime dir is set.
const SOCKET_FILE: &str = "agent.sock";

/// The directory under `$XDG_RUNTIME_DIR` that holds the sockets of every data dir.
const RUNTIME_SUBDIR: &str = "host-manager";

/// Connections served at once. Each is a thread and a descriptor; a client holds one per
/// `ssh` process (and one per forwarded channel), so this is far above real use while
/// keeping a runaway local client from taking the process's descriptors. At the cap the
/// longest-idle connection is closed for the new one.
const MAX_CONNECTIONS: usize = 64;

/// Once a message's length has arrived, the rest must arrive within this.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(10);

/// A reply not taken by the client within this drops the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The socket's listener; removes the socket file when dropped (at shutdown).
pub struct Listening {
    path: PathBuf,
}

/// Where the socket goes: `$XDG_RUNTIME_DIR/host-manager/agent-<hash>.sock` (the hash, of
/// the data dir's canonical path, keeps two services with two data dirs apart), else
/// `<data dir>/agent.sock`. Creates and checks the runtime directory. `data_dir` exists
/// (the service owns it by now).
pub fn socket_path(data_dir: &Path, runtime_dir: Option<&Path>) -> Result<PathBuf, String> {
    let data_dir = data_dir
        .canonicalize()
        .map_err(|err| format!("cannot resolve data dir {}: {err}", data_dir.display()))?;
    let path = match runtime_dir {
        None => data_dir.join(SOCKET_FILE),
        Some(runtime_dir) => {
            let dir = runtime_dir.join(RUNTIME_SUBDIR);
            private_dir(&dir, &data_dir)?;
            dir.join(format!(
                "agent-{:016x}.sock",
                fnv1a(data_dir.as_os_str().as_encoded_bytes())
            ))
        }
    };
    let length = path.as_os_str().len();
    if length > MAX_SOCKET_PATH_BYTES {
        return Err(format!(
            "the SSH agent's socket path {} is {length} bytes; a Unix socket path holds at most \
             {MAX_SOCKET_PATH_BYTES}: set XDG_RUNTIME_DIR to a short directory, use a shorter \
             --data-dir, or start with --no-agent",
            path.display()
        ));
    }
    Ok(path)
}

/// Binds the socket at `path` (mode 0600) and starts accepting on a thread of its own. The
/// state is held weakly, so the database still closes when the server stops.
pub fn listen(path: &Path, state: Weak<AppState>) -> Result<Listening, String> {
    match fs::symlink_metadata(path) {
        Ok(meta) if platform::is_socket(&meta.file_type()) => {
            fs::remove_file(path).map_err(|err| {
                format!(
                    "cannot remove the stale agent socket {}: {err}",
                    path.display()
                )
            })?
        }
        Ok(_) => {
            return Err(format!(
                "{} exists and is not a socket; move it away or start with --no-agent",
                path.display()
            ))
        }
        Err(_) => {}
    }
    let listener = platform::bind_agent(path).map_err(|err| {
        format!(
            "cannot listen on the agent socket {}: {err}",
            path.display()
        )
    })?;
    let listening = Listening {
        path: path.to_path_buf(),
    };
    std::thread::Builder::new()
        .name("agent-accept".into())
        .spawn(move || accept_loop(&listener, &state))
        .map_err(|err| format!("cannot start the agent's accept thread: {err}"))?;
    Ok(listening)
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Err(err) = fs::remove_file(&self.path) {
            log::warn!(
                "cannot remove the agent socket {}: {err}",
                self.path.display()
            );
        }
    }
}

impl crate::agent::connection::Link for AgentStream {
    fn limit_reads(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(timeout)
    }
}

/// Accepts for ever (the process exits at shutdown); each connection gets a thread.
fn accept_loop(listener: &AgentListener, state: &Weak<AppState>) {
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
                crate::agent::connection::serve(&state, stream, MESSAGE_TIMEOUT, &ticket);
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

/// Creates `dir` private (mode 0700) when missing; refuses it when it is not a directory or
/// belongs to another user than `data_dir` (which the service made), and narrows a wider
/// mode of its own.
fn private_dir(dir: &Path, data_dir: &Path) -> Result<(), String> {
    if let Err(err) = platform::create_private_dir(dir) {
        if err.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(format!("cannot create {}: {err}", dir.display()));
        }
    }
    let meta =
        fs::symlink_metadata(dir).map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
    let data_dir_meta = fs::metadata(data_dir)
        .map_err(|err| format!("cannot read {}: {err}", data_dir.display()))?;
    if !meta.file_type().is_dir() || !platform::same_owner(&meta, &data_dir_meta) {
        return Err(format!(
            "{} is not a directory of this user; the SSH agent's socket cannot go there \
             (remove it, or start with --no-agent)",
            dir.display()
        ));
    }
    if platform::is_open_to_others(&meta) {
        platform::narrow_private_dir(dir)
            .map_err(|err| format!("cannot set the mode of {}: {err}", dir.display()))?;
    }
    Ok(())
}

/// FNV-1a, 64 bits: a stable, short name for a data dir (not a secret, not a defence).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Unix only: these check the socket's directory and its modes (README, Platforms).
#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use crate::agent::endpoint::{fnv1a, socket_path};
    use crate::platform::MAX_SOCKET_PATH_BYTES;

    /// A scratch directory under cargo's target dir, removed when it drops.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/tmp")
                .join(format!("endpoint-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn without_a_runtime_dir_the_socket_is_in_the_data_dir() {
        let scratch = Scratch::new("data");
        let path = socket_path(&scratch.0, None).unwrap();
        assert_eq!(path, scratch.0.canonicalize().unwrap().join("agent.sock"));
    }

    #[test]
    fn under_a_runtime_dir_the_socket_gets_a_0700_directory_and_a_name_per_data_dir() {
        let scratch = Scratch::new("runtime");
        let (one, two, runtime) = (
            scratch.0.join("one"),
            scratch.0.join("two"),
            scratch.0.join("run"),
        );
        for dir in [&one, &two, &runtime] {
            fs::create_dir(dir).unwrap();
        }
        let first = socket_path(&one, Some(&runtime)).unwrap();
        let second = socket_path(&two, Some(&runtime)).unwrap();
        assert_ne!(first, second);
        assert_eq!(first.parent(), Some(runtime.join("host-manager").as_path()));
        let mode = fs::metadata(runtime.join("host-manager"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(socket_path(&one, Some(&runtime)).unwrap(), first, "stable");
    }

    #[test]
    fn a_wider_runtime_subdirectory_of_ours_is_narrowed_to_0700() {
        let scratch = Scratch::new("narrow");
        let dir = scratch.0.join("host-manager");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        socket_path(&scratch.0, Some(&scratch.0)).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_file_where_the_runtime_subdirectory_goes_is_refused() {
        let scratch = Scratch::new("file");
        fs::write(scratch.0.join("host-manager"), b"x").unwrap();
        let err = socket_path(&scratch.0, Some(&scratch.0)).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn a_socket_path_at_the_platform_limit_is_accepted_and_one_byte_longer_is_refused() {
        // 107 bytes on Linux, 103 on macOS (`sun_path` is 108 and 104 bytes).
        let scratch = Scratch::new("long");
        let base = scratch.0.canonicalize().unwrap();
        // `<dir>/agent.sock`: pad the directory name so the whole path has the length.
        let fixed = base.as_os_str().len() + "/".len() + "/agent.sock".len();
        for (length, accepted) in [
            (MAX_SOCKET_PATH_BYTES, true),
            (MAX_SOCKET_PATH_BYTES + 1, false),
        ] {
            let dir = base.join("d".repeat(length - fixed));
            fs::create_dir_all(&dir).unwrap();
            let outcome = socket_path(&dir, None);
            assert_eq!(outcome.is_ok(), accepted, "{length}: {outcome:?}");
            if let Ok(path) = outcome {
                assert_eq!(path.as_os_str().len(), length);
            } else {
                let err = outcome.unwrap_err();
                assert!(
                    err.contains(&format!("at most {MAX_SOCKET_PATH_BYTES}"))
                        && err.contains("--no-agent"),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn fnv1a_matches_its_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
