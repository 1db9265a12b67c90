//! Windows (docs/platforms.md, Platforms): the data dir and its files are protected by the access
//! control list they inherit from the user's profile, the console's Ctrl+C, Ctrl+Break and
//! close reach the service through the ctrlc crate, and the SSH agent listens on a named
//! pipe through the interprocess crate.
//!
//! Invariants: no unsafe code, so no Win32 call of our own: a file's ACL is neither read nor
//! written (the service says so, with a warning, for a data dir outside the user's profile,
//! whose ACL it cannot vouch for); modes are Unix notions and do nothing here. The agent's
//! pipe is created as its first instance, so a name another program holds is never shared,
//! and only with the owner-only descriptor `AGENT_PIPE_SDDL` (through the crate), never
//! with Windows' default, which lets every local user open it for reading; a read on an
//! agent connection never blocks in the system (the pipe is `PIPE_NOWAIT`): it looks for
//! data every `POLL_MAX` at most, so its timeout holds and closing it from another thread
//! (the connection cap) ends it within one poll; a zero-length message is taken and
//! ignored, as an empty write on a socket sends nothing.

use std::fmt;
use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::windows::io::{AsHandle, OwnedHandle};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use interprocess::os::windows::named_pipe::{
    pipe_mode, PipeListener, PipeListenerOptions, PipeMode, PipeStream,
};
use interprocess::os::windows::security_descriptor::SecurityDescriptor;
use widestring::U16CString;

/// The SSH agent is served on Windows, on a named pipe.
pub const AGENT_UNAVAILABLE: Option<&str> = None;

/// The longest wait between two looks at an idle agent connection: a client's next message
/// is read at most this late, and a closed or timed-out connection ends at most this late.
const POLL_MAX: Duration = Duration::from_millis(50);

/// `ERROR_NO_DATA`: a read of a pipe in `PIPE_NOWAIT` mode found nothing waiting.
const ERROR_NO_DATA: i32 = 232;

/// The pipe's buffer each way: a whole agent message (256 KiB at most) fits, so a reply is
/// written without waiting for the client to read it.
const PIPE_BUFFER_BYTES: u32 = 256 * 1024 + 4;

/// The agent pipe's security descriptor (SDDL): a protected DACL (`P`: nothing inherited)
/// granting full control to OWNER RIGHTS (`OW`, whoever owns the pipe: the service's user,
/// the default owner of what its token creates) and to SYSTEM (`SY`), and nothing to anyone
/// else, where Windows' default descriptor lets Everyone and anonymous read (and so open)
/// the pipe. Not the user's SID, which needs a Win32 call to learn; not CREATOR OWNER
/// (`CO`), which only means something in inheritable entries (docs/platforms.md, Platforms).
const AGENT_PIPE_SDDL: &str = "D:P(A;;GA;;;OW)(A;;GA;;;SY)";

/// No descriptor limit binds the service on Windows: sockets are handles, and a process
/// may hold millions of them, so the connection cap alone bounds them.
pub fn descriptor_limit() -> Option<u64> {
    None
}

/// An AF_UNIX address holds 108 bytes of path on Windows too; unused, the agent is on a pipe.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// No data dir is refused on Windows: the service cannot read an ACL without unsafe code.
#[derive(Debug)]
pub enum DirRefusal {}

/// The agent's named pipe: the instance waiting for the next client.
pub struct AgentListener(PipeListener<pipe_mode::Bytes, pipe_mode::Bytes>);

/// One client of the agent; its clones (`try_clone`) share the pipe instance, and
/// `shutdown` from any of them ends it.
pub struct AgentStream(Arc<Connection>);

struct Connection {
    /// Reads and writes bytes.
    bytes: PipeStream<pipe_mode::Bytes, pipe_mode::Bytes>,
    /// The same instance seen as messages, only to peek: how much is waiting, or that the
    /// client is gone, without blocking.
    peek: PipeStream<pipe_mode::Messages, pipe_mode::None>,
    /// Set by `shutdown`: the next read sees end of file.
    closed: AtomicBool,
    /// How long one read may wait; `None` without a bound.
    read_timeout: Mutex<Option<Duration>>,
}

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

/// Owners are in ACLs, which the service does not read; unused, the agent is on a pipe.
pub fn same_owner(_one: &Metadata, _other: &Metadata) -> bool {
    true
}

/// Windows' AF_UNIX sockets are not served; unused, the agent is on a pipe.
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

/// The pipes the agent tries, best first (`super::pipe_names`): OpenSSH's own name, then
/// the user's.
pub fn agent_pipes(user: Option<&str>, suffix: &str) -> Vec<(String, super::AgentPipe)> {
    super::pipe_names(user, suffix)
}

/// Creates the named pipe `path` as its first instance, so that a name another program
/// (Windows' own ssh-agent service, a password manager) holds is refused, never shared:
/// first a client's open of the name says whether a server is there (Wine does not refuse
/// a second first instance), then the creation itself refuses a name taken meanwhile (on
/// Windows). The pipe refuses remote clients and gets the owner-only descriptor
/// `AGENT_PIPE_SDDL`; when that cannot be built the pipe is not created (never served with
/// Windows' permissive default), so the agent says why it is not served. Its type is
/// messages, so a peek says whether anything waits; its clients read and write it as bytes.
pub fn bind_agent(path: &Path) -> io::Result<AgentListener> {
    let descriptor = agent_pipe_descriptor().map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot build the pipe's owner-only security descriptor ({err})"),
        )
    })?;
    if let Some(why) = pipe_held(path) {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "another program holds this pipe (Windows' ssh-agent service or a password \
                 manager): {why}"
            ),
        ));
    }
    let options = PipeListenerOptions::new()
        .path(path.as_os_str())
        .mode(PipeMode::Messages)
        .accept_remote(false)
        .security_descriptor(Some(descriptor))
        .input_buffer_size_hint(PIPE_BUFFER_BYTES)
        .output_buffer_size_hint(PIPE_BUFFER_BYTES);
    match options.create::<pipe_mode::Bytes, pipe_mode::Bytes>() {
        Ok(listener) => Ok(AgentListener(listener)),
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => Err(io::Error::new(
            err.kind(),
            format!(
                "another program holds this pipe (Windows' ssh-agent service or a password \
                 manager), or it is not ours ({err})"
            ),
        )),
        Err(err) => Err(err),
    }
}

/// The owner-only descriptor of `AGENT_PIPE_SDDL`, parsed by Windows.
fn agent_pipe_descriptor() -> io::Result<SecurityDescriptor> {
    let sddl = U16CString::from_str(AGENT_PIPE_SDDL)
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err.to_string()))?;
    SecurityDescriptor::deserialize(&sddl)
}

/// Whether a server holds the pipe `path`: a client's open of it succeeds, finds every
/// instance busy or is refused; only "not found" means no server. The connection opened
/// is closed at once, which the other server sees as a client that left.
fn pipe_held(path: &Path) -> Option<String> {
    match OpenOptions::new().read(true).write(true).open(path) {
        Ok(_) => Some("it answers".into()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => Some(err.to_string()),
    }
}

/// Whether a server answers on the pipe `path` (`agent::place` never asks: a pipe leaves no
/// file behind to find stale).
pub fn agent_answers(path: &Path) -> bool {
    pipe_held(path).is_some()
}

impl AgentListener {
    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<AgentStream> {
        let bytes = self.0.accept()?;
        // Reads return at once (`ERROR_NO_DATA` when nothing waits); a reply always fits
        // the pipe's buffer, so writes are not cut short by it.
        bytes.set_nonblocking(true)?;
        let handle: OwnedHandle = bytes.as_handle().try_clone_to_owned()?;
        let peek = PipeStream::try_from(handle).map_err(|err| io::Error::other(err.to_string()))?;
        Ok(AgentStream(Arc::new(Connection {
            bytes,
            peek,
            closed: AtomicBool::new(false),
            read_timeout: Mutex::new(None),
        })))
    }
}

impl AgentStream {
    /// Bounds each following read to `timeout`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        *self
            .0
            .read_timeout
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = timeout;
        Ok(())
    }

    /// Not bounded on a pipe: a reply fits the pipe's buffer (`PIPE_BUFFER_BYTES`), so a
    /// write returns without the client reading (docs/platforms.md, Platforms).
    pub fn set_write_timeout(&self, _timeout: Option<Duration>) -> io::Result<()> {
        Ok(())
    }

    /// Another view of the same connection.
    pub fn try_clone(&self) -> io::Result<AgentStream> {
        Ok(AgentStream(Arc::clone(&self.0)))
    }

    /// Ends the connection: its reads see end of file within `POLL_MAX`, its thread ends
    /// and the pipe instance closes with it.
    pub fn shutdown(&self, _how: std::net::Shutdown) -> io::Result<()> {
        self.0.closed.store(true, Ordering::SeqCst);
        Ok(())
    }
}

impl Read for AgentStream {
    /// Waits, reading without blocking (`PIPE_NOWAIT`), until data waits, the client leaves (end of file), the stream is shut
    /// down (end of file) or the read timeout passes (`TimedOut`); then reads what waits.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let connection = &*self.0;
        let timeout = *connection
            .read_timeout
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let mut pause = Duration::from_millis(1);
        loop {
            if connection.closed.load(Ordering::SeqCst) {
                return Ok(0);
            }
            match (&connection.bytes).read(buf) {
                Ok(0) if buf.is_empty() => return Ok(0),
                // A zero-length message (a client's empty write; on a socket it sends
                // nothing), now taken and ignored, or the client left: the peek says which.
                Ok(0) => match connection.peek.peek_msg_len() {
                    Ok(_) => {}
                    Err(err) if err.kind() == io::ErrorKind::BrokenPipe => return Ok(0),
                    Err(err) => return Err(err),
                },
                Ok(read) => return Ok(read),
                Err(err) if err.raw_os_error() == Some(ERROR_NO_DATA) => {}
                Err(err) if err.kind() == io::ErrorKind::BrokenPipe => return Ok(0),
                Err(err) => return Err(err),
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(io::ErrorKind::TimedOut.into());
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

impl Write for AgentStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.closed.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        (&self.0.bytes).write(buf)
    }

    /// Nothing to do: what was written waits in the pipe for the client, and waiting for
    /// the client to read it (the crate's flush) could wait for ever.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use interprocess::os::windows::security_descriptor::AsSecurityDescriptorExt;

    use super::{agent_pipe_descriptor, AGENT_PIPE_SDDL};

    /// `DACL_SECURITY_INFORMATION`: serialize the DACL only.
    const DACL_ONLY: u32 = 4;

    #[test]
    fn the_agent_pipe_s_descriptor_is_a_protected_dacl_for_its_owner_and_system_only() {
        let descriptor = agent_pipe_descriptor().unwrap();
        let dacl = descriptor
            .serialize(DACL_ONLY, |sddl| sddl.to_string_lossy())
            .unwrap();
        assert_eq!(dacl, AGENT_PIPE_SDDL);
        assert_eq!(AGENT_PIPE_SDDL, "D:P(A;;GA;;;OW)(A;;GA;;;SY)");
    }
}
