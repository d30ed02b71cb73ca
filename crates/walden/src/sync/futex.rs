//! [`Futex`]: a 32-bit word threads sleep on until it changes, and one call
//! that wakes all of them (or one).
//!
//! Linux's `futex(2)` (`FUTEX_WAIT_PRIVATE`, `FUTEX_WAKE_PRIVATE`), the
//! primitive under std's mutexes and condition variables, used directly
//! where one wake-up call must reach a whole group of sleepers: the commit
//! queue's round groups ([`super::commit_queue`]). Waking a group this way
//! is one system call, so the waker cannot be preempted by the first
//! sleeper it wakes with the others still asleep, as it can when it wakes
//! them one condition variable at a time.
//!
//! Contract: a sleeper reads the word ([`Futex::load`]) and then calls
//! [`Futex::wait`] with what it read, in a loop until the word differs; a
//! waker changes the word ([`Futex::bump`]) and then calls
//! [`Futex::wake_all`] or [`Futex::wake_one`]. `wait` returns at once if
//! the word differs from `seen` (the kernel checks it atomically with
//! going to sleep), so a wake-up is never lost: either the sleeper sees the
//! bump, or it is asleep when the wake call comes. `wait` may return
//! spuriously; the caller re-checks. Under `cfg(loom)` and `cfg(shuttle)`
//! the word's sleep is a mutex and a condition variable with the same
//! contract, so the models check the code that uses it.

use super::{AtomicU32, Ordering};

/// See the module docs.
#[derive(Debug, Default)]
pub struct Futex {
    word: AtomicU32,
    #[cfg(any(loom, shuttle))]
    lock: super::Mutex<()>,
    #[cfg(any(loom, shuttle))]
    cond: super::Condvar,
}

impl Futex {
    /// The word's value now.
    pub fn load(&self) -> u32 {
        // Acquire: pairs with the Release in `bump`; a sleeper that sees
        // the new value sees what the waker published before it.
        self.word.load(Ordering::Acquire)
    }

    /// Changes the word, so that sleepers that read the old value return
    /// from [`Futex::wait`] (once woken, or at once if not asleep yet).
    pub fn bump(&self) {
        // Release: pairs with the Acquire in `load`.
        self.word.fetch_add(1, Ordering::Release);
    }

    /// Sleeps while the word is `seen`; may return spuriously.
    #[cfg(not(any(loom, shuttle)))]
    pub fn wait(&self, seen: u32) {
        // Its result (woken, EAGAIN if the word differs, EINTR) needs no
        // handling: the caller re-checks the word in every case.
        self.futex(libc::FUTEX_WAIT, seen);
    }

    /// Wakes every thread asleep on the word.
    #[cfg(not(any(loom, shuttle)))]
    pub fn wake_all(&self) {
        self.futex(libc::FUTEX_WAKE, i32::MAX as u32);
    }

    /// Wakes at most one thread asleep on the word.
    #[cfg(not(any(loom, shuttle)))]
    pub fn wake_one(&self) {
        self.futex(libc::FUTEX_WAKE, 1);
    }

    /// `futex(word, op | FUTEX_PRIVATE_FLAG, val, no timeout)`.
    #[cfg(not(any(loom, shuttle)))]
    fn futex(&self, op: libc::c_int, val: u32) {
        // SAFETY: FUTEX_WAIT or FUTEX_WAKE on a live, aligned u32 (the
        // atomic's storage), with no timeout (FUTEX_WAKE ignores it); the
        // kernel only reads the word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }

    /// Sleeps while the word is `seen` (the models' futex).
    #[cfg(any(loom, shuttle))]
    pub fn wait(&self, seen: u32) {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.load() == seen {
            // A waker's bump came after the check above, and its wake call
            // takes the lock, so it comes after this wait has begun.
            drop(self.cond.wait(guard).unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Wakes every thread asleep on the word (the models' futex).
    #[cfg(any(loom, shuttle))]
    pub fn wake_all(&self) {
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_all();
    }

    /// Wakes at most one thread asleep on the word (the models' futex).
    #[cfg(any(loom, shuttle))]
    pub fn wake_one(&self) {
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_one();
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A sleeper returns once the word is bumped and woken, and `wait`
    /// with a stale value returns at once.
    #[test]
    fn a_bump_and_a_wake_release_every_sleeper() {
        let f = Arc::new(Futex::default());
        let seen = f.load();
        let sleepers: Vec<_> = (0..4)
            .map(|_| {
                let f = f.clone();
                std::thread::spawn(move || {
                    while f.load() == seen {
                        f.wait(seen);
                    }
                    f.load()
                })
            })
            .collect();
        f.bump();
        f.wake_all();
        for s in sleepers {
            assert_eq!(s.join().unwrap(), seen + 1);
        }
        // Stale: returns without sleeping.
        f.wait(seen);
        f.wake_one();
    }
}
