//! HTTP-level limits and framing (docs/security.md, "Threat model of the HTTP layer"), over raw sockets.

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::support::{Options, Service, IO_TIMEOUT};

const TWO_MIB: usize = 2 * 1024 * 1024;

/// A raw connection to the service that gives up reading after `IO_TIMEOUT` (a hang fails
/// the test instead of stalling the suite).
fn connect(service: &Service) -> TcpStream {
    let stream = TcpStream::connect(service.addr()).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream
}

/// What one read of `stream` returns, as text.
fn read_once(stream: &mut TcpStream) -> String {
    let mut buf = [0u8; 4096];
    let read = stream.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..read]).into_owned()
}

fn status_of(raw: &str) -> u16 {
    raw.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {raw:?}"))
}

#[test]
fn body_of_2_mib_by_content_length_is_413_without_reading_it() {
    let service = Service::start("too-large-length");
    // Declare 2 MiB but send nothing: the answer must come from the declared length alone.
    let mut stream = connect(&service);
    write!(stream, "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {TWO_MIB}\r\n\r\n").unwrap();
    let text = read_once(&mut stream);
    assert_eq!(status_of(&text), 413, "{text}");
    assert!(text.contains("PAYLOAD_TOO_LARGE"), "{text}");
}

#[test]
fn body_of_2_mib_sent_in_full_is_413() {
    let service = Service::start("too-large-full");
    let body = vec![b' '; TWO_MIB];
    let response = service.request_raw_body(
        "POST",
        "/api/hosts",
        &[("Content-Type", "application/json".into())],
        Some(&body),
    );
    response.assert_error(413, "PAYLOAD_TOO_LARGE");
}

#[test]
fn chunked_body_over_1_mib_is_413() {
    let service = Service::start("too-large-chunked");
    let mut stream = connect(&service);
    write!(
        stream,
        "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    for _ in 0..(TWO_MIB / chunk.len()) {
        if write!(stream, "{:x}\r\n", chunk.len()).is_err()
            || stream.write_all(&chunk).is_err()
            || stream.write_all(b"\r\n").is_err()
        {
            break; // the service may close early: that is fine
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert_eq!(status_of(&text), 413, "{text}");
    assert!(text.contains("PAYLOAD_TOO_LARGE"));
}

#[test]
fn body_of_exactly_1_mib_is_not_413() {
    let service = Service::start("limit-edge");
    let mut body = vec![b' '; 1024 * 1024];
    body[0] = b'{';
    body[1024 * 1024 - 1] = b'}';
    // Routed (no 413): the placeholder or handler answers something other than 413.
    let response = service.request_raw_body(
        "POST",
        "/api/nope",
        &[("Content-Type", "application/json".into())],
        Some(&body),
    );
    response.assert_error(404, "NOT_FOUND");
}

#[test]
fn huge_declared_length_is_413_and_the_service_lives() {
    let service = Service::start("huge-length");
    let raw = service.raw(b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999999\r\n\r\n");
    assert_eq!(status_of(&raw), 413, "{raw}");
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn declared_length_beyond_memory_is_413_and_the_service_lives() {
    // tiny_http allocates an unread body's declared length when it drains it; 64 GiB and more
    // aborted the process before the service abandoned such requests.
    let service = Service::start("absurd-length");
    for declared in ["68719476736", "999999999999999"] {
        let mut stream = connect(&service);
        write!(
            stream,
            "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: {declared}\r\n\r\n"
        )
        .unwrap();
        assert_eq!(status_of(&read_once(&mut stream)), 413);
    }
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn ambiguous_framing_is_400_json() {
    let service = Service::start("framing");
    let cases: [&[u8]; 4] = [
        b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: +2\r\n\r\n{}",
    ];
    for case in cases {
        let raw = service.raw(case);
        assert_eq!(
            status_of(&raw),
            400,
            "{}\n=> {raw}",
            String::from_utf8_lossy(case)
        );
        assert!(raw.contains("\"code\":\"BAD_REQUEST\""), "{raw}");
    }
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn bytes_after_an_ambiguous_request_are_not_served_as_a_request() {
    let service = Service::start("smuggle");
    // tiny_http would read the 'body' as a second request; it must not be answered with 200.
    let raw = service.raw(b"POST /api/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\nGET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(status_of(&raw), 400, "{raw}");
    assert!(
        !raw.contains("HTTP/1.1 200"),
        "smuggled request was served: {raw}"
    );
}

#[test]
fn malformed_request_line_gets_4xx_and_the_next_request_is_served() {
    let service = Service::start("bad-line");
    let raw = service.raw(b"THIS IS NOT HTTP\r\n\r\n");
    let status = status_of(&raw);
    assert!((400..500).contains(&status), "{raw}");
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn expect_100_continue_gets_continue_then_the_answer() {
    let service = Service::start("expect");
    let mut stream = connect(&service);
    write!(stream, "POST /api/nope HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n").unwrap();
    let mut buf = [0u8; 1024];
    let read = stream.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..read]).starts_with("HTTP/1.1 100"),
        "{}",
        String::from_utf8_lossy(&buf[..read])
    );
    stream.write_all(b"{}").unwrap();
    let read = stream.read(&mut buf).unwrap();
    assert_eq!(status_of(&String::from_utf8_lossy(&buf[..read])), 404);
}

#[test]
fn expect_100_continue_over_the_limit_is_413_without_continue() {
    let service = Service::start("expect-large");
    let mut stream = connect(&service);
    write!(stream, "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: {TWO_MIB}\r\n\r\n").unwrap();
    assert_eq!(status_of(&read_once(&mut stream)), 413);
}

#[test]
fn forty_stalled_uploads_do_not_hold_up_a_new_connection() {
    let service = Service::start("slow-body");
    let stalled: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut stream = TcpStream::connect(service.addr()).unwrap();
            write!(
                stream,
                "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n{{"
            )
            .unwrap();
            stream
        })
        .collect();
    // Answered while all 40 bodies are still incomplete.
    assert_eq!(service.get("/api/health").status, 200);
    drop(stalled);
}

#[test]
fn with_200_idle_sockets_open_a_request_is_answered() {
    let service = Service::start("idle");
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(service.addr()).unwrap())
        .collect();
    assert_eq!(service.get("/api/health").status, 200);
    drop(idle);
}

/// The connection cap leaves room under the descriptor limit for the agent and the process
/// (docs/security.md, "Threat model of the HTTP layer"): under `ulimit -n 64`, 150 sockets held open
/// never run `accept()` out of descriptors, and a fresh client is answered meanwhile.
#[test]
fn under_ulimit_64_a_flood_never_runs_accept_out_of_descriptors_and_a_fresh_client_is_answered() {
    let service = Service::start_with(
        "fd-flood",
        Options {
            shell_prefix: Some("ulimit -n 64;".into()),
            ..Options::default()
        },
    );
    assert_eq!(service.get("/api/health").status, 200);
    let flood: Vec<TcpStream> = (0..150)
        .filter_map(|_| TcpStream::connect(service.addr()).ok())
        .collect();
    let mut fresh = connect(&service);
    fresh
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    let _ = fresh.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out:?}");
    drop(flood);
    assert_eq!(service.get("/api/health").status, 200);
    let stderr = service.stderr();
    assert!(!stderr.contains("accept failed"), "{stderr}");
    assert!(
        stderr.contains("serving at most 32 connections"),
        "{stderr}"
    );
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let service = Service::start("pipeline");
    let raw = service.raw(
        b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\nGET /api/nope HTTP/1.1\r\nHost: localhost\r\n\r\nGET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    let statuses: Vec<u16> = raw
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| raw[i + 9..i + 12].parse().unwrap())
        .collect();
    assert_eq!(statuses, vec![200, 404, 200], "{raw}");
}

#[test]
fn head_request_gets_headers_without_a_body() {
    let service = Service::start("head");
    let raw =
        service.raw(b"HEAD /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&raw), 405, "{raw}");
    assert!(
        raw.ends_with("\r\n\r\n"),
        "no body after the headers: {raw:?}"
    );
}

/// Keep-alive answers are never held back by Nagle's algorithm meeting the client's delayed
/// ACK. Were a response's head and body sent in two writes without `TCP_NODELAY`, the body
/// would wait for the ACK of the head, which the client delays by about 40 ms, on every
/// keep-alive request. The service writes each response with one `write_all` of one buffer
/// (docs/ARCHITECTURE.md, `http/response.rs`), so on loopback (one segment holds up to 64 KiB)
/// the whole answer is in the client's socket at once: the first read after each request
/// returns head and body complete. With the fault, the first read returns the head alone.
/// No clock is read: the check is what arrives, not when.
#[test]
fn every_keepalive_page_of_50_hosts_arrives_whole_in_one_read_so_nagle_cannot_hold_half_of_it() {
    const REQUESTS: usize = 100;
    let service = Service::start("keepalive-hosts-page");
    let mut client = service.client();
    for n in 0..50 {
        let body = serde_json::json!({
            "name": format!("host {n:02}"), "hostname": format!("h{n}.example.com"),
            "port": 22, "username": "root", "auth": {"type": "agent"}, "tags": ["prod", "web"]
        });
        assert_eq!(
            client.request("POST", "/api/hosts", Some(&body)).status,
            201
        );
    }
    let mut stream = connect(&service);
    let mut buf = vec![0u8; 1024 * 1024];
    for request in 0..REQUESTS {
        stream
            .write_all(b"GET /api/hosts?per_page=50 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let read = stream.read(&mut buf).unwrap();
        let raw = String::from_utf8_lossy(&buf[..read]);
        let (head, body) = raw
            .split_once("\r\n\r\n")
            .expect("the whole head in the first read");
        assert_eq!(status_of(head), 200, "{head}");
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Content-Length in {head}"));
        assert!(length > 2048, "a page of 50 hosts is {length} bytes");
        assert_eq!(
            body.len(),
            length,
            "request {request}: the first read held {} of the body's {length} bytes",
            body.len()
        );
        let page: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(page["items"].as_array().map(Vec::len), Some(50));
    }
}

#[test]
fn a_100_kib_header_line_is_431_and_the_service_lives() {
    let service = Service::start("long-header");
    let raw = service.raw(
        format!(
            "GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Long: {}\r\n\r\n",
            "a".repeat(100 * 1024)
        )
        .as_bytes(),
    );
    assert_eq!(status_of(&raw), 431, "{}", &raw[..raw.len().min(200)]);
    assert!(raw.contains("\"code\":\"HEADERS_TOO_LARGE\""), "{raw}");
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn a_request_with_1000_headers_is_431_and_the_service_lives() {
    let service = Service::start("many-headers");
    let headers: String = (0..1000).map(|n| format!("X-H{n}: v\r\n")).collect();
    let raw = service
        .raw(format!("GET /api/health HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n").as_bytes());
    assert_eq!(status_of(&raw), 431);
    assert!(raw.contains("\"code\":\"HEADERS_TOO_LARGE\""), "{raw}");
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn twenty_connections_sending_headers_a_byte_at_a_time_do_not_hold_up_other_requests() {
    let service = Service::start("slow-headers");
    let mut slow: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(service.addr()).unwrap())
        .collect();
    for index in 0..3 {
        for stream in &mut slow {
            let _ = stream.write_all(&b"GET /api/health HTTP/1.1\r\n"[index..index + 1]);
        }
        // Answered while all 20 heads are incomplete.
        assert_eq!(service.get("/api/health").status, 200);
    }
}

#[test]
fn request_line_of_8_kib_is_served_and_one_byte_more_is_414() {
    let service = Service::start("line-edge");
    let line = |length: usize| {
        let fixed = "GET /api/health?pad=".len() + " HTTP/1.1".len();
        format!(
            "GET /api/health?pad={} HTTP/1.1",
            "a".repeat(length - fixed)
        )
    };
    let at = service.raw(format!("{}\r\nHost: localhost\r\n\r\n", line(8192)).as_bytes());
    assert_eq!(status_of(&at), 200, "{at}");
    let over = service.raw(format!("{}\r\nHost: localhost\r\n\r\n", line(8193)).as_bytes());
    assert_eq!(status_of(&over), 414, "{over}");
    assert!(over.contains("\"code\":\"URI_TOO_LONG\""), "{over}");
}

#[test]
fn header_section_of_64_kib_is_served_and_one_byte_more_is_431() {
    let service = Service::start("section-edge");
    // The header section runs from after the request line's CRLF through the blank line.
    let section = |length: usize| {
        let fixed = "Host: localhost\r\nX-Pad: \r\n\r\n".len();
        format!(
            "Host: localhost\r\nX-Pad: {}\r\n\r\n",
            "b".repeat(length - fixed)
        )
    };
    let at = service.raw(format!("GET /api/health HTTP/1.1\r\n{}", section(65536)).as_bytes());
    assert_eq!(status_of(&at), 200, "{}", &at[..at.len().min(300)]);
    let over = service.raw(format!("GET /api/health HTTP/1.1\r\n{}", section(65537)).as_bytes());
    assert_eq!(status_of(&over), 431, "{over}");
    assert!(over.contains("\"code\":\"HEADERS_TOO_LARGE\""), "{over}");
}

#[test]
fn one_hundred_header_lines_are_served_and_one_more_is_431() {
    let service = Service::start("count-edge");
    let head = |count: usize| {
        let extra: String = (1..count).map(|n| format!("X-H{n}: v\r\n")).collect();
        format!("GET /api/health HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n")
    };
    assert_eq!(status_of(&service.raw(head(100).as_bytes())), 200);
    let over = service.raw(head(101).as_bytes());
    assert_eq!(status_of(&over), 431, "{over}");
}

/// The descriptors kept out of the connection cap are the SSH agent's (docs/security.md, "Threat
/// model of the HTTP layer"): under `ulimit -n 256`, with 63 agent clients connected and 300
/// HTTP sockets held open, one more agent client (`ssh-add -l`) is still served, and so is a
/// fresh HTTP client.
#[cfg(unix)]
#[test]
fn under_ulimit_256_an_http_flood_leaves_descriptors_for_the_agents_64_clients() {
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};

    let service = Service::start_with(
        "fd-agent",
        Options {
            shell_prefix: Some("ulimit -n 256;".into()),
            ..Options::default()
        },
    );
    let status = service.get("/api/agent").expect(200);
    let socket = status["socket"].as_str().expect("socket path").to_owned();
    let agents: Vec<UnixStream> = (0..63)
        .map(|_| UnixStream::connect(&socket).expect("agent client"))
        .collect();
    let flood: Vec<TcpStream> = (0..300)
        .filter_map(|_| TcpStream::connect(service.addr()).ok())
        .collect();
    assert_eq!(service.get("/api/health").status, 200);
    // `timeout`: an agent that cannot accept would leave ssh-add waiting for ever.
    let listed = Command::new("timeout")
        .args(["30", "ssh-add", "-l"])
        .env("SSH_AUTH_SOCK", &socket)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-add runs");
    let stderr = String::from_utf8_lossy(&listed.stderr);
    // 0: keys listed; 1: the agent has none. 2 is no agent; 124 is the timeout.
    assert!(
        matches!(listed.status.code(), Some(0 | 1)),
        "{:?} {stderr}\nservice:\n{}",
        listed.status,
        service.stderr()
    );
    // Neither accept loop ran out of descriptors (the HTTP one's or the agent's).
    let log = service.stderr();
    assert!(!log.contains("accept failed"), "{log}");
    drop((agents, flood));
}
