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

pub mod authorities;
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

/// A verdict, why (for `revoked` and `certificate_invalid`), and the stored entries that
/// match the host.
pub struct Verdict {
    pub status: Status,
    pub reason: Option<String>,
    pub known: Vec<KnownHost>,
}

/// The entry an accept stored (or found), the verdict before it, and the entries it
/// replaced.
#[derive(Debug)]
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

/// A host of a route whose host key has a `changed`, `revoked` or `certificate_invalid`
/// verdict pending: `connect` hands out no secret while one exists. Its text is the
/// answer's message.
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
        let reason = match alert.reason.is_empty() {
            true => String::new(),
            false => format!(": {}", alert.reason),
        };
        let until = match alert.status {
            Status::CertificateInvalid => {
                "a verify finds a valid certificate of a trusted CA (POST \
                 /api/known-hosts/verify) or the app accepts a key (POST \
                 /api/known-hosts/accept)"
            }
            _ => "the app accepts or replaces it (POST /api/known-hosts/accept)",
        };
        write!(
            f,
            "the host key of {which} was reported {} by verify ({} {}) at {}{reason}; no \
             secret is handed out until {until}",
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
    let keys = known_keys(&known);
    let status = known_hosts::judge(presented, &keys);
    let reason = known_hosts::reason(presented, &keys, status);
    record_verdict(conn, name, status, reason.as_deref(), presented, &known)?;
    Ok(Verdict {
        status,
        reason,
        known,
    })
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
/// `ssh -J` order, then the host) with a `changed`, `revoked` or `certificate_invalid`
/// verdict pending. The hosts are flattened (model::inherit): their ports are effective.
pub fn check_route(
    conn: &store::Conn,
    host: &Host,
    route: &[Host],
) -> Result<Option<Blocked>, StoreError> {
    for (hop, is_hop) in route.iter().map(|hop| (hop, true)).chain([(host, false)]) {
        let port = hop.port.unwrap_or(crate::model::inherit::DEFAULT_PORT);
        let name = known_hosts::lookup_name(&hop.hostname, port);
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
/// blocking alert for `changed`, `revoked` and `certificate_invalid`. Other verdicts record
/// nothing: an alert stays until an accept or replace clears it, even if a later verify
/// says `trusted` (a man in the middle that steps aside must not silence it), with one
/// exception: a `ca_trusted` verdict clears a `certificate_invalid` alert, since only the
/// trusted CA can sign the valid certificate that proves the server (an expired one was
/// renewed).
fn record_verdict(
    conn: &store::Conn,
    name: &str,
    status: Status,
    reason: Option<&str>,
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
    if status == Status::CaTrusted {
        store::known_hosts::clear_alert_of(conn, name, Status::CertificateInvalid)?;
    }
    if status.blocks_connect() {
        let alert = store::known_hosts::NewAlert {
            status,
            key_type: &presented.key_type,
            fingerprint: &presented.fingerprint,
            reason: reason.unwrap_or_default(),
        };
        store::known_hosts::record_alert(conn, name, &alert)?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::known_hosts::{CertificateFacts, Marker, Status, HASH_MAGIC};
    use crate::sshkey::{self, HostKey};
    use crate::store::{self, Db};
    use crate::trust::{self, exchange, Refusal, Target};

    const ED_ONE: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIMOwA5TOpy+9utr0kI/LE9n6skbuGfbQKGB+Jib1zemO";
    const ED_TWO: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOSlXXoHbJKn9M4J2GI0+/Bj80cgBHuj9+kvGzLxrchD";
    const ED_CA: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIE8PJYMwAkCN5SYUygdDBpeuAydFnosIes0BayKXczns";
    const ECDSA: &str = "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPk+AYvT8esxXL7uaiuV5ilqXhY7QFUG10+dESEdAhirB8NQmdD2ddw6aiTVovagabZWc1nWLHUitqU7J1PSIRY=";

    fn ed25519(base64: &str) -> HostKey {
        sshkey::host_key("ssh-ed25519", base64).unwrap()
    }

    /// A store holding `known_hosts` text.
    fn store_with(text: &str) -> Db {
        let db = store::open_in_memory().unwrap();
        let lines = exchange::read_lines(text);
        let report = db.write(|tx| exchange::import(tx, &lines, false)).unwrap();
        assert!(report.refused.is_empty(), "{text}");
        db
    }

    fn target(hostname: &str, key: &HostKey) -> Target {
        Target {
            hostname: hostname.to_owned(),
            port: 22,
            name: hostname.to_owned(),
            public_key: key.public_key.clone(),
        }
    }

    fn verdict(db: &Db, hostname: &str, key: &HostKey) -> Status {
        let presented = trust::presented(key, None);
        db.write(|tx| trust::verify(tx, hostname, &presented))
            .unwrap()
            .status
    }

    fn accept(
        db: &Db,
        hostname: &str,
        key: &HostKey,
        replace: bool,
    ) -> Result<trust::Accepted, Refusal> {
        db.write(|tx| trust::accept(tx, &target(hostname, key), key, replace))
    }

    /// Whether `connect` to `hostname` is blocked by a pending verdict.
    fn alert(db: &Db, hostname: &str) -> bool {
        db.read(|conn| store::known_hosts::alert(conn, hostname))
            .unwrap()
            .is_some()
    }

    #[test]
    fn a_host_with_nothing_stored_is_unknown_and_not_blocked() {
        let db = store_with("");
        assert_eq!(verdict(&db, "a.example", &ed25519(ED_ONE)), Status::Unknown);
        assert!(!alert(&db, "a.example"));
    }

    #[test]
    fn the_stored_key_is_trusted_and_another_of_its_type_is_changed_and_blocks_connect() {
        let db = store_with(&format!("a.example ssh-ed25519 {ED_ONE}\n"));
        assert_eq!(verdict(&db, "a.example", &ed25519(ED_ONE)), Status::Trusted);
        assert!(!alert(&db, "a.example"));
        assert_eq!(verdict(&db, "a.example", &ed25519(ED_TWO)), Status::Changed);
        assert!(alert(&db, "a.example"), "a changed key blocks connect");
    }

    #[test]
    fn a_key_of_a_type_not_stored_is_a_new_algorithm_not_a_change() {
        let db = store_with(&format!("a.example ecdsa-sha2-nistp256 {ECDSA}\n"));
        assert_eq!(
            verdict(&db, "a.example", &ed25519(ED_ONE)),
            Status::NewAlgorithm
        );
        assert!(!alert(&db, "a.example"));
    }

    #[test]
    fn a_revoked_key_is_revoked_blocks_connect_and_is_never_accepted() {
        let db = store_with(&format!(
            "a.example ssh-ed25519 {ED_TWO}\n@revoked a.example ssh-ed25519 {ED_ONE}\n"
        ));
        let key = ed25519(ED_ONE);
        assert_eq!(verdict(&db, "a.example", &key), Status::Revoked);
        assert!(alert(&db, "a.example"));
        for replace in [false, true] {
            let refused = accept(&db, "a.example", &key, replace);
            assert!(matches!(refused, Err(Refusal::Revoked(_))), "{refused:?}");
        }
        assert!(alert(&db, "a.example"), "a refused accept clears nothing");
    }

    #[test]
    fn a_changed_key_is_replaced_only_when_asked_and_the_replace_clears_the_alert() {
        let db = store_with(&format!("a.example ssh-ed25519 {ED_ONE}\n"));
        let (old, new) = (ed25519(ED_ONE), ed25519(ED_TWO));
        assert_eq!(verdict(&db, "a.example", &new), Status::Changed);
        let refused = accept(&db, "a.example", &new, false);
        assert!(
            matches!(&refused, Err(Refusal::Changed(text)) if text.contains(&old.fingerprint)),
            "{refused:?}"
        );
        let accepted = accept(&db, "a.example", &new, true).unwrap();
        assert_eq!(accepted.status, Status::Changed);
        assert_eq!(accepted.entry.source, "replace");
        assert_eq!(accepted.replaced.len(), 1);
        assert_eq!(accepted.replaced[0].fingerprint, old.fingerprint);
        assert!(!alert(&db, "a.example"));
        assert_eq!(verdict(&db, "a.example", &new), Status::Trusted);
        assert_eq!(verdict(&db, "a.example", &old), Status::Changed);
    }

    #[test]
    fn a_replace_keeps_the_wildcard_entry_that_covers_other_hosts() {
        let db = store_with(&format!("*.example ssh-ed25519 {ED_ONE}\n"));
        let new = ed25519(ED_TWO);
        let accepted = accept(&db, "a.example", &new, true).unwrap();
        assert!(accepted.replaced.is_empty());
        assert_eq!(verdict(&db, "b.example", &ed25519(ED_ONE)), Status::Trusted);
        assert_eq!(verdict(&db, "a.example", &new), Status::Trusted);
    }

    #[test]
    fn accepting_a_trusted_key_again_stores_nothing_new() {
        let db = store_with(&format!("a.example ssh-ed25519 {ED_ONE}\n"));
        let key = ed25519(ED_ONE);
        let accepted = accept(&db, "a.example", &key, false).unwrap();
        assert_eq!(accepted.status, Status::Trusted);
        assert_eq!(accepted.entry.source, "import");
        let all = db.read(store::known_hosts::all).unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn a_certificate_of_a_stored_ca_is_ca_trusted_when_valid_and_blocks_connect_when_not() {
        let db = store_with(&format!("@cert-authority *.example ssh-ed25519 {ED_CA}\n"));
        let ca = ed25519(ED_CA);
        let certificate = |valid: bool| {
            trust::presented(
                &ed25519(ED_ONE),
                Some(CertificateFacts {
                    ca_fingerprint: ca.fingerprint.clone(),
                    problem: (!valid).then(|| "expired at 2020-01-02T00:00:00Z".to_owned()),
                }),
            )
        };
        let judged = |presented| {
            db.write(|tx| trust::verify(tx, "a.example", &presented))
                .unwrap()
        };
        let trusted = judged(certificate(true));
        assert_eq!(trusted.status, Status::CaTrusted);
        assert_eq!(trusted.known.len(), 1);
        assert_eq!(trusted.known[0].marker, Marker::CertAuthority);
        assert!(!alert(&db, "a.example"));
        let refused = judged(certificate(false));
        assert_eq!(refused.status, Status::CertificateInvalid);
        assert!(refused.reason.unwrap().contains("expired at 2020-01-02"));
        assert!(
            alert(&db, "a.example"),
            "an invalid certificate blocks connect"
        );
        let blocked = db.read(|conn| store::known_hosts::alert(conn, "a.example"));
        assert!(blocked.unwrap().unwrap().reason.contains("expired at"));
        assert_eq!(judged(certificate(true)).status, Status::CaTrusted);
        assert!(
            !alert(&db, "a.example"),
            "a valid certificate of the CA clears it"
        );
        assert_eq!(
            verdict(&db, "a.example", &ed25519(ED_ONE)),
            Status::Unknown,
            "a CA does not vouch for a plain key"
        );
    }

    #[test]
    fn a_hashed_name_matches_its_own_host_only() {
        let (salt, hash) = sshkey::hash_name("a.example");
        let db = store_with(&format!("{HASH_MAGIC}{salt}|{hash} ssh-ed25519 {ED_ONE}\n"));
        let key = ed25519(ED_ONE);
        assert_eq!(verdict(&db, "a.example", &key), Status::Trusted);
        assert_eq!(verdict(&db, "b.example", &key), Status::Unknown);
        assert_eq!(verdict(&db, "a.example", &ed25519(ED_TWO)), Status::Changed);
    }

    #[test]
    fn importing_a_line_twice_leaves_it_unchanged() {
        let text = format!("a.example,b.example ssh-ed25519 {ED_ONE}\n");
        let db = store_with(&text);
        let lines = exchange::read_lines(&text);
        let again = db.write(|tx| exchange::import(tx, &lines, false)).unwrap();
        assert_eq!((again.added, again.unchanged), (0, 2));
    }
}
