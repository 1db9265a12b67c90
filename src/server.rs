//! The HTTP layer: tiny_http on a listener we bind, defended against what tiny_http 0.12
//! does not do (see `shared/design/http-layer.md`).
//!
//! Shape: a pump thread per tiny_http `Server` triages each request from its headers alone
//! (framing, size, connections already given up on) in arrival order, and moves it into a
//! bounded queue served by `WORKERS` threads. Workers never block on a slow client: a body that is not already in
//! memory is read on a thread of its own, and every response that closes the connection is
//! written on a thread of its own (tiny_http drains an unread body when a request drops).
//! If tiny_http's accept thread dies (it stops for good on the first `accept()` error, e.g.
//! out of file descriptors), a new `Server` is started on a clone of the same listener.
//!
//! Invariants: the only module that names tiny_http; every keep-alive response goes out in
//! one `write_all` (two writes stall 40 ms on delayed ACK); logs never carry bodies, query
//! strings or headers.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tiny_http::{Header, Request, Response, Server};
use zeroize::Zeroizing;

use crate::api::{Method, Reply, Req, MAX_BODY_BYTES};
use crate::error::ApiError;
use crate::gate::{self, Facts, Gate, Pass};
use crate::router;
use crate::state::AppState;

/// Request handlers. Handlers are short and SQLite serializes writers, so on 2 cores more
/// threads add nothing to throughput; the count is set so that a few slow requests at once
/// (key derivation on unlock, RSA generation) leave the rest answering.
pub const WORKERS: usize = 16;

/// Requests waiting for a worker before the pump stops taking more from tiny_http.
const QUEUE_DEPTH: usize = WORKERS * 4;

/// How often idle pumps and workers look at the shutdown flag.
const TICK: Duration = Duration::from_millis(200);

/// A `Server` whose accept thread died keeps serving its open connections until it has
/// been idle this long, then its pump exits. Its connections cannot outlive that: each is
/// closed after `IDLE_TIMEOUT` without a request.
const RETIRED_IDLE: Duration = Duration::from_secs(IDLE_TIMEOUT.as_secs() * 2);

/// Back-off between attempts to start a new `Server` after an accept failure.
const ACCEPT_RETRY_MIN: Duration = Duration::from_millis(50);
const ACCEPT_RETRY_MAX: Duration = Duration::from_secs(1);

/// A connection that sends nothing for this long (between requests, or inside one) is
/// closed, and a client that reads nothing of its response for this long is dropped.
/// tiny_http sets no socket timeouts; Linux copies these from the listening socket to every
/// socket it accepts. The value bounds how long an idle or stalled client can hold one of
/// tiny_http's connection threads, and so how long a connection queued behind them can wait.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Declared body lengths from which a refused request is abandoned rather than dropped.
/// tiny_http drains an unread body on drop by allocating its declared length at once; from
/// about the machine's memory up that allocation aborts the whole process (measured: 30 GB
/// declared on a 24 GiB machine). Far above any real request, far below any machine's RAM.
const ABANDON_BODY_BYTES: usize = 1 << 30;

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// After a response that closes the connection, further requests tiny_http parses from
/// the same socket (the leftovers of an ambiguous body) are refused for this long.
const CLOSED_CONNECTION_MEMORY: Duration = Duration::from_secs(30);
const CLOSED_CONNECTION_CAP: usize = 4096;

/// Why the server loop should act.
pub enum Event {
    /// Stop serving: a signal, or the parent went away.
    Shutdown(&'static str),
    /// A tiny_http accept thread stopped for good.
    AcceptFailed(io::Error),
}

/// Serves `listener` until an `Event::Shutdown` arrives on `events`, then drains requests
/// in flight for up to `SHUTDOWN_GRACE`.
pub fn run(
    state: Arc<AppState>,
    gate: Gate,
    listener: TcpListener,
    events_tx: Sender<Event>,
    events: Receiver<Event>,
) -> io::Result<()> {
    let (jobs_tx, jobs_rx) = mpsc::sync_channel::<Job>(QUEUE_DEPTH);
    let context = Arc::new(Context {
        state,
        gate,
        jobs: jobs_tx,
        shutdown: AtomicBool::new(false),
        closed: ClosedConnections::default(),
        abandoned: AtomicUsize::new(0),
    });
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            let context = Arc::clone(&context);
            let jobs_rx = Arc::clone(&jobs_rx);
            thread::Builder::new()
                .name(format!("worker-{index}"))
                .spawn(move || work(&context, &jobs_rx))
        })
        .collect::<io::Result<_>>()?;

    report_tiny_http_panics(events_tx.clone());
    let first = start_pump(&context, &listener, &events_tx)?;
    let reason = supervise(&context, &listener, first, &events_tx, &events);
    log::info!("shutting down ({reason})");
    context.shutdown.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    for worker in workers {
        while !worker.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if worker.is_finished() {
            let _ = worker.join();
        }
    }
    Ok(())
}

/// Waits for events; restarts the accept side after failures. Returns the shutdown reason.
fn supervise(
    context: &Arc<Context>,
    listener: &TcpListener,
    mut current: Arc<AtomicBool>,
    events_tx: &Sender<Event>,
    events: &Receiver<Event>,
) -> &'static str {
    let mut backoff = ACCEPT_RETRY_MIN;
    loop {
        match events.recv() {
            Ok(Event::Shutdown(reason)) => return reason,
            Err(_) => return "event channel closed",
            // The listening socket's SO_RCVTIMEO (set for the accepted sockets' sake, see
            // `tune_listener`) also ends a blocking accept(): an idle service meets this
            // every IDLE_TIMEOUT. Nothing is wrong; the next accept thread starts at once.
            Ok(Event::AcceptFailed(err)) if is_idle_timeout(&err) => {
                log::debug!("accept idle for {IDLE_TIMEOUT:?}; starting the next accept thread");
                current.store(true, Ordering::SeqCst);
                match start_pump(context, listener, events_tx) {
                    Ok(retired) => current = retired,
                    Err(err) => {
                        let _ = events_tx.send(Event::AcceptFailed(err));
                    }
                }
            }
            Ok(Event::AcceptFailed(err)) => {
                log::warn!("accept stopped ({err}); starting a new listener thread");
                current.store(true, Ordering::SeqCst);
                // Retry until a new Server starts, staying responsive to shutdown.
                loop {
                    match events.recv_timeout(backoff) {
                        Ok(Event::Shutdown(reason)) => return reason,
                        Ok(Event::AcceptFailed(_)) | Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return "event channel closed",
                    }
                    backoff = (backoff * 2).min(ACCEPT_RETRY_MAX);
                    match start_pump(context, listener, events_tx) {
                        Ok(retired) => {
                            current = retired;
                            break;
                        }
                        Err(err) => log::warn!("cannot restart accepting yet: {err}"),
                    }
                }
                log::info!("accepting again");
            }
        }
        backoff = ACCEPT_RETRY_MIN;
    }
}

fn is_idle_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Gives every accepted socket `TCP_NODELAY` and the `IDLE_TIMEOUT` read and write
/// timeouts by setting them on the listening socket, which Linux copies to each socket it
/// accepts. The conversions through `OwnedFd` are std's safe ones.
pub fn tune_listener(listener: TcpListener) -> io::Result<TcpListener> {
    let socket = TcpStream::from(OwnedFd::from(listener));
    socket.set_nodelay(true)?;
    socket.set_read_timeout(Some(IDLE_TIMEOUT))?;
    socket.set_write_timeout(Some(IDLE_TIMEOUT))?;
    Ok(TcpListener::from(OwnedFd::from(socket)))
}

/// tiny_http's accept thread can also die by panicking (an `unwrap()` on `try_clone()` of an
/// accepted socket when descriptors run out), which `recv()` never reports. Any panic
/// inside tiny_http is therefore treated as an accept failure: a spare restart costs one
/// new accept thread, a missed one costs the service. The previous hook still runs.
fn report_tiny_http_panics(events: Sender<Event>) {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        previous(info);
        if info
            .location()
            .is_some_and(|location| location.file().contains("tiny_http"))
        {
            let _ = events.send(Event::AcceptFailed(io::Error::other(
                "a tiny_http thread panicked",
            )));
        }
    }));
}

/// What the server layer shares between its threads. `AppState` is the application's;
/// the rest belongs to HTTP handling only.
struct Context {
    state: Arc<AppState>,
    gate: Gate,
    jobs: SyncSender<Job>,
    /// Set once when shutdown starts; pumps and idle workers exit when they see it.
    shutdown: AtomicBool,
    closed: ClosedConnections,
    /// Requests abandoned because of an absurd declared length (see `abandon`), for the log.
    abandoned: AtomicUsize,
}

enum Job {
    /// A request whose body, of this length, tiny_http already holds in memory (0: none).
    Buffered(Request, usize),
    /// A request whose body was read on a body thread.
    Ready(Request, Zeroizing<Vec<u8>>),
}

/// Starts a tiny_http `Server` on a clone of `listener` and a pump thread feeding workers.
/// Returns the flag that retires this generation once its accept thread has died.
fn start_pump(
    context: &Arc<Context>,
    listener: &TcpListener,
    events: &Sender<Event>,
) -> io::Result<Arc<AtomicBool>> {
    let server = Server::from_listener(listener.try_clone()?, None).map_err(io::Error::other)?;
    let context = Arc::clone(context);
    let events = events.clone();
    let retired = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&retired);
    thread::Builder::new()
        .name("pump".into())
        .spawn(move || pump(&server, &context, &flag, &events))?;
    Ok(retired)
}

/// Moves requests from one tiny_http `Server` to the workers. A retired pump (its accept
/// thread died) keeps serving the connections it has until they fall idle.
fn pump(server: &Server, context: &Arc<Context>, retired: &AtomicBool, events: &Sender<Event>) {
    let mut last_request = Instant::now();
    while !context.shutdown.load(Ordering::SeqCst) {
        match server.recv_timeout(TICK) {
            Ok(Some(request)) => {
                last_request = Instant::now();
                if triage(context, request).is_err() {
                    return;
                }
            }
            Ok(None) if retired.load(Ordering::SeqCst) && last_request.elapsed() > RETIRED_IDLE => {
                return
            }
            Ok(None) => {}
            // recv_timeout only fails with the accept thread's final error.
            Err(err) => {
                if !retired.swap(true, Ordering::SeqCst) {
                    let _ = events.send(Event::AcceptFailed(err));
                }
            }
        }
    }
}

fn work(context: &Arc<Context>, jobs: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let jobs = jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if context.shutdown.load(Ordering::SeqCst) {
                // Idle workers queue on this lock, and each waited a whole TICK in turn:
                // 16 x 200 ms = 3.2 s to exit (scripts/bench). Once shutdown starts, take
                // what is queued without waiting, and leave when nothing is.
                match jobs.try_recv() {
                    Ok(job) => Ok(job),
                    Err(_) => return,
                }
            } else {
                jobs.recv_timeout(TICK)
            }
        };
        match job {
            Ok(Job::Buffered(mut request, length)) => match read_body(&mut request, length) {
                Ok(body) => dispatch(context, request, body),
                Err(err) => respond_and_close(context, request, &err),
            },
            Ok(Job::Ready(request, body)) => dispatch(context, request, body),
            Err(RecvTimeoutError::Timeout) if context.shutdown.load(Ordering::SeqCst) => return,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Decides, from the headers alone, where a request goes next. Runs on the pump thread,
/// which sees each connection's requests in order: a request that closes its connection
/// is marked before tiny_http's next request from that socket can be looked at.
/// Never blocks: anything that may wait on the client runs on a thread of its own.
/// Fails only when the workers are gone (shutdown).
fn triage(context: &Arc<Context>, mut request: Request) -> Result<(), ()> {
    if let Some(addr) = request.remote_addr() {
        if context.closed.contains(addr) {
            let err =
                ApiError::BadRequest("this connection was closed after an earlier error".into());
            respond_and_close(context, request, &err);
            return Ok(());
        }
    }
    let plan = match body_plan(&request) {
        Ok(plan) => plan,
        Err(err) => {
            respond_and_close(context, request, &err);
            return Ok(());
        }
    };
    match plan {
        BodyPlan::TooLarge(declared) if declared >= ABANDON_BODY_BYTES => abandon(context, request),
        BodyPlan::TooLarge(_) => respond_and_close(context, request, &ApiError::PayloadTooLarge),
        BodyPlan::None => return context.jobs.send(Job::Buffered(request, 0)).map_err(|_| ()),
        BodyPlan::InMemory(length) => {
            return context
                .jobs
                .send(Job::Buffered(request, length))
                .map_err(|_| ())
        }
        BodyPlan::FromSocket(length) => {
            let context = Arc::clone(context);
            // The thread owns the request; if it cannot start, the request drops and
            // tiny_http answers an empty 500, which is all that is left to do.
            let _ = thread::Builder::new().name("body".into()).spawn(move || {
                match read_body(&mut request, length) {
                    Ok(body) => {
                        let _ = context.jobs.send(Job::Ready(request, body));
                    }
                    Err(err) => {
                        remember_closed(&context, &request);
                        write_and_close(request, &Reply::error(&err));
                    }
                }
            });
        }
    }
    Ok(())
}

/// How the body of a request will be read.
enum BodyPlan {
    None,
    /// tiny_http already buffered it (Content-Length ≤ 1024 without `Expect`).
    InMemory(usize),
    /// It must come from the socket: its declared length, or `None` when chunked.
    FromSocket(Option<usize>),
    /// Its declared length is over the limit (api-decisions §6: 413 before any read).
    TooLarge(usize),
}

/// Strict framing (api-decisions §6): one Content-Length of digits, or `Transfer-Encoding:
/// chunked` alone; anything else is refused, since tiny_http would guess and a guess can
/// desynchronize the connection. The 1 MiB limit is checked here on the declared length.
fn body_plan(request: &Request) -> Result<BodyPlan, ApiError> {
    let headers = request.headers();
    let lengths: Vec<&str> = header_values(headers, "Content-Length").collect();
    let encodings: Vec<&str> = header_values(headers, "Transfer-Encoding").collect();
    let expects_continue = header_values(headers, "Expect").next().is_some();
    match (lengths.as_slice(), encodings.as_slice()) {
        ([], []) => Ok(BodyPlan::None),
        ([], [encoding]) if encoding.trim().eq_ignore_ascii_case("chunked") => {
            Ok(BodyPlan::FromSocket(None))
        }
        ([], _) => Err(ApiError::BadRequest(
            "only Transfer-Encoding: chunked is supported".into(),
        )),
        ([_], [_, ..]) => Err(ApiError::BadRequest(
            "Content-Length and Transfer-Encoding together".into(),
        )),
        ([length], []) => {
            let length = length.trim();
            if length.is_empty() || !length.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(ApiError::BadRequest(
                    "Content-Length is not a number".into(),
                ));
            }
            match length.parse::<usize>() {
                Ok(0) => Ok(BodyPlan::None),
                Ok(length) if length > MAX_BODY_BYTES => Ok(BodyPlan::TooLarge(length)),
                Ok(length) if length <= 1024 && !expects_continue => Ok(BodyPlan::InMemory(length)),
                Ok(length) => Ok(BodyPlan::FromSocket(Some(length))),
                // Beyond usize, tiny_http sees no body at all, so dropping the request is safe.
                Err(_) => Err(ApiError::PayloadTooLarge),
            }
        }
        _ => Err(ApiError::BadRequest("more than one Content-Length".into())),
    }
}

/// Reads at most `MAX_BODY_BYTES` into a buffer that is wiped on drop (bodies may carry
/// passwords). Sized once from the declared length, so no grown-and-freed copies are left.
fn read_body(
    request: &mut Request,
    declared: impl Into<Option<usize>>,
) -> Result<Zeroizing<Vec<u8>>, ApiError> {
    let capacity = declared.into().unwrap_or(64 * 1024).min(MAX_BODY_BYTES) + 1;
    let mut body = Zeroizing::new(Vec::with_capacity(capacity));
    let limit = u64::try_from(MAX_BODY_BYTES + 1).unwrap_or(u64::MAX);
    match request.as_reader().take(limit).read_to_end(&mut body) {
        Ok(_) if body.len() > MAX_BODY_BYTES => Err(ApiError::PayloadTooLarge),
        Ok(_) => Ok(body),
        Err(err) => Err(ApiError::BadRequest(format!(
            "the body could not be read: {}",
            err.kind()
        ))),
    }
}

/// Routes one request whose body has been read, and writes the answer.
fn dispatch(context: &Context, request: Request, body: Zeroizing<Vec<u8>>) {
    let started = Instant::now();
    let method = Method::parse(request.method().as_str());
    let reply = match admit(&context.gate, &request, method) {
        Err(err) => Reply::error(&err),
        Ok(Pass::Preflight { origin }) => {
            with_headers(Reply::no_content(), gate::preflight_headers(&origin))
        }
        Ok(Pass::Serve { cors_origin }) => {
            let reply = match Req::new(method, request.url(), body) {
                Ok(req) => handle(&context.state, &req),
                Err(err) => Reply::error(&err),
            };
            match cors_origin {
                Some(origin) => with_headers(reply, gate::cors_headers(&origin)),
                None => reply,
            }
        }
    };
    let status = reply.status;
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    write_reply(request, method, &reply);
    log::debug!(
        "{} {path} {status} {:.1}ms",
        method.as_str(),
        started.elapsed().as_secs_f64() * 1000.0
    );
}

/// Runs the gate (Host, Origin, token) on the request's headers.
fn admit(gate: &Gate, request: &Request, method: Method) -> Result<Pass, ApiError> {
    let headers = request.headers();
    let facts = Facts {
        method,
        path: request.url().split('?').next().unwrap_or(""),
        http_1_0: request.http_version().0 == 1 && request.http_version().1 == 0,
        hosts: header_values(headers, "Host").collect(),
        origins: header_values(headers, "Origin").collect(),
        fetch_site: header_values(headers, "Sec-Fetch-Site").next(),
        authorizations: header_values(headers, "Authorization").collect(),
        preflight_method: header_values(headers, "Access-Control-Request-Method").next(),
    };
    gate.check(&facts)
}

fn with_headers(mut reply: Reply, headers: Vec<(&'static str, String)>) -> Reply {
    reply.headers.extend(headers);
    reply
}

/// Runs the router under `catch_unwind`: a panic answers 500 and the worker lives on.
fn handle(state: &AppState, req: &Req) -> Reply {
    answer(req, || router::route(state, req))
}

/// Turns a handler's outcome (or its panic) into a reply, logging internal causes.
fn answer(req: &Req, route: impl FnOnce() -> Result<Reply, ApiError>) -> Reply {
    match panic::catch_unwind(AssertUnwindSafe(route)) {
        Ok(Ok(reply)) => reply,
        Ok(Err(err)) => {
            if let ApiError::Internal(cause) = &err {
                log::error!(
                    "{} {}: internal error: {cause}",
                    req.method.as_str(),
                    req.path
                );
            }
            Reply::error(&err)
        }
        Err(_) => {
            log::error!("{} {}: handler panicked", req.method.as_str(), req.path);
            Reply::error(&ApiError::Internal("panic".into()))
        }
    }
}

/// Writes a keep-alive response in one `write_all`. The body has been read, so tiny_http
/// has nothing left to drain when it hands over the writer.
fn write_reply(request: Request, method: Method, reply: &Reply) {
    let head_only = method == Method::Head;
    let bytes = format_response(reply, head_only);
    let mut writer = request.into_writer();
    if let Err(err) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
        log::debug!(
            "client went away before its response was written: {}",
            err.kind()
        );
    }
}

/// Answers `err` and gives up on the connection, on a thread of its own: tiny_http drains
/// the unread body (up to its declared length) after writing, and that may wait on the client.
fn respond_and_close(context: &Context, request: Request, err: &ApiError) {
    remember_closed(context, &request);
    let reply = Reply::error(err);
    let spawned = thread::Builder::new()
        .name("close".into())
        .spawn(move || write_and_close(request, &reply));
    if let Err(spawn_err) = spawned {
        log::warn!(
            "cannot start a thread to answer {}: {spawn_err}",
            err.code()
        );
    }
}

/// Answers 413 to a request whose declared length would abort the process if tiny_http
/// drained it (`ABANDON_BODY_BYTES`), through `upgrade()`: the only tiny_http call that hands
/// over the body reader without dropping it. The stream is then parked for good: this costs
/// one tiny_http thread and one socket per such request, where dropping it costs the service.
fn abandon(context: &Arc<Context>, request: Request) {
    remember_closed(context, &request);
    let context = Arc::clone(context);
    let spawned = thread::Builder::new()
        .name("abandon".into())
        .spawn(move || park(&context, request));
    if let Err(err) = spawned {
        log::warn!("cannot start a thread to refuse an absurd body length: {err}");
    }
}

/// Writes the 413 through `upgrade()` and keeps the stream forever (see `abandon`).
fn park(context: &Context, request: Request) {
    let reply = Reply::error(&ApiError::PayloadTooLarge);
    let response = Response::from_data(reply.body.to_vec())
        .with_status_code(reply.status)
        .with_header(
            Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
                .expect("constant header is valid"),
        );
    let stream = request.upgrade("refused", response);
    std::mem::forget(stream);
    let count = context.abandoned.fetch_add(1, Ordering::SeqCst) + 1;
    log::warn!("abandoned a request that declared an absurd body length ({count} so far)");
}

fn remember_closed(context: &Context, request: &Request) {
    if let Some(addr) = request.remote_addr() {
        context.closed.insert(*addr);
    }
}

/// Writes `reply` through tiny_http's own `respond`, which writes before it drains the
/// unread body (`into_writer` drains first, and would wait on a client that declared a body
/// and sends none). tiny_http drops any `Connection` header we add there, so the client is
/// not told; `ClosedConnections` refuses whatever tiny_http reads from the socket next.
fn write_and_close(request: Request, reply: &Reply) {
    let mut headers = vec![
        Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
            .expect("constant header is valid"),
    ];
    headers.extend(
        reply
            .headers
            .iter()
            .filter_map(|(name, value)| Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()),
    );
    let response = Response::new(
        tiny_http::StatusCode(reply.status),
        headers,
        &reply.body[..],
        Some(reply.body.len()),
        None,
    );
    if let Err(err) = request.respond(response) {
        log::debug!(
            "client went away before its error response was written: {}",
            err.kind()
        );
    }
}

/// Status line, headers and body in one buffer.
fn format_response(reply: &Reply, head_only: bool) -> Zeroizing<Vec<u8>> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        reply.status,
        reason_phrase(reply.status)
    );
    if reply.status != 204 {
        head.push_str(&format!("Content-Type: {}\r\n", reply.content_type));
        head.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
    }
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = Zeroizing::new(Vec::with_capacity(head.len() + reply.body.len()));
    bytes.extend_from_slice(head.as_bytes());
    if !head_only && reply.status != 204 {
        bytes.extend_from_slice(&reply.body);
    }
    bytes
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Payload Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn header_values<'a>(
    headers: &'a [Header],
    name: &'static str,
) -> impl Iterator<Item = &'a str> + 'a {
    headers
        .iter()
        .filter(move |header| header.field.equiv(name))
        .map(|header| header.value.as_str())
}

/// Remote addresses of connections we answered with `Connection: close`. tiny_http keeps
/// reading such a socket; what it parses from it next must not be served.
#[derive(Default)]
struct ClosedConnections {
    entries: Mutex<HashMap<SocketAddr, Instant>>,
}

impl ClosedConnections {
    fn insert(&self, addr: SocketAddr) {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= CLOSED_CONNECTION_CAP {
            entries.retain(|_, since| since.elapsed() < CLOSED_CONNECTION_MEMORY);
        }
        if entries.len() < CLOSED_CONNECTION_CAP {
            entries.insert(addr, Instant::now());
        }
    }

    fn contains(&self, addr: &SocketAddr) -> bool {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        entries
            .get(addr)
            .is_some_and(|since| since.elapsed() < CLOSED_CONNECTION_MEMORY)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zeroize::Zeroizing;

    use crate::api::{Method, Reply, Req};
    use crate::error::ApiError;
    use crate::server::{answer, format_response};

    fn req() -> Req {
        Req::new(Method::Get, "/api/x", Zeroizing::new(Vec::new())).unwrap()
    }

    #[test]
    fn a_panicking_handler_answers_500_internal_error_without_internals() {
        let reply = answer(&req(), || panic!("secret internals: /etc/passwd"));
        assert_eq!(reply.status, 500);
        let body = String::from_utf8(reply.body.to_vec()).unwrap();
        assert_eq!(
            body,
            r#"{"error":"internal error","code":"INTERNAL_ERROR"}"#
        );
    }

    #[test]
    fn an_internal_error_hides_its_cause() {
        let reply = answer(&req(), || {
            Err(ApiError::internal("SQLITE_CORRUPT at table hosts"))
        });
        assert_eq!(reply.status, 500);
        assert!(!String::from_utf8(reply.body.to_vec())
            .unwrap()
            .contains("SQLITE"));
    }

    #[test]
    fn response_is_one_buffer_with_length_and_type() {
        let reply = Reply {
            status: 200,
            content_type: crate::api::JSON,
            headers: vec![("Allow", "GET".into())],
            body: Zeroizing::new(b"{}".to_vec()),
        };
        let text = String::from_utf8(format_response(&reply, false).to_vec()).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nAllow: GET\r\n\r\n{}"
        );
    }

    #[test]
    fn text_reply_carries_its_own_content_type() {
        let text =
            String::from_utf8(format_response(&Reply::text("Host a\n".into()), false).to_vec())
                .unwrap();
        assert!(
            text.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{text}"
        );
    }

    #[test]
    fn no_content_has_no_body_and_no_type() {
        let text =
            String::from_utf8(format_response(&Reply::no_content(), false).to_vec()).unwrap();
        assert_eq!(text, "HTTP/1.1 204 No Content\r\n\r\n");
    }

    #[test]
    fn head_keeps_the_length_but_sends_no_body() {
        let reply = Reply {
            status: 405,
            content_type: crate::api::JSON,
            headers: vec![],
            body: Zeroizing::new(b"{\"a\":1}".to_vec()),
        };
        let text = String::from_utf8(format_response(&reply, true).to_vec()).unwrap();
        assert!(text.ends_with("Content-Length: 7\r\n\r\n"), "{text}");
    }
}
