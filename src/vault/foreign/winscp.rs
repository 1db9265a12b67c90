//! WinSCP's saved-password scrambling (docs/import-formats.md, "WinSCP"): not encryption,
//! an obfuscation any reader of the file can undo. Each byte is written as two upper-case
//! hex digits of `!(byte ^ 0xA3)`. The bytes are: a flag `0xFF`, a version (`0x00`: one
//! length byte follows; `0x02`: two, high first; `0x01` marks a password kept by a master
//! password, not opened here), a shift `n` and `n` junk bytes, then `length` bytes: the key
//! (user name + host name, UTF-8) followed by the password, then padding. A value without
//! the flag is the oldest form: its first byte is the length and no key precedes the
//! password.
//!
//! Invariants: `None` on any failure (a non-hex digit, a value shorter than it says, a key
//! that does not match, text that is not UTF-8), never a panic; every buffer holding
//! password bytes is wiped on drop.

use zeroize::Zeroizing;

use crate::vault::Secret;

const MAGIC: u8 = 0xA3;
const FLAG: u8 = 0xFF;
const VERSION_ONE_BYTE_LENGTH: u8 = 0x00;
const VERSION_TWO_BYTE_LENGTH: u8 = 0x02;

/// Reads the scrambled bytes one at a time.
struct Scrambled<'a> {
    hex: &'a [u8],
}

impl Scrambled<'_> {
    /// The next byte, `None` past the end or on a digit that is not hex.
    fn next(&mut self) -> Option<u8> {
        let (pair, rest) = self.hex.split_first_chunk::<2>()?;
        self.hex = rest;
        let high = digit(pair[0])?;
        let low = digit(pair[1])?;
        Some(!((high << 4 | low) ^ MAGIC))
    }

    /// Skips `count` bytes.
    fn skip(&mut self, count: usize) -> Option<()> {
        self.hex = self.hex.get(count * 2..)?;
        Some(())
    }
}

/// A hex digit's value. WinSCP writes upper case; lower case is read too.
fn digit(ch: u8) -> Option<u8> {
    (ch as char)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

/// The password WinSCP scrambled into `hex` with `key` (user name + host name).
pub fn reveal(hex: &str, key: &str) -> Option<Secret> {
    let mut input = Scrambled {
        hex: hex.trim().as_bytes(),
    };
    let flag = input.next()?;
    let length = if flag == FLAG {
        match input.next()? {
            VERSION_ONE_BYTE_LENGTH => usize::from(input.next()?),
            VERSION_TWO_BYTE_LENGTH => {
                let high = usize::from(input.next()?);
                high << 8 | usize::from(input.next()?)
            }
            _ => return None,
        }
    } else {
        usize::from(flag)
    };
    let shift = usize::from(input.next()?);
    input.skip(shift)?;
    let mut plain = Zeroizing::new(Vec::with_capacity(length));
    for _ in 0..length {
        plain.push(input.next()?);
    }
    let password = if flag == FLAG {
        plain.strip_prefix(key.as_bytes())?
    } else {
        &plain[..]
    };
    std::str::from_utf8(password).ok()?;
    Some(Secret::new(password.to_vec()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Vectors written by `tests/samples/import/winscp/make.py`, an independent
    /// implementation of WinSCP's `EncryptPassword` (random shift and padding).
    const VECTORS: &str = include_str!("../../../tests/samples/import/winscp/vectors.txt");

    fn vectors() -> Vec<(String, String, String, String)> {
        VECTORS
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let parts: Vec<&str> = line.split('\t').collect();
                (
                    parts[0].to_string(),
                    parts[1].to_string(),
                    parts[2].to_string(),
                    parts[3].to_string(),
                )
            })
            .collect()
    }

    fn opened(hex: &str, key: &str) -> Option<String> {
        reveal(hex, key).map(|secret| secret.expose_str().unwrap().to_string())
    }

    #[test]
    fn winscp_opens_the_independent_vectors_with_their_key() {
        let vectors = vectors();
        assert!(vectors.len() >= 6);
        for (what, key, password, hex) in &vectors {
            assert_eq!(
                opened(hex, key).as_deref(),
                Some(password.as_str()),
                "{what}"
            );
        }
    }

    #[test]
    fn winscp_refuses_a_key_that_does_not_match() {
        for (what, key, _, hex) in vectors() {
            if key.is_empty() {
                continue;
            }
            assert_eq!(opened(&hex, &format!("x{key}")), None, "{what}");
        }
    }

    #[test]
    fn winscp_reads_lower_case_hex_and_refuses_non_hex_digits() {
        let (_, key, password, hex) = vectors().remove(0);
        assert_eq!(opened(&hex.to_lowercase(), &key), Some(password));
        let broken = format!("{}G{}", &hex[..3], &hex[4..]);
        assert_eq!(opened(&broken, &key), None, "in the length byte");
    }

    #[test]
    fn winscp_refuses_a_value_shorter_than_its_length_says() {
        let (_, key, password, hex) = vectors().remove(0);
        // Flag, version, length, shift: 8 digits; the shift's junk, then key + password.
        let shift = usize::from(
            Scrambled {
                hex: &hex.as_bytes()[6..8],
            }
            .next()
            .unwrap(),
        );
        let end = 8 + 2 * (shift + key.len() + password.len());
        assert_eq!(
            opened(&hex[..end], &key),
            Some(password),
            "exactly long enough"
        );
        assert_eq!(opened(&hex[..end - 2], &key), None, "one byte short");
        assert_eq!(opened("", &key), None);
        assert_eq!(opened("A", &key), None);
    }

    #[test]
    fn winscp_refuses_the_master_password_form() {
        // Flag 0xFF then version 0x01: `!(0xFF ^ 0xA3)` = 0xA3, `!(0x01 ^ 0xA3)` = 0x5D.
        assert_eq!(opened("A35D0123456789", "k"), None);
    }

    /// Fuzz: the descrambler never panics on any text (mutated vectors and random hex).
    #[test]
    fn winscp_reveal_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("winscp password", 0x5C0_A3A3);
        let mut rng = crate::fuzz::Rng::new(seed);
        let vectors = vectors();
        let digits = b"0123456789ABCDEFabcdefXG %";
        for iteration in 0..iterations {
            let (_, key, _, hex) = rng.pick(&vectors);
            let mut text = hex.as_bytes().to_vec();
            for _ in 0..rng.below(4) {
                match rng.below(3) {
                    0 if !text.is_empty() => {
                        let at = rng.below(text.len());
                        text[at] = *rng.pick(digits);
                    }
                    1 => text.truncate(rng.below(text.len() + 1)),
                    _ => text.insert(rng.below(text.len() + 1), *rng.pick(digits)),
                }
            }
            let text = String::from_utf8_lossy(&text).into_owned();
            let outcome = std::panic::catch_unwind(|| reveal(&text, key).map(|s| s.is_empty()));
            assert!(outcome.is_ok(), "panic on input #{iteration}");
        }
    }
}
