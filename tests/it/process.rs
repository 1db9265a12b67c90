//! Process contract (README, Command line): the SERVICE_PORT line, health, the data dir and its
//! modes, single ownership, signals, --exit-with-parent, --help/--version, schema refusal,
//! and the refusals of a data dir or database that is not safe to use (README, Command line
//! and Reliability).

use std::fs;
#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, PermissionsExt};
#[cfg(unix)]
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;

use serde_json::json;

use crate::support::{
    fresh_dir, run_expecting_refusal, run_until_exit, Options, Service, EVENT_DEADLINE,
};

/// A data dir with a stopped service's database in it: `setup` ran against it first, then
/// the service was stopped with SIGTERM (a clean close).
fn stopped_data_dir(name: &str, setup: impl FnOnce(&Service)) -> std::path::PathBuf {
    let data_dir = fresh_dir(name).join("data");
    let mut service = Service::start_with(
        name,
        Options {
            data_dir: Some(data_dir.clone()),
            ..Options::default()
        },
    );
    setup(&service);
    let status = service.terminate(EVENT_DEADLINE).expect("stopped");
    assert!(status.success(), "{status:?}");
    data_dir
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn service_port_is_the_first_and_only_stdout_line_and_the_port_answers() {
    let mut service = Service::start("port-line");
    assert_eq!(
        service.stdout_head,
        vec![format!("SERVICE_PORT={}", service.port)]
    );
    assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
    service
        .post("/api/hosts", &json!({}))
        .assert_error(400, "VALIDATION_ERROR");
    let status = service.terminate(EVENT_DEADLINE).expect("stopped");
    assert_eq!(status.code(), Some(0));
    // Everything the process wrote on stdout after SERVICE_PORT, up to its end of file.
    let mut rest = Vec::new();
    loop {
        match service.stdout_rest.recv_timeout(EVENT_DEADLINE) {
            Ok(line) => rest.push(line),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => panic!("stdout still open after the exit"),
        }
    }
    assert_eq!(
        rest,
        Vec::<String>::new(),
        "requests and shutdown print nothing"
    );
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
        "exactly the API's fields: {body}"
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
fn second_instance_on_the_same_data_dir_exits_1_before_opening_the_database_while_the_first_answers(
) {
    let first = Service::start("owner");
    let body = json!({"name": "kept", "hostname": "example.org", "port": 22,
        "username": "u", "auth": {"type": "agent"}});
    first.post("/api/hosts", &body).expect(201);
    let data_dir = first.data_dir.to_string_lossy();
    let second = run_until_exit("owner-second", &["--data-dir", &data_dir]);
    assert_eq!(second.status.code(), Some(1), "{}", second.stderr);
    assert_eq!(
        second.stdout, "",
        "no SERVICE_PORT from the second instance"
    );
    assert!(
        second
            .stderr
            .contains("another host-manager is already using data dir"),
        "clear message: {}",
        second.stderr
    );
    // The lock is taken first: the second instance logged nothing about a database.
    assert!(
        !second.stderr.contains("database") && !second.stderr.contains("listening"),
        "{}",
        second.stderr
    );
    assert_eq!(first.get("/api/hosts").expect(200)["total"], 1);
}

/// Unix: signals; Windows' Ctrl+C is checked by `scripts/test`'s Wine stage (docs/platforms.md,
/// Platforms).
#[cfg(unix)]
#[test]
fn sigterm_exits_zero() {
    let mut service = Service::start("sigterm");
    assert_eq!(service.get("/api/health").status, 200);
    let status = service.terminate(EVENT_DEADLINE).expect("exited");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[cfg(unix)]
#[test]
fn sigint_exits_zero() {
    let mut service = Service::start("sigint");
    std::process::Command::new("kill")
        .arg("-INT")
        .arg(service.child.id().to_string())
        .status()
        .unwrap();
    let status = service.wait_exit(EVENT_DEADLINE).expect("exited");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn exit_with_parent_shuts_down_when_stdin_closes() {
    let mut service = Service::start_args("parent", &["--exit-with-parent"]);
    assert_eq!(service.get("/api/health").status, 200);
    drop(service.stdin.take());
    let status = service
        .wait_exit(EVENT_DEADLINE)
        .expect("exited after stdin closed");
    assert_eq!(status.code(), Some(0));
}

/// Unix: on Windows every test service watches its stdin (tests/it/support).
#[cfg(unix)]
#[test]
fn without_exit_with_parent_closing_stdin_changes_nothing() {
    let mut service = Service::start("no-parent-watch");
    drop(service.stdin.take());
    assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
    // Still serving, and the shutdown that comes is the signal's: the closed stdin started
    // none.
    let status = service.terminate(EVENT_DEADLINE).expect("stopped");
    assert_eq!(status.code(), Some(0));
    crate::support::assert_one_shutdown(&service, "signal");
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
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

/// Linux (docs/platforms.md, Platforms; Windows' default is in tests/it/platform.rs).
#[cfg(all(unix, not(target_os = "macos")))]
#[test]
fn default_data_dir_is_under_xdg_data_home() {
    let xdg = fresh_dir("xdg");
    let service = Service::start_with(
        "xdg-svc",
        Options {
            default_data_dir: true,
            data_dir: Some(xdg.join("host-manager")),
            env: vec![("XDG_DATA_HOME".into(), xdg.to_string_lossy().into_owned())],
            ..Options::default()
        },
    );
    assert_eq!(service.get("/api/health").expect(200)["status"], "ok");
    assert!(xdg.join("host-manager/host-manager.db").exists());
    assert!(
        service
            .stderr()
            .contains(&format!("data dir {}", service.data_dir.display())),
        "{}",
        service.stderr()
    );
}

#[test]
fn help_and_version_print_and_touch_nothing() {
    let dir = fresh_dir("help").join("never-created");
    let dir_arg = dir.to_string_lossy();
    for flag in ["--help", "--version"] {
        let exit = run_until_exit("help-run", &[flag, "--data-dir", &dir_arg]);
        assert!(exit.status.success(), "{flag}");
        assert!(
            exit.stdout.contains("host-manager"),
            "{flag}: {}",
            exit.stdout
        );
        assert!(!dir.exists(), "{flag} created the data dir");
    }
    let exit = run_until_exit("version-run", &["--version"]);
    assert_eq!(
        exit.stdout.trim(),
        format!("host-manager {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run_until_exit("help-text-run", &["--help"]);
    assert!(help.stdout.contains("--auto-lock SECS"), "{}", help.stdout);
}

#[test]
fn bad_flag_exits_2_naming_the_flag() {
    let exit = run_until_exit("bad-flag", &["--port", "70000"]);
    assert_eq!(exit.status.code(), Some(2));
    assert!(exit.stderr.contains("--port"), "{}", exit.stderr);
    assert_eq!(exit.stdout, "");
}

/// A port the OS just handed out and took back: free unless another process takes it first.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn port_flag_and_environment_choose_the_port() {
    let from_env = free_port();
    let service = Service::start_with(
        "env-port",
        Options {
            env: vec![("HOST_MANAGER_PORT".into(), from_env.to_string())],
            ..Options::default()
        },
    );
    assert_eq!(service.port, from_env);
    assert_eq!(service.get("/api/health").status, 200);
    drop(service);
    let from_flag = free_port();
    let service = Service::start_with(
        "flag-port",
        Options {
            args: vec!["--port".into(), from_flag.to_string()],
            env: vec![("HOST_MANAGER_PORT".into(), "1".into())],
            ..Options::default()
        },
    );
    assert_eq!(
        service.port, from_flag,
        "the flag wins over the environment"
    );
    assert_eq!(service.get("/api/health").status, 200);
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
    service.terminate(EVENT_DEADLINE).expect("stopped");
    drop(service);
    let db_path = data_dir.join("host-manager.db");
    {
        let conn = rusqlite::Connection::open(&db_path).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA user_version = 999;")
            .unwrap();
    }
    let before = fs::read(&db_path).unwrap();
    let (status, stderr) = run_expecting_refusal("newer-run", &data_dir, &[]);
    assert_eq!(status.code(), Some(1), "{stderr}");
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
    first.terminate(EVENT_DEADLINE).expect("stopped");
    drop(first);
    let second = Service::start_with("restart-2", options());
    assert_eq!(second.get("/api/health").status, 200);
    assert!(
        !second.stderr().contains("applied schema migration"),
        "no migration on restart"
    );
}

// ---- the data dir and the database file (README, Command line) ------------------------

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn an_existing_shared_data_dir_is_refused_and_keeps_its_mode() {
    let dir = fresh_dir("shared-dir").join("data");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
    let (status, stderr) = run_expecting_refusal("shared-dir-run", &dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(
        stderr.contains("open to other users (mode 1777)"),
        "{stderr}"
    );
    assert_eq!(mode_of(&dir), 0o1777, "the mode is left as it was");
    assert!(
        !dir.join("host-manager.db").exists(),
        "nothing created in it"
    );
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn an_existing_group_readable_data_dir_is_refused() {
    let dir = fresh_dir("group-dir").join("data");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
    let (status, stderr) = run_expecting_refusal("group-dir-run", &dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(stderr.contains("chmod 700"), "{stderr}");
    assert_eq!(mode_of(&dir), 0o750);
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn an_existing_read_only_data_dir_is_refused_and_keeps_its_mode() {
    let dir = fresh_dir("read-only-dir").join("data");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).unwrap();
    let (status, stderr) = run_expecting_refusal("read-only-dir-run", &dir, &[]);
    let mode = mode_of(&dir);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    assert!(!status.success(), "{status:?}");
    assert!(
        stderr.contains("not readable, writable and searchable"),
        "{stderr}"
    );
    assert_eq!(mode, 0o500, "the mode is left as it was");
    assert!(
        !dir.join("host-manager.db").exists(),
        "nothing created in it"
    );
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn an_existing_data_dir_of_another_user_is_refused() {
    // As root, a fresh dir handed to nobody; as anyone else, `/` (root's).
    let probe = fresh_dir("other-user");
    let dir = match fs::metadata(&probe).unwrap().uid() {
        0 => {
            let dir = probe.join("data");
            fs::create_dir(&dir).unwrap();
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            dir
        }
        _ => "/".into(),
    };
    let (status, stderr) = run_expecting_refusal("other-user-run", &dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(
        stderr.contains("not to the user running host-manager"),
        "{stderr}"
    );
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn an_existing_private_data_dir_of_ours_is_used_as_it_is() {
    let dir = fresh_dir("own-dir").join("data");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let service = Service::start_with(
        "own-dir-svc",
        Options {
            data_dir: Some(dir.clone()),
            ..Options::default()
        },
    );
    assert_eq!(service.get("/api/health").status, 200);
    assert_eq!(mode_of(&dir), 0o700);
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn a_missing_data_dir_and_its_missing_parents_are_created_0700() {
    let base = fresh_dir("nested-dir");
    let dir = base.join("a/b/data");
    let service = Service::start_with(
        "nested-dir-svc",
        Options {
            data_dir: Some(dir.clone()),
            ..Options::default()
        },
    );
    assert_eq!(service.get("/api/health").status, 200);
    assert_eq!((mode_of(&dir), mode_of(&base.join("a"))), (0o700, 0o700));
}

/// Unix: modes, owners and symbolic links (docs/platforms.md, Platforms).
#[cfg(unix)]
#[test]
fn a_symlinked_database_file_is_refused_and_its_target_keeps_its_mode() {
    let base = fresh_dir("db-link");
    let dir = base.join("data");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let target = base.join("elsewhere.db");
    fs::write(&target, b"").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("host-manager.db")).unwrap();
    let (status, stderr) = run_expecting_refusal("db-link-run", &dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(
        mode_of(&target),
        0o644,
        "the target's mode is left as it was"
    );
    assert_eq!(
        fs::read(&target).unwrap(),
        b"",
        "the target is left as it was"
    );
}

// ---- damaged databases (docs/reliability.md, Reliability) ------------------------------------------

#[test]
fn a_database_with_a_corrupt_page_refuses_to_start_and_is_left_untouched() {
    let data_dir = stopped_data_dir("corrupt", |service| {
        for n in 0..40 {
            let body = json!({"name": format!("h{n}"), "hostname": "example.org", "port": 22,
                "username": "u", "auth": {"type": "agent"}, "notes": "n".repeat(500)});
            service.post("/api/hosts", &body).expect(201);
        }
    });
    let db_path = data_dir.join("host-manager.db");
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(&db_path).unwrap();
        let root = conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'hosts'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (
            root,
            conn.query_row("PRAGMA page_size", [], |row| row.get(0))
                .unwrap(),
        )
    };
    // The hosts table's root page gets a b-tree page type that does not exist.
    let mut bytes = fs::read(&db_path).unwrap();
    let offset = usize::try_from((root - 1) * page_size).unwrap();
    bytes[offset] = 0x6b;
    fs::write(&db_path, &bytes).unwrap();
    let (status, stderr) = run_expecting_refusal("corrupt-run", &data_dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(stderr.contains("is damaged"), "{stderr}");
    assert!(stderr.contains("quick_check"), "{stderr}");
    assert_eq!(
        fs::read(&db_path).unwrap(),
        bytes,
        "database bytes unchanged"
    );
}

#[test]
fn a_database_whose_vault_row_is_gone_refuses_to_start_while_sealed_secrets_remain() {
    let data_dir = stopped_data_dir("vault-row-gone", |service| {
        service
            .put(
                "/api/vault/password",
                &json!({"new_password": "master pw 1"}),
            )
            .expect(200);
        let body = json!({"name": "db", "hostname": "example.org", "port": 22,
            "username": "u", "auth": {"type": "password", "password": "sealed-pw"}});
        service.post("/api/hosts", &body).expect(201);
    });
    let db_path = data_dir.join("host-manager.db");
    rusqlite::Connection::open(&db_path)
        .unwrap()
        .execute_batch("DELETE FROM vault; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let before = fs::read(&db_path).unwrap();
    let (status, stderr) = run_expecting_refusal("vault-row-gone-run", &data_dir, &[]);
    assert!(!status.success(), "{status:?}");
    assert!(stderr.contains("1 sealed secret(s)"), "{stderr}");
    assert!(stderr.contains("vault row"), "{stderr}");
    assert_eq!(
        fs::read(&db_path).unwrap(),
        before,
        "database bytes unchanged"
    );
}

#[test]
fn a_database_whose_vault_row_is_gone_but_holds_no_secret_starts_with_a_new_open_vault() {
    let data_dir = stopped_data_dir("vault-row-gone-empty", |service| {
        let body = json!({"name": "a", "hostname": "example.org", "port": 22,
            "username": "u", "auth": {"type": "agent"}});
        service.post("/api/hosts", &body).expect(201);
    });
    rusqlite::Connection::open(data_dir.join("host-manager.db"))
        .unwrap()
        .execute_batch("DELETE FROM vault;")
        .unwrap();
    let service = Service::start_with(
        "vault-row-gone-empty-2",
        Options {
            data_dir: Some(data_dir),
            ..Options::default()
        },
    );
    let vault = service.get("/api/vault").expect(200);
    assert_eq!(
        (vault["vault_locked"].clone(), vault["has_password"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(service.get("/api/hosts").expect(200)["total"], 1);
}

#[test]
fn a_start_after_a_clean_stop_skips_the_full_page_check_and_one_after_kill_9_runs_it() {
    let data_dir = stopped_data_dir("clean-close", |_| {});
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut clean = Service::start_with("clean-close-2", options());
    assert!(
        !clean.stderr().contains("database checked"),
        "{}",
        clean.stderr()
    );
    let body = json!({"name": "a", "hostname": "example.org", "port": 22,
        "username": "u", "auth": {"type": "agent"}});
    clean.post("/api/hosts", &body).expect(201);
    clean.child.kill().unwrap();
    clean.child.wait().unwrap();
    drop(clean);
    let after_kill = Service::start_with("clean-close-3", options());
    assert!(
        after_kill
            .stderr()
            .contains("database checked (PRAGMA quick_check)"),
        "{}",
        after_kill.stderr()
    );
    assert_eq!(after_kill.get("/api/hosts").expect(200)["total"], 1);
}

#[test]
fn a_database_emptied_or_removed_after_a_clean_stop_refuses_to_start_naming_both_sizes() {
    for (name, lose) in [("db-truncated", "truncate"), ("db-removed", "remove")] {
        let data_dir = stopped_data_dir(name, |service| {
            service
                .put(
                    "/api/vault/password",
                    &json!({"new_password": "master pw 1"}),
                )
                .expect(200);
            let body = json!({"name": "a", "hostname": "example.org", "port": 22,
                "username": "u", "auth": {"type": "password", "password": "sealed-pw"}});
            service.post("/api/hosts", &body).expect(201);
        });
        let db_path = data_dir.join("host-manager.db");
        let record = data_dir.join("host-manager.db-clean");
        let size = fs::metadata(&db_path).unwrap().len();
        let record_bytes = fs::read(&record).expect("a clean stop writes its record");
        match lose {
            "truncate" => fs::File::create(&db_path).map(drop).unwrap(),
            _ => fs::remove_file(&db_path).unwrap(),
        }
        let (status, stderr) = run_expecting_refusal(&format!("{name}-run"), &data_dir, &[]);
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        for part in [
            db_path.display().to_string(),
            format!("recorded it at {size} bytes"),
            "(0 bytes)".to_owned(),
        ] {
            assert!(stderr.contains(&part), "{name}: {part}: {stderr}");
        }
        assert!(
            !stderr.contains("master pw 1") && !stderr.contains("sealed-pw"),
            "{stderr}"
        );
        let left = fs::metadata(&db_path).map(|meta| meta.len()).ok();
        let expected = match lose {
            "truncate" => Some(0),
            _ => None,
        };
        assert_eq!(left, expected, "{name}: the database file is not touched");
        assert_eq!(
            fs::read(&record).unwrap(),
            record_bytes,
            "{name}: nor the record"
        );
    }
}

#[test]
fn an_empty_database_file_without_a_clean_close_record_starts_as_a_fresh_install() {
    // No record: a first start that was killed before its first close, or a fresh data dir
    // the app made with an empty file in it.
    let data_dir = fresh_dir("db-empty-fresh").join("data");
    fs::create_dir(&data_dir).unwrap();
    #[cfg(unix)]
    fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o700)).unwrap();
    fs::File::create(data_dir.join("host-manager.db")).unwrap();
    let service = Service::start_with(
        "db-empty-fresh",
        Options {
            data_dir: Some(data_dir),
            ..Options::default()
        },
    );
    let vault = service.get("/api/vault").expect(200);
    assert_eq!(vault["has_password"], false);
}
