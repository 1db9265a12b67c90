//! Reads the OpenSSH ECDSA private keys that ssh-key 0.6.7 cannot decode: those whose
//! private scalar is written shorter than the curve's size.
//!
//! The upstream bug: ssh-key 0.6.7 decodes an ECDSA private scalar (`EcdsaPrivateKey::decode`
//! in its `src/private/ecdsa.rs`) by reading exactly the curve's size in bytes, after an
//! optional sign byte. OpenSSH writes the scalar as an mpint, which drops leading zero bytes,
//! so a scalar that starts with zero bits comes out shorter and ssh-key refuses the whole key
//! with "length invalid": about 1 in 4 P-521 keys from ssh-keygen, 1 in 512 P-256 ones.
//! Reported as <https://github.com/RustCrypto/SSH/issues/350>; fixed on ssh-key's 0.7 line
//! (<https://github.com/RustCrypto/SSH/pull/351> and `/pull/356`), only release candidates
//! when this was written, and that fix still refuses a scalar shorter than 32 bytes: the 1
//! in 512 P-256 keys.
//! Here such a key is read again with its scalar rewritten at full size. The same holds for
//! an ECDSA key that `ssh-add` sends to the agent, whose scalar is an mpint too.
//!
//! When to remove it: once the ssh-key in `Cargo.lock` reads the short-scalar keys of the
//! unit tests below by itself, `ssh_key_alone_still_refuses_short_scalars` fails. Then
//! delete this file and its three call sites (`parse::parse`'s fallback,
//! `encrypted::decrypt`'s ECDSA branch, and `from_agent`'s ECDSA section, which then only
//! needs the padding other key types get), and move the tests that import short-scalar keys
//! (and their keys) into `parse`'s tests.
//!
//! Invariants: only ECDSA keys get here: after ssh-key alone failed (`parse`), for every
//! encrypted ECDSA key (`decrypt`) and every ECDSA key from `ssh-add` (`full_size_scalar`);
//! every buffer that holds private key bytes is sized once and wiped on drop; nothing here
//! logs, and no error carries key material. ssh-key still decodes the rewritten key, so it
//! checks the curve and that the scalar matches the point.

use ssh_key::PrivateKey;
use zeroize::Zeroizing;

use crate::sshkey::error::ImportError;
use crate::sshkey::wire::{put_string, put_u32, unencrypted, Container, Reader};
use crate::vault::Secret;

/// Parses an unencrypted OpenSSH ECDSA private key whose scalar ssh-key cannot decode as
/// written; `None` when the text is not such a key.
pub fn parse(text: &str) -> Option<PrivateKey> {
    let binary = pem_body(text)?;
    let container = Container::parse(&binary)?;
    if container.cipher != b"none" {
        return None;
    }
    let section = full_size_scalar(container.private)?;
    PrivateKey::from_bytes(&unencrypted(container.public, &section)).ok()
}

/// Decrypts an encrypted ECDSA `key` by hand rather than with `PrivateKey::decrypt`, so the
/// decrypted section goes through the same scalar fix as `parse` before ssh-key decodes it.
/// A wrong passphrase is `WrongPassphrase` (the AEAD tag or the check integers say so).
pub fn decrypt(key: &PrivateKey, passphrase: &Secret) -> Result<PrivateKey, ImportError> {
    let binary = key.to_bytes().map_err(|_| ImportError::Unreadable)?;
    let container = Container::parse(&binary).ok_or(ImportError::Unreadable)?;
    let tag = match key.cipher().has_tag() {
        true => Some(<[u8; 16]>::try_from(container.rest).map_err(|_| ImportError::Unreadable)?),
        false => None,
    };
    let (cipher_key, iv) = key
        .kdf()
        .derive_key_and_iv(key.cipher(), passphrase.expose())
        .map_err(|_| ImportError::Unreadable)?;
    let mut plain = Zeroizing::new(container.private.to_vec());
    // An AEAD cipher (aes-gcm, chacha20-poly1305) refuses a wrong key by its tag; the
    // others leave garbage, which the two check integers catch.
    key.cipher()
        .decrypt(&cipher_key, &iv, &mut plain, tag)
        .map_err(|_| ImportError::WrongPassphrase)?;
    if plain.len() < 8 || plain[0..4] != plain[4..8] {
        return Err(ImportError::WrongPassphrase);
    }
    let section = full_size_scalar(&plain).ok_or(ImportError::Unreadable)?;
    PrivateKey::from_bytes(&unencrypted(container.public, &section))
        .map_err(|_| ImportError::Unreadable)
}

/// A plain ECDSA private section (check integers, one key, comment, padding) rewritten with
/// its scalar at the curve's full size, as ssh-key 0.6.7 decodes it, and padded for cipher
/// `none`. `None` when the section does not parse or holds another key type.
pub fn full_size_scalar(section: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let mut reader = Reader(section);
    let check = reader.take(8)?;
    let key_type = reader.string()?;
    let size = match key_type {
        b"ecdsa-sha2-nistp256" => 32,
        b"ecdsa-sha2-nistp384" => 48,
        b"ecdsa-sha2-nistp521" => 66,
        _ => return None,
    };
    let curve = reader.string()?;
    let point = reader.string()?;
    let scalar = reader.string()?;
    let comment = reader.string()?;
    let first_digit = scalar
        .iter()
        .position(|byte| *byte != 0)
        .unwrap_or(scalar.len());
    let digits = &scalar[first_digit..];
    if digits.len() > size {
        return None;
    }
    // Sized once: the scalar grows by at most `size + 1` bytes and the padding by 7.
    let mut out = Zeroizing::new(Vec::with_capacity(section.len() + size + 8));
    out.extend_from_slice(check);
    for field in [key_type, curve, point] {
        put_string(&mut out, field);
    }
    // A leading zero byte keeps a scalar whose top bit is set positive (mpint).
    let sign_byte = usize::from(digits.len() == size && digits[0] >= 0x80);
    put_u32(&mut out, size + sign_byte);
    let scalar_start = out.len() + sign_byte + size - digits.len();
    out.resize(scalar_start, 0);
    out.extend_from_slice(digits);
    put_string(&mut out, comment);
    // PROTOCOL.key: padding 1, 2, 3, ... to the cipher block size (8 for `none`).
    let mut pad = 1u8;
    while out.len() % 8 != 0 {
        out.push(pad);
        pad += 1;
    }
    Some(out)
}

/// The bytes of a PEM text's base64 body (between the BEGIN and END lines).
fn pem_body(text: &str) -> Option<Zeroizing<Vec<u8>>> {
    let mut lines = text.lines();
    lines.next()?;
    let mut out = Zeroizing::new(Vec::with_capacity(text.len() / 4 * 3 + 3));
    let mut quad = [0u8; 4];
    let mut filled = 0;
    let mut ended = false;
    for line in lines {
        if line.starts_with("-----END ") {
            ended = true;
            break;
        }
        for byte in line.bytes().filter(|byte| *byte != b'=') {
            quad[filled] = base64_value(byte)?;
            filled += 1;
            if filled == 4 {
                out.extend_from_slice(&[
                    quad[0] << 2 | quad[1] >> 4,
                    quad[1] << 4 | quad[2] >> 2,
                    quad[2] << 6 | quad[3],
                ]);
                filled = 0;
            }
        }
    }
    match filled {
        0 => {}
        2 => out.push(quad[0] << 2 | quad[1] >> 4),
        3 => out.extend_from_slice(&[quad[0] << 2 | quad[1] >> 4, quad[1] << 4 | quad[2] >> 2]),
        _ => return None,
    }
    quad.fill(0);
    ended.then_some(out)
}

fn base64_value(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::PrivateKey;

    use crate::sshkey::ecdsa_workaround::{full_size_scalar, pem_body};
    use crate::sshkey::error::ImportError;
    use crate::sshkey::parse::import;
    use crate::sshkey::wire::{put_string, Reader};
    use crate::vault::Secret;

    /// P-521 keys by ssh-keygen with a 65-byte scalar (`ssh-keygen -lf`:
    /// SHA256:smwkIABp3j2Cu1Io9sg8yC7KEMyM9T+oWYwuJ2EC+HE), unencrypted and encrypted
    /// with "secret" (aes256-ctr, bcrypt 16 rounds).
    const P521_SHORT: &str = concat!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAArAAAABNlY2RzYS\n",
        "1zaGEyLW5pc3RwNTIxAAAACG5pc3RwNTIxAAAAhQQA2s4mWclLtMmKXzlsel/ZWXvaZjo/\n",
        "uMKjRSzq/XucU6m1wdYDa+Qy117QM5kHtWUbgRprMJjBhWtWne0kEEqFW3QAsu1RWssVRQ\n",
        "GhZq4apyN66bkA7Q3pjYZ+lvTE+tcMo37G58Yi30b66LlO7fG8O2VzHLctzTXB9KujKwau\n",
        "HMzpzPwAAAEQl+CQ65fgkOsAAAATZWNkc2Etc2hhMi1uaXN0cDUyMQAAAAhuaXN0cDUyMQ\n",
        "AAAIUEANrOJlnJS7TJil85bHpf2Vl72mY6P7jCo0Us6v17nFOptcHWA2vkMtde0DOZB7Vl\n",
        "G4EaazCYwYVrVp3tJBBKhVt0ALLtUVrLFUUBoWauGqcjeum5AO0N6Y2Gfpb0xPrXDKN+xu\n",
        "fGIt9G+ui5Tu3xvDtlcxy3Lc01wfSroysGrhzM6cz8AAAAQTaUFUi39Uax6QgxRvZWwOfO\n",
        "+Kb8PsdSzwEdYLFoQeKr36Q9eOjkNI8nKtsE0GM7HdFYG27w82zGP1F+1Xl6vrOXAAAADm\n",
        "1hZGVAYnkta2V5Z2VuAQIDBAU=\n",
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    const P521_SHORT_ENCRYPTED: &str = concat!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABCDkrOP7u\n",
        "DBQEzS1ZSaH0epAAAAEAAAAAEAAACsAAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlz\n",
        "dHA1MjEAAACFBADaziZZyUu0yYpfOWx6X9lZe9pmOj+4wqNFLOr9e5xTqbXB1gNr5DLXXt\n",
        "AzmQe1ZRuBGmswmMGFa1ad7SQQSoVbdACy7VFayxVFAaFmrhqnI3rpuQDtDemNhn6W9MT6\n",
        "1wyjfsbnxiLfRvrouU7t8bw7ZXMcty3NNcH0q6MrBq4czOnM/AAAARAzmxiOHYrdec/TLd\n",
        "fHN1+ThwpokYC7fL/OmTkXAHXbtiQwvVIDxOTEafC6gkp+sL6MHqTtxpObitrCa8cLWhm/\n",
        "BOg+KoLO1dMcporY0xDnrltV6y3HPhX8MhEDidLY2b+4vFdWuhMt9m9AR8oLpJivyxWC47\n",
        "in9UmoqVY8FP1ubFvx3FAbr7u8LcWMyIpdJDZkF8p8pXR+SU1LD8eDs9uYT0U4UgH0B7G+\n",
        "z4sDOGM2gpBFirU+XOFg0tQftiJc81mUie9M/3SpAqTvUpMxyH8bUjvOCIZyJQi+fu41Cn\n",
        "eFu8Ai7LKx2N+36U27jFPox/hDNtXEOFkoMOZ8BfdhetBg/NaJDqXqdsIxGpPVlG3t4g==\n",
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    const P521_SHORT_PUBLIC: &str = "ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBADaziZZyUu0yYpfOWx6X9lZe9pmOj+4wqNFLOr9e5xTqbXB1gNr5DLXXtAzmQe1ZRuBGmswmMGFa1ad7SQQSoVbdACy7VFayxVFAaFmrhqnI3rpuQDtDemNhn6W9MT61wyjfsbnxiLfRvrouU7t8bw7ZXMcty3NNcH0q6MrBq4czOnM/A==";
    const P521_SHORT_FINGERPRINT: &str = "SHA256:smwkIABp3j2Cu1Io9sg8yC7KEMyM9T+oWYwuJ2EC+HE";

    /// P-256 keys by ssh-keygen with a 31-byte scalar (`ssh-keygen -lf`:
    /// SHA256:Fx0B6arJBGD5VZ2mQjpr2POIwX01mpdPUpJ3piRJapw), unencrypted and encrypted with
    /// "secret" (chacha20-poly1305, an AEAD cipher).
    const P256_SHORT: &str = concat!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS\n",
        "1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQSl4HmRlLRZJlU9FxXa/CZ/84T1QUH/\n",
        "iDkrHub/lKLJrdrKhDaIGq10vEyNnLoFdJI+LarnaY37ORpViPfrBeMIAAAAqI+4V06PuF\n",
        "dOAAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBKXgeZGUtFkmVT0X\n",
        "Fdr8Jn/zhPVBQf+IOSse5v+Uosmt2sqENogarXS8TI2cugV0kj4tqudpjfs5GlWI9+sF4w\n",
        "gAAAAfb2xGNbg1xdF/ztIPvgE3AoS9QAXmicnFl9HwP03pgAAAAA5tYWRlQGJ5LWtleWdl\n",
        "bgECAw==\n",
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    const P256_SHORT_ENCRYPTED: &str = concat!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAAHWNoYWNoYTIwLXBvbHkxMzA1QG9wZW5zc2guY29tAAAABm\n",
        "JjcnlwdAAAABgAAAAQTYR3k1mXxAw1s1NcXpcJigAAABAAAAABAAAAaAAAABNlY2RzYS1z\n",
        "aGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQSl4HmRlLRZJlU9FxXa/CZ/84T1QUH/iD\n",
        "krHub/lKLJrdrKhDaIGq10vEyNnLoFdJI+LarnaY37ORpViPfrBeMIAAAAqI6jQYDADZYI\n",
        "uDwLK8f6qPvEYnqLk+0RTLSsx20ShsWzLnGX6nkwRX5n64v8ZImnHhVFn/mfuaHg41B4RI\n",
        "hORjQ7dXr4uVOGnjQJBN7bYmB5H7b7MwtX/UgeyFJ4bP3exMSXshh+IH2KfS7DzkjaH7QH\n",
        "5z6Kg8K+oEO70L2zAgoiHOoqEYA442+95vV2e96vUIquM4FrBQ+CeXv7IeiGYk6YxmPcJo\n",
        "yOC595yEm9XqkduSHFpyy7b0I=\n",
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    const P256_SHORT_PUBLIC: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBKXgeZGUtFkmVT0XFdr8Jn/zhPVBQf+IOSse5v+Uosmt2sqENogarXS8TI2cugV0kj4tqudpjfs5GlWI9+sF4wg=";
    const P256_SHORT_FINGERPRINT: &str = "SHA256:Fx0B6arJBGD5VZ2mQjpr2POIwX01mpdPUpJ3piRJapw";

    fn secret(text: &str) -> Secret {
        Secret::from_string(text.to_owned())
    }

    #[test]
    fn ssh_key_alone_still_refuses_short_scalars() {
        for text in [P521_SHORT, P256_SHORT] {
            assert!(
                PrivateKey::from_openssh(text).is_err(),
                "ssh-key reads a short scalar by itself now: remove this workaround (see the \
                 module doc)"
            );
        }
        let encrypted = PrivateKey::from_openssh(P521_SHORT_ENCRYPTED).unwrap();
        assert!(encrypted.decrypt("secret").is_err(), "nor once decrypted");
    }

    #[test]
    fn short_scalar_keys_import_with_ssh_keygens_public_key_and_fingerprint() {
        for (text, public, fingerprint) in [
            (P521_SHORT, P521_SHORT_PUBLIC, P521_SHORT_FINGERPRINT),
            (P256_SHORT, P256_SHORT_PUBLIC, P256_SHORT_FINGERPRINT),
        ] {
            let key = import(&secret(text), None).unwrap();
            assert_eq!(key.info.public_key, public);
            assert_eq!(key.info.fingerprint, fingerprint);
            assert_eq!(key.info.comment, "made@by-keygen");
            assert!(!key.encrypted);
            assert_eq!(key.text.expose(), text.as_bytes(), "stored as given");
        }
    }

    #[test]
    fn encrypted_short_scalar_keys_open_with_their_passphrase_only() {
        for (text, fingerprint) in [
            (P521_SHORT_ENCRYPTED, P521_SHORT_FINGERPRINT),
            (P256_SHORT_ENCRYPTED, P256_SHORT_FINGERPRINT),
        ] {
            let key = import(&secret(text), Some(&secret("secret"))).unwrap();
            assert_eq!(key.info.fingerprint, fingerprint);
            assert_eq!(
                key.info.comment, "made@by-keygen",
                "read from the decrypted part"
            );
            assert!(key.encrypted);
            assert_eq!(
                import(&secret(text), Some(&secret("Secret"))).unwrap_err(),
                ImportError::WrongPassphrase
            );
        }
    }

    #[test]
    fn a_short_scalar_section_of_another_key_type_is_left_alone() {
        let mut section = vec![1, 2, 3, 4, 1, 2, 3, 4];
        for field in [&b"ssh-ed25519"[..], &[7; 32], &[9; 64], b"c"] {
            put_string(&mut section, field);
        }
        assert!(full_size_scalar(&section).is_none());
    }

    #[test]
    fn short_scalar_is_written_at_full_size_with_a_sign_byte_when_needed() {
        let section = |scalar: &[u8]| {
            let mut out = vec![1, 2, 3, 4, 1, 2, 3, 4];
            for field in [
                &b"ecdsa-sha2-nistp256"[..],
                b"nistp256",
                b"\x04point",
                scalar,
                b"c",
            ] {
                put_string(&mut out, field);
            }
            out.extend_from_slice(&[1, 2, 3]);
            out
        };
        let fixed = full_size_scalar(&section(&[0x12; 31])).unwrap();
        let mut expected = vec![0];
        expected.extend_from_slice(&[0x12; 31]);
        let mut reader = Reader(&fixed[8..]);
        for _ in 0..3 {
            reader.string().unwrap();
        }
        assert_eq!(reader.string().unwrap(), &expected[..]);
        assert_eq!(reader.string().unwrap(), b"c");
        assert_eq!(fixed.len() % 8, 0, "padded to the block size");

        let fixed = full_size_scalar(&section(&[0x80; 32])).unwrap();
        let mut reader = Reader(&fixed[8..]);
        for _ in 0..3 {
            reader.string().unwrap();
        }
        assert_eq!(reader.string().unwrap().len(), 33, "sign byte kept");

        assert!(
            full_size_scalar(&section(&[0x12; 33])).is_none(),
            "too long"
        );
    }

    #[test]
    fn pem_body_decodes_base64_with_and_without_padding() {
        let pem = |body: &str| format!("-----BEGIN X-----\n{body}\n-----END X-----\n");
        assert_eq!(&pem_body(&pem("TWFu")).unwrap()[..], b"Man");
        assert_eq!(&pem_body(&pem("TWE=")).unwrap()[..], b"Ma");
        assert_eq!(&pem_body(&pem("TQ==")).unwrap()[..], b"M");
        assert_eq!(&pem_body(&pem("TW\nFu")).unwrap()[..], b"Man");
        assert!(pem_body(&pem("T")).is_none());
        assert!(pem_body(&pem("TW!u")).is_none());
        assert!(
            pem_body("-----BEGIN X-----\nTWFu\n").is_none(),
            "no END line"
        );
    }
}
