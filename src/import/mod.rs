//! Readers of the files other SSH clients keep (docs/import.md): each turns the files of one
//! format into a `source::Catalogue`, which `model::import_plan` places into ours. Shared
//! pieces: `text` (bytes to text in the file's encoding), `ini`, `reg` (regedit exports),
//! `xml`, `csv`; `reveal` opens a source's protected passwords through `vault::foreign`.
//!
//! Invariants: pure, no I/O: a reader sees only the files of the request; a reader never
//! panics on any input (each is fuzzed with seeded inputs) and names a file it cannot read
//! in an `Unreadable`, never a value from it; nothing a reader does depends on the store.

pub mod csv;
pub mod ini;
pub mod mobaxterm;
pub mod mremoteng;
pub mod plan;
pub mod putty;
pub mod reg;
pub mod remmina;
pub mod reveal;
pub mod securecrt;
pub mod source;
pub mod tabular;
pub mod text;
pub mod winscp;
pub mod xml;

use crate::import::source::{Catalogue, Format, SourceFile, Unreadable};
use crate::vault::Secret;

/// Reads `files` as `format`. `passphrase` is the request's (mRemoteNG's whole-file
/// encryption needs it to read anything; other readers ignore it).
pub fn read(
    format: Format,
    files: &[SourceFile],
    passphrase: Option<&Secret>,
) -> Result<Catalogue, Unreadable> {
    match format {
        Format::MobaXterm => mobaxterm::read(files),
        Format::Putty => putty::read(files),
        Format::WinScp => winscp::read(files),
        Format::SecureCrt => securecrt::read(files),
        Format::MRemoteNg => mremoteng::read(files, passphrase),
        Format::Remmina => remmina::read(files),
        Format::TermiusCsv => tabular::read_termius(files),
        Format::Csv => tabular::read_csv(files),
    }
}
