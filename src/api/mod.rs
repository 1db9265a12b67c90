//! The request and reply values handlers see, and the helpers every handler shares.
//!
//! Invariants: no HTTP-parser type appears here (`http/` builds `Req` and writes `Reply`);
//! request bodies live in wiped buffers because they may carry passwords; JSON errors never
//! echo the offending input, which could be a secret.

pub mod agent;
pub mod audit;
pub mod changes;
pub mod groups;
pub mod health;
pub mod history;
pub mod hosts;
pub mod keys;
pub mod known_hosts;
pub mod openapi;
pub mod revision;
pub mod ssh_config;
pub mod vault;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::ApiError;

/// docs/security.md, Who may talk to the service: request bodies are capped at 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The HTTP methods the router distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
    Other,
}

impl Method {
    /// Methods a route can be defined for, in the order an `Allow` header lists them.
    pub const ROUTABLE: [Method; 5] = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ];

    pub fn parse(name: &str) -> Method {
        match name {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            _ => Method::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other => "OTHER",
        }
    }
}

/// One parsed request: what the router and handlers need, nothing of the socket.
pub struct Req {
    pub method: Method,
    /// The decoded path, without the query string.
    pub path: String,
    query: HashMap<String, String>,
    body: Zeroizing<Vec<u8>>,
    /// The `If-Match` header as sent (several joined with `, `); `None` when absent.
    pub if_match: Option<String>,
}

impl Req {
    /// Splits `target` (path and query) and decodes both. A query that is not valid
    /// percent-encoded UTF-8, or names a parameter twice, is a 400.
    pub fn new(method: Method, target: &str, body: Zeroizing<Vec<u8>>) -> Result<Req, ApiError> {
        let (raw_path, raw_query) = match target.split_once('?') {
            Some((path, query)) => (path, query),
            None => (target, ""),
        };
        let path = percent_decode(raw_path, false).ok_or_else(|| {
            ApiError::BadRequest("the path is not valid percent-encoded UTF-8".into())
        })?;
        let mut query = HashMap::new();
        for pair in raw_query.split('&').filter(|pair| !pair.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decode(raw_name, true).ok_or_else(|| {
                ApiError::parameter(raw_name, "is not valid percent-encoded UTF-8")
            })?;
            let value = percent_decode(raw_value, true)
                .ok_or_else(|| ApiError::parameter(&name, "is not valid percent-encoded UTF-8"))?;
            if query.insert(name.clone(), value).is_some() {
                return Err(ApiError::parameter(&name, "is given more than once"));
            }
        }
        Ok(Req {
            method,
            path,
            query,
            body,
            if_match: None,
        })
    }

    /// The request with its `If-Match` header (docs/api.md, "Revisions and If-Match").
    pub fn with_if_match(mut self, if_match: Option<String>) -> Req {
        self.if_match = if_match;
        self
    }

    /// The path split on `/`, without the empty segment before the leading slash. A trailing
    /// slash leaves an empty last segment, so `/api/hosts/` is not `/api/hosts`.
    pub fn segments(&self) -> Vec<&str> {
        self.path
            .strip_prefix('/')
            .unwrap_or(&self.path)
            .split('/')
            .collect()
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// True when the request carries no body bytes.
    pub fn body_is_empty(&self) -> bool {
        self.body.iter().all(u8::is_ascii_whitespace)
    }

    /// Parses the body as JSON into `T`. Input types take the widest JSON types so that
    /// validation, not serde, names the field; a body that is not JSON is `INVALID_JSON`.
    /// `T` may borrow from the body: a secret kept as a `&RawValue` is decoded by
    /// `Secret::from_json_string` without going through serde_json's scratch buffer.
    pub fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        if self.body_is_empty() {
            return Err(ApiError::InvalidJson(
                "the request has no body; a JSON object is expected".into(),
            ));
        }
        match serde_json::from_slice(&self.body) {
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

/// JSON, the content type of every reply but the config export.
pub const JSON: &str = "application/json";

/// A finished answer: status, content type, extra headers and a body (empty for 204).
pub struct Reply {
    pub status: u16,
    /// `JSON` for everything but `GET /api/export/ssh-config` (errors are always JSON).
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    /// Wiped on drop: the `connect` reply carries secrets.
    pub body: Zeroizing<Vec<u8>>,
}

impl Reply {
    pub fn json<T: Serialize>(status: u16, value: &T) -> Result<Reply, ApiError> {
        let body = serde_json::to_vec(value).map_err(ApiError::internal)?;
        Ok(Reply {
            status,
            content_type: JSON,
            headers: Vec::new(),
            body: Zeroizing::new(body),
        })
    }

    /// A JSON body already serialized (the group tree).
    pub fn json_bytes(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            content_type: JSON,
            headers: Vec::new(),
            body: Zeroizing::new(body),
        }
    }

    /// A 200 plain-text reply (the config exports).
    pub fn text(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: Zeroizing::new(body.into_bytes()),
        }
    }

    pub fn no_content() -> Reply {
        Reply {
            status: 204,
            content_type: JSON,
            headers: Vec::new(),
            body: Zeroizing::new(Vec::new()),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    /// The API's error body `{error, code, details}` with the headers the error implies.
    pub fn error(err: &ApiError) -> Reply {
        #[derive(Serialize)]
        struct ErrorBody<'a> {
            error: &'a str,
            code: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            details: Option<String>,
        }
        let body = ErrorBody {
            error: err.message(),
            code: err.code(),
            details: err.details(),
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_else(|_| {
            b"{\"error\":\"internal error\",\"code\":\"INTERNAL_ERROR\"}".to_vec()
        });
        let reply = Reply {
            status: err.status(),
            content_type: JSON,
            headers: Vec::new(),
            body: Zeroizing::new(bytes),
        };
        match err {
            ApiError::MethodNotAllowed(allow) => reply.with_header("Allow", allow.join(", ")),
            ApiError::Busy => reply.with_header("Retry-After", "1"),
            ApiError::PreconditionFailed { current, .. } => {
                reply.with_header("ETag", revision::etag(*current))
            }
            _ => reply,
        }
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

/// Decodes `%XX` escapes (and `+` as space in queries). `None` for a bad escape or bytes
/// that are not UTF-8.
fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let hex = bytes.get(index + 1..index + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                index += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                index += 1;
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn req(target: &str) -> Result<Req, ApiError> {
        Req::new(Method::Get, target, Zeroizing::new(Vec::new()))
    }

    #[test]
    fn query_values_are_percent_and_plus_decoded() {
        let req = req("/api/hosts?search=a%25b+c&tag=x%2Fy").unwrap();
        assert_eq!(req.query("search"), Some("a%b c"));
        assert_eq!(req.query("tag"), Some("x/y"));
        assert_eq!(req.path, "/api/hosts");
    }

    #[test]
    fn bad_percent_escape_is_rejected() {
        assert_eq!(req("/api/hosts?search=%zz").err().unwrap().status(), 400);
        assert_eq!(req("/api/hosts?search=%ff").err().unwrap().status(), 400);
    }

    #[test]
    fn repeated_query_parameter_is_rejected() {
        assert_eq!(
            req("/api/hosts?page=1&page=2").err().unwrap().code(),
            "VALIDATION_ERROR"
        );
    }

    #[test]
    fn trailing_slash_keeps_an_empty_segment() {
        assert_eq!(
            req("/api/hosts/").unwrap().segments(),
            vec!["api", "hosts", ""]
        );
    }

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
        let at_min = req("/x?limit=1").unwrap();
        assert_eq!(number_parameter(&at_min, "limit", 1, 10).unwrap(), Some(1));
        let below = req("/x?limit=0").unwrap();
        let err = number_parameter(&below, "limit", 1, 10).unwrap_err();
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn number_parameter_above_its_maximum_is_clamped() {
        let at_max = req("/x?wait=30").unwrap();
        assert_eq!(number_parameter(&at_max, "wait", 0, 30).unwrap(), Some(30));
        let above = req("/x?wait=31").unwrap();
        assert_eq!(number_parameter(&above, "wait", 0, 30).unwrap(), Some(30));
        let huge = req("/x?wait=99999999999999999999999").unwrap();
        assert_eq!(number_parameter(&huge, "wait", 0, 30).unwrap(), Some(30));
    }

    #[test]
    fn number_parameter_that_is_not_plain_digits_is_rejected() {
        for bad in ["", "-1", "+1", "1.5", "1e3", " 1", "x"] {
            let req = req(&format!("/x?since={bad}")).unwrap();
            let err = number_parameter(&req, "since", 0, 10).unwrap_err();
            assert_eq!(err.code(), "VALIDATION_ERROR", "{bad:?}");
        }
        assert_eq!(
            number_parameter(&req("/x").unwrap(), "since", 0, 10).unwrap(),
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
