//! The `~/.ssh/config` export behind `GET /api/export/ssh-config`: stable aliases, the hosts
//! a selection's jump chains pass through, and the writer.
//!
//! Invariants: the writer never emits a line break from a value, so a host's fields can never
//! open a new block in the exported file; what it writes, `ssh_config::parse` reads back to
//! the same hosts.

use std::collections::{HashMap, HashSet};

use crate::model::host::Host;
use crate::model::inherit::DEFAULT_PORT;
use crate::model::ssh_config::{
    CERTIFICATE_SUFFIX, IDENTITY_DIR, KNOWN_HOSTS_FILE, NAME_COMMENT, PUBLIC_KEY_SUFFIX,
};
use crate::model::ssh_config_session::{self, WrittenRule};
use crate::model::ssh_words::quote_arg;
use crate::model::startup::Startup;

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
    /// Whether the key has a certificate in use (docs/api.md "Certificates"): a
    /// `CertificateFile` line follows `IdentityFile`, with the agent too: under
    /// `IdentitiesOnly yes`, `ssh` takes an agent's certificate only when a
    /// `CertificateFile` names it (a certificate never equals the plain key of the
    /// `IdentityFile`), and with one it pairs the certificate with the agent's key.
    pub certificate: bool,
    /// Aliases of the direct chain, in order.
    pub proxy_jump: Vec<String>,
    /// Startup command and environment, and the forward rules (docs/forwards.md).
    pub startup: Startup,
    pub rules: Vec<WrittenRule>,
    pub options: Vec<String>,
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
/// point at it; `certified` has the keys with a certificate in use (by id, with its
/// principals), written for the hosts whose user it covers. Hosts come resolved: each
/// flattened to its effective values (model::inherit) with the key it offers first, and
/// `rules` has each host's effective forward rules by id.
pub fn export(
    all: &[(Host, Option<String>)],
    members: &[Host],
    agent: Option<&ExportAgent>,
    certified: &HashMap<String, Vec<String>>,
    rules: &HashMap<String, Vec<WrittenRule>>,
) -> String {
    let mut taken = HashSet::new();
    let aliases: HashMap<&str, String> = all
        .iter()
        .map(|(host, _)| (host.id.as_str(), alias_for(&host.name, &mut taken)))
        .collect();
    let by_id: HashMap<&str, &Host> = all
        .iter()
        .map(|(host, _)| (host.id.as_str(), host))
        .collect();
    let mut included: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = members.iter().map(|host| host.id.as_str()).collect();
    while let Some(id) = stack.pop() {
        if !included.insert(id) {
            continue;
        }
        if let Some(host) = by_id.get(id) {
            stack.extend(host.jump_host_ids.iter().flatten().map(String::as_str));
        }
    }
    let hosts: Vec<ExportHost> = all
        .iter()
        .filter(|(host, _)| included.contains(host.id.as_str()))
        .map(|(host, key_id)| ExportHost {
            alias: aliases.get(host.id.as_str()).cloned().unwrap_or_default(),
            name: host.name.clone(),
            hostname: host.hostname.clone(),
            port: host.port.unwrap_or(DEFAULT_PORT),
            username: host.username.clone().unwrap_or_default(),
            key_id: key_id.clone(),
            identity_agent: agent
                .filter(|agent| key_id.as_ref().is_some_and(|id| agent.key_ids.contains(id)))
                .map(|agent| agent.socket.clone()),
            certificate: key_id
                .as_ref()
                .and_then(|id| certified.get(id))
                .is_some_and(|principals| {
                    principals.is_empty()
                        || host
                            .username
                            .as_ref()
                            .is_some_and(|user| principals.contains(user))
                }),
            proxy_jump: host
                .jump_host_ids
                .iter()
                .flatten()
                .filter_map(|id| aliases.get(id.as_str()).cloned())
                .collect(),
            startup: host.startup.clone(),
            rules: rules.get(&host.id).cloned().unwrap_or_default(),
            options: host.ssh_options.clone(),
        })
        .collect();
    render(&hosts)
}

/// The exported config text: a header, then one block per host in the given order.
pub fn render(hosts: &[ExportHost]) -> String {
    let mut out = String::from(
        "# Exported by host-manager. IdentityFile points where the desktop app writes the\n\
         # key that connect answers (~/.ssh/host-manager/<key_id>, mode 0600), its\n\
         # certificate, if any, beside it (<key_id>-cert.pub), and\n\
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
        out.push_str(&format!(
            "    User {}\n",
            quote_arg(&one_line(&host.username))
        ));
        match (&host.key_id, &host.identity_agent) {
            (Some(key_id), Some(socket)) => {
                let file = format!("{IDENTITY_DIR}{key_id}{PUBLIC_KEY_SUFFIX}");
                out.push_str(&format!("    IdentityFile {}\n", path(&file)));
                certificate_file(&mut out, host, key_id);
                out.push_str(&format!("    {}\n", identity_agent_line(socket)));
                out.push_str("    IdentitiesOnly yes\n");
            }
            (Some(key_id), None) => {
                let file = format!("{IDENTITY_DIR}{key_id}");
                out.push_str(&format!("    IdentityFile {}\n", path(&file)));
                certificate_file(&mut out, host, key_id);
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
        ssh_config_session::write(&mut out, &host.startup, &host.rules);
        for option in &host.options {
            out.push_str(&format!("    {}\n", one_line(option)));
        }
    }
    out
}

/// `CertificateFile ~/.ssh/host-manager/<key_id>-cert.pub` when the key has a certificate
/// in use.
fn certificate_file(out: &mut String, host: &ExportHost, key_id: &str) {
    if host.certificate {
        let file = format!("{IDENTITY_DIR}{key_id}{CERTIFICATE_SUFFIX}");
        out.push_str(&format!("    CertificateFile {}\n", path(&file)));
    }
}

/// A value on one line: control characters (a line break above all) become spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A file path as one ssh_config argument: `ssh` expands `%` tokens in `IdentityFile`,
/// The `IdentityAgent` line of an `?agent=true` export for the agent at `socket` (a socket's
/// path, or on Windows a pipe's name such as `\\.\pipe\openssh-ssh-agent`, whose every
/// backslash ssh reads back only from a quoted, escaped argument), as `GET /api/agent`
/// shows it too.
pub fn identity_agent_line(socket: &str) -> String {
    format!("IdentityAgent {}", path(socket))
}

/// `IdentityAgent` and `UserKnownHostsFile` (`%d` is the home directory, `%h` the host...),
/// so each `%` is written `%%`, which it reads back as one `%`; then made one line and quoted as `ssh_words::quote_arg` does.
fn path(text: &str) -> String {
    quote_arg(&one_line(&text.replace('%', "%%")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use crate::model::ssh_config::hosts_of as hosts;
    use crate::model::ssh_config::{parse, Section};
    use crate::model::ssh_config_export::{alias_for, render, ExportHost};
    use crate::model::startup::Startup;

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
                certificate: true,
                proxy_jump: vec!["bastion".into()],
                startup: Startup::default(),
                rules: Vec::new(),
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
                certificate: false,
                proxy_jump: vec![],
                startup: Startup::default(),
                rules: Vec::new(),
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
        assert!(
            text.contains("    IdentityFile ~/.ssh/host-manager/k1\n    CertificateFile ~/.ssh/host-manager/k1-cert.pub\n"),
            "{text}"
        );
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
            certificate: true,
            proxy_jump: vec![],
            startup: Startup::default(),
            rules: Vec::new(),
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
                "    IdentityFile ~/.ssh/host-manager/k1.pub\n    CertificateFile ~/.ssh/host-manager/k1-cert.pub\n    IdentityAgent \"/run/user/1000/host-manager/agent 1.sock\"\n    IdentitiesOnly yes\n"
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
    fn a_windows_pipe_name_is_written_quoted_with_each_backslash_doubled_and_reads_back_whole() {
        use crate::model::ssh_config_export::identity_agent_line;
        use crate::model::ssh_words::split_args;
        let pipe = "\\\\.\\pipe\\openssh-ssh-agent";
        let line = identity_agent_line(pipe);
        // `ssh -G` prints `identityagent \\.\pipe\openssh-ssh-agent` for this line; an
        // unquoted `\\.` would read back as `\.`.
        assert_eq!(
            line,
            "IdentityAgent \"\\\\\\\\.\\\\pipe\\\\openssh-ssh-agent\""
        );
        let words = split_args(line.strip_prefix("IdentityAgent ").unwrap()).unwrap();
        assert_eq!(words, vec![pipe]);
        let exported = vec![agent_key_host("k1", pipe, vec![])];
        let text = render(&exported);
        assert!(text.contains(&format!("    {line}\n")), "{text}");
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
}
