//! What differs between platforms (docs/platforms.md, Platforms): the agent served on each, the default
//! data dir, and on Windows the data dir outside the user's profile. Most tests here run only on
//! their own platform: the Windows ones in `scripts/test`'s Wine stage.

use crate::support::Service;

/// The `details` of the 409 an `?agent=true` export gets when the agent is not served.
fn agent_unavailable_details(service: &Service) -> String {
    let body = service
        .get("/api/export/ssh-config?agent=true")
        .assert_error(409, "AGENT_UNAVAILABLE");
    body["details"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn with_no_agent_the_409_says_the_flag_turned_the_agent_off() {
    let service = Service::start_args("platform-no-agent", &["--no-agent"]);
    let details = agent_unavailable_details(&service);
    assert!(details.contains("--no-agent"), "{details}");
    assert!(!details.contains("Windows"), "{details}");
}

/// A Unix socket on Unix, a named pipe on Windows (`agent_pipe` tests it further).
#[test]
fn the_agent_is_served_by_default_with_its_ssh_auth_sock_and_identity_agent_line() {
    let service = Service::start("platform-agent-on");
    let status = service.get("/api/agent").expect(200);
    assert_eq!(status["enabled"], true, "{status}");
    let socket = status["socket"].as_str().expect("a socket");
    assert_eq!(status["ssh_auth_sock"], socket, "{status}");
    assert!(
        status["identity_agent"]
            .as_str()
            .is_some_and(|line| line.starts_with("IdentityAgent ")),
        "{status}"
    );
    let pipe = socket.starts_with("\\\\.\\pipe\\");
    assert_eq!(pipe, cfg!(windows), "{status}");
}

/// Windows only: run by `scripts/test`'s Wine stage.
#[cfg(windows)]
mod windows {
    use crate::support::{fresh_dir, Options, Service};

    #[test]
    fn on_windows_the_default_data_dir_is_under_local_app_data() {
        // Absolute in Windows' terms (`\\?\Z:\…` under Wine): the service ignores a relative one.
        let local = fresh_dir("platform-local-app-data").canonicalize().unwrap();
        let service = Service::start_with(
            "platform-default-windows",
            Options {
                default_data_dir: true,
                data_dir: Some(local.join("host-manager")),
                env: vec![("LOCALAPPDATA".into(), local.to_string_lossy().into_owned())],
                ..Options::default()
            },
        );
        assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
        assert!(local.join("host-manager").join("host-manager.db").exists());
    }

    #[test]
    fn on_windows_a_data_dir_outside_the_profile_is_used_with_a_warning() {
        let profile = fresh_dir("platform-profile-elsewhere");
        let service = Service::start_with(
            "platform-outside-profile",
            Options {
                env: vec![("USERPROFILE".into(), profile.to_string_lossy().into_owned())],
                ..Options::default()
            },
        );
        assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
        let stderr = service.stderr();
        assert!(
            stderr.contains("is not under the user's profile"),
            "{stderr}"
        );
    }

    #[test]
    fn on_windows_a_data_dir_inside_the_profile_gets_no_warning() {
        let profile = fresh_dir("platform-profile");
        let service = Service::start_with(
            "platform-inside-profile",
            Options {
                data_dir: Some(profile.join("AppData").join("host-manager")),
                env: vec![("USERPROFILE".into(), profile.to_string_lossy().into_owned())],
                ..Options::default()
            },
        );
        assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
        let stderr = service.stderr();
        assert!(!stderr.contains("not under the user's profile"), "{stderr}");
    }
}
