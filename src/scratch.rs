//! Unit tests' scratch directories (compiled for tests only): one fresh directory under
//! cargo's `target/tmp` per name and process, so tests leave nothing elsewhere.
//!
//! Invariants: the directory is empty and exists when returned; its path is canonical.

use std::fs;
use std::path::PathBuf;

/// A fresh, empty directory `target/tmp/<name>-<pid>` (an old one of that name is removed).
#[allow(clippy::unwrap_used)]
pub fn fresh(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/tmp")
        .join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}
