//! OpenSSH client configuration text (ssh_config(5)): the parser behind
//! `POST /api/import/ssh-config` and the writer behind `GET /api/export/ssh-config`.
//!
//! Invariants: pure functions over text, no I/O (an `Include` is reported, never followed);
//! the writer never emits a line break from a value, so a host's fields can never open a
//! new block in the exported file.

use std::collections::{HashMap, HashSet};

use crate::model::host::{AuthType, Host};
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
    /// Things the reader noticed and the answer should say (ignored repeats...).
    pub warnings: Vec<String>,
}

/// What became of each top-level piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Host(HostBlock),
    Skipped { block: String, reason: String },
}

/// What an `?agent=true` export needs: the SSH agent's socket, and the ids of the keys the
/// agent serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportAgent {
    pub socket: String,
    pub key_ids: HashSet<String>,
}

/// A host as the export writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportHost {
    pub alias: String,
    pub name: String,
    pub hostname: String,
    pub port: u16,
    pub username: String,
    pub key_id: Option<String>,
    /// The SSH agent's socket, when the key is served by it and the export asked for the
    /// agent: `IdentityFile` then names the public key file.
    pub identity_agent: Option<String>,
    /// Aliases of the direct chain, in order.
    pub proxy_jump: Vec<String>,
    pub options: Vec<String>,
}

/// True for the characters OpenSSH's config reader takes as blanks: C's `isspace` in the C
/// locale (space, tab, CR, LF, vertical tab, form feed). Unicode spaces (no-break space,
/// U+2028, ...) are not blanks to `ssh`: they are part of a word, so they are here too.
pub fn is_config_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\x0b' | '\x0c')
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
        if let Some(comment) = line.strip_prefix('#') {
            comment_name = ("#".to_owned() + comment)
                .strip_prefix(NAME_COMMENT.trim_end())
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty());
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

/// Reads every section into a host to import or a reason to skip it.
pub fn interpret(sections: &[Section]) -> Vec<Outcome> {
    sections.iter().map(outcome).collect()
}

/// True for a `Host` pattern that names no one host: `*`, `?` or a `!` negation.
pub fn is_wildcard(pattern: &str) -> bool {
    pattern.contains('*') || pattern.contains('?') || pattern.starts_with('!')
}

/// A stable alias for `name`: lowercase ASCII letters, digits, `.`, `_` and `-`, other
/// runs turned into one `-`; `host` when nothing is left; `-2`, `-3`, ... when taken.
pub fn alias_for(name: &str, taken: &mut HashSet<String>) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        match c {
            'a'..='z' | '0'..='9' | '.' | '_' | '-' => slug.push(c),
            _ if !slug.ends_with('-') => slug.push('-'),
            _ => {}
        }
    }
    let slug = slug.trim_matches(|c| c == '-' || c == '.').to_owned();
    let base = match slug.is_empty() {
        true => "host".to_owned(),
        false => slug,
    };
    let mut alias = base.clone();
    let mut n = 2;
    while taken.contains(&alias) {
        alias = format!("{base}-{n}");
        n += 1;
    }
    taken.insert(alias.clone());
    alias
}

/// The export of `members` plus every host their chains pass through. Aliases are given
/// over the whole catalogue, oldest host first, so a host keeps its alias in every export.
/// With `agent` (its socket and the ids of the keys it serves), hosts whose key it serves
/// point at it.
pub fn export(all: &[Host], members: &[Host], agent: Option<&ExportAgent>) -> String {
    let mut taken = HashSet::new();
    let aliases: HashMap<&str, String> = all
        .iter()
        .map(|host| (host.id.as_str(), alias_for(&host.name, &mut taken)))
        .collect();
    let by_id: HashMap<&str, &Host> = all.iter().map(|host| (host.id.as_str(), host)).collect();
    let mut included: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = members.iter().map(|host| host.id.as_str()).collect();
    while let Some(id) = stack.pop() {
        if !included.insert(id) {
            continue;
        }
        if let Some(host) = by_id.get(id) {
            stack.extend(host.jump_host_ids.iter().map(String::as_str));
        }
    }
    let hosts: Vec<ExportHost> = all
        .iter()
        .filter(|host| included.contains(host.id.as_str()))
        .map(|host| ExportHost {
            alias: aliases.get(host.id.as_str()).cloned().unwrap_or_default(),
            name: host.name.clone(),
            hostname: host.hostname.clone(),
            port: host.port,
            username: host.username.clone(),
            key_id: match host.auth_type {
                AuthType::Key => host.key_id.clone(),
                AuthType::Password | AuthType::Agent => None,
            },
            identity_agent: agent
                .filter(|agent| {
                    host.auth_type == AuthType::Key
                        && host
                            .key_id
                            .as_ref()
                            .is_some_and(|id| agent.key_ids.contains(id))
                })
                .map(|agent| agent.socket.clone()),
            proxy_jump: host
                .jump_host_ids
                .iter()
                .filter_map(|id| aliases.get(id.as_str()).cloned())
                .collect(),
            options: host.ssh_options.clone(),
        })
        .collect();
    render(&hosts)
}

/// The exported config text: a header, then one block per host in the given order.
pub fn render(hosts: &[ExportHost]) -> String {
    let mut out = String::from(
        "# Exported by host-manager. IdentityFile points where the desktop app writes the\n\
         # key that connect answers (~/.ssh/host-manager/<key_id>, mode 0600), and\n\
         # UserKnownHostsFile where it writes the known-hosts export.\n",
    );
    for host in hosts {
        out.push('\n');
        out.push_str(NAME_COMMENT);
        out.push_str(&one_line(&host.name));
        out.push('\n');
        out.push_str(&format!("Host {}\n", host.alias));
        out.push_str(&format!("    HostName {}\n", host.hostname));
        out.push_str(&format!("    Port {}\n", host.port));
        out.push_str(&format!("    User {}\n", quote(&host.username)));
        match (&host.key_id, &host.identity_agent) {
            (Some(key_id), Some(socket)) => {
                let file = format!("{IDENTITY_DIR}{key_id}{PUBLIC_KEY_SUFFIX}");
                out.push_str(&format!("    IdentityFile {}\n", path(&file)));
                out.push_str(&format!("    IdentityAgent {}\n", path(socket)));
                out.push_str("    IdentitiesOnly yes\n");
            }
            (Some(key_id), None) => {
                let file = format!("{IDENTITY_DIR}{key_id}");
                out.push_str(&format!("    IdentityFile {}\n", path(&file)));
            }
            (None, _) => {}
        }
        out.push_str(&format!(
            "    UserKnownHostsFile {}\n",
            path(KNOWN_HOSTS_FILE)
        ));
        if !host.proxy_jump.is_empty() {
            out.push_str(&format!("    ProxyJump {}\n", host.proxy_jump.join(",")));
        }
        for option in &host.options {
            out.push_str(&format!("    {}\n", one_line(option)));
        }
    }
    out
}

fn flush(sections: &mut Vec<Section>, current: &mut Option<Section>) {
    if let Some(section) = current.take() {
        sections.push(section);
    }
}

/// The keyword and the rest: the keyword ends at a blank or `=`; one `=` may separate
/// it from the arguments, with blanks on either side (ssh_config(5)).
pub fn split_keyword(line: &str) -> (&str, &str) {
    let end = line
        .find(|c: char| is_config_blank(c) || c == '=')
        .unwrap_or(line.len());
    let (keyword, rest) = line.split_at(end);
    let rest = rest.trim_start_matches(is_config_blank);
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    (keyword, rest)
}

/// Arguments as OpenSSH's `argv_split` reads them: whitespace-separated, `"` or `'`
/// quotes group, a backslash escapes a quote, a backslash or (unquoted) a space, and an
/// unquoted `#` at the start of an argument ends the line.
fn split_args(text: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    loop {
        while index < chars.len() && is_config_blank(chars[index]) {
            index += 1;
        }
        if index >= chars.len() || chars[index] == '#' {
            return Ok(args);
        }
        let mut arg = String::new();
        let mut quote: Option<char> = None;
        while index < chars.len() {
            let c = chars[index];
            let next = chars.get(index + 1).copied();
            match (c, quote) {
                ('\\', _)
                    if matches!(next, Some('\'' | '"' | '\\'))
                        || (quote.is_none() && next == Some(' ')) =>
                {
                    arg.extend(next);
                    index += 1;
                }
                (c, None) if is_config_blank(c) => break,
                ('"' | '\'', None) => quote = Some(c),
                (c, Some(open)) if c == open => quote = None,
                (c, _) => arg.push(c),
            }
            index += 1;
        }
        if quote.is_some() {
            return Err("a quote is not closed".into());
        }
        args.push(arg);
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
        warnings: Vec::new(),
    };
    let mut seen = HashSet::new();
    for directive in directives {
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
            _ => block.options.push(directive.raw.clone()),
        }
    }
    drop_exported_agent_lines(&mut block);
    Outcome::Host(block)
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

/// A value on one line: control characters (a line break above all) become spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A file path as one ssh_config argument: `ssh` expands `%` tokens in `IdentityFile`,
/// `IdentityAgent` and `UserKnownHostsFile` (`%d` is the home directory, `%h` the host...),
/// so each `%` is written `%%`, which it reads back as one `%`; then quoted as `quote` does.
fn path(text: &str) -> String {
    quote(&text.replace('%', "%%"))
}

/// A value as one ssh_config argument: quoted (with `"` and `\` escaped) when it holds
/// whitespace, a quote, a backslash or a `#`.
fn quote(text: &str) -> String {
    let text = one_line(text);
    let plain = !text.is_empty()
        && !text
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | '#'));
    if plain {
        return text;
    }
    let mut out = String::from("\"");
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use crate::model::ssh_config::{
        alias_for, interpret, parse, quote, render, split_args, ExportHost, HostBlock, Outcome,
        Section,
    };

    fn hosts(text: &str) -> Vec<HostBlock> {
        interpret(&parse(text))
            .into_iter()
            .filter_map(|outcome| match outcome {
                Outcome::Host(block) => Some(block),
                Outcome::Skipped { .. } => None,
            })
            .collect()
    }

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
                    # inside\n  RemoteCommand 'echo hi'\n";
        let block = &hosts(text)[0];
        assert_eq!(block.aliases, vec!["q"]);
        assert_eq!(block.username.as_deref(), Some("john doe"));
        assert_eq!(block.options, vec!["RemoteCommand 'echo hi'"]);
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
    fn args_split_like_openssh() {
        assert_eq!(
            split_args(r#"a "b c" 'd e' f\ g"#).unwrap(),
            vec!["a", "b c", "d e", "f g"]
        );
        assert_eq!(split_args(r#""say \"hi\"""#).unwrap(), vec![r#"say "hi""#]);
        assert_eq!(split_args("a #rest").unwrap(), vec!["a"]);
        assert!(split_args("\"open").is_err());
    }

    #[test]
    fn aliases_are_slugs_made_unique_in_order() {
        let mut taken = HashSet::new();
        assert_eq!(alias_for("Web 1", &mut taken), "web-1");
        assert_eq!(alias_for("web 1", &mut taken), "web-1-2");
        assert_eq!(alias_for("Web/1", &mut taken), "web-1-3");
        assert_eq!(alias_for("***", &mut taken), "host");
        assert_eq!(alias_for("Ünïcode", &mut taken), "n-code");
    }

    #[test]
    fn quote_wraps_values_with_spaces_and_escapes_quotes() {
        assert_eq!(quote("root"), "root");
        assert_eq!(quote("john doe"), "\"john doe\"");
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
        assert_eq!(split_args(&quote("a \"b\\")).unwrap(), vec!["a \"b\\"]);
    }

    #[test]
    fn rendered_config_parses_back_to_the_same_hosts() {
        let exported = vec![
            ExportHost {
                alias: "web-1".into(),
                name: "Web 1".into(),
                hostname: "2001:db8::1".into(),
                port: 2222,
                username: "john doe".into(),
                key_id: Some("k1".into()),
                identity_agent: None,
                proxy_jump: vec!["bastion".into()],
                options: vec!["ServerAliveInterval 30".into()],
            },
            ExportHost {
                alias: "bastion".into(),
                name: "bastion\nHost evil".into(),
                hostname: "b.example.com".into(),
                port: 22,
                username: "ops".into(),
                key_id: None,
                identity_agent: None,
                proxy_jump: vec![],
                options: vec![],
            },
        ];
        let text = render(&exported);
        let blocks = hosts(&text);
        assert_eq!(blocks.len(), 2, "{text}");
        assert_eq!(blocks[0].name, "Web 1");
        assert_eq!(blocks[0].hostname, "2001:db8::1");
        assert_eq!(blocks[0].port, 2222);
        assert_eq!(blocks[0].username.as_deref(), Some("john doe"));
        assert_eq!(blocks[0].identity_files[0].0, "~/.ssh/host-manager/k1");
        assert_eq!(blocks[0].proxy_jump, vec!["bastion"]);
        assert_eq!(blocks[0].options, vec!["ServerAliveInterval 30"]);
        assert_eq!(blocks[1].name, "bastion Host evil");
        assert!(!parse(&text)
            .iter()
            .any(|s| matches!(s, Section::Host { patterns, .. } if patterns[0] == "evil")));
    }

    /// Host `db` (db.example.com:22, user ops) with `key_id` served by the agent at `agent`.
    fn agent_key_host(key_id: &str, agent: &str, options: Vec<String>) -> ExportHost {
        ExportHost {
            alias: "db".into(),
            name: "db".into(),
            hostname: "db.example.com".into(),
            port: 22,
            username: "ops".into(),
            key_id: Some(key_id.into()),
            identity_agent: Some(agent.into()),
            proxy_jump: vec![],
            options,
        }
    }

    #[test]
    fn agent_export_names_the_public_key_file_the_agent_and_identities_only() {
        let exported = vec![agent_key_host(
            "k1",
            "/run/user/1000/host-manager/agent 1.sock",
            vec!["ServerAliveInterval 30".into()],
        )];
        let text = render(&exported);
        assert!(
            text.contains(
                "    IdentityFile ~/.ssh/host-manager/k1.pub\n    IdentityAgent \"/run/user/1000/host-manager/agent 1.sock\"\n    IdentitiesOnly yes\n"
            ),
            "{text}"
        );
        let blocks = hosts(&text);
        assert_eq!(blocks[0].identity_files[0].0, "~/.ssh/host-manager/k1.pub");
        assert_eq!(
            blocks[0].options,
            vec!["ServerAliveInterval 30"],
            "the export's own lines go"
        );
    }

    #[test]
    fn every_exported_path_writes_a_percent_as_two() {
        let exported = vec![agent_key_host("k%d", "/data/100%d/agent.sock", vec![])];
        let text = render(&exported);
        assert!(
            text.contains("    IdentityFile ~/.ssh/host-manager/k%%d.pub\n")
                && text.contains("    IdentityAgent /data/100%%d/agent.sock\n"),
            "{text}"
        );
        assert!(!text.replace("%%", "").contains('%'), "{text}");
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
