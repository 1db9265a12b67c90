//! The host-key trust workflow (docs/api.md, "Host keys (known_hosts)"): verify a key a
//! server presented, accept or replace it, import and export known_hosts text, list the
//! entries with the catalogue hosts they match, and the check `connect` makes before it
//! hands out a secret. Works through the store (`store::known_hosts`) inside the caller's
//! transaction and the rules of `model::known_hosts`, and returns typed results; the
//! handlers (`api::known_hosts`, `api::hosts`'s `connect`) parse requests and render them.
//!
//! Invariants: every verdict comes from `model::known_hosts::judge` over the entries that
//! match the host's lookup name exactly as OpenSSH matches them (exact name, glob, or
//! HMAC-SHA1 of a hashed name); a verdict and what it records (`last_seen`, a blocking
//! alert) commit together; every accept, replace, delete and import writes its audit entry
//! in the same transaction; a changed key is never replaced without `replace: true`, and a
//! revoked key is never accepted. **Not:** HTTP, `ApiError`, SQL text.

pub mod exchange;
pub mod links;

use std::fmt;

use serde_json::{json, Map, Value};

use crate::model::host::Host;
use crate::model::known_hosts::{self, CertificateFacts, KnownKey, Marker, Presented, Status};
use crate::model::validate::Invalid;
use crate::sshkey::{self, HostKey};
use crate::store::audit;
use crate::store::known_hosts::{KnownHost, NewKnownHost};
use crate::store::{self, StoreError};

/// What verify and accept are asked about.
pub struct Target {
    pub hostname: String,
    pub port: u16,
    /// `lookup_name(hostname, port)`.
    pub name: String,
    pub public_key: String,
}

/// A verdict and the stored entries that match the host.
pub struct Verdict {
    pub status: Status,
    pub known: Vec<KnownHost>,
}

/// The entry an accept stored (or found), the verdict before it, and the entries it
/// replaced.
pub struct Accepted {
    pub status: Status,
    pub entry: KnownHost,
    pub replaced: Vec<KnownHost>,
}

/// Why an accept stored nothing.
#[derive(Debug)]
pub enum Refusal {
    /// The key is marked `@revoked` for the host; the text says which.
    Revoked(String),
    /// A different key of this type is stored and `replace` was not asked for.
    Changed(String),
    /// A `trusted` verdict found no entry vouching for the key (never expected).
    NoVouchingEntry,
    Store(StoreError),
}

/// A host of a route whose host key has a `changed` or `revoked` verdict pending: `connect`
/// hands out no secret while one exists. Its text is the answer's message.
pub struct Blocked {
    /// `Some(name)` for a jump host, `None` for the host itself.
    hop: Option<String>,
    name: String,
    alert: store::known_hosts::Alert,
}

impl Target {
    pub fn from_json(body: &Map<String, Value>) -> Result<Target, Invalid> {
        let hostname = known_hosts::hostname(body.get("hostname"))?;
        let port = known_hosts::port(body.get("port"))?;
        let public_key = known_hosts::public_key(body.get("public_key"))?;
        Ok(Target {
            name: known_hosts::lookup_name(&hostname, port),
            hostname,
            port,
            public_key,
        })
    }

    /// The key the target presents, plain or a certificate (checked for this host name).
    pub fn presented(&self) -> Result<(HostKey, Option<CertificateFacts>), Invalid> {
        sshkey::presented_key(&self.public_key, &self.hostname)
            .map_err(|rule| Invalid::new("public_key", rule))
    }

    /// The plain key an accept stores: a certificate is refused (its CA is what to trust).
    pub fn acceptable(&self) -> Result<HostKey, Invalid> {
        let (key, certificate) = self.presented()?;
        if certificate.is_some() {
            return Err(Invalid::new(
                "public_key",
                "is a certificate: trust its CA instead (import an @cert-authority line)",
            ));
        }
        Ok(key)
    }
}

impl From<StoreError> for Refusal {
    fn from(err: StoreError) -> Refusal {
        Refusal::Store(err)
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        let which = match &self.hop {
            Some(hop) => format!("jump host \"{hop}\" ({name})"),
            None => format!("this host ({name})"),
        };
        let alert = &self.alert;
        write!(
            f,
            "the host key of {which} was reported {} by verify ({} {}) at {}; no secret is \
             handed out until the app accepts or replaces it (POST /api/known-hosts/accept)",
            alert.status.as_str(),
            alert.key_type,
            alert.fingerprint,
            alert.at
        )
    }
}

/// The presented key as the verdict rules see it.
pub fn presented(key: &HostKey, certificate: Option<CertificateFacts>) -> Presented {
    Presented {
        key_type: key.key_type.clone(),
        fingerprint: key.fingerprint.clone(),
        certificate,
    }
}

/// Judges `presented` for lookup name `name` and records what the verdict leaves behind,
/// inside the caller's transaction.
pub fn verify(
    conn: &store::Conn,
    name: &str,
    presented: &Presented,
) -> Result<Verdict, StoreError> {
    let known = matching_entries(conn, name)?;
    let status = known_hosts::judge(presented, &known_keys(&known));
    record_verdict(conn, name, status, presented, &known)?;
    Ok(Verdict { status, known })
}

/// The accept steps inside the caller's transaction: judge, refuse or store, clear the
/// host's alert, and write the audit entry.
pub fn accept(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    replace: bool,
) -> Result<Accepted, Refusal> {
    let matching = matching_entries(conn, &target.name)?;
    let status = known_hosts::judge(&presented(key, None), &known_keys(&matching));
    refuse(status, replace, target, key, &matching)?;
    store::known_hosts::clear_alert(conn, &target.name)?;
    let (entry, replaced) = match status {
        Status::Trusted => confirm(conn, target, key, &matching)?,
        _ => record(conn, target, key, status, &matching)?,
    };
    Ok(Accepted {
        status,
        entry,
        replaced,
    })
}

/// Deletes an entry, with its audit entry: trust taken away is as worth knowing as trust
/// given.
pub fn delete(conn: &store::Conn, id: &str) -> Result<(), StoreError> {
    let entry = store::known_hosts::by_id(conn, id)?;
    store::known_hosts::delete(conn, id)?;
    let detail = json!({"id": id, "key_type": entry.key_type,
                        "fingerprint": entry.fingerprint, "marker": entry.marker.as_str()});
    audit::append(conn, audit::HOST_KEY_DELETED, &entry.host, &detail)
}

/// docs/api.md "Host keys (known_hosts)": the first host of the route (hops first, in
/// `ssh -J` order, then the host) with a `changed` or `revoked` verdict pending.
pub fn check_route(
    conn: &store::Conn,
    host: &Host,
    route: &[Host],
) -> Result<Option<Blocked>, StoreError> {
    for (hop, is_hop) in route.iter().map(|hop| (hop, true)).chain([(host, false)]) {
        let name = known_hosts::lookup_name(&hop.hostname, hop.port);
        if let Some(alert) = store::known_hosts::alert(conn, &name)? {
            let hop = is_hop.then(|| hop.name.clone());
            return Ok(Some(Blocked { hop, name, alert }));
        }
    }
    Ok(None)
}

/// The stored entries whose host token matches lookup name `name`.
pub fn matching_entries(conn: &store::Conn, name: &str) -> Result<Vec<KnownHost>, StoreError> {
    Ok(store::known_hosts::candidates(conn, name)?
        .into_iter()
        .filter(|entry| entry_matches(entry, name))
        .collect())
}

/// How `entry` is matched against names (sshkey::HostMatcher): decoded once for many names.
pub fn matcher(entry: &KnownHost) -> sshkey::HostMatcher<'_> {
    sshkey::HostMatcher::of(&entry.host, entry.hashed, entry.wildcard)
}

/// Whether `entry` applies to lookup name `name`, as OpenSSH decides it.
fn entry_matches(entry: &KnownHost, name: &str) -> bool {
    matcher(entry).matches(name)
}

fn known_keys(entries: &[KnownHost]) -> Vec<KnownKey> {
    entries
        .iter()
        .map(|entry| KnownKey {
            id: entry.id.clone(),
            marker: entry.marker,
            key_type: entry.key_type.clone(),
            fingerprint: entry.fingerprint.clone(),
        })
        .collect()
}

/// What a verdict leaves behind: `last_seen` on the entries that vouched for the key, or a
/// blocking alert for `changed` and `revoked`. Other verdicts record nothing: an alert
/// stays until an accept or replace clears it, even if a later verify says `trusted`.
fn record_verdict(
    conn: &store::Conn,
    name: &str,
    status: Status,
    presented: &Presented,
    matching: &[KnownHost],
) -> Result<(), StoreError> {
    let vouching = |entry: &&KnownHost| match status {
        Status::Trusted => {
            entry.marker == Marker::None && entry.fingerprint == presented.fingerprint
        }
        Status::CaTrusted => {
            entry.marker == Marker::CertAuthority
                && presented
                    .certificate
                    .as_ref()
                    .is_some_and(|ca| ca.ca_fingerprint == entry.fingerprint)
        }
        _ => false,
    };
    for entry in matching.iter().filter(vouching) {
        store::known_hosts::touch(conn, &entry.id)?;
    }
    if status.blocks_connect() {
        store::known_hosts::record_alert(
            conn,
            name,
            status,
            &presented.key_type,
            &presented.fingerprint,
        )?;
    }
    Ok(())
}

/// The refusals of accept: a revoked key always, a changed one without `replace`.
fn refuse(
    status: Status,
    replace: bool,
    target: &Target,
    key: &HostKey,
    matching: &[KnownHost],
) -> Result<(), Refusal> {
    match status {
        Status::Revoked => Err(Refusal::Revoked(format!(
            "{} {} is marked @revoked for {}; it cannot be accepted",
            key.key_type, key.fingerprint, target.name
        ))),
        Status::Changed if !replace => {
            let known: Vec<&str> = stale(matching, key)
                .map(|entry| entry.fingerprint.as_str())
                .collect();
            Err(Refusal::Changed(format!(
                "{} already has a different {} key ({}); the presented one is {}. Send \
                 replace: true to replace it",
                target.name,
                key.key_type,
                known.join(", "),
                key.fingerprint
            )))
        }
        _ => Ok(()),
    }
}

/// Accept of a key already trusted: `last_seen` of the entry that vouches for it, and an
/// audit entry saying so.
fn confirm(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    matching: &[KnownHost],
) -> Result<(KnownHost, Vec<KnownHost>), Refusal> {
    let vouching = matching
        .iter()
        .find(|entry| entry.marker == Marker::None && entry.fingerprint == key.fingerprint)
        .ok_or(Refusal::NoVouchingEntry)?;
    store::known_hosts::touch(conn, &vouching.id)?;
    let detail = json!({"id": vouching.id, "key_type": key.key_type,
                        "fingerprint": key.fingerprint, "already_trusted": true});
    audit::append(conn, audit::HOST_KEY_ACCEPTED, &target.name, &detail)?;
    Ok((store::known_hosts::by_id(conn, &vouching.id)?, Vec::new()))
}

/// Stores the key for the host's own name. A replace first drops the stale keys of this
/// type stored for this very name (plain or hashed), as `ssh-keygen -R` would; a wildcard
/// entry covers other hosts and stays (OpenSSH trusts a host when any of its entries holds
/// the key).
fn record(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    status: Status,
    matching: &[KnownHost],
) -> Result<(KnownHost, Vec<KnownHost>), StoreError> {
    let replacing = status == Status::Changed;
    let replaced: Vec<KnownHost> = match replacing {
        true => stale(matching, key)
            .filter(|entry| !entry.wildcard)
            .cloned()
            .collect(),
        false => Vec::new(),
    };
    for entry in &replaced {
        store::known_hosts::delete(conn, &entry.id)?;
    }
    let new = NewKnownHost {
        host: &target.name,
        hashed: false,
        wildcard: false,
        key_type: &key.key_type,
        public_key: &key.public_key,
        fingerprint: &key.fingerprint,
        marker: Marker::None,
        comment: "",
        source: if replacing { "replace" } else { "accept" },
    };
    let (id, _) = store::known_hosts::insert(conn, &crate::vault::new_id(), &new)?;
    let (event, detail) = match replacing {
        true => (
            audit::HOST_KEY_REPLACED,
            json!({"id": id, "key_type": key.key_type, "fingerprint": key.fingerprint,
                   "replaced": replaced.iter().map(|entry| json!({"id": entry.id,
                       "fingerprint": entry.fingerprint})).collect::<Vec<_>>()}),
        ),
        false => (
            audit::HOST_KEY_ACCEPTED,
            json!({"id": id, "key_type": key.key_type, "fingerprint": key.fingerprint,
                   "verdict": status.as_str()}),
        ),
    };
    audit::append(conn, event, &target.name, &detail)?;
    Ok((store::known_hosts::by_id(conn, &id)?, replaced))
}

/// The plain entries among `matching` that hold another key of `key`'s type.
fn stale<'a>(
    matching: &'a [KnownHost],
    key: &'a HostKey,
) -> impl Iterator<Item = &'a KnownHost> + 'a {
    matching.iter().filter(move |entry| {
        entry.marker == Marker::None
            && entry.key_type == key.key_type
            && entry.fingerprint != key.fingerprint
    })
}
