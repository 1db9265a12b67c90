//! The black-box harness: starts the real binary on a fresh data dir, reads `SERVICE_PORT`,
//! and talks HTTP/1.1 over plain sockets (a small client is enough; no HTTP crate).
//!
//! `Service` kills and reaps its child on drop, also when a test panics, and prints the
//! child's stderr when the test failed.
//!
//! On Windows (the Windows build under Wine in `scripts/test`), a test cannot send a signal
//! without unsafe code, so a service is stopped as a launching app stops it there (docs/platforms.md,
//! Platforms): it runs with `--exit-with-parent` unless the test closes its stdin itself,
//! and `terminate` closes its stdin.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_host-manager");

/// How long a service may take to print `SERVICE_PORT` before the test fails.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// How long a run that must end by itself (a refused start, `--help`) may take before the
/// test calls it a start. It takes milliseconds; the margin is for a loaded machine, and a
/// service that started by mistake would run forever.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(60);

/// A generous deadline for a condition a test polls: events that take milliseconds, on two
/// loaded cores. Tests never assert that anything is fast, only that it happens.
pub const EVENT_DEADLINE: Duration = Duration::from_secs(30);

/// Socket read timeout for requests: a hang fails the test instead of stalling the suite.
/// Generous on purpose: an RSA generation on two loaded cores can take tens of seconds, and
/// a slow answer is not what any test checks.
pub const IO_TIMEOUT: Duration = Duration::from_secs(90);

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory under cargo's per-target temp dir, named after the test.
pub fn fresh_dir(name: &str) -> PathBuf {
    let n = NEXT_DIR.fetch_add(1, Ordering::SeqCst);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create test dir");
    dir
}

/// `OpenOptions::mode` where files have modes (Unix): ssh refuses a private key that others
/// may read, and runs only an executable askpass script. Windows files have no mode.
pub trait WithMode {
    fn with_mode(&mut self, mode: u32) -> &mut Self;
}

#[cfg(unix)]
impl WithMode for fs::OpenOptions {
    fn with_mode(&mut self, mode: u32) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, mode)
    }
}

#[cfg(not(unix))]
impl WithMode for fs::OpenOptions {
    fn with_mode(&mut self, _mode: u32) -> &mut Self {
        self
    }
}

/// Sets a file's mode where files have modes (Unix); nothing on Windows.
pub fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("set mode");
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

/// One running service.
pub struct Service {
    pub child: Child,
    pub port: u16,
    pub data_dir: PathBuf,
    pub stderr_path: PathBuf,
    /// Lines printed on stdout after the `SERVICE_PORT` line (should stay empty).
    pub stdout_rest: mpsc::Receiver<String>,
    /// Every stdout line before and including `SERVICE_PORT`.
    pub stdout_head: Vec<String>,
    pub stdin: Option<ChildStdin>,
}

/// How to start a service.
#[derive(Default)]
pub struct Options<'a> {
    pub args: Vec<String>,
    pub data_dir: Option<PathBuf>,
    /// Written to stdin right after spawning (then stdin stays open unless `close_stdin`).
    pub stdin: Option<&'a [u8]>,
    pub close_stdin: bool,
    pub env: Vec<(String, String)>,
    /// A shell prefix such as `ulimit -n 64;` (runs the binary through `sh -c`).
    pub shell_prefix: Option<String>,
    /// Start without `--data-dir` (and without `HOST_MANAGER_DATA_DIR`), so the service
    /// picks its default; `env` must then set `XDG_DATA_HOME` or `HOME` to a test dir, and
    /// `data_dir` should name the default it leads to.
    pub default_data_dir: bool,
}

impl Service {
    /// Starts the binary on a fresh data dir named after `name`.
    pub fn start(name: &str) -> Service {
        Service::start_with(name, Options::default())
    }

    pub fn start_args(name: &str, args: &[&str]) -> Service {
        Service::start_with(
            name,
            Options {
                args: args.iter().map(|a| a.to_string()).collect(),
                ..Options::default()
            },
        )
    }

    /// Starts the binary with `env` added to its environment (a `HOST_MANAGER_TEST_*`
    /// timeout, `XDG_RUNTIME_DIR`, ...).
    pub fn start_env(name: &str, env: &[(&str, &str)]) -> Service {
        Service::start_with(
            name,
            Options {
                env: env
                    .iter()
                    .map(|(key, value)| (key.to_string(), value.to_string()))
                    .collect(),
                ..Options::default()
            },
        )
    }

    pub fn start_with(name: &str, options: Options<'_>) -> Service {
        match Service::try_start(name, options) {
            Ok(service) => service,
            Err((message, stderr)) => {
                panic!("service did not start: {message}\n--- stderr ---\n{stderr}")
            }
        }
    }

    /// Starts the binary; on failure returns the reason and its stderr.
    pub fn try_start(name: &str, options: Options<'_>) -> Result<Service, (String, String)> {
        let base = fresh_dir(name);
        let data_dir = options
            .data_dir
            .clone()
            .unwrap_or_else(|| base.join("data"));
        let stderr_path = base.join("stderr.log");
        let mut command = match &options.shell_prefix {
            Some(prefix) => {
                let mut command = Command::new("sh");
                let quoted: Vec<String> = options.args.iter().map(|a| shell_quote(a)).collect();
                command.arg("-c").arg(format!(
                    "{prefix} exec {} --data-dir {} {}",
                    shell_quote(BIN),
                    shell_quote(&data_dir.to_string_lossy()),
                    quoted.join(" ")
                ));
                command
            }
            None if options.default_data_dir => {
                let mut command = Command::new(BIN);
                command
                    .env_remove("HOST_MANAGER_DATA_DIR")
                    .args(&options.args);
                command
            }
            None => {
                let mut command = Command::new(BIN);
                command.arg("--data-dir").arg(&data_dir).args(&options.args);
                command
            }
        };
        if cfg!(windows)
            && !options.close_stdin
            && !options.args.iter().any(|arg| arg == "--exit-with-parent")
        {
            command.arg("--exit-with-parent");
        }
        command
            .env("RUST_LOG", "debug")
            // The agent's socket goes into the data dir, under target/, unless a test sets
            // a runtime dir of its own: nothing is left outside target/.
            .env_remove("XDG_RUNTIME_DIR")
            // On Windows the agent's pipes are named after the test dir, so services that
            // run at once (under one Wine server) never share one, unless a test says so.
            .env(
                "HOST_MANAGER_TEST_AGENT_PIPE_SUFFIX",
                format!(
                    "-{}",
                    base.file_name().unwrap_or_default().to_string_lossy()
                ),
            )
            .envs(options.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&stderr_path).expect("create stderr log"));
        let mut child = spawn(&mut command);
        let mut stdin = child.stdin.take();
        if let (Some(bytes), Some(pipe)) = (options.stdin, stdin.as_mut()) {
            pipe.write_all(bytes).expect("write stdin");
            pipe.flush().expect("flush stdin");
        }
        if options.close_stdin {
            stdin = None;
        }
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines_tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(line) => {
                        if lines_tx.send(line).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
        });
        let deadline = Instant::now() + START_DEADLINE;
        let mut head = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    let port = line
                        .strip_prefix("SERVICE_PORT=")
                        .and_then(|p| p.parse::<u16>().ok());
                    head.push(line);
                    if let Some(port) = port {
                        return Ok(Service {
                            child,
                            port,
                            data_dir,
                            stderr_path,
                            stdout_rest: lines,
                            stdout_head: head,
                            stdin,
                        });
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
                    return Err((format!("no SERVICE_PORT line; stdout was {head:?}"), stderr));
                }
            }
        }
    }

    /// Creates a host `name` (agent auth) and returns its id.
    pub fn new_host(&self, name: &str) -> String {
        let body = host_body(name, "h.example.com", serde_json::json!({}));
        id_of(&self.post("/api/hosts", &body).expect(201))
    }

    /// Creates a top-level group `name` and returns its id.
    pub fn new_group(&self, name: &str) -> String {
        id_of(
            &self
                .post("/api/groups", &serde_json::json!({ "name": name }))
                .expect(201),
        )
    }

    /// Generates an ed25519 key `name` and returns its id.
    pub fn new_key(&self, name: &str) -> String {
        let body = serde_json::json!({"name": name, "type": "ed25519"});
        id_of(&self.post("/api/keys", &body).expect(201))
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends one request on a new connection and reads the response.
    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Response {
        let body_text = body.map(|b| b.to_string());
        let mut headers = vec![];
        if body_text.is_some() {
            headers.push(("Content-Type", "application/json".to_string()));
        }
        self.request_raw_body(
            method,
            path,
            &headers,
            body_text.as_deref().map(str::as_bytes),
        )
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Response {
        self.request("POST", path, Some(body))
    }

    pub fn put(&self, path: &str, body: &Value) -> Response {
        self.request("PUT", path, Some(body))
    }

    pub fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, None)
    }

    /// A request with explicit extra headers and raw body bytes.
    pub fn request_raw_body(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<&[u8]>,
    ) -> Response {
        let mut client = self.client();
        client.send(method, path, headers, body);
        client.read_response()
    }

    /// A keep-alive connection.
    pub fn client(&self) -> Client {
        Client::connect(&self.addr())
    }

    /// Writes `bytes` on a new connection, half-closes, and returns everything read back.
    pub fn raw(&self, bytes: &[u8]) -> String {
        let mut stream = TcpStream::connect(self.addr()).expect("connect");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        stream.write_all(bytes).expect("write raw");
        let _ = stream.shutdown(Shutdown::Write);
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Sends SIGTERM (on Windows: closes stdin, see the module's doc) and waits up to
    /// `deadline` for the exit.
    pub fn terminate(&mut self, deadline: Duration) -> Option<ExitStatus> {
        if cfg!(windows) {
            drop(self.stdin.take());
        } else {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status();
        }
        self.wait_exit(deadline)
    }

    /// Polls for the child's exit until `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + deadline;
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Paths of the database file and its WAL/SHM sidecars that exist now.
    pub fn db_files(&self) -> Vec<PathBuf> {
        [
            "host-manager.db",
            "host-manager.db-wal",
            "host-manager.db-shm",
        ]
        .iter()
        .map(|name| self.data_dir.join(name))
        .filter(|path| path.exists())
        .collect()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- host-manager stderr ({}) ---\n{}",
                self.stderr_path.display(),
                self.stderr()
            );
        }
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased; repeated headers joined with ", ".
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON; panics with the raw text when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "body is not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the status and the API's error shape with this `code`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) -> Value {
        assert_eq!(self.status, status, "status; body: {}", self.text());
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "content type"
        );
        let body = self.json();
        assert_eq!(body["code"], code, "error code; body: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "error message: {body}"
        );
        if let Some(details) = body.get("details") {
            assert!(details.is_string(), "details must be a string: {body}");
        }
        body
    }

    /// Asserts the status and returns the JSON body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "status; body: {}", self.text());
        if status == 204 {
            assert!(self.body.is_empty(), "204 must have no body");
            return Value::Null;
        }
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "content type"
        );
        self.json()
    }
}

/// A keep-alive HTTP/1.1 client over one socket.
pub struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        Client {
            stream: BufReader::new(stream),
        }
    }

    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<&[u8]>,
    ) {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let has_length = headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        });
        if let (Some(body), false) = (body, has_length) {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if let Some(body) = body {
            bytes.extend_from_slice(body);
        }
        self.stream
            .get_mut()
            .write_all(&bytes)
            .expect("write request");
    }

    pub fn request(&mut self, method: &str, path: &str, body: Option<&Value>) -> Response {
        let text = body.map(|b| b.to_string());
        let headers = if text.is_some() {
            vec![("Content-Type", "application/json".to_string())]
        } else {
            vec![]
        };
        self.send(method, path, &headers, text.as_deref().map(str::as_bytes));
        self.read_response()
    }

    /// Reads one response framed by Content-Length (or none for 204/304).
    pub fn read_response(&mut self) -> Response {
        let mut status_line = String::new();
        self.stream
            .read_line(&mut status_line)
            .expect("read status line");
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers: HashMap<String, String> = HashMap::new();
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).expect("read header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers
                    .entry(name.trim().to_ascii_lowercase())
                    .and_modify(|v| {
                        v.push_str(", ");
                        v.push_str(value.trim())
                    })
                    .or_insert_with(|| value.trim().to_string());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).expect("read body");
        Response {
            status,
            headers,
            body,
        }
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// How a run that had to end by itself ended.
pub struct Exit {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` until it exits by itself and returns its exit status, stdout
/// and stderr. Fails the test when it is still running after `EXIT_DEADLINE`: it started a
/// service instead.
/// `HOST_MANAGER_DATA_DIR` points at a fresh test dir, so a start by mistake never touches
/// the user's default data dir (a `--data-dir` in `args` wins over it).
pub fn run_until_exit(name: &str, args: &[&str]) -> Exit {
    let dir = fresh_dir(name);
    let (stdout_path, stderr_path) = (dir.join("stdout.log"), dir.join("stderr.log"));
    let mut child = Command::new(BIN)
        .args(args)
        .env("HOST_MANAGER_DATA_DIR", dir.join("data"))
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout_path).expect("create stdout log"))
        .stderr(fs::File::create(&stderr_path).expect("create stderr log"))
        .spawn()
        .expect("spawn host-manager");
    let read = |path: &Path| fs::read_to_string(path).unwrap_or_default();
    let until = Instant::now() + EXIT_DEADLINE;
    loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return Exit {
                status,
                stdout: read(&stdout_path),
                stderr: read(&stderr_path),
            };
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {EXIT_DEADLINE:?}: it started a service instead; \
                 stderr: {}",
                read(&stderr_path)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// `run_until_exit` on `data_dir` with `args`, for a start that must be refused: the exit
/// status and stderr.
pub fn run_expecting_refusal(name: &str, data_dir: &Path, args: &[&str]) -> (ExitStatus, String) {
    let data_dir = data_dir.to_string_lossy();
    let mut all = vec!["--data-dir", &data_dir];
    all.extend_from_slice(args);
    let refusal = run_until_exit(name, &all);
    (refusal.status, refusal.stderr)
}

/// Polls `condition` every 20 ms until it holds or `deadline` passes.
/// The `id` of a created resource's answer.
pub fn id_of(resource: &Value) -> String {
    resource["id"].as_str().expect("an id").to_owned()
}

/// A valid host create body for `name` at `hostname` (port 22, user `root`, agent auth);
/// `extra` fields are merged in and may override.
pub fn host_body(name: &str, hostname: &str, extra: Value) -> Value {
    let mut body = serde_json::json!({
        "name": name,
        "hostname": hostname,
        "port": 22,
        "username": "root",
        "auth": {"type": "agent"}
    });
    for (key, value) in extra.as_object().expect("extra is an object") {
        body[key] = value.clone();
    }
    body
}

/// The names of `object`'s fields, sorted: an answer's shape.
pub fn field_names(object: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = object
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    names
}

/// Asserts that the service logged exactly one shutdown, and that it says `reason` (the
/// signal, stdin closing, ...).
#[track_caller]
pub fn assert_one_shutdown(service: &Service, reason: &str) {
    let stderr = service.stderr();
    assert_eq!(
        stderr.matches("shutting down").collect::<Vec<_>>(),
        ["shutting down"],
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("shutting down ({reason})")),
        "{stderr}"
    );
}

/// The audit log's vault entries, oldest first: `(event, detail)`.
pub fn vault_audit(service: &Service) -> Vec<(String, Value)> {
    let page = service.get("/api/audit?limit=1000").expect(200);
    let mut entries: Vec<(String, Value)> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|entry| entry["subject"] == "vault")
        .map(|entry| {
            let event = entry["event"].as_str().expect("an event").to_owned();
            (event, entry["detail"].clone())
        })
        .collect();
    entries.reverse();
    entries
}

pub fn wait_until(deadline: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + deadline;
    while Instant::now() < until {
        if condition() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    condition()
}

/// All bytes of the files in `dir` (db, wal, shm, lock), for secret scans.
pub fn read_all_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                if let Ok(bytes) = fs::read(&path) {
                    out.push((path, bytes));
                }
            }
        }
    }
    out
}

/// Fails naming the file and the form when any of `files` holds any of `secrets` in any
/// of its `leak_forms`.
pub fn assert_no_leak(files: &[(PathBuf, Vec<u8>)], secrets: &[&[u8]]) {
    for secret in secrets {
        for form in leak_forms(secret) {
            for (path, bytes) in files {
                assert!(
                    !contains_bytes(bytes, &form),
                    "{} in {}",
                    String::from_utf8_lossy(&form),
                    path.display()
                );
            }
        }
    }
}

/// True when `needle` occurs in `haystack`.
pub fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// `bytes` in the forms a leak could take: raw, hex (both cases), base64 (standard and
/// URL-safe, without padding, so a match inside a longer encoding is still found).
pub fn leak_forms(bytes: &[u8]) -> Vec<Vec<u8>> {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let standard = base64(bytes, b"+/");
    let url_safe = base64(bytes, b"-_");
    vec![
        bytes.to_vec(),
        hex.clone().into_bytes(),
        hex.to_uppercase().into_bytes(),
        standard.trim_end_matches('=').as_bytes().to_vec(),
        url_safe.trim_end_matches('=').as_bytes().to_vec(),
    ]
}

/// Base64 with padding; `last_two` picks the standard (`+/`) or URL-safe (`-_`) alphabet.
pub fn base64(bytes: &[u8], last_two: &[u8; 2]) -> String {
    let mut alphabet: Vec<u8> =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".to_vec();
    alphabet.extend_from_slice(last_two);
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
        for _ in chunk.len()..3 {
            out.push('=');
        }
    }
    out
}

#[test]
fn base64_helper_matches_known_encodings() {
    assert_eq!(base64(b"foobar", b"+/"), "Zm9vYmFy");
    assert_eq!(base64(b"fooba", b"+/"), "Zm9vYmE=");
    assert_eq!(base64(b"foob", b"+/"), "Zm9vYg==");
    assert_eq!(base64(&[0xfb, 0xff], b"-_"), "-_8=");
}

/// Starts the command. Under Wine, creating a Windows process now and then fails with
/// ERROR_INTERNAL_ERROR (1359) before the program runs at all; such a start is tried again,
/// twice at most. Any other failure, and any failure on Unix, fails the test at once.
fn spawn(command: &mut Command) -> Child {
    const WINE_INTERNAL_ERROR: i32 = 1359;
    let mut retries = 0;
    loop {
        match command.spawn() {
            Err(err)
                if cfg!(windows)
                    && err.raw_os_error() == Some(WINE_INTERNAL_ERROR)
                    && retries < 2 =>
            {
                retries += 1;
            }
            started => return started.expect("spawn host-manager"),
        }
    }
}
