//! What the agent answers to each request, with the vault, the store and the key policies:
//! list identities, sign, bind a session, add, remove, lock and unlock.
//!
//! Invariants: while the vault is locked the identity list is empty and every other request
//! but `UNLOCK` and a session binding fails at once; a connection that asked for a binding
//! for forwarding (taken or not) lists and signs only, and its other requests are refused
//! before the vault is looked at; a signature is made only for an enabled key whose policy
//! allows it, after the user's approval when the policy asks, never with SHA-1 for RSA, and
//! is logged (key, server, forwarded or not); private keys are opened from the vault only
//! for the signature and dropped (wiped) right after; no answer or log line carries key
//! material; the vault lock is taken before the db lock and never held while signing.

use std::time::Instant;

use serde_json::json;

use crate::agent::approvals::{Outcome, PendingView};
use crate::agent::proto::{self, NewIdentity, Request, SessionBind};
use crate::model::agent::{AgentPolicy, Confirm, Forwarded, Reason, Verdict};
use crate::model::key::comment_from_key_file;
use crate::model::known_hosts::{lookup_name, Marker};
use crate::model::name::Name;
use crate::sshkey::{self, HostKey, RsaHash};
use crate::state::AppState;
use crate::store::agent::AgentKey;
use crate::store::audit;
use crate::store::{self, keys::NewKey, StoreError};
use crate::vault::{SealContext, Secret, VaultError};

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
    if state.vault_locked() {
        return match request {
            // docs/agent.md "SSH agent": a locked vault lists no keys.
            Request::Identities => proto::no_identities(),
            Request::Unlock { passphrase } => unlock(state, passphrase),
            // A binding opens no secret, and a forwarded connection must be known as one
            // before it can ask to unlock.
            Request::SessionBind(bind) => match session_bind(state, session, &bind) {
                Ok(()) => proto::success(),
                Err(()) => proto::failure(),
            },
            _ => {
                log::debug!("agent: refused a request while the vault is locked");
                proto::failure()
            }
        };
    }
    let outcome = match request {
        Request::Identities => return identities(state, session),
        Request::Sign {
            key_blob,
            data,
            flags,
        } => return sign(state, session, key_blob, data, flags),
        Request::SessionBind(bind) => session_bind(state, session, &bind),
        Request::Add(identity) => add(state, &identity),
        Request::AddUnsupported { key_type } => {
            log::info!(
                "agent: refused to add a key of type {} (supported: ed25519, ecdsa, rsa)",
                String::from_utf8_lossy(key_type)
            );
            Err(())
        }
        Request::Remove { key_blob } => remove(state, key_blob),
        Request::RemoveAll => remove_all(state),
        Request::Lock { .. } => lock(state),
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
/// `agent::refusals`).
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

/// `REQUEST_IDENTITIES`: the served keys, named by their catalogue name. A forwarded
/// connection sees only the keys whose policy does not deny forwarding, so a remote `ssh`
/// never offers a key that would be refused.
fn identities(state: &AppState, session: &Session) -> Vec<u8> {
    let keys = match state.db.read(store::agent::served) {
        Ok(keys) => keys,
        Err(err) => {
            log::error!("agent: cannot list keys: {err}");
            return proto::failure();
        }
    };
    let forwarded = session.forwarded();
    let blobs: Vec<(Vec<u8>, String)> = keys
        .into_iter()
        .filter(|key| !forwarded || key.policy.forwarded != Forwarded::Deny)
        .filter_map(|key| Some((sshkey::public_blob(&key.public_key)?, key.name)))
        .collect();
    let (answer, left_out) = proto::identities_answer(
        blobs
            .iter()
            .map(|(blob, name)| (blob.as_slice(), name.as_bytes())),
    );
    if !left_out.is_empty() {
        let names: Vec<&str> = left_out
            .iter()
            .filter_map(|&position| blobs.get(position).map(|(_, name)| name.as_str()))
            .collect();
        log::warn!(
            "agent: {} key(s) left out of the identity list, which would pass the protocol's \
             {} bytes: {}",
            names.len(),
            proto::MAX_MESSAGE_BYTES,
            names.join(", ")
        );
    }
    answer
}

/// `SIGN_REQUEST`: checks the key, the session and the policy, asks the user when the
/// policy says so, then signs.
fn sign(state: &AppState, session: &Session, key_blob: &[u8], data: &[u8], flags: u32) -> Vec<u8> {
    let Ok((key, rsa_hash)) = signable(state, session, key_blob, data, flags) else {
        return proto::failure();
    };
    let destination = session.destination();
    let forwarded = session.forwarded();
    // docs/agent.md "SSH agent": an approval for a server covers logins to that server only.
    let login = destination.is_some_and(|binding| authenticates_to(binding, key_blob, data));
    let host_fingerprint = destination.map(|binding| binding.host_key.fingerprint.as_str());
    let approved_for_host = login
        && host_fingerprint.is_some_and(|host| state.agent.approvals.is_remembered(&key.id, host));
    let (verdict, reason) = key.policy.verdict(forwarded, approved_for_host);
    match verdict {
        Verdict::Sign => {}
        Verdict::Refuse => {
            log::info!(
                "agent: refused to sign with key {} for a forwarded request (forwarded: deny)",
                key.name
            );
            return proto::failure();
        }
        Verdict::AskUser => {
            let Some(reason) = reason else {
                return proto::failure();
            };
            let asked = Asked {
                destination,
                forwarded,
                reason,
                login,
                connection: session.connection,
            };
            if !approved(state, &key, &asked) {
                return proto::failure();
            }
        }
    }
    // docs/api.md "Vault", `--auto-lock`: a signature the agent makes is the user at work (and
    // the vault does not lock under it); a refused request is not. Taken before the vault
    // is opened: a vault locked in between refuses the signature.
    let _activity = state.activity();
    let signature = match make_signature(state, &key, data, rsa_hash) {
        Ok(signature) => signature,
        Err(why) => {
            log::warn!("agent: no signature with key {}: {why}", key.name);
            return proto::failure();
        }
    };
    // Every signature that leaves the agent is in the audit log: one that cannot be
    // recorded is not sent.
    let approved = verdict == Verdict::AskUser;
    if let Err(err) = audit_signature(state, &key, destination, forwarded, approved) {
        log::error!(
            "agent: signature with key {} withheld: the audit log refused it: {err}",
            key.name
        );
        return proto::failure();
    }
    log::info!(
        "agent: signed with key {} ({}) for {}{}",
        key.name,
        key.fingerprint,
        host_fingerprint.unwrap_or("an unknown server"),
        if forwarded { ", forwarded" } else { "" }
    );
    proto::sign_response(&signature)
}

/// The checks a sign request passes before its key's policy is asked: the key is stored,
/// offered and signable, the data is for the connection's bound session, and an RSA key
/// is not asked for SHA-1. The key and the RSA hash to use; `Err` (logged) otherwise.
fn signable(
    state: &AppState,
    session: &Session,
    key_blob: &[u8],
    data: &[u8],
    flags: u32,
) -> Result<(AgentKey, Option<RsaHash>), ()> {
    let Some(key) = find_key(state, key_blob) else {
        log::info!("agent: sign request for a key the vault does not hold");
        return Err(());
    };
    if !key.policy.enabled || !key.signable {
        log::info!(
            "agent: refused to sign with key {} ({}): not offered by the agent",
            key.name,
            key.fingerprint
        );
        return Err(());
    }
    if !for_the_bound_session(session, data) {
        log::warn!(
            "agent: refused to sign with key {}: the request is for another session than \
             the one the connection is bound to",
            key.name
        );
        return Err(());
    }
    match rsa_hash(&key, flags) {
        Ok(hash) => Ok((key, hash)),
        Err(()) => {
            log::info!(
                "agent: refused a SHA-1 (ssh-rsa) signature with key {}; only rsa-sha2-256 \
                 and rsa-sha2-512 are made",
                key.name
            );
            Err(())
        }
    }
}

/// True when `data` is a user-authentication request with the key `key_blob` in the
/// session `binding` was made for (and, for the host-bound method, naming that binding's
/// server): a login to the bound server, the only signature a `once_per_host` approval
/// covers (as OpenSSH's destination-constrained keys).
fn authenticates_to(binding: &Binding, key_blob: &[u8], data: &[u8]) -> bool {
    let Some(auth) = proto::userauth_request(data) else {
        return false;
    };
    auth.session_id == binding.session_id.as_slice()
        && auth.key_blob == key_blob
        && auth.host_key.is_none_or(|host_key| {
            sshkey::blob_fingerprint(host_key).as_deref()
                == Some(binding.host_key.fingerprint.as_str())
        })
}

/// OpenSSH's own check: a user-authentication request on a bound connection must be for the
/// session the connection was bound to, not for one a forwarding peer relays. Other data
/// (`ssh-keygen -Y sign`, git) and unbound connections pass.
fn for_the_bound_session(session: &Session, data: &[u8]) -> bool {
    match (session.bindings.last(), proto::userauth_session_id(data)) {
        (Some(last), Some(session_id)) => last.session_id == session_id,
        _ => true,
    }
}

/// Appends the `agent.signed` entry of a signature (docs/agent.md "SSH agent", Audit).
fn audit_signature(
    state: &AppState,
    key: &AgentKey,
    destination: Option<&Binding>,
    forwarded: bool,
    approved: bool,
) -> Result<(), StoreError> {
    let detail = json!({
        "key_id": key.id,
        "fingerprint": key.fingerprint,
        "host_key_fingerprint": destination.map(|binding| &binding.host_key.fingerprint),
        "host_ids": destination.map(|binding| binding.host_ids.clone()).unwrap_or_default(),
        "forwarded": forwarded,
        "approved": approved,
    });
    state
        .db
        .write(|tx| audit::append(tx, audit::AGENT_SIGNED, &key.name, &detail))
}

/// The RSA hash the flags ask for (SHA-512 first, as OpenSSH); `Err` when an RSA key is
/// asked for a SHA-1 signature. Other keys take no hash.
fn rsa_hash(key: &AgentKey, flags: u32) -> Result<Option<RsaHash>, ()> {
    if !key.public_key.starts_with("ssh-rsa ") {
        return Ok(None);
    }
    if flags & proto::RSA_SHA2_512 != 0 {
        return Ok(Some(RsaHash::Sha512));
    }
    if flags & proto::RSA_SHA2_256 != 0 {
        return Ok(Some(RsaHash::Sha256));
    }
    Err(())
}

/// What a sign request put before the user is for.
struct Asked<'a> {
    destination: Option<&'a Binding>,
    forwarded: bool,
    reason: Reason,
    /// A login to `destination` (`authenticates_to`): only then does an allow of a
    /// `once_per_host` key cover the server's next logins.
    login: bool,
    /// The connection it came on (`Session::connection`).
    connection: u64,
}

/// Puts the request before the user and waits for the decision (docs/agent.md "SSH agent").
fn approved(state: &AppState, key: &AgentKey, asked: &Asked<'_>) -> bool {
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
    let started = Instant::now();
    let view_id = view.id.clone();
    let added = std::cell::Cell::new(false);
    let outcome = state.agent.approvals.ask(
        view,
        remember,
        asked.connection,
        || state.vault_locked(),
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
    let waited = started.elapsed();
    match outcome {
        Outcome::Allowed => true,
        other => {
            log::info!(
                "agent: sign request with key {} not approved: {} after {} ms",
                key.name,
                match other {
                    Outcome::Denied => "denied",
                    Outcome::TimedOut => "no decision in time",
                    Outcome::TooMany => "too many requests wait already",
                    Outcome::ConnectionWaits => "its connection has one waiting already",
                    Outcome::Locked => "the vault locked",
                    Outcome::Allowed => "allowed",
                },
                waited.as_millis()
            );
            false
        }
    }
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

/// Opens the key's secrets from the vault (vault lock only for that), then signs with no
/// lock held.
fn make_signature(
    state: &AppState,
    key: &AgentKey,
    data: &[u8],
    rsa_hash: Option<RsaHash>,
) -> Result<Vec<u8>, String> {
    let sealed = state
        .db
        .read(|conn| store::agent::secrets(conn, &key.id))
        .map_err(|err| err.to_string())?;
    let context = |field| SealContext {
        table: "keys",
        row_id: &key.id,
        field,
    };
    let (text, passphrase) = {
        let vault = state.vault();
        let text = vault
            .open(context("private_key"), &sealed.private_key)
            .map_err(|err| err.to_string())?;
        let passphrase = match &sealed.passphrase {
            Some(sealed) => Some(
                vault
                    .open(context("passphrase"), sealed)
                    .map_err(|err| err.to_string())?,
            ),
            None => None,
        };
        (text, passphrase)
    };
    sshkey::sign(&text, passphrase.as_ref(), data, rsa_hash).map_err(|err| format!("{err:?}"))
}

/// `session-bind@openssh.com` (OpenSSH `PROTOCOL.agent` §1): verifies the server's
/// signature over the session identifier and records the binding. As OpenSSH's agent, a
/// connection already bound for an authentication takes no further binding.
fn session_bind(state: &AppState, session: &mut Session, bind: &SessionBind<'_>) -> Result<(), ()> {
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

/// The catalogue hosts for which the known-hosts store trusts `host_key` (docs/api.md "Host keys
/// (known_hosts)"): its entries holding that key without a marker, matched against each
/// host's lookup name as OpenSSH would. Empty when none does, or on a store error (logged).
fn trusting_hosts(state: &AppState, host_key: &HostKey) -> Vec<String> {
    let found = state.db.read(|conn| {
        let entries: Vec<_> = store::known_hosts::all(conn)?
            .into_iter()
            .filter(|entry| entry.public_key == host_key.public_key && entry.marker == Marker::None)
            .collect();
        if entries.is_empty() {
            return Ok::<_, StoreError>(Vec::new());
        }
        let matchers: Vec<_> = entries
            .iter()
            .map(|entry| sshkey::HostMatcher::of(&entry.host, entry.hashed, entry.wildcard))
            .collect();
        Ok(store::known_hosts::catalogue_names(conn)?
            .into_iter()
            .filter(|(_, hostname, port)| {
                let name = lookup_name(hostname, *port);
                matchers.iter().any(|matcher| matcher.matches(&name))
            })
            .map(|(id, _, _)| id)
            .collect())
    });
    found.unwrap_or_else(|err| {
        log::error!("agent: cannot look the server's host key up: {err}");
        Vec::new()
    })
}

/// `ADD_IDENTITY` (`ssh-add`): stores the key in the vault as `POST /api/keys` imports one,
/// named after its comment, and offers it. A key already stored is offered again (it may
/// have been removed with `ssh-add -d`). `ssh-add -c` sets `confirm: always`; a lifetime
/// (`ssh-add -t`) or a constraint extension cannot be honoured by a vault and is refused.
fn add(state: &AppState, identity: &NewIdentity<'_>) -> Result<(), ()> {
    if identity.constraints.lifetime.is_some() || identity.constraints.extension.is_some() {
        log::info!(
            "agent: refused to add a key with a lifetime or a constraint extension: the vault \
             keeps keys until they are deleted"
        );
        return Err(());
    }
    let key = sshkey::from_agent(identity.key, identity.comment).map_err(|err| {
        log::info!("agent: refused to add a key: {err}");
    })?;
    let confirm = identity.constraints.confirm;
    let existing = state
        .db
        .read(|conn| store::agent::by_fingerprint(conn, &key.info.fingerprint))
        .map_err(|err| log::error!("agent: cannot look the key up: {err}"))?;
    if let Some(existing) = existing {
        let confirm = match confirm {
            true => Confirm::Always,
            false => existing.policy.confirm,
        };
        return state
            .db
            .write(|tx| store::agent::offer(tx, &existing.id, confirm))
            .map(|()| log::info!("agent: key {} offered again (ssh-add)", existing.name))
            .map_err(|err| log::error!("agent: cannot offer the key again: {err}"));
    }
    let comment = comment_from_key_file(&String::from_utf8_lossy(identity.comment));
    let id = crate::vault::new_id();
    let sealed = {
        let vault = state.vault();
        vault.seal(
            SealContext {
                table: "keys",
                row_id: &id,
                field: "private_key",
            },
            key.text.expose(),
        )
    }
    .map_err(|err| log::warn!("agent: cannot seal the added key: {err}"))?;
    let stored = state.db.write(|tx| {
        let name = free_name(tx, &comment, &key.info.fingerprint)?;
        let row = NewKey {
            id: &id,
            key_type: key.info.key_type,
            public_key: &key.info.public_key,
            fingerprint: &key.info.fingerprint,
            comment: &comment,
            has_passphrase: false,
            sealed_private_key: &sealed,
            sealed_passphrase: None,
        };
        let stored = store::keys::insert(tx, &name, &row)?;
        let detail = json!({"key_id": stored.id, "fingerprint": stored.fingerprint,
                            "key_type": stored.key_type});
        audit::append(tx, audit::AGENT_KEY_ADDED, &stored.name, &detail)?;
        if confirm {
            let policy = AgentPolicy {
                confirm: Confirm::Always,
                ..stored.agent
            };
            store::agent::set_policy(tx, &id, &policy)?;
        }
        Ok::<_, StoreError>(stored)
    });
    match stored {
        Ok(stored) => {
            log::info!(
                "agent: key {} ({}) added to the vault (ssh-add)",
                stored.name,
                stored.fingerprint
            );
            Ok(())
        }
        Err(err) => {
            log::warn!("agent: cannot store the added key: {err}");
            Err(())
        }
    }
}

/// The name an added key gets, as the ssh-config import names keys: its comment, made
/// unique with ` (2)`, ` (3)`, ...; `ssh-add <fingerprint>` when the comment is empty or not
/// a valid name (fingerprints are unique among keys).
fn free_name(conn: &store::Conn, comment: &str, fingerprint: &str) -> Result<Name, StoreError> {
    if let Some(name) = store::keys::free_name(conn, comment)? {
        return Ok(name);
    }
    store::keys::free_name(conn, &format!("ssh-add {fingerprint}"))?
        .ok_or_else(|| StoreError::BrokenInvariant("cannot name an added key".into()))
}

/// `REMOVE_IDENTITY` (`ssh-add -d`): the agent stops offering the key; it stays in the
/// vault (docs/agent.md "SSH agent": delete it with `DELETE /api/keys/:id`).
fn remove(state: &AppState, key_blob: &[u8]) -> Result<(), ()> {
    let Some(key) = find_key(state, key_blob) else {
        return Err(());
    };
    let disabled = state.db.write(|tx| {
        let disabled = store::agent::disable(tx, &key.id)?;
        if disabled {
            let detail = json!({"key_ids": [key.id], "fingerprints": [key.fingerprint]});
            audit::append(tx, audit::AGENT_KEYS_DISABLED, &key.name, &detail)?;
        }
        Ok::<_, StoreError>(disabled)
    });
    match disabled {
        Ok(true) => {
            log::info!("agent: key {} no longer offered (ssh-add -d)", key.name);
            Ok(())
        }
        Ok(false) => Err(()),
        Err(err) => {
            log::error!("agent: cannot disable key {}: {err}", key.name);
            Err(())
        }
    }
}

/// `REMOVE_ALL_IDENTITIES` (`ssh-add -D`): the agent stops offering every key.
fn remove_all(state: &AppState) -> Result<(), ()> {
    let disabled = state.db.write(|tx| {
        let count = store::agent::disable_all(tx)?;
        if count > 0 {
            audit::append(
                tx,
                audit::AGENT_KEYS_DISABLED,
                "all keys",
                &json!({"count": count}),
            )?;
        }
        Ok::<_, StoreError>(count)
    });
    match disabled {
        Ok(count) => {
            log::info!("agent: {count} key(s) no longer offered (ssh-add -D)");
            Ok(())
        }
        Err(err) => {
            log::error!("agent: cannot disable the keys: {err}");
            Err(())
        }
    }
}

/// `LOCK` (`ssh-add -x`): locks the vault, as `POST /api/vault/lock`. The passphrase
/// `ssh-add` asks for is not used: the vault unlocks with its master password. Refused
/// without a master password (there would be no way back in).
fn lock(state: &AppState) -> Result<(), ()> {
    match state.lock_vault("agent") {
        Ok(()) => {
            log::info!("vault locked (ssh-add -x)");
            Ok(())
        }
        Err(VaultError::NoPassword) => {
            log::info!("agent: refused to lock: no master password is set");
            Err(())
        }
        Err(err) => {
            log::warn!("agent: cannot lock: {err}");
            Err(())
        }
    }
}

/// `UNLOCK` (`ssh-add -X`) of a locked vault: the passphrase is the master password,
/// checked as `POST /api/vault/unlock` checks it.
fn unlock(state: &AppState, passphrase: &[u8]) -> Vec<u8> {
    let password = Secret::new(passphrase.to_vec());
    match state.unlock_vault(&password, "agent") {
        Ok(()) => {
            log::info!("vault unlocked (ssh-add -X)");
            proto::success()
        }
        Err(err) => {
            log::info!("agent: unlock refused: {err}");
            proto::failure()
        }
    }
}

/// The stored key whose public blob is `key_blob`.
fn find_key(state: &AppState, key_blob: &[u8]) -> Option<AgentKey> {
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
    use crate::agent::proto::put_string;
    use crate::agent::respond::{for_the_bound_session, Binding, Session};
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
