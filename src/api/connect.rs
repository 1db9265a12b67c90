//! `POST /api/hosts/:id/connect` (extension): the host's effective connection values
//! (docs/identities.md) and the decrypted credentials the desktop app opens a session with.
//!
//! Invariants: the one reply that carries secrets, built in a buffer of its final size (no
//! reallocation copies) and sent with `Cache-Control: no-store`; a host whose resolution
//! ends with no username or auth, or whose stored fields break their rule, is refused before
//! any secret opens; `last_used_at` is set only once the secrets opened.

use std::io;

use serde::Serialize;
use zeroize::Zeroizing;

use crate::api::identity_use::{self, OpenedIdentity};
use crate::api::session_use::{self, OpenedSession};
use crate::api::{Reply, Req};
use crate::error::ApiError;
use crate::model::host::{Host, HostView};
use crate::model::inherit::{Effective, Source, DEFAULT_PORT};
use crate::model::interop;
use crate::model::validate;
use crate::state::AppState;
use crate::store;
use crate::store::hosts::SealedCredentials;
use crate::store::identities::SealedIdentity;
use crate::vault::{SealContext, Secret};

/// docs/api.md, Hosts: `connect` answers `{ host, credentials }`.
#[derive(Serialize)]
struct ConnectView<'a> {
    host: HostView<'a>,
    /// The values to connect with, inherited ones resolved (docs/identities.md).
    effective: EffectiveView<'a>,
    credentials: CredentialsView<'a>,
    /// `forwards`, `remote_command`, `request_tty`, `environment` (docs/forwards.md).
    #[serde(flatten)]
    session: &'a OpenedSession,
}

/// The secret the auth type needs: a password, or a private key (plus its passphrase when
/// one is stored); nothing for `agent`.
#[derive(Serialize)]
struct CredentialsView<'a> {
    #[serde(rename = "type")]
    auth_type: &'a str,
    username: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    password: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    private_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    passphrase: Option<&'a str>,
    /// `connect?agent=true` (docs/agent.md "SSH agent"): the key's public half, for the
    /// `IdentityFile` of `ssh -o IdentitiesOnly=yes`, instead of the private key.
    #[serde(skip_serializing_if = "Option::is_none")]
    public_key: Option<&'a str>,
    /// `connect?agent=true`: the agent's socket, for `SSH_AUTH_SOCK` or `IdentityAgent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    identity_agent: Option<&'a str>,
    /// The full route for `ssh -J`, each hop's own chain first; omitted when
    /// the host has no chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_jump: Option<&'a str>,
    /// Key auth: the key's certificate in use (docs/api.md "Certificates"), for
    /// `CertificateFile`; omitted when it has none valid now.
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate: Option<&'a str>,
    /// An identity's methods and TOTP code when the auth is inherited from one
    /// (docs/identities.md): `methods`, `totp`.
    #[serde(flatten)]
    identity: Option<&'a OpenedIdentity>,
}

/// `connect`'s `effective`: what the app puts on the `ssh` command line.
#[derive(Serialize)]
struct EffectiveView<'a> {
    hostname: &'a str,
    port: u16,
    username: &'a str,
    identity_id: Option<&'a str>,
    jump_host_ids: &'a [String],
    ssh_options: &'a [String],
}

impl<'a> EffectiveView<'a> {
    fn of(flat: &'a Host) -> EffectiveView<'a> {
        EffectiveView {
            hostname: &flat.hostname,
            port: flat.port.unwrap_or(DEFAULT_PORT),
            username: flat.username.as_deref().unwrap_or_default(),
            identity_id: flat.identity_id.as_deref(),
            jump_host_ids: flat.jump_host_ids.as_deref().unwrap_or_default(),
            ssh_options: &flat.ssh_options,
        }
    }
}

/// Opened secrets of one host, wiped on drop.
enum Credentials {
    Password(Option<Secret>),
    Key {
        key_id: String,
        private_key: Secret,
        passphrase: Option<Secret>,
    },
    Agent,
    /// A key the SSH agent signs with: no secret leaves the vault.
    ViaAgent {
        key_id: String,
        public_key: String,
        socket: String,
    },
    /// The auth is an identity's: its methods go out as `methods` (`OpenedIdentity`).
    Identity,
}

/// What `connect` opens: the host's own secret, or the identity's its auth comes from.
enum Sealed {
    Own(SealedCredentials),
    Identity(SealedIdentity),
}

/// The sealed secrets of `host`'s effective auth (docs/identities.md): its own, else those of
/// the identity the auth resolves to.
fn sealed_credentials(
    conn: &store::Conn,
    host: &Host,
    effective: &Effective,
) -> Result<Sealed, ApiError> {
    if let Some(own) = store::hosts::credentials(conn, host)? {
        return Ok(Sealed::Own(own));
    }
    let identity = match effective.auth.as_ref().map(|auth| &auth.source) {
        Some(Source::Identity { id, .. }) => id,
        _ => {
            return Err(ApiError::internal(
                "a host without auth passed the effective check",
            ))
        }
    };
    match store::identities::sealed(conn, identity)? {
        Some(sealed) => Ok(Sealed::Identity(sealed)),
        None => Err(ApiError::IdentityNotFound),
    }
}

/// docs/api.md, Hosts (extension): sets `last_used_at` and answers the decrypted
/// credentials. The only response with a secret; `Cache-Control: no-store`. With
/// `?agent=true` a key host gets its public key and the SSH agent's socket instead of the
/// private key (docs/agent.md "SSH agent").
pub fn connect(state: &AppState, req: &Req, id: &str) -> Result<Reply, ApiError> {
    let via_agent = crate::api::agent_use::agent_param(req)?;
    let (host, flat, (auth_label, first_key), sealed, proxy_jump, session) =
        state.db.read(|conn| {
            let host = store::hosts::by_id(conn, id)?;
            let mut inheritance = store::inherit::Inheritance::for_host(conn, &host)?;
            let effective = inheritance.resolve(&host);
            let flat = check_effective(&host, &effective)?;
            let session = session_use::read(conn, &host, &inheritance, &effective)?;
            if !effective.jump_host_ids.value.is_empty() {
                // The hops sit in other groups: their values need every group's defaults.
                inheritance = store::inherit::Inheritance::load(conn)?;
            }
            let Some(route) = inheritance.route(conn, &effective.jump_host_ids.value)? else {
                return Err(ApiError::InvalidJumpChain(format!(
                    "the route of host {id} through its hops' own and inherited chains loops or \
                 passes {} hops; change a chain with PUT /api/hosts/ID or a group default",
                    crate::model::interop::MAX_ROUTE_HOPS
                )));
            };
            let route: Vec<Host> = route
                .iter()
                .map(|hop| inheritance.resolve(hop).flatten(hop))
                .collect();
            // docs/api.md "Host keys (known_hosts)": no secret for a route with a changed or
            // revoked host key pending.
            if let Some(blocked) = crate::trust::check_route(conn, &flat, &route)? {
                return Err(ApiError::HostKeyChanged(blocked.to_string()));
            }
            let proxy_jump = proxy_jump(&route)?;
            let sealed = sealed_credentials(conn, &host, &effective)?;
            let first_key = effective.auth_key();
            Ok::<_, ApiError>((
                host,
                flat,
                (effective.auth_label(), first_key),
                sealed,
                proxy_jump,
                session,
            ))
        })?;
    let session = session_use::open(state, session)?;
    let username = flat.username.clone().unwrap_or_default();
    let certificate = match &first_key {
        Some(key_id) => crate::api::certificate_in_use(state, key_id, &username)?,
        None => None,
    };
    let (credentials, identity) = match (&sealed, via_agent) {
        (Sealed::Own(SealedCredentials::Key { key_id, .. }), true) => {
            let agent = crate::api::agent_use::connect_credentials(state, key_id)?;
            let via = Credentials::ViaAgent {
                key_id: key_id.clone(),
                public_key: agent.public_key,
                socket: agent.socket,
            };
            (via, None)
        }
        (Sealed::Own(own), _) => (open_credentials(state, id, own)?, None),
        (Sealed::Identity(sealed), via_agent) => {
            let opened = identity_use::open(state, sealed, via_agent)?;
            (Credentials::Identity, Some(opened))
        }
    };
    // Set only once the secrets opened: a failed connect is not a use. The history entry
    // commits with it (docs/api.md, "Connection history").
    let host = record_use(state, host, &flat, &auth_label)?;
    let view = ConnectView {
        host: host.view(),
        effective: EffectiveView::of(&flat),
        credentials: CredentialsView {
            proxy_jump: proxy_jump.as_deref(),
            certificate: certificate.as_deref(),
            identity: identity.as_ref(),
            ..credentials_view(&credentials, &auth_label, &username)?
        },
        session: &session,
    };
    Ok(secret_reply(&view)?.with_header("Cache-Control", "no-store"))
}

/// Sets `last_used_at`. docs/api.md, Hosts: recording the use is not worth a refused session, so
/// when the write fails (a full disk above all) the credentials still go out, with the host
/// as it was read, and a warning goes to the log. A host deleted meanwhile is not found.
fn record_use(
    state: &AppState,
    host: Host,
    flat: &Host,
    auth_label: &str,
) -> Result<Host, ApiError> {
    let touched = state.db.write(|tx| {
        let touched = store::hosts::touch_last_used(tx, &host.id)?;
        let connected_at = touched.last_used_at.as_deref().unwrap_or_default();
        store::history::append(tx, flat, auth_label, connected_at)?;
        Ok(touched)
    });
    match touched {
        Ok(touched) => Ok(touched),
        Err(store::StoreError::HostNotFound) => Err(ApiError::HostNotFound),
        Err(err) => {
            log::warn!(
                "connect {}: handing out the credentials without recording the use: {err}",
                host.id
            );
            Ok(host)
        }
    }
}

/// The host flattened to its effective values (docs/identities.md), when they make a
/// connection: a host with no username or no auth at any level is 400 naming the field.
/// docs/api.md, Hosts: a host whose username or hostname breaks its rule (a row written
/// before the rule, by an older import or another tool) is never handed out: the app would
/// put it on an `ssh` command line (`-oProxyCommand=...` as a user runs a command). 400
/// `VALIDATION_ERROR` naming the field, never its value.
fn check_effective(host: &Host, effective: &Effective) -> Result<Host, ApiError> {
    let fix = format!("change it with PUT /api/hosts/{}", host.id);
    if let Some(field) = effective.missing() {
        let rule = format!(
            "is not set on the host, its identity or any group above it; {fix} or set a \
             group default"
        );
        return Err(ApiError::validation(field, rule));
    }
    let flat = effective.flatten(host);
    let username = flat.username.as_deref().unwrap_or_default();
    if let Some(rule) = validate::username_problem(username) {
        let rule = format!("the stored username breaks the rule: it {rule}; {fix}");
        return Err(ApiError::validation("username", rule));
    }
    if let Some(rule) = validate::hostname_problem(&host.hostname) {
        let rule = format!("the stored hostname breaks the rule: it {rule}; {fix}");
        return Err(ApiError::validation("hostname", rule));
    }
    Ok(flat)
}

/// The `ssh -J` text of a route (`None` for no hops): `user@host:port` joined by commas.
/// docs/api.md, Hosts: each hop's parts are checked here too (rows stored before the username
/// rule may break it), so one hop can never read as two: a username with `,` `@` `:` `/`,
/// whitespace or shell syntax fails the connect instead.
fn proxy_jump(route: &[Host]) -> Result<Option<String>, ApiError> {
    if route.is_empty() {
        return Ok(None);
    }
    let mut hops = Vec::with_capacity(route.len());
    for hop in route {
        let username = hop.username.as_deref().unwrap_or_default();
        if let Some(rule) = validate::username_problem(username) {
            return Err(ApiError::InvalidJumpChain(format!(
                "jump host {} has a username that ssh -J cannot take: it {rule}; change it \
                 with PUT /api/hosts/{}",
                hop.id, hop.id
            )));
        }
        if validate::hostname_problem(&hop.hostname).is_some() {
            return Err(ApiError::InvalidJumpChain(format!(
                "jump host {} has a hostname that ssh -J cannot take; change it with \
                 PUT /api/hosts/{}",
                hop.id, hop.id
            )));
        }
        let port = hop.port.unwrap_or(DEFAULT_PORT);
        hops.push(interop::jump_spec(username, &hop.hostname, port));
    }
    Ok(Some(hops.join(",")))
}

/// Opens what `connect` hands out. Takes the vault lock once, holds no db lock.
fn open_credentials(
    state: &AppState,
    host_id: &str,
    sealed: &SealedCredentials,
) -> Result<Credentials, ApiError> {
    let vault = state.session.vault();
    Ok(match sealed {
        SealedCredentials::Password(None) => Credentials::Password(None),
        SealedCredentials::Password(Some(sealed)) => {
            let context = SealContext {
                table: "hosts",
                row_id: host_id,
                field: "password",
            };
            Credentials::Password(Some(vault.open(context, sealed)?))
        }
        SealedCredentials::Key {
            key_id,
            private_key,
            passphrase,
        } => {
            let context = |field| SealContext {
                table: "keys",
                row_id: key_id,
                field,
            };
            Credentials::Key {
                key_id: key_id.clone(),
                private_key: vault.open(context("private_key"), private_key)?,
                passphrase: match passphrase {
                    Some(sealed) => Some(vault.open(context("passphrase"), sealed)?),
                    None => None,
                },
            }
        }
        SealedCredentials::Agent => Credentials::Agent,
    })
}

fn credentials_view<'a>(
    credentials: &'a Credentials,
    auth_type: &'a str,
    username: &'a str,
) -> Result<CredentialsView<'a>, ApiError> {
    let mut view = CredentialsView {
        auth_type,
        username,
        password: None,
        key_id: None,
        private_key: None,
        passphrase: None,
        public_key: None,
        identity_agent: None,
        proxy_jump: None,
        certificate: None,
        identity: None,
    };
    match credentials {
        Credentials::Password(password) => {
            view.password = password.as_ref().map(text_of).transpose()?;
        }
        Credentials::Key {
            key_id,
            private_key,
            passphrase,
        } => {
            view.key_id = Some(key_id);
            view.private_key = Some(text_of(private_key)?);
            view.passphrase = passphrase.as_ref().map(text_of).transpose()?;
        }
        Credentials::Agent | Credentials::Identity => {}
        Credentials::ViaAgent {
            key_id,
            public_key,
            socket,
        } => {
            view.key_id = Some(key_id);
            view.public_key = Some(public_key);
            view.identity_agent = Some(socket);
        }
    }
    Ok(view)
}

/// A stored secret as text. Every secret arrived as a JSON string, so it is UTF-8.
fn text_of(secret: &Secret) -> Result<&str, ApiError> {
    secret
        .expose_str()
        .ok_or_else(|| ApiError::internal("a stored secret is not UTF-8"))
}

/// A 200 JSON reply whose body holds secrets: serialized once to measure, then into a
/// wiped buffer of exactly that size, so no growing `Vec` leaves copies in freed memory.
fn secret_reply<T: Serialize>(value: &T) -> Result<Reply, ApiError> {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).map_err(ApiError::internal)?;
    let mut body = Zeroizing::new(Vec::with_capacity(counter.0));
    serde_json::to_writer(&mut *body, value).map_err(ApiError::internal)?;
    Ok(Reply {
        status: 200,
        content_type: crate::api::JSON,
        headers: Vec::new(),
        body,
    })
}

/// A writer that only counts bytes.
struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    use serde_json::{json, Value};
    use zeroize::Zeroizing;

    use crate::api::connect::connect;
    use crate::api::hosts::create;
    use crate::api::Req;
    use crate::http::Method;
    use crate::state::AppState;
    use crate::store;
    use crate::vault::{DataKey, SealContext, Vault};

    const PRIVATE_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n";

    fn state() -> AppState {
        AppState::for_tests(Vault::NoPassword(DataKey::generate()))
    }

    fn connect_request() -> Req {
        Req::new(
            Method::Post,
            "/api/hosts/x/connect",
            Zeroizing::new(Vec::new()),
        )
        .unwrap()
    }

    /// Stores key `id` as the keys endpoints do: secrets sealed for the keys table.
    fn store_key(state: &AppState, id: &str, sealed_for: &str, passphrase: Option<&str>) {
        let seal = |field, bytes: &[u8]| {
            let context = SealContext {
                table: "keys",
                row_id: sealed_for,
                field,
            };
            state.session.vault().seal(context, bytes).unwrap()
        };
        let private_key = seal("private_key", PRIVATE_KEY.as_bytes());
        let passphrase = passphrase.map(|text| seal("passphrase", text.as_bytes()));
        state
            .db
            .write(|tx| {
                let name = crate::model::name::Name::from_text(id).unwrap();
                let row = store::keys::NewKey {
                    has_passphrase: passphrase.is_some(),
                    sealed_private_key: &private_key,
                    sealed_passphrase: passphrase.as_deref(),
                    ..store::keys::NewKey::for_tests(id, id)
                };
                store::keys::insert(tx, &name, &row)
            })
            .unwrap();
    }

    fn create_key_host(state: &AppState, key_id: &str) -> String {
        let body = json!({
            "name": "k", "hostname": "k.example.com", "port": 22, "username": "git",
            "auth": {"type": "key", "key_id": key_id}
        });
        let req = Req::new(
            Method::Post,
            "/api/hosts",
            Zeroizing::new(body.to_string().into_bytes()),
        )
        .unwrap();
        let reply = create(state, &req).unwrap();
        let host: Value = serde_json::from_slice(&reply.body).unwrap();
        host["id"].as_str().unwrap().to_owned()
    }

    #[test]
    fn connect_with_key_auth_answers_the_private_key_and_passphrase() {
        let state = state();
        store_key(&state, "k1", "k1", Some("pass-phrase"));
        let host_id = create_key_host(&state, "k1");
        let reply = connect(&state, &connect_request(), &host_id).unwrap();
        assert!(reply
            .headers
            .contains(&("Cache-Control", "no-store".to_string())));
        let body: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(
            body["credentials"],
            json!({
                "type": "key", "username": "git", "key_id": "k1",
                "private_key": PRIVATE_KEY, "passphrase": "pass-phrase"
            })
        );
        assert_eq!(body["host"]["auth"]["key_id"], "k1");
        assert!(body["host"]["last_used_at"].is_string());
    }

    #[test]
    fn connect_with_a_key_without_passphrase_has_no_passphrase_field() {
        let state = state();
        store_key(&state, "k2", "k2", None);
        let host_id = create_key_host(&state, "k2");
        let body: Value =
            serde_json::from_slice(&connect(&state, &connect_request(), &host_id).unwrap().body)
                .unwrap();
        assert_eq!(body["credentials"]["private_key"], PRIVATE_KEY);
        assert!(body["credentials"].get("passphrase").is_none(), "{body}");
    }

    #[test]
    fn key_sealed_for_another_row_does_not_open_and_is_not_a_use() {
        let state = state();
        store_key(&state, "k3", "some-other-key", None);
        let host_id = create_key_host(&state, "k3");
        let err = connect(&state, &connect_request(), &host_id).err().unwrap();
        assert_eq!(err.code(), "INTERNAL_ERROR");
        let host = state
            .db
            .read(|conn| store::hosts::by_id(conn, &host_id))
            .unwrap();
        assert_eq!(host.last_used_at, None);
    }
}
