//! The plan of an import (docs/import.md, "How a source becomes hosts" and "Re-import"):
//! which folder, credential object and session becomes which group, identity and host (a new
//! one, or one made by an earlier import, or an identical one already here), and which of
//! its fields this import writes, keeps or leaves.
//!
//! Invariants: pure, no I/O: the stored catalogue and the import records are handed in, and
//! new ids are made by the caller's function; every field the source owns is compared three
//! ways (here, last import, source), so an edit made here is never overwritten; every item of
//! the catalogue gets exactly one report item.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::import::source::{Catalogue, Jump, SourceAuth, SourceHost, SourceSecret};
use crate::model::environment::EnvValue;
use crate::model::fold;
use crate::model::group::Group;
use crate::model::host::Host;
use crate::model::identity::Identity;
use crate::model::inherit::DEFAULT_PORT;

/// What an import record is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Host,
    Group,
    Identity,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Group => "group",
            Kind::Identity => "identity",
        }
    }
}

/// An earlier import's record of one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub object_id: String,
    pub fields: Map<String, Value>,
}

/// What the plan is made against, read in one transaction.
#[derive(Default)]
pub struct Stored {
    pub groups: Vec<Group>,
    pub hosts: HashMap<String, Host>,
    /// Each host's own forward rules as directives, in order.
    pub host_rules: HashMap<String, Vec<String>>,
    pub identities: Vec<Identity>,
    /// Key names folded (docs/api.md, Keys) -> key id.
    pub key_names: HashMap<String, String>,
    pub records: HashMap<(Kind, String), Record>,
    /// SHA-256 of each host's and identity's sealed password, by object id.
    pub password_digests: HashMap<String, String>,
}

/// The request's choices that shape the plan.
pub struct Options<'a> {
    pub parent_group_id: Option<&'a str>,
    /// For sessions that name no user and inherit none.
    pub default_user: &'a str,
    pub import_secrets: bool,
}

/// One entry of the answer's `items`.
#[derive(Clone, Debug, Serialize)]
pub struct Item {
    pub source_id: String,
    pub name: String,
    pub kind: Kind,
    pub status: Status,
    pub id: Option<String>,
    pub group_path: String,
    pub reason: Option<String>,
    pub unmapped: Vec<String>,
    pub secret: SecretStatus,
    pub kept_fields: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Created,
    Updated,
    Unchanged,
    KeptLocal,
    Skipped,
    Invalid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SecretStatus {
    Imported,
    Skipped,
    Missing,
    None,
}

/// A write the plan asks for: an object's id, whether it is new, the fields to set (all of
/// them for a new object, the changed ones otherwise), and the record to keep.
pub struct Write<'a> {
    pub item: usize,
    pub kind: Kind,
    pub id: String,
    pub existing: bool,
    pub set: Map<String, Value>,
    pub record: Map<String, Value>,
    /// The password to reveal and store (only with secrets imported and the field not kept).
    pub secret: Option<&'a SourceSecret>,
    /// The stored password is the last import's: the caller compares it with the source's
    /// and writes only when they differ.
    pub compare_secret: bool,
}

/// The whole plan: writes in order (identities, groups parents first, hosts; then each
/// host's chain, which may name hosts created after it).
pub struct Plan<'a> {
    pub items: Vec<Item>,
    pub writes: Vec<Write<'a>>,
    /// Host id -> its chain of host ids (written after every host exists).
    pub chains: Vec<(usize, String, Vec<String>)>,
}

/// The source id prefix of a host made for a jump given only as an address.
const JUMP_PREFIX: &str = "jump:";

/// docs/import.md, "Jump hosts → chains": each jump given as an address becomes the session of
/// this import at that address (host name caselessly, port, user when given), else a host of
/// its own (`jump:user@host:port`, in the folder of the first session that uses it, with the
/// jump's password). Every such jump is then a `Jump::Session`.
pub fn add_jump_hosts(catalogue: &mut Catalogue) {
    let mut made: Vec<SourceHost> = Vec::new();
    for index in 0..catalogue.hosts.len() {
        let jumps = std::mem::take(&mut catalogue.hosts[index].jumps);
        let group_path = catalogue.hosts[index].group_path.clone();
        let mut resolved = Vec::with_capacity(jumps.len());
        for jump in jumps {
            let Jump::Address {
                hostname,
                port,
                username,
                password,
            } = jump
            else {
                resolved.push(jump);
                continue;
            };
            let at = |host: &SourceHost| {
                host.skipped.is_none()
                    && host.invalid.is_none()
                    && host.hostname.trim().eq_ignore_ascii_case(hostname.trim())
                    && host.port.unwrap_or(DEFAULT_PORT) == port.unwrap_or(DEFAULT_PORT)
                    && (username.is_none() || host.username == username)
            };
            if let Some(host) = catalogue.hosts.iter().chain(&made).find(|host| at(host)) {
                resolved.push(Jump::Session(host.source_id.clone()));
                continue;
            }
            let name = format!(
                "{}{}:{}",
                username
                    .as_deref()
                    .map(|user| format!("{user}@"))
                    .unwrap_or_default(),
                match hostname.trim() {
                    host if host.contains(':') => format!("[{host}]"),
                    host => host.to_owned(),
                },
                port.unwrap_or(DEFAULT_PORT)
            );
            let source_id = format!("{JUMP_PREFIX}{name}");
            resolved.push(Jump::Session(source_id.clone()));
            made.push(SourceHost {
                source_id,
                name,
                group_path: group_path.clone(),
                hostname,
                port,
                username,
                auth: match password {
                    Some(secret) => SourceAuth::Password(Some(*secret)),
                    None => SourceAuth::Unspecified,
                },
                ..SourceHost::default()
            });
        }
        catalogue.hosts[index].jumps = resolved;
    }
    catalogue.hosts.extend(made);
}

/// Makes the plan of importing `catalogue` (format `format`) into `stored`.
pub fn plan<'a>(
    catalogue: &'a Catalogue,
    stored: &Stored,
    options: &Options<'_>,
    new_id: &mut dyn FnMut() -> String,
) -> Plan<'a> {
    let mut planner = Planner {
        stored,
        options,
        plan: Plan {
            items: Vec::new(),
            writes: Vec::new(),
            chains: Vec::new(),
        },
        group_ids: HashMap::new(),
        identity_ids: HashMap::new(),
        host_ids: HashMap::new(),
        taken_identity_names: stored
            .identities
            .iter()
            .map(|identity| identity.fields.name.fold_key().to_owned())
            .collect(),
        group_defaults: HashMap::new(),
        by_hostname: by_hostname(stored),
    };
    // Identities first: a folder's defaults may name one.
    planner.identities(catalogue, new_id);
    planner.groups(catalogue, new_id);
    planner.hosts(catalogue, new_id);
    planner.plan
}

struct Planner<'s, 'o, 'a> {
    stored: &'s Stored,
    options: &'o Options<'o>,
    plan: Plan<'a>,
    /// Folder path (joined with `/`) -> group id.
    group_ids: HashMap<Vec<String>, String>,
    identity_ids: HashMap<String, String>,
    host_ids: HashMap<String, String>,
    taken_identity_names: HashSet<String>,
    /// Folder path -> whether its defaults give a user, and an identity.
    group_defaults: HashMap<Vec<String>, (bool, bool)>,
    /// Stored hosts by host name (ASCII-lowercased), oldest first: what a session that no
    /// import made may match, found without a scan of the catalogue.
    by_hostname: HashMap<String, Vec<&'s Host>>,
}

impl<'s, 'o, 'a> Planner<'s, 'o, 'a> {
    /// Every folder the catalogue names (its own and each host's), parents first.
    fn groups(&mut self, catalogue: &'a Catalogue, new_id: &mut dyn FnMut() -> String) {
        let mut paths: Vec<Vec<String>> = Vec::new();
        let mut seen: HashSet<Vec<String>> = HashSet::new();
        let named = catalogue
            .groups
            .iter()
            .map(|group| &group.path)
            .chain(catalogue.hosts.iter().map(|host| &host.group_path));
        for path in named {
            for depth in 1..=path.len() {
                let prefix = path[..depth].to_vec();
                if seen.insert(prefix.clone()) {
                    paths.push(prefix);
                }
            }
        }
        for path in paths {
            let source = catalogue.groups.iter().find(|group| group.path == path);
            self.group(&path, source, new_id);
        }
    }

    fn group(
        &mut self,
        path: &[String],
        source: Option<&crate::import::source::SourceGroup>,
        new_id: &mut dyn FnMut() -> String,
    ) {
        let Some((name, above)) = path.split_last() else {
            return;
        };
        let parent = match above.is_empty() {
            true => self.options.parent_group_id.map(str::to_owned),
            false => self.group_ids.get(above).cloned(),
        };
        let source_id = path.join("/");
        let mut item = self.item(Kind::Group, &source_id, name, &above.join("/"));
        if let Some(source) = source {
            item.unmapped = source.unmapped.clone();
        }
        let mut wanted = Map::new();
        wanted.insert("name".into(), json!(name.trim()));
        wanted.insert("parent_id".into(), json!(parent));
        if let Some(source) = source {
            let identity = source
                .identity
                .as_ref()
                .and_then(|id| self.identity_ids.get(id));
            self.group_defaults.insert(
                path.to_vec(),
                (
                    source.username.is_some() || identity.is_some(),
                    identity.is_some(),
                ),
            );
            if source.username.is_some() || source.port.is_some() || identity.is_some() {
                wanted.insert(
                    "defaults".into(),
                    json!({"username": source.username, "port": source.port,
                           "identity_id": identity}),
                );
            }
        }
        let record = self.stored.records.get(&(Kind::Group, source_id.clone()));
        let live = live(record, &self.stored.groups, |group| &group.id);
        let same_name = || {
            let key = fold::key(name.trim());
            self.stored
                .groups
                .iter()
                .find(|group| group.parent_id == parent && fold::key(&group.name) == key)
        };
        let target = live.or_else(same_name);
        if let Some(group) = target {
            // Names compare caselessly (docs/api.md, Groups): the one here is the same name.
            if fold::key(&group.name) == fold::key(name.trim()) {
                wanted.insert("name".into(), json!(group.name));
            }
        }
        let index = self.plan.items.len();
        let (id, existing, current) = match target {
            Some(group) => (group.id.clone(), true, group_fields(group, &wanted)),
            None => (new_id(), false, Map::new()),
        };
        let last = match (live, record) {
            (Some(_), Some(record)) => record.fields.clone(),
            // Adopted (same name here, not imported): what differs counts as edited here.
            _ => wanted.clone(),
        };
        self.group_ids.insert(path.to_vec(), id.clone());
        let merged = merge(&current, &last, &wanted, existing);
        item.status = merged.status(existing);
        item.kept_fields = merged.kept.clone();
        item.id = Some(id.clone());
        self.plan.items.push(item);
        self.plan.writes.push(Write {
            item: index,
            kind: Kind::Group,
            id,
            existing,
            set: merged.set,
            record: wanted,
            secret: None,
            compare_secret: false,
        });
    }

    fn identities(&mut self, catalogue: &'a Catalogue, new_id: &mut dyn FnMut() -> String) {
        for source in &catalogue.identities {
            let mut item = self.item(Kind::Identity, &source.source_id, &source.name, "");
            item.unmapped = source.unmapped.clone();
            item.secret = match (&source.password, self.options.import_secrets) {
                (None, _) => SecretStatus::None,
                (Some(_), true) => SecretStatus::Missing,
                (Some(_), false) => SecretStatus::Skipped,
            };
            let record = self
                .stored
                .records
                .get(&(Kind::Identity, source.source_id.clone()));
            let live = live(record, &self.stored.identities, |identity| &identity.id);
            let adopted = || {
                let key = fold::key(source.name.trim());
                self.stored.identities.iter().find(|identity| {
                    identity.fields.name.fold_key() == key
                        && identity.fields.username == source.username
                })
            };
            let target = live.or_else(adopted);
            let name = match target {
                Some(identity) => identity.fields.name.as_str().to_owned(),
                None => self.free_identity_name(&source.name),
            };
            let mut wanted = Map::new();
            wanted.insert("name".into(), json!(name));
            wanted.insert("username".into(), json!(source.username));
            let auth = match source.password {
                Some(_) => "password",
                None => "agent",
            };
            wanted.insert("auth".into(), json!(auth));
            let (id, existing, current) = match target {
                Some(identity) => (identity.id.clone(), true, identity_fields(identity)),
                None => (new_id(), false, Map::new()),
            };
            let last = match (live, record) {
                (Some(_), Some(record)) => record.fields.clone(),
                _ => wanted.clone(),
            };
            let index = self.plan.items.len();
            self.identity_ids
                .insert(source.source_id.clone(), id.clone());
            let merged = merge(&current, &last, &wanted, existing);
            item.status = merged.status(existing);
            item.kept_fields = merged.kept.clone();
            item.id = Some(id.clone());
            self.plan.items.push(item);
            let mut write = Write {
                item: index,
                kind: Kind::Identity,
                id,
                existing,
                set: merged.set,
                record: wanted,
                secret: None,
                compare_secret: false,
            };
            self.secret(&mut write, source.password.as_ref(), record);
            self.plan.writes.push(write);
        }
    }

    fn free_identity_name(&mut self, wanted: &str) -> String {
        let wanted = wanted.trim();
        let name = match self.taken_identity_names.contains(&fold::key(wanted)) {
            false => crate::model::name::Name::from_text(wanted).unwrap_or_else(|_| {
                crate::model::name::Name::free("imported", &self.taken_identity_names)
            }),
            true => crate::model::name::Name::free(wanted, &self.taken_identity_names),
        };
        self.taken_identity_names.insert(name.fold_key().to_owned());
        name.as_str().to_owned()
    }

    fn hosts(&mut self, catalogue: &'a Catalogue, new_id: &mut dyn FnMut() -> String) {
        // Ids first: a chain may name a session listed after it.
        let mut targets = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for source in &catalogue.hosts {
            let repeated = !seen.insert(&source.source_id);
            let target = match (&source.skipped, &source.invalid) {
                (None, None) if !repeated => Some(self.host_target(source, new_id)),
                _ => None,
            };
            if let Some((id, _)) = &target {
                self.host_ids.insert(source.source_id.clone(), id.clone());
            }
            targets.push(target);
        }
        for (source, target) in catalogue.hosts.iter().zip(targets) {
            self.host(source, target);
        }
    }

    /// The host a session becomes: the one an earlier import made (even when deleted here:
    /// the caller sees it is gone), else an identical one here, else a new one.
    fn host_target(
        &self,
        source: &SourceHost,
        new_id: &mut dyn FnMut() -> String,
    ) -> (String, Option<&'s Host>) {
        if let Some(record) = self
            .stored
            .records
            .get(&(Kind::Host, source.source_id.clone()))
        {
            let live = self.stored.hosts.get(&record.object_id);
            return (record.object_id.clone(), live);
        }
        let jump = source.source_id.starts_with(JUMP_PREFIX);
        let name = fold::key(source.name.trim());
        let hostname = source.hostname.trim().to_ascii_lowercase();
        let candidates = self.by_hostname.get(&hostname).map(Vec::as_slice);
        let same = candidates.unwrap_or_default().iter().copied().find(|host| {
            (jump || fold::key(&host.name) == name)
                && host.port == source.port.or(host.port)
                && (source.username.is_none() || host.username == source.username)
        });
        match same {
            Some(host) => (host.id.clone(), Some(host)),
            None => (new_id(), None),
        }
    }

    fn host(&mut self, source: &'a SourceHost, target: Option<(String, Option<&'s Host>)>) {
        let path = source.group_path.join("/");
        let mut item = self.item(Kind::Host, &source.source_id, &source.name, &path);
        item.unmapped = source.unmapped.clone();
        item.secret = match source_password(source) {
            None => SecretStatus::None,
            Some(_) if self.options.import_secrets => SecretStatus::Missing,
            Some(_) => SecretStatus::Skipped,
        };
        let Some((id, current)) = target else {
            item.status = match source.skipped {
                Some(_) => Status::Skipped,
                None => Status::Invalid,
            };
            item.reason = source.skipped.clone().or_else(|| source.invalid.clone());
            if item.reason.is_none() {
                item.reason = Some(format!(
                    "another session of this import has the source id {}",
                    source.source_id
                ));
            }
            if item.secret == SecretStatus::Missing {
                item.secret = SecretStatus::Skipped;
            }
            self.plan.items.push(item);
            return;
        };
        let record = self
            .stored
            .records
            .get(&(Kind::Host, source.source_id.clone()));
        if current.is_none() && record.is_some() {
            item.status = Status::KeptLocal;
            item.reason = Some("deleted here since the last import".into());
            item.id = Some(id);
            if item.secret == SecretStatus::Missing {
                item.secret = SecretStatus::Skipped;
            }
            self.plan.items.push(item);
            return;
        }
        let mut wanted = self.host_wanted(source, &mut item);
        if let Some(host) = current {
            // Names and host names match caselessly: the spelling here is kept.
            if fold::key(&host.name) == fold::key(source.name.trim()) {
                wanted.insert("name".into(), json!(host.name));
            }
            if host.hostname.eq_ignore_ascii_case(source.hostname.trim()) {
                wanted.insert("hostname".into(), json!(host.hostname));
            }
        }
        let existing = current.is_some();
        let current_fields = current
            .map(|host| self.host_fields(host))
            .unwrap_or_default();
        // A host already here that no import made: its differing fields count as edits
        // made here (the source's values are taken as what it was imported with).
        let last = match record {
            Some(record) => record.fields.clone(),
            None => wanted.clone(),
        };
        let merged = merge(&current_fields, &last, &wanted, existing);
        item.status = merged.status(existing);
        item.kept_fields = merged.kept.clone();
        item.id = Some(id.clone());
        let index = self.plan.items.len();
        self.plan.items.push(item);
        let chain: Vec<String> = self.chain(source);
        if !chain.is_empty() || merged.set.contains_key("jump_host_ids") {
            if let Some(Value::Array(_)) = merged.set.get("jump_host_ids") {
                self.plan.chains.push((index, id.clone(), chain));
            }
        }
        let mut write = Write {
            item: index,
            kind: Kind::Host,
            id,
            existing,
            set: merged.set,
            record: wanted,
            secret: None,
            compare_secret: false,
        };
        write.set.remove("jump_host_ids");
        self.secret(&mut write, source_password(source), record);
        self.plan.writes.push(write);
    }

    /// Decides what to do with a source's password: nothing without `secrets: "import"`;
    /// on a new object, store it; on one whose password is still the last import's (same
    /// sealed bytes), compare and store when it differs; on one whose password was changed
    /// here, keep it.
    fn secret(
        &mut self,
        write: &mut Write<'a>,
        secret: Option<&'a SourceSecret>,
        record: Option<&Record>,
    ) {
        let Some(secret) = secret else {
            return;
        };
        if !self.options.import_secrets {
            return;
        }
        let now = self.stored.password_digests.get(&write.id);
        let last = record
            .and_then(|record| record.fields.get("password"))
            .and_then(Value::as_str);
        match (write.existing, now, last) {
            (false, _, _) | (true, None, None) => write.secret = Some(secret),
            (true, Some(now), Some(last)) if now == last => {
                write.secret = Some(secret);
                write.compare_secret = true;
            }
            // Set here (before the first import, or since the last), or removed here since
            // the last import: the edit made here is kept.
            _ => self.kept(write.item, "password"),
        }
    }

    fn kept(&mut self, item: usize, field: &str) {
        if let Some(item) = self.plan.items.get_mut(item) {
            item.kept_fields.push(field.to_owned());
            item.secret = SecretStatus::Skipped;
            if item.status == Status::Unchanged {
                item.status = Status::KeptLocal;
            }
        }
    }

    /// The hosts of the session's chain that this import knows (hops it cannot place are
    /// reported in `unmapped`).
    fn chain(&self, source: &SourceHost) -> Vec<String> {
        source
            .jumps
            .iter()
            .filter_map(|jump| match jump {
                Jump::Session(id) => self.host_ids.get(id).cloned(),
                Jump::Address { .. } => None,
            })
            .collect()
    }

    /// The fields the source gives the host, in the shape `host_fields` reads them.
    fn host_wanted(&self, source: &SourceHost, item: &mut Item) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(source.name.trim()));
        fields.insert("hostname".into(), json!(source.hostname.trim()));
        fields.insert("port".into(), json!(source.port));
        let group = self.group_ids.get(&source.group_path).cloned();
        let group = group.or_else(|| self.options.parent_group_id.map(str::to_owned));
        let identity = source
            .identity
            .as_ref()
            .and_then(|id| self.identity_ids.get(id));
        let inherits_user = identity.is_some() || self.group_gives(source).0;
        let username = match &source.username {
            Some(user) => Some(user.clone()),
            None if inherits_user => None,
            None => Some(self.options.default_user.to_owned()),
        };
        fields.insert("username".into(), json!(username));
        let (auth, key_id) = self.auth(source, item);
        fields.insert("auth".into(), json!(auth));
        fields.insert("key_id".into(), json!(key_id));
        fields.insert("identity_id".into(), json!(identity));
        fields.insert("group_id".into(), json!(group));
        let mut chain = Vec::new();
        for jump in &source.jumps {
            match jump {
                Jump::Session(id) => match self.host_ids.get(id) {
                    Some(host) => chain.push(json!(host)),
                    None => item
                        .unmapped
                        .push(format!("jump host: the session {id} is not in this import")),
                },
                Jump::Address {
                    hostname,
                    port,
                    username,
                    ..
                } => item.unmapped.push(format!(
                    "jump host: {}{hostname}{}: add it as a host and set the chain",
                    username
                        .as_deref()
                        .map(|user| format!("{user}@"))
                        .unwrap_or_default(),
                    port.map(|port| format!(":{port}")).unwrap_or_default(),
                )),
            }
        }
        fields.insert("jump_host_ids".into(), Value::Array(chain));
        let mut tags = source.tags.clone();
        tags.sort();
        tags.dedup();
        fields.insert("tags".into(), json!(tags));
        fields.insert("notes".into(), json!(source.notes));
        fields.insert("remote_command".into(), json!(source.remote_command));
        let env: Vec<Value> = source
            .environment
            .iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect();
        fields.insert("set_env".into(), Value::Array(env));
        fields.insert("forwards".into(), json!(source.forwards));
        if let Some(file) = &source.certificate_file {
            item.unmapped.push(format!(
                "certificate file {file}: attach it to the key (POST /api/keys/<id>/certificate)"
            ));
        }
        fields
    }

    /// Whether a folder of the session (it or one above) gives hosts a user, and an identity
    /// (its group's defaults).
    fn group_gives(&self, source: &SourceHost) -> (bool, bool) {
        (1..=source.group_path.len())
            .filter_map(|depth| self.group_defaults.get(&source.group_path[..depth]))
            .fold(
                (false, false),
                |(user, identity), (gives_user, gives_identity)| {
                    (user || *gives_user, identity || *gives_identity)
                },
            )
    }

    /// `auth` and `key_id` of a session (docs/import.md, "Auth").
    fn auth(&self, source: &SourceHost, item: &mut Item) -> (Option<&'static str>, Option<String>) {
        match &source.auth {
            SourceAuth::Password(_) => (Some("password"), None),
            SourceAuth::Agent => (Some("agent"), None),
            // An identity (its own or its folder's) says how to log in.
            SourceAuth::Unspecified if source.identity.is_some() || self.group_gives(source).1 => {
                (None, None)
            }
            SourceAuth::Unspecified => (Some("agent"), None),
            SourceAuth::Key { path, .. } if path.trim().is_empty() => {
                item.unmapped.push(
                    "auth: key, without naming the key; set the host's key (agent until then)"
                        .into(),
                );
                (Some("agent"), None)
            }
            SourceAuth::Key { path, .. } => {
                let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
                let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
                match self.stored.key_names.get(&fold::key(stem.trim())) {
                    Some(id) => (Some("key"), Some(id.clone())),
                    None => {
                        item.unmapped.push(format!(
                            "private key {path}: no stored key is named {stem}; import it (POST /api/keys) and set the host's auth (agent until then)"
                        ));
                        (Some("agent"), None)
                    }
                }
            }
        }
    }

    fn host_fields(&self, host: &Host) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(host.name));
        fields.insert("hostname".into(), json!(host.hostname));
        fields.insert("port".into(), json!(host.port));
        fields.insert("username".into(), json!(host.username));
        fields.insert(
            "auth".into(),
            json!(host.auth_type.map(|auth| auth.as_str())),
        );
        fields.insert("key_id".into(), json!(host.key_id));
        fields.insert("identity_id".into(), json!(host.identity_id));
        fields.insert("group_id".into(), json!(host.group_id));
        fields.insert(
            "jump_host_ids".into(),
            json!(host.jump_host_ids.clone().unwrap_or_default()),
        );
        let mut tags = host.tags.clone();
        tags.sort();
        fields.insert("tags".into(), json!(tags));
        fields.insert("notes".into(), json!(host.notes));
        fields.insert("remote_command".into(), json!(host.startup.remote_command));
        let env: Vec<Value> = host
            .startup
            .set_env
            .iter()
            .filter_map(|entry| match &entry.value {
                EnvValue::Plain(value) => Some(json!({"name": entry.name, "value": value})),
                EnvValue::Secret { .. } => None,
            })
            .collect();
        fields.insert("set_env".into(), Value::Array(env));
        let rules = self
            .stored
            .host_rules
            .get(&host.id)
            .cloned()
            .unwrap_or_default();
        fields.insert("forwards".into(), json!(rules));
        fields
    }

    fn item(&self, kind: Kind, source_id: &str, name: &str, group_path: &str) -> Item {
        Item {
            source_id: source_id.to_owned(),
            name: name.to_owned(),
            kind,
            status: Status::Unchanged,
            id: None,
            group_path: group_path.to_owned(),
            reason: None,
            unmapped: Vec::new(),
            secret: SecretStatus::None,
            kept_fields: Vec::new(),
        }
    }
}

/// The stored hosts by ASCII-lowercased host name, each list oldest first (a stable choice
/// when several match).
fn by_hostname(stored: &Stored) -> HashMap<String, Vec<&Host>> {
    let mut index: HashMap<String, Vec<&Host>> = HashMap::new();
    for host in stored.hosts.values() {
        index
            .entry(host.hostname.to_ascii_lowercase())
            .or_default()
            .push(host);
    }
    for hosts in index.values_mut() {
        hosts.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    }
    index
}

/// The object an earlier import's record names, if it is still here.
fn live<'x, T>(
    record: Option<&Record>,
    objects: &'x [T],
    id: impl Fn(&T) -> &String,
) -> Option<&'x T> {
    let record = record?;
    objects
        .iter()
        .find(|object| *id(object) == record.object_id)
}

/// The session's own saved password, if it has one.
fn source_password(source: &SourceHost) -> Option<&SourceSecret> {
    match &source.auth {
        SourceAuth::Password(secret) => secret.as_ref(),
        SourceAuth::Key { passphrase, .. } => passphrase.as_ref().filter(|_| false),
        _ => None,
    }
}

fn group_fields(group: &Group, wanted: &Map<String, Value>) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("name".into(), json!(group.name));
    fields.insert("parent_id".into(), json!(group.parent_id));
    if wanted.contains_key("defaults") {
        fields.insert(
            "defaults".into(),
            json!({"username": group.defaults.username, "port": group.defaults.port,
                   "identity_id": group.defaults.identity_id}),
        );
    }
    fields
}

fn identity_fields(identity: &Identity) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("name".into(), json!(identity.fields.name.as_str()));
    fields.insert("username".into(), json!(identity.fields.username));
    let auth = identity
        .fields
        .auth
        .first()
        .map(|method| method.type_name());
    fields.insert("auth".into(), json!(auth));
    fields
}

/// The outcome of comparing one object's fields three ways.
struct Merged {
    /// Fields to write with their source value.
    set: Map<String, Value>,
    /// Fields edited here that the source says otherwise.
    kept: Vec<String>,
}

impl Merged {
    fn status(&self, existing: bool) -> Status {
        match (existing, self.set.is_empty(), self.kept.is_empty()) {
            (false, _, _) => Status::Created,
            (true, false, _) => Status::Updated,
            (true, true, false) => Status::KeptLocal,
            (true, true, true) => Status::Unchanged,
        }
    }
}

/// docs/import.md, "Re-import": per field, here == source: nothing; here == last import:
/// take the source's; else the edit made here is kept. A new object takes every field.
fn merge(
    current: &Map<String, Value>,
    last: &Map<String, Value>,
    wanted: &Map<String, Value>,
    existing: bool,
) -> Merged {
    let mut merged = Merged {
        set: Map::new(),
        kept: Vec::new(),
    };
    for (field, value) in wanted {
        if !existing {
            merged.set.insert(field.clone(), value.clone());
            continue;
        }
        let here = current.get(field).unwrap_or(&Value::Null);
        if here == value {
            continue;
        }
        match last.get(field) {
            Some(before) if before == here => {
                merged.set.insert(field.clone(), value.clone());
            }
            _ => merged.kept.push(field.clone()),
        }
    }
    merged
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn merge_takes_the_source_where_the_value_here_is_the_last_imports() {
        let last = map(json!({"port": 22, "notes": "a"}));
        let here = map(json!({"port": 22, "notes": "a"}));
        let source = map(json!({"port": 2222, "notes": "a"}));
        let merged = merge(&here, &last, &source, true);
        assert_eq!(merged.set, map(json!({"port": 2222})));
        assert!(merged.kept.is_empty());
        assert_eq!(merged.status(true), Status::Updated);
    }

    #[test]
    fn merge_keeps_a_field_edited_here_and_reports_it() {
        let last = map(json!({"port": 22}));
        let here = map(json!({"port": 2200}));
        let merged = merge(&here, &last, &map(json!({"port": 2222})), true);
        assert!(merged.set.is_empty());
        assert_eq!(merged.kept, vec!["port"]);
        assert_eq!(merged.status(true), Status::KeptLocal);
        // The same edit made in the source too: nothing to do, nothing kept.
        let merged = merge(&here, &last, &map(json!({"port": 2200})), true);
        assert!(merged.set.is_empty() && merged.kept.is_empty());
        assert_eq!(merged.status(true), Status::Unchanged);
    }

    #[test]
    fn merge_of_a_new_object_takes_every_field() {
        let source = map(json!({"port": 22, "name": "a"}));
        let merged = merge(&Map::new(), &Map::new(), &source, false);
        assert_eq!(merged.set, source);
        assert_eq!(merged.status(false), Status::Created);
    }

    fn session(source_id: &str, hostname: &str, jumps: Vec<Jump>) -> SourceHost {
        SourceHost {
            source_id: source_id.into(),
            name: source_id.into(),
            group_path: vec!["Prod".into()],
            hostname: hostname.into(),
            jumps,
            ..SourceHost::default()
        }
    }

    fn address(hostname: &str, port: Option<u16>, username: Option<&str>) -> Jump {
        Jump::Address {
            hostname: hostname.into(),
            port,
            username: username.map(str::to_owned),
            password: Some(Box::new(SourceSecret::Plain(
                crate::vault::Secret::from_string("tunnel-pw".into()),
            ))),
        }
    }

    fn jump_ids(host: &SourceHost) -> Vec<String> {
        host.jumps
            .iter()
            .map(|jump| match jump {
                Jump::Session(id) => id.clone(),
                Jump::Address { hostname, .. } => format!("address {hostname}"),
            })
            .collect()
    }

    #[test]
    fn a_jump_at_the_address_of_a_session_of_the_import_is_that_session() {
        let mut catalogue = Catalogue {
            hosts: vec![
                session(
                    "web",
                    "web.example.com",
                    vec![address("BASTION.example.com", None, None)],
                ),
                session("bastion", "bastion.example.com", vec![]),
            ],
            ..Catalogue::default()
        };
        add_jump_hosts(&mut catalogue);
        assert_eq!(catalogue.hosts.len(), 2, "no host made");
        assert_eq!(jump_ids(&catalogue.hosts[0]), ["bastion"]);
        // Port 22 written or not is the same port; another port is another host.
        let mut other = Catalogue {
            hosts: vec![
                session(
                    "web",
                    "web.example.com",
                    vec![address("bastion.example.com", Some(2222), None)],
                ),
                session("bastion", "bastion.example.com", vec![]),
            ],
            ..Catalogue::default()
        };
        add_jump_hosts(&mut other);
        assert_eq!(other.hosts.len(), 3);
        assert_eq!(jump_ids(&other.hosts[0]), ["jump:bastion.example.com:2222"]);
    }

    #[test]
    fn a_jump_at_an_unknown_address_becomes_one_host_with_the_jumps_password() {
        let mut catalogue = Catalogue {
            hosts: vec![
                session(
                    "a",
                    "a.example.com",
                    vec![address("2001:db8::7", Some(2200), Some("ops"))],
                ),
                session(
                    "b",
                    "b.example.com",
                    vec![address("2001:db8::7", Some(2200), Some("ops"))],
                ),
            ],
            ..Catalogue::default()
        };
        add_jump_hosts(&mut catalogue);
        assert_eq!(catalogue.hosts.len(), 3, "one host for the two uses");
        let made = &catalogue.hosts[2];
        assert_eq!(made.source_id, "jump:ops@[2001:db8::7]:2200");
        assert_eq!(made.name, "ops@[2001:db8::7]:2200");
        assert_eq!(made.group_path, ["Prod"]);
        assert_eq!(made.port, Some(2200));
        assert!(matches!(
            &made.auth,
            SourceAuth::Password(Some(SourceSecret::Plain(_)))
        ));
        for host in &catalogue.hosts[..2] {
            assert_eq!(jump_ids(host), std::slice::from_ref(&made.source_id));
        }
    }

    #[test]
    fn a_new_host_takes_every_field_and_its_password_only_with_secrets() {
        let catalogue = Catalogue {
            hosts: vec![SourceHost {
                auth: SourceAuth::Password(Some(SourceSecret::Plain(
                    crate::vault::Secret::from_string("pw".into()),
                ))),
                ..session("web", "web.example.com", vec![])
            }],
            ..Catalogue::default()
        };
        let stored = Stored::default();
        for import_secrets in [false, true] {
            let options = Options {
                parent_group_id: None,
                default_user: "me",
                import_secrets,
            };
            let mut ids = 0;
            let mut new_id = || {
                ids += 1;
                format!("id-{ids}")
            };
            let plan = plan(&catalogue, &stored, &options, &mut new_id);
            let host = plan
                .writes
                .iter()
                .find(|write| write.kind == Kind::Host)
                .unwrap();
            assert_eq!(host.set["username"], "me", "the default user");
            assert_eq!(host.set["auth"], "password");
            assert_eq!(host.secret.is_some(), import_secrets);
            let item = &plan.items[host.item];
            assert_eq!(item.status, Status::Created);
            let wanted = match import_secrets {
                true => SecretStatus::Missing, // until the caller opens and seals it
                false => SecretStatus::Skipped,
            };
            assert_eq!(item.secret, wanted);
            // The folder is planned first and the host placed in it.
            let group = plan
                .writes
                .iter()
                .find(|write| write.kind == Kind::Group)
                .unwrap();
            assert_eq!(host.set["group_id"], json!(group.id));
        }
    }
}
