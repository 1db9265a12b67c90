//! Port-forward rules (docs/forwards.md): the typed form of OpenSSH's `LocalForward`,
//! `RemoteForward` and `DynamicForward`, the rules a request body must keep, the one line
//! the ssh_config export writes for a rule and the reading of that line back, and the
//! overlap of two rules' listening ends that makes a `PORT_CONFLICT`.
//!
//! Invariants: pure, no I/O; every rule `ForwardSpec::from_json` accepts, `directive` writes
//! as one line that `ssh` reads back to the same forward and `from_directive` reads back to
//! the same `ForwardSpec` (docs/forwards.md, "Grammar").

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::validate::Invalid;

/// This service's limit: at most 64 rules per host or group.
pub const MAX_FORWARDS: usize = 64;

/// This service's limit: a description is at most 200 characters, on one line.
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// This service's limit: a Unix-socket path is at most 103 bytes (the smallest `sun_path`
/// of the platforms OpenSSH runs on, macOS's 104, less its NUL).
pub const MAX_SOCKET_BYTES: usize = 103;

/// Which way a rule forwards (docs/forwards.md, "Rules").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ForwardKind {
    Local,
    Remote,
    Dynamic,
}

impl ForwardKind {
    /// `local`, `remote`, `dynamic`: the API's and the database's word.
    pub fn as_str(self) -> &'static str {
        match self {
            ForwardKind::Local => "local",
            ForwardKind::Remote => "remote",
            ForwardKind::Dynamic => "dynamic",
        }
    }

    pub fn parse(text: &str) -> Option<ForwardKind> {
        match text {
            "local" => Some(ForwardKind::Local),
            "remote" => Some(ForwardKind::Remote),
            "dynamic" => Some(ForwardKind::Dynamic),
            _ => None,
        }
    }

    /// `LocalForward`, `RemoteForward`, `DynamicForward`.
    pub fn keyword(self) -> &'static str {
        match self {
            ForwardKind::Local => "LocalForward",
            ForwardKind::Remote => "RemoteForward",
            ForwardKind::Dynamic => "DynamicForward",
        }
    }
}

/// What a rule does, as the API and the database hold it: exactly one of `bind_port` and
/// `bind_socket`; a target (`target_host` with `target_port`, or `target_socket`) for a
/// local or remote rule, none for a dynamic rule or a remote dynamic one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ForwardSpec {
    #[serde(rename = "type")]
    pub kind: ForwardKind,
    /// `localhost`, `*`, an IPv4 literal, or a bracketed IPv6 literal (`[::1]`).
    pub bind_address: Option<String>,
    pub bind_port: Option<u16>,
    pub bind_socket: Option<String>,
    /// A DNS name or an IP literal; an IPv6 literal is held without brackets.
    pub target_host: Option<String>,
    pub target_port: Option<u16>,
    pub target_socket: Option<String>,
}

/// A rule's settings besides what it forwards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForwardSettings {
    pub enabled: bool,
    pub autostart: bool,
    pub description: String,
}

impl Default for ForwardSettings {
    /// A new rule is enabled and starts with the connection.
    fn default() -> ForwardSettings {
        ForwardSettings {
            enabled: true,
            autostart: true,
            description: String::new(),
        }
    }
}

impl ForwardSpec {
    /// Reads and checks the forward fields of a create body (docs/forwards.md, "Rules"):
    /// `type` is required; errors name the field (`bind_port`, `target_host`...).
    pub fn from_json(body: &Map<String, Value>) -> Result<ForwardSpec, Invalid> {
        let _ = body;
        Err(Invalid::new("type", "not built yet"))
    }

    /// This spec with the fields of `body` that are present replaced (a partial update;
    /// `null` clears an optional field), checked as a whole as `from_json` checks.
    pub fn patched(&self, body: &Map<String, Value>) -> Result<ForwardSpec, Invalid> {
        let _ = body;
        Err(Invalid::new("type", "not built yet"))
    }

    /// The warnings the answer carries: a listening address other than loopback.
    pub fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// The ssh_config line: `LocalForward 8080 localhost:80`, each argument quoted as `ssh`
    /// needs it.
    pub fn directive(&self) -> String {
        String::new()
    }

    /// Reads a directive back: `keyword` as written (any case) and its arguments as
    /// `ssh_words::split_args` gives them. `Err` says why it is not a rule this service
    /// keeps.
    pub fn from_directive(keyword: &str, args: &[String]) -> Result<ForwardSpec, String> {
        let _ = (keyword, args);
        Err("not built yet".into())
    }

    /// True when `self` and `other` would listen on the same local port or socket: both
    /// local or dynamic, the same port on overlapping addresses (`*` overlaps every
    /// address; no address is `localhost`), or the same socket path.
    pub fn overlaps(&self, other: &ForwardSpec) -> bool {
        let _ = other;
        false
    }
}

impl ForwardSettings {
    /// Reads `enabled`, `autostart` and `description` of a body over `self` (absent fields
    /// keep their value).
    pub fn patched(&self, body: &Map<String, Value>) -> Result<ForwardSettings, Invalid> {
        let _ = body;
        Ok(self.clone())
    }
}
