//! Hosts as stored, as answered, as requested (create, partial update), and the
//! rules that turn a request body into a checked value (docs/api.md, Hosts); the `auth`
//! rule lives in `host_auth`, re-exported here.
//!
//! Invariants: no I/O; no secret value ever lives here: the api layer takes `auth.password`
//! out of the body into a `Secret` first and passes only what kind of value it was
//! (`PasswordField`). `HostView` is the only wire type and has no password field.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::environment::RequestTty;
use crate::model::host_auth::{auth_patch, resolve_auth, AuthPatch};
use crate::model::interop;
use crate::model::name::{self, Name};
use crate::model::startup::{env_json, Startup, StartupPatch};
use crate::model::validate::{self, Invalid};

pub use crate::model::host_auth::{AuthChange, AuthType, PasswordAction, PasswordField};

/// A host as stored, without its sealed password (only whether one is stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub id: String,
    pub name: String,
    pub hostname: String,
    /// `None`: inherited (docs/identities.md), as `username`, the auth and the chain.
    pub port: Option<u16>,
    pub username: Option<String>,
    pub auth_type: Option<AuthType>,
    pub key_id: Option<String>,
    pub has_password: bool,
    pub identity_id: Option<String>,
    pub group_id: Option<String>,
    pub tags: Vec<String>,
    pub is_favorite: bool,
    pub color: String,
    pub order: i64,
    pub notes: String,
    pub created_at: String,
    pub updated_at: String,
    pub last_used_at: Option<String>,
    /// The ProxyJump chain, hop ids in order; `None`: inherited, `Some([])`: direct.
    pub jump_host_ids: Option<Vec<String>>,
    /// Extra ssh_config directives, verbatim, in order.
    pub ssh_options: Vec<String>,
    /// The startup command and environment (docs/forwards.md).
    pub startup: Startup,
    /// Bumped by every edit (docs/api.md, "Revisions and If-Match"); not by `connect`.
    pub revision: i64,
}

/// The Host object of the API, as every endpoint answers it (docs/api.md, Hosts): every
/// field present, `group_id` omitted when ungrouped, `last_used_at` null until first use.
#[derive(Serialize)]
pub struct HostView<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub hostname: &'a str,
    /// `null`: inherited (docs/identities.md), as `username`, `auth`, `identity_id` and
    /// `jump_host_ids`.
    pub port: Option<u16>,
    pub username: Option<&'a str>,
    pub auth: Option<AuthView<'a>>,
    pub identity_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<&'a str>,
    pub tags: &'a [String],
    pub is_favorite: bool,
    pub color: &'a str,
    pub order: i64,
    pub notes: &'a str,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    pub last_used_at: Option<&'a str>,
    /// Extension: always present; `[]` a direct connection, `null` inherited.
    pub jump_host_ids: Option<&'a [String]>,
    /// Extension: always present, `[]` when none.
    pub ssh_options: &'a [String],
    /// Extensions (docs/forwards.md): always present.
    pub remote_command: Option<&'a str>,
    pub request_tty: Option<&'static str>,
    pub set_env: Value,
    pub send_env: &'a [String],
    pub revision: i64,
}

/// `auth` in responses: `{type, key_id (type key only), has_password}`; never the password.
#[derive(Serialize)]
pub struct AuthView<'a> {
    #[serde(rename = "type")]
    pub auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<&'a str>,
    pub has_password: bool,
}

/// A checked create request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewHost {
    pub name: String,
    pub name_key: String,
    pub hostname: String,
    /// `None`: inherited, as `username`, `auth`, `identity_id` and `jump_host_ids`.
    pub port: Option<u16>,
    pub username: Option<String>,
    pub auth: Option<AuthChange>,
    pub identity_id: Option<String>,
    pub group_id: Option<String>,
    pub tags: Vec<String>,
    pub is_favorite: bool,
    pub color: String,
    /// `None`: at the end of its group.
    pub order: Option<i64>,
    pub notes: String,
    pub jump_host_ids: Option<Vec<String>>,
    pub ssh_options: Vec<String>,
    /// Secret `set_env` entries are `given` (sealed by the caller) or refused: a new host
    /// has none stored.
    pub startup: Startup,
}

/// A host's own fields (name, hostname, port, username) read from outside text by an
/// importer (an `~/.ssh/config` block), checked field by field by the very functions a
/// create body goes through (`NewHost::from_json`), so no importer stores a value the API
/// refuses. The fields are private: `from_text` is the only way to make one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFields {
    name: String,
    hostname: String,
    port: u16,
    username: String,
}

impl HostFields {
    /// Checks each field; the error names the first field that breaks its rule (`name`,
    /// `hostname`, `port`, `username`), never its value. Name and username are trimmed.
    pub fn from_text(
        name: &str,
        hostname: &str,
        port: u64,
        username: &str,
    ) -> Result<HostFields, Invalid> {
        Ok(HostFields {
            name: Name::from_text(name)?.into_string(),
            hostname: validate::hostname_text(hostname)?,
            port: validate::port_number(port)?,
            username: validate::username_text(username)?,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    /// A new host of these fields, with `auth`, `group_id` and `ssh_options` (checked by
    /// the caller with `interop::ssh_option`) and every other field at its create default.
    pub fn new_host(
        &self,
        auth: Option<AuthChange>,
        group_id: Option<String>,
        ssh_options: Vec<String>,
    ) -> NewHost {
        NewHost {
            name: self.name.clone(),
            name_key: name::sort_key(&self.name),
            hostname: self.hostname.clone(),
            port: Some(self.port),
            username: Some(self.username.clone()),
            auth,
            identity_id: None,
            group_id,
            tags: Vec::new(),
            is_favorite: false,
            color: String::new(),
            order: None,
            notes: String::new(),
            jump_host_ids: Some(Vec::new()),
            ssh_options,
            startup: Startup::default(),
        }
    }
}

/// A checked partial update: `None` leaves a field as it is; `Some(None)` of an inheritable
/// field (port, username, auth, identity, chain) makes it inherit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPatch {
    pub name: Option<String>,
    pub hostname: Option<String>,
    pub port: Option<Option<u16>>,
    pub username: Option<Option<String>>,
    pub auth: Option<Option<AuthPatch>>,
    pub identity_id: Option<Option<String>>,
    /// `Some(None)`: ungrouped.
    pub group_id: Option<Option<String>>,
    pub tags: Option<Vec<String>>,
    pub is_favorite: Option<bool>,
    pub color: Option<String>,
    pub order: Option<OrderChange>,
    pub notes: Option<String>,
    /// `Some(Some(vec![]))`: a direct connection; `Some(None)`: inherit the chain.
    pub jump_host_ids: Option<Option<Vec<String>>>,
    pub ssh_options: Option<Vec<String>>,
    /// Read by the api layer (`StartupPatch::from_json`), which takes the secrets out first.
    pub startup: StartupPatch,
}

/// An update applied to the current host: the new field values (`has_password`,
/// `order` and `updated_at` are settled by the store) and what to do with the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostChange {
    pub host: Host,
    pub name_key: String,
    pub order: OrderChange,
    pub password: PasswordAction,
}

/// A new `order` for an updated host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderChange {
    To(i64),
    /// `null`: the default, the end of its group.
    End,
}

impl Host {
    pub fn view(&self) -> HostView<'_> {
        HostView {
            id: &self.id,
            name: &self.name,
            hostname: &self.hostname,
            port: self.port,
            username: self.username.as_deref(),
            auth: self.auth_type.map(|auth_type| AuthView {
                auth_type: auth_type.as_str(),
                key_id: match auth_type {
                    AuthType::Key => self.key_id.as_deref(),
                    AuthType::Password | AuthType::Agent => None,
                },
                has_password: self.has_password,
            }),
            identity_id: self.identity_id.as_deref(),
            group_id: self.group_id.as_deref(),
            tags: &self.tags,
            is_favorite: self.is_favorite,
            color: &self.color,
            order: self.order,
            notes: &self.notes,
            created_at: &self.created_at,
            updated_at: &self.updated_at,
            last_used_at: self.last_used_at.as_deref(),
            jump_host_ids: self.jump_host_ids.as_deref(),
            ssh_options: &self.ssh_options,
            remote_command: self.startup.remote_command.as_deref(),
            request_tty: self.startup.request_tty.map(RequestTty::as_str),
            set_env: env_json(&self.startup.set_env),
            send_env: &self.startup.send_env,
            revision: self.revision,
        }
    }

    /// A create of a copy of this host named `name` (`POST /api/hosts/:id/duplicate`):
    /// every field kept (tags, chain, options, identity, own auth, group, colour, notes,
    /// favorite) but the id, the times and the place, which go to the end of the group.
    /// `password` says whether the caller stores a password sealed for the copy's row.
    pub fn duplicate(&self, name: Name, password: PasswordAction) -> NewHost {
        NewHost {
            name_key: name.key().to_owned(),
            name: name.into_string(),
            hostname: self.hostname.clone(),
            port: self.port,
            username: self.username.clone(),
            auth: self.auth_type.map(|auth_type| AuthChange {
                auth_type,
                key_id: self.key_id.clone(),
                password,
            }),
            identity_id: self.identity_id.clone(),
            group_id: self.group_id.clone(),
            tags: self.tags.clone(),
            is_favorite: self.is_favorite,
            color: self.color.clone(),
            order: None,
            notes: self.notes.clone(),
            jump_host_ids: self.jump_host_ids.clone(),
            ssh_options: self.ssh_options.clone(),
            startup: self.startup.clone(),
        }
    }

    /// A host `id` with every field unset or empty (all inheritable ones inherited), for
    /// the model's unit tests.
    #[cfg(test)]
    pub fn for_tests(id: &str) -> Host {
        Host {
            name: id.into(),
            hostname: format!("{id}.example.com"),
            ..Host::inheriting_everything(id)
        }
    }

    /// A host `id` with no name or hostname and every other field unset or empty: every
    /// inheritable one inherited (what resolving a host's own values starts from, as the
    /// list's memory does for the query language).
    pub fn inheriting_everything(id: &str) -> Host {
        Host {
            id: id.into(),
            name: String::new(),
            hostname: String::new(),
            port: None,
            username: None,
            auth_type: None,
            key_id: None,
            has_password: false,
            identity_id: None,
            group_id: None,
            tags: Vec::new(),
            is_favorite: false,
            color: String::new(),
            order: 0,
            notes: String::new(),
            created_at: String::new(),
            updated_at: String::new(),
            last_used_at: None,
            jump_host_ids: None,
            ssh_options: Vec::new(),
            startup: Startup::default(),
            revision: 1,
        }
    }

    /// The host's own `auth` as the view shows it; `None` when inherited.
    pub fn auth_view(&self) -> Option<Value> {
        serde_json::to_value(self.view().auth?).ok()
    }
}

impl NewHost {
    /// Checks a create body. `password` says what `auth.password` was (the caller took the
    /// value out). Unknown fields are ignored; `null` for an optional field is its default,
    /// and for an inheritable one (port, username, auth, identity, chain) "inherit"
    /// (docs/identities.md). Whether the host ends with a username and an auth is the
    /// writer's check, which knows its groups and identities.
    pub fn from_json(
        body: &Map<String, Value>,
        password: PasswordField,
    ) -> Result<NewHost, Invalid> {
        let name = Name::parse(required(body, "name")?)?.into_string();
        let hostname = validate::hostname(required(body, "hostname")?)?;
        let auth = match optional(body, "auth", |v| auth_patch(v, password))? {
            None if password == PasswordField::Given => {
                return Err(Invalid::new(
                    "auth.password",
                    "is only allowed with auth.type \"password\"",
                ))
            }
            None => None,
            Some(auth) if auth.auth_type.is_none() => {
                return Err(Invalid::new("auth.type", "is required"))
            }
            Some(auth) => Some(resolve_auth(&auth, None)?),
        };
        Ok(NewHost {
            name_key: name::sort_key(&name),
            name,
            hostname,
            port: optional(body, "port", validate::port)?,
            username: optional(body, "username", validate::username)?,
            auth,
            identity_id: optional(body, "identity_id", |v| {
                validate::optional_id("identity_id", v)
            })?
            .flatten(),
            group_id: optional(body, "group_id", |v| validate::optional_id("group_id", v))?
                .flatten(),
            tags: optional(body, "tags", validate::tags)?.unwrap_or_default(),
            is_favorite: optional(body, "is_favorite", |v| validate::boolean("is_favorite", v))?
                .unwrap_or(false),
            color: optional(body, "color", validate::color)?.unwrap_or_default(),
            order: optional(body, "order", validate::order)?,
            notes: optional(body, "notes", validate::notes)?.unwrap_or_default(),
            jump_host_ids: optional(body, "jump_host_ids", interop::jump_host_ids)?,
            ssh_options: optional(body, "ssh_options", interop::ssh_options)?.unwrap_or_default(),
            startup: Startup::default(),
        })
    }
}

impl HostPatch {
    /// Checks an update body: every field optional. `null` resets an optional field to its
    /// create default (ungrouped, no tags, not favorite, no colour, no notes, end of group),
    /// makes an inheritable one inherit (port, username, auth, identity_id, jump_host_ids),
    /// and is refused for name and hostname.
    pub fn from_json(
        body: &Map<String, Value>,
        password: PasswordField,
    ) -> Result<HostPatch, Invalid> {
        Ok(HostPatch {
            name: present(body, "name", |v| Name::parse(v).map(Name::into_string))?,
            hostname: present(body, "hostname", validate::hostname)?,
            port: present(body, "port", |v| nullable(v, validate::port))?,
            username: present(body, "username", |v| nullable(v, validate::username))?,
            auth: present(body, "auth", |v| nullable(v, |v| auth_patch(v, password)))?,
            identity_id: present(body, "identity_id", |v| {
                validate::optional_id("identity_id", v)
            })?,
            group_id: present(body, "group_id", |v| validate::optional_id("group_id", v))?,
            tags: present(body, "tags", |v| match v {
                Value::Null => Ok(Vec::new()),
                _ => validate::tags(v),
            })?,
            is_favorite: present(body, "is_favorite", |v| match v {
                Value::Null => Ok(false),
                _ => validate::boolean("is_favorite", v),
            })?,
            color: present(body, "color", |v| match v {
                Value::Null => Ok(String::new()),
                _ => validate::color(v),
            })?,
            order: present(body, "order", |v| match v {
                Value::Null => Ok(OrderChange::End),
                _ => validate::order(v).map(OrderChange::To),
            })?,
            notes: present(body, "notes", |v| match v {
                Value::Null => Ok(String::new()),
                _ => validate::notes(v),
            })?,
            jump_host_ids: present(body, "jump_host_ids", |v| {
                nullable(v, interop::jump_host_ids)
            })?,
            ssh_options: present(body, "ssh_options", interop::ssh_options)?,
            startup: StartupPatch::default(),
        })
    }
}

/// An inheritable field of an update: `null` is "inherit" (`None`).
pub(crate) fn nullable<T>(
    value: &Value,
    check: impl Fn(&Value) -> Result<T, Invalid>,
) -> Result<Option<T>, Invalid> {
    match value {
        Value::Null => Ok(None),
        _ => check(value).map(Some),
    }
}

impl HostPatch {
    /// The host this patch makes of `current`. A host that changes group without an
    /// explicit `order` goes to the end of its new group (like a create without `order`).
    pub fn apply(&self, current: &Host) -> Result<HostChange, Invalid> {
        let now = current
            .auth_type
            .map(|auth_type| (auth_type, current.key_id.as_deref()));
        let auth = match &self.auth {
            Some(Some(patch)) => Some(resolve_auth(patch, now)?),
            Some(None) => None,
            None => current.auth_type.map(|auth_type| AuthChange {
                auth_type,
                key_id: current.key_id.clone(),
                password: PasswordAction::Keep,
            }),
        };
        let group_id = match &self.group_id {
            Some(group_id) => group_id.clone(),
            None => current.group_id.clone(),
        };
        let order = match self.order {
            Some(order) => order,
            None if group_id != current.group_id => OrderChange::End,
            None => OrderChange::To(current.order),
        };
        let name = self.name.clone().unwrap_or_else(|| current.name.clone());
        let host = Host {
            id: current.id.clone(),
            name,
            hostname: self
                .hostname
                .clone()
                .unwrap_or_else(|| current.hostname.clone()),
            port: self.port.unwrap_or(current.port),
            username: self
                .username
                .clone()
                .unwrap_or_else(|| current.username.clone()),
            auth_type: auth.as_ref().map(|auth| auth.auth_type),
            key_id: auth.as_ref().and_then(|auth| auth.key_id.clone()),
            has_password: current.has_password,
            identity_id: self
                .identity_id
                .clone()
                .unwrap_or_else(|| current.identity_id.clone()),
            group_id,
            tags: self.tags.clone().unwrap_or_else(|| current.tags.clone()),
            is_favorite: self.is_favorite.unwrap_or(current.is_favorite),
            color: self.color.clone().unwrap_or_else(|| current.color.clone()),
            order: current.order,
            notes: self.notes.clone().unwrap_or_else(|| current.notes.clone()),
            created_at: current.created_at.clone(),
            updated_at: current.updated_at.clone(),
            last_used_at: current.last_used_at.clone(),
            jump_host_ids: self
                .jump_host_ids
                .clone()
                .unwrap_or_else(|| current.jump_host_ids.clone()),
            ssh_options: self
                .ssh_options
                .clone()
                .unwrap_or_else(|| current.ssh_options.clone()),
            startup: self.startup.apply(&current.startup)?,
            revision: current.revision,
        };
        Ok(HostChange {
            name_key: name::sort_key(&host.name),
            host,
            order,
            password: auth.map_or(PasswordAction::Clear, |auth| auth.password),
        })
    }
}

/// The value of a field a create requires: missing and `null` are both "is required".
fn required<'a>(body: &'a Map<String, Value>, field: &str) -> Result<&'a Value, Invalid> {
    match body.get(field) {
        None | Some(Value::Null) => Err(Invalid::new(field, "is required")),
        Some(value) => Ok(value),
    }
}

/// An optional create field: absent and `null` are `None` (the default).
fn optional<T>(
    body: &Map<String, Value>,
    field: &str,
    check: impl Fn(&Value) -> Result<T, Invalid>,
) -> Result<Option<T>, Invalid> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => check(value).map(Some),
    }
}

/// An update field: absent is `None`; anything else, `null` included, goes to `check`.
fn present<T>(
    body: &Map<String, Value>,
    field: &str,
    check: impl Fn(&Value) -> Result<T, Invalid>,
) -> Result<Option<T>, Invalid> {
    body.get(field).map(check).transpose()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Map, Value};

    use crate::model::host::{HostPatch, NewHost, OrderChange, PasswordField};

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn valid() -> Value {
        json!({
            "name": "  Web 1 ",
            "hostname": "web1.example.com",
            "port": 22,
            "username": " root ",
            "auth": {"type": "agent"}
        })
    }

    fn create(body: Value) -> Result<NewHost, String> {
        NewHost::from_json(&object(body), PasswordField::Absent).map_err(|err| err.field)
    }

    #[test]
    fn create_applies_defaults_and_trims() {
        let host = create(valid()).unwrap();
        assert_eq!(host.name, "Web 1");
        assert_eq!(host.name_key, "web 1");
        assert_eq!(host.username.as_deref(), Some("root"));
        assert_eq!(host.group_id, None);
        assert!(host.tags.is_empty());
        assert!(!host.is_favorite);
        assert_eq!(host.color, "");
        assert_eq!(host.order, None);
        assert_eq!(host.notes, "");
    }

    #[test]
    fn create_requires_name_and_hostname() {
        for field in ["name", "hostname"] {
            let mut body = valid();
            body.as_object_mut().unwrap().remove(field);
            assert_eq!(create(body).unwrap_err(), field);
            let mut body = valid();
            body[field] = Value::Null;
            assert_eq!(create(body).unwrap_err(), field);
        }
        let mut body = valid();
        body["auth"] = json!({});
        assert_eq!(create(body).unwrap_err(), "auth.type");
    }

    /// docs/identities.md: port, username, auth, identity and chain absent or null inherit.
    #[test]
    fn create_without_or_with_null_inheritable_fields_inherits_them() {
        for absent in [true, false] {
            let mut body = valid();
            for field in ["port", "username", "auth", "identity_id", "jump_host_ids"] {
                match absent {
                    true => drop(body.as_object_mut().unwrap().remove(field)),
                    false => body[field] = Value::Null,
                }
            }
            let host = create(body).unwrap();
            assert_eq!(host.port, None);
            assert_eq!(host.username, None);
            assert_eq!(host.auth, None);
            assert_eq!(host.identity_id, None);
            assert_eq!(host.jump_host_ids, None);
        }
        let mut body = valid();
        body["jump_host_ids"] = json!([]);
        assert_eq!(
            create(body).unwrap().jump_host_ids,
            Some(vec![]),
            "[] is direct"
        );
    }

    /// A password with no auth object would be dropped silently: refused instead.
    #[test]
    fn create_with_a_password_but_no_auth_type_is_refused() {
        let mut body = valid();
        body.as_object_mut().unwrap().remove("auth");
        let host = NewHost::from_json(&object(body), PasswordField::Given);
        assert_eq!(host.unwrap_err().field, "auth.password");
    }

    #[test]
    fn create_treats_null_optional_fields_as_defaults() {
        let mut body = valid();
        for field in ["group_id", "tags", "is_favorite", "color", "order", "notes"] {
            body[field] = Value::Null;
        }
        let host = create(body).unwrap();
        assert_eq!(host.group_id, None);
        assert_eq!(host.order, None);
    }

    #[test]
    fn create_takes_an_empty_group_id_as_ungrouped() {
        let mut body = valid();
        body["group_id"] = json!("");
        assert_eq!(create(body).unwrap().group_id, None);
    }

    #[test]
    fn create_names_the_field_of_a_wrong_json_type() {
        for (field, value) in [
            ("tags", json!("a")),
            ("is_favorite", json!("true")),
            ("color", json!(1)),
            ("order", json!(1.5)),
            ("notes", json!([])),
            ("group_id", json!(1)),
            ("auth", json!("agent")),
        ] {
            let mut body = valid();
            body[field] = value;
            assert_eq!(create(body).unwrap_err(), field);
        }
    }

    #[test]
    fn unknown_auth_type_is_rejected() {
        let mut body = valid();
        body["auth"] = json!({"type": "kerberos"});
        assert_eq!(create(body).unwrap_err(), "auth.type");
    }

    #[test]
    fn patch_null_resets_optional_fields_inherits_inheritable_ones_and_refuses_name_and_hostname() {
        let body = object(json!({
            "group_id": null, "tags": null, "is_favorite": null,
            "color": null, "order": null, "notes": null
        }));
        let patch = HostPatch::from_json(&body, PasswordField::Absent).unwrap();
        assert_eq!(patch.group_id, Some(None));
        assert_eq!(patch.tags, Some(vec![]));
        assert_eq!(patch.is_favorite, Some(false));
        assert_eq!(patch.color.as_deref(), Some(""));
        assert_eq!(patch.order, Some(OrderChange::End));
        assert_eq!(patch.notes.as_deref(), Some(""));
        for field in ["name", "hostname"] {
            let mut body = Map::new();
            body.insert(field.to_string(), Value::Null);
            assert_eq!(
                HostPatch::from_json(&body, PasswordField::Absent)
                    .unwrap_err()
                    .field,
                field
            );
        }
        let body = object(json!({
            "port": null, "username": null, "auth": null, "identity_id": null,
            "jump_host_ids": null
        }));
        let patch = HostPatch::from_json(&body, PasswordField::Absent).unwrap();
        assert_eq!(patch.port, Some(None), "null inherits the port");
        assert_eq!(patch.username, Some(None));
        assert_eq!(patch.auth, Some(None));
        assert_eq!(patch.identity_id, Some(None));
        assert_eq!(patch.jump_host_ids, Some(None));
    }

    #[test]
    fn empty_patch_changes_nothing() {
        let patch = HostPatch::from_json(&Map::new(), PasswordField::Absent).unwrap();
        assert_eq!(patch, HostPatch::default());
    }
}
