//! A stored forward rule (docs/forwards.md, "Rules"): its owner (a host or a group), place,
//! spec and settings, the view every answer gives, and the conflict text that names it.
//!
//! Invariants: pure, no I/O; the spec was checked by `model::forward` before it was stored.

use serde::Serialize;

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

/// The rule object of the API, fields in the documented order (docs/forwards.md).
#[derive(Serialize)]
pub struct RuleView<'a> {
    pub id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<&'a str>,
    /// `connect` and the effective view: `host` or `group:<id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    #[serde(flatten)]
    pub spec: &'a ForwardSpec,
    /// Absent from `connect`, which answers enabled rules only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    pub autostart: bool,
    pub description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// `connect`: the ssh_config line the export writes for the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directive: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
}

impl Rule {
    /// The rule object of the API: every field present, `warnings` computed.
    pub fn view(&self) -> RuleView<'_> {
        let (host_id, group_id) = match &self.owner {
            Owner::Host(id) => (Some(id.as_str()), None),
            Owner::Group(id) => (None, Some(id.as_str())),
        };
        RuleView {
            id: &self.id,
            host_id,
            group_id,
            source: None,
            position: Some(self.position),
            spec: &self.spec,
            enabled: Some(self.settings.enabled),
            autostart: self.settings.autostart,
            description: &self.settings.description,
            warnings: Some(self.spec.warnings()),
            directive: None,
            created_at: Some(&self.created_at),
            updated_at: Some(&self.updated_at),
            revision: Some(self.revision),
        }
    }

    /// `host` or `group:<id>`, as the effective view names levels.
    pub fn source_label(&self) -> String {
        match &self.owner {
            Owner::Host(_) => "host".to_owned(),
            Owner::Group(id) => format!("group:{id}"),
        }
    }

    /// The rule as the effective view shows it: its view with its `source`.
    pub fn sourced_view(&self) -> RuleView<'_> {
        RuleView {
            source: Some(self.source_label()),
            ..self.view()
        }
    }

    /// The rule as `connect` answers it (docs/forwards.md, "connect"): what to start, its
    /// `source` and its `directive`, without the owner, place, flags it always has and
    /// bookkeeping.
    pub fn connect_view(&self) -> RuleView<'_> {
        RuleView {
            host_id: None,
            group_id: None,
            position: None,
            enabled: None,
            warnings: None,
            directive: Some(self.spec.directive()),
            created_at: None,
            updated_at: None,
            revision: None,
            ..self.sourced_view()
        }
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
