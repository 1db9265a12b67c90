//! The answer of an `~/.ssh/config` import (docs/api.md: `{created, updated, unchanged,
//! skipped, missing_keys, warnings, dry_run}`) and the checks of one block that only report:
//! its fields against the hosts API's rules, and its kept directives against the
//! `ssh_options` rule. `ssh_config_import` decides the plan and fills this in.
//!
//! Invariants: a refusal names the directive a field came from and the rule, never the
//! refused value; nothing is dropped without a line in the answer.

use serde::Serialize;

use crate::model::host::HostFields;
use crate::model::interop::{self, MAX_SSH_OPTIONS};
use crate::model::ssh_config::HostBlock;
use crate::model::validate::Invalid;

/// The body of an import answer (docs/api.md: `{created, updated, unchanged, skipped,
/// missing_keys, warnings, dry_run}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub created: Vec<Item>,
    pub updated: Vec<Item>,
    pub unchanged: Vec<Item>,
    pub skipped: Vec<Skip>,
    pub missing_keys: Vec<MissingKey>,
    pub warnings: Vec<Warning>,
    pub dry_run: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    /// `null` in a dry run's `created` (nothing was stored).
    pub id: Option<String>,
    pub name: String,
    pub block: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skip {
    pub block: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MissingKey {
    pub block: String,
    pub identity_file: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub block: String,
    pub message: String,
}

impl ImportReport {
    /// The block's name, hostname, port and user (`default_user` when it has no `User`),
    /// checked by the hosts API's rules; `None`, with the block reported skipped, when one
    /// breaks its rule.
    pub(super) fn fields_of(
        &mut self,
        block: &HostBlock,
        default_user: &str,
    ) -> Option<HostFields> {
        let user = block.username.as_deref().unwrap_or(default_user);
        let port = u64::from(block.port);
        match HostFields::from_text(&block.name, &block.hostname, port, user) {
            Ok(fields) => Some(fields),
            Err(invalid) => {
                self.skipped.push(Skip {
                    block: block.label.clone(),
                    reason: refusal(block, &invalid),
                });
                None
            }
        }
    }

    /// The directives a block keeps, each checked like `ssh_options` of the hosts API; one
    /// that fails (or beyond the count limit) is reported and dropped.
    pub(super) fn checked_options(
        &mut self,
        block: &HostBlock,
        options: Vec<String>,
    ) -> Vec<String> {
        let mut kept = Vec::new();
        for option in options {
            match interop::ssh_option(&option) {
                Ok(_) if kept.len() >= MAX_SSH_OPTIONS => self.warn(
                    block,
                    format!("more than {MAX_SSH_OPTIONS} directives; dropped: {option}"),
                ),
                Ok(option) => kept.push(option),
                Err(rule) => self.warn(block, format!("directive dropped ({rule}): {option}")),
            }
        }
        kept
    }

    pub fn warn(&mut self, block: &HostBlock, message: String) {
        self.warnings.push(Warning {
            block: block.label.clone(),
            message,
        });
    }
}

/// Why a block whose fields break a rule of the API is not imported, naming the directive
/// the field came from (never its value: it is refused, and could be anything).
fn refusal(block: &HostBlock, invalid: &Invalid) -> String {
    let source = match invalid.field.as_str() {
        "name" => "the name (the first Host alias, or the host-manager name comment)",
        "hostname" => "HostName (or the Host alias when there is none)",
        "port" => "Port",
        "username" if block.username.is_some() => "User",
        "username" => "the default user (the block has no User)",
        _ => "a field",
    };
    format!(
        "{source} {} (the API's rule for {}); the host is not imported",
        invalid.rule, invalid.field
    )
}
