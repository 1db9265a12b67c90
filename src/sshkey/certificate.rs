//! OpenSSH certificates (`*-cert-v01@openssh.com`, OpenSSH PROTOCOL.certkeys): the one
//! reader of them, for user certificates attached to keys (here: check the CA's signature and
//! that it certifies a given public key, and give the facts the API shows,
//! `model::certificate::Certificate`) and for host certificates a server presents
//! (`host_keys::presented_key` judges those).
//!
//! The binary form is read by hand with `wire::Reader`: ssh-key 0.6.7 refuses any
//! certificate whose `valid_before` is past `i64::MAX` seconds, and ssh-keygen writes
//! 2^64-1 there for every certificate made without `-V` ("forever"). ssh-key still checks
//! the signature (its `Signature` and `Verifier`), over exactly the signed bytes.
//!
//! Invariants: never panics and never reads past its input (fuzzed below); no refusal
//! quotes the text; the text is capped before it is decoded.

use std::collections::BTreeMap;

use base64ct::{Base64, Encoding};
use rsa::signature::Verifier;
use ssh_key::{HashAlg, PublicKey};

use crate::model::certificate::Certificate;
use crate::sshkey::limits::MAX_PRIVATE_KEY_BYTES;
use crate::sshkey::wire::{put_string, Reader};

/// OpenSSH's certificate type code of a user certificate (a host one is 2).
const USER_CERTIFICATE: u32 = 1;
pub(super) const HOST_CERTIFICATE: u32 = 2;
const SUFFIX: &str = "-cert-v01@openssh.com";

/// Why a certificate was refused: the `details` of 400 `INVALID_CERTIFICATE`.
#[derive(Debug, PartialEq, Eq)]
pub enum CertificateError {
    /// Longer than the key-text limit.
    TooLong,
    /// A plain public key, or any other text that is not a certificate line.
    NotCertificate,
    /// A certificate line whose base64 or binary form does not read.
    Malformed,
    /// A certificate for a key type the service does not hold.
    Unsupported,
    /// A host certificate.
    HostCertificate,
    /// Its CA's signature does not verify.
    BadSignature,
    /// It certifies another public key than the key's own.
    OtherKey,
}

impl std::fmt::Display for CertificateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CertificateError::TooLong => {
                return write!(
                    f,
                    "certificate: must be at most {MAX_PRIVATE_KEY_BYTES} bytes (the key-text \
                     limit; a certificate is one line of a few KB)"
                );
            }
            CertificateError::NotCertificate => {
                "certificate: is not an OpenSSH certificate: expected the one line of the \
                 -cert.pub file ssh-keygen -s writes, `<type>-cert-v01@openssh.com <base64> \
                 [comment]`"
            }
            CertificateError::Malformed => {
                "certificate: its base64 or its binary form does not read as a certificate"
            }
            CertificateError::Unsupported => {
                "certificate: certifies a key of a type the service does not hold (supported: \
                 ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, \
                 ecdsa-sha2-nistp521)"
            }
            CertificateError::HostCertificate => {
                "certificate: is a host certificate (ssh-keygen -h); a key takes user \
                 certificates"
            }
            CertificateError::BadSignature => {
                "certificate: its CA's signature does not verify (the file was changed or cut)"
            }
            CertificateError::OtherKey => {
                "certificate: certifies another public key than this key's; sign this key's \
                 public_key (ssh-keygen -s CA -I ID -n PRINCIPALS KEY.pub)"
            }
        })
    }
}

/// Reads a user certificate line and checks that it certifies `public_key` (the key's
/// `<algorithm> <base64>`) and that its CA's signature verifies. Whether the CA is trusted,
/// the time window and the principals are the server's to judge; the caller shows them.
pub fn user_certificate(text: &str, public_key: &str) -> Result<Certificate, CertificateError> {
    let read = read(text)?;
    if read.kind == HOST_CERTIFICATE {
        return Err(CertificateError::HostCertificate);
    }
    if read.kind != USER_CERTIFICATE {
        return Err(CertificateError::Malformed);
    }
    let own = crate::sshkey::public::public_blob(public_key);
    if own.as_deref() != Some(read.public_blob.as_slice()) {
        return Err(CertificateError::OtherKey);
    }
    Ok(read.certificate)
}

/// The stored certificates of a key (their texts, from `store::certificates`), read again
/// against the key's `public_key`. One that no longer reads (it was checked when attached,
/// so only a changed database file gets here) is left out and logged.
pub fn attached(texts: &[String], public_key: &str) -> Vec<Certificate> {
    texts
        .iter()
        .filter_map(|text| match user_certificate(text, public_key) {
            Ok(certificate) => Some(certificate),
            Err(err) => {
                log::warn!("a stored certificate was left out: {err}");
                None
            }
        })
        .collect()
}

/// The binary form of a certificate line: what the agent offers beside the key. `None`
/// when it does not read.
pub fn certificate_blob(text: &str) -> Option<Vec<u8>> {
    let (_, binary) = decode(text).ok()?;
    Some(binary)
}

/// A certificate read, with what the checks of a user or a host certificate need.
pub(super) struct Read {
    pub(super) certificate: Certificate,
    /// OpenSSH's type code: `USER_CERTIFICATE` or `HOST_CERTIFICATE`.
    pub(super) kind: u32,
    /// The certified key's public blob (`string algorithm` and its fields).
    pub(super) public_blob: Vec<u8>,
    /// The CA's public key blob (the signature key).
    pub(super) ca_blob: Vec<u8>,
    /// Whether the CA's signature verifies over exactly the bytes it signs (a user
    /// certificate that does not is refused; a host one is judged with that reason).
    pub(super) signature_verifies: bool,
}

/// Splits and decodes `<type> <base64> [comment]`: the type and the binary form.
fn decode(text: &str) -> Result<(String, Vec<u8>), CertificateError> {
    if text.len() > MAX_PRIVATE_KEY_BYTES {
        return Err(CertificateError::TooLong);
    }
    let mut fields = text.split_ascii_whitespace();
    let algorithm = fields.next().unwrap_or_default();
    if !algorithm.ends_with(SUFFIX) {
        return Err(CertificateError::NotCertificate);
    }
    let base64 = fields.next().ok_or(CertificateError::Malformed)?;
    let binary = Base64::decode_vec(base64).map_err(|_| CertificateError::Malformed)?;
    Ok((algorithm.to_owned(), binary))
}

fn read(text: &str) -> Result<Read, CertificateError> {
    let (algorithm, binary) = decode(text)?;
    let read = read_binary(&binary)?;
    if !read.signature_verifies {
        return Err(CertificateError::BadSignature);
    }
    match read.certificate.cert_type == algorithm {
        true => Ok(read),
        false => Err(CertificateError::Malformed),
    }
}

/// The key a certificate blob (as the agent lists it and a sign request names it)
/// certifies, and the certificate's line; `None` when `blob` is not a certificate whose
/// CA signature verifies.
pub fn certified_by(blob: &[u8]) -> Option<(Vec<u8>, String)> {
    let read = read_binary(blob).ok()?;
    (read.kind == USER_CERTIFICATE && read.signature_verifies)
        .then_some((read.public_blob, read.certificate.text))
}

/// True when `blob` names a certificate type (its first string ends `-cert-v01@openssh.com`).
pub fn is_certificate_blob(blob: &[u8]) -> bool {
    Reader(blob)
        .string()
        .is_some_and(|name| name.ends_with(SUFFIX.as_bytes()))
}

/// Reads a certificate's binary form: its fields, then the CA's signature, checked over
/// exactly the bytes it signs. Every byte must be accounted for: nothing left over, no
/// length read loosely.
pub(super) fn read_binary(binary: &[u8]) -> Result<Read, CertificateError> {
    let malformed = CertificateError::Malformed;
    let mut reader = Reader(binary);
    let algorithm = reader.string().ok_or(CertificateError::Malformed)?;
    let algorithm = std::str::from_utf8(algorithm)
        .map_err(|_| CertificateError::Malformed)?
        .to_owned();
    if !algorithm.ends_with(SUFFIX) {
        return Err(CertificateError::NotCertificate);
    }
    let _nonce = reader.string().ok_or(CertificateError::Malformed)?;
    let plain = algorithm.strip_suffix(SUFFIX).unwrap_or_default();
    let before_key = reader.0;
    skip_key_fields(&mut reader, plain)?;
    let key_fields = before_key
        .get(..before_key.len() - reader.0.len())
        .ok_or(CertificateError::Malformed)?;
    let mut public_blob = Vec::with_capacity(4 + plain.len() + key_fields.len());
    put_string(&mut public_blob, plain.as_bytes());
    public_blob.extend_from_slice(key_fields);
    let fields = read_fields(&mut reader)?;
    let signed_len = binary.len() - reader.0.len();
    let signature_key = reader.string().ok_or(CertificateError::Malformed)?;
    let signed = binary
        .get(..signed_len + 4 + signature_key.len())
        .ok_or(CertificateError::Malformed)?;
    let signature = reader.string().ok_or(CertificateError::Malformed)?;
    if !reader.0.is_empty() {
        return Err(malformed);
    }
    let ca = PublicKey::from_bytes(signature_key).map_err(|_| CertificateError::Malformed)?;
    let signature =
        ssh_key::Signature::try_from(signature).map_err(|_| CertificateError::Malformed)?;
    let signature_verifies = Verifier::verify(ca.key_data(), signed, &signature).is_ok();
    let base64 = Base64::encode_string(binary);
    Ok(Read {
        certificate: Certificate {
            text: format!("{algorithm} {base64}"),
            cert_type: algorithm,
            key_id: fields.key_id,
            serial: fields.serial,
            principals: fields.principals,
            valid_after: fields.valid_after,
            valid_before: fields.valid_before,
            critical_options: fields.critical_options,
            extensions: fields.extensions,
            ca_fingerprint: ca.fingerprint(HashAlg::Sha256).to_string(),
        },
        kind: fields.kind,
        public_blob,
        ca_blob: signature_key.to_vec(),
        signature_verifies,
    })
}

/// Steps over the certified key's own fields, which depend on its algorithm.
fn skip_key_fields(reader: &mut Reader<'_>, algorithm: &str) -> Result<(), CertificateError> {
    let strings = match algorithm {
        "ssh-ed25519" => 1,
        // e and n, two mpints (written as strings).
        "ssh-rsa" => 2,
        // The curve name and the point.
        "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp521" => 2,
        _ => return Err(CertificateError::Unsupported),
    };
    for _ in 0..strings {
        reader.string().ok_or(CertificateError::Malformed)?;
    }
    Ok(())
}

/// The fields between the certified key and the signature key.
struct Fields {
    serial: u64,
    kind: u32,
    key_id: String,
    principals: Vec<String>,
    valid_after: u64,
    valid_before: u64,
    critical_options: BTreeMap<String, String>,
    extensions: BTreeMap<String, String>,
}

fn read_fields(reader: &mut Reader<'_>) -> Result<Fields, CertificateError> {
    let malformed = || CertificateError::Malformed;
    let serial = u64_of(reader).ok_or_else(malformed)?;
    let kind = reader.u32().ok_or_else(malformed)?;
    let key_id = utf8(reader.string().ok_or_else(malformed)?)?;
    let mut principals = Vec::new();
    let mut packed = Reader(reader.string().ok_or_else(malformed)?);
    while !packed.0.is_empty() {
        principals.push(utf8(packed.string().ok_or_else(malformed)?)?);
    }
    let valid_after = u64_of(reader).ok_or_else(malformed)?;
    let valid_before = u64_of(reader).ok_or_else(malformed)?;
    let critical_options = options(reader.string().ok_or_else(malformed)?)?;
    let extensions = options(reader.string().ok_or_else(malformed)?)?;
    let _reserved = reader.string().ok_or_else(malformed)?;
    Ok(Fields {
        serial,
        kind,
        key_id,
        principals,
        valid_after,
        valid_before,
        critical_options,
        extensions,
    })
}

/// An options list: names and their data, whose value is one string inside (empty for a
/// flag such as `permit-pty`).
fn options(bytes: &[u8]) -> Result<BTreeMap<String, String>, CertificateError> {
    let mut reader = Reader(bytes);
    let mut map = BTreeMap::new();
    while !reader.0.is_empty() {
        let name = utf8(reader.string().ok_or(CertificateError::Malformed)?)?;
        let data = reader.string().ok_or(CertificateError::Malformed)?;
        let value = match data.is_empty() {
            true => String::new(),
            false => {
                let mut inner = Reader(data);
                let value = inner.string().ok_or(CertificateError::Malformed)?;
                String::from_utf8_lossy(value).into_owned()
            }
        };
        map.insert(name, value);
    }
    Ok(map)
}

fn u64_of(reader: &mut Reader<'_>) -> Option<u64> {
    let bytes: [u8; 8] = reader.take(8)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

fn utf8(bytes: &[u8]) -> Result<String, CertificateError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| CertificateError::Malformed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::certificate::{Builder, CertType};
    use ssh_key::{PrivateKey, PublicKey};

    use super::*;
    use crate::fuzz::{settings, Rng};
    use crate::model::key::KeySpec;
    use crate::sshkey::fixtures;
    use crate::sshkey::generate::{generate, VaultRng};

    /// A user key's public line, and a certificate for it signed by a fresh ed25519 CA.
    fn signed(cert_type: CertType, valid_before: u64) -> (String, String) {
        let key = generate(KeySpec::Ed25519, "", None).unwrap();
        let public = PublicKey::from_openssh(&key.info.public_key).unwrap();
        let ca = PrivateKey::random(&mut VaultRng, ssh_key::Algorithm::Ed25519).unwrap();
        let mut builder =
            Builder::new([7u8; 16], public.key_data().clone(), 0, valid_before).unwrap();
        builder.serial(42).unwrap();
        builder.cert_type(cert_type).unwrap();
        builder.key_id("alice@example").unwrap();
        builder.valid_principal("alice").unwrap();
        builder.valid_principal("deploy").unwrap();
        builder
            .critical_option("force-command", "/bin/true")
            .unwrap();
        builder.extension("permit-pty", "").unwrap();
        let certificate = builder.sign(&ca).unwrap().to_openssh().unwrap();
        (key.info.public_key.clone(), certificate)
    }

    #[test]
    fn a_user_certificate_for_the_key_reads_with_its_fields() {
        let (public, text) = signed(CertType::User, 2_000_000_000);
        let cert = user_certificate(&format!("{text} comment"), &public).unwrap();
        assert_eq!(cert.cert_type, "ssh-ed25519-cert-v01@openssh.com");
        assert_eq!(cert.key_id, "alice@example");
        assert_eq!(cert.serial, 42);
        assert_eq!(cert.principals, ["alice", "deploy"]);
        assert_eq!((cert.valid_after, cert.valid_before), (0, 2_000_000_000));
        assert_eq!(cert.critical_options["force-command"], "/bin/true");
        assert_eq!(cert.extensions["permit-pty"], "");
        assert!(cert.ca_fingerprint.starts_with("SHA256:"));
        assert_eq!(cert.text, text.trim_end(), "the line without its comment");
    }

    #[test]
    fn a_forever_certificate_made_by_ssh_keygen_reads_though_ssh_key_refuses_it() {
        let text = fixtures::USER_ED25519_FOREVER_CERT;
        assert!(
            ssh_key::Certificate::from_openssh(text).is_err(),
            "ssh-key 0.6.7's limit"
        );
        let cert = user_certificate(text, &fixtures::bare(fixtures::USER_ED25519_PUBLIC)).unwrap();
        assert_eq!(cert.valid_before, u64::MAX, "ssh-keygen's \"forever\"");
        assert_eq!((cert.key_id.as_str(), cert.serial), ("forever-id", 7));
        assert_eq!(cert.principals, ["alice", "bob"]);
        assert!(cert.extensions.contains_key("permit-pty"));
        assert_eq!(
            cert.ca_fingerprint, "SHA256:tZlDkoVcfGtZ8UB2hPjPwMZZ+s8QiaKFKYLVwfpFYUk",
            "as ssh-keygen -L prints the signing CA"
        );
    }

    #[test]
    fn a_host_certificate_another_keys_and_non_certificates_are_refused() {
        let (public, host) = signed(CertType::Host, 2_000_000_000);
        assert_eq!(
            user_certificate(&host, &public),
            Err(CertificateError::HostCertificate)
        );
        let (_, other) = signed(CertType::User, 2_000_000_000);
        assert_eq!(
            user_certificate(&other, &public),
            Err(CertificateError::OtherKey)
        );
        assert_eq!(
            user_certificate(&public, &public),
            Err(CertificateError::NotCertificate)
        );
        assert_eq!(
            user_certificate("", &public),
            Err(CertificateError::NotCertificate)
        );
        assert_eq!(
            user_certificate("ssh-ed25519-cert-v01@openssh.com !!!", &public),
            Err(CertificateError::Malformed)
        );
        let long = format!(
            "{} {}",
            "ssh-ed25519-cert-v01@openssh.com",
            "A".repeat(70_000)
        );
        assert_eq!(
            user_certificate(&long, &public),
            Err(CertificateError::TooLong)
        );
    }

    /// Seeded random changes of a real certificate (bytes flipped, cut, lengths grown):
    /// the reader answers every one without panicking, and accepts none it should refuse
    /// (only the untouched certificate certifies the key).
    #[test]
    fn certificate_reading_never_panics_on_mutated_input() {
        // A fifth of the request fuzzer's count: each input costs a signature check.
        let (iterations, seed) = settings("certificate", 3000);
        let iterations = iterations / 5;
        let mut rng = Rng::new(seed);
        let (public, text) = signed(CertType::User, 2_000_000_000);
        let (algorithm, binary) = decode(&text).unwrap();
        for _ in 0..iterations {
            let mut bytes = binary.clone();
            match rng.below(3) {
                0 => {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
                1 => bytes.truncate(rng.below(bytes.len())),
                _ => {
                    let at = rng.below(bytes.len() - 4);
                    bytes[at..at + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0xf0]);
                }
            }
            let line = format!("{algorithm} {}", Base64::encode_string(&bytes));
            let result = user_certificate(&line, &public);
            if bytes != binary {
                assert!(
                    result.is_err(),
                    "seed {seed}: a changed certificate was accepted"
                );
            }
        }
    }
}
