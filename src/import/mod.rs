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

/// The text of `tests/samples/import/<path>`, the sample files the readers' tests read.
#[cfg(test)]
pub fn sample_text(path: &str) -> String {
    String::from_utf8(sample_bytes(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The bytes of `tests/samples/import/<path>`.
#[cfg(test)]
pub fn sample_bytes(path: &str) -> Vec<u8> {
    let full = format!("{}/tests/samples/import/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|err| panic!("{full}: {err}"))
}

/// The one jump of `host`, which must be an address: its host name, port, user and
/// password (the readers' tests).
#[cfg(test)]
pub fn only_address_jump(
    host: &source::SourceHost,
) -> (
    &str,
    Option<u16>,
    Option<&str>,
    Option<&source::SourceSecret>,
) {
    match &host.jumps[..] {
        [source::Jump::Address {
            hostname,
            port,
            username,
            password,
        }] => (hostname, *port, username.as_deref(), password.as_deref()),
        other => panic!("one address jump expected: {other:?}"),
    }
}

/// The value of `key` (compared ASCII-caselessly, as the registry and INI files do) among
/// `values`, the first one listed; `None` when absent or empty.
pub fn value<'v>(values: &'v [(String, String)], key: &str) -> Option<&'v str> {
    values
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(key))
        .map(|(_, value)| value.as_str())
        .filter(|value| !value.is_empty())
}

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
