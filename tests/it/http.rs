//! The HTTP layer's connection handling (docs/security.md, "Threat model of the HTTP layer"): a thread
//! per connection at once, the connection cap, the timeouts, keep-alive, upgrade offers and
//! hostile clients, over raw sockets. Timeouts under test are set short through the
//! `HOST_MANAGER_TEST_*` variables and the tests assert the order of events, not wall times.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{wait_until, Client, Service, IO_TIMEOUT};

const HEALTH: &[u8] = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n";

fn connect(service: &Service) -> TcpStream {
    let stream = TcpStream::connect(service.addr()).expect("connect");
    stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    stream
}

/// Reads one response head and its Content-Length body; `None` at end of stream.
fn read_response(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => return None,
            Ok(_) => bytes.push(byte[0]),
        }
    }
    let head = String::from_utf8_lossy(&bytes).into_owned();
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    Some(head + &String::from_utf8_lossy(&body))
}

fn status_of(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

/// True when the server has closed `stream`: a read returns end of stream (or a reset).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) => matches!(
            err.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

/// Threads and open descriptors of a process, from /proc.
fn threads_and_descriptors(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let threads = status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("Threads line");
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .count();
    (threads, descriptors)
}

/// The desktop app's pattern: a burst of pooled keep-alive connections, each used at once.
/// Every connection must get its answers while the others stay open: no connection may
/// wait for another to end (tiny_http's pool made one wait until another closed).
///
/// No clock is read: the service's idle timeout is set far beyond the client's read timeout
/// (`IO_TIMEOUT`), so no connection of the pool closes during the test, and a connection
/// that waited for another to close would wait past its read timeout and get no answer.
#[test]
fn six_pooled_connections_opened_at_once_are_each_answered_while_all_stay_open() {
    let never_idle = (IO_TIMEOUT * 10).as_millis().to_string();
    let service = Service::start_env(
        "desktop-burst",
        &[("HOST_MANAGER_TEST_IDLE_TIMEOUT_MS", &never_idle)],
    );
    for _round in 0..5 {
        let mut pool: Vec<TcpStream> = (0..6).map(|_| connect(&service)).collect();
        for _request in 0..10 {
            for stream in &mut pool {
                stream.write_all(HEALTH).expect("send");
                let response = read_response(stream).expect("answered while all stay open");
                assert_eq!(status_of(&response), 200);
            }
        }
    }
}

#[test]
fn at_the_connection_cap_the_longest_idle_connection_is_closed_for_a_new_one() {
    let service = Service::start_env("cap-idle", &[("HOST_MANAGER_TEST_MAX_CONNECTIONS", "4")]);
    let mut open: Vec<TcpStream> = Vec::new();
    for _ in 0..4 {
        let mut stream = connect(&service);
        stream.write_all(HEALTH).unwrap();
        assert_eq!(status_of(&read_response(&mut stream).unwrap()), 200);
        open.push(stream);
    }
    let mut newcomer = connect(&service);
    newcomer.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut newcomer).unwrap()), 200);
    assert!(
        closed_by_server(&mut open[0]),
        "the longest-idle one was closed"
    );
    for stream in &mut open[1..] {
        stream.write_all(HEALTH).unwrap();
        assert_eq!(
            status_of(&read_response(stream).unwrap()),
            200,
            "still open"
        );
    }
}

#[test]
fn at_the_connection_cap_with_none_idle_a_new_connection_gets_503_busy_and_a_close() {
    let service = Service::start_env("cap-busy", &[("HOST_MANAGER_TEST_MAX_CONNECTIONS", "2")]);
    // Each connection's first request is answered, and its second is already half here:
    // from the moment the answer is read, the connection is reading a request, not idle.
    let mut busy: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = connect(&service);
            let mut bytes = HEALTH.to_vec();
            bytes.extend_from_slice(b"GET /api/health HTTP/1.1\r\n");
            stream.write_all(&bytes).unwrap();
            assert_eq!(status_of(&read_response(&mut stream).unwrap()), 200);
            stream
        })
        .collect();
    let mut refused = connect(&service);
    let response = read_response(&mut refused).expect("a 503 before the close");
    assert_eq!(status_of(&response), 503);
    assert!(response.contains("\"code\":\"BUSY\""), "{response}");
    assert!(response.contains("Connection: close"), "{response}");
    assert!(closed_by_server(&mut refused));
    // The busy ones finish their requests normally.
    for stream in &mut busy {
        stream.write_all(b"Host: localhost\r\n\r\n").unwrap();
        assert_eq!(status_of(&read_response(stream).unwrap()), 200);
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout_without_a_response() {
    let service = Service::start_env("idle", &[("HOST_MANAGER_TEST_IDLE_TIMEOUT_MS", "200")]);
    let mut used = connect(&service);
    used.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut used).unwrap()), 200);
    let mut rest = Vec::new();
    used.read_to_end(&mut rest).expect("closed, not timed out");
    assert!(rest.is_empty(), "no bytes before the close: {rest:?}");
    let mut never_used = connect(&service);
    assert!(closed_by_server(&mut never_used));
}

#[test]
fn a_head_still_trickling_at_the_head_timeout_gets_408_and_a_close() {
    let service = Service::start_env("slow-head", &[("HOST_MANAGER_TEST_HEAD_TIMEOUT_MS", "300")]);
    let mut stream = connect(&service);
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let request = b"GET /api/health HTTP/1.1\r\nX-Slow: ";
    let mut answer = Vec::new();
    // Keep sending a byte of an endless header until the service answers or `IO_TIMEOUT` passes.
    let until = Instant::now() + IO_TIMEOUT;
    let mut index = 0;
    while answer.is_empty() && Instant::now() < until {
        let byte = request.get(index).copied().unwrap_or(b'a');
        if stream.write_all(&[byte]).is_err() {
            break;
        }
        index += 1;
        let mut chunk = [0u8; 512];
        if let Ok(count) = stream.read(&mut chunk) {
            answer.extend_from_slice(&chunk[..count]);
        }
    }
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert!(answer.contains("\"code\":\"REQUEST_TIMEOUT\""), "{answer}");
}

#[test]
fn a_body_that_stops_arriving_gets_408_after_the_body_timeout_and_a_close() {
    let service = Service::start_env("slow-body", &[("HOST_MANAGER_TEST_BODY_TIMEOUT_MS", "300")]);
    let mut stream = connect(&service);
    stream
        .write_all(
            b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"name\":",
        )
        .unwrap();
    let answer = read_response(&mut stream).expect("answered");
    assert_eq!(status_of(&answer), 408, "{answer}");
    assert!(answer.contains("Connection: close"), "{answer}");
    assert!(closed_by_server(&mut stream));
    assert_eq!(service.get("/api/hosts").status, 200, "nothing was created");
    assert_eq!(service.get("/api/hosts").json()["total"], 0);
}

#[test]
fn a_client_that_does_not_read_its_responses_is_dropped_after_the_write_timeout() {
    let service = Service::start_env(
        "no-reader",
        &[
            ("HOST_MANAGER_TEST_WRITE_TIMEOUT_MS", "200"),
            ("RUST_LOG", "debug"),
        ],
    );
    let sent = 300;
    let mut stream = connect(&service);
    let request = b"GET /api/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let mut pipelined = Vec::new();
    for _ in 0..sent {
        pipelined.extend_from_slice(request);
    }
    stream.write_all(&pipelined).unwrap();
    // Far more answer bytes than the socket buffers hold: the service's write blocks, times
    // out, and it drops the connection.
    assert!(
        wait_until(IO_TIMEOUT, || service
            .stderr()
            .contains("client went away before its response was written")),
        "the service never gave up on the client:\n{}",
        service.stderr()
    );
    let mut answered = 0;
    while read_response(&mut stream).is_some() {
        answered += 1;
    }
    assert!(answered < sent, "all {sent} answered: nothing was dropped");
    assert_eq!(service.get("/api/health").status, 200);
}

#[test]
fn two_thousand_refused_2_gib_uploads_with_a_foreign_host_give_back_every_thread_and_descriptor() {
    let service = Service::start("huge-uploads");
    let pid = service.child.id();
    assert_eq!(service.get("/api/health").status, 200);
    let baseline = threads_and_descriptors(pid);
    for round in 0..2000 {
        let mut stream = connect(&service);
        let _ = stream.write_all(
            b"POST /api/hosts HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2147483648\r\n\r\n{\"name\":",
        );
        drop(stream);
        if round % 250 == 0 {
            assert_eq!(service.get("/api/health").status, 200, "round {round}");
        }
    }
    assert_eq!(service.get("/api/health").status, 200);
    let started = Instant::now();
    let mut now = threads_and_descriptors(pid);
    let recovered = wait_until(IO_TIMEOUT, || {
        now = threads_and_descriptors(pid);
        now.0 <= baseline.0 && now.1 <= baseline.1
    });
    assert!(
        recovered,
        "threads/descriptors {now:?}, baseline {baseline:?}"
    );
    eprintln!(
        "back to baseline {baseline:?} {:?} after the last upload",
        started.elapsed()
    );
}

#[test]
fn sixteen_upgrade_connections_trickling_a_head_do_not_delay_health() {
    let service = Service::start("upgrade-trickle");
    let head = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: upgrade\r\nUpgrade: websocket\r\n";
    let mut trickling: Vec<TcpStream> = (0..16).map(|_| connect(&service)).collect();
    for index in 0..head.len() {
        for stream in &mut trickling {
            stream.write_all(&head[index..index + 1]).unwrap();
        }
        if index % 16 == 0 {
            // Answered while all 16 heads are still incomplete.
            assert_eq!(service.get("/api/health").status, 200, "after byte {index}");
        }
    }
    // The heads complete as plain HTTP/1.1 requests.
    for stream in &mut trickling {
        stream.write_all(b"\r\n").unwrap();
        assert_eq!(status_of(&read_response(stream).unwrap()), 200);
    }
}

#[test]
fn an_h2c_upgrade_offer_is_ignored_and_answered_as_http_1_1_on_a_kept_connection() {
    let service = Service::start("h2c");
    let mut stream = connect(&service);
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
        .unwrap();
    let response = read_response(&mut stream).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(!response.contains("101"), "{response}");
    stream.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut stream).unwrap()), 200);
}

#[test]
fn curl_with_http2_gets_its_normal_answer() {
    let service = Service::start("curl-http2");
    let output = Command::new("curl")
        .args([
            "--http2",
            "--silent",
            "--max-time",
            "20",
            "--write-out",
            "\n%{http_code} %{http_version}",
        ])
        .arg(format!("http://{}/api/health", service.addr()))
        .output()
        .expect("curl runs (scripts/test installs it)");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.ends_with("\n200 1.1"), "{text}");
    assert!(text.contains("\"status\":\"ok\""), "{text}");
}

#[test]
fn http_1_0_closes_after_its_answer_unless_it_asks_for_keep_alive() {
    let service = Service::start("http10");
    let mut plain = connect(&service);
    plain
        .write_all(b"GET /api/health HTTP/1.0\r\n\r\n")
        .unwrap();
    let response = read_response(&mut plain).unwrap();
    assert_eq!(status_of(&response), 200);
    assert!(response.contains("Connection: close"), "{response}");
    assert!(closed_by_server(&mut plain));

    let mut kept = connect(&service);
    for _ in 0..2 {
        kept.write_all(b"GET /api/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let response = read_response(&mut kept).unwrap();
        assert_eq!(status_of(&response), 200);
        assert!(response.contains("Connection: keep-alive"), "{response}");
    }
}

#[test]
fn connection_close_from_the_client_is_answered_then_closed() {
    let service = Service::start("client-close");
    let mut stream = connect(&service);
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let response = read_response(&mut stream).unwrap();
    assert_eq!(status_of(&response), 200);
    assert!(response.contains("Connection: close"), "{response}");
    assert!(closed_by_server(&mut stream));
}

#[test]
fn a_refused_request_closes_its_connection_and_what_follows_is_never_served() {
    let service = Service::start("refused-close");
    let mut stream = connect(&service);
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: evil.example\r\n\r\nGET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let response = read_response(&mut stream).unwrap();
    assert_eq!(status_of(&response), 403);
    assert!(response.contains("Connection: close"), "{response}");
    assert!(
        read_response(&mut stream).is_none(),
        "the second request was served"
    );
}

#[test]
fn shutdown_closes_idle_connections_and_exits_zero() {
    let mut service = Service::start("shutdown-idle");
    let mut client = Client::connect(&service.addr());
    assert_eq!(client.request("GET", "/api/health", None).status, 200);
    let mut idle = connect(&service);
    idle.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut idle).unwrap()), 200);
    let status = service.terminate(IO_TIMEOUT).expect("exits");
    assert!(status.success(), "{status:?}");
    assert!(closed_by_server(&mut idle));
    let _ = idle.shutdown(Shutdown::Both);
}

/// The eviction order at the cap (docs/security.md, "Threat model of the HTTP layer"): a connection
/// without a complete request yet (here, one that sent a byte and stopped) is closed for a
/// new one before a connection that has been answered, even one idle for longer.
#[test]
fn at_the_cap_a_trickler_without_a_complete_request_is_closed_before_an_answered_idle_one() {
    let service = Service::start_env(
        "cap-trickler",
        &[
            ("HOST_MANAGER_TEST_MAX_CONNECTIONS", "4"),
            ("HOST_MANAGER_TEST_HEAD_TIMEOUT_MS", "600000"),
            ("HOST_MANAGER_TEST_IDLE_TIMEOUT_MS", "600000"),
            // However slow the machine, the tricklers count as less recent than the answer.
            ("HOST_MANAGER_TEST_ANSWERED_HEAD_START_MS", "600000"),
        ],
    );
    let mut app = connect(&service);
    app.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut app).unwrap()), 200);
    let mut tricklers: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut stream = connect(&service);
            stream.write_all(b"G").unwrap();
            stream
        })
        .collect();
    let mut fresh = connect(&service);
    fresh.write_all(HEALTH).unwrap();
    assert_eq!(status_of(&read_response(&mut fresh).unwrap()), 200);
    assert!(
        closed_by_server(&mut tricklers[0]),
        "the oldest trickler made room"
    );
    app.write_all(HEALTH).unwrap();
    let kept = read_response(&mut app).expect("the answered connection stays open");
    assert_eq!(status_of(&kept), 200);
}

/// A new connection's head must be whole within the head timeout of its admission: one
/// that sends nothing is closed then, however long the idle timeout of kept connections.
#[test]
fn a_new_connection_that_sends_nothing_is_closed_at_the_head_timeout_not_the_idle_timeout() {
    let service = Service::start_env(
        "fresh-silent",
        &[
            ("HOST_MANAGER_TEST_HEAD_TIMEOUT_MS", "200"),
            ("HOST_MANAGER_TEST_IDLE_TIMEOUT_MS", "600000"),
        ],
    );
    let mut silent = connect(&service);
    // The hang guard: far above the head timeout, far below the idle timeout.
    silent
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut byte = [0u8; 1];
    let read = silent.read(&mut byte);
    assert!(
        matches!(read, Ok(0)),
        "closed without an answer, not held for the idle timeout: {read:?}"
    );
}

/// docs/security.md "Threat model of the HTTP layer": request bodies hold at most the body budget
/// in all; past it a request with a body is 503 `BUSY` with `Retry-After`, answered from
/// its head before a byte of its body is read, and the budget comes back once the holder
/// is answered.
#[test]
fn past_the_body_budget_a_request_with_a_body_is_503_busy_with_retry_after_before_its_body() {
    let service = Service::start_env(
        "body-budget",
        &[("HOST_MANAGER_TEST_BODY_BUDGET_BYTES", "1000")],
    );
    let post = |length: usize, expect: bool| {
        format!(
            "POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {length}\r\n{}\r\n",
            if expect {
                "Expect: 100-continue\r\n"
            } else {
                ""
            }
        )
    };
    let mut holder = connect(&service);
    holder.write_all(post(800, true).as_bytes()).unwrap();
    let continued = read_response(&mut holder).expect("100 Continue");
    assert_eq!(status_of(&continued), 100, "{continued}");
    // The holder's 800 bytes are taken: 800 more do not fit.
    let mut over = connect(&service);
    over.write_all(post(800, false).as_bytes()).unwrap();
    let refused = read_response(&mut over).expect("an answer from the head alone");
    assert_eq!(status_of(&refused), 503, "{refused}");
    assert!(refused.contains("\"code\":\"BUSY\""), "{refused}");
    assert!(refused.contains("Retry-After: 1"), "{refused}");
    // 200 bytes still fit.
    let mut small = connect(&service);
    small.write_all(post(200, false).as_bytes()).unwrap();
    small.write_all(&[b' '; 200]).unwrap();
    assert_ne!(status_of(&read_response(&mut small).unwrap()), 503);
    holder.write_all(&[b' '; 800]).unwrap();
    assert_ne!(status_of(&read_response(&mut holder).unwrap()), 503);
    let mut after = connect(&service);
    after.write_all(post(800, false).as_bytes()).unwrap();
    after.write_all(&[b' '; 800]).unwrap();
    assert_ne!(
        status_of(&read_response(&mut after).unwrap()),
        503,
        "the budget came back"
    );
}
