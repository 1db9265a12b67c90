//! The sync folder's files (docs/sync.md, "The sync folder"): which files are bundles, what
//! each looked like when read (size and modification time), and the atomic write of this
//! device's own bundle (a temporary file, fsync, rename, fsync of the folder).
//!
//! Invariants: this device writes only `<device-id>.bundle` (and its temporary file, whose
//! name does not end in `.bundle`, so no reader takes a half-written file for a bundle);
//! every other `*.bundle` is read, the file-sync tools' conflict copies
//! (`x.sync-conflict-....bundle`, `x (conflicted copy ...).bundle`) included.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::UNIX_EPOCH;

/// The ending of every bundle file.
pub const BUNDLE_SUFFIX: &str = ".bundle";

/// A bundle larger than this is not read (a million hosts is about 700 MB).
pub const MAX_BUNDLE_BYTES: u64 = 4 << 30;

/// This device's bundle file name.
pub fn own_file(device_id: &str) -> String {
    format!("{device_id}{BUNDLE_SUFFIX}")
}

/// Whether `name` is a bundle to merge: it ends in `.bundle` and is not hidden.
pub fn is_bundle(name: &str) -> bool {
    name.ends_with(BUNDLE_SUFFIX) && !name.starts_with('.') && name.len() > BUNDLE_SUFFIX.len()
}

/// What a file looks like now: `size:mtime-in-nanoseconds`. A file changed by a sync tool
/// or a writer gets another.
pub fn look(path: &Path) -> io::Result<String> {
    let metadata = fs::metadata(path)?;
    let modified = metadata
        .modified()?
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_nanos())
        .unwrap_or(0);
    Ok(format!("{}:{modified}", metadata.len()))
}

/// The bundle files of the folder and what each looks like, sorted by name.
pub fn scan(dir: &Path) -> io::Result<Vec<(String, String)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !is_bundle(&name) || !entry.file_type()?.is_file() {
            continue;
        }
        // A file gone between the listing and the look is simply not there.
        if let Ok(seen) = look(&entry.path()) {
            found.push((name, seen));
        }
    }
    found.sort();
    Ok(found)
}

/// The bytes of a bundle file (at most `MAX_BUNDLE_BYTES`).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    if file.metadata()?.len() > MAX_BUNDLE_BYTES {
        return Err(io::Error::other("larger than any bundle this build reads"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BUNDLE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `bytes` as `dir/name` at once: a reader sees the old file or the new one, never
/// part of either; after a crash, at worst a stale temporary file is left beside it.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let temp = dir.join(format!("{name}.tmp"));
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    // Sealed, but the user's: 0600 where modes exist, as every file of the data dir.
    let mut file = crate::platform::open_private(&mut options).open(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, dir.join(name))?;
    // The rename itself reaches the disk with the folder's own fsync (where a folder can be
    // opened as a file: not on Windows, whose rename is durable by itself).
    if let Ok(folder) = File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bundles_and_the_sync_tools_conflict_copies_are_read_and_nothing_else() {
        assert!(is_bundle("3f2a.bundle"));
        assert!(is_bundle(
            "3f2a.sync-conflict-20261128-101010-ABCDEFG.bundle"
        ));
        assert!(is_bundle("3f2a (conflicted copy 2026-11-28).bundle"));
        assert!(!is_bundle("3f2a.bundle.tmp"));
        assert!(!is_bundle(".3f2a.bundle"));
        assert!(!is_bundle(".bundle"));
        assert!(!is_bundle("notes.txt"));
        assert!(!is_bundle("3f2a.bundle~"));
    }

    #[test]
    fn an_atomic_write_leaves_the_new_file_and_no_temporary_one() {
        let dir = std::env::temp_dir().join(format!("hm-folder-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        write_atomic(&dir, "a.bundle", b"first").unwrap();
        write_atomic(&dir, "a.bundle", b"second").unwrap();
        assert_eq!(fs::read(dir.join("a.bundle")).unwrap(), b"second");
        assert!(!dir.join("a.bundle.tmp").exists());
        let listed = scan(&dir).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].1.starts_with("6:"), "{listed:?}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
