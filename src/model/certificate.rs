//! OpenSSH user certificates attached to a key (docs/api.md, "Certificates"): the facts read
//! from one, its status at a given time, the one `connect` and the ssh_config export use, the
//! key list's `certificate` filter and the view.
//!
//! Invariants: pure (the caller passes the time: nothing here reads the clock); a
//! certificate is public data (it carries no secret), but an `Invalid` still never quotes it.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;

use crate::model::validate::Invalid;

/// docs/api.md, "Certificates": a valid certificate whose end is at most this far away is
/// `expiring` (7 days: a weekly look at the key list still catches it in time).
pub const EXPIRING_WINDOW_S: u64 = 7 * 24 * 60 * 60;

/// The first second that RFC 3339 cannot write (year 10000): a `valid_before` at or past it
/// is shown as no end (`null`), as ssh-keygen's "forever" (2^64-1) is.
const FIRST_UNWRITABLE_SECOND: u64 = 253_402_300_800;

/// What a user certificate says, read and checked by `sshkey::certificate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// `<type> <base64>`: the certificate line without its comment.
    pub text: String,
    /// The certificate's algorithm name, such as `ssh-ed25519-cert-v01@openssh.com`.
    pub cert_type: String,
    pub key_id: String,
    pub serial: u64,
    /// As in the certificate; empty means any principal (OpenSSH's rule).
    pub principals: Vec<String>,
    /// Seconds since 1970.
    pub valid_after: u64,
    /// Seconds since 1970; `u64::MAX` is ssh-keygen's "forever".
    pub valid_before: u64,
    pub critical_options: BTreeMap<String, String>,
    pub extensions: BTreeMap<String, String>,
    /// `SHA256:` fingerprint of the signing CA's key.
    pub ca_fingerprint: String,
}

/// Where a certificate stands at a given time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Its window has not started.
    NotYetValid,
    /// Valid, and its end is more than `EXPIRING_WINDOW_S` away (or it has none).
    Valid,
    /// Valid, ending within `EXPIRING_WINDOW_S`.
    Expiring,
    /// Its window has ended.
    Expired,
}

impl Status {
    /// The word the key view shows (`not_yet_valid`, `valid`, `expiring`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotYetValid => "not_yet_valid",
            Status::Valid => "valid",
            Status::Expiring => "expiring",
            Status::Expired => "expired",
        }
    }
}

/// The key list's `certificate` filter (docs/api.md, "Keys").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Keys with at least one `expiring` certificate.
    Expiring,
    /// Keys with at least one `expired` certificate.
    Expired,
}

/// One certificate in a key's view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertificateView {
    /// The certificate line (`<type> <base64>`), what `ssh` reads as `CertificateFile`.
    pub certificate: String,
    #[serde(rename = "type")]
    pub cert_type: String,
    pub key_id: String,
    pub serial: u64,
    pub principals: Vec<String>,
    /// RFC 3339 UTC.
    pub valid_after: String,
    /// RFC 3339 UTC; `null` when the certificate has no end.
    pub valid_before: Option<String>,
    /// Seconds from now to `valid_before`, negative once expired; `null` when no end.
    pub expires_in_s: Option<i64>,
    pub status: Status,
    pub critical_options: BTreeMap<String, String>,
    pub extensions: BTreeMap<String, String>,
    pub ca_fingerprint: String,
}

impl Certificate {
    /// Where the certificate stands at `now` (seconds since 1970): valid from `valid_after`
    /// up to, not including, `valid_before` (OpenSSH PROTOCOL.certkeys).
    /// A `valid_before` past year 9999 is no end, as the view shows it.
    pub fn status(&self, now: u64) -> Status {
        if now < self.valid_after {
            Status::NotYetValid
        } else if self.valid_before >= FIRST_UNWRITABLE_SECOND {
            Status::Valid
        } else if now >= self.valid_before {
            Status::Expired
        } else if self.valid_before - now <= EXPIRING_WINDOW_S {
            Status::Expiring
        } else {
            Status::Valid
        }
    }

    /// Usable at `now`: valid or expiring.
    pub fn is_valid(&self, now: u64) -> bool {
        matches!(self.status(now), Status::Valid | Status::Expiring)
    }

    /// Whether a login as `user` may use it: `user` is one of its principals, or it has none
    /// (valid for any; sshd itself refuses those under `TrustedUserCAKeys`, but an
    /// `authorized_keys` `cert-authority` line takes them).
    pub fn covers(&self, user: &str) -> bool {
        self.principals.is_empty() || self.principals.iter().any(|principal| principal == user)
    }

    /// The principals as a set (sorted, once each): two certificates of one key with the
    /// same set replace each other (docs/api.md, "Certificates").
    pub fn principal_set(&self) -> Vec<String> {
        principal_set(self.principals.iter().map(String::as_str))
    }

    /// The principal set as one stored text (a JSON array), the table's uniqueness key.
    pub fn principals_key(&self) -> String {
        serde_json::to_string(&self.principal_set()).unwrap_or_default()
    }

    pub fn view(&self, now: u64) -> CertificateView {
        let no_end = self.valid_before >= FIRST_UNWRITABLE_SECOND;
        let expires_in_s = (!no_end).then(|| {
            // Both are below FIRST_UNWRITABLE_SECOND here, far inside i64.
            i64::try_from(self.valid_before).unwrap_or(i64::MAX)
                - i64::try_from(now).unwrap_or(i64::MAX)
        });
        CertificateView {
            certificate: self.text.clone(),
            cert_type: self.cert_type.clone(),
            key_id: self.key_id.clone(),
            serial: self.serial,
            principals: self.principals.clone(),
            valid_after: timestamp(self.valid_after),
            valid_before: (!no_end).then(|| timestamp(self.valid_before)),
            expires_in_s,
            status: self.status(now),
            critical_options: self.critical_options.clone(),
            extensions: self.extensions.clone(),
            ca_fingerprint: self.ca_fingerprint.clone(),
        }
    }
}

/// A principal list as a set: sorted, once each.
pub fn principal_set<'a>(principals: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut set: Vec<String> = principals.map(str::to_owned).collect();
    set.sort();
    set.dedup();
    set
}

/// The certificate `connect` and the export use: of those valid at `now`, the one that
/// ends last (the first of equals, in the order given); `None` when none is valid.
pub fn in_use(certificates: &[Certificate], now: u64) -> Option<&Certificate> {
    certificates
        .iter()
        .filter(|certificate| certificate.is_valid(now))
        .rev()
        .max_by_key(|certificate| certificate.valid_before)
}

/// The certificate `connect` hands out for a login as `user`: `in_use` among those that
/// cover `user`.
pub fn in_use_for<'a>(
    certificates: &'a [Certificate],
    now: u64,
    user: &str,
) -> Option<&'a Certificate> {
    certificates
        .iter()
        .filter(|certificate| certificate.is_valid(now) && certificate.covers(user))
        .rev()
        .max_by_key(|certificate| certificate.valid_before)
}

impl Filter {
    /// Reads the `certificate` query parameter.
    pub fn parse(text: &str) -> Result<Filter, Invalid> {
        match text {
            "expiring" => Ok(Filter::Expiring),
            "expired" => Ok(Filter::Expired),
            _ => Err(Invalid::new(
                "certificate",
                "must be \"expiring\" or \"expired\"",
            )),
        }
    }

    /// Whether a key with these certificates passes the filter at `now`.
    pub fn matches(self, certificates: &[Certificate], now: u64) -> bool {
        let wanted = match self {
            Filter::Expiring => Status::Expiring,
            Filter::Expired => Status::Expired,
        };
        certificates
            .iter()
            .any(|certificate| certificate.status(now) == wanted)
    }
}

/// Seconds since 1970 as RFC 3339 UTC (seconds precision); the last writable second past
/// year 9999.
fn timestamp(seconds: u64) -> String {
    let seconds = seconds.min(FIRST_UNWRITABLE_SECOND - 1);
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds)).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn certificate(principals: &[&str], valid_after: u64, valid_before: u64) -> Certificate {
        Certificate {
            text: "ssh-ed25519-cert-v01@openssh.com AAAA".into(),
            cert_type: "ssh-ed25519-cert-v01@openssh.com".into(),
            key_id: "id".into(),
            serial: 1,
            principals: principals.iter().map(|p| (*p).to_owned()).collect(),
            valid_after,
            valid_before,
            critical_options: BTreeMap::new(),
            extensions: BTreeMap::new(),
            ca_fingerprint: "SHA256:x".into(),
        }
    }

    #[test]
    fn a_certificate_is_valid_from_valid_after_up_to_but_not_at_valid_before() {
        let cert = certificate(&[], 100, 100 + 2 * EXPIRING_WINDOW_S);
        assert_eq!(cert.status(99), Status::NotYetValid);
        assert_eq!(cert.status(100), Status::Valid);
        assert_eq!(cert.status(100 + EXPIRING_WINDOW_S - 1), Status::Valid);
        assert_eq!(cert.status(100 + EXPIRING_WINDOW_S), Status::Expiring);
        assert_eq!(
            cert.status(100 + 2 * EXPIRING_WINDOW_S - 1),
            Status::Expiring
        );
        assert_eq!(cert.status(100 + 2 * EXPIRING_WINDOW_S), Status::Expired);
    }

    #[test]
    fn a_forever_certificate_has_no_end_in_its_view_and_never_expires() {
        let cert = certificate(&[], 0, u64::MAX);
        let view = cert.view(1_000_000);
        assert_eq!(view.valid_before, None);
        assert_eq!(view.expires_in_s, None);
        assert_eq!(view.valid_after, "1970-01-01T00:00:00Z");
        assert_eq!(view.status, Status::Valid);
        assert_eq!(cert.status(u64::MAX - 1), Status::Valid);
    }

    #[test]
    fn expires_in_s_is_negative_once_expired() {
        let cert = certificate(&[], 0, 1_000);
        assert_eq!(cert.view(400).expires_in_s, Some(600));
        assert_eq!(cert.view(1_500).expires_in_s, Some(-500));
        assert_eq!(
            cert.view(1_500).valid_before.as_deref(),
            Some("1970-01-01T00:16:40Z")
        );
    }

    #[test]
    fn the_certificate_in_use_is_the_valid_one_ending_last() {
        let now = 10_000;
        let certs = [
            certificate(&["a"], 0, now + 50),
            certificate(&["b"], 0, now + 500),
            certificate(&["c"], 0, now - 1),
            certificate(&["d"], now + 1, u64::MAX),
        ];
        assert_eq!(in_use(&certs, now).unwrap().principals, ["b"]);
        assert_eq!(in_use(&certs[2..], now), None, "expired or not yet valid");
        let equal = [
            certificate(&["x"], 0, 9e9 as u64),
            certificate(&["y"], 0, 9e9 as u64),
        ];
        assert_eq!(
            in_use(&equal, now).unwrap().principals,
            ["x"],
            "first of equals"
        );
    }

    #[test]
    fn connect_takes_the_valid_certificate_for_the_login_user_ending_last() {
        let now = 10_000;
        let certs = [
            certificate(&["alice"], 0, now + 50),
            certificate(&["bob", "alice"], 0, now + 500),
            certificate(&[], 0, now + 80),
            certificate(&["carol"], 0, now - 1),
        ];
        assert_eq!(
            in_use_for(&certs, now, "alice").unwrap().valid_before,
            now + 500
        );
        assert_eq!(
            in_use_for(&certs, now, "dave").unwrap().valid_before,
            now + 80,
            "any"
        );
        assert_eq!(in_use_for(&certs[3..], now, "carol"), None, "expired");
        assert_eq!(
            in_use_for(&certs[..1], now, "bob"),
            None,
            "other principals"
        );
    }

    #[test]
    fn principals_in_another_order_or_repeated_are_the_same_set() {
        let one = certificate(&["b", "a", "a"], 0, 1);
        let two = certificate(&["a", "b"], 0, 1);
        assert_eq!(one.principals_key(), two.principals_key());
        assert_ne!(
            certificate(&["a"], 0, 1).principals_key(),
            two.principals_key()
        );
        assert_eq!(certificate(&[], 0, 1).principals_key(), "[]");
    }

    #[test]
    fn the_filter_matches_a_key_with_any_certificate_of_its_status() {
        let now = 1_000_000;
        let expiring = certificate(&["a"], 0, now + 60);
        let expired = certificate(&["b"], 0, now - 60);
        let valid = certificate(&["c"], 0, u64::MAX);
        assert!(Filter::Expiring.matches(&[valid.clone(), expiring.clone()], now));
        assert!(!Filter::Expiring.matches(&[valid.clone(), expired.clone()], now));
        assert!(Filter::Expired.matches(&[valid.clone(), expired], now));
        assert!(!Filter::Expired.matches(&[valid, expiring], now));
        assert!(!Filter::Expired.matches(&[], now));
        assert_eq!(Filter::parse("expired"), Ok(Filter::Expired));
        assert!(Filter::parse("soon").is_err());
    }
}
