//! Which catalogue rows travel as sync records, and as which fields (docs/sync.md, "What
//! travels"): each record kind's table, the columns that are its plain fields (a field is
//! named as its column), its secret columns with the vault slot each is sealed in, and how
//! its name is keyed. The rows beside a record (a host's tags, a key's certificates, an
//! identity's methods) are fields too; `project` and `apply` handle them by kind.
//!
//! Invariants: a column is listed here or derived on write (`name_key`, `fold_key`,
//! `updated_at`, `revision`, `seq`), or it is local to this device (a host's `last_used_at`,
//! a host key's `last_seen`) and never travels.

use crate::model::identity::literal_slot;
use crate::store::environment::{SEAL_FIELD, SEAL_TABLE};

/// How a kind's `name` column is keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// No name column.
    None,
    /// `name_key` only (hosts: names may repeat).
    Sorted,
    /// `name_key` and `fold_key`, the fold key unique in the whole table.
    Unique,
    /// `name_key` and `fold_key`, the fold key unique among rows of one `parent_id`.
    UniqueAmongSiblings,
}

/// A secret column and the field of its vault seal context (the context's table is the
/// kind's table, its row the record's id).
#[derive(Debug, Clone, Copy)]
pub struct SecretColumn {
    pub column: &'static str,
    pub slot: &'static str,
}

/// One record kind.
#[derive(Debug)]
pub struct Kind {
    pub kind: &'static str,
    pub table: &'static str,
    pub fields: &'static [&'static str],
    pub secrets: &'static [SecretColumn],
    pub naming: Naming,
    /// Another column set that is unique in the table (the same key twice, the same
    /// known-hosts entry twice): such a clash keeps the record with the smaller id.
    pub unique: &'static [&'static str],
    /// Whether the table has `updated_at` (each change sets it; the change log's triggers
    /// and `revision` follow it).
    pub has_updated_at: bool,
}

pub const HOST: Kind = Kind {
    kind: "host",
    table: "hosts",
    fields: &[
        "name",
        "hostname",
        "port",
        "username",
        "auth_type",
        "key_id",
        "group_id",
        "is_favorite",
        "color",
        "sort_order",
        "notes",
        "created_at",
        "identity_id",
        "jumps_set",
        "startup",
    ],
    secrets: &[SecretColumn {
        column: "password",
        slot: "password",
    }],
    naming: Naming::Sorted,
    unique: &[],
    has_updated_at: true,
};

pub const GROUP: Kind = Kind {
    kind: "group",
    table: "groups",
    fields: &[
        "parent_id",
        "name",
        "color",
        "icon",
        "created_at",
        "default_username",
        "default_port",
        "default_identity_id",
        "default_jump_host_ids",
        "default_ssh_options",
        "default_set_env",
        "default_send_env",
    ],
    secrets: &[],
    naming: Naming::UniqueAmongSiblings,
    unique: &[],
    has_updated_at: true,
};

pub const KEY: Kind = Kind {
    kind: "key",
    table: "keys",
    fields: &[
        "name",
        "type",
        "public_key",
        "fingerprint",
        "comment",
        "has_passphrase",
        "created_at",
        "agent_enabled",
        "agent_confirm",
        "agent_forwarded",
    ],
    secrets: &[
        SecretColumn {
            column: "private_key",
            slot: "private_key",
        },
        SecretColumn {
            column: "passphrase",
            slot: "passphrase",
        },
    ],
    naming: Naming::Unique,
    unique: &["fingerprint"],
    has_updated_at: true,
};

pub const IDENTITY: Kind = Kind {
    kind: "identity",
    table: "identities",
    fields: &[
        "name",
        "username",
        "totp_digits",
        "totp_period",
        "totp_algorithm",
        "notes",
        "created_at",
    ],
    secrets: &[SecretColumn {
        column: "totp_secret",
        slot: "totp",
    }],
    naming: Naming::Unique,
    unique: &[],
    has_updated_at: true,
};

pub const FORWARD: Kind = Kind {
    kind: "forward",
    table: "forwards",
    fields: &[
        "host_id",
        "group_id",
        "position",
        "type",
        "bind_address",
        "bind_port",
        "bind_socket",
        "target_host",
        "target_port",
        "target_socket",
        "enabled",
        "autostart",
        "description",
        "created_at",
    ],
    secrets: &[],
    naming: Naming::None,
    unique: &[],
    has_updated_at: true,
};

pub const HOST_KEY: Kind = Kind {
    kind: "host_key",
    table: "known_hosts",
    fields: &[
        "host",
        "hashed",
        "wildcard",
        "key_type",
        "public_key",
        "fingerprint",
        "marker",
        "comment",
        "source",
        "first_seen",
    ],
    secrets: &[],
    naming: Naming::None,
    unique: &["host", "public_key", "marker"],
    has_updated_at: false,
};

pub const SAVED_SEARCH: Kind = Kind {
    kind: "saved_search",
    table: "saved_searches",
    fields: &["name", "q", "created_at"],
    secrets: &[],
    naming: Naming::Unique,
    unique: &[],
    has_updated_at: true,
};

/// Every kind, in the order a merge applies them (what others point at first).
pub const KINDS: [&Kind; 7] = [
    &GROUP,
    &KEY,
    &IDENTITY,
    &HOST,
    &FORWARD,
    &HOST_KEY,
    &SAVED_SEARCH,
];

/// The kind named `kind`, if this build syncs it.
pub fn kind(kind: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|known| known.kind == kind)
}

/// A host's or group's secret environment value `NAME` is the field `env.NAME`.
pub const ENV_PREFIX: &str = "env.";
/// An identity's password (of its password method) is this field.
pub const METHOD_PASSWORD: &str = "method_password";
/// An identity's literal answer at position N is the field `answer.N` (its seal slot's name).
pub const ANSWER_PREFIX: &str = "answer.";

/// The fields of a kind that are rows beside its own (in the order `project` writes them).
pub fn child_fields(kind: &Kind) -> &'static [&'static str] {
    match kind.kind {
        "host" => &["tags", "jumps", "ssh_options"],
        "key" => &["certificates"],
        "identity" => &["methods", "answers"],
        _ => &[],
    }
}

/// Whether this build maps `field` of a record of `kind` to the catalogue (a field a newer
/// version added is carried in the bundle but never compared with the catalogue).
pub fn is_known_field(kind: &Kind, field: &str) -> bool {
    kind.fields.contains(&field) || child_fields(kind).contains(&field) || is_secret(kind, field)
}

/// Whether `field` of a record of `kind` holds a secret (sealed under the sync key in a
/// bundle, under the vault key in the catalogue).
pub fn is_secret(kind: &Kind, field: &str) -> bool {
    kind.secrets.iter().any(|secret| secret.column == field)
        || ((kind.kind == "host" || kind.kind == "group") && field.starts_with(ENV_PREFIX))
        || (kind.kind == "identity"
            && (field == METHOD_PASSWORD || field.starts_with(ANSWER_PREFIX)))
}

/// Where the vault seals `field` of the record `(kind, id)`: the seal context's table, row
/// and field; `None` for a field that is not a secret.
pub fn seal_slot(
    kind: &Kind,
    id: &str,
    field: &str,
) -> Option<(&'static str, String, &'static str)> {
    if let Some(secret) = kind.secrets.iter().find(|secret| secret.column == field) {
        return Some((kind.table, id.to_owned(), secret.slot));
    }
    match kind.kind {
        "host" | "group" => field
            .strip_prefix(ENV_PREFIX)
            .map(|name| (SEAL_TABLE, format!("{id}/{name}"), SEAL_FIELD)),
        "identity" if field == METHOD_PASSWORD => Some(("identities", id.to_owned(), "password")),
        "identity" => field
            .strip_prefix(ANSWER_PREFIX)
            .and_then(|position| position.parse::<usize>().ok())
            .and_then(literal_slot)
            .map(|slot| ("identities", id.to_owned(), slot)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_this_build_syncs_is_one_the_record_model_knows() {
        use crate::model::sync::record::KNOWN_KINDS;
        for kind in KINDS {
            assert!(
                KNOWN_KINDS.contains(&kind.kind) || kind.kind == "saved_search",
                "{}",
                kind.kind
            );
        }
    }

    #[test]
    fn secret_fields_are_exactly_the_sealed_columns_and_slots() {
        assert!(is_secret(&HOST, "password"));
        assert!(is_secret(&HOST, "env.TOKEN"));
        assert!(!is_secret(&HOST, "notes"));
        assert!(is_secret(&KEY, "private_key"));
        assert!(is_secret(&KEY, "passphrase"));
        assert!(!is_secret(&KEY, "public_key"));
        assert!(is_secret(&IDENTITY, "method_password"));
        assert!(is_secret(&IDENTITY, "answer.3"));
        assert!(is_secret(&IDENTITY, "totp_secret"));
        assert!(!is_secret(&IDENTITY, "methods"));
        assert!(!is_secret(&FORWARD, "env.X"));
    }

    #[test]
    fn each_secret_field_has_the_seal_slot_the_api_seals_it_in() {
        let slot = |kind, field| seal_slot(kind, "id1", field);
        assert_eq!(
            slot(&HOST, "password"),
            Some(("hosts", "id1".into(), "password"))
        );
        assert_eq!(
            slot(&KEY, "passphrase"),
            Some(("keys", "id1".into(), "passphrase"))
        );
        assert_eq!(
            slot(&IDENTITY, "totp_secret"),
            Some(("identities", "id1".into(), "totp"))
        );
        assert_eq!(
            slot(&IDENTITY, "method_password"),
            Some(("identities", "id1".into(), "password"))
        );
        assert_eq!(
            slot(&IDENTITY, "answer.15"),
            Some(("identities", "id1".into(), "answer.15"))
        );
        assert_eq!(slot(&IDENTITY, "answer.16"), None);
        assert_eq!(
            slot(&GROUP, "env.TOKEN"),
            Some(("env_secrets", "id1/TOKEN".into(), "value"))
        );
        assert_eq!(slot(&HOST, "notes"), None);
    }
}
