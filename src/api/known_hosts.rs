//! `/api/known-hosts` endpoints, `POST /api/import/known-hosts` and
//! `GET /api/export/known-hosts`: the host-key trust store shared with OpenSSH (docs/api.md:
//! "Host keys (known_hosts)"), and the check `connect` makes before it hands out a secret.
//!
//! Invariants: every verdict comes from `model::known_hosts::judge` over the entries that
//! match the host's lookup name exactly as OpenSSH matches them (exact name, glob, or
//! HMAC-SHA1 of a hashed name); a verdict and what it records (`last_seen`, a blocking
//! alert) commit together; every accept, replace, delete and import writes its audit entry
//! in the same transaction; a changed key is never replaced without `replace: true`, and a
//! revoked key is never accepted.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::host::Host;
use crate::model::host_query::Paging;
use crate::model::known_hosts::{
    self, HostToken, KnownKey, Marker, Parsed, Presented, Status, HASH_MAGIC,
};
use crate::model::validate;
use crate::sshkey::{self, HostKey};
use crate::state::AppState;
use crate::store::audit;
use crate::store::known_hosts::{KnownHost, NewKnownHost};
use crate::store::{self, Ending};

/// `GET /api/known-hosts[?hostname=&port=|host_id=][&page=&per_page=]`: `{items, total,
/// page, per_page}`, oldest first, paged as `GET /api/hosts` is (`Paging`). Only the page's
/// entries get their `host_ids` (one HMAC per hashed entry and catalogue host).
pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let filter = list_filter(req)?;
    let paging = Paging::parse(|name| req.query(name))
        .map_err(|err| ApiError::parameter(&err.field, err.rule))?;
    // A page past any possible list is empty (its total still counted).
    let offset = paging.offset().unwrap_or(u64::MAX);
    let found = state.db.read(|conn| {
        let name = match &filter {
            Filter::All => None,
            Filter::Name(name) => Some(name.clone()),
            Filter::Host(id) => {
                let host = store::hosts::by_id(conn, id)?;
                Some(known_hosts::lookup_name(&host.hostname, host.port))
            }
        };
        let (entries, total) = match &name {
            None => store::known_hosts::page(conn, offset, paging.per_page)?,
            Some(name) => {
                let matching: Vec<KnownHost> = store::known_hosts::candidates(conn, name)?
                    .into_iter()
                    .filter(|entry| entry_matches(entry, name))
                    .collect();
                let total = matching.len() as u64;
                let skip = usize::try_from(offset).unwrap_or(usize::MAX);
                let take = usize::try_from(paging.per_page).unwrap_or(usize::MAX);
                (matching.into_iter().skip(skip).take(take).collect(), total)
            }
        };
        let catalogue = store::known_hosts::catalogue_names(conn)?;
        Ok::<_, ApiError>((entries, total, catalogue))
    })?;
    let (entries, total, catalogue) = found;
    Reply::json(
        200,
        &KnownHostList {
            items: views(&entries, &catalogue),
            total,
            page: paging.page,
            per_page: paging.per_page,
        },
    )
}

pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let (entry, catalogue) = state.db.read(|conn| {
        let entry = store::known_hosts::by_id(conn, id)?;
        Ok::<_, ApiError>((entry, store::known_hosts::catalogue_names(conn)?))
    })?;
    Reply::json(200, &view(&entry, &names(&catalogue)))
}

/// Deleting an entry is recorded in the audit log: trust taken away is as worth knowing
/// as trust given.
pub fn delete(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    state.db.write(|tx| {
        let entry = store::known_hosts::by_id(tx, id)?;
        store::known_hosts::delete(tx, id)?;
        let detail = json!({"id": id, "key_type": entry.key_type,
                            "fingerprint": entry.fingerprint, "marker": entry.marker.as_str()});
        audit::append(tx, audit::HOST_KEY_DELETED, &entry.host, &detail)?;
        Ok::<_, ApiError>(())
    })?;
    Ok(Reply::no_content())
}

/// `POST /api/known-hosts/verify {hostname, port?, public_key}`.
pub fn verify(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let target = Target::from_json(&body)?;
    let (key, certificate) = sshkey::presented_key(&target.public_key, &target.hostname)
        .map_err(|rule| ApiError::validation("public_key", rule))?;
    let ca_fingerprint = certificate.as_ref().map(|ca| ca.ca_fingerprint.clone());
    let presented = Presented {
        key_type: key.key_type.clone(),
        fingerprint: key.fingerprint.clone(),
        certificate,
    };
    let (status, matching) = state.db.write(|tx| {
        let matching = matching_entries(tx, &target.name)?;
        let status = known_hosts::judge(&presented, &known_keys(&matching));
        record_verdict(tx, &target.name, status, &presented, &matching)?;
        Ok::<_, ApiError>((status, matching))
    })?;
    let answer = VerifyView {
        status: status.as_str(),
        hostname: &target.hostname,
        port: target.port,
        key_type: &key.key_type,
        fingerprint: &key.fingerprint,
        ca_fingerprint: ca_fingerprint.as_deref(),
        known: matching.iter().map(KnownRef::of).collect(),
        blocks_connect: status.blocks_connect(),
    };
    Reply::json(200, &answer)
}

/// `POST /api/known-hosts/accept {hostname, port?, public_key, replace?}`: 201 with the new
/// entry, 200 when the key was already trusted; 409 `HOST_KEY_CHANGED` for a changed key
/// without `replace: true`, 409 `HOST_KEY_REVOKED` for a revoked one.
pub fn accept(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let target = Target::from_json(&body)?;
    let replace = match body.get("replace") {
        None | Some(Value::Null) => false,
        Some(value) => validate::boolean("replace", value)?,
    };
    let (key, certificate) = sshkey::presented_key(&target.public_key, &target.hostname)
        .map_err(|rule| ApiError::validation("public_key", rule))?;
    if certificate.is_some() {
        return Err(ApiError::validation(
            "public_key",
            "is a certificate: trust its CA instead (import an @cert-authority line)",
        ));
    }
    let (status, outcome) = state.db.write(|tx| accept_in(tx, &target, &key, replace))?;
    let catalogue = state.db.read(store::known_hosts::catalogue_names)?;
    let created = !matches!(status, Status::Trusted);
    let answer = AcceptView {
        status: status.as_str(),
        entry: view(&outcome.entry, &names(&catalogue)),
        replaced: outcome.replaced.iter().map(KnownRef::of).collect(),
    };
    Reply::json(if created { 201 } else { 200 }, &answer)
}

/// `POST /api/import/known-hosts {text, dry_run?}`.
pub fn import(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let text = match body.get("text") {
        Some(Value::String(text)) => text,
        _ => {
            return Err(ApiError::validation(
                "text",
                "is required: the known_hosts text",
            ))
        }
    };
    let dry_run = match body.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(value) => validate::boolean("dry_run", value)?,
    };
    let lines = read_lines(text);
    let answer = state.db.write_ending(Ending::dry_run_if(dry_run), |tx| {
        import_in(tx, &lines, dry_run)
    })?;
    Reply::json(200, &answer)
}

/// `GET /api/export/known-hosts[?hashed=true]`: a file OpenSSH reads, `text/plain`.
pub fn export(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let hashed = match req.query("hashed") {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::parameter("hashed", "must be true or false")),
    };
    let entries = state.db.read(store::known_hosts::all)?;
    let mut text = String::from(
        "# Exported by host-manager: the host keys it trusts, as OpenSSH's known_hosts.\n\
         # The ssh config it exports points UserKnownHostsFile here \
         (~/.ssh/host-manager/known_hosts).\n",
    );
    for entry in &entries {
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
    Ok(Reply::text(text))
}

/// docs/api.md "Host keys (known_hosts)": `connect` refuses while the host, or any hop of its
/// route (hops first, in `ssh -J` order), has a `changed` or `revoked` verdict pending.
pub fn check_route(conn: &store::Conn, host: &Host, route: &[Host]) -> Result<(), ApiError> {
    for (hop, is_hop) in route.iter().map(|hop| (hop, true)).chain([(host, false)]) {
        let name = known_hosts::lookup_name(&hop.hostname, hop.port);
        let Some(alert) = store::known_hosts::alert(conn, &name)? else {
            continue;
        };
        let which = match is_hop {
            true => format!("jump host \"{}\" ({name})", hop.name),
            false => format!("this host ({name})"),
        };
        return Err(ApiError::HostKeyChanged(format!(
            "the host key of {which} was reported {} by verify ({} {}) at {}; no secret is \
             handed out until the app accepts or replaces it (POST /api/known-hosts/accept)",
            alert.status.as_str(),
            alert.key_type,
            alert.fingerprint,
            alert.at
        )));
    }
    Ok(())
}

/// What verify and accept are asked about.
struct Target {
    hostname: String,
    port: u16,
    /// `lookup_name(hostname, port)`.
    name: String,
    public_key: String,
}

/// A list filter.
enum Filter {
    All,
    Name(String),
    Host(String),
}

/// The entry an accept stored (or found) and the entries it replaced.
struct Accepted {
    entry: KnownHost,
    replaced: Vec<KnownHost>,
}

/// The body of an import answer.
#[derive(Serialize, Default)]
struct ImportAnswer {
    added: u64,
    unchanged: u64,
    refused: Vec<RefusedLine>,
    dry_run: bool,
}

#[derive(Serialize)]
struct RefusedLine {
    line: usize,
    reason: String,
}

/// One readable line with its key checked.
struct CheckedLine {
    line: known_hosts::Line,
    key: HostKey,
}

#[derive(Serialize)]
struct KnownHostList<'a> {
    items: Vec<KnownHostView<'a>>,
    total: u64,
    page: u64,
    per_page: u64,
}

/// The answer of verify: the verdict and the fingerprints involved.
#[derive(Serialize)]
struct VerifyView<'a> {
    status: &'static str,
    hostname: &'a str,
    port: u16,
    key_type: &'a str,
    fingerprint: &'a str,
    /// The CA of a presented certificate.
    #[serde(skip_serializing_if = "Option::is_none")]
    ca_fingerprint: Option<&'a str>,
    /// The stored entries that match the host.
    known: Vec<KnownRef<'a>>,
    blocks_connect: bool,
}

/// The answer of accept: the verdict before it, the entry, and what it replaced.
#[derive(Serialize)]
struct AcceptView<'a> {
    status: &'static str,
    entry: KnownHostView<'a>,
    replaced: Vec<KnownRef<'a>>,
}

/// A matching entry in a verify or accept answer.
#[derive(Serialize)]
struct KnownRef<'a> {
    id: &'a str,
    host: &'a str,
    key_type: &'a str,
    fingerprint: &'a str,
    marker: &'static str,
}

impl<'a> KnownRef<'a> {
    fn of(entry: &'a KnownHost) -> KnownRef<'a> {
        KnownRef {
            id: &entry.id,
            host: &entry.host,
            key_type: &entry.key_type,
            fingerprint: &entry.fingerprint,
            marker: entry.marker.as_str(),
        }
    }
}

#[derive(Serialize)]
struct KnownHostView<'a> {
    id: &'a str,
    host: &'a str,
    /// `null` for a hashed name (only its hash is known).
    hostname: Option<String>,
    port: Option<u16>,
    hashed: bool,
    key_type: &'a str,
    public_key: &'a str,
    fingerprint: &'a str,
    marker: &'static str,
    comment: &'a str,
    source: &'a str,
    first_seen: &'a str,
    last_seen: &'a str,
    /// Catalogue hosts whose hostname and port this entry matches.
    host_ids: Vec<String>,
}

impl Target {
    fn from_json(body: &Map<String, Value>) -> Result<Target, ApiError> {
        let hostname = known_hosts::hostname(body.get("hostname"))?;
        let port = known_hosts::port(body.get("port"))?;
        let public_key = known_hosts::public_key(body.get("public_key"))?;
        Ok(Target {
            name: known_hosts::lookup_name(&hostname, port),
            hostname,
            port,
            public_key,
        })
    }
}

/// The stored entries whose host token matches lookup name `name`.
fn matching_entries(conn: &store::Conn, name: &str) -> Result<Vec<KnownHost>, ApiError> {
    Ok(store::known_hosts::candidates(conn, name)?
        .into_iter()
        .filter(|entry| entry_matches(entry, name))
        .collect())
}

/// How `entry` is matched against names (sshkey::HostMatcher): decoded once for many names.
fn matcher(entry: &KnownHost) -> sshkey::HostMatcher<'_> {
    sshkey::HostMatcher::of(&entry.host, entry.hashed, entry.wildcard)
}

/// Whether `entry` applies to lookup name `name`, as OpenSSH decides it.
fn entry_matches(entry: &KnownHost, name: &str) -> bool {
    matcher(entry).matches(name)
}

fn known_keys(entries: &[KnownHost]) -> Vec<KnownKey> {
    entries
        .iter()
        .map(|entry| KnownKey {
            id: entry.id.clone(),
            marker: entry.marker,
            key_type: entry.key_type.clone(),
            fingerprint: entry.fingerprint.clone(),
        })
        .collect()
}

/// What a verdict leaves behind: `last_seen` on the entries that vouched for the key, or a
/// blocking alert for `changed` and `revoked`. Other verdicts record nothing: an alert
/// stays until an accept or replace clears it, even if a later verify says `trusted`.
fn record_verdict(
    conn: &store::Conn,
    name: &str,
    status: Status,
    presented: &Presented,
    matching: &[KnownHost],
) -> Result<(), ApiError> {
    let vouching = |entry: &&KnownHost| match status {
        Status::Trusted => {
            entry.marker == Marker::None && entry.fingerprint == presented.fingerprint
        }
        Status::CaTrusted => {
            entry.marker == Marker::CertAuthority
                && presented
                    .certificate
                    .as_ref()
                    .is_some_and(|ca| ca.ca_fingerprint == entry.fingerprint)
        }
        _ => false,
    };
    for entry in matching.iter().filter(vouching) {
        store::known_hosts::touch(conn, &entry.id)?;
    }
    if status.blocks_connect() {
        store::known_hosts::record_alert(
            conn,
            name,
            status,
            &presented.key_type,
            &presented.fingerprint,
        )?;
    }
    Ok(())
}

/// The accept steps inside the caller's transaction: judge, refuse or store, clear the
/// host's alert, and write the audit entry.
fn accept_in(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    replace: bool,
) -> Result<(Status, Accepted), ApiError> {
    let matching = matching_entries(conn, &target.name)?;
    let presented = Presented {
        key_type: key.key_type.clone(),
        fingerprint: key.fingerprint.clone(),
        certificate: None,
    };
    let status = known_hosts::judge(&presented, &known_keys(&matching));
    refuse(status, replace, target, key, &matching)?;
    store::known_hosts::clear_alert(conn, &target.name)?;
    let accepted = match status {
        Status::Trusted => confirm(conn, target, key, &matching)?,
        _ => record(conn, target, key, status, &matching)?,
    };
    Ok((status, accepted))
}

/// The refusals of accept: a revoked key always, a changed one without `replace`.
fn refuse(
    status: Status,
    replace: bool,
    target: &Target,
    key: &HostKey,
    matching: &[KnownHost],
) -> Result<(), ApiError> {
    match status {
        Status::Revoked => Err(ApiError::HostKeyRevoked(format!(
            "{} {} is marked @revoked for {}; it cannot be accepted",
            key.key_type, key.fingerprint, target.name
        ))),
        Status::Changed if !replace => {
            let known: Vec<&str> = stale(matching, key)
                .map(|entry| entry.fingerprint.as_str())
                .collect();
            Err(ApiError::HostKeyChanged(format!(
                "{} already has a different {} key ({}); the presented one is {}. Send \
                 replace: true to replace it",
                target.name,
                key.key_type,
                known.join(", "),
                key.fingerprint
            )))
        }
        _ => Ok(()),
    }
}

/// Accept of a key already trusted: `last_seen` of the entry that vouches for it, and an
/// audit entry saying so.
fn confirm(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    matching: &[KnownHost],
) -> Result<Accepted, ApiError> {
    let vouching = matching
        .iter()
        .find(|entry| entry.marker == Marker::None && entry.fingerprint == key.fingerprint)
        .ok_or_else(|| ApiError::internal("a trusted verdict without its entry"))?;
    store::known_hosts::touch(conn, &vouching.id)?;
    let detail = json!({"id": vouching.id, "key_type": key.key_type,
                        "fingerprint": key.fingerprint, "already_trusted": true});
    audit::append(conn, audit::HOST_KEY_ACCEPTED, &target.name, &detail)?;
    Ok(Accepted {
        entry: store::known_hosts::by_id(conn, &vouching.id)?,
        replaced: Vec::new(),
    })
}

/// Stores the key for the host's own name. A replace first drops the stale keys of this
/// type stored for this very name (plain or hashed), as `ssh-keygen -R` would; a wildcard
/// entry covers other hosts and stays (OpenSSH trusts a host when any of its entries holds
/// the key).
fn record(
    conn: &store::Conn,
    target: &Target,
    key: &HostKey,
    status: Status,
    matching: &[KnownHost],
) -> Result<Accepted, ApiError> {
    let replacing = status == Status::Changed;
    let replaced: Vec<KnownHost> = match replacing {
        true => stale(matching, key)
            .filter(|entry| !entry.wildcard)
            .cloned()
            .collect(),
        false => Vec::new(),
    };
    for entry in &replaced {
        store::known_hosts::delete(conn, &entry.id)?;
    }
    let new = NewKnownHost {
        host: &target.name,
        hashed: false,
        wildcard: false,
        key_type: &key.key_type,
        public_key: &key.public_key,
        fingerprint: &key.fingerprint,
        marker: Marker::None,
        comment: "",
        source: if replacing { "replace" } else { "accept" },
    };
    let (id, _) = store::known_hosts::insert(conn, &crate::vault::new_id(), &new)?;
    let (event, detail) = match replacing {
        true => (
            audit::HOST_KEY_REPLACED,
            json!({"id": id, "key_type": key.key_type, "fingerprint": key.fingerprint,
                   "replaced": replaced.iter().map(|entry| json!({"id": entry.id,
                       "fingerprint": entry.fingerprint})).collect::<Vec<_>>()}),
        ),
        false => (
            audit::HOST_KEY_ACCEPTED,
            json!({"id": id, "key_type": key.key_type, "fingerprint": key.fingerprint,
                   "verdict": status.as_str()}),
        ),
    };
    audit::append(conn, event, &target.name, &detail)?;
    Ok(Accepted {
        entry: store::known_hosts::by_id(conn, &id)?,
        replaced,
    })
}

/// The plain entries among `matching` that hold another key of `key`'s type.
fn stale<'a>(
    matching: &'a [KnownHost],
    key: &'a HostKey,
) -> impl Iterator<Item = &'a KnownHost> + 'a {
    matching.iter().filter(move |entry| {
        entry.marker == Marker::None
            && entry.key_type == key.key_type
            && entry.fingerprint != key.fingerprint
    })
}

/// Parses the text and checks each line's key and hashed names; refused lines carry their
/// reason. Runs before the transaction.
fn read_lines(text: &str) -> Vec<Result<CheckedLine, RefusedLine>> {
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

/// The import steps inside the caller's transaction.
fn import_in(
    conn: &store::Conn,
    lines: &[Result<CheckedLine, RefusedLine>],
    dry_run: bool,
) -> Result<ImportAnswer, ApiError> {
    let mut answer = ImportAnswer {
        dry_run,
        ..ImportAnswer::default()
    };
    for line in lines {
        let checked = match line {
            Ok(checked) => checked,
            Err(refused) => {
                answer.refused.push(RefusedLine {
                    line: refused.line,
                    reason: refused.reason.clone(),
                });
                continue;
            }
        };
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
                true => answer.added += 1,
                false => answer.unchanged += 1,
            }
        }
    }
    let detail = json!({"added": answer.added, "unchanged": answer.unchanged,
                        "refused": answer.refused.len()});
    audit::append(conn, audit::HOST_KEYS_IMPORTED, "known_hosts", &detail)?;
    Ok(answer)
}

fn list_filter(req: &Req) -> Result<Filter, ApiError> {
    let port = match req.query("port") {
        None => known_hosts::DEFAULT_PORT,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port >= 1 && port.to_string() == text => port,
            _ => {
                return Err(ApiError::parameter(
                    "port",
                    "must be an integer from 1 to 65535",
                ))
            }
        },
    };
    match (req.query("hostname"), req.query("host_id")) {
        (Some(_), Some(_)) => Err(ApiError::parameter(
            "host_id",
            "give hostname (and port) or host_id, not both",
        )),
        (Some(hostname), None) => {
            if let Some(rule) = validate::hostname_problem(hostname) {
                return Err(ApiError::parameter("hostname", rule));
            }
            Ok(Filter::Name(known_hosts::lookup_name(hostname, port)))
        }
        (None, Some(id)) if req.query("port").is_none() => Ok(Filter::Host(id.to_owned())),
        (None, Some(_)) => Err(ApiError::parameter(
            "port",
            "goes with hostname; a host_id brings its own port",
        )),
        (None, None) if req.query("port").is_some() => {
            Err(ApiError::parameter("port", "goes with hostname"))
        }
        (None, None) => Ok(Filter::All),
    }
}

/// The lookup names of the catalogue hosts, with their ids.
fn names(catalogue: &[(String, String, u16)]) -> Vec<(String, &str)> {
    catalogue
        .iter()
        .map(|(id, hostname, port)| (known_hosts::lookup_name(hostname, *port), id.as_str()))
        .collect()
}

/// Entries as the API shows them. Exact names are looked up in a map; hashed and wildcard
/// entries are tested against every catalogue host (an HMAC or a glob per host).
fn views<'a>(
    entries: &'a [KnownHost],
    catalogue: &[(String, String, u16)],
) -> Vec<KnownHostView<'a>> {
    let names = names(catalogue);
    let mut exact: HashMap<&str, Vec<String>> = HashMap::new();
    for (name, id) in &names {
        exact
            .entry(name.as_str())
            .or_default()
            .push((*id).to_owned());
    }
    entries
        .iter()
        .map(|entry| match entry.hashed || entry.wildcard {
            false => KnownHostView {
                host_ids: exact.get(entry.host.as_str()).cloned().unwrap_or_default(),
                ..view(entry, &[])
            },
            true => view(entry, &names),
        })
        .collect()
}

/// One entry as the API shows it, linked to the hosts of `names` it matches.
fn view<'a>(entry: &'a KnownHost, names: &[(String, &str)]) -> KnownHostView<'a> {
    let (hostname, port) = match entry.hashed {
        true => (None, None),
        false => {
            let (hostname, port) = known_hosts::split_token(&entry.host);
            (Some(hostname), Some(port))
        }
    };
    KnownHostView {
        id: &entry.id,
        host: &entry.host,
        hostname,
        port,
        hashed: entry.hashed,
        key_type: &entry.key_type,
        public_key: &entry.public_key,
        fingerprint: &entry.fingerprint,
        marker: entry.marker.as_str(),
        comment: &entry.comment,
        source: &entry.source,
        first_seen: &entry.first_seen,
        last_seen: &entry.last_seen,
        host_ids: {
            let matcher = matcher(entry);
            names
                .iter()
                .filter(|(name, _)| matcher.matches(name))
                .map(|(_, id)| (*id).to_owned())
                .collect()
        },
    }
}
