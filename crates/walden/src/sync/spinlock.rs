//! A test-and-set spinlock with PostgreSQL's backoff (`s_lock.c`).
//!
//! PostgreSQL: `slock_t`, `SpinLockAcquire`, `perform_spin_delay`. It guards
//! a few words for a few instructions: the baseline reservation keeps the
//! current and previous insert positions under one. Under contention a
//! waiter spins with a CPU relax, then yields, then sleeps with growing
//! delays, so a preempted holder (threads outnumbering cores) gets the CPU
//! back instead of being starved by spinners.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

use super::backoff::{Backoff, Policy};
use super::{AtomicBool, Ordering};

/// PostgreSQL's spin delay: 100 relaxes (its `spins_per_delay` default)
/// before the first yield, 20 yields before sleeping, then sleeps doubling
/// up to 1 ms (PostgreSQL: `MAX_DELAY_USEC` 1 s; far lower here: the
/// holders are threads of one process, not backends).
const SPIN_DELAY: Policy = Policy {
    spin_steps: if cfg!(loom) { 1 } else { 100 },
    doubling: false,
    yields: if cfg!(loom) { 1 } else { 20 },
    sleep_cap_us: Some(1000),
};

/// A spinlock owning `T`.
#[derive(Debug, Default)]
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives exclusive access to `value`, as a Mutex does.
unsafe impl<T: Send> Send for SpinLock<T> {}
// SAFETY: as above; `&SpinLock` only hands out `T` under the lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// Exclusive access to a [`SpinLock`]'s value; releases on drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    /// A new, unlocked spinlock.
    pub fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Acquires the lock, spinning, yielding and then sleeping with backoff.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut backoff = Backoff::new(SPIN_DELAY);
        loop {
            // Acquire: pairs with the Release in SpinGuard::drop, so the
            // previous holder's writes to `value` are visible to us.
            // Relaxed on failure: we only learn that it is held. (A CAS, not
            // a swap: a failed attempt writes nothing.)
            if self
                .locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return SpinGuard { lock: self };
            }
            // Test-and-test-and-set: delay until the lock looks free, then
            // swap again.
            loop {
                backoff.snooze();
                // Relaxed: only a hint to avoid hammering the line with
                // swaps. Under loom a relaxed read may stay stale for many
                // steps, so the model goes straight back to the swap.
                if cfg!(loom) || !self.locked.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, and `&mut self` makes
        // this the only reference through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        // Release: publishes our writes to `value` to the next acquirer.
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc};

    /// Two increments under the lock are never lost.
    #[test]
    fn mutual_exclusion() {
        loom::model(|| {
            let l = Arc::new(SpinLock::new(0u32));
            let l2 = l.clone();
            let t = thread::spawn(move || *l2.lock() += 1);
            *l.lock() += 1;
            t.join().unwrap();
            assert_eq!(*l.lock(), 2);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn oversubscribed_counter_is_exact() {
        let l = Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..64)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 64 * 2000);
    }
}
