//! `POST /api/hosts/batch` (docs/api.md, Hosts, "Batch"): the request checked (which hosts,
//! by ids or by the list's own filters; the ops or a delete; a dry run), and the plan: each
//! selected host's new fields, the hosts the ops leave as they are left out.
//!
//! Invariants: no I/O; every op is checked before any host is looked at, and a refusal names
//! the op (`ops.port`, `ops.tags.add[2]`, `filter.tag`), never its value; a plan holds only
//! hosts whose fields change (so an unchanged host gets no new revision or feed entry); the
//! ops touch no field but the ones they name (never a secret, a chain or a name).

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::model::host::{nullable, Host};
use crate::model::host_query::HostQuery;
use crate::model::validate::{self, Invalid, MAX_TAGS};

/// At most this many ids in one request (far above what a 1 MiB body holds).
pub const MAX_IDS: usize = 100_000;

/// A checked batch request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchRequest {
    pub selection: Selection,
    pub action: Action,
    pub dry_run: bool,
}

/// Which hosts: these ids (repeats dropped, order kept), or those the list's filters keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Ids(Vec<String>),
    Filter(HostQuery),
}

/// What to do with them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Edit(BatchOps),
    Delete,
}

/// The ops: `None` leaves a field alone; `Some(None)` of `port`, `username`, `identity_id`
/// makes it inherit, of `group_id` ungroups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchOps {
    pub group_id: Option<Option<String>>,
    pub identity_id: Option<Option<String>>,
    pub tags: TagOps,
    pub port: Option<Option<u16>>,
    pub username: Option<Option<String>>,
    pub is_favorite: Option<bool>,
    pub color: Option<String>,
}

/// `ops.tags`: `set` replaces the tags; else `remove` drops and `add` appends (in order,
/// skipping tags the host has).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagOps {
    pub add: Vec<String>,
    pub remove: Vec<String>,
    pub set: Option<Vec<String>>,
}

/// One host a batch changes: the index of its current value in the hosts planned from, and
/// its new one (`order` still the old: the store places a host that changes group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub index: usize,
    pub after: Host,
}

const OPS: &str = "group_id, identity_id, tags, port, username, is_favorite or color";
const FILTERS: &str = "search, tag, group or favorite";

impl BatchRequest {
    /// Checks a request body. Exactly one of `ids` and `filter`; `ops` unless `delete` is
    /// true, never both.
    pub fn from_json(body: &Map<String, Value>) -> Result<BatchRequest, Invalid> {
        let present = |field| body.get(field).filter(|value| !value.is_null());
        let selection = match (present("ids"), present("filter")) {
            (Some(ids), None) => Selection::Ids(parse_ids(ids)?),
            (None, Some(filter)) => Selection::Filter(parse_filter(filter)?),
            (Some(_), Some(_)) => {
                return Err(Invalid::new("filter", "give ids or filter, not both"))
            }
            (None, None) => return Err(Invalid::new("ids", "give ids or filter, one of them")),
        };
        let flag = |field| present(field).map_or(Ok(false), |v| validate::boolean(field, v));
        let action = match (flag("delete")?, present("ops")) {
            (true, None) => Action::Delete,
            (true, Some(_)) => return Err(Invalid::new("delete", "cannot be combined with ops")),
            (false, Some(ops)) => Action::Edit(BatchOps::from_json(ops)?),
            (false, None) => return Err(Invalid::new("ops", "is required (or delete: true)")),
        };
        Ok(BatchRequest {
            selection,
            action,
            dry_run: flag("dry_run")?,
        })
    }
}

/// `ids`: an array of 1 to `MAX_IDS` strings; repeats are dropped, the order kept.
fn parse_ids(value: &Value) -> Result<Vec<String>, Invalid> {
    let rule = "must be an array of 1 to 100000 host ids (strings)";
    let Value::Array(items) = value else {
        return Err(Invalid::new("ids", rule));
    };
    if items.is_empty() || items.len() > MAX_IDS {
        return Err(Invalid::new("ids", rule));
    }
    let mut seen = HashSet::with_capacity(items.len());
    let mut ids = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match item {
            Value::String(id) if !id.is_empty() => {
                if seen.insert(id.as_str()) {
                    ids.push(id.clone());
                }
            }
            _ => return Err(Invalid::new(&format!("ids[{index}]"), "must be a host id")),
        }
    }
    Ok(ids)
}

/// `filter`: the list's filters as an object, each checked by the list's own rule
/// (`HostQuery`); `group` `null` or `""` is the ungrouped hosts. `{}` keeps every host.
fn parse_filter(value: &Value) -> Result<HostQuery, Invalid> {
    let Value::Object(filter) = value else {
        return Err(Invalid::new("filter", "must be an object"));
    };
    let mut texts: Vec<(&str, String)> = Vec::new();
    for (name, value) in filter {
        let field = format!("filter.{name}");
        let text = match (name.as_str(), value) {
            ("search" | "tag" | "group", Value::String(text)) => text.clone(),
            ("group", Value::Null) => String::new(),
            ("favorite", Value::Bool(flag)) => flag.to_string(),
            ("search" | "tag", _) => return Err(Invalid::new(&field, "must be a string")),
            ("group", _) => return Err(Invalid::new(&field, "must be a group id, \"\" or null")),
            ("favorite", _) => return Err(Invalid::new(&field, "must be true or false")),
            _ => {
                return Err(Invalid::new(
                    &field,
                    format!("is not a filter: use {FILTERS}"),
                ))
            }
        };
        texts.push((name.as_str(), text));
    }
    let get = |name: &str| {
        texts
            .iter()
            .find(|(found, _)| *found == name)
            .map(|(_, text)| text.as_str())
    };
    HostQuery::parse(get).map_err(|err| renamed(err, "", "filter."))
}

impl BatchOps {
    /// Checks `ops`: an object of known ops, each by its field's rule.
    pub fn from_json(value: &Value) -> Result<BatchOps, Invalid> {
        let Value::Object(ops) = value else {
            return Err(Invalid::new("ops", "must be an object"));
        };
        let mut checked = BatchOps::default();
        for (name, value) in ops {
            let within = |err| renamed(err, name, &format!("ops.{name}"));
            match name.as_str() {
                "group_id" => {
                    checked.group_id = Some(validate::optional_id("ops.group_id", value)?)
                }
                "identity_id" => {
                    checked.identity_id = Some(validate::optional_id("ops.identity_id", value)?)
                }
                "port" => checked.port = Some(nullable(value, validate::port).map_err(within)?),
                "username" => {
                    checked.username = Some(nullable(value, validate::username).map_err(within)?)
                }
                "is_favorite" => {
                    checked.is_favorite = Some(validate::boolean("ops.is_favorite", value)?)
                }
                "color" => checked.color = Some(validate::color(value).map_err(within)?),
                "tags" => checked.tags = TagOps::from_json(value)?,
                _ => {
                    let rule = format!("is not a batch op: use {OPS}");
                    return Err(Invalid::new(&format!("ops.{name}"), rule));
                }
            }
        }
        if checked == BatchOps::default() {
            return Err(Invalid::new("ops", format!("must name an op: {OPS}")));
        }
        Ok(checked)
    }

    /// The op names this batch carries, for the audit entry.
    pub fn names(&self) -> Vec<&'static str> {
        let tags = self.tags != TagOps::default();
        [
            ("group_id", self.group_id.is_some()),
            ("identity_id", self.identity_id.is_some()),
            ("tags", tags),
            ("port", self.port.is_some()),
            ("username", self.username.is_some()),
            ("is_favorite", self.is_favorite.is_some()),
            ("color", self.color.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, named)| named.then_some(name))
        .collect()
    }

    /// The hosts of `hosts` these ops change, with their new fields. A host the tag ops
    /// would leave with more than 64 tags refuses the whole batch, naming how many.
    pub fn plan<'a>(&self, hosts: impl Iterator<Item = &'a Host>) -> Result<Vec<Edit>, Invalid> {
        let mut edits = Vec::new();
        let mut too_many = 0usize;
        for (index, host) in hosts.enumerate() {
            let after = self.apply(host);
            if after.tags.len() > MAX_TAGS {
                too_many += 1;
                continue;
            }
            if after != *host {
                edits.push(Edit { index, after });
            }
        }
        match too_many {
            0 => Ok(edits),
            count => Err(Invalid::new(
                "ops.tags.add",
                format!("would leave {count} host(s) with more than {MAX_TAGS} tags"),
            )),
        }
    }

    /// `host` with the ops applied (its `order` unchanged).
    fn apply(&self, host: &Host) -> Host {
        let mut after = host.clone();
        if let Some(group_id) = &self.group_id {
            after.group_id.clone_from(group_id);
        }
        if let Some(identity_id) = &self.identity_id {
            after.identity_id.clone_from(identity_id);
        }
        if let Some(port) = self.port {
            after.port = port;
        }
        if let Some(username) = &self.username {
            after.username.clone_from(username);
        }
        if let Some(favorite) = self.is_favorite {
            after.is_favorite = favorite;
        }
        if let Some(color) = &self.color {
            after.color.clone_from(color);
        }
        self.tags.apply(&mut after.tags);
        after
    }
}

impl TagOps {
    fn from_json(value: &Value) -> Result<TagOps, Invalid> {
        let Value::Object(parts) = value else {
            return Err(Invalid::new(
                "ops.tags",
                "must be an object: {add?, remove?, set?}",
            ));
        };
        let mut ops = TagOps::default();
        for (name, value) in parts {
            let field = format!("ops.tags.{name}");
            let tags = || validate::tags(value).map_err(|err| renamed(err, "tags", &field));
            match name.as_str() {
                "add" => ops.add = tags()?,
                "remove" => ops.remove = tags()?,
                "set" => ops.set = Some(tags()?),
                _ => {
                    return Err(Invalid::new(
                        &field,
                        "is not a tag op: use add, remove or set",
                    ))
                }
            }
        }
        if ops.set.is_some() && (!ops.add.is_empty() || !ops.remove.is_empty()) {
            return Err(Invalid::new(
                "ops.tags.set",
                "cannot be combined with add or remove",
            ));
        }
        Ok(ops)
    }

    fn apply(&self, tags: &mut Vec<String>) {
        if let Some(set) = &self.set {
            tags.clone_from(set);
            return;
        }
        tags.retain(|tag| !self.remove.contains(tag));
        for tag in &self.add {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
    }
}

/// How `before`'s tags become `after`'s with the fewest rows written: the tags to drop and
/// the tags to append after the others, when `after` is `before` less some tags plus new
/// ones at its end (what `remove` and `add` make); `None` when the order changes otherwise
/// (a `set`, or a tag removed and added again), which rewrites them all.
pub fn tag_diff<'a>(
    before: &'a [String],
    after: &'a [String],
) -> Option<(Vec<&'a str>, Vec<&'a str>)> {
    let kept: Vec<&String> = before.iter().filter(|tag| after.contains(tag)).collect();
    let (head, tail) = after.split_at_checked(kept.len())?;
    let appended_are_new = tail.iter().all(|tag| !before.contains(tag));
    if !head.iter().eq(kept.iter().copied()) || !appended_are_new {
        return None;
    }
    let dropped = before.iter().filter(|tag| !after.contains(tag));
    Some((
        dropped.map(String::as_str).collect(),
        tail.iter().map(String::as_str).collect(),
    ))
}

/// What a batch changes of one host, as a dry run answers it: `{field: {from, to}}` for
/// each field that differs.
pub fn changes(before: &Host, after: &Host) -> Map<String, Value> {
    let mut changes = Map::new();
    let mut note = |field: &str, from: Value, to: Value| {
        if from != to {
            changes.insert(field.to_owned(), json!({"from": from, "to": to}));
        }
    };
    note("group_id", json!(before.group_id), json!(after.group_id));
    note(
        "identity_id",
        json!(before.identity_id),
        json!(after.identity_id),
    );
    note("tags", json!(before.tags), json!(after.tags));
    note("port", json!(before.port), json!(after.port));
    note("username", json!(before.username), json!(after.username));
    note(
        "is_favorite",
        json!(before.is_favorite),
        json!(after.is_favorite),
    );
    note("color", json!(before.color), json!(after.color));
    changes
}

/// `err` with its field `base...` renamed `to...` (`tags[2]` under `ops.tags.add` is
/// `ops.tags.add[2]`); a field not under `base` becomes `to` itself.
fn renamed(err: Invalid, base: &str, to: &str) -> Invalid {
    let field = match err.field.strip_prefix(base) {
        Some(rest) => format!("{to}{rest}"),
        None => to.to_owned(),
    };
    Invalid {
        field,
        rule: err.rule,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use crate::model::batch::{Action, BatchOps, BatchRequest, Selection, TagOps};
    use crate::model::host::Host;
    use crate::model::host_query::GroupFilter;

    fn host(tags: &[&str]) -> Host {
        Host {
            port: Some(22),
            username: Some("u".into()),
            tags: tags.iter().map(|tag| tag.to_string()).collect(),
            ..Host::for_tests("h")
        }
    }

    fn ops(value: Value) -> BatchOps {
        BatchOps::from_json(&value).unwrap()
    }

    #[test]
    fn tag_ops_remove_then_add_keeping_order_and_set_replaces() {
        let mut tags = vec!["a".to_string(), "b".into(), "c".into()];
        let remove_add = TagOps {
            add: vec!["b".into(), "d".into()],
            remove: vec!["a".into(), "b".into()],
            set: None,
        };
        remove_add.apply(&mut tags);
        assert_eq!(tags, ["c", "b", "d"]);
        let set = TagOps {
            set: Some(vec!["z".into()]),
            ..TagOps::default()
        };
        set.apply(&mut tags);
        assert_eq!(tags, ["z"]);
    }

    #[test]
    fn a_tag_diff_drops_and_appends_and_leaves_a_reorder_to_a_rewrite() {
        let tags = |list: &[&str]| list.iter().map(|tag| tag.to_string()).collect::<Vec<_>>();
        let (before, after) = (tags(&["a", "b", "c"]), tags(&["a", "c", "d"]));
        assert_eq!(
            super::tag_diff(&before, &after),
            Some((vec!["b"], vec!["d"]))
        );
        let after = tags(&["b", "c", "a"]);
        assert_eq!(super::tag_diff(&before, &after), None, "a moved to the end");
        let after = tags(&["c", "a"]);
        assert_eq!(super::tag_diff(&before, &after), None, "reordered");
        assert_eq!(super::tag_diff(&before, &before), Some((vec![], vec![])));
    }

    #[test]
    fn a_plan_leaves_out_unchanged_hosts_and_counts_hosts_past_64_tags() {
        let hosts = [host(&["x"]), host(&[])];
        let edits = ops(json!({"tags": {"add": ["x"]}}))
            .plan(hosts.iter())
            .unwrap();
        assert_eq!(edits.len(), 1);
        assert_eq!(
            (edits[0].index, edits[0].after.tags.clone()),
            (1, vec!["x".into()])
        );
        let full: Vec<String> = (0..64).map(|n| format!("t{n}")).collect();
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let hosts = [host(&full), host(&full), host(&[])];
        let err = ops(json!({"tags": {"add": ["new"]}}))
            .plan(hosts.iter())
            .unwrap_err();
        assert_eq!(err.field, "ops.tags.add");
        assert!(err.rule.contains("2 host(s)"), "{}", err.rule);
    }

    #[test]
    fn null_port_username_and_identity_inherit_and_null_group_ungroups() {
        let checked = ops(json!({"port": null, "username": null, "identity_id": null,
            "group_id": ""}));
        assert_eq!(checked.port, Some(None));
        assert_eq!(checked.username, Some(None));
        assert_eq!(checked.identity_id, Some(None));
        assert_eq!(checked.group_id, Some(None));
        assert_eq!(
            checked.names(),
            ["group_id", "identity_id", "port", "username"]
        );
    }

    #[test]
    fn a_filter_is_read_by_the_list_rule_and_ids_drop_repeats() {
        let body = json!({"filter": {"group": null, "favorite": false, "search": "Web"},
            "delete": true});
        let request = BatchRequest::from_json(body.as_object().unwrap()).unwrap();
        assert_eq!(request.action, Action::Delete);
        let Selection::Filter(query) = request.selection else {
            panic!("a filter")
        };
        assert_eq!(query.group, Some(GroupFilter::Ungrouped));
        assert_eq!(query.favorite, Some(false));
        assert_eq!(query.search.as_deref(), Some("Web"));
        let body = json!({"ids": ["a", "b", "a"], "ops": {"port": 22}, "dry_run": true});
        let request = BatchRequest::from_json(body.as_object().unwrap()).unwrap();
        assert_eq!(
            request.selection,
            Selection::Ids(vec!["a".into(), "b".into()])
        );
        assert!(request.dry_run);
    }
}
