//! What inheritance reads: every group's parent and defaults and every identity's public
//! traits, loaded once per request and asked for any number of hosts
//! (docs/identities.md, "Host fields that inherit"; the walk itself is model::inherit).
//!
//! Invariants: reads only, never a secret (an identity's methods are read as type and key
//! id); the walk up the groups stops after `MAX_DEPTH` levels, so even a corrupt cycle of
//! parents cannot make it loop.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use crate::model::group::MAX_DEPTH;
use crate::model::host::Host;
use crate::model::inherit::{
    resolve, Effective, GroupDefaults, GroupLevel, IdentityTraits, Source,
};
use crate::model::interop::MAX_ROUTE_HOPS;
use crate::store::StoreError;

const INSERT_HOST_CHANGE: &str = "INSERT INTO changes (at, kind, id, op) \
     VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'host', ?1, 'updated')";

/// Groups (parent and defaults) and identities (traits), as stored when loaded.
#[derive(Clone, Debug, Default)]
pub struct Inheritance {
    groups: HashMap<String, (Option<String>, GroupDefaults)>,
    identities: HashMap<String, IdentityTraits>,
}

impl Inheritance {
    /// Reads every group's defaults and every identity's traits (three queries).
    pub fn load(conn: &Connection) -> Result<Inheritance, StoreError> {
        let groups = crate::store::groups::all(conn)?;
        Inheritance::with_groups(conn, groups.iter())
    }

    /// `load` with the groups given (the list's memory keeps them all, store::list), the
    /// identities' traits read (two queries).
    pub fn with_groups<'a>(
        conn: &Connection,
        groups: impl Iterator<Item = &'a crate::model::group::Group>,
    ) -> Result<Inheritance, StoreError> {
        let groups = groups
            .map(|group| {
                let parent = group.parent_id.clone();
                (group.id.clone(), (parent, group.defaults.clone()))
            })
            .collect();
        Ok(Inheritance {
            groups,
            identities: identity_traits(conn)?,
        })
    }

    /// What resolving `host` alone needs: its group and the groups above it, and the
    /// identities the host and those groups name (a few queries, whatever the size of the
    /// catalogue; `load` reads everything, for many hosts at once).
    pub fn for_host(conn: &Connection, host: &Host) -> Result<Inheritance, StoreError> {
        let groups: HashMap<String, (Option<String>, GroupDefaults)> = match &host.group_id {
            Some(group_id) => crate::store::groups::lineage(conn, group_id)?
                .into_iter()
                .map(|group| (group.id, (group.parent_id, group.defaults)))
                .collect(),
            None => HashMap::new(),
        };
        let named = groups
            .values()
            .filter_map(|(_, defaults)| defaults.identity_id.as_deref())
            .chain(host.identity_id.as_deref());
        let mut identities = HashMap::new();
        for id in named {
            if identities.contains_key(id) {
                continue;
            }
            match crate::store::identities::by_id(conn, id) {
                Ok(identity) => {
                    identities.insert(id.to_owned(), traits_of(&identity));
                }
                Err(StoreError::IdentityNotFound) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(Inheritance { groups, identities })
    }

    /// The groups from `group_id` up, nearest first.
    pub fn levels(&self, group_id: Option<&str>) -> Vec<GroupLevel<'_>> {
        let mut levels = Vec::new();
        let mut next = group_id;
        while let Some(id) = next {
            let Some((key, (parent, defaults))) = self.groups.get_key_value(id) else {
                break;
            };
            if levels.len() >= MAX_DEPTH {
                break;
            }
            levels.push(GroupLevel { id: key, defaults });
            next = parent.as_deref();
        }
        levels
    }

    /// The port a host of `group_id` that sets none gets: the nearest group default, else 22.
    pub fn port_for(&self, group_id: Option<&str>) -> u16 {
        self.levels(group_id)
            .into_iter()
            .find_map(|level| level.defaults.port)
            .unwrap_or(crate::model::inherit::DEFAULT_PORT)
    }

    /// Every connection field of `host` with its source.
    pub fn resolve(&self, host: &Host) -> Effective {
        resolve(host, &self.levels(host.group_id.as_deref()), |id| {
            self.identities.get(id)
        })
    }
}

impl Inheritance {
    /// The hosts of the full route through `chain` in `ssh -J` order, each hop's own
    /// effective chain first (a hop may inherit its chain too). `None` when the chains loop
    /// or the route passes `MAX_ROUTE_HOPS`: inherited chains are not judged when written.
    pub fn route(
        &self,
        conn: &Connection,
        chain: &[String],
    ) -> Result<Option<Vec<Host>>, StoreError> {
        let mut hosts: HashMap<String, Host> = HashMap::new();
        let mut chains: HashMap<String, Vec<String>> = HashMap::new();
        let mut frontier: Vec<String> = chain.to_vec();
        while let Some(id) = frontier.pop() {
            if hosts.contains_key(&id) || hosts.len() > MAX_ROUTE_HOPS {
                continue;
            }
            let host = crate::store::hosts::by_id(conn, &id)?;
            let own = self.resolve(&host).jump_host_ids.value;
            frontier.extend(own.iter().cloned());
            if !own.is_empty() {
                chains.insert(id.clone(), own);
            }
            hosts.insert(id, host);
        }
        let Some(ids) = crate::model::interop::route(chain, &chains) else {
            return Ok(None);
        };
        Ok(Some(
            ids.iter().filter_map(|id| hosts.get(id).cloned()).collect(),
        ))
    }
}

/// A field a group resolves through its own defaults and the identities they name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupField {
    Username,
    Identity,
}

impl Inheritance {
    /// The ids of the groups whose hosts, when they set nothing themselves, get `value` for
    /// `field`: walking up from the group, the first level that sets it gives it.
    pub fn groups_giving(&self, field: GroupField, value: &str) -> Vec<String> {
        self.groups
            .keys()
            .filter(|id| {
                let found = self
                    .levels(Some(id.as_str()))
                    .into_iter()
                    .find_map(|level| {
                        let defaults = level.defaults;
                        match field {
                            GroupField::Identity => defaults.identity_id.clone(),
                            GroupField::Username => defaults.username.clone().or_else(|| {
                                let identity = defaults.identity_id.as_deref()?;
                                self.identities.get(identity)?.username.clone()
                            }),
                        }
                    });
                found.as_deref() == Some(value)
            })
            .cloned()
            .collect()
    }

    /// The ids of the identities whose username is `username` (`Some`), or that set none
    /// (`None`).
    pub fn identities_with_username(&self, username: Option<&str>) -> Vec<String> {
        self.identities
            .iter()
            .filter(|(_, traits)| traits.username.as_deref() == username)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Of `hosts`, the ids of those whose effective values differ between `before` and
/// `after`, in order, and, with `secrets_of` an identity id, those whose username or auth
/// comes from that identity (a new password changes no value a view shows, but every host
/// that connects with it). The first host that `after` leaves with no username or no auth
/// is an error naming that field and how many hosts it leaves so.
pub fn followers(
    hosts: &[Host],
    before: &Inheritance,
    after: &Inheritance,
    secrets_of: Option<&str>,
) -> Result<Vec<String>, (&'static str, usize)> {
    let mut changed = Vec::new();
    let mut stranded: Option<(&'static str, usize)> = None;
    for host in hosts {
        let (was, is) = (before.resolve(host), after.resolve(host));
        if let Some(field) = is.missing() {
            let count = stranded.map_or(0, |(_, count)| count);
            stranded = Some((stranded.map_or(field, |(first, _)| first), count + 1));
            continue;
        }
        let value = |effective: &Effective| {
            let auth = effective.auth.as_ref().map(|auth| auth.value.clone());
            (effective.flatten(host), auth)
        };
        let draws = |source: Option<&Source>| match (source, secrets_of) {
            (Some(Source::Identity { id, .. }), Some(changed)) => id == changed,
            _ => false,
        };
        let from_identity = draws(is.username.as_ref().map(|field| &field.source))
            || draws(is.auth.as_ref().map(|field| &field.source));
        if from_identity || value(&was) != value(&is) {
            changed.push(host.id.clone());
        }
    }
    match stranded {
        Some(stranded) => Err(stranded),
        None => Ok(changed),
    }
}

/// One change-feed entry (`host` `updated`) for each host whose effective values followed a
/// change of a group's defaults or an identity, without touching the hosts' own rows or
/// revisions (docs/identities.md, "Rotation in one call"). Caller holds the transaction.
pub fn log_followers(conn: &Connection, host_ids: &[String]) -> Result<(), StoreError> {
    let mut insert = conn.prepare_cached(INSERT_HOST_CHANGE)?;
    for id in host_ids {
        insert.execute(params![id])?;
    }
    Ok(())
}

fn identity_traits(conn: &Connection) -> Result<HashMap<String, IdentityTraits>, StoreError> {
    Ok(crate::store::identities::list(conn)?
        .into_iter()
        .map(|identity| (identity.id.clone(), traits_of(&identity)))
        .collect())
}

/// What the walk sees of an identity: its username and its methods' public view.
fn traits_of(identity: &crate::model::identity::Identity) -> IdentityTraits {
    let auth = crate::model::identity::auth_view(&identity.fields.auth);
    IdentityTraits {
        username: identity.fields.username.clone(),
        auth: auth.as_array().cloned().unwrap_or_default(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rusqlite::params;
    use serde_json::json;

    use crate::model::group::NewGroup;
    use crate::model::inherit::GroupDefaults;
    use crate::model::name::Name;
    use crate::store::hosts::{insert, new_host_for_tests};
    use crate::store::inherit::Inheritance;
    use crate::store::{open_in_memory, StoreError};

    fn group(tx: &rusqlite::Connection, id: &str, parent: Option<&str>, defaults: GroupDefaults) {
        let group = NewGroup {
            name: Name::from_text(id).unwrap(),
            parent_id: parent.map(str::to_owned),
            color: String::new(),
            icon: String::new(),
            defaults: None,
        };
        crate::store::groups::insert(tx, id, &group).unwrap();
        crate::store::groups::write_defaults(tx, id, &defaults).unwrap();
    }

    /// Resolving one host from its own lineage (`for_host`, what writes and `connect` use)
    /// gives what resolving it among every group and identity (`load`) gives.
    #[test]
    fn one_hosts_lineage_resolves_as_the_whole_catalogue_does() {
        let db = open_in_memory().unwrap();
        db.write(|tx| {
            tx.execute(
                "INSERT INTO identities (id, name, name_key, fold_key, username, created_at,
                 updated_at) VALUES ('i', 'i', 'i', 'i', 'from-identity', 't', 't')",
                params![],
            )?;
            tx.execute(
                "INSERT INTO identity_methods (identity_id, position, type) VALUES ('i', 0, 'agent')",
                params![],
            )?;
            let top = GroupDefaults {
                username: Some("top".into()),
                port: Some(2201),
                ssh_options: vec!["Compression yes".into()],
                ..GroupDefaults::default()
            };
            group(tx, "top", None, top);
            let middle = GroupDefaults {
                identity_id: Some("i".into()),
                ..GroupDefaults::default()
            };
            group(tx, "middle", Some("top"), middle);
            group(tx, "bottom", Some("middle"), GroupDefaults::default());
            group(tx, "elsewhere", None, GroupDefaults {
                username: Some("other".into()),
                ..GroupDefaults::default()
            });
            let hosts = [
                json!({"group_id": "bottom", "username": null, "auth": null, "port": null}),
                json!({"group_id": "top", "port": null}),
                json!({"username": null, "identity_id": "i", "auth": null}),
                json!({}),
            ];
            let everything = Inheritance::load(tx)?;
            for (n, extra) in hosts.into_iter().enumerate() {
                let stored = insert(tx, &format!("h{n}"), &new_host_for_tests("h", "h", extra), None)?;
                let alone = Inheritance::for_host(tx, &stored)?;
                assert_eq!(alone.resolve(&stored), everything.resolve(&stored), "host {n}");
            }
            let deep = crate::store::hosts::by_id(tx, "h0")?;
            let effective = Inheritance::for_host(tx, &deep)?.resolve(&deep);
            assert_eq!(effective.username(), Some("from-identity"));
            assert_eq!(effective.port(), 2201);
            Ok::<_, StoreError>(())
        })
        .unwrap();
    }
}
