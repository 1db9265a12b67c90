//! The log's one writer: every `log` record at or above its filter goes to stderr as one line.
//!
//! `RUST_LOG` sets the filter as comma-separated directives, each a level (`debug`) or a
//! module path and a level (`host_manager::http=trace`); the longest matching path wins, and
//! the default is `info`. A directive that does not parse is ignored and reported once.
//!
//! Invariants: never writes to stdout (a protocol channel); one `write_all` per line, so lines
//! from different threads never interleave; the only process-wide state besides `AppState`.

use std::io::Write;
use std::time::SystemTime;

use log::{LevelFilter, Log, Metadata, Record};

/// The filter: a default level and per-module levels.
#[derive(Debug, PartialEq, Eq)]
pub struct Filter {
    default: LevelFilter,
    /// (module path, level), longest path first.
    modules: Vec<(String, LevelFilter)>,
}

impl Filter {
    /// Parses `RUST_LOG`; returns the filter and the directives it could not read.
    pub fn parse(spec: Option<&str>) -> (Filter, Vec<String>) {
        let mut filter = Filter {
            default: LevelFilter::Info,
            modules: Vec::new(),
        };
        let mut unreadable = Vec::new();
        for directive in spec.unwrap_or("").split(',').map(str::trim) {
            if directive.is_empty() {
                continue;
            }
            match directive.split_once('=') {
                None => match directive.parse::<LevelFilter>() {
                    Ok(level) => filter.default = level,
                    // A bare module path means "everything from it".
                    Err(_) if is_module_path(directive) => filter
                        .modules
                        .push((directive.to_owned(), LevelFilter::Trace)),
                    Err(_) => unreadable.push(directive.to_owned()),
                },
                Some((path, level)) => match level.trim().parse::<LevelFilter>() {
                    Ok(level) if is_module_path(path.trim()) => {
                        filter.modules.push((path.trim().to_owned(), level))
                    }
                    _ => unreadable.push(directive.to_owned()),
                },
            }
        }
        filter
            .modules
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        (filter, unreadable)
    }

    /// The level a record from `target` must reach to be written.
    pub fn level_for(&self, target: &str) -> LevelFilter {
        self.modules
            .iter()
            .find(|(path, _)| {
                target == path
                    || target
                        .strip_prefix(path.as_str())
                        .is_some_and(|rest| rest.starts_with("::"))
            })
            .map_or(self.default, |(_, level)| *level)
    }

    /// The most verbose level any target may use, for `log::set_max_level`.
    fn max(&self) -> LevelFilter {
        self.modules
            .iter()
            .map(|(_, level)| *level)
            .fold(self.default, Ord::max)
    }
}

/// Installs the stderr logger with the filter from `RUST_LOG`.
pub fn init(spec: Option<&str>) {
    let (filter, unreadable) = Filter::parse(spec);
    let max = filter.max();
    // The logger lives as long as the process; leaking it is how `log` holds one.
    if log::set_logger(Box::leak(Box::new(Logger { filter }))).is_ok() {
        log::set_max_level(max);
    }
    for directive in unreadable {
        log::warn!("RUST_LOG: ignored {directive:?} (expected LEVEL or module::path=LEVEL)");
    }
}

struct Logger {
    filter: Filter,
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.filter.level_for(metadata.target())
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = format!(
            "[{} {:<5} {}] {}\n",
            humantime::format_rfc3339_millis(SystemTime::now()),
            record.level(),
            record.target(),
            record.args()
        );
        // A log line that cannot be written has nowhere else to go.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

fn is_module_path(text: &str) -> bool {
    !text.is_empty()
        && text
            .split("::")
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

#[cfg(test)]
mod tests {
    use log::LevelFilter;

    use crate::logger::Filter;

    #[test]
    fn without_rust_log_everything_is_filtered_at_info() {
        let (filter, unreadable) = Filter::parse(None);
        assert_eq!(filter.level_for("host_manager::http"), LevelFilter::Info);
        assert!(unreadable.is_empty());
    }

    #[test]
    fn a_bare_level_sets_the_default_and_module_levels_win_for_their_modules() {
        let (filter, _) = Filter::parse(Some("warn, host_manager::http=trace,host_manager=debug"));
        assert_eq!(filter.level_for("rusqlite"), LevelFilter::Warn);
        assert_eq!(filter.level_for("host_manager"), LevelFilter::Debug);
        assert_eq!(filter.level_for("host_manager::store"), LevelFilter::Debug);
        assert_eq!(
            filter.level_for("host_manager::http::connection"),
            LevelFilter::Trace
        );
        // A prefix that is not a whole module path segment does not match.
        assert_eq!(filter.level_for("host_manager_x"), LevelFilter::Warn);
    }

    #[test]
    fn a_bare_module_path_means_everything_from_it() {
        let (filter, _) = Filter::parse(Some("host_manager"));
        assert_eq!(filter.level_for("host_manager::vault"), LevelFilter::Trace);
        assert_eq!(filter.level_for("other"), LevelFilter::Info);
    }

    #[test]
    fn unreadable_directives_are_reported_and_ignored() {
        let (filter, unreadable) = Filter::parse(Some("debug,a=loud,=warn,b c"));
        assert_eq!(filter.level_for("a"), LevelFilter::Debug);
        assert_eq!(unreadable, vec!["a=loud", "=warn", "b c"]);
    }
}
