//! OpenSSH `known_hosts` text and the host-key trust rules: the parser behind
//! `POST /api/import/known-hosts`, the writer behind `GET /api/export/known-hosts`, and the
//! verdict of `POST /api/known-hosts/verify`; host names and patterns as OpenSSH matches
//! them live in `host_patterns`, re-exported here.
//!
//! Invariants: pure functions over text, no I/O and no crypto (hashed names and key blobs
//! are checked by `sshkey`, which the api layer calls); the parser never panics, whatever
//! the text (fuzzed below), and refuses a line with a reason rather than guessing; the
//! writer never emits a line break from a stored value. The rules follow the docs/api.md section
//! "Host keys (known_hosts)".

use serde_json::Value;

use crate::model::validate::{self, Invalid};

pub use crate::model::host_patterns::{is_wildcard, lookup_name, split_token, DEFAULT_PORT};

/// docs/api.md, "Host keys (known_hosts)": a longer line is refused. An RSA key of 16,384
/// bits (OpenSSH's maximum) takes about 2,800 characters, so this leaves room for long
/// host lists and comments while bounding what one line may cost.
pub const MAX_LINE_CHARS: usize = 16_384;

/// docs/api.md, "Host keys (known_hosts)": at most this many host names on one line (a
/// comma list); each becomes its own entry.
pub const MAX_NAMES_PER_LINE: usize = 256;

/// docs/api.md, "Host keys (known_hosts)": the longest `pattern` of a host CA
/// (`POST /api/known-hosts/authorities`); a DNS name is at most 253 characters.
pub const MAX_PATTERN_CHARS: usize = 1_024;

/// The prefix of a hashed name: `|1|<base64 salt>|<base64 hash>` (OpenSSH `HASH_MAGIC`).
pub const HASH_MAGIC: &str = "|1|";

/// The marker column of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    None,
    CertAuthority,
    Revoked,
}

/// One host name of a line, as OpenSSH reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostToken {
    /// A name or pattern as written, ASCII-lowercased (OpenSSH compares names without
    /// case): `example.com`, `[example.com]:2222`, `*.corp`, `192.0.2.?`.
    Plain(String),
    /// `|1|salt|hash`: both parts still base64 (their length is checked by `sshkey`).
    Hashed { salt: String, hash: String },
}

/// One readable line: a marker, its host names, a key and an optional comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the text.
    pub number: usize,
    pub marker: Marker,
    pub hosts: Vec<HostToken>,
    /// The key type as written (`ssh-ed25519`, ...); `sshkey` checks it against the blob.
    pub key_type: String,
    pub key_base64: String,
    /// The rest of the line after the key, trimmed; `""` when none.
    pub comment: String,
}

/// What became of one non-blank, non-comment line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Line(Line),
    Refused { number: usize, reason: String },
}

/// What `verify` answers (docs/api.md, "Host keys (known_hosts)").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A stored key of this host is the presented key.
    Trusted,
    /// Nothing is stored for this host.
    Unknown,
    /// Keys of other types are stored for this host, none of the presented key's type.
    NewAlgorithm,
    /// A different key of the presented key's type is stored for this host.
    Changed,
    /// The key (or the CA that signed the presented certificate) is marked `@revoked`.
    Revoked,
    /// A certificate signed by a CA stored as `@cert-authority` for this host, valid now
    /// and for this host name.
    CaTrusted,
    /// A certificate signed by a CA stored as `@cert-authority` for this host that is not
    /// valid for it (expired, not yet valid, its principals do not name the host, ...):
    /// refused as `ssh` refuses it, never judged by the plain key it carries.
    CertificateInvalid,
}

/// A stored entry that matches the host name being judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownKey {
    pub id: String,
    pub marker: Marker,
    pub key_type: String,
    pub fingerprint: String,
}

/// The key a server presented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Presented {
    /// The plain key type (for a certificate, the type of the certified key).
    pub key_type: String,
    /// The plain key's `SHA256:` fingerprint (for a certificate, the certified key's).
    pub fingerprint: String,
    pub certificate: Option<CertificateFacts>,
}

/// What `sshkey` established about a presented certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFacts {
    /// Fingerprint of the CA key that signed it.
    pub ca_fingerprint: String,
    /// `None` when it is a host certificate whose signature verifies, valid now, and whose
    /// principals name the host being judged; otherwise why not, as a phrase that follows
    /// "the certificate" (`expired at 2026-01-02T00:00:00Z`).
    pub problem: Option<String>,
}

impl Marker {
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::None => "none",
            Marker::CertAuthority => "cert-authority",
            Marker::Revoked => "revoked",
        }
    }

    pub fn parse(text: &str) -> Option<Marker> {
        match text {
            "none" => Some(Marker::None),
            "cert-authority" => Some(Marker::CertAuthority),
            "revoked" => Some(Marker::Revoked),
            _ => None,
        }
    }

    /// The `@...` word a line starts with, or `""` for none.
    fn line_prefix(self) -> &'static str {
        match self {
            Marker::None => "",
            Marker::CertAuthority => "@cert-authority ",
            Marker::Revoked => "@revoked ",
        }
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Trusted => "trusted",
            Status::Unknown => "unknown",
            Status::NewAlgorithm => "new_algorithm",
            Status::Changed => "changed",
            Status::Revoked => "revoked",
            Status::CaTrusted => "ca_trusted",
            Status::CertificateInvalid => "certificate_invalid",
        }
    }

    /// Verdicts that block `connect` until the app accepts or replaces (or, for
    /// `certificate_invalid`, until a verify finds a valid certificate of a trusted CA).
    pub fn blocks_connect(self) -> bool {
        matches!(
            self,
            Status::Changed | Status::Revoked | Status::CertificateInvalid
        )
    }

    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::Trusted,
            Status::Unknown,
            Status::NewAlgorithm,
            Status::Changed,
            Status::Revoked,
            Status::CaTrusted,
            Status::CertificateInvalid,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

impl HostToken {
    /// The token as a known_hosts file writes it.
    pub fn text(&self) -> String {
        match self {
            HostToken::Plain(token) => token.clone(),
            HostToken::Hashed { salt, hash } => format!("{HASH_MAGIC}{salt}|{hash}"),
        }
    }

    /// Reads a stored token back.
    pub fn from_text(text: &str) -> HostToken {
        match parse_hashed(text) {
            Some(token) => token,
            None => HostToken::Plain(text.to_owned()),
        }
    }
}

/// The field separators of a known_hosts line, as OpenSSH reads it: space and tab only. A
/// Unicode space (no-break space, U+2028, ...) is part of a field to `ssh`, so it is here too.
pub const FIELD_SEPARATORS: [char; 2] = [' ', '\t'];

/// Splits a known_hosts text into lines (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"): blank
/// lines and `#` comments are skipped; every other line is read or refused with a reason.
/// Fields are split on `FIELD_SEPARATORS` alone.
pub fn parse(text: &str) -> Vec<Parsed> {
    text.lines()
        .enumerate()
        .filter_map(|(index, raw)| {
            let trimmed = raw.trim_matches(FIELD_SEPARATORS);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                return None;
            }
            let number = index + 1;
            Some(match parse_line(number, trimmed) {
                Ok(line) => Parsed::Line(line),
                Err(reason) => Parsed::Refused { number, reason },
            })
        })
        .collect()
}

/// The verdict on `presented` given every stored entry whose host names match the host
/// (docs/api.md, "Host keys (known_hosts)"). Order matters: a revocation wins over
/// everything, a valid CA signature over plain keys, and a plain key of another type never
/// reads as `changed` (that false alarm trains users to click through).
pub fn judge(presented: &Presented, matching: &[KnownKey]) -> Status {
    let ca = presented.certificate.as_ref();
    let revoked = matching.iter().any(|known| {
        known.marker == Marker::Revoked
            && (known.fingerprint == presented.fingerprint
                || ca.is_some_and(|ca| ca.ca_fingerprint == known.fingerprint))
    });
    if revoked {
        return Status::Revoked;
    }
    if let Some(ca) = ca {
        let trusted_ca = matching.iter().any(|known| {
            known.marker == Marker::CertAuthority && known.fingerprint == ca.ca_fingerprint
        });
        // As `ssh` does: a certificate of a CA trusted here is judged as a certificate
        // only; one of a CA not trusted here falls back to its plain key.
        if trusted_ca {
            return match ca.problem {
                None => Status::CaTrusted,
                Some(_) => Status::CertificateInvalid,
            };
        }
    }
    let plain: Vec<&KnownKey> = matching
        .iter()
        .filter(|known| known.marker == Marker::None)
        .collect();
    if plain
        .iter()
        .any(|known| known.fingerprint == presented.fingerprint)
    {
        return Status::Trusted;
    }
    if plain
        .iter()
        .any(|known| known.key_type == presented.key_type)
    {
        return Status::Changed;
    }
    if !plain.is_empty() {
        return Status::NewAlgorithm;
    }
    Status::Unknown
}

/// Why `judge` answered `status`, for the verdicts that refuse a key: which key or CA is
/// `@revoked`, or what is wrong with a certificate of a trusted CA. `None` for the others.
pub fn reason(presented: &Presented, matching: &[KnownKey], status: Status) -> Option<String> {
    let ca = presented.certificate.as_ref();
    match status {
        Status::Revoked => {
            let key_revoked = matching.iter().any(|known| {
                known.marker == Marker::Revoked && known.fingerprint == presented.fingerprint
            });
            Some(match (key_revoked, ca) {
                (false, Some(ca)) => format!(
                    "the certificate's CA {} is marked @revoked for this host",
                    ca.ca_fingerprint
                ),
                _ => format!(
                    "the key {} is marked @revoked for this host",
                    presented.fingerprint
                ),
            })
        }
        Status::CertificateInvalid => ca.map(|ca| {
            format!(
                "the certificate (signed by {}, a CA trusted for this host) {}",
                ca.ca_fingerprint,
                ca.problem
                    .as_deref()
                    .unwrap_or("is not valid for this host")
            )
        }),
        _ => None,
    }
}

/// One line of an exported file: `[@marker ]host key_type base64[ comment]`.
pub fn render_line(marker: Marker, host: &str, public_key: &str, comment: &str) -> String {
    let comment = one_line(comment);
    let mut line = format!(
        "{}{} {}",
        marker.line_prefix(),
        one_line(host),
        one_line(public_key)
    );
    if !comment.is_empty() {
        line.push(' ');
        line.push_str(&comment);
    }
    line.push('\n');
    line
}

/// `hostname` of a verify or accept body: a bare DNS name or IP address, returned
/// ASCII-lowercased (docs/api.md, "Host keys (known_hosts)").
pub fn hostname(value: Option<&Value>) -> Result<String, Invalid> {
    let Some(value) = value else {
        return Err(Invalid::new("hostname", "is required"));
    };
    Ok(validate::hostname(value)?.to_ascii_lowercase())
}

/// `port` of a verify or accept body: 1-65535, 22 when absent or `null`.
pub fn port(value: Option<&Value>) -> Result<u16, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(DEFAULT_PORT),
        Some(value) => validate::port(value),
    }
}

/// `public_key` of a verify or accept body: one line of text (`<type> <base64>
/// [comment]`); `sshkey` reads the key itself.
pub fn public_key(value: Option<&Value>) -> Result<String, Invalid> {
    let rule = "must be a public key in OpenSSH form: `<type> <base64> [comment]`";
    match value {
        Some(Value::String(text)) => {
            // ASCII blanks only: a Unicode space is part of a field to `ssh`.
            let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
            match text.is_empty() || text.contains(['\n', '\r']) {
                true => Err(Invalid::new("public_key", rule)),
                false => Ok(text.to_owned()),
            }
        }
        _ => Err(Invalid::new("public_key", rule)),
    }
}

/// `pattern` of a host CA (`POST /api/known-hosts/authorities`): one host name or pattern
/// as a known_hosts line holds it (`*.example.com`, `[host]:2222`, `192.0.2.?`, `*`), by
/// the import's rules, returned ASCII-lowercased.
pub fn authority_pattern(value: Option<&Value>) -> Result<String, Invalid> {
    let refused = |rule: &str| Err(Invalid::new("pattern", rule));
    let text = match value {
        Some(Value::String(text)) if !text.is_empty() => text,
        _ => {
            return refused("is required: a host name or pattern (`*.example.com`, `[host]:2222`)")
        }
    };
    if text.chars().count() > MAX_PATTERN_CHARS {
        return Err(Invalid::new(
            "pattern",
            format!("must be at most {MAX_PATTERN_CHARS} characters"),
        ));
    }
    if text.contains(',') {
        return refused("must be one name or pattern: add one authority per pattern");
    }
    if text.starts_with('!') {
        return refused("must not be negated (!): list the hosts the CA is trusted for");
    }
    if text.starts_with('|') {
        return refused("must be a plain name or pattern, not a hashed name");
    }
    match plain_name_problem(text) {
        Some(problem) => refused(problem),
        None => Ok(text.to_ascii_lowercase()),
    }
}

fn parse_line(number: usize, line: &str) -> Result<Line, String> {
    if line.chars().count() > MAX_LINE_CHARS {
        return Err(format!("longer than {MAX_LINE_CHARS} characters"));
    }
    let mut fields = line
        .split(FIELD_SEPARATORS)
        .filter(|field| !field.is_empty());
    let mut first = fields.next().unwrap_or_default();
    let marker = match first.strip_prefix('@') {
        None => Marker::None,
        Some("cert-authority") => Marker::CertAuthority,
        Some("revoked") => Marker::Revoked,
        Some(_) => return Err("unknown marker: only @cert-authority and @revoked exist".into()),
    };
    if marker != Marker::None {
        first = fields.next().unwrap_or_default();
    }
    let (Some(key_type), Some(key_base64)) = (fields.next(), fields.next()) else {
        return Err("expected host names, a key type and a base64 key".into());
    };
    let comment = fields.collect::<Vec<_>>().join(" ");
    let hosts = parse_hosts(first)?;
    if key_type.contains("-cert-v01@openssh.com") {
        return Err(
            "a certificate: known_hosts lists plain keys, and CAs as @cert-authority".into(),
        );
    }
    Ok(Line {
        number,
        marker,
        hosts,
        key_type: key_type.to_owned(),
        key_base64: key_base64.to_owned(),
        comment,
    })
}

/// The comma list of host names. Negated patterns (`!`) are refused: they only mean
/// something together with the other names of their line, and this store keeps one name
/// per entry.
fn parse_hosts(field: &str) -> Result<Vec<HostToken>, String> {
    if field.starts_with(HASH_MAGIC) {
        // A hashed name stands alone (OpenSSH writes it so and reads no list after it).
        return parse_hashed(field)
            .map(|token| vec![token])
            .ok_or_else(|| "a hashed name must be |1|<base64 salt>|<base64 hash>".to_owned());
    }
    let mut hosts = Vec::new();
    for name in field.split(',') {
        if hosts.len() >= MAX_NAMES_PER_LINE {
            return Err(format!("more than {MAX_NAMES_PER_LINE} host names"));
        }
        if name.is_empty() {
            return Err("an empty host name in the comma list".into());
        }
        if name.starts_with('!') {
            return Err("negated patterns (!) are not kept; list the hosts instead".into());
        }
        if name.starts_with('|') {
            return Err("a hashed name must stand alone and start with |1|".into());
        }
        if let Some(problem) = plain_name_problem(name) {
            return Err(format!("host name {}: {problem}", one_line(name)));
        }
        hosts.push(HostToken::Plain(name.to_ascii_lowercase()));
    }
    Ok(hosts)
}

/// Why a plain name or pattern cannot be kept: only the characters of host names, IP
/// addresses and the `*`/`?` wildcards, in the bare or `[host]:port` form.
fn plain_name_problem(name: &str) -> Option<&'static str> {
    let allowed =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '*' | '?');
    let bare = match name.strip_prefix('[') {
        None => name,
        Some(rest) => {
            let Some((host, port)) = rest.rsplit_once("]:") else {
                return Some("a bracketed name must be [host]:port");
            };
            match port.parse::<u16>() {
                Ok(number) if number >= 1 && number.to_string() == port => host,
                _ => return Some("the port of [host]:port must be 1-65535"),
            }
        }
    };
    if bare.is_empty() || !bare.chars().all(allowed) {
        return Some("only letters, digits, . - _ : and the wildcards * ? are allowed");
    }
    None
}

fn parse_hashed(text: &str) -> Option<HostToken> {
    let rest = text.strip_prefix(HASH_MAGIC)?;
    let (salt, hash) = rest.split_once('|')?;
    let base64 = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    };
    (base64(salt) && base64(hash)).then(|| HostToken::Hashed {
        salt: salt.to_owned(),
        hash: hash.to_owned(),
    })
}

/// `text` with every control character (line breaks included) replaced by a space.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::panic;

    use crate::model::host_patterns::{pattern_matches, split_token};
    use crate::model::known_hosts::{
        authority_pattern, judge, parse, public_key, reason, render_line, CertificateFacts,
        HostToken, KnownKey, Line, Marker, Parsed, Presented, Status, MAX_LINE_CHARS,
        MAX_NAMES_PER_LINE, MAX_PATTERN_CHARS,
    };

    const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

    fn only_line(text: &str) -> Line {
        match parse(text).as_slice() {
            [Parsed::Line(line)] => line.clone(),
            other => panic!("expected one line, got {other:?}"),
        }
    }

    fn refused(text: &str) -> String {
        match parse(text).as_slice() {
            [Parsed::Refused { reason, .. }] => reason.clone(),
            other => panic!("expected one refusal, got {other:?}"),
        }
    }

    #[test]
    fn fields_split_on_space_and_tab_only_as_openssh_reads_them() {
        let tabbed = only_line(&format!("\tgood.example\tssh-ed25519 \t{KEY}\tme "));
        assert_eq!(tabbed.hosts, vec![HostToken::Plain("good.example".into())]);
        assert_eq!(tabbed.comment, "me");
        // To ssh a leading no-break space is part of the host name, and U+2028 or a
        // no-break space between the type and the key makes one unreadable field.
        for space in ['\u{a0}', '\u{2028}', '\u{3000}'] {
            for text in [
                format!("{space}good.example ssh-ed25519 {KEY}"),
                format!("good.example ssh-ed25519{space}{KEY}"),
                format!("good.example{space}ssh-ed25519 {KEY}"),
            ] {
                assert!(
                    !matches!(parse(&text).as_slice(), [Parsed::Line(line)]
                        if line.hosts == [HostToken::Plain("good.example".into())]
                            && line.key_base64 == KEY),
                    "{text:?} must not trust good.example"
                );
            }
        }
    }

    #[test]
    fn a_public_key_body_is_trimmed_of_ascii_blanks_only() {
        let key = format!("ssh-ed25519 {KEY}");
        let value = |text: String| serde_json::Value::String(text);
        assert_eq!(public_key(Some(&value(format!(" {key}\n")))).unwrap(), key);
        assert_eq!(
            public_key(Some(&value(format!("\u{a0}{key}")))).unwrap(),
            format!("\u{a0}{key}"),
            "left for the key reader to refuse"
        );
        assert!(public_key(Some(&value(format!("{key}\rx")))).is_err());
    }

    #[test]
    fn comma_list_with_a_port_splits_into_lowercased_names() {
        let line = only_line(&format!(
            "Web.Example.com,[web]:2222,192.0.2.7 ssh-ed25519 {KEY} me@x"
        ));
        assert_eq!(
            line.hosts,
            vec![
                HostToken::Plain("web.example.com".into()),
                HostToken::Plain("[web]:2222".into()),
                HostToken::Plain("192.0.2.7".into()),
            ]
        );
        assert_eq!(
            (line.key_type.as_str(), line.comment.as_str()),
            ("ssh-ed25519", "me@x")
        );
        assert_eq!(line.marker, Marker::None);
    }

    #[test]
    fn blank_lines_and_comments_are_skipped_and_line_numbers_kept() {
        let parsed = parse(&format!("# c\n\n  \nhost ssh-ed25519 {KEY}\n"));
        assert!(matches!(
            parsed.as_slice(),
            [Parsed::Line(Line { number: 4, .. })]
        ));
    }

    #[test]
    fn markers_cert_authority_and_revoked_are_read_and_others_refused() {
        assert_eq!(
            only_line(&format!("@cert-authority *.corp ssh-ed25519 {KEY}")).marker,
            Marker::CertAuthority
        );
        assert_eq!(
            only_line(&format!("@revoked * ssh-ed25519 {KEY}")).marker,
            Marker::Revoked
        );
        assert!(refused(&format!("@trusted * ssh-ed25519 {KEY}")).contains("marker"));
    }

    #[test]
    fn hashed_name_is_kept_as_salt_and_hash() {
        let line = only_line(&format!(
            "|1|c2FsdHNhbHRzYWx0c2FsdHNhbHQ=|aGFzaGhhc2hoYXNoaGFzaGhhc2g= ssh-ed25519 {KEY}"
        ));
        assert_eq!(
            line.hosts,
            vec![HostToken::Hashed {
                salt: "c2FsdHNhbHRzYWx0c2FsdHNhbHQ=".into(),
                hash: "aGFzaGhhc2hoYXNoaGFzaGhhc2g=".into()
            }]
        );
    }

    #[test]
    fn negated_pattern_is_refused_and_plain_wildcards_are_kept() {
        assert!(refused(&format!("*.corp,!secret.corp ssh-ed25519 {KEY}")).contains("negated"));
        let line = only_line(&format!("*.corp,192.0.2.? ssh-ed25519 {KEY}"));
        assert_eq!(line.hosts.len(), 2);
    }

    #[test]
    fn a_line_without_a_key_or_with_a_certificate_is_refused() {
        assert!(refused("host ssh-ed25519").contains("expected"));
        assert!(
            refused(&format!("host ssh-ed25519-cert-v01@openssh.com {KEY}"))
                .contains("certificate")
        );
    }

    #[test]
    fn bracketed_port_0_or_65536_is_refused_and_65535_is_kept() {
        assert!(refused(&format!("[h]:0 ssh-ed25519 {KEY}")).contains("port"));
        assert!(refused(&format!("[h]:65536 ssh-ed25519 {KEY}")).contains("port"));
        assert!(refused(&format!("[h]:022 ssh-ed25519 {KEY}")).contains("port"));
        assert_eq!(
            only_line(&format!("[h]:65535 ssh-ed25519 {KEY}"))
                .hosts
                .len(),
            1
        );
    }

    #[test]
    fn line_of_max_chars_is_read_and_one_more_is_refused() {
        let prefix = format!("h ssh-ed25519 {KEY} ");
        let at_max = format!("{prefix}{}", "c".repeat(MAX_LINE_CHARS - prefix.len()));
        assert_eq!(only_line(&at_max).number, 1);
        assert!(refused(&format!("{at_max}c")).contains("longer"));
    }

    #[test]
    fn line_of_256_names_is_read_and_257_are_refused() {
        let names = |count: usize| -> String {
            (0..count)
                .map(|n| format!("h{n}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let line = only_line(&format!("{} ssh-ed25519 {KEY}", names(MAX_NAMES_PER_LINE)));
        assert_eq!(line.hosts.len(), MAX_NAMES_PER_LINE);
        let too_many = format!("{} ssh-ed25519 {KEY}", names(MAX_NAMES_PER_LINE + 1));
        assert!(refused(&too_many).contains("more than 256"));
    }

    #[test]
    fn render_line_writes_marker_and_comment_and_never_a_line_break() {
        assert_eq!(
            render_line(Marker::Revoked, "*", "ssh-ed25519 AAAA", "a\nb"),
            "@revoked * ssh-ed25519 AAAA a b\n"
        );
        assert_eq!(
            render_line(Marker::None, "h", "ssh-ed25519 AAAA", ""),
            "h ssh-ed25519 AAAA\n"
        );
    }

    #[test]
    fn an_authority_pattern_is_one_name_or_pattern_on_both_sides_of_each_rule() {
        let pattern = |text: &str| authority_pattern(Some(&serde_json::json!(text)));
        assert_eq!(pattern("*.Example.COM").unwrap(), "*.example.com");
        assert_eq!(pattern("[h]:2222").unwrap(), "[h]:2222");
        assert_eq!(pattern("*").unwrap(), "*");
        assert!(pattern("").is_err());
        assert!(authority_pattern(None).is_err());
        assert!(authority_pattern(Some(&serde_json::json!(7))).is_err());
        assert!(pattern("a.example,b.example")
            .unwrap_err()
            .rule
            .contains("one"));
        assert!(pattern("!a.example").unwrap_err().rule.contains("negated"));
        assert!(pattern("|1|c2FsdA==|aGFzaA==")
            .unwrap_err()
            .rule
            .contains("hashed"));
        assert!(pattern("a example").is_err());
        assert!(pattern("[h]:0").unwrap_err().rule.contains("port"));
        assert!(pattern("[h]:65535").is_ok());
        let longest = "a".repeat(MAX_PATTERN_CHARS);
        assert!(pattern(&longest).is_ok());
        assert!(pattern(&format!("{longest}a"))
            .unwrap_err()
            .rule
            .contains("at most"));
    }

    fn known(marker: Marker, key_type: &str, fingerprint: &str) -> KnownKey {
        KnownKey {
            id: fingerprint.to_owned(),
            marker,
            key_type: key_type.to_owned(),
            fingerprint: fingerprint.to_owned(),
        }
    }

    fn plain(key_type: &str, fingerprint: &str) -> Presented {
        Presented {
            key_type: key_type.to_owned(),
            fingerprint: fingerprint.to_owned(),
            certificate: None,
        }
    }

    #[test]
    fn same_key_is_trusted_and_nothing_stored_is_unknown() {
        let stored = [known(Marker::None, "ssh-ed25519", "A")];
        assert_eq!(judge(&plain("ssh-ed25519", "A"), &stored), Status::Trusted);
        assert_eq!(judge(&plain("ssh-ed25519", "A"), &[]), Status::Unknown);
    }

    #[test]
    fn other_key_of_a_stored_type_is_changed_but_of_a_new_type_is_new_algorithm() {
        let stored = [known(Marker::None, "ssh-rsa", "R")];
        assert_eq!(judge(&plain("ssh-rsa", "X"), &stored), Status::Changed);
        assert_eq!(
            judge(&plain("ssh-ed25519", "E"), &stored),
            Status::NewAlgorithm
        );
    }

    #[test]
    fn a_matching_key_wins_over_a_stale_one_of_the_same_type() {
        let stored = [
            known(Marker::None, "ssh-rsa", "OLD"),
            known(Marker::None, "ssh-rsa", "NEW"),
        ];
        assert_eq!(judge(&plain("ssh-rsa", "NEW"), &stored), Status::Trusted);
    }

    #[test]
    fn revoked_key_is_revoked_even_when_also_trusted() {
        let stored = [
            known(Marker::None, "ssh-ed25519", "A"),
            known(Marker::Revoked, "ssh-ed25519", "A"),
        ];
        assert_eq!(judge(&plain("ssh-ed25519", "A"), &stored), Status::Revoked);
    }

    fn certificate(problem: Option<&str>) -> Presented {
        Presented {
            certificate: Some(CertificateFacts {
                ca_fingerprint: "CA".into(),
                problem: problem.map(str::to_owned),
            }),
            ..plain("ssh-ed25519", "K")
        }
    }

    #[test]
    fn certificate_of_a_trusted_ca_is_ca_trusted_when_valid_and_certificate_invalid_when_not() {
        let stored = [known(Marker::CertAuthority, "ssh-ed25519", "CA")];
        assert_eq!(judge(&certificate(None), &stored), Status::CaTrusted);
        let expired = certificate(Some("expired at 2020-01-02T00:00:00Z"));
        assert_eq!(judge(&expired, &stored), Status::CertificateInvalid);
        let why = reason(&expired, &stored, Status::CertificateInvalid).unwrap();
        assert!(
            why.contains("expired at 2020-01-02") && why.contains("CA"),
            "{why}"
        );
        let revoked_ca = [known(Marker::Revoked, "ssh-ed25519", "CA")];
        assert_eq!(judge(&certificate(None), &revoked_ca), Status::Revoked);
        let why = reason(&certificate(None), &revoked_ca, Status::Revoked).unwrap();
        assert!(why.contains("CA CA is marked @revoked"), "{why}");
    }

    #[test]
    fn an_invalid_certificate_of_a_trusted_ca_is_refused_even_when_its_plain_key_is_trusted() {
        let stored = [
            known(Marker::CertAuthority, "ssh-ed25519", "CA"),
            known(Marker::None, "ssh-ed25519", "K"),
        ];
        let invalid = certificate(Some("expired"));
        assert_eq!(judge(&invalid, &stored), Status::CertificateInvalid);
        assert!(Status::CertificateInvalid.blocks_connect());
    }

    #[test]
    fn a_certificate_of_a_ca_not_trusted_here_is_judged_by_its_plain_key() {
        let stored = [known(Marker::None, "ssh-ed25519", "K")];
        assert_eq!(
            judge(&certificate(Some("expired")), &stored),
            Status::Trusted
        );
        assert_eq!(judge(&certificate(None), &[]), Status::Unknown);
        assert_eq!(reason(&certificate(None), &[], Status::Unknown), None);
    }

    #[test]
    fn every_status_reads_back_from_its_name() {
        for name in [
            "trusted",
            "unknown",
            "new_algorithm",
            "changed",
            "revoked",
            "ca_trusted",
            "certificate_invalid",
        ] {
            assert_eq!(Status::parse(name).map(Status::as_str), Some(name));
        }
    }

    /// docs/api.md, "Host keys (known_hosts)": the parser and the pattern matcher never
    /// panic. `FUZZ_ITERATIONS` inputs (default 20,000; `scripts/fuzz` runs a million)
    /// built from pieces of real lines, spliced, cut and sprinkled with random bytes.
    #[test]
    fn known_hosts_parser_never_panics_on_seeded_random_text() {
        let (iterations, seed) = crate::fuzz::settings("known_hosts", 0x5EED_CAFE);
        let pieces: [&str; 24] = [
            "@cert-authority",
            "@revoked",
            "@",
            "|1|",
            "|",
            "|1|c2FsdA==|aGFzaA==",
            "[",
            "]",
            "]:",
            ":22",
            ":65536",
            "*",
            "?",
            "!",
            ",",
            " ",
            "\t",
            "\n",
            "#",
            "ssh-ed25519",
            KEY,
            "é",
            "[h]:2222",
            "example.com",
        ];
        let mut rng = crate::fuzz::Rng::new(seed);
        for iteration in 0..iterations {
            let mut text = String::new();
            for _ in 0..rng.below(24) {
                match rng.below(8) {
                    0 => text.push(char::from_u32(rng.below(0x250) as u32).unwrap_or('x')),
                    _ => text.push_str(rng.pick::<&str>(&pieces)),
                }
            }
            let outcome = panic::catch_unwind(|| {
                for parsed in parse(&text) {
                    if let Parsed::Line(line) = parsed {
                        for host in &line.hosts {
                            let _ = HostToken::from_text(&host.text());
                            if let HostToken::Plain(token) = host {
                                let _ = pattern_matches(token, &text);
                                let _ = split_token(token);
                            }
                        }
                    }
                }
                let _ = pattern_matches(&text, "[example.com]:2222");
            });
            assert!(outcome.is_ok(), "panic on input #{iteration}: {text:?}");
        }
    }
}
