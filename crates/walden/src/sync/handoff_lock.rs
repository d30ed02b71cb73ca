//! A mutex that hands itself to a waiting priority locker: the write lock,
//! which the background writer gets at the next release however many
//! evictions want it (PostgreSQL: `WALWriteLock`; seed 002's "the walwriter
//! never succeeds taking the lwlock").
//!
//! Seed 002 found the walwriter starved: backends that evict buffers
//! release `WALWriteLock` and take it again before the woken walwriter
//! runs, because an LWLock (like `std`'s mutex) lets a running thread barge
//! in ahead of a sleeping waiter. The background writer then writes nothing
//! and every page goes out in an eviction's small write.
//!
//! Why a gate for one class rather than a ticket or queue lock: only the
//! background writer has to be let through, and the lock is taken once per
//! `pwrite` (microseconds to milliseconds), so a FIFO hand-off between the
//! evictions and the flushes would only add wake-ups where the running
//! thread taking the lock again is the cheapest order. So ordinary lockers
//! (evictions, flush leaders) barge as before, but not past a waiting
//! priority locker: once one has registered, no ordinary locker takes the
//! lock until a priority locker has had it, and every release wakes a
//! priority waiter first. The bound is therefore zero evictions: the
//! background writer gets the lock at the next release after it asks.
//!
//! With `fair = false` (`Config::write_lock_handoff = false`) ordinary
//! lockers ignore the gate: any waiter, the background writer included, may
//! be passed by any number of newcomers, which is the plain mutex this
//! replaced. In both modes the lock counts the ordinary acquisitions made
//! while a priority locker waited ([`HandoffGuard::overtaken`] tells the
//! priority locker how many it suffered), so the difference is measured.
//!
//! The state is a small mutex-protected record with two condition
//! variables, not atomics: the lock is held for a `pwrite`, so its own cost
//! does not matter, and every decision is taken under that one mutex (no
//! ordering to argue). The data sits in a second mutex that only the
//! holder of the lock locks, so it is never contended. A panic while
//! holding the lock releases it (the guard's drop), and a poisoned mutex is
//! recovered: the writer keeps its state consistent on every error path.

use super::mutant::{self, Mutant};
use super::{Condvar, Mutex, MutexGuard};

/// Who holds or waits for the lock.
#[derive(Debug, Default)]
struct State {
    /// The lock is held.
    held: bool,
    /// Priority lockers waiting (registered, not yet holding).
    priority_waiting: u32,
    /// Ordinary lockers waiting.
    ordinary_waiting: u32,
    /// Ordinary acquisitions while a priority locker waited, since the
    /// last priority acquisition.
    overtaken: u64,
}

/// A mutex whose priority lockers are not passed by ordinary ones (see the
/// module docs).
#[derive(Debug)]
pub struct HandoffLock<T> {
    state: Mutex<State>,
    /// Where priority lockers wait (with `fair`).
    to_priority: Condvar,
    /// Where ordinary lockers wait (and, without `fair`, priority ones).
    to_anyone: Condvar,
    data: Mutex<T>,
    fair: bool,
}

/// Access to the data; releases the lock when dropped.
#[derive(Debug)]
pub struct HandoffGuard<'a, T> {
    // Declared first, so dropped first: the data's mutex is unlocked before
    // the lock is handed on.
    data: MutexGuard<'a, T>,
    _held: Held<'a, T>,
    overtaken: u64,
}

/// Releases the lock on drop.
#[derive(Debug)]
struct Held<'a, T> {
    lock: &'a HandoffLock<T>,
}

/// Locks `m`, recovering it if a holder panicked.
fn recover<U>(m: &Mutex<U>) -> MutexGuard<'_, U> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> HandoffLock<T> {
    /// A lock around `data`; with `fair`, ordinary lockers never pass a
    /// waiting priority locker.
    pub fn new(data: T, fair: bool) -> Self {
        HandoffLock {
            state: Mutex::new(State::default()),
            to_priority: Condvar::new(),
            to_anyone: Condvar::new(),
            data: Mutex::new(data),
            fair,
        }
    }

    /// Takes the lock as an ordinary locker: as soon as it is free and,
    /// with `fair`, no priority locker waits.
    pub fn lock(&self) -> HandoffGuard<'_, T> {
        let mut s = recover(&self.state);
        // The mutant: ordinary lockers ignore the gate even when fair.
        let gated = self.fair && !mutant::active(Mutant::HandoffGateSkipped);
        s.ordinary_waiting += 1;
        while s.held || (gated && s.priority_waiting > 0) {
            s = self.to_anyone.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.ordinary_waiting -= 1;
        s.held = true;
        if s.priority_waiting > 0 {
            s.overtaken += 1;
        }
        drop(s);
        self.guard(0)
    }

    /// Takes the lock as a priority locker: at the next release with
    /// `fair`; as any waiter without. The guard tells how many ordinary
    /// acquisitions passed it while it waited.
    pub fn lock_priority(&self) -> HandoffGuard<'_, T> {
        let mut s = recover(&self.state);
        s.priority_waiting += 1;
        let queue = if self.fair {
            &self.to_priority
        } else {
            &self.to_anyone
        };
        while s.held {
            s = queue.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.priority_waiting -= 1;
        s.held = true;
        let overtaken = std::mem::take(&mut s.overtaken);
        drop(s);
        self.guard(overtaken)
    }

    fn guard(&self, overtaken: u64) -> HandoffGuard<'_, T> {
        HandoffGuard {
            data: recover(&self.data),
            _held: Held { lock: self },
            overtaken,
        }
    }

    /// Releases the lock: to a waiting priority locker if `fair` and there
    /// is one, else to any waiter.
    fn release(&self) {
        let mut s = recover(&self.state);
        s.held = false;
        let priority = self.fair && s.priority_waiting > 0;
        let anyone = s.ordinary_waiting > 0 || (!self.fair && s.priority_waiting > 0);
        drop(s);
        if priority {
            self.to_priority.notify_one();
        } else if anyone {
            self.to_anyone.notify_one();
        }
    }

    /// Priority and ordinary lockers waiting now (for tests that queue
    /// lockers before releasing).
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> (u32, u32) {
        let s = recover(&self.state);
        (s.priority_waiting, s.ordinary_waiting)
    }
}

impl<T> HandoffGuard<'_, T> {
    /// Ordinary acquisitions made while this priority locker waited (0 for
    /// an ordinary locker).
    pub fn overtaken(&self) -> u64 {
        self.overtaken
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.lock.release();
    }
}

impl<T> std::ops::Deref for HandoffGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.data
    }
}

impl<T> std::ops::DerefMut for HandoffGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.data
    }
}

#[cfg(all(test, loom))]
#[path = "handoff_lock/loom_model.rs"]
mod loom_model;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering as O};
    use std::sync::Arc;

    /// Spins (yielding) until `cond`: waiting on an observable state, not a
    /// time.
    fn until(cond: impl Fn() -> bool) {
        while !cond() {
            std::thread::yield_now();
        }
    }

    /// The evicting backend of seed 002: it releases the lock and takes it
    /// again at once. With the hand-off its second `lock` returns only after
    /// the waiting priority locker has had the lock.
    #[test]
    fn a_releaser_taking_the_lock_again_waits_for_the_priority_waiter() {
        let lock = Arc::new(HandoffLock::new(0u32, true));
        let took = Arc::new(AtomicBool::new(false));
        let mut g = lock.lock();
        let (l2, t2) = (lock.clone(), took.clone());
        let priority = std::thread::spawn(move || {
            let mut g = l2.lock_priority();
            *g += 1;
            // SeqCst: a test flag read by the other thread after its lock.
            t2.store(true, O::SeqCst);
            g.overtaken()
        });
        until(|| lock.waiting().0 == 1);
        *g += 1;
        drop(g);
        let g = lock.lock();
        assert!(
            took.load(O::SeqCst),
            "re-took the lock before the priority waiter"
        );
        drop(g);
        assert_eq!(
            priority.join().unwrap(),
            0,
            "nobody passed the priority waiter"
        );
        assert_eq!(*lock.lock(), 2);
    }

    /// The storm: a holder, a priority waiter queued behind it, then three
    /// ordinary lockers queued too, each taking the lock 100 times. Returns
    /// how many acquisitions the priority waiter says passed it, and how
    /// many came before it in the lock's order.
    fn storm(fair: bool) -> (u64, usize) {
        let lock = Arc::new(HandoffLock::new(Vec::new(), fair));
        let g = lock.lock();
        let l2 = lock.clone();
        let priority = std::thread::spawn(move || {
            let mut g = l2.lock_priority();
            g.push(u32::MAX);
            g.overtaken()
        });
        until(|| lock.waiting().0 == 1);
        let ordinary: Vec<_> = (0..3)
            .map(|i| {
                let l = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        l.lock().push(i);
                    }
                })
            })
            .collect();
        until(|| lock.waiting().1 == 3);
        drop(g);
        let overtaken = priority.join().unwrap();
        for t in ordinary {
            t.join().unwrap();
        }
        let order = lock.lock();
        assert_eq!(order.len(), 301, "no acquisition lost");
        assert_eq!(lock.waiting(), (0, 0));
        let before = order.iter().position(|&i| i == u32::MAX);
        (overtaken, before.unwrap_or(usize::MAX))
    }

    /// With the hand-off, ordinary lockers queued and looping behind the
    /// holder: none passes the priority waiter. Without it, the count it
    /// is told is exactly how many did.
    #[test]
    fn queued_ordinary_lockers_pass_the_priority_waiter_only_without_the_hand_off() {
        assert_eq!(storm(true), (0, 0));
        let (overtaken, before) = storm(false);
        assert_eq!(overtaken as usize, before);
    }

    /// A holder that panics releases the lock.
    #[test]
    fn a_panicking_holder_releases_the_lock() {
        let lock = Arc::new(HandoffLock::new(1u8, true));
        let l2 = lock.clone();
        let r = std::thread::spawn(move || {
            let _g = l2.lock();
            panic!("holder fails");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(*lock.lock_priority(), 1);
        assert_eq!(*lock.lock(), 1);
    }
}
