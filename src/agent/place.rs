//! Where the agent's socket goes (docs/agent.md "SSH agent"): the places in order of preference, the
//! pure choice of the ones whose path fits a socket address, and getting a place ready (its
//! private directory made or checked, a stale socket of a killed run cleared). Where the
//! platform serves the agent on a named pipe (Windows), its pipe names are the places, in
//! the platform's order, and nothing needs getting ready: a pipe leaves no file behind.
//!
//! The places: `$XDG_RUNTIME_DIR/host-manager/agent-<hash>.sock` (the hash, of the data
//! dir's canonical path, keeps two services with two data dirs apart), else
//! `<data dir>/agent.sock`, else `agent.sock` in a private directory
//! `host-manager-XXXXXXXX` under the temp dir, as OpenSSH's own ssh-agent does. A place that
//! is missing, not usable or too long is skipped with a note saying why; when none is left,
//! the agent is off and the service serves everything else.
//!
//! Invariants: a path is never cut to fit; a socket directory is 0700 and belongs to the
//! service's user (a temp directory is made fresh by `create_dir` under a random name, or is
//! the one this data dir recorded, checked to be ours: a real directory, our user's, closed
//! to everyone else); a socket that answers belongs to a live run and is never taken; a
//! socket nobody answers on is a killed run's and is removed; anything else at a socket's
//! path is left alone.

use std::fs::{self, Metadata};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::platform::{self, AgentPipe, MAX_SOCKET_PATH_BYTES};

/// The socket file under the data dir, and in a private temp directory.
const SOCKET_FILE: &str = "agent.sock";

/// The directory under `$XDG_RUNTIME_DIR` that holds the sockets of every data dir.
const RUNTIME_SUBDIR: &str = "host-manager";

/// A private temp directory's name: this prefix and `RANDOM_CHARS` random letters or digits.
const TEMP_PREFIX: &str = "host-manager-";
const RANDOM_CHARS: usize = 8;

/// Fresh names tried before giving up on the temp dir (each collision is 1 in 36^8).
const TEMP_TRIES: usize = 16;

/// The file in the data dir naming the private temp directory in use, so that the next start
/// after a kill finds it, clears its stale socket and reuses it.
pub const TEMP_RECORD: &str = "agent-dir";

/// Where the socket went: `GET /api/agent` says it as `location`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Runtime,
    Data,
    Temp,
    /// Windows' named pipe `\\.\pipe\openssh-ssh-agent`.
    OpenSshPipe,
    /// Windows' named pipe `\\.\pipe\host-manager-agent-<user>`.
    UserPipe,
}

impl Place {
    /// The `location` of `GET /api/agent`.
    pub fn name(self) -> &'static str {
        match self {
            Place::Runtime => "runtime_dir",
            Place::Data => "data_dir",
            Place::Temp => "temp_dir",
            Place::OpenSshPipe => "openssh_pipe",
            Place::UserPipe => "user_pipe",
        }
    }

    /// Whether the place is a socket file, to remove at shutdown (a pipe is not a file).
    pub fn is_file(self) -> bool {
        matches!(self, Place::Runtime | Place::Data | Place::Temp)
    }
}

/// A place the socket may go, as the pure choice names it.
#[derive(Debug, PartialEq, Eq)]
pub enum Candidate {
    /// `path` in `dir`, which is made private (or checked) first.
    Runtime { dir: PathBuf, path: PathBuf },
    /// `path` in the data dir, which the service owns.
    Data { path: PathBuf },
    /// `agent.sock` in a private directory under `parent`.
    Temp { parent: PathBuf },
    /// A named pipe, `path` its name.
    Pipe { path: PathBuf, place: Place },
}

/// A place made ready: the socket's path, and the temp directory to remove with it.
pub struct Ready {
    pub path: PathBuf,
    pub place: Place,
    /// The private temp directory (and the data dir's record of it), removed at shutdown.
    pub temp_dir: Option<(PathBuf, PathBuf)>,
}

/// The places to try, best first, and a note for each one left out because its socket path
/// would not fit a socket address: the platform's named `pipes` when it has any (Windows),
/// else the socket places. Pure; `data_dir` is canonical.
pub fn candidates(
    data_dir: &Path,
    runtime_dir: Option<&Path>,
    temp_dir: &Path,
    pipes: Vec<(String, AgentPipe)>,
) -> (Vec<Candidate>, Vec<String>) {
    if !pipes.is_empty() {
        let chosen = pipes
            .into_iter()
            .map(|(name, pipe)| Candidate::Pipe {
                path: PathBuf::from(name),
                place: match pipe {
                    AgentPipe::OpenSsh => Place::OpenSshPipe,
                    AgentPipe::User => Place::UserPipe,
                },
            })
            .collect();
        return (chosen, Vec::new());
    }
    let (mut chosen, mut notes) = (Vec::new(), Vec::new());
    let mut consider = |candidate: Candidate, path: &Path| match too_long(path) {
        None => chosen.push(candidate),
        Some(note) => notes.push(note),
    };
    if let Some(runtime_dir) = runtime_dir {
        let dir = runtime_dir.join(RUNTIME_SUBDIR);
        let path = dir.join(format!(
            "agent-{:016x}.sock",
            fnv1a(data_dir.as_os_str().as_encoded_bytes())
        ));
        consider(
            Candidate::Runtime {
                dir,
                path: path.clone(),
            },
            &path,
        );
    }
    let path = data_dir.join(SOCKET_FILE);
    consider(Candidate::Data { path: path.clone() }, &path);
    let longest = temp_dir
        .join(format!("{TEMP_PREFIX}{}", "X".repeat(RANDOM_CHARS)))
        .join(SOCKET_FILE);
    consider(
        Candidate::Temp {
            parent: temp_dir.to_path_buf(),
        },
        &longest,
    );
    (chosen, notes)
}

/// Why `path` cannot be a socket's, if it cannot.
fn too_long(path: &Path) -> Option<String> {
    let length = path.as_os_str().len();
    (length > MAX_SOCKET_PATH_BYTES).then(|| {
        format!(
            "{} is {length} bytes, and a Unix socket path holds at most {MAX_SOCKET_PATH_BYTES}",
            path.display()
        )
    })
}

/// Gets `candidate` ready for a socket, or says why it cannot be used.
pub fn prepare(candidate: &Candidate, data_dir: &Path) -> Result<Ready, String> {
    if let Candidate::Pipe { path, place } = candidate {
        return Ok(Ready {
            path: path.clone(),
            place: *place,
            temp_dir: None,
        });
    }
    let data_dir_meta = fs::metadata(data_dir)
        .map_err(|err| format!("cannot read {}: {err}", data_dir.display()))?;
    match candidate {
        Candidate::Runtime { dir, path } => {
            runtime_dir(dir, &data_dir_meta)?;
            clear_stale(path)?;
            Ok(Ready {
                path: path.clone(),
                place: Place::Runtime,
                temp_dir: None,
            })
        }
        Candidate::Data { path } => {
            clear_stale(path)?;
            Ok(Ready {
                path: path.clone(),
                place: Place::Data,
                temp_dir: None,
            })
        }
        Candidate::Temp { parent } => temp_dir(parent, data_dir, &data_dir_meta),
        Candidate::Pipe { .. } => Err("a pipe needs no place made ready".into()),
    }
}

/// Creates `dir` private (mode 0700) when missing; refuses it when it is not a directory or
/// belongs to another user than the data dir, and narrows a wider mode of its own.
fn runtime_dir(dir: &Path, data_dir_meta: &Metadata) -> Result<(), String> {
    if let Err(err) = platform::create_private_dir(dir) {
        if err.kind() != ErrorKind::AlreadyExists {
            return Err(format!("cannot create {}: {err}", dir.display()));
        }
    }
    let meta =
        fs::symlink_metadata(dir).map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
    if !meta.file_type().is_dir() || !platform::same_owner(&meta, data_dir_meta) {
        return Err(format!("{} is not a directory of this user", dir.display()));
    }
    if platform::is_open_to_others(&meta) {
        platform::narrow_private_dir(dir)
            .map_err(|err| format!("cannot set the mode of {}: {err}", dir.display()))?;
    }
    Ok(())
}

/// Removes a socket nobody answers on at `path` (a killed run's); refuses a live one and
/// anything that is not a socket.
pub fn clear_stale(path: &Path) -> Result<(), String> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !platform::is_socket(&meta.file_type()) {
        return Err(format!("{} exists and is not a socket", path.display()));
    }
    if platform::agent_answers(path) {
        return Err(format!(
            "{} answers: another running agent owns it",
            path.display()
        ));
    }
    fs::remove_file(path)
        .map_err(|err| format!("cannot remove the stale socket {}: {err}", path.display()))?;
    log::info!(
        "SSH agent: removed the stale socket {} of a run that ended",
        path.display()
    );
    Ok(())
}

/// The private temp directory: the one this data dir recorded when it is still ours and free,
/// else a fresh one (then recorded).
fn temp_dir(parent: &Path, data_dir: &Path, data_dir_meta: &Metadata) -> Result<Ready, String> {
    let record = data_dir.join(TEMP_RECORD);
    if let Some(dir) = recorded_dir(&record, parent, data_dir_meta) {
        let path = dir.join(SOCKET_FILE);
        match clear_stale(&path) {
            Ok(()) => {
                return Ok(Ready {
                    path,
                    place: Place::Temp,
                    temp_dir: Some((dir, record)),
                })
            }
            Err(note) => log::warn!("SSH agent: not reusing {}: {note}", dir.display()),
        }
    }
    let dir = fresh_dir(parent)?;
    if let Err(err) = write_record(&record, &dir) {
        log::warn!(
            "SSH agent: cannot record {} in {} ({err}); if this run is killed, remove the \
             directory by hand",
            dir.display(),
            record.display()
        );
    }
    Ok(Ready {
        path: dir.join(SOCKET_FILE),
        place: Place::Temp,
        temp_dir: Some((dir, record)),
    })
}

/// The directory `record` names, when it is a private temp directory of ours under `parent`.
fn recorded_dir(record: &Path, parent: &Path, data_dir_meta: &Metadata) -> Option<PathBuf> {
    let text = fs::read_to_string(record).ok()?;
    let dir = PathBuf::from(text.trim_end_matches('\n'));
    let name = dir.file_name()?.to_str()?;
    let named = name
        .strip_prefix(TEMP_PREFIX)
        .is_some_and(|rest| rest.len() == RANDOM_CHARS && rest.bytes().all(is_name_char));
    if !named || dir.parent() != Some(parent) {
        return None;
    }
    let meta = fs::symlink_metadata(&dir).ok()?;
    let ours = meta.file_type().is_dir()
        && platform::same_owner(&meta, data_dir_meta)
        && !platform::is_open_to_others(&meta);
    ours.then_some(dir)
}

/// A new 0700 directory under `parent` with a random name; never one that exists.
fn fresh_dir(parent: &Path) -> Result<PathBuf, String> {
    for _ in 0..TEMP_TRIES {
        let dir = parent.join(format!("{TEMP_PREFIX}{}", random_name()));
        match platform::create_private_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == ErrorKind::AlreadyExists => continue,
            Err(err) => {
                return Err(format!(
                    "cannot make a private directory in {}: {err}",
                    parent.display()
                ))
            }
        }
    }
    Err(format!(
        "cannot make a private directory in {}: {TEMP_TRIES} random names were taken",
        parent.display()
    ))
}

/// Writes `dir` into `record` (mode 0600, as every file of the data dir).
fn write_record(record: &Path, dir: &Path) -> std::io::Result<()> {
    let text = dir
        .to_str()
        .ok_or_else(|| std::io::Error::other("the directory's name is not UTF-8"))?;
    let mut options = fs::OpenOptions::new();
    platform::open_private(options.write(true).create(true).truncate(true))
        .open(record)?
        .write_all(format!("{text}\n").as_bytes())
}

/// `RANDOM_CHARS` letters and digits from the OS's randomness.
fn random_name() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; RANDOM_CHARS];
    crate::vault::random_bytes(&mut bytes);
    bytes
        .iter()
        .map(|byte| char::from(CHARS[usize::from(*byte) % CHARS.len()]))
        .collect()
}

fn is_name_char(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

/// FNV-1a, 64 bits: a stable, short name for a data dir (not a secret, not a defence).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::agent::place::{candidates, fnv1a, Candidate, Place};
    use crate::platform::{AgentPipe, MAX_SOCKET_PATH_BYTES};

    /// A directory path of exactly `length` bytes under `/d`.
    fn dir_of(length: usize) -> PathBuf {
        PathBuf::from(format!("/{}", "d".repeat(length - 1)))
    }

    fn data_dir_path(data_dir: &Path) -> Candidate {
        Candidate::Data {
            path: data_dir.join("agent.sock"),
        }
    }

    fn temp(parent: &str) -> Candidate {
        Candidate::Temp {
            parent: PathBuf::from(parent),
        }
    }

    #[test]
    fn the_runtime_dir_comes_first_then_the_data_dir_then_a_private_temp_dir() {
        let data_dir = Path::new("/home/ann/.local/share/host-manager");
        let (chosen, notes) = candidates(
            data_dir,
            Some(Path::new("/run/user/1000")),
            Path::new("/tmp"),
            Vec::new(),
        );
        let hash = fnv1a(data_dir.as_os_str().as_encoded_bytes());
        assert_eq!(
            chosen,
            [
                Candidate::Runtime {
                    dir: PathBuf::from("/run/user/1000/host-manager"),
                    path: PathBuf::from(format!(
                        "/run/user/1000/host-manager/agent-{hash:016x}.sock"
                    )),
                },
                data_dir_path(data_dir),
                temp("/tmp"),
            ]
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn the_platform_s_pipes_are_the_only_places_in_its_order_and_no_socket_place_is_tried() {
        let pipes = vec![
            ("\\\\.\\pipe\\a".to_owned(), AgentPipe::OpenSsh),
            ("\\\\.\\pipe\\b".to_owned(), AgentPipe::User),
        ];
        let (chosen, notes) = candidates(
            &dir_of(400),
            Some(Path::new("/run/user/1000")),
            Path::new("/tmp"),
            pipes,
        );
        assert_eq!(
            chosen,
            [
                Candidate::Pipe {
                    path: PathBuf::from("\\\\.\\pipe\\a"),
                    place: Place::OpenSshPipe
                },
                Candidate::Pipe {
                    path: PathBuf::from("\\\\.\\pipe\\b"),
                    place: Place::UserPipe
                },
            ]
        );
        assert!(notes.is_empty(), "no socket place is considered: {notes:?}");
        assert!(!Place::OpenSshPipe.is_file() && Place::Data.is_file());
    }

    #[test]
    fn two_data_dirs_get_two_runtime_sockets() {
        let runtime = Some(Path::new("/run/user/1000"));
        let one = candidates(Path::new("/a"), runtime, Path::new("/tmp"), Vec::new()).0;
        let two = candidates(Path::new("/b"), runtime, Path::new("/tmp"), Vec::new()).0;
        assert_ne!(one[0], two[0]);
    }

    #[test]
    fn a_data_dir_socket_at_the_limit_is_kept_and_one_byte_longer_goes_to_the_temp_dir() {
        // 107 bytes on Linux, 103 on macOS (`sun_path` is 108 and 104 bytes).
        let fixed = "/agent.sock".len();
        let fits = dir_of(MAX_SOCKET_PATH_BYTES - fixed);
        let (chosen, notes) = candidates(&fits, None, Path::new("/tmp"), Vec::new());
        assert_eq!(chosen, [data_dir_path(&fits), temp("/tmp")]);
        assert!(notes.is_empty(), "{notes:?}");
        let over = dir_of(MAX_SOCKET_PATH_BYTES + 1 - fixed);
        let (chosen, notes) = candidates(&over, None, Path::new("/tmp"), Vec::new());
        assert_eq!(chosen, [temp("/tmp")]);
        let expected = format!(
            "is {} bytes, and a Unix socket path holds at most {MAX_SOCKET_PATH_BYTES}",
            MAX_SOCKET_PATH_BYTES + 1
        );
        assert!(
            notes.len() == 1 && notes[0].contains(&expected),
            "{notes:?}"
        );
    }

    #[test]
    fn a_temp_dir_is_kept_only_when_its_longest_socket_path_fits() {
        // `<temp>/host-manager-XXXXXXXX/agent.sock`
        let fixed = "/host-manager-XXXXXXXX/agent.sock".len();
        let data_dir = dir_of(200);
        for (length, kept) in [
            (MAX_SOCKET_PATH_BYTES - fixed, true),
            (MAX_SOCKET_PATH_BYTES + 1 - fixed, false),
        ] {
            let temp_dir = dir_of(length);
            let (chosen, notes) = candidates(&data_dir, None, &temp_dir, Vec::new());
            assert_eq!(chosen.len(), usize::from(kept), "{length}");
            assert_eq!(notes.len(), 2 - usize::from(kept), "{length}");
        }
    }

    #[test]
    fn a_runtime_dir_too_long_falls_back_to_the_data_dir_with_a_note() {
        let runtime = dir_of(100);
        let (chosen, notes) = candidates(
            Path::new("/data"),
            Some(&runtime),
            Path::new("/tmp"),
            Vec::new(),
        );
        assert_eq!(chosen, [data_dir_path(Path::new("/data")), temp("/tmp")]);
        assert!(
            notes.len() == 1 && notes[0].contains("host-manager/agent-"),
            "{notes:?}"
        );
    }

    #[test]
    fn fnv1a_matches_its_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}

/// Unix only: these make and check directories and their modes (docs/platforms.md, Platforms).
#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod unix_tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;
    use std::path::{Path, PathBuf};

    use crate::agent::place::{prepare, Candidate, Place, TEMP_RECORD};

    /// A scratch directory under cargo's target dir, removed when it drops.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            Scratch(crate::scratch::fresh(&format!("place-{name}")))
        }

        fn dir(&self, name: &str) -> PathBuf {
            let dir = self.0.join(name);
            fs::create_dir(&dir).unwrap();
            dir
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_runtime_subdirectory_is_made_0700_and_a_wider_one_of_ours_is_narrowed() {
        let scratch = Scratch::new("runtime");
        let data_dir = scratch.dir("data");
        let dir = scratch.0.join("host-manager");
        let candidate = Candidate::Runtime {
            dir: dir.clone(),
            path: dir.join("agent-x.sock"),
        };
        prepare(&candidate, &data_dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            prepare(&candidate, &data_dir).unwrap().place,
            Place::Runtime
        );
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_missing_runtime_dir_or_a_file_at_the_subdirectory_is_not_usable() {
        let scratch = Scratch::new("runtime-bad");
        let data_dir = scratch.dir("data");
        let missing = scratch.0.join("missing/host-manager");
        fs::write(scratch.0.join("host-manager"), b"x").unwrap();
        for dir in [missing, scratch.0.join("host-manager")] {
            let candidate = Candidate::Runtime {
                dir: dir.clone(),
                path: dir.join("agent-x.sock"),
            };
            let err = prepare(&candidate, &data_dir).err().unwrap();
            assert!(err.contains(&dir.display().to_string()), "{err}");
        }
    }

    #[test]
    fn a_stale_socket_is_removed_a_live_one_and_a_file_are_left_alone() {
        let scratch = Scratch::new("stale");
        let data_dir = scratch.dir("data");
        let path = data_dir.join("agent.sock");
        let candidate = Candidate::Data { path: path.clone() };
        drop(UnixListener::bind(&path).unwrap());
        assert!(
            path.exists(),
            "a listener's drop leaves its file, as a kill does"
        );
        prepare(&candidate, &data_dir).unwrap();
        assert!(!path.exists(), "nobody answered: removed");
        let live = UnixListener::bind(&path).unwrap();
        let err = prepare(&candidate, &data_dir).err().unwrap();
        assert!(err.contains("answers"), "{err}");
        assert!(path.exists(), "a live socket is not taken");
        drop(live);
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"x").unwrap();
        let err = prepare(&candidate, &data_dir).err().unwrap();
        assert!(err.contains("not a socket"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn a_temp_dir_is_fresh_0700_recorded_and_reused_by_the_next_start_only_while_ours() {
        let scratch = Scratch::new("temp");
        let (data_dir, temp) = (scratch.dir("data"), scratch.dir("tmp"));
        let candidate = Candidate::Temp {
            parent: temp.clone(),
        };
        let first = prepare(&candidate, &data_dir).unwrap();
        let (dir, record) = first.temp_dir.clone().unwrap();
        assert_eq!(first.place, Place::Temp);
        assert_eq!(first.path, dir.join("agent.sock"));
        assert_eq!(dir.parent(), Some(temp.as_path()));
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("host-manager-") && name.len() == 21,
            "{name}"
        );
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(record, data_dir.join(TEMP_RECORD));
        assert_eq!(mode(&record), 0o600);
        // A killed run leaves its socket; the next start clears it and reuses the dir.
        drop(UnixListener::bind(&first.path).unwrap());
        let again = prepare(&candidate, &data_dir).unwrap();
        assert_eq!(again.path, first.path);
        assert!(!first.path.exists());
        // Opened to others, it is no longer ours to reuse: a fresh one is made.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let fresh = prepare(&candidate, &data_dir).unwrap();
        assert_ne!(fresh.path, first.path);
        // A symbolic link recorded in its place is not followed.
        let (fresh_dir, _) = fresh.temp_dir.unwrap();
        fs::remove_dir(&fresh_dir).unwrap();
        std::os::unix::fs::symlink(&dir, &fresh_dir).unwrap();
        let other = prepare(&candidate, &data_dir).unwrap();
        assert_ne!(other.path, fresh_dir.join("agent.sock"));
    }

    #[test]
    fn a_temp_dir_that_is_a_file_cannot_hold_a_private_directory() {
        let scratch = Scratch::new("temp-file");
        let data_dir = scratch.dir("data");
        let file = scratch.0.join("tmp");
        fs::write(&file, b"x").unwrap();
        let err = prepare(
            &Candidate::Temp {
                parent: file.clone(),
            },
            &data_dir,
        )
        .err()
        .unwrap();
        assert!(err.contains("cannot make a private directory"), "{err}");
    }
}
