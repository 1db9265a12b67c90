//! known_hosts text in and out (docs/api.md, "Host keys (known_hosts)"): an import reads
//! each line, checks its key and hashed names before the transaction, and stores each of
//! its host tokens once; an export writes every entry as a line OpenSSH reads, optionally
//! hashing the plain names.
//!
//! Invariants: a line is stored whole or refused with its reason, never half; an import
//! writes one audit entry in its transaction, also for a dry run (which the caller rolls
//! back); the same token, key and marker are stored once (the store's rule).

use serde::Serialize;
use serde_json::json;

use crate::model::known_hosts::{self, HostToken, Parsed, HASH_MAGIC};
use crate::sshkey::{self, HostKey};
use crate::store::audit;
use crate::store::known_hosts::{KnownHost, NewKnownHost};
use crate::store::{self, StoreError};

/// What an import did (the body of its answer).
#[derive(Serialize, Default)]
pub struct ImportReport {
    pub added: u64,
    pub unchanged: u64,
    pub refused: Vec<RefusedLine>,
    pub dry_run: bool,
}

/// A line an import left out, and why.
#[derive(Serialize, Clone)]
pub struct RefusedLine {
    pub line: usize,
    pub reason: String,
}

/// One readable line with its key checked.
pub struct CheckedLine {
    line: known_hosts::Line,
    key: HostKey,
}

/// Parses the text and checks each line's key and hashed names; refused lines carry their
/// reason. Runs before the transaction.
pub fn read_lines(text: &str) -> Vec<Result<CheckedLine, RefusedLine>> {
    known_hosts::parse(text)
        .into_iter()
        .map(|parsed| {
            let line = match parsed {
                Parsed::Line(line) => line,
                Parsed::Refused { number, reason } => {
                    return Err(RefusedLine {
                        line: number,
                        reason,
                    })
                }
            };
            let refused = |reason: String| RefusedLine {
                line: line.number,
                reason,
            };
            let key = sshkey::host_key(&line.key_type, &line.key_base64)
                .map_err(|rule| refused(format!("the key {rule}")))?;
            let malformed_hash = line.hosts.iter().any(|host| match host {
                HostToken::Hashed { salt, hash } => !sshkey::hashed_name_is_well_formed(salt, hash),
                HostToken::Plain(_) => false,
            });
            if malformed_hash {
                return Err(refused(format!(
                    "a hashed name's salt and hash must be {} bytes of base64 each",
                    sshkey::HOST_HASH_BYTES
                )));
            }
            Ok(CheckedLine { line, key })
        })
        .collect()
}

/// The import steps inside the caller's transaction: each host token of each checked line
/// stored (or found stored), then the audit entry.
pub fn import(
    conn: &store::Conn,
    lines: &[Result<CheckedLine, RefusedLine>],
    dry_run: bool,
) -> Result<ImportReport, StoreError> {
    let mut report = ImportReport {
        dry_run,
        ..ImportReport::default()
    };
    for line in lines {
        match line {
            Ok(checked) => store_line(conn, checked, &mut report)?,
            Err(refused) => report.refused.push(refused.clone()),
        }
    }
    let detail = json!({"added": report.added, "unchanged": report.unchanged,
                        "refused": report.refused.len()});
    audit::append(conn, audit::HOST_KEYS_IMPORTED, "known_hosts", &detail)?;
    Ok(report)
}

/// Stores each host token of one checked line, counting it added or unchanged.
fn store_line(
    conn: &store::Conn,
    checked: &CheckedLine,
    report: &mut ImportReport,
) -> Result<(), StoreError> {
    for host in &checked.line.hosts {
        let token = host.text();
        let new = NewKnownHost {
            host: &token,
            hashed: matches!(host, HostToken::Hashed { .. }),
            wildcard: matches!(host, HostToken::Plain(plain) if known_hosts::is_wildcard(plain)),
            key_type: &checked.key.key_type,
            public_key: &checked.key.public_key,
            fingerprint: &checked.key.fingerprint,
            marker: checked.line.marker,
            comment: &checked.line.comment,
            source: "import",
        };
        match store::known_hosts::insert(conn, &crate::vault::new_id(), &new)?.1 {
            true => report.added += 1,
            false => report.unchanged += 1,
        }
    }
    Ok(())
}

/// Every entry as a known_hosts file OpenSSH reads; with `hashed`, plain names (not
/// wildcards) are written hashed under a fresh salt.
pub fn export(entries: &[KnownHost], hashed: bool) -> String {
    let mut text = String::from(
        "# Exported by host-manager: the host keys it trusts, as OpenSSH's known_hosts.\n\
         # The ssh config it exports points UserKnownHostsFile here \
         (~/.ssh/host-manager/known_hosts).\n",
    );
    for entry in entries {
        let token = match hashed && !entry.hashed && !entry.wildcard {
            true => {
                let (salt, hash) = sshkey::hash_name(&entry.host);
                format!("{HASH_MAGIC}{salt}|{hash}")
            }
            false => entry.host.clone(),
        };
        text.push_str(&known_hosts::render_line(
            entry.marker,
            &token,
            &entry.public_key,
            &entry.comment,
        ));
    }
    text
}
