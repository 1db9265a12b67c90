//! What `connect ?agent=true` and the ssh-config export `?agent=true` take from the SSH agent
//! (docs/api.md, Hosts "connect" and "ssh_config export"; docs/agent.md "SSH agent"): the
//! `agent` parameter, the socket, and whether the agent would sign with a host's key. Shared
//! by those two handlers, so neither calls into another handler's file.
//!
//! Invariants: no private key is read; when the agent is not served or would not sign, the
//! answer is 409 `AGENT_UNAVAILABLE` saying why, never a key the app asked not to get.

use crate::api::Req;
use crate::error::ApiError;
use crate::model::ssh_config_export::ExportAgent;
use crate::state::AppState;
use crate::store;

/// The key a host authenticates with, as `connect ?agent=true` hands it out: its public
/// half and the agent's socket, and no private key.
pub struct AgentCredentials {
    pub public_key: String,
    pub socket: String,
}

/// The `agent` query parameter of `connect` and of the ssh-config export: `true` or
/// `false`; absent is `false`.
pub fn agent_param(req: &Req) -> Result<bool, ApiError> {
    match req.query("agent") {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(ApiError::parameter("agent", "must be true or false")),
    }
}

/// For `GET /api/export/ssh-config?agent=true`: the agent's socket and served keys; `None`
/// without the parameter; 409 `AGENT_UNAVAILABLE` when the agent is not served.
pub fn export_agent(state: &AppState, req: &Req) -> Result<Option<ExportAgent>, ApiError> {
    if !agent_param(req)? {
        return Ok(None);
    }
    let socket = socket(state)?;
    let key_ids = state
        .db
        .read(store::agent::served)?
        .into_iter()
        .map(|key| key.id)
        .collect();
    Ok(Some(ExportAgent { socket, key_ids }))
}

/// For `POST /api/hosts/:id/connect?agent=true` of a host with key `key_id`: the key's
/// public half and the socket. 409 `AGENT_UNAVAILABLE`, saying why, when the agent would
/// not sign with the key: the app asked not to get the private key, so it gets none.
pub fn connect_credentials(state: &AppState, key_id: &str) -> Result<AgentCredentials, ApiError> {
    let socket = socket(state)?;
    let key = state.db.read(|conn| store::agent::by_id(conn, key_id))?;
    if !key.policy.enabled {
        return Err(ApiError::AgentUnavailable(
            "the agent does not offer this key (its agent.enabled is false)".into(),
        ));
    }
    if !key.signable {
        return Err(ApiError::AgentUnavailable(
            "the key is passphrase-protected and its passphrase is not stored, so the agent \
             cannot sign with it"
                .into(),
        ));
    }
    Ok(AgentCredentials {
        public_key: key.public_key,
        socket,
    })
}

fn socket(state: &AppState) -> Result<String, ApiError> {
    match state.agent.socket() {
        Some(path) => Ok(path.to_string_lossy().into_owned()),
        None => Err(ApiError::AgentUnavailable(state.agent.off_because().into())),
    }
}
