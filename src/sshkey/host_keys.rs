//! Host keys and certificates as servers present them and known_hosts stores them, and
//! known_hosts name hashing (HMAC-SHA1: the only user of sha1 and hmac).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64ct::{Base64, Encoding};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use ssh_key::{HashAlg, PublicKey};

use crate::model::host_patterns::pattern_matches;
use crate::model::known_hosts::{self, CertificateFacts, HostToken};
use crate::sshkey::certificate::{self, Read, HOST_CERTIFICATE};
use crate::sshkey::error::KeyError;
use crate::sshkey::wire::Reader;
use crate::vault::random_bytes;

/// A host public key as the known-hosts store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKey {
    /// The algorithm name inside the key blob (`ssh-ed25519`, `ssh-rsa`, ...).
    pub key_type: String,
    /// `<type> <base64>`, no comment.
    pub public_key: String,
    /// `SHA256:` and the unpadded base64 digest, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
}

/// Length of a hashed name's salt and hash: the SHA-1 digest length (OpenSSH
/// `hostfile.c`: the salt is as long as the HMAC-SHA1 output).
pub const HOST_HASH_BYTES: usize = 20;

/// Reads `<key_type> <base64>` as known_hosts writes it. The type named in the text must
/// be the one inside the blob. Certificates are not host keys here (`presented_key`
/// reads those).
pub fn host_key(key_type: &str, base64: &str) -> Result<HostKey, &'static str> {
    const UNREADABLE: &str = "is not a readable OpenSSH public key (`<type> <base64>`)";
    let key = PublicKey::from_openssh(&format!("{key_type} {base64}")).map_err(|_| UNREADABLE)?;
    host_key_of(key.key_data()).map_err(|_| UNREADABLE)
}

/// Reads the key a server presented (`<type> <base64> [comment]`): a plain key, or a host
/// certificate, whose signature, validity window (at the current time) and principals
/// (`hostname` must be one of them, wildcards allowed) are checked here; the caller decides
/// whether its CA is trusted.
pub fn presented_key(
    text: &str,
    hostname: &str,
) -> Result<(HostKey, Option<CertificateFacts>), &'static str> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    presented_key_at(text, hostname, now)
}

/// `presented_key` at the time `now` (seconds since 1970), so that a test can name it.
pub fn presented_key_at(
    text: &str,
    hostname: &str,
    now: u64,
) -> Result<(HostKey, Option<CertificateFacts>), &'static str> {
    const UNREADABLE: &str =
        "is not a readable OpenSSH public key or certificate (`<type> <base64> [comment]`)";
    let algorithm = text
        .split(known_hosts::FIELD_SEPARATORS)
        .next()
        .unwrap_or_default();
    if !algorithm.ends_with("-cert-v01@openssh.com") {
        let key = PublicKey::from_openssh(text).map_err(|_| UNREADABLE)?;
        return Ok((host_key_of(key.key_data()).map_err(|_| UNREADABLE)?, None));
    }
    // Read as sent (`certificate::read_binary`): the type named in the text must be the blob's.
    let blob = text
        .split(known_hosts::FIELD_SEPARATORS)
        .nth(1)
        .and_then(|base64| Base64::decode_vec(base64).ok())
        .ok_or(UNREADABLE)?;
    if Reader(&blob).string() != Some(algorithm.as_bytes()) {
        return Err(UNREADABLE);
    }
    let read = certificate::read_binary(&blob).map_err(|_| UNREADABLE)?;
    let key_of = |blob: &[u8]| {
        PublicKey::from_bytes(blob)
            .ok()
            .and_then(|key| host_key_of(key.key_data()).ok())
            .ok_or(UNREADABLE)
    };
    let (key, ca) = (key_of(&read.public_blob)?, key_of(&read.ca_blob)?);
    let facts = CertificateFacts {
        ca_fingerprint: ca.fingerprint,
        problem: certificate_problem(&read, hostname, now),
    };
    Ok((key, Some(facts)))
}

/// Why a certificate is not a valid host certificate for `hostname` at `now`, checked in
/// the order `ssh` checks them; `None` when it is. Whether its CA is trusted for the host is
/// the store's question. The text follows "the certificate" and names no more than five
/// principals, each cut to 64 characters with control characters blanked (they are the
/// server's text).
fn certificate_problem(read: &Read, hostname: &str, now: u64) -> Option<String> {
    let certificate = &read.certificate;
    if read.kind != HOST_CERTIFICATE {
        return Some("is a user certificate, not a host certificate".to_owned());
    }
    // The signature with the certificate's own CA key over the bytes sent; the CA's trust
    // is decided by the caller.
    if !read.signature_verifies {
        return Some("has a signature that does not verify with its CA key".to_owned());
    }
    let (after, before) = (certificate.valid_after, certificate.valid_before);
    if now < after {
        return Some(format!("is not valid before {}", unix_time(after)));
    }
    if now >= before {
        return Some(format!("expired at {}", unix_time(before)));
    }
    if !certificate.critical_options.is_empty() {
        return Some("carries critical options, which no host certificate may".to_owned());
    }
    let principals = &certificate.principals;
    if principals.is_empty() {
        return Some("names no principal (a host certificate must name its host)".to_owned());
    }
    if principals
        .iter()
        .any(|principal| pattern_matches(principal, hostname))
    {
        return None;
    }
    let shown: Vec<String> = principals
        .iter()
        .take(5)
        .map(|principal| {
            let text: String = principal.chars().take(64).collect();
            format!(
                "\"{}\"",
                text.replace(|c: char| c.is_control() || c == '"', " ")
            )
        })
        .collect();
    let more = match principals.len() > shown.len() {
        true => format!(" and {} more", principals.len() - shown.len()),
        false => String::new(),
    };
    Some(format!(
        "names {}{more} among its principals, not {hostname}",
        shown.join(", ")
    ))
}

/// `2026-01-02T03:04:05Z` for a time in seconds since 1970; `forever` past the year 9999
/// (`ssh-keygen` writes the largest number for a certificate with no end).
fn unix_time(seconds: u64) -> String {
    const YEAR_10000: u64 = 253_402_300_800;
    match UNIX_EPOCH.checked_add(Duration::from_secs(seconds)) {
        Some(time) if seconds < YEAR_10000 => humantime::format_rfc3339_seconds(time).to_string(),
        _ => "forever".to_owned(),
    }
}

/// True when `salt` and `hash` (base64) decode to `HOST_HASH_BYTES` each: a hashed name
/// OpenSSH could have written.
pub fn hashed_name_is_well_formed(salt: &str, hash: &str) -> bool {
    let length = |text: &str| Base64::decode_vec(text).map(|bytes| bytes.len()).ok();
    length(salt) == Some(HOST_HASH_BYTES) && length(hash) == Some(HOST_HASH_BYTES)
}

/// A hashed name `|1|salt|hash`, decoded and keyed once, so that many names can be tested
/// against it at the cost of one HMAC each.
#[derive(Clone)]
pub struct HashedName {
    /// HMAC-SHA1 already keyed with the salt.
    keyed: Hmac<Sha1>,
    hash: Vec<u8>,
}

impl HashedName {
    /// `None` when the salt or the hash is not base64.
    pub fn parse(salt: &str, hash: &str) -> Option<HashedName> {
        let salt = Base64::decode_vec(salt).ok()?;
        let hash = Base64::decode_vec(hash).ok()?;
        let keyed = <Hmac<Sha1> as Mac>::new_from_slice(&salt).ok()?;
        Some(HashedName { keyed, hash })
    }

    /// Whether this is the hash of `name` (a known_hosts lookup name): HMAC-SHA1 keyed with
    /// the salt over the name, compared in constant time.
    pub fn matches(&self, name: &str) -> bool {
        let mut mac = self.keyed.clone();
        mac.update(name.as_bytes());
        mac.verify_slice(&self.hash).is_ok()
    }
}

/// How one known_hosts entry's host token is matched against lookup names, as OpenSSH
/// decides it: decoded once for many names (the known-hosts API and the SSH agent's
/// destination both use it).
pub enum HostMatcher<'a> {
    Exact(&'a str),
    Pattern(&'a str),
    /// `None` for a hashed name that does not decode (it matches nothing).
    Hashed(Option<HashedName>),
}

impl<'a> HostMatcher<'a> {
    /// The matcher of a stored token: `hashed` (`|1|salt|hash`), `wildcard`, or exact.
    pub fn of(host: &'a str, hashed: bool, wildcard: bool) -> HostMatcher<'a> {
        match (hashed, wildcard) {
            (true, _) => HostMatcher::Hashed(match HostToken::from_text(host) {
                HostToken::Hashed { salt, hash } => HashedName::parse(&salt, &hash),
                HostToken::Plain(_) => None,
            }),
            (false, true) => HostMatcher::Pattern(host),
            (false, false) => HostMatcher::Exact(host),
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            HostMatcher::Exact(token) => token.eq_ignore_ascii_case(name),
            HostMatcher::Pattern(pattern) => pattern_matches(pattern, name),
            HostMatcher::Hashed(hashed) => {
                hashed.as_ref().is_some_and(|hashed| hashed.matches(name))
            }
        }
    }
}

/// Hashes `name` (a known_hosts lookup name) with a fresh random salt, as `ssh-keygen -H`
/// does: `(base64 salt, base64 hash)`.
pub fn hash_name(name: &str) -> (String, String) {
    let mut salt = [0u8; HOST_HASH_BYTES];
    random_bytes(&mut salt);
    let mut mac =
        <Hmac<Sha1> as Mac>::new_from_slice(&salt).expect("HMAC takes a key of any length");
    mac.update(name.as_bytes());
    let hash = mac.finalize().into_bytes();
    (Base64::encode_string(&salt), Base64::encode_string(&hash))
}

pub(super) fn host_key_of(key_data: &ssh_key::public::KeyData) -> Result<HostKey, KeyError> {
    let public_key = PublicKey::new(key_data.clone(), "");
    Ok(HostKey {
        key_type: key_data.algorithm().as_str().to_owned(),
        public_key: public_key.to_openssh()?,
        fingerprint: public_key.fingerprint(HashAlg::Sha256).to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use base64ct::{Base64, Encoding};

    use crate::sshkey::host_keys::{host_key, presented_key_at};

    /// `ssh-keygen -s ca -I host -h -n 'a.example.com,*.wild.example'
    /// -V 20200101000000:20300101000000`: valid from 1,577,836,800 to 1,893,456,000.
    const HOST_CERT: &str = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAIDpSaqmw/Bi2rvn0Ws6jITDXdgp3pIKanjizq3LiqN+EAAAAIG39yVtr60me627kS8acsONpciFLnYw04VM4LLX8jd05AAAAAAAAAAAAAAACAAAABGhvc3QAAAAjAAAADWEuZXhhbXBsZS5jb20AAAAOKi53aWxkLmV4YW1wbGUAAAAAXgvhAAAAAABw29iAAAAAAAAAAAAAAAAAAAAAMwAAAAtzc2gtZWQyNTUxOQAAACCZMgjb7Y0ILhamecVPu7GRwLGix++buRWgtFn6ASIcHQAAAFMAAAALc3NoLWVkMjU1MTkAAABA8Cs/bXWBp/AQsrkOEbhRM2PJ5e8lR7zQ4wYJ3DgDZXZZG68pj5mWZik22YO+CKU8YEDHnUuCqoJfMOVLGhU7CA==";
    /// The same CA and key, signed without `-h`: a user certificate.
    const USER_CERT: &str = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAIJ43+7Azg8AX69x4Nu5zUi5K6USjE/OtpHwQ0z11gDclAAAAIG39yVtr60me627kS8acsONpciFLnYw04VM4LLX8jd05AAAAAAAAAAAAAAABAAAABHVzZXIAAAARAAAADWEuZXhhbXBsZS5jb20AAAAAXgvhAAAAAABw29iAAAAAAAAAAIIAAAAVcGVybWl0LVgxMS1mb3J3YXJkaW5nAAAAAAAAABdwZXJtaXQtYWdlbnQtZm9yd2FyZGluZwAAAAAAAAAWcGVybWl0LXBvcnQtZm9yd2FyZGluZwAAAAAAAAAKcGVybWl0LXB0eQAAAAAAAAAOcGVybWl0LXVzZXItcmMAAAAAAAAAAAAAADMAAAALc3NoLWVkMjU1MTkAAAAgmTII2+2NCC4WpnnFT7uxkcCxosfvm7kVoLRZ+gEiHB0AAABTAAAAC3NzaC1lZDI1NTE5AAAAQIVg/x7Fk7Xy4aQnzWulIAB5HxWceW/01aBKfJUZkRPfhJ72uzvt7J1rxwjhLK+vitBkTh9K1qymg8uf+aF8yQY=";
    /// `ssh-keygen -s ca -I f -h -n a.example.com` (no `-V`): valid from 0 to the largest
    /// 64-bit number, "forever".
    const FOREVER_CERT: &str = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAIAC5bbTCPdxJpc/YMpPzjAMPjEOrb10+E7G755oCaZONAAAAIG39yVtr60me627kS8acsONpciFLnYw04VM4LLX8jd05AAAAAAAAAAAAAAACAAAAAWYAAAARAAAADWEuZXhhbXBsZS5jb20AAAAAAAAAAP//////////AAAAAAAAAAAAAAAAAAAAMwAAAAtzc2gtZWQyNTUxOQAAACCZMgjb7Y0ILhamecVPu7GRwLGix++buRWgtFn6ASIcHQAAAFMAAAALc3NoLWVkMjU1MTkAAABANSW8Me8uRKT2R0ImVymtPyGPq0hPe6bEsMioK4Txx4gwguEaA2e2fIyLhyhAodYXUmNjTLO2x4rmljqtcz8VAA==";
    /// The CA that signed them all.
    const CA: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJkyCNvtjQguFqZ5xU+7sZHAsaLH75u5FaC0WfoBIhwd";
    const VALID_AFTER: u64 = 1_577_836_800;
    const VALID_BEFORE: u64 = 1_893_456_000;

    fn problem(text: &str, hostname: &str, now: u64) -> Option<String> {
        let (_, facts) = presented_key_at(text, hostname, now).unwrap();
        facts.unwrap().problem
    }

    #[test]
    fn a_host_certificate_is_valid_from_valid_after_until_just_before_valid_before() {
        let ca = host_key("ssh-ed25519", CA).unwrap();
        let (_, facts) = presented_key_at(HOST_CERT, "a.example.com", VALID_AFTER).unwrap();
        let facts = facts.unwrap();
        assert_eq!(facts.ca_fingerprint, ca.fingerprint);
        assert_eq!(facts.problem, None);
        assert_eq!(problem(HOST_CERT, "a.example.com", VALID_BEFORE - 1), None);
        let early = problem(HOST_CERT, "a.example.com", VALID_AFTER - 1).unwrap();
        assert_eq!(early, "is not valid before 2020-01-01T00:00:00Z");
        let late = problem(HOST_CERT, "a.example.com", VALID_BEFORE).unwrap();
        assert_eq!(late, "expired at 2030-01-01T00:00:00Z");
    }

    #[test]
    fn a_host_certificate_without_an_end_is_valid_forever() {
        // `valid_before` is 2^64-1, as `ssh-keygen -s` writes it without `-V`: no end.
        assert_eq!(
            problem(FOREVER_CERT, "a.example.com", i64::MAX as u64 - 1),
            None
        );
        assert_eq!(problem(FOREVER_CERT, "a.example.com", 0), None);
        let other = problem(FOREVER_CERT, "b.example.com", VALID_AFTER).unwrap();
        assert!(other.contains("among its principals"), "{other}");
    }

    #[test]
    fn a_host_certificate_is_valid_only_for_the_names_its_principals_match() {
        let now = VALID_AFTER + 1;
        assert_eq!(
            problem(HOST_CERT, "b.wild.example", now),
            None,
            "a wildcard principal"
        );
        let other = problem(HOST_CERT, "b.example.com", now).unwrap();
        assert_eq!(
            other,
            "names \"a.example.com\", \"*.wild.example\" among its principals, not b.example.com"
        );
    }

    #[test]
    fn a_user_certificate_or_a_broken_signature_is_not_a_valid_host_certificate() {
        let now = VALID_AFTER + 1;
        let user = problem(USER_CERT, "a.example.com", now).unwrap();
        assert!(user.contains("user certificate"), "{user}");
        let mut blob = Base64::decode_vec(HOST_CERT.split(' ').nth(1).unwrap()).unwrap();
        let last = blob.len() - 1;
        blob[last] ^= 1;
        let forged = format!(
            "ssh-ed25519-cert-v01@openssh.com {}",
            Base64::encode_string(&blob)
        );
        let broken = problem(&forged, "a.example.com", now).unwrap();
        assert!(broken.contains("signature"), "{broken}");
    }

    /// docs/api.md, "Host keys (known_hosts)": reading a presented certificate never
    /// panics, and a certificate changed anywhere is never valid. `FUZZ_ITERATIONS` inputs
    /// (default 20,000; `scripts/fuzz` runs a million): the bytes of a real certificate
    /// (with an end, or without, which ssh-key 0.6.7 could not read) flipped, cut, repeated or
    /// overwritten, read at random times for random names.
    #[test]
    fn host_certificate_reading_never_panics_and_never_passes_a_changed_certificate() {
        let (iterations, seed) = crate::fuzz::settings("host certificate", 0xCE27_F00D);
        let originals = [HOST_CERT, FOREVER_CERT]
            .map(|text| Base64::decode_vec(text.split(' ').nth(1).unwrap()).unwrap());
        let names = [
            "a.example.com",
            "b.wild.example",
            "",
            "*",
            "[a.example.com]:22",
        ];
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let original = rng.pick(&originals);
            let mut blob = original.clone();
            for _ in 0..=rng.below(3) {
                let at = rng.below(blob.len().max(1));
                match rng.below(5) {
                    0 => blob.truncate(at),
                    1 => {
                        let piece: Vec<u8> =
                            blob[at..].iter().take(rng.below(16)).copied().collect();
                        blob.splice(at..at, piece);
                    }
                    2 => blob.insert(at.min(blob.len()), rng.next() as u8),
                    _ => {
                        if let Some(byte) = blob.get_mut(at) {
                            *byte = rng.next() as u8;
                        }
                    }
                }
            }
            let text = format!(
                "ssh-ed25519-cert-v01@openssh.com {}",
                Base64::encode_string(&blob)
            );
            let name = *rng.pick(&names);
            let now = match rng.below(3) {
                0 => rng.next(),
                _ => VALID_AFTER + rng.next() % (VALID_BEFORE - VALID_AFTER),
            };
            let outcome = panic::catch_unwind(|| presented_key_at(&text, name, now));
            let Ok(read) = outcome else {
                panic!("panic on input #{iteration}: {text} for {name:?} at {now}");
            };
            if let Ok((_, Some(facts))) = read {
                assert!(
                    facts.problem.is_some() || blob == *original,
                    "a changed certificate passed, input #{iteration}: {text}"
                );
            }
        }
    }

    /// 20 bytes in base64, the salt length OpenSSH writes.
    const HASHED_SALT: &str = "XfMZEJLnrwQ0tb4Lm+tQJw5RR6I=";

    #[test]
    fn a_hashed_name_matches_its_own_name_and_no_other() {
        let (salt, hash) = crate::sshkey::host_keys::hash_name("[example.com]:2222");
        assert!(crate::sshkey::host_keys::hashed_name_is_well_formed(
            &salt, &hash
        ));
        let hashed = crate::sshkey::host_keys::HashedName::parse(&salt, &hash).unwrap();
        assert!(hashed.matches("[example.com]:2222"));
        assert!(!hashed.matches("example.com"));
        let (other_salt, _) = crate::sshkey::host_keys::hash_name("[example.com]:2222");
        assert_ne!(salt, other_salt, "a fresh salt each time");
    }

    #[test]
    fn a_salt_of_19_bytes_is_not_a_well_formed_hashed_name() {
        let (_, hash) = crate::sshkey::host_keys::hash_name("h");
        assert!(crate::sshkey::host_keys::hashed_name_is_well_formed(
            HASHED_SALT,
            &hash
        ));
        assert!(!crate::sshkey::host_keys::hashed_name_is_well_formed(
            "XfMZEJLnrwQ0tb4Lm+tQJw5RRw==",
            &hash
        ));
    }
}
