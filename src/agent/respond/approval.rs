//! Asking the user about a sign request (docs/agent.md "SSH agent"): the pending request
//! shown by `GET /api/agent/requests`, put on the change feed while it waits, and the
//! decision.
//!
//! Invariants: a wait ends by a decision, a timeout or a lock (`approvals`); an
//! allow is remembered for the server only for a `once_per_host` key and a login to the
//! bound server; no vault or db lock is held while waiting.

use std::time::{Duration, Instant};

use crate::agent::respond::Binding;
use crate::approvals::{Outcome, PendingView};
use crate::model::agent::{Confirm, Reason};
use crate::state::AppState;
use crate::store::{self, agent::AgentKey};

/// What a sign request put before the user is for.
pub(super) struct Asked<'a> {
    pub(super) destination: Option<&'a Binding>,
    pub(super) forwarded: bool,
    pub(super) reason: Reason,
    /// A login to `destination` (`authenticates_to`): only then does an allow of a
    /// `once_per_host` key cover the server's next logins.
    pub(super) login: bool,
    /// The connection it came on (`Session::connection`).
    pub(super) connection: u64,
}

/// Puts the request before the user and waits for the decision (docs/agent.md "SSH agent").
pub(super) fn approved(state: &AppState, key: &AgentKey, asked: &Asked<'_>) -> bool {
    let (view, remember) = pending(key, asked);
    let started = Instant::now();
    let view_id = view.id.clone();
    let added = std::cell::Cell::new(false);
    let outcome = state.agent.approvals.ask(
        view,
        remember,
        asked.connection,
        || state.session.vault_locked(),
        |view| {
            added.set(true);
            record_request(state, &view.id, true);
            log::info!(
                "agent: sign request {} with key {} waits for approval (POST /api/agent/requests/{})",
                view.id,
                view.key_name,
                view.id
            )
        },
    );
    if added.get() {
        record_request(state, &view_id, false);
    }
    match outcome {
        Outcome::Allowed => true,
        other => {
            log_not_approved(key, other, started.elapsed());
            false
        }
    }
}

/// The pending request the user sees, and what an allow remembers: the key and the
/// server, for a `once_per_host` key asked for a login to the bound server.
fn pending(key: &AgentKey, asked: &Asked<'_>) -> (PendingView, Option<(String, String)>) {
    let destination = asked.destination;
    let host_key_fingerprint = destination.map(|binding| binding.host_key.fingerprint.clone());
    let remember = match (key.policy.confirm, &host_key_fingerprint, asked.login) {
        (Confirm::OncePerHost, Some(host), true) => Some((key.id.clone(), host.clone())),
        _ => None,
    };
    // The host, when exactly one catalogue host trusts the server's key.
    let host_id = match destination.map(|binding| binding.host_ids.as_slice()) {
        Some([only]) => Some(only.clone()),
        _ => None,
    };
    let view = PendingView {
        id: crate::vault::new_id(),
        key_id: key.id.clone(),
        key_name: key.name.clone(),
        fingerprint: key.fingerprint.clone(),
        host_key_fingerprint,
        host_id,
        forwarded: asked.forwarded,
        reason: asked.reason,
        created_at: String::new(),
        expires_at: String::new(),
    };
    (view, remember)
}

/// Logs why a sign request was not approved, and after how long.
fn log_not_approved(key: &AgentKey, outcome: Outcome, waited: Duration) {
    log::info!(
        "agent: sign request with key {} not approved: {} after {} ms",
        key.name,
        match outcome {
            Outcome::Denied => "denied",
            Outcome::TimedOut => "no decision in time",
            Outcome::TooMany => "too many requests wait already",
            Outcome::ConnectionWaits => "its connection has one waiting already",
            Outcome::Locked => "the vault locked",
            Outcome::Allowed => "allowed",
        },
        waited.as_millis()
    );
}

/// Puts a pending request's start (`waiting`) or end on the change feed (docs/api.md "Change
/// feed"), so the app learns of it without polling. A failure is logged: the request still
/// shows in `GET /api/agent/requests`.
fn record_request(state: &AppState, id: &str, waiting: bool) {
    if let Err(err) = state
        .db
        .write(|tx| store::changes::record_agent_request(tx, id, waiting))
    {
        log::error!("agent: cannot put sign request {id} on the change feed: {err}");
    }
}
