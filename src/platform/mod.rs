//! Every difference between the operating systems the service runs on (docs/platforms.md, Platforms):
//! the default data dir, making and checking the data dir and the database's files, a file's
//! identity for the clean-close record, stdin as a file, the shutdown signals, the SSH
//! agent's endpoint, and the descriptor limit. The rest of the code calls these and holds no `cfg` of its own (only
//! tests of Unix-only rules, such as file modes, are compiled for Unix alone).
//!
//! Invariants: `unix.rs` (Linux, macOS and the other Unix systems) and `windows.rs` offer
//! the same items with the same signatures, listed once in the `pub use` below, so a
//! missing item fails the build of that platform; the pure rule of the default data dir
//! takes the platform as a value, so every platform's rule is unit-tested on any machine;
//! `/proc` is read only for the descriptor limit on Linux (`descriptor_limit`; other
//! systems use a stated assumption), and its parser is pure and unit-tested here.

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod os;

use std::collections::HashMap;
use std::path::PathBuf;

pub use crate::platform::os::{
    agent_answers, agent_pipes, bind_agent, create_private_dir, create_private_dirs,
    descriptor_limit, file_identity, is_open_to_others, is_socket, make_private,
    narrow_private_dir, open_private, refuse_data_dir, same_owner, stdin_file, watch_signals,
    AgentListener, AgentStream, DirRefusal, AGENT_UNAVAILABLE, FILE_IDENTITY_SIZE_FIELD,
    MAX_SOCKET_PATH_BYTES,
};

/// Which named pipe the SSH agent listens on, on Windows (docs/platforms.md, Platforms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    unix,
    allow(dead_code, reason = "only Windows serves the agent on a pipe")
)]
pub enum AgentPipe {
    /// `\\.\pipe\openssh-ssh-agent`, where Windows' `ssh.exe` looks without any setup.
    OpenSsh,
    /// `\\.\pipe\host-manager-agent-<user>`, when another program holds the first.
    User,
}

/// The named pipes the SSH agent tries on Windows, best first: OpenSSH's own name, then one
/// of this user's (`user` is `%USERNAME%`, each character but an ASCII letter, digit, `-`,
/// `_` or `.` written `_`; `user` when unset or empty). `suffix` (a test override, else
/// empty) goes at the end of both, so tests running at once under one Wine server do not
/// share a pipe. Pure, so every machine unit-tests it.
#[cfg_attr(
    unix,
    allow(dead_code, reason = "only Windows serves the agent on a pipe")
)]
fn pipe_names(user: Option<&str>, suffix: &str) -> Vec<(String, AgentPipe)> {
    let user: String = match user.filter(|user| !user.is_empty()) {
        Some(user) => user
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    true => c,
                    false => '_',
                },
            )
            .collect(),
        None => "user".into(),
    };
    vec![
        (
            format!("\\\\.\\pipe\\openssh-ssh-agent{suffix}"),
            AgentPipe::OpenSsh,
        ),
        (
            format!("\\\\.\\pipe\\host-manager-agent-{user}{suffix}"),
            AgentPipe::User,
        ),
    ]
}

/// The soft "Max open files" limit in the text of Linux's `/proc/self/limits`: `Some(None)`
/// when it is "unlimited", `None` when the line is missing or unreadable.
#[cfg_attr(
    windows,
    allow(dead_code, reason = "Windows has no such limit to read")
)]
fn open_files_limit(limits: &str) -> Option<Option<u64>> {
    let line = limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?;
    match line.split_whitespace().next()? {
        "unlimited" => Some(None),
        soft => soft.parse().ok().map(Some),
    }
}

/// Which rule picks the default data dir (docs/platforms.md, Platforms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "a build constructs its own platform's variant; the unit tests construct each"
)]
pub enum System {
    /// Linux and the other Unix systems: the XDG base directories.
    Xdg,
    MacOs,
    Windows,
}

/// The platform this build runs on.
#[cfg(target_os = "macos")]
pub const SYSTEM: System = System::MacOs;
#[cfg(windows)]
pub const SYSTEM: System = System::Windows;
#[cfg(not(any(target_os = "macos", windows)))]
pub const SYSTEM: System = System::Xdg;

/// The data dir without `--data-dir` (docs/platforms.md, Platforms), from the environment `env`:
/// - Linux: `$XDG_DATA_HOME/host-manager`, else `$HOME/.local/share/host-manager` (XDG says
///   a relative `XDG_DATA_HOME` is invalid and must be ignored);
/// - macOS: `$HOME/Library/Application Support/host-manager`, where Apple puts an app's data;
/// - Windows: `%LOCALAPPDATA%\host-manager`, under the user's profile and not roamed.
///
/// The error names the variable and says to pass `--data-dir`.
pub fn default_data_dir(system: System, env: &HashMap<String, String>) -> Result<PathBuf, String> {
    let var = |name: &str| env.get(name).filter(|value| !value.is_empty());
    match system {
        System::Xdg => {
            if let Some(xdg) = var("XDG_DATA_HOME").filter(|dir| dir.starts_with('/')) {
                return Ok(PathBuf::from(format!(
                    "{}/host-manager",
                    xdg.trim_end_matches('/')
                )));
            }
            match var("HOME") {
                Some(home) => Ok(PathBuf::from(format!(
                    "{}/.local/share/host-manager",
                    home.trim_end_matches('/')
                ))),
                None => Err("neither XDG_DATA_HOME nor HOME is set; pass --data-dir".into()),
            }
        }
        System::MacOs => match var("HOME") {
            Some(home) => Ok(PathBuf::from(format!(
                "{}/Library/Application Support/host-manager",
                home.trim_end_matches('/')
            ))),
            None => Err("HOME is not set; pass --data-dir".into()),
        },
        System::Windows => match var("LOCALAPPDATA").filter(|dir| windows_absolute(dir)) {
            Some(local) => Ok(PathBuf::from(format!(
                "{}\\host-manager",
                local.trim_end_matches(['\\', '/'])
            ))),
            None => Err(
                "LOCALAPPDATA is not set to an absolute path (C:\\Users\\NAME\\AppData\\Local); \
                 pass --data-dir"
                    .into(),
            ),
        },
    }
}

/// `C:\…` (or `C:/…`) or a UNC path `\\server\share\…`: a relative `LOCALAPPDATA` would put
/// the secrets wherever the service happened to start.
fn windows_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    drive || path.starts_with("\\\\")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use crate::platform::{default_data_dir, open_files_limit, pipe_names, AgentPipe, System};

    #[test]
    fn the_soft_open_files_limit_is_read_from_proc_self_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max processes             63432                63432                processes\n\
                    Max open files            1024                 524288               files\n";
        assert_eq!(open_files_limit(text), Some(Some(1024)));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(open_files_limit(unlimited), Some(None));
        assert_eq!(open_files_limit("Max processes 5 5 processes\n"), None);
        assert_eq!(open_files_limit("Max open files  lots  lots files\n"), None);
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn linux_uses_an_absolute_xdg_data_home_with_or_without_a_trailing_slash() {
        for xdg in ["/x", "/x/"] {
            let dir =
                default_data_dir(System::Xdg, &env(&[("XDG_DATA_HOME", xdg), ("HOME", "/h")]));
            assert_eq!(dir.unwrap().to_str(), Some("/x/host-manager"), "{xdg}");
        }
    }

    #[test]
    fn linux_ignores_a_relative_xdg_data_home_and_falls_back_to_home() {
        let dir = default_data_dir(
            System::Xdg,
            &env(&[("XDG_DATA_HOME", "x"), ("HOME", "/h/")]),
        );
        assert_eq!(dir.unwrap(), PathBuf::from("/h/.local/share/host-manager"));
    }

    #[test]
    fn linux_without_xdg_data_home_or_home_asks_for_data_dir() {
        let err = default_data_dir(System::Xdg, &env(&[("HOME", "")])).unwrap_err();
        assert!(err.contains("--data-dir"), "{err}");
    }

    #[test]
    fn macos_uses_application_support_under_home_and_ignores_xdg() {
        let dir = default_data_dir(
            System::MacOs,
            &env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/Users/ann")]),
        );
        assert_eq!(
            dir.unwrap(),
            PathBuf::from("/Users/ann/Library/Application Support/host-manager")
        );
    }

    #[test]
    fn macos_without_home_asks_for_data_dir() {
        let err = default_data_dir(System::MacOs, &env(&[])).unwrap_err();
        assert_eq!(err, "HOME is not set; pass --data-dir");
    }

    #[test]
    fn windows_uses_local_app_data_with_or_without_a_trailing_backslash() {
        for local in [
            "C:\\Users\\ann\\AppData\\Local",
            "C:\\Users\\ann\\AppData\\Local\\",
        ] {
            let dir = default_data_dir(System::Windows, &env(&[("LOCALAPPDATA", local)]));
            assert_eq!(
                dir.unwrap(),
                PathBuf::from("C:\\Users\\ann\\AppData\\Local\\host-manager"),
                "{local}"
            );
        }
    }

    #[test]
    fn windows_accepts_a_unc_local_app_data() {
        let dir = default_data_dir(System::Windows, &env(&[("LOCALAPPDATA", "\\\\srv\\ann")]));
        assert_eq!(dir.unwrap(), PathBuf::from("\\\\srv\\ann\\host-manager"));
    }

    #[test]
    fn windows_refuses_a_missing_or_relative_local_app_data_and_ignores_home() {
        for pairs in [
            &[("HOME", "/h")][..],
            &[("LOCALAPPDATA", "AppData\\Local")][..],
            &[("LOCALAPPDATA", "C:")][..],
        ] {
            let err = default_data_dir(System::Windows, &env(pairs)).unwrap_err();
            assert!(
                err.contains("LOCALAPPDATA") && err.contains("--data-dir"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_agent_pipes_are_openssh_s_name_then_the_user_s_with_odd_characters_replaced() {
        let names = pipe_names(Some("Ann Lee/ß.x_y-1"), "");
        assert_eq!(
            names,
            vec![
                (
                    "\\\\.\\pipe\\openssh-ssh-agent".to_owned(),
                    AgentPipe::OpenSsh
                ),
                (
                    "\\\\.\\pipe\\host-manager-agent-Ann_Lee__.x_y-1".to_owned(),
                    AgentPipe::User
                ),
            ]
        );
        for user in [None, Some("")] {
            assert_eq!(
                pipe_names(user, "-t1")[1].0,
                "\\\\.\\pipe\\host-manager-agent-user-t1"
            );
        }
        assert_eq!(
            pipe_names(None, "-t1")[0].0,
            "\\\\.\\pipe\\openssh-ssh-agent-t1"
        );
    }
}
