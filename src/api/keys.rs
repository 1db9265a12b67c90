//! `/api/keys` endpoints: import or generate a key (POST), list (filtered by certificate
//! expiry), get, rename or re-comment (PUT), delete; and a key's OpenSSH user certificates
//! (`/api/keys/:id/certificate`: attach or replace, remove).
//!
//! Invariants: a private key or passphrase moves from the request body into a
//! `vault::Secret` and is sealed before it reaches the store; no response here carries one
//! (only `hosts::connect` does). The slow work, RSA generation (seconds) and the bcrypt-pbkdf
//! check of an imported key's passphrase (up to ~8 s), runs while neither the vault nor the
//! db lock is held, each in one of a few places (`AppState::rsa_generations`,
//! `AppState::bcrypt_checks`); beyond them the answer is 503 `BUSY`, so other requests keep
//! being answered.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::api::revision::{etag, Precondition};
use crate::api::{JsonBody, JsonReply, Reply, Req};
use crate::error::ApiError;
use crate::model::certificate::{principal_set, Certificate, Filter};
use crate::model::key::{self, KeyPatch, KeySpec, KeyView};
use crate::model::name::Name;
use crate::sshkey::{self, ImportError, OpenSshKey};
use crate::state::AppState;
use crate::store::changes::Revised;
use crate::store::{self, keys::KeyUpdate, keys::NewKey};
use crate::vault::{SealContext, Secret};

/// `POST /api/keys`: imports when the body has `private_key`, generates otherwise: of the
/// given `type`, else ed25519 (docs/api.md, "Keys").
pub fn create(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let input: KeyInput = req.json()?;
    let name = Name::required(input.name.as_ref())?;
    let comment = input.comment.as_ref().map(key::comment).transpose()?;
    let passphrase = passphrase(input.passphrase)?;
    let private_key = private_key(input.private_key)?;
    let spec = match (&private_key, &input.key_type) {
        (Some(_), _) => None,
        (None, Some(key_type)) => Some(KeySpec::parse(key_type, input.bits.as_ref())?),
        // ed25519 is the default type, as with `ssh-keygen` without `-t`.
        (None, None) => Some(KeySpec::parse(
            &Value::String("ed25519".into()),
            input.bits.as_ref(),
        )?),
    };
    // Refuse a taken name before seconds of work; the insert checks again.
    if state
        .db
        .read(|conn| store::keys::name_taken(conn, name.key(), ""))?
    {
        return Err(ApiError::DuplicateName(
            "another key already has this name (names compare case-insensitively)".into(),
        ));
    }
    let made = match (private_key, spec) {
        (Some(text), _) => import(state, &text, passphrase.as_ref(), comment)?,
        (None, Some(spec)) => generate(state, spec, comment, passphrase.as_ref())?,
        (None, None) => return Err(ApiError::internal("neither import nor generation")),
    };
    let id = crate::vault::new_id();
    let (sealed_private_key, sealed_passphrase) = seal(state, &id, &made.key, passphrase)?;
    let row = NewKey {
        id: &id,
        key_type: made.key.info.key_type,
        public_key: &made.key.info.public_key,
        fingerprint: &made.key.info.fingerprint,
        comment: &made.comment,
        has_passphrase: made.key.encrypted,
        sealed_private_key: &sealed_private_key,
        sealed_passphrase: sealed_passphrase.as_deref(),
    };
    let stored = state.db.write(|tx| store::keys::insert(tx, &name, &row))?;
    key_reply(201, &stored, &[])
}

/// `GET /api/keys`: every key, by name (case-insensitively), then id; with
/// `certificate=expiring|expired` only the keys with a certificate in that state
/// (docs/api.md, "Certificates").
pub fn list(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let filter = req
        .query("certificate")
        .map(Filter::parse)
        .transpose()
        .map_err(|err| ApiError::parameter(&err.field, err.rule))?;
    let (keys, mut texts) = state.db.read(|conn| {
        Ok::<_, ApiError>((store::keys::list(conn)?, store::certificates::all(conn)?))
    })?;
    let now = store::certificates::now_seconds();
    let items = keys
        .iter()
        .filter_map(|key| {
            let texts = texts.remove(&key.id).unwrap_or_default();
            let certificates = sshkey::attached(&texts, &key.public_key);
            match filter {
                Some(filter) if !filter.matches(&certificates, now) => None,
                _ => Some(key.view(&certificates, now)),
            }
        })
        .collect();
    Reply::json(200, &KeyList { items })
}

/// `GET /api/keys/:id` (extension).
pub fn get(state: &AppState, id: &str) -> Result<Reply, ApiError> {
    let (key, texts) = state.db.read(|conn| {
        let key = store::keys::by_id(conn, id)?;
        Ok::<_, ApiError>((key, store::certificates::of_key(conn, id)?))
    })?;
    key_reply(200, &key, &texts)
}

/// `PUT /api/keys/:id/certificate` (docs/api.md, "Certificates"): attaches an OpenSSH
/// user certificate of this key; 201, or 200 when it replaced the one with the same
/// principals. 400 `INVALID_CERTIFICATE` for anything else.
pub fn put_certificate(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let input: CertificateInput = req.json()?;
    let precondition = Precondition::of(req)?;
    // 404, then 412, then the body's 400, as for every item route. Read and checked (a
    // signature check) before the transaction: a key's public key never changes, so the
    // check holds when the write finds the key again.
    let current = state.db.read(|conn| store::keys::by_id(conn, id))?;
    precondition.check(Revised::Key, current.revision)?;
    let Some(Value::String(text)) = input.certificate else {
        return Err(ApiError::validation(
            "certificate",
            "must be a string: the line of the -cert.pub file",
        ));
    };
    let certificate = sshkey::user_certificate(&text, &current.public_key)
        .map_err(|err| ApiError::InvalidCertificate(err.to_string()))?;
    let principals = certificate.principals_key();
    let (key, texts, replaced) = state.db.write(|tx| {
        let current = store::keys::by_id(tx, id)?;
        precondition.check(Revised::Key, current.revision)?;
        let status = certificate.status(store::certificates::now_seconds());
        let (key, replaced) =
            store::certificates::attach(tx, id, &principals, &certificate.text, status.as_str())?;
        Ok::<_, ApiError>((key, store::certificates::of_key(tx, id)?, replaced))
    })?;
    key_reply(if replaced { 200 } else { 201 }, &key, &texts)
}

/// `DELETE /api/keys/:id/certificate` (docs/api.md, "Certificates"): removes every
/// certificate of the key, or with `?principals=a,b` the one for exactly that principal
/// set (`principals=` for the one with none). 200 with the key; 404
/// `CERTIFICATE_NOT_FOUND` when there was none to remove.
pub fn delete_certificate(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let principals = req.query("principals").map(|text| {
        let set = principal_set(text.split(',').filter(|name| !name.is_empty()));
        serde_json::to_string(&set).unwrap_or_default()
    });
    let precondition = Precondition::of(req)?;
    let (key, texts) = state.db.write(|tx| {
        let current = store::keys::by_id(tx, id)?;
        precondition.check(Revised::Key, current.revision)?;
        let (key, removed) = store::certificates::remove(tx, id, principals.as_deref())?;
        if removed == 0 {
            return Err(ApiError::CertificateNotFound);
        }
        Ok((key, store::certificates::of_key(tx, id)?))
    })?;
    key_reply(200, &key, &texts)
}

/// `PUT /api/keys/:id` (extension): `name`, `comment` and the SSH agent's policy `agent`.
pub fn update(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let body: Map<String, Value> = req.json()?;
    let patch = KeyPatch::parse(&body)?;
    let precondition = Precondition::with_body(req, &body)?;
    let (key, texts) = state.db.write(|tx| {
        let current = store::keys::by_id(tx, id)?;
        precondition.check(Revised::Key, current.revision)?;
        if let Some(agent) = patch.agent {
            store::agent::set_policy(tx, id, &current.agent.patched(agent))?;
        }
        let update = KeyUpdate {
            name: patch.name.as_ref(),
            comment: patch.comment.as_deref(),
        };
        let key = store::keys::update(tx, id, &update)?;
        Ok::<_, ApiError>((key, store::certificates::of_key(tx, id)?))
    })?;
    key_reply(200, &key, &texts)
}

/// `DELETE /api/keys/:id` (extension): 204, or 409 `KEY_IN_USE` while hosts use the key.
pub fn delete(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let precondition = Precondition::of(req)?;
    state.db.write(|tx| {
        let current = store::changes::revision(tx, Revised::Key, id)?;
        precondition.check(Revised::Key, current)?;
        Ok::<_, ApiError>(store::keys::delete(tx, id)?)
    })?;
    Ok(Reply::no_content())
}

/// A single key as an answer, with its certificates (`texts`, as stored) and its revision
/// as the `ETag`.
fn key_reply(status: u16, key: &key::Key, texts: &[String]) -> Result<Reply, ApiError> {
    let certificates: Vec<Certificate> = sshkey::attached(texts, &key.public_key);
    let view = key.view(&certificates, store::certificates::now_seconds());
    Ok(Reply::json(status, &view)?.with_header("ETag", etag(key.revision)))
}

/// The certificate body: `{certificate}`. Widest JSON type, so validation names the field.
#[derive(Deserialize)]
struct CertificateInput {
    certificate: Option<Value>,
}

/// The create body. Widest JSON types, so validation names the field; unknown fields are
/// ignored. `null` is the same as absent.
#[derive(Deserialize)]
struct KeyInput<'a> {
    name: Option<Value>,
    /// Secrets stay JSON text in the body until decoded into a `Secret`.
    #[serde(borrow)]
    private_key: Option<&'a RawValue>,
    #[serde(borrow)]
    passphrase: Option<&'a RawValue>,
    #[serde(rename = "type")]
    key_type: Option<Value>,
    bits: Option<Value>,
    comment: Option<Value>,
}

#[derive(Serialize)]
struct KeyList {
    items: Vec<KeyView>,
}

/// An imported or generated key and the comment it will be stored with.
struct MadeKey {
    key: OpenSshKey,
    comment: String,
}

/// docs/api.md "Keys": an OpenSSH private key, checked with its passphrase when one is given
/// (bcrypt-pbkdf, only while one of `MAX_BCRYPT_CHECKS` places is free: else 503 `BUSY`).
/// The comment is the request's, else the one inside the key file.
fn import(
    state: &AppState,
    text: &Secret,
    passphrase: Option<&Secret>,
    comment: Option<String>,
) -> Result<MadeKey, ApiError> {
    let read = sshkey::read(text).map_err(import_error)?;
    let _place = match (read.is_encrypted(), passphrase) {
        (true, Some(_)) => Some(state.bcrypt_checks.try_take().ok_or(ApiError::Busy)?),
        _ => None,
    };
    let key = read.finish(passphrase).map_err(import_error)?;
    let comment = comment.unwrap_or_else(|| key::comment_from_key_file(&key.info.comment));
    Ok(MadeKey { key, comment })
}

/// How an import refusal answers: the passphrase's, the RSA size's and the text length's
/// errors name their field, the rest is `INVALID_KEY` saying why.
fn import_error(err: ImportError) -> ApiError {
    match err {
        ImportError::WrongPassphrase => ApiError::InvalidPassphrase,
        ImportError::NotEncrypted => ApiError::validation("passphrase", err.to_string()),
        ImportError::RsaTooSmall(_) | ImportError::RsaTooLarge(_) | ImportError::TooLong => {
            ApiError::validation("private_key", err.to_string())
        }
        other => ApiError::InvalidKey(other.to_string()),
    }
}

/// docs/api.md "Keys": a new key of `spec`; RSA only while one of `MAX_RSA_GENERATIONS`
/// places is free (else 503 `BUSY`). A passphrase costs bcrypt-pbkdf at 16 rounds (~120
/// ms), fixed here rather than by the request, so it takes no place.
fn generate(
    state: &AppState,
    spec: KeySpec,
    comment: Option<String>,
    passphrase: Option<&Secret>,
) -> Result<MadeKey, ApiError> {
    let comment = comment.unwrap_or_default();
    let _slot = match spec.is_slow() {
        true => Some(state.rsa_generations.try_take().ok_or(ApiError::Busy)?),
        false => None,
    };
    let key = sshkey::generate(spec, &comment, passphrase).map_err(ApiError::internal)?;
    Ok(MadeKey { key, comment })
}

/// Seals the private key text and the passphrase for row `id`. The vault guard lives only
/// inside this function: never across the db write (lock order: vault, then db).
fn seal(
    state: &AppState,
    id: &str,
    key: &OpenSshKey,
    passphrase: Option<Secret>,
) -> Result<(Vec<u8>, Option<Vec<u8>>), ApiError> {
    let context = |field| SealContext {
        table: "keys",
        row_id: id,
        field,
    };
    let vault = state.session.vault();
    let private_key = vault.seal(context("private_key"), key.text.expose())?;
    let passphrase = match passphrase {
        Some(passphrase) => Some(vault.seal(context("passphrase"), passphrase.expose())?),
        None => None,
    };
    Ok((private_key, passphrase))
}

/// `private_key` as a secret, decoded from its JSON text (its line ends are `\n` escapes,
/// which serde_json would decode in a growing scratch buffer freed unwiped): absent or
/// `null` means "not an import"; anything but a non-empty string is refused.
fn private_key(value: Option<&RawValue>) -> Result<Option<Secret>, ApiError> {
    let Some(raw) = value else {
        return Ok(None);
    };
    match Secret::from_json_string(raw.get()) {
        Some(text) if !text.expose_str().unwrap_or_default().trim().is_empty() => Ok(Some(text)),
        _ => Err(ApiError::validation(
            "private_key",
            "must be a non-empty string: the OpenSSH private key file's text",
        )),
    }
}

/// `passphrase` as a secret decoded from its JSON text: absent, `null` and `""` all mean
/// none (as `ssh-keygen -N ''`).
fn passphrase(value: Option<&RawValue>) -> Result<Option<Secret>, ApiError> {
    let Some(raw) = value else {
        return Ok(None);
    };
    match Secret::from_json_string(raw.get()) {
        Some(text) if text.is_empty() => Ok(None),
        Some(text) => Ok(Some(text)),
        None => Err(ApiError::validation("passphrase", "must be a string")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;
    use zeroize::Zeroizing;

    use crate::api::keys::create;
    use crate::api::Req;
    use crate::error::ApiError;
    use crate::http::Method;
    use crate::model::key::KeySpec;
    use crate::sshkey::{self, OpenSshKey};
    use crate::state::{AppState, MAX_BCRYPT_CHECKS, MAX_RSA_GENERATIONS};
    use crate::vault::{DataKey, Secret, Vault};

    fn state() -> AppState {
        AppState::for_tests(Vault::NoPassword(DataKey::generate()))
    }

    fn post(body: &str) -> Req {
        let body = Zeroizing::new(body.as_bytes().to_vec());
        Req::new(Method::Post, "/api/keys", body).unwrap()
    }

    /// A body that imports `key` (its OpenSSH text) with `passphrase`.
    fn import_body(name: &str, key: &OpenSshKey, passphrase: Option<&str>) -> Req {
        let body = json!({
            "name": name,
            "private_key": key.text.expose_str().unwrap(),
            "passphrase": passphrase,
        });
        post(&body.to_string())
    }

    #[test]
    fn rsa_generation_beyond_the_cap_is_busy_and_others_are_not() {
        let state = state();
        let taken: Vec<_> = (0..MAX_RSA_GENERATIONS)
            .map(|_| state.rsa_generations.try_take().unwrap())
            .collect();
        let err = create(&state, &post(r#"{"name": "r", "type": "rsa"}"#)).err();
        assert!(matches!(err, Some(ApiError::Busy)), "{err:?}");
        let reply = create(&state, &post(r#"{"name": "e", "type": "ed25519"}"#)).unwrap();
        assert_eq!(reply.status, 201);
        assert_eq!(
            state.rsa_generations.running(),
            MAX_RSA_GENERATIONS,
            "a refused generation gives back no place it did not take"
        );
        drop(taken);
    }

    #[test]
    fn rsa_generation_gives_its_place_back() {
        let state = state();
        let reply = create(
            &state,
            &post(r#"{"name": "r", "type": "rsa", "bits": 2048}"#),
        );
        assert_eq!(reply.unwrap().status, 201);
        assert_eq!(state.rsa_generations.running(), 0);
    }

    #[test]
    fn passphrase_check_beyond_the_cap_is_busy_and_imports_without_one_are_not() {
        let state = state();
        let passphrase = Secret::from_string("pass".into());
        let encrypted = sshkey::generate(KeySpec::Ed25519, "", Some(&passphrase)).unwrap();
        let plain = sshkey::generate(KeySpec::Ed25519, "", None).unwrap();
        let taken: Vec<_> = (0..MAX_BCRYPT_CHECKS)
            .map(|_| state.bcrypt_checks.try_take().unwrap())
            .collect();
        let err = create(&state, &import_body("a", &encrypted, Some("pass"))).err();
        assert!(matches!(err, Some(ApiError::Busy)), "{err:?}");
        for (name, key) in [("b", &encrypted), ("c", &plain)] {
            let reply = create(&state, &import_body(name, key, None)).unwrap();
            assert_eq!(reply.status, 201, "no passphrase, no bcrypt: {name}");
        }
        assert_eq!(state.bcrypt_checks.running(), MAX_BCRYPT_CHECKS);
        drop(taken);
    }

    #[test]
    fn passphrase_check_gives_its_place_back_right_or_wrong() {
        let state = state();
        let passphrase = Secret::from_string("pass".into());
        let encrypted = sshkey::generate(KeySpec::Ed25519, "", Some(&passphrase)).unwrap();
        let err = create(&state, &import_body("a", &encrypted, Some("wrong"))).err();
        assert!(matches!(err, Some(ApiError::InvalidPassphrase)), "{err:?}");
        let reply = create(&state, &import_body("a", &encrypted, Some("pass"))).unwrap();
        assert_eq!(reply.status, 201);
        assert_eq!(state.bcrypt_checks.running(), 0);
    }
}
