//! `/api/known-hosts` endpoints (the host CAs of `/api/known-hosts/authorities` included),
//! `POST /api/import/known-hosts` and `GET /api/export/known-hosts`: the host-key trust
//! store shared with OpenSSH (docs/api.md: "Host keys (known_hosts)"). Each handler
//! parses its request, calls the trust workflow (`trust`: verdicts, accept, host CAs,
//! import, export, the hosts an entry matches) inside one transaction, and renders its
//! typed result.
//!
//! Invariants: the trust rules live in `trust`, never here; a refusal of the trust workflow
//! is answered with its own code (409 `HOST_KEY_CHANGED`, 409 `HOST_KEY_REVOKED`).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::host_query::Paging;
use crate::model::known_hosts;
use crate::model::validate;
use crate::state::AppState;
use crate::store::known_hosts::KnownHost;
use crate::store::{self, Ending};
use crate::trust::authorities::{self, NewAuthority};
use crate::trust::links::{self, Filter};
use crate::trust::{self, exchange, Refusal, Target};

/// `GET /api/known-hosts[?hostname=&port=|host_id=][&page=&per_page=]`: `{items, total,
/// page, per_page}`, oldest first, paged as `GET /api/hosts` is (`Paging`). Only the page's
/// entries get their `host_ids` (one HMAC per hashed entry and catalogue host).
pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let filter = list_filter(req)?;
    let paging = Paging::parse(|name| req.query(name))
        .map_err(|err| ApiError::parameter(&err.field, err.rule))?;
    // A page past any possible list is empty (its total still counted).
    let offset = paging.offset().unwrap_or(u64::MAX);
    let page = state
        .db
        .read(|conn| links::page(conn, &filter, offset, paging.per_page))?;
    let hosts = links::hosts_of(&page.entries, &page.catalogue);
    let items = page
        .entries
        .iter()
        .zip(hosts)
        .map(|(entry, host_ids)| view(entry, host_ids))
        .collect();
    Reply::json(
        200,
        &KnownHostList {
            items,
            total: page.total,
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
    let host_ids = links::host_ids(&entry, &links::names(&catalogue));
    Reply::json(200, &view(&entry, host_ids))
}

/// Deleting an entry is recorded in the audit log (`trust::delete`).
pub fn delete(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    state
        .db
        .write(|tx| Ok::<_, ApiError>(trust::delete(tx, id)?))?;
    Ok(Reply::no_content())
}

/// `POST /api/known-hosts/verify {hostname, port?, public_key}`.
pub fn verify(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let target = Target::from_json(&body)?;
    let (key, certificate) = target.presented()?;
    let ca_fingerprint = certificate.as_ref().map(|ca| ca.ca_fingerprint.clone());
    let presented = trust::presented(&key, certificate);
    let verdict = state
        .db
        .write(|tx| Ok::<_, ApiError>(trust::verify(tx, &target.name, &presented)?))?;
    let answer = VerifyView {
        status: verdict.status.as_str(),
        hostname: &target.hostname,
        port: target.port,
        key_type: &key.key_type,
        fingerprint: &key.fingerprint,
        ca_fingerprint: ca_fingerprint.as_deref(),
        reason: verdict.reason.as_deref(),
        known: verdict.known.iter().map(KnownRef::of).collect(),
        blocks_connect: verdict.status.blocks_connect(),
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
    let key = target.acceptable()?;
    let accepted = state
        .db
        .write(|tx| refused(trust::accept(tx, &target, &key, replace)))?;
    let catalogue = state.db.read(store::known_hosts::catalogue_names)?;
    let created = !matches!(accepted.status, known_hosts::Status::Trusted);
    let host_ids = links::host_ids(&accepted.entry, &links::names(&catalogue));
    let answer = AcceptView {
        status: accepted.status.as_str(),
        entry: view(&accepted.entry, host_ids),
        replaced: accepted.replaced.iter().map(KnownRef::of).collect(),
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
    let lines = exchange::read_lines(text);
    if !dry_run {
        crate::api::snapshot_before(state, store::snapshots::Reason::Import)?;
    }
    let answer = state.db.write_ending(Ending::dry_run_if(dry_run), |tx| {
        Ok::<_, ApiError>(exchange::import(tx, &lines, dry_run)?)
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
    Ok(Reply::text(exchange::export(&entries, hashed)))
}

/// `GET /api/known-hosts/authorities`: `{items}`, every host CA, oldest first.
pub fn list_authorities(state: &AppState) -> Result<Reply, ApiError> {
    let entries = state.db.read(authorities::list)?;
    let items = entries.iter().map(AuthorityView::of).collect();
    Reply::json(200, &AuthorityList { items })
}

/// `POST /api/known-hosts/authorities {pattern, public_key}`: 201 with the authority, 200
/// when the same pattern and key were already trusted (as accept answers a trusted key);
/// 409 `HOST_KEY_REVOKED` for a key `@revoked` for the pattern.
pub fn add_authority(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let new = NewAuthority::from_json(&body)?;
    let added = state.db.write(|tx| {
        authorities::add(tx, &new).map_err(|refusal| match refusal {
            Refusal::Revoked(text) => ApiError::HostKeyRevoked(text),
            Refusal::Store(err) => ApiError::from(err),
            Refusal::Changed(_) | Refusal::NoVouchingEntry => {
                ApiError::internal("a host CA's add refused as an accept")
            }
        })
    })?;
    let status = if added.created { 201 } else { 200 };
    Reply::json(status, &AuthorityView::of(&added.entry))
}

/// `DELETE /api/known-hosts/authorities/:id`, audited; 404 `KNOWN_HOST_NOT_FOUND` for an id
/// that is not a host CA.
pub fn delete_authority(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    state
        .db
        .write(|tx| Ok::<_, ApiError>(authorities::delete(tx, id)?))?;
    Ok(Reply::no_content())
}

/// The answer to an accept the trust workflow refused: its own 409, or the store's error.
fn refused<T>(result: Result<T, Refusal>) -> Result<T, ApiError> {
    result.map_err(|refusal| match refusal {
        Refusal::Revoked(text) => ApiError::HostKeyRevoked(text),
        Refusal::Changed(text) => ApiError::HostKeyChanged(text),
        Refusal::NoVouchingEntry => ApiError::internal("a trusted verdict without its entry"),
        Refusal::Store(err) => ApiError::from(err),
    })
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
    /// Why, for `revoked` and `certificate_invalid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
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
struct AuthorityList<'a> {
    items: Vec<AuthorityView<'a>>,
}

/// A host CA as the API shows it.
#[derive(Serialize)]
struct AuthorityView<'a> {
    id: &'a str,
    pattern: &'a str,
    key_type: &'a str,
    public_key: &'a str,
    fingerprint: &'a str,
    comment: &'a str,
    created_at: &'a str,
}

impl<'a> AuthorityView<'a> {
    fn of(entry: &'a KnownHost) -> AuthorityView<'a> {
        AuthorityView {
            id: &entry.id,
            pattern: &entry.host,
            key_type: &entry.key_type,
            public_key: &entry.public_key,
            fingerprint: &entry.fingerprint,
            comment: &entry.comment,
            created_at: &entry.first_seen,
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

/// One entry as the API shows it, linked to the catalogue hosts `host_ids`.
fn view(entry: &KnownHost, host_ids: Vec<String>) -> KnownHostView<'_> {
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
        host_ids,
    }
}
