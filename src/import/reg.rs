//! A reader of regedit exports (docs/import-formats.md, "Regedit exports"), shared by the
//! PuTTY reader and the WinSCP reader's registry form: `Windows Registry Editor Version 5.00`
//! (the text arrives decoded from UTF-16) and `REGEDIT4`; `[HKEY_...\key]` sections;
//! `"name"="string"` with `\\` and `\"` escapes, `@=` (the default value), `dword:`,
//! `hex:`/`hex(N):` bytes with `\` line continuations; `[-key]` and `"name"=-` deletions are
//! ignored.
//!
//! Invariants: never panics; the only failure is a text that does not open with a regedit
//! header; a value line that cannot be read is counted in `stray_lines`, never guessed.

/// A value's data.
#[derive(Debug, PartialEq, Eq)]
pub enum RegValue {
    /// `REG_SZ`: `"text"`, escapes decoded.
    String(String),
    /// `dword:0000002a`.
    Dword(u32),
    /// `hex:` (kind 3, `REG_BINARY`) or `hex(N):` bytes as written.
    Bytes { kind: u32, bytes: Vec<u8> },
}

impl RegValue {
    /// The value as the text a program reading the key gets: a string as is, a dword in
    /// decimal, bytes not (`None`).
    pub fn as_text(&self) -> Option<String> {
        match self {
            RegValue::String(text) => Some(text.clone()),
            RegValue::Dword(number) => Some(number.to_string()),
            RegValue::Bytes { .. } => None,
        }
    }
}

/// One `[key]` section.
#[derive(Debug, PartialEq, Eq)]
pub struct RegKey {
    /// The full path as written (`HKEY_CURRENT_USER\Software\...`).
    pub path: String,
    /// `(name, value)` in file order; the default value (`@`) has the empty name.
    pub values: Vec<(String, RegValue)>,
}

impl RegKey {
    /// The value named `name` (case-insensitively, as the registry compares names).
    pub fn get(&self, name: &str) -> Option<&RegValue> {
        self.values
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    }
}

/// A whole export.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RegFile {
    pub keys: Vec<RegKey>,
    /// Lines that could not be read (outside a key, or a value of an unknown form).
    pub stray_lines: usize,
}

/// The header lines a regedit export opens with.
const HEADERS: [&str; 2] = ["Windows Registry Editor Version 5.00", "REGEDIT4"];

/// Whether `text` opens with a regedit header (after a byte-order mark and blank lines).
pub fn is_export(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .is_some_and(|line| {
            HEADERS
                .iter()
                .any(|header| line.eq_ignore_ascii_case(header))
        })
}

/// Reads an export; `Err` (a short reason) when `text` is not one.
pub fn parse(text: &str) -> Result<RegFile, &'static str> {
    if !is_export(text) {
        return Err("not a regedit export (no \"Windows Registry Editor Version 5.00\" or \"REGEDIT4\" header)");
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut file = RegFile::default();
    // Whether the current section is a deletion (`[-key]`): its lines are skipped.
    let mut deleting = false;
    let mut lines = text
        .lines()
        .skip_while(|line| line.trim().is_empty())
        .skip(1);
    while let Some(raw) = lines.next() {
        let mut line = raw.trim().to_string();
        // A value continues on the next line after a trailing backslash (hex data).
        while line.ends_with('\\') && is_hex_value(&line) {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next.trim()),
                None => break,
            }
        }
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        if let Some(inner) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            deleting = inner.starts_with('-');
            if !deleting {
                file.keys.push(RegKey {
                    path: inner.to_string(),
                    values: Vec::new(),
                });
            }
            continue;
        }
        if deleting {
            continue;
        }
        match (file.keys.last_mut(), value_line(&line)) {
            (Some(key), Some(Some(entry))) => key.values.push(entry),
            (Some(_), Some(None)) => {}
            _ => file.stray_lines += 1,
        }
    }
    Ok(file)
}

/// Whether `line` is a `hex` value (the only kind that continues over lines).
fn is_hex_value(line: &str) -> bool {
    let after = match line.strip_prefix('@') {
        Some(rest) => rest,
        None => quoted(line).map_or("", |(_, rest)| rest),
    };
    after
        .trim_start()
        .strip_prefix('=')
        .is_some_and(|value| value.trim_start().starts_with("hex"))
}

/// A value line: `Some(Some(..))` a value, `Some(None)` a deletion, `None` unreadable.
fn value_line(line: &str) -> Option<Option<(String, RegValue)>> {
    let (name, rest) = match line.strip_prefix('@') {
        Some(rest) => (String::new(), rest),
        None => quoted(line)?,
    };
    let data = rest.trim_start().strip_prefix('=')?.trim();
    if data == "-" {
        return Some(None);
    }
    Some(Some((name, data_of(data)?)))
}

/// A value's data after `=`.
fn data_of(data: &str) -> Option<RegValue> {
    if data.starts_with('"') {
        let (text, rest) = quoted(data)?;
        return rest.trim().is_empty().then_some(RegValue::String(text));
    }
    if let Some(hex) = data.strip_prefix("dword:") {
        let hex = hex.trim();
        if hex.is_empty() || hex.len() > 8 {
            return None;
        }
        return u32::from_str_radix(hex, 16).ok().map(RegValue::Dword);
    }
    let (kind, bytes) = if let Some(bytes) = data.strip_prefix("hex:") {
        (3, bytes)
    } else {
        let inner = data.strip_prefix("hex(")?;
        let (kind, bytes) = inner.split_once("):")?;
        (u32::from_str_radix(kind, 16).ok()?, bytes)
    };
    let mut out = Vec::new();
    for byte in bytes
        .split(',')
        .map(str::trim)
        .filter(|byte| !byte.is_empty())
    {
        if byte.len() > 2 {
            return None;
        }
        out.push(u8::from_str_radix(byte, 16).ok()?);
    }
    Some(RegValue::Bytes { kind, bytes: out })
}

/// A `"..."` token at the start of `text` with `\\` and `\"` decoded (any other backslash
/// is kept with the character after it), and the text after its closing quote.
fn quoted(text: &str) -> Option<(String, &str)> {
    let inner = text.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((at, ch)) = chars.next() {
        match ch {
            '"' => return Some((out, inner.get(at + 1..).unwrap_or(""))),
            '\\' => match chars.next() {
                Some((_, next @ ('\\' | '"'))) => out.push(next),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => return None,
            },
            other => out.push(other),
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const EXPORT: &str = "\u{feff}Windows Registry Editor Version 5.00\r\n\r\n\
        [HKEY_CURRENT_USER\\Software\\Test]\r\n\
        @=\"default\"\r\n\
        \"Quoted \\\"name\\\"\"=\"C:\\\\Users\\\\me \\\"x\\\"\"\r\n\
        \"Port\"=dword:0000002a\r\n\
        \"Bin\"=hex:01,02,\\\r\n  ff\r\n\
        \"Expand\"=hex(2):41,00,00,00\r\n\
        \"Gone\"=-\r\n\
        \"Broken\"=dword:zz\r\n\
        \r\n[-HKEY_CURRENT_USER\\Software\\Deleted]\r\n\"x\"=\"y\"\r\n\
        [HKEY_CURRENT_USER\\Software\\Test\\Sub]\r\n";

    #[test]
    fn reg_reads_strings_escapes_dwords_hex_and_default_values() {
        let file = parse(EXPORT).unwrap();
        assert_eq!(file.keys.len(), 2, "the deleted key is ignored");
        let key = &file.keys[0];
        assert_eq!(key.path, "HKEY_CURRENT_USER\\Software\\Test");
        assert_eq!(key.get(""), Some(&RegValue::String("default".into())));
        assert_eq!(
            key.get("quoted \"NAME\""),
            Some(&RegValue::String("C:\\Users\\me \"x\"".into()))
        );
        assert_eq!(key.get("Port"), Some(&RegValue::Dword(42)));
        assert_eq!(key.get("Port").unwrap().as_text().as_deref(), Some("42"));
        assert_eq!(
            key.get("Bin"),
            Some(&RegValue::Bytes {
                kind: 3,
                bytes: vec![1, 2, 0xff]
            }),
            "a continued hex value is one value"
        );
        assert_eq!(
            key.get("Expand"),
            Some(&RegValue::Bytes {
                kind: 2,
                bytes: vec![0x41, 0, 0, 0]
            })
        );
        assert_eq!(key.get("Gone"), None, "a deletion is no value");
        assert_eq!(file.stray_lines, 1, "the broken dword");
        assert!(file.keys[1].values.is_empty());
    }

    #[test]
    fn reg_accepts_regedit4_and_refuses_text_without_a_header() {
        let file = parse("REGEDIT4\n\n[HKEY_CURRENT_USER\\A]\n\"a\"=\"b\"\n").unwrap();
        assert_eq!(file.keys[0].get("a"), Some(&RegValue::String("b".into())));
        assert!(parse("[HKEY_CURRENT_USER\\A]\n\"a\"=\"b\"\n").is_err());
        assert!(parse("").is_err());
        assert!(parse("REGEDIT5\n").is_err());
    }

    #[test]
    fn reg_dword_edges_eight_digits_read_nine_refused() {
        let file = parse("REGEDIT4\n[K]\n\"a\"=dword:ffffffff\n\"b\"=dword:1ffffffff\n").unwrap();
        assert_eq!(file.keys[0].get("a"), Some(&RegValue::Dword(u32::MAX)));
        assert_eq!(file.keys[0].get("b"), None);
        assert_eq!(file.stray_lines, 1);
    }

    #[test]
    fn reg_unterminated_string_and_values_outside_a_key_are_stray() {
        let file = parse("REGEDIT4\n\"a\"=\"b\"\n[K]\n\"a\"=\"open\n\"t\"=\"x\\\\\"\n").unwrap();
        assert_eq!(file.stray_lines, 2);
        assert_eq!(file.keys[0].get("t"), Some(&RegValue::String("x\\".into())));
    }
}
