//! Who may talk to the service (docs/security.md, Who may talk to the service), over raw sockets: each test names the
//! attack it stops.

use serde_json::Value;
use std::fs;

use crate::support::{fresh_dir, run_expecting_refusal, run_until_exit, Service};

fn status_of(raw: &str) -> u16 {
    raw.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {raw:?}"))
}

fn header_of<'a>(raw: &'a str, name: &str) -> Option<&'a str> {
    let head = raw.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// The JSON body of a raw response.
fn body_of(raw: &str) -> Value {
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    serde_json::from_str(body).unwrap_or_else(|err| panic!("not JSON ({err}): {raw:?}"))
}

/// Asserts a raw response is 403 `FORBIDDEN` in the error shape.
#[track_caller]
fn assert_forbidden(raw: &str) {
    assert_eq!(status_of(raw), 403, "{raw}");
    assert_eq!(body_of(raw)["code"], "FORBIDDEN", "{raw}");
    assert!(
        header_of(raw, "Access-Control-Allow-Origin").is_none(),
        "{raw}"
    );
}

/// `GET /api/vault` with `Authorization: Bearer <token>`.
fn vault_with_token(service: &Service, token: &str) -> crate::support::Response {
    service.request_raw_body(
        "GET",
        "/api/vault",
        &[("Authorization", format!("Bearer {token}"))],
        None,
    )
}

fn get_with(service: &Service, headers: &str) -> String {
    service.raw(format!("GET /api/hosts HTTP/1.1\r\n{headers}Connection: close\r\n\r\n").as_bytes())
}

#[test]
fn dns_rebinding_host_is_403() {
    let service = Service::start("rebind");
    let raw = get_with(
        &service,
        &format!("Host: evil.example:{}\r\n", service.port),
    );
    assert_forbidden(&raw);
    let raw = get_with(&service, "Host: localhost.evil.example\r\n");
    assert_forbidden(&raw);
}

#[test]
fn loopback_host_names_pass_with_and_without_port() {
    let service = Service::start("hosts-ok");
    for host in [
        "localhost".to_string(),
        format!("127.0.0.1:{}", service.port),
        "[::1]".into(),
        "LocalHost".into(),
    ] {
        let raw = get_with(&service, &format!("Host: {host}\r\n"));
        assert_eq!(status_of(&raw), 200, "{host}: {raw}");
        assert_eq!(body_of(&raw)["total"], 0, "{host}: the host list itself");
    }
}

#[test]
fn missing_or_doubled_host_on_http_1_1_is_403() {
    let service = Service::start("host-missing");
    let raw = service.raw(b"GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_forbidden(&raw);
    let raw = get_with(&service, "Host: localhost\r\nHost: evil.example\r\n");
    assert_forbidden(&raw);
}

#[test]
fn cross_site_simple_post_from_a_web_page_is_403() {
    // A page on another site can send this without a preflight (text/plain is "simple").
    let service = Service::start("csrf");
    let body = r#"{"name":"x","hostname":"h","port":22,"username":"u","auth":{"type":"agent"}}"#;
    let raw = service.raw(
        format!(
            "POST /api/hosts HTTP/1.1\r\nHost: localhost:{}\r\nOrigin: https://evil.example\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            service.port,
            body.len()
        )
        .as_bytes(),
    );
    assert_forbidden(&raw);
    assert_eq!(
        service.get("/api/hosts").expect(200)["total"],
        0,
        "nothing was created"
    );
}

#[test]
fn sec_fetch_site_cross_site_is_403() {
    let service = Service::start("fetch-site");
    let raw = get_with(
        &service,
        "Host: localhost\r\nSec-Fetch-Site: cross-site\r\n",
    );
    assert_forbidden(&raw);
    let raw = get_with(
        &service,
        "Host: localhost\r\nSec-Fetch-Site: same-origin\r\n",
    );
    assert_eq!(status_of(&raw), 200, "same-origin passes: {raw}");
}

#[test]
fn preflight_from_an_allowed_origin_is_answered_with_cors_headers() {
    let service = Service::start_args("preflight-ok", &["--allow-origin", "http://app.local:3000"]);
    let raw = service.raw(b"OPTIONS /api/hosts HTTP/1.1\r\nHost: localhost\r\nOrigin: http://app.local:3000\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&raw), 204, "{raw}");
    assert_eq!(
        header_of(&raw, "Access-Control-Allow-Origin"),
        Some("http://app.local:3000")
    );
    assert!(header_of(&raw, "Access-Control-Allow-Methods")
        .unwrap()
        .contains("POST"));
    assert!(header_of(&raw, "Access-Control-Allow-Headers")
        .unwrap()
        .contains("Content-Type"));
    // A real request from that origin gets the CORS header too.
    let raw = get_with(
        &service,
        "Host: localhost\r\nOrigin: http://app.local:3000\r\n",
    );
    assert_eq!(
        header_of(&raw, "Access-Control-Allow-Origin"),
        Some("http://app.local:3000"),
        "{raw}"
    );
}

#[test]
fn preflight_from_a_refused_origin_is_403_without_cors_headers() {
    let service = Service::start_args(
        "preflight-refused",
        &["--allow-origin", "http://app.local:3000"],
    );
    let raw = service.raw(b"OPTIONS /api/hosts HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n");
    assert_forbidden(&raw);
}

#[test]
fn generated_token_is_printed_before_the_port_and_required_everywhere_but_health() {
    let service = Service::start_args("token-gen", &["--generate-token"]);
    assert_eq!(service.stdout_head.len(), 2, "{:?}", service.stdout_head);
    let token = service.stdout_head[0]
        .strip_prefix("SERVICE_TOKEN=")
        .expect("token line first")
        .to_string();
    assert!(service.stdout_head[1].starts_with("SERVICE_PORT="));
    assert_eq!(token.len(), 64);

    // Health answers without a token (the app probes start-up with it).
    assert_eq!(service.get("/api/health").status, 200);
    // Missing token: 401, also on unknown paths (no route discovery without it).
    service.get("/api/vault").assert_error(401, "UNAUTHORIZED");
    service.get("/api/nope").assert_error(401, "UNAUTHORIZED");
    // Wrong token.
    let wrong = service.request_raw_body(
        "GET",
        "/api/vault",
        &[("Authorization", format!("Bearer {}x", &token[1..]))],
        None,
    );
    wrong.assert_error(401, "UNAUTHORIZED");
    // Right token.
    let right = vault_with_token(&service, &token).expect(200);
    assert_eq!(right["vault_locked"], false, "{right}");
    // The token never reaches the log.
    assert!(!service.stderr().contains(&token));
}

#[test]
fn token_file_token_is_required() {
    let dir = fresh_dir("token-file");
    let path = dir.join("token");
    let token = "a-token-of-at-least-thirty-two-characters";
    fs::write(&path, format!("{token}\nignored second line\n")).unwrap();
    crate::support::set_mode(&path, 0o600);
    let service = Service::start_args("token-file-svc", &["--token-file", path.to_str().unwrap()]);
    assert_eq!(
        service.stdout_head.len(),
        1,
        "no SERVICE_TOKEN line for a token file"
    );
    service.get("/api/vault").assert_error(401, "UNAUTHORIZED");
    vault_with_token(&service, &format!("{token}x")).assert_error(401, "UNAUTHORIZED");
    vault_with_token(&service, "ignored second line").assert_error(401, "UNAUTHORIZED");
    let right = vault_with_token(&service, token).expect(200);
    assert_eq!(right["vault_locked"], false, "{right}");
}

#[test]
fn token_file_with_a_short_token_refuses_to_start() {
    let dir = fresh_dir("token-short");
    let path = dir.join("token");
    fs::write(&path, "x".repeat(31)).unwrap();
    let (status, stderr) = run_expecting_refusal(
        "token-short-run",
        &dir.join("data"),
        &["--token-file", path.to_str().unwrap()],
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("31 characters, fewer than 32"), "{stderr}");
    assert!(stderr.contains("at least 32"), "{stderr}");
    // 32 characters is enough, and that token is the one required.
    fs::write(&path, "x".repeat(32)).unwrap();
    let service = Service::start_args("token-32", &["--token-file", path.to_str().unwrap()]);
    service.get("/api/vault").assert_error(401, "UNAUTHORIZED");
    let right = vault_with_token(&service, &"x".repeat(32)).expect(200);
    assert_eq!(right["has_password"], false, "{right}");
}

#[test]
fn remote_bind_without_allow_remote_or_token_refuses_to_start() {
    for (args, named) in [
        (vec!["--bind", "0.0.0.0"], "--allow-remote"),
        (
            vec!["--bind", "0.0.0.0", "--allow-remote"],
            "--generate-token",
        ),
    ] {
        let exit = run_until_exit("remote-bind", &args);
        assert_eq!(exit.status.code(), Some(2), "{args:?}");
        assert_eq!(exit.stdout, "", "{args:?}");
        assert!(exit.stderr.contains(named), "{args:?}: {}", exit.stderr);
    }
}

// ---- token files no client can match (docs/security.md, Who may talk to the service) ------------

/// Writes `content` as a token file and tries to start on it: the exit status and stderr.
fn start_on_token_file(name: &str, content: &[u8]) -> (std::process::ExitStatus, String) {
    let dir = fresh_dir(name);
    let path = dir.join("token");
    fs::write(&path, content).unwrap();
    run_expecting_refusal(
        &format!("{name}-run"),
        &dir.join("data"),
        &["--token-file", path.to_str().unwrap()],
    )
}

#[test]
fn token_file_whose_first_line_ends_in_blanks_refuses_to_start() {
    let token = "t".repeat(32);
    for (name, content) in [
        ("token-trailing-space", format!("{token} \n")),
        ("token-trailing-tab", format!("{token}\t\n")),
        ("token-crlf-space", format!("{token} \r\n")),
    ] {
        let (status, stderr) = start_on_token_file(name, content.as_bytes());
        assert!(!status.success(), "{name}: {status:?}");
        assert!(
            stderr.contains("a space or tab at character 33"),
            "{name}: {stderr}"
        );
        assert!(
            !stderr.contains(&token),
            "the token is never echoed: {stderr}"
        );
    }
}

#[test]
fn token_file_of_32_spaces_refuses_to_start() {
    let (status, stderr) = start_on_token_file("token-spaces", " ".repeat(32).as_bytes());
    assert!(!status.success(), "{status:?}");
    assert!(stderr.contains("a space or tab at character 1"), "{stderr}");
}

#[test]
fn token_file_with_a_control_or_non_ascii_character_refuses_to_start() {
    for (name, content) in [
        (
            "token-nul",
            format!("{}\0{}", "a".repeat(16), "b".repeat(16)),
        ),
        (
            "token-unicode",
            format!("{}é{}", "a".repeat(16), "b".repeat(16)),
        ),
    ] {
        let (status, stderr) = start_on_token_file(name, content.as_bytes());
        assert!(!status.success(), "{name}: {status:?}");
        assert!(stderr.contains("at character 17"), "{name}: {stderr}");
    }
}

#[test]
fn token_file_of_32_visible_ascii_characters_of_every_kind_starts_and_authenticates() {
    // The whole punctuation of visible ASCII: exactly 32 characters, none of them a blank.
    let token = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    assert_eq!(token.len(), 32);
    let dir = fresh_dir("token-punctuation");
    let path = dir.join("token");
    fs::write(&path, format!("{token}\r\n")).unwrap();
    let service = Service::start_args(
        "token-punctuation-svc",
        &["--token-file", path.to_str().unwrap()],
    );
    let right = vault_with_token(&service, token).expect(200);
    assert_eq!(right["vault_locked"], false, "{right}");
}

#[test]
fn bearer_scheme_is_accepted_in_any_case() {
    let service = Service::start_args("token-scheme-case", &["--generate-token"]);
    let token = service.stdout_head[0]
        .strip_prefix("SERVICE_TOKEN=")
        .expect("token line first")
        .to_string();
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let response = service.request_raw_body(
            "GET",
            "/api/vault",
            &[("Authorization", format!("{scheme} {token}"))],
            None,
        );
        assert_eq!(response.status, 200, "{scheme}: {}", response.text());
    }
    let other = service.request_raw_body(
        "GET",
        "/api/vault",
        &[("Authorization", format!("Basic {token}"))],
        None,
    );
    other.assert_error(401, "UNAUTHORIZED");
}
