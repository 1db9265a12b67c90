//! Reading an OpenSSH certificate exactly as sent, for `host_keys::presented_key`: the
//! certificate and the bytes its CA signed, so that its signature is checked over what the
//! server sent, as `ssh` checks it.
//!
//! Two limits of ssh-key 0.6.7 are worked around here. It reads some length fields loosely
//! and checks a signature over its own encoding, so only a certificate that is its own
//! encoding is read (the bytes judged are the bytes sent). And it refuses a `valid_before`
//! past `i64::MAX` seconds, yet `ssh-keygen` writes the largest 64-bit number for a
//! certificate with no end (no `-V`, the common case): such a certificate is read with that
//! field as `i64::MAX` (still "forever": past the year 292 billion), and its signature is
//! checked over the bytes sent, which say `u64::MAX`.
//!
//! Invariants: never panics, whatever the bytes (fuzzed in `host_keys`); a certificate is
//! read only when every byte of it is accounted for (re-encoding it gives the bytes sent,
//! but for the one field above); the signed bytes are the bytes sent, never a re-encoding.

use rsa::signature::Verifier;
use ssh_key::Certificate;

/// `valid_before` of a certificate with no end, as `ssh-keygen` writes it.
const NO_END: [u8; 8] = [0xFF; 8];

/// A certificate as sent, and the bytes its CA signed (all of it but the signature).
pub(super) struct Sent {
    pub(super) certificate: Certificate,
    signed: Vec<u8>,
}

impl Sent {
    /// Whether the signature verifies with the certificate's own CA key over the bytes
    /// sent (whether that CA is trusted is decided above).
    pub(super) fn signature_verifies(&self) -> bool {
        let certificate = &self.certificate;
        certificate
            .signature_key()
            .verify(&self.signed, certificate.signature())
            .is_ok()
    }
}

/// The certificate of binary `blob` (the base64 field, decoded), or `None` when it cannot
/// be read as sent.
pub(super) fn read(blob: &[u8]) -> Option<Sent> {
    let certificate = match Certificate::from_bytes(blob) {
        Ok(certificate) => (certificate.to_bytes().ok()? == blob).then_some(certificate)?,
        Err(_) => without_end(blob)?,
    };
    let signature = certificate.signature();
    // The signature is the last field: string(string(algorithm) string(bytes)), which is
    // also how ssh-key writes an sk signature's length (its trailer is inside the bytes).
    let inner = 4 + signature.algorithm().as_str().len() + 4 + signature.as_bytes().len();
    let start = blob.len().checked_sub(4 + inner)?;
    let length = blob.get(start..start + 4)?;
    if u32::from_be_bytes(length.try_into().ok()?) as usize != inner {
        return None;
    }
    Some(Sent {
        certificate,
        signed: blob[..start].to_vec(),
    })
}

/// A certificate whose `valid_before` is `u64::MAX`, read with it as `i64::MAX`: the only
/// eight bytes of `NO_END` that, set to `i64::MAX`, make a certificate with that
/// `valid_before` that is its own encoding.
fn without_end(blob: &[u8]) -> Option<Certificate> {
    let forever = (i64::MAX as u64).to_be_bytes();
    (0..blob.len().saturating_sub(NO_END.len() - 1))
        .filter(|&at| blob[at..at + NO_END.len()] == NO_END)
        .find_map(|at| {
            let mut patched = blob.to_vec();
            patched[at..at + NO_END.len()].copy_from_slice(&forever);
            let certificate = Certificate::from_bytes(&patched).ok()?;
            let exact = certificate.valid_before() == i64::MAX as u64
                && certificate.to_bytes().ok()? == patched;
            exact.then_some(certificate)
        })
}
