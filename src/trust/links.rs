//! Listing the trust store (docs/api.md, "Host keys (known_hosts)"): the entries that apply
//! to a host name or a catalogue host, paged, and which catalogue hosts each entry matches.
//!
//! Invariants: an entry matches a host exactly as OpenSSH matches it (`trust::matcher`);
//! exact names are looked up in a map, and only hashed and wildcard entries cost an HMAC or
//! a glob per catalogue host.

use std::collections::HashMap;

use crate::model::known_hosts::{self, Marker};
use crate::store::known_hosts::KnownHost;
use crate::store::{self, StoreError};
use crate::trust::matching_entries;

/// Which entries a list shows.
pub enum Filter {
    All,
    /// The entries that apply to this lookup name.
    Name(String),
    /// The entries that apply to this catalogue host's hostname and port.
    Host(String),
}

/// One page of entries, their total, and the catalogue's hosts (id, hostname, port).
pub struct Page {
    pub entries: Vec<KnownHost>,
    pub total: u64,
    pub catalogue: Vec<(String, String, u16)>,
}

/// The page of `filter`'s entries from `offset`, oldest first.
pub fn page(
    conn: &store::Conn,
    filter: &Filter,
    offset: u64,
    per_page: u64,
) -> Result<Page, StoreError> {
    let name = match filter {
        Filter::All => None,
        Filter::Name(name) => Some(name.clone()),
        Filter::Host(id) => {
            let host = store::hosts::by_id(conn, id)?;
            let port = store::inherit::Inheritance::for_host(conn, &host)?
                .resolve(&host)
                .port();
            Some(known_hosts::lookup_name(&host.hostname, port))
        }
    };
    let (entries, total) = match &name {
        None => store::known_hosts::page(conn, offset, per_page)?,
        Some(name) => {
            let matching = matching_entries(conn, name)?;
            let total = matching.len() as u64;
            let skip = usize::try_from(offset).unwrap_or(usize::MAX);
            let take = usize::try_from(per_page).unwrap_or(usize::MAX);
            (matching.into_iter().skip(skip).take(take).collect(), total)
        }
    };
    let catalogue = store::known_hosts::catalogue_names(conn)?;
    Ok(Page {
        entries,
        total,
        catalogue,
    })
}

/// The lookup names of the catalogue hosts, with their ids.
pub fn names(catalogue: &[(String, String, u16)]) -> Vec<(String, &str)> {
    catalogue
        .iter()
        .map(|(id, hostname, port)| (known_hosts::lookup_name(hostname, *port), id.as_str()))
        .collect()
}

/// The ids of the hosts of `names` that `entry` matches.
pub fn host_ids(entry: &KnownHost, names: &[(String, &str)]) -> Vec<String> {
    let matcher = crate::trust::matcher(entry);
    names
        .iter()
        .filter(|(name, _)| matcher.matches(name))
        .map(|(_, id)| (*id).to_owned())
        .collect()
}

/// For each entry, the ids of the catalogue hosts it matches. Exact names are looked up in
/// a map; hashed and wildcard entries are tested against every catalogue host.
pub fn hosts_of(entries: &[KnownHost], catalogue: &[(String, String, u16)]) -> Vec<Vec<String>> {
    let names = names(catalogue);
    let mut exact: HashMap<&str, Vec<String>> = HashMap::new();
    for (name, id) in &names {
        exact
            .entry(name.as_str())
            .or_default()
            .push((*id).to_owned());
    }
    entries
        .iter()
        .map(|entry| match entry.hashed || entry.wildcard {
            false => exact.get(entry.host.as_str()).cloned().unwrap_or_default(),
            true => host_ids(entry, &names),
        })
        .collect()
}

/// The catalogue hosts for which the store trusts the host key `public_key`: its entries
/// holding that key without a marker, matched against each host's lookup name as OpenSSH
/// would (the SSH agent names the server of a session binding by them).
pub fn trusting(conn: &store::Conn, public_key: &str) -> Result<Vec<String>, StoreError> {
    let entries: Vec<KnownHost> = store::known_hosts::all(conn)?
        .into_iter()
        .filter(|entry| entry.public_key == public_key && entry.marker == Marker::None)
        .collect();
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let matchers: Vec<_> = entries.iter().map(crate::trust::matcher).collect();
    Ok(store::known_hosts::catalogue_names(conn)?
        .into_iter()
        .filter(|(_, hostname, port)| {
            let name = known_hosts::lookup_name(hostname, *port);
            matchers.iter().any(|matcher| matcher.matches(&name))
        })
        .map(|(id, _, _)| id)
        .collect())
}
