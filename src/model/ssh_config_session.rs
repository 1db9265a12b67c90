//! A host block's forwards, startup command and environment in `~/.ssh/config` text
//! (docs/forwards.md, "The `~/.ssh/config` export and import"): the lines the export writes
//! for them, and the reading of those lines (and of any config's) back into rules and fields.
//!
//! Invariants: pure, no I/O; what `write` emits, `SessionReader` reads back to the same
//! rules (ids, flags, descriptions) and fields, secret values excepted (never written, only
//! named); a directive that cannot be held is reported as a warning, never dropped silently.

use crate::model::environment::{self, EnvEntry, EnvValue};
use crate::model::forward::{ForwardSettings, ForwardSpec};
use crate::model::ssh_words::{is_config_blank, split_keyword};
use crate::model::startup::Startup;

/// The comment above each rule: `# host-manager forward <id>[ manual][ disabled][: text]`.
pub const FORWARD_COMMENT: &str = "# host-manager forward ";

/// The comment in place of a secret `SetEnv`: `# host-manager secret env: NAME`.
pub const SECRET_ENV_COMMENT: &str = "# host-manager secret env: ";

/// A rule as the export writes it: its id, what it forwards, its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenRule {
    pub id: String,
    pub spec: ForwardSpec,
    pub settings: ForwardSettings,
}

/// A rule read from a block: the id its comment gave, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRule {
    pub id: Option<String>,
    pub spec: ForwardSpec,
    pub settings: ForwardSettings,
}

/// What a block says about its session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockSession {
    pub rules: Vec<ReadRule>,
    /// Secret entries are named only (`Secret { given: false }`): a matched host keeps the
    /// value stored under that name.
    pub startup: Startup,
}

/// The lines of one host's session, each indented by four spaces, in the export's order.
pub fn write(out: &mut String, startup: &Startup, rules: &[WrittenRule]) {
    let mut line = |text: &str| {
        out.push_str("    ");
        out.push_str(text);
        out.push('\n');
    };
    if let Some(command) = &startup.remote_command {
        line(&environment::remote_command_line(command));
    }
    if let Some(tty) = startup.request_tty {
        line(&environment::request_tty_line(tty));
    }
    // One `SetEnv` line: `ssh` takes the first `SetEnv` line it meets and ignores the
    // others. Secrets are named after it, in order.
    let plain: Vec<(&str, &str)> = startup
        .set_env
        .iter()
        .filter_map(|entry| match &entry.value {
            EnvValue::Plain(value) => Some((entry.name.as_str(), value.as_str())),
            EnvValue::Secret { .. } => None,
        })
        .collect();
    if !plain.is_empty() {
        line(&environment::set_env_line_of(&plain));
    }
    for entry in &startup.set_env {
        if let EnvValue::Secret { .. } = entry.value {
            line(&format!("{SECRET_ENV_COMMENT}{}", entry.name));
        }
    }
    if !startup.send_env.is_empty() {
        line(&environment::send_env_line(&startup.send_env));
    }
    if rules
        .iter()
        .any(|rule| rule.settings.enabled && rule.settings.autostart)
    {
        line("ExitOnForwardFailure yes");
    }
    for rule in rules {
        let mut comment = format!("{FORWARD_COMMENT}{}", rule.id);
        if !rule.settings.autostart {
            comment.push_str(" manual");
        }
        if !rule.settings.enabled {
            comment.push_str(" disabled");
        }
        if !rule.settings.description.is_empty() {
            comment.push_str(": ");
            comment.push_str(&one_line(&rule.settings.description));
        }
        line(&comment);
        match rule.settings.enabled {
            true => line(&rule.spec.directive()),
            false => line(&format!("# {}", rule.spec.directive())),
        }
    }
}

fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The flags a rule comment gave, waiting for the rule's directive.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pending {
    id: String,
    settings: ForwardSettings,
}

/// Reads a block's session lines one at a time, in file order.
#[derive(Debug, Default)]
pub struct SessionReader {
    session: BlockSession,
    pending: Option<Pending>,
    /// `ExitOnForwardFailure` as the block first gave it.
    exit_on_failure: Option<bool>,
    seen: Vec<&'static str>,
    pub warnings: Vec<String>,
}

impl SessionReader {
    /// One line of a block as the config parser keeps it: a comment (keyword `#`, `raw` the
    /// whole line) or a directive; `true` when the session took it.
    pub fn read(&mut self, line: usize, keyword: &str, args: &[String], raw: &str) -> bool {
        if keyword == "#" {
            self.comment(line, raw);
            return true;
        }
        self.directive(line, keyword, args, split_keyword(raw).1)
    }

    /// A comment line of the block (the whole trimmed line, `#` included). A rule comment
    /// is held for the next rule; a disabled rule's commented directive becomes that rule;
    /// a secret-env comment names a secret entry. Others are ignored.
    pub fn comment(&mut self, line: usize, text: &str) {
        if let Some(rest) = text.strip_prefix(FORWARD_COMMENT) {
            self.pending = Some(pending(rest));
            return;
        }
        if let Some(name) = text.strip_prefix(SECRET_ENV_COMMENT) {
            let name = name.trim_matches(is_config_blank).to_owned();
            let known = self.session.startup.set_env.iter().any(|e| e.name == name);
            if !known && environment::name_problem(&name).is_none() {
                self.session.startup.set_env.push(EnvEntry {
                    name,
                    value: EnvValue::Secret { given: false },
                });
            }
            return;
        }
        let disabled = self.pending.as_ref().is_some_and(|p| !p.settings.enabled);
        if disabled {
            let inner = text.trim_start_matches('#').trim_matches(is_config_blank);
            let (keyword, rest) = split_keyword(inner);
            let args = crate::model::ssh_words::split_args(rest).unwrap_or_default();
            self.forward(line, keyword, &args);
        }
    }

    /// A directive of the block; `true` when it is one of the session's (consumed here),
    /// `false` when the caller keeps it (an option, or a field of its own).
    pub fn directive(&mut self, line: usize, keyword: &str, args: &[String], rest: &str) -> bool {
        let lower = keyword.to_ascii_lowercase();
        match lower.as_str() {
            "localforward" | "remoteforward" | "dynamicforward" => {
                self.forward(line, keyword, args);
            }
            "exitonforwardfailure" => {
                let value = args.first().map(|arg| arg.to_ascii_lowercase());
                if self.exit_on_failure.is_none() {
                    self.exit_on_failure = Some(value.as_deref() != Some("no"));
                }
            }
            "remotecommand" => {
                if self.first("remotecommand", line, keyword) {
                    match environment::remote_command_from_config(rest) {
                        Ok(command) => self.session.startup.remote_command = Some(command),
                        Err(why) => self.warn(line, keyword, &why),
                    }
                }
            }
            "requesttty" => {
                if self.first("requesttty", line, keyword) {
                    let value = args.first().map(String::as_str).unwrap_or_default();
                    match environment::request_tty_from_config(value) {
                        Some(tty) => self.session.startup.request_tty = Some(tty),
                        None => self.warn(line, keyword, "the value is not auto, yes, no or force"),
                    }
                }
            }
            "setenv" => {
                // ssh takes the first SetEnv line and ignores the rest.
                if self.first("setenv", line, keyword) {
                    match environment::set_env_from_config(args) {
                        Ok(pairs) => self.set_env(line, pairs),
                        Err(why) => self.warn(line, keyword, &why),
                    }
                }
            }
            "sendenv" => match environment::send_env_from_config(args) {
                Ok(patterns) => {
                    for pattern in patterns {
                        if !self.session.startup.send_env.contains(&pattern) {
                            self.session.startup.send_env.push(pattern);
                        }
                    }
                }
                Err(why) => self.warn(line, keyword, &why),
            },
            _ => return false,
        }
        true
    }

    /// The block's session. Rules without a comment are autostart unless the block said
    /// `ExitOnForwardFailure no`.
    pub fn finish(mut self) -> (BlockSession, Vec<String>) {
        if self.exit_on_failure == Some(false) {
            for rule in self
                .session
                .rules
                .iter_mut()
                .filter(|rule| rule.id.is_none())
            {
                rule.settings.autostart = false;
            }
        }
        (self.session, self.warnings)
    }

    fn forward(&mut self, line: usize, keyword: &str, args: &[String]) {
        let pending = self.pending.take();
        match ForwardSpec::from_directive(keyword, args) {
            Ok(spec) => self.session.rules.push(ReadRule {
                id: pending.as_ref().map(|p| p.id.clone()),
                spec,
                settings: pending.map(|p| p.settings).unwrap_or_default(),
            }),
            Err(why) => self.warn(line, keyword, &why),
        }
    }

    fn set_env(&mut self, line: usize, pairs: Vec<(String, String)>) {
        for (name, value) in pairs {
            if self.session.startup.set_env.iter().any(|e| e.name == name) {
                self.warn(
                    line,
                    "SetEnv",
                    &format!("{name} was set before (ssh uses the first)"),
                );
                continue;
            }
            self.session.startup.set_env.push(EnvEntry {
                name,
                value: EnvValue::Plain(value),
            });
        }
    }

    /// True the first time `key` is seen; a repeat is reported (ssh uses the first).
    fn first(&mut self, key: &'static str, line: usize, keyword: &str) -> bool {
        if self.seen.contains(&key) {
            self.warn(
                line,
                keyword,
                "a second one is ignored (OpenSSH uses the first)",
            );
            return false;
        }
        self.seen.push(key);
        true
    }

    fn warn(&mut self, line: usize, keyword: &str, why: &str) {
        self.warnings
            .push(format!("line {line}: {keyword} is left out: {why}"));
    }
}

/// Reads the rest of a rule comment: `<id>[ manual][ disabled][: description]`.
fn pending(rest: &str) -> Pending {
    let (head, description) = match rest.split_once(": ") {
        Some((head, description)) => (head, description.trim_matches(is_config_blank)),
        None => (rest.trim_end_matches(':'), ""),
    };
    let mut words = head.split(is_config_blank).filter(|word| !word.is_empty());
    let id = words.next().unwrap_or_default().to_owned();
    let mut settings = ForwardSettings {
        description: description
            .chars()
            .take(crate::model::forward::MAX_DESCRIPTION_CHARS)
            .collect(),
        ..ForwardSettings::default()
    };
    for word in words {
        match word {
            "manual" => settings.autostart = false,
            "disabled" => settings.enabled = false,
            _ => {}
        }
    }
    Pending { id, settings }
}
