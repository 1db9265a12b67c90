//! What the agent answers to each request, with the vault, the store and the key policies:
//! list identities, sign, bind a session, add, remove, lock and unlock. This file holds a
//! connection's `Session` and the dispatch; each job has its file: `keys` (identities, add,
//! remove), `sign` (the checks and the signature), `approval` (asking the user), `bind`
//! (session bindings), `lock` (lock and unlock).
//!
//! Invariants: while the vault is locked the identity list is empty and every other request
//! but `UNLOCK` and a session binding fails at once; a connection that asked for a binding
//! for forwarding (taken or not) lists and signs only, and its other requests are refused
//! before the vault is looked at; a signature is made only for an enabled key whose policy
//! allows it, after the user's approval when the policy asks, never with SHA-1 for RSA, and
//! is logged (key, server, forwarded or not); private keys are opened from the vault only
//! for the signature and dropped (wiped) right after; no answer or log line carries key
//! material; the vault lock is taken before the db lock and never held while signing.

mod approval;
mod bind;
mod keys;
mod lock;
mod sign;

use std::time::Instant;

use serde_json::json;

use crate::agent::proto::{self, Request};
use crate::sshkey::{self, HostKey};
use crate::state::AppState;
use crate::store::agent::AgentKey;
use crate::store::{self, audit};

/// Bindings one connection may make, as OpenSSH's own agent: a client binds once per hop of
/// a forwarding chain, and a chain this long is already absurd.
pub const MAX_BINDINGS: usize = 16;

/// What the agent knows about one client connection.
#[derive(Debug, Default)]
pub struct Session {
    /// The connection's number, unique in the process: its pending approvals are counted
    /// by it.
    pub connection: u64,
    /// `session-bind@openssh.com` bindings, oldest first.
    bindings: Vec<Binding>,
    /// A binding for forwarding was asked for, whether or not it was taken: such a
    /// connection is treated as forwarded even when its binding failed (a locked vault, a
    /// bad signature), never as local.
    forwarding_asked: bool,
}

#[derive(Debug)]
struct Binding {
    host_key: HostKey,
    /// The catalogue hosts that trust this host key (docs/api.md "Host keys (known_hosts)"),
    /// found when the binding was made.
    host_ids: Vec<String>,
    session_id: Vec<u8>,
    forwarding: bool,
}

impl Session {
    /// A new connection's session, numbered `connection`.
    pub fn new(connection: u64) -> Session {
        Session {
            connection,
            bindings: Vec::new(),
            forwarding_asked: false,
        }
    }

    /// True when any hop bound this connection for agent forwarding: the request comes from
    /// a remote machine the user logged in to with `ssh -A`.
    pub fn forwarded(&self) -> bool {
        self.forwarding_asked || self.bindings.iter().any(|binding| binding.forwarding)
    }

    /// The server a signature is for: the host key of the last binding, when that binding
    /// is an authentication (not a forwarding hop). `None` when the client never bound the
    /// connection (older clients, `ssh-keygen -Y sign`, git) or the request is made on a
    /// forwarding hop itself.
    fn destination(&self) -> Option<&Binding> {
        self.bindings.last().filter(|binding| !binding.forwarding)
    }
}

/// The framed answer to `request`.
pub fn respond(state: &AppState, session: &mut Session, request: Request<'_>) -> Vec<u8> {
    if let Request::SessionBind(bind) = &request {
        session.forwarding_asked |= bind.forwarding;
    }
    // docs/agent.md "SSH agent": a forwarded connection may list, sign and bind further hops;
    // nothing it sends changes the vault (checked before the vault's state, so a forwarded
    // unlock is no guess at the master password either).
    if session.forwarded() {
        if let Some(what) = changes_the_vault(&request) {
            refuse_forwarded(state, session, what);
            return proto::failure();
        }
    }
    if state.session.vault_locked() {
        return respond_locked(state, session, request);
    }
    let outcome = match request {
        Request::Identities => return keys::identities(state, session),
        Request::Sign {
            key_blob,
            data,
            flags,
        } => return sign::sign(state, session, key_blob, data, flags),
        Request::SessionBind(bind) => bind::session_bind(state, session, &bind),
        Request::Add(identity) => keys::add(state, &identity),
        Request::AddUnsupported { key_type } => {
            log::info!(
                "agent: refused to add a key of type {} (supported: ed25519, ecdsa, rsa)",
                String::from_utf8_lossy(key_type)
            );
            Err(())
        }
        Request::Remove { key_blob } => keys::remove(state, key_blob),
        Request::RemoveAll => keys::remove_all(state),
        Request::Lock { .. } => lock::lock(state),
        // The vault is unlocked: unlocking it again succeeds, as the HTTP unlock does for
        // the right password; the passphrase is not checked, as there is nothing to open.
        Request::Unlock { .. } => Ok(()),
        Request::OtherExtension { name } => {
            log::debug!(
                "agent: unsupported extension {}",
                String::from_utf8_lossy(name)
            );
            Err(())
        }
        Request::Unsupported { message_type } => {
            log::debug!("agent: unsupported message type {message_type}");
            Err(())
        }
    };
    framed(outcome)
}

/// The answer to `request` while the vault is locked: no keys, an unlock, a binding, or a
/// failure.
fn respond_locked(state: &AppState, session: &mut Session, request: Request<'_>) -> Vec<u8> {
    match request {
        // docs/agent.md "SSH agent": a locked vault lists no keys.
        Request::Identities => proto::no_identities(),
        Request::Unlock { passphrase } => lock::unlock(state, passphrase),
        // A binding opens no secret, and a forwarded connection must be known as one
        // before it can ask to unlock.
        Request::SessionBind(bind) => framed(bind::session_bind(state, session, &bind)),
        _ => {
            log::debug!("agent: refused a request while the vault is locked");
            proto::failure()
        }
    }
}

/// `SUCCESS` or `FAILURE`.
fn framed(outcome: Result<(), ()>) -> Vec<u8> {
    match outcome {
        Ok(()) => proto::success(),
        Err(()) => proto::failure(),
    }
}

/// The name of a request that changes the vault or the keys the agent offers (add,
/// remove, lock, unlock); `None` for the ones a forwarded connection may make.
fn changes_the_vault(request: &Request<'_>) -> Option<&'static str> {
    match request {
        Request::Add(_) | Request::AddUnsupported { .. } => Some("add"),
        Request::Remove { .. } => Some("remove"),
        Request::RemoveAll => Some("remove_all"),
        Request::Lock { .. } => Some("lock"),
        Request::Unlock { .. } => Some("unlock"),
        Request::Identities
        | Request::Sign { .. }
        | Request::SessionBind(_)
        | Request::OtherExtension { .. }
        | Request::Unsupported { .. } => None,
    }
}

/// Logs a request refused on a forwarded connection, and records it in the audit log as
/// `agent.forwarded_refused` (each of the first 16 of a streak, then the 32nd, 64th, ...:
/// `agent_share::refusals`).
fn refuse_forwarded(state: &AppState, session: &Session, what: &str) {
    let via = session
        .bindings
        .iter()
        .find(|binding| binding.forwarding)
        .map(|binding| binding.host_key.fingerprint.clone());
    log::warn!(
        "agent: refused {what} on a forwarded connection (through server {})",
        via.as_deref().unwrap_or("unknown")
    );
    let Some(count) = state.agent.forwarded_refusals.count(Instant::now()) else {
        return;
    };
    let detail = json!({"request": what, "forwarded_through": via,
                        "consecutive_refusals": count});
    if let Err(err) = state
        .db
        .write(|tx| audit::append(tx, audit::AGENT_FORWARDED_REFUSED, what, &detail))
    {
        log::error!("agent: cannot audit a refused forwarded request: {err}");
    }
}

/// The stored key whose public blob is `key_blob`.
/// For a certificate blob: the stored key it certifies, the certificate's line, and the texts
/// of the certificates attached to that key (the caller decides which one it needs).
pub(super) fn certified_key(
    state: &AppState,
    certificate_blob: &[u8],
) -> Option<(AgentKey, String, Vec<String>)> {
    let (public_blob, text) = sshkey::certified_by(certificate_blob)?;
    let key = find_key(state, &public_blob)?;
    let attached = state
        .db
        .read(|conn| store::certificates::of_key(conn, &key.id))
        .map_err(|err| log::error!("agent: cannot read a key's certificates: {err}"))
        .ok()?;
    Some((key, text, attached))
}

pub(super) fn find_key(state: &AppState, key_blob: &[u8]) -> Option<AgentKey> {
    let fingerprint = sshkey::blob_fingerprint(key_blob)?;
    match state
        .db
        .read(|conn| store::agent::by_fingerprint(conn, &fingerprint))
    {
        Ok(key) => key,
        Err(err) => {
            log::error!("agent: cannot look a key up: {err}");
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::agent::respond::sign::for_the_bound_session;
    use crate::agent::respond::{Binding, Session};
    use crate::agent::wire::put_string;
    use crate::sshkey::HostKey;

    fn binding(name: &str, session_id: &[u8], forwarding: bool) -> Binding {
        Binding {
            host_key: HostKey {
                key_type: "ssh-ed25519".into(),
                public_key: format!("ssh-ed25519 {name}"),
                fingerprint: format!("SHA256:{name}"),
            },
            host_ids: Vec::new(),
            session_id: session_id.to_vec(),
            forwarding,
        }
    }

    /// User-authentication data (RFC 4252 §7) for session `session_id`.
    fn userauth(session_id: &[u8]) -> Vec<u8> {
        let mut data = Vec::new();
        put_string(&mut data, session_id);
        data.push(50);
        put_string(&mut data, b"user");
        data
    }

    #[test]
    fn an_unbound_connection_is_local_with_no_known_server() {
        let session = Session::default();
        assert!(!session.forwarded());
        assert!(session.destination().is_none());
        assert!(for_the_bound_session(&session, &userauth(b"any")));
    }

    #[test]
    fn a_forwarding_hop_then_an_authentication_is_forwarded_to_the_last_server() {
        let session = Session {
            bindings: vec![binding("a", b"sa", true), binding("b", b"sb", false)],
            ..Session::new(1)
        };
        assert!(session.forwarded());
        assert_eq!(
            session.destination().unwrap().host_key.fingerprint,
            "SHA256:b"
        );
    }

    #[test]
    fn a_request_on_the_forwarding_hop_itself_has_no_known_server() {
        let session = Session {
            bindings: vec![binding("a", b"sa", true)],
            ..Session::new(1)
        };
        assert!(session.forwarded());
        assert!(session.destination().is_none());
    }

    #[test]
    fn userauth_for_the_bound_session_passes_and_for_another_is_refused() {
        let session = Session {
            bindings: vec![binding("b", b"sb", false)],
            ..Session::new(1)
        };
        assert!(for_the_bound_session(&session, &userauth(b"sb")));
        assert!(!for_the_bound_session(&session, &userauth(b"other")));
        assert!(
            for_the_bound_session(&session, b"SSHSIG..."),
            "data that is no user-authentication request passes"
        );
    }
}
