//! Bundle backups (docs/sync.md, "Backup files"): the whole catalogue written as a bundle
//! sealed under a passphrase of the user's choosing, and a bundle taken back in, merged
//! (records missing here are added, records here keep their values) or replacing the
//! catalogue (it becomes exactly the bundle's live records).
//!
//! Invariants: a backup's secrets stay sealed under its passphrase (re-sealed by the vault
//! on import, never plaintext on disk); an export is written to the audit log (counts,
//! never a value); an import takes a snapshot first and is one transaction, and a dry run
//! takes the same steps and rolls them back; a bundle that does not open changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use crate::model::sync::clock::Clock;
use crate::model::sync::merge::Report;
use crate::model::sync::record::{DeviceInfo, RecordKey, State};
use crate::state::AppState;
use crate::store::snapshots::Reason;
use crate::store::sync::apply::{self, Incoming};
use crate::store::sync::kinds;
use crate::store::{audit, Ending};
use crate::sync::cycle::{now_ms, Outcome};
use crate::sync::{local, settings, SyncError};
use crate::vault::bundle::{self, BundleError, Header, KdfParams, SyncKey};
use crate::vault::Secret;

/// How an import takes the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Adds the records missing here; those here keep their values.
    Merge,
    /// The catalogue becomes the bundle's live records (others are deleted).
    Replace,
}

fn derive(passphrase: &Secret, params: &KdfParams) -> Result<SyncKey, SyncError> {
    SyncKey::derive(passphrase.expose(), params)
        .map_err(|err| SyncError::BundleDamaged(err.to_string()))
}

/// The whole catalogue as a bundle sealed under `passphrase`.
pub fn export(state: &AppState, passphrase: &Secret) -> Result<Vec<u8>, SyncError> {
    let settings = settings(state)?;
    let key = derive(passphrase, &KdfParams::generate())?;
    let catalogue = local::read(state)?;
    let mut exported = State::default();
    let mut clock = Clock::new(&settings.device_id, settings.clock);
    let now = now_ms();
    local::stamp(
        &mut exported,
        &mut clock,
        &key,
        &catalogue,
        &BTreeMap::new(),
        now,
    );
    exported.devices.insert(
        settings.device_id.as_str().into(),
        DeviceInfo {
            name: settings.device_name.clone(),
            written_at_ms: now,
        },
    );
    let detail = json!({
        "format": "bundle",
        "records": exported.records.len(),
        "secrets": catalogue.secrets.len(),
    });
    state
        .db
        .write(|tx| audit::append(tx, audit::SECRETS_EXPORTED, "bundle", &detail))?;
    let header = Header {
        format_version: 0,
        min_reader: 0,
        kdf: key.params().clone(),
        check: [0; 16],
        device_id: settings.device_id,
        device_name: settings.device_name,
        extra: Default::default(),
    };
    Ok(bundle::write(&key, &header, &exported))
}

/// Takes `bytes` (a bundle) in as `mode` says; `dry_run` answers the same report and
/// changes nothing.
pub fn import(
    state: &AppState,
    bytes: &[u8],
    passphrase: &Secret,
    mode: Mode,
    dry_run: bool,
) -> Result<Outcome, SyncError> {
    let header =
        bundle::read_header(bytes).map_err(|err| SyncError::BundleDamaged(err.to_string()))?;
    let key = derive(passphrase, &header.kdf)?;
    let (_, remote) = bundle::open(&key, bytes).map_err(|err| match err {
        BundleError::WrongPassphrase => SyncError::PassphraseMismatch,
        other => SyncError::BundleDamaged(other.to_string()),
    })?;
    let here: BTreeSet<RecordKey> = state
        .db
        .read(crate::store::sync::project::project)?
        .records
        .into_keys()
        .collect();
    let mut report = Report::default();
    let mut keys = BTreeSet::new();
    for (record_key, record) in &remote.records {
        if kinds::kind(&record_key.0).is_none() || !record.is_alive() {
            continue;
        }
        match (here.contains(record_key), mode) {
            (false, _) => report.added.push(record_key.clone()),
            (true, Mode::Replace) => report.updated.push((record_key.clone(), Vec::new())),
            (true, Mode::Merge) => continue,
        }
        keys.insert(record_key.clone());
    }
    let (mut incoming, mut unapplied) = local::incoming(state, &key, &remote, &keys)?;
    if mode == Mode::Replace {
        for record_key in &here {
            let alive = remote.records.get(record_key).is_some_and(|r| r.is_alive());
            if !alive {
                report.deleted.push(record_key.clone());
                incoming.push(Incoming {
                    key: record_key.clone(),
                    fields: None,
                    sealed: BTreeMap::new(),
                });
            }
        }
    }
    if !dry_run && !incoming.is_empty() {
        state
            .db
            .take_snapshot(&crate::vault::new_id(), Reason::Import, None)?;
    }
    let applied = state.db.write_ending(Ending::dry_run_if(dry_run), |tx| {
        apply::apply(tx, &incoming)
    })?;
    unapplied.extend(applied.unapplied);
    Ok(Outcome {
        report,
        unapplied,
        ..Outcome::default()
    })
}
