//! A host's startup command and environment (docs/forwards.md, "Startup command and
//! environment"): `remote_command`, `request_tty`, `set_env` and `send_env`, their rules,
//! and the ssh_config lines the export writes for them and reads back.
//!
//! Invariants: pure, no I/O; no secret value lives here: the api layer takes a secret
//! `set_env` value out of the body first and says only at which index one was given; what
//! the line writers emit, `ssh` reads back to the same value, and so do the readers here.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::model::ssh_words::{quote_arg, split_args};
use crate::model::validate::Invalid;

/// This service's limits: at most 64 `set_env` entries and 64 `send_env` patterns.
pub const MAX_ENV_ENTRIES: usize = 64;

/// This service's limit: a variable name or a pattern is at most 128 characters.
pub const MAX_ENV_NAME_CHARS: usize = 128;

/// This service's limit: a value or a remote command is at most 4,096 characters.
pub const MAX_ENV_VALUE_CHARS: usize = 4096;

/// `RequestTTY`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestTty {
    Auto,
    Yes,
    No,
    Force,
}

impl RequestTty {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestTty::Auto => "auto",
            RequestTty::Yes => "yes",
            RequestTty::No => "no",
            RequestTty::Force => "force",
        }
    }

    /// The API's word (lower case only); an ssh_config value is read with `from_config`.
    pub fn parse(text: &str) -> Option<RequestTty> {
        match text {
            "auto" => Some(RequestTty::Auto),
            "yes" => Some(RequestTty::Yes),
            "no" => Some(RequestTty::No),
            "force" => Some(RequestTty::Force),
            _ => None,
        }
    }
}

/// One `set_env` entry's value: plain text, or a sealed secret (its value lives in the
/// vault; `given` says the request carried a new one, else the stored one is kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvValue {
    Plain(String),
    Secret { given: bool },
}

/// One `set_env` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvEntry {
    pub name: String,
    pub value: EnvValue,
}

/// `remote_command`: `null` or `""` is none; else one line, no NUL, at most
/// `MAX_ENV_VALUE_CHARS`, trimmed of blanks, with quotes that balance as `ssh` reads the
/// line (it refuses the whole config otherwise); not `none` (any case: `ssh` reads that as
/// no command) and not starting with `=` (`ssh` skips every `=` after the keyword).
pub fn remote_command(value: &Value) -> Result<Option<String>, Invalid> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => {
            remote_command_text(text).map_err(|rule| Invalid::new("remote_command", rule))
        }
        _ => Err(Invalid::new("remote_command", "must be a string or null")),
    }
}

/// The rule of `remote_command` on text: `None` for blank text.
fn remote_command_text(text: &str) -> Result<Option<String>, &'static str> {
    let command = text.trim_matches(|c| c == ' ' || c == '\t');
    if command.is_empty() {
        return Ok(None);
    }
    if let Some(problem) = line_problem(command) {
        return Err(problem);
    }
    if split_args(command).is_err() {
        return Err(
            "must have balanced quotes as ssh reads a config line (it refuses the \
                    whole file otherwise): close each \" and ', or escape it with \\",
        );
    }
    if command.eq_ignore_ascii_case("none") {
        return Err("must not be none: ssh reads RemoteCommand none as no command");
    }
    if command.starts_with('=') {
        return Err("must not start with = (ssh skips every = and blank after the keyword)");
    }
    Ok(Some(command.to_owned()))
}

/// Why `text` is not one line of at most `MAX_ENV_VALUE_CHARS`: a line break, NUL or other
/// control character (a tab is allowed), or its length.
fn line_problem(text: &str) -> Option<&'static str> {
    if text.chars().any(|c| c.is_control() && c != '\t') {
        return Some("must be one line: no line break, NUL or other control character");
    }
    if text.chars().count() > MAX_ENV_VALUE_CHARS {
        return Some("must be at most 4096 characters");
    }
    None
}

/// `request_tty`: `null` (not written: `ssh` decides) or one of `RequestTty`.
pub fn request_tty(value: &Value) -> Result<Option<RequestTty>, Invalid> {
    match value {
        Value::Null => Ok(None),
        _ => value
            .as_str()
            .and_then(RequestTty::parse)
            .map(Some)
            .ok_or_else(|| Invalid::new("request_tty", "must be auto, yes, no, force or null")),
    }
}

/// `set_env`: an array of `{name, value}` or `{name, secret: true}`; `null` is none.
/// `secrets_given` holds the indexes whose secret value the api layer took out (an entry
/// with `secret: true` that still carries a non-null `value` counts as given too; its text
/// is never read here). Names are POSIX portable names, unique in the list; a plain value
/// keeps `secret_value_problem`'s rule.
pub fn set_env(value: &Value, secrets_given: &BTreeSet<usize>) -> Result<Vec<EnvEntry>, Invalid> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => return Err(Invalid::new("set_env", "must be an array of {name, value}")),
    };
    if items.len() > MAX_ENV_ENTRIES {
        return Err(Invalid::new("set_env", "must hold at most 64 entries"));
    }
    let mut names = BTreeSet::new();
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let entry = set_env_entry(index, item, secrets_given.contains(&index))?;
        if !names.insert(entry.name.clone()) {
            return Err(Invalid::new(
                &format!("set_env[{index}].name"),
                "must be unique in the list",
            ));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn set_env_entry(index: usize, item: &Value, secret_given: bool) -> Result<EnvEntry, Invalid> {
    let field = |name: &str| format!("set_env[{index}].{name}");
    let Some(object) = item.as_object() else {
        return Err(Invalid::new(
            &format!("set_env[{index}]"),
            "must be an object {name, value}",
        ));
    };
    let name = match object.get("name").and_then(Value::as_str) {
        Some(name) => name,
        None => return Err(Invalid::new(&field("name"), "required: a string")),
    };
    if let Some(problem) = name_problem(name) {
        return Err(Invalid::new(&field("name"), problem));
    }
    let secret = match object.get("secret") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(secret)) => *secret,
        Some(_) => return Err(Invalid::new(&field("secret"), "must be a boolean")),
    };
    let value = if secret {
        EnvValue::Secret {
            given: secret_given || object.get("value").is_some_and(|value| !value.is_null()),
        }
    } else {
        let text = match object.get("value").and_then(Value::as_str) {
            Some(text) => text,
            None => return Err(Invalid::new(&field("value"), "required: a string")),
        };
        if let Some(problem) = secret_value_problem(text) {
            return Err(Invalid::new(&field("value"), problem));
        }
        EnvValue::Plain(text.to_owned())
    };
    Ok(EnvEntry {
        name: name.to_owned(),
        value,
    })
}

/// Why `name` is not a POSIX portable variable name of at most 128 characters.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let portable = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !portable {
        return Some("must be a POSIX portable name: a letter or _, then letters, digits or _");
    }
    if name.len() > MAX_ENV_NAME_CHARS {
        return Some("must be at most 128 characters");
    }
    None
}

/// Why `pattern` is not a `send_env` pattern.
fn pattern_problem(pattern: &str) -> Option<&'static str> {
    if pattern.is_empty()
        || !pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?'))
    {
        return Some("must be a non-empty pattern of letters, digits, _, * and ?");
    }
    if pattern.len() > MAX_ENV_NAME_CHARS {
        return Some("must be at most 128 characters");
    }
    None
}

/// `send_env`: an array of name patterns (`*` and `?` wildcards); `null` is none.
pub fn send_env(value: &Value) -> Result<Vec<String>, Invalid> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => return Err(Invalid::new("send_env", "must be an array of patterns")),
    };
    if items.len() > MAX_ENV_ENTRIES {
        return Err(Invalid::new("send_env", "must hold at most 64 patterns"));
    }
    let mut patterns: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = format!("send_env[{index}]");
        let Some(pattern) = item.as_str() else {
            return Err(Invalid::new(&field, "must be a string"));
        };
        if let Some(problem) = pattern_problem(pattern) {
            return Err(Invalid::new(&field, problem));
        }
        if patterns.iter().any(|seen| seen == pattern) {
            return Err(Invalid::new(
                &field,
                "must be distinct: this pattern is already listed",
            ));
        }
        patterns.push(pattern.to_owned());
    }
    Ok(patterns)
}

/// The rule a secret value keeps (the api layer checks the taken-out text with it): one
/// line, no NUL, at most `MAX_ENV_VALUE_CHARS`.
pub fn secret_value_problem(text: &str) -> Option<&'static str> {
    line_problem(text)
}

/// `RemoteCommand <command>` with each `%` written `%%`.
pub fn remote_command_line(command: &str) -> String {
    format!("RemoteCommand {}", command.replace('%', "%%"))
}

/// `RequestTTY <value>`.
pub fn request_tty_line(tty: RequestTty) -> String {
    format!("RequestTTY {}", tty.as_str())
}

/// `SetEnv NAME=value` for one variable, quoted as `ssh` needs it. `ssh` (OpenSSH 9.2)
/// takes only the first `SetEnv` line of a host's blocks: more than one variable goes on
/// one line with `set_env_line_of`.
#[cfg(test)]
pub fn set_env_line(name: &str, value: &str) -> String {
    set_env_line_of(&[(name, value)])
}

/// `SetEnv A=1 "B=two words"`: every variable on the one `SetEnv` line `ssh` reads
/// (docs/forwards.md, "Grammar"); `pairs` must not be empty.
pub fn set_env_line_of(pairs: &[(&str, &str)]) -> String {
    let mut line = String::from("SetEnv");
    for (name, value) in pairs {
        line.push(' ');
        line.push_str(&quote_arg(&format!("{name}={value}")));
    }
    line
}

/// `SendEnv` with the patterns, space-separated.
pub fn send_env_line(patterns: &[String]) -> String {
    let mut line = String::from("SendEnv");
    for pattern in patterns {
        line.push(' ');
        line.push_str(&quote_arg(pattern));
    }
    line
}

/// Reads a `RemoteCommand` line's raw rest (`rest` as `ssh_words::split_keyword` gives
/// it) back to the stored command: `%%` becomes `%`. `Err` names why it is not kept.
pub fn remote_command_from_config(rest: &str) -> Result<String, String> {
    let raw = rest
        .trim_start_matches([' ', '\t', '\r', '\n', '='])
        .trim_end_matches([' ', '\t', '\r', '\n', '\x0c']);
    if raw.is_empty() {
        return Err("RemoteCommand needs a command".into());
    }
    if split_args(raw).is_err() {
        return Err("RemoteCommand has unbalanced quotes (ssh refuses the file)".into());
    }
    if raw.eq_ignore_ascii_case("none") {
        return Err("RemoteCommand none: no command".into());
    }
    let mut command = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            command.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => command.push('%'),
            Some(token) => {
                return Err(format!(
                    "RemoteCommand holds %{token}, a token ssh expands; this service keeps \
                     literal commands"
                ))
            }
            None => return Err("RemoteCommand ends with a lone % (ssh refuses it)".into()),
        }
    }
    match remote_command_text(&command) {
        Ok(Some(command)) => Ok(command),
        Ok(None) => Err("RemoteCommand needs a command".into()),
        Err(rule) => Err(format!("RemoteCommand {rule}")),
    }
}

/// Reads a `RequestTTY` value (any case, as `ssh` does; `true` and `false` are `yes`
/// and `no` to it).
pub fn request_tty_from_config(value: &str) -> Option<RequestTty> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Some(RequestTty::Yes),
        "false" => Some(RequestTty::No),
        lower => RequestTty::parse(lower),
    }
}

/// Reads `SetEnv` arguments (as `split_args` gives them) into `(name, value)` pairs; a
/// name given twice keeps its first value, as `ssh` does.
pub fn set_env_from_config(args: &[String]) -> Result<Vec<(String, String)>, String> {
    if args.is_empty() {
        return Err("SetEnv needs NAME=value arguments".into());
    }
    if args.len() > MAX_ENV_ENTRIES {
        return Err("SetEnv holds more than 64 variables".into());
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for arg in args {
        let Some((name, value)) = arg.split_once('=') else {
            return Err(format!("SetEnv {arg}: not NAME=value (ssh refuses it)"));
        };
        if let Some(problem) = name_problem(name) {
            return Err(format!("SetEnv name {name}: {problem}"));
        }
        if let Some(problem) = secret_value_problem(value) {
            return Err(format!("SetEnv {name}: the value {problem}"));
        }
        if !pairs.iter().any(|(seen, _)| seen == name) {
            pairs.push((name.to_owned(), value.to_owned()));
        }
    }
    Ok(pairs)
}

/// Reads `SendEnv` arguments into patterns (each once).
pub fn send_env_from_config(args: &[String]) -> Result<Vec<String>, String> {
    if args.is_empty() {
        return Err("SendEnv needs a pattern".into());
    }
    let mut patterns: Vec<String> = Vec::new();
    for arg in args {
        if arg.starts_with('-') {
            return Err(format!(
                "SendEnv {arg}: a -pattern removes patterns; this service keeps the list itself"
            ));
        }
        if let Some(problem) = pattern_problem(arg) {
            return Err(format!("SendEnv {arg}: {problem}"));
        }
        if !patterns.contains(arg) {
            patterns.push(arg.clone());
        }
    }
    if patterns.len() > MAX_ENV_ENTRIES {
        return Err("SendEnv holds more than 64 patterns".into());
    }
    Ok(patterns)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value};

    use crate::fuzz::{settings, Rng};
    use crate::model::environment::*;
    use crate::model::ssh_words::{split_args, split_keyword};

    fn field(error: crate::model::validate::Invalid) -> String {
        error.field
    }

    #[test]
    fn remote_command_is_trimmed_one_line_and_null_or_blank_is_none() {
        assert_eq!(remote_command(&Value::Null).unwrap(), None);
        assert_eq!(remote_command(&json!("")).unwrap(), None);
        assert_eq!(remote_command(&json!(" \t ")).unwrap(), None);
        assert_eq!(
            remote_command(&json!("  tail -f log \t"))
                .unwrap()
                .as_deref(),
            Some("tail -f log")
        );
        assert_eq!(
            remote_command(&json!("a\tb")).unwrap().as_deref(),
            Some("a\tb")
        );
        for bad in [
            json!("a\nb"),
            json!("a\rb"),
            json!("a\u{0}b"),
            json!("a\u{b}b"),
            json!(1),
            json!(["ls"]),
        ] {
            assert_eq!(
                field(remote_command(&bad).unwrap_err()),
                "remote_command",
                "{bad}"
            );
        }
        let at_limit = "é".repeat(MAX_ENV_VALUE_CHARS);
        assert!(remote_command(&json!(at_limit)).is_ok());
        assert!(remote_command(&json!(format!("{at_limit}x"))).is_err());
    }

    /// ssh -G: `RemoteCommand echo "a` is "invalid quotes" (the whole file refused);
    /// `RemoteCommand none` (any case) is no command; `RemoteCommand ==x` runs `x`.
    #[test]
    fn remote_command_needs_balanced_quotes_and_is_not_none_or_starting_with_equals() {
        for bad in [
            "echo \"a",
            "echo 'a",
            "echo \"a'",
            "none",
            "NONE",
            "=x",
            "= x",
        ] {
            assert!(remote_command(&json!(bad)).is_err(), "{bad}");
        }
        // Balanced, escaped, or after a # that starts a word (ssh stops checking there).
        for good in [
            "echo \"a b\" 'c'",
            "echo \\\"a",
            "echo a #\"",
            "nonesuch",
            "x=y",
            "100% #1",
        ] {
            assert_eq!(remote_command(&json!(good)).unwrap().as_deref(), Some(good));
        }
        assert!(remote_command(&json!("echo a#\"")).is_err());
    }

    #[test]
    fn request_tty_is_null_or_one_of_four_lower_case_words() {
        assert_eq!(request_tty(&Value::Null).unwrap(), None);
        for (text, tty) in [
            ("auto", RequestTty::Auto),
            ("yes", RequestTty::Yes),
            ("no", RequestTty::No),
            ("force", RequestTty::Force),
        ] {
            assert_eq!(request_tty(&json!(text)).unwrap(), Some(tty));
        }
        for bad in [json!("Force"), json!("true"), json!(""), json!(true)] {
            assert_eq!(field(request_tty(&bad).unwrap_err()), "request_tty");
        }
    }

    #[test]
    fn set_env_reads_plain_and_secret_entries() {
        let given = BTreeSet::from([1]);
        let entries = set_env(
            &json!([{"name": "LANG", "value": "C.UTF-8"}, {"name": "TOKEN", "secret": true},
                    {"name": "OLD", "secret": true}, {"name": "E", "value": "", "secret": false}]),
            &given,
        )
        .unwrap();
        assert_eq!(entries[0].value, EnvValue::Plain("C.UTF-8".into()));
        assert_eq!(entries[1].value, EnvValue::Secret { given: true });
        assert_eq!(entries[2].value, EnvValue::Secret { given: false });
        assert_eq!(entries[3].value, EnvValue::Plain(String::new()));
        assert!(set_env(&Value::Null, &BTreeSet::new()).unwrap().is_empty());
    }

    #[test]
    fn set_env_names_are_posix_portable_unique_and_at_most_128() {
        let one = |name: &str| set_env(&json!([{"name": name, "value": "v"}]), &BTreeSet::new());
        for good in ["A", "_", "a_1", "_9"] {
            assert!(one(good).is_ok(), "{good}");
        }
        assert!(one(&"N".repeat(128)).is_ok());
        for bad in ["", "1A", "A-B", "A=B", "A B", "É", "A.B"] {
            assert_eq!(field(one(bad).unwrap_err()), "set_env[0].name", "{bad}");
        }
        assert_eq!(field(one(&"N".repeat(129)).unwrap_err()), "set_env[0].name");
        let twice = json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]);
        assert_eq!(
            field(set_env(&twice, &BTreeSet::new()).unwrap_err()),
            "set_env[1].name"
        );
    }

    #[test]
    fn set_env_values_are_one_line_of_at_most_4096_and_entries_at_most_64() {
        let one = |value: Value| set_env(&json!([{"name": "A", "value": value}]), &BTreeSet::new());
        assert!(one(json!("é".repeat(4096))).is_ok());
        assert!(one(json!(" spaces \t\"quotes\" #hash \\ ")).is_ok());
        for bad in [
            json!("é".repeat(4097)),
            json!("a\nb"),
            json!("a\u{0}"),
            json!(1),
            Value::Null,
        ] {
            assert_eq!(
                field(one(bad.clone()).unwrap_err()),
                "set_env[0].value",
                "{bad}"
            );
        }
        let many = |count: usize| {
            let items: Vec<Value> = (0..count)
                .map(|i| json!({"name": format!("V{i}"), "value": ""}))
                .collect();
            set_env(&Value::Array(items), &BTreeSet::new())
        };
        assert!(many(64).is_ok());
        assert_eq!(field(many(65).unwrap_err()), "set_env");
        assert_eq!(
            field(set_env(&json!({"A": "1"}), &BTreeSet::new()).unwrap_err()),
            "set_env"
        );
        assert_eq!(
            field(set_env(&json!(["A=1"]), &BTreeSet::new()).unwrap_err()),
            "set_env[0]"
        );
        let secret_word = json!([{"name": "A", "secret": "yes"}]);
        assert_eq!(
            field(set_env(&secret_word, &BTreeSet::new()).unwrap_err()),
            "set_env[0].secret"
        );
    }

    #[test]
    fn secret_value_keeps_the_one_line_rule() {
        assert_eq!(secret_value_problem("s3cr3t with spaces\t"), None);
        assert_eq!(secret_value_problem(&"x".repeat(4096)), None);
        assert!(secret_value_problem(&"x".repeat(4097)).is_some());
        assert!(secret_value_problem("a\nb").is_some());
        assert!(secret_value_problem("a\u{0}").is_some());
    }

    #[test]
    fn send_env_patterns_are_distinct_words_with_wildcards_at_most_64() {
        assert_eq!(
            send_env(&json!(["LC_*", "EDITOR", "A?"])).unwrap(),
            vec!["LC_*", "EDITOR", "A?"]
        );
        assert!(send_env(&Value::Null).unwrap().is_empty());
        assert!(send_env(&json!(["N".repeat(128)])).is_ok());
        for bad in [
            json!(""),
            json!("A=B"),
            json!("-A"),
            json!("A B"),
            json!("a.b"),
            json!("N".repeat(129)),
            json!(1),
        ] {
            assert_eq!(
                field(send_env(&json!([bad.clone()])).unwrap_err()),
                "send_env[0]",
                "{bad}"
            );
        }
        assert_eq!(
            field(send_env(&json!(["A", "A"])).unwrap_err()),
            "send_env[1]"
        );
        let many = |count: usize| {
            send_env(&Value::Array(
                (0..count).map(|i| json!(format!("V{i}"))).collect(),
            ))
        };
        assert!(many(64).is_ok());
        assert_eq!(field(many(65).unwrap_err()), "send_env");
    }

    #[test]
    fn lines_are_written_as_ssh_reads_them() {
        // ssh -G: `RemoteCommand echo 100%% done` runs `echo 100% done`.
        assert_eq!(
            remote_command_line("echo 100% done"),
            "RemoteCommand echo 100%% done"
        );
        assert_eq!(request_tty_line(RequestTty::Force), "RequestTTY force");
        assert_eq!(set_env_line("LANG", "C.UTF-8"), "SetEnv LANG=C.UTF-8");
        assert_eq!(
            set_env_line("G", "hello world"),
            r#"SetEnv "G=hello world""#
        );
        assert_eq!(set_env_line("Q", r#"a"b\c"#), r#"SetEnv "Q=a\"b\\c""#);
        assert_eq!(set_env_line("E", ""), "SetEnv E=");
        assert_eq!(
            set_env_line_of(&[("A", "1"), ("B", "#2")]),
            r#"SetEnv A=1 "B=#2""#
        );
        assert_eq!(
            send_env_line(&["LC_*".into(), "EDITOR".into()]),
            "SendEnv LC_* EDITOR"
        );
    }

    /// ssh -G reads each of these lines as the value asserted.
    #[test]
    fn readers_take_what_ssh_takes() {
        let rest = |line: &'static str| split_keyword(line).1;
        assert_eq!(
            remote_command_from_config(rest("RemoteCommand echo 100%% done")).unwrap(),
            "echo 100% done"
        );
        assert_eq!(
            remote_command_from_config(rest("RemoteCommand = echo a # b  \t")).unwrap(),
            "echo a # b"
        );
        assert_eq!(
            remote_command_from_config(rest("RemoteCommand ==x")).unwrap(),
            "x"
        );
        assert_eq!(
            remote_command_from_config(rest("RemoteCommand echo \"a  b\"")).unwrap(),
            "echo \"a  b\""
        );
        assert_eq!(
            remote_command_from_config(rest("RemoteCommand echo ${HOME}")).unwrap(),
            "echo ${HOME}"
        );
        for (line, reason) in [
            ("RemoteCommand echo %h", "token"),
            ("RemoteCommand echo 100%", "lone %"),
            ("RemoteCommand echo \"a", "quotes"),
            ("RemoteCommand none", "no command"),
            ("RemoteCommand   ", "needs a command"),
        ] {
            let error = remote_command_from_config(rest(line)).unwrap_err();
            assert!(error.contains(reason), "{line}: {error}");
        }
        assert_eq!(request_tty_from_config("FORCE"), Some(RequestTty::Force));
        assert_eq!(request_tty_from_config("true"), Some(RequestTty::Yes));
        assert_eq!(request_tty_from_config("False"), Some(RequestTty::No));
        assert_eq!(request_tty_from_config("maybe"), None);
    }

    #[test]
    fn set_env_and_send_env_readers_keep_first_values_and_refuse_what_ssh_or_we_refuse() {
        let args = |text: &str| split_args(text).unwrap();
        assert_eq!(
            set_env_from_config(&args(r#"A=1 G="hello world" A=2 E= X=a=b"#)).unwrap(),
            vec![
                ("A".into(), "1".into()),
                ("G".into(), "hello world".into()),
                ("E".into(), String::new()),
                ("X".into(), "a=b".into())
            ]
        );
        for bad in ["G", "=x", "1A=x", "A-B=x", ""] {
            assert!(set_env_from_config(&args(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            send_env_from_config(&args("LC_* EDITOR LC_*")).unwrap(),
            vec!["LC_*", "EDITOR"]
        );
        for bad in ["-A", "A=B", "\"\"", "a.b", ""] {
            assert!(send_env_from_config(&args(bad)).is_err(), "{bad}");
        }
    }

    /// Random text from the characters that matter to ssh's reading of a line.
    fn random_text(rng: &mut Rng, alphabet: &[char], max: usize) -> String {
        (0..rng.below(max)).map(|_| *rng.pick(alphabet)).collect()
    }

    const TRICKY: &[char] = &[
        'a', 'Z', '0', ' ', '\t', '"', '\'', '\\', '#', '%', '=', '$', '{', '}', 'é', '*',
    ];

    #[test]
    fn random_values_survive_the_line_writers_and_readers() {
        let (iterations, seed) = settings("environment line round trip", 0x00E0_5EED);
        let mut rng = Rng::new(seed);
        for _ in 0..iterations.min(20_000) {
            let text = random_text(&mut rng, TRICKY, 24);
            if let Ok(Some(command)) = remote_command(&json!(text)) {
                let line = remote_command_line(&command);
                let (keyword, rest) = split_keyword(&line);
                assert_eq!(keyword, "RemoteCommand");
                assert_eq!(
                    remote_command_from_config(rest).as_deref(),
                    Ok(command.as_str()),
                    "{line}"
                );
            }
            let pairs: Vec<(String, String)> = (0..1 + rng.below(3))
                .map(|index| (format!("V{index}"), random_text(&mut rng, TRICKY, 12)))
                .collect();
            let borrowed: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let line = set_env_line_of(&borrowed);
            let (_, rest) = split_keyword(&line);
            assert_eq!(
                set_env_from_config(&split_args(rest).unwrap()),
                Ok(pairs.clone()),
                "{line}"
            );
            let one = set_env_line(&pairs[0].0, &pairs[0].1);
            let (_, rest) = split_keyword(&one);
            assert_eq!(
                set_env_from_config(&split_args(rest).unwrap()),
                Ok(vec![pairs[0].clone()])
            );
            let patterns: Vec<String> = (0..1 + rng.below(3))
                .map(|index| {
                    format!(
                        "P{index}{}",
                        random_text(&mut rng, &['A', '_', '*', '?', '1'], 6)
                    )
                })
                .collect();
            let line = send_env_line(&patterns);
            let (_, rest) = split_keyword(&line);
            assert_eq!(
                send_env_from_config(&split_args(rest).unwrap()),
                Ok(patterns),
                "{line}"
            );
        }
    }
}
