//! One agent client connection: reads length-framed messages under their limits, answers
//! each in turn, and closes on the first malformed one.
//!
//! Invariants: platform-neutral (the socket comes in as a `Link`); a message body is read
//! into a buffer wiped on drop, because it may carry a private key or a password; once a
//! length has arrived, the rest of the message must arrive within the message timeout, so
//! a half-sent message holds its thread for a bounded time only; a message is answered only
//! while the connection is marked busy in `connections`, so it is never closed from outside
//! mid-answer.

use std::io::{self, Read, Write};
use std::sync::Weak;
use std::time::Duration;

use zeroize::Zeroizing;

use crate::agent::connections::Ticket;
use crate::agent::proto;
use crate::agent::respond::{self, Session};
use crate::state::AppState;

/// A client connection: bytes both ways, and a bound on how long a read may wait.
pub trait Link: Read + Write {
    /// Bounds every following read to `timeout`; `None` waits without a bound.
    fn limit_reads(&self, timeout: Option<Duration>) -> io::Result<()>;
}

/// Serves `link` until the client closes it, sends a malformed or oversized message, or
/// stops in the middle of one for longer than `message_timeout`, or the service stops.
/// The state is held only while a message is answered. `ticket` is the connection's place
/// among the open ones.
pub fn serve(
    state: &Weak<AppState>,
    mut link: impl Link,
    message_timeout: Duration,
    ticket: &Ticket,
) {
    let mut session = Session::new(ticket.id());
    loop {
        let Some(message) = read_message(&mut link, message_timeout) else {
            return;
        };
        let request = match proto::parse(&message) {
            Ok(request) => request,
            Err(why) => {
                log::warn!("agent: closed a connection after a malformed message: {why:?}");
                return;
            }
        };
        // Closed to make room for a new client while the message arrived: not answered.
        if !ticket.begin() {
            return;
        }
        let Some(state) = state.upgrade() else {
            return;
        };
        let reply = respond::respond(&state, &mut session, request);
        drop(state);
        if link.write_all(&reply).and_then(|()| link.flush()).is_err() {
            return;
        }
        ticket.end();
    }
}

/// The next message's body: its length header waited for without a bound, the rest within
/// `message_timeout`. `None` (logged when the client misbehaved) closes the connection.
fn read_message(link: &mut impl Link, message_timeout: Duration) -> Option<Zeroizing<Vec<u8>>> {
    // Between messages a client may stay quiet as long as it likes: `ssh -A` keeps a
    // forwarded connection open for its whole session.
    link.limit_reads(None).ok()?;
    let mut header = [0u8; 4];
    link.read_exact(&mut header).ok()?;
    let length = match proto::frame_length(header) {
        Ok(length) => length,
        Err(why) => {
            log::warn!(
                "agent: closed a connection: {why:?} (at most {} bytes)",
                proto::MAX_MESSAGE_BYTES
            );
            return None;
        }
    };
    link.limit_reads(Some(message_timeout)).ok()?;
    let mut message = Zeroizing::new(vec![0u8; length]);
    if let Err(err) = link.read_exact(&mut message) {
        log::warn!(
            "agent: closed a connection whose message stopped arriving ({})",
            err.kind()
        );
        return None;
    }
    Some(message)
}
