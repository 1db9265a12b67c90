//! `ApiError`: every failure a handler can meet, with its status and code. What the HTTP
//! layer itself refuses (framing, limits, the gate, routing) is `http::HttpError`; both
//! render through `http::Reply::error` (`api::error_reply` for this one).
//!
//! Invariants: a variant carries ids, field names and rules, never a secret value; an
//! `Internal` cause is logged by the router and never reaches a response body.

use std::fmt;

/// Everything a handler can answer with instead of success.
#[derive(Debug)]
pub enum ApiError {
    /// The body is not JSON at all; the text says where parsing stopped.
    InvalidJson(String),
    /// A field broke a validation rule: `details` names the field and the rule.
    Validation {
        field: String,
        rule: String,
    },
    /// A query parameter is malformed.
    InvalidParameter {
        name: String,
        rule: String,
    },
    HostNotFound,
    /// Ids of a batch that name no host (the text lists some and how many); nothing was
    /// written.
    HostsNotFound(String),
    /// A hop of `jump_host_ids` names no host; the text names which.
    JumpHostNotFound(String),
    /// A ProxyJump chain that loops or repeats; the text says how.
    InvalidJumpChain(String),
    /// A host is still a hop in this many hosts' chains.
    HostInUse(u64),
    GroupNotFound,
    KeyNotFound,
    KnownHostNotFound,
    /// A host key differs from the trusted one of its type (accept without `replace`), or
    /// `connect` met a `changed`/`revoked` verdict on its route; the text names the host
    /// (or hop) and the fingerprints.
    HostKeyChanged(String),
    /// The key (or its CA) is marked `@revoked`: it cannot be accepted.
    HostKeyRevoked(String),
    /// A name clashes with an existing one; the text names where.
    DuplicateName(String),
    DuplicateKey,
    /// A key is still referenced by this many hosts and identities.
    KeyInUse {
        hosts: u64,
        identities: u64,
    },
    IdentityNotFound,
    /// `POST /api/import/{format}` with a format no importer reads (docs/import.md).
    UnknownFormat,
    /// Another identity has this name (compared caselessly).
    IdentityNameTaken,
    /// Hosts and groups still name the identity (docs/identities.md): their counts.
    IdentityInUse {
        hosts: u64,
        groups: u64,
    },
    /// The identity has no TOTP secret to make a code with.
    TotpNotSet,
    /// No forward rule with this id belongs to the host or group of the path.
    ForwardNotFound,
    /// An enabled autostart rule would listen where another one does (docs/forwards.md,
    /// "Port conflicts"); the text names the other rule and its host or group.
    PortConflict(String),
    InvalidMove(String),
    /// `If-Match` or a body's `revision` names another revision than the resource's
    /// `current` one: someone else changed it since it was read.
    PreconditionFailed {
        resource: &'static str,
        current: i64,
    },
    InvalidKey(String),
    /// A certificate that is not a user certificate of the key; the text says why.
    InvalidCertificate(String),
    /// The key has no certificate (for these principals) to remove.
    CertificateNotFound,
    InvalidPassphrase,
    VaultLocked,
    InvalidPassword,
    VaultNoPassword,
    /// Too many slow operations at once; the client may retry.
    Busy,
    /// No sign request with this id waits for a decision (docs/agent.md "SSH agent").
    AgentRequestNotFound,
    /// `connect ?agent=true` for a host whose key the agent does not serve; the text says
    /// why.
    AgentUnavailable(String),
    /// No snapshot has this id (docs/api.md, "Snapshots").
    SnapshotNotFound,
    /// The snapshot cannot be restored here (another vault key, a newer schema, a missing
    /// file); the text says why.
    SnapshotIncompatible(String),
    /// As many manual snapshots as may be kept (the number) are kept already.
    SnapshotLimit(usize),
    /// Sync is not set up (docs/sync.md).
    SyncDisabled,
    /// The sync passphrase does not open the folder's bundles, or a backup's.
    SyncPassphraseMismatch,
    /// The sync folder cannot be listed; the text says why.
    SyncFolderUnusable(String),
    /// A merge would delete too much and is held until confirmed; the text says how much.
    MassDelete(String),
    /// A bundle given to import is not one or is damaged; the text says which.
    BundleDamaged(String),
    /// The disk holding the data dir is full: nothing was written (the cause was logged).
    StorageFull,
    /// A query of the query language (docs/query.md) that does not parse: the text names
    /// the parameter or field, the column of the fault, what and a hint.
    InvalidQuery(String),
    /// No saved search with this id.
    SearchNotFound,
    /// Anything unexpected. The cause is for the log only.
    Internal(String),
}

impl ApiError {
    pub fn validation(field: &str, rule: impl Into<String>) -> ApiError {
        ApiError::Validation {
            field: field.to_owned(),
            rule: rule.into(),
        }
    }

    pub fn parameter(name: &str, rule: impl Into<String>) -> ApiError {
        ApiError::InvalidParameter {
            name: name.to_owned(),
            rule: rule.into(),
        }
    }

    pub fn internal(cause: impl fmt::Display) -> ApiError {
        ApiError::Internal(cause.to_string())
    }

    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidJson(_)
            | ApiError::Validation { .. }
            | ApiError::InvalidParameter { .. }
            | ApiError::InvalidMove(_)
            | ApiError::InvalidJumpChain(_)
            | ApiError::InvalidKey(_)
            | ApiError::InvalidCertificate(_)
            | ApiError::InvalidQuery(_)
            | ApiError::BundleDamaged(_)
            | ApiError::InvalidPassphrase => 400,
            ApiError::VaultLocked | ApiError::InvalidPassword => 401,
            ApiError::HostNotFound
            | ApiError::HostsNotFound(_)
            | ApiError::JumpHostNotFound(_)
            | ApiError::GroupNotFound
            | ApiError::KeyNotFound
            | ApiError::KnownHostNotFound
            | ApiError::IdentityNotFound
            | ApiError::UnknownFormat
            | ApiError::CertificateNotFound
            | ApiError::ForwardNotFound
            | ApiError::SearchNotFound
            | ApiError::AgentRequestNotFound
            | ApiError::SnapshotNotFound => 404,
            ApiError::DuplicateName(_)
            | ApiError::DuplicateKey
            | ApiError::KeyInUse { .. }
            | ApiError::IdentityNameTaken
            | ApiError::IdentityInUse { .. }
            | ApiError::TotpNotSet
            | ApiError::PortConflict(_)
            | ApiError::HostInUse(_)
            | ApiError::HostKeyChanged(_)
            | ApiError::HostKeyRevoked(_)
            | ApiError::VaultNoPassword
            | ApiError::AgentUnavailable(_)
            | ApiError::SnapshotIncompatible(_)
            | ApiError::SnapshotLimit(_)
            | ApiError::SyncDisabled
            | ApiError::SyncPassphraseMismatch
            | ApiError::SyncFolderUnusable(_)
            | ApiError::MassDelete(_) => 409,
            ApiError::PreconditionFailed { .. } => 412,
            ApiError::Busy => 503,
            // RFC 4918 §11.5 Insufficient Storage: the request was fine, the disk is not.
            ApiError::StorageFull => 507,
            ApiError::Internal(_) => 500,
        }
    }

    /// The stable upper-case identifier of the API's error body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidJson(_) => "INVALID_JSON",
            ApiError::Validation { .. } | ApiError::InvalidParameter { .. } => "VALIDATION_ERROR",
            ApiError::HostNotFound | ApiError::JumpHostNotFound(_) => "HOST_NOT_FOUND",
            ApiError::HostsNotFound(_) => "HOST_NOT_FOUND",
            ApiError::InvalidJumpChain(_) => "INVALID_JUMP_CHAIN",
            ApiError::HostInUse(_) => "HOST_IN_USE",
            ApiError::GroupNotFound => "GROUP_NOT_FOUND",
            ApiError::KeyNotFound => "KEY_NOT_FOUND",
            ApiError::KnownHostNotFound => "KNOWN_HOST_NOT_FOUND",
            ApiError::HostKeyChanged(_) => "HOST_KEY_CHANGED",
            ApiError::HostKeyRevoked(_) => "HOST_KEY_REVOKED",
            ApiError::DuplicateName(_) => "DUPLICATE_NAME",
            ApiError::DuplicateKey => "DUPLICATE_KEY",
            ApiError::KeyInUse { .. } => "KEY_IN_USE",
            ApiError::IdentityNotFound => "IDENTITY_NOT_FOUND",
            ApiError::UnknownFormat => "NOT_FOUND",
            ApiError::IdentityNameTaken => "IDENTITY_NAME_TAKEN",
            ApiError::IdentityInUse { .. } => "IDENTITY_IN_USE",
            ApiError::TotpNotSet => "TOTP_NOT_SET",
            ApiError::ForwardNotFound => "FORWARD_NOT_FOUND",
            ApiError::PortConflict(_) => "PORT_CONFLICT",
            ApiError::InvalidMove(_) => "INVALID_MOVE",
            ApiError::PreconditionFailed { .. } => "PRECONDITION_FAILED",
            ApiError::InvalidKey(_) => "INVALID_KEY",
            ApiError::InvalidCertificate(_) => "INVALID_CERTIFICATE",
            ApiError::CertificateNotFound => "CERTIFICATE_NOT_FOUND",
            ApiError::InvalidPassphrase => "INVALID_PASSPHRASE",
            ApiError::VaultLocked => "VAULT_LOCKED",
            ApiError::InvalidPassword => "INVALID_PASSWORD",
            ApiError::VaultNoPassword => "VAULT_NO_PASSWORD",
            ApiError::Busy => "BUSY",
            ApiError::AgentRequestNotFound => "AGENT_REQUEST_NOT_FOUND",
            ApiError::AgentUnavailable(_) => "AGENT_UNAVAILABLE",
            ApiError::SnapshotNotFound => "SNAPSHOT_NOT_FOUND",
            ApiError::SnapshotIncompatible(_) => "SNAPSHOT_INCOMPATIBLE",
            ApiError::SnapshotLimit(_) => "SNAPSHOT_LIMIT",
            ApiError::SyncDisabled => "SYNC_DISABLED",
            ApiError::SyncPassphraseMismatch => "SYNC_PASSPHRASE_MISMATCH",
            ApiError::SyncFolderUnusable(_) => "SYNC_FOLDER_UNUSABLE",
            ApiError::MassDelete(_) => "MASS_DELETE",
            ApiError::BundleDamaged(_) => "BUNDLE_DAMAGED",
            ApiError::StorageFull => "STORAGE_FULL",
            ApiError::InvalidQuery(_) => "INVALID_QUERY",
            ApiError::SearchNotFound => "SEARCH_NOT_FOUND",
            ApiError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// The short human message of the error body.
    pub fn message(&self) -> &'static str {
        match self {
            ApiError::InvalidJson(_) => "request body is not valid JSON",
            ApiError::Validation { .. } => "validation failed",
            ApiError::InvalidParameter { .. } => "invalid query parameter",
            ApiError::HostNotFound | ApiError::HostsNotFound(_) | ApiError::JumpHostNotFound(_) => {
                "host not found"
            }
            ApiError::InvalidJumpChain(_) => "invalid jump chain",
            ApiError::HostInUse(_) => "host is used as a jump host",
            ApiError::GroupNotFound => "group not found",
            ApiError::KeyNotFound => "key not found",
            ApiError::KnownHostNotFound => "known host entry not found",
            ApiError::HostKeyChanged(_) => "host key changed",
            ApiError::HostKeyRevoked(_) => "host key revoked",
            ApiError::DuplicateName(_) => "name already in use",
            ApiError::DuplicateKey => "key already stored",
            ApiError::KeyInUse { .. } => "key is in use",
            ApiError::IdentityNotFound => "identity not found",
            ApiError::UnknownFormat => "no importer reads this format",
            ApiError::IdentityNameTaken => "identity name already in use",
            ApiError::IdentityInUse { .. } => "identity is in use",
            ApiError::TotpNotSet => "the identity has no TOTP secret",
            ApiError::ForwardNotFound => "forward rule not found",
            ApiError::PortConflict(_) => "another rule listens on this port",
            ApiError::InvalidMove(_) => "invalid move",
            ApiError::PreconditionFailed { .. } => "changed since it was read",
            ApiError::InvalidKey(_) => "invalid private key",
            ApiError::InvalidCertificate(_) => "invalid certificate",
            ApiError::CertificateNotFound => "certificate not found",
            ApiError::InvalidPassphrase => "wrong passphrase for this key",
            ApiError::VaultLocked => "vault is locked",
            ApiError::InvalidPassword => "wrong master password",
            ApiError::VaultNoPassword => "vault has no master password",
            ApiError::Busy => "service busy, retry shortly",
            ApiError::AgentRequestNotFound => "no such sign request waits",
            ApiError::AgentUnavailable(_) => "the SSH agent does not serve this host's key",
            ApiError::SnapshotNotFound => "snapshot not found",
            ApiError::SnapshotIncompatible(_) => "the snapshot cannot be restored here",
            ApiError::SnapshotLimit(_) => "too many manual snapshots",
            ApiError::SyncDisabled => "sync is not set up",
            ApiError::SyncPassphraseMismatch => "the sync passphrase does not open these bundles",
            ApiError::SyncFolderUnusable(_) => "the sync folder cannot be used",
            ApiError::MassDelete(_) => "the merge would delete many records: confirm it first",
            ApiError::BundleDamaged(_) => "not a bundle, or a damaged one",
            ApiError::StorageFull => "not enough disk space to save the change",
            ApiError::InvalidQuery(_) => "invalid query",
            ApiError::SearchNotFound => "saved search not found",
            ApiError::Internal(_) => "internal error",
        }
    }

    /// The optional `details` text. Never carries an internal cause.
    pub fn details(&self) -> Option<String> {
        match self {
            ApiError::InvalidJson(text)
            | ApiError::DuplicateName(text)
            | ApiError::InvalidMove(text)
            | ApiError::JumpHostNotFound(text)
            | ApiError::HostsNotFound(text)
            | ApiError::InvalidJumpChain(text)
            | ApiError::InvalidKey(text)
            | ApiError::InvalidCertificate(text)
            | ApiError::HostKeyChanged(text)
            | ApiError::HostKeyRevoked(text)
            | ApiError::AgentUnavailable(text)
            | ApiError::InvalidQuery(text)
            | ApiError::PortConflict(text)
            | ApiError::SnapshotIncompatible(text)
            | ApiError::SyncFolderUnusable(text)
            | ApiError::MassDelete(text)
            | ApiError::BundleDamaged(text) => Some(text.clone()),
            ApiError::SnapshotLimit(max) => Some(format!(
                "{max} manual snapshots are kept already; delete one (DELETE /api/snapshots/:id) \
                 first"
            )),
            ApiError::Validation { field, rule } => Some(format!("{field}: {rule}")),
            ApiError::InvalidParameter { name, rule } => {
                Some(format!("query parameter {name}: {rule}"))
            }
            ApiError::KeyInUse { hosts, identities } => Some(match (hosts, identities) {
                (_, 0) => format!("the key is used by {hosts} host(s)"),
                (0, _) => format!("the key is used by {identities} identity(ies)"),
                _ => format!("the key is used by {hosts} host(s) and {identities} identity(ies)"),
            }),
            ApiError::IdentityNameTaken => Some(
                "another identity already has this name (names compare case-insensitively)".into(),
            ),
            ApiError::IdentityInUse { hosts, groups } => Some(format!(
                "hosts: {hosts}, groups: {groups} name this identity; move them first or \
                 delete with ?reassign_to=<another identity id>"
            )),
            ApiError::TotpNotSet => {
                Some("set the identity's totp (PUT /api/identities/:id) to get codes".into())
            }
            ApiError::HostInUse(count) => Some(format!(
                "the host is a jump host (jump_host_ids) of {count} host(s)"
            )),
            ApiError::PreconditionFailed { resource, current } => Some(format!(
                "the {resource} is at revision {current} now (ETag \"{current}\"); read it \
                 again and retry with that revision"
            )),

            ApiError::StorageFull => Some(
                "the disk that holds the data dir is full; nothing was changed: free some \
                 space there and retry"
                    .into(),
            ),
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.details() {
            Some(details) => write!(f, "{} ({}): {details}", self.message(), self.code()),
            None => write!(f, "{} ({})", self.message(), self.code()),
        }
    }
}

impl std::error::Error for ApiError {}

/// The one way a broken rule of `model/` reaches a client: 400 `VALIDATION_ERROR` whose
/// details name the field and the rule (docs/api.md, "Error codes"). Handlers just use `?`.
impl From<crate::model::validate::Invalid> for ApiError {
    fn from(err: crate::model::validate::Invalid) -> ApiError {
        ApiError::Validation {
            field: err.field,
            rule: err.rule,
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(err: crate::store::StoreError) -> ApiError {
        match err {
            crate::store::StoreError::HostNotFound => ApiError::HostNotFound,
            crate::store::StoreError::GroupNotFound => ApiError::GroupNotFound,
            crate::store::StoreError::KeyNotFound => ApiError::KeyNotFound,
            crate::store::StoreError::KnownHostNotFound => ApiError::KnownHostNotFound,
            crate::store::StoreError::DuplicateName(text) => ApiError::DuplicateName(text),
            crate::store::StoreError::DuplicateKey => ApiError::DuplicateKey,
            crate::store::StoreError::KeyInUse { hosts, identities } => {
                ApiError::KeyInUse { hosts, identities }
            }
            crate::store::StoreError::IdentityNotFound => ApiError::IdentityNotFound,
            crate::store::StoreError::SearchNotFound => ApiError::SearchNotFound,
            crate::store::StoreError::IdentityNameTaken => ApiError::IdentityNameTaken,
            crate::store::StoreError::ForwardNotFound => ApiError::ForwardNotFound,
            crate::store::StoreError::SnapshotNotFound => ApiError::SnapshotNotFound,
            crate::store::StoreError::SnapshotIncompatible(why) => {
                ApiError::SnapshotIncompatible(why)
            }
            crate::store::StoreError::SnapshotLimit(max) => ApiError::SnapshotLimit(max),
            crate::store::StoreError::StorageFull(cause) => {
                // The server logs only internal errors' causes; this one is worth a line too.
                log::error!("a write failed for lack of disk space: {cause}");
                ApiError::StorageFull
            }
            crate::store::StoreError::Unusable(cause) | crate::store::StoreError::Sqlite(cause) => {
                ApiError::Internal(cause)
            }
            err @ (crate::store::StoreError::CorruptRow(_)
            | crate::store::StoreError::Json(_)
            | crate::store::StoreError::BrokenInvariant(_)
            | crate::store::StoreError::CheckpointBlocked
            | crate::store::StoreError::ListFull) => ApiError::Internal(err.to_string()),
        }
    }
}

impl From<crate::vault::VaultError> for ApiError {
    fn from(err: crate::vault::VaultError) -> ApiError {
        match err {
            crate::vault::VaultError::Locked => ApiError::VaultLocked,
            crate::vault::VaultError::InvalidPassword => ApiError::InvalidPassword,
            crate::vault::VaultError::NoPassword => ApiError::VaultNoPassword,
            internal @ (crate::vault::VaultError::Corrupt { .. }
            | crate::vault::VaultError::Malformed(_)) => ApiError::internal(internal),
        }
    }
}
