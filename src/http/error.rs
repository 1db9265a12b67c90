//! `HttpError`: what the HTTP layer itself refuses or fails with, before or around a
//! handler: framing and limits (400, 408, 413, 414, 431), the gate (401, 403), routing
//! (404, 405), a malformed query, the connection cap and the bodies' budget (503), and a
//! handler's panic (500). Handlers' own errors are `error::ApiError`; both render through
//! `Reply::error`, so the JSON error shape is written once (docs/api.md, "Error codes").
//!
//! Invariants: a variant carries limits, header names and rules, never a header value, a
//! token or a body byte.

use std::fmt;

use crate::http::message::Reply;
use crate::http::{MAX_HEADERS, MAX_HEADER_SECTION_BYTES, MAX_REQUEST_LINE_BYTES};

/// A refusal or failure of the HTTP layer, with its status and code.
#[derive(Debug)]
pub enum HttpError {
    /// No route has this path (docs/api.md, Common behaviour).
    NotFound,
    /// The path exists but not with this method; the slice is the `Allow` list.
    MethodNotAllowed(Vec<&'static str>),
    /// A query parameter is not valid percent-encoded UTF-8 or is given twice.
    InvalidParameter { name: String, rule: String },
    /// A token is required and the request has none or another.
    Unauthorized,
    /// The gate refused the Host, Origin or `Sec-Fetch-Site`; the text says which.
    Forbidden(String),
    /// The body is over this limit (bytes).
    PayloadTooLarge(usize),
    /// The request line is longer than the HTTP layer accepts.
    UriTooLong,
    /// The header section is too long or has too many lines.
    HeadersTooLarge,
    /// The request head or body did not arrive in time.
    RequestTimeout,
    /// The request itself is malformed at the HTTP level (framing, encoding).
    BadRequest(String),
    /// Every connection is busy, or the bodies' budget is spent; the client may retry.
    Busy,
    /// The handler panicked; what it said is for nobody.
    Internal,
}

impl HttpError {
    pub fn parameter(name: &str, rule: impl Into<String>) -> HttpError {
        HttpError::InvalidParameter {
            name: name.to_owned(),
            rule: rule.into(),
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            HttpError::InvalidParameter { .. } | HttpError::BadRequest(_) => 400,
            HttpError::Unauthorized => 401,
            HttpError::Forbidden(_) => 403,
            HttpError::NotFound => 404,
            HttpError::MethodNotAllowed(_) => 405,
            HttpError::RequestTimeout => 408,
            HttpError::PayloadTooLarge(_) => 413,
            HttpError::UriTooLong => 414,
            HttpError::HeadersTooLarge => 431,
            HttpError::Internal => 500,
            HttpError::Busy => 503,
        }
    }

    /// The stable upper-case identifier of the API's error body.
    pub fn code(&self) -> &'static str {
        match self {
            HttpError::NotFound => "NOT_FOUND",
            HttpError::MethodNotAllowed(_) => "METHOD_NOT_ALLOWED",
            HttpError::InvalidParameter { .. } => "VALIDATION_ERROR",
            HttpError::Unauthorized => "UNAUTHORIZED",
            HttpError::Forbidden(_) => "FORBIDDEN",
            HttpError::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            HttpError::UriTooLong => "URI_TOO_LONG",
            HttpError::HeadersTooLarge => "HEADERS_TOO_LARGE",
            HttpError::RequestTimeout => "REQUEST_TIMEOUT",
            HttpError::BadRequest(_) => "BAD_REQUEST",
            HttpError::Busy => "BUSY",
            HttpError::Internal => "INTERNAL_ERROR",
        }
    }

    /// The short human message of the error body.
    pub fn message(&self) -> &'static str {
        match self {
            HttpError::NotFound => "no such endpoint",
            HttpError::MethodNotAllowed(_) => "method not allowed on this endpoint",
            HttpError::InvalidParameter { .. } => "invalid query parameter",
            HttpError::Unauthorized => "missing or wrong bearer token",
            HttpError::Forbidden(_) => "forbidden",
            HttpError::PayloadTooLarge(_) => "request body too large",
            HttpError::UriTooLong => "request line too long",
            HttpError::HeadersTooLarge => "request headers too large",
            HttpError::RequestTimeout => "request not received in time",
            HttpError::BadRequest(_) => "malformed request",
            HttpError::Busy => "service busy, retry shortly",
            HttpError::Internal => "internal error",
        }
    }

    /// The optional `details` text.
    pub fn details(&self) -> Option<String> {
        match self {
            HttpError::Forbidden(text) | HttpError::BadRequest(text) => Some(text.clone()),
            HttpError::InvalidParameter { name, rule } => {
                Some(format!("query parameter {name}: {rule}"))
            }
            HttpError::MethodNotAllowed(allow) => Some(format!("allowed: {}", allow.join(", "))),
            HttpError::PayloadTooLarge(limit) => Some(format!("the limit is {limit} bytes")),
            HttpError::UriTooLong => Some(format!("the limit is {MAX_REQUEST_LINE_BYTES} bytes")),
            HttpError::HeadersTooLarge => Some(format!(
                "the limits are {MAX_HEADER_SECTION_BYTES} bytes and {MAX_HEADERS} header lines"
            )),
            HttpError::NotFound
            | HttpError::Unauthorized
            | HttpError::RequestTimeout
            | HttpError::Busy
            | HttpError::Internal => None,
        }
    }

    /// The answer: the JSON error shape with the headers the error implies.
    pub fn reply(&self) -> Reply {
        let reply = Reply::error(self.status(), self.code(), self.message(), self.details());
        match self {
            HttpError::MethodNotAllowed(allow) => reply.with_header("Allow", allow.join(", ")),
            HttpError::Busy => reply.with_header("Retry-After", "1"),
            _ => reply,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.details() {
            Some(details) => write!(f, "{} ({}): {details}", self.message(), self.code()),
            None => write!(f, "{} ({})", self.message(), self.code()),
        }
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::http::{HttpError, MAX_BODY_BYTES};

    fn body(err: &HttpError) -> String {
        String::from_utf8(err.reply().body.to_vec()).unwrap()
    }

    #[test]
    fn a_405_lists_the_allowed_methods_in_its_header_and_details() {
        let reply = HttpError::MethodNotAllowed(vec!["GET", "PUT"]).reply();
        assert_eq!(reply.status, 405);
        assert_eq!(reply.headers, vec![("Allow", "GET, PUT".to_owned())]);
        assert_eq!(
            String::from_utf8(reply.body.to_vec()).unwrap(),
            r#"{"error":"method not allowed on this endpoint","code":"METHOD_NOT_ALLOWED","details":"allowed: GET, PUT"}"#
        );
    }

    #[test]
    fn busy_asks_to_retry_after_a_second() {
        let reply = HttpError::Busy.reply();
        assert_eq!(
            (reply.status, reply.headers),
            (503, vec![("Retry-After", "1".to_owned())])
        );
    }

    #[test]
    fn the_limits_errors_name_their_limits() {
        assert_eq!(
            body(&HttpError::PayloadTooLarge(MAX_BODY_BYTES)),
            r#"{"error":"request body too large","code":"PAYLOAD_TOO_LARGE","details":"the limit is 1048576 bytes"}"#
        );
        assert_eq!(
            body(&HttpError::HeadersTooLarge),
            r#"{"error":"request headers too large","code":"HEADERS_TOO_LARGE","details":"the limits are 65536 bytes and 100 header lines"}"#
        );
    }
}
