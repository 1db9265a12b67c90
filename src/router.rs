//! The one route table: every endpoint declared once as a row (method, path template, what
//! it needs of the vault, whether it is activity, its handler, its OpenAPI operationId).
//! Resolution, the 405 `Allow` list and the tests of the OpenAPI document all read `ROUTES`;
//! `Service` is what `http` serves (the router over the shared state).
//!
//! Order of checks (docs/api.md, Vault): routing first (404, 405), then the vault gate
//! (401 `VAULT_LOCKED`), then the handler.
//!
//! Invariants: no handler checks the vault lock itself; a path segment matches a route's
//! `{id}` only where no route of any method has that segment literally (`verify` and
//! `accept` are actions on /api/known-hosts, never entry ids); resolving allocates nothing;
//! no httparse and no SQL here.

use std::fmt;
use std::sync::Arc;

use crate::api::{self, error_reply};
use crate::error::ApiError;
use crate::http::{self, HttpError, Method, Reply, Req};
use crate::state::AppState;

/// What a route needs of the vault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vault {
    /// Answers whether the vault is locked or not.
    Any,
    /// Answers 401 `VAULT_LOCKED` while the vault is locked.
    Unlocked,
}

/// Whether a request restarts the `--auto-lock` countdown (docs/api.md, "Vault").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// The user at work: activity from the request's start to its end.
    Work,
    /// A poll of the service's own status: an app that checks health every few seconds, or
    /// whose windows follow the change feed, must not keep the vault open for ever.
    Poll,
}

/// A route's handler, called with what its own signature takes.
#[derive(Clone, Copy)]
pub enum Handle {
    Plain(fn() -> Result<Reply, ApiError>),
    State(fn(&AppState) -> Result<Reply, ApiError>),
    Req(fn(&AppState, &Req) -> Result<Reply, ApiError>),
    Id(fn(&AppState, &str) -> Result<Reply, ApiError>),
    ReqId(fn(&AppState, &Req, &str) -> Result<Reply, ApiError>),
    /// A resource under another (`/api/hosts/{id}/forwards/{sub}`): the `{id}` and the
    /// `{sub}` segments.
    ReqIds(fn(&AppState, &Req, &str, &str) -> Result<Reply, ApiError>),
}

/// One endpoint.
pub struct Route {
    pub method: Method,
    /// The path, `{id}` (and `{sub}`, in a resource under another) standing for any one
    /// segment.
    pub path: &'static str,
    /// The number of segments of `path`: most rows are told apart by it alone.
    segments: usize,
    pub vault: Vault,
    pub usage: Use,
    pub handle: Handle,
    /// `module::function` of the handler under `api::`, for the tests of the document.
    #[cfg_attr(not(test), allow(dead_code))]
    pub handler: &'static str,
    /// The operation's `operationId` in `src/api/openapi.json` (tested to match).
    #[cfg_attr(not(test), allow(dead_code))]
    pub operation: &'static str,
}

/// One row: `route!(METHOD "path", vault use, shape module::function, "operationId")`.
macro_rules! route {
    ($method:ident $path:literal, $vault:ident $usage:ident,
     $shape:ident $module:ident::$function:ident, $operation:literal) => {
        Route {
            method: Method::$method,
            path: $path,
            segments: segment_count($path),
            vault: Vault::$vault,
            usage: Use::$usage,
            handle: Handle::$shape(api::$module::$function),
            handler: concat!(stringify!($module), "::", stringify!($function)),
            operation: $operation,
        }
    };
}

/// The body limit of `POST /api/import/{format}` (docs/import.md, "The request"): a PuTTY
/// export of a few thousand sessions is UTF-16 with base64 on top. The HTTP layer's body
/// budget still bounds all bodies together.
pub const MAX_IMPORT_BODY_BYTES: usize = 32 * 1024 * 1024;

/// Every endpoint of the service (docs/api.md, "Endpoints"), the only route table.
#[rustfmt::skip]
pub static ROUTES: &[Route] = &[
    route!(Get "/api/health", Any Poll, State health::get, "getHealth"),
    route!(Get "/api/openapi.json", Any Poll, Plain openapi::get, "getOpenApi"),

    route!(Get "/api/vault", Any Poll, State vault::status, "getVault"),
    route!(Post "/api/vault/unlock", Any Work, Req vault::unlock, "unlockVault"),
    route!(Post "/api/vault/lock", Any Work, State vault::lock, "lockVault"),
    route!(Put "/api/vault/password", Unlocked Work, Req vault::set_password, "setVaultPassword"),
    route!(Delete "/api/vault/password", Unlocked Work, Req vault::remove_password, "removeVaultPassword"),

    route!(Get "/api/hosts", Unlocked Work, Req hosts::list, "listHosts"),
    route!(Post "/api/hosts", Unlocked Work, Req hosts::create, "createHost"),
    // A literal segment is never an {id} (resolve), so the batch is not a host's route.
    route!(Post "/api/hosts/batch", Unlocked Work, Req batch::run, "batchHosts"),
    route!(Get "/api/tags", Unlocked Work, State tags::list, "listTags"),
    route!(Post "/api/tags/rename", Unlocked Work, Req batch::rename_tag, "renameTag"),
    route!(Get "/api/search", Unlocked Work, Req search::search, "search"),
    route!(Get "/api/searches", Unlocked Work, State search::list, "listSavedSearches"),
    route!(Post "/api/searches", Unlocked Work, Req search::create, "createSavedSearch"),
    route!(Get "/api/searches/{id}", Unlocked Work, Id search::get, "getSavedSearch"),
    route!(Put "/api/searches/{id}", Unlocked Work, ReqId search::update, "updateSavedSearch"),
    route!(Delete "/api/searches/{id}", Unlocked Work, Id search::delete, "deleteSavedSearch"),
    route!(Get "/api/hosts/{id}", Unlocked Work, Id hosts::get, "getHost"),
    route!(Put "/api/hosts/{id}", Unlocked Work, ReqId hosts::update, "updateHost"),
    route!(Delete "/api/hosts/{id}", Unlocked Work, ReqId hosts::delete, "deleteHost"),
    route!(Patch "/api/hosts/{id}/favorite", Unlocked Work, ReqId hosts::toggle_favorite, "toggleFavorite"),
    route!(Put "/api/hosts/{id}/move", Unlocked Work, ReqId hosts::move_to, "moveHost"),
    route!(Post "/api/hosts/{id}/connect", Unlocked Work, ReqId connect::connect, "connectHost"),
    route!(Post "/api/hosts/{id}/duplicate", Unlocked Work, ReqId hosts::duplicate, "duplicateHost"),
    route!(Get "/api/hosts/{id}/effective", Unlocked Work, Id hosts::effective, "getHostEffective"),
    route!(Get "/api/hosts/{id}/history", Unlocked Work, ReqId history::of_host, "listHostHistory"),
    route!(Get "/api/hosts/{id}/forwards", Unlocked Work, Id forwards::host_list, "listHostForwards"),
    route!(Post "/api/hosts/{id}/forwards", Unlocked Work, ReqId forwards::host_create, "createHostForward"),
    route!(Get "/api/hosts/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::host_get, "getHostForward"),
    route!(Put "/api/hosts/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::host_update, "updateHostForward"),
    route!(Delete "/api/hosts/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::host_delete, "deleteHostForward"),

    route!(Get "/api/groups", Unlocked Work, State groups::list, "listGroups"),
    route!(Post "/api/groups", Unlocked Work, Req groups::create, "createGroup"),
    route!(Get "/api/groups/{id}", Unlocked Work, Id groups::get, "getGroup"),
    route!(Put "/api/groups/{id}", Unlocked Work, ReqId groups::update, "updateGroup"),
    route!(Delete "/api/groups/{id}", Unlocked Work, ReqId groups::delete, "deleteGroup"),
    route!(Put "/api/groups/{id}/move", Unlocked Work, ReqId groups::move_to, "moveGroup"),
    route!(Get "/api/groups/{id}/forwards", Unlocked Work, Id forwards::group_list, "listGroupForwards"),
    route!(Post "/api/groups/{id}/forwards", Unlocked Work, ReqId forwards::group_create, "createGroupForward"),
    route!(Get "/api/groups/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::group_get, "getGroupForward"),
    route!(Put "/api/groups/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::group_update, "updateGroupForward"),
    route!(Delete "/api/groups/{id}/forwards/{sub}", Unlocked Work, ReqIds forwards::group_delete, "deleteGroupForward"),

    route!(Get "/api/keys", Unlocked Work, Req keys::list, "listKeys"),
    route!(Post "/api/keys", Unlocked Work, Req keys::create, "createKey"),
    route!(Get "/api/keys/{id}", Unlocked Work, Id keys::get, "getKey"),
    route!(Put "/api/keys/{id}", Unlocked Work, ReqId keys::update, "updateKey"),
    route!(Delete "/api/keys/{id}", Unlocked Work, ReqId keys::delete, "deleteKey"),
    route!(Put "/api/keys/{id}/certificate", Unlocked Work, ReqId keys::put_certificate, "putKeyCertificate"),
    route!(Delete "/api/keys/{id}/certificate", Unlocked Work, ReqId keys::delete_certificate, "deleteKeyCertificate"),

    route!(Get "/api/identities", Unlocked Work, State identities::list, "listIdentities"),
    route!(Post "/api/identities", Unlocked Work, Req identities::create, "createIdentity"),
    route!(Get "/api/identities/{id}", Unlocked Work, Id identities::get, "getIdentity"),
    route!(Put "/api/identities/{id}", Unlocked Work, ReqId identities::update, "updateIdentity"),
    route!(Delete "/api/identities/{id}", Unlocked Work, ReqId identities::delete, "deleteIdentity"),
    route!(Get "/api/identities/{id}/usages", Unlocked Work, Id identities::usages, "listIdentityUsages"),
    route!(Post "/api/identities/{id}/totp", Unlocked Work, Id identities::totp, "identityTotp"),

    route!(Post "/api/import/ssh-config", Unlocked Work, Req ssh_config::import, "importSshConfig"),
    route!(Get "/api/import/formats", Unlocked Work, State import::formats, "listImportFormats"),
    route!(Post "/api/import/bundle", Unlocked Work, Req sync::import_bundle, "importBundle"),
    route!(Post "/api/import/{id}", Unlocked Work, ReqId import::run, "importSessions"),
    route!(Post "/api/export/bundle", Unlocked Work, Req sync::export_bundle, "exportBundle"),
    route!(Get "/api/export/csv", Unlocked Work, Req export::csv, "exportCsv"),
    route!(Get "/api/export/termius-csv", Unlocked Work, Req export::termius_csv, "exportTermiusCsv"),
    route!(Get "/api/export/json", Unlocked Work, Req export::json, "exportJson"),
    route!(Get "/api/export/ssh-config", Unlocked Work, Req ssh_config::export, "exportSshConfig"),

    route!(Get "/api/known-hosts", Unlocked Work, Req known_hosts::list, "listKnownHosts"),
    route!(Get "/api/known-hosts/{id}", Unlocked Work, Id known_hosts::get, "getKnownHost"),
    route!(Delete "/api/known-hosts/{id}", Unlocked Work, Id known_hosts::delete, "deleteKnownHost"),
    route!(Post "/api/known-hosts/verify", Unlocked Work, Req known_hosts::verify, "verifyHostKey"),
    route!(Post "/api/known-hosts/accept", Unlocked Work, Req known_hosts::accept, "acceptHostKey"),
    route!(Get "/api/known-hosts/authorities", Unlocked Work, State known_hosts::list_authorities, "listHostAuthorities"),
    route!(Post "/api/known-hosts/authorities", Unlocked Work, Req known_hosts::add_authority, "addHostAuthority"),
    route!(Delete "/api/known-hosts/authorities/{id}", Unlocked Work, Id known_hosts::delete_authority, "deleteHostAuthority"),
    route!(Post "/api/import/known-hosts", Unlocked Work, Req known_hosts::import, "importKnownHosts"),
    route!(Get "/api/export/known-hosts", Unlocked Work, Req known_hosts::export, "exportKnownHosts"),
    route!(Get "/api/audit", Unlocked Work, Req audit::list, "listAudit"),

    route!(Get "/api/agent", Unlocked Work, State agent::status, "getAgent"),
    route!(Get "/api/agent/requests", Unlocked Work, State agent::requests, "listAgentRequests"),
    route!(Post "/api/agent/requests/{id}", Unlocked Work, ReqId agent::decide, "decideAgentRequest"),
    route!(Get "/api/changes", Unlocked Poll, Req changes::list, "listChanges"),
    route!(Get "/api/history", Unlocked Work, Req history::list, "listHistory"),

    route!(Get "/api/snapshots", Unlocked Work, State snapshots::list, "listSnapshots"),
    route!(Post "/api/snapshots", Unlocked Work, Req snapshots::create, "createSnapshot"),
    route!(Delete "/api/snapshots/{id}", Unlocked Work, Id snapshots::delete, "deleteSnapshot"),
    route!(Post "/api/snapshots/{id}/restore", Unlocked Work, ReqId snapshots::restore, "restoreSnapshot"),

    route!(Get "/api/sync", Unlocked Work, State sync::get, "getSync"),
    route!(Put "/api/sync", Unlocked Work, Req sync::put, "setUpSync"),
    route!(Delete "/api/sync", Unlocked Work, State sync::delete, "stopSync"),
    route!(Post "/api/sync/now", Unlocked Work, Req sync::now, "syncNow"),
    route!(Get "/api/sync/conflicts", Unlocked Work, State sync::conflicts, "listSyncConflicts"),
];

/// The segments of a template: its slashes.
const fn segment_count(template: &str) -> usize {
    let bytes = template.as_bytes();
    let (mut index, mut count) = (0, 0);
    while index < bytes.len() {
        if bytes[index] == b'/' {
            count += 1;
        }
        index += 1;
    }
    count
}

/// How a path matches a route's template.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fit {
    No,
    /// Every segment literally.
    Literal,
    /// With the `{id}` segment standing for this one.
    WithId,
}

/// Whether `path` (segments) fits `template`, and the segment its `{id}` stands for.
fn fit<'a>(template: &str, path: &[&'a str]) -> (Fit, &'a str) {
    let mut rest = template;
    let mut id = None;
    for segment in path {
        let Some(part) = rest.strip_prefix('/') else {
            return (Fit::No, "");
        };
        let end = part.find('/').unwrap_or(part.len());
        match &part[..end] {
            "{id}" => id = Some(*segment),
            "{sub}" => {}
            literal if literal == *segment => {}
            _ => return (Fit::No, ""),
        }
        rest = &part[end..];
    }
    match (rest.is_empty(), id) {
        (false, _) => (Fit::No, ""),
        (true, None) => (Fit::Literal, ""),
        (true, Some(id)) => (Fit::WithId, id),
    }
}

/// The route of `method` for `path` and the segment its `{id}` stands for (`""` when it
/// has none); `None` when this method is not defined for the path. One pass over the table.
pub fn resolve<'a>(method: Method, path: &[&'a str]) -> Option<(&'static Route, &'a str)> {
    let mut literal_elsewhere = false;
    let mut with_id = None;
    for route in ROUTES.iter().filter(|route| route.segments == path.len()) {
        match (fit(route.path, path), route.method == method) {
            ((Fit::Literal, _), true) => return Some((route, "")),
            ((Fit::Literal, _), false) => literal_elsewhere = true,
            ((Fit::WithId, id), true) => with_id = with_id.or(Some((route, id))),
            _ => {}
        }
    }
    // A segment some route has literally is never an id (docs/api.md: a GET of
    // /api/known-hosts/verify is a 405 that allows POST).
    with_id.filter(|_| !literal_elsewhere)
}

/// The segment a template's `{sub}` stands for (`""` when it has none).
fn sub_id<'a>(template: &str, path: &[&'a str]) -> &'a str {
    template
        .trim_start_matches('/')
        .split('/')
        .zip(path)
        .find(|(part, _)| *part == "{sub}")
        .map_or("", |(_, segment)| segment)
}

/// The methods defined for `path`, in `Allow` header order; empty when the path is unknown.
pub fn allowed_methods(path: &[&str]) -> Vec<&'static str> {
    Method::ROUTABLE
        .iter()
        .filter(|method| resolve(**method, path).is_some())
        .map(|method| method.as_str())
        .collect()
}

/// Why a request got no success: the router's own refusal (404, 405) or the handler's error.
#[derive(Debug)]
pub enum Failure {
    Routing(HttpError),
    Handler(ApiError),
}

#[cfg_attr(not(test), allow(dead_code))]
impl Failure {
    pub fn status(&self) -> u16 {
        match self {
            Failure::Routing(err) => err.status(),
            Failure::Handler(err) => err.status(),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Failure::Routing(err) => err.code(),
            Failure::Handler(err) => err.code(),
        }
    }

    fn reply(&self) -> Reply {
        match self {
            Failure::Routing(err) => err.reply(),
            Failure::Handler(err) => error_reply(err),
        }
    }
}

impl From<HttpError> for Failure {
    fn from(err: HttpError) -> Failure {
        Failure::Routing(err)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Routing(err) => err.fmt(f),
            Failure::Handler(err) => err.fmt(f),
        }
    }
}

/// Routes one request to its handler.
pub fn route(state: &AppState, req: &Req) -> Result<Reply, Failure> {
    let segments = req.segments();
    let Some((route, id)) = resolve(req.method, &segments) else {
        return Err(Failure::Routing(not_routed(&segments)));
    };
    // docs/api.md "Vault" (`--auto-lock`): a request is activity from its start to its end, and
    // counts itself before the vault's state is looked at (see `Session::lock_if_idle`).
    let _activity = (route.usage == Use::Work).then(|| state.session.activity());
    // docs/api.md, Vault: while locked, only these answer; everything else is 401.
    if route.vault == Vault::Unlocked && state.session.vault_locked() {
        return Err(Failure::Handler(ApiError::VaultLocked));
    }
    let outcome = match route.handle {
        Handle::Plain(handle) => handle(),
        Handle::State(handle) => handle(state),
        Handle::Req(handle) => handle(state, req),
        Handle::Id(handle) => handle(state, id),
        Handle::ReqId(handle) => handle(state, req, id),
        Handle::ReqIds(handle) => handle(state, req, id, sub_id(route.path, &segments)),
    };
    outcome.map_err(Failure::Handler)
}

fn not_routed(path: &[&str]) -> HttpError {
    let allow = allowed_methods(path);
    if allow.is_empty() {
        return HttpError::NotFound;
    }
    HttpError::MethodNotAllowed(allow)
}

/// What `http` serves: the router over the shared state.
pub struct Service {
    state: Arc<AppState>,
}

impl Service {
    pub fn new(state: Arc<AppState>) -> Service {
        Service { state }
    }
}

impl http::Handler for Service {
    fn answer(&self, req: &Req) -> Reply {
        match route(&self.state, req) {
            Ok(reply) => reply,
            Err(failure) => {
                if let Failure::Handler(ApiError::Internal(cause)) = &failure {
                    log::error!(
                        "{} {}: internal error: {cause}",
                        req.method.as_str(),
                        req.path
                    );
                }
                failure.reply()
            }
        }
    }

    fn stop(&self) {
        self.state.db.feed().stop();
    }

    /// docs/import.md, "The request": the importers of other tools' files (and a bundle
    /// backup, docs/sync.md) take bodies up to `MAX_IMPORT_BODY_BYTES`; every other route
    /// keeps the HTTP layer's limit.
    fn body_limit(&self, method: &str, target: &str) -> usize {
        let path = target.split('?').next().unwrap_or_default();
        let imports = method == "POST"
            && path.strip_prefix("/api/import/").is_some_and(|format| {
                format == "bundle" || crate::import::source::Format::from_name(format).is_some()
            });
        match imports {
            true => MAX_IMPORT_BODY_BYTES,
            false => http::MAX_BODY_BYTES,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use crate::error::ApiError;
    use crate::http::Method;
    use crate::router::{allowed_methods, resolve, Failure, ROUTES};

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

    fn routed_set() -> BTreeSet<(String, String)> {
        ROUTES
            .iter()
            .map(|route| (route.method.as_str().to_owned(), route.path.to_owned()))
            .collect()
    }

    /// (METHOD, template) of every operation in the served OpenAPI document, with its
    /// operationId.
    fn documented() -> BTreeMap<(String, String), String> {
        let document: serde_json::Value =
            serde_json::from_str(crate::api::openapi::DOCUMENT).unwrap();
        let mut found = BTreeMap::new();
        for (template, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
                ) {
                    let id = operation["operationId"].as_str().unwrap_or("").to_owned();
                    found.insert((method.to_uppercase(), template.clone()), id);
                }
            }
        }
        found
    }

    #[test]
    fn every_route_in_the_table_is_declared_once_and_resolves_to_itself() {
        assert_eq!(
            routed_set().len(),
            ROUTES.len(),
            "a route is declared twice"
        );
        for route in ROUTES {
            let (found, id) = resolve(route.method, &segments(route.path)).unwrap();
            assert!(
                std::ptr::eq(found, route),
                "{} {} resolves to {}",
                route.method.as_str(),
                route.path,
                found.path
            );
            let expected = if route.path.contains("{id}") {
                SAMPLE_ID
            } else {
                ""
            };
            assert_eq!(id, expected);
        }
    }

    #[test]
    fn resolve_matches_exactly_the_routes_in_the_table() {
        let templates: BTreeSet<&str> = ROUTES
            .iter()
            .map(|route| route.path)
            .chain(NEAR_MISSES.iter().copied())
            .collect();
        for template in templates {
            for method in Method::ROUTABLE {
                let listed = ROUTES
                    .iter()
                    .any(|route| route.method == method && route.path == template);
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
        let routed = routed_set();
        let documented: BTreeSet<(String, String)> = documented().into_keys().collect();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty() && unrouted.is_empty(),
            "routed but not in src/api/openapi.json: {undocumented:?}; \
             documented but not routed: {unrouted:?}"
        );
    }

    #[test]
    fn every_route_names_the_operation_id_the_document_gives_it() {
        let documented = documented();
        for route in ROUTES {
            let key = (route.method.as_str().to_owned(), route.path.to_owned());
            assert_eq!(
                documented.get(&key).map(String::as_str),
                Some(route.operation),
                "{} {}",
                route.method.as_str(),
                route.path
            );
        }
    }

    #[test]
    fn every_documented_operation_resolves() {
        for (method, template) in documented().into_keys() {
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
        let (route, id) = resolve(Method::Patch, &["api", "hosts", "a", "favorite"]).unwrap();
        assert_eq!((route.operation, id), ("toggleFavorite", "a"));
        assert!(resolve(Method::Put, &["api", "hosts", "a", "favorite"]).is_none());
    }

    #[test]
    fn an_action_of_known_hosts_is_never_an_entry_id() {
        for action in ["verify", "accept"] {
            let path = ["api", "known-hosts", action];
            assert!(resolve(Method::Get, &path).is_none());
            assert!(resolve(Method::Delete, &path).is_none());
            assert_eq!(allowed_methods(&path), vec!["POST"]);
        }
        let entry = ["api", "known-hosts", "verify-not"];
        assert_eq!(resolve(Method::Get, &entry).unwrap().1, "verify-not");
    }

    #[test]
    fn authorities_of_known_hosts_is_never_an_entry_id() {
        let path = ["api", "known-hosts", "authorities"];
        let (route, _) = resolve(Method::Get, &path).unwrap();
        assert_eq!(route.operation, "listHostAuthorities");
        assert!(resolve(Method::Delete, &path).is_none());
        assert_eq!(allowed_methods(&path), vec!["GET", "POST"]);
        let one = ["api", "known-hosts", "authorities", "a"];
        let (route, id) = resolve(Method::Delete, &one).unwrap();
        assert_eq!((route.operation, id), ("deleteHostAuthority", "a"));
    }

    #[test]
    fn an_internal_error_hides_its_cause() {
        let reply = Failure::Handler(ApiError::internal("SQLITE_CORRUPT at table hosts")).reply();
        assert_eq!(reply.status, 500);
        assert!(!String::from_utf8(reply.body.to_vec())
            .unwrap()
            .contains("SQLITE"));
    }
}
