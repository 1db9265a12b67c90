//! One connection's life on its own thread: wait for a request, read its head, pass the
//! gate, read its body, route it, write the answer; again while the connection is kept.
//!
//! Invariants: the gate decides from the head alone, before any body byte is read; any
//! refusal (framing, limits, gate, timeouts) is answered with the JSON error shape and then
//! the connection closes, so nothing of a refused request is ever read; a handler's panic is
//! a 500 and the thread goes on; responses to pipelined requests go out in order.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::http::connections::{Phase, Ticket};
use crate::http::gate::{self, Facts, Pass};
use crate::http::request::{self, Buffer, Head, ReadError};
use crate::http::response::{self, Framing};
use crate::http::{Context, Handler, HttpError, Method, Reply, Req};

/// How long, and how many bytes, a refused connection is read from before it closes: enough
/// for a client still sending a body of a few MiB to finish and read its 413, bounded so a
/// hostile one costs at most this much reading (nothing is kept) and this long.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);
const REFUSAL_LINGER_BYTES: usize = 4 * 1024 * 1024;

/// Serves requests on `stream` until the client closes, a request asks to close, a refusal
/// closes it, a deadline passes, or shutdown starts. The first request's head must be whole
/// within the head timeout of admission (the wait for its first byte included); a later
/// one's within the head timeout of its first byte.
pub(super) fn serve(context: &Context, stream: &TcpStream, ticket: &Ticket) {
    let mut buffer = Buffer::default();
    let mut first_head_deadline = Some(Instant::now() + context.limits.head_timeout);
    loop {
        // Idle only while nothing of a next request is here: a pipelined request already in
        // the buffer is being read, and never makes its connection the one to close at the cap.
        if buffer.is_empty() {
            ticket.set_idle();
            let idle_deadline = Instant::now() + context.limits.idle_timeout;
            let wait_deadline = first_head_deadline.map_or(idle_deadline, |head_deadline| {
                idle_deadline.min(head_deadline)
            });
            if buffer.fill(stream, wait_deadline).is_err() {
                return;
            }
        }
        if context.stopping() {
            return;
        }
        ticket.set_phase(Phase::Reading);
        let head_deadline = first_head_deadline
            .take()
            .unwrap_or_else(|| Instant::now() + context.limits.head_timeout);
        match serve_one(context, stream, &mut buffer, ticket, head_deadline) {
            Next::KeepGoing if !context.stopping() => {}
            Next::KeepGoing | Next::Close => return,
        }
    }
}

/// What the connection does after a request.
enum Next {
    KeepGoing,
    Close,
}

fn serve_one(
    context: &Context,
    stream: &TcpStream,
    buffer: &mut Buffer,
    ticket: &Ticket,
    head_deadline: Instant,
) -> Next {
    let head_length = match request::read_head(stream, buffer, head_deadline) {
        Ok(length) => length,
        Err(err) => return refuse_read(stream, err, None),
    };
    let limit = |method: &str, target: &str| context.app.body_limit(method, target);
    let parsed = request::parse_head(&buffer.data()[..head_length], limit, |head, headers| {
        (context.gate.check(&facts(head, headers)), if_match(headers))
    });
    buffer.consume(head_length);
    let (head, pass, if_match) = match parsed {
        Ok((head, (Ok(pass), if_match))) => (head, pass, if_match),
        Ok((head, (Err(err), _))) => return refuse(stream, &err, Some(&head)),
        Err(err) => return refuse(stream, &err, None),
    };
    // The body's share of the budget is taken before any of it is read, and held until
    // the handler is done with the body.
    let Some(share) = context.bodies.try_take(head.body.reserved_bytes()) else {
        return refuse(stream, &HttpError::Busy, Some(&head));
    };
    if head.expects_continue && head.body != request::BodyFraming::None {
        if let Err(err) = (&*stream).write_all(response::CONTINUE) {
            log::debug!("client went away before 100 Continue: {}", err.kind());
            return Next::Close;
        }
    }
    let body_deadline = Instant::now() + context.limits.body_timeout;
    let body = match request::read_body(stream, buffer, head.body, body_deadline) {
        Ok(body) => body,
        Err(err) => return refuse_read(stream, err, Some(&head)),
    };
    // Answered from here: a request of it passed the gate and was read whole, so it is
    // closed at the cap only after connections still without one (a long poll is this too).
    ticket.set_answered();
    ticket.set_phase(Phase::Handling);
    let started = Instant::now();
    let method = Method::parse(&head.method);
    let reply = match pass {
        Pass::Preflight { origin } => {
            with_headers(Reply::no_content(), gate::preflight_headers(&origin))
        }
        Pass::Serve { cors_origin } => {
            let reply = match Req::new(method, &head.target, body) {
                Ok(req) => answer(&*context.app, &req.with_if_match(if_match)),
                Err(err) => err.reply(),
            };
            match cors_origin {
                Some(origin) => with_headers(reply, gate::cors_headers(&origin)),
                None => reply,
            }
        }
    };
    drop(share);
    let next = write_answer(context, stream, buffer, ticket, &head, &reply);
    log::debug!(
        "{} {} {} {:.1}ms",
        method.as_str(),
        head.target.split('?').next().unwrap_or(""),
        reply.status,
        started.elapsed().as_secs_f64() * 1000.0
    );
    next
}

/// Writes the answer to a request that passed the gate, and says whether the connection
/// goes on.
fn write_answer(
    context: &Context,
    stream: &TcpStream,
    buffer: &Buffer,
    ticket: &Ticket,
    head: &Head,
    reply: &Reply,
) -> Next {
    let keep = head.keep_alive && !context.stopping();
    let framing = match (keep, head.http_1_0) {
        (false, _) => Framing::Close,
        (true, false) => Framing::KeepAlive,
        (true, true) => Framing::KeepAliveHttp10,
    };
    let bytes = match Method::parse(&head.method) {
        Method::Head => response::format_head_only(reply, framing),
        _ => response::format(reply, framing),
    };
    // Idle from the moment its answer is handed over: a client that has read it may find
    // its connection one closed to make room at the cap, never one still being served. With
    // a pipelined request behind it, it is writing: closable only after the idle ones.
    match keep && buffer.is_empty() {
        true => ticket.set_idle(),
        false => ticket.set_phase(Phase::Writing(Instant::now())),
    }
    match ((&*stream).write_all(&bytes), keep) {
        (Ok(()), true) => Next::KeepGoing,
        (Ok(()), false) => Next::Close,
        (Err(err), _) => {
            log::debug!(
                "client went away before its response was written: {}",
                err.kind()
            );
            Next::Close
        }
    }
}

/// The gate's view of a request head; every value is borrowed from the connection's buffer.
fn facts<'a>(head: &'a Head, headers: &'a [httparse::Header<'a>]) -> Facts<'a> {
    Facts {
        method: Method::parse(&head.method),
        path: head.target.split('?').next().unwrap_or(""),
        http_1_0: head.http_1_0,
        hosts: request::values(headers, "Host").collect(),
        origins: request::values(headers, "Origin").collect(),
        fetch_site: request::values(headers, "Sec-Fetch-Site").next(),
        authorizations: request::values(headers, "Authorization").collect(),
        preflight_method: request::values(headers, "Access-Control-Request-Method").next(),
    }
}

/// The `If-Match` header for `Req` (docs/api.md, "Revisions and If-Match"): several lines
/// are one list, joined as RFC 9110 §5.3 allows.
fn if_match(headers: &[httparse::Header<'_>]) -> Option<String> {
    let values: Vec<&str> = request::values(headers, "If-Match").collect();
    match values.is_empty() {
        true => None,
        false => Some(values.join(", ")),
    }
}

/// A read that ended early: a client that left gets nothing; a refusal gets its answer.
fn refuse_read(stream: &TcpStream, err: ReadError, head: Option<&Head>) -> Next {
    match err {
        ReadError::Closed => Next::Close,
        ReadError::TimedOut => refuse(stream, &HttpError::RequestTimeout, head),
        ReadError::Refused(err) => refuse(stream, &err, head),
    }
}

/// Answers `err` and closes the connection: nothing more is read from it, so an unread body
/// or whatever follows an ambiguous request is never taken for a request.
fn refuse(stream: &TcpStream, err: &HttpError, head: Option<&Head>) -> Next {
    let reply = err.reply();
    if (&*stream)
        .write_all(&response::format(&reply, Framing::Close))
        .is_ok()
    {
        linger(stream);
    }
    log::debug!(
        "{} {} {} (refused, connection closed)",
        head.map_or("-", |head| head.method.as_str()),
        head.map_or("-", |head| head.target.split('?').next().unwrap_or("")),
        reply.status
    );
    Next::Close
}

/// After a refusal, says end of stream and reads (and drops) what the client still sends,
/// briefly and boundedly: closing a socket with unread bytes sends a reset, and a reset can
/// destroy the refusal before the client reads it.
fn linger(stream: &TcpStream) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + REFUSAL_LINGER;
    let mut scratch = [0u8; 4096];
    let mut drained = 0;
    while drained < REFUSAL_LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match (&*stream).read(&mut scratch) {
            Ok(0) | Err(_) => return,
            Ok(count) => drained += count,
        }
    }
}

fn with_headers(mut reply: Reply, headers: Vec<(&'static str, String)>) -> Reply {
    reply.headers.extend(headers);
    reply
}

/// Runs the application's answer under `catch_unwind`: a panic answers 500 and the thread
/// lives on.
fn answer(app: &dyn Handler, req: &Req) -> Reply {
    match panic::catch_unwind(AssertUnwindSafe(|| app.answer(req))) {
        Ok(reply) => reply,
        Err(_) => {
            log::error!("{} {}: handler panicked", req.method.as_str(), req.path);
            HttpError::Internal.reply()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zeroize::Zeroizing;

    use crate::http::connection::answer;
    use crate::http::{Handler, Method, Reply, Req};

    /// An application whose every answer panics with internals in its message.
    struct Panicking;

    impl Handler for Panicking {
        fn answer(&self, _req: &Req) -> Reply {
            panic!("secret internals: /etc/passwd")
        }
        fn stop(&self) {}
    }

    #[test]
    fn a_panicking_handler_answers_500_internal_error_without_internals() {
        let req = Req::new(Method::Get, "/api/x", Zeroizing::new(Vec::new())).unwrap();
        let reply = answer(&Panicking, &req);
        assert_eq!(reply.status, 500);
        let body = String::from_utf8(reply.body.to_vec()).unwrap();
        assert_eq!(
            body,
            r#"{"error":"internal error","code":"INTERNAL_ERROR"}"#
        );
    }
}
