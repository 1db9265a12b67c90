//! This device's side of a cycle (docs/sync.md, "Local changes" and "Applying a merge"):
//! the catalogue read as records with its secrets opened, each difference from the merged
//! state stamped as a local change, and merged records turned back into rows with their
//! secrets sealed by the vault again.
//!
//! Invariants: a local change is found by comparing the catalogue with the merged state
//! itself, field by field, and only on fields this build maps (a field a newer version added
//! is never taken for cleared); a secret is compared by its keyed hash (`mac`), never by
//! its sealed bytes, which differ at every seal; records held back (`sync_unapplied`) are not
//! in the catalogue on purpose and are never taken for deleted; a secret the vault cannot
//! open is left as the merged state has it. Opened secrets live in `Secret`s (zeroized).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::model::sync::clock::Clock;
use crate::model::sync::record::{Record, RecordKey, State};
use crate::state::AppState;
use crate::store::sync::apply::Incoming;
use crate::store::sync::kinds::{self, Kind};
use crate::store::sync::project::{self, Fields};
use crate::sync::SyncError;
use crate::vault::bundle::{self, SyncKey};
use crate::vault::{SealContext, Secret, VaultError};

/// The catalogue as records, secrets opened.
pub struct Catalogue {
    pub records: BTreeMap<RecordKey, Fields>,
    pub secrets: BTreeMap<(RecordKey, String), Secret>,
    /// Secret fields the vault could not open (left alone).
    pub unreadable: BTreeSet<(RecordKey, String)>,
}

/// Reads the catalogue; the vault must be unlocked.
pub fn read(state: &AppState) -> Result<Catalogue, SyncError> {
    let projected = state.db.read(project::project)?;
    let vault = state.session.vault();
    let mut secrets = BTreeMap::new();
    let mut unreadable = BTreeSet::new();
    for sealed in projected.sealed {
        let context = SealContext {
            table: sealed.table,
            row_id: &sealed.row_id,
            field: sealed.slot,
        };
        match vault.open(context, &sealed.bytes) {
            Ok(secret) => {
                secrets.insert((sealed.key, sealed.field), secret);
            }
            Err(VaultError::Locked) => return Err(SyncError::VaultLocked),
            Err(_) => {
                log::warn!(
                    "sync: a sealed {} of {} {} does not open; it is left as merged",
                    sealed.field,
                    sealed.key.0,
                    sealed.key.1
                );
                unreadable.insert((sealed.key, sealed.field));
            }
        }
    }
    Ok(Catalogue {
        records: projected.records,
        secrets,
        unreadable,
    })
}

/// The secrets of one record, by field.
fn secrets_of<'c>(
    catalogue: &'c Catalogue,
    key: &RecordKey,
) -> impl Iterator<Item = (&'c str, &'c Secret)> + 'c {
    let key = key.clone();
    catalogue
        .secrets
        .range((key.clone(), String::new())..)
        .take_while(move |((record, _), _)| *record == key)
        .map(|((_, field), secret)| (field.as_str(), secret))
}

/// Stamps every difference between the catalogue and `merged` as a local change of this
/// device; answers how many fields and records changed.
pub fn stamp(
    merged: &mut State,
    clock: &mut Clock,
    key: &SyncKey,
    catalogue: &Catalogue,
    held_back: &BTreeMap<RecordKey, String>,
    now_ms: u64,
) -> usize {
    let mut changed = 0;
    for (record_key, fields) in &catalogue.records {
        let Some(kind) = kinds::kind(&record_key.0) else {
            continue;
        };
        if held_back.contains_key(record_key) {
            // The catalogue holds an older version on purpose (the merged one did not fit):
            // its difference is not an edit of this device.
            continue;
        }
        let edits = differences(
            kind,
            record_key,
            fields,
            catalogue,
            merged.records.get(record_key),
            key,
        );
        if edits.is_empty() {
            continue;
        }
        changed += edits.len();
        let record = merged.records.entry(record_key.clone()).or_default();
        for (name, value) in edits {
            record.set(&name, value, clock.tick(now_ms));
        }
    }
    let gone: Vec<RecordKey> = merged
        .records
        .iter()
        .filter(|(record_key, record)| {
            kinds::kind(&record_key.0).is_some()
                && record.is_alive()
                && !catalogue.records.contains_key(*record_key)
                && !held_back.contains_key(*record_key)
        })
        .map(|(record_key, _)| record_key.clone())
        .collect();
    for record_key in gone {
        if let Some(record) = merged.records.get_mut(&record_key) {
            record.delete(clock.tick(now_ms));
            changed += 1;
        }
    }
    changed
}

/// The fields of one record whose catalogue value is not the merged one (all of them for a
/// record the merged state does not hold alive).
fn differences(
    kind: &Kind,
    record_key: &RecordKey,
    fields: &Fields,
    catalogue: &Catalogue,
    merged: Option<&Record>,
    key: &SyncKey,
) -> Vec<(String, Value)> {
    let merged = merged.filter(|record| record.is_alive());
    let current = |name: &str| {
        merged
            .and_then(|record| record.fields.get(name))
            .map(|f| &f.value)
    };
    let mut edits = Vec::new();
    for (name, value) in fields {
        if current(name) != Some(value) {
            edits.push((name.clone(), value.clone()));
        }
    }
    let (kind_name, id) = (record_key.0.as_str(), record_key.1.as_str());
    for (name, secret) in secrets_of(catalogue, record_key) {
        let mac = key.secret_mac(kind_name, id, name, secret.expose());
        let same = current(name)
            .and_then(|value| value.get("mac"))
            .and_then(Value::as_str)
            == Some(mac.as_str());
        if !same {
            let value = key.secret_value(kind_name, id, name, secret.expose());
            edits.push((name.to_owned(), value));
        }
    }
    if let Some(record) = merged {
        for (name, field) in &record.fields {
            let here = fields.contains_key(name)
                || catalogue
                    .secrets
                    .contains_key(&(record_key.clone(), name.clone()))
                || catalogue
                    .unreadable
                    .contains(&(record_key.clone(), name.clone()));
            if !here && !field.value.is_null() && kinds::is_known_field(kind, name) {
                edits.push((name.clone(), Value::Null));
            }
        }
    }
    edits
}

/// Records the catalogue cannot take, and why.
pub type Problems = Vec<(RecordKey, String)>;

/// The rows of the merged records `keys` (of kinds this build syncs), their secrets opened
/// with `key` and sealed by the vault; with the records whose secret did not open.
pub fn incoming(
    state: &AppState,
    key: &SyncKey,
    merged: &State,
    keys: &BTreeSet<RecordKey>,
) -> Result<(Vec<Incoming>, Problems), SyncError> {
    let vault = state.session.vault();
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for record_key in keys {
        let (Some(kind), Some(record)) =
            (kinds::kind(&record_key.0), merged.records.get(record_key))
        else {
            continue;
        };
        if !record.is_alive() {
            rows.push(Incoming {
                key: record_key.clone(),
                fields: None,
                sealed: BTreeMap::new(),
            });
            continue;
        }
        let mut fields = Fields::new();
        let mut sealed = BTreeMap::new();
        let mut problem = None;
        for (name, field) in &record.fields {
            if !kinds::is_secret(kind, name) {
                if kinds::is_known_field(kind, name) {
                    fields.insert(name.clone(), field.value.clone());
                }
                continue;
            }
            if field.value.is_null() {
                continue;
            }
            let Some((table, row_id, slot)) = kinds::seal_slot(kind, &record_key.1, name) else {
                continue;
            };
            match bundle::open_secret(key, &field.value) {
                Ok(plain) => {
                    let context = SealContext {
                        table,
                        row_id: &row_id,
                        field: slot,
                    };
                    match vault.seal(context, plain.expose()) {
                        Ok(bytes) => {
                            sealed.insert(name.clone(), bytes);
                        }
                        Err(VaultError::Locked) => return Err(SyncError::VaultLocked),
                        Err(_) => problem = Some(format!("{name}: cannot be sealed")),
                    }
                }
                Err(_) => problem = Some(format!("{name}: sealed under another sync passphrase")),
            }
        }
        match problem {
            Some(problem) => problems.push((record_key.clone(), problem)),
            None => rows.push(Incoming {
                key: record_key.clone(),
                fields: Some(fields),
                sealed,
            }),
        }
    }
    Ok((rows, problems))
}
