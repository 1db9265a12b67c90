//! Groups as stored, validated and shown: name, color and icon rules, the sibling-name keys,
//! and the " (2)" renaming that makes a clashing name free again.
//!
//! Invariants: pure values and rules, no I/O; a `GroupName` always holds a trimmed name of
//! 1-100 characters, its lowercase sort key and its caseless match key (model::fold), so
//! nothing unvalidated reaches the store. Siblings clash by the match key, never by the
//! lowercase.

use std::collections::HashSet;

use serde::Serialize;

use crate::model::fold;

/// README, Groups: a group name is 1-100 characters after trimming.
pub const NAME_MAX_CHARS: usize = 100;

/// README, Groups: an icon is a short identifier, `[a-z0-9_-]{1,64}`.
pub const ICON_MAX_CHARS: usize = 64;

/// The deepest a group may sit: a top-level group is at depth 1. A tree deeper than this
/// would nest its JSON past the 128 levels common parsers (serde_json among them) accept,
/// and would make the service recurse without bound while writing it.
pub const MAX_DEPTH: usize = 32;

/// One stored group row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub id: String,
    pub parent_id: Option<String>,
    pub name: String,
    /// `name` lowercased: what siblings are sorted by.
    pub name_key: String,
    pub color: String,
    pub icon: String,
    pub created_at: String,
    pub updated_at: String,
    /// Bumped by every edit (README, "Revisions and If-Match").
    pub revision: i64,
}

/// A validated name: trimmed, 1-100 characters, with its sort key and its match key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupName {
    text: String,
    key: String,
    fold_key: String,
}

/// A validated create request.
#[derive(Clone, Debug)]
pub struct NewGroup {
    pub name: GroupName,
    /// `None` for a top-level group.
    pub parent_id: Option<String>,
    pub color: String,
    pub icon: String,
}

/// A validated partial update: `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct GroupPatch {
    pub name: Option<GroupName>,
    /// `Some(None)` moves the group to the top level.
    pub parent_id: Option<Option<String>>,
    pub color: Option<String>,
    pub icon: Option<String>,
}

/// A group as the API shows it: the stored fields, its host counts and its sorted children.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupView {
    pub id: String,
    pub name: String,
    pub parent_id: Option<String>,
    pub color: String,
    pub icon: String,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
    /// Hosts directly in this group.
    pub host_count: u64,
    /// Hosts in this group and every group below it (extension, README, Groups).
    pub total_host_count: u64,
    pub children: Vec<GroupView>,
}

impl GroupName {
    /// Trims `raw` and checks its length in characters (not bytes). The error is the rule.
    pub fn parse(raw: &str) -> Result<GroupName, &'static str> {
        let text = raw.trim();
        // README, Groups: name 1-100 chars after trimming.
        if text.is_empty() {
            return Err("must not be empty (after trimming spaces)");
        }
        if text.chars().count() > NAME_MAX_CHARS {
            return Err("must be at most 100 characters (after trimming spaces)");
        }
        Ok(GroupName {
            text: text.to_owned(),
            key: name_key(text),
            fold_key: fold::key(text),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The lowercase key siblings are sorted by.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The caseless match key siblings must not share (README, Groups).
    pub fn fold_key(&self) -> &str {
        &self.fold_key
    }
}

/// The sort key of a trimmed name: Rust's full Unicode lowercase, which SQLite's NOCASE
/// (ASCII only) cannot give.
pub fn name_key(name: &str) -> String {
    name.trim().to_lowercase()
}

/// Checks a color: `#RRGGBB` in hex digits of either case, or `""` for none. The error is
/// the rule.
pub fn parse_color(raw: &str) -> Result<String, &'static str> {
    // README, Groups: color `#RRGGBB`; "" means no color.
    let valid = raw.is_empty()
        || (raw.len() == 7
            && raw.starts_with('#')
            && raw[1..].bytes().all(|byte| byte.is_ascii_hexdigit()));
    if !valid {
        return Err("must be a color of the form #RRGGBB (hex digits), or \"\" for none");
    }
    Ok(raw.to_owned())
}

/// Checks an icon name: `[a-z0-9_-]{1,64}`, or `""` for none. The error is the rule.
pub fn parse_icon(raw: &str) -> Result<String, &'static str> {
    // README, Groups: icon `[a-z0-9_-]{1,64}`; "" means no icon.
    let valid = raw.len() <= ICON_MAX_CHARS
        && raw
            .bytes()
            .all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
    if !valid {
        return Err("must be 1-64 characters of a-z, 0-9, _ and -, or \"\" for none");
    }
    Ok(raw.to_owned())
}

/// The name a group takes when `name` clashes at its new place: `name (2)`, `name (3)`, ...,
/// the first whose match key is not in `taken` (README, Groups). When the suffix would push
/// the name past 100 characters, the end of the name is cut so the result is exactly 100 or
/// fewer characters and still ends in the suffix.
pub fn free_name(name: &str, taken: &HashSet<String>) -> GroupName {
    let free = fold::free_name(name, NAME_MAX_CHARS, taken);
    match GroupName::parse(&free) {
        Ok(parsed) => parsed,
        // A name of 1-100 characters plus a suffix, cut to 100: always valid.
        Err(_) => GroupName {
            key: name_key(&free),
            fold_key: fold::key(&free),
            text: free,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use crate::model::group::{
        free_name, name_key, parse_color, parse_icon, GroupName, NAME_MAX_CHARS,
    };

    fn taken(keys: &[&str]) -> HashSet<String> {
        keys.iter().map(|key| key.to_string()).collect()
    }

    #[test]
    fn name_of_100_multibyte_chars_is_accepted() {
        let name = "é".repeat(100);
        assert_eq!(name.len(), 200, "two bytes per char");
        assert_eq!(GroupName::parse(&name).unwrap().as_str(), name);
    }

    #[test]
    fn name_of_101_chars_is_rejected() {
        assert!(GroupName::parse(&"a".repeat(101)).is_err());
    }

    #[test]
    fn name_is_trimmed_before_counting() {
        let padded = format!("  {}  ", "a".repeat(100));
        assert_eq!(GroupName::parse(&padded).unwrap().as_str(), "a".repeat(100));
    }

    #[test]
    fn name_of_only_spaces_is_rejected() {
        assert!(GroupName::parse(" \t ").is_err());
        assert!(GroupName::parse("").is_err());
    }

    #[test]
    fn name_key_folds_unicode_case() {
        assert_eq!(GroupName::parse(" ÄBC ").unwrap().key(), "äbc");
        assert_eq!(name_key("Prod"), name_key("pROD"));
    }

    #[test]
    fn names_that_differ_only_by_case_folding_or_composition_share_a_match_key() {
        for (one, other) in [
            ("Straße", "STRASSE"),
            ("ſsh", "SSH"),
            ("ıstanbul", "ISTANBUL"),
            ("Caf\u{e9}", "Cafe\u{301}"),
        ] {
            let (one, other) = (
                GroupName::parse(one).unwrap(),
                GroupName::parse(other).unwrap(),
            );
            assert_eq!(one.fold_key(), other.fold_key(), "{one:?} {other:?}");
            assert_ne!(one.as_str(), other.as_str(), "stored names stay as given");
        }
    }

    #[test]
    fn color_accepts_hex_of_either_case_and_empty() {
        assert_eq!(parse_color("#a1B2c3").unwrap(), "#a1B2c3");
        assert_eq!(parse_color("").unwrap(), "");
    }

    #[test]
    fn color_rejects_wrong_length_missing_hash_and_non_hex() {
        for bad in [
            "#12345", "#1234567", "123456", "#12345g", "#ééé", " #123456",
        ] {
            assert!(parse_color(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn icon_accepts_64_chars_and_empty() {
        assert!(parse_icon(&"a".repeat(64)).is_ok());
        assert!(parse_icon("server_rack-2").is_ok());
        assert!(parse_icon("").is_ok());
    }

    #[test]
    fn icon_rejects_65_chars_uppercase_and_spaces() {
        for bad in ["a".repeat(65), "Server".into(), "a b".into(), "ä".into()] {
            assert!(parse_icon(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn free_name_skips_numbers_whose_name_clashes_caselessly() {
        assert_eq!(
            free_name("Straße", &taken(&["strasse", "strasse (2)"])).as_str(),
            "Straße (3)"
        );
    }

    #[test]
    fn free_name_appends_the_first_free_number() {
        assert_eq!(free_name("Web", &taken(&["web"])).as_str(), "Web (2)");
        assert_eq!(
            free_name("Web", &taken(&["web", "web (2)", "web (3)"])).as_str(),
            "Web (4)"
        );
    }

    #[test]
    fn free_name_keeps_100_chars_by_cutting_the_name() {
        let long = "x".repeat(100);
        let renamed = free_name(&long, &taken(&[&long]));
        assert_eq!(renamed.as_str().chars().count(), NAME_MAX_CHARS);
        assert!(renamed.as_str().ends_with("x (2)"), "{}", renamed.as_str());
    }

    #[test]
    fn free_name_does_not_leave_a_double_space_when_cutting() {
        let name = format!("{} tail", "y".repeat(95));
        let renamed = free_name(&name, &taken(&[&name_key(&name)]));
        assert_eq!(renamed.as_str(), format!("{} (2)", "y".repeat(95)));
    }
}
