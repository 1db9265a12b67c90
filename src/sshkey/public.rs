//! Public halves: the algorithm names the service supports, the bare public key line, and
//! the blob and fingerprint the agent lists and matches.

use ssh_key::{Algorithm, EcdsaCurve, HashAlg, PublicKey};

use crate::sshkey::error::KeyError;

/// The public key blob of a stored `<algorithm> <base64>` line: what the agent lists and
/// what a sign request names.
pub fn public_blob(public_key: &str) -> Option<Vec<u8>> {
    PublicKey::from_openssh(public_key).ok()?.to_bytes().ok()
}

/// The `SHA256:` fingerprint of a public key blob; `None` when it is not a key.
pub fn blob_fingerprint(blob: &[u8]) -> Option<String> {
    let public_key = PublicKey::from_bytes(blob).ok()?;
    Some(public_key.fingerprint(HashAlg::Sha256).to_string())
}

/// The OpenSSH algorithm name when the service supports it.
pub(super) fn supported_type(algorithm: &Algorithm) -> Option<&'static str> {
    match algorithm {
        Algorithm::Ed25519 => Some("ssh-ed25519"),
        Algorithm::Rsa { .. } => Some("ssh-rsa"),
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP256,
        } => Some("ecdsa-sha2-nistp256"),
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP384,
        } => Some("ecdsa-sha2-nistp384"),
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP521,
        } => Some("ecdsa-sha2-nistp521"),
        _ => None,
    }
}

/// `<algorithm> <base64>`: the public key line without its comment.
pub(super) fn bare_public_key(public_key: &PublicKey) -> Result<String, KeyError> {
    Ok(PublicKey::new(public_key.key_data().clone(), "").to_openssh()?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::key::KeySpec;
    use crate::sshkey::generate::generate;
    use crate::sshkey::public::{blob_fingerprint, public_blob};

    #[test]
    fn public_blob_and_blob_fingerprint_agree_with_the_stored_fingerprint() {
        let key = generate(KeySpec::Ed25519, "", None).unwrap();
        let blob = public_blob(&key.info.public_key).unwrap();
        assert_eq!(blob_fingerprint(&blob), Some(key.info.fingerprint.clone()));
        assert_eq!(blob_fingerprint(b"not a key"), None);
        assert_eq!(public_blob("ssh-ed25519 !!!"), None);
    }
}
