//! host-manager: a local HTTP/JSON service that keeps a catalogue of SSH hosts, groups and
//! keys, with every secret sealed in a vault.
//!
//! `main` only wires things together: flags, logger, then the start-up steps in their order
//! (data dir, database, listening socket, vault, token, SSH agent socket, announcement) and
//! the server; each step is a call into `lifecycle`, `store`, `agent` or `http`. A start-up error becomes an exit code here:
//! 2 for a bad flag, 1 for anything else.
//!
//! Invariant: stdout is a protocol channel for the launching app, written only by
//! `lifecycle::print`; everything else goes to stderr.

mod agent;
mod agent_share;
mod api;
mod approvals;
mod config;
mod error;
mod expiry;
#[cfg(test)]
mod fuzz;
mod http;
#[allow(dead_code)] // wired to the API as the importers land (docs/import.md)
mod import;
mod lifecycle;
mod logger;
mod model;
mod platform;
mod router;
#[cfg(test)]
mod scratch;
mod session;
mod sshkey;
mod state;
mod store;
mod sync;
mod sync_share;
mod trust;
mod vault;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::{Command, Config, USAGE};
use crate::http::gate::Gate;
use crate::http::Limits;
use crate::lifecycle::StartError;
use crate::state::AppState;

fn main() -> ExitCode {
    let env: HashMap<String, String> = std::env::vars().collect();
    let config = match Command::parse(std::env::args().skip(1), &env) {
        Ok(Command::Run(config)) => *config,
        Ok(Command::Help) => return lifecycle::print(USAGE),
        Ok(Command::Version) => {
            return lifecycle::print(&format!("host-manager {}\n", env!("CARGO_PKG_VERSION")))
        }
        Err(err) => {
            eprintln!("host-manager: {err}");
            return ExitCode::from(2);
        }
    };
    logger::init(env.get("RUST_LOG").map(String::as_str));
    match serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            log::error!("{err}");
            ExitCode::FAILURE
        }
    }
}

/// Starts everything in the order the launching app relies on, announces the port, and
/// serves until shutdown.
fn serve(config: Config) -> Result<(), StartError> {
    let _lock = lifecycle::own_data_dir(&config.data_dir)?;
    let db = store::open(&config.data_dir).map_err(StartError::Database)?;
    lifecycle::keep_logs(&db, &config.feed_overrides)?;
    let schema = db.schema_version().map_err(StartError::Schema)?;
    let (listener, port) = lifecycle::listen(config.bind, config.port)?;
    // Before the --exit-with-parent watcher starts reading stdin: the line is ours.
    let password = match config.vault_password_stdin {
        true => lifecycle::password_from_stdin(),
        false => None,
    };
    let shutdown = lifecycle::watch_shutdown(config.exit_with_parent)?;
    log::info!(
        "listening on {}:{port}, data dir {}, schema version {schema}",
        config.bind,
        config.data_dir.display()
    );
    // The key derivation sits before SERVICE_PORT on purpose: the app that passed the
    // password expects the vault's final state from its first request.
    let vault = lifecycle::open_vault(&db, password)?;
    let token = lifecycle::load_token(&config.token)?;
    let announcement = lifecycle::announcement(port, &config.token, token.as_ref());
    let gate = Gate::new(config.allowed_origins.clone(), token);
    let limits = Limits::new(
        &config.http_overrides,
        platform::descriptor_limit(),
        agent::DESCRIPTORS,
    );
    let state = Arc::new(AppState::new(config, db, vault));
    lifecycle::watch_idle(&state)?;
    expiry::watch(&state);
    sync::watch::start(&state);
    // Before SERVICE_PORT: the app's first `GET /api/agent` sees the socket.
    let agent_socket = agent::start(&state);
    lifecycle::announce(announcement)?;
    // After SERVICE_PORT: reading the host list into memory grows with the catalogue.
    lifecycle::warm_host_list(&state);
    // Connection threads may outlive `serve` holding the state; the database closes now.
    let db_owner = Arc::clone(&state);
    let service = Arc::new(router::Service::new(state));
    http::serve(service, gate, listener, limits, shutdown).map_err(StartError::Server)?;
    // Removes the socket file: a client then finds no agent rather than a dead one.
    drop(agent_socket);
    db_owner.db.close();
    log::info!("stopped");
    Ok(())
}
