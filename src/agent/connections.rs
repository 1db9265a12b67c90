//! The agent's open connections under their cap, whether each is answering a request, and
//! closing the longest-idle one to make room for a new client (docs/agent.md "SSH agent").
//!
//! Invariants: a connection is counted from admission until its `Ticket` drops (also when
//! its thread unwinds) or it is closed from here; a connection answering a request (a
//! pending approval included) is never closed from here; closing one only shuts its socket
//! down, its own thread then sees end of file and ends; a connection closed from here
//! answers no further request (`Ticket::begin` says so under the same lock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Shuts a connection's socket down from outside its thread.
pub type Closer = Box<dyn Fn() + Send>;

pub struct Connections {
    inner: Mutex<Inner>,
    max: usize,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// Counts the moments connections fall idle: a smaller number is idle longer (a
    /// counter, not a clock, so two never tie).
    next_tick: u64,
    open: HashMap<u64, Open>,
}

impl Inner {
    fn tick(&mut self) -> u64 {
        self.next_tick = self.next_tick.wrapping_add(1);
        self.next_tick
    }
}

struct Open {
    close: Closer,
    /// `None` while it answers a request; else the tick it fell idle at.
    idle_since: Option<u64>,
}

/// A connection's place among the open ones; dropping it frees the place.
pub struct Ticket {
    id: u64,
    connections: Arc<Connections>,
}

/// What `Connections::admit` did.
pub enum Admitted {
    /// Under the cap.
    Room(Ticket),
    /// At the cap: the longest-idle connection was closed for this one.
    Evicted(Ticket),
    /// At the cap and every connection is answering a request: the new one is refused.
    Full,
}

impl Connections {
    pub fn new(max: usize) -> Connections {
        Connections {
            inner: Mutex::new(Inner::default()),
            max,
        }
    }

    /// Counts a new connection, which `close` shuts down. At the cap the connection idle
    /// the longest (answering no request) is closed to make room.
    pub fn admit(self: &Arc<Self>, close: Closer) -> Admitted {
        let mut inner = self.lock();
        let evicted = inner.open.len() >= self.max;
        if evicted {
            let longest_idle = inner
                .open
                .iter()
                .filter_map(|(id, open)| Some((*id, open.idle_since?)))
                .min_by_key(|(_, since)| *since)
                .map(|(id, _)| id);
            let Some(victim) = longest_idle.and_then(|id| inner.open.remove(&id)) else {
                return Admitted::Full;
            };
            (victim.close)();
        }
        let id = inner.next_id;
        inner.next_id = inner.next_id.wrapping_add(1);
        let idle_since = Some(inner.tick());
        inner.open.insert(id, Open { close, idle_since });
        let ticket = Ticket {
            id,
            connections: Arc::clone(self),
        };
        match evicted {
            true => Admitted::Evicted(ticket),
            false => Admitted::Room(ticket),
        }
    }

    /// How many connections are counted.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.lock().open.len()
    }

    /// The state, recovering from a poisoned lock: each change is one statement.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Ticket {
    /// The connection's number, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The connection starts answering a request: it cannot be closed from here until
    /// `end`. False when it was closed from here already (then it answers nothing more).
    pub fn begin(&self) -> bool {
        let mut inner = self.connections.lock();
        match inner.open.get_mut(&self.id) {
            Some(open) => {
                open.idle_since = None;
                true
            }
            None => false,
        }
    }

    /// The request is answered: the connection is idle from now.
    pub fn end(&self) {
        let mut inner = self.connections.lock();
        let tick = inner.tick();
        if let Some(open) = inner.open.get_mut(&self.id) {
            open.idle_since = Some(tick);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.connections.lock().open.remove(&self.id);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use crate::agent::connections::{Admitted, Closer, Connections, Ticket};

    /// A closer that records that it ran.
    fn closer() -> (Closer, Arc<AtomicBool>) {
        let closed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&closed);
        (Box::new(move || flag.store(true, Ordering::SeqCst)), closed)
    }

    fn admitted(outcome: Admitted) -> Ticket {
        match outcome {
            Admitted::Room(ticket) | Admitted::Evicted(ticket) => ticket,
            Admitted::Full => panic!("refused"),
        }
    }

    #[test]
    fn at_the_cap_the_longest_idle_connection_is_closed_for_the_new_one() {
        let connections = Arc::new(Connections::new(3));
        let mut open = Vec::new();
        for _ in 0..3 {
            let (close, closed) = closer();
            let ticket = admitted(connections.admit(close));
            assert!(ticket.begin());
            open.push((ticket, closed));
        }
        // Idle in the order 1, 0, 2: connection 1 has been idle the longest.
        open[1].0.end();
        open[0].0.end();
        open[2].0.end();
        let (close, _) = closer();
        assert!(matches!(connections.admit(close), Admitted::Evicted(_)));
        let closed: Vec<bool> = open.iter().map(|(_, c)| c.load(Ordering::SeqCst)).collect();
        assert_eq!(closed, [false, true, false]);
        assert!(
            !open[1].0.begin(),
            "a closed connection answers nothing more"
        );
        assert!(open[0].0.begin());
    }

    #[test]
    fn a_connection_answering_a_request_is_never_closed_and_all_busy_refuses_the_new_one() {
        let connections = Arc::new(Connections::new(2));
        let (close, first_closed) = closer();
        let first = admitted(connections.admit(close));
        let (close, second_closed) = closer();
        let second = admitted(connections.admit(close));
        assert!(first.begin());
        // The first is older but busy (a pending approval): the second goes.
        let (close, _) = closer();
        let third = admitted(connections.admit(close));
        assert!(!first_closed.load(Ordering::SeqCst));
        assert!(second_closed.load(Ordering::SeqCst));
        drop(second);
        assert!(third.begin());
        let (close, _) = closer();
        assert!(matches!(connections.admit(close), Admitted::Full));
        assert_eq!(connections.count(), 2);
        drop((first, third));
        assert_eq!(connections.count(), 0);
    }
}
