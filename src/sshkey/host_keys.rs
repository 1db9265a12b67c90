//! Host keys and certificates as servers present them and known_hosts stores them, and
//! known_hosts name hashing (HMAC-SHA1: the only user of sha1 and hmac).

use base64ct::{Base64, Encoding};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use ssh_key::{HashAlg, PublicKey};

use crate::model::host_patterns::pattern_matches;
use crate::model::known_hosts::{self, CertificateFacts, HostToken};
use crate::sshkey::error::KeyError;
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
    let certificate = ssh_key::Certificate::from_openssh(text).map_err(|_| UNREADABLE)?;
    let key = host_key_of(certificate.public_key()).map_err(|_| UNREADABLE)?;
    let ca = host_key_of(certificate.signature_key()).map_err(|_| UNREADABLE)?;
    let ca_fingerprint = certificate.signature_key().fingerprint(HashAlg::Sha256);
    let principal = certificate
        .valid_principals()
        .iter()
        .any(|principal| pattern_matches(principal, hostname));
    // `validate` checks the signature with the certificate's own CA key and the validity
    // window; whether that CA is trusted for this host is the store's question.
    let valid_for_host = certificate.cert_type() == ssh_key::certificate::CertType::Host
        && principal
        && certificate.critical_options().is_empty()
        && certificate.validate([&ca_fingerprint]).is_ok();
    let facts = CertificateFacts {
        ca_fingerprint: ca.fingerprint,
        valid_for_host,
    };
    Ok((key, Some(facts)))
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
