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
/// line (it refuses the whole config otherwise).
pub fn remote_command(value: &Value) -> Result<Option<String>, Invalid> {
    let _ = value;
    Err(Invalid::new("remote_command", "not built yet"))
}

/// `request_tty`: `null` (not written: `ssh` decides) or one of `RequestTty`.
pub fn request_tty(value: &Value) -> Result<Option<RequestTty>, Invalid> {
    let _ = value;
    Err(Invalid::new("request_tty", "not built yet"))
}

/// `set_env`: an array of `{name, value}` or `{name, secret: true}`; `null` is none.
/// `secrets_given` holds the indexes whose secret value the api layer took out. Names are
/// POSIX portable names, unique in the list.
pub fn set_env(value: &Value, secrets_given: &BTreeSet<usize>) -> Result<Vec<EnvEntry>, Invalid> {
    let _ = (value, secrets_given);
    Err(Invalid::new("set_env", "not built yet"))
}

/// `send_env`: an array of name patterns (`*` and `?` wildcards); `null` is none.
pub fn send_env(value: &Value) -> Result<Vec<String>, Invalid> {
    let _ = value;
    Err(Invalid::new("send_env", "not built yet"))
}

/// The rule a secret value keeps (the api layer checks the taken-out text with it): one
/// line, no NUL, at most `MAX_ENV_VALUE_CHARS`.
pub fn secret_value_problem(text: &str) -> Option<&'static str> {
    let _ = text;
    None
}

/// `RemoteCommand <command>` with each `%` written `%%`.
pub fn remote_command_line(command: &str) -> String {
    let _ = command;
    String::new()
}

/// `RequestTTY <value>`.
pub fn request_tty_line(tty: RequestTty) -> String {
    format!("RequestTTY {}", tty.as_str())
}

/// `SetEnv NAME=value` for one variable, quoted as `ssh` needs it.
pub fn set_env_line(name: &str, value: &str) -> String {
    let _ = (name, value);
    String::new()
}

/// `SendEnv` with the patterns, space-separated.
pub fn send_env_line(patterns: &[String]) -> String {
    let _ = patterns;
    String::new()
}

/// Reads a `RemoteCommand` line's raw rest (`rest` as `ssh_words::split_keyword` gives
/// it) back to the stored command: `%%` becomes `%`. `Err` names why it is not kept.
pub fn remote_command_from_config(rest: &str) -> Result<String, String> {
    let _ = rest;
    Err("not built yet".into())
}

/// Reads a `RequestTTY` value (any case, as `ssh` does).
pub fn request_tty_from_config(value: &str) -> Option<RequestTty> {
    let _ = value;
    None
}

/// Reads `SetEnv` arguments (as `split_args` gives them) into `(name, value)` pairs.
pub fn set_env_from_config(args: &[String]) -> Result<Vec<(String, String)>, String> {
    let _ = args;
    Err("not built yet".into())
}

/// Reads `SendEnv` arguments into patterns.
pub fn send_env_from_config(args: &[String]) -> Result<Vec<String>, String> {
    let _ = args;
    Err("not built yet".into())
}
