//! One-time codes of RFC 6238 (TOTP): the secret as people paste it (RFC 4648 base32 or an
//! `otpauth://totp/` URI), the code settings (digits, period, algorithm) and the code at a
//! given time (docs/identities-rules.md).
//!
//! Invariants: no I/O and no clock (the caller passes the time); the secret's bytes live only
//! in `Zeroizing` buffers allocated once at their final size (a growing `Vec` would leave
//! copies behind), and nothing here prints them: `TotpSecret`'s `Debug` is masked and every
//! `Invalid` names the field and the rule, never the pasted text.

// The lead's identities handlers call this module; until they are merged only tests do.

use std::fmt;

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use zeroize::{Zeroize, Zeroizing};

use crate::model::validate::Invalid;

/// The fields `Invalid` names (docs/identities-rules.md).
pub const SECRET_FIELD: &str = "totp.secret";
pub const DIGITS_FIELD: &str = "totp.digits";
pub const PERIOD_FIELD: &str = "totp.period";
pub const ALGORITHM_FIELD: &str = "totp.algorithm";

/// RFC 6238 codes have 6 to 8 digits (RFC 4226 section 5.3 asks for at least 6; 8 is the
/// most a 31-bit truncated value gives room for in every app).
pub const MIN_DIGITS: u8 = 6;
pub const MAX_DIGITS: u8 = 8;
/// The period (time step) in seconds: 30 in practice; an hour at most, so a code is never
/// valid for longer than that.
pub const MIN_PERIOD_S: u32 = 1;
pub const MAX_PERIOD_S: u32 = 3600;
/// A decoded secret holds 1 to 128 bytes (RFC 4226 asks for 16 or more, real services use
/// 10 to 64; 128 leaves room and bounds the work).
pub const MAX_SECRET_BYTES: usize = 128;
/// The pasted text (base32 or URI) holds at most this many bytes, before any decoding.
pub const MAX_SECRET_TEXT_BYTES: usize = 2048;

const DIGITS_RULE: &str = "must be 6, 7 or 8";
const PERIOD_RULE: &str = "must be an integer from 1 to 3600 (seconds)";
const ALGORITHM_RULE: &str = "must be SHA1, SHA256 or SHA512";

/// The HMAC of the code (RFC 6238 section 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    /// "SHA1", "SHA256" or "SHA512", in any case.
    pub fn parse(text: &str) -> Result<Algorithm, Invalid> {
        match text.to_ascii_uppercase().as_str() {
            "SHA1" => Ok(Algorithm::Sha1),
            "SHA256" => Ok(Algorithm::Sha256),
            "SHA512" => Ok(Algorithm::Sha512),
            _ => Err(Invalid::new(ALGORITHM_FIELD, ALGORITHM_RULE)),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha512 => "SHA512",
        }
    }
}

/// How codes are made: always within the bounds above (the fields are private so a code can
/// never be asked for 20 digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TotpSettings {
    digits: u8,
    period: u32,
    algorithm: Algorithm,
}

impl Default for TotpSettings {
    /// What nearly every service uses, and what an `otpauth` URI means when it says nothing:
    /// 6 digits, 30 seconds, SHA1.
    fn default() -> TotpSettings {
        TotpSettings {
            digits: 6,
            period: 30,
            algorithm: Algorithm::Sha1,
        }
    }
}

impl TotpSettings {
    /// Checked settings: `digits` 6-8, `period` 1-3600 seconds.
    pub fn new(digits: u64, period: u64, algorithm: Algorithm) -> Result<TotpSettings, Invalid> {
        Ok(TotpSettings {
            digits: digits_number(digits)?,
            period: period_number(period)?,
            algorithm,
        })
    }

    pub fn digits(&self) -> u8 {
        self.digits
    }

    pub fn period(&self) -> u32 {
        self.period
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

/// `digits` as a body gives it: 6, 7 or 8.
pub fn digits_number(number: u64) -> Result<u8, Invalid> {
    match u8::try_from(number) {
        Ok(digits) if (MIN_DIGITS..=MAX_DIGITS).contains(&digits) => Ok(digits),
        _ => Err(Invalid::new(DIGITS_FIELD, DIGITS_RULE)),
    }
}

/// `period` as a body gives it: 1 to 3600 seconds.
pub fn period_number(number: u64) -> Result<u32, Invalid> {
    match u32::try_from(number) {
        Ok(period) if (MIN_PERIOD_S..=MAX_PERIOD_S).contains(&period) => Ok(period),
        _ => Err(Invalid::new(PERIOD_FIELD, PERIOD_RULE)),
    }
}

/// A decoded TOTP secret. No `Clone`, no `Serialize`, a masked `Debug`, wiped on drop; the
/// bytes come out only through `expose_bytes`.
pub struct TotpSecret(Zeroizing<Vec<u8>>);

impl TotpSecret {
    /// The raw key bytes, for `code` and for sealing in the vault.
    pub fn expose_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The secret as unpadded upper-case base32 (what authenticator apps and `otpauth`
    /// URIs take); the tests' way back to the text.
    #[cfg(test)]
    pub fn to_base32(&self) -> Zeroizing<String> {
        encode_base32(&self.0)
    }
}

impl fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TotpSecret(<hidden>)")
    }
}

/// What an `otpauth://totp/` URI said besides its secret, each `None` when it said nothing.
/// The caller takes these when the body gives no value, and answers 400 when the body gives
/// a different one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UriSettings {
    pub digits: Option<u8>,
    pub period: Option<u32>,
    pub algorithm: Option<Algorithm>,
    pub issuer: Option<String>,
    /// The path's label ("Issuer:account" by convention), percent-decoded.
    pub label: Option<String>,
}

/// Reads a pasted secret: RFC 4648 base32 (any case; spaces and '-' ignored; '=' padding
/// optional) or an `otpauth://totp/<label>?secret=...` URI, whose other settings come back
/// too. An `otpauth://hotp/` URI is refused: the service makes time-based codes only.
pub fn parse_secret(text: &str) -> Result<(TotpSecret, Option<UriSettings>), Invalid> {
    if text.len() > MAX_SECRET_TEXT_BYTES {
        return Err(Invalid::new(
            SECRET_FIELD,
            format!("must be at most {MAX_SECRET_TEXT_BYTES} bytes of base32 or otpauth URI"),
        ));
    }
    let text = text.trim();
    match text.get(..OTPAUTH.len()) {
        Some(scheme) if scheme.eq_ignore_ascii_case(OTPAUTH) => {
            let (secret, settings) = parse_uri(&text[OTPAUTH.len()..])?;
            Ok((secret, Some(settings)))
        }
        _ => Ok((decode_base32(text.as_bytes())?, None)),
    }
}

const OTPAUTH: &str = "otpauth://";

/// The part of an `otpauth` URI after `otpauth://`.
fn parse_uri(rest: &str) -> Result<(TotpSecret, UriSettings), Invalid> {
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (kind, label) = path.split_once('/').unwrap_or((path, ""));
    if kind.eq_ignore_ascii_case("hotp") {
        return Err(Invalid::new(
            SECRET_FIELD,
            "otpauth://hotp/ (counter-based) URIs are not supported: only otpauth://totp/",
        ));
    }
    if !kind.eq_ignore_ascii_case("totp") {
        return Err(Invalid::new(
            SECRET_FIELD,
            "must be base32 or an otpauth://totp/ URI",
        ));
    }
    let mut settings = UriSettings {
        label: decoded_text(label, false, "label")?.filter(|label| !label.is_empty()),
        ..UriSettings::default()
    };
    let mut secret = None;
    let mut seen: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = match KNOWN_PARAMETERS
            .iter()
            .find(|known| known.eq_ignore_ascii_case(key))
        {
            Some(known) => *known,
            None => continue, // image, counter, color, ...: not ours
        };
        if seen.contains(&key) {
            let rule = format!("the otpauth URI gives its {key} parameter twice");
            return Err(Invalid::new(SECRET_FIELD, rule));
        }
        seen.push(key);
        match key {
            "secret" => secret = Some(uri_secret(value)?),
            "digits" => settings.digits = Some(uri_number(value, key, digits_number)?),
            "period" => settings.period = Some(uri_number(value, key, period_number)?),
            "algorithm" => settings.algorithm = Some(uri_algorithm(value)?),
            _ => settings.issuer = decoded_text(value, true, key)?,
        }
    }
    match secret {
        Some(secret) => Ok((secret, settings)),
        None => Err(Invalid::new(
            SECRET_FIELD,
            "the otpauth URI has no secret parameter",
        )),
    }
}

const KNOWN_PARAMETERS: [&str; 5] = ["secret", "digits", "period", "algorithm", "issuer"];

fn uri_secret(value: &str) -> Result<TotpSecret, Invalid> {
    // Allocated once at its largest size: the secret passes through it.
    let mut decoded = Zeroizing::new(Vec::with_capacity(value.len()));
    percent_decode(value, true, &mut decoded)
        .ok_or_else(|| uri_invalid("secret", "has a bad percent escape"))?;
    decode_base32(&decoded)
}

/// A URI's digits or period: plain decimal, then the body's rule (named as the URI's); text
/// that is no plain decimal number breaks the rule the way an out-of-range number does.
fn uri_number<T>(
    value: &str,
    key: &str,
    rule: fn(u64) -> Result<T, Invalid>,
) -> Result<T, Invalid> {
    let number = match value.len() <= 10 && value.bytes().all(|byte| byte.is_ascii_digit()) {
        true => value.parse::<u64>().unwrap_or(u64::MAX),
        false => u64::MAX,
    };
    rule(number).map_err(|invalid| uri_invalid(key, &invalid.rule))
}

fn uri_algorithm(value: &str) -> Result<Algorithm, Invalid> {
    let text = decoded_text(value, true, "algorithm")?.unwrap_or_default();
    Algorithm::parse(&text).map_err(|invalid| uri_invalid("algorithm", &invalid.rule))
}

fn uri_invalid(key: &str, rule: &str) -> Invalid {
    Invalid::new(SECRET_FIELD, format!("the otpauth URI's {key} {rule}"))
}

/// A non-secret URI part as UTF-8 text (`None` for an empty part).
fn decoded_text(value: &str, plus_is_space: bool, key: &str) -> Result<Option<String>, Invalid> {
    let mut bytes = Vec::with_capacity(value.len());
    percent_decode(value, plus_is_space, &mut bytes)
        .ok_or_else(|| uri_invalid(key, "has a bad percent escape"))?;
    match String::from_utf8(bytes) {
        Ok(text) if text.is_empty() => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(_) => Err(uri_invalid(key, "is not UTF-8 once percent-decoded")),
    }
}

/// `%XX` escapes decoded (and `+` as a space in query values) into `out`, which never
/// grows past `value.len()` bytes; `None` on a bad escape.
fn percent_decode(value: &str, plus_is_space: bool, out: &mut Vec<u8>) -> Option<()> {
    let bytes = value.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let byte = match bytes[index] {
            b'%' => {
                let high = hex_value(*bytes.get(index + 1)?)?;
                let low = hex_value(*bytes.get(index + 2)?)?;
                index += 2;
                high << 4 | low
            }
            b'+' if plus_is_space => b' ',
            byte => byte,
        };
        out.push(byte);
        index += 1;
    }
    Some(())
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
const BASE32_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32: letters in any case, digits 2-7; spaces and '-' are skipped; '='
/// padding may end the text and then must fill its group of 8. Trailing bits are ignored
/// (RFC 4648 section 3.5 lets a decoder accept them; secrets in the wild carry them).
fn decode_base32(text: &[u8]) -> Result<TotpSecret, Invalid> {
    // Never grows past MAX_SECRET_BYTES + 1: no reallocation leaves secret bytes behind.
    let mut out = Zeroizing::new(Vec::with_capacity(MAX_SECRET_BYTES + 1));
    let (mut bits, mut bit_count, mut characters, mut padding) = (0u64, 0u32, 0usize, 0usize);
    for &byte in text {
        let value = match byte {
            b' ' | b'-' => continue,
            b'=' => {
                padding += 1;
                continue;
            }
            _ if padding > 0 => return Err(base32_invalid("'=' padding may only end the text")),
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a',
            b'2'..=b'7' => byte - b'2' + 26,
            _ => {
                return Err(base32_invalid(
                    "must be base32 (letters A-Z, digits 2-7; spaces, '-' and '=' padding allowed) or an otpauth://totp/ URI",
                ))
            }
        };
        characters += 1;
        bits = bits << 5 | u64::from(value);
        bit_count += 5;
        if bit_count >= 8 {
            bit_count -= 8;
            out.push((bits >> bit_count) as u8);
            bits &= (1 << bit_count) - 1;
            if out.len() > MAX_SECRET_BYTES {
                bits.zeroize();
                let rule = format!("must decode to at most {MAX_SECRET_BYTES} bytes");
                return Err(base32_invalid(&rule));
            }
        }
    }
    bits.zeroize();
    if characters == 0 {
        return Err(base32_invalid("must not be empty"));
    }
    if matches!(characters % 8, 1 | 3 | 6) {
        return Err(base32_invalid(
            "has a base32 length that is no whole number of bytes (a character is missing or extra)",
        ));
    }
    if padding > 0 && (characters + padding) % 8 != 0 {
        return Err(base32_invalid(
            "has '=' padding that does not fill the last group of 8 characters",
        ));
    }
    Ok(TotpSecret(out))
}

fn base32_invalid(rule: &str) -> Invalid {
    Invalid::new(SECRET_FIELD, rule)
}

/// Unpadded upper-case RFC 4648 base32 (the service never answers a secret's text: tests
/// only).
#[cfg(test)]
pub fn encode_base32(bytes: &[u8]) -> Zeroizing<String> {
    let mut out = Zeroizing::new(String::with_capacity(bytes.len().div_ceil(5) * 8));
    let (mut bits, mut bit_count) = (0u64, 0u32);
    for &byte in bytes {
        bits = bits << 8 | u64::from(byte);
        bit_count += 8;
        while bit_count >= 5 {
            bit_count -= 5;
            out.push(BASE32_ALPHABET[((bits >> bit_count) & 31) as usize] as char);
        }
        bits &= (1 << bit_count) - 1;
    }
    if bit_count > 0 {
        out.push(BASE32_ALPHABET[((bits << (5 - bit_count)) & 31) as usize] as char);
    }
    bits.zeroize();
    out
}

/// The code at `unix_time` (seconds since 1970) and how many seconds it stays valid
/// (1 to `period`): RFC 6238 over RFC 4226's dynamic truncation, zero-padded to `digits`.
pub fn code(secret: &[u8], settings: &TotpSettings, unix_time: u64) -> (String, u32) {
    let period = u64::from(settings.period);
    let counter = (unix_time / period).to_be_bytes();
    let hash = match settings.algorithm {
        Algorithm::Sha1 => keyed_hash::<Hmac<Sha1>>(secret, &counter),
        Algorithm::Sha256 => keyed_hash::<Hmac<Sha256>>(secret, &counter),
        Algorithm::Sha512 => keyed_hash::<Hmac<Sha512>>(secret, &counter),
    };
    // RFC 4226 section 5.3: the low 4 bits of the last byte pick 4 bytes (at most 15 + 4 of
    // a hash of 20 or more bytes), whose top bit is dropped.
    let offset = usize::from(hash[hash.len() - 1] & 0x0f);
    let word = [
        hash[offset],
        hash[offset + 1],
        hash[offset + 2],
        hash[offset + 3],
    ];
    let truncated = u32::from_be_bytes(word) & 0x7fff_ffff;
    let digits = usize::from(settings.digits);
    let value = truncated % 10u32.pow(u32::from(settings.digits));
    let valid_for_s = (period - unix_time % period) as u32;
    (format!("{value:0digits$}"), valid_for_s)
}

fn keyed_hash<M: Mac + hmac::digest::KeyInit>(secret: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = <M as Mac>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SEED_SHA1: &[u8] = b"12345678901234567890";
    const SEED_SHA256: &[u8] = b"12345678901234567890123456789012";
    const SEED_SHA512: &[u8] = b"1234567890123456789012345678901234567890123456789012345678901234";

    fn settings(digits: u64, period: u64, algorithm: Algorithm) -> TotpSettings {
        TotpSettings::new(digits, period, algorithm).unwrap()
    }

    fn secret_of(text: &str) -> Vec<u8> {
        parse_secret(text).unwrap().0.expose_bytes().to_vec()
    }

    fn rule_of(text: &str) -> String {
        let invalid = parse_secret(text).unwrap_err();
        assert_eq!(invalid.field, SECRET_FIELD);
        invalid.rule
    }

    /// RFC 6238 Appendix B: all 18 test vectors (8 digits, 30 seconds).
    #[test]
    fn codes_match_all_eighteen_rfc_6238_appendix_b_vectors() {
        let vectors: [(u64, &str, &str, &str); 6] = [
            (59, "94287082", "46119246", "90693936"),
            (1111111109, "07081804", "68084774", "25091201"),
            (1111111111, "14050471", "67062674", "99943326"),
            (1234567890, "89005924", "91819424", "93441116"),
            (2000000000, "69279037", "90698825", "38618901"),
            (20000000000, "65353130", "77737706", "47863826"),
        ];
        for (time, sha1, sha256, sha512) in vectors {
            let cases = [
                (SEED_SHA1, Algorithm::Sha1, sha1),
                (SEED_SHA256, Algorithm::Sha256, sha256),
                (SEED_SHA512, Algorithm::Sha512, sha512),
            ];
            for (seed, algorithm, expected) in cases {
                let (made, _) = code(seed, &settings(8, 30, algorithm), time);
                assert_eq!(made, expected, "{} at {time}", algorithm.as_str());
            }
        }
    }

    #[test]
    fn six_digit_codes_are_the_low_digits_zero_padded() {
        // RFC 6238's 07081804 at 1111111109: six digits keep "081804", leading zero and all.
        let (six, _) = code(SEED_SHA1, &settings(6, 30, Algorithm::Sha1), 1111111109);
        assert_eq!(six, "081804");
        let (seven, _) = code(SEED_SHA1, &settings(7, 30, Algorithm::Sha1), 1111111109);
        assert_eq!(seven, "7081804");
    }

    #[test]
    fn valid_for_counts_the_seconds_left_in_the_period_from_period_down_to_one() {
        let thirty = settings(6, 30, Algorithm::Sha1);
        assert_eq!(code(SEED_SHA1, &thirty, 60).1, 30);
        assert_eq!(code(SEED_SHA1, &thirty, 61).1, 29);
        assert_eq!(code(SEED_SHA1, &thirty, 89).1, 1);
        assert_eq!(code(SEED_SHA1, &thirty, 0).1, 30);
        let one = settings(6, 1, Algorithm::Sha1);
        assert_eq!(code(SEED_SHA1, &one, 12345).1, 1);
        // One period is one code: 60 and 89 share it, 90 starts the next.
        assert_eq!(
            code(SEED_SHA1, &thirty, 60).0,
            code(SEED_SHA1, &thirty, 89).0
        );
        assert_ne!(
            code(SEED_SHA1, &thirty, 89).0,
            code(SEED_SHA1, &thirty, 90).0
        );
    }

    #[test]
    fn digits_are_six_to_eight_and_periods_one_to_3600_seconds() {
        for digits in [5, 9, 0, 256] {
            let invalid = TotpSettings::new(digits, 30, Algorithm::Sha1).unwrap_err();
            assert_eq!(invalid.field, DIGITS_FIELD, "{digits}");
        }
        for digits in [6, 7, 8] {
            assert_eq!(
                settings(digits, 30, Algorithm::Sha1).digits() as u64,
                digits
            );
        }
        for period in [0, 3601, u64::from(u32::MAX) + 1] {
            let invalid = TotpSettings::new(6, period, Algorithm::Sha1).unwrap_err();
            assert_eq!(invalid.field, PERIOD_FIELD, "{period}");
        }
        for period in [1, 30, 3600] {
            assert_eq!(settings(6, period, Algorithm::Sha1).period() as u64, period);
        }
    }

    #[test]
    fn algorithms_parse_in_any_case_and_serialize_upper_case() {
        assert_eq!(Algorithm::parse("sha1").unwrap(), Algorithm::Sha1);
        assert_eq!(Algorithm::parse("Sha256").unwrap(), Algorithm::Sha256);
        assert_eq!(Algorithm::parse("SHA512").unwrap(), Algorithm::Sha512);
        for bad in ["SHA-1", "MD5", "", "SHA384"] {
            assert_eq!(Algorithm::parse(bad).unwrap_err().field, ALGORITHM_FIELD);
        }
        let value = serde_json::to_value(settings(8, 60, Algorithm::Sha256)).unwrap();
        let expected = serde_json::json!({"digits": 8, "period": 60, "algorithm": "SHA256"});
        assert_eq!(value, expected);
        assert_eq!(Algorithm::Sha512.as_str(), "SHA512");
        assert_eq!(
            settings(6, 30, Algorithm::Sha512).algorithm(),
            Algorithm::Sha512
        );
    }

    /// RFC 4648 section 10, both padded and unpadded, in both cases.
    #[test]
    fn base32_decodes_the_rfc_4648_vectors_with_or_without_padding() {
        let vectors = [
            ("MY======", "f"),
            ("MZXQ====", "fo"),
            ("MZXW6===", "foo"),
            ("MZXW6YQ=", "foob"),
            ("MZXW6YTB", "fooba"),
            ("MZXW6YTBOI======", "foobar"),
        ];
        for (encoded, plain) in vectors {
            assert_eq!(secret_of(encoded), plain.as_bytes(), "{encoded}");
            let bare = encoded.trim_end_matches('=');
            assert_eq!(secret_of(bare), plain.as_bytes(), "{bare}");
            assert_eq!(secret_of(&bare.to_lowercase()), plain.as_bytes());
            assert_eq!(*encode_base32(plain.as_bytes()), bare);
        }
    }

    #[test]
    fn base32_skips_spaces_and_dashes_and_surrounding_whitespace() {
        assert_eq!(secret_of(" mzxw 6ytb-oi \n"), b"foobar");
        let (secret, uri) = parse_secret("JBSW Y3DP EHPK 3PXP").unwrap();
        assert_eq!(secret.expose_bytes(), b"Hello!\xde\xad\xbe\xef");
        assert!(uri.is_none());
        assert_eq!(*secret.to_base32(), "JBSWY3DPEHPK3PXP");
    }

    #[test]
    fn base32_refuses_other_characters_bad_lengths_and_misplaced_padding() {
        for bad in ["MZXW1", "MZXW8", "MZ.XW", "MZXW6Y\tTBOI", "MZÉ", "MZ_X"] {
            assert!(rule_of(bad).starts_with("must be base32"), "{bad}");
        }
        for bad in ["M", "MZX", "MZXW6Y"] {
            assert!(rule_of(bad).contains("whole number of bytes"), "{bad}");
        }
        assert!(rule_of("MY==MY").contains("may only end"));
        assert!(rule_of("MY=").contains("padding"));
        for empty in ["", "   ", "--", "========"] {
            assert_eq!(rule_of(empty), "must not be empty", "{empty:?}");
        }
    }

    #[test]
    fn secrets_decode_to_at_most_128_bytes() {
        let at_bound = encode_base32(&[7u8; MAX_SECRET_BYTES]);
        assert_eq!(secret_of(&at_bound).len(), MAX_SECRET_BYTES);
        let over = encode_base32(&[7u8; MAX_SECRET_BYTES + 1]);
        assert!(rule_of(&over).contains("at most 128 bytes"));
        let huge = "A".repeat(MAX_SECRET_TEXT_BYTES + 1);
        assert!(rule_of(&huge).contains("at most 2048 bytes"));
    }

    #[test]
    fn errors_never_echo_the_secret_text_and_debug_is_masked() {
        let pasted = "JBSWY3DPEHPK3PX!";
        let invalid = parse_secret(pasted).unwrap_err();
        assert!(!invalid.to_string().contains("JBSWY3DP"), "{invalid}");
        let uri = "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=JBSWY3DP";
        assert!(!parse_secret(uri)
            .unwrap_err()
            .to_string()
            .contains("JBSWY3DP"));
        let (secret, _) = parse_secret("JBSWY3DPEHPK3PXP").unwrap();
        assert_eq!(format!("{secret:?}"), "TotpSecret(<hidden>)");
    }

    #[test]
    fn otpauth_uris_give_their_secret_and_settings() {
        let uri = "otpauth://totp/ACME%20Co:john%40example.com?secret=JBSWY3DPEHPK3PXP\
                   &issuer=ACME+Co&algorithm=sha256&digits=8&period=60&image=x";
        let (secret, settings) = parse_secret(uri).unwrap();
        assert_eq!(secret.expose_bytes(), b"Hello!\xde\xad\xbe\xef");
        let expected = UriSettings {
            digits: Some(8),
            period: Some(60),
            algorithm: Some(Algorithm::Sha256),
            issuer: Some("ACME Co".into()),
            label: Some("ACME Co:john@example.com".into()),
        };
        assert_eq!(settings.unwrap(), expected);
    }

    #[test]
    fn otpauth_uris_that_say_nothing_leave_every_setting_none() {
        let (_, settings) = parse_secret("OTPAUTH://TOTP/?secret=MZXW6").unwrap();
        assert_eq!(settings.unwrap(), UriSettings::default());
        let (_, settings) = parse_secret("otpauth://totp?SECRET=mzxw6&counter=3").unwrap();
        assert_eq!(settings.unwrap(), UriSettings::default());
    }

    #[test]
    fn otpauth_secrets_may_be_percent_encoded_and_padded() {
        assert_eq!(
            secret_of("otpauth://totp/a?secret=%4D%5a%58W6YTBOI%3D%3D%3D%3D%3D%3D"),
            b"foobar"
        );
        assert_eq!(
            secret_of("otpauth://totp/a?secret=MZXW6YTBOI======"),
            b"foobar"
        );
        assert_eq!(secret_of("otpauth://totp/a?secret=MZXW+6YTB+OI"), b"foobar");
        assert!(rule_of("otpauth://totp/a?secret=MZ%XW").contains("bad percent escape"));
        assert!(rule_of("otpauth://totp/a?secret=MZXW%3").contains("bad percent escape"));
    }

    #[test]
    fn otpauth_digits_are_six_to_eight_both_sides() {
        let with = |digits: &str| format!("otpauth://totp/a?secret=MZXW6&digits={digits}");
        for bad in ["5", "9", "", "6.0", "-6", "+6", "99999999999999999999"] {
            let rule = rule_of(&with(bad));
            assert_eq!(rule, "the otpauth URI's digits must be 6, 7 or 8", "{bad}");
        }
        for good in [6u8, 8] {
            let (_, settings) = parse_secret(&with(&good.to_string())).unwrap();
            assert_eq!(settings.unwrap().digits, Some(good));
        }
    }

    #[test]
    fn otpauth_periods_are_one_to_3600_seconds_both_sides() {
        let with = |period: &str| format!("otpauth://totp/a?secret=MZXW6&period={period}");
        for bad in ["0", "3601", "x"] {
            assert!(rule_of(&with(bad)).starts_with("the otpauth URI's period must be"));
        }
        for good in [1u32, 3600] {
            let (_, settings) = parse_secret(&with(&good.to_string())).unwrap();
            assert_eq!(settings.unwrap().period, Some(good));
        }
    }

    #[test]
    fn otpauth_refuses_hotp_other_kinds_missing_or_repeated_secrets_and_bad_algorithms() {
        let hotp = rule_of("otpauth://hotp/a?secret=MZXW6&counter=1");
        assert!(
            hotp.contains("hotp") && hotp.contains("not supported"),
            "{hotp}"
        );
        assert!(rule_of("otpauth://motp/a?secret=MZXW6").contains("otpauth://totp/"));
        let missing = rule_of("otpauth://totp/a?issuer=x");
        assert_eq!(missing, "the otpauth URI has no secret parameter");
        assert_eq!(
            rule_of("otpauth://totp/a?secret="),
            "must not be empty",
            "an empty secret"
        );
        let twice = rule_of("otpauth://totp/a?secret=MZXW6&Secret=MZXW6");
        assert!(twice.contains("secret parameter twice"), "{twice}");
        let algorithm = rule_of("otpauth://totp/a?secret=MZXW6&algorithm=MD5");
        assert_eq!(
            algorithm,
            "the otpauth URI's algorithm must be SHA1, SHA256 or SHA512"
        );
        assert!(rule_of("otpauth://totp/a?secret=M").contains("whole number of bytes"));
        assert!(rule_of("otpauth://totp/%FF?secret=MZXW6").contains("not UTF-8"));
    }
}
