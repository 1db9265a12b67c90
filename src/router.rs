//! Maps (method, path) to an endpoint, answers 404/405, and applies the vault gate once.
//!
//! The `resolve` match reads like the API's summary table; it is the only route table:
//! the `Allow` header of a 405 is derived from it, so the two cannot drift apart.
//! Order of checks (docs/api.md, Vault): routing first, then the vault gate.
//!
//! Invariants: no handler checks the vault lock itself; `ROUTES` lists exactly the routes of
//! `resolve` (the OpenAPI document and the README's examples are tested against it); no
//! httparse and no SQL here.

use crate::api::{self, Method, Reply, Req};
use crate::error::ApiError;
use crate::state::AppState;

/// Every endpoint of the service; ids borrowed from the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint<'a> {
    Health,
    OpenApi,
    VaultStatus,
    VaultUnlock,
    VaultLock,
    VaultSetPassword,
    VaultRemovePassword,
    ListHosts,
    CreateHost,
    GetHost(&'a str),
    UpdateHost(&'a str),
    DeleteHost(&'a str),
    ToggleFavorite(&'a str),
    MoveHost(&'a str),
    ConnectHost(&'a str),
    HostHistory(&'a str),
    ListGroups,
    CreateGroup,
    GetGroup(&'a str),
    UpdateGroup(&'a str),
    DeleteGroup(&'a str),
    MoveGroup(&'a str),
    ListKeys,
    CreateKey,
    GetKey(&'a str),
    UpdateKey(&'a str),
    DeleteKey(&'a str),
    ImportSshConfig,
    ExportSshConfig,
    ListKnownHosts,
    GetKnownHost(&'a str),
    DeleteKnownHost(&'a str),
    VerifyHostKey,
    AcceptHostKey,
    ImportKnownHosts,
    ExportKnownHosts,
    ListAudit,
    AgentStatus,
    AgentRequests,
    DecideAgentRequest(&'a str),
    ListChanges,
    ListHistory,
}

/// Every (method, path template) `resolve` matches, in the order of the `resolve` match;
/// `{id}` stands for any one path segment. `src/api/openapi.json` documents exactly these
/// (tests below): a route added to `resolve` without a line here and an entry in the
/// document fails `cargo test`.
#[cfg(test)]
pub const ROUTES: &[(Method, &str)] = &[
    (Method::Get, "/api/health"),
    (Method::Get, "/api/openapi.json"),
    (Method::Get, "/api/vault"),
    (Method::Post, "/api/vault/unlock"),
    (Method::Post, "/api/vault/lock"),
    (Method::Put, "/api/vault/password"),
    (Method::Delete, "/api/vault/password"),
    (Method::Get, "/api/hosts"),
    (Method::Post, "/api/hosts"),
    (Method::Get, "/api/hosts/{id}"),
    (Method::Put, "/api/hosts/{id}"),
    (Method::Delete, "/api/hosts/{id}"),
    (Method::Patch, "/api/hosts/{id}/favorite"),
    (Method::Put, "/api/hosts/{id}/move"),
    (Method::Post, "/api/hosts/{id}/connect"),
    (Method::Get, "/api/hosts/{id}/history"),
    (Method::Get, "/api/groups"),
    (Method::Post, "/api/groups"),
    (Method::Get, "/api/groups/{id}"),
    (Method::Put, "/api/groups/{id}"),
    (Method::Delete, "/api/groups/{id}"),
    (Method::Put, "/api/groups/{id}/move"),
    (Method::Get, "/api/keys"),
    (Method::Post, "/api/keys"),
    (Method::Get, "/api/keys/{id}"),
    (Method::Put, "/api/keys/{id}"),
    (Method::Delete, "/api/keys/{id}"),
    (Method::Post, "/api/import/ssh-config"),
    (Method::Get, "/api/export/ssh-config"),
    (Method::Get, "/api/known-hosts"),
    (Method::Get, "/api/known-hosts/{id}"),
    (Method::Delete, "/api/known-hosts/{id}"),
    (Method::Post, "/api/known-hosts/verify"),
    (Method::Post, "/api/known-hosts/accept"),
    (Method::Post, "/api/import/known-hosts"),
    (Method::Get, "/api/export/known-hosts"),
    (Method::Get, "/api/audit"),
    (Method::Get, "/api/agent"),
    (Method::Get, "/api/agent/requests"),
    (Method::Post, "/api/agent/requests/{id}"),
    (Method::Get, "/api/changes"),
    (Method::Get, "/api/history"),
];

/// The route table. `None` when this method is not defined for the path.
pub fn resolve<'a>(method: Method, path: &[&'a str]) -> Option<Endpoint<'a>> {
    use Endpoint::*;
    use Method::{Delete, Get, Patch, Post, Put};
    let endpoint = match (method, path) {
        (Get, ["api", "health"]) => Health,
        (Get, ["api", "openapi.json"]) => OpenApi,

        (Get, ["api", "vault"]) => VaultStatus,
        (Post, ["api", "vault", "unlock"]) => VaultUnlock,
        (Post, ["api", "vault", "lock"]) => VaultLock,
        (Put, ["api", "vault", "password"]) => VaultSetPassword,
        (Delete, ["api", "vault", "password"]) => VaultRemovePassword,

        (Get, ["api", "hosts"]) => ListHosts,
        (Post, ["api", "hosts"]) => CreateHost,
        (Get, ["api", "hosts", id]) => GetHost(id),
        (Put, ["api", "hosts", id]) => UpdateHost(id),
        (Delete, ["api", "hosts", id]) => DeleteHost(id),
        (Patch, ["api", "hosts", id, "favorite"]) => ToggleFavorite(id),
        (Put, ["api", "hosts", id, "move"]) => MoveHost(id),
        (Post, ["api", "hosts", id, "connect"]) => ConnectHost(id),
        (Get, ["api", "hosts", id, "history"]) => HostHistory(id),

        (Get, ["api", "groups"]) => ListGroups,
        (Post, ["api", "groups"]) => CreateGroup,
        (Get, ["api", "groups", id]) => GetGroup(id),
        (Put, ["api", "groups", id]) => UpdateGroup(id),
        (Delete, ["api", "groups", id]) => DeleteGroup(id),
        (Put, ["api", "groups", id, "move"]) => MoveGroup(id),

        (Get, ["api", "keys"]) => ListKeys,
        (Post, ["api", "keys"]) => CreateKey,
        (Get, ["api", "keys", id]) => GetKey(id),
        (Put, ["api", "keys", id]) => UpdateKey(id),
        (Delete, ["api", "keys", id]) => DeleteKey(id),

        (Post, ["api", "import", "ssh-config"]) => ImportSshConfig,
        (Get, ["api", "export", "ssh-config"]) => ExportSshConfig,

        (Get, ["api", "known-hosts"]) => ListKnownHosts,
        (Get, ["api", "known-hosts", id]) => GetKnownHost(id),
        (Delete, ["api", "known-hosts", id]) => DeleteKnownHost(id),
        (Post, ["api", "known-hosts", "verify"]) => VerifyHostKey,
        (Post, ["api", "known-hosts", "accept"]) => AcceptHostKey,
        (Post, ["api", "import", "known-hosts"]) => ImportKnownHosts,
        (Get, ["api", "export", "known-hosts"]) => ExportKnownHosts,
        (Get, ["api", "audit"]) => ListAudit,

        (Get, ["api", "agent"]) => AgentStatus,
        (Get, ["api", "agent", "requests"]) => AgentRequests,
        (Post, ["api", "agent", "requests", id]) => DecideAgentRequest(id),
        (Get, ["api", "changes"]) => ListChanges,
        (Get, ["api", "history"]) => ListHistory,

        _ => return None,
    };
    // `verify` and `accept` are actions on /api/known-hosts, never entry ids: a GET or
    // DELETE of them is a 405 that allows POST, as the OpenAPI document says.
    if let GetKnownHost("verify" | "accept") | DeleteKnownHost("verify" | "accept") = endpoint {
        return None;
    }
    Some(endpoint)
}

/// Routes one request to its handler.
pub fn route(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let segments = req.segments();
    let Some(endpoint) = resolve(req.method, &segments) else {
        return Err(not_routed(&segments));
    };
    // docs/api.md "Vault" (`--auto-lock`): a request is activity from its start to its end, and
    // counts itself before the vault's state is looked at (see `Session::lock_if_idle`).
    let _activity = endpoint
        .counts_as_activity()
        .then(|| state.session.activity());
    // docs/api.md, Vault: while locked, only these answer; everything else is 401.
    if endpoint.needs_unlocked_vault() && state.session.vault_locked() {
        return Err(ApiError::VaultLocked);
    }
    call(state, req, endpoint)
}

/// The methods defined for `path`, in `Allow` header order; empty when the path is unknown.
pub fn allowed_methods(path: &[&str]) -> Vec<&'static str> {
    Method::ROUTABLE
        .iter()
        .filter(|method| resolve(**method, path).is_some())
        .map(|method| method.as_str())
        .collect()
}

impl Endpoint<'_> {
    /// Whether this request restarts the `--auto-lock` countdown. Polls of the service's
    /// own status are not the user at work: an app that checks health every few seconds,
    /// or whose windows follow the change feed, must not keep the vault open forever.
    fn counts_as_activity(self) -> bool {
        !matches!(
            self,
            Endpoint::Health | Endpoint::OpenApi | Endpoint::VaultStatus | Endpoint::ListChanges
        )
    }

    pub fn needs_unlocked_vault(self) -> bool {
        !matches!(
            self,
            Endpoint::Health
                | Endpoint::OpenApi
                | Endpoint::VaultStatus
                | Endpoint::VaultUnlock
                | Endpoint::VaultLock
        )
    }
}

fn call(state: &AppState, req: &Req, endpoint: Endpoint<'_>) -> Result<Reply, ApiError> {
    use api::{
        agent, audit, changes, groups, health, history, hosts, keys, known_hosts, openapi,
        ssh_config, vault,
    };
    use Endpoint::*;
    match endpoint {
        Health => health::get(state),
        OpenApi => openapi::get(),

        VaultStatus => vault::status(state),
        VaultUnlock => vault::unlock(state, req),
        VaultLock => vault::lock(state),
        VaultSetPassword => vault::set_password(state, req),
        VaultRemovePassword => vault::remove_password(state, req),

        ListHosts => hosts::list(state, req),
        CreateHost => hosts::create(state, req),
        GetHost(id) => hosts::get(state, id),
        UpdateHost(id) => hosts::update(state, req, id),
        DeleteHost(id) => hosts::delete(state, req, id),
        ToggleFavorite(id) => hosts::toggle_favorite(state, req, id),
        MoveHost(id) => hosts::move_to(state, req, id),
        ConnectHost(id) => hosts::connect(state, req, id),
        HostHistory(id) => history::of_host(state, req, id),

        ListGroups => groups::list(state),
        CreateGroup => groups::create(state, req),
        GetGroup(id) => groups::get(state, id),
        UpdateGroup(id) => groups::update(state, req, id),
        DeleteGroup(id) => groups::delete(state, req, id),
        MoveGroup(id) => groups::move_to(state, req, id),

        ListKeys => keys::list(state),
        CreateKey => keys::create(state, req),
        GetKey(id) => keys::get(state, id),
        UpdateKey(id) => keys::update(state, req, id),
        DeleteKey(id) => keys::delete(state, req, id),

        ImportSshConfig => ssh_config::import(state, req),
        ExportSshConfig => ssh_config::export(state, req),

        ListKnownHosts => known_hosts::list(state, req),
        GetKnownHost(id) => known_hosts::get(state, id),
        DeleteKnownHost(id) => known_hosts::delete(state, id),
        VerifyHostKey => known_hosts::verify(state, req),
        AcceptHostKey => known_hosts::accept(state, req),
        ImportKnownHosts => known_hosts::import(state, req),
        ExportKnownHosts => known_hosts::export(state, req),
        ListAudit => audit::list(state, req),
        AgentStatus => agent::status(state),
        AgentRequests => agent::requests(state),
        DecideAgentRequest(id) => agent::decide(state, req, id),
        ListChanges => changes::list(state, req),
        ListHistory => history::list(state, req),
    }
}

fn not_routed(path: &[&str]) -> ApiError {
    let allow = allowed_methods(path);
    if allow.is_empty() {
        return ApiError::NotFound;
    }
    ApiError::MethodNotAllowed(allow)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeSet;

    use crate::api::Method;
    use crate::router::{allowed_methods, resolve, Endpoint, ROUTES};

    /// A sample id for `{id}` (any segment routes; a UUID like the real ones).
    const SAMPLE_ID: &str = "0b6f3c9e-1d2a-4c5b-8e7f-9a0b1c2d3e4f";

    /// The segments `resolve` sees for `template`, with `{id}` replaced by a sample id.
    fn segments(template: &str) -> Vec<&str> {
        template
            .trim_start_matches('/')
            .split('/')
            .map(|segment| {
                if segment == "{id}" {
                    SAMPLE_ID
                } else {
                    segment
                }
            })
            .collect()
    }

    /// Templates whose paths differ from every routed one in one segment or in length: they
    /// must route nowhere.
    const NEAR_MISSES: &[&str] = &[
        "/api",
        "/api/",
        "/api/hosts/{id}/",
        "/api/hosts/{id}/favorite/x",
        "/api/hosts/{id}/unknown",
        "/api/groups/{id}/favorite",
        "/api/keys/{id}/move",
        "/api/vault/{id}",
        "/api/nope",
        "/hosts",
    ];

    fn routed_set() -> BTreeSet<(&'static str, &'static str)> {
        ROUTES
            .iter()
            .map(|(method, template)| (method.as_str(), *template))
            .collect()
    }

    /// (METHOD, template) of every operation in the served OpenAPI document.
    fn documented_set() -> BTreeSet<(String, String)> {
        let document: serde_json::Value =
            serde_json::from_str(crate::api::openapi::DOCUMENT).unwrap();
        let mut set = BTreeSet::new();
        for (template, item) in document["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                if matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
                ) {
                    set.insert((method.to_uppercase(), template.clone()));
                }
            }
        }
        set
    }

    /// The (METHOD, template) of every arm of the `resolve` match, read from this file's
    /// source: an arm added there is seen even when its path uses a word no other route has.
    fn resolve_arms() -> BTreeSet<(String, String)> {
        let source = include_str!("router.rs");
        let start = source
            .find("let endpoint = match (method, path) {")
            .unwrap();
        let end = start + source[start..].find("_ => return None").unwrap();
        let mut arms = BTreeSet::new();
        for line in source[start..end].lines().skip(1) {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (pattern, _) = line.split_once("=>").unwrap();
            let pattern = pattern.trim().trim_start_matches('(').trim_end_matches(')');
            let (method, path) = pattern.split_once(", [").unwrap();
            let template: String = path
                .trim_end_matches(']')
                .split(", ")
                .map(|segment| match segment.strip_prefix('"') {
                    Some(word) => format!("/{}", word.trim_end_matches('"')),
                    None => "/{id}".to_owned(),
                })
                .collect();
            arms.insert((method.to_uppercase(), template));
        }
        arms
    }

    #[test]
    fn every_arm_of_resolve_is_in_the_table() {
        let table: BTreeSet<(String, String)> = routed_set()
            .into_iter()
            .map(|(method, template)| (method.to_owned(), template.to_owned()))
            .collect();
        let arms = resolve_arms();
        let missing: Vec<_> = arms.difference(&table).collect();
        let extra: Vec<_> = table.difference(&arms).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "arms of resolve() missing from ROUTES: {missing:?}; in ROUTES but no arm: {extra:?}"
        );
    }

    #[test]
    fn every_route_in_the_table_resolves() {
        for (method, template) in ROUTES {
            assert!(
                resolve(*method, &segments(template)).is_some(),
                "{} {template} is in ROUTES but resolve() does not match it",
                method.as_str()
            );
        }
    }

    #[test]
    fn resolve_matches_exactly_the_routes_in_the_table() {
        let templates: BTreeSet<&str> = ROUTES
            .iter()
            .map(|(_, template)| *template)
            .chain(NEAR_MISSES.iter().copied())
            .collect();
        for template in templates {
            for method in Method::ROUTABLE {
                let listed = ROUTES.contains(&(method, template));
                let resolved = resolve(method, &segments(template)).is_some();
                assert_eq!(
                    resolved,
                    listed,
                    "{} {template}: resolve() says {resolved}, ROUTES says {listed}",
                    method.as_str()
                );
            }
        }
    }

    #[test]
    fn the_openapi_document_has_exactly_the_routed_operations() {
        let routed: BTreeSet<(String, String)> = routed_set()
            .into_iter()
            .map(|(method, template)| (method.to_owned(), template.to_owned()))
            .collect();
        let documented = documented_set();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty() && unrouted.is_empty(),
            "routed but not in src/api/openapi.json: {undocumented:?}; \
             documented but not routed: {unrouted:?}"
        );
    }

    #[test]
    fn every_documented_operation_resolves() {
        for (method, template) in documented_set() {
            let method = Method::parse(&method);
            assert!(
                resolve(method, &segments(&template)).is_some(),
                "{} {template} is documented but resolve() does not match it",
                method.as_str()
            );
        }
    }

    #[test]
    fn host_item_path_allows_get_put_delete() {
        assert_eq!(
            allowed_methods(&["api", "hosts", "x"]),
            vec!["GET", "PUT", "DELETE"]
        );
    }

    #[test]
    fn unknown_path_allows_nothing() {
        assert!(allowed_methods(&["api", "nope"]).is_empty());
        assert!(allowed_methods(&["api", "hosts", "x", "y"]).is_empty());
    }

    #[test]
    fn favorite_is_patch_only() {
        assert_eq!(
            resolve(Method::Patch, &["api", "hosts", "a", "favorite"]),
            Some(Endpoint::ToggleFavorite("a"))
        );
        assert_eq!(
            resolve(Method::Put, &["api", "hosts", "a", "favorite"]),
            None
        );
    }
}
