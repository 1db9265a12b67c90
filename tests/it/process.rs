//! Process contract (api-decisions §1): the SERVICE_PORT line, health, the data dir and its
//! modes, single ownership, signals, --exit-with-parent, --help/--version, schema refusal.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{fresh_dir, Options, Service, BIN};

#[test]
fn service_port_is_the_first_and_only_stdout_line_and_the_port_answers() {
    let service = Service::start("port-line");
    assert_eq!(
        service.stdout_head,
        vec![format!("SERVICE_PORT={}", service.port)]
    );
    assert_eq!(service.get("/api/health").status, 200);
    // Requests produce no further stdout.
    assert!(service
        .stdout_rest
        .recv_timeout(Duration::from_millis(200))
        .is_err());
}

#[test]
fn health_reports_ok_the_crate_version_and_an_open_vault() {
    let service = Service::start("health");
    let body = service.get("/api/health").expect(200);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["vault_locked"], false);
    assert_eq!(
        body.as_object().unwrap().len(),
        3,
        "exactly the spec's fields: {body}"
    );
}

#[test]
fn unknown_path_is_404_not_found() {
    let service = Service::start("not-found");
    service.get("/api/nope").assert_error(404, "NOT_FOUND");
    service.get("/").assert_error(404, "NOT_FOUND");
    service
        .get("/api/health/extra")
        .assert_error(404, "NOT_FOUND");
}

#[test]
fn wrong_method_is_405_with_an_allow_header() {
    let service = Service::start("method");
    let response = service.request("DELETE", "/api/health", None);
    response.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(response.header("allow"), Some("GET"));
    let response = service.request("PATCH", "/api/hosts/some-id", None);
    response.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(response.header("allow"), Some("GET, PUT, DELETE"));
}

#[test]
fn second_instance_on_the_same_data_dir_exits_nonzero_within_2s_while_the_first_answers() {
    let first = Service::start("owner");
    let started = Instant::now();
    let output = Command::new(BIN)
        .arg("--data-dir")
        .arg(&first.data_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "no SERVICE_PORT from the second instance"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("already using data dir"),
        "clear message: {stderr}"
    );
    assert_eq!(first.get("/api/health").status, 200);
}

#[test]
fn sigterm_exits_zero() {
    let mut service = Service::start("sigterm");
    assert_eq!(service.get("/api/health").status, 200);
    let status = service.terminate(Duration::from_secs(10)).expect("exited");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn sigint_exits_zero() {
    let mut service = Service::start("sigint");
    Command::new("kill")
        .arg("-INT")
        .arg(service.child.id().to_string())
        .status()
        .unwrap();
    let status = service.wait_exit(Duration::from_secs(10)).expect("exited");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn exit_with_parent_shuts_down_when_stdin_closes() {
    let mut service = Service::start_args("parent", &["--exit-with-parent"]);
    assert_eq!(service.get("/api/health").status, 200);
    drop(service.stdin.take());
    let status = service
        .wait_exit(Duration::from_secs(10))
        .expect("exited after stdin closed");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn without_exit_with_parent_closing_stdin_changes_nothing() {
    let mut service = Service::start("no-parent-watch");
    drop(service.stdin.take());
    assert!(service.wait_exit(Duration::from_millis(500)).is_none());
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn data_dir_is_0700_and_database_files_are_0600() {
    let service = Service::start("modes");
    // A write makes sure the WAL and SHM files exist.
    assert_eq!(service.get("/api/health").status, 200);
    let mode = |path: &std::path::Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&service.data_dir), 0o700);
    let files = service.db_files();
    assert_eq!(files.len(), 3, "db, wal and shm exist: {files:?}");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
}

#[test]
fn default_data_dir_is_under_xdg_data_home() {
    let xdg = fresh_dir("xdg");
    let mut command = Command::new(BIN);
    command
        .env("XDG_DATA_HOME", &xdg)
        .env_remove("HOST_MANAGER_DATA_DIR");
    let service = spawn_plain(command);
    assert!(xdg.join("host-manager/host-manager.db").exists());
    drop(service);
}

#[test]
fn help_and_version_print_and_touch_nothing() {
    let dir = fresh_dir("help").join("never-created");
    for flag in ["--help", "--version"] {
        let output = Command::new(BIN)
            .arg(flag)
            .arg("--data-dir")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "{flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("host-manager"), "{flag}: {stdout}");
        assert!(!dir.exists(), "{flag} created the data dir");
    }
    let output = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("host-manager {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_flag_exits_2_naming_the_flag() {
    let output = Command::new(BIN)
        .arg("--port")
        .arg("70000")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--port"));
    assert!(output.stdout.is_empty());
}

#[test]
fn port_flag_and_environment_choose_the_port() {
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let service = Service::start_with(
        "env-port",
        Options {
            env: vec![("HOST_MANAGER_PORT".into(), free.to_string())],
            ..Options::default()
        },
    );
    assert_eq!(service.port, free);
}

#[test]
fn database_from_a_newer_schema_is_refused_and_left_untouched() {
    let data_dir = fresh_dir("newer").join("data");
    let mut service = Service::start_with(
        "newer-first",
        Options {
            data_dir: Some(data_dir.clone()),
            ..Options::default()
        },
    );
    service.terminate(Duration::from_secs(10)).expect("stopped");
    drop(service);
    let db_path = data_dir.join("host-manager.db");
    {
        let conn = rusqlite::Connection::open(&db_path).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA user_version = 999;")
            .unwrap();
    }
    let before = fs::read(&db_path).unwrap();
    let output = Command::new(BIN)
        .arg("--data-dir")
        .arg(&data_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("newer"), "{stderr}");
    assert_eq!(
        fs::read(&db_path).unwrap(),
        before,
        "database bytes unchanged"
    );
}

#[test]
fn restart_keeps_the_schema_and_serves_again() {
    let data_dir = fresh_dir("restart").join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut first = Service::start_with("restart-1", options());
    first.terminate(Duration::from_secs(10)).expect("stopped");
    drop(first);
    let second = Service::start_with("restart-2", options());
    assert_eq!(second.get("/api/health").status, 200);
    assert!(
        !second.stderr().contains("applied schema migration"),
        "no migration on restart"
    );
}

/// Spawns `command` with piped stdout and waits for the SERVICE_PORT line.
fn spawn_plain(mut command: Command) -> KillOnDrop {
    use std::io::{BufRead, BufReader};
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("SERVICE_PORT="), "{line}");
    KillOnDrop(child)
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
