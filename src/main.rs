//! host-manager: a local HTTP/JSON service that keeps a catalogue of SSH hosts, groups and
//! keys, with every secret sealed in a vault.
//!
//! `main` only wires things together: flags, logger, data dir, database, server. stdout is
//! a protocol channel for the launching app: it carries `SERVICE_PORT=<port>` and nothing
//! else (`--help`/`--version` aside); everything else goes to stderr.

// TODO #4-#7: the placeholders leave shared helpers unused until the endpoints land.
#![allow(dead_code)]

mod api;
mod config;
mod error;
mod model;
mod router;
mod server;
mod state;
mod store;
mod vault;

use std::collections::HashMap;
use std::fs::{self, DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread;

use crate::config::{Command, Config, USAGE};
use crate::server::Event;
use crate::state::AppState;
use crate::vault::{DataKey, Vault};

/// Mode of the data directory (api-decisions §1).
const DATA_DIR_MODE: u32 = 0o700;

/// Held with an exclusive lock for the life of the process: one service per data dir.
const LOCK_FILE: &str = "host-manager.lock";

fn main() -> ExitCode {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = match Command::parse(std::env::args().skip(1), &env) {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help) => return write_stdout(USAGE),
        Ok(Command::Version) => {
            return write_stdout(&format!("host-manager {}\n", env!("CARGO_PKG_VERSION")))
        }
        Err(err) => {
            eprintln!("host-manager: {err}");
            return ExitCode::from(2);
        }
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .target(env_logger::Target::Stderr)
        .init();
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
    let schema = db.schema_version().map_err(|err| err.to_string())?;
    let listener = TcpListener::bind((config.bind, config.port))
        .map_err(|err| format!("cannot listen on {}:{}: {err}", config.bind, config.port))?;
    let listener = server::tune_listener(listener)
        .map_err(|err| format!("cannot set socket options: {err}"))?;
    let port = listener.local_addr().map_err(|err| err.to_string())?.port();

    let (events_tx, events) = mpsc::channel();
    watch_signals(events_tx.clone()).map_err(|err| format!("cannot watch signals: {err}"))?;
    if config.exit_with_parent {
        watch_parent(events_tx.clone()).map_err(|err| format!("cannot watch stdin: {err}"))?;
    }
    log::info!(
        "listening on {}:{port}, data dir {}, schema version {schema}",
        config.bind,
        config.data_dir.display()
    );
    let vault = open_vault(&db)?;
    let state = Arc::new(AppState::new(config, db, vault));
    if write_stdout(&format!("SERVICE_PORT={port}\n")) != ExitCode::SUCCESS {
        return Err("cannot write SERVICE_PORT to stdout".into());
    }
    server::run(state, listener, events_tx, events)
        .map_err(|err| format!("server failed: {err}"))?;
    log::info!("stopped");
    Ok(())
}

/// Loads the vault's data key, creating one on first start (no master password yet).
fn open_vault(db: &store::Db) -> Result<Vault, String> {
    let row = db
        .read(store::vault_meta::load)
        .map_err(|err| format!("cannot read the vault: {err}"))?;
    match row {
        Some(row) => match DataKey::from_bytes(&row.data_key) {
            Some(key) if row.header.is_none() => Ok(Vault::NoPassword(key)),
            _ => Err("the vault row is not in a format this build understands".into()),
        },
        None => {
            let key = DataKey::generate();
            db.write(|tx| store::vault_meta::save(tx, None, key.expose()))
                .map_err(|err| format!("cannot create the vault: {err}"))?;
            Ok(Vault::NoPassword(key))
        }
    }
}

/// Creates the data dir (mode 0700) and takes its lock file. A second service on the same
/// dir fails here, before it touches the database.
fn own_data_dir(dir: &Path) -> Result<File, String> {
    DirBuilder::new()
        .recursive(true)
        .mode(DATA_DIR_MODE)
        .create(dir)
        .map_err(|err| format!("cannot create data dir {}: {err}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(DATA_DIR_MODE))
        .map_err(|err| format!("cannot set the mode of data dir {}: {err}", dir.display()))?;
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

/// SIGTERM and SIGINT become `Event::Shutdown` through a self-pipe (no unsafe code).
fn watch_signals(events: Sender<Event>) -> io::Result<()> {
    let (mut read_end, write_end) = UnixStream::pair()?;
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::low_level::pipe::register(signal, write_end.try_clone()?)?;
    }
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            if read_end.read(&mut byte).is_ok() {
                let _ = events.send(Event::Shutdown("signal"));
            }
        })?;
    Ok(())
}

/// `--exit-with-parent`: the launching app holds our stdin; when it goes away (or closes
/// stdin on purpose) the read hits end of file and the service shuts down.
fn watch_parent(events: Sender<Event>) -> io::Result<()> {
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
            let _ = events.send(Event::Shutdown("stdin closed (--exit-with-parent)"));
        })?;
    Ok(())
}

/// The one place that writes stdout (style §3.9): whole lines, flushed at once.
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
