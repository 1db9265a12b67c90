//! Bytes of an imported file to text (docs/import.md, "Encodings"): with `auto`, a
//! byte-order mark decides (UTF-8, UTF-16LE, UTF-16BE; the mark is dropped), else valid
//! UTF-8 is UTF-8, else Windows-1252 (which reads any byte). GBK is never guessed. A named
//! encoding is strict: bytes it cannot read are an error, never replacement characters.
//!
//! Invariants: never panics on any input; an error names the encoding and the rule broken,
//! never a byte of the file (the file may hold a password).

use encoding_rs::{Encoding as Table, GBK, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// How the bytes of `content_base64` are read (the request's `encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Auto,
    Utf8,
    Utf16,
    Windows1252,
    Gbk,
}

impl Encoding {
    /// The request's name of an encoding (`"auto"`, `"utf-8"`, `"utf-16"`,
    /// `"windows-1252"`, `"gbk"`), exactly as docs/import.md spells it.
    pub fn from_name(name: &str) -> Option<Encoding> {
        match name {
            "auto" => Some(Encoding::Auto),
            "utf-8" => Some(Encoding::Utf8),
            "utf-16" => Some(Encoding::Utf16),
            "windows-1252" => Some(Encoding::Windows1252),
            "gbk" => Some(Encoding::Gbk),
            _ => None,
        }
    }
}

const UTF8_BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
const UTF16LE_BOM: &[u8] = &[0xFF, 0xFE];
const UTF16BE_BOM: &[u8] = &[0xFE, 0xFF];

/// `bytes` as text in `encoding`; `Err` is the reason (no file content in it).
pub fn decode(bytes: &[u8], encoding: Encoding) -> Result<String, String> {
    match encoding {
        Encoding::Auto => Ok(decode_auto(bytes)),
        Encoding::Utf8 => {
            let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
            String::from_utf8(body.to_vec()).map_err(|err| {
                format!(
                    "not valid UTF-8 (at byte {})",
                    err.utf8_error().valid_up_to()
                )
            })
        }
        Encoding::Utf16 => decode_utf16(bytes),
        Encoding::Windows1252 => strict(WINDOWS_1252, bytes, "Windows-1252"),
        Encoding::Gbk => strict(GBK, bytes, "GBK"),
    }
}

/// The text without a leading UTF-8 byte-order mark (`\u{feff}`), if it has one.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

fn decode_auto(bytes: &[u8]) -> String {
    if let Some(body) = bytes.strip_prefix(UTF8_BOM) {
        return String::from_utf8_lossy(body).into_owned();
    }
    if let Some(body) = bytes.strip_prefix(UTF16LE_BOM) {
        return lossy(UTF_16LE, body);
    }
    if let Some(body) = bytes.strip_prefix(UTF16BE_BOM) {
        return lossy(UTF_16BE, body);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => lossy(WINDOWS_1252, bytes),
    }
}

/// UTF-16 as named: a mark decides the byte order, none means little-endian (what Windows
/// writes); an odd length or an unpaired surrogate is an error.
fn decode_utf16(bytes: &[u8]) -> Result<String, String> {
    let (table, body) = if let Some(body) = bytes.strip_prefix(UTF16LE_BOM) {
        (UTF_16LE, body)
    } else if let Some(body) = bytes.strip_prefix(UTF16BE_BOM) {
        (UTF_16BE, body)
    } else {
        (UTF_16LE, bytes)
    };
    if body.len() % 2 != 0 {
        return Err("not valid UTF-16 (an odd number of bytes)".to_owned());
    }
    strict(table, body, "UTF-16")
}

/// `bytes` in `table` with no byte-order-mark handling and no replacement.
fn strict(table: &'static Table, bytes: &[u8], name: &str) -> Result<String, String> {
    table
        .decode_without_bom_handling_and_without_replacement(bytes)
        .map(|text| text.into_owned())
        .ok_or_else(|| format!("not valid {name}"))
}

/// `bytes` in `table` (after a mark already chosen and dropped): Windows-1252 maps every
/// byte; a broken UTF-16 sequence after a mark becomes U+FFFD, as the mark said UTF-16.
fn lossy(table: &'static Table, bytes: &[u8]) -> String {
    table.decode_without_bom_handling(bytes).0.into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use super::*;

    fn utf16le(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn utf16be(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_be_bytes).collect()
    }

    #[test]
    fn every_encoding_name_of_the_contract_is_known_and_others_are_not() {
        let names = ["auto", "utf-8", "utf-16", "windows-1252", "gbk"];
        for name in names {
            assert!(Encoding::from_name(name).is_some(), "{name}");
        }
        for name in ["UTF-8", "utf8", "latin1", "cp1252", "", "utf-16le"] {
            assert_eq!(Encoding::from_name(name), None, "{name}");
        }
    }

    #[test]
    fn auto_reads_a_utf8_mark_as_utf8_and_drops_it() {
        let bytes = [UTF8_BOM, "Zürich".as_bytes()].concat();
        assert_eq!(decode(&bytes, Encoding::Auto).unwrap(), "Zürich");
    }

    #[test]
    fn auto_reads_utf16_by_its_mark_in_either_byte_order_and_drops_it() {
        let le = [UTF16LE_BOM, &utf16le("Windows Registry Editor")].concat();
        let be = [UTF16BE_BOM, &utf16be("Sessions\\Zürich")].concat();
        assert_eq!(
            decode(&le, Encoding::Auto).unwrap(),
            "Windows Registry Editor"
        );
        assert_eq!(decode(&be, Encoding::Auto).unwrap(), "Sessions\\Zürich");
    }

    #[test]
    fn auto_reads_valid_utf8_without_a_mark_as_utf8() {
        assert_eq!(
            decode("服务器 é".as_bytes(), Encoding::Auto).unwrap(),
            "服务器 é"
        );
        assert_eq!(decode(b"", Encoding::Auto).unwrap(), "");
    }

    #[test]
    fn auto_reads_bytes_that_are_not_utf8_as_windows_1252_never_gbk() {
        // "Büro €" in Windows-1252; also valid GBK (0xFC 0x72 is a GBK pair), which auto
        // must not pick.
        let bytes = b"B\xfcro \x80";
        assert_eq!(decode(bytes, Encoding::Auto).unwrap(), "Büro €");
        assert_ne!(decode(bytes, Encoding::Gbk).ok().as_deref(), Some("Büro €"));
    }

    #[test]
    fn utf8_named_refuses_invalid_bytes_and_drops_a_mark() {
        assert!(decode(b"ok \xff", Encoding::Utf8).is_err());
        let bytes = [UTF8_BOM, b"name"].concat();
        assert_eq!(decode(&bytes, Encoding::Utf8).unwrap(), "name");
    }

    #[test]
    fn utf16_named_without_a_mark_is_little_endian() {
        assert_eq!(decode(&utf16le("Host"), Encoding::Utf16).unwrap(), "Host");
        let marked = [UTF16BE_BOM, &utf16be("Host")].concat();
        assert_eq!(decode(&marked, Encoding::Utf16).unwrap(), "Host");
    }

    #[test]
    fn utf16_named_refuses_an_odd_length_and_an_unpaired_surrogate() {
        let mut odd = utf16le("Host");
        odd.push(b'x');
        assert!(decode(&odd, Encoding::Utf16).unwrap_err().contains("odd"));
        let lone = [0x00, 0xD8, 0x41, 0x00]; // a high surrogate then 'A'
        assert!(decode(&lone, Encoding::Utf16).is_err());
    }

    #[test]
    fn gbk_named_reads_chinese_names_and_refuses_a_broken_sequence() {
        // "服务器" in GBK.
        let bytes = [0xB7, 0xFE, 0xCE, 0xF1, 0xC6, 0xF7];
        assert_eq!(decode(&bytes, Encoding::Gbk).unwrap(), "服务器");
        assert!(decode(&[0xB7], Encoding::Gbk).is_err());
    }

    #[test]
    fn windows_1252_named_reads_every_byte() {
        assert_eq!(decode(b"caf\xe9", Encoding::Windows1252).unwrap(), "café");
        // 0x81 is undefined in Windows-1252 but WHATWG maps it to U+0081: it reads.
        assert!(decode(b"\x81", Encoding::Windows1252).is_ok());
    }

    #[test]
    fn an_error_never_quotes_the_file() {
        let err = decode(b"password=hunter2\xff", Encoding::Utf8).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn strip_bom_drops_only_a_leading_mark() {
        assert_eq!(strip_bom("\u{feff}[remmina]"), "[remmina]");
        assert_eq!(strip_bom("a\u{feff}"), "a\u{feff}");
    }

    #[test]
    fn text_decode_never_panics_on_seeded_random_input() {
        let (iterations, seed) = crate::fuzz::settings("text decode", 0x7E47_0001);
        let mut rng = crate::fuzz::Rng::new(seed);
        let pieces: [&[u8]; 8] = [
            UTF8_BOM,
            UTF16LE_BOM,
            UTF16BE_BOM,
            b"a",
            b"\xff",
            b"\x00",
            b"\xd8",
            "é".as_bytes(),
        ];
        let all = [
            Encoding::Auto,
            Encoding::Utf8,
            Encoding::Utf16,
            Encoding::Windows1252,
            Encoding::Gbk,
        ];
        for iteration in 0..iterations {
            let mut bytes = Vec::new();
            for _ in 0..rng.below(12) {
                bytes.extend_from_slice(rng.pick::<&[u8]>(&pieces));
            }
            let encoding = *rng.pick(&all);
            let outcome = panic::catch_unwind(|| decode(&bytes, encoding));
            assert!(outcome.is_ok(), "panic on input #{iteration}: {bytes:?}");
        }
    }
}
