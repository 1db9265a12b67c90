//! Windows (docs/platforms.md, Platforms): the data dir and its files are protected by the access
//! control list they inherit from the user's profile, the console's Ctrl+C, Ctrl+Break and
//! close reach the service through the ctrlc crate, and the SSH agent is not served yet.
//!
//! Invariants: no unsafe code, so no Win32 call of our own: an ACL is neither read nor
//! written (the service says so, with a warning, for a data dir outside the user's profile,
//! whose ACL it cannot vouch for); modes are Unix notions and do nothing here; nothing in
//! the agent's endpoint is ever reached (`AGENT_UNAVAILABLE` is checked first).

use std::fmt;
use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::windows::io::AsHandle;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why the agent is off on Windows (docs/platforms.md, Platforms): Windows' OpenSSH talks to its agent
/// on a named pipe, and serving one with the per-message timeout the agent keeps on Unix
/// takes overlapped I/O, which std does not offer.
pub const AGENT_UNAVAILABLE: Option<&str> =
    Some("the SSH agent is not available on Windows yet (docs/platforms.md, Platforms)");

/// No descriptor limit binds the service on Windows: sockets are handles, and a process
/// may hold millions of them, so the connection cap alone bounds them.
pub fn descriptor_limit() -> Option<u64> {
    None
}

/// An AF_UNIX address holds 108 bytes of path on Windows too; unused while the agent is off.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// No data dir is refused on Windows: the service cannot read an ACL without unsafe code.
#[derive(Debug)]
pub enum DirRefusal {}

/// The agent's listener: none can exist on Windows yet.
pub enum AgentListener {}

/// One client of the agent: none can exist on Windows yet.
pub enum AgentStream {}

/// Creates `dir` and its missing parents; they inherit their parent's ACL.
pub fn create_private_dirs(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Creates `dir` (not its parents); it inherits its parent's ACL, which under the user's
/// profile lets in only that user, the administrators and the system.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir(dir)
}

/// Nothing to narrow: Windows has no modes.
pub fn narrow_private_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Never refuses; warns when `dir` is not under `%USERPROFILE%`, the one place whose ACL
/// keeps other users out by default (docs/platforms.md, Platforms).
pub fn refuse_data_dir(dir: &Path, _metadata: &Metadata) -> Result<(), DirRefusal> {
    let profile =
        std::env::var_os("USERPROFILE").and_then(|profile| Path::new(&profile).canonicalize().ok());
    let inside = match (profile, dir.canonicalize()) {
        (Some(profile), Ok(dir)) => dir.starts_with(profile),
        _ => false,
    };
    if !inside {
        log::warn!(
            "data dir {} is not under the user's profile (%USERPROFILE%): host-manager cannot \
             check who else may read it on Windows; make sure its access control list lets in \
             only you",
            dir.display()
        );
    }
    Ok(())
}

/// Files get the ACL of their directory.
pub fn open_private(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// Windows has no modes: a file is never found wider than its directory lets it be.
pub fn is_open_to_others(_metadata: &Metadata) -> bool {
    false
}

/// Nothing to narrow: Windows has no modes.
pub fn make_private(_path: &Path) -> io::Result<()> {
    Ok(())
}

/// Owners are in ACLs, which the service does not read; unused while the agent is off.
pub fn same_owner(_one: &Metadata, _other: &Metadata) -> bool {
    true
}

/// Windows' AF_UNIX sockets are not served; unused while the agent is off.
pub fn is_socket(_file_type: &FileType) -> bool {
    false
}

/// Which space-separated field of `file_identity` is the file's size.
pub const FILE_IDENTITY_SIZE_FIELD: usize = 0;

/// Size, modification and creation times: Windows' change time is not in stable std, so a
/// tool that rewrites the file and sets its modification time back is not noticed (docs/platforms.md,
/// Platforms).
pub fn file_identity(metadata: &Metadata) -> String {
    format!(
        "{} {} {}",
        metadata.len(),
        since_epoch(metadata.modified()),
        since_epoch(metadata.created())
    )
}

/// A duplicate of the stdin handle, read without std's stdin buffer.
pub fn stdin_file() -> io::Result<File> {
    Ok(File::from(io::stdin().as_handle().try_clone_to_owned()?))
}

/// Calls `on_signal` at the console's Ctrl+C, Ctrl+Break, close, log-off and shut-down
/// events (the ctrlc crate's handler thread; Windows has no SIGTERM to send a process). A
/// close ends the process as soon as the handler returns, so that shutdown may be cut
/// short; the database stays sound (docs/reliability.md, Reliability).
pub fn watch_signals(on_signal: impl Fn() + Send + 'static) -> io::Result<()> {
    ctrlc::set_handler(on_signal).map_err(io::Error::other)
}

/// The agent is never started on Windows (`AGENT_UNAVAILABLE`).
pub fn bind_agent(_path: &Path) -> io::Result<AgentListener> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        AGENT_UNAVAILABLE.unwrap_or_default(),
    ))
}

/// Never reached: the agent is not started on Windows (`AGENT_UNAVAILABLE`).
pub fn agent_answers(_path: &Path) -> bool {
    false
}

impl AgentListener {
    pub fn accept(&self) -> io::Result<AgentStream> {
        match *self {}
    }
}

impl AgentStream {
    pub fn set_read_timeout(&self, _timeout: Option<Duration>) -> io::Result<()> {
        match *self {}
    }

    pub fn set_write_timeout(&self, _timeout: Option<Duration>) -> io::Result<()> {
        match *self {}
    }

    pub fn try_clone(&self) -> io::Result<AgentStream> {
        match *self {}
    }

    pub fn shutdown(&self, _how: std::net::Shutdown) -> io::Result<()> {
        match *self {}
    }
}

impl Read for AgentStream {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        match *self {}
    }
}

impl Write for AgentStream {
    fn write(&mut self, _buf: &[u8]) -> io::Result<usize> {
        match *self {}
    }

    fn flush(&mut self) -> io::Result<()> {
        match *self {}
    }
}

impl fmt::Display for DirRefusal {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

impl DirRefusal {
    pub fn advice(&self, _dir: &Path) -> String {
        match *self {}
    }
}

/// A file time as seconds and nanoseconds since 1970, or `-` when the file system has none.
fn since_epoch(time: io::Result<SystemTime>) -> String {
    let since = time
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok());
    match since {
        Some(since) => format!("{}.{:09}", since.as_secs(), since.subsec_nanos()),
        None => "-".into(),
    }
}
