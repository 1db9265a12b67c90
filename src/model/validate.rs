//! Field rules: pure checks from JSON values to typed values, and `Invalid`, the one error
//! every rule of `model/` answers with (the api layer turns it into 400 `VALIDATION_ERROR`,
//! in `error.rs`).
//!
//! Invariants: no I/O; an `Invalid` names the field and the rule and never echoes the value
//! (it could be a password pasted into the wrong field). Lengths count characters (Unicode
//! scalar values), not bytes.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::Value;

/// docs/api.md, Hosts and its limits: a username is 1-100 characters.
pub const MAX_USERNAME_CHARS: usize = 100;
/// RFC 1123 / RFC 1035: at most 253 characters (without the optional trailing dot) and
/// labels of 1-63 characters.
pub const MAX_HOSTNAME_CHARS: usize = 253;
pub const MAX_LABEL_CHARS: usize = 63;
/// docs/api.md, Hosts: each tag 1-64 characters, at most 64 tags.
pub const MAX_TAG_CHARS: usize = 64;
pub const MAX_TAGS: usize = 64;
/// docs/api.md, Hosts: notes at most 10,000 characters.
pub const MAX_NOTES_CHARS: usize = 10_000;

/// Characters a username may not hold (docs/api.md, Hosts): OpenSSH's own refusals (ssh.c's
/// `valid_ruser`: the shell's quoting and control characters, since a jump host's user goes
/// into a command line) and the separators of `ssh -J user@host:port,next` and of
/// `ssh://` addresses, so a username can never add a hop or a host.
pub const USERNAME_REFUSED: &[char] = &[
    '\'', '`', '"', ';', '&', '<', '>', '|', '(', ')', '{', '}', '@', ',', ':', '/',
];

/// A broken rule: which field (a body field, `tags[3]`, or a query parameter), and what the
/// rule is. Carries no input value.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub rule: String,
}

impl Invalid {
    pub fn new(field: &str, rule: impl Into<String>) -> Invalid {
        Invalid {
            field: field.to_owned(),
            rule: rule.into(),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.rule)
    }
}

impl std::error::Error for Invalid {}

/// A string that is 1 to `max` characters long once surrounding whitespace is trimmed;
/// returns the trimmed text.
pub fn trimmed_text(field: &str, value: &Value, max: usize) -> Result<String, Invalid> {
    match value {
        Value::String(text) => trimmed_str(field, text, max),
        _ => Err(Invalid::new(field, trimmed_rule(max))),
    }
}

/// `trimmed_text` for text that did not come as JSON (an imported file's value).
pub fn trimmed_str(field: &str, text: &str, max: usize) -> Result<String, Invalid> {
    let trimmed = text.trim();
    let chars = trimmed.chars().count();
    if chars == 0 || chars > max {
        return Err(Invalid::new(field, trimmed_rule(max)));
    }
    Ok(trimmed.to_owned())
}

fn trimmed_rule(max: usize) -> String {
    format!("must be a string of 1 to {max} characters (surrounding spaces are trimmed)")
}

/// docs/api.md, Hosts: a username is 1-100 characters after trimming, of what OpenSSH
/// accepts as a remote user and what keeps `proxy_jump` one hop per host (see
/// `username_problem`).
pub fn username(value: &Value) -> Result<String, Invalid> {
    match value {
        Value::String(text) => username_text(text),
        _ => Err(Invalid::new("username", trimmed_rule(MAX_USERNAME_CHARS))),
    }
}

/// `username` for text that did not come as JSON (an import's `User`, the import's default
/// user): the one username rule of every path that stores one. Returns the trimmed text.
pub fn username_text(text: &str) -> Result<String, Invalid> {
    let text = trimmed_str("username", text, MAX_USERNAME_CHARS)?;
    match username_problem(&text) {
        None => Ok(text),
        Some(rule) => Err(Invalid::new("username", rule)),
    }
}

/// Why `text` cannot be a username, or `None` when it can: no leading `-` (ssh would read an
/// option), no control character (a newline, NUL, ...), no whitespace, none of
/// `USERNAME_REFUSED`, no trailing backslash (OpenSSH refuses it).
pub fn username_problem(text: &str) -> Option<&'static str> {
    if text.starts_with('-') {
        return Some("must not start with '-' (ssh would read it as an option)");
    }
    if text.chars().any(char::is_control) {
        return Some("must not contain control characters (newline, tab, NUL, ...)");
    }
    if text.chars().any(char::is_whitespace) {
        return Some("must not contain spaces or other whitespace");
    }
    if text.contains(USERNAME_REFUSED) {
        return Some(
            "must not contain any of @ , : / ' ` \" ; & < > | ( ) { } (ssh -J and the shell \
             read them as separators or syntax)",
        );
    }
    if text.ends_with('\\') {
        return Some("must not end with a backslash");
    }
    None
}

/// docs/api.md, Hosts: port is a JSON integer 1-65535; strings ("22") and numbers written
/// with a fraction or exponent (22.5, 22.0, 2.2e1) are refused.
pub fn port(value: &Value) -> Result<u16, Invalid> {
    match value {
        Value::Number(number) => match number.as_u64() {
            Some(number) => port_number(number),
            None => Err(Invalid::new("port", PORT_RULE)),
        },
        _ => Err(Invalid::new("port", PORT_RULE)),
    }
}

const PORT_RULE: &str = "must be a JSON integer from 1 to 65535";

/// `port` for a number that did not come as JSON (an import's `Port`): 1-65535.
pub fn port_number(number: u64) -> Result<u16, Invalid> {
    match u16::try_from(number) {
        Ok(port) if port >= 1 => Ok(port),
        _ => Err(Invalid::new("port", "must be an integer from 1 to 65535")),
    }
}

/// docs/api.md, Hosts: a hostname is bare: an RFC 1123 DNS name or an IPv4/IPv6 literal.
/// Returns the text unchanged (case kept).
pub fn hostname(value: &Value) -> Result<String, Invalid> {
    match value {
        Value::String(text) => hostname_text(text),
        _ => Err(Invalid::new("hostname", "must be a string")),
    }
}

/// `hostname` for text that did not come as JSON (an import's `HostName`).
pub fn hostname_text(text: &str) -> Result<String, Invalid> {
    match hostname_problem(text) {
        None => Ok(text.to_owned()),
        Some(rule) => Err(Invalid::new("hostname", rule)),
    }
}

/// Why `text` is not a bare hostname, or `None` when it is one.
///
/// Accepted: IPv4 dotted quads (Rust's parser: no leading zeros), IPv6 literals without
/// brackets or zone (`::1`, `fe80::1`), and DNS names of labels `[A-Za-z0-9-]{1,63}` that
/// neither start nor end with a hyphen, at most 253 characters, with one optional trailing
/// dot (an absolute name). A name whose last label is all digits is refused: RFC 1123 §2.1
/// says a host name never has the dotted-decimal form, so `1.2.3.256` is a broken address,
/// not a name.
pub fn hostname_problem(text: &str) -> Option<&'static str> {
    const BARE: &str = "must be a bare DNS name or IP address: letters, digits, hyphens and dots, \
                        or an IPv6 address without brackets (no port, user, scheme or spaces)";
    if text.is_empty() {
        return Some("must not be empty");
    }
    if text.parse::<Ipv4Addr>().is_ok() {
        return None;
    }
    if text.contains(':') {
        return match text.parse::<Ipv6Addr>() {
            Ok(_) => None,
            Err(_) => Some(BARE),
        };
    }
    let name = text.strip_suffix('.').unwrap_or(text);
    if name.chars().count() > MAX_HOSTNAME_CHARS {
        return Some("must be at most 253 characters (without a trailing dot)");
    }
    let mut last_label = "";
    for label in name.split('.') {
        if label.is_empty() {
            return Some("must not have an empty label (two dots in a row, or a leading dot)");
        }
        if !label
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
        {
            return Some(BARE);
        }
        if label.len() > MAX_LABEL_CHARS {
            return Some("must not have a label longer than 63 characters");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some("must not have a label that starts or ends with a hyphen");
        }
        last_label = label;
    }
    if last_label.bytes().all(|byte| byte.is_ascii_digit()) {
        return Some("is neither a valid IP address nor a DNS name (the last label is all digits)");
    }
    None
}

/// docs/api.md, Hosts: `#RRGGBB` (hex digits in either case), or `""` for no colour.
pub fn color(value: &Value) -> Result<String, Invalid> {
    let rule = "must be \"\" or a colour of the form #RRGGBB";
    let Value::String(text) = value else {
        return Err(Invalid::new("color", rule));
    };
    let is_hex_colour = text.len() == 7
        && text.starts_with('#')
        && text.bytes().skip(1).all(|byte| byte.is_ascii_hexdigit());
    if text.is_empty() || is_hex_colour {
        return Ok(text.clone());
    }
    Err(Invalid::new("color", rule))
}

/// docs/api.md, Hosts: an array of strings, each 1-64 characters after trimming; repeats
/// (after trimming, compared exactly) are dropped keeping the first; at most 64 distinct tags.
pub fn tags(value: &Value) -> Result<Vec<String>, Invalid> {
    let Value::Array(items) = value else {
        return Err(Invalid::new("tags", "must be an array of strings"));
    };
    let mut tags: Vec<String> = Vec::with_capacity(items.len().min(MAX_TAGS));
    for (index, item) in items.iter().enumerate() {
        let tag = trimmed_text(&format!("tags[{index}]"), item, MAX_TAG_CHARS)?;
        if tags.contains(&tag) {
            continue;
        }
        if tags.len() == MAX_TAGS {
            return Err(Invalid::new("tags", "must hold at most 64 distinct tags"));
        }
        tags.push(tag);
    }
    Ok(tags)
}

/// docs/api.md, Hosts: free text of at most 10,000 characters, kept as given.
pub fn notes(value: &Value) -> Result<String, Invalid> {
    match value {
        Value::String(text) if text.chars().count() <= MAX_NOTES_CHARS => Ok(text.clone()),
        _ => Err(Invalid::new(
            "notes",
            "must be a string of at most 10000 characters",
        )),
    }
}

/// docs/api.md, Hosts: `order` is a JSON integer that fits 64 bits (no fraction or exponent).
pub fn order(value: &Value) -> Result<i64, Invalid> {
    match value {
        Value::Number(number) => number.as_i64(),
        _ => None,
    }
    .ok_or_else(|| {
        Invalid::new(
            "order",
            "must be a JSON integer from -9223372036854775808 to 9223372036854775807",
        )
    })
}

/// A JSON boolean.
pub fn boolean(field: &str, value: &Value) -> Result<bool, Invalid> {
    match value {
        Value::Bool(flag) => Ok(*flag),
        _ => Err(Invalid::new(field, "must be true or false")),
    }
}

/// A reference to another resource: `null` or `""` mean none, any other string is an id
/// (whether it exists is checked against the database later).
pub fn optional_id(field: &str, value: &Value) -> Result<Option<String>, Invalid> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.is_empty() => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(Invalid::new(field, "must be a string id, \"\" or null")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use crate::model::validate::{
        color, hostname, hostname_problem, notes, optional_id, order, port, tags, trimmed_text,
        username, username_problem, Invalid,
    };

    fn label(len: usize) -> String {
        "a".repeat(len)
    }

    /// A name of exactly `len` characters made of 63-character labels.
    fn dns_name(len: usize) -> String {
        let mut name = String::new();
        while name.len() < len {
            if !name.is_empty() {
                name.push('.');
            }
            let room = len - name.len();
            name.push_str(&label(room.min(63)));
        }
        // A label of one character after a dot is fine; never end with a dot here.
        assert_eq!(name.len(), len);
        name
    }

    #[test]
    fn text_of_max_chars_is_accepted_and_one_more_is_rejected_naming_the_field() {
        let text = "é".repeat(100);
        assert_eq!(trimmed_text("field", &json!(text), 100).unwrap(), text);
        let err = trimmed_text("field", &json!("x".repeat(101)), 100).unwrap_err();
        assert_eq!(err.field, "field");
    }

    #[test]
    fn text_length_counts_chars_not_bytes() {
        // 100 three-byte characters: 300 bytes, still 100 characters.
        assert_eq!(
            trimmed_text("field", &json!("€".repeat(100)), 100).unwrap(),
            "€".repeat(100)
        );
        assert_eq!(
            trimmed_text("field", &json!("€".repeat(101)), 100)
                .unwrap_err()
                .field,
            "field"
        );
    }

    #[test]
    fn text_is_trimmed_before_counting() {
        let padded = format!("  {}  ", "x".repeat(100));
        assert_eq!(
            trimmed_text("field", &json!(padded), 100).unwrap(),
            "x".repeat(100)
        );
    }

    #[test]
    fn text_of_one_char_is_accepted_and_blank_is_rejected() {
        assert_eq!(trimmed_text("field", &json!("a"), 100).unwrap(), "a");
        for blank in ["", "   "] {
            assert_eq!(
                trimmed_text("field", &json!(blank), 100).unwrap_err().field,
                "field"
            );
        }
    }

    #[test]
    fn text_that_is_not_a_string_is_rejected() {
        for value in [json!(null), json!(5), json!(["a"]), json!({"a": 1})] {
            assert_eq!(
                trimmed_text("field", &value, 100).unwrap_err().field,
                "field",
                "{value}"
            );
        }
    }

    #[test]
    fn usernames_openssh_accepts_are_accepted() {
        for text in [
            "root",
            "deploy-user",
            "j.doe_2",
            "DOMAIN\\admin",
            "machine$",
            "élodie",
            "a",
            "user-",
            "%u",
        ] {
            assert_eq!(username_problem(text), None, "{text:?}");
        }
        assert_eq!(username(&json!(" root ")).unwrap(), "root");
        assert_eq!(username(&json!("u".repeat(100))).unwrap(), "u".repeat(100));
    }

    #[test]
    fn username_that_could_add_a_hop_is_rejected() {
        for text in [
            "ops@127.0.0.1:1,ops",
            "ops,root",
            "ops@bastion",
            "ops:22",
            "ssh://x",
        ] {
            assert!(username_problem(text).is_some(), "{text:?}");
        }
    }

    #[test]
    fn username_with_control_characters_or_whitespace_is_rejected() {
        for text in [
            "ops\nroot",
            "ops\0",
            "o\tps",
            "john doe",
            "ops\u{7f}",
            "a\u{85}b",
            "a\u{a0}b",
        ] {
            assert!(username_problem(text).is_some(), "{text:?}");
        }
    }

    #[test]
    fn username_with_a_leading_hyphen_is_rejected_and_an_inner_one_accepted() {
        assert!(username_problem("-oProxyCommand=x").is_some());
        assert!(username_problem("-").is_some());
        assert_eq!(username_problem("a-b"), None);
    }

    #[test]
    fn username_with_shell_syntax_or_a_trailing_backslash_is_rejected() {
        for text in [
            "a'b", "a`b", "a\"b", "a;b", "a&b", "a<b", "a>b", "a|b", "a(b", "a)b", "a{b", "a}b",
            "admin\\",
        ] {
            assert!(username_problem(text).is_some(), "{text:?}");
        }
    }

    #[test]
    fn username_of_101_chars_is_rejected() {
        assert_eq!(
            username(&json!("u".repeat(101))).unwrap_err().field,
            "username"
        );
    }

    #[test]
    fn port_edges() {
        assert!(port(&json!(0)).is_err());
        assert_eq!(port(&json!(1)).unwrap(), 1);
        assert_eq!(port(&json!(65535)).unwrap(), 65535);
        assert!(port(&json!(65536)).is_err());
        assert!(port(&json!(-22)).is_err());
    }

    #[test]
    fn port_that_is_not_a_json_integer_is_rejected() {
        let float: Value = serde_json::from_str("22.0").unwrap();
        let exponent: Value = serde_json::from_str("2.2e1").unwrap();
        for value in [
            json!("22"),
            json!(22.5),
            float,
            exponent,
            json!(null),
            json!(true),
        ] {
            assert_eq!(port(&value).unwrap_err().field, "port", "{value}");
        }
    }

    #[test]
    fn hostname_label_of_63_chars_is_accepted() {
        assert_eq!(hostname_problem(&format!("{}.com", label(63))), None);
    }

    #[test]
    fn hostname_label_of_64_chars_is_rejected() {
        assert!(hostname_problem(&format!("{}.com", label(64))).is_some());
    }

    #[test]
    fn hostname_of_253_chars_is_accepted() {
        assert_eq!(hostname_problem(&dns_name(253)), None);
    }

    #[test]
    fn hostname_of_254_chars_is_rejected() {
        assert!(hostname_problem(&dns_name(254)).is_some());
    }

    #[test]
    fn hostname_of_253_chars_plus_trailing_dot_is_accepted() {
        assert_eq!(hostname_problem(&format!("{}.", dns_name(253))), None);
    }

    #[test]
    fn hostname_with_one_trailing_dot_is_accepted_and_two_are_rejected() {
        assert_eq!(hostname_problem("example.com."), None);
        assert!(hostname_problem("example.com..").is_some());
        assert!(hostname_problem(".").is_some());
        assert!(hostname_problem(".example.com").is_some());
    }

    #[test]
    fn hostname_label_hyphens() {
        assert!(hostname_problem("-web.example.com").is_some());
        assert!(hostname_problem("web-.example.com").is_some());
        assert_eq!(hostname_problem("web-1.example.com"), None);
        assert_eq!(hostname_problem("a"), None);
        assert_eq!(hostname_problem("1a"), None);
    }

    #[test]
    fn hostname_ip_literals_are_accepted() {
        for text in [
            "10.0.0.1",
            "255.255.255.255",
            "::1",
            "fe80::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:192.0.2.1",
        ] {
            assert_eq!(hostname_problem(text), None, "{text}");
        }
    }

    #[test]
    fn hostname_that_is_not_bare_is_rejected() {
        for text in [
            "[::1]",
            "host:22",
            "user@host",
            "ssh://host",
            "web 1",
            " web",
            "web\n",
            "",
            "fe80::1%eth0",
            "web_1.example.com",
            "bücher.example",
            "1.2.3.256",
            "1.2.3",
            "12345",
            "010.0.0.1",
            "::1::",
        ] {
            assert!(hostname_problem(text).is_some(), "{text:?}");
        }
    }

    #[test]
    fn hostname_keeps_case_and_rejects_non_strings() {
        assert_eq!(
            hostname(&json!("Web.Example.COM")).unwrap(),
            "Web.Example.COM"
        );
        assert_eq!(hostname(&json!(12)).unwrap_err().field, "hostname");
    }

    #[test]
    fn color_forms() {
        assert_eq!(color(&json!("#00ff7F")).unwrap(), "#00ff7F");
        assert_eq!(color(&json!("")).unwrap(), "");
        for bad in [
            json!("#00ff7"),
            json!("#00ff7f0"),
            json!("00ff7f"),
            json!("#00fg7f"),
            json!("red"),
            json!(1),
        ] {
            assert!(color(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tags_are_trimmed_and_deduplicated_in_order() {
        assert_eq!(
            tags(&json!(["b", " a ", "b", "a", "c"])).unwrap(),
            vec!["b", "a", "c"]
        );
    }

    #[test]
    fn tag_of_64_chars_is_accepted_and_65_rejected() {
        assert_eq!(tags(&json!(["t".repeat(64)])).unwrap(), ["t".repeat(64)]);
        let err = tags(&json!(["ok", "t".repeat(65)])).unwrap_err();
        assert_eq!(err, Invalid::new("tags[1]", err.rule.clone()));
    }

    #[test]
    fn empty_tag_is_rejected() {
        assert_eq!(tags(&json!(["a", "  "])).unwrap_err().field, "tags[1]");
    }

    #[test]
    fn sixty_four_tags_are_accepted_and_sixty_five_rejected() {
        let many: Vec<String> = (0..65).map(|n| format!("t{n}")).collect();
        assert_eq!(tags(&json!(many[..64])).unwrap().len(), 64);
        assert_eq!(tags(&json!(many)).unwrap_err().field, "tags");
    }

    #[test]
    fn repeats_do_not_count_towards_the_tag_limit() {
        let mut many: Vec<String> = (0..64).map(|n| format!("t{n}")).collect();
        many.push("t0".into());
        assert_eq!(tags(&json!(many)).unwrap().len(), 64);
    }

    #[test]
    fn tags_must_be_an_array_of_strings() {
        assert_eq!(tags(&json!("a,b")).unwrap_err().field, "tags");
        assert_eq!(tags(&json!(["a", 1])).unwrap_err().field, "tags[1]");
    }

    #[test]
    fn notes_of_10000_chars_are_accepted_and_10001_rejected() {
        assert_eq!(
            notes(&json!("ü".repeat(10_000))).unwrap(),
            "ü".repeat(10_000)
        );
        assert_eq!(
            notes(&json!("n".repeat(10_001))).unwrap_err().field,
            "notes"
        );
        assert_eq!(notes(&json!("")).unwrap(), "");
    }

    #[test]
    fn order_takes_any_64_bit_integer_only() {
        assert_eq!(order(&json!(i64::MIN)).unwrap(), i64::MIN);
        assert_eq!(order(&json!(i64::MAX)).unwrap(), i64::MAX);
        assert!(order(&json!(u64::MAX)).is_err());
        assert!(order(&json!(1.5)).is_err());
        assert!(order(&json!("1")).is_err());
    }

    #[test]
    fn optional_id_treats_null_and_empty_as_none() {
        assert_eq!(optional_id("group_id", &json!(null)).unwrap(), None);
        assert_eq!(optional_id("group_id", &json!("")).unwrap(), None);
        assert_eq!(
            optional_id("group_id", &json!("abc")).unwrap(),
            Some("abc".to_string())
        );
        assert!(optional_id("group_id", &json!(7)).is_err());
    }
}
