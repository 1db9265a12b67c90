//! `GET /api/health`: liveness and the vault state, answered even while the vault is locked.
//!
//! Invariants: never touches the database (a health check must answer while a long write
//! holds it) and never counts as activity for `--auto-lock`; answers no secret and no path.

use serde::Serialize;

use crate::api::{JsonReply, Reply};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Serialize)]
struct HealthView {
    status: &'static str,
    version: &'static str,
    vault_locked: bool,
}

pub fn get(state: &AppState) -> Result<Reply, ApiError> {
    let view = HealthView {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        vault_locked: state.session.vault_locked(),
    };
    Reply::json(200, &view)
}
