//! Places for slow work (`Slots`) and the gate wrong master-password answers leave through
//! (`AnswerGate`): the two queues that keep capped work and guesses fair (docs/security.md,
//! "The vault's threat model").
//!
//! Invariants: a `Slot` is given back when it drops, also when a panic unwinds; each mutex
//! here is held only to count and is a leaf (nothing else is locked while it is held, and no
//! slow work runs under it); `take` and `pass` are never refused and nobody waits for ever:
//! `take` serves in arrival order, or for `alternating` places the newest with every
//! `OLDEST_EVERY`-th turn the oldest's; `pass` lets answers out in arrival order.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A fixed number of places for one kind of slow work. `try_take` refuses beyond them;
/// `take` waits its turn: first come first served, or for `alternating` places mostly the
/// newest waiter and every `OLDEST_EVERY`-th turn the oldest (so a newcomer does not wait
/// behind everyone, and the oldest still move on: nobody waits forever).
pub struct Slots {
    cap: usize,
    /// Turns alternate between the newest and the oldest waiter (else oldest first).
    alternating: bool,
    queue: Mutex<Queue>,
    /// Signalled whenever a place frees up or the head of the queue moves on.
    changed: Condvar,
}

/// One place of a `Slots`, held until dropped.
#[must_use = "the place is given back as soon as the slot drops"]
pub struct Slot<'a>(&'a Slots);

/// Wrong-password answers, let out one at a time in arrival order, each at least `spacing`
/// after the previous one. Waiting holds only the waiter's own thread (its connection's).
#[derive(Default)]
pub struct AnswerGate {
    queue: Mutex<GateQueue>,
    changed: Condvar,
}

#[derive(Default)]
struct GateQueue {
    next_ticket: u64,
    serving: u64,
    /// When the next answer may go.
    next_release: Option<Instant>,
}

impl AnswerGate {
    /// Waits for this answer's turn and its time, then lets it go.
    pub fn pass(&self, spacing: Duration) {
        let mut queue = self.queue();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        loop {
            let now = Instant::now();
            let wait = match queue.next_release {
                _ if queue.serving != ticket => None,
                Some(at) if at > now => Some(at - now),
                _ => break,
            };
            queue = match wait {
                None => self
                    .changed
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
                Some(wait) => {
                    self.changed
                        .wait_timeout(queue, wait)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
            };
        }
        queue.serving += 1;
        queue.next_release = Some(Instant::now() + spacing);
        drop(queue);
        self.changed.notify_all();
    }

    /// Answers that came to the gate so far, let out or not (tests).
    #[cfg(test)]
    fn arrived(&self) -> u64 {
        self.queue().next_ticket
    }

    /// Answers waiting for their turn (tests).
    #[cfg(test)]
    fn waiting(&self) -> u64 {
        let queue = self.queue();
        queue.next_ticket - queue.serving
    }

    fn queue(&self) -> MutexGuard<'_, GateQueue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[derive(Default)]
struct Queue {
    running: usize,
    /// The ticket the next waiter draws.
    next_ticket: u64,
    /// The waiters' tickets, oldest first.
    waiting: VecDeque<u64>,
    /// Turns given so far (alternating places count them to pick newest or oldest).
    turns: u64,
}

/// For alternating places, every `OLDEST_EVERY`-th turn goes to the oldest waiter and the
/// others to the newest: newcomers go first (faster than the answer gate lets guesses come
/// back, so repeated guesses cannot bury a newcomer), and the oldest still move on.
pub const OLDEST_EVERY: u64 = 4;

impl Queue {
    /// The ticket whose turn comes when a place is free.
    fn next_turn(&self, alternating: bool) -> Option<u64> {
        match alternating && self.turns % OLDEST_EVERY != OLDEST_EVERY - 1 {
            true => self.waiting.back().copied(),
            false => self.waiting.front().copied(),
        }
    }
}

impl Slots {
    pub fn new(cap: usize) -> Slots {
        Slots {
            cap,
            alternating: false,
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    }

    /// Places whose `take` turns go to the newest waiter, every `OLDEST_EVERY`-th to the
    /// oldest.
    pub fn alternating(cap: usize) -> Slots {
        Slots {
            alternating: true,
            ..Slots::new(cap)
        }
    }

    /// A place now, or `None` when every place is taken or others are waiting for one.
    pub fn try_take(&self) -> Option<Slot<'_>> {
        self.admit().then(|| Slot(self))
    }

    /// A place, waiting for one when all are taken (in arrival order, or newest first with
    /// every `OLDEST_EVERY`-th turn the oldest's for `alternating` places). Never refused.
    pub fn take(&self) -> Slot<'_> {
        let mut queue = self.queue();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push_back(ticket);
        while queue.next_turn(self.alternating) != Some(ticket) || queue.running >= self.cap {
            queue = self
                .changed
                .wait(queue)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        queue.waiting.retain(|waiting| *waiting != ticket);
        queue.turns += 1;
        queue.running += 1;
        // The next ticket may go too, if a place is still free.
        self.changed.notify_all();
        Slot(self)
    }

    /// Places taken now.
    #[cfg(test)]
    pub fn running(&self) -> usize {
        self.queue().running
    }

    /// Counts one more place taken, unless every place is taken or others wait for one.
    fn admit(&self) -> bool {
        let mut queue = self.queue();
        if queue.running >= self.cap || !queue.waiting.is_empty() {
            return false;
        }
        queue.running += 1;
        true
    }

    fn give_back(&self) {
        let mut queue = self.queue();
        queue.running -= 1;
        drop(queue);
        self.changed.notify_all();
    }

    /// The counters, recovering from a poisoned lock: they are only ever changed by whole
    /// statements that cannot panic half-way.
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::{Duration, Instant};

    use crate::session::slots::{AnswerGate, Slots, OLDEST_EVERY};

    #[test]
    fn try_take_beyond_the_cap_is_refused_until_a_place_is_given_back() {
        let slots = Slots::new(2);
        let first = slots.try_take().unwrap();
        let second = slots.try_take().unwrap();
        assert!(slots.try_take().is_none());
        assert_eq!(slots.running(), 2);
        drop(first);
        assert!(slots.try_take().is_some());
        drop(second);
        assert_eq!(slots.running(), 0);
    }

    /// Polls until `waiting` threads wait in `slots`' queue, or fails after a minute.
    fn wait_for_queue(slots: &Slots, waiting: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let queue = slots.queue();
            if queue.waiting.len() as u64 == waiting {
                return;
            }
            drop(queue);
            assert!(Instant::now() < deadline, "{waiting} waiters never queued");
            thread::yield_now();
        }
    }

    #[test]
    fn take_waits_for_a_place_and_serves_waiters_in_arrival_order() {
        let slots = Arc::new(Slots::new(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = slots.try_take().unwrap();
        let waiters: Vec<_> = ["first", "second", "third"]
            .into_iter()
            .enumerate()
            .map(|(queued, name)| {
                let (shared, order) = (Arc::clone(&slots), Arc::clone(&order));
                let waiter = thread::spawn(move || {
                    let _place = shared.take();
                    order.lock().unwrap().push(name);
                });
                wait_for_queue(&slots, queued as u64 + 1);
                waiter
            })
            .collect();
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody got the held place"
        );
        assert!(slots.try_take().is_none(), "no jumping the queue");
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["first", "second", "third"]);
        assert_eq!(slots.running(), 0);
    }

    #[test]
    fn an_attempt_behind_twenty_waiting_guesses_gets_the_next_password_turn_and_the_oldest_move_on()
    {
        const GUESSERS: u64 = 20;
        let slots = Arc::new(Slots::alternating(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = slots.try_take().unwrap();
        let mut waiters = Vec::new();
        for guess in 0..=GUESSERS {
            let (shared, order) = (Arc::clone(&slots), Arc::clone(&order));
            let name = match guess == GUESSERS {
                true => "right".to_owned(),
                false => format!("guess {guess}"),
            };
            waiters.push(thread::spawn(move || {
                let _place = shared.take();
                order.lock().unwrap().push(name);
            }));
            wait_for_queue(&slots, guess + 1);
        }
        drop(held);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        let order = order.lock().unwrap();
        let right = order.iter().position(|name| name == "right").unwrap();
        assert_eq!(
            right, 0,
            "the newest attempt waited behind {right}: {order:?}"
        );
        // The oldest guesses still move on: every OLDEST_EVERY-th turn is theirs, in
        // arrival order.
        let oldest_turns = (OLDEST_EVERY - 1..=GUESSERS).step_by(OLDEST_EVERY as usize);
        for (n, turn) in oldest_turns.enumerate() {
            assert_eq!(order[turn as usize], format!("guess {n}"), "{order:?}");
        }
        assert_eq!(order.len() as u64, GUESSERS + 1);
    }

    #[test]
    fn wrong_answers_leave_the_gate_one_at_a_time_in_arrival_order() {
        let gate = Arc::new(AnswerGate::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        // The first answer goes at once and holds the next ones back for its spacing.
        gate.pass(Duration::from_millis(200));
        let waiters: Vec<_> = (0..3u64)
            .map(|n| {
                let (shared, order) = (Arc::clone(&gate), Arc::clone(&order));
                let waiter = thread::spawn(move || {
                    shared.pass(Duration::from_millis(1));
                    order.lock().unwrap().push(n);
                });
                let deadline = Instant::now() + Duration::from_secs(60);
                while gate.arrived() != n + 2 {
                    assert!(Instant::now() < deadline, "answer {n} never queued");
                    thread::yield_now();
                }
                waiter
            })
            .collect();
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert_eq!(gate.waiting(), 0);
    }
}
