//! A lenient INI reader shared by the WinSCP and MobaXterm readers (docs/import-formats.md,
//! "INI files"): sections in file order, `key=value` entries in file order with duplicate
//! keys kept, `;` and `#` comment lines, CRLF or LF, no escapes (each format decodes its own).
//!
//! Invariants: never fails and never panics: a line that is neither a header, a comment nor
//! an entry is counted in `stray_lines` and otherwise ignored; entries before the first
//! header sit in a section with an empty name.

use std::collections::HashSet;

use crate::import::source::SourceGroup;

/// One `[name]` section and its entries.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// The text between the brackets, trimmed.
    pub name: String,
    /// `(key, value)` in file order, both trimmed; duplicates kept.
    pub entries: Vec<(String, String)>,
}

impl Section {
    /// The first value of `key` (compared ASCII case-insensitively, as Windows does).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value.as_str())
    }
}

/// A whole file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ini {
    pub sections: Vec<Section>,
    /// Lines that were neither a header, a comment, a blank nor `key=value`.
    pub stray_lines: usize,
}

impl Ini {
    /// The first section named `name` (ASCII case-insensitively).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|section| section.name.eq_ignore_ascii_case(name))
    }
}

/// Reads `text` (a leading byte-order mark is skipped).
pub fn parse(text: &str) -> Ini {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut ini = Ini::default();
    for raw in text.split('\n') {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            ini.sections.push(Section {
                name: name.trim().to_string(),
                entries: Vec::new(),
            });
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            ini.stray_lines += 1;
            continue;
        };
        if ini.sections.is_empty() {
            ini.sections.push(Section::default());
        }
        if let Some(section) = ini.sections.last_mut() {
            section
                .entries
                .push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    ini
}

/// `text` with each `%XX` (two hex digits) turned back into its byte, the way WinSCP writes
/// names and values in its ini and PuTTY writes session names. The bytes are read as UTF-8
/// when they are (WinSCP, PuTTY on Unix), else as Windows-1252 (PuTTY on a Western Windows
/// escapes the ANSI code page's bytes). A `%` not followed by two hex digits is kept.
pub fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let escaped = match (byte, bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&high), Some(&low)) => hex_pair(high, low),
            _ => None,
        };
        match escaped {
            Some(value) => {
                out.push(value);
                at += 3;
            }
            None => {
                out.push(byte);
                at += 1;
            }
        }
    }
    match String::from_utf8(out) {
        Ok(text) => text,
        Err(err) => encoding_rs::WINDOWS_1252
            .decode_without_bom_handling(err.as_bytes())
            .0
            .into_owned(),
    }
}

/// The folders a reader has listed in its catalogue, so each goes in once (parents first,
/// the catalogue's order) without a scan per host; for the readers whose folders are paths
/// (WinSCP, MobaXterm, KiTTY).
#[derive(Default)]
pub struct Folders {
    seen: HashSet<Vec<String>>,
}

impl Folders {
    /// Adds the folder `path` and its parents to `groups`, those not there yet.
    pub fn add(&mut self, groups: &mut Vec<SourceGroup>, path: &[String]) {
        for depth in 1..=path.len() {
            let Some(prefix) = path.get(..depth) else {
                break;
            };
            if self.seen.insert(prefix.to_vec()) {
                groups.push(SourceGroup {
                    path: prefix.to_vec(),
                    ..SourceGroup::default()
                });
            }
        }
    }
}

fn hex_pair(high: u8, low: u8) -> Option<u8> {
    let value = |ch: u8| (ch as char).to_digit(16).and_then(|v| u8::try_from(v).ok());
    Some(value(high)? << 4 | value(low)?)
}

/// The seeded mutator the fuzz tests of the INI-, registry- and session-file readers share.
#[cfg(test)]
pub mod fuzzing {
    use crate::fuzz::Rng;

    /// A window of up to 40 lines of one of `samples`, then up to 6 mutations: a byte
    /// flipped, the text cut, a line duplicated or removed, or one of `tokens` (the
    /// format's structure: `[`, `=`, `%`, `#`, `\\`...) inserted at a random place.
    pub fn mutate(rng: &mut Rng, samples: &[String], tokens: &[&str]) -> String {
        let Some(sample) = rng.pick_any(samples) else {
            return String::new();
        };
        let lines: Vec<&str> = sample.split_inclusive('\n').collect();
        let start = rng.below(lines.len());
        let end = (start + 1 + rng.below(40)).min(lines.len());
        let mut window: Vec<String> = lines
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|line| line.to_string())
            .collect();
        if rng.below(3) == 0 {
            // Keep the header (regedit's, a section's) the readers look for first.
            if let Some(first) = lines.first() {
                window.insert(0, first.to_string());
            }
        }
        for _ in 0..rng.below(7) {
            let at = rng.below(window.len());
            match rng.below(5) {
                0 if !window.is_empty() => {
                    let line = window.remove(at);
                    window.insert(rng.below(window.len() + 1), line.clone());
                    window.insert(rng.below(window.len() + 1), line);
                }
                1 if !window.is_empty() => {
                    window.remove(at);
                }
                2 => {
                    if let Some(line) = window.get_mut(at) {
                        let mut bytes = line.clone().into_bytes();
                        if !bytes.is_empty() {
                            let index = rng.below(bytes.len());
                            bytes[index] ^= 1 << rng.below(8);
                        }
                        *line = String::from_utf8_lossy(&bytes).into_owned();
                    }
                }
                3 => {
                    if let Some(line) = window.get_mut(at) {
                        let cut = rng.below(line.len() + 1);
                        let cut = (0..=cut)
                            .rev()
                            .find(|i| line.is_char_boundary(*i))
                            .unwrap_or(0);
                        line.truncate(cut);
                    }
                }
                _ => {
                    let token = rng.pick_any(tokens).copied().unwrap_or("=");
                    if let Some(line) = window.get_mut(at) {
                        let mut cut = rng.below(line.len() + 1);
                        while !line.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        line.insert_str(cut, token);
                    } else {
                        window.push(token.to_string());
                    }
                }
            }
        }
        window.concat()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percent_decode_reads_utf8_then_windows_1252_and_keeps_a_broken_escape() {
        assert_eq!(percent_decode("web%20server"), "web server");
        assert_eq!(percent_decode("Caf%C3%A9"), "Café", "UTF-8 bytes");
        assert_eq!(percent_decode("Caf%E9"), "Café", "a Windows-1252 byte");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%2e%2E"), "..", "either case");
        assert_eq!(percent_decode("%25"), "%");
    }

    #[test]
    fn ini_keeps_sections_and_entries_in_order_with_duplicates() {
        let ini = parse("\u{feff}[A]\r\nx=1\r\ny = two = 2 \r\nx=3\r\n[ B ]\nz=\n");
        assert_eq!(ini.sections.len(), 2);
        let a = &ini.sections[0];
        assert_eq!(a.name, "A");
        assert_eq!(
            a.entries,
            vec![
                ("x".to_string(), "1".to_string()),
                ("y".to_string(), "two = 2".to_string()),
                ("x".to_string(), "3".to_string()),
            ]
        );
        assert_eq!(
            a.get("X"),
            Some("1"),
            "the first duplicate, case-insensitively"
        );
        assert_eq!(ini.section("b").unwrap().get("z"), Some(""));
    }

    #[test]
    fn ini_skips_comments_and_counts_stray_lines() {
        let ini = parse("; comment\n# another\nstray line\n[S]\nk=v\n[not closed\n");
        assert_eq!(ini.stray_lines, 2, "the stray line and the unclosed header");
        assert_eq!(ini.sections.len(), 1);
        assert_eq!(ini.sections[0].get("k"), Some("v"));
    }

    #[test]
    fn ini_entries_before_any_header_sit_in_an_unnamed_section() {
        let ini = parse("k=v\n[S]\n");
        assert_eq!(ini.sections[0].name, "");
        assert_eq!(ini.sections[0].get("k"), Some("v"));
        assert_eq!(parse("").sections.len(), 0);
    }
}
