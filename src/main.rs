//! host-manager: a local HTTP/JSON service that keeps a catalogue of SSH hosts, groups and
//! keys, with every secret sealed in a vault.
//!
//! `main` only wires things together: flags, logger, data dir, database, server. stdout is
//! a protocol channel for the launching app: it carries `SERVICE_PORT=<port>` and nothing
//! else (`--help`/`--version` aside); everything else goes to stderr.

mod agent;
mod api;
mod config;
mod error;
#[cfg(test)]
mod fuzz;
mod gate;
mod http;
mod logger;
mod model;
mod router;
mod sshkey;
mod state;
mod store;
mod vault;

use std::collections::HashMap;
use std::fs::{self, DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use zeroize::Zeroizing;

use crate::config::{Command, Config, FeedOverrides, TokenSource, USAGE};
use crate::gate::Gate;
use crate::http::{Limits, Shutdown};
use crate::state::AppState;
use crate::vault::{DataKey, Secret, Vault, MAX_PASSWORD_BYTES};

/// README, Who may talk to the service: a token from a file must have at least this many
/// characters, each one of `TOKEN_BYTES`.
const MIN_TOKEN_CHARS: usize = 32;

/// The token alphabet: visible ASCII, `!` to `~` (HTTP's VCHAR without obs-text).
const TOKEN_BYTES: std::ops::RangeInclusive<u8> = b'!'..=b'~';

/// Mode of the data directory we create (README, Command line).
const DATA_DIR_MODE: u32 = 0o700;

/// How often the `--auto-lock` thread compares the idle time with the limit.
const AUTO_LOCK_TICK: Duration = Duration::from_millis(250);

/// Held with an exclusive lock for the life of the process: one service per data dir.
const LOCK_FILE: &str = "host-manager.lock";

fn main() -> ExitCode {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = match Command::parse(std::env::args().skip(1), &env) {
        Ok(Command::Run(config)) => *config,
        Ok(Command::Help) => return write_stdout(USAGE),
        Ok(Command::Version) => {
            return write_stdout(&format!("host-manager {}\n", env!("CARGO_PKG_VERSION")))
        }
        Err(err) => {
            eprintln!("host-manager: {err}");
            return ExitCode::from(2);
        }
    };
    logger::init(env.get("RUST_LOG").map(String::as_str));
    match serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            log::error!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Starts everything, announces the port, and serves until shutdown.
fn serve(config: Config) -> Result<(), String> {
    let _lock = own_data_dir(&config.data_dir)?;
    let db =
        store::open(&config.data_dir).map_err(|err| format!("cannot open the database: {err}"))?;
    keep_logs(&db, &config.feed_overrides)?;
    let schema = db.schema_version().map_err(|err| err.to_string())?;
    let listener = TcpListener::bind((config.bind, config.port))
        .map_err(|err| format!("cannot listen on {}:{}: {err}", config.bind, config.port))?;
    let port = listener.local_addr().map_err(|err| err.to_string())?.port();
    // Before the --exit-with-parent watcher starts reading stdin: the line is ours.
    let password = match config.vault_password_stdin {
        true => read_password_line(),
        false => None,
    };

    let (shutdown_tx, shutdown) = mpsc::channel();
    watch_signals(shutdown_tx.clone()).map_err(|err| format!("cannot watch signals: {err}"))?;
    if config.exit_with_parent {
        watch_parent(shutdown_tx).map_err(|err| format!("cannot watch stdin: {err}"))?;
    }
    log::info!(
        "listening on {}:{port}, data dir {}, schema version {schema}",
        config.bind,
        config.data_dir.display()
    );
    let mut vault = open_vault(&db)?;
    // The key derivation sits before SERVICE_PORT on purpose: the app that passed the
    // password expects the vault's final state from its first request.
    match password {
        Some(password) => unlock_at_start(&mut vault, &password),
        None if vault.is_locked() => {
            log::info!("the vault is locked; unlock it with POST /api/vault/unlock")
        }
        None => {}
    }
    let token = load_token(&config.token)?;
    // --generate-token: SERVICE_TOKEN comes before SERVICE_PORT, in one write.
    let mut announcement = Secret::new(Vec::new());
    if config.token == TokenSource::Generate {
        if let Some(token) = token.as_ref().and_then(Secret::expose_str) {
            announcement = Secret::from_string(format!("SERVICE_TOKEN={token}\n"));
        }
    }
    let gate = Gate::new(config.allowed_origins.clone(), token);
    let auto_lock = config.auto_lock;
    let limits = Limits::new(&config.http_overrides);
    let state = Arc::new(AppState::new(config, db, vault));
    if let Some(after) = auto_lock {
        watch_idle(Arc::downgrade(&state), after)
            .map_err(|err| format!("cannot start the auto-lock thread: {err}"))?;
    }
    // Before SERVICE_PORT: the app's first `GET /api/agent` sees the socket.
    let agent_socket = agent::start(&state)?;
    let line = format!(
        "{}SERVICE_PORT={port}\n",
        announcement.expose_str().unwrap_or_default()
    );
    if write_stdout(&line) != ExitCode::SUCCESS {
        return Err("cannot write SERVICE_PORT to stdout".into());
    }
    drop(Secret::from_string(line));
    // Connection threads may outlive `serve` holding the state; the database closes now.
    let db_owner = Arc::clone(&state);
    http::serve(state, gate, listener, limits, shutdown)
        .map_err(|err| format!("server failed: {err}"))?;
    // Removes the socket file: a client then finds no agent rather than a dead one.
    drop(agent_socket);
    db_owner.db.close();
    log::info!("stopped");
    Ok(())
}

/// Stores the change log's and the connection history's bounds (README, "Change feed"):
/// the documented ones unless a test overrides them.
fn keep_logs(db: &store::Db, overrides: &FeedOverrides) -> Result<(), String> {
    let defaults = store::changes::Retention::default();
    let retention = store::changes::Retention {
        changes_kept: overrides.changes_kept.unwrap_or(defaults.changes_kept),
        history_kept: overrides.history_kept.unwrap_or(defaults.history_kept),
    };
    db.write(|tx| store::changes::set_retention(tx, retention))
        .map_err(|err| format!("cannot set the change log's bounds: {err}"))
}

/// The bearer token, when one is configured: the first line of `--token-file` (README,
/// Who may talk to the service: at least 32 characters of visible ASCII, `!` to `~`, so no
/// space, tab or control character) or 32 random bytes as hex for `--generate-token`.
fn load_token(source: &TokenSource) -> Result<Option<Secret>, String> {
    match source {
        TokenSource::None => Ok(None),
        TokenSource::Generate => Ok(Some(Secret::random_hex(32))),
        TokenSource::File(path) => {
            let text =
                Secret::new(fs::read(path).map_err(|err| {
                    format!("cannot read --token-file {}: {err}", path.display())
                })?);
            let first_line = text
                .expose()
                .split(|byte| *byte == b'\n')
                .next()
                .unwrap_or_default();
            let first_line = first_line.strip_suffix(b"\r").unwrap_or(first_line);
            if let Some(problem) = token_problem(first_line) {
                return Err(format!(
                    "--token-file {}: {problem}; a token is at least {MIN_TOKEN_CHARS} visible \
                     ASCII characters (! to ~, no spaces) on the file's first line",
                    path.display()
                ));
            }
            Ok(Some(Secret::new(first_line.to_vec())))
        }
    }
}

/// Why `line` cannot be a token that a client could send, or `None` when it can. A client
/// sends the token after `Bearer ` in a header, where blanks around it are dropped and
/// control characters are not allowed: a token with any of them could never match. The
/// text says where the problem is, never what the token holds.
fn token_problem(line: &[u8]) -> Option<String> {
    if let Some(position) = line.iter().position(|byte| !TOKEN_BYTES.contains(byte)) {
        let what = match line[position] {
            b' ' | b'\t' => "a space or tab",
            byte if byte.is_ascii_control() => "a control character",
            _ => "a character that is not ASCII",
        };
        return Some(format!(
            "the first line has {what} at character {}",
            position + 1
        ));
    }
    if line.len() < MIN_TOKEN_CHARS {
        return Some(format!(
            "the first line has {} characters, fewer than {MIN_TOKEN_CHARS}",
            line.len()
        ));
    }
    None
}

/// Loads the vault's data key, creating one on first start (no master password yet). With
/// a master password set, the vault starts locked (README, Vault).
fn open_vault(db: &store::Db) -> Result<Vault, String> {
    let row = db
        .read(store::vault_meta::load)
        .map_err(|err| format!("cannot read the vault: {err}"))?;
    match row {
        Some(row) => Vault::from_stored(row.header.as_deref(), &row.data_key)
            .map_err(|err| format!("cannot open the vault: {err}")),
        None => {
            let key = DataKey::generate();
            db.write(|tx| store::vault_meta::save(tx, None, key.expose()))
                .map_err(|err| format!("cannot create the vault: {err}"))?;
            Ok(Vault::NoPassword(key))
        }
    }
}

/// `--vault-password-stdin`: the first line of stdin without its `\n` or `\r\n`; `None`
/// (with a warning) when there is none or it is too long to be a password. Read a byte at a
/// time from a duplicate of fd 0: nothing after the line is consumed, so the
/// `--exit-with-parent` watcher reads on from there, and no copy of the password lands in
/// std's stdin buffer. The buffer is sized once and wiped on drop.
fn read_password_line() -> Option<Secret> {
    let mut stdin = match io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => File::from(fd),
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

/// Unlocks `vault` with the password given on stdin. A wrong one does not stop the start:
/// the vault stays locked and the app can still call unlock (README, Vault).
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

/// `--auto-lock`: locks the vault once nothing happened for `after`. Holds the state only
/// weakly, so the database still closes when the server stops.
fn watch_idle(state: Weak<AppState>, after: Duration) -> io::Result<()> {
    thread::Builder::new()
        .name("auto-lock".into())
        .spawn(move || loop {
            thread::sleep(AUTO_LOCK_TICK);
            let Some(state) = state.upgrade() else {
                return;
            };
            if state.lock_if_idle(after) {
                log::info!(
                    "vault locked after {} s without a request (--auto-lock)",
                    after.as_secs()
                );
            }
        })?;
    Ok(())
}

/// Makes sure the data dir is ours alone, then takes its lock file: a second service on
/// the same dir fails here, before it touches the database.
fn own_data_dir(dir: &Path) -> Result<File, String> {
    prepare_data_dir(dir)?;
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(format!(
            "another host-manager is already using data dir {}",
            dir.display()
        )),
        Err(TryLockError::Error(err)) => Err(format!("cannot lock {}: {err}", path.display())),
    }
}

/// README, Command line: a missing data dir is created with mode 0700 (its missing parents
/// too); an existing one is used only when it belongs to us, is not open to other users and
/// lets us read, write and enter it. An existing directory's mode is never changed: it may
/// be shared (`/tmp`) or read-only on purpose. A symlink to a directory is judged by its
/// target.
fn prepare_data_dir(dir: &Path) -> Result<(), String> {
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(DATA_DIR_MODE)
            .create(parent)
            .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    }
    match DirBuilder::new().mode(DATA_DIR_MODE).create(dir) {
        // Ours: the umask may have narrowed the mode, and only the owner needs any.
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(DATA_DIR_MODE))
            .map_err(|err| format!("cannot set the mode of data dir {}: {err}", dir.display())),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => check_existing_dir(dir),
        Err(err) => Err(format!("cannot create data dir {}: {err}", dir.display())),
    }
}

/// The refusals for a data dir that exists (see `prepare_data_dir`).
fn check_existing_dir(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    let metadata =
        fs::metadata(dir).map_err(|err| format!("cannot read data dir {shown}: {err}"))?;
    if !metadata.is_dir() {
        return Err(format!("--data-dir {shown} exists and is not a directory"));
    }
    let me = effective_uid().map_err(|err| format!("cannot tell which user runs us: {err}"))?;
    let mode = metadata.mode() & 0o7777;
    let advice = "host-manager keeps secrets there and never changes the mode of a directory \
                  it did not create: give --data-dir a path that does not exist yet (it is \
                  created with mode 0700), or fix this one";
    if metadata.uid() != me {
        return Err(format!(
            "data dir {shown} belongs to user id {}, not to the user running host-manager ({me}); \
             {advice}",
            metadata.uid()
        ));
    }
    if mode & 0o077 != 0 {
        return Err(format!(
            "data dir {shown} is open to other users (mode {mode:04o}); {advice} \
             (`chmod 700 {shown}`)"
        ));
    }
    if mode & 0o700 != 0o700 {
        return Err(format!(
            "data dir {shown} is not readable, writable and searchable by its owner \
             (mode {mode:04o}); {advice} (`chmod 700 {shown}`)"
        ));
    }
    Ok(())
}

/// The user id files we create get (the effective one, on Linux the file-system one):
/// the owner of a pipe we just made, which needs no unsafe call to `geteuid`.
fn effective_uid() -> io::Result<u32> {
    let (reader, _writer) = io::pipe()?;
    Ok(File::from(std::os::fd::OwnedFd::from(reader))
        .metadata()?
        .uid())
}

/// SIGTERM and SIGINT become a `Shutdown` through a self-pipe (no unsafe code).
fn watch_signals(shutdown: Sender<Shutdown>) -> io::Result<()> {
    let (mut read_end, write_end) = UnixStream::pair()?;
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::low_level::pipe::register(signal, write_end.try_clone()?)?;
    }
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            if read_end.read(&mut byte).is_ok() {
                let _ = shutdown.send(Shutdown("signal"));
            }
        })?;
    Ok(())
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

/// The one place that writes stdout: whole lines, flushed at once.
fn write_stdout(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
