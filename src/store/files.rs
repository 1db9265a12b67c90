//! The database's files in the data dir: the database itself and SQLite's `-wal` and `-shm`
//! beside it, checked before SQLite opens them.
//!
//! Invariants: never follows a symlink (a database, WAL or SHM that is one is refused, so
//! no chmod and no write ever reaches a file outside the data dir); never widens a mode;
//! creates the database private, mode 0600 on Unix (README, Command line and Platforms). The
//! data dir itself is checked before this runs (main's `own_data_dir`): it is ours and
//! private, so the mode of a regular file inside it is ours to tighten.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::platform;
use crate::store::StoreError;

/// Refuses a database, WAL or SHM file that is a symlink or not a regular file, creates the
/// database (mode 0600) when it is missing, and tightens a wider mode on an existing one.
pub fn prepare(db_path: &Path) -> Result<(), StoreError> {
    for path in [
        db_path.to_path_buf(),
        sidecar(db_path, "-wal"),
        sidecar(db_path, "-shm"),
    ] {
        refuse_links(&path)?;
    }
    match fs::symlink_metadata(db_path) {
        Ok(_) => tighten(db_path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => create(db_path),
        Err(err) => Err(cannot(db_path, "read the metadata of", &err)),
    }
}

/// SQLite gives the -wal and -shm files the database file's mode; this tightens any that
/// an older run or another tool left wider. Symlinks were refused by `prepare`.
pub fn restrict_sidecars(db_path: &Path) {
    for path in [sidecar(db_path, "-wal"), sidecar(db_path, "-shm")] {
        if let Err(err) = tighten(&path) {
            log::warn!("{err}");
        }
    }
}

/// `<database>-wal` or `<database>-shm`.
pub fn sidecar(db_path: &Path, suffix: &str) -> PathBuf {
    let mut name = db_path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A symlink, a directory or a device where one of the database's files belongs is refused:
/// SQLite would follow it, and chmodding or writing its target would change a file the
/// service did not create (README, Command line).
fn refuse_links(path: &Path) -> Result<(), StoreError> {
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(cannot(path, "read the metadata of", &err)),
    };
    if metadata.file_type().is_symlink() {
        return Err(StoreError::Unusable(format!(
            "{} is a symbolic link; host-manager opens only regular files in its data dir \
             (it would otherwise write and chmod the link's target): move the file itself \
             into the data dir, or point --data-dir at the directory that holds it",
            path.display()
        )));
    }
    if !metadata.is_file() {
        return Err(StoreError::Unusable(format!(
            "{} is not a regular file; move it out of the data dir",
            path.display()
        )));
    }
    Ok(())
}

fn create(path: &Path) -> Result<(), StoreError> {
    // create_new: never opens something that appeared meanwhile.
    match platform::open_private(OpenOptions::new().write(true).create_new(true)).open(path) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => prepare(path),
        Err(err) => Err(cannot(path, "create", &err)),
    }
}

/// Narrows a regular file's mode to 0600 when it is wider; leaves a narrower one alone.
fn tighten(path: &Path) -> Result<(), StoreError> {
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(cannot(path, "read the metadata of", &err)),
    };
    if !metadata.is_file() || !platform::is_open_to_others(&metadata) {
        return Ok(());
    }
    platform::make_private(path).map_err(|err| cannot(path, "restrict the mode of", &err))
}

fn cannot(path: &Path, what: &str, err: &io::Error) -> StoreError {
    StoreError::Unusable(format!("cannot {what} {}: {err}", path.display()))
}

/// Unix only: what these check are modes and symbolic links (docs/platforms.md, Platforms).
#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::PathBuf;

    use crate::store::files::{prepare, sidecar};

    /// A fresh directory under target/ (tests leave nothing elsewhere).
    fn scratch(name: &str) -> PathBuf {
        crate::scratch::fresh(&format!("unit-files-{name}"))
    }

    #[test]
    fn a_missing_database_is_created_with_mode_0600() {
        let dir = scratch("create");
        let db = dir.join("host-manager.db");
        prepare(&db).unwrap();
        let mode = fs::metadata(&db).unwrap().permissions().mode() & 0o777;
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_symlinked_database_is_refused_and_its_target_keeps_its_mode() {
        let dir = scratch("link");
        let target = dir.join("elsewhere.db");
        fs::write(&target, b"").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        let db = dir.join("host-manager.db");
        symlink(&target, &db).unwrap();
        let err = prepare(&db).unwrap_err().to_string();
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn a_symlinked_wal_is_refused() {
        let dir = scratch("wal-link");
        let db = dir.join("host-manager.db");
        fs::write(dir.join("other"), b"").unwrap();
        symlink(dir.join("other"), sidecar(&db, "-wal")).unwrap();
        let err = prepare(&db).unwrap_err().to_string();
        fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("-wal is a symbolic link"), "{err}");
    }

    #[test]
    fn a_wider_database_mode_is_narrowed_and_a_narrower_one_kept() {
        let dir = scratch("modes");
        let db = dir.join("host-manager.db");
        fs::write(&db, b"").unwrap();
        fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
        prepare(&db).unwrap();
        let narrowed = fs::metadata(&db).unwrap().permissions().mode() & 0o777;
        fs::set_permissions(&db, fs::Permissions::from_mode(0o400)).unwrap();
        prepare(&db).unwrap();
        let kept = fs::metadata(&db).unwrap().permissions().mode() & 0o777;
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!((narrowed, kept), (0o600, 0o400));
    }
}
