//! Command-line flags and environment variables, parsed into a validated `Config`.
//!
//! Two steps, as in ripgrep: `RawArgs` is what was typed; `Config` is what the service
//! runs with. Every error names the flag. Parsing touches nothing on disk, so `--help` and
//! `--version` work anywhere (README, Command line).
//!
//! Invariants: the environment is read once, at start-up (`main` hands it in as a map, and
//! takes only `RUST_LOG` from it for the logger): nothing reads a variable per request;
//! `USAGE` is what the README's Command line section shows, word for word
//! (tests/it/readme.rs); the `HOST_MANAGER_TEST_*` variables only shorten what tests
//! exercise and are not in `--help`.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::http::HttpOverrides;
use crate::model::validate;
use crate::platform;

pub const USAGE: &str = "\
host-manager: a local HTTP/JSON service for a catalogue of SSH hosts, groups and keys.

Usage: host-manager [OPTIONS]

Prints SERVICE_PORT=<port> on stdout once it accepts connections; logs go to stderr.

Options:
  --port N              Port to listen on; 0 lets the OS choose [env: HOST_MANAGER_PORT] [default: 0]
  --data-dir DIR        Where the database lives [env: HOST_MANAGER_DATA_DIR]
                        [default on Linux: $XDG_DATA_HOME/host-manager, else
                        ~/.local/share/host-manager; macOS: ~/Library/Application Support/
                        host-manager; Windows: %LOCALAPPDATA%\\host-manager]
  --bind ADDR           Address to listen on [default: 127.0.0.1]; any other than a loopback
                        address needs --allow-remote and a token
  --allow-remote        Allow --bind on a non-loopback address (a token is then required)
  --allow-origin ORIGIN Let web pages from ORIGIN (scheme://host[:port]) call the API with CORS;
                        repeatable. Requests from any other Origin are refused
  --token-file FILE     Require `Authorization: Bearer <token>` on every request but health; the
                        token is the file's first line: at least 32 visible ASCII characters
                        (`!` to `~`; no space, tab or control character)
  --generate-token      Like --token-file with a random token, printed as SERVICE_TOKEN=<token>
                        on stdout before the SERVICE_PORT line
  --exit-with-parent    Shut down when stdin reaches end of file (the launching process went away)
  --vault-password-stdin
                        Unlock the vault at start with the master password on the first line of
                        stdin (read before SERVICE_PORT is printed). A wrong one is logged and the
                        service starts locked. With --exit-with-parent, stdin is then watched
                        for end of file as usual
  --auto-lock SECS      Lock the vault after SECS seconds without a request; status reads
                        (GET /api/health, /api/vault, /api/openapi.json) do not count;
                        0 = never [default: 0]
  --no-agent            Do not serve the SSH agent. By default it listens on a Unix socket in
                        $XDG_RUNTIME_DIR/host-manager, else in the data dir, else (a path too
                        long) in a new private directory under $TMPDIR; GET /api/agent gives
                        its path. On Windows it listens on the named pipe
                        \\\\.\\pipe\\openssh-ssh-agent (where Windows' ssh.exe looks), else (held
                        by another program) on \\\\.\\pipe\\host-manager-agent-<user>
  -h, --help            Print this help and exit
  -V, --version         Print the version and exit

Environment:
  RUST_LOG              Log filter for stderr, e.g. debug or host_manager=trace [default: info]
  XDG_RUNTIME_DIR       Where the SSH agent's socket goes (an absolute path; else the data dir)
  TMPDIR                Where the agent's socket goes when no other place fits [default: /tmp]
  USER, LOGNAME, USERNAME
                        The user an imported ssh_config Host block without User gets: the first
                        one that is a valid username, read at start (USERNAME is Windows')
                        [default: root]
";

/// The longest `--auto-lock` accepted: one year. Anything longer is a typo, and the bound
/// keeps the idle clock's millisecond arithmetic far from overflow.
pub const MAX_AUTO_LOCK_SECONDS: u64 = 365 * 24 * 60 * 60;

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Boxed: a `Config` is large next to the other variants.
    Run(Box<Config>),
    Help,
    Version,
}

/// The validated settings the service runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub exit_with_parent: bool,
    /// Origins whose pages may call the API (lowercased `scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    pub token: TokenSource,
    /// Read the master password from the first line of stdin at start.
    pub vault_password_stdin: bool,
    /// Lock the vault after this long without a request; `None` = never.
    pub auto_lock: Option<Duration>,
    /// Test-only: the idle time `--auto-lock` waits instead of its seconds
    /// (`HOST_MANAGER_TEST_AUTO_LOCK_MS`), so tests run it short. `--auto-lock` still turns
    /// it on and is what `GET /api/vault` reports.
    pub test_auto_lock: Option<Duration>,
    /// Test-only: how often the certificate watcher looks (`HOST_MANAGER_TEST_CERTIFICATE_
    /// TICK_MS`) instead of once a minute (src/expiry.rs).
    pub test_certificate_tick: Option<Duration>,
    /// Test-only: how often sync looks at its folder (`HOST_MANAGER_TEST_SYNC_POLL_MS`) and
    /// how long it waits after a local change before writing its bundle
    /// (`HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS`) instead of 5 s and 2 s (src/sync/watch.rs).
    pub test_sync_poll: Option<Duration>,
    pub test_sync_debounce: Option<Duration>,
    /// Test-only overrides of the HTTP layer's timeouts and connection cap (docs/development.md,
    /// Development): tests run a timeout short and assert the order of events.
    pub http_overrides: HttpOverrides,
    /// The SSH agent (docs/agent.md "SSH agent"); `None` with `--no-agent`.
    pub agent: Option<AgentConfig>,
    /// The username an imported `Host` block without `User` gets: the login name of the
    /// user the service runs as (`$USER`, else `$LOGNAME`, else Windows' `%USERNAME%`, else
    /// `root`), which is what `ssh` itself would use. Read once here, never per request.
    pub import_user: String,
    /// Test-only bounds of the change log, the connection history and the feed's wait
    /// (docs/development.md, Development): tests reach a trim with a few writes, and generated requests
    /// (scripts/schemathesis) do not each wait 30 s.
    pub feed_overrides: FeedOverrides,
}

/// How many change log entries and connections are kept, and the longest wait of the
/// change feed, from `HOST_MANAGER_TEST_*` variables; `None` keeps the documented value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedOverrides {
    pub changes_kept: Option<u64>,
    pub history_kept: Option<u64>,
    pub max_wait: Option<Duration>,
    /// `HOST_MANAGER_TEST_AUDIT_ROUTINE_KEPT`: routine audit entries kept (docs/api.md "Audit
    /// log"), so a test floods the log with a few signatures.
    pub audit_routine_kept: Option<u64>,
    /// `HOST_MANAGER_TEST_FEED_MAX_WAITERS`: the most requests waiting on the feed at once.
    pub max_waiters: Option<usize>,
}

/// Where the SSH agent listens and how long it waits for an approval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentConfig {
    /// `$XDG_RUNTIME_DIR` when it is set to an absolute path (XDG says a relative one is
    /// invalid and must be ignored); the socket then goes into a 0700 `host-manager`
    /// directory there, else into the data dir.
    pub runtime_dir: Option<PathBuf>,
    /// `$TMPDIR` when it is set to an absolute path, else `/tmp`: where a private directory
    /// for the socket is made when neither place above can hold it (docs/agent.md "SSH agent").
    pub temp_dir: PathBuf,
    /// `HOST_MANAGER_TEST_AGENT_APPROVAL_TIMEOUT_MS`: a test runs the approval timeout
    /// short. Not a flag, as the HTTP overrides.
    pub approval_timeout: Option<Duration>,
    /// `HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS`: a test runs the per-message timeout
    /// (10 s) short.
    pub message_timeout: Option<Duration>,
    /// `%USERNAME%`: names the agent's own pipe on Windows when OpenSSH's is held.
    pub user: Option<String>,
    /// `HOST_MANAGER_TEST_AGENT_PIPE_SUFFIX`, else empty: ends both of the agent's pipe names
    /// on Windows, so tests running at once under one Wine server do not share a pipe.
    pub pipe_suffix: String,
}

/// Where the bearer token comes from, if one is required (docs/security.md, Who may talk to the service).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    None,
    File(PathBuf),
    Generate,
}

/// A flag or variable that cannot be used; the text names it.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Flags as typed, before any validation.
#[derive(Debug, Default)]
struct RawArgs {
    port: Option<String>,
    data_dir: Option<String>,
    bind: Option<String>,
    allow_remote: bool,
    allowed_origins: Vec<String>,
    token_file: Option<String>,
    generate_token: bool,
    exit_with_parent: bool,
    vault_password_stdin: bool,
    auto_lock: Option<String>,
    no_agent: bool,
    help: bool,
    version: bool,
}

impl Command {
    /// Parses `args` (without the program name) and the environment `env`.
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        env: &HashMap<String, String>,
    ) -> Result<Command, ConfigError> {
        let raw = RawArgs::parse(args)?;
        if raw.help {
            return Ok(Command::Help);
        }
        if raw.version {
            return Ok(Command::Version);
        }
        Ok(Command::Run(Box::new(Config::from_raw(raw, env)?)))
    }
}

impl RawArgs {
    fn parse(args: impl IntoIterator<Item = String>) -> Result<RawArgs, ConfigError> {
        let mut raw = RawArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => {
                    (flag.to_owned(), Some(value.to_owned()))
                }
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, ConfigError> {
                match inline.clone().or_else(|| args.next()) {
                    Some(value) => Ok(value),
                    None => Err(ConfigError(format!("{name} needs a value"))),
                }
            };
            match flag.as_str() {
                "--port" => raw.port = Some(value("--port")?),
                "--data-dir" => raw.data_dir = Some(value("--data-dir")?),
                "--bind" => raw.bind = Some(value("--bind")?),
                "--allow-remote" => raw.allow_remote = true,
                "--allow-origin" => raw.allowed_origins.push(value("--allow-origin")?),
                "--token-file" => raw.token_file = Some(value("--token-file")?),
                "--generate-token" => raw.generate_token = true,
                "--exit-with-parent" => raw.exit_with_parent = true,
                "--vault-password-stdin" => raw.vault_password_stdin = true,
                "--auto-lock" => raw.auto_lock = Some(value("--auto-lock")?),
                "--no-agent" => raw.no_agent = true,
                "-h" | "--help" => raw.help = true,
                "-V" | "--version" => raw.version = true,
                other => return Err(ConfigError(format!("unknown option {other} (see --help)"))),
            }
        }
        Ok(raw)
    }
}

impl Config {
    fn from_raw(raw: RawArgs, env: &HashMap<String, String>) -> Result<Config, ConfigError> {
        let port = port(raw.port.as_deref(), env)?;
        let bind = bind(raw.bind.as_deref())?;
        let token = token_source(raw.token_file, raw.generate_token)?;
        check_remote(bind, raw.allow_remote, &token)?;
        let allowed_origins = allowed_origins(raw.allowed_origins)?;
        let data_dir = data_dir(raw.data_dir, env)?;
        let auto_lock = auto_lock(raw.auto_lock.as_deref())?;
        Ok(Config {
            bind,
            port,
            data_dir,
            exit_with_parent: raw.exit_with_parent,
            allowed_origins,
            token,
            vault_password_stdin: raw.vault_password_stdin,
            auto_lock,
            test_auto_lock: test_number(env, "HOST_MANAGER_TEST_AUTO_LOCK_MS")?
                .map(Duration::from_millis),
            test_sync_poll: test_number(env, "HOST_MANAGER_TEST_SYNC_POLL_MS")?
                .map(Duration::from_millis),
            test_sync_debounce: test_number(env, "HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS")?
                .map(Duration::from_millis),
            test_certificate_tick: test_number(env, "HOST_MANAGER_TEST_CERTIFICATE_TICK_MS")?
                .map(Duration::from_millis),
            http_overrides: HttpOverrides::from_env(env)?,
            feed_overrides: FeedOverrides::from_env(env)?,
            agent: match raw.no_agent {
                true => None,
                false => Some(AgentConfig::from_env(env)?),
            },
            import_user: import_user(env),
        })
    }
}

/// `--port`, else `HOST_MANAGER_PORT`, else 0 (the system picks one).
fn port(flag: Option<&str>, env: &HashMap<String, String>) -> Result<u16, ConfigError> {
    match flag.or(env.get("HOST_MANAGER_PORT").map(String::as_str)) {
        Some(text) => text.parse::<u16>().map_err(|_| {
            ConfigError(format!(
                "--port (or HOST_MANAGER_PORT) must be 0-65535, got {text:?}"
            ))
        }),
        None => Ok(0),
    }
}

/// `--bind`, else 127.0.0.1.
fn bind(flag: Option<&str>) -> Result<IpAddr, ConfigError> {
    match flag {
        Some(text) => text
            .parse::<IpAddr>()
            .map_err(|_| ConfigError(format!("--bind must be an IP address, got {text:?}"))),
        None => Ok(IpAddr::from([127, 0, 0, 1])),
    }
}

/// `--token-file` or `--generate-token` (not both), or no token.
fn token_source(file: Option<String>, generate: bool) -> Result<TokenSource, ConfigError> {
    match (file, generate) {
        (Some(_), true) => Err(ConfigError(
            "--token-file and --generate-token exclude each other".into(),
        )),
        (Some(file), false) => Ok(TokenSource::File(PathBuf::from(file))),
        (None, true) => Ok(TokenSource::Generate),
        (None, false) => Ok(TokenSource::None),
    }
}

/// README, Command line and Who may talk to the service: the service is local; another
/// address must be asked for twice (--bind and --allow-remote) and then never runs without a
/// token.
fn check_remote(bind: IpAddr, allow_remote: bool, token: &TokenSource) -> Result<(), ConfigError> {
    if !bind.is_loopback() && !allow_remote {
        return Err(ConfigError(format!(
            "--bind {bind} is not a loopback address; add --allow-remote"
        )));
    }
    if !bind.is_loopback() && *token == TokenSource::None {
        return Err(ConfigError(format!(
            "--bind {bind} needs --token-file or --generate-token"
        )));
    }
    Ok(())
}

/// Each `--allow-origin`, checked to be `scheme://host[:port]`, in lower case.
fn allowed_origins(origins: Vec<String>) -> Result<Vec<String>, ConfigError> {
    origins
        .into_iter()
        .map(|origin| match crate::http::gate::valid_origin(&origin) {
            true => Ok(origin.to_ascii_lowercase()),
            false => Err(ConfigError(format!(
                "--allow-origin {origin:?} is not scheme://host[:port]"
            ))),
        })
        .collect()
}

/// `--data-dir`, else `HOST_MANAGER_DATA_DIR`, else the platform's default; never empty.
fn data_dir(flag: Option<String>, env: &HashMap<String, String>) -> Result<PathBuf, ConfigError> {
    match flag.or_else(|| env.get("HOST_MANAGER_DATA_DIR").cloned()) {
        Some(dir) if dir.is_empty() => Err(ConfigError("--data-dir must not be empty".into())),
        Some(dir) => Ok(PathBuf::from(dir)),
        None => platform::default_data_dir(platform::SYSTEM, env).map_err(ConfigError),
    }
}

/// `--auto-lock` in seconds: 0 or absent is off, at most `MAX_AUTO_LOCK_SECONDS`.
fn auto_lock(flag: Option<&str>) -> Result<Option<Duration>, ConfigError> {
    let Some(text) = flag else {
        return Ok(None);
    };
    match text.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(seconds) if seconds <= MAX_AUTO_LOCK_SECONDS => Ok(Some(Duration::from_secs(seconds))),
        _ => Err(ConfigError(format!(
            "--auto-lock must be a number of seconds 0-{MAX_AUTO_LOCK_SECONDS}, got {text:?}"
        ))),
    }
}

impl FeedOverrides {
    /// The `HOST_MANAGER_TEST_*` overrides of the change feed and the audit log.
    fn from_env(env: &HashMap<String, String>) -> Result<FeedOverrides, ConfigError> {
        Ok(FeedOverrides {
            changes_kept: test_number(env, "HOST_MANAGER_TEST_CHANGES_KEPT")?,
            history_kept: test_number(env, "HOST_MANAGER_TEST_HISTORY_KEPT")?,
            max_waiters: test_number(env, "HOST_MANAGER_TEST_FEED_MAX_WAITERS")?
                .and_then(|count| usize::try_from(count).ok()),
            max_wait: test_number(env, "HOST_MANAGER_TEST_FEED_MAX_WAIT_MS")?
                .map(Duration::from_millis),
            audit_routine_kept: test_number(env, "HOST_MANAGER_TEST_AUDIT_ROUTINE_KEPT")?,
        })
    }
}

/// `$USER`, else `$LOGNAME`, else `%USERNAME%`, trimmed, when it is a username by the API's
/// rule (`validate::username_text`); else `root`.
fn import_user(env: &HashMap<String, String>) -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .filter_map(|name| env.get(*name))
        .find_map(|user| validate::username_text(user).ok())
        .unwrap_or_else(|| "root".to_owned())
}

impl AgentConfig {
    fn from_env(env: &HashMap<String, String>) -> Result<AgentConfig, ConfigError> {
        Ok(AgentConfig {
            runtime_dir: env
                .get("XDG_RUNTIME_DIR")
                .filter(|dir| dir.starts_with('/'))
                .map(PathBuf::from),
            temp_dir: PathBuf::from(
                env.get("TMPDIR")
                    .filter(|dir| dir.starts_with('/'))
                    .map_or("/tmp", String::as_str),
            ),
            approval_timeout: test_number(env, "HOST_MANAGER_TEST_AGENT_APPROVAL_TIMEOUT_MS")?
                .map(Duration::from_millis),
            message_timeout: test_number(env, "HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS")?
                .map(Duration::from_millis),
            user: env.get("USERNAME").cloned(),
            pipe_suffix: env
                .get("HOST_MANAGER_TEST_AGENT_PIPE_SUFFIX")
                .cloned()
                .unwrap_or_default(),
        })
    }
}

impl HttpOverrides {
    fn from_env(env: &HashMap<String, String>) -> Result<HttpOverrides, ConfigError> {
        let millis = |name: &str| -> Result<Option<Duration>, ConfigError> {
            Ok(test_number(env, name)?.map(Duration::from_millis))
        };
        Ok(HttpOverrides {
            idle_timeout: millis("HOST_MANAGER_TEST_IDLE_TIMEOUT_MS")?,
            head_timeout: millis("HOST_MANAGER_TEST_HEAD_TIMEOUT_MS")?,
            body_timeout: millis("HOST_MANAGER_TEST_BODY_TIMEOUT_MS")?,
            write_timeout: millis("HOST_MANAGER_TEST_WRITE_TIMEOUT_MS")?,
            max_connections: test_number(env, "HOST_MANAGER_TEST_MAX_CONNECTIONS")?
                .and_then(|count| usize::try_from(count).ok()),
            body_budget: test_number(env, "HOST_MANAGER_TEST_BODY_BUDGET_BYTES")?
                .and_then(|bytes| usize::try_from(bytes).ok()),
            answered_head_start: millis("HOST_MANAGER_TEST_ANSWERED_HEAD_START_MS")?,
        })
    }
}

/// A positive whole number from a test-only variable; absent when unset.
fn test_number(env: &HashMap<String, String>, name: &str) -> Result<Option<u64>, ConfigError> {
    match env.get(name).map(|text| (text, text.parse::<u64>())) {
        None => Ok(None),
        Some((_, Ok(number))) if number > 0 => Ok(Some(number)),
        Some((text, _)) => Err(ConfigError(format!(
            "{name} must be a positive whole number, got {text:?}"
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::time::Duration;

    use crate::config::{Command, Config, TokenSource, MAX_AUTO_LOCK_SECONDS};
    use crate::platform;

    /// Windows' default data dir comes from it, as Linux's comes from `HOME`.
    const LOCAL_APP_DATA: (&str, &str) = ("LOCALAPPDATA", "C:\\Users\\t\\AppData\\Local");

    fn owned(env: &[(&str, &str)]) -> HashMap<String, String> {
        env.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Parses `args` with `env`; an `env` that sets `HOME` also gets `LOCAL_APP_DATA`, so
    /// every platform finds its default data dir.
    fn run(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let mut env = owned(env);
        if env.contains_key("HOME") {
            env.entry(LOCAL_APP_DATA.0.into())
                .or_insert_with(|| LOCAL_APP_DATA.1.into());
        }
        match Command::parse(args.iter().map(|a| a.to_string()), &env) {
            Ok(Command::Run(config)) => Ok(*config),
            Ok(other) => Err(format!("{other:?}")),
            Err(err) => Err(err.0),
        }
    }

    #[test]
    fn defaults_to_os_chosen_port_on_loopback_in_the_platforms_data_dir() {
        let env = [("XDG_DATA_HOME", "/x"), ("HOME", "/h"), LOCAL_APP_DATA];
        let config = run(&[], &env).unwrap();
        assert_eq!(config.port, 0);
        assert_eq!(config.bind.to_string(), "127.0.0.1");
        let expected = platform::default_data_dir(platform::SYSTEM, &owned(&env)).unwrap();
        assert_eq!(config.data_dir, expected);
    }

    #[test]
    fn import_user_is_user_else_logname_else_username_else_root() {
        let user = |env: &[(&str, &str)]| {
            let mut env = env.to_vec();
            env.push(("HOME", "/h"));
            run(&[], &env).unwrap().import_user
        };
        assert_eq!(user(&[("USER", " ann "), ("LOGNAME", "bob")]), "ann");
        assert_eq!(user(&[("USER", " "), ("LOGNAME", "bob")]), "bob");
        assert_eq!(user(&[("LOGNAME", "bob")]), "bob");
        assert_eq!(user(&[("USERNAME", "carol")]), "carol");
        assert_eq!(user(&[]), "root");
    }

    #[test]
    fn import_user_of_100_chars_is_taken_and_101_falls_back() {
        let env_of = |name: &str| [("HOME", "/h".to_owned()), ("USER", name.to_owned())];
        let user = |name: &str| {
            let env = env_of(name);
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            run(&[], &env).unwrap().import_user
        };
        assert_eq!(user(&"u".repeat(100)), "u".repeat(100));
        assert_eq!(user(&"u".repeat(101)), "root");
    }

    #[test]
    fn import_user_the_hosts_api_would_refuse_falls_back_to_the_next_variable() {
        let user = |env: &[(&str, &str)]| {
            let mut env = env.to_vec();
            env.push(("HOME", "/h"));
            run(&[], &env).unwrap().import_user
        };
        assert_eq!(
            user(&[("USER", "-oProxyCommand=x"), ("LOGNAME", "bob")]),
            "bob"
        );
        assert_eq!(user(&[("USER", "a b"), ("LOGNAME", "ops@host")]), "root");
    }

    #[test]
    fn without_the_platforms_data_dir_variables_data_dir_is_asked_for() {
        let err = run(&[], &[]).unwrap_err();
        assert!(err.contains("pass --data-dir"), "{err}");
        assert_eq!(
            run(&["--data-dir", "/d"], &[]).unwrap().data_dir,
            PathBuf::from("/d")
        );
    }

    #[test]
    fn flags_override_environment() {
        let env = [
            ("HOST_MANAGER_PORT", "7000"),
            ("HOST_MANAGER_DATA_DIR", "/env"),
            ("HOME", "/h"),
        ];
        assert_eq!(run(&[], &env).unwrap().port, 7000);
        let config = run(&["--port=7001", "--data-dir", "/flag"], &env).unwrap();
        assert_eq!(
            (config.port, config.data_dir),
            (7001, PathBuf::from("/flag"))
        );
    }

    #[test]
    fn port_65535_is_accepted_and_65536_is_rejected() {
        assert_eq!(
            run(&["--port", "65535"], &[("HOME", "/h")]).unwrap().port,
            65535
        );
        assert!(run(&["--port", "65536"], &[("HOME", "/h")])
            .unwrap_err()
            .contains("--port"));
    }

    #[test]
    fn non_loopback_bind_needs_allow_remote_and_a_token() {
        let home = [("HOME", "/h")];
        assert!(run(&["--bind", "0.0.0.0"], &home)
            .unwrap_err()
            .contains("--allow-remote"));
        let no_token = run(&["--bind", "0.0.0.0", "--allow-remote"], &home).unwrap_err();
        assert!(no_token.contains("--generate-token"), "{no_token}");
        let remote = run(
            &["--bind", "0.0.0.0", "--allow-remote", "--generate-token"],
            &home,
        )
        .unwrap();
        assert_eq!(
            (remote.bind.to_string(), remote.token),
            ("0.0.0.0".to_owned(), TokenSource::Generate)
        );
        assert_eq!(
            run(&["--bind", "::1"], &home).unwrap().bind.to_string(),
            "::1"
        );
    }

    #[test]
    fn allow_origin_is_repeatable_and_checked() {
        let home = [("HOME", "/h")];
        let config = run(
            &[
                "--allow-origin",
                "http://A:1",
                "--allow-origin=tauri://localhost",
            ],
            &home,
        )
        .unwrap();
        assert_eq!(
            config.allowed_origins,
            vec!["http://a:1", "tauri://localhost"]
        );
        assert!(run(&["--allow-origin", "*"], &home)
            .unwrap_err()
            .contains("--allow-origin"));
    }

    #[test]
    fn token_file_and_generate_token_exclude_each_other() {
        let err = run(
            &["--token-file", "/t", "--generate-token"],
            &[("HOME", "/h")],
        )
        .unwrap_err();
        assert!(err.contains("--token-file"), "{err}");
    }

    #[test]
    fn unknown_flag_and_missing_value_name_the_flag() {
        assert!(run(&["--frobnicate"], &[])
            .unwrap_err()
            .contains("--frobnicate"));
        assert!(run(&["--port"], &[]).unwrap_err().contains("--port"));
    }

    #[test]
    fn vault_flags_default_to_off() {
        let config = run(&[], &[("HOME", "/h")]).unwrap();
        assert!(!config.vault_password_stdin);
        assert_eq!(config.auto_lock, None);
    }

    #[test]
    fn auto_lock_takes_seconds_and_zero_means_never() {
        let config = run(
            &["--auto-lock", "90", "--vault-password-stdin"],
            &[("HOME", "/h")],
        );
        let config = config.unwrap();
        assert_eq!(config.auto_lock, Some(Duration::from_secs(90)));
        assert!(config.vault_password_stdin);
        let never = run(&["--auto-lock=0"], &[("HOME", "/h")]).unwrap();
        assert_eq!(never.auto_lock, None);
    }

    #[test]
    fn auto_lock_of_one_year_is_accepted_and_beyond_or_garbage_is_rejected() {
        let year = MAX_AUTO_LOCK_SECONDS.to_string();
        let config = run(&["--auto-lock", &year], &[("HOME", "/h")]).unwrap();
        assert_eq!(config.auto_lock, Some(Duration::from_secs(31_536_000)));
        let over = (MAX_AUTO_LOCK_SECONDS + 1).to_string();
        for bad in [over.as_str(), "-1", "1.5", "soon", ""] {
            let err = run(&["--auto-lock", bad], &[("HOME", "/h")]).unwrap_err();
            assert!(err.contains("--auto-lock"), "{bad}: {err}");
        }
    }

    #[test]
    fn test_auto_lock_of_250_ms_is_read_and_zero_or_garbage_is_rejected_naming_it() {
        let home = ("HOME", "/h");
        assert_eq!(run(&[], &[home]).unwrap().test_auto_lock, None);
        let config = run(
            &["--auto-lock", "1"],
            &[home, ("HOST_MANAGER_TEST_AUTO_LOCK_MS", "250")],
        )
        .unwrap();
        assert_eq!(config.test_auto_lock, Some(Duration::from_millis(250)));
        assert_eq!(
            config.auto_lock,
            Some(Duration::from_secs(1)),
            "the flag stays"
        );
        for bad in ["0", "-5", "soon"] {
            let err = run(&[], &[home, ("HOST_MANAGER_TEST_AUTO_LOCK_MS", bad)]).unwrap_err();
            assert!(
                err.contains("HOST_MANAGER_TEST_AUTO_LOCK_MS"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn agent_is_on_by_default_in_the_absolute_runtime_dir_and_off_with_no_agent() {
        let env = [("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1000")];
        let agent = run(&[], &env).unwrap().agent.unwrap();
        assert_eq!(agent.runtime_dir, Some(PathBuf::from("/run/user/1000")));
        assert_eq!(agent.approval_timeout, None);
        assert_eq!(run(&["--no-agent"], &env).unwrap().agent, None);
    }

    #[test]
    fn the_agent_temp_dir_is_an_absolute_tmpdir_else_slash_tmp() {
        for (tmpdir, expected) in [
            (Some("/var/t"), "/var/t"),
            (Some("t"), "/tmp"),
            (None, "/tmp"),
        ] {
            let mut env = vec![("HOME", "/h")];
            env.extend(tmpdir.map(|dir| ("TMPDIR", dir)));
            let agent = run(&[], &env).unwrap().agent.unwrap();
            assert_eq!(agent.temp_dir, PathBuf::from(expected), "{tmpdir:?}");
        }
    }

    #[test]
    fn relative_runtime_dir_is_ignored() {
        let env = [("HOME", "/h"), ("XDG_RUNTIME_DIR", "run/user")];
        assert_eq!(run(&[], &env).unwrap().agent.unwrap().runtime_dir, None);
    }

    #[test]
    fn approval_timeout_of_one_millisecond_is_accepted_and_zero_is_rejected() {
        let name = "HOST_MANAGER_TEST_AGENT_APPROVAL_TIMEOUT_MS";
        let agent = run(&[], &[("HOME", "/h"), (name, "1")])
            .unwrap()
            .agent
            .unwrap();
        assert_eq!(agent.approval_timeout, Some(Duration::from_millis(1)));
        let err = run(&[], &[("HOME", "/h"), (name, "0")]).unwrap_err();
        assert!(err.contains(name), "{err}");
    }

    #[test]
    fn feed_overrides_are_read_and_must_be_positive() {
        let config = run(
            &[],
            &[
                ("HOME", "/h"),
                ("HOST_MANAGER_TEST_CHANGES_KEPT", "1"),
                ("HOST_MANAGER_TEST_HISTORY_KEPT", "7"),
                ("HOST_MANAGER_TEST_FEED_MAX_WAIT_MS", "250"),
                ("HOST_MANAGER_TEST_FEED_MAX_WAITERS", "3"),
                ("HOST_MANAGER_TEST_BODY_BUDGET_BYTES", "4096"),
            ],
        )
        .unwrap();
        assert_eq!(config.feed_overrides.max_waiters, Some(3));
        assert_eq!(config.http_overrides.body_budget, Some(4096));
        assert_eq!(config.feed_overrides.changes_kept, Some(1));
        assert_eq!(config.feed_overrides.history_kept, Some(7));
        assert_eq!(
            config.feed_overrides.max_wait,
            Some(Duration::from_millis(250))
        );
        let err = run(
            &[],
            &[("HOME", "/h"), ("HOST_MANAGER_TEST_CHANGES_KEPT", "0")],
        )
        .unwrap_err();
        assert!(err.contains("HOST_MANAGER_TEST_CHANGES_KEPT"), "{err}");
    }

    #[test]
    fn help_wins_over_other_flags() {
        assert_eq!(run(&["--port", "x", "--help"], &[]).unwrap_err(), "Help");
    }
}
