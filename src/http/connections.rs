//! The open connections: their count under the cap, what each is doing, how far it has
//! come, and a way to close one from outside its thread.
//!
//! Eviction order (docs/security.md, "Threat model of the HTTP layer"; docs/ARCHITECTURE.md): when a
//! new connection needs a place, the one closed is the one that made progress least lately.
//! A connection not answered yet (no request of it passed the gate and was read whole) last
//! made progress when it was admitted; an answered one waiting for its next request when it
//! became idle, with a head start (`http::Limits`, 250 ms), so an unanswered connection goes
//! before an answered one unless it was admitted just now and the answered one has been idle
//! for longer than the head start (a fresh client is never the one closed for a flood of
//! answered connections that ask again). After both, an answered connection blocked writing
//! an answer its client does not read for longer than the head start, longest blocked first. A connection reading its next
//! request or running a handler is never closed from here. Connections not yet answered may
//! hold at most `max - reserve` places: the reserve is kept for connections that were
//! answered (and so, when a token is required, presented it).
//!
//! Invariants: a connection is counted from admission until its `Ticket` drops (also when its
//! thread unwinds); closing one from here only shuts its socket down, and its own thread then
//! sees end of file and cleans up; a connection running a handler is never closed from here.

use std::collections::HashMap;
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a connection is doing, as far as the cap and shutdown care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first byte of a request since this instant.
    Idle(Instant),
    /// Receiving a request's head or body.
    Reading,
    /// Running a handler.
    Handling,
    /// Writing an answer that did not fit the socket at once, since this instant.
    Writing(Instant),
    /// Shut down from here; its thread is on its way out and it no longer counts.
    Closing,
}

pub struct Connections {
    inner: Mutex<Inner>,
    /// Signalled whenever a connection goes away (shutdown waits on it).
    gone: Condvar,
    max: usize,
    /// Places only answered connections may take.
    reserve: usize,
    /// How much more recent an answered connection's progress counts (`http::Limits`).
    head_start: Duration,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, Slot>,
}

struct Slot {
    stream: Arc<TcpStream>,
    phase: Phase,
    admitted: Instant,
    /// A request of it passed the gate, was read whole and handled: its answer is on its way.
    answered: bool,
}

impl Slot {
    /// Where the slot stands in the eviction order (lowest first); `None` when it may not
    /// be closed from here.
    /// A writer counts only once it has been blocked for the head start: an answer that
    /// fits the socket at once is written and gone long before.
    fn eviction_rank(&self, now: Instant, head_start: Duration) -> Option<(u8, Instant)> {
        match (self.answered, self.phase) {
            (_, Phase::Handling | Phase::Closing) => None,
            (false, _) => Some((0, self.admitted)),
            (true, Phase::Idle(since)) => Some((0, since + head_start)),
            (true, Phase::Writing(since)) if now.saturating_duration_since(since) >= head_start => {
                Some((1, since))
            }
            (true, Phase::Writing(_) | Phase::Reading) => None,
        }
    }
}

/// A connection's place among the open ones; dropping it frees the place.
pub struct Ticket {
    id: u64,
    connections: Arc<Connections>,
}

impl Connections {
    /// `max` places, `reserve` of them for answered connections; an answered connection's
    /// progress counts `head_start` more recent than it is.
    pub fn new(max: usize, reserve: usize, head_start: Duration) -> Connections {
        Connections {
            inner: Mutex::new(Inner::default()),
            gone: Condvar::new(),
            max,
            reserve: reserve.min(max.saturating_sub(1)),
            head_start,
        }
    }

    /// Counts `stream` among the open connections. When connections not yet answered hold
    /// all the places outside the reserve, the oldest of them is closed; at the cap, the
    /// first in the eviction order is. `None` when no place can be made.
    pub fn admit(self: &Arc<Self>, stream: Arc<TcpStream>) -> Option<Ticket> {
        let mut inner = self.lock();
        let (counted, unanswered) = inner.counts();
        let made_room = if unanswered >= self.max - self.reserve {
            evict(&mut inner, self.head_start, |slot| !slot.answered)
        } else {
            counted < self.max || evict(&mut inner, self.head_start, |_| true)
        };
        if !made_room {
            return None;
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let now = Instant::now();
        inner.open.insert(
            id,
            Slot {
                stream,
                phase: Phase::Idle(now),
                admitted: now,
                answered: false,
            },
        );
        Some(Ticket {
            id,
            connections: Arc::clone(self),
        })
    }

    /// Waits (until `deadline` at most) while the cap is reached and connections closed from
    /// here still hold their descriptors: their threads give them back within moments, and
    /// accepting before that could run the process out of descriptors.
    pub fn wait_for_closed(&self, deadline: Instant) {
        let mut inner = self.lock();
        while inner.open.len() >= self.max
            && inner.open.values().any(|slot| slot.phase == Phase::Closing)
        {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            inner = match self.gone.wait_timeout(inner, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Closes the first connection in the eviction order (to give a descriptor back).
    /// False when none may be closed.
    pub fn evict_one(&self) -> bool {
        evict(&mut self.lock(), self.head_start, |_| true)
    }

    /// Shutdown: closes every connection that is not running a handler.
    pub fn close_waiting(&self) {
        let mut inner = self.lock();
        for slot in inner.open.values_mut() {
            if matches!(
                slot.phase,
                Phase::Idle(_) | Phase::Reading | Phase::Writing(_)
            ) {
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

impl Inner {
    /// Connections counted under the cap, and how many of them are not answered yet.
    fn counts(&self) -> (usize, usize) {
        self.open
            .values()
            .filter(|slot| slot.phase != Phase::Closing)
            .fold((0, 0), |(all, unanswered), slot| {
                (all + 1, unanswered + usize::from(!slot.answered))
            })
    }
}

impl Ticket {
    /// Marks the connection idle from now, unless it already is: the time it became idle is
    /// what decides which answered connection the cap closes first.
    pub fn set_idle(&self) {
        self.update(|slot| {
            if !matches!(slot.phase, Phase::Idle(_) | Phase::Closing) {
                slot.phase = Phase::Idle(Instant::now());
            }
        });
    }

    /// Records what the connection does now. A connection closed from outside stays closing.
    pub fn set_phase(&self, phase: Phase) {
        self.update(|slot| {
            if slot.phase != Phase::Closing {
                slot.phase = phase;
            }
        });
    }

    /// Records that a request that passed the gate was read whole and handled: from now on
    /// the connection is closed for a new one only after every unanswered one.
    pub fn set_answered(&self) {
        self.update(|slot| slot.answered = true);
    }

    fn update(&self, change: impl FnOnce(&mut Slot)) {
        let mut inner = self.connections.lock();
        if let Some(slot) = inner.open.get_mut(&self.id) {
            change(slot);
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

/// Closes the first connection in the eviction order among those `eligible`. False when
/// none may be closed.
fn evict(inner: &mut Inner, head_start: Duration, eligible: impl Fn(&Slot) -> bool) -> bool {
    let now = Instant::now();
    let first = inner
        .open
        .values_mut()
        .filter(|slot| eligible(slot))
        .filter_map(|slot| slot.eviction_rank(now, head_start).map(|rank| (rank, slot)))
        .min_by_key(|(rank, _)| *rank);
    match first {
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

    const HEAD_START: Duration = Duration::from_millis(250);

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
    fn at_the_cap_the_oldest_unanswered_connection_is_closed_before_an_answered_idle_one() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(3, 0, HEAD_START));
        let (app, app_peer) = pair(&listener);
        let app = connections.admit(app).unwrap();
        app.set_answered();
        let (oldest, oldest_peer) = pair(&listener);
        let first = connections.admit(oldest).unwrap();
        first.set_phase(Phase::Reading);
        let (newer, newer_peer) = pair(&listener);
        let second = connections.admit(newer).unwrap();
        let (third, _third_peer) = pair(&listener);
        let _third = connections.admit(third).expect("room made");
        assert!(peer_sees_close(oldest_peer), "the oldest unanswered one");
        assert!(peer_is_open(&newer_peer), "a newer unanswered one stays");
        assert!(peer_is_open(&app_peer), "the answered one stays");
        drop((app, first, second));
    }

    #[test]
    fn answered_connections_are_closed_idle_first_then_blocked_writers_never_readers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(3, 0, HEAD_START));
        let admit_answered = |phase: Phase| {
            let (ours, peer) = pair(&listener);
            let ticket = connections.admit(ours).unwrap();
            ticket.set_answered();
            ticket.set_phase(phase);
            (ticket, peer)
        };
        let later = Instant::now() + Duration::from_secs(1);
        let (reader, reader_peer) = admit_answered(Phase::Reading);
        let blocked_since = Instant::now().checked_sub(Duration::from_secs(2)).unwrap();
        let (writer, writer_peer) = admit_answered(Phase::Writing(blocked_since));
        let (idle, idle_peer) = admit_answered(Phase::Idle(later));
        let (first, _first_peer) = pair(&listener);
        let first = connections.admit(first).unwrap();
        first.set_phase(Phase::Handling);
        assert!(peer_sees_close(idle_peer), "the idle one goes first");
        assert!(peer_is_open(&writer_peer));
        let (second, _second_peer) = pair(&listener);
        let second = connections.admit(second).unwrap();
        second.set_phase(Phase::Handling);
        assert!(peer_sees_close(writer_peer), "then the blocked writer");
        assert!(peer_is_open(&reader_peer));
        let (third, _third_peer) = pair(&listener);
        assert!(connections.admit(third).is_none(), "never a reader");
        drop((reader, writer, idle, first, second));
    }

    #[test]
    fn a_connection_admitted_just_now_is_kept_before_an_answered_one_idle_past_the_head_start() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(2, 0, HEAD_START));
        let (answered, answered_peer) = pair(&listener);
        let answered = connections.admit(answered).unwrap();
        answered.set_answered();
        let long_ago = Instant::now().checked_sub(Duration::from_secs(2)).unwrap();
        answered.set_phase(Phase::Idle(long_ago));
        let (fresh, fresh_peer) = pair(&listener);
        let fresh = connections.admit(fresh).unwrap();
        let (newer, _newer_peer) = pair(&listener);
        let _newer = connections.admit(newer).unwrap();
        assert!(
            peer_sees_close(answered_peer),
            "idle for longer than the head start"
        );
        assert!(peer_is_open(&fresh_peer), "the fresh one is kept");
        drop(fresh);
    }

    #[test]
    fn unanswered_connections_never_take_the_reserve() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(4, 1, HEAD_START));
        let mut peers = Vec::new();
        let mut tickets = Vec::new();
        for _ in 0..3 {
            let (ours, peer) = pair(&listener);
            tickets.push(connections.admit(ours).unwrap());
            peers.push(peer);
        }
        let (fourth, _fourth_peer) = pair(&listener);
        tickets.push(connections.admit(fourth).unwrap());
        assert!(
            peer_sees_close(peers.remove(0)),
            "below the cap, yet the oldest unanswered one made room"
        );
        tickets[1].set_answered();
        let (fifth, _fifth_peer) = pair(&listener);
        tickets.push(connections.admit(fifth).unwrap());
        assert!(
            peer_is_open(&peers[1]),
            "three unanswered fit beside an answered one"
        );
        let (sixth, _sixth_peer) = pair(&listener);
        tickets.push(connections.admit(sixth).unwrap());
        assert!(peer_is_open(&peers[0]), "the answered one is kept");
        assert!(peer_sees_close(peers.remove(1)), "an unanswered one went");
    }

    #[test]
    fn at_the_cap_with_every_connection_busy_a_new_one_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connections = Arc::new(Connections::new(1, 0, HEAD_START));
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
        let connections = Arc::new(Connections::new(8, 0, HEAD_START));
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
