//! The query language over the list's memory (docs/query.md; docs/performance.md,
//! "Queries"): each term of a `q` becomes a `SlotSet`, cheapest first, and the sets are
//! intersected. Words, `tag:`, `group:` and `is:` are member sets and the search scan;
//! `host:`, `used:` and `created:` are read slot by slot among the hosts still in; the keys
//! on inherited values (`user:`, `port:`, `identity:`, `key:`, `via:`, `has:`) are judged
//! once per distinct (group, own values, flags) among the hosts still in, by the plain
//! evaluator over the effective values (store::list::effective); `notes:`, whose text the
//! memory does not hold, last, over the notes read for the hosts left (store::list::notes).
//!
//! Invariants: the answer is the set `model::query::matches` keeps host by host (a property
//! test compares them over random catalogues and queries); no term is skipped.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use rusqlite::Connection;

use crate::model::query::{host_matches, matches, Age, HostFacts, Is, Predicate, Query, Term};
use crate::store::list::effective::{Known, Resolver};
use crate::store::list::group_tree::GroupTree;
use crate::store::list::notes;
use crate::store::list::order::{time_key, NEVER, UNREADABLE};
use crate::store::list::own::NOTES;
use crate::store::list::sets::SlotSet;
use crate::store::list::table::HostTable;
use crate::store::StoreError;

/// How a term is answered, in the order terms are taken.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cost {
    /// A member set or the search scan.
    Set,
    /// A look at each host still in.
    Slot,
    /// The effective values of each distinct (group, own values, flags) still in.
    Own,
    /// The notes, read from the database for each host still in.
    Notes,
}

/// The hosts of `among` (the live ones without it) that `query` keeps, `now` in Unix seconds.
pub fn select(
    conn: &Connection,
    (hosts, tree): (&mut HostTable, &GroupTree),
    among: Option<SlotSet>,
    query: &Query,
    now: i64,
) -> Result<SlotSet, StoreError> {
    let mut terms: Vec<&Term> = query.terms.iter().collect();
    terms.sort_by_key(|term| cost(term));
    let mut set = among.unwrap_or_else(|| hosts.live.clone());
    let (mut resolver, mut notes) = (None, Vec::new());
    for term in terms {
        match cost(term) {
            Cost::Set => {
                let found = term_set(hosts, tree, term);
                set.and(&found, term.negated);
            }
            Cost::Slot => {
                let kept = set.ones().filter(|slot| {
                    let holds = term
                        .alternatives
                        .iter()
                        .any(|p| slot_holds(hosts, p, *slot, now));
                    holds != term.negated
                });
                set = SlotSet::of(hosts.seqs.len(), &kept.collect::<Vec<u32>>());
            }
            Cost::Own => {
                let resolver = match &mut resolver {
                    Some(resolver) => resolver,
                    None => resolver.insert(Resolver::load(conn, tree)?),
                };
                let kept = own_term(conn, hosts, resolver, &set, term)?;
                set = SlotSet::of(hosts.seqs.len(), &kept);
            }
            Cost::Notes => notes.push(term.clone()),
        }
    }
    if notes.is_empty() {
        return Ok(set);
    }
    // Hosts without notes are judged here (every `notes:` needle is non-empty, so only a
    // negated term holds for them); only the notes of the others are read.
    let without = Query { terms: notes };
    let empty_holds = matches(&without, &HostFacts::default()).is_some();
    let (mut kept, mut read) = (Vec::new(), Vec::new());
    for slot in set.ones() {
        match hosts.own.of(slot).1 & NOTES {
            0 if empty_holds => kept.push(hosts.seqs[slot as usize]),
            0 => {}
            _ => read.push(hosts.seqs[slot as usize]),
        }
    }
    kept.extend(notes::matching(conn, &read, &without)?);
    kept.sort_unstable();
    Ok(hosts.set_of_seqs(&kept))
}

/// The slots of `set` a term on inherited values keeps, judged once per distinct (group,
/// own values, flags).
fn own_term(
    conn: &Connection,
    hosts: &HostTable,
    resolver: &mut Resolver,
    set: &SlotSet,
    term: &Term,
) -> Result<Vec<u32>, StoreError> {
    let single = Query {
        terms: vec![term.clone()],
    };
    let mut verdicts: HashMap<Known, bool> = HashMap::new();
    let mut kept = Vec::new();
    for slot in set.ones() {
        let (combination, flags) = hosts.own.of(slot);
        let group = hosts.group_number(slot);
        let known = (group, combination, flags);
        let holds = match verdicts.get(&known) {
            Some(holds) => *holds,
            None => {
                let own = hosts.own.combination(combination);
                let facts = resolver.facts(conn, known, hosts.groups.name(group), own)?;
                let holds = matches(&single, facts).is_some();
                verdicts.insert(known, holds);
                holds
            }
        };
        if holds {
            kept.push(slot);
        }
    }
    Ok(kept)
}

/// How `term` is answered (its alternatives share one key).
fn cost(term: &Term) -> Cost {
    match term.alternatives.first() {
        Some(Predicate::Word(_) | Predicate::Tag(_) | Predicate::Group(_) | Predicate::Is(_)) => {
            Cost::Set
        }
        Some(Predicate::Host(_) | Predicate::Used(_) | Predicate::Created(_)) => Cost::Slot,
        Some(Predicate::Notes(_)) => Cost::Notes,
        _ => Cost::Own,
    }
}

/// The hosts any alternative of a `Cost::Set` term holds for (not negated).
fn term_set(hosts: &mut HostTable, tree: &GroupTree, term: &Term) -> SlotSet {
    let mut found = SlotSet::of(hosts.seqs.len(), &[]);
    for predicate in &term.alternatives {
        let set = match predicate {
            Predicate::Word(needle) => hosts.search_set(needle),
            Predicate::Tag(tag) => hosts.tag_set(tag),
            Predicate::Is(Is::Favorite) => hosts.favorites().clone(),
            Predicate::Group(path) => {
                let keys: Vec<String> = path.names.iter().map(|name| name.key.clone()).collect();
                let mut set = SlotSet::of(hosts.seqs.len(), &[]);
                for id in tree.at_path_and_below(&keys) {
                    set.or(&SlotSet::of(hosts.seqs.len(), hosts.groups.of(id)));
                }
                set
            }
            _ => continue,
        };
        found.or(&set);
    }
    found.and(&hosts.live, false);
    found
}

/// Whether a `Cost::Slot` predicate holds for the host in `slot`.
fn slot_holds(hosts: &HostTable, predicate: &Predicate, slot: u32, now: i64) -> bool {
    let at = slot as usize;
    match predicate {
        Predicate::Host(pattern) => std::str::from_utf8(hosts.keys.text.field(slot, 1))
            .is_ok_and(|hostname| host_matches(pattern, hostname)),
        Predicate::Used(age) => age_holds(*age, hosts.keys.last_used[at], now),
        Predicate::Created(age) => age_holds(*age, hosts.keys.created[at], now),
        _ => false,
    }
}

/// `model::query`'s age rule on a stored time's key: `<N` holds for a time whose whole
/// seconds are after `now - N`, `>N` for one before `now - N` (both strict, as the plain
/// evaluator compares whole seconds); `never` for no time.
fn age_holds(age: Age, key: u64, now: i64) -> bool {
    if key == NEVER || key == UNREADABLE {
        return age == Age::Never;
    }
    match age {
        Age::Never => false,
        Age::Within(seconds) => key >= key_at(now.saturating_sub(seconds).saturating_add(1)),
        Age::Older(seconds) => key < key_at(now.saturating_sub(seconds)),
    }
}

/// The key of the first millisecond of Unix second `seconds` (0 before 1970: no stored time
/// is earlier).
fn key_at(seconds: i64) -> u64 {
    let Ok(seconds) = u64::try_from(seconds) else {
        return 0;
    };
    let time = UNIX_EPOCH + Duration::from_secs(seconds);
    time_key(&humantime::format_rfc3339_millis(time).to_string()).unwrap_or(0)
}
