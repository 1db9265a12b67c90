//! The handlers, and the helpers every handler shares: the JSON body reader
//! (`JsonBody`), the JSON reply (`JsonReply`), a handler error's reply (`error_reply`), the
//! number parameters, and the certificates `connect` and the export use. `Req` and `Reply` belong to the HTTP layer (`http::message`).
//!
//! Invariants: no HTTP-parser type appears here; JSON errors never echo the offending
//! input, which could be a secret.

pub mod agent;
pub mod agent_use;
pub mod audit;
pub mod batch;
pub mod changes;
pub mod connect;
pub mod environment;
pub mod export;
pub mod forwards;
pub mod groups;
pub mod health;
pub mod history;
pub mod hosts;
pub mod identities;
#[cfg(test)]
mod identities_tests;
pub mod identity_use;
pub mod import;
pub mod keys;
pub mod known_hosts;
pub mod openapi;
#[cfg(test)]
mod query_tests;
pub mod query_use;
pub mod revision;
pub mod search;
pub mod session_use;
pub mod snapshots;
pub mod ssh_config;
pub mod sync;
pub mod tags;
pub mod vault;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::model::certificate;
use crate::model::interop::ChainVerdict;
use crate::state::AppState;
use crate::{sshkey, store};

/// The request and reply values, owned by the HTTP layer; re-exported for the handlers.
pub use crate::http::{Reply, Req, JSON};

/// A request's body read as JSON (`req.json()`), for handlers.
pub trait JsonBody {
    /// Parses the body as JSON into `T`. Input types take the widest JSON types so that
    /// validation, not serde, names the field; a body that is not JSON is `INVALID_JSON`.
    /// `T` may borrow from the body: a secret kept as a `&RawValue` is decoded by
    /// `Secret::from_json_string` without going through serde_json's scratch buffer.
    fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError>;
}

impl JsonBody for Req {
    fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        if self.body_is_empty() {
            return Err(ApiError::InvalidJson(
                "the request has no body; a JSON object is expected".into(),
            ));
        }
        match serde_json::from_slice(self.body()) {
            Ok(value) => Ok(value),
            // serde's data errors quote the offending value, which may be a password:
            // only the position is reported.
            Err(err) if err.is_data() => Err(ApiError::validation(
                "body",
                format!(
                    "a field has the wrong JSON type or the body is not an object (line {} column {})",
                    err.line(),
                    err.column()
                ),
            )),
            Err(err) => Err(ApiError::InvalidJson(format!(
                "{} at line {} column {}",
                if err.is_eof() { "unexpected end of input" } else { "syntax error" },
                err.line(),
                err.column()
            ))),
        }
    }
}

/// A value rendered as a JSON reply (`Reply::json(200, &view)`), for handlers.
pub trait JsonReply: Sized {
    fn json<T: Serialize>(status: u16, value: &T) -> Result<Self, ApiError>;
}

impl JsonReply for Reply {
    fn json<T: Serialize>(status: u16, value: &T) -> Result<Reply, ApiError> {
        let body = serde_json::to_vec(value).map_err(ApiError::internal)?;
        Ok(Reply::json_bytes(status, body))
    }
}

/// The answer to a handler's error: the API's error body (shaped by `Reply::error`) with
/// the headers the error implies. An `Internal` cause is logged by the router, never here.
pub fn error_reply(err: &ApiError) -> Reply {
    let reply = Reply::error(err.status(), err.code(), err.message(), err.details());
    match err {
        ApiError::Busy => reply.with_header("Retry-After", "1"),
        ApiError::PreconditionFailed { current, .. } => {
            reply.with_header("ETag", revision::etag(*current))
        }
        _ => reply,
    }
}

/// A query parameter of plain digits: `None` when absent, 400 `VALIDATION_ERROR` when it is
/// not digits or below `min`; above `max` (or too large for any integer) it is `max`.
pub fn number_parameter(
    req: &Req,
    name: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, ApiError> {
    let Some(text) = req.query(name) else {
        return Ok(None);
    };
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(ApiError::parameter(
            name,
            format!("must be an integer of at least {min}"),
        ));
    }
    let number = text.parse::<u64>().unwrap_or(u64::MAX);
    if number < min {
        return Err(ApiError::parameter(
            name,
            format!("must be an integer of at least {min}"),
        ));
    }
    Ok(Some(number.min(max)))
}

/// A judged jump chain as an answer: an unknown hop is 404 `HOST_NOT_FOUND` naming the field,
/// a loop or a repeat 400 `INVALID_JUMP_CHAIN`. `within` prefixes the field (`defaults.` for
/// a group's default chain). For hosts' and groups' chains alike.
pub fn refuse_chain(verdict: ChainVerdict, within: &str) -> Result<(), ApiError> {
    let Some(details) = verdict.details() else {
        return Ok(());
    };
    let details = format!("{within}{details}");
    match verdict {
        ChainVerdict::UnknownHop(_) => Err(ApiError::JumpHostNotFound(details)),
        _ => Err(ApiError::InvalidJumpChain(details)),
    }
}

/// The certificate line `connect` hands out with key `key_id` for a login as `user`
/// (docs/api.md "Certificates"): of its certificates valid now that cover `user`, the one
/// that ends last; `None` when none does.
pub fn certificate_in_use(
    state: &AppState,
    key_id: &str,
    user: &str,
) -> Result<Option<String>, ApiError> {
    let (key, texts) = state.db.read(|conn| {
        let key = store::keys::by_id(conn, key_id)?;
        Ok::<_, ApiError>((key, store::certificates::of_key(conn, key_id)?))
    })?;
    let certificates = sshkey::attached(&texts, &key.public_key);
    let now = store::certificates::now_seconds();
    Ok(certificate::in_use_for(&certificates, now, user).map(|cert| cert.text.clone()))
}

/// The keys with a certificate in use (valid now, the Key object's `certificate`), by id,
/// with its principals: the export's `CertificateFile` lines.
pub fn certified_keys(state: &AppState) -> Result<HashMap<String, Vec<String>>, ApiError> {
    let (keys, mut texts) = state.db.read(|conn| {
        Ok::<_, ApiError>((store::keys::list(conn)?, store::certificates::all(conn)?))
    })?;
    let now = store::certificates::now_seconds();
    Ok(keys
        .into_iter()
        .filter_map(|key| {
            let texts = texts.remove(&key.id)?;
            let certificates = sshkey::attached(&texts, &key.public_key);
            let principals = certificate::in_use(&certificates, now)?.principals.clone();
            Some((key.id, principals))
        })
        .collect())
}

/// An automatic snapshot of the catalogue before a write that could lose much of it: an
/// import, a batch delete, a sync merge (docs/reliability.md, "Snapshots"). Its failure (507
/// `STORAGE_FULL` on a full disk) fails the write it guards, which then does not run.
pub fn snapshot_before(
    state: &AppState,
    reason: store::snapshots::Reason,
) -> Result<store::snapshots::Snapshot, ApiError> {
    Ok(state
        .db
        .take_snapshot(&crate::vault::new_id(), reason, None)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zeroize::Zeroizing;

    use super::*;
    use crate::http::Method;

    #[test]
    fn json_type_errors_do_not_echo_the_value() {
        #[derive(serde::Deserialize, Debug)]
        struct Input {
            #[allow(dead_code)]
            port: u16,
        }
        let body = Zeroizing::new(br#"{"port": "hunter2-secret"}"#.to_vec());
        let req = Req::new(Method::Post, "/x", body).unwrap();
        let err = req.json::<Input>().unwrap_err();
        assert_eq!(err.code(), "VALIDATION_ERROR");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn number_parameter_at_its_minimum_is_accepted_and_below_it_rejected() {
        let at_min = Req::get("/x?limit=1").unwrap();
        assert_eq!(number_parameter(&at_min, "limit", 1, 10).unwrap(), Some(1));
        let below = Req::get("/x?limit=0").unwrap();
        let err = number_parameter(&below, "limit", 1, 10).unwrap_err();
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn number_parameter_above_its_maximum_is_clamped() {
        let at_max = Req::get("/x?wait=30").unwrap();
        assert_eq!(number_parameter(&at_max, "wait", 0, 30).unwrap(), Some(30));
        let above = Req::get("/x?wait=31").unwrap();
        assert_eq!(number_parameter(&above, "wait", 0, 30).unwrap(), Some(30));
        let huge = Req::get("/x?wait=99999999999999999999999").unwrap();
        assert_eq!(number_parameter(&huge, "wait", 0, 30).unwrap(), Some(30));
    }

    #[test]
    fn number_parameter_that_is_not_plain_digits_is_rejected() {
        for bad in ["", "-1", "+1", "1.5", "1e3", " 1", "x"] {
            let req = Req::get(&format!("/x?since={bad}")).unwrap();
            let err = number_parameter(&req, "since", 0, 10).unwrap_err();
            assert_eq!(err.code(), "VALIDATION_ERROR", "{bad:?}");
        }
        assert_eq!(
            number_parameter(&Req::get("/x").unwrap(), "since", 0, 10).unwrap(),
            None
        );
    }

    #[test]
    fn non_json_body_is_invalid_json() {
        let req = Req::new(Method::Post, "/x", Zeroizing::new(b"{not json".to_vec())).unwrap();
        assert_eq!(
            req.json::<serde_json::Value>().unwrap_err().code(),
            "INVALID_JSON"
        );
    }
}
