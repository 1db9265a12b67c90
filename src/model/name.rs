//! The name of a host, a group or a key: one rule for all three (docs/api.md, Hosts, Groups and
//! Keys: 1-100 characters once surrounding whitespace is trimmed), its sort key, its caseless
//! match key, and the " (2)" renaming that makes a clashing name free again.
//!
//! Invariants: pure, no I/O; a `Name` always holds a trimmed text of 1-100 characters
//! (Unicode scalar values, not bytes) with the two keys derived from exactly that text, so
//! nothing unchecked reaches the store; a refusal names the field `name` and the rule, never
//! the value. Sibling groups and keys clash by the match key (model::fold), never by the
//! sort key.

use std::collections::HashSet;

use serde_json::Value;

use crate::model::fold;
use crate::model::validate::Invalid;

/// docs/api.md, Hosts, Groups and Keys: a name is 1-100 characters after trimming.
pub const MAX_NAME_CHARS: usize = 100;

/// The rule a refused name breaks, as the error's details say it.
pub const NAME_RULE: &str =
    "must be a string of 1 to 100 characters (surrounding spaces are trimmed)";

/// The rule when a create has no name.
const REQUIRED_RULE: &str =
    "is required: a string of 1 to 100 characters (surrounding spaces are trimmed)";

/// A checked name with its keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    text: String,
    key: String,
    fold_key: String,
}

impl Name {
    /// A name from a request body's `name` value: a JSON string of 1-100 characters once
    /// trimmed.
    pub fn parse(value: &Value) -> Result<Name, Invalid> {
        match value {
            Value::String(text) => Name::from_text(text),
            _ => Err(Invalid::new("name", NAME_RULE)),
        }
    }

    /// `parse` for a field a create requires: absent and `null` are "is required".
    pub fn required(value: Option<&Value>) -> Result<Name, Invalid> {
        match value {
            None | Some(Value::Null) => Err(Invalid::new("name", REQUIRED_RULE)),
            Some(value) => Name::parse(value),
        }
    }

    /// A name from text that did not come as JSON (a file name, a key's comment, a Host
    /// line), checked by the same rule.
    pub fn from_text(raw: &str) -> Result<Name, Invalid> {
        let text = raw.trim();
        let chars = text.chars().count();
        if chars == 0 || chars > MAX_NAME_CHARS {
            return Err(Invalid::new("name", NAME_RULE));
        }
        Ok(Name {
            text: text.to_owned(),
            key: sort_key(text),
            fold_key: fold::key(text),
        })
    }

    /// The name a row takes when `name` clashes at its place: `name (2)`, `name (3)`, ...,
    /// the first whose match key is not in `taken` (docs/api.md, Groups and Keys). When the
    /// suffix would push the name past 100 characters, the end of the name is cut so the
    /// result still ends in the suffix.
    pub fn free(name: &str, taken: &HashSet<String>) -> Name {
        let text = fold::free_name(name, MAX_NAME_CHARS, taken);
        // The suffix alone is a valid name, and the stem is cut to leave room for it, so
        // this never falls back; if it did, the text would still be trimmed and short.
        Name::from_text(&text).unwrap_or_else(|_| Name {
            key: sort_key(&text),
            fold_key: fold::key(&text),
            text,
        })
    }

    /// The name of a copy (`POST /api/hosts/:id/duplicate`, docs/api.md, Hosts):
    /// `<name> (copy)`, the end of `name` cut so the result keeps to 100 characters.
    pub fn copy_of(name: &str) -> Name {
        const SUFFIX: &str = " (copy)";
        let room = MAX_NAME_CHARS - SUFFIX.chars().count();
        let stem: String = name.trim().chars().take(room).collect();
        let text = format!("{}{SUFFIX}", stem.trim_end());
        // The stem is cut to leave room for the suffix, so this never falls back; if it
        // did, the text would still be trimmed and short.
        Name::from_text(&text).unwrap_or_else(|_| Name {
            key: sort_key(&text),
            fold_key: fold::key(&text),
            text,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The lowercase key rows are sorted by (`name_key` columns).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The caseless match key siblings must not share (`fold_key` columns).
    pub fn fold_key(&self) -> &str {
        &self.fold_key
    }

    pub fn into_string(self) -> String {
        self.text
    }
}

/// The sort key of a name: Rust's full Unicode lowercase of the trimmed text, which SQLite's
/// NOCASE (ASCII only) cannot give.
pub fn sort_key(name: &str) -> String {
    name.trim().to_lowercase()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use serde_json::{json, Value};

    use crate::model::name::{sort_key, Name, MAX_NAME_CHARS};

    fn taken(keys: &[&str]) -> HashSet<String> {
        keys.iter().map(|key| key.to_string()).collect()
    }

    #[test]
    fn a_copy_is_named_with_the_copy_suffix_within_100_characters() {
        assert_eq!(Name::copy_of(" web 1 ").as_str(), "web 1 (copy)");
        let long = "é".repeat(100);
        let copy = Name::copy_of(&long);
        assert_eq!(copy.as_str().chars().count(), MAX_NAME_CHARS);
        assert!(copy.as_str().ends_with("é (copy)"));
        // A cut that lands on a space does not leave two spaces before the suffix.
        let spaced = format!("{} {}", "a".repeat(92), "b".repeat(7));
        assert_eq!(
            Name::copy_of(&spaced).as_str(),
            format!("{} (copy)", "a".repeat(92))
        );
    }

    #[test]
    fn name_of_100_multibyte_chars_is_accepted() {
        let name = "é".repeat(100);
        assert_eq!(name.len(), 200, "two bytes per char");
        assert_eq!(Name::parse(&json!(name)).unwrap().as_str(), name);
    }

    #[test]
    fn name_of_101_chars_is_rejected_naming_the_field() {
        let err = Name::parse(&json!("x".repeat(101))).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule.as_str()),
            ("name", super::NAME_RULE)
        );
    }

    #[test]
    fn name_of_100_chars_is_accepted_after_trimming_and_101_is_not() {
        let padded = format!("  {}  ", "a".repeat(100));
        assert_eq!(
            Name::parse(&json!(padded)).unwrap().as_str(),
            "a".repeat(100)
        );
        assert!(Name::parse(&json!(format!(" {} ", "a".repeat(101)))).is_err());
    }

    #[test]
    fn name_of_one_char_is_accepted_and_blank_is_rejected() {
        assert_eq!(Name::parse(&json!("a")).unwrap().as_str(), "a");
        for blank in ["", "   ", " \t "] {
            assert_eq!(
                Name::parse(&json!(blank)).unwrap_err().field,
                "name",
                "{blank:?}"
            );
        }
    }

    #[test]
    fn name_that_is_not_a_string_is_rejected() {
        for value in [json!(null), json!(5), json!(["a"]), json!({"a": 1})] {
            assert_eq!(Name::parse(&value).unwrap_err().field, "name", "{value}");
        }
    }

    #[test]
    fn required_name_absent_or_null_says_it_is_required() {
        for value in [None, Some(&Value::Null)] {
            let err = Name::required(value).unwrap_err();
            assert!(err.rule.starts_with("is required"), "{}", err.rule);
        }
        assert_eq!(Name::required(Some(&json!(" k "))).unwrap().as_str(), "k");
    }

    #[test]
    fn sort_key_is_the_unicode_lowercase_of_the_trimmed_name() {
        assert_eq!(Name::parse(&json!(" ÄBC ")).unwrap().key(), "äbc");
        assert_eq!(sort_key("Prod"), sort_key("pROD"));
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
                Name::from_text(one).unwrap(),
                Name::from_text(other).unwrap(),
            );
            assert_eq!(one.fold_key(), other.fold_key(), "{one:?} {other:?}");
            assert_ne!(one.as_str(), other.as_str(), "stored names stay as given");
        }
    }

    #[test]
    fn free_name_skips_numbers_whose_name_clashes_caselessly() {
        assert_eq!(
            Name::free("Straße", &taken(&["strasse", "strasse (2)"])).as_str(),
            "Straße (3)"
        );
    }

    #[test]
    fn free_name_appends_the_first_free_number() {
        assert_eq!(Name::free("Web", &taken(&["web"])).as_str(), "Web (2)");
        assert_eq!(
            Name::free("Web", &taken(&["web", "web (2)", "web (3)"])).as_str(),
            "Web (4)"
        );
    }

    #[test]
    fn free_name_keeps_100_chars_by_cutting_the_name() {
        let long = "x".repeat(100);
        let renamed = Name::free(&long, &taken(&[&long]));
        assert_eq!(renamed.as_str().chars().count(), MAX_NAME_CHARS);
        assert!(renamed.as_str().ends_with("x (2)"), "{}", renamed.as_str());
    }

    #[test]
    fn free_name_does_not_leave_a_double_space_when_cutting() {
        let name = format!("{} tail", "y".repeat(95));
        let renamed = Name::free(&name, &taken(&[&sort_key(&name)]));
        assert_eq!(renamed.as_str(), format!("{} (2)", "y".repeat(95)));
    }
}
