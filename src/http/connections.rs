//! The open connections: their count under the cap, what each is doing, and a way to close
//! one from outside its thread.
//!
//! Invariants: a connection is counted from admission until its `Ticket` drops (also when its
//! thread unwinds); closing one from here only shuts its socket down, and its own thread then
//! sees end of file and cleans up; a connection running a handler is never closed from here.

use std::collections::HashMap;
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// What a connection is doing, as far as the cap and shutdown care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first byte of a request since this instant.
    Idle(Instant),
    /// Receiving a request's head or body.
    Reading,
    /// Running a handler or writing its answer.
    Handling,
    /// Shut down from here; its thread is on its way out and it no longer counts.
    Closing,
}

pub struct Connections {
    inner: Mutex<Inner>,
    /// Signalled whenever a connection goes away (shutdown waits on it).
    gone: Condvar,
    max: usize,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, Slot>,
}

struct Slot {
    stream: Arc<TcpStream>,
    phase: Phase,
}

/// A connection's place among the open ones; dropping it frees the place.
pub struct Ticket {
    id: u64,
    connections: Arc<Connections>,
}

impl Connections {
    pub fn new(max: usize) -> Connections {
        Connections {
            inner: Mutex::new(Inner::default()),
            gone: Condvar::new(),
            max,
        }
    }

    /// Counts `stream` among the open connections. At the cap the longest-idle connection
    /// is closed to make room; `None` when every open connection is busy.
    pub fn admit(self: &Arc<Self>, stream: Arc<TcpStream>) -> Option<Ticket> {
        let mut inner = self.lock();
        let counted = inner
            .open
            .values()
            .filter(|slot| slot.phase != Phase::Closing)
            .count();
        if counted >= self.max && !close_longest_idle(&mut inner) {
            return None;
        }
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open.insert(
            id,
            Slot {
                stream,
                phase: Phase::Idle(Instant::now()),
            },
        );
        Some(Ticket {
            id,
            connections: Arc::clone(self),
        })
    }

    /// Closes the connection that has waited longest for a request. False when none waits.
    pub fn close_longest_idle(&self) -> bool {
        close_longest_idle(&mut self.lock())
    }

    /// Shutdown: closes every connection that is not running a handler.
    pub fn close_waiting(&self) {
        let mut inner = self.lock();
        for slot in inner.open.values_mut() {
            if matches!(slot.phase, Phase::Idle(_) | Phase::Reading) {
                close(slot);
            }
        }
    }

    /// Waits until no connection is open, or `deadline`. True when none is.
    pub fn wait_until_empty(&self, deadline: Instant) -> bool {
        let mut inner = self.lock();
        while !inner.open.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            inner = match self.gone.wait_timeout(inner, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// The registry's lock. Nothing here panics while holding it, but a poisoned lock is
    /// still usable: every change is one map operation.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Ticket {
    /// Marks the connection idle from now, unless it already is: the time it became idle is
    /// what decides which connection the cap closes first.
    pub fn set_idle(&self) {
        let mut inner = self.connections.lock();
        if let Some(slot) = inner.open.get_mut(&self.id) {
            if matches!(slot.phase, Phase::Reading | Phase::Handling) {
                slot.phase = Phase::Idle(Instant::now());
            }
        }
    }

    /// Records what the connection does now. A connection closed from outside stays closing.
    pub fn set_phase(&self, phase: Phase) {
        let mut inner = self.connections.lock();
        if let Some(slot) = inner.open.get_mut(&self.id) {
            if slot.phase != Phase::Closing {
                slot.phase = phase;
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        inner.open.remove(&self.id);
        drop(inner);
        self.connections.gone.notify_all();
    }
}

fn close_longest_idle(inner: &mut Inner) -> bool {
    let longest = inner
        .open
        .values_mut()
        .filter_map(|slot| match slot.phase {
            Phase::Idle(since) => Some((since, slot)),
            _ => None,
        })
        .min_by_key(|(since, _)| *since);
    match longest {
        Some((_, slot)) => {
            close(slot);
            true
        }
        None => false,
    }
}

/// Shuts the socket down both ways: the owning thread's blocked read returns end of file.
fn close(slot: &mut Slot) {
    slot.phase = Phase::Closing;
    let _ = slot.stream.shutdown(Shutdown::Both);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::http::connections::{Connections, Phase};

    /// A connected pair: (our end, the peer's end).
    fn pair(listener: &TcpListener) -> (Arc<TcpStream>, TcpStream) {
        let peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, _) = listener.accept().unwrap();
        (Arc::new(ours), peer)
    }

    fn peer_sees_close(mut peer: TcpStream) -> bool {
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        matches!(peer.read(&mut [0u8; 1]), Ok(0))
    }

    /// True when the connection is open and quiet: a read would block.
    fn peer_is_open(peer: &TcpStream) -> bool {
        peer.set_nonblocking(true).unwrap();
        let open = matches!(
            (&*peer).read(&mut [0u8; 1]),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock
        );
        peer.set_nonblocking(false).unwrap();
        open
    }

    #[test]
    fn at_the_cap_the_longest_idle_connection_is_closed_to_admit_a_new_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(2));
        let (oldest, oldest_peer) = pair(&listener);
        let first = connections.admit(oldest).unwrap();
        let (newer, newer_peer) = pair(&listener);
        let second = connections.admit(newer).unwrap();
        second.set_phase(Phase::Idle(Instant::now() + Duration::from_secs(1)));
        let (third, _third_peer) = pair(&listener);
        let _third = connections
            .admit(third)
            .expect("room made by closing the oldest");
        assert!(
            peer_sees_close(oldest_peer),
            "the longest-idle one is closed"
        );
        assert!(peer_is_open(&newer_peer), "the newer one stays open");
        drop((first, second));
    }

    #[test]
    fn at_the_cap_with_every_connection_busy_a_new_one_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(1));
        let (busy, _busy_peer) = pair(&listener);
        let ticket = connections.admit(busy).unwrap();
        ticket.set_phase(Phase::Handling);
        let (new, _new_peer) = pair(&listener);
        assert!(connections.admit(new).is_none());
        drop(ticket);
        let (later, _later_peer) = pair(&listener);
        assert!(
            connections.admit(later).is_some(),
            "a dropped ticket frees its place"
        );
    }

    #[test]
    fn shutdown_closes_waiting_connections_but_not_busy_ones() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(8));
        let (idle, idle_peer) = pair(&listener);
        let _idle = connections.admit(idle).unwrap();
        let (busy, busy_peer) = pair(&listener);
        let busy_ticket = connections.admit(busy).unwrap();
        busy_ticket.set_phase(Phase::Handling);
        connections.close_waiting();
        assert!(peer_sees_close(idle_peer));
        assert!(peer_is_open(&busy_peer), "the busy connection stays open");
        assert!(!connections.wait_until_empty(Instant::now()));
    }
}
