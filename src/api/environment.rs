//! Secret `set_env` values (docs/forwards.md, "Startup command and environment") for the
//! handlers that take them (hosts, group defaults) and the one that hands them out
//! (`connect`): taken out of a body into `Secret`s, sealed for their owner and name, copied
//! to another owner, opened.
//!
//! Invariants: a secret value leaves the body before anything else reads it; it is sealed
//! before the database transaction and opened after it (lock order: vault, then database),
//! bound to its owner and name; no error here carries a value.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::model::environment::{secret_value_problem, EnvEntry, EnvValue};
use crate::model::forward_rule::Owner;
use crate::state::AppState;
use crate::store::environment::{seal_row, SEAL_FIELD, SEAL_TABLE};
use crate::vault::{SealContext, Secret};

/// The secret values a body's `set_env` carried, by index, taken out of it.
pub struct TakenEnv {
    pub given: BTreeSet<usize>,
    values: Vec<(usize, Secret)>,
}

/// Takes the `value` of every `{name, value, secret: true}` item of `object.set_env` out of
/// the body. `prefix` names where `object` is (`""`, `defaults.`) in errors.
pub fn take(object: &mut Map<String, Value>, prefix: &str) -> Result<TakenEnv, ApiError> {
    let mut taken = TakenEnv {
        given: BTreeSet::new(),
        values: Vec::new(),
    };
    let Some(Value::Array(items)) = object.get_mut("set_env") else {
        return Ok(taken);
    };
    for (index, item) in items.iter_mut().enumerate() {
        let Value::Object(item) = item else { continue };
        if item.get("secret") != Some(&Value::Bool(true)) {
            continue;
        }
        match item.remove("value") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => {
                if let Some(rule) = secret_value_problem(&text) {
                    return Err(ApiError::validation(
                        &format!("{prefix}set_env[{index}].value"),
                        rule,
                    ));
                }
                taken.given.insert(index);
                taken.values.push((index, Secret::from_string(text)));
            }
            Some(_) => {
                return Err(ApiError::validation(
                    &format!("{prefix}set_env[{index}].value"),
                    "must be a string",
                ))
            }
        }
    }
    Ok(taken)
}

fn context<'a>(row_id: &'a str) -> SealContext<'a> {
    SealContext {
        table: SEAL_TABLE,
        row_id,
        field: SEAL_FIELD,
    }
}

impl TakenEnv {
    /// Seals each taken value for `owner` under the name `entries` (the checked list) gives
    /// its index. Takes the vault lock only for the seals.
    pub fn seal(
        self,
        state: &AppState,
        owner: &Owner,
        entries: &[EnvEntry],
    ) -> Result<Vec<(String, Vec<u8>)>, ApiError> {
        if self.values.is_empty() {
            return Ok(Vec::new());
        }
        let vault = state.session.vault();
        self.values
            .into_iter()
            .filter_map(|(index, secret)| {
                let entry = entries.get(index)?;
                let row = seal_row(owner, &entry.name);
                Some(
                    vault
                        .seal(context(&row), secret.expose())
                        .map(|sealed| (entry.name.clone(), sealed))
                        .map_err(ApiError::from),
                )
            })
            .collect()
    }
}

/// Opens `from`'s sealed values and seals them for `to` (a duplicated host).
pub fn reseal(
    state: &AppState,
    from: &Owner,
    to: &Owner,
    sealed: &[(String, Vec<u8>)],
) -> Result<Vec<(String, Vec<u8>)>, ApiError> {
    let vault = state.session.vault();
    sealed
        .iter()
        .map(|(name, bytes)| {
            let secret = vault.open(context(&seal_row(from, name)), bytes)?;
            let again = vault.seal(context(&seal_row(to, name)), secret.expose())?;
            Ok((name.clone(), again))
        })
        .collect()
}

/// Opens `owner`'s sealed values of the secret entries of `entries`, by name; an entry
/// whose value is missing is left out (it cannot be sent).
pub fn open(
    state: &AppState,
    owner: &Owner,
    entries: &[EnvEntry],
    sealed: &[(String, Vec<u8>)],
) -> Result<Vec<(String, Secret)>, ApiError> {
    let vault = state.session.vault();
    let mut out = Vec::new();
    for entry in entries {
        if !matches!(entry.value, EnvValue::Secret { .. }) {
            continue;
        }
        if let Some((_, bytes)) = sealed.iter().find(|(name, _)| *name == entry.name) {
            out.push((
                entry.name.clone(),
                vault.open(context(&seal_row(owner, &entry.name)), bytes)?,
            ));
        }
    }
    Ok(out)
}
