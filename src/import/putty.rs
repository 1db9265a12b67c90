//! The `putty` reader (being built).

use crate::import::source::{Catalogue, SourceFile, Unreadable};

pub fn read(_files: &[SourceFile]) -> Result<Catalogue, Unreadable> {
    Ok(Catalogue::default())
}
