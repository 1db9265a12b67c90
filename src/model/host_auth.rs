//! How a host authenticates: the auth type, what a request said about `auth` (without the
//! password's value), and the one rule that settles a host's auth on create and update
//! (docs/api.md, Hosts: `auth`).
//!
//! Invariants: no secret value: a password is only ever `PasswordField`, what kind of value
//! the request carried.

use serde_json::Value;

use crate::model::validate::{self, Invalid};

/// How a host authenticates (docs/api.md, Hosts: `auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthType {
    Password,
    Key,
    Agent,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::Password => "password",
            AuthType::Key => "key",
            AuthType::Agent => "agent",
        }
    }

    pub fn parse(text: &str) -> Option<AuthType> {
        match text {
            "password" => Some(AuthType::Password),
            "key" => Some(AuthType::Key),
            "agent" => Some(AuthType::Agent),
            _ => None,
        }
    }
}

/// What a request said about `auth.password`, without the value itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordField {
    /// Not in the body.
    Absent,
    /// `null` or `""`: no stored password (on update: remove the stored one).
    Cleared,
    /// A non-empty string; the api layer holds it as a `Secret`.
    Given,
}

/// What to do with the stored password once a create or update is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordAction {
    /// Leave the stored value (or its absence) as it is.
    Keep,
    /// Store no password (drop any stored one).
    Clear,
    /// Store the password the request carried.
    Store,
}

/// The auth a host ends up with after a create or update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthChange {
    pub auth_type: AuthType,
    pub key_id: Option<String>,
    pub password: PasswordAction,
}

/// The `auth` object of an update, each part optional.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthPatch {
    pub auth_type: Option<AuthType>,
    pub key_id: IdField,
    pub password: PasswordField,
}

/// What a request said about a reference such as `auth.key_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdField {
    Absent,
    /// `null` or `""`.
    Cleared,
    Given(String),
}

/// The auth a host ends up with, from the request's `auth` and the host's current auth
/// (`None` on create).
///
/// docs/api.md, Hosts: type `key` requires `key_id`. Decisions of this service: a non-empty
/// `key_id` with another type, or a non-empty `password` with a type other than `password`,
/// is refused rather than silently dropped; switching away from `password` drops the stored
/// password, and switching away from `key` drops `key_id`; an update that leaves the type
/// at `key` may omit `key_id` to keep the current key.
pub fn resolve_auth(
    patch: &AuthPatch,
    current: Option<(AuthType, Option<&str>)>,
) -> Result<AuthChange, Invalid> {
    let current_type = current.map(|(auth_type, _)| auth_type);
    let auth_type = match (patch.auth_type, current_type) {
        (Some(auth_type), _) | (None, Some(auth_type)) => auth_type,
        (None, None) => return Err(Invalid::new("auth.type", "is required")),
    };
    if auth_type != AuthType::Key && matches!(patch.key_id, IdField::Given(_)) {
        return Err(Invalid::new(
            "auth.key_id",
            "is only allowed with auth.type \"key\"",
        ));
    }
    if auth_type != AuthType::Password && patch.password == PasswordField::Given {
        return Err(Invalid::new(
            "auth.password",
            "is only allowed with auth.type \"password\"",
        ));
    }
    let key_id = match (auth_type, &patch.key_id, current) {
        (AuthType::Key, IdField::Given(id), _) => Some(id.clone()),
        (AuthType::Key, IdField::Absent, Some((AuthType::Key, Some(id)))) => Some(id.to_owned()),
        (AuthType::Key, _, _) => {
            return Err(Invalid::new(
                "auth.key_id",
                "is required with auth.type \"key\"",
            ))
        }
        (AuthType::Password | AuthType::Agent, _, _) => None,
    };
    let password = match (auth_type, patch.password, current_type) {
        (AuthType::Password, PasswordField::Given, _) => PasswordAction::Store,
        (AuthType::Password, PasswordField::Absent, Some(AuthType::Password)) => {
            PasswordAction::Keep
        }
        _ => PasswordAction::Clear,
    };
    Ok(AuthChange {
        auth_type,
        key_id,
        password,
    })
}

/// The `auth` object, each part optional (`resolve_auth` applies what is required).
pub fn auth_patch(value: &Value, password: PasswordField) -> Result<AuthPatch, Invalid> {
    let Value::Object(auth) = value else {
        return Err(Invalid::new("auth", "must be an object"));
    };
    let auth_type = match auth.get("type") {
        None => None,
        Some(Value::String(text)) if AuthType::parse(text).is_some() => AuthType::parse(text),
        Some(_) => {
            return Err(Invalid::new(
                "auth.type",
                "must be one of password, key, agent",
            ))
        }
    };
    let key_id = match auth.get("key_id") {
        None => IdField::Absent,
        Some(value) => match validate::optional_id("auth.key_id", value)? {
            None => IdField::Cleared,
            Some(id) => IdField::Given(id),
        },
    };
    Ok(AuthPatch {
        auth_type,
        key_id,
        password,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::model::host_auth::{
        resolve_auth, AuthChange, AuthPatch, AuthType, IdField, PasswordAction, PasswordField,
    };

    fn auth(auth_type: Option<AuthType>, key_id: IdField, password: PasswordField) -> AuthPatch {
        AuthPatch {
            auth_type,
            key_id,
            password,
        }
    }

    #[test]
    fn key_type_requires_a_key_id() {
        let patch = auth(Some(AuthType::Key), IdField::Absent, PasswordField::Absent);
        assert_eq!(resolve_auth(&patch, None).unwrap_err().field, "auth.key_id");
        let patch = auth(Some(AuthType::Key), IdField::Cleared, PasswordField::Absent);
        assert_eq!(resolve_auth(&patch, None).unwrap_err().field, "auth.key_id");
        let patch = auth(
            Some(AuthType::Key),
            IdField::Given("k".into()),
            PasswordField::Absent,
        );
        assert_eq!(
            resolve_auth(&patch, None).unwrap(),
            AuthChange {
                auth_type: AuthType::Key,
                key_id: Some("k".into()),
                password: PasswordAction::Clear
            }
        );
    }

    #[test]
    fn key_id_with_another_type_is_rejected_unless_empty() {
        for auth_type in [AuthType::Password, AuthType::Agent] {
            let patch = auth(
                Some(auth_type),
                IdField::Given("k".into()),
                PasswordField::Absent,
            );
            assert_eq!(resolve_auth(&patch, None).unwrap_err().field, "auth.key_id");
            let patch = auth(Some(auth_type), IdField::Cleared, PasswordField::Absent);
            assert_eq!(resolve_auth(&patch, None).unwrap().key_id, None);
        }
    }

    #[test]
    fn password_with_another_type_is_rejected_unless_empty() {
        for auth_type in [AuthType::Key, AuthType::Agent] {
            let key_id = match auth_type {
                AuthType::Key => IdField::Given("k".into()),
                _ => IdField::Absent,
            };
            let patch = auth(Some(auth_type), key_id.clone(), PasswordField::Given);
            assert_eq!(
                resolve_auth(&patch, None).unwrap_err().field,
                "auth.password"
            );
            let patch = auth(Some(auth_type), key_id, PasswordField::Cleared);
            assert_eq!(
                resolve_auth(&patch, None).unwrap().password,
                PasswordAction::Clear
            );
        }
    }

    #[test]
    fn password_type_stores_a_given_password_and_not_an_empty_one() {
        let given = auth(
            Some(AuthType::Password),
            IdField::Absent,
            PasswordField::Given,
        );
        assert_eq!(
            resolve_auth(&given, None).unwrap().password,
            PasswordAction::Store
        );
        let empty = auth(
            Some(AuthType::Password),
            IdField::Absent,
            PasswordField::Cleared,
        );
        assert_eq!(
            resolve_auth(&empty, None).unwrap().password,
            PasswordAction::Clear
        );
    }

    #[test]
    fn update_without_password_keeps_it_only_while_the_type_stays_password() {
        let patch = auth(None, IdField::Absent, PasswordField::Absent);
        let current = Some((AuthType::Password, None));
        assert_eq!(
            resolve_auth(&patch, current).unwrap().password,
            PasswordAction::Keep
        );
        let to_agent = auth(
            Some(AuthType::Agent),
            IdField::Absent,
            PasswordField::Absent,
        );
        assert_eq!(
            resolve_auth(&to_agent, current).unwrap().password,
            PasswordAction::Clear
        );
    }

    #[test]
    fn update_that_stays_key_may_omit_key_id() {
        let patch = auth(None, IdField::Absent, PasswordField::Absent);
        let change = resolve_auth(&patch, Some((AuthType::Key, Some("k1")))).unwrap();
        assert_eq!(change.auth_type, AuthType::Key);
        assert_eq!(change.key_id.as_deref(), Some("k1"));
    }

    #[test]
    fn switching_to_key_from_password_needs_a_key_id() {
        let patch = auth(Some(AuthType::Key), IdField::Absent, PasswordField::Absent);
        assert_eq!(
            resolve_auth(&patch, Some((AuthType::Password, None)))
                .unwrap_err()
                .field,
            "auth.key_id"
        );
    }
}
