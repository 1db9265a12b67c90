//! Reading private key texts: the length cap, the formats that are not OpenSSH (PEM,
//! PKCS#8, PuTTY, public keys) named before parsing, line-end normalisation, and the checks a
//! key passes before and after its passphrase (`read`, `ReadKey::finish`, `import`).
//!
//! Key formats ssh-key 0.6 cannot read are recognised by their header before parsing,
//! because ssh-key's own error for them ("PEM Base64 error") would mislead.

use ssh_key::{HashAlg, PrivateKey};

use crate::sshkey::ecdsa_workaround;
use crate::sshkey::encrypted::{check_rounds, decrypt};
use crate::sshkey::error::ImportError;
use crate::sshkey::limits::MAX_PRIVATE_KEY_BYTES;
use crate::sshkey::openssh_key::{KeyInfo, OpenSshKey};
use crate::sshkey::public::{bare_public_key, supported_type};
use crate::sshkey::rsa_checks::{check_rsa_numbers, check_rsa_size};
use crate::vault::Secret;

/// Reads an OpenSSH private key. With a `passphrase`, the key must be encrypted and the
/// passphrase must decrypt it (bcrypt-pbkdf: ~120 ms at the default 16 rounds; call it
/// without holding any lock). Without one, an encrypted key is accepted as it is: its
/// public half is readable without decrypting. `read` then `ReadKey::finish`, in one go.
pub fn import(text: &Secret, passphrase: Option<&Secret>) -> Result<OpenSshKey, ImportError> {
    read(text)?.finish(passphrase)
}

/// Reads and checks an OpenSSH private key without any passphrase work, which is cheap:
/// the text's length (at most `MAX_PRIVATE_KEY_BYTES`), the format, the algorithm, the
/// bcrypt round count an encrypted key asks for (at most `MAX_BCRYPT_ROUNDS`, passphrase or
/// not: OpenSSH spends them on every use of the key), and for RSA the size (`MIN_RSA_BITS`
/// to `MAX_RSA_BITS`) and, when the private half is readable, that its private numbers
/// belong to its public key.
///
/// The text kept is the key as given, with surrounding whitespace removed, line ends made
/// LF and a final newline added: ssh and ssh-keygen refuse a key file with CRLF line ends
/// or without the final newline ("error in libcrypto").
pub fn read(text: &Secret) -> Result<ReadKey, ImportError> {
    if text.expose().len() > MAX_PRIVATE_KEY_BYTES {
        return Err(ImportError::TooLong);
    }
    let Some(text) = text.expose_str() else {
        return Err(ImportError::Unreadable);
    };
    let text = normalize(text);
    let Some(normalized) = text.expose_str() else {
        return Err(ImportError::Unreadable);
    };
    check_format(normalized)?;
    let key = parse(normalized)?;
    let Some(key_type) = supported_type(&key.algorithm()) else {
        return Err(ImportError::Unsupported(
            key.algorithm().as_str().to_owned(),
        ));
    };
    if key.is_encrypted() {
        check_rounds(key.kdf())?;
    }
    check_rsa_size(key.public_key())?;
    if !key.is_encrypted() {
        check_rsa_numbers(&key)?;
    }
    Ok(ReadKey {
        text,
        key,
        key_type,
    })
}

/// A private key `read` has checked, before any passphrase work.
pub struct ReadKey {
    text: Secret,
    key: PrivateKey,
    key_type: &'static str,
}

impl ReadKey {
    /// True when the key is passphrase-protected: `finish` with a passphrase then runs
    /// bcrypt-pbkdf, up to `MAX_BCRYPT_ROUNDS` rounds (~8 s).
    pub fn is_encrypted(&self) -> bool {
        self.key.is_encrypted()
    }

    /// Checks `passphrase` against the key (see `import`) and gives the key to store.
    pub fn finish(self, passphrase: Option<&Secret>) -> Result<OpenSshKey, ImportError> {
        let key = &self.key;
        let comment = match (key.is_encrypted(), passphrase) {
            (false, None) => key.comment().to_owned(),
            (false, Some(_)) => return Err(ImportError::NotEncrypted),
            (true, None) => String::new(),
            (true, Some(passphrase)) => {
                let decrypted = decrypt(key, passphrase)?;
                check_rsa_numbers(&decrypted)?;
                decrypted.comment().to_owned()
            }
        };
        let info = KeyInfo {
            key_type: self.key_type,
            public_key: bare_public_key(key.public_key()).map_err(|_| ImportError::Unreadable)?,
            fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
            comment,
        };
        Ok(OpenSshKey {
            info,
            encrypted: key.is_encrypted(),
            text: self.text,
        })
    }
}

/// Refuses, with a precise reason, every text that is not an OpenSSH private key and that
/// ssh-key would only call "invalid Base64".
fn check_format(text: &str) -> Result<(), ImportError> {
    if text.starts_with("PuTTY-User-Key-File-") {
        return Err(ImportError::Putty);
    }
    if looks_like_public_key_line(text) {
        return Err(ImportError::PublicKey);
    }
    let Some(label) = pem_label(text) else {
        return Err(ImportError::Unreadable);
    };
    match label {
        "OPENSSH PRIVATE KEY" => Ok(()),
        "RSA PRIVATE KEY" => Err(ImportError::NeedsConversion(
            "a PEM (PKCS#1) RSA private key",
        )),
        "EC PRIVATE KEY" => Err(ImportError::NeedsConversion("a PEM (SEC1) EC private key")),
        "DSA PRIVATE KEY" => Err(ImportError::PemDsa),
        "PRIVATE KEY" => Err(ImportError::NeedsConversion("a PKCS#8 private key")),
        "ENCRYPTED PRIVATE KEY" => Err(ImportError::NeedsConversion(
            "an encrypted PKCS#8 private key",
        )),
        "SSH2 PUBLIC KEY" | "PUBLIC KEY" | "RSA PUBLIC KEY" => Err(ImportError::PublicKey),
        _ => Err(ImportError::Unreadable),
    }
}

/// The label of the first `-----BEGIN <label>-----` line (also RFC 4716's
/// `---- BEGIN <label> ----`).
fn pem_label(text: &str) -> Option<&str> {
    let line = text.lines().next()?.trim();
    let inner = line.trim_start_matches('-').trim_end_matches('-').trim();
    let label = inner.strip_prefix("BEGIN ")?;
    (line.starts_with("----") && line.ends_with("----")).then_some(label.trim())
}

/// True for an `authorized_keys`-style line: `<algorithm> <base64> [comment]`.
fn looks_like_public_key_line(text: &str) -> bool {
    let mut fields = text.split_whitespace();
    let (Some(algorithm), Some(data)) = (fields.next(), fields.next()) else {
        return false;
    };
    let known_prefix = ["ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "rsa-sha2-"]
        .iter()
        .any(|prefix| algorithm.starts_with(prefix));
    known_prefix
        && data.starts_with("AAAA")
        && data
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='))
}

/// Trims the text and each line, joins the lines with LF and ends with one newline. The
/// result is never longer than the input plus one byte, so it is allocated once.
fn normalize(text: &str) -> Secret {
    let trimmed = text.trim();
    let mut out = Vec::with_capacity(trimmed.len() + 1);
    for line in trimmed.lines() {
        out.extend_from_slice(line.trim().as_bytes());
        out.push(b'\n');
    }
    Secret::new(out)
}

/// Parses an OpenSSH private key: with ssh-key alone, else (an ECDSA key whose private
/// scalar ssh-key cannot decode) through `ecdsa_workaround`.
pub(super) fn parse(text: &str) -> Result<PrivateKey, ImportError> {
    if let Ok(key) = PrivateKey::from_openssh(text) {
        return Ok(key);
    }
    ecdsa_workaround::parse(text).ok_or(ImportError::Unreadable)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::key::KeySpec;
    use crate::sshkey::error::{ImportError, CONVERT_HINT};
    use crate::sshkey::fixtures::{secret, DSA, ED25519_SECRET, RSA_2048};
    use crate::sshkey::generate::generate;
    use crate::sshkey::limits::MAX_PRIVATE_KEY_BYTES;
    use crate::sshkey::parse::{check_format, import, normalize, read};
    use crate::vault::Secret;

    #[test]
    fn private_key_text_of_64_kib_is_read_and_one_byte_more_is_too_long() {
        let padded = |len: usize| {
            let mut text = RSA_2048.to_owned();
            text.push_str(&"\n".repeat(len - text.len()));
            secret(&text)
        };
        let at_cap = read(&padded(MAX_PRIVATE_KEY_BYTES)).map(|key| key.is_encrypted());
        assert_eq!(at_cap.err(), None, "surrounding whitespace is trimmed");
        assert_eq!(
            read(&padded(MAX_PRIVATE_KEY_BYTES + 1)).err(),
            Some(ImportError::TooLong)
        );
    }

    #[test]
    fn pem_and_pkcs8_keys_are_refused_with_the_conversion_hint() {
        for (label, what) in [
            ("RSA PRIVATE KEY", "PKCS#1"),
            ("EC PRIVATE KEY", "SEC1"),
            ("PRIVATE KEY", "a PKCS#8"),
            ("ENCRYPTED PRIVATE KEY", "encrypted PKCS#8"),
        ] {
            let text =
                format!("-----BEGIN {label}-----\nMIIBOgIBAAJBAK==\n-----END {label}-----\n");
            let err = check_format(&text).unwrap_err();
            let details = err.to_string();
            assert!(matches!(err, ImportError::NeedsConversion(_)), "{label}");
            assert!(details.contains(what), "{details}");
            assert!(details.contains("ssh-keygen -p -f FILE"), "{details}");
            assert!(details.ends_with(CONVERT_HINT), "{details}");
            assert_eq!(import(&secret(&text), None).unwrap_err(), err, "{label}");
        }
        let openssh =
            "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
        assert_eq!(check_format(openssh), Ok(()));
    }

    #[test]
    fn openssh_dsa_key_is_refused_as_unsupported() {
        assert_eq!(
            import(&secret(DSA), None).unwrap_err(),
            ImportError::Unsupported("ssh-dss".into())
        );
    }

    #[test]
    fn pem_dsa_key_is_refused_as_unsupported() {
        let text =
            "-----BEGIN DSA PRIVATE KEY-----\nMIIBuwIBAAKBgQ==\n-----END DSA PRIVATE KEY-----\n";
        assert_eq!(
            import(&secret(text), None).unwrap_err(),
            ImportError::PemDsa
        );
    }

    #[test]
    fn public_keys_are_refused_as_public() {
        let key = generate(KeySpec::Ed25519, "me@box", None).unwrap();
        let line = format!("{} me@box\n", key.info.public_key);
        assert_eq!(
            import(&secret(&line), None).unwrap_err(),
            ImportError::PublicKey
        );
        let rfc4716 = "---- BEGIN SSH2 PUBLIC KEY ----\nAAAA\n---- END SSH2 PUBLIC KEY ----\n";
        assert_eq!(
            import(&secret(rfc4716), None).unwrap_err(),
            ImportError::PublicKey
        );
        let pem = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n";
        assert_eq!(
            import(&secret(pem), None).unwrap_err(),
            ImportError::PublicKey
        );
    }

    #[test]
    fn putty_key_is_refused_with_the_puttygen_hint() {
        let text = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n";
        let err = import(&secret(text), None).unwrap_err();
        assert_eq!(err, ImportError::Putty);
        assert!(err.to_string().contains("puttygen"));
    }

    #[test]
    fn garbage_is_unreadable() {
        for text in [
            "hello",
            "",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nnot base64!\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
        ] {
            assert_eq!(
                import(&secret(text), None).unwrap_err(),
                ImportError::Unreadable,
                "{text:?}"
            );
        }
        let not_utf8 = Secret::new(vec![0xff, 0xfe, 0x00]);
        assert_eq!(
            import(&not_utf8, None).unwrap_err(),
            ImportError::Unreadable
        );
    }

    #[test]
    fn truncated_key_is_unreadable() {
        let key = generate(KeySpec::Ed25519, "", None).unwrap();
        let text = key.text.expose_str().unwrap();
        let cut: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
        assert_eq!(
            import(&secret(&cut), None).unwrap_err(),
            ImportError::Unreadable
        );
    }

    #[test]
    fn crlf_and_missing_final_newline_are_normalized_to_lf_lines_and_one_final_newline() {
        let key = generate(KeySpec::Ed25519, "", None).unwrap();
        let text = key.text.expose_str().unwrap();
        let pasted = format!("  \r\n{}", text.trim_end().replace('\n', "\r\n"));
        let imported = import(&secret(&pasted), None).unwrap();
        assert_eq!(imported.text.expose(), key.text.expose());
        assert_eq!(imported.info, key.info);
    }

    #[test]
    fn normalize_never_grows_past_one_byte() {
        let text = " a \r\n b\n\n";
        let normalized = normalize(text);
        assert_eq!(normalized.expose(), b"a\nb\n");
        assert!(normalized.expose().len() <= text.trim().len() + 1);
    }

    #[test]
    fn messages_never_quote_the_key_or_the_passphrase() {
        let err = import(&secret(ED25519_SECRET), Some(&secret("wrong-marker"))).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("marker"), "{shown}");
        let body = ED25519_SECRET.lines().nth(1).unwrap();
        assert!(!shown.contains(body), "{shown}");
    }
}
