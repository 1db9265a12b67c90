//! Maps (method, path) to an endpoint, answers 404/405, and applies the vault gate once.
//!
//! The `resolve` match reads like the spec's summary table; it is the only route table:
//! the `Allow` header of a 405 is derived from it, so the two cannot drift apart.
//! Order of checks (api-decisions §2): routing first, then the vault gate.

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
}

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

        _ => return None,
    };
    Some(endpoint)
}

/// Routes one request to its handler.
pub fn route(state: &AppState, req: &Req) -> Result<Reply, ApiError> {
    let segments = req.segments();
    let Some(endpoint) = resolve(req.method, &segments) else {
        return Err(not_routed(&segments));
    };
    if endpoint.counts_as_activity() {
        state.touch();
    }
    // api-decisions §2: while locked, only these answer; everything else is 401.
    if endpoint.needs_unlocked_vault() && state.vault_locked() {
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
    /// own status are not the user at work: an app that checks health every few seconds
    /// must not keep the vault open forever.
    fn counts_as_activity(self) -> bool {
        !matches!(
            self,
            Endpoint::Health | Endpoint::OpenApi | Endpoint::VaultStatus
        )
    }

    fn needs_unlocked_vault(self) -> bool {
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
    use api::{groups, health, hosts, keys, openapi, ssh_config, vault};
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
        DeleteHost(id) => hosts::delete(state, id),
        ToggleFavorite(id) => hosts::toggle_favorite(state, id),
        MoveHost(id) => hosts::move_to(state, req, id),
        ConnectHost(id) => hosts::connect(state, id),

        ListGroups => groups::list(state),
        CreateGroup => groups::create(state, req),
        GetGroup(id) => groups::get(state, id),
        UpdateGroup(id) => groups::update(state, req, id),
        DeleteGroup(id) => groups::delete(state, id),
        MoveGroup(id) => groups::move_to(state, req, id),

        ListKeys => keys::list(state),
        CreateKey => keys::create(state, req),
        GetKey(id) => keys::get(state, id),
        UpdateKey(id) => keys::update(state, req, id),
        DeleteKey(id) => keys::delete(state, id),

        ImportSshConfig => ssh_config::import(state, req),
        ExportSshConfig => ssh_config::export(state, req),
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
mod tests {
    use crate::api::Method;
    use crate::router::{allowed_methods, resolve, Endpoint};

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
