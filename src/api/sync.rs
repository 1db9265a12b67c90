//! `PUT`, `GET`, `DELETE /api/sync`, `POST /api/sync/now`, `GET /api/sync/conflicts`,
//! `POST /api/export/bundle` and `POST /api/import/bundle` (docs/api.md, "Sync"; docs/sync.md):
//! sync between the user's machines through a folder, and bundle backups.
//!
//! Invariants: every field is checked before anything is stored; a passphrase goes from
//! the body's JSON text straight into a `Secret` and is never echoed; a secret field's
//! values in a conflict are shown as `{"secret": true}`, never the value (sealed or not);
//! the bundle download is `no-store`.

use base64ct::{Base64, Encoding};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::sync::merge::Report;
use crate::state::AppState;
use crate::store::sync::kinds;
use crate::sync::backup::{self, Mode};
use crate::sync::cycle::Outcome;
use crate::sync::{self as engine, Status, SyncError};
use crate::sync_share::Held;
use crate::vault::Secret;

/// A sync passphrase is at most this many bytes of UTF-8...
pub const MAX_PASSPHRASE_BYTES: usize = 1024;
/// ...and at least this many characters.
pub const MIN_PASSPHRASE_CHARS: usize = 8;
/// A device name is 1 to this many characters once trimmed.
pub const MAX_DEVICE_NAME_CHARS: usize = 64;
/// A folder path is at most this many bytes.
pub const MAX_DIR_BYTES: usize = 4096;

impl From<SyncError> for ApiError {
    fn from(err: SyncError) -> ApiError {
        match err {
            SyncError::Disabled => ApiError::SyncDisabled,
            SyncError::VaultLocked => ApiError::VaultLocked,
            SyncError::PassphraseMismatch => ApiError::SyncPassphraseMismatch,
            SyncError::MassDelete(held) => ApiError::MassDelete(held_text(&held)),
            SyncError::Invalid(field, rule) => ApiError::validation(field, rule),
            SyncError::BundleDamaged(why) => ApiError::BundleDamaged(why),
            SyncError::Folder(why) => ApiError::SyncFolderUnusable(why),
            SyncError::Changed => ApiError::Busy,
            SyncError::Store(err) => err.into(),
        }
    }
}

fn held_text(held: &Held) -> String {
    let what = match held.emptied_from {
        Some(before) => format!(
            "device {} held {before} records and now holds none",
            held.device_id
        ),
        None => format!(
            "merging device {}'s bundle would delete {} of the {} records here",
            held.device_id, held.deletions, held.live
        ),
    };
    format!(
        "{what} ({}); send {{\"confirm_mass_delete\": true}} to merge it",
        held.file
    )
}

fn passphrase(value: Option<&RawValue>) -> Result<Secret, ApiError> {
    let rule = format!(
        "is required: a string of at least {MIN_PASSPHRASE_CHARS} characters and at most \
         {MAX_PASSPHRASE_BYTES} bytes of UTF-8"
    );
    let secret = value
        .and_then(|raw| Secret::from_json_string(raw.get()))
        .ok_or_else(|| ApiError::validation("passphrase", rule.clone()))?;
    let chars = secret.expose_str().map_or(0, |text| text.chars().count());
    if chars < MIN_PASSPHRASE_CHARS || secret.expose().len() > MAX_PASSPHRASE_BYTES {
        return Err(ApiError::validation("passphrase", rule));
    }
    Ok(secret)
}

#[derive(Deserialize)]
struct SetUp<'a> {
    dir: Option<Value>,
    #[serde(borrow)]
    passphrase: Option<&'a RawValue>,
    device_name: Option<Value>,
}

fn dir_field(value: Option<&Value>) -> Result<std::path::PathBuf, ApiError> {
    let rule = "is required: the absolute path of an existing directory";
    let text = match value {
        Some(Value::String(text)) if !text.is_empty() && text.len() <= MAX_DIR_BYTES => text,
        _ => return Err(ApiError::validation("dir", rule)),
    };
    let path = std::path::PathBuf::from(text);
    if !path.is_absolute() {
        return Err(ApiError::validation("dir", "must be an absolute path"));
    }
    Ok(path)
}

fn device_name_field(value: Option<&Value>) -> Result<Option<String>, ApiError> {
    let rule = format!("must be a string of 1 to {MAX_DEVICE_NAME_CHARS} characters");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            let chars = trimmed.chars().count();
            if chars == 0 || chars > MAX_DEVICE_NAME_CHARS || trimmed.chars().any(char::is_control)
            {
                return Err(ApiError::validation("device_name", rule));
            }
            Ok(Some(trimmed.to_owned()))
        }
        Some(_) => Err(ApiError::validation("device_name", rule)),
    }
}

/// `PUT /api/sync` `{dir, passphrase, device_name?}` → 200 the status and the first
/// cycle's `report` (`null` while a merge is held: see `held`).
pub fn put(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: SetUp<'_> = req.json()?;
    let dir = dir_field(body.dir.as_ref())?;
    let passphrase = passphrase(body.passphrase)?;
    let device_name = device_name_field(body.device_name.as_ref())?;
    let (status, first) = engine::enable(state, &dir, &passphrase, device_name)?;
    let report = match first {
        Ok(outcome) => outcome_view(&outcome),
        Err(SyncError::MassDelete(_)) => Value::Null,
        Err(err) => return Err(err.into()),
    };
    let mut view = status_view(&status);
    view["report"] = report;
    Reply::json(200, &view)
}

/// `GET /api/sync` → 200 the status.
pub fn get(state: &AppState) -> Result<Reply, ApiError> {
    Reply::json(200, &status_view(&engine::status(state)?))
}

/// `DELETE /api/sync` → 204.
pub fn delete(state: &AppState) -> Result<Reply, ApiError> {
    engine::disable(state)?;
    Ok(Reply::no_content())
}

#[derive(Deserialize, Default)]
struct Now {
    confirm_mass_delete: Option<Value>,
}

/// `POST /api/sync/now` `{confirm_mass_delete?}` (the body may be empty) → 200 the report.
pub fn now(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: Now = match req.body_is_empty() {
        true => Now::default(),
        false => req.json()?,
    };
    let confirm = match body.confirm_mass_delete {
        None | Some(Value::Null) => false,
        Some(Value::Bool(confirm)) => confirm,
        Some(_) => {
            return Err(ApiError::validation(
                "confirm_mass_delete",
                "must be true or false",
            ))
        }
    };
    let outcome = engine::run_now(state, confirm)?;
    Reply::json(200, &outcome_view(&outcome))
}

/// `GET /api/sync/conflicts` → 200 `{conflicts}`, newest first.
pub fn conflicts(state: &AppState) -> Result<Reply, ApiError> {
    let stored = state.db.read(crate::store::sync::conflicts)?;
    let status = engine::status(state)?;
    let name_of = |device: &str| -> Option<String> {
        if device == status.device_id {
            return Some(status.device_name.clone());
        }
        status
            .peers
            .iter()
            .find(|peer| peer.device_id == device)
            .map(|peer| peer.device_name.clone())
    };
    let items: Vec<Value> = stored
        .iter()
        .map(|c| {
            let secret = kinds::kind(&c.kind).is_some_and(|kind| kinds::is_secret(kind, &c.field));
            json!({
                "kind": c.kind,
                "id": c.id,
                "field": c.field,
                "winner": side_view(&c.winner, secret, &name_of),
                "loser": side_view(&c.loser, secret, &name_of),
                "detected_at": c.detected_at,
            })
        })
        .collect();
    Reply::json(200, &json!({ "conflicts": items }))
}

fn side_view(stored: &str, secret: bool, name_of: &dyn Fn(&str) -> Option<String>) -> Value {
    let side: Value = serde_json::from_str(stored).unwrap_or(Value::Null);
    let device = side.get("device_id").and_then(Value::as_str).unwrap_or("");
    let at = side.get("at_ms").and_then(Value::as_u64).map(|ms| {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
        humantime::format_rfc3339_millis(time).to_string()
    });
    let value = match side.get("value") {
        Some(value) if secret || value.get("sealed").is_some() => json!({ "secret": true }),
        Some(value) => value.clone(),
        None => Value::Null,
    };
    json!({
        "value": value,
        "device_id": device,
        "device_name": name_of(device),
        "at": at,
    })
}

fn key_view(key: &(String, String)) -> Value {
    json!({ "kind": key.0, "id": key.1 })
}

fn report_view(report: &Report) -> Value {
    let conflicts: Vec<Value> = report
        .conflicts
        .iter()
        .map(|c| {
            let secret = kinds::kind(&c.kind).is_some_and(|kind| kinds::is_secret(kind, &c.field))
                || c.winner.value.get("sealed").is_some();
            let shown = |value: &Value| match secret {
                true => json!({ "secret": true }),
                false => value.clone(),
            };
            json!({
                "kind": c.kind,
                "id": c.id,
                "field": c.field,
                "winner": {"value": shown(&c.winner.value), "device_id": &*c.winner.stamp.device},
                "loser": {"value": shown(&c.loser.value), "device_id": &*c.loser.stamp.device},
            })
        })
        .collect();
    json!({
        "added": report.added.iter().map(key_view).collect::<Vec<_>>(),
        "updated": report.updated.iter().map(|(key, fields)| {
            let mut view = key_view(key);
            view["fields"] = json!(fields);
            view
        }).collect::<Vec<_>>(),
        "deleted": report.deleted.iter().map(key_view).collect::<Vec<_>>(),
        "resurrected": report.resurrected.iter().map(|r| json!({
            "kind": r.kind, "id": r.id, "deleted_by": &*r.deleted_by.device,
        })).collect::<Vec<_>>(),
        "conflicts": conflicts,
    })
}

fn outcome_view(outcome: &Outcome) -> Value {
    let mut view = report_view(&outcome.report);
    view["skipped"] = outcome
        .skipped
        .iter()
        .map(|(file, problem)| json!({ "file": file, "problem": problem }))
        .collect();
    view["unapplied"] = outcome
        .unapplied
        .iter()
        .map(|((kind, id), problem)| json!({ "kind": kind, "id": id, "problem": problem }))
        .collect();
    view["written"] = json!(outcome.written);
    view
}

fn status_view(status: &Status) -> Value {
    json!({
        "enabled": status.enabled,
        "dir": status.dir,
        "device_id": status.device_id,
        "device_name": status.device_name,
        "last_write_at": status.last_write_at,
        "last_merge_at": status.last_merge_at,
        "peers": status.peers.iter().map(|peer| json!({
            "device_id": peer.device_id,
            "device_name": peer.device_name,
            "last_seen_at": peer.last_seen_at,
            "records": peer.records,
        })).collect::<Vec<_>>(),
        "conflicts": status.conflicts,
        "warnings": status.warnings.iter().map(|(file, problem)| {
            json!({ "file": file, "problem": problem })
        }).collect::<Vec<_>>(),
        "held": status.held.as_ref().map(|held| json!({
            "file": held.file,
            "device_id": held.device_id,
            "deletions": held.deletions,
            "live": held.live,
            "emptied_from": held.emptied_from,
        })),
        "unapplied": status.unapplied.iter().map(|(kind, id, problem)| {
            json!({ "kind": kind, "id": id, "problem": problem })
        }).collect::<Vec<_>>(),
    })
}

#[derive(Deserialize)]
struct ExportBody<'a> {
    #[serde(borrow)]
    passphrase: Option<&'a RawValue>,
}

/// `POST /api/export/bundle` `{passphrase}` → 200 the bundle file, `no-store`.
pub fn export_bundle(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: ExportBody<'_> = req.json()?;
    let passphrase = passphrase(body.passphrase)?;
    let bytes = backup::export(state, &passphrase)?;
    Ok(Reply::download(bytes, "host-manager.bundle"))
}

#[derive(Deserialize)]
struct ImportBody<'a> {
    bundle_base64: Option<Value>,
    #[serde(borrow)]
    passphrase: Option<&'a RawValue>,
    mode: Option<Value>,
    dry_run: Option<Value>,
}

/// `POST /api/import/bundle` `{bundle_base64, passphrase, mode, dry_run?}` → 200 the report.
pub fn import_bundle(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let body: ImportBody<'_> = req.json()?;
    let bytes = match &body.bundle_base64 {
        Some(Value::String(text)) => Base64::decode_vec(text.trim())
            .map_err(|_| ApiError::validation("bundle_base64", "must be standard base64"))?,
        _ => {
            return Err(ApiError::validation(
                "bundle_base64",
                "is required: a bundle file in base64",
            ))
        }
    };
    let passphrase = passphrase(body.passphrase)?;
    let mode = match &body.mode {
        Some(Value::String(mode)) if mode == "merge" => Mode::Merge,
        Some(Value::String(mode)) if mode == "replace" => Mode::Replace,
        _ => {
            return Err(ApiError::validation(
                "mode",
                "is required: \"merge\" or \"replace\"",
            ))
        }
    };
    let dry_run = match &body.dry_run {
        None | Some(Value::Null) => false,
        Some(Value::Bool(dry_run)) => *dry_run,
        Some(_) => return Err(ApiError::validation("dry_run", "must be true or false")),
    };
    let outcome = backup::import(state, &bytes, &passphrase, mode, dry_run)?;
    let mut view = outcome_view(&outcome);
    view["dry_run"] = json!(dry_run);
    Reply::json(200, &view)
}
