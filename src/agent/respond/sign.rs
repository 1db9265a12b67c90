//! `SIGN_REQUEST`: the checks a request passes (the key is offered, the data is for the
//! bound session, no SHA-1 for RSA), the key's policy and the user's approval, then the
//! signature and its audit entry.
//!
//! Invariants: a signature is made only after every check and the policy (and the user,
//! when asked) allow it; the private key is opened under the vault lock and signed with no
//! lock held; a signature that cannot be audited is not sent; only a signature made counts
//! as `--auto-lock` activity.

use serde_json::json;

use crate::agent::proto;
use crate::agent::respond::approval::{approved, Asked};
use crate::agent::respond::{certified_key, find_key, Binding, Session};
use crate::model::agent::Verdict;
use crate::model::certificate::Certificate;
use crate::sshkey::{self, RsaHash};
use crate::state::AppState;
use crate::store::agent::AgentKey;
use crate::store::{self, audit, StoreError};
use crate::vault::SealContext;

/// `SIGN_REQUEST`: checks the key, the session and the policy, asks the user when the
/// policy says so, then signs.
pub(super) fn sign(
    state: &AppState,
    session: &Session,
    key_blob: &[u8],
    data: &[u8],
    flags: u32,
) -> Vec<u8> {
    let Ok((key, rsa_hash)) = signable(state, session, key_blob, data, flags) else {
        return proto::failure();
    };
    let Some(approved) = allowed(state, session, &key, key_blob, data) else {
        return proto::failure();
    };
    let destination = session.destination();
    let forwarded = session.forwarded();
    // docs/api.md "Vault", `--auto-lock`: a signature the agent makes is the user at work (and
    // the vault does not lock under it); a refused request is not. Taken before the vault
    // is opened: a vault locked in between refuses the signature.
    let _activity = state.session.activity();
    let signature = match make_signature(state, &key, data, rsa_hash) {
        Ok(signature) => signature,
        Err(why) => {
            log::warn!("agent: no signature with key {}: {why}", key.name);
            return proto::failure();
        }
    };
    // Every signature that leaves the agent is in the audit log: one that cannot be
    // recorded is not sent.
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
        destination
            .map(|binding| binding.host_key.fingerprint.as_str())
            .unwrap_or("an unknown server"),
        if forwarded { ", forwarded" } else { "" }
    );
    proto::sign_response(&signature)
}

/// Whether the key's policy lets this signature be made, asking the user when it says so:
/// `Some(true)` when the user approved it, `Some(false)` when no one needed asking, `None`
/// when refused (logged).
fn allowed(
    state: &AppState,
    session: &Session,
    key: &AgentKey,
    key_blob: &[u8],
    data: &[u8],
) -> Option<bool> {
    let destination = session.destination();
    let forwarded = session.forwarded();
    // docs/agent.md "SSH agent": an approval for a server covers logins to that server only.
    let login = destination.is_some_and(|binding| authenticates_to(binding, key_blob, data));
    let host_fingerprint = destination.map(|binding| binding.host_key.fingerprint.as_str());
    let approved_for_host = login
        && host_fingerprint.is_some_and(|host| state.agent.approvals.is_remembered(&key.id, host));
    let (verdict, reason) = key.policy.verdict(forwarded, approved_for_host);
    match verdict {
        Verdict::Sign => Some(false),
        Verdict::Refuse => {
            log::info!(
                "agent: refused to sign with key {} for a forwarded request (forwarded: deny)",
                key.name
            );
            None
        }
        Verdict::AskUser => {
            let asked = Asked {
                destination,
                forwarded,
                reason: reason?,
                login,
                connection: session.connection,
            };
            approved(state, key, &asked).then_some(true)
        }
    }
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
    let Some(key) = find_signer(state, key_blob) else {
        log::info!(
            "agent: sign request for a key the vault does not hold, or for a certificate              not attached to one or not valid now"
        );
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

/// The stored key that signs for `key_blob`: the key itself, or, for a certificate, the key
/// it certifies when the certificate is attached to it and valid now (docs/agent.md: an
/// expired certificate is neither offered nor signed for).
fn find_signer(state: &AppState, key_blob: &[u8]) -> Option<AgentKey> {
    if !sshkey::is_certificate_blob(key_blob) {
        return find_key(state, key_blob);
    }
    let (key, text, texts) = certified_key(state, key_blob)?;
    let now = store::certificates::now_seconds();
    let attached: Vec<Certificate> = sshkey::attached(&texts, &key.public_key);
    attached
        .iter()
        .any(|certificate| certificate.text == text && certificate.is_valid(now))
        .then_some(key)
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
pub(super) fn for_the_bound_session(session: &Session, data: &[u8]) -> bool {
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
        let vault = state.session.vault();
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
