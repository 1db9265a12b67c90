//! Port-forward rules (docs/forwards.md): the typed form of OpenSSH's `LocalForward`,
//! `RemoteForward` and `DynamicForward`, the rules a request body must keep, the one line
//! the ssh_config export writes for a rule and the reading of that line back, and the
//! overlap of two rules' listening ends that makes a `PORT_CONFLICT`.
//!
//! Invariants: pure, no I/O; every rule `ForwardSpec::from_json` accepts, `directive` writes
//! as one line that `ssh` reads back to the same forward and `from_directive` reads back to
//! the same `ForwardSpec` (docs/forwards.md, "Grammar").

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::ssh_words::quote_arg;
use crate::model::validate::{boolean, hostname_problem, Invalid};

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
    /// A rule of `kind` with no end set yet (not a valid rule until `check` passes).
    pub fn empty(kind: ForwardKind) -> ForwardSpec {
        ForwardSpec {
            kind,
            bind_address: None,
            bind_port: None,
            bind_socket: None,
            target_host: None,
            target_port: None,
            target_socket: None,
        }
    }

    /// Reads and checks the forward fields of a create body (docs/forwards.md, "Rules"):
    /// `type` is required; errors name the field (`bind_port`, `target_host`...).
    pub fn from_json(body: &Map<String, Value>) -> Result<ForwardSpec, Invalid> {
        let kind = match body.get("type") {
            None => return Err(Invalid::new("type", TYPE_RULE)),
            Some(value) => kind_of(value)?,
        };
        let empty = ForwardSpec {
            kind,
            bind_address: None,
            bind_port: None,
            bind_socket: None,
            target_host: None,
            target_port: None,
            target_socket: None,
        };
        empty.overlaid(body)
    }

    /// This spec with the fields of `body` that are present replaced (a partial update;
    /// `null` clears an optional field), checked as a whole as `from_json` checks.
    pub fn patched(&self, body: &Map<String, Value>) -> Result<ForwardSpec, Invalid> {
        let mut spec = self.clone();
        if let Some(value) = body.get("type") {
            spec.kind = kind_of(value)?;
        }
        spec.overlaid(body)
    }

    /// The warnings the answer carries: a listening address other than loopback.
    pub fn warnings(&self) -> Vec<String> {
        let Some(address) = self.bind_address.as_deref() else {
            return Vec::new();
        };
        if Listen::of(Some(address)).is_loopback() {
            return Vec::new();
        }
        let warning = match self.kind {
            ForwardKind::Local | ForwardKind::Dynamic => format!(
                "bind_address {address} is not loopback: other machines can reach this port"
            ),
            ForwardKind::Remote => format!(
                "bind_address {address} is not loopback: the server binds it only when its \
                 sshd has GatewayPorts clientspecified (or yes), else it listens on loopback"
            ),
        };
        vec![warning]
    }

    /// The ssh_config line: `LocalForward 8080 localhost:80`, each argument quoted as `ssh`
    /// needs it.
    pub fn directive(&self) -> String {
        let mut line = format!("{} {}", self.kind.keyword(), quote_arg(&self.listen_arg()));
        if let Some(target) = self.target_arg() {
            line.push(' ');
            line.push_str(&quote_arg(&target));
        }
        line
    }

    /// Reads a directive back: `keyword` as written (any case) and its arguments as
    /// `ssh_words::split_args` gives them. `Err` says why it is not a rule this service
    /// keeps.
    pub fn from_directive(keyword: &str, args: &[String]) -> Result<ForwardSpec, String> {
        let kind = [
            ForwardKind::Local,
            ForwardKind::Remote,
            ForwardKind::Dynamic,
        ]
        .into_iter()
        .find(|kind| kind.keyword().eq_ignore_ascii_case(keyword))
        .ok_or_else(|| format!("{keyword} is not a forward directive"))?;
        let (listen, target) = match (kind, args) {
            (_, []) => return Err(format!("{} needs an argument", kind.keyword())),
            (ForwardKind::Local, [_]) => return Err(ONE_ARGUMENT.into()),
            (ForwardKind::Dynamic, [listen]) | (ForwardKind::Remote, [listen]) => (listen, None),
            (ForwardKind::Local | ForwardKind::Remote, [listen, target]) => (listen, Some(target)),
            _ => return Err(format!("too many arguments for {}", kind.keyword())),
        };
        let mut spec = ForwardSpec::empty(kind);
        spec.read_listen(listen)?;
        if let Some(target) = target {
            spec.read_target(target)?;
        }
        spec.check()
            .map_err(|invalid| format!("{}: {}", invalid.field, invalid.rule))?;
        Ok(spec)
    }

    /// True when `self` and `other` would listen on the same local port or socket: both
    /// local or dynamic, the same port on overlapping addresses (`*` overlaps every
    /// address; no address is `localhost`), or the same socket path.
    pub fn overlaps(&self, other: &ForwardSpec) -> bool {
        let listens_here = |kind| matches!(kind, ForwardKind::Local | ForwardKind::Dynamic);
        if !listens_here(self.kind) || !listens_here(other.kind) {
            return false;
        }
        match (&self.bind_socket, &other.bind_socket) {
            (Some(mine), Some(theirs)) => mine == theirs,
            (None, None) => {
                self.bind_port.is_some()
                    && self.bind_port == other.bind_port
                    && Listen::of(self.bind_address.as_deref())
                        .overlaps(&Listen::of(other.bind_address.as_deref()))
            }
            _ => false,
        }
    }

    /// `body`'s forward fields other than `type` over `self`, then the whole checked.
    fn overlaid(mut self, body: &Map<String, Value>) -> Result<ForwardSpec, Invalid> {
        if let Some(value) = body.get("bind_address") {
            self.bind_address = optional_text("bind_address", value)?;
            if let Some(problem) = self.bind_address.as_deref().and_then(bind_address_problem) {
                return Err(Invalid::new("bind_address", problem));
            }
        }
        if let Some(value) = body.get("bind_port") {
            self.bind_port = optional_port("bind_port", value)?;
        }
        if let Some(value) = body.get("bind_socket") {
            self.bind_socket = optional_text("bind_socket", value)?;
        }
        if let Some(value) = body.get("target_host") {
            self.target_host = match optional_text("target_host", value)? {
                None => None,
                Some(text) => {
                    Some(target_host(&text).map_err(|rule| Invalid::new("target_host", rule))?)
                }
            };
        }
        if let Some(value) = body.get("target_port") {
            self.target_port = optional_port("target_port", value)?;
        }
        if let Some(value) = body.get("target_socket") {
            self.target_socket = optional_text("target_socket", value)?;
        }
        self.check()?;
        Ok(self)
    }

    /// The rules of docs/forwards.md's table that tie the fields together.
    fn check(&self) -> Result<(), Invalid> {
        self.check_listen()?;
        self.check_target()
    }

    fn check_listen(&self) -> Result<(), Invalid> {
        match (self.bind_port, &self.bind_socket) {
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    "bind_socket",
                    "give bind_port or bind_socket, not both",
                ))
            }
            (None, None) => {
                return Err(Invalid::new(
                    "bind_port",
                    "required: give bind_port or bind_socket",
                ))
            }
            (Some(0), None) if self.kind != ForwardKind::Remote => {
                return Err(Invalid::new("bind_port", BIND_PORT_RULE))
            }
            (None, Some(socket)) => {
                if self.kind == ForwardKind::Dynamic {
                    return Err(Invalid::new(
                        "bind_socket",
                        "a dynamic rule binds a port only",
                    ));
                }
                if let Some(problem) = socket_problem(socket) {
                    return Err(Invalid::new("bind_socket", problem));
                }
                if self.bind_address.is_some() {
                    return Err(Invalid::new("bind_address", "only with bind_port"));
                }
            }
            (Some(_), None) => {}
        }
        match self.bind_address.as_deref().and_then(bind_address_problem) {
            Some(problem) => Err(Invalid::new("bind_address", problem)),
            None => Ok(()),
        }
    }

    fn check_target(&self) -> Result<(), Invalid> {
        let by_address = self.target_host.is_some() || self.target_port.is_some();
        if self.kind == ForwardKind::Dynamic {
            let given = [
                ("target_host", self.target_host.is_some()),
                ("target_port", self.target_port.is_some()),
                ("target_socket", self.target_socket.is_some()),
            ];
            return match given.iter().find(|(_, given)| *given) {
                Some((field, _)) => Err(Invalid::new(field, "a dynamic rule has no target")),
                None => Ok(()),
            };
        }
        if let Some(host) = &self.target_host {
            if let Some(problem) = target_host_problem(host) {
                return Err(Invalid::new("target_host", problem));
            }
        }
        match (&self.target_host, self.target_port) {
            (Some(_), None) => {
                return Err(Invalid::new("target_port", "required with target_host"))
            }
            (None, Some(_)) => {
                return Err(Invalid::new("target_host", "required with target_port"))
            }
            (_, Some(0)) => {
                return Err(Invalid::new(
                    "target_port",
                    "must be an integer from 1 to 65535",
                ))
            }
            _ => {}
        }
        match (&self.target_socket, by_address) {
            (Some(_), true) => Err(Invalid::new(
                "target_socket",
                "give target_host and target_port, or target_socket, not both",
            )),
            (Some(socket), false) => match socket_problem(socket) {
                Some(problem) => Err(Invalid::new("target_socket", problem)),
                None => Ok(()),
            },
            (None, true) => Ok(()),
            (None, false) if self.kind == ForwardKind::Local => Err(Invalid::new(
                "target_host",
                "a local rule needs a target: target_host and target_port, or target_socket",
            )),
            (None, false) if self.bind_socket.is_some() => Err(Invalid::new(
                "bind_socket",
                "a remote rule without a target (a remote dynamic forward) binds a port only",
            )),
            (None, false) => Ok(()),
        }
    }

    /// The listening end as written: `[address:]port` or the socket path.
    fn listen_arg(&self) -> String {
        match (&self.bind_socket, self.bind_port, &self.bind_address) {
            (Some(socket), _, _) => socket_arg(socket),
            (None, Some(port), Some(address)) => format!("{address}:{port}"),
            (None, Some(port), None) => port.to_string(),
            (None, None, _) => String::new(),
        }
    }

    /// The target as written: `host:port` (`[v6]:port`) or the socket path; `None` for a
    /// dynamic or remote dynamic rule.
    fn target_arg(&self) -> Option<String> {
        if let Some(socket) = &self.target_socket {
            return Some(socket_arg(socket));
        }
        match (&self.target_host, self.target_port) {
            (Some(host), Some(port)) if host.contains(':') => Some(format!("[{host}]:{port}")),
            (Some(host), Some(port)) => Some(format!("{host}:{port}")),
            _ => None,
        }
    }

    /// Reads a directive's listening end into `self`.
    fn read_listen(&mut self, text: &str) -> Result<(), String> {
        if text.contains('/') {
            self.bind_socket = Some(socket_of_config(text, "listening")?);
            return Ok(());
        }
        let (address, port) = split_address(text)?;
        self.bind_port = Some(config_port(port)?);
        self.bind_address = match address {
            None => None,
            Some("") => return Err(EMPTY_BIND.into()),
            Some(address) => Some(bind_address_of_config(address)?),
        };
        Ok(())
    }

    /// Reads a directive's target into `self`.
    fn read_target(&mut self, text: &str) -> Result<(), String> {
        if text.contains('/') {
            self.target_socket = Some(socket_of_config(text, "target")?);
            return Ok(());
        }
        match split_address(text)? {
            (Some(host), port) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if let Some(problem) = hostname_problem(host) {
                    return Err(format!("target host {host}: {problem}"));
                }
                self.target_host = Some(host.to_owned());
                self.target_port = Some(config_port(port)?);
                Ok(())
            }
            (None, _) => Err(format!("target {text} has no host: write host:port")),
        }
    }
}

impl ForwardSettings {
    /// Reads `enabled`, `autostart` and `description` of a body over `self` (absent fields
    /// keep their value).
    pub fn patched(&self, body: &Map<String, Value>) -> Result<ForwardSettings, Invalid> {
        let mut settings = self.clone();
        if let Some(value) = body.get("enabled") {
            settings.enabled = boolean("enabled", value)?;
        }
        if let Some(value) = body.get("autostart") {
            settings.autostart = boolean("autostart", value)?;
        }
        if let Some(value) = body.get("description") {
            settings.description = description(value)?;
        }
        Ok(settings)
    }
}

const TYPE_RULE: &str = "required: local, remote or dynamic";

const BIND_PORT_RULE: &str =
    "must be an integer from 1 to 65535 (0, the server picks the port, only for a remote rule)";

const ONE_ARGUMENT: &str = "LocalForward needs two arguments, the listening end and the \
                            target (ssh refuses the one-argument form 8080:host:80 in a config \
                            file: Missing target argument)";

const EMPTY_BIND: &str = "an empty bind address (:port); this service writes * for every address";

fn kind_of(value: &Value) -> Result<ForwardKind, Invalid> {
    value
        .as_str()
        .and_then(ForwardKind::parse)
        .ok_or_else(|| Invalid::new("type", TYPE_RULE))
}

fn optional_text(field: &str, value: &Value) -> Result<Option<String>, Invalid> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        _ => Err(Invalid::new(field, "must be a string or null")),
    }
}

fn optional_port(field: &str, value: &Value) -> Result<Option<u16>, Invalid> {
    let rule = if field == "bind_port" {
        BIND_PORT_RULE
    } else {
        "must be an integer from 1 to 65535"
    };
    match value {
        Value::Null => Ok(None),
        Value::Number(number) => match number.as_u64().map(u16::try_from) {
            Some(Ok(port)) => Ok(Some(port)),
            _ => Err(Invalid::new(field, rule)),
        },
        _ => Err(Invalid::new(field, rule)),
    }
}

/// A request's `target_host`: an IPv6 literal may come bracketed and is held without.
fn target_host(text: &str) -> Result<String, &'static str> {
    let bare = match text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(inner) if inner.parse::<Ipv6Addr>().is_ok() => inner,
        Some(_) => return Err("only an IPv6 address may be bracketed"),
        None => text,
    };
    match target_host_problem(bare) {
        Some(problem) => Err(problem),
        None => Ok(bare.to_owned()),
    }
}

fn target_host_problem(host: &str) -> Option<&'static str> {
    hostname_problem(host)
}

/// Why `text` cannot be a `bind_address`, or `None`.
fn bind_address_problem(text: &str) -> Option<&'static str> {
    let bracketed_v6 = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|inner| inner.parse::<Ipv6Addr>().is_ok());
    if text == "localhost" || text == "*" || text.parse::<Ipv4Addr>().is_ok() || bracketed_v6 {
        return None;
    }
    Some(
        "must be localhost, *, an IPv4 address (127.0.0.1, 0.0.0.0) or a bracketed IPv6 \
         address ([::1], [::])",
    )
}

/// Why `path` cannot be a `bind_socket` or `target_socket`, or `None`.
fn socket_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') {
        return Some("must be an absolute path (starting with /)");
    }
    if path.len() > MAX_SOCKET_BYTES {
        return Some(
            "must be at most 103 bytes (a Unix socket's path limit on macOS, less its NUL)",
        );
    }
    if path.contains(':') {
        return Some("must not contain ':' (OpenSSH splits forward specifications at colons)");
    }
    if path.chars().any(char::is_control) {
        return Some("must not contain control characters");
    }
    if path.contains("${") {
        return Some(
            "must not contain ${ (ssh expands it as an environment variable, with no escape)",
        );
    }
    None
}

/// A socket path as a directive argument (before `quote_arg`): OpenSSH reads a backslash
/// in a forward field as escaping the next character, and expands `%` tokens in a socket
/// path, so `\\` is written `\\\\` and `%` is written `%%`.
fn socket_arg(path: &str) -> String {
    path.replace('\\', "\\\\").replace('%', "%%")
}

/// A socket path argument of a directive (`end`: `listening` or `target`), read as `ssh`
/// reads it and held to the socket rule.
fn socket_of_config(text: &str, end: &str) -> Result<String, String> {
    let path = literal_path(text)?;
    match socket_problem(&path) {
        Some(problem) => Err(format!("{end} socket {path}: {problem}")),
        None => Ok(path),
    }
}

/// A socket path as written in a directive back to the path (the reverse of `socket_arg`),
/// in `ssh`'s order: first a backslash escapes the next character (the forward field),
/// then `%%` is one `%`; any other `%` token is one `ssh` expands, which this service does
/// not keep.
fn literal_path(text: &str) -> Result<String, String> {
    let mut field = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            field.push(c);
            continue;
        }
        match chars.next() {
            Some(next) => field.push(next),
            None => return Err(format!("{text} ends with a lone \\ (ssh refuses it)")),
        }
    }
    let mut path = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            path.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => path.push('%'),
            Some(token) => {
                return Err(format!(
                    "%{token} in {text} is a token ssh expands; this service keeps literal paths"
                ))
            }
            None => return Err(format!("{text} ends with a lone % (ssh refuses it)")),
        }
    }
    Ok(path)
}

/// `[address]:port`, `address:port` or `port` split as OpenSSH splits forward fields (at
/// the first colon outside brackets); the address keeps its brackets.
fn split_address(text: &str) -> Result<(Option<&str>, &str), String> {
    let (address, port) = if text.starts_with('[') {
        let close = text
            .find(']')
            .ok_or_else(|| format!("{text}: a [ without its ]"))?;
        let port = text[close + 1..]
            .strip_prefix(':')
            .ok_or_else(|| format!("{text}: a bracketed address needs :port after it"))?;
        (Some(&text[..=close]), port)
    } else {
        match text.split_once(':') {
            Some((address, port)) => (Some(address), port),
            None => (None, text),
        }
    };
    if port.contains(':') {
        return Err(format!(
            "{text}: more than one colon; an IPv6 address must be bracketed ([::1]:80), and a \
             forward on one argument (8080:host:80) is not read in a config file"
        ));
    }
    Ok((address, port))
}

/// A port as a directive writes it: decimal digits (ssh also reads service names such as
/// `http`, which this service does not keep).
fn config_port(text: &str) -> Result<u16, String> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("port {text} is not a decimal number"));
    }
    let digits = text.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(0);
    }
    digits
        .parse::<u16>()
        .map_err(|_| format!("port {text} is above 65535"))
}

/// A bind address as a directive writes it (`ssh` also reads `[localhost]`, `[*]`) to the
/// API's form.
fn bind_address_of_config(text: &str) -> Result<String, String> {
    let address = match text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(inner) if inner.parse::<Ipv6Addr>().is_ok() => text.to_owned(),
        Some(inner) => inner.to_owned(),
        None => text.to_owned(),
    };
    match bind_address_problem(&address) {
        None => Ok(address),
        Some(problem) => Err(format!(
            "bind address {text}: {problem} (a host name other than localhost is not kept)"
        )),
    }
}

/// A description: trimmed, at most 200 characters, one line; `null` is `""`.
fn description(value: &Value) -> Result<String, Invalid> {
    const RULE: &str = "must be a string of at most 200 characters on one line";
    let text = match value {
        Value::Null => return Ok(String::new()),
        Value::String(text) => text.trim(),
        _ => return Err(Invalid::new("description", RULE)),
    };
    if text.chars().count() > MAX_DESCRIPTION_CHARS || text.chars().any(char::is_control) {
        return Err(Invalid::new("description", RULE));
    }
    Ok(text.to_owned())
}

/// A listening address as far as overlap goes.
#[derive(Debug, PartialEq, Eq)]
enum Listen {
    Every,
    Localhost,
    V4(Ipv4Addr),
    V6(Ipv6Addr),
    Other(String),
}

impl Listen {
    fn of(address: Option<&str>) -> Listen {
        let Some(address) = address else {
            return Listen::Localhost;
        };
        if address == "*" {
            return Listen::Every;
        }
        if address.eq_ignore_ascii_case("localhost") {
            return Listen::Localhost;
        }
        if let Ok(v4) = address.parse::<Ipv4Addr>() {
            return Listen::V4(v4);
        }
        let inner = address.trim_start_matches('[').trim_end_matches(']');
        match inner.parse::<Ipv6Addr>() {
            Ok(v6) => Listen::V6(v6),
            Err(_) => Listen::Other(address.to_ascii_lowercase()),
        }
    }

    fn is_loopback(&self) -> bool {
        match self {
            Listen::Localhost => true,
            Listen::V4(v4) => v4.is_loopback(),
            Listen::V6(v6) => v6.is_loopback(),
            Listen::Every | Listen::Other(_) => false,
        }
    }

    /// docs/forwards.md, "Port conflicts".
    fn overlaps(&self, other: &Listen) -> bool {
        match (self, other) {
            (Listen::Every, _) | (_, Listen::Every) => true,
            (Listen::Localhost, Listen::Localhost) => true,
            (Listen::Localhost, Listen::V4(v4)) | (Listen::V4(v4), Listen::Localhost) => {
                *v4 == Ipv4Addr::LOCALHOST || v4.is_unspecified()
            }
            (Listen::Localhost, Listen::V6(v6)) | (Listen::V6(v6), Listen::Localhost) => {
                *v6 == Ipv6Addr::LOCALHOST || v6.is_unspecified()
            }
            (Listen::V4(a), Listen::V4(b)) => a == b || a.is_unspecified() || b.is_unspecified(),
            (Listen::V6(a), Listen::V6(b)) => a == b || a.is_unspecified() || b.is_unspecified(),
            (Listen::Other(a), Listen::Other(b)) => a == b,
            _ => false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
