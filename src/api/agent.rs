//! `/api/agent` endpoints (docs/agent.md "SSH agent"): the agent's status, the sign requests
//! waiting for the user's decision, and the decision itself.
//!
//! Invariants: nothing here opens a secret or reaches the socket; a decision only wakes the
//! agent's waiting request, which does the signing itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::approvals::PendingView;
use crate::error::ApiError;
use crate::model::ssh_config_export::identity_agent_line;
use crate::state::AppState;
use crate::store;

/// `GET /api/agent`.
#[derive(Serialize)]
struct AgentView<'a> {
    /// True when the agent listens (not with `--no-agent`, nor when no place could hold it).
    enabled: bool,
    /// The socket's path, or on Windows the pipe's name; `null` when not enabled.
    socket: Option<String>,
    /// Which place holds the socket (`runtime_dir`, `data_dir`, `temp_dir`; on Windows
    /// `openssh_pipe` or `user_pipe`); `null` when not enabled.
    location: Option<&'static str>,
    /// The value to give `SSH_AUTH_SOCK` (the socket, as is); `null` when not enabled.
    ssh_auth_sock: Option<String>,
    /// The `IdentityAgent` line the `?agent=true` export writes; `null` when not enabled.
    identity_agent: Option<String>,
    /// Why the agent is not enabled; `null` when it is.
    reason: Option<&'a str>,
    /// The keys the agent offers now.
    keys: Vec<ServedKeyView<'a>>,
    /// Sign requests waiting for a decision.
    pending: usize,
}

#[derive(Serialize)]
struct ServedKeyView<'a> {
    id: &'a str,
    name: &'a str,
    fingerprint: &'a str,
}

#[derive(Serialize)]
struct RequestList {
    items: Vec<PendingView>,
}

#[derive(Serialize)]
struct DecisionView<'a> {
    id: &'a str,
    decision: &'static str,
}

#[derive(Deserialize)]
struct DecisionInput {
    decision: Option<Value>,
}

/// `GET /api/agent`: `{enabled, socket, location, ssh_auth_sock, identity_agent, reason,
/// keys, pending}`.
pub fn status(state: &AppState) -> Result<Reply, ApiError> {
    let socket = state.agent.socket();
    let keys = match socket {
        Some(_) => state.db.read(store::agent::served)?,
        None => Vec::new(),
    };
    let socket_text = socket.map(|path| path.to_string_lossy().into_owned());
    let view = AgentView {
        enabled: socket.is_some(),
        ssh_auth_sock: socket_text.clone(),
        identity_agent: socket_text.as_deref().map(identity_agent_line),
        socket: socket_text,
        location: state.agent.location(),
        reason: socket.is_none().then(|| state.agent.off_because()),
        keys: keys
            .iter()
            .map(|key| ServedKeyView {
                id: &key.id,
                name: &key.name,
                fingerprint: &key.fingerprint,
            })
            .collect(),
        pending: state.agent.approvals.count(),
    };
    Reply::json(200, &view)
}

/// `GET /api/agent/requests`: the sign requests waiting for a decision, oldest first.
pub fn requests(state: &AppState) -> Result<Reply, ApiError> {
    let items = state.agent.approvals.pending();
    Reply::json(200, &RequestList { items })
}

/// `POST /api/agent/requests/:id {decision: "allow"|"deny"}`: 200 `{id, decision}`; 404
/// `AGENT_REQUEST_NOT_FOUND` when no such request waits (decided, timed out, or never
/// made), checked before the body's `decision` is judged.
pub fn decide(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let input: DecisionInput = req.json()?;
    if !state
        .agent
        .approvals
        .pending()
        .iter()
        .any(|request| request.id == id)
    {
        return Err(ApiError::AgentRequestNotFound);
    }
    let (allow, decision) = match input.decision.as_ref().and_then(Value::as_str) {
        Some("allow") => (true, "allow"),
        Some("deny") => (false, "deny"),
        _ => {
            return Err(ApiError::validation(
                "decision",
                "is required: \"allow\" or \"deny\"",
            ))
        }
    };
    // It may have timed out since the check above.
    if !state.agent.approvals.decide(id, allow) {
        return Err(ApiError::AgentRequestNotFound);
    }
    log::info!("agent: sign request {id} decided: {decision}");
    Reply::json(200, &DecisionView { id, decision })
}
