//! Our HTTP/1.1 server on `httparse`: a blocking accept loop that gives every connection a
//! thread of its own at once, bounded request heads and bodies, one-write responses.
//!
//! Shape (docs/security.md, "Why the service speaks HTTP/1.1 itself"): `listener` accepts and admits connections under a cap kept by
//! `connections`; each connection's thread runs `connection`, which reads a head with
//! `request`, passes it through the `gate`, reads the body, hands the request to the
//! `Handler` it serves (wired at start-up: the router), and writes the answer with
//! `response`. `message` holds the values of an exchange (`Req`, `Reply`, `Method`) and
//! `error` the layer's own refusals (`HttpError`); nothing here names a type of the layers
//! above. A request that waits long for its answer holds only its own thread.
//!
//! Invariants: the only module that names `httparse`; nothing a client sends before the gate
//! passes costs more than its bounded buffer, its thread and its deadline, and a refused
//! request closes its connection; memory never grows with what a client sends beyond the
//! limits below; logs never carry bodies, query strings or headers; `std::net` only, so the
//! layer builds on every platform.

mod body_budget;
mod connection;
mod connections;
mod error;
pub mod gate;
mod listener;
mod message;
mod request;
mod response;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::http::body_budget::BodyBudget;
use crate::http::connections::Connections;
use crate::http::gate::Gate;

pub use crate::http::error::HttpError;
pub use crate::http::message::{Method, Reply, Req, JSON, MAX_BODY_BYTES};

/// The longest request line (method, target, version) accepted; longer is 414. Far above any
/// URL the API needs (the longest is a search term of a few hundred bytes).
pub const MAX_REQUEST_LINE_BYTES: usize = 8 * 1024;

/// The longest header section (every header line and the blank line that ends the head)
/// accepted; longer is 431.
pub const MAX_HEADER_SECTION_BYTES: usize = 64 * 1024;

/// The most header lines accepted; more is 431. httparse parses into a fixed array of this size.
pub const MAX_HEADERS: usize = 100;

/// How long a connection may wait for the first byte of its next request.
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a request head may take to arrive in all, not per byte (slow-header attacks): on
/// a new connection counted from its admission, so the wait for the first byte is part of
/// it; on a kept connection from the head's first byte.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a whole body may take to arrive once its head passed the gate: 1 MiB within this
/// is 35 KB/s, far below any local client, and it bounds how long a slow body holds a thread.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a response may take to be taken by the client; one that reads nothing is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Open connections at most, where the descriptor limit allows (`connection_cap`). Each
/// costs one descriptor and one thread. At the cap a connection is closed to make room in
/// the order `connections` documents; only when none may be closed is a new one refused.
const MAX_CONNECTIONS: usize = 1000;

/// Descriptors kept out of the connection cap for what the process itself holds: standard
/// streams, the database and its journal, the lock file, the signal pipe, both listening
/// sockets, a wake-up connection, with room to spare.
const OWN_DESCRIPTORS: usize = 32;

/// The share of the connection cap kept for connections that have been answered (and so,
/// when a token is required, presented it): connections not yet answered hold at most the
/// rest, and past that the oldest of them is closed for a new one.
const ANSWERED_RESERVE_DIVISOR: usize = 8;

/// How much more recent an answered idle connection's progress counts than an unanswered
/// one's admission in the eviction order (`connections`), and how long an answer must have
/// been blocked before its connection may be closed: far longer than a local client takes
/// to send a request after connecting, far shorter than the idle timeout.
const ANSWERED_HEAD_START: Duration = Duration::from_millis(250);

/// The most bytes all request bodies being read or handled may hold at once; past it a
/// request with a body is answered 503 `BUSY` before a byte of its body is read. A chunked
/// body counts as the largest one allowed (`MAX_BODY_BYTES`).
const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// How long shutdown waits for requests in flight before the process exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the service stops serving: a signal, or the launching app went away.
pub struct Shutdown(pub &'static str);

/// What the HTTP layer serves: the application behind it, wired at start-up (the router
/// over the shared state). The gate has already admitted the request, and its body was read
/// whole, before `answer` is called.
pub trait Handler: Send + Sync {
    /// The answer to one request. A panic in it is caught by the caller and answered 500.
    fn answer(&self, req: &Req) -> Reply;
    /// The largest body a request with this method and target may send, decided from the
    /// head alone before any body byte is read: `MAX_BODY_BYTES` unless a route needs more.
    fn body_limit(&self, _method: &str, _target: &str) -> usize {
        MAX_BODY_BYTES
    }
    /// Shutdown has started: requests waiting for something (the change feed's long polls)
    /// answer now instead of holding the grace period.
    fn stop(&self);
}

/// Values the HTTP layer uses instead of its defaults, from `HOST_MANAGER_TEST_*`
/// variables (read by `config`). Not flags on purpose: they exist for tests and
/// benchmarks, not for users.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpOverrides {
    pub idle_timeout: Option<Duration>,
    pub head_timeout: Option<Duration>,
    pub body_timeout: Option<Duration>,
    pub write_timeout: Option<Duration>,
    pub max_connections: Option<usize>,
    pub body_budget: Option<usize>,
    pub answered_head_start: Option<Duration>,
}

/// The timeouts, the connection cap and the body budget, each a constant above unless a
/// test overrides it.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub idle_timeout: Duration,
    pub head_timeout: Duration,
    pub body_timeout: Duration,
    pub write_timeout: Duration,
    pub max_connections: usize,
    /// Places of the cap kept for answered connections.
    pub answered_reserve: usize,
    pub answered_head_start: Duration,
    pub body_budget: usize,
}

impl Limits {
    /// The limits under `descriptor_limit` (the process's soft `RLIMIT_NOFILE`, `None` for
    /// none), which lowers the connection cap when it is too small for it and the
    /// `reserved` descriptors others hold (the SSH agent's, given by the caller).
    pub fn new(
        overrides: &HttpOverrides,
        descriptor_limit: Option<u64>,
        reserved: usize,
    ) -> Limits {
        let wanted = overrides.max_connections.unwrap_or(MAX_CONNECTIONS);
        let max_connections = connection_cap(wanted, descriptor_limit, reserved);
        Limits {
            idle_timeout: overrides.idle_timeout.unwrap_or(IDLE_TIMEOUT),
            head_timeout: overrides.head_timeout.unwrap_or(HEAD_TIMEOUT),
            body_timeout: overrides.body_timeout.unwrap_or(BODY_TIMEOUT),
            write_timeout: overrides.write_timeout.unwrap_or(WRITE_TIMEOUT),
            max_connections,
            answered_reserve: max_connections / ANSWERED_RESERVE_DIVISOR,
            answered_head_start: overrides.answered_head_start.unwrap_or(ANSWERED_HEAD_START),
            body_budget: overrides.body_budget.unwrap_or(BODY_BUDGET_BYTES),
        }
    }
}

/// The connection cap: `wanted`, lowered so that connections, the `reserved` descriptors
/// (the agent's) and the process's own fit under `descriptor_limit`; where the limit is too
/// small to keep the reserve and a quarter of it, half of it (never below one).
pub fn connection_cap(wanted: usize, descriptor_limit: Option<u64>, reserved: usize) -> usize {
    let Some(limit) = descriptor_limit.and_then(|limit| usize::try_from(limit).ok()) else {
        return wanted.max(1);
    };
    let spare = reserved + OWN_DESCRIPTORS;
    // What is left after the reserve, unless that is under a quarter of the limit: then the
    // limit is too small to keep the reserve whole, and connections get half of it.
    let room = limit
        .checked_sub(spare)
        .filter(|room| *room >= limit / 4)
        .unwrap_or(limit / 2);
    wanted.min(room).max(1)
}

/// What every connection thread shares.
struct Context {
    app: Arc<dyn Handler>,
    gate: Gate,
    limits: Limits,
    connections: Arc<Connections>,
    bodies: Arc<BodyBudget>,
    /// Set once when shutdown starts. Lock-free on purpose: the accept loop and every
    /// connection thread read it between requests; nothing else is ordered by it.
    stopping: AtomicBool,
}

impl Context {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// Serves `listener` until a `Shutdown` arrives on `shutdown`, then stops accepting, closes
/// connections that wait for a request, and lets requests in flight finish for up to
/// `SHUTDOWN_GRACE`.
pub fn serve(
    app: Arc<dyn Handler>,
    gate: Gate,
    listener: TcpListener,
    limits: Limits,
    shutdown: Receiver<Shutdown>,
) -> io::Result<()> {
    let wake_address = wake_address(listener.local_addr()?);
    log::info!(
        "serving at most {} connections ({} kept for answered ones), bodies up to {} bytes in all",
        limits.max_connections,
        limits.answered_reserve,
        limits.body_budget
    );
    let context = Arc::new(Context {
        app,
        gate,
        limits,
        connections: Arc::new(Connections::new(
            limits.max_connections,
            limits.answered_reserve,
            limits.answered_head_start,
        )),
        bodies: Arc::new(BodyBudget::new(limits.body_budget)),
        stopping: AtomicBool::new(false),
    });
    let accepting = Arc::clone(&context);
    let acceptor = thread::Builder::new()
        .name("accept".into())
        .spawn(move || listener::accept_loop(&listener, &accepting))?;

    let reason = match shutdown.recv() {
        Ok(Shutdown(reason)) => reason,
        Err(_) => "shutdown channel closed",
    };
    log::info!("shutting down ({reason})");
    context.stopping.store(true, Ordering::SeqCst);
    // Requests waiting on the change feed answer now instead of holding the grace period.
    context.app.stop();
    // The accept loop blocks in accept(); one connection of our own wakes it to see the flag.
    if TcpStream::connect_timeout(&wake_address, Duration::from_secs(1)).is_ok() {
        let _ = acceptor.join();
    }
    context.connections.close_waiting();
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    if !context.connections.wait_until_empty(deadline) {
        log::warn!("requests still running after {SHUTDOWN_GRACE:?}; exiting anyway");
    }
    Ok(())
}

/// Where to connect to wake the accept loop: the listener's own address, with an unspecified
/// address (0.0.0.0 or ::) replaced by the loopback one.
fn wake_address(local: SocketAddr) -> SocketAddr {
    match local.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), local.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), local.port())
        }
        _ => local,
    }
}

#[cfg(test)]
mod tests {
    use crate::http::connection_cap;

    #[test]
    fn the_connection_cap_leaves_descriptors_for_the_agent_and_the_process() {
        let agent = 128;
        assert_eq!(connection_cap(1000, Some(1024), agent), 864);
        assert_eq!(connection_cap(1000, Some(512), agent), 352);
        assert_eq!(connection_cap(1000, Some(256), agent), 96);
        assert_eq!(
            connection_cap(1000, Some(200), agent),
            100,
            "under a quarter left: half"
        );
        assert_eq!(connection_cap(1000, Some(64), agent), 32);
        assert_eq!(connection_cap(1000, Some(1), agent), 1);
        assert_eq!(connection_cap(1000, Some(1_048_576), agent), 1000);
        assert_eq!(connection_cap(1000, None, agent), 1000);
        assert_eq!(connection_cap(4, Some(1024), agent), 4);
        assert_eq!(
            connection_cap(1000, Some(256), 0),
            224,
            "no agent, nothing reserved"
        );
    }
}
