//! `GET /api/openapi.json` (extension): the service's OpenAPI 3.1 document, written by hand
//! in `src/api/openapi.json` and served byte for byte as compiled in.
//!
//! Invariants: the document names exactly the routes of `router::ROUTES` (tested below and
//! in `router::tests`), and every response schema matches what the service sends
//! (`scripts/schemathesis` checks it against a live instance).

use zeroize::Zeroizing;

use crate::api::{Reply, JSON};
use crate::error::ApiError;

/// The document, as served.
pub const DOCUMENT: &str = include_str!("openapi.json");

pub fn get() -> Result<Reply, ApiError> {
    Ok(Reply {
        status: 200,
        headers: Vec::new(),
        body: Zeroizing::new(DOCUMENT.as_bytes().to_vec()),
        content_type: JSON,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::Value;

    use crate::api::openapi::DOCUMENT;

    fn document() -> Value {
        serde_json::from_str(DOCUMENT).unwrap()
    }

    /// Every `$ref` string anywhere in `value`.
    fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                for (name, item) in map {
                    match (name.as_str(), item) {
                        ("$ref", Value::String(target)) => out.push(target),
                        _ => refs(item, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| refs(item, out)),
            _ => {}
        }
    }

    #[test]
    fn document_is_openapi_3_1_with_the_crate_version() {
        let document = document();
        assert_eq!(document["openapi"], "3.1.0");
        assert_eq!(document["info"]["version"], env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn every_local_ref_points_at_something() {
        let document = document();
        let mut targets = Vec::new();
        refs(&document, &mut targets);
        assert!(!targets.is_empty());
        for target in targets {
            let pointer = target.strip_prefix('#').unwrap();
            assert!(
                document.pointer(pointer).is_some(),
                "dangling $ref {target}"
            );
        }
    }

    #[test]
    fn extensions_are_marked_as_such() {
        let document = document();
        for (path, method) in [
            ("/api/openapi.json", "get"),
            ("/api/vault", "get"),
            ("/api/vault/unlock", "post"),
            ("/api/vault/lock", "post"),
            ("/api/vault/password", "put"),
            ("/api/vault/password", "delete"),
            ("/api/hosts/{id}/connect", "post"),
            ("/api/groups/{id}", "get"),
            ("/api/keys/{id}", "get"),
            ("/api/keys/{id}", "put"),
            ("/api/keys/{id}", "delete"),
        ] {
            assert_eq!(
                document["paths"][path][method]["x-extension"], true,
                "{method} {path}"
            );
        }
        let total = &document["components"]["schemas"]["Group"]["properties"]["total_host_count"];
        assert_eq!(total["x-extension"], true);
    }
}
