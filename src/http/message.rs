//! The values of one exchange, owned by the HTTP layer: `Method`, `Req` (path, decoded
//! query, body in a wiped buffer, `If-Match`), `Reply`, and the one function that shapes
//! the API's JSON error body (docs/api.md, "Error codes").
//!
//! Invariants: no HTTP-parser type appears here (`connection` builds `Req` and writes
//! `Reply`); request bodies live in wiped buffers because they may carry passwords; an error
//! about the query never echoes its value, which could be a secret.

use std::collections::HashMap;

use serde::Serialize;
use zeroize::Zeroizing;

use crate::http::HttpError;

/// docs/security.md, Who may talk to the service: request bodies are capped at 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// JSON, the content type of every reply but the config export.
pub const JSON: &str = "application/json";

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
    /// A bodiless `GET` of `target`, for unit tests of what reads a request.
    #[cfg(test)]
    pub fn get(target: &str) -> Result<Req, HttpError> {
        Req::new(Method::Get, target, Zeroizing::new(Vec::new()))
    }

    /// Splits `target` (path and query) and decodes both. A query that is not valid
    /// percent-encoded UTF-8, or names a parameter twice, is a 400.
    pub fn new(method: Method, target: &str, body: Zeroizing<Vec<u8>>) -> Result<Req, HttpError> {
        let (raw_path, raw_query) = match target.split_once('?') {
            Some((path, query)) => (path, query),
            None => (target, ""),
        };
        let path = percent_decode(raw_path, false).ok_or_else(|| {
            HttpError::BadRequest("the path is not valid percent-encoded UTF-8".into())
        })?;
        let mut query = HashMap::new();
        for pair in raw_query.split('&').filter(|pair| !pair.is_empty()) {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decode(raw_name, true).ok_or_else(|| {
                HttpError::parameter(raw_name, "is not valid percent-encoded UTF-8")
            })?;
            let value = percent_decode(raw_value, true)
                .ok_or_else(|| HttpError::parameter(&name, "is not valid percent-encoded UTF-8"))?;
            if query.insert(name.clone(), value).is_some() {
                return Err(HttpError::parameter(&name, "is given more than once"));
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

    /// The body bytes as received (a wiped buffer).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// True when the request carries no body bytes.
    pub fn body_is_empty(&self) -> bool {
        self.body.iter().all(u8::is_ascii_whitespace)
    }
}

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

    /// A CSV file (docs/import.md, "Export").
    pub fn csv(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/csv; charset=utf-8",
            headers: Vec::new(),
            body: Zeroizing::new(body.into_bytes()),
        }
    }

    /// A file to download (a sync bundle): bytes, never cached.
    pub fn download(body: Vec<u8>, file_name: &str) -> Reply {
        Reply {
            status: 200,
            content_type: "application/octet-stream",
            headers: vec![
                ("Cache-Control", "no-store".to_owned()),
                (
                    "Content-Disposition",
                    format!("attachment; filename=\"{file_name}\""),
                ),
            ],
            body: Zeroizing::new(body),
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

    /// The API's error body `{error, code, details}` (docs/api.md, "Error codes"): the one
    /// place it is shaped, for the HTTP layer's errors and the handlers' alike.
    pub fn error(status: u16, code: &str, message: &str, details: Option<String>) -> Reply {
        #[derive(Serialize)]
        struct ErrorBody<'a> {
            error: &'a str,
            code: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            details: Option<String>,
        }
        let body = ErrorBody {
            error: message,
            code,
            details,
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_else(|_| {
            b"{\"error\":\"internal error\",\"code\":\"INTERNAL_ERROR\"}".to_vec()
        });
        Reply::json_bytes(status, bytes)
    }
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
    use crate::http::message::{Reply, Req};

    #[test]
    fn query_values_are_percent_and_plus_decoded() {
        let req = Req::get("/api/hosts?search=a%25b+c&tag=x%2Fy").unwrap();
        assert_eq!(req.query("search"), Some("a%b c"));
        assert_eq!(req.query("tag"), Some("x/y"));
        assert_eq!(req.path, "/api/hosts");
    }

    #[test]
    fn bad_percent_escape_is_rejected() {
        assert_eq!(
            Req::get("/api/hosts?search=%zz").err().unwrap().status(),
            400
        );
        assert_eq!(
            Req::get("/api/hosts?search=%ff").err().unwrap().status(),
            400
        );
    }

    #[test]
    fn repeated_query_parameter_is_rejected() {
        assert_eq!(
            Req::get("/api/hosts?page=1&page=2").err().unwrap().code(),
            "VALIDATION_ERROR"
        );
    }

    #[test]
    fn a_path_that_is_not_percent_encoded_utf_8_is_a_bad_request() {
        assert_eq!(Req::get("/api/%ff").err().unwrap().code(), "BAD_REQUEST");
    }

    #[test]
    fn trailing_slash_keeps_an_empty_segment() {
        assert_eq!(
            Req::get("/api/hosts/").unwrap().segments(),
            vec!["api", "hosts", ""]
        );
    }

    #[test]
    fn an_error_reply_is_the_json_error_shape_with_details_only_when_given() {
        let with = Reply::error(400, "BAD_REQUEST", "malformed request", Some("why".into()));
        assert_eq!(
            String::from_utf8(with.body.to_vec()).unwrap(),
            r#"{"error":"malformed request","code":"BAD_REQUEST","details":"why"}"#
        );
        let without = Reply::error(500, "INTERNAL_ERROR", "internal error", None);
        assert_eq!(
            String::from_utf8(without.body.to_vec()).unwrap(),
            r#"{"error":"internal error","code":"INTERNAL_ERROR"}"#
        );
        assert_eq!(without.content_type, crate::http::JSON);
    }
}
