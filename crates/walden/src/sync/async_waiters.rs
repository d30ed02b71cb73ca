//! Futures waiting for a monotonic position (the durable LSN) to reach
//! their target, woken by the thread that advances it.
//!
//! The async counterpart of [`super::WaitQueue`]: a waiter is a
//! [`Waker`] filed under its target instead of a parked thread, so an
//! executor thread is never blocked.
//!
//! Contract: the advancing thread makes the new position visible (with any
//! ordering, e.g. a `Release` store) *before* it calls
//! [`AsyncWaiters::wake_reached`] with it, and a waiter reads the position
//! with at least `Acquire` *after* [`AsyncWaiters::register`] returned
//! `false`. No wake-up is then lost: registration and waking take one
//! mutex, so either the waker is filed before the wake (which wakes it), or
//! the wake's critical section came first, and the mutex hand-over carries
//! the advance to the waiter's re-check.

use std::collections::BTreeMap;
use std::task::Waker;

use super::Mutex;

/// A waiter's place in the queue: its target and a number unique among the
/// waiters of one queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaiterKey {
    target: u64,
    id: u64,
}

/// Wakers filed by the position they wait for.
#[derive(Debug, Default)]
pub struct AsyncWaiters {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    waiting: BTreeMap<WaiterKey, Waker>,
    next_id: u64,
    /// Set by [`AsyncWaiters::wake_all`]: the position will not advance,
    /// every waiter must look again (at an error) instead of waiting.
    closed: bool,
}

impl AsyncWaiters {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files (or refreshes) `waker` for a wait on `target`; `key` is the
    /// waiter's place from an earlier call, `None` on the first. Returns
    /// false once [`AsyncWaiters::wake_all`] was called: then nothing is
    /// filed and the waiter must not wait.
    pub fn register(&self, key: &mut Option<WaiterKey>, target: u64, waker: &Waker) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.closed {
            return false;
        }
        let k = *key.get_or_insert_with(|| {
            inner.next_id += 1;
            WaiterKey {
                target,
                id: inner.next_id,
            }
        });
        match inner.waiting.get_mut(&k) {
            Some(w) if w.will_wake(waker) => {}
            Some(w) => w.clone_from(waker),
            None => {
                inner.waiting.insert(k, waker.clone());
            }
        }
        true
    }

    /// Forgets a waiter that stops waiting (its future was dropped or is
    /// done).
    pub fn deregister(&self, key: WaiterKey) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.waiting.remove(&key);
    }

    /// Wakes every waiter whose target is at most `reached`; returns
    /// whether waiters beyond it remain.
    pub fn wake_reached(&self, reached: u64) -> bool {
        let woken = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let beyond = match reached.checked_add(1) {
                Some(next) => inner.waiting.split_off(&WaiterKey {
                    target: next,
                    id: 0,
                }),
                None => BTreeMap::new(),
            };
            std::mem::replace(&mut inner.waiting, beyond)
        };
        // Outside the lock: a waker may run its task at once.
        woken.into_values().for_each(Waker::wake);
        !self.is_empty()
    }

    /// Wakes every waiter and refuses new ones: the position will not
    /// advance any more (the log failed or is closing).
    pub fn wake_all(&self) {
        let woken = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.closed = true;
            std::mem::take(&mut inner.waiting)
        };
        woken.into_values().for_each(Waker::wake);
    }

    /// True if no waiter is filed.
    pub fn is_empty(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.waiting.is_empty()
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    fn woken(c: &Count) -> usize {
        c.0.load(Ordering::SeqCst)
    }

    #[test]
    fn only_waiters_at_or_below_the_position_wake() {
        let q = AsyncWaiters::new();
        let (low, low_w) = counter();
        let (high, high_w) = counter();
        let (mut k1, mut k2) = (None, None);
        assert!(q.register(&mut k1, 100, &low_w));
        assert!(q.register(&mut k2, 200, &high_w));
        assert!(q.wake_reached(99), "both still wait");
        assert_eq!((woken(&low), woken(&high)), (0, 0));
        assert!(q.wake_reached(100), "the one at 200 remains");
        assert_eq!((woken(&low), woken(&high)), (1, 0));
        assert!(!q.wake_reached(u64::MAX));
        assert_eq!(woken(&high), 1);
    }

    #[test]
    fn a_re_poll_refreshes_its_waker_instead_of_filing_another() {
        let q = AsyncWaiters::new();
        let (first, first_w) = counter();
        let (second, second_w) = counter();
        let mut key = None;
        assert!(q.register(&mut key, 10, &first_w));
        assert!(q.register(&mut key, 10, &second_w));
        q.wake_reached(10);
        assert_eq!((woken(&first), woken(&second)), (0, 1));
        assert!(q.is_empty());
    }

    #[test]
    fn a_dropped_waiter_is_forgotten_and_wake_all_closes() {
        let q = AsyncWaiters::new();
        let (gone, gone_w) = counter();
        let (left, left_w) = counter();
        let (mut k1, mut k2) = (None, None);
        q.register(&mut k1, 5, &gone_w);
        q.register(&mut k2, 6, &left_w);
        q.deregister(k1.unwrap());
        q.wake_all();
        assert_eq!((woken(&gone), woken(&left)), (0, 1));
        assert!(!q.register(&mut None, 7, &left_w), "closed: no new waiters");
        assert!(q.is_empty());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc, AtomicBool, AtomicU64, Ordering};
    use std::task::Wake;

    /// A waker that sets a (model-checked) flag; `Wake` needs std's `Arc`.
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            // Release: pairs with the waiter's Acquire load below.
            self.0.store(true, Ordering::Release);
        }
    }

    /// A waiter that found the position short and filed its waker is
    /// always either woken or sees the position on its re-check.
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let q = Arc::new(AsyncWaiters::new());
            let pos = Arc::new(AtomicU64::new(0));
            let (q2, p2) = (q.clone(), pos.clone());
            let advancer = thread::spawn(move || {
                // Release: the contract's "visible before waking".
                p2.store(1, Ordering::Release);
                q2.wake_reached(1);
            });
            let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let mut key = None;
            // Acquire: pairs with the advancer's Release store.
            if pos.load(Ordering::Acquire) < 1 {
                assert!(q.register(&mut key, 1, &waker));
                // The re-check the contract asks for.
                if pos.load(Ordering::Acquire) < 1 {
                    while !flag.0.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                    assert_eq!(pos.load(Ordering::Acquire), 1);
                }
            }
            advancer.join().unwrap();
        });
    }
}
