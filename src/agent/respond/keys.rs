//! The keys the agent offers: `REQUEST_IDENTITIES` (`ssh-add -l`), `ADD_IDENTITY`
//! (`ssh-add`), `REMOVE_IDENTITY` (`ssh-add -d`) and `REMOVE_ALL_IDENTITIES` (`ssh-add -D`).
//!
//! Invariants: an added key is sealed before the store sees it and audited in its
//! transaction; a removed key stays in the vault, only no longer offered; a forwarded
//! connection is never offered a key whose policy denies forwarding; a key's certificates
//! are offered after it, only while valid (never an expired one); an identity answer never
//! passes the protocol's size (what does not fit is left out and logged).

use serde_json::json;

use crate::agent::proto::{self, NewIdentity};
use crate::agent::respond::{certified_key, find_key, Session};
use crate::model::agent::{AgentPolicy, Confirm, Forwarded};
use crate::model::key::comment_from_key_file;
use crate::model::name::Name;
use crate::sshkey::{self, OpenSshKey};
use crate::state::AppState;
use crate::store::agent::AgentKey;
use crate::store::{self, audit, keys::NewKey, StoreError};
use crate::vault::SealContext;

/// `REQUEST_IDENTITIES`: the served keys, named by their catalogue name, each followed by
/// its certificates valid now (docs/agent.md: as `ssh-add` of a key with its `-cert.pub`
/// lists them). A forwarded connection sees only the keys whose policy does not deny
/// forwarding, so a remote `ssh` never offers a key that would be refused.
pub(super) fn identities(state: &AppState, session: &Session) -> Vec<u8> {
    let listed = state.db.read(|conn| {
        Ok::<_, StoreError>((store::agent::served(conn)?, store::certificates::all(conn)?))
    });
    let (keys, mut certificates) = match listed {
        Ok(listed) => listed,
        Err(err) => {
            log::error!("agent: cannot list keys: {err}");
            return proto::failure();
        }
    };
    let forwarded = session.forwarded();
    let now = store::certificates::now_seconds();
    let mut blobs: Vec<(Vec<u8>, String)> = Vec::new();
    for key in keys
        .into_iter()
        .filter(|key| !forwarded || key.policy.forwarded != Forwarded::Deny)
    {
        let Some(blob) = sshkey::public_blob(&key.public_key) else {
            continue;
        };
        blobs.push((blob, key.name.clone()));
        let texts = certificates.remove(&key.id).unwrap_or_default();
        for certificate in sshkey::attached(&texts, &key.public_key) {
            if let (true, Some(blob)) = (
                certificate.is_valid(now),
                sshkey::certificate_blob(&certificate.text),
            ) {
                blobs.push((blob, key.name.clone()));
            }
        }
    }
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

/// `ADD_IDENTITY` (`ssh-add`): stores the key in the vault as `POST /api/keys` imports one,
/// named after its comment, and offers it. A key already stored is offered again (it may
/// have been removed with `ssh-add -d`). `ssh-add -c` sets `confirm: always`; a lifetime
/// (`ssh-add -t`) or a constraint extension cannot be honoured by a vault and is refused.
pub(super) fn add(state: &AppState, identity: &NewIdentity<'_>) -> Result<(), ()> {
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
    match existing {
        Some(existing) => offer_again(state, &existing, confirm),
        None => store_added(state, &key, identity.comment, confirm),
    }
}

/// A key already stored, offered again (`ssh-add -c` makes it `confirm: always`).
fn offer_again(state: &AppState, existing: &AgentKey, confirm: bool) -> Result<(), ()> {
    let confirm = match confirm {
        true => Confirm::Always,
        false => existing.policy.confirm,
    };
    state
        .db
        .write(|tx| store::agent::offer(tx, &existing.id, confirm))
        .map(|()| log::info!("agent: key {} offered again (ssh-add)", existing.name))
        .map_err(|err| log::error!("agent: cannot offer the key again: {err}"))
}

/// A new key: sealed under the vault lock, then stored, audited and (with `confirm`) set to
/// `confirm: always` in one transaction.
fn store_added(
    state: &AppState,
    key: &OpenSshKey,
    comment: &[u8],
    confirm: bool,
) -> Result<(), ()> {
    let comment = comment_from_key_file(&String::from_utf8_lossy(comment));
    let id = crate::vault::new_id();
    let sealed = {
        let vault = state.session.vault();
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
/// vault (docs/agent.md "SSH agent": delete it with `DELETE /api/keys/:id`). A certificate's
/// blob (`ssh-add -d` sends the key's `-cert.pub` after the key) names the key it certifies
/// when it is attached to it: the agent stops offering that key with its certificates, and
/// the answer is success also when the key's own removal came first.
pub(super) fn remove(state: &AppState, key_blob: &[u8]) -> Result<(), ()> {
    let certified = sshkey::is_certificate_blob(key_blob);
    let key = match certified {
        false => find_key(state, key_blob),
        true => attached_to(state, key_blob),
    };
    let Some(key) = key else {
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
        Ok(false) if certified => Ok(()),
        Ok(false) => Err(()),
        Err(err) => {
            log::error!("agent: cannot disable key {}: {err}", key.name);
            Err(())
        }
    }
}

/// The stored key a certificate blob certifies, when the certificate is attached to it
/// (valid or not: removing an expired one is fine).
fn attached_to(state: &AppState, certificate_blob: &[u8]) -> Option<AgentKey> {
    let (key, text, attached) = certified_key(state, certificate_blob)?;
    attached.contains(&text).then_some(key)
}

/// `REMOVE_ALL_IDENTITIES` (`ssh-add -D`): the agent stops offering every key.
pub(super) fn remove_all(state: &AppState) -> Result<(), ()> {
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
