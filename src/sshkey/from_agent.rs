//! Keys `ssh-add` sends to the agent, turned into OpenSSH private keys stored like imported
//! ones, after a signing self-check.

use rsa::signature::Verifier;
use ssh_key::{LineEnding, PrivateKey};
use zeroize::Zeroizing;

use crate::sshkey::ecdsa_workaround::full_size_scalar;
use crate::sshkey::error::ImportError;
use crate::sshkey::limits::MAX_RSA_BITS;
use crate::sshkey::openssh_key::OpenSshKey;
use crate::sshkey::parse::import;
use crate::sshkey::sign::{sign, RsaHash};
use crate::sshkey::wire::{put_string, unencrypted, Reader};
use crate::vault::Secret;

/// A key `ssh-add` sent, in the agent's encoding (`string key type` and the key's private
/// fields, draft-miller-ssh-agent §4.2), as an OpenSSH private key ready to be stored like
/// an imported one (`import` checks it), with `comment`. The key must sign data that its
/// own public half verifies, so a private half that does not belong to the public one is
/// refused.
pub fn from_agent(key: &[u8], comment: &[u8]) -> Result<OpenSshKey, ImportError> {
    let mut reader = Reader(key);
    let key_type = reader.string().ok_or(ImportError::Unreadable)?;
    let public = agent_public_blob(key_type, &mut Reader(reader.0))?;
    // PROTOCOL.key's private section: two equal check integers, the key as the agent
    // encodes it, the comment, then padding to the block size of cipher `none`.
    let mut section = Zeroizing::new(Vec::with_capacity(key.len() + comment.len() + 20));
    section.extend_from_slice(&[0; 8]);
    section.extend_from_slice(key);
    put_string(&mut section, comment);
    let section = match key_type.starts_with(b"ecdsa-sha2-") {
        true => full_size_scalar(&section).ok_or(ImportError::Unreadable)?,
        false => {
            let mut pad = 1u8;
            while section.len() % 8 != 0 {
                section.push(pad);
                pad += 1;
            }
            section
        }
    };
    let parsed = PrivateKey::from_bytes(&unencrypted(&public, &section))
        .map_err(|_| ImportError::Unreadable)?;
    let text = parsed
        .to_openssh(LineEnding::LF)
        .map_err(|_| ImportError::Unreadable)?;
    let imported = import(&Secret::new(text.as_bytes().to_vec()), None)?;
    // A self-check: the same path the agent signs with, verified by the public half.
    const PROBE: &[u8] = b"host-manager: does this private key belong to its public key?";
    let signature = sign(&imported.text, None, PROBE, Some(RsaHash::Sha256))
        .map_err(|_| ImportError::Unreadable)?;
    let verified = ssh_key::Signature::try_from(signature.as_slice())
        .ok()
        .is_some_and(|signature| Verifier::verify(parsed.public_key(), PROBE, &signature).is_ok());
    match verified {
        true => Ok(imported),
        false => Err(ImportError::Unreadable),
    }
}

/// The public key blob of a key in the agent's encoding, from its fields (`fields` reads
/// what follows the key type). RSA's public blob orders e before n; the agent's private
/// encoding has n first.
fn agent_public_blob(key_type: &[u8], fields: &mut Reader<'_>) -> Result<Vec<u8>, ImportError> {
    let mut blob = Vec::new();
    put_string(&mut blob, key_type);
    let mut field = || fields.string().ok_or(ImportError::Unreadable);
    match key_type {
        b"ssh-ed25519" => put_string(&mut blob, field()?),
        b"ecdsa-sha2-nistp256" | b"ecdsa-sha2-nistp384" | b"ecdsa-sha2-nistp521" => {
            let curve = field()?;
            let point = field()?;
            put_string(&mut blob, curve);
            put_string(&mut blob, point);
        }
        b"ssh-rsa" => {
            let n = field()?;
            let e = field()?;
            let digits = n.iter().skip_while(|byte| **byte == 0).count();
            if digits * 8 > MAX_RSA_BITS {
                return Err(ImportError::Unsupported(format!(
                    "ssh-rsa of more than {MAX_RSA_BITS} bits"
                )));
            }
            put_string(&mut blob, e);
            put_string(&mut blob, n);
        }
        other => {
            return Err(ImportError::Unsupported(
                String::from_utf8_lossy(other).into_owned(),
            ))
        }
    }
    Ok(blob)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::PrivateKey;

    use crate::model::key::{Curve, KeySpec};
    use crate::sshkey::error::ImportError;
    use crate::sshkey::from_agent::from_agent;
    use crate::sshkey::generate::generate;
    use crate::sshkey::limits::MAX_RSA_BITS;
    use crate::sshkey::parse::import;
    use crate::sshkey::wire::{put_string, Reader};

    /// The agent's add encoding of `key` (draft-miller-ssh-agent §4.2), as `ssh-add`
    /// sends it: key type, then the private fields, mpints without leading zero bytes.
    fn agent_encoding(key: &PrivateKey) -> Vec<u8> {
        fn mpint(out: &mut Vec<u8>, bytes: &[u8]) {
            let digits: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
            let mut field = Vec::new();
            if digits.first().is_some_and(|b| *b >= 0x80) {
                field.push(0);
            }
            field.extend_from_slice(&digits);
            put_string(out, &field);
        }
        let mut out = Vec::new();
        put_string(&mut out, key.algorithm().as_str().as_bytes());
        let data = key.key_data();
        if let Some(ed) = data.ed25519() {
            put_string(&mut out, ed.public.as_ref());
            let mut both = ed.private.as_ref().to_vec();
            both.extend_from_slice(ed.public.as_ref());
            put_string(&mut out, &both);
        } else if let Some(ec) = data.ecdsa() {
            put_string(&mut out, ec.curve().as_str().as_bytes());
            put_string(&mut out, ec.public_key_bytes());
            mpint(&mut out, ec.private_key_bytes());
        } else if let Some(rsa) = data.rsa() {
            for number in [
                &rsa.public.n,
                &rsa.public.e,
                &rsa.private.d,
                &rsa.private.iqmp,
                &rsa.private.p,
                &rsa.private.q,
            ] {
                put_string(&mut out, number.as_bytes());
            }
        }
        out
    }

    #[test]
    fn keys_of_every_type_from_ssh_add_become_openssh_keys_with_the_same_fingerprint() {
        for spec in [
            KeySpec::Ed25519,
            KeySpec::Ecdsa(Curve::P256),
            KeySpec::Ecdsa(Curve::P384),
            KeySpec::Ecdsa(Curve::P521),
            KeySpec::Rsa(2048),
        ] {
            let made = generate(spec, "", None).unwrap();
            let parsed = PrivateKey::from_openssh(made.text.expose_str().unwrap()).unwrap();
            let added = from_agent(&agent_encoding(&parsed), b"me@laptop").unwrap();
            assert_eq!(added.info.fingerprint, made.info.fingerprint, "{spec:?}");
            assert_eq!(added.info.comment, "me@laptop");
            assert!(!added.encrypted);
            assert_eq!(added.info.public_key, made.info.public_key, "{spec:?}");
            assert_eq!(
                import(&added.text, None).unwrap().info,
                added.info,
                "{spec:?}"
            );
        }
    }

    #[test]
    fn p521_key_from_ssh_add_with_a_short_scalar_is_taken() {
        for _ in 0..64 {
            let made = generate(KeySpec::Ecdsa(Curve::P521), "", None).unwrap();
            let parsed = PrivateKey::from_openssh(made.text.expose_str().unwrap()).unwrap();
            if parsed.key_data().ecdsa().unwrap().private_key_bytes()[0] != 0 {
                continue;
            }
            let added = from_agent(&agent_encoding(&parsed), b"").unwrap();
            assert_eq!(added.info.fingerprint, made.info.fingerprint);
            return;
        }
        panic!("64 P-521 keys in a row had a first scalar byte other than 0 (odds 2^-64)");
    }

    #[test]
    fn key_from_ssh_add_whose_private_half_is_not_its_public_halfs_is_refused() {
        let made = generate(KeySpec::Ecdsa(Curve::P256), "", None).unwrap();
        let other = generate(KeySpec::Ecdsa(Curve::P256), "", None).unwrap();
        let mine = PrivateKey::from_openssh(made.text.expose_str().unwrap()).unwrap();
        let theirs = PrivateKey::from_openssh(other.text.expose_str().unwrap()).unwrap();
        // My public point with their scalar.
        let mut reader = Reader(Box::leak(agent_encoding(&mine).into_boxed_slice()));
        let mut mixed = Vec::new();
        for _ in 0..3 {
            put_string(&mut mixed, reader.string().unwrap());
        }
        let mut their_fields = Reader(Box::leak(agent_encoding(&theirs).into_boxed_slice()));
        for _ in 0..3 {
            their_fields.string().unwrap();
        }
        put_string(&mut mixed, their_fields.string().unwrap());
        assert_eq!(from_agent(&mixed, b"").err(), Some(ImportError::Unreadable));
    }

    #[test]
    fn key_from_ssh_add_of_another_type_or_cut_short_is_refused() {
        let mut dsa = Vec::new();
        put_string(&mut dsa, b"ssh-dss");
        put_string(&mut dsa, &[1; 20]);
        assert!(matches!(
            from_agent(&dsa, b""),
            Err(ImportError::Unsupported(_))
        ));
        let made = generate(KeySpec::Ed25519, "", None).unwrap();
        let parsed = PrivateKey::from_openssh(made.text.expose_str().unwrap()).unwrap();
        let encoding = agent_encoding(&parsed);
        assert_eq!(
            from_agent(&encoding[..encoding.len() - 1], b"").err(),
            Some(ImportError::Unreadable)
        );
    }

    #[test]
    fn rsa_key_from_ssh_add_over_16384_bits_is_refused_before_any_arithmetic() {
        let mut huge = Vec::new();
        put_string(&mut huge, b"ssh-rsa");
        let mut n = vec![0u8];
        n.extend(std::iter::repeat_n(0xff, MAX_RSA_BITS / 8 + 1));
        put_string(&mut huge, &n);
        put_string(&mut huge, &[1, 0, 1]);
        assert!(matches!(
            from_agent(&huge, b""),
            Err(ImportError::Unsupported(_))
        ));
    }
}
