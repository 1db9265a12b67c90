//! Signing for the agent (never SHA-1 for RSA) and checking a session binding's host key
//! signature.

// Traits: ssh-key's keys sign and verify through the `signature` crate, which rsa re-exports.
use rsa::signature::{Signer, Verifier};
use ssh_key::private::RsaKeypair;
use ssh_key::{PrivateKey, PublicKey};

use crate::sshkey::encrypted::decrypt;
use crate::sshkey::generate::VaultRng;
use crate::sshkey::host_keys::{host_key_of, HostKey};
use crate::sshkey::parse::parse;
use crate::sshkey::wire::put_string;
use crate::vault::Secret;

/// The hash of an RSA signature, as a sign request's flags ask for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsaHash {
    /// `rsa-sha2-256` (RFC 8332).
    Sha256,
    /// `rsa-sha2-512` (RFC 8332).
    Sha512,
}

/// Why a signature could not be made. Carries no key material.
#[derive(Debug, PartialEq, Eq)]
pub enum SignError {
    /// The stored key does not read or decrypt (the vault handed back something else).
    Unreadable,
    /// The key is passphrase-protected and no passphrase is stored with it.
    NeedsPassphrase,
    /// An RSA signature was asked for without `rsa-sha2-256` or `rsa-sha2-512`: SHA-1
    /// (`ssh-rsa`) signatures are never made (docs/agent.md "SSH agent").
    Sha1Refused,
    /// The signing library failed; the text is for the log only.
    Failed(String),
}

/// Signs `data` with a stored private key (its OpenSSH text, and its passphrase when the
/// text is encrypted). The answer is the SSH signature blob: `string algorithm`, `string
/// signature` (RFC 4253 §6.6). RSA keys sign with `rsa_hash` only, never SHA-1. A
/// passphrase runs bcrypt-pbkdf (~120 ms at 16 rounds, at most `MAX_BCRYPT_ROUNDS`): call
/// it holding no lock.
pub fn sign(
    text: &Secret,
    passphrase: Option<&Secret>,
    data: &[u8],
    rsa_hash: Option<RsaHash>,
) -> Result<Vec<u8>, SignError> {
    let key = readable_private_key(text, passphrase)?;
    match key.key_data().rsa() {
        Some(rsa) => sign_rsa(rsa, data, rsa_hash.ok_or(SignError::Sha1Refused)?),
        None => {
            let signature =
                Signer::try_sign(&key, data).map_err(|err| SignError::Failed(err.to_string()))?;
            Vec::<u8>::try_from(signature).map_err(|err| SignError::Failed(err.to_string()))
        }
    }
}

/// Checks a `session-bind@openssh.com` binding (OpenSSH `PROTOCOL.agent` §1): `signature`
/// must be `host_key`'s signature over `session_id`, as the server made it in the key
/// exchange. `None` when the key or the signature does not read, or it does not verify.
pub fn verify_session_bind(
    host_key: &[u8],
    session_id: &[u8],
    signature: &[u8],
) -> Option<HostKey> {
    let public_key = PublicKey::from_bytes(host_key).ok()?;
    let signature = ssh_key::Signature::try_from(signature).ok()?;
    Verifier::verify(&public_key, session_id, &signature).ok()?;
    host_key_of(public_key.key_data()).ok()
}

/// The private key of `text`, decrypted with `passphrase` when it is encrypted.
fn readable_private_key(
    text: &Secret,
    passphrase: Option<&Secret>,
) -> Result<PrivateKey, SignError> {
    let text = text.expose_str().ok_or(SignError::Unreadable)?;
    let key = parse(text).map_err(|_| SignError::Unreadable)?;
    match (key.is_encrypted(), passphrase) {
        (false, _) => Ok(key),
        (true, None) => Err(SignError::NeedsPassphrase),
        (true, Some(passphrase)) => decrypt(&key, passphrase).map_err(|_| SignError::Unreadable),
    }
}

/// An RSA PKCS#1 v1.5 signature (RFC 8332), as the `rsa-sha2-256`/`-512` blob. The signing
/// key is built from the key's own n, e, d, p and q: ssh-key 0.6.7's conversion passes p
/// twice, which rsa 0.9.7 and later refuse (docs/agent.md "SSH agent"). Signing is blinded with
/// random numbers from `vault::random_bytes`.
fn sign_rsa(rsa: &RsaKeypair, data: &[u8], hash: RsaHash) -> Result<Vec<u8>, SignError> {
    use rsa::signature::{RandomizedSigner, SignatureEncoding};
    let number = |mpint: &ssh_key::Mpint| {
        mpint
            .as_positive_bytes()
            .map(rsa::BigUint::from_bytes_be)
            .ok_or(SignError::Unreadable)
    };
    let key = rsa::RsaPrivateKey::from_components(
        number(&rsa.public.n)?,
        number(&rsa.public.e)?,
        number(&rsa.private.d)?,
        vec![number(&rsa.private.p)?, number(&rsa.private.q)?],
    )
    .map_err(|err| SignError::Failed(err.to_string()))?;
    let (name, signature) = match hash {
        RsaHash::Sha256 => (
            "rsa-sha2-256",
            rsa::pkcs1v15::SigningKey::<ssh_key::sha2::Sha256>::new(key)
                .try_sign_with_rng(&mut VaultRng, data)
                .map(|signature| signature.to_vec()),
        ),
        RsaHash::Sha512 => (
            "rsa-sha2-512",
            rsa::pkcs1v15::SigningKey::<ssh_key::sha2::Sha512>::new(key)
                .try_sign_with_rng(&mut VaultRng, data)
                .map(|signature| signature.to_vec()),
        ),
    };
    let signature = signature.map_err(|err| SignError::Failed(err.to_string()))?;
    let mut blob = Vec::with_capacity(name.len() + signature.len() + 8);
    put_string(&mut blob, name.as_bytes());
    put_string(&mut blob, &signature);
    Ok(blob)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::PrivateKey;

    use crate::model::key::{Curve, KeySpec};
    use crate::sshkey::fixtures::secret;
    use crate::sshkey::generate::generate;
    use crate::sshkey::openssh_key::OpenSshKey;
    use crate::sshkey::public::public_blob;
    use crate::sshkey::sign::{sign, verify_session_bind, RsaHash, SignError};
    use crate::sshkey::wire::Reader;

    /// True when `signature` (an SSH signature blob) is `key`'s over `data`.
    fn verifies(key: &OpenSshKey, data: &[u8], signature: &[u8]) -> bool {
        use rsa::signature::Verifier;
        let public = ssh_key::PublicKey::from_openssh(&key.info.public_key).unwrap();
        let signature = ssh_key::Signature::try_from(signature).unwrap();
        Verifier::verify(&public, data, &signature).is_ok()
    }

    /// The algorithm name a signature blob starts with.
    fn algorithm_of(signature: &[u8]) -> String {
        let mut reader = Reader(signature);
        String::from_utf8(reader.string().unwrap().to_vec()).unwrap()
    }

    #[test]
    fn ed25519_and_every_ecdsa_curve_sign_what_their_public_key_verifies() {
        for (spec, algorithm) in [
            (KeySpec::Ed25519, "ssh-ed25519"),
            (KeySpec::Ecdsa(Curve::P256), "ecdsa-sha2-nistp256"),
            (KeySpec::Ecdsa(Curve::P384), "ecdsa-sha2-nistp384"),
            (KeySpec::Ecdsa(Curve::P521), "ecdsa-sha2-nistp521"),
        ] {
            let key = generate(spec, "", None).unwrap();
            let signature = sign(&key.text, None, b"data", None).unwrap();
            assert_eq!(algorithm_of(&signature), algorithm);
            assert!(verifies(&key, b"data", &signature), "{algorithm}");
            assert!(!verifies(&key, b"other data", &signature), "{algorithm}");
        }
    }

    #[test]
    fn rsa_signs_with_sha256_and_sha512_where_ssh_keys_conversion_fails_and_refuses_sha1() {
        let key = generate(KeySpec::Rsa(2048), "", None).unwrap();
        let parsed = PrivateKey::from_openssh(key.text.expose_str().unwrap()).unwrap();
        // The trap `sign_rsa` works around: ssh-key 0.6.7 passes p twice to rsa.
        assert!(
            rsa::RsaPrivateKey::try_from(parsed.key_data().rsa().unwrap()).is_err(),
            "ssh-key fixed its conversion: sign_rsa could use it again"
        );
        for (hash, algorithm) in [
            (RsaHash::Sha256, "rsa-sha2-256"),
            (RsaHash::Sha512, "rsa-sha2-512"),
        ] {
            let signature = sign(&key.text, None, b"data", Some(hash)).unwrap();
            assert_eq!(algorithm_of(&signature), algorithm);
            assert!(verifies(&key, b"data", &signature), "{algorithm}");
        }
        assert_eq!(
            sign(&key.text, None, b"data", None),
            Err(SignError::Sha1Refused)
        );
    }

    #[test]
    fn encrypted_key_signs_with_its_passphrase_and_not_without() {
        let key = generate(KeySpec::Ed25519, "", Some(&secret("pass"))).unwrap();
        assert_eq!(
            sign(&key.text, None, b"data", None),
            Err(SignError::NeedsPassphrase)
        );
        assert_eq!(
            sign(&key.text, Some(&secret("wrong")), b"data", None),
            Err(SignError::Unreadable)
        );
        let signature = sign(&key.text, Some(&secret("pass")), b"data", None).unwrap();
        assert!(verifies(&key, b"data", &signature));
    }

    #[test]
    fn session_bind_verifies_the_host_keys_signature_over_the_session_id_only() {
        let host = generate(KeySpec::Ecdsa(Curve::P256), "", None).unwrap();
        let blob = public_blob(&host.info.public_key).unwrap();
        let session_id = [7u8; 32];
        let signature = sign(&host.text, None, &session_id, None).unwrap();
        let bound = verify_session_bind(&blob, &session_id, &signature).unwrap();
        assert_eq!(bound.fingerprint, host.info.fingerprint);
        assert_eq!(bound.public_key, host.info.public_key);
        assert_eq!(verify_session_bind(&blob, &[8u8; 32], &signature), None);
        let other = generate(KeySpec::Ecdsa(Curve::P256), "", None).unwrap();
        let other_blob = public_blob(&other.info.public_key).unwrap();
        assert_eq!(
            verify_session_bind(&other_blob, &session_id, &signature),
            None
        );
        assert_eq!(
            verify_session_bind(b"garbage", &session_id, &signature),
            None
        );
        assert_eq!(verify_session_bind(&blob, &session_id, b"garbage"), None);
    }
}
