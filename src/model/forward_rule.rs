//! A stored forward rule (docs/forwards.md, "Rules"): its owner (a host or a group), place,
//! spec and settings, the view every answer gives, and the conflict text that names it.
//!
//! Invariants: pure, no I/O; the spec was checked by `model::forward` before it was stored.

use serde_json::{json, Value};

use crate::model::forward::{ForwardSettings, ForwardSpec};

/// Who a rule belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    Host(String),
    Group(String),
}

impl Owner {
    pub fn id(&self) -> &str {
        match self {
            Owner::Host(id) | Owner::Group(id) => id,
        }
    }

    /// `host` or `group`: the answer's `<kind>_id` field, and the feed's wording.
    pub fn kind(&self) -> &'static str {
        match self {
            Owner::Host(_) => "host",
            Owner::Group(_) => "group",
        }
    }
}

/// A rule as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: String,
    pub owner: Owner,
    pub position: i64,
    pub spec: ForwardSpec,
    pub settings: ForwardSettings,
    pub created_at: String,
    pub updated_at: String,
    pub revision: i64,
}

impl Rule {
    /// The rule object of the API: every field present, `warnings` computed.
    pub fn view(&self) -> Value {
        let spec = &self.spec;
        let mut out = json!({
            "id": self.id,
            "position": self.position,
            "type": spec.kind.as_str(),
            "bind_address": spec.bind_address,
            "bind_port": spec.bind_port,
            "bind_socket": spec.bind_socket,
            "target_host": spec.target_host,
            "target_port": spec.target_port,
            "target_socket": spec.target_socket,
            "enabled": self.settings.enabled,
            "autostart": self.settings.autostart,
            "description": self.settings.description,
            "warnings": spec.warnings(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "revision": self.revision,
        });
        out[format!("{}_id", self.owner.kind())] = Value::String(self.owner.id().to_owned());
        out
    }

    /// `rule <id> of host <id>`: how a conflict names it.
    pub fn named(&self) -> String {
        format!(
            "rule {} of {} {}",
            self.id,
            self.owner.kind(),
            self.owner.id()
        )
    }
}
