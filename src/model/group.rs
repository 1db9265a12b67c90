//! Groups as stored, validated and shown: the create and update bodies (name, parent,
//! color and icon rules).
//!
//! Invariants: pure values and rules, no I/O; a `NewGroup` or `GroupPatch` holds only
//! checked values (names are `model::name::Name`, so siblings clash by the caseless match
//! key, never by the lowercase), so nothing unvalidated reaches the store; a refusal is an
//! `Invalid` naming the field.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::environment::{self, EnvEntry};
use crate::model::inherit::GroupDefaults;
use crate::model::interop;
use crate::model::name::Name;
use crate::model::validate::{self, Invalid};

/// docs/api.md, Groups: an icon is a short identifier, `[a-z0-9_-]{1,64}`.
pub const ICON_MAX_CHARS: usize = 64;

/// The deepest a group may sit: a top-level group is at depth 1. A tree deeper than this
/// would nest its JSON past the 128 levels common parsers (serde_json among them) accept,
/// and would make the service recurse without bound while writing it.
pub const MAX_DEPTH: usize = 32;

/// One stored group row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub id: String,
    pub parent_id: Option<String>,
    pub name: String,
    /// `name` lowercased: what siblings are sorted by.
    pub name_key: String,
    pub color: String,
    pub icon: String,
    pub created_at: String,
    pub updated_at: String,
    /// Bumped by every edit (docs/api.md, "Revisions and If-Match").
    pub revision: i64,
    pub defaults: GroupDefaults,
}

/// A validated create request.
#[derive(Clone, Debug)]
pub struct NewGroup {
    pub name: Name,
    /// `None` for a top-level group.
    pub parent_id: Option<String>,
    pub color: String,
    pub icon: String,
    pub defaults: Option<DefaultsPatch>,
}

/// What a request says about a group's `defaults` (docs/identities.md, "Group defaults"):
/// `None` leaves a field as it is, `Some(None)` unsets it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DefaultsPatch {
    pub username: Option<Option<String>>,
    pub port: Option<Option<u16>>,
    pub identity_id: Option<Option<String>>,
    /// `Some(Some(vec![]))`: the default is a direct connection.
    pub jump_host_ids: Option<Option<Vec<String>>>,
    /// `null` is `[]`.
    pub ssh_options: Option<Vec<String>>,
    /// `null` is `[]`. A secret entry reads as not given: the api layer took its value out
    /// and marks the ones it took (`EnvValue::Secret { given: true }`).
    pub set_env: Option<Vec<EnvEntry>>,
    /// `null` is `[]`.
    pub send_env: Option<Vec<String>>,
}

impl DefaultsPatch {
    /// `defaults`: an object whose fields are each optional, or `null`, which unsets them
    /// all. Refusals name `defaults.<field>`.
    pub fn from_json(value: &Value) -> Result<DefaultsPatch, Invalid> {
        let body = match value {
            Value::Null => return Ok(DefaultsPatch::unset_all()),
            Value::Object(body) => body,
            _ => return Err(Invalid::new("defaults", "must be an object or null")),
        };
        Ok(DefaultsPatch {
            username: nullable(body, "username", validate::username)?,
            port: nullable(body, "port", validate::port)?,
            identity_id: match body.get("identity_id") {
                None => None,
                Some(value) => Some(validate::optional_id("identity_id", value).map_err(prefixed)?),
            },
            jump_host_ids: nullable(body, "jump_host_ids", interop::jump_host_ids)?,
            ssh_options: match body.get("ssh_options") {
                None => None,
                Some(value) => Some(interop::ssh_options(value).map_err(prefixed)?),
            },
            set_env: match body.get("set_env") {
                None => None,
                Some(value) => {
                    Some(environment::set_env(value, &BTreeSet::new()).map_err(prefixed)?)
                }
            },
            send_env: match body.get("send_env") {
                None => None,
                Some(value) => Some(environment::send_env(value).map_err(prefixed)?),
            },
        })
    }

    fn unset_all() -> DefaultsPatch {
        DefaultsPatch {
            username: Some(None),
            port: Some(None),
            identity_id: Some(None),
            jump_host_ids: Some(None),
            ssh_options: Some(Vec::new()),
            set_env: Some(Vec::new()),
            send_env: Some(Vec::new()),
        }
    }

    /// The defaults `current` becomes.
    pub fn apply(&self, current: &GroupDefaults) -> GroupDefaults {
        fn pick<T: Clone>(change: &Option<Option<T>>, now: &Option<T>) -> Option<T> {
            change.clone().unwrap_or_else(|| now.clone())
        }
        GroupDefaults {
            username: pick(&self.username, &current.username),
            port: pick(&self.port, &current.port),
            identity_id: pick(&self.identity_id, &current.identity_id),
            jump_host_ids: pick(&self.jump_host_ids, &current.jump_host_ids),
            ssh_options: self
                .ssh_options
                .clone()
                .unwrap_or_else(|| current.ssh_options.clone()),
            set_env: self
                .set_env
                .clone()
                .unwrap_or_else(|| current.set_env.clone()),
            send_env: self
                .send_env
                .clone()
                .unwrap_or_else(|| current.send_env.clone()),
        }
    }
}

/// A refusal of a field inside `defaults`, named `defaults.<field>`.
fn prefixed(err: Invalid) -> Invalid {
    Invalid {
        field: format!("defaults.{}", err.field),
        ..err
    }
}

/// A `defaults` field whose `null` unsets it.
fn nullable<T>(
    body: &Map<String, Value>,
    name: &str,
    check: fn(&Value) -> Result<T, Invalid>,
) -> Result<Option<Option<T>>, Invalid> {
    match body.get(name) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(value) => check(value)
            .map(|value| Some(Some(value)))
            .map_err(prefixed),
    }
}

/// A validated partial update: `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct GroupPatch {
    pub name: Option<Name>,
    /// `Some(None)` moves the group to the top level.
    pub parent_id: Option<Option<String>>,
    pub color: Option<String>,
    pub icon: Option<String>,
    pub defaults: Option<DefaultsPatch>,
}

/// A group as the API shows it: the stored fields, its host counts and its sorted children.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupView {
    pub id: String,
    pub name: String,
    pub parent_id: Option<String>,
    pub color: String,
    pub icon: String,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
    /// docs/identities.md, "Group defaults".
    pub defaults: GroupDefaults,
    /// Hosts directly in this group.
    pub host_count: u64,
    /// Hosts in this group and every group below it (extension, docs/api.md, Groups).
    pub total_host_count: u64,
    pub children: Vec<GroupView>,
}

impl NewGroup {
    /// Checks a create body (docs/api.md, Groups): `name` is required; `parent_id` `null` or
    /// `""` (or absent) is the top level; `color` and `icon` `null` are `""` (none).
    /// Unknown fields are ignored.
    pub fn from_json(body: &Map<String, Value>) -> Result<NewGroup, Invalid> {
        Ok(NewGroup {
            name: Name::required(body.get("name"))?,
            parent_id: body.get("parent_id").map(parent).transpose()?.flatten(),
            color: text_field(body, "color", validate::color)?.unwrap_or_default(),
            icon: text_field(body, "icon", icon)?.unwrap_or_default(),
            defaults: body
                .get("defaults")
                .map(DefaultsPatch::from_json)
                .transpose()?,
        })
    }
}

impl GroupPatch {
    /// Checks an update body: every field optional; a `parent_id` moves the group.
    pub fn from_json(body: &Map<String, Value>) -> Result<GroupPatch, Invalid> {
        Ok(GroupPatch {
            name: body.get("name").map(Name::parse).transpose()?,
            parent_id: body.get("parent_id").map(parent).transpose()?,
            color: text_field(body, "color", validate::color)?,
            icon: text_field(body, "icon", icon)?,
            defaults: body
                .get("defaults")
                .map(DefaultsPatch::from_json)
                .transpose()?,
        })
    }

    /// Checks a move body: `parent_id` is required (a forgotten field must not move a group
    /// to the top level); `null` or `""` is the top level.
    pub fn move_from_json(body: &Map<String, Value>) -> Result<GroupPatch, Invalid> {
        let Some(value) = body.get("parent_id") else {
            return Err(Invalid::new(
                "parent_id",
                "is required: a group id, or null or \"\" for the top level",
            ));
        };
        Ok(GroupPatch {
            parent_id: Some(parent(value)?),
            ..GroupPatch::default()
        })
    }
}

/// docs/api.md, Groups: an icon is `[a-z0-9_-]{1,64}`, or `""` for none.
pub fn icon(value: &Value) -> Result<String, Invalid> {
    match value {
        Value::String(text) if is_icon(text) => Ok(text.clone()),
        _ => Err(Invalid::new(
            "icon",
            "must be 1-64 characters of a-z, 0-9, _ and -, or \"\" for none",
        )),
    }
}

/// `parent_id`: `null` and `""` are the top level (docs/api.md, Groups); any other string is a
/// group id, looked up later (an unknown or non-UUID id is 404 `GROUP_NOT_FOUND`).
fn parent(value: &Value) -> Result<Option<String>, Invalid> {
    validate::optional_id("parent_id", value)
}

fn is_icon(text: &str) -> bool {
    text.len() <= ICON_MAX_CHARS
        && text
            .bytes()
            .all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// An optional text field checked by `check`: absent is `None` (unchanged on update),
/// `null` is the same as `""` (none).
fn text_field(
    body: &Map<String, Value>,
    field: &str,
    check: fn(&Value) -> Result<String, Invalid>,
) -> Result<Option<String>, Invalid> {
    match body.get(field) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(String::new())),
        Some(value) => check(value).map(Some),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Map, Value};

    use crate::model::group::{icon, GroupPatch, NewGroup};

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// The field a refused create body names.
    fn refused(body: Value) -> String {
        NewGroup::from_json(&object(body)).unwrap_err().field
    }

    #[test]
    fn create_needs_a_name_and_defaults_the_rest() {
        assert_eq!(refused(json!({})), "name");
        assert_eq!(refused(json!({"name": null})), "name");
        let group = NewGroup::from_json(&object(json!({"name": " Web "}))).unwrap();
        assert_eq!(group.name.as_str(), "Web");
        assert_eq!(group.parent_id, None);
        assert_eq!((group.color.as_str(), group.icon.as_str()), ("", ""));
    }

    #[test]
    fn create_with_null_or_empty_parent_is_top_level_and_a_number_is_refused() {
        for parent in [json!(null), json!("")] {
            let body = object(json!({"name": "g", "parent_id": parent}));
            assert_eq!(NewGroup::from_json(&body).unwrap().parent_id, None);
        }
        assert_eq!(refused(json!({"name": "g", "parent_id": 5})), "parent_id");
    }

    #[test]
    fn color_accepts_hex_of_either_case_empty_and_null() {
        for (color, stored) in [
            (json!("#a1B2c3"), "#a1B2c3"),
            (json!(""), ""),
            (json!(null), ""),
        ] {
            let body = object(json!({"name": "g", "color": color}));
            assert_eq!(NewGroup::from_json(&body).unwrap().color, stored);
        }
    }

    #[test]
    fn color_rejects_wrong_length_missing_hash_non_hex_and_non_strings() {
        for bad in [
            json!("#12345"),
            json!("#1234567"),
            json!("123456"),
            json!("#12345g"),
            json!("#ééé"),
            json!(" #123456"),
            json!(7),
        ] {
            assert_eq!(
                refused(json!({"name": "g", "color": bad})),
                "color",
                "{bad}"
            );
        }
    }

    #[test]
    fn icon_accepts_64_chars_and_empty() {
        assert_eq!(icon(&json!("a".repeat(64))).unwrap(), "a".repeat(64));
        assert_eq!(icon(&json!("server_rack-2")).unwrap(), "server_rack-2");
        assert_eq!(icon(&json!("")).unwrap(), "");
    }

    #[test]
    fn icon_rejects_65_chars_uppercase_spaces_and_non_strings() {
        for bad in [
            json!("a".repeat(65)),
            json!("Server"),
            json!("a b"),
            json!("ä"),
            json!(1),
        ] {
            assert_eq!(icon(&bad).unwrap_err().field, "icon", "{bad}");
        }
    }

    #[test]
    fn patch_leaves_absent_fields_and_clears_null_ones() {
        let patch = GroupPatch::from_json(&object(json!({"color": null}))).unwrap();
        assert_eq!(patch.name, None);
        assert_eq!(patch.parent_id, None);
        assert_eq!(patch.color.as_deref(), Some(""));
        assert_eq!(patch.icon, None);
        let patch = GroupPatch::from_json(&object(json!({"parent_id": null}))).unwrap();
        assert_eq!(patch.parent_id, Some(None), "null moves to the top level");
    }

    #[test]
    fn move_without_parent_id_is_refused_and_null_is_the_top_level() {
        let err = GroupPatch::move_from_json(&Map::new()).unwrap_err();
        assert_eq!(err.field, "parent_id");
        let patch = GroupPatch::move_from_json(&object(json!({"parent_id": null}))).unwrap();
        assert_eq!(patch.parent_id, Some(None));
        let patch = GroupPatch::move_from_json(&object(json!({"parent_id": "p"}))).unwrap();
        assert_eq!(patch.parent_id, Some(Some("p".into())));
    }
}
