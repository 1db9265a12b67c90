//! `GET /api/openapi.json` (extension): the service's OpenAPI 3.1 document, written by hand
//! in `src/api/openapi.json` and served byte for byte as compiled in.
//!
//! Invariants: the document names exactly the routes of `router::ROUTES`, each with the
//! row's operationId (tested in `router::tests`); every status an operation can answer is
//! documented on it (tested below from the route table, the handlers' code and the error
//! mapping, and by the request
//! fuzzer in `fuzz.rs` for every answer it meets); parameters of one name share one schema;
//! every operation has a summary and every tag a description; Redocly CLI's recommended
//! rules pass (`scripts/openapi-lint`); every response schema matches what the service sends
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

    use crate::api::openapi::documented::{self, document};
    use crate::error::ApiError;
    use crate::router::{Route, Vault, ROUTES};

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

    /// Statuses any routed request can meet whatever its handler does: a malformed query or
    /// HTTP framing (400), the gate (403), the HTTP layer's limits decided before routing
    /// (408, 413 from a declared Content-Length, 414, 431), a panic or an internal error
    /// (500), and the connection refused for want of a thread (503).
    const EVERY_ROUTE: &[u16] = &[400, 403, 408, 413, 414, 431, 500, 503];

    /// The handlers' sources, by the module name of the route table's `handler`.
    const HANDLERS: &[(&str, &str)] = &[
        ("agent", include_str!("agent.rs")),
        ("batch", include_str!("batch.rs")),
        ("audit", include_str!("audit.rs")),
        ("changes", include_str!("changes.rs")),
        ("connect", include_str!("connect.rs")),
        ("export", include_str!("export.rs")),
        ("forwards", include_str!("forwards.rs")),
        ("groups", include_str!("groups.rs")),
        ("health", include_str!("health.rs")),
        ("history", include_str!("history.rs")),
        ("hosts", include_str!("hosts.rs")),
        ("identities", include_str!("identities.rs")),
        ("import", include_str!("import.rs")),
        ("keys", include_str!("keys.rs")),
        ("known_hosts", include_str!("known_hosts.rs")),
        ("openapi", include_str!("openapi.rs")),
        ("search", include_str!("search.rs")),
        ("snapshots", include_str!("snapshots.rs")),
        ("ssh_config", include_str!("ssh_config.rs")),
        ("sync", include_str!("sync.rs")),
        ("tags", include_str!("tags.rs")),
        ("vault", include_str!("vault.rs")),
    ];

    /// One value of every `ApiError` variant; `variant_name` has no wildcard arm, so a new
    /// variant does not compile until it is named there (and should be added here). The HTTP
    /// layer's own errors (`HttpError`) are the statuses of `EVERY_ROUTE`, 401
    /// `UNAUTHORIZED`, 404 and 405.
    fn every_error() -> Vec<ApiError> {
        let text = String::new;
        vec![
            ApiError::InvalidJson(text()),
            ApiError::validation("f", "r"),
            ApiError::parameter("p", "r"),
            ApiError::HostNotFound,
            ApiError::HostsNotFound(text()),
            ApiError::JumpHostNotFound(text()),
            ApiError::InvalidJumpChain(text()),
            ApiError::HostInUse(1),
            ApiError::GroupNotFound,
            ApiError::KeyNotFound,
            ApiError::KnownHostNotFound,
            ApiError::HostKeyChanged(text()),
            ApiError::HostKeyRevoked(text()),
            ApiError::DuplicateName(text()),
            ApiError::DuplicateKey,
            ApiError::KeyInUse {
                hosts: 1,
                identities: 0,
            },
            ApiError::IdentityNotFound,
            ApiError::IdentityNameTaken,
            ApiError::IdentityInUse {
                hosts: 1,
                groups: 0,
            },
            ApiError::TotpNotSet,
            ApiError::InvalidMove(text()),
            ApiError::PreconditionFailed {
                resource: "host",
                current: 1,
            },
            ApiError::InvalidKey(text()),
            ApiError::InvalidCertificate(text()),
            ApiError::CertificateNotFound,
            ApiError::InvalidPassphrase,
            ApiError::VaultLocked,
            ApiError::InvalidPassword,
            ApiError::VaultNoPassword,
            ApiError::Busy,
            ApiError::AgentRequestNotFound,
            ApiError::AgentUnavailable(text()),
            ApiError::ForwardNotFound,
            ApiError::UnknownFormat,
            ApiError::PortConflict(text()),
            ApiError::SnapshotNotFound,
            ApiError::SnapshotIncompatible(text()),
            ApiError::SnapshotLimit(1),
            ApiError::SyncDisabled,
            ApiError::SyncPassphraseMismatch,
            ApiError::SyncFolderUnusable(text()),
            ApiError::MassDelete(text()),
            ApiError::BundleDamaged(text()),
            ApiError::StorageFull,
            ApiError::InvalidQuery(text()),
            ApiError::SearchNotFound,
            ApiError::internal("cause"),
        ]
    }

    fn variant_name(err: &ApiError) -> &'static str {
        match err {
            ApiError::InvalidJson(_) => "InvalidJson",
            ApiError::Validation { .. } => "Validation",
            ApiError::InvalidParameter { .. } => "InvalidParameter",
            ApiError::HostNotFound => "HostNotFound",
            ApiError::HostsNotFound(_) => "HostsNotFound",
            ApiError::JumpHostNotFound(_) => "JumpHostNotFound",
            ApiError::InvalidJumpChain(_) => "InvalidJumpChain",
            ApiError::HostInUse(_) => "HostInUse",
            ApiError::GroupNotFound => "GroupNotFound",
            ApiError::KeyNotFound => "KeyNotFound",
            ApiError::KnownHostNotFound => "KnownHostNotFound",
            ApiError::HostKeyChanged(_) => "HostKeyChanged",
            ApiError::HostKeyRevoked(_) => "HostKeyRevoked",
            ApiError::DuplicateName(_) => "DuplicateName",
            ApiError::DuplicateKey => "DuplicateKey",
            ApiError::KeyInUse { .. } => "KeyInUse",
            ApiError::IdentityNotFound => "IdentityNotFound",
            ApiError::IdentityNameTaken => "IdentityNameTaken",
            ApiError::UnknownFormat => "UnknownFormat",
            ApiError::IdentityInUse { .. } => "IdentityInUse",
            ApiError::TotpNotSet => "TotpNotSet",
            ApiError::ForwardNotFound => "ForwardNotFound",
            ApiError::PortConflict(_) => "PortConflict",
            ApiError::InvalidMove(_) => "InvalidMove",
            ApiError::PreconditionFailed { .. } => "PreconditionFailed",
            ApiError::InvalidKey(_) => "InvalidKey",
            ApiError::InvalidCertificate(_) => "InvalidCertificate",
            ApiError::CertificateNotFound => "CertificateNotFound",
            ApiError::InvalidPassphrase => "InvalidPassphrase",
            ApiError::VaultLocked => "VaultLocked",
            ApiError::InvalidPassword => "InvalidPassword",
            ApiError::VaultNoPassword => "VaultNoPassword",
            ApiError::Busy => "Busy",
            ApiError::AgentRequestNotFound => "AgentRequestNotFound",
            ApiError::AgentUnavailable(_) => "AgentUnavailable",
            ApiError::SnapshotNotFound => "SnapshotNotFound",
            ApiError::SnapshotIncompatible(_) => "SnapshotIncompatible",
            ApiError::SnapshotLimit(_) => "SnapshotLimit",
            ApiError::SyncDisabled => "SyncDisabled",
            ApiError::SyncPassphraseMismatch => "SyncPassphraseMismatch",
            ApiError::SyncFolderUnusable(_) => "SyncFolderUnusable",
            ApiError::MassDelete(_) => "MassDelete",
            ApiError::BundleDamaged(_) => "BundleDamaged",
            ApiError::StorageFull => "StorageFull",
            ApiError::InvalidQuery(_) => "InvalidQuery",
            ApiError::SearchNotFound => "SearchNotFound",
            ApiError::Internal(_) => "Internal",
        }
    }

    /// The error a name after `ApiError::` in a handler stands for (a variant, or one of
    /// the constructors `validation`, `parameter` and `internal`); `None` for `from`, a
    /// conversion whose errors the store's and vault's own variants stand for.
    fn error_named(name: &str) -> Option<ApiError> {
        match name {
            "validation" => return Some(ApiError::validation("f", "r")),
            "parameter" => return Some(ApiError::parameter("p", "r")),
            "internal" => return Some(ApiError::internal("cause")),
            "from" => return None,
            _ => {}
        }
        let found = every_error()
            .into_iter()
            .find(|err| variant_name(err) == name);
        Some(found.unwrap_or_else(|| panic!("ApiError::{name} is missing from every_error()")))
    }

    /// Each top-level `fn` of a source file: name and text, up to its closing brace.
    fn functions(source: &str) -> Vec<(&str, &str)> {
        let mut found = Vec::new();
        let mut rest = source;
        let next = |text: &str| {
            let private = text.find("\nfn ");
            let public = text.find("\npub fn ");
            private.into_iter().chain(public).min()
        };
        while let Some(start) = next(rest) {
            let text = &rest[start + 1..];
            let end = text.find("\n}\n").map_or(text.len(), |end| end + 3);
            let head = text.trim_start_matches("pub ").trim_start_matches("fn ");
            let name_end = head.find(['(', '<']).unwrap_or(0);
            found.push((&head[..name_end], &text[..end]));
            rest = &text[end..];
        }
        found
    }

    /// Whether `text` calls the function `name` directly (not as a method or a path's tail).
    fn calls(text: &str, name: &str) -> bool {
        let pattern = format!("{name}(");
        text.match_indices(&pattern).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            !matches!(before, Some(c) if c.is_alphanumeric() || c == '_' || c == '.' || c == ':')
        })
    }

    /// The text of a handler and of every function of its file it calls, transitively.
    fn handler_text(module: &str, function: &str) -> String {
        let source = HANDLERS
            .iter()
            .find(|(name, _)| *name == module)
            .unwrap_or_else(|| panic!("api::{module} is missing from HANDLERS"))
            .1;
        let all = functions(source);
        let mut reached = vec![function];
        let mut text = String::new();
        while let Some(name) = reached.pop() {
            let body = all.iter().find(|(found, _)| *found == name).unwrap().1;
            text.push_str(body);
            for (other, _) in &all {
                let seen = text.contains(&format!("fn {other}")) || reached.contains(other);
                if !seen && calls(body, other) {
                    reached.push(other);
                }
            }
        }
        text
    }

    /// `(module, function)` of a route's handler under `api::`.
    fn handler_of(route: &Route) -> (&'static str, &'static str) {
        route.handler.split_once("::").unwrap()
    }

    /// The route of an operationId.
    fn route_of(operation: &str) -> &'static Route {
        ROUTES
            .iter()
            .find(|route| route.operation == operation)
            .unwrap_or_else(|| panic!("{operation} is not in router::ROUTES"))
    }

    /// Handlers whose database write never fails the request: `connect` hands out the
    /// credentials without recording the use when the write fails (docs/api.md, Hosts).
    const WRITES_THAT_CANNOT_FAIL: &[(&str, &str)] = &[("connect", "connect")];

    /// The errors a handler's own code (and its file's functions it calls) names, the 507 of
    /// a database write, and the 412 of a precondition.
    fn handler_errors(text: &str) -> Vec<ApiError> {
        let mut errors: Vec<ApiError> = text
            .match_indices("ApiError::")
            .filter_map(|(at, prefix)| {
                let rest = &text[at + prefix.len()..];
                let end = rest
                    .find(|c: char| !c.is_alphanumeric() && c != '_')
                    .unwrap_or(rest.len());
                error_named(&rest[..end])
            })
            .collect();
        if text.contains(".write(") || text.contains(".write_ending(") {
            errors.push(ApiError::StorageFull);
        }
        if text.contains("Precondition") {
            errors.push(ApiError::PreconditionFailed {
                resource: "host",
                current: 1,
            });
        }
        errors
    }

    /// The `Error` schema's `code` enum lists every code a handler can answer (a client
    /// that validates answers against the document would refuse one it does not list).
    #[test]
    fn the_error_schema_lists_every_code_a_handler_answers() {
        let document = document();
        let listed = &document["components"]["schemas"]["Error"]["properties"]["code"]["enum"];
        let listed: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for err in every_error() {
            assert!(
                listed.contains(&err.code()),
                "{} is not in Error.code",
                err.code()
            );
        }
    }

    #[test]
    fn every_status_an_operation_can_answer_is_documented_with_its_code() {
        let document = document();
        let mut missing = Vec::new();
        for route in ROUTES {
            let (method, template) = (&route.method, &route.path);
            let (module, function) = handler_of(route);
            let mut statuses: Vec<(u16, Option<&str>)> =
                EVERY_ROUTE.iter().map(|status| (*status, None)).collect();
            // The token is checked everywhere but on GET /api/health (docs/security.md, "Who may talk
            // to the service"); an id in the path may name nothing.
            if *template != "/api/health" {
                statuses.push((401, Some("UNAUTHORIZED")));
            }
            if template.contains("{id}") {
                statuses.push((404, None));
            }
            if route.vault == Vault::Unlocked {
                statuses.push((401, Some("VAULT_LOCKED")));
            }
            for err in handler_errors(&handler_text(module, function)) {
                if matches!(err, ApiError::StorageFull)
                    && WRITES_THAT_CANNOT_FAIL.contains(&(module, function))
                {
                    continue;
                }
                statuses.push((err.status(), Some(err.code())));
            }
            for (status, code) in statuses {
                let response = documented::response(&document, *method, template, status);
                let fine = match (response, code) {
                    (None, _) => false,
                    (Some(response), Some(code)) => documented::allows_code(response, code),
                    (Some(_), None) => true,
                };
                if !fine {
                    missing.push(format!(
                        "{} {template}: {status} {}",
                        method.as_str(),
                        code.unwrap_or("")
                    ));
                }
            }
        }
        missing.dedup();
        assert!(
            missing.is_empty(),
            "undocumented answers:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn handler_text_follows_the_functions_a_handler_calls() {
        // POST /api/known-hosts/accept names HOST_KEY_REVOKED in a helper it calls.
        let (module, function) = handler_of(route_of("acceptHostKey"));
        let text = handler_text(module, function);
        assert!(handler_errors(&text)
            .iter()
            .any(|err| matches!(err, ApiError::StorageFull)));
        assert!(!handler_errors(&handler_text("keys", "get"))
            .iter()
            .any(|err| matches!(err, ApiError::StorageFull)));
    }

    /// Every parameter, with the operation it is on, `$ref`s resolved.
    fn parameters(document: &Value) -> Vec<(String, &Value)> {
        let mut found = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                let own = operation["parameters"].as_array().into_iter().flatten();
                let shared = item["parameters"].as_array().into_iter().flatten();
                for parameter in own.chain(shared) {
                    found.push((
                        format!("{method} {path}"),
                        documented::resolved(document, parameter),
                    ));
                }
            }
        }
        found
    }

    #[test]
    fn parameters_of_one_name_share_one_schema() {
        let document = document();
        let all = parameters(&document);
        assert!(all.len() > 20);
        for (operation, parameter) in &all {
            for (other_operation, other) in &all {
                if parameter["name"] == other["name"] && parameter["in"] == other["in"] {
                    assert_eq!(
                        parameter["schema"], other["schema"],
                        "{} {} on {operation} and {other_operation}",
                        parameter["in"], parameter["name"]
                    );
                }
            }
        }
    }

    #[test]
    fn every_operation_has_a_summary_and_every_tag_a_description() {
        let document = document();
        let tags = document["tags"].as_array().unwrap();
        for tag in tags {
            let description = tag["description"].as_str().unwrap_or("");
            assert!(
                !description.is_empty(),
                "tag {} has no description",
                tag["name"]
            );
        }
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                let summary = operation["summary"].as_str().unwrap_or("");
                assert!(!summary.is_empty(), "{method} {path} has no summary");
                for tag in operation["tags"].as_array().unwrap() {
                    assert!(tags.iter().any(|declared| declared["name"] == *tag));
                }
            }
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

/// What the document says an operation answers, for the tests here and the request fuzzer.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub mod documented {
    use serde_json::Value;

    use crate::api::openapi::DOCUMENT;
    use crate::http::Method;
    use crate::router::resolve;

    pub fn document() -> Value {
        serde_json::from_str(DOCUMENT).unwrap()
    }

    /// `value`, or what it points at when it is a local `$ref`.
    pub fn resolved<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
        match value["$ref"].as_str() {
            Some(target) => document.pointer(target.trim_start_matches('#')).unwrap(),
            None => value,
        }
    }

    /// The route template (from `ROUTES`, as `resolve` matches it) of a request's path, or
    /// `None` when the service does not route it (404 or 405).
    pub fn template(method: Method, path: &[&str]) -> Option<&'static str> {
        resolve(method, path).map(|(route, _)| route.path)
    }

    /// The documented response of `status` on the operation, resolved; `None` if absent.
    pub fn response<'a>(
        document: &'a Value,
        method: Method,
        template: &str,
        status: u16,
    ) -> Option<&'a Value> {
        let operation = &document["paths"][template][method.as_str().to_ascii_lowercase()];
        let response = operation["responses"].get(status.to_string())?;
        Some(resolved(document, response))
    }

    /// Whether the documented response allows this error `code` (a response without a
    /// `code` enum allows any).
    pub fn allows_code(response: &Value, code: &str) -> bool {
        let schema = &response["content"]["application/json"]["schema"];
        match schema["properties"]["code"]["enum"].as_array() {
            Some(codes) => codes.iter().any(|listed| listed == code),
            None => true,
        }
    }
}
