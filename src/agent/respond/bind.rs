//! `session-bind@openssh.com` (OpenSSH `PROTOCOL.agent` §1): a connection bound to the
//! server it authenticates to, or through which it is forwarded, with the catalogue hosts
//! that trust that server's key.
//!
//! Invariants: a binding is recorded only when the server's signature over the session
//! identifier verifies; at most `MAX_BINDINGS` per connection, and none after one for an
//! authentication; the hosts come from the trust store's rules (`trust::links`).

use crate::agent::proto::SessionBind;
use crate::agent::respond::{Binding, Session, MAX_BINDINGS};
use crate::sshkey::{self, HostKey};
use crate::state::AppState;
use crate::trust::links;

/// `session-bind@openssh.com` (OpenSSH `PROTOCOL.agent` §1): verifies the server's
/// signature over the session identifier and records the binding. As OpenSSH's agent, a
/// connection already bound for an authentication takes no further binding.
pub(super) fn session_bind(
    state: &AppState,
    session: &mut Session,
    bind: &SessionBind<'_>,
) -> Result<(), ()> {
    if session.bindings.len() >= MAX_BINDINGS {
        log::warn!("agent: refused a session binding beyond {MAX_BINDINGS} on one connection");
        return Err(());
    }
    if session.bindings.iter().any(|binding| !binding.forwarding) {
        log::warn!("agent: refused a session binding on a connection already used to authenticate");
        return Err(());
    }
    let Some(host_key) =
        sshkey::verify_session_bind(bind.host_key, bind.session_id, bind.signature)
    else {
        log::warn!("agent: refused a session binding whose host key signature does not verify");
        return Err(());
    };
    log::debug!(
        "agent: connection bound to server {}{}",
        host_key.fingerprint,
        if bind.forwarding {
            " for forwarding"
        } else {
            ""
        }
    );
    let host_ids = trusting_hosts(state, &host_key);
    session.bindings.push(Binding {
        host_key,
        host_ids,
        session_id: bind.session_id.to_vec(),
        forwarding: bind.forwarding,
    });
    Ok(())
}

/// The catalogue hosts for which the known-hosts store trusts `host_key` (docs/api.md "Host
/// keys (known_hosts)", `trust::links::trusting`). Empty when none does, or on a store error
/// (logged).
fn trusting_hosts(state: &AppState, host_key: &HostKey) -> Vec<String> {
    let found = state
        .db
        .read(|conn| links::trusting(conn, &host_key.public_key));
    found.unwrap_or_else(|err| {
        log::error!("agent: cannot look the server's host key up: {err}");
        Vec::new()
    })
}
