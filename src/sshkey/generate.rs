//! Generating keys, and `VaultRng`, the random source ssh-key's generators, key encryption
//! and RSA blinding take.

use ssh_key::private::{KeypairData, RsaKeypair};
use ssh_key::rand_core::{self, CryptoRng, RngCore};
use ssh_key::{Algorithm, EcdsaCurve, HashAlg, LineEnding, PrivateKey};

use crate::model::key::{Curve, KeySpec};
use crate::sshkey::error::KeyError;
use crate::sshkey::limits::{MAX_RSA_BITS, MIN_RSA_BITS};
use crate::sshkey::openssh_key::{KeyInfo, OpenSshKey};
use crate::sshkey::public::{bare_public_key, supported_type};
use crate::vault::{random_bytes, Secret};

/// Generates a key of `spec` with `comment`, encrypted with `passphrase` when one is given
/// (aes256-ctr and bcrypt-pbkdf at 16 rounds, as `ssh-keygen` does). RSA takes seconds;
/// call it without holding any lock.
pub fn generate(
    spec: KeySpec,
    comment: &str,
    passphrase: Option<&Secret>,
) -> Result<OpenSshKey, KeyError> {
    let mut key = match spec {
        KeySpec::Ed25519 => PrivateKey::random(&mut VaultRng, Algorithm::Ed25519)?,
        KeySpec::Ecdsa(curve) => PrivateKey::random(
            &mut VaultRng,
            Algorithm::Ecdsa {
                curve: ecdsa_curve(curve),
            },
        )?,
        // `Algorithm::Rsa` always makes 4096 bits in ssh-key 0.6; other sizes go through
        // `RsaKeypair::random`.
        KeySpec::Rsa(bits) if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) => {
            return Err(KeyError(format!(
                "RSA keys are {MIN_RSA_BITS} to {MAX_RSA_BITS} bits"
            )))
        }
        KeySpec::Rsa(bits) => PrivateKey::new(
            KeypairData::from(RsaKeypair::random(&mut VaultRng, bits)?),
            comment,
        )?,
    };
    key.set_comment(comment);
    let key_type = supported_type(&key.algorithm())
        .ok_or_else(|| KeyError("generated an unsupported algorithm".into()))?;
    let info = KeyInfo {
        key_type,
        public_key: bare_public_key(key.public_key())?,
        fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
        comment: comment.to_owned(),
    };
    let text = match passphrase {
        Some(passphrase) => key
            .encrypt(&mut VaultRng, passphrase.expose())?
            .to_openssh(LineEnding::LF)?,
        None => key.to_openssh(LineEnding::LF)?,
    };
    Ok(OpenSshKey {
        info,
        encrypted: passphrase.is_some(),
        // Copied once at its final size; the Zeroizing original is wiped when it drops.
        text: Secret::new(text.as_bytes().to_vec()),
    })
}

/// ssh-key's name of a curve the API names.
fn ecdsa_curve(curve: Curve) -> EcdsaCurve {
    match curve {
        Curve::P256 => EcdsaCurve::NistP256,
        Curve::P384 => EcdsaCurve::NistP384,
        Curve::P521 => EcdsaCurve::NistP521,
    }
}

/// The random source ssh-key's generators and key encryption take: bytes from
/// `vault::random_bytes`, the service's one source of randomness.
pub(super) struct VaultRng;

impl RngCore for VaultRng {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }

    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        random_bytes(dest);
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        random_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for VaultRng {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::key::{Curve, KeySpec};
    use crate::sshkey::error::ImportError;
    use crate::sshkey::fixtures::secret;
    use crate::sshkey::generate::generate;
    use crate::sshkey::limits::{MAX_RSA_BITS, MIN_RSA_BITS};
    use crate::sshkey::parse::import;

    #[test]
    fn generated_keys_of_every_fast_type_import_back_with_the_same_facts() {
        for (spec, key_type) in [
            (KeySpec::Ed25519, "ssh-ed25519"),
            (KeySpec::Ecdsa(Curve::P256), "ecdsa-sha2-nistp256"),
            (KeySpec::Ecdsa(Curve::P384), "ecdsa-sha2-nistp384"),
            (KeySpec::Ecdsa(Curve::P521), "ecdsa-sha2-nistp521"),
        ] {
            let key = generate(spec, "laptop", None).unwrap();
            assert_eq!(key.info.key_type, key_type);
            assert!(!key.encrypted);
            let again = import(&key.text, None).unwrap();
            assert_eq!(again.info, key.info, "{key_type}");
            assert!(key.info.fingerprint.starts_with("SHA256:"));
            assert!(
                !key.info.fingerprint.ends_with('='),
                "unpadded, as ssh-keygen prints"
            );
        }
    }

    #[test]
    fn generated_key_with_a_passphrase_opens_only_with_it() {
        let key = generate(KeySpec::Ed25519, "c", Some(&secret("correct horse"))).unwrap();
        assert!(key.encrypted);
        let opened = import(&key.text, Some(&secret("correct horse"))).unwrap();
        assert_eq!(opened.info, key.info);
        assert_eq!(
            import(&key.text, Some(&secret("correct horsE"))).unwrap_err(),
            ImportError::WrongPassphrase
        );
    }

    #[test]
    fn generated_key_carries_its_comment_inside() {
        let key = generate(KeySpec::Ed25519, "work laptop", None).unwrap();
        let again = import(&key.text, None).unwrap();
        assert_eq!(again.info, key.info);
        assert_eq!(again.info.comment, "work laptop");
    }

    #[test]
    fn rsa_generation_beyond_16384_bits_is_refused() {
        assert!(generate(KeySpec::Rsa(MAX_RSA_BITS + 1), "c", None).is_err());
        assert!(generate(KeySpec::Rsa(MIN_RSA_BITS - 1), "c", None).is_err());
    }
}
