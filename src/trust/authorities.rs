//! Host certificate authorities (docs/api.md, "Host keys (known_hosts)"): the direct way to
//! trust a CA for a host pattern, list the CAs and take one away. An authority is an
//! `@cert-authority` entry of the trust store, the very entry an import of that line makes,
//! so verify, `connect`'s route check and the known_hosts export treat both alike.
//!
//! Invariants: a `public_key` is a plain key, never a certificate (the CA is what is
//! trusted); the same pattern and key are one authority (adding it again stores nothing and
//! answers the stored one, as accepting a trusted key does); every add, also of a stored
//! one, and every delete writes its audit entry in the same transaction; a delete here
//! takes away only an `@cert-authority` entry (any other id is not found); a key
//! `@revoked` for the pattern is never added.

use serde_json::{json, Map, Value};

use crate::model::known_hosts::{self, Marker};
use crate::model::validate::Invalid;
use crate::sshkey::{self, HostKey};
use crate::store::audit;
use crate::store::known_hosts::{KnownHost, NewKnownHost};
use crate::store::{self, StoreError};
use crate::trust::Refusal;

/// A CA to trust for the hosts `pattern` matches.
pub struct NewAuthority {
    /// One host name or pattern, lowercased (`known_hosts::authority_pattern`).
    pub pattern: String,
    pub key: HostKey,
    /// The text after the key in `public_key`, `""` when none.
    pub comment: String,
}

/// The authority an add stored, or found stored (`created: false`).
pub struct Added {
    pub entry: KnownHost,
    pub created: bool,
}

impl NewAuthority {
    /// `{pattern, public_key}`: `public_key` is `<type> <base64> [comment]`, the CA's plain
    /// public key (what `ssh-keygen -s` signs with), at most `MAX_LINE_CHARS` long.
    pub fn from_json(body: &Map<String, Value>) -> Result<NewAuthority, Invalid> {
        let pattern = known_hosts::authority_pattern(body.get("pattern"))?;
        let text = known_hosts::public_key(body.get("public_key"))?;
        if text.chars().count() > known_hosts::MAX_LINE_CHARS {
            return Err(Invalid::new(
                "public_key",
                format!("must be at most {} characters", known_hosts::MAX_LINE_CHARS),
            ));
        }
        let mut fields = text
            .split(known_hosts::FIELD_SEPARATORS)
            .filter(|field| !field.is_empty());
        let key_type = fields.next().unwrap_or_default();
        if key_type.ends_with("-cert-v01@openssh.com") {
            return Err(Invalid::new(
                "public_key",
                "is a certificate: give the CA's own public key (the key `ssh-keygen -s` \
                 signs host certificates with)",
            ));
        }
        let base64 = fields.next().unwrap_or_default();
        let key =
            sshkey::host_key(key_type, base64).map_err(|rule| Invalid::new("public_key", rule))?;
        Ok(NewAuthority {
            pattern,
            key,
            comment: fields.collect::<Vec<_>>().join(" "),
        })
    }
}

/// Every authority, oldest first.
pub fn list(conn: &store::Conn) -> Result<Vec<KnownHost>, StoreError> {
    store::known_hosts::authorities(conn)
}

/// Stores `new` as an `@cert-authority` entry (or finds it stored) and writes the audit
/// entry, inside the caller's transaction. A key `@revoked` for the pattern itself (by an
/// entry whose name or pattern matches the pattern's text, as `*` does) is refused, as
/// accept refuses a revoked key: verify would answer `revoked` for every host it covers.
pub fn add(conn: &store::Conn, new: &NewAuthority) -> Result<Added, Refusal> {
    let revoked = store::known_hosts::all(conn)?.into_iter().find(|entry| {
        entry.marker == Marker::Revoked
            && entry.fingerprint == new.key.fingerprint
            && crate::trust::matcher(entry).matches(&new.pattern)
    });
    if let Some(entry) = revoked {
        return Err(Refusal::Revoked(format!(
            "{} {} is marked @revoked for {} (entry {}); it cannot be trusted as a CA for {}",
            new.key.key_type, new.key.fingerprint, entry.host, entry.id, new.pattern
        )));
    }
    let entry = NewKnownHost {
        host: &new.pattern,
        hashed: false,
        wildcard: known_hosts::is_wildcard(&new.pattern),
        key_type: &new.key.key_type,
        public_key: &new.key.public_key,
        fingerprint: &new.key.fingerprint,
        marker: Marker::CertAuthority,
        comment: &new.comment,
        source: "accept",
    };
    let (id, created) = store::known_hosts::insert(conn, &crate::vault::new_id(), &entry)?;
    let detail = json!({"id": id, "key_type": new.key.key_type,
                        "fingerprint": new.key.fingerprint, "already_trusted": !created});
    audit::append(conn, audit::HOST_CA_ADDED, &new.pattern, &detail)?;
    Ok(Added {
        entry: store::known_hosts::by_id(conn, &id)?,
        created,
    })
}

/// Deletes authority `id` and writes the audit entry; an id that is not an
/// `@cert-authority` entry is `KnownHostNotFound`.
pub fn delete(conn: &store::Conn, id: &str) -> Result<(), StoreError> {
    let entry = store::known_hosts::by_id(conn, id)?;
    if entry.marker != Marker::CertAuthority {
        return Err(StoreError::KnownHostNotFound);
    }
    store::known_hosts::delete(conn, id)?;
    let detail = json!({"id": id, "key_type": entry.key_type, "fingerprint": entry.fingerprint});
    audit::append(conn, audit::HOST_CA_DELETED, &entry.host, &detail)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Map, Value};

    use crate::model::known_hosts::Marker;
    use crate::store::{self, Db, StoreError};
    use crate::trust::authorities::{self, NewAuthority};
    use crate::trust::Refusal;

    const CA: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE8PJYMwAkCN5SYUygdDBpeuAydFnosIes0BayKXczns";

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn new(pattern: &str, public_key: &str) -> NewAuthority {
        NewAuthority::from_json(&body(json!({"pattern": pattern, "public_key": public_key})))
            .unwrap()
    }

    fn audit_events(db: &Db) -> Vec<String> {
        db.read(|conn| store::audit::page(conn, None, 100))
            .unwrap()
            .into_iter()
            .map(|entry| entry.event)
            .collect()
    }

    #[test]
    fn an_authority_is_a_cert_authority_entry_stored_once_and_audited_each_time() {
        let db = store::open_in_memory().unwrap();
        let first = db
            .write(|tx| authorities::add(tx, &new("*.Example.com", &format!("{CA} ca@corp"))))
            .unwrap();
        assert!(first.created);
        assert_eq!(first.entry.marker, Marker::CertAuthority);
        assert_eq!(first.entry.host, "*.example.com");
        assert!(first.entry.wildcard);
        assert_eq!(first.entry.comment, "ca@corp");
        let again = db
            .write(|tx| authorities::add(tx, &new("*.example.com", CA)))
            .unwrap();
        assert!(!again.created);
        assert_eq!(again.entry.id, first.entry.id);
        assert_eq!(db.read(authorities::list).unwrap().len(), 1);
        assert_eq!(audit_events(&db), ["host_ca.added", "host_ca.added"]);
    }

    #[test]
    fn a_certificate_or_an_unreadable_key_is_not_an_authority() {
        let refused = |public_key: &str| {
            NewAuthority::from_json(&body(json!({"pattern": "*", "public_key": public_key})))
                .err()
                .unwrap()
        };
        let cert = refused("ssh-ed25519-cert-v01@openssh.com AAAA");
        assert_eq!(cert.field, "public_key");
        assert!(cert.rule.contains("certificate"), "{}", cert.rule);
        assert!(refused("ssh-ed25519 AAAA").rule.contains("readable"));
        assert!(refused("").rule.contains("OpenSSH form"));
        let longest = format!(
            "{CA} {}",
            "c".repeat(crate::model::known_hosts::MAX_LINE_CHARS - CA.len() - 1)
        );
        assert!(
            NewAuthority::from_json(&body(json!({"pattern": "*", "public_key": longest}))).is_ok()
        );
        assert!(refused(&format!("{longest}c")).rule.contains("at most"));
    }

    #[test]
    fn a_key_revoked_for_the_pattern_is_refused_and_one_revoked_for_one_host_is_not() {
        let db = store::open_in_memory().unwrap();
        let lines = crate::trust::exchange::read_lines(&format!(
            "@revoked a.example.com {CA}\n@revoked *.corp {CA}\n"
        ));
        db.write(|tx| crate::trust::exchange::import(tx, &lines, false))
            .unwrap();
        for pattern in ["a.example.com", "*.corp", "b.corp"] {
            let refused = db.write(|tx| authorities::add(tx, &new(pattern, CA)));
            assert!(matches!(refused, Err(Refusal::Revoked(_))), "{pattern}");
        }
        let added = db.write(|tx| authorities::add(tx, &new("*.example.com", CA)));
        assert!(
            added.unwrap().created,
            "revoked for one host of the pattern only"
        );
    }

    #[test]
    fn delete_takes_away_an_authority_only() {
        let db = store::open_in_memory().unwrap();
        let added = db.write(|tx| authorities::add(tx, &new("*", CA))).unwrap();
        let lines = crate::trust::exchange::read_lines(&format!("h.example {CA}\n"));
        db.write(|tx| crate::trust::exchange::import(tx, &lines, false))
            .unwrap();
        let plain = db
            .read(store::known_hosts::all)
            .unwrap()
            .into_iter()
            .find(|entry| entry.marker == Marker::None)
            .unwrap();
        let refused = db.write(|tx| authorities::delete(tx, &plain.id));
        assert!(matches!(refused, Err(StoreError::KnownHostNotFound)));
        db.write(|tx| authorities::delete(tx, &added.entry.id))
            .unwrap();
        assert!(db.read(authorities::list).unwrap().is_empty());
        assert_eq!(audit_events(&db)[0], "host_ca.deleted");
        let again = db.write(|tx| authorities::delete(tx, &added.entry.id));
        assert!(matches!(again, Err(StoreError::KnownHostNotFound)));
    }
}
