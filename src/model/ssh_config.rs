//! OpenSSH client configuration text (ssh_config(5)): the parser behind
//! `POST /api/import/ssh-config`, which reads each block into what a host needs, and the
//! names the export writes (`ssh_config_export`) so an import knows them again.
//!
//! Invariants: pure functions over text, no I/O (an `Include` is reported, never followed);
//! blanks, keywords and arguments are read as `ssh` reads them (`ssh_words`).

use std::collections::HashSet;

use crate::model::ssh_config_session::{BlockSession, SessionReader};
use crate::model::ssh_words::{is_config_blank, split_args, split_keyword};
use crate::model::validate;

/// The comment the export writes above each `Host` line so an import gets the name back:
/// `# host-manager name: <name>`.
pub const NAME_COMMENT: &str = "# host-manager name: ";

/// Where the export points `IdentityFile`: the desktop app writes the private key that
/// `connect` answers to `~/.ssh/host-manager/<key_id>` (mode 0600).
pub const IDENTITY_DIR: &str = "~/.ssh/host-manager/";

/// Where the export points `UserKnownHostsFile` (docs/api.md "Host keys (known_hosts)"): the
/// desktop app writes `GET /api/export/known-hosts` there, so `ssh` trusts exactly the keys
/// the service trusts. An import drops this very directive (the export wrote it).
pub const KNOWN_HOSTS_FILE: &str = "~/.ssh/host-manager/known_hosts";

/// The suffix of an exported public key file: with `?agent=true` the export points
/// `IdentityFile` at `~/.ssh/host-manager/<key_id>.pub` (the desktop app writes the key's
/// public half there) and `IdentityAgent` at the SSH agent, so `ssh` asks the agent for
/// that key first (docs/agent.md "SSH agent"). An import drops the `IdentityAgent` and
/// `IdentitiesOnly` lines of such a block: the export wrote them.
pub const PUBLIC_KEY_SUFFIX: &str = ".pub";

/// The suffix of an exported certificate file: a key host whose key has a certificate in
/// use gets `CertificateFile ~/.ssh/host-manager/<key_id>-cert.pub` (the desktop app writes
/// the key's `certificate` there, docs/api.md "Certificates"). An import drops that line
/// (the export wrote it); any other `CertificateFile` is kept as an option.
pub const CERTIFICATE_SUFFIX: &str = "-cert.pub";

/// Default port of ssh_config(5).
pub const DEFAULT_PORT: u16 = 22;

/// One directive line: its keyword as written, its arguments (quotes removed), and the
/// trimmed line itself (kept verbatim when the directive is not mapped to a field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub line: usize,
    pub keyword: String,
    pub args: Vec<String>,
    pub raw: String,
}

impl Directive {
    /// Hands the line to a block's session reader; `true` when it took it (a forward, the
    /// command, the environment, or one of their comments).
    fn read_into(&self, session: &mut SessionReader) -> bool {
        session.read(self.line, &self.keyword, &self.args, &self.raw)
    }
}

/// A top-level piece of a config file, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Section {
    /// Directives before the first `Host` or `Match` (they apply to every host).
    Global(Vec<Directive>),
    Host {
        line: usize,
        patterns: Vec<String>,
        /// The name of a `NAME_COMMENT` line right above the `Host` line.
        name_hint: Option<String>,
        directives: Vec<Directive>,
    },
    Match {
        line: usize,
        criteria: String,
    },
    Include {
        line: usize,
        raw: String,
    },
    /// A line that cannot be read (a quote left open).
    Unreadable {
        line: usize,
        reason: String,
    },
}

/// A concrete `Host` block, read into what a host needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostBlock {
    /// `Host a b` as written after `Host`: the block's label in answers.
    pub label: String,
    pub line: usize,
    /// The first alias, or the `NAME_COMMENT` name when one is given.
    pub name: String,
    /// Every alias of the `Host` line (ProxyJump hops may name any of them).
    pub aliases: Vec<String>,
    pub hostname: String,
    pub port: u16,
    /// `None` when the block has no `User`.
    pub username: Option<String>,
    /// `IdentityFile` lines in order: (path as written, the verbatim line).
    pub identity_files: Vec<(String, String)>,
    /// `ProxyJump` hops as written; empty for none (or `none`).
    pub proxy_jump: Vec<String>,
    /// Every other directive, verbatim, in order.
    pub options: Vec<String>,
    /// Forwards, startup command and environment (docs/forwards.md); boxed, as most blocks
    /// have none.
    pub session: Box<BlockSession>,
    /// Things the reader noticed and the answer should say (ignored repeats...).
    pub warnings: Vec<String>,
}

/// What became of each top-level piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Host(HostBlock),
    Skipped { block: String, reason: String },
}

/// Splits a config text into sections (ssh_config(5): `#` comments, blank lines,
/// case-insensitive keywords, `keyword value` or `keyword=value`, quoted arguments), with
/// `is_config_blank` as the only separators, as `ssh` reads them.
pub fn parse(text: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut global = Vec::new();
    let mut current: Option<Section> = None;
    let mut comment_name: Option<String> = None;
    for (index, raw_line) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw_line.trim_matches(is_config_blank);
        if line.is_empty() {
            comment_name = None;
            continue;
        }
        if line.starts_with('#') {
            comment_name = comment(&mut current, line_no, line);
            continue;
        }
        let hint = comment_name.take();
        let (keyword, rest) = split_keyword(line);
        let args = match split_args(rest) {
            Ok(args) => args,
            Err(reason) => {
                flush(&mut sections, &mut current);
                sections.push(Section::Unreadable {
                    line: line_no,
                    reason,
                });
                continue;
            }
        };
        match keyword.to_ascii_lowercase().as_str() {
            "host" => {
                flush(&mut sections, &mut current);
                current = Some(Section::Host {
                    line: line_no,
                    patterns: args,
                    name_hint: hint,
                    directives: Vec::new(),
                });
            }
            "match" => {
                flush(&mut sections, &mut current);
                current = Some(Section::Match {
                    line: line_no,
                    criteria: rest.trim_matches(is_config_blank).to_owned(),
                });
            }
            "include" => {
                // An Include inside a block applies to that block only; either way it is
                // reported and not followed.
                sections.push(Section::Include {
                    line: line_no,
                    raw: line.to_owned(),
                });
            }
            _ => {
                let directive = Directive {
                    line: line_no,
                    keyword: keyword.to_owned(),
                    args,
                    raw: line.to_owned(),
                };
                match &mut current {
                    Some(Section::Host { directives, .. }) => directives.push(directive),
                    Some(_) => {}
                    None => global.push(directive),
                }
            }
        }
    }
    flush(&mut sections, &mut current);
    if !global.is_empty() {
        sections.insert(0, Section::Global(global));
    }
    sections
}

/// A comment line: kept for the block it is in as keyword `#` (it may carry a forward
/// rule's flags or name a secret variable: ssh_config_session); answers the name a
/// `NAME_COMMENT` gives the next `Host` line.
fn comment(current: &mut Option<Section>, line_no: usize, line: &str) -> Option<String> {
    if let Some(Section::Host { directives, .. }) = current {
        directives.push(Directive {
            line: line_no,
            keyword: "#".to_owned(),
            args: Vec::new(),
            raw: line.to_owned(),
        });
    }
    line.strip_prefix(NAME_COMMENT.trim_end())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

/// Reads every section into a host to import or a reason to skip it.
pub fn interpret(sections: &[Section]) -> Vec<Outcome> {
    sections.iter().map(outcome).collect()
}

/// True for a `Host` pattern that names no one host: `*`, `?` or a `!` negation.
pub fn is_wildcard(pattern: &str) -> bool {
    pattern.contains('*') || pattern.contains('?') || pattern.starts_with('!')
}

fn flush(sections: &mut Vec<Section>, current: &mut Option<Section>) {
    if let Some(section) = current.take() {
        sections.push(section);
    }
}

fn outcome(section: &Section) -> Outcome {
    let skip = |block: String, reason: &str| Outcome::Skipped {
        block,
        reason: reason.to_owned(),
    };
    match section {
        Section::Global(directives) => skip(
            format!("(before the first Host, {} directive(s))", directives.len()),
            "directives outside a Host block apply to every host and are not imported",
        ),
        Section::Match { line, criteria } => skip(
            format!("Match {criteria} (line {line})"),
            "Match blocks are conditional and are not imported",
        ),
        Section::Include { line, raw } => skip(
            format!("{raw} (line {line})"),
            "Include is not supported: import each file's text separately",
        ),
        Section::Unreadable { line, reason } => skip(format!("line {line}"), reason),
        Section::Host {
            line,
            patterns,
            name_hint,
            directives,
        } => host_block(*line, patterns, name_hint.as_deref(), directives),
    }
}

fn host_block(
    line: usize,
    patterns: &[String],
    name_hint: Option<&str>,
    directives: &[Directive],
) -> Outcome {
    let label = format!("Host {} (line {line})", patterns.join(" "));
    let skip = |reason: String| Outcome::Skipped {
        block: label.clone(),
        reason,
    };
    if patterns.is_empty() {
        return skip("the Host line names no host".into());
    }
    // A block with any wildcard or negation applies to many hosts: importing it as one
    // host would be wrong, and its concrete aliases alone would change its meaning.
    if patterns.iter().any(|pattern| is_wildcard(pattern)) {
        return skip("wildcard or negated patterns match many hosts; not imported".into());
    }
    // Name, HostName, Port and User are checked by the API's rules in the import's plan
    // (`model::host::HostFields`), once the default user is known.
    let name = name_hint.unwrap_or(&patterns[0]).to_owned();
    let mut block = HostBlock {
        label: label.clone(),
        line,
        name,
        aliases: patterns.to_vec(),
        hostname: patterns[0].clone(),
        port: DEFAULT_PORT,
        username: None,
        identity_files: Vec::new(),
        proxy_jump: Vec::new(),
        options: Vec::new(),
        session: Box::default(),
        warnings: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut session = SessionReader::default();
    for directive in directives {
        if directive.read_into(&mut session) {
            continue;
        }
        let keyword = directive.keyword.to_ascii_lowercase();
        let first = seen.insert(keyword.clone());
        let value = directive.args.first().cloned().unwrap_or_default();
        let mapped = matches!(keyword.as_str(), "hostname" | "port" | "user" | "proxyjump");
        if mapped && !first {
            // ssh_config(5): the first obtained value is used.
            block.warnings.push(format!(
                "line {}: a second {} is ignored (OpenSSH uses the first)",
                directive.line, directive.keyword
            ));
            continue;
        }
        match keyword.as_str() {
            "hostname" => block.hostname = value,
            "port" => match value.parse::<u64>().map(validate::port_number) {
                Ok(Ok(port)) => block.port = port,
                _ => return skip(format!("line {}: Port must be 1-65535", directive.line)),
            },
            "user" => block.username = Some(value),
            "proxyjump" => {
                block.proxy_jump = match value.eq_ignore_ascii_case("none") {
                    true => Vec::new(),
                    false => value.split(',').map(str::to_owned).collect(),
                }
            }
            "identityfile" => block.identity_files.push((value, directive.raw.clone())),
            "userknownhostsfile" if directive.args == [KNOWN_HOSTS_FILE] => {}
            "certificatefile" if is_exported_certificate(&value) => {}
            _ => block.options.push(directive.raw.clone()),
        }
    }
    let (read, warnings) = session.finish();
    block.session = Box::new(read);
    block.warnings.extend(warnings);
    drop_exported_agent_lines(&mut block);
    Outcome::Host(block)
}

/// `~/.ssh/host-manager/<file>-cert.pub`: a certificate file the export names.
fn is_exported_certificate(path: &str) -> bool {
    path.strip_prefix(IDENTITY_DIR)
        .is_some_and(|file| file.ends_with(CERTIFICATE_SUFFIX) && !file.contains('/'))
}

/// In a block whose `IdentityFile` is an exported public key file, drops the
/// `IdentityAgent` and `IdentitiesOnly yes` lines the agent export wrote with it.
fn drop_exported_agent_lines(block: &mut HostBlock) {
    let exported = block.identity_files.iter().any(|(path, _)| {
        path.strip_prefix(IDENTITY_DIR)
            .is_some_and(|file| file.ends_with(PUBLIC_KEY_SUFFIX))
    });
    if !exported {
        return;
    }
    block.options.retain(|raw| {
        let (keyword, rest) = split_keyword(raw.trim_matches(is_config_blank));
        let value = rest.trim_matches(is_config_blank);
        !(keyword.eq_ignore_ascii_case("identityagent")
            || keyword.eq_ignore_ascii_case("identitiesonly") && value.eq_ignore_ascii_case("yes"))
    });
}

/// The hosts an import reads back from `text` (skipped blocks left out), for tests here and
/// in the export's.
#[cfg(test)]
pub fn hosts_of(text: &str) -> Vec<HostBlock> {
    interpret(&parse(text))
        .into_iter()
        .filter_map(|outcome| match outcome {
            Outcome::Host(block) => Some(block),
            Outcome::Skipped { .. } => None,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::ssh_config::hosts_of as hosts;
    use crate::model::ssh_config::{interpret, parse, Outcome};
    use crate::model::ssh_words::split_args;

    fn skipped(text: &str) -> Vec<(String, String)> {
        interpret(&parse(text))
            .into_iter()
            .filter_map(|outcome| match outcome {
                Outcome::Skipped { block, reason } => Some((block, reason)),
                Outcome::Host(_) => None,
            })
            .collect()
    }

    #[test]
    fn concrete_block_maps_hostname_port_user_and_keeps_the_rest() {
        let text = "Host web\n  HostName 10.0.0.5\n  Port 2222\n  User deploy\n  \
                    ServerAliveInterval 30\n  IdentityFile ~/.ssh/id_ed25519\n  ProxyJump a,b\n";
        let block = &hosts(text)[0];
        assert_eq!(block.name, "web");
        assert_eq!(block.hostname, "10.0.0.5");
        assert_eq!(block.port, 2222);
        assert_eq!(block.username.as_deref(), Some("deploy"));
        assert_eq!(block.options, vec!["ServerAliveInterval 30"]);
        assert_eq!(block.identity_files[0].0, "~/.ssh/id_ed25519");
        assert_eq!(block.proxy_jump, vec!["a", "b"]);
    }

    #[test]
    fn the_exported_user_known_hosts_file_is_dropped_and_any_other_is_kept() {
        let text = "Host a\n  UserKnownHostsFile ~/.ssh/host-manager/known_hosts\n\
                    Host b\n  UserKnownHostsFile ~/.ssh/other_hosts\n";
        let blocks = hosts(text);
        assert_eq!(blocks[0].options, Vec::<String>::new());
        assert_eq!(
            blocks[1].options,
            vec!["UserKnownHostsFile ~/.ssh/other_hosts"]
        );
    }

    #[test]
    fn defaults_are_the_alias_port_22_and_no_user() {
        let block = &hosts("Host db.internal\n")[0];
        assert_eq!(block.hostname, "db.internal");
        assert_eq!(block.port, 22);
        assert_eq!(block.username, None);
    }

    #[test]
    fn keywords_are_case_insensitive_and_equals_separates() {
        let text = "HOST=web\nhostname = 10.1.1.1\nPORT=2200\nuser\t=  alice\n";
        let block = &hosts(text)[0];
        assert_eq!(
            (
                block.hostname.as_str(),
                block.port,
                block.username.as_deref()
            ),
            ("10.1.1.1", 2200, Some("alice"))
        );
    }

    #[test]
    fn quoted_values_keep_their_spaces_and_comments_are_dropped() {
        let text = "# top\nHost q # trailing comment\n  User \"john doe\"\n  \
                    # inside\n  ProxyCommand 'nc %h %p'\n";
        let block = &hosts(text)[0];
        assert_eq!(block.aliases, vec!["q"]);
        assert_eq!(block.username.as_deref(), Some("john doe"));
        assert_eq!(block.options, vec!["ProxyCommand 'nc %h %p'"]);
    }

    #[test]
    fn first_value_wins_and_repeats_are_reported() {
        let block = &hosts("Host a\n HostName 1.1.1.1\n HostName 2.2.2.2\n")[0];
        assert_eq!(block.hostname, "1.1.1.1");
        assert_eq!(block.warnings.len(), 1);
    }

    #[test]
    fn multi_alias_host_takes_the_first_alias_as_name() {
        let block = &hosts("Host app app.prod\n  HostName 10.0.0.9\n")[0];
        assert_eq!(block.name, "app");
        assert_eq!(block.aliases, vec!["app", "app.prod"]);
    }

    #[test]
    fn wildcard_negated_and_match_blocks_are_skipped() {
        let text = "Host *\n  User x\nHost *.corp\n  User y\nHost a !b\nHost c?\n\
                    Match host foo exec \"true\"\n  User z\nHost real\n";
        let skips = skipped(text);
        assert_eq!(skips.len(), 5, "{skips:?}");
        assert!(skips[4].0.starts_with("Match host foo"), "{skips:?}");
        assert_eq!(hosts(text).len(), 1);
    }

    #[test]
    fn directives_before_the_first_host_and_include_are_reported() {
        let skips = skipped("User root\nInclude ~/.ssh/config.d/*\nHost a\n");
        assert_eq!(skips.len(), 2, "{skips:?}");
        assert!(skips[0].1.contains("every host"));
        assert!(skips[1].1.contains("Include"));
    }

    #[test]
    fn bad_port_bad_hostname_and_open_quote_are_skipped_with_reasons() {
        assert!(skipped("Host a\n Port 0\n")[0].1.contains("Port"));
        assert!(skipped("Host a\n Port 65536\n")[0].1.contains("Port"));
        assert_eq!(hosts("Host a\n Port 65535\n")[0].port, 65535);
        assert!(skipped("Host a\n User \"open\n")[0].1.contains("quote"));
    }

    #[test]
    fn only_ascii_blanks_separate_as_ssh_reads_them() {
        // ssh reads `User\u{a0}root` as one unknown keyword, and `\u{2028}Host b` as a
        // directive of block a, never as a new block.
        let text = "Host a\n User\u{a0}root\n\u{2028}Host b\n\tPort\t2222\x0c\n";
        let blocks = hosts(text);
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        assert_eq!(blocks[0].username, None);
        assert_eq!(blocks[0].port, 2222);
        assert_eq!(
            blocks[0].options,
            vec!["User\u{a0}root", "\u{2028}Host b"],
            "kept verbatim for the ssh_options rule to judge"
        );
        assert_eq!(
            split_args("a\u{a0}b\u{2028}c d").unwrap(),
            vec!["a\u{a0}b\u{2028}c", "d"]
        );
    }

    #[test]
    fn proxyjump_none_is_no_chain() {
        assert!(hosts("Host a\n ProxyJump none\n")[0].proxy_jump.is_empty());
    }

    #[test]
    fn name_comment_right_above_host_names_the_host() {
        let block = &hosts("# host-manager name: Web 1\nHost web-1\n")[0];
        assert_eq!(block.name, "Web 1");
        let block = &hosts("# host-manager name: Web 1\n\nHost web-1\n")[0];
        assert_eq!(block.name, "web-1", "a blank line breaks the link");
    }

    #[test]
    fn identity_agent_and_identities_only_stay_without_an_exported_public_key_file() {
        let text = "Host a\n  IdentityFile ~/.ssh/id_ed25519.pub\n  IdentityAgent /tmp/a.sock\n  \
                    IdentitiesOnly yes\nHost b\n  IdentityFile ~/.ssh/host-manager/k1.pub\n  \
                    IdentitiesOnly no\n";
        let blocks = hosts(text);
        assert_eq!(
            blocks[0].options,
            vec!["IdentityAgent /tmp/a.sock", "IdentitiesOnly yes"]
        );
        assert_eq!(blocks[1].options, vec!["IdentitiesOnly no"]);
    }
}
