//! The plain evaluator: a `Query` against one host's facts, term by term, with the spans it
//! matched (docs/query.md, "Keys" says what each predicate compares). It is the oracle the
//! list's fast path is compared with, so it is written for plainness, not speed.
//!
//! Invariants: pure and total (never panics, whatever the facts); a host matches when every
//! plain term has an alternative that holds and no negated term has one; hits come from plain
//! terms only, as character offsets into the field they name.

use std::net::IpAddr;

use crate::model::fold;
use crate::model::query::value::masked;
use crate::model::query::{Age, Glob, GlobPart, Has, HostPattern, Is, Predicate, Query};

/// Everything a predicate reads about one host, effective values resolved (docs/identities.md)
/// and `now` given (the evaluator reads no clock).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFacts {
    pub name: String,
    pub hostname: String,
    pub notes: String,
    pub tags: Vec<String>,
    /// The names of the host's group and its ancestors, from the top (empty: ungrouped).
    pub group_path: Vec<String>,
    /// The ids of the same groups, in the same order (for the list's fast path, which
    /// resolves a path to a group once; the names decide here).
    pub group_ids: Vec<String>,
    /// The effective username (`None`: no level gives one).
    pub user: Option<String>,
    /// The effective port.
    pub port: u16,
    /// The effective identity's name.
    pub identity: Option<String>,
    /// The names of the keys the effective auth uses: the host's own key, or each key method
    /// of its identity.
    pub keys: Vec<String>,
    /// The names of the hosts of the effective jump chain, in order.
    pub chain: Vec<String>,
    pub has_password: bool,
    pub has_forwards: bool,
    pub is_favorite: bool,
    /// Unix seconds.
    pub last_used_at: Option<i64>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds: what `used:` and `created:` measure from.
    pub now: i64,
}

/// What a predicate matched: `start..end` in characters of the field `field` names (`name`,
/// `hostname`, `notes`); an empty range at 0 for a predicate that compares no text span, its
/// field then the key's name (`tag`, `is`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub field: &'static str,
    pub start: usize,
    pub end: usize,
}

/// The hits of a matching host, `None` when `host` does not match `query`.
pub fn matches(query: &Query, host: &HostFacts) -> Option<Vec<Hit>> {
    let mut hits = Vec::new();
    for term in &query.terms {
        let mut found = None;
        for alternative in &term.alternatives {
            if let Some(more) = holds(alternative, host) {
                found.get_or_insert_with(Vec::new).extend(more);
            }
        }
        match (term.negated, found) {
            (true, Some(_)) | (false, None) => return None,
            (false, Some(more)) => hits.extend(more),
            (true, None) => {}
        }
    }
    Some(hits)
}

/// What `GET /api/search` matches besides hosts (docs/query.md, "Search").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    Group,
    Identity,
    Key,
}

/// Whether a group, identity or key named `name` matches `query`: words look in the name
/// (as in a host's), a kind's own key (`group:` for groups, `identity:`, `key:`) compares
/// as for hosts, and any other key means the query asks for hosts only. `path` is a group's
/// names from the top, its own last (empty for the other kinds).
pub fn named_matches(query: &Query, kind: Named, name: &str, path: &[String]) -> bool {
    let caseless = |wanted: &str| fold::key(name) == wanted;
    query.terms.iter().all(|term| {
        let mut holds = None;
        for alternative in &term.alternatives {
            let this = match (alternative, kind) {
                (Predicate::Word(needle), _) => name.to_lowercase().contains(needle.as_str()),
                (Predicate::Group(wanted), Named::Group) => {
                    path.len() >= wanted.names.len()
                        && wanted
                            .names
                            .iter()
                            .zip(path)
                            .all(|(wanted, name)| fold::key(name) == wanted.key)
                }
                (Predicate::Identity(wanted), Named::Identity)
                | (Predicate::Key(wanted), Named::Key) => caseless(&wanted.key),
                _ => return false,
            };
            holds = Some(holds.unwrap_or(false) || this);
        }
        holds.is_some_and(|holds| holds != term.negated)
    })
}

/// The hits of a host the list already found to match `query`, from its name, hostname
/// and notes alone (docs/query.md, "Highlighting"): the text hits of words, `notes:` and
/// `host:` as `matches` gives them, and one empty mark for each other plain term (its
/// alternatives share one key, so which of them held does not change the mark).
pub fn hits(query: &Query, name: &str, hostname: &str, notes: &str) -> Vec<Hit> {
    let facts = HostFacts {
        name: name.to_owned(),
        hostname: hostname.to_owned(),
        notes: notes.to_owned(),
        ..HostFacts::default()
    };
    let mut hits = Vec::new();
    for term in query.terms.iter().filter(|term| !term.negated) {
        for alternative in &term.alternatives {
            match alternative {
                Predicate::Word(_) | Predicate::Notes(_) | Predicate::Host(_) => {
                    hits.extend(holds(alternative, &facts).unwrap_or_default());
                }
                other => {
                    hits.extend(mark(mark_field(other)).unwrap_or_default());
                    break;
                }
            }
        }
    }
    hits
}

/// The field a predicate without a text span marks (`holds` names the same).
fn mark_field(predicate: &Predicate) -> &'static str {
    match predicate {
        Predicate::Word(_) => "name",
        Predicate::Notes(_) => "notes",
        Predicate::Host(_) => "hostname",
        Predicate::Tag(_) => "tag",
        Predicate::Group(_) => "group",
        Predicate::User(_) => "user",
        Predicate::Port { .. } => "port",
        Predicate::Identity(_) => "identity",
        Predicate::Key(_) => "key",
        Predicate::Via(_) => "via",
        Predicate::Has(_) => "has",
        Predicate::Is(_) => "is",
        Predicate::Used(_) => "used",
        Predicate::Created(_) => "created",
    }
}

/// A hit with no text span.
fn mark(field: &'static str) -> Option<Vec<Hit>> {
    Some(vec![Hit {
        field,
        start: 0,
        end: 0,
    }])
}

/// `mark(field)` when `holds`, else `None`.
fn mark_if(holds: bool, field: &'static str) -> Option<Vec<Hit>> {
    if holds {
        mark(field)
    } else {
        None
    }
}

/// The hits of one predicate, `None` when it does not hold.
fn holds(predicate: &Predicate, host: &HostFacts) -> Option<Vec<Hit>> {
    let caseless = |name: &str, wanted: &str| fold::key(name) == wanted;
    match predicate {
        Predicate::Word(needle) => {
            let mut hits = substrings("name", &host.name, needle);
            hits.extend(substrings("hostname", &host.hostname, needle));
            (!hits.is_empty()).then_some(hits)
        }
        Predicate::Notes(needle) => {
            let hits = substrings("notes", &host.notes, needle);
            (!hits.is_empty()).then_some(hits)
        }
        Predicate::Tag(tag) => mark_if(host.tags.contains(tag), "tag"),
        Predicate::Group(path) => {
            let below = host.group_path.len() >= path.names.len()
                && path
                    .names
                    .iter()
                    .zip(&host.group_path)
                    .all(|(wanted, name)| caseless(name, &wanted.key));
            mark_if(below, "group")
        }
        Predicate::Host(pattern) => host_matches(pattern, &host.hostname).then(|| {
            let end = host.hostname.chars().count();
            vec![Hit {
                field: "hostname",
                start: 0,
                end,
            }]
        }),
        Predicate::User(user) => mark_if(host.user.as_ref() == Some(user), "user"),
        Predicate::Port { first, last } => mark_if((*first..=*last).contains(&host.port), "port"),
        Predicate::Identity(wanted) => {
            let named = host.identity.as_deref();
            mark_if(
                named.is_some_and(|name| caseless(name, &wanted.key)),
                "identity",
            )
        }
        Predicate::Key(wanted) => mark_if(
            host.keys.iter().any(|name| caseless(name, &wanted.key)),
            "key",
        ),
        Predicate::Via(wanted) => mark_if(
            host.chain.iter().any(|name| caseless(name, &wanted.key)),
            "via",
        ),
        Predicate::Has(has) => mark_if(has_holds(*has, host), "has"),
        Predicate::Is(Is::Favorite) => mark_if(host.is_favorite, "is"),
        Predicate::Used(age) => mark_if(age_holds(*age, host.last_used_at, host.now), "used"),
        Predicate::Created(age) => {
            mark_if(age_holds(*age, Some(host.created_at), host.now), "created")
        }
    }
}

fn has_holds(has: Has, host: &HostFacts) -> bool {
    match has {
        Has::Forwards => host.has_forwards,
        Has::Password => host.has_password,
        Has::Key => !host.keys.is_empty(),
        Has::Notes => !host.notes.is_empty(),
        Has::Chain => !host.chain.is_empty(),
    }
}

/// `<N`: less than N seconds before `now` (a time after `now` too); `>N`: more than N
/// seconds before; `never`: no time.
pub fn age_holds(age: Age, at: Option<i64>, now: i64) -> bool {
    match (age, at) {
        (Age::Never, at) => at.is_none(),
        (Age::Within(seconds), Some(at)) => now.saturating_sub(at) < seconds,
        (Age::Older(seconds), Some(at)) => now.saturating_sub(at) > seconds,
        (_, None) => false,
    }
}

/// Whether the hostname matches a glob (lowercased) or lies in a network.
pub fn host_matches(pattern: &HostPattern, hostname: &str) -> bool {
    match pattern {
        // ASCII (what hostnames are, validated) lowercases byte by byte: no copy of the text.
        HostPattern::Glob(glob) if hostname.is_ascii() => {
            walk(&glob.parts, hostname.as_bytes(), |c, b| {
                u32::from(c) == u32::from(b.to_ascii_lowercase())
            })
        }
        HostPattern::Glob(glob) => glob_matches(glob, &hostname.to_lowercase()),
        // An address of the other family is never equal to the network (`IpAddr`'s variants
        // differ), so `10.0.0.0/8` never finds `::ffff:10.0.0.1`.
        HostPattern::Cidr { network, prefix } => hostname
            .parse::<IpAddr>()
            .is_ok_and(|address| masked(address, *prefix) == *network),
    }
}

/// Whether the whole of `text` matches `glob`: the classic walk that, on a mismatch, lets
/// the last `*` swallow one more character (linear in the text per `*`).
pub fn glob_matches(glob: &Glob, text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    walk(&glob.parts, &text, |c, other| c == other)
}

/// The walk of `glob_matches` over any text whose items `same` compares with a character.
fn walk<T: Copy>(parts: &[GlobPart], text: &[T], same: impl Fn(char, T) -> bool) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match parts.get(p) {
            Some(GlobPart::AnyRun) => {
                star = Some((p, t));
                p += 1;
            }
            Some(GlobPart::AnyOne) => (p, t) = (p + 1, t + 1),
            Some(GlobPart::Char(c)) if same(*c, text[t]) => (p, t) = (p + 1, t + 1),
            _ => match star {
                Some((star_p, star_t)) => {
                    star = Some((star_p, star_t + 1));
                    (p, t) = (star_p + 1, star_t + 1);
                }
                None => return false,
            },
        }
    }
    parts[p.min(parts.len())..]
        .iter()
        .all(|part| *part == GlobPart::AnyRun)
}

/// Every non-overlapping place `needle` (lowercased) is in `text` lowercased with Unicode's
/// rules (as the list's `search`), as character offsets into `text` itself.
fn substrings(field: &'static str, text: &str, needle: &str) -> Vec<Hit> {
    if needle.is_empty() {
        return Vec::new();
    }
    let lowered = text.to_lowercase();
    // The original character each lowered character came from (a few lowercase to two),
    // then the end.
    let mut origin = Vec::new();
    for (index, c) in text.chars().enumerate() {
        origin.extend(std::iter::repeat_n(index, c.to_lowercase().count()));
    }
    let mut hits = Vec::new();
    for (byte, found) in lowered.match_indices(needle) {
        let first = lowered[..byte].chars().count();
        let last = first + found.chars().count() - 1;
        if let (Some(start), Some(end)) = (origin.get(first), origin.get(last)) {
            hits.push(Hit {
                field,
                start: *start,
                end: end + 1,
            });
        }
    }
    hits
}
