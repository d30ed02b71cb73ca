//! A wait queue for "sleep until this condition on atomics holds".
//!
//! PostgreSQL: the wait-list half of `LWLockWaitForVar` /
//! `LWLockUpdateVar`. A waiter spins briefly (waking a thread on the other
//! core costs tens of microseconds), then parks on a condition variable. A
//! notifier changes the atomics it owns and calls [`WaitQueue::notify_all`],
//! which takes the slow path only when someone is parked.
//!
//! Contract: the condition passed to [`WaitQueue::wait_until`] must read the
//! atomics with `SeqCst` (or be preceded by a `SeqCst` fence), and every
//! change that can make it true must be a `SeqCst` store or RMW followed by
//! `notify_all`. Under those rules no wake-up is lost: either the waiter's
//! re-check after announcing itself sees the change, or the notifier sees the
//! announcement and wakes it.

use super::{hint, AtomicU32, Condvar, Mutex, Ordering};

/// Spins before parking: a few microseconds, well under the cost of a wake-up.
const SPINS_BEFORE_PARKING: u32 = if cfg!(loom) { 1 } else { 200 };

/// Threads parked on one condition, and the lock-free check that skips the
/// wake-up path when there are none.
#[derive(Debug, Default)]
pub struct WaitQueue {
    /// Number of threads between announcing themselves and leaving.
    parked: AtomicU32,
    lock: Mutex<()>,
    cond: Condvar,
}

impl WaitQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns once `ready()` is true. Never unwinds: a poisoned lock is
    /// recovered (the queue protects no data).
    pub fn wait_until(&self, mut ready: impl FnMut() -> bool) {
        for _ in 0..SPINS_BEFORE_PARKING {
            if ready() {
                return;
            }
            hint::spin_loop();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        // SeqCst: pairs with the SeqCst load in notify_all (store-load
        // ordering between "I am parked" and the notifier's state change).
        self.parked.fetch_add(1, Ordering::SeqCst);
        while !ready() {
            guard = self.cond.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        // Relaxed: leaving only lets later notifiers skip the lock; a stale
        // count costs one unneeded wake-up, never a lost one.
        self.parked.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes every parked waiter so it re-checks its condition.
    pub fn notify_all(&self) {
        // SeqCst: see wait_until; orders the caller's SeqCst state change
        // before this read of the parked count.
        if self.parked.load(Ordering::SeqCst) == 0 {
            return;
        }
        // Taking the lock means a waiter that announced itself is either
        // still re-checking under the lock (and will see the new state) or
        // already in `wait`, so the notification reaches it.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_all();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc, AtomicU64};

    /// A waiter parked on a flag is always woken by the flag's setter.
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let q = Arc::new(WaitQueue::new());
            let flag = Arc::new(AtomicU64::new(0));
            let (q2, f2) = (q.clone(), flag.clone());
            let t = thread::spawn(move || {
                f2.store(1, Ordering::SeqCst);
                q2.notify_all();
            });
            q.wait_until(|| flag.load(Ordering::SeqCst) == 1);
            t.join().unwrap();
        });
    }
}
