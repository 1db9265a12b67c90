//! Who may talk to the service (docs/security.md, Who may talk to the service), decided from request headers alone.
//!
//! Three attacks, three checks, in this order:
//! - DNS rebinding: a web page whose name resolves to 127.0.0.1 sends `Host: evil.example`.
//!   Only `localhost`, `127.0.0.1` and `[::1]` (with or without a port) pass.
//! - Cross-site requests: any page can POST `text/plain` to localhost without a preflight.
//!   A request with an `Origin` (or `Sec-Fetch-Site: cross-site`) passes only when that
//!   origin was allowed with `--allow-origin`; allowed origins get CORS headers.
//! - Other local users or processes: with a token configured, every request but
//!   `GET /api/health` needs `Authorization: Bearer <token>`, compared in constant time.
//!
//! Invariants: pure (no I/O, no HTTP parser); never logs or returns the token.

use crate::http::{HttpError, Method};
use crate::vault::Secret;

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE_SECONDS: u32 = 600;

/// The checks configured at start-up.
pub struct Gate {
    allowed_origins: Vec<String>,
    token: Option<Secret>,
}

/// The request headers the gate looks at. Repeated headers keep every value.
pub struct Facts<'a> {
    pub method: Method,
    pub path: &'a str,
    /// HTTP/1.0 may omit `Host`; HTTP/1.1 may not.
    pub http_1_0: bool,
    pub hosts: Vec<&'a str>,
    pub origins: Vec<&'a str>,
    pub fetch_site: Option<&'a str>,
    pub authorizations: Vec<&'a str>,
    /// `Access-Control-Request-Method`: present on a CORS preflight.
    pub preflight_method: Option<&'a str>,
}

/// What to do with a request that passed the gate.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// Serve it; add CORS headers for this origin when there is one.
    Serve { cors_origin: Option<String> },
    /// A CORS preflight from an allowed origin: answer it without routing.
    Preflight { origin: String },
}

impl Gate {
    /// `allowed_origins` are compared ASCII-case-insensitively; `token` is the bearer token.
    pub fn new(allowed_origins: Vec<String>, token: Option<Secret>) -> Gate {
        let allowed_origins = allowed_origins
            .into_iter()
            .map(|origin| origin.to_ascii_lowercase())
            .collect();
        Gate {
            allowed_origins,
            token,
        }
    }

    pub fn check(&self, facts: &Facts<'_>) -> Result<Pass, HttpError> {
        check_host(facts)?;
        let origin = self.check_origin(facts)?;
        if let (Method::Options, Some(origin), Some(_)) =
            (facts.method, &origin, facts.preflight_method)
        {
            return Ok(Pass::Preflight {
                origin: origin.clone(),
            });
        }
        self.check_token(facts)?;
        Ok(Pass::Serve {
            cors_origin: origin,
        })
    }

    /// The allowed origin of the request, if it names one; 403 for any other.
    fn check_origin(&self, facts: &Facts<'_>) -> Result<Option<String>, HttpError> {
        let origin = match facts.origins.as_slice() {
            [] => None,
            [origin] => Some(origin.trim().to_ascii_lowercase()),
            _ => return Err(HttpError::Forbidden("more than one Origin header".into())),
        };
        match origin {
            Some(origin) if self.allowed_origins.contains(&origin) => Ok(Some(origin)),
            Some(_) => Err(HttpError::Forbidden(
                "this Origin is not allowed (see --allow-origin)".into(),
            )),
            None if facts
                .fetch_site
                .is_some_and(|site| site.trim().eq_ignore_ascii_case("cross-site")) =>
            {
                Err(HttpError::Forbidden(
                    "cross-site requests are not allowed".into(),
                ))
            }
            None => Ok(None),
        }
    }

    fn check_token(&self, facts: &Facts<'_>) -> Result<(), HttpError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        // docs/security.md, Who may talk to the service: health answers without a token, so the app can probe start-up.
        if facts.method == Method::Get && facts.path == "/api/health" {
            return Ok(());
        }
        let presented = match facts.authorizations.as_slice() {
            [value] => bearer_credentials(value),
            _ => None,
        };
        match presented {
            Some(presented) if constant_time_eq(presented.as_bytes(), token.expose()) => Ok(()),
            _ => Err(HttpError::Unauthorized),
        }
    }
}

/// The headers of a preflight answer for `origin`.
pub fn preflight_headers(origin: &str) -> Vec<(&'static str, String)> {
    let mut headers = cors_headers(origin);
    headers.push((
        "Access-Control-Allow-Methods",
        "GET, POST, PUT, PATCH, DELETE".into(),
    ));
    headers.push((
        "Access-Control-Allow-Headers",
        "Authorization, Content-Type, If-Match".into(),
    ));
    headers.push((
        "Access-Control-Max-Age",
        PREFLIGHT_MAX_AGE_SECONDS.to_string(),
    ));
    headers
}

/// The headers that let a page from `origin` read a response.
pub fn cors_headers(origin: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Access-Control-Allow-Origin", origin.to_owned()),
        // docs/api.md "Revisions and If-Match": a page must read the ETag to send it back.
        ("Access-Control-Expose-Headers", "ETag".into()),
        ("Vary", "Origin".into()),
    ]
}

/// Checks an `--allow-origin` value: `scheme://host[:port]`, nothing else.
pub fn valid_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"+-.".contains(&byte))
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' ', '*'])
}

/// docs/security.md, Who may talk to the service: exactly one Host naming the loopback, with or without a port.
fn check_host(facts: &Facts<'_>) -> Result<(), HttpError> {
    let host = match facts.hosts.as_slice() {
        [] if facts.http_1_0 => return Ok(()),
        [] => return Err(HttpError::Forbidden("a Host header is required".into())),
        [host] => host.trim(),
        _ => return Err(HttpError::Forbidden("more than one Host header".into())),
    };
    let name = match host.rsplit_once(':') {
        // `[::1]:8080`, `localhost:8080`; a bare `[::1]` has its colons inside the brackets.
        Some((name, port))
            if !name.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            name
        }
        _ => host,
    };
    if ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .any(|allowed| name.eq_ignore_ascii_case(allowed))
    {
        return Ok(());
    }
    Err(HttpError::Forbidden(
        "the Host header must name localhost, 127.0.0.1 or [::1]".into(),
    ))
}

/// The credentials of an `Authorization: Bearer <token>` value. RFC 9110 §11.1: the scheme
/// is case-insensitive (`bearer`, `BEARER` pass), followed by one or more spaces.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    match scheme.eq_ignore_ascii_case("bearer") {
        true => Some(credentials.trim()),
        false => None,
    }
}

/// Compares without an early exit, so the time taken does not tell how much matched.
fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    if left.len() != right.len() {
        return false;
    }
    left.iter()
        .zip(right)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::http::gate::{constant_time_eq, valid_origin, Facts, Gate, Pass};
    use crate::http::Method;
    use crate::vault::Secret;

    fn facts<'a>(hosts: Vec<&'a str>) -> Facts<'a> {
        Facts {
            method: Method::Get,
            path: "/api/hosts",
            http_1_0: false,
            hosts,
            origins: vec![],
            fetch_site: None,
            authorizations: vec![],
            preflight_method: None,
        }
    }

    fn open_gate() -> Gate {
        Gate::new(vec!["http://app.local:3000".into()], None)
    }

    /// Served, with no CORS headers (no Origin was sent).
    const SERVE: Pass = Pass::Serve { cors_origin: None };

    #[test]
    fn loopback_hosts_with_and_without_port_pass() {
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:65535",
        ] {
            assert_eq!(
                open_gate().check(&facts(vec![host])).unwrap(),
                SERVE,
                "{host}"
            );
        }
    }

    #[test]
    fn rebinding_and_lookalike_hosts_are_refused() {
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.2",
            "::1",
            "",
            "localhost:",
        ] {
            let err = open_gate().check(&facts(vec![host])).unwrap_err();
            assert_eq!(err.code(), "FORBIDDEN", "{host}");
        }
    }

    #[test]
    fn missing_host_is_refused_on_http_1_1_only() {
        let err = open_gate().check(&facts(vec![])).unwrap_err();
        assert_eq!(err.code(), "FORBIDDEN");
        let mut old = facts(vec![]);
        old.http_1_0 = true;
        assert_eq!(open_gate().check(&old).unwrap(), SERVE);
    }

    #[test]
    fn two_host_headers_are_refused() {
        let err = open_gate()
            .check(&facts(vec!["localhost", "localhost"]))
            .unwrap_err();
        assert_eq!(err.code(), "FORBIDDEN");
    }

    #[test]
    fn allowed_origin_passes_with_cors_and_others_are_refused() {
        let mut request = facts(vec!["localhost"]);
        request.origins = vec!["HTTP://APP.LOCAL:3000"];
        assert_eq!(
            open_gate().check(&request).unwrap(),
            Pass::Serve {
                cors_origin: Some("http://app.local:3000".into())
            }
        );
        request.origins = vec!["http://evil.example"];
        assert_eq!(open_gate().check(&request).unwrap_err().code(), "FORBIDDEN");
        request.origins = vec!["null"];
        assert_eq!(open_gate().check(&request).unwrap_err().code(), "FORBIDDEN");
    }

    #[test]
    fn cross_site_fetch_without_origin_is_refused() {
        let mut request = facts(vec!["localhost"]);
        request.fetch_site = Some("cross-site");
        assert_eq!(open_gate().check(&request).unwrap_err().code(), "FORBIDDEN");
        request.fetch_site = Some("none");
        assert_eq!(open_gate().check(&request).unwrap(), SERVE);
    }

    #[test]
    fn preflight_from_allowed_origin_is_answered_without_token() {
        let gate = Gate::new(
            vec!["http://app.local:3000".into()],
            Some(Secret::from_string("t".repeat(32))),
        );
        let mut request = facts(vec!["localhost"]);
        request.method = Method::Options;
        request.origins = vec!["http://app.local:3000"];
        request.preflight_method = Some("POST");
        assert_eq!(
            gate.check(&request).unwrap(),
            Pass::Preflight {
                origin: "http://app.local:3000".into()
            }
        );
    }

    #[test]
    fn token_is_required_except_for_health() {
        let token = "0123456789abcdef0123456789abcdef";
        let gate = Gate::new(vec![], Some(Secret::from_string(token.into())));
        let mut request = facts(vec!["localhost"]);
        assert_eq!(gate.check(&request).unwrap_err().code(), "UNAUTHORIZED");
        request.authorizations = vec!["Bearer wrong"];
        assert_eq!(gate.check(&request).unwrap_err().code(), "UNAUTHORIZED");
        let right = format!("Bearer {token}");
        request.authorizations = vec![&right];
        assert_eq!(gate.check(&request).unwrap(), SERVE);
        let mut health = facts(vec!["localhost"]);
        health.path = "/api/health";
        assert_eq!(gate.check(&health).unwrap(), SERVE);
    }

    #[test]
    fn bearer_scheme_is_accepted_in_any_case() {
        let token = "0123456789abcdef0123456789abcdef";
        let gate = Gate::new(vec![], Some(Secret::from_string(token.into())));
        for scheme in ["bearer", "BEARER", "BeArEr", "Bearer"] {
            let value = format!("{scheme} {token}");
            let mut request = facts(vec!["localhost"]);
            request.authorizations = vec![&value];
            assert_eq!(gate.check(&request).unwrap(), SERVE, "{scheme}");
        }
    }

    #[test]
    fn other_schemes_and_a_missing_separator_are_refused() {
        let token = "0123456789abcdef0123456789abcdef";
        let gate = Gate::new(vec![], Some(Secret::from_string(token.into())));
        for value in [
            format!("Basic {token}"),
            format!("Bearer{token}"),
            format!("Bearerx {token}"),
            token.to_string(),
        ] {
            let mut request = facts(vec!["localhost"]);
            request.authorizations = vec![&value];
            assert_eq!(
                gate.check(&request).unwrap_err().code(),
                "UNAUTHORIZED",
                "{value}"
            );
        }
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn origin_flag_values_are_checked() {
        assert!(valid_origin("http://localhost:3000"));
        assert!(valid_origin("tauri://localhost"));
        assert!(!valid_origin("*"));
        assert!(!valid_origin("http://a/path"));
        assert!(!valid_origin("localhost:3000"));
    }
}
