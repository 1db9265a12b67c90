//! The OpenSSH host extensions: a host's ProxyJump chain (`jump_host_ids`) and
//! its verbatim extra directives (`ssh_options`), with their rules and the route a chain
//! expands to.
//!
//! Invariants: no I/O; a chain is judged against the other hosts' stored chains handed in
//! by the caller, so the stored graph never holds a cycle (every route is finite).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::model::ssh_words::{is_config_blank, split_keyword};
use crate::model::validate::Invalid;

/// This service's limit: at most 8 hops in one host's own chain.
pub const MAX_JUMP_HOPS: usize = 8;

/// This service's limit: a chain whose full route (each hop's own chain
/// included) would pass more than 32 hops is refused, so `proxy_jump` stays usable.
pub const MAX_ROUTE_HOPS: usize = 32;

/// This service's limits: at most 100 extra directives per host.
pub const MAX_SSH_OPTIONS: usize = 100;

/// This service's limits: each directive at most 1,024 characters.
pub const MAX_SSH_OPTION_CHARS: usize = 1024;

/// Keywords that would change the structure of an exported config (a new block or a
/// file read), or that a host's own fields already say: refused in `ssh_options`.
const RESERVED_KEYWORDS: [&str; 6] = ["host", "match", "include", "hostname", "port", "user"];

/// Directives that have fields of their own (docs/forwards.md), lower case, with the field
/// to use instead: refused in `ssh_options`.
pub const FIELD_KEYWORDS: [(&str, &str); 8] = [
    ("localforward", "a forward rule (/api/hosts/:id/forwards)"),
    ("remoteforward", "a forward rule (/api/hosts/:id/forwards)"),
    ("dynamicforward", "a forward rule (/api/hosts/:id/forwards)"),
    (
        "exitonforwardfailure",
        "the forward rules' autostart (the export writes it)",
    ),
    ("remotecommand", "remote_command"),
    ("requesttty", "request_tty"),
    ("setenv", "set_env"),
    ("sendenv", "send_env"),
];

/// The field to use for a directive that has one (`FIELD_KEYWORDS`), by its keyword in any
/// case.
pub fn field_for(keyword: &str) -> Option<&'static str> {
    let lower = keyword.to_ascii_lowercase();
    FIELD_KEYWORDS
        .iter()
        .find(|(known, _)| *known == lower)
        .map(|(_, field)| *field)
}

/// Why a chain cannot be stored: the `details` of `INVALID_JUMP_CHAIN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainProblem(pub String);

/// The verdict on a chain once the database has been asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainVerdict {
    Fine,
    /// This hop id names no stored host.
    UnknownHop(String),
    Invalid(ChainProblem),
}

impl ChainVerdict {
    /// Why the chain cannot be stored, naming the field (the `details` of the refusal:
    /// 404 `HOST_NOT_FOUND` or 400 `INVALID_JUMP_CHAIN`); `None` when it can.
    pub fn details(&self) -> Option<String> {
        match self {
            ChainVerdict::Fine => None,
            ChainVerdict::UnknownHop(id) => Some(format!("jump_host_ids: no host has the id {id}")),
            ChainVerdict::Invalid(problem) => Some(format!("jump_host_ids: {}", problem.0)),
        }
    }
}

/// `jump_host_ids`: an array of host id strings; `null` is the empty chain. At most
/// `MAX_JUMP_HOPS` ids; whether they exist and form no loop is judged later.
pub fn jump_host_ids(value: &Value) -> Result<Vec<String>, Invalid> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => {
            return Err(Invalid::new(
                "jump_host_ids",
                "must be an array of host ids or null",
            ))
        }
    };
    if items.len() > MAX_JUMP_HOPS {
        return Err(Invalid::new(
            "jump_host_ids",
            format!("must have at most {MAX_JUMP_HOPS} hops"),
        ));
    }
    items
        .iter()
        .map(|item| match item {
            Value::String(id) if !id.is_empty() => Ok(id.clone()),
            _ => Err(Invalid::new(
                "jump_host_ids",
                "each hop must be a non-empty host id string",
            )),
        })
        .collect()
}

/// `ssh_options`: an array of directive strings; `null` is none.
pub fn ssh_options(value: &Value) -> Result<Vec<String>, Invalid> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => {
            return Err(Invalid::new(
                "ssh_options",
                "must be an array of strings or null",
            ))
        }
    };
    if items.len() > MAX_SSH_OPTIONS {
        return Err(Invalid::new(
            "ssh_options",
            format!("must have at most {MAX_SSH_OPTIONS} directives"),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(text) => ssh_option(text)
                .map_err(|rule| Invalid::new(&format!("ssh_options[{index}]"), rule)),
            _ => Err(Invalid::new(
                &format!("ssh_options[{index}]"),
                "must be a string",
            )),
        })
        .collect()
}

/// One directive, trimmed: `Keyword value` or `Keyword=value` on one line, at most
/// `MAX_SSH_OPTION_CHARS` characters, and not a keyword that `RESERVED_KEYWORDS` lists. The
/// keyword is read as `ssh` reads it (`ssh_words::split_keyword`): a Unicode space is part
/// of it, so `ForwardAgent<NBSP>yes` is refused here rather than breaking the exported file.
pub fn ssh_option(text: &str) -> Result<String, String> {
    let text = text.trim_matches(is_config_blank);
    if text.chars().count() > MAX_SSH_OPTION_CHARS {
        return Err(format!("must be at most {MAX_SSH_OPTION_CHARS} characters"));
    }
    if text.chars().any(|c| c == '\n' || c == '\r' || c == '\0') {
        return Err("must be one line without NUL".into());
    }
    let (keyword, value) = split_keyword(text);
    if keyword.is_empty() || !keyword.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err("must start with an ssh_config keyword (letters and digits)".into());
    }
    let value = value.trim_matches(is_config_blank);
    if value.is_empty() {
        return Err("must have a value after the keyword".into());
    }
    if let Some(field) = field_for(keyword) {
        return Err(format!("{keyword} is not kept here: use {field}"));
    }
    let lower = keyword.to_ascii_lowercase();
    if RESERVED_KEYWORDS.contains(&lower.as_str()) {
        return Err(format!(
            "{keyword} is not allowed here (Host, Match and Include would change the exported \
             file's structure; HostName, Port and User are the host's own fields)"
        ));
    }
    Ok(text.to_owned())
}

/// Judges the chain `chain` for host `host_id` (`None` for a host not stored yet).
/// `chains` holds the stored chain of every host reachable from `chain` (as far as the
/// caller could follow it); a stored chain of `host_id` itself is ignored, since `chain`
/// replaces it.
pub fn check_chain(
    host_id: Option<&str>,
    chain: &[String],
    chains: &HashMap<String, Vec<String>>,
) -> Result<(), ChainProblem> {
    let mut seen = HashSet::new();
    for hop in chain {
        if Some(hop.as_str()) == host_id {
            return Err(ChainProblem("the chain contains the host itself".into()));
        }
        if !seen.insert(hop.as_str()) {
            return Err(ChainProblem(format!(
                "host {hop} appears twice in the chain"
            )));
        }
    }
    if let Some(host_id) = host_id {
        // A hop whose own route passes through this host would loop forever.
        let mut stack: Vec<&str> = chain.iter().map(String::as_str).collect();
        let mut visited = HashSet::new();
        while let Some(id) = stack.pop() {
            if !visited.insert(id) {
                continue;
            }
            for next in chains.get(id).map(Vec::as_slice).unwrap_or_default() {
                if next == host_id {
                    return Err(ChainProblem(format!(
                        "hop {id} is reached through this host (a cycle)"
                    )));
                }
                stack.push(next);
            }
        }
    }
    match route(chain, chains) {
        Some(_) => Ok(()),
        None => Err(ChainProblem(format!(
            "the full route (each hop's own chain included) would pass more than \
             {MAX_ROUTE_HOPS} hops"
        ))),
    }
}

/// The full route through `chain`: each hop preceded by its own route, in the order `ssh
/// -J` takes them. `None` beyond `MAX_ROUTE_HOPS` hops. `chains` must hold no cycle.
pub fn route(chain: &[String], chains: &HashMap<String, Vec<String>>) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand(chain, chains, &mut out, 0)?;
    Some(out)
}

fn expand(
    chain: &[String],
    chains: &HashMap<String, Vec<String>>,
    out: &mut Vec<String>,
    depth: usize,
) -> Option<()> {
    // A depth beyond the hop limit can only come from a cycle the caller let through.
    if depth > MAX_ROUTE_HOPS {
        return None;
    }
    for hop in chain {
        if let Some(inner) = chains.get(hop) {
            expand(inner, chains, out, depth + 1)?;
        }
        out.push(hop.clone());
        if out.len() > MAX_ROUTE_HOPS {
            return None;
        }
    }
    Some(())
}

/// One hop of `ssh -J`: `user@host:port`, an IPv6 literal in brackets.
pub fn jump_spec(username: &str, hostname: &str, port: u16) -> String {
    match hostname.contains(':') {
        true => format!("{username}@[{hostname}]:{port}"),
        false => format!("{username}@{hostname}:{port}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use crate::model::interop::{
        check_chain, jump_host_ids, jump_spec, route, ssh_option, ssh_options, MAX_JUMP_HOPS,
        MAX_ROUTE_HOPS, MAX_SSH_OPTIONS, MAX_SSH_OPTION_CHARS,
    };

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|id| id.to_string()).collect()
    }

    fn chains(pairs: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(id, hops)| (id.to_string(), ids(hops)))
            .collect()
    }

    #[test]
    fn an_option_whose_keyword_ends_at_a_unicode_space_is_refused_as_ssh_would_read_it() {
        assert_eq!(
            ssh_option(" ForwardAgent\tyes ").unwrap(),
            "ForwardAgent\tyes"
        );
        assert_eq!(ssh_option("ForwardAgent=yes").unwrap(), "ForwardAgent=yes");
        for text in [
            "ForwardAgent\u{a0}yes",
            "ForwardAgent\u{2028}yes",
            "\u{3000}Port 1",
        ] {
            assert!(ssh_option(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn null_chain_is_empty_and_eight_hops_are_accepted() {
        assert_eq!(jump_host_ids(&json!(null)).unwrap(), Vec::<String>::new());
        let eight: Vec<String> = (0..MAX_JUMP_HOPS).map(|n| format!("h{n}")).collect();
        assert_eq!(jump_host_ids(&json!(eight)).unwrap().len(), 8);
    }

    #[test]
    fn nine_hops_are_rejected() {
        let nine: Vec<String> = (0..=MAX_JUMP_HOPS).map(|n| format!("h{n}")).collect();
        assert_eq!(
            jump_host_ids(&json!(nine)).unwrap_err().field,
            "jump_host_ids"
        );
    }

    #[test]
    fn chain_items_must_be_non_empty_strings() {
        for bad in [json!([1]), json!([""]), json!("a"), json!([null])] {
            assert!(jump_host_ids(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn chain_with_the_host_itself_is_rejected() {
        let err = check_chain(Some("h"), &ids(&["a", "h"]), &HashMap::new()).unwrap_err();
        assert!(err.0.contains("itself"), "{err:?}");
    }

    #[test]
    fn chain_repeating_a_hop_is_rejected() {
        let err = check_chain(Some("h"), &ids(&["a", "a"]), &HashMap::new()).unwrap_err();
        assert!(err.0.contains("twice"), "{err:?}");
    }

    #[test]
    fn chain_through_a_hop_whose_chain_reaches_the_host_is_rejected() {
        let stored = chains(&[("a", &["b"]), ("b", &["h"])]);
        let err = check_chain(Some("h"), &ids(&["a"]), &stored).unwrap_err();
        assert!(err.0.contains("cycle"), "{err:?}");
    }

    #[test]
    fn chain_through_hops_with_their_own_chains_is_accepted() {
        let stored = chains(&[("a", &["b"]), ("b", &["c"]), ("h", &["a"])]);
        check_chain(Some("h"), &ids(&["a"]), &stored).unwrap();
        check_chain(None, &ids(&["a", "b"]), &stored).unwrap();
    }

    #[test]
    fn route_puts_each_hops_own_chain_before_it() {
        let stored = chains(&[("a", &["b"]), ("b", &["c"])]);
        assert_eq!(
            route(&ids(&["a", "d"]), &stored).unwrap(),
            ids(&["c", "b", "a", "d"])
        );
    }

    #[test]
    fn route_longer_than_the_limit_is_refused() {
        // Each of 8 hops carries a chain of 4 others: 8 * 5 = 40 hops.
        let mut stored = HashMap::new();
        let mut chain = Vec::new();
        for n in 0..8 {
            let hop = format!("h{n}");
            stored.insert(hop.clone(), (0..4).map(|m| format!("i{n}-{m}")).collect());
            chain.push(hop);
        }
        assert!(route(&chain, &stored).is_none());
        assert!(check_chain(Some("x"), &chain, &stored).is_err());
        assert!(route(&chain[..6], &stored).unwrap().len() <= MAX_ROUTE_HOPS);
    }

    #[test]
    fn ssh_option_accepts_space_and_equals_forms() {
        assert_eq!(
            ssh_option("  ServerAliveInterval 30 ").unwrap(),
            "ServerAliveInterval 30"
        );
        assert_eq!(ssh_option("Compression=yes").unwrap(), "Compression=yes");
        assert_eq!(ssh_option("ForwardAgent yes").unwrap(), "ForwardAgent yes");
    }

    #[test]
    fn ssh_option_refuses_directives_that_have_fields_and_names_the_field() {
        for (line, field) in [
            ("LocalForward 8080 localhost:80", "forward rule"),
            ("remoteforward 9000 localhost:3000", "forward rule"),
            ("DynamicForward=1080", "forward rule"),
            ("ExitOnForwardFailure yes", "autostart"),
            ("RemoteCommand tmux", "remote_command"),
            ("RequestTTY force", "request_tty"),
            ("SetEnv A=1", "set_env"),
            ("SendEnv LANG", "send_env"),
        ] {
            let refused = ssh_option(line).unwrap_err();
            assert!(refused.contains(field), "{line}: {refused}");
        }
    }

    #[test]
    fn ssh_option_rejects_newlines_nul_missing_values_and_structure_keywords() {
        for bad in [
            "ServerAliveInterval 30\nHost evil",
            "A\rB c",
            "A\0 b",
            "Compression",
            "Compression =",
            "Host other",
            "match all",
            "Include ~/.ssh/x",
            "HostName x",
            "Port 22",
            "User root",
            "-o x",
        ] {
            assert!(ssh_option(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ssh_option_length_edge() {
        let at_limit = format!("ProxyCommand {}", "x".repeat(MAX_SSH_OPTION_CHARS - 13));
        assert_eq!(at_limit.chars().count(), MAX_SSH_OPTION_CHARS);
        assert_eq!(ssh_option(&at_limit).unwrap(), at_limit);
        assert_eq!(
            ssh_option(&format!("{at_limit}x")).unwrap_err(),
            format!("must be at most {MAX_SSH_OPTION_CHARS} characters")
        );
    }

    #[test]
    fn ssh_options_count_edge_and_field_names() {
        let full: Vec<String> = (0..MAX_SSH_OPTIONS)
            .map(|n| format!("ServerAliveInterval {n}"))
            .collect();
        assert_eq!(ssh_options(&json!(full)).unwrap().len(), MAX_SSH_OPTIONS);
        let mut over = full.clone();
        over.push("Compression yes".into());
        assert_eq!(ssh_options(&json!(over)).unwrap_err().field, "ssh_options");
        assert_eq!(
            ssh_options(&json!(["Compression yes", 3]))
                .unwrap_err()
                .field,
            "ssh_options[1]"
        );
    }

    #[test]
    fn jump_spec_brackets_ipv6() {
        assert_eq!(jump_spec("root", "10.0.0.1", 22), "root@10.0.0.1:22");
        assert_eq!(
            jump_spec("ops", "2001:db8::1", 2222),
            "ops@[2001:db8::1]:2222"
        );
    }
}
