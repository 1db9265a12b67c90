//! Sync between the user's machines through a folder a file-sync tool shares (docs/sync.md):
//! setting it up and down, its status, a cycle on request or from the background thread
//! (`watch`), and bundle backups (`backup`). The rules of the merge are `model::sync`; the
//! sealed file is `vault::bundle`; the rows are `store::sync`.
//!
//! Invariants: sync works only while the vault is unlocked (the sync passphrase is sealed in
//! it, and the catalogue's secrets are opened to be sealed again under the sync key); one
//! cycle at a time (the engine's lock, `sync_share`), taken before the database's and the
//! vault's; a wrong passphrase is refused by the key check before anything changes.

pub mod backup;
pub mod cycle;
pub mod folder;
mod local;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
pub mod watch;

use std::path::{Path, PathBuf};

use crate::model::sync::clock::Clock;
use crate::state::AppState;
use crate::store::sync::{self as rows, Peer, PASSPHRASE_ROW, PASSPHRASE_SLOT, PASSPHRASE_TABLE};
use crate::store::StoreError;
use crate::sync_share::{Engine, Held, Live};
use crate::vault::bundle::{self, BundleError, KdfParams, SyncKey};
use crate::vault::{SealContext, Secret, VaultError};

/// The merged state is kept in the data dir too (sealed under the sync key), so a restart
/// or a folder emptied by a sync tool loses nothing this device knew.
pub const STATE_FILE: &str = "sync-state.bundle";

/// Why sync could not do what was asked. Names no secret.
#[derive(Debug)]
pub enum SyncError {
    /// Sync is not set up.
    Disabled,
    VaultLocked,
    /// The passphrase does not open the folder's bundles (their key check).
    PassphraseMismatch,
    /// A merge held until confirmed.
    MassDelete(Held),
    /// A request field breaks a rule: (field, rule).
    Invalid(&'static str, String),
    /// A bundle given to import is not one, or is damaged (why).
    BundleDamaged(String),
    /// The folder cannot be listed (why).
    Folder(String),
    /// The catalogue kept changing between a cycle's read and its apply (requests writing
    /// all the time): nothing was merged; a later cycle will.
    Changed,
    Store(StoreError),
}

impl From<StoreError> for SyncError {
    fn from(err: StoreError) -> SyncError {
        SyncError::Store(err)
    }
}

impl From<VaultError> for SyncError {
    fn from(err: VaultError) -> SyncError {
        match err {
            VaultError::Locked => SyncError::VaultLocked,
            other => SyncError::Store(StoreError::BrokenInvariant(format!(
                "the vault refused a seal: {other}"
            ))),
        }
    }
}

/// What `GET /api/sync` shows.
#[derive(Debug)]
pub struct Status {
    pub enabled: bool,
    pub dir: Option<String>,
    pub device_id: String,
    pub device_name: String,
    pub last_write_at: Option<String>,
    pub last_merge_at: Option<String>,
    pub peers: Vec<Peer>,
    pub conflicts: u64,
    pub warnings: Vec<(String, String)>,
    pub held: Option<Held>,
    pub unapplied: Vec<(String, String, String)>,
}

/// The device name a new device takes: the machine's host name, else `host-manager`.
pub fn default_device_name() -> String {
    let from_env = ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok());
    let from_file = || std::fs::read_to_string("/etc/hostname").ok();
    from_env
        .or_else(from_file)
        .map(|name| name.trim().chars().take(64).collect::<String>())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host-manager".to_owned())
}

fn settings(state: &AppState) -> Result<rows::Settings, StoreError> {
    if let Some(found) = state.db.read(rows::read_settings)? {
        return Ok(found);
    }
    let id = crate::vault::new_id();
    state
        .db
        .write(|tx| rows::settings(tx, &id, &default_device_name()))
}

/// The status; waits for a cycle under way.
pub fn status(state: &AppState) -> Result<Status, SyncError> {
    let engine = state.sync.engine();
    let settings = settings(state)?;
    let (peers, conflicts, unapplied) = state.db.read(|conn| {
        Ok::<_, StoreError>((
            rows::peers(conn)?,
            rows::conflict_count(conn)?,
            rows::unapplied(conn)?,
        ))
    })?;
    Ok(Status {
        enabled: settings.dir.is_some(),
        dir: settings.dir,
        device_id: settings.device_id,
        device_name: settings.device_name,
        last_write_at: settings.last_write_at,
        last_merge_at: settings.last_merge_at,
        peers,
        conflicts,
        warnings: engine
            .warnings
            .iter()
            .map(|(file, why)| (file.clone(), why.clone()))
            .collect(),
        held: engine.held.clone(),
        unapplied: unapplied
            .into_iter()
            .map(|((kind, id), why)| (kind, id, why))
            .collect(),
    })
}

fn passphrase_context() -> SealContext<'static> {
    SealContext {
        table: PASSPHRASE_TABLE,
        row_id: PASSPHRASE_ROW,
        field: PASSPHRASE_SLOT,
    }
}

/// Sets sync up on `dir` with `passphrase`, then runs the first cycle (this device joins
/// by merging). A folder that already holds bundles gives its KDF parameters, and its
/// bundles must open under the passphrase (the key check) before anything is stored.
pub fn enable(
    state: &AppState,
    dir: &Path,
    passphrase: &Secret,
    device_name: Option<String>,
) -> Result<(Status, Result<cycle::Outcome, SyncError>), SyncError> {
    let metadata = std::fs::metadata(dir)
        .map_err(|err| SyncError::Invalid("dir", format!("cannot be used: {err}")))?;
    if !metadata.is_dir() {
        return Err(SyncError::Invalid("dir", "must be a directory".into()));
    }
    if state.session.vault_locked() {
        return Err(SyncError::VaultLocked);
    }
    let mut engine = state.sync.engine();
    let settings = settings(state)?;
    let key = folder_key(dir, &settings.device_id, passphrase)?;
    let sealed = state
        .session
        .vault()
        .seal(passphrase_context(), passphrase.expose())?;
    let name = device_name.unwrap_or(settings.device_name.clone());
    let dir_text = dir.to_string_lossy().into_owned();
    state.db.write(|tx| {
        if settings.dir.as_deref() != Some(dir_text.as_str()) {
            // Another folder: what was read from the old one says nothing about the new.
            rows::disable(tx)?;
        }
        rows::enable(tx, &dir_text, &sealed, &name)
    })?;
    let kept = kept_state(state);
    engine.live = Some(load_live(
        kept.as_deref(),
        dir.to_path_buf(),
        key,
        &settings,
        name,
    ));
    engine.warnings.clear();
    engine.held = None;
    engine.changes_seen = None;
    let first = cycle::run(state, &mut engine, cycle::Options::default());
    drop(engine);
    Ok((status(state)?, first))
}

/// The key of `passphrase` for the folder: under the KDF parameters of the folder's bundles
/// (another device's first), checked against them; new parameters for an empty folder.
fn folder_key(dir: &Path, device_id: &str, passphrase: &Secret) -> Result<SyncKey, SyncError> {
    let own = folder::own_file(device_id);
    let mut files = folder::scan(dir).map_err(|err| SyncError::Folder(err.to_string()))?;
    // Other devices' bundles first: theirs are the folder's parameters.
    files.sort_by_key(|(name, _)| *name == own);
    for (name, _) in files {
        let Ok(bytes) = folder::read(&dir.join(&name)) else {
            continue;
        };
        let Ok(header) = bundle::read_header(&bytes) else {
            continue;
        };
        let key = match SyncKey::derive(passphrase.expose(), &header.kdf) {
            Ok(key) => key,
            Err(_) => continue,
        };
        return match bundle::open(&key, &bytes) {
            Err(BundleError::WrongPassphrase) => Err(SyncError::PassphraseMismatch),
            _ => Ok(key),
        };
    }
    SyncKey::derive(passphrase.expose(), &KdfParams::generate())
        .map_err(|err| SyncError::Store(StoreError::BrokenInvariant(err.to_string())))
}

/// The bytes of the merged state kept in the data dir, if any.
fn kept_state(state: &AppState) -> Option<Vec<u8>> {
    folder::read(&state.config.data_dir.join(STATE_FILE)).ok()
}

/// The live engine for `dir`: the merged state kept in the data dir (`kept`) when it opens
/// under `key`, else an empty one (this device then joins by merging).
fn load_live(
    kept: Option<&[u8]>,
    dir: PathBuf,
    key: SyncKey,
    settings: &rows::Settings,
    device_name: String,
) -> Live {
    let kept = kept
        .and_then(|bytes| bundle::open(&key, bytes).ok())
        .map(|(_, kept)| kept)
        .unwrap_or_default();
    let mut clock = Clock::new(&settings.device_id, settings.clock);
    if let Some(newest) = kept.stamps().max() {
        let _ = clock.observe(newest, cycle::now_ms());
    }
    Live {
        dir,
        key,
        device_id: settings.device_id.clone(),
        device_name,
        clock,
        state: kept,
    }
}

/// Loads the live engine from the stored settings when it is not (after a restart, or a
/// lock): opens the sealed passphrase with the vault.
fn ensure_live(state: &AppState, engine: &mut Engine) -> Result<(), SyncError> {
    if engine.live.is_some() {
        return Ok(());
    }
    let settings = settings(state)?;
    let (Some(dir), Some(sealed)) = (settings.dir.clone(), settings.passphrase.clone()) else {
        return Err(SyncError::Disabled);
    };
    let passphrase = state.session.vault().open(passphrase_context(), &sealed)?;
    let dir = PathBuf::from(dir);
    let kept = kept_state(state);
    let header = kept
        .as_deref()
        .and_then(|bytes| bundle::read_header(bytes).ok());
    let key = match header {
        Some(header) => SyncKey::derive(passphrase.expose(), &header.kdf)
            .map_err(|err| SyncError::Store(StoreError::BrokenInvariant(err.to_string())))?,
        None => folder_key(&dir, &settings.device_id, &passphrase)?,
    };
    let name = settings.device_name.clone();
    engine.live = Some(load_live(kept.as_deref(), dir, key, &settings, name));
    engine.changes_seen = None;
    Ok(())
}

/// `POST /api/sync/now`: one cycle, now.
pub fn run_now(state: &AppState, confirm_mass_delete: bool) -> Result<cycle::Outcome, SyncError> {
    if state.session.vault_locked() {
        return Err(SyncError::VaultLocked);
    }
    let mut engine = state.sync.engine();
    ensure_live(state, &mut engine)?;
    let options = cycle::Options {
        confirm_mass_delete,
        ..cycle::Options::default()
    };
    cycle::run(state, &mut engine, options)
}

/// `DELETE /api/sync`: stops syncing and forgets the folder and the passphrase; the folder's
/// files stay, and so does the merged state kept in the data dir (sealed under the sync key,
/// which goes with the passphrase): set up again with the same passphrase, this device
/// carries on where it stopped instead of meeting its own records as strangers.
pub fn disable(state: &AppState) -> Result<(), SyncError> {
    let mut engine = state.sync.engine();
    settings(state)?;
    state.db.write(|tx| rows::disable(tx))?;
    *engine = Engine::default();
    Ok(())
}
