//! The process contract with the app that launches the service (README, Command line): the
//! data dir and its lock, the vault's opening at start, the password line on stdin, the
//! token file, the threads that watch for shutdown and idleness, the host list's reading
//! after the announcement, and the one writer of stdout.
//!
//! Invariants: stdout carries the `SERVICE_TOKEN=`/`SERVICE_PORT=` announcement (and the
//! `--help`/`--version` text) and nothing else, written by `print` alone; an existing data dir
//! is never re-moded; nothing here logs or formats a password or a token (a `StartError`
//! names paths, flags and rules, never a secret); the watcher threads hold the state only
//! weakly, so the database still closes when the server stops.

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use zeroize::Zeroizing;

use crate::config::{FeedOverrides, TokenSource};
use crate::http::Shutdown;
use crate::platform::{self, DirRefusal};
use crate::state::AppState;
use crate::store::{self, Db, StoreError};
use crate::vault::{DataKey, Secret, Vault, VaultError, MAX_PASSWORD_BYTES};

/// docs/security.md, Who may talk to the service: a token from a file must have at least this many
/// characters, each one of `TOKEN_BYTES`.
pub const MIN_TOKEN_CHARS: usize = 32;

/// The token alphabet: visible ASCII, `!` to `~` (HTTP's VCHAR without obs-text).
const TOKEN_BYTES: std::ops::RangeInclusive<u8> = b'!'..=b'~';

/// How often the `--auto-lock` thread compares the idle time with the limit, at most.
const AUTO_LOCK_TICK: Duration = Duration::from_millis(250);

/// Held with an exclusive lock for the life of the process: one service per data dir.
const LOCK_FILE: &str = "host-manager.lock";

/// Why the service could not start (or stopped serving on an error). The text says what
/// failed and, for the data dir, which rule and how to fix it; it never holds a secret.
#[derive(Debug)]
pub enum StartError {
    /// A file-system step failed: what we tried (`"create data dir"`), on which path.
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// `--data-dir` names something that is not a directory.
    NotADirectory(PathBuf),
    /// The data dir exists and is not safe to keep secrets in (docs/platforms.md, Platforms).
    DataDir { dir: PathBuf, refusal: DirRefusal },
    /// Another service holds the data dir's lock.
    DataDirTaken(PathBuf),
    /// The database cannot be opened (damaged, a newer schema, a symlink, ...).
    Database(StoreError),
    /// The schema version cannot be read.
    Schema(StoreError),
    /// The change log's and connection history's bounds cannot be stored.
    LogBounds(StoreError),
    /// The listening socket cannot be bound.
    Listen {
        bind: IpAddr,
        port: u16,
        source: io::Error,
    },
    /// The bound socket's address cannot be read.
    ListenAddress(io::Error),
    /// A watcher thread cannot be set up: what it was for (`"watch signals"`).
    Watcher {
        action: &'static str,
        source: io::Error,
    },
    /// The vault row cannot be read.
    VaultRead(StoreError),
    /// The vault row is there but cannot be used (for example a tampered header).
    VaultOpen(VaultError),
    /// The first start's vault row cannot be written.
    VaultCreate(StoreError),
    /// `--token-file`'s first line can never be sent by a client.
    BadToken {
        path: PathBuf,
        problem: TokenProblem,
    },
    /// The announcement cannot be written to stdout.
    Announce,
    /// The HTTP server failed.
    Server(io::Error),
}

/// Why a token file's first line cannot be a token a client could send. Positions count
/// characters from 1; the token itself is never shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenProblem {
    Blank { at: usize },
    Control { at: usize },
    NotAscii { at: usize },
    TooShort { chars: usize },
}

/// The data dir's lock, held while this value lives (for the life of the process).
pub struct DataDirLock {
    _file: File,
}

/// The one place that writes stdout: whole text, flushed at once. `SUCCESS` when written.
pub fn print(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Makes sure the data dir is ours alone, then takes its lock file: a second service on
/// the same dir fails here, before it touches the database.
pub fn own_data_dir(dir: &Path) -> Result<DataDirLock, StartError> {
    prepare_data_dir(dir)?;
    let path = dir.join(LOCK_FILE);
    let file = platform::open_private(OpenOptions::new().create(true).truncate(false).write(true))
        .open(&path)
        .map_err(|source| io_error("open", &path, source))?;
    match file.try_lock() {
        Ok(()) => Ok(DataDirLock { _file: file }),
        Err(TryLockError::WouldBlock) => Err(StartError::DataDirTaken(dir.to_owned())),
        Err(TryLockError::Error(source)) => Err(io_error("lock", &path, source)),
    }
}

/// Stores the change log's, the connection history's and the audit log's routine bounds
/// (docs/api.md, "Change feed" and "Audit log"): the documented ones unless a test overrides
/// them.
pub fn keep_logs(db: &Db, overrides: &FeedOverrides) -> Result<(), StartError> {
    let defaults = store::changes::Retention::default();
    let retention = store::changes::Retention {
        changes_kept: overrides.changes_kept.unwrap_or(defaults.changes_kept),
        history_kept: overrides.history_kept.unwrap_or(defaults.history_kept),
    };
    let audit_routine_kept = overrides
        .audit_routine_kept
        .unwrap_or(store::audit::ROUTINE_KEPT);
    db.write(|tx| {
        store::changes::set_retention(tx, retention)?;
        store::audit::set_routine_kept(tx, audit_routine_kept)
    })
    .map_err(StartError::LogBounds)
}

/// Binds the listening socket; the port it got (the OS's choice for port 0).
pub fn listen(bind: IpAddr, port: u16) -> Result<(TcpListener, u16), StartError> {
    let listener = TcpListener::bind((bind, port)).map_err(|source| StartError::Listen {
        bind,
        port,
        source,
    })?;
    let port = listener
        .local_addr()
        .map_err(StartError::ListenAddress)?
        .port();
    Ok((listener, port))
}

/// `--vault-password-stdin`: the first line of stdin without its `\n` or `\r\n`; `None`
/// (with a warning) when there is none or it is too long to be a password. Read a byte at a
/// time from a duplicate of fd 0: nothing after the line is consumed, so the
/// `--exit-with-parent` watcher reads on from there, and no copy of the password lands in
/// std's stdin buffer. The buffer is sized once and wiped on drop. Call it before
/// `watch_shutdown`: the line is ours, not the watcher's.
pub fn password_from_stdin() -> Option<Secret> {
    let mut stdin = match platform::stdin_file() {
        Ok(stdin) => stdin,
        Err(err) => {
            log::warn!("--vault-password-stdin: cannot read stdin ({err}); the vault stays locked");
            return None;
        }
    };
    // Room for the longest password plus a `\r`, so the vector never grows (and never
    // leaves a copy behind in freed memory).
    let mut line = Zeroizing::new(Vec::with_capacity(MAX_PASSWORD_BYTES + 1));
    let mut byte = Zeroizing::new([0u8; 1]);
    loop {
        match stdin.read(&mut byte[..]) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() > MAX_PASSWORD_BYTES => {
                log::warn!(
                    "--vault-password-stdin: the first line is longer than {MAX_PASSWORD_BYTES} bytes; the vault stays locked"
                );
                return None;
            }
            Ok(_) => line.push(byte[0]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                log::warn!(
                    "--vault-password-stdin: cannot read stdin ({err}); the vault stays locked"
                );
                return None;
            }
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.is_empty() {
        log::warn!("--vault-password-stdin: stdin has no password line; the vault stays locked");
        return None;
    }
    Some(Secret::new(std::mem::take(&mut *line)))
}

/// Starts the threads that end the service: SIGTERM and SIGINT always (on Windows the
/// console's Ctrl+C, Ctrl+Break and close), end of file on stdin with `--exit-with-parent`.
/// The first `Shutdown` they send stops the server.
pub fn watch_shutdown(exit_with_parent: bool) -> Result<Receiver<Shutdown>, StartError> {
    let (shutdown_tx, shutdown) = mpsc::channel();
    let on_signal = shutdown_tx.clone();
    platform::watch_signals(move || {
        let _ = on_signal.send(Shutdown("signal"));
    })
    .map_err(|source| StartError::Watcher {
        action: "watch signals",
        source,
    })?;
    if exit_with_parent {
        watch_parent(shutdown_tx).map_err(|source| StartError::Watcher {
            action: "watch stdin",
            source,
        })?;
    }
    Ok(shutdown)
}

/// Loads the vault's data key, creating one on first start (no master password yet), and
/// unlocks it with the password from stdin when one was given. With a master password set
/// and none given, the vault starts locked (docs/api.md, Vault). A wrong password does not stop
/// the start: the vault stays locked and the app can still call unlock.
pub fn open_vault(db: &Db, password: Option<Secret>) -> Result<Vault, StartError> {
    let mut vault = load_vault(db)?;
    match password {
        Some(password) => unlock_at_start(&mut vault, &password),
        None if vault.is_locked() => {
            log::info!("the vault is locked; unlock it with POST /api/vault/unlock")
        }
        None => {}
    }
    Ok(vault)
}

/// The bearer token, when one is configured: the first line of `--token-file` (docs/security.md,
/// Who may talk to the service: at least 32 characters of visible ASCII, `!` to `~`, so no
/// space, tab or control character) or 32 random bytes as hex for `--generate-token`.
pub fn load_token(source: &TokenSource) -> Result<Option<Secret>, StartError> {
    match source {
        TokenSource::None => Ok(None),
        TokenSource::Generate => Ok(Some(Secret::random_hex(32))),
        TokenSource::File(path) => {
            let text = Secret::new(
                fs::read(path).map_err(|source| io_error("read --token-file", path, source))?,
            );
            let first_line = text
                .expose()
                .split(|byte| *byte == b'\n')
                .next()
                .unwrap_or_default();
            let first_line = first_line.strip_suffix(b"\r").unwrap_or(first_line);
            if let Some(problem) = token_problem(first_line) {
                return Err(StartError::BadToken {
                    path: path.clone(),
                    problem,
                });
            }
            Ok(Some(Secret::new(first_line.to_vec())))
        }
    }
}

/// The announcement for stdout: `SERVICE_PORT=<port>`, after `SERVICE_TOKEN=<token>` with
/// `--generate-token` (one text, so one write). A `Secret`, since it may hold the token.
pub fn announcement(port: u16, source: &TokenSource, token: Option<&Secret>) -> Secret {
    let token_line = match (source, token.and_then(Secret::expose_str)) {
        (TokenSource::Generate, Some(token)) => format!("SERVICE_TOKEN={token}\n"),
        _ => String::new(),
    };
    Secret::from_string(format!("{token_line}SERVICE_PORT={port}\n"))
}

/// Writes the announcement: from here on the app may send requests.
pub fn announce(announcement: Secret) -> Result<(), StartError> {
    match print(announcement.expose_str().unwrap_or_default()) == ExitCode::SUCCESS {
        true => Ok(()),
        false => Err(StartError::Announce),
    }
}

/// `--auto-lock`: a thread that locks the vault once nothing happened for the configured
/// time (`HOST_MANAGER_TEST_AUTO_LOCK_MS` replaces the flag's seconds in tests). Holds the
/// state only weakly, so the database still closes when the server stops. Nothing without
/// the flag.
pub fn watch_idle(state: &Arc<AppState>) -> Result<(), StartError> {
    let Some(seconds) = state.config.auto_lock else {
        return Ok(());
    };
    let after = state.config.test_auto_lock.unwrap_or(seconds);
    let state = Arc::downgrade(state);
    thread::Builder::new()
        .name("auto-lock".into())
        .spawn(move || lock_when_idle(&state, after))
        .map_err(|source| StartError::Watcher {
            action: "start the auto-lock thread",
            source,
        })?;
    Ok(())
}

/// Reads the list's memory on a thread of its own, after SERVICE_PORT: it costs time in
/// proportion to the catalogue, and the port must come at once (docs/performance.md,
/// Performance). The hosts are read a chunk a lock and sorted with no lock held, then the
/// hosts' rows, when the memory keeps them, a batch a lock (`store::Db::warm_list`), so
/// requests are answered between. Holds the state only weakly until it starts; a failure
/// only leaves the reading to the first list.
pub fn warm_host_list(state: &Arc<AppState>) {
    let state = Arc::downgrade(state);
    let started = thread::Builder::new()
        .name("list-warm".into())
        .spawn(move || {
            let Some(state) = state.upgrade() else {
                return;
            };
            if let Err(err) = state.db.warm_list() {
                log::warn!("cannot read the host list into memory yet: {err}");
            }
        });
    if let Err(err) = started {
        log::warn!("cannot start the host list reader (the first list reads it): {err}");
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            StartError::NotADirectory(dir) => write!(
                f,
                "--data-dir {} exists and is not a directory",
                dir.display()
            ),
            // README, Command line: a refused data dir says which rule failed and how to
            // fix it.
            StartError::DataDir { dir, refusal } => write!(
                f,
                "data dir {} {refusal}; {}",
                dir.display(),
                refusal.advice(dir)
            ),
            StartError::DataDirTaken(dir) => write!(
                f,
                "another host-manager is already using data dir {}",
                dir.display()
            ),
            StartError::Database(source) => write!(f, "cannot open the database: {source}"),
            StartError::Schema(source) => write!(f, "{source}"),
            StartError::LogBounds(source) => {
                write!(f, "cannot set the change log's bounds: {source}")
            }
            StartError::Listen { bind, port, source } => {
                write!(f, "cannot listen on {bind}:{port}: {source}")
            }
            StartError::ListenAddress(source) => write!(f, "{source}"),
            StartError::Watcher { action, source } => write!(f, "cannot {action}: {source}"),
            StartError::VaultRead(source) => write!(f, "cannot read the vault: {source}"),
            StartError::VaultOpen(source) => write!(f, "cannot open the vault: {source}"),
            StartError::VaultCreate(source) => write!(f, "cannot create the vault: {source}"),
            StartError::BadToken { path, problem } => write!(
                f,
                "--token-file {}: {problem}; a token is at least {MIN_TOKEN_CHARS} visible \
                 ASCII characters (! to ~, no spaces) on the file's first line",
                path.display()
            ),
            StartError::Announce => f.write_str("cannot write SERVICE_PORT to stdout"),
            StartError::Server(source) => write!(f, "server failed: {source}"),
        }
    }
}

impl std::error::Error for StartError {}

impl fmt::Display for TokenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenProblem::Blank { at } => {
                write!(f, "the first line has a space or tab at character {at}")
            }
            TokenProblem::Control { at } => {
                write!(
                    f,
                    "the first line has a control character at character {at}"
                )
            }
            TokenProblem::NotAscii { at } => write!(
                f,
                "the first line has a character that is not ASCII at character {at}"
            ),
            TokenProblem::TooShort { chars } => write!(
                f,
                "the first line has {chars} characters, fewer than {MIN_TOKEN_CHARS}"
            ),
        }
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> StartError {
    StartError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// README, Command line and Platforms: a missing data dir is created private (mode 0700 on
/// Unix; on Windows it inherits its parent's ACL), and so are its missing parents; then the
/// data dir is used only when the platform's rules accept it (`platform::refuse_data_dir`).
/// An existing directory's mode is never changed: it may be shared (`/tmp`) or read-only on
/// purpose. A symlink to a directory is judged by its target.
fn prepare_data_dir(dir: &Path) -> Result<(), StartError> {
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        platform::create_private_dirs(parent)
            .map_err(|source| io_error("create", parent, source))?;
    }
    match platform::create_private_dir(dir) {
        // Ours: the umask may have narrowed the mode, and only the owner needs any.
        Ok(()) => platform::narrow_private_dir(dir)
            .map_err(|source| io_error("set the mode of data dir", dir, source))?,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => return Err(io_error("create data dir", dir, source)),
    }
    let metadata = fs::metadata(dir).map_err(|source| io_error("read data dir", dir, source))?;
    if !metadata.is_dir() {
        return Err(StartError::NotADirectory(dir.to_owned()));
    }
    platform::refuse_data_dir(dir, &metadata).map_err(|refusal| StartError::DataDir {
        dir: dir.to_owned(),
        refusal,
    })
}

/// The vault as stored, or a new one without a password on the first start.
fn load_vault(db: &Db) -> Result<Vault, StartError> {
    let row = db
        .read(store::vault_meta::load)
        .map_err(StartError::VaultRead)?;
    match row {
        Some(row) => {
            Vault::from_stored(row.header.as_deref(), &row.data_key).map_err(StartError::VaultOpen)
        }
        None => {
            let key = DataKey::generate();
            db.write(|tx| store::vault_meta::save(tx, None, key.expose()))
                .map_err(StartError::VaultCreate)?;
            Ok(Vault::NoPassword(key))
        }
    }
}

/// Unlocks `vault` with the password given on stdin, or says on stderr why it stays locked.
fn unlock_at_start(vault: &mut Vault, password: &Secret) {
    let Some(wrapped) = vault.wrapped_key().cloned() else {
        log::warn!("--vault-password-stdin: no master password is set; the line was ignored");
        return;
    };
    let unlocked = wrapped
        .open(password.expose())
        .and_then(|key| vault.unlock(&wrapped, key));
    match unlocked {
        Ok(()) => log::info!("vault unlocked with the master password from stdin"),
        Err(err) => log::warn!("--vault-password-stdin: {err}; the vault stays locked"),
    }
}

/// Why `line` cannot be a token that a client could send, or `None` when it can. A client
/// sends the token after `Bearer ` in a header, where blanks around it are dropped and
/// control characters are not allowed: a token with any of them could never match.
fn token_problem(line: &[u8]) -> Option<TokenProblem> {
    if let Some(position) = line.iter().position(|byte| !TOKEN_BYTES.contains(byte)) {
        let at = position + 1;
        return Some(match line[position] {
            b' ' | b'\t' => TokenProblem::Blank { at },
            byte if byte.is_ascii_control() => TokenProblem::Control { at },
            _ => TokenProblem::NotAscii { at },
        });
    }
    match line.len() < MIN_TOKEN_CHARS {
        true => Some(TokenProblem::TooShort { chars: line.len() }),
        false => None,
    }
}

/// The auto-lock thread's loop: every tick (`AUTO_LOCK_TICK`, or a quarter of a shorter
/// test limit), locks the vault when it has been idle for `after`; ends when the state is
/// gone.
fn lock_when_idle(state: &Weak<AppState>, after: Duration) {
    let tick = AUTO_LOCK_TICK.min(after / 4);
    loop {
        thread::sleep(tick);
        let Some(state) = state.upgrade() else {
            return;
        };
        if state.lock_if_idle(after) {
            log::info!(
                "vault locked after {} ms without a request (--auto-lock)",
                after.as_millis()
            );
        }
    }
}

/// `--exit-with-parent`: the launching app holds our stdin; when it goes away (or closes
/// stdin on purpose) the read hits end of file and the service shuts down.
fn watch_parent(shutdown: Sender<Shutdown>) -> io::Result<()> {
    thread::Builder::new()
        .name("parent".into())
        .spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = io::stdin().lock();
            loop {
                match stdin.read(&mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let _ = shutdown.send(Shutdown("stdin closed (--exit-with-parent)"));
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::lifecycle::{token_problem, TokenProblem, MIN_TOKEN_CHARS};

    #[test]
    fn token_of_32_visible_characters_has_no_problem_and_31_is_too_short() {
        assert_eq!(token_problem(&[b'!'; MIN_TOKEN_CHARS]), None);
        assert_eq!(
            token_problem(&[b'~'; MIN_TOKEN_CHARS - 1]),
            Some(TokenProblem::TooShort { chars: 31 })
        );
    }

    #[test]
    fn token_with_a_blank_a_control_or_a_non_ascii_byte_names_its_position() {
        let mut line = [b'a'; 40];
        line[4] = b'\t';
        assert_eq!(token_problem(&line), Some(TokenProblem::Blank { at: 5 }));
        line[4] = 0x7f;
        assert_eq!(token_problem(&line), Some(TokenProblem::Control { at: 5 }));
        line[4] = 0xc3;
        assert_eq!(token_problem(&line), Some(TokenProblem::NotAscii { at: 5 }));
    }

    #[test]
    fn token_problem_text_says_where_and_never_what() {
        let shown = TokenProblem::Blank { at: 33 }.to_string();
        assert_eq!(shown, "the first line has a space or tab at character 33");
    }
}
