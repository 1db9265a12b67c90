//! Plain domain types, their validation and their pure rules (tree logic): no I/O at all.
//!
//! Invariants: never touches the database, the network, the clock or the vault; never holds
//! a secret value (the api layer keeps those in `vault::Secret`).

pub mod agent;
pub mod batch;
pub mod certificate;
pub mod environment;
pub mod fold;
pub mod forward;
pub mod forward_rule;
pub mod group;
pub mod host;
pub mod host_auth;
pub mod host_patterns;
pub mod host_query;
pub mod identity;
pub mod inherit;
pub mod interop;
pub mod key;
pub mod known_hosts;
pub mod name;
pub mod prompt_pattern;
pub mod query;
pub mod ssh_config;
pub mod ssh_config_export;
pub mod ssh_config_import;
pub mod ssh_config_report;
pub mod ssh_config_session;
pub mod ssh_words;
pub mod startup;
pub mod sync;
pub mod totp;
pub mod tree;
pub mod unicode_tables;
pub mod validate;
