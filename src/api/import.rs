//! `GET /api/import/formats` and `POST /api/import/{format}` (docs/import.md): the files
//! decoded, read by the format's reader (`import::read`), planned against the catalogue
//! (`import::plan`), their passwords opened and sealed (only with `"secrets": "import"`),
//! and written with their import records in one transaction.
//!
//! Invariants: passwords are opened and sealed before the transaction (the vault's lock is
//! never taken under the database's); the transaction checks that nothing changed since the
//! plan was read, else plans again; a dry run takes the same steps and rolls them back; no
//! answer, log line or error carries a password or a passphrase.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::api::{JsonBody, JsonReply, Reply};
use crate::error::ApiError;
use crate::http::Req;
use crate::import::plan::{self, Item, Kind, Options, Plan, SecretStatus, Status};
use crate::import::reveal::Revealer;
use crate::import::source::{Catalogue, Format, SourceFile, SourceSecret};
use crate::import::text;
use crate::state::AppState;
use crate::store::{self, changes, imports, Ending};
use crate::vault::foreign::sha256_hex;
use crate::vault::{SealContext, Secret};

mod request;
mod write;

use request::ImportRequest;

/// How many times an import plans again when the catalogue changed under it.
const ATTEMPTS: usize = 3;

#[derive(Serialize)]
struct FormatView {
    format: &'static str,
    title: &'static str,
    files: &'static str,
    secrets: &'static str,
}

/// `GET /api/import/formats`.
pub fn formats(_state: &AppState) -> Result<Reply, ApiError> {
    let formats: Vec<FormatView> = Format::ALL
        .into_iter()
        .map(|format| {
            let (title, files, secrets) = describe(format);
            FormatView {
                format: format.name(),
                title,
                files,
                secrets,
            }
        })
        .collect();
    Reply::json(200, &json!({ "formats": formats }))
}

/// The title, the files to send and the passwords it opens (docs/import.md, "Formats").
fn describe(format: Format) -> (&'static str, &'static str, &'static str) {
    match format {
        Format::MobaXterm => (
            "MobaXterm",
            "a .mxtsessions export or MobaXterm.ini",
            "none",
        ),
        Format::Putty => (
            "PuTTY / KiTTY",
            "a regedit export of the Sessions key, or ~/.putty/sessions files",
            "ProxyPassword",
        ),
        Format::WinScp => (
            "WinSCP",
            "WinSCP.ini",
            "saved passwords without a master password",
        ),
        Format::SecureCrt => (
            "SecureCRT",
            "the XML export",
            "Password V2 (02, 03) with the config passphrase (empty by default), and the old form",
        ),
        Format::MRemoteNg => (
            "mRemoteNG",
            "confCons.xml",
            "every password, with the default or the given password",
        ),
        Format::Remmina => (
            "Remmina",
            "the .remmina files and remmina.pref",
            "every password, with remmina.pref among the files",
        ),
        Format::TermiusCsv => (
            "Termius CSV",
            "a CSV in Termius's import template",
            "Password column",
        ),
        Format::Csv => (
            "CSV",
            "a CSV as GET /api/export/csv writes it",
            "password column",
        ),
    }
}

/// The answer of an import.
#[derive(Serialize)]
struct Answer {
    dry_run: bool,
    source: SourceView,
    summary: Summary,
    items: Vec<Item>,
}

#[derive(Serialize)]
struct SourceView {
    format: &'static str,
    fingerprint: String,
}

#[derive(Default, Serialize)]
struct Summary {
    created: usize,
    updated: usize,
    unchanged: usize,
    kept_local: usize,
    skipped: usize,
    invalid: usize,
    groups_created: usize,
    identities_created: usize,
}

/// `POST /api/import/{format}`.
pub fn run(state: &AppState, req: &Req, format: &str) -> Result<Reply, ApiError> {
    let format = Format::from_name(format).ok_or(ApiError::UnknownFormat)?;
    let mut body: Map<String, Value> = req.json()?;
    let passphrase = request::take_passphrase(&mut body)?;
    let request = ImportRequest::from_json(&body)?;
    let files = decode(&request)?;
    let fingerprint = fingerprint(&request);
    let mut catalogue = crate::import::read(format, &files, passphrase.as_ref())
        .map_err(|err| ApiError::validation(&format!("files[{}]", err.file), err.reason))?;
    plan::add_jump_hosts(&mut catalogue);
    drop(files);
    let keys = Keys {
        passphrase: passphrase.as_ref(),
        source_key: catalogue.source_key.as_ref(),
    };
    let mut stats = Stats::default();
    let mut attempt = 0;
    let items = loop {
        attempt += 1;
        match import_once(state, format, &request, &catalogue, &keys, &mut stats)? {
            Some(items) => break items,
            None if attempt >= ATTEMPTS => {
                return Err(ApiError::internal(
                    "the catalogue kept changing during an import",
                ))
            }
            None => continue,
        }
    };
    log::info!(
        "import {}: {} items, {} key derivations in {} ms on {} threads",
        format.name(),
        items.len(),
        stats.derivations,
        stats.derive_time.as_millis(),
        stats.threads
    );
    let answer = Answer {
        dry_run: request.dry_run,
        source: SourceView {
            format: format.name(),
            fingerprint,
        },
        summary: summary(&items),
        items,
    };
    Reply::json(200, &answer)
}

/// One try: read, plan, open and seal, write. `None` when the catalogue changed between
/// the read and the write (nothing was written).
fn import_once(
    state: &AppState,
    format: Format,
    request: &ImportRequest,
    catalogue: &Catalogue,
    keys: &Keys<'_>,
    stats: &mut Stats,
) -> Result<Option<Vec<Item>>, ApiError> {
    let (stored, seen, current_sealed) = state.db.read(|conn| {
        if let Some(group) = &request.parent_group_id {
            if !store::hosts::group_exists(conn, group)? {
                return Err(ApiError::GroupNotFound);
            }
        }
        let sealed = imports::sealed_passwords(conn)?;
        let stored = imports::stored(conn, format.name(), &sealed)?;
        Ok::<_, ApiError>((stored, changes::latest(conn)?, sealed))
    })?;
    let options = Options {
        parent_group_id: request.parent_group_id.as_deref(),
        default_user: &state.config.import_user,
        import_secrets: request.import_secrets,
    };
    let mut plan = plan::plan(catalogue, &stored, &options, &mut crate::vault::new_id);
    let sealed = seal_secrets(state, &mut plan, keys, stats, &current_sealed)?;
    if !request.dry_run {
        crate::api::snapshot_before(state, store::snapshots::Reason::Import)?;
    }
    let ending = Ending::dry_run_if(request.dry_run);
    let written = state.db.write_ending(ending, |tx| {
        if changes::latest(tx)? != seen {
            return Ok(false);
        }
        write::apply(tx, format, &stored, &mut plan, &sealed)?;
        Ok::<_, ApiError>(true)
    })?;
    if !written {
        return Ok(None);
    }
    if request.dry_run {
        // A dry run's new objects were rolled back: they have no id.
        for item in plan
            .items
            .iter_mut()
            .filter(|item| item.status == Status::Created)
        {
            item.id = None;
        }
    }
    Ok(Some(plan.items))
}

/// Opens each password the plan writes and seals it for its object; a password that cannot
/// be opened is `"missing"` with the reason, and one equal to what is stored (the last
/// import's) is not written again. Returns the sealed bytes by object id.
fn seal_secrets(
    state: &AppState,
    plan: &mut Plan<'_>,
    keys: &Keys<'_>,
    stats: &mut Stats,
    current: &HashMap<String, Vec<u8>>,
) -> Result<HashMap<String, Vec<u8>>, ApiError> {
    let jobs: Vec<(usize, &SourceSecret)> = plan
        .writes
        .iter()
        .enumerate()
        .filter_map(|(index, write)| write.secret.map(|secret| (index, secret)))
        .collect();
    let secrets: Vec<&SourceSecret> = jobs.iter().map(|(_, secret)| *secret).collect();
    let revealed = reveal_all(&secrets, keys, stats);
    let mut sealed = HashMap::new();
    for ((index, _), revealed) in jobs.iter().zip(revealed) {
        let write = &plan.writes[*index];
        let item = &mut plan.items[write.item];
        let opened = match revealed {
            Ok(opened) => opened,
            Err(reason) => {
                item.secret = SecretStatus::Missing;
                item.reason
                    .get_or_insert_with(|| format!("password: {reason}"));
                continue;
            }
        };
        let context = seal_context(write.kind, &write.id);
        let vault = state.session.vault();
        if write.compare_secret {
            if let Some(bytes) = current.get(&write.id) {
                let now: Secret = vault.open(context, bytes)?;
                if now.expose() == opened.expose() {
                    item.secret = SecretStatus::Imported;
                    continue;
                }
            }
        }
        sealed.insert(write.id.clone(), vault.seal(context, opened.expose())?);
        item.secret = SecretStatus::Imported;
        if write.existing && matches!(item.status, Status::Unchanged | Status::KeptLocal) {
            item.status = Status::Updated;
        }
    }
    Ok(sealed)
}

/// What opens a source's protected passwords: the request's passphrase and the source's
/// own key (Remmina's `remmina.pref`).
struct Keys<'a> {
    passphrase: Option<&'a Secret>,
    source_key: Option<&'a Secret>,
}

/// The key derivations an import ran, for its log line (and the benchmark).
#[derive(Default)]
struct Stats {
    derivations: u32,
    /// Summed over the threads.
    derive_time: Duration,
    threads: usize,
}

/// At most this many threads open one import's passwords.
const REVEAL_THREADS: usize = 4;

/// Opens `secrets` in order, on up to `REVEAL_THREADS` scoped threads (one per core): some
/// schemes derive a slow key per value (mRemoteNG, SecureCRT `03`), and every value has its
/// own salt, so they cannot share one. CPU work only: no lock is held, and a panic in one
/// is the request's panic.
fn reveal_all(
    secrets: &[&SourceSecret],
    keys: &Keys<'_>,
    stats: &mut Stats,
) -> Vec<Result<Secret, &'static str>> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let threads = cores.clamp(1, REVEAL_THREADS);
    let chunk = secrets.len().div_ceil(threads).max(1);
    stats.threads = secrets.chunks(chunk).count();
    std::thread::scope(|scope| {
        let handles: Vec<_> = secrets
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut revealer = Revealer::new(keys.passphrase, keys.source_key);
                    let opened: Vec<_> =
                        part.iter().map(|secret| revealer.reveal(secret)).collect();
                    (opened, revealer.keys.derivations, revealer.keys.derive_time)
                })
            })
            .collect();
        let mut out = Vec::with_capacity(secrets.len());
        for handle in handles {
            match handle.join() {
                Ok((opened, derivations, time)) => {
                    out.extend(opened);
                    stats.derivations += derivations;
                    stats.derive_time += time;
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// Where a password of `kind` is sealed (the same contexts as the hosts' and identities'
/// own endpoints).
fn seal_context(kind: Kind, id: &str) -> SealContext<'_> {
    SealContext {
        table: match kind {
            Kind::Identity => "identities",
            _ => "hosts",
        },
        row_id: id,
        field: "password",
    }
}

/// Each file's text: `content` as it is, `content_base64` in the request's encoding
/// (docs/import.md, "Encodings"); a file that cannot be read is 400 naming it.
fn decode(request: &ImportRequest) -> Result<Vec<SourceFile>, ApiError> {
    request
        .files
        .iter()
        .enumerate()
        .map(|(index, file)| {
            let text = match &file.text {
                Some(text) => text.clone(),
                None => text::decode(&file.bytes, request.encoding)
                    .map_err(|reason| ApiError::validation(&format!("files[{index}]"), reason))?,
            };
            Ok(SourceFile {
                name: file.name.clone(),
                text,
            })
        })
        .collect()
}

/// docs/import.md, "The answer": the SHA-256 of the files' names and bytes, in order.
fn fingerprint(request: &ImportRequest) -> String {
    let mut parts: Vec<&[u8]> = Vec::new();
    for file in &request.files {
        parts.push(file.name.as_bytes());
        parts.push(match &file.text {
            Some(text) => text.as_bytes(),
            None => &file.bytes,
        });
    }
    sha256_hex(&parts)
}

fn summary(items: &[Item]) -> Summary {
    let mut summary = Summary::default();
    for item in items {
        match (item.kind, item.status) {
            (Kind::Group, Status::Created) => summary.groups_created += 1,
            (Kind::Identity, Status::Created) => summary.identities_created += 1,
            (Kind::Host, Status::Created) => summary.created += 1,
            (Kind::Host, Status::Updated) => summary.updated += 1,
            (Kind::Host, Status::Unchanged) => summary.unchanged += 1,
            (Kind::Host, Status::KeptLocal) => summary.kept_local += 1,
            (Kind::Host, Status::Skipped) => summary.skipped += 1,
            (Kind::Host, Status::Invalid) => summary.invalid += 1,
            _ => {}
        }
    }
    summary
}
