//! Passphrase-protected keys: the bcrypt-pbkdf round cap, checked before any work, and the
//! decryption that proves a passphrase right.

use ssh_key::{Kdf, PrivateKey};

use crate::sshkey::ecdsa_workaround;
use crate::sshkey::error::ImportError;
use crate::sshkey::limits::MAX_BCRYPT_ROUNDS;
use crate::vault::Secret;

/// Decrypts `key` with `passphrase`, which proves the passphrase right; the result wipes
/// itself on drop. ssh-key also checks that the private half matches the public one.
pub(super) fn decrypt(key: &PrivateKey, passphrase: &Secret) -> Result<PrivateKey, ImportError> {
    check_rounds(key.kdf())?;
    if key.algorithm().is_ecdsa() {
        return ecdsa_workaround::decrypt(key, passphrase);
    }
    match key.decrypt(passphrase.expose()) {
        Ok(decrypted) => Ok(decrypted),
        // A wrong passphrase fails the check integers (or the AEAD tag).
        Err(ssh_key::Error::Crypto) => Err(ImportError::WrongPassphrase),
        Err(_) => Err(ImportError::Unreadable),
    }
}

/// Refuses a KDF cost above `MAX_BCRYPT_ROUNDS` before any work is spent on it.
pub(super) fn check_rounds(kdf: &Kdf) -> Result<(), ImportError> {
    match kdf {
        Kdf::Bcrypt { rounds, .. } if *rounds > MAX_BCRYPT_ROUNDS => {
            Err(ImportError::TooManyRounds(*rounds))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::{Cipher, Kdf, LineEnding, PrivateKey};

    use crate::model::key::KeySpec;
    use crate::sshkey::encrypted::check_rounds;
    use crate::sshkey::error::ImportError;
    use crate::sshkey::fixtures::{bare, secret, ED25519_SECRET, ED25519_SECRET_PUBLIC};
    use crate::sshkey::generate::{generate, VaultRng};
    use crate::sshkey::limits::MAX_BCRYPT_ROUNDS;
    use crate::sshkey::parse::import;

    #[test]
    fn encrypted_key_with_the_right_passphrase_is_kept_encrypted_with_its_comment() {
        let key = import(&secret(ED25519_SECRET), Some(&secret("secret"))).unwrap();
        assert!(key.encrypted);
        assert_eq!(key.info.comment, "made@by-keygen");
        assert_eq!(key.info.public_key, bare(ED25519_SECRET_PUBLIC));
        assert_eq!(
            key.info.fingerprint, "SHA256:jsZ2P1PipXs6QW2gGpRwrXi0Zjr9iRaxfjbwsWohKr0",
            "what ssh-keygen -lf printed for it"
        );
        assert_eq!(
            key.text.expose(),
            ED25519_SECRET.as_bytes(),
            "stored as given"
        );
    }

    #[test]
    fn encrypted_key_with_a_wrong_passphrase_is_refused() {
        let err = import(&secret(ED25519_SECRET), Some(&secret("Secret"))).unwrap_err();
        assert_eq!(err, ImportError::WrongPassphrase);
    }

    #[test]
    fn encrypted_key_without_a_passphrase_is_read_from_its_public_half() {
        let key = import(&secret(ED25519_SECRET), None).unwrap();
        assert!(key.encrypted);
        assert_eq!(key.info.comment, "", "the comment is in the encrypted part");
        assert_eq!(key.info.public_key, bare(ED25519_SECRET_PUBLIC));
    }

    #[test]
    fn key_encrypted_with_aes256_gcm_and_chacha20_opens_with_its_passphrase_only() {
        let key =
            PrivateKey::from_openssh(generate(KeySpec::Ed25519, "", None).unwrap().text.expose())
                .unwrap();
        for cipher in [Cipher::Aes256Gcm, Cipher::ChaCha20Poly1305] {
            let kdf = Kdf::Bcrypt {
                salt: vec![7; 16],
                rounds: 1,
            };
            let text = key
                .encrypt_with(cipher, kdf, 42, "secret")
                .unwrap()
                .to_openssh(LineEnding::LF)
                .unwrap()
                .to_string();
            let opened = import(&secret(&text), Some(&secret("secret"))).unwrap();
            assert!(opened.encrypted, "{cipher:?}");
            let err = import(&secret(&text), Some(&secret("wrong"))).unwrap_err();
            assert_eq!(err, ImportError::WrongPassphrase, "{cipher:?}");
        }
    }

    #[test]
    fn unencrypted_key_with_a_passphrase_is_refused() {
        let key = generate(KeySpec::Ed25519, "", None).unwrap();
        let err = import(&key.text, Some(&secret("pass"))).unwrap_err();
        assert_eq!(err, ImportError::NotEncrypted);
    }

    #[test]
    fn kdf_rounds_above_the_cap_are_refused_before_decrypting() {
        let key = PrivateKey::random(&mut VaultRng, ssh_key::Algorithm::Ed25519).unwrap();
        let encrypted = key
            .encrypt_with(
                Cipher::Aes256Ctr,
                Kdf::Bcrypt {
                    salt: vec![7; 16],
                    rounds: 1,
                },
                42,
                "pass",
            )
            .unwrap();
        // Patch the rounds in the binary form: the KDF options are not authenticated.
        let mut bytes = encrypted.to_bytes().unwrap().to_vec();
        let at = bytes
            .windows(16)
            .position(|window| window == [7; 16])
            .unwrap()
            + 16;
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let text = PrivateKey::from_bytes(&bytes)
            .unwrap()
            .to_openssh(LineEnding::LF)
            .unwrap();
        let err = import(&secret(&text), Some(&secret("pass"))).unwrap_err();
        assert_eq!(err, ImportError::TooManyRounds(u32::MAX));
        assert_eq!(
            import(&secret(&text), None).unwrap_err(),
            ImportError::TooManyRounds(u32::MAX),
            "refused without a passphrase too: OpenSSH would spend them on every use"
        );
    }

    #[test]
    fn kdf_rounds_up_to_the_cap_are_allowed_and_one_more_is_not() {
        let kdf = |rounds| Kdf::Bcrypt {
            salt: vec![0; 16],
            rounds,
        };
        assert_eq!(check_rounds(&kdf(MAX_BCRYPT_ROUNDS)), Ok(()));
        assert_eq!(check_rounds(&kdf(16)), Ok(()));
        assert_eq!(
            check_rounds(&kdf(MAX_BCRYPT_ROUNDS + 1)),
            Err(ImportError::TooManyRounds(MAX_BCRYPT_ROUNDS + 1))
        );
    }
}
