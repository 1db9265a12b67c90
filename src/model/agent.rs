//! The SSH agent's per-key policy (docs/agent.md "SSH agent"): whether the agent offers a key, when
//! a signature needs the user's approval, and what a request through agent forwarding may
//! do; with the rules of `PUT /api/keys/:id`'s `agent` object and the decision the agent
//! takes for one sign request.
//!
//! Invariants: pure values and rules, no I/O; a stored value this build does not know reads
//! as the strictest one (`always`, `deny`), never as a laxer one.

use serde::Serialize;
use serde_json::Value;

use crate::model::validate::Invalid;

/// When a signature needs the user's approval (outside forwarding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirm {
    Never,
    /// Once for each server host key (known from `session-bind@openssh.com`), until the
    /// vault locks; every time when the server is not known.
    OncePerHost,
    Always,
}

/// What a sign request that came through agent forwarding may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Forwarded {
    Deny,
    /// Needs the user's approval every time, whatever `confirm` says.
    Confirm,
    /// Follows `confirm`, as a local request does.
    Allow,
}

/// A key's agent policy, as stored and as shown in key responses (`agent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AgentPolicy {
    /// The agent lists the key and signs with it.
    pub enabled: bool,
    pub confirm: Confirm,
    pub forwarded: Forwarded,
}

/// A validated `agent` object of `PUT /api/keys/:id`: `None` leaves a field as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentPatch {
    pub enabled: Option<bool>,
    pub confirm: Option<Confirm>,
    pub forwarded: Option<Forwarded>,
}

/// What the agent does with one sign request, by the key's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Sign,
    /// A pending request waits for `POST /api/agent/requests/:id`.
    AskUser,
    Refuse,
}

/// Why a request needs the user: shown with a pending request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The key's `confirm` policy asks.
    Confirm,
    /// The request came through agent forwarding and the key's `forwarded` is `confirm`.
    Forwarded,
}

impl Default for AgentPolicy {
    /// What a key gets when it is stored (sql/0007): offered, signing without a question
    /// for local requests, refusing forwarded ones.
    fn default() -> AgentPolicy {
        AgentPolicy {
            enabled: true,
            confirm: Confirm::Never,
            forwarded: Forwarded::Deny,
        }
    }
}

impl Confirm {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirm::Never => "never",
            Confirm::OncePerHost => "once_per_host",
            Confirm::Always => "always",
        }
    }

    /// A stored or requested value; `None` for anything else.
    pub fn parse(text: &str) -> Option<Confirm> {
        match text {
            "never" => Some(Confirm::Never),
            "once_per_host" => Some(Confirm::OncePerHost),
            "always" => Some(Confirm::Always),
            _ => None,
        }
    }
}

impl Forwarded {
    pub fn as_str(self) -> &'static str {
        match self {
            Forwarded::Deny => "deny",
            Forwarded::Confirm => "confirm",
            Forwarded::Allow => "allow",
        }
    }

    /// A stored or requested value; `None` for anything else.
    pub fn parse(text: &str) -> Option<Forwarded> {
        match text {
            "deny" => Some(Forwarded::Deny),
            "confirm" => Some(Forwarded::Confirm),
            "allow" => Some(Forwarded::Allow),
            _ => None,
        }
    }
}

impl AgentPolicy {
    /// The policy as stored in the `keys` row; an unknown text reads as the strictest value.
    pub fn from_stored(enabled: bool, confirm: &str, forwarded: &str) -> AgentPolicy {
        AgentPolicy {
            enabled,
            confirm: Confirm::parse(confirm).unwrap_or(Confirm::Always),
            forwarded: Forwarded::parse(forwarded).unwrap_or(Forwarded::Deny),
        }
    }

    /// This policy with `patch`'s fields applied.
    pub fn patched(self, patch: AgentPatch) -> AgentPolicy {
        AgentPolicy {
            enabled: patch.enabled.unwrap_or(self.enabled),
            confirm: patch.confirm.unwrap_or(self.confirm),
            forwarded: patch.forwarded.unwrap_or(self.forwarded),
        }
    }

    /// What to do with a sign request: `forwarded` when it came through agent forwarding,
    /// `approved_for_host` when the user already allowed this key for the request's server
    /// since the vault was last unlocked (only `once_per_host` looks at it).
    pub fn verdict(self, forwarded: bool, approved_for_host: bool) -> (Verdict, Option<Reason>) {
        if !self.enabled {
            return (Verdict::Refuse, None);
        }
        if forwarded {
            match self.forwarded {
                Forwarded::Deny => return (Verdict::Refuse, None),
                Forwarded::Confirm => return (Verdict::AskUser, Some(Reason::Forwarded)),
                Forwarded::Allow => {}
            }
        }
        match self.confirm {
            Confirm::Never => (Verdict::Sign, None),
            Confirm::OncePerHost if approved_for_host => (Verdict::Sign, None),
            Confirm::OncePerHost | Confirm::Always => (Verdict::AskUser, Some(Reason::Confirm)),
        }
    }
}

impl AgentPatch {
    /// Reads the `agent` member of a `PUT /api/keys/:id` body: an object whose `enabled`
    /// is a boolean, `confirm` one of `never`, `once_per_host`, `always`, and `forwarded`
    /// one of `deny`, `confirm`, `allow`; each optional, `null` the same as absent. Other
    /// members are ignored, as everywhere in the API.
    pub fn parse(value: &Value) -> Result<AgentPatch, Invalid> {
        let Value::Object(fields) = value else {
            return Err(Invalid::new(
                "agent",
                "must be an object {enabled?, confirm?, forwarded?}",
            ));
        };
        let present = |name: &str| fields.get(name).filter(|value| !value.is_null());
        let enabled = match present("enabled") {
            None => None,
            Some(Value::Bool(enabled)) => Some(*enabled),
            Some(_) => return Err(Invalid::new("agent.enabled", "must be true or false")),
        };
        let confirm = match present("confirm") {
            None => None,
            Some(value) => Some(value.as_str().and_then(Confirm::parse).ok_or_else(|| {
                Invalid::new(
                    "agent.confirm",
                    "must be one of \"never\", \"once_per_host\", \"always\"",
                )
            })?),
        };
        let forwarded = match present("forwarded") {
            None => None,
            Some(value) => Some(value.as_str().and_then(Forwarded::parse).ok_or_else(|| {
                Invalid::new(
                    "agent.forwarded",
                    "must be one of \"deny\", \"confirm\", \"allow\"",
                )
            })?),
        };
        Ok(AgentPatch {
            enabled,
            confirm,
            forwarded,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::model::agent::{AgentPatch, AgentPolicy, Confirm, Forwarded, Reason, Verdict};

    fn policy(enabled: bool, confirm: Confirm, forwarded: Forwarded) -> AgentPolicy {
        AgentPolicy {
            enabled,
            confirm,
            forwarded,
        }
    }

    #[test]
    fn a_new_key_is_offered_signs_locally_without_asking_and_refuses_forwarding() {
        let default = AgentPolicy::default();
        assert_eq!(default.verdict(false, false), (Verdict::Sign, None));
        assert_eq!(default.verdict(true, false), (Verdict::Refuse, None));
    }

    #[test]
    fn a_disabled_key_is_refused_whatever_else_it_allows() {
        let disabled = policy(false, Confirm::Never, Forwarded::Allow);
        assert_eq!(disabled.verdict(false, true), (Verdict::Refuse, None));
        assert_eq!(disabled.verdict(true, true), (Verdict::Refuse, None));
    }

    #[test]
    fn confirm_always_asks_even_for_a_host_already_approved() {
        let always = policy(true, Confirm::Always, Forwarded::Allow);
        assert_eq!(
            always.verdict(false, true),
            (Verdict::AskUser, Some(Reason::Confirm))
        );
    }

    #[test]
    fn once_per_host_asks_for_a_new_host_and_signs_for_an_approved_one() {
        let once = policy(true, Confirm::OncePerHost, Forwarded::Deny);
        assert_eq!(
            once.verdict(false, false),
            (Verdict::AskUser, Some(Reason::Confirm))
        );
        assert_eq!(once.verdict(false, true), (Verdict::Sign, None));
    }

    #[test]
    fn forwarded_confirm_asks_even_when_confirm_is_never() {
        let ask = policy(true, Confirm::Never, Forwarded::Confirm);
        assert_eq!(
            ask.verdict(true, false),
            (Verdict::AskUser, Some(Reason::Forwarded))
        );
        assert_eq!(ask.verdict(false, false), (Verdict::Sign, None));
    }

    #[test]
    fn forwarded_allow_follows_confirm() {
        let allow = policy(true, Confirm::Never, Forwarded::Allow);
        assert_eq!(allow.verdict(true, false), (Verdict::Sign, None));
        let allow_always = policy(true, Confirm::Always, Forwarded::Allow);
        assert_eq!(
            allow_always.verdict(true, false),
            (Verdict::AskUser, Some(Reason::Confirm))
        );
    }

    #[test]
    fn unknown_stored_values_read_as_the_strictest() {
        let stored = AgentPolicy::from_stored(true, "sometimes", "maybe");
        assert_eq!(stored, policy(true, Confirm::Always, Forwarded::Deny));
    }

    #[test]
    fn patch_changes_only_the_fields_it_names() {
        let patch = AgentPatch::parse(&json!({"confirm": "once_per_host", "x": 1})).unwrap();
        let patched = AgentPolicy::default().patched(patch);
        assert_eq!(patched, policy(true, Confirm::OncePerHost, Forwarded::Deny));
        let nulls = AgentPatch::parse(&json!({"enabled": null, "forwarded": null})).unwrap();
        assert_eq!(nulls, AgentPatch::default());
    }

    #[test]
    fn patch_with_every_accepted_value_reads() {
        for confirm in ["never", "once_per_host", "always"] {
            let patch = AgentPatch::parse(&json!({ "confirm": confirm })).unwrap();
            assert_eq!(patch.confirm.map(Confirm::as_str), Some(confirm));
        }
        for forwarded in ["deny", "confirm", "allow"] {
            let patch = AgentPatch::parse(&json!({ "forwarded": forwarded })).unwrap();
            assert_eq!(patch.forwarded.map(Forwarded::as_str), Some(forwarded));
        }
        let patch = AgentPatch::parse(&json!({"enabled": false})).unwrap();
        assert_eq!(patch.enabled, Some(false));
    }

    #[test]
    fn patch_with_a_wrong_value_or_type_names_the_field() {
        for (body, field) in [
            (json!(true), "agent"),
            (json!({"enabled": "yes"}), "agent.enabled"),
            (json!({"confirm": "Always"}), "agent.confirm"),
            (json!({"confirm": 1}), "agent.confirm"),
            (json!({"forwarded": "ask"}), "agent.forwarded"),
        ] {
            assert_eq!(AgentPatch::parse(&body).unwrap_err().field, field, "{body}");
        }
    }

    #[test]
    fn policy_shows_as_the_api_names_it() {
        let shown =
            serde_json::to_value(policy(true, Confirm::OncePerHost, Forwarded::Confirm)).unwrap();
        assert_eq!(
            shown,
            json!({"enabled": true, "confirm": "once_per_host", "forwarded": "confirm"})
        );
    }
}
