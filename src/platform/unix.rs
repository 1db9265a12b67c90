//! Linux, macOS and the other Unix systems (docs/platforms.md, Platforms): modes 0700 and 0600 and the
//! owner's user id protect the data dir and its files, SIGTERM and SIGINT reach the service
//! through signal-hook's self-pipe, and the SSH agent listens on a Unix socket.
//!
//! Invariants: no unsafe code (the user id comes from a pipe we own, not from `geteuid`);
//! an existing directory's mode is only ever narrowed, never widened; `/proc` is read for
//! one thing only, the descriptor limit on Linux, with a stated fallback everywhere else.

use std::fmt;
use std::fs::{self, DirBuilder, File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::thread;

/// The SSH agent is served on every Unix system.
pub const AGENT_UNAVAILABLE: Option<&str> = None;

/// A socket address holds 108 bytes of path on Linux (`sun_path`) and 104 on macOS and the
/// BSDs, the final NUL included.
#[cfg(target_os = "linux")]
pub const MAX_SOCKET_PATH_BYTES: usize = 107;
#[cfg(not(target_os = "linux"))]
pub const MAX_SOCKET_PATH_BYTES: usize = 103;

/// What `descriptor_limit` assumes where it cannot read the limit: 256, macOS's default soft
/// limit and the lowest of the Unix systems' defaults.
const ASSUMED_DESCRIPTOR_LIMIT: u64 = 256;

/// The process's soft limit on open descriptors (`RLIMIT_NOFILE`), read without unsafe code:
/// on Linux from `/proc/self/limits`; elsewhere, or when that cannot be read,
/// `ASSUMED_DESCRIPTOR_LIMIT`. `None` means no limit.
pub fn descriptor_limit() -> Option<u64> {
    let read = match cfg!(target_os = "linux") {
        true => fs::read_to_string("/proc/self/limits").ok(),
        false => None,
    };
    match read.as_deref().map(super::open_files_limit) {
        Some(Some(limit)) => limit,
        _ => Some(ASSUMED_DESCRIPTOR_LIMIT),
    }
}

/// Mode of a directory we create: the data dir, its missing parents, the agent's runtime
/// directory (README, Command line).
const PRIVATE_DIR_MODE: u32 = 0o700;

/// Mode of a file we create in the data dir: the database, its WAL and SHM, the lock file.
const PRIVATE_FILE_MODE: u32 = 0o600;

/// Why an existing data dir is refused (README, Command line).
#[derive(Debug)]
pub enum DirRefusal {
    /// It belongs to another user.
    NotOurs { owner: u32, me: u32 },
    /// It has group or other permission bits.
    OpenToOthers { mode: u32 },
    /// The owner may not read, write or search it.
    NotUsable { mode: u32 },
    /// Which user runs the service could not be found out.
    UnknownUser(io::Error),
}

/// The agent's listening socket.
pub struct AgentListener(UnixListener);

/// One client of the agent.
pub type AgentStream = UnixStream;

/// Creates `dir` and its missing parents with mode 0700 (narrowed further by the umask).
pub fn create_private_dirs(dir: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
}

/// Creates `dir` (not its parents) with mode exactly 0700: the umask may have narrowed it,
/// and only the owner needs any. `AlreadyExists` when something is at `dir`.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(PRIVATE_DIR_MODE).create(dir)?;
    narrow_private_dir(dir)
}

/// Sets a directory of ours to mode 0700.
pub fn narrow_private_dir(dir: &Path) -> io::Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(PRIVATE_DIR_MODE))
}

/// An existing data dir is used only when it belongs to the user running the service, is
/// closed to everyone else and lets its owner read, write and enter it. Its mode is never
/// changed: it may be shared (`/tmp`) or read-only on purpose.
pub fn refuse_data_dir(_dir: &Path, metadata: &Metadata) -> Result<(), DirRefusal> {
    let me = effective_uid().map_err(DirRefusal::UnknownUser)?;
    let mode = metadata.mode() & 0o7777;
    if metadata.uid() != me {
        return Err(DirRefusal::NotOurs {
            owner: metadata.uid(),
            me,
        });
    }
    if mode & 0o077 != 0 {
        return Err(DirRefusal::OpenToOthers { mode });
    }
    if mode & 0o700 != 0o700 {
        return Err(DirRefusal::NotUsable { mode });
    }
    Ok(())
}

/// Files created through `options` get mode 0600.
pub fn open_private(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(PRIVATE_FILE_MODE)
}

/// Whether group or other users have any permission on the file or directory.
pub fn is_open_to_others(metadata: &Metadata) -> bool {
    metadata.mode() & 0o077 != 0
}

/// Sets a file of ours to mode 0600.
pub fn make_private(path: &Path) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(PRIVATE_FILE_MODE))
}

/// Whether two files belong to the same user.
pub fn same_owner(one: &Metadata, other: &Metadata) -> bool {
    one.uid() == other.uid()
}

/// Whether the file is a Unix socket (a stale agent socket of a previous run).
pub fn is_socket(file_type: &FileType) -> bool {
    file_type.is_socket()
}

/// Which space-separated field of `file_identity` is the file's size.
pub const FILE_IDENTITY_SIZE_FIELD: usize = 2;

/// What no write can leave unchanged: device, inode, size, and the modification and change
/// times (no tool can set the change time back).
pub fn file_identity(metadata: &Metadata) -> String {
    format!(
        "{} {} {} {}.{:09} {}.{:09}",
        metadata.dev(),
        metadata.ino(),
        metadata.len(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec()
    )
}

/// A duplicate of fd 0, read without std's stdin buffer.
pub fn stdin_file() -> io::Result<File> {
    Ok(File::from(io::stdin().as_fd().try_clone_to_owned()?))
}

/// Calls `on_signal` once, on a thread of its own, at the first SIGTERM or SIGINT: a
/// self-pipe (signal-hook writes a byte from the handler) needs no unsafe code here.
pub fn watch_signals(on_signal: impl Fn() + Send + 'static) -> io::Result<()> {
    let (mut read_end, write_end) = UnixStream::pair()?;
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::low_level::pipe::register(signal, write_end.try_clone()?)?;
    }
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            if read_end.read(&mut byte).is_ok() {
                on_signal();
            }
        })?;
    Ok(())
}

/// Binds the agent's socket at `path` and sets it to mode 0600 (its 0700 directory keeps
/// everyone else out until then).
pub fn bind_agent(path: &Path) -> io::Result<AgentListener> {
    let listener = UnixListener::bind(path)?;
    make_private(path)?;
    Ok(AgentListener(listener))
}

/// The agent listens on a socket file (`agent::place` chooses where), never on a named pipe.
pub fn agent_pipes(_user: Option<&str>, _suffix: &str) -> Vec<(String, super::AgentPipe)> {
    Vec::new()
}

/// Whether something listens on the socket at `path`: a live agent, whose socket is never
/// taken; a socket nobody answers on is a killed run's.
pub fn agent_answers(path: &Path) -> bool {
    UnixStream::connect(path).is_ok()
}

impl AgentListener {
    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<AgentStream> {
        self.0.accept().map(|(stream, _)| stream)
    }
}

impl fmt::Display for DirRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirRefusal::NotOurs { owner, me } => write!(
                f,
                "belongs to user id {owner}, not to the user running host-manager ({me})"
            ),
            DirRefusal::OpenToOthers { mode } => {
                write!(f, "is open to other users (mode {mode:04o})")
            }
            DirRefusal::NotUsable { mode } => write!(
                f,
                "is not readable, writable and searchable by its owner (mode {mode:04o})"
            ),
            DirRefusal::UnknownUser(source) => {
                write!(
                    f,
                    "cannot be checked: which user runs us is unknown ({source})"
                )
            }
        }
    }
}

impl DirRefusal {
    /// How to fix it, after the refusal: README, Command line.
    pub fn advice(&self, dir: &Path) -> String {
        let advice = "host-manager keeps secrets there and never changes the mode of a \
             directory it did not create: give --data-dir a path that does not exist yet (it \
             is created with mode 0700), or fix this one";
        match self {
            DirRefusal::OpenToOthers { .. } | DirRefusal::NotUsable { .. } => {
                format!("{advice} (`chmod 700 {}`)", dir.display())
            }
            DirRefusal::NotOurs { .. } | DirRefusal::UnknownUser(_) => advice.to_owned(),
        }
    }
}

/// The user id files we create get (the effective one, on Linux the file-system one):
/// the owner of a pipe we just made, which needs no unsafe call to `geteuid`.
fn effective_uid() -> io::Result<u32> {
    let (reader, _writer) = io::pipe()?;
    Ok(File::from(std::os::fd::OwnedFd::from(reader))
        .metadata()?
        .uid())
}
