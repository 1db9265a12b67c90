//! Secret values: wiped on drop, redacted in `Debug`, impossible to serialize; and the wipe
//! of the stack that crypto calls leave behind.
//!
//! Invariants: no `Clone`, `Serialize`, `Display` or `PartialEq`; reading the value takes
//! `expose()`, so every use can be found with grep.

use std::fmt;

use zeroize::{Zeroize, Zeroizing};

use crate::vault::random::random_bytes;

/// Secret bytes: a password, a private key, a passphrase, a data key in transit.
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Takes ownership of `bytes`; they are wiped when the secret drops.
    pub fn new(bytes: Vec<u8>) -> Secret {
        Secret(Zeroizing::new(bytes))
    }

    /// Takes ownership of a string's bytes without copying them.
    pub fn from_string(text: String) -> Secret {
        Secret::new(text.into_bytes())
    }

    /// The secret bytes. Every call site is a place a secret leaves the vault's types.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as text, when it is UTF-8.
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// A random token of `bytes` bytes from the OS, as lowercase hex text.
    pub fn random_hex(bytes: usize) -> Secret {
        let mut raw = Zeroizing::new(vec![0u8; bytes]);
        random_bytes(&mut raw);
        let mut text = Vec::with_capacity(bytes * 2);
        for byte in raw.iter() {
            text.push(HEX[usize::from(byte >> 4)]);
            text.push(HEX[usize::from(byte & 0x0f)]);
        }
        Secret::new(text)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The string a JSON string literal (`raw`, quotes included, as it stands in a request
    /// body) stands for, decoded straight into a buffer sized once; `None` when `raw` is not
    /// a JSON string. A JSON parser decodes escapes into a scratch buffer that grows, then
    /// frees it unwiped; a secret taken this way from the raw text never passes through one.
    pub fn from_json_string(raw: &str) -> Option<Secret> {
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        // Every escape is longer than what it stands for, so this never grows.
        let mut out = Zeroizing::new(Vec::with_capacity(inner.len()));
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            let decoded = match c {
                '\\' => unescape(&mut chars)?,
                '"' | '\u{0}'..='\u{1f}' => return None,
                c => c,
            };
            let mut utf8 = [0u8; 4];
            out.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
            utf8.zeroize();
        }
        Some(Secret(out))
    }
}

/// The character of the escape after a `\` (RFC 8259 §7), taking a `\uXXXX` surrogate
/// pair whole; `None` for anything else.
fn unescape(chars: &mut std::str::Chars<'_>) -> Option<char> {
    match chars.next()? {
        '"' => Some('"'),
        '\\' => Some('\\'),
        '/' => Some('/'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'u' => {
            let first = hex4(chars)?;
            match first {
                0xd800..=0xdbff => {
                    let (Some('\\'), Some('u')) = (chars.next(), chars.next()) else {
                        return None;
                    };
                    let second = hex4(chars)?;
                    if !(0xdc00..=0xdfff).contains(&second) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00))
                }
                // char::from_u32 refuses a lone low surrogate.
                _ => char::from_u32(first),
            }
        }
        _ => None,
    }
}

/// Four hex digits of a `\u` escape.
fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    (0..4).try_fold(0u32, |value, _| {
        Some(value * 16 + chars.next()?.to_digit(16)?)
    })
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes of stack `wipe_stack` overwrites: several times what the deepest crypto call here
/// uses (PBKDF2-HMAC-SHA256, an AES-256-GCM key schedule and GHASH: a few KiB).
const STACK_WIPE_BYTES: usize = 32 * 1024;

/// Overwrites with zeros the stack just below the caller's frame. Crypto crates build key
/// schedules and HMAC states by value and move them between frames; a move leaves the old
/// bytes behind, where no `Drop` reaches them (docs/security.md, "The vault's threat model"). Called
/// right after such a call returned, this function's frame lies where that call's frames
/// were. Costs a few microseconds.
#[inline(never)]
pub fn wipe_stack() {
    let mut scratch = [0u8; STACK_WIPE_BYTES];
    // Volatile writes: the compiler may not drop them as dead stores.
    scratch.zeroize();
    std::hint::black_box(&scratch);
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::vault::secret::Secret;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::from_string("hunter2-marker".into());
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(secret.expose(), b"hunter2-marker");
    }

    #[test]
    fn random_hex_tokens_are_hex_of_twice_the_length_and_differ() {
        let one = Secret::random_hex(32);
        let two = Secret::random_hex(32);
        assert_eq!(one.expose().len(), 64);
        assert!(one.expose().iter().all(u8::is_ascii_hexdigit));
        assert_ne!(one.expose(), two.expose());
    }

    fn decoded(raw: &str) -> Option<String> {
        Secret::from_json_string(raw).map(|secret| secret.expose_str().unwrap().to_owned())
    }

    #[test]
    fn json_string_without_escapes_is_taken_as_it_is() {
        assert_eq!(
            decoded(r#""correct horse""#).as_deref(),
            Some("correct horse")
        );
        assert_eq!(decoded(r#""""#).as_deref(), Some(""));
        assert_eq!(
            decoded("\"caf\u{e9} \u{1f600}\"").as_deref(),
            Some("caf\u{e9} \u{1f600}")
        );
    }

    #[test]
    fn json_string_escapes_decode_as_json_defines_them() {
        assert_eq!(
            decoded(r#""a\"b\\c\/d\be\ff\ng\rh\ti""#).as_deref(),
            Some("a\"b\\c/d\u{8}e\u{c}f\ng\rh\ti")
        );
        assert_eq!(
            decoded(r#""\u00e9\u20AC""#).as_deref(),
            Some("\u{e9}\u{20ac}")
        );
        assert_eq!(decoded(r#""\ud83d\ude00""#).as_deref(), Some("\u{1f600}"));
        // Each case serde_json agrees with.
        for raw in [
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u00e9\u20AC\ud83d\ude00""#,
        ] {
            let expected: String = serde_json::from_str(raw).unwrap();
            assert_eq!(decoded(raw), Some(expected), "{raw}");
        }
    }

    #[test]
    fn json_string_decodes_into_a_buffer_that_never_grew() {
        let raw = r#""\u00e9\n\ud83d\ude00 plain tail""#;
        let secret = Secret::from_json_string(raw).unwrap();
        assert_eq!(
            secret.0.capacity(),
            raw.len() - 2,
            "sized once, from the raw text"
        );
    }

    #[test]
    fn json_values_that_are_not_strings_or_are_malformed_give_none() {
        for raw in [
            "null",
            "7",
            "true",
            "[\"a\"]",
            "{}",
            "\"unterminated",
            "\"a\"b\"",
            r#""\x""#,
            r#""\u12""#,
            r#""\u12zz""#,
            r#""\ud83d""#,
            r#""\ud83dx""#,
            r#""\ud83d\u0041""#,
            r#""\ude00""#,
            "\"tab\there\"",
        ] {
            assert!(Secret::from_json_string(raw).is_none(), "{raw:?}");
        }
    }
}
