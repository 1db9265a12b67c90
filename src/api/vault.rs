//! `/api/vault` endpoints: status, unlock, lock, set or change the master password, remove it
//! (docs/api.md, "Vault").
//!
//! Each handler parses its body and calls the vault session (`session::Session`), which
//! keeps the rules: PBKDF2 (`WrappedKey::open`, `NewPassword::derive`) and the delay after a
//! wrong password run with no lock held, in their turn among
//! `session::MAX_PASSWORD_DERIVATIONS` places, never refused; a password change holds the
//! vault lock (then the db lock) across its one write and is refused as busy when the
//! password changed meanwhile.
//!
//! Invariants: no password is ever logged, echoed or kept outside `Secret`; passwords are
//! decoded from the body's JSON text straight into one.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::session::ChangeError;
use crate::state::AppState;
use crate::store::audit;
use crate::vault::{DataKey, NewPassword, Secret, WrappedKey, MAX_PASSWORD_BYTES};

/// `GET /api/vault` and the answer of the password endpoints.
#[derive(Serialize)]
struct VaultView {
    vault_locked: bool,
    has_password: bool,
    /// `--auto-lock` in seconds; 0 = never.
    auto_lock_seconds: u64,
}

/// The answer of unlock and lock.
#[derive(Serialize)]
struct LockView {
    vault_locked: bool,
}

/// Password fields stay JSON text in the body until `password_field` decodes them into a
/// `Secret` (absent and `null` are `None`).
#[derive(Deserialize, Default)]
struct UnlockInput<'a> {
    #[serde(borrow)]
    password: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct SetPasswordInput<'a> {
    #[serde(borrow)]
    current_password: Option<&'a RawValue>,
    #[serde(borrow)]
    new_password: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct RemovePasswordInput<'a> {
    #[serde(borrow)]
    current_password: Option<&'a RawValue>,
}

/// `GET /api/vault`: answered while locked too.
pub fn status(state: &AppState) -> Result<Reply, ApiError> {
    let (vault_locked, has_password) = {
        let vault = state.session.vault();
        (vault.is_locked(), vault.has_password())
    };
    let view = VaultView {
        vault_locked,
        has_password,
        auto_lock_seconds: state.config.auto_lock.map_or(0, |after| after.as_secs()),
    };
    Reply::json(200, &view)
}

/// `POST /api/vault/unlock {password}`: 200 `{vault_locked: false}` (also when already
/// unlocked and the password is right), 401 `INVALID_PASSWORD`, 409 `VAULT_NO_PASSWORD`.
pub fn unlock(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let input: UnlockInput = body(req)?;
    let password = required(password_field(input.password, "password")?, "password")?;
    // Shared with the SSH agent's UNLOCK: one guess throttle, one audit and change entry.
    state.session.unlock(&state.db, &password, "request")?;
    log::info!("vault unlocked");
    Reply::json(
        200,
        &LockView {
            vault_locked: false,
        },
    )
}

/// `POST /api/vault/lock`: 200 `{vault_locked: true}` (also when already locked), 409
/// `VAULT_NO_PASSWORD` when there would be no way back in.
pub fn lock(state: &AppState) -> Result<Reply, ApiError> {
    state.lock_vault("request")?;
    log::info!("vault locked");
    Reply::json(200, &LockView { vault_locked: true })
}

/// `PUT /api/vault/password {current_password?, new_password}`: sets the first password
/// (`current_password` is then ignored) or changes it (`current_password` required). Only
/// the data key is re-wrapped. Answers the vault status.
pub fn set_password(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let input: SetPasswordInput = body(req)?;
    let new_password = new_password_field(input.new_password)?;
    let current_password = password_field(input.current_password, "current_password")?;
    let expected = current_wrapped_key(state);
    if let Some(wrapped) = &expected {
        let current_password = required(current_password, "current_password")?;
        check_password(
            state,
            wrapped,
            &current_password,
            audit::VAULT_PASSWORD_CHECK_FAILED,
        )?;
    }
    let new = {
        let _turn = state.session.derivation_turn();
        NewPassword::derive(new_password.expose())
    };
    changed(
        state
            .session
            .set_password(&state.db, expected.as_ref(), &new),
    )?;
    match expected {
        None => log::info!("master password set"),
        Some(_) => log::info!("master password changed"),
    }
    status(state)
}

/// `DELETE /api/vault/password {current_password}`: back to no master password; the data
/// key is stored unwrapped again. Answers the vault status.
pub fn remove_password(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let input: RemovePasswordInput = body(req)?;
    let current_password = required(
        password_field(input.current_password, "current_password")?,
        "current_password",
    )?;
    let Some(wrapped) = current_wrapped_key(state) else {
        return Err(ApiError::VaultNoPassword);
    };
    check_password(
        state,
        &wrapped,
        &current_password,
        audit::VAULT_PASSWORD_CHECK_FAILED,
    )?;
    changed(state.session.remove_password(&state.db, &wrapped))?;
    log::info!("master password removed");
    status(state)
}

/// The JSON body; no body at all reads as `{}`, so validation names the missing field.
fn body<'a, T: Deserialize<'a> + Default>(req: &'a Req) -> Result<T, ApiError> {
    if req.body_is_empty() {
        return Ok(T::default());
    }
    req.json()
}

/// A password field: absent or `null` is `None`; a string is decoded from its JSON text
/// straight into a `Secret` (no copy in serde_json's scratch buffer); any other JSON type is
/// a validation error (which never quotes the value).
fn password_field(value: Option<&RawValue>, field: &str) -> Result<Option<Secret>, ApiError> {
    match value {
        None => Ok(None),
        Some(raw) => match Secret::from_json_string(raw.get()) {
            Some(secret) => Ok(Some(secret)),
            None => Err(ApiError::validation(field, "must be a string")),
        },
    }
}

fn required(password: Option<Secret>, field: &str) -> Result<Secret, ApiError> {
    password.ok_or_else(|| ApiError::validation(field, "is required"))
}

/// docs/api.md "Vault": a new master password is 1 to
/// `MAX_PASSWORD_BYTES` bytes of UTF-8.
fn new_password_field(value: Option<&RawValue>) -> Result<Secret, ApiError> {
    let password = required(password_field(value, "new_password")?, "new_password")?;
    if password.is_empty() {
        return Err(ApiError::validation("new_password", "must not be empty"));
    }
    if password.expose().len() > MAX_PASSWORD_BYTES {
        return Err(ApiError::validation(
            "new_password",
            format!("must be at most {MAX_PASSWORD_BYTES} bytes of UTF-8"),
        ));
    }
    Ok(password)
}

/// The wrapped key a password is checked against (`Session::wrapped_key`: copied out so
/// that the vault lock is released before PBKDF2 runs). `None` when no master password is set.
fn current_wrapped_key(state: &AppState) -> Option<WrappedKey> {
    state.session.wrapped_key()
}

/// Checks `password` against `wrapped` (`Session::check_password`: the derivation in its
/// turn, and a wrong password's delay, no lock held); a wrong one is audited as
/// `failed_event`.
fn check_password(
    state: &AppState,
    wrapped: &WrappedKey,
    password: &Secret,
    failed_event: &str,
) -> Result<DataKey, ApiError> {
    Ok(state
        .session
        .check_password(&state.db, wrapped, password, failed_event)?)
}

/// The answer to a password change the session refused. Another request changed or
/// removed the password while this one was checking it: the check no longer says
/// anything, and the client may retry and get a definite answer.
fn changed(result: Result<(), ChangeError>) -> Result<(), ApiError> {
    result.map_err(|err| match err {
        ChangeError::Vault(err) => ApiError::from(err),
        ChangeError::Store(err) => ApiError::from(err),
        ChangeError::ChangedMeanwhile => {
            log::warn!("the master password changed during a password check; answering busy");
            ApiError::Busy
        }
    })
}
