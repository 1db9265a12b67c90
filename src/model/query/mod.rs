//! The query language over the catalogue (docs/query.md): `parse` turns a query text into a
//! checked `Query`, `describe` prints one back in canonical form, and `matches` is the plain
//! evaluator of a query against one host's facts (`HostFacts`), with the spans it matched
//! (`Hit`) for highlighting.
//!
//! Invariants: pure, no I/O, no clock (`now` comes in `HostFacts`); every value in a
//! `Predicate` is already checked and normalised (lowercased needles, caseless keys, compiled
//! globs, masked networks, durations in seconds), so evaluating never fails;
//! `parse(&describe(q)) == q` for every `q` that `parse` gives (a term's column is where it
//! was written, not what it means, so equality ignores it); a `QueryError`'s column is
//! 1-based, in characters, within `1..=chars + 1`, and its text never quotes more than the
//! faulty token.

// The canonical form is this module's own check (`parse(&describe(q)) == q`, the tests).
#[cfg(test)]
mod describe;
mod eval;
mod parse;
mod value;

#[cfg(test)]
mod tests;

use std::fmt;
use std::net::IpAddr;

// The list's fast path and the routes use these once wired.
#[allow(unused_imports)]
#[cfg(test)]
pub use describe::describe;
#[allow(unused_imports)]
pub use eval::{age_holds, hits, host_matches, matches, named_matches, Hit, HostFacts, Named};
#[allow(unused_imports)]
pub use parse::parse;

/// docs/query.md, "Limits": the longest query, in characters.
pub const MAX_CHARS: usize = 512;
/// docs/query.md, "Limits": the most terms a query holds.
pub const MAX_TERMS: usize = 32;
/// docs/query.md, "Limits": the most comma-separated alternatives in one term.
pub const MAX_ALTERNATIVES: usize = 16;

/// A checked query: every term must hold (an empty query matches every host).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Query {
    pub terms: Vec<Term>,
}

/// One term: any of its alternatives holds (none, when `negated`).
#[derive(Clone, Debug, Eq)]
pub struct Term {
    pub negated: bool,
    /// The 1-based column (in characters) the term starts at, its `-` included (the tests
    /// check it; equality leaves it out).
    #[allow(dead_code)]
    pub column: usize,
    pub alternatives: Vec<Predicate>,
}

/// Terms are equal when they mean the same: where one was written is left out.
impl PartialEq for Term {
    fn eq(&self, other: &Term) -> bool {
        self.negated == other.negated && self.alternatives == other.alternatives
    }
}

/// One checked condition on a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Predicate {
    /// A bare word: a substring of the lowercased name or hostname (the list's `search`).
    /// Holds the lowercased needle, never empty.
    Word(String),
    /// `notes:`: a substring of the lowercased notes; the lowercased needle.
    Notes(String),
    /// `tag:`: one of the host's tags, exactly (case-sensitive).
    Tag(String),
    /// `group:`: the group at this path (from the top) or one below it.
    Group(GroupPath),
    /// `host:`: the hostname by glob, or an IP literal inside a network.
    Host(HostPattern),
    /// `user:`: the effective username, exactly.
    User(String),
    /// `port:`: the effective port within `first..=last`.
    Port { first: u16, last: u16 },
    /// `identity:`: the effective identity, by name (caseless).
    Identity(Caseless),
    /// `key:`: a key the effective auth uses, by name (caseless).
    Key(Caseless),
    /// `via:`: a hop of the effective jump chain, by host name (caseless).
    Via(Caseless),
    /// `has:`.
    Has(Has),
    /// `is:`.
    Is(Is),
    /// `used:`: `last_used_at` against now.
    Used(Age),
    /// `created:`: `created_at` against now.
    Created(Age),
}

/// A name compared as names are (model::fold): its text as written (trimmed) and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caseless {
    pub text: String,
    pub key: String,
}

/// A group path from the top: each name trimmed, with its caseless key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPath {
    pub names: Vec<Caseless>,
}

/// What `host:` compares the hostname with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// A glob over the whole lowercased hostname.
    Glob(Glob),
    /// An IP literal hostname inside `network/prefix` (host bits of `network` cleared).
    Cidr { network: IpAddr, prefix: u8 },
}

/// A compiled glob: `*` any run of characters (dots too), `?` exactly one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    /// The normalised pattern (lowercased, runs of `*` as one), as `describe` prints it.
    pub text: String,
    pub parts: Vec<GlobPart>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobPart {
    /// This character.
    Char(char),
    /// `*`.
    AnyRun,
    /// `?`.
    AnyOne,
}

/// The values of `has:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Has {
    Forwards,
    Password,
    Key,
    Notes,
    Chain,
}

/// The values of `is:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Is {
    Favorite,
}

/// A `used:`/`created:` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Age {
    /// `<N`: less than this many seconds ago (a time in the future included).
    Within(i64),
    /// `>N`: more than this many seconds ago.
    Older(i64),
    /// `never` (`used:` only): no time at all.
    Never,
}

/// A refused query: where (1-based column in characters), what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    pub column: usize,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)?;
        if !self.hint.is_empty() {
            write!(f, " ({})", self.hint)?;
        }
        Ok(())
    }
}
