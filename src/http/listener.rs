//! The accept loop: one blocking `accept()`, and a thread of its own for every connection at
//! once, never a queue behind busy threads.
//!
//! Invariants: at the cap, a connection closed to make room gives its descriptor back before
//! the next `accept()` (waiting a moment at most); accepting never stops for good (an `accept()` error, such as running out of
//! descriptors, closes a connection in the eviction order, backs off and retries); the loop never
//! waits on a client (a refusal is written without blocking); it ends only at shutdown.

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::http::{connection, response, Context, HttpError};

/// The first and the longest pause after an `accept()` error.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long accepting waits, at the cap, for connections closed to make room to give their
/// descriptors back (their threads only need to notice and unwind).
const CLOSING_WAIT: Duration = Duration::from_secs(1);

pub(super) fn accept_loop(listener: &TcpListener, context: &Arc<Context>) {
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        context
            .connections
            .wait_for_closed(Instant::now() + CLOSING_WAIT);
        let accepted = listener.accept();
        if context.stopping() {
            return;
        }
        match accepted {
            Ok((stream, _peer)) => {
                backoff = ACCEPT_BACKOFF_MIN;
                start(context, stream);
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                // Typically out of descriptors: a connection in the eviction order gives one back.
                let freed = context.connections.evict_one();
                if backoff == ACCEPT_BACKOFF_MIN {
                    log::warn!(
                        "accept failed ({err}); closed a waiting connection: {freed}; retrying"
                    );
                }
                thread::sleep(backoff);
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
            }
        }
    }
}

/// Admits `stream` under the cap and starts its thread, or refuses it with 503.
fn start(context: &Arc<Context>, stream: TcpStream) {
    let prepared = stream
        .set_nodelay(true)
        .and_then(|()| stream.set_write_timeout(Some(context.limits.write_timeout)));
    if let Err(err) = prepared {
        log::debug!(
            "dropped a connection that could not be set up: {}",
            err.kind()
        );
        return;
    }
    let stream = Arc::new(stream);
    let Some(ticket) = context.connections.admit(Arc::clone(&stream)) else {
        log::warn!(
            "{} connections open and none idle; refused one with 503",
            context.limits.max_connections
        );
        refuse(&stream);
        return;
    };
    let owned = Arc::clone(context);
    let thread_stream = Arc::clone(&stream);
    let spawned = thread::Builder::new()
        .name("connection".into())
        .spawn(move || connection::serve(&owned, &thread_stream, &ticket));
    if let Err(err) = spawned {
        log::warn!("cannot start a connection thread ({err}); refused with 503");
        refuse(&stream);
    }
}

/// Answers 503 `BUSY` and closes, without ever blocking: a fresh socket's send buffer takes a
/// few hundred bytes at once, and if it does not, the client gets a plain close.
fn refuse(stream: &TcpStream) {
    let bytes = response::format(&HttpError::Busy.reply(), response::Framing::Close);
    if stream.set_nonblocking(true).is_ok() {
        let _ = (&*stream).write_all(&bytes);
    }
}
