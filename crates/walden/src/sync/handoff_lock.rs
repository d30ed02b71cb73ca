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
//! A waiter may spin first ([`HandoffLock::spinning`],
//! `Config::write_lock_spin`): an ordinary locker that finds the lock held
//! yields the CPU while it stays held, within its [`Policy`], before it
//! parks, so that it takes the lock at the release without the wake-up of
//! a sleeping thread (tens of microseconds on a VM whose other vCPU idles,
//! a fifth of a 1 MiB write). At most one locker spins at a time, as the
//! kernel's optimistic spinning lets one waiter of a sleeping lock spin;
//! the others park, and a parked locker woken while the lock is held again
//! becomes the spinner if none is. Yields, not CPU relaxes: where other
//! threads are runnable they run first.
//!
//! The state is a small mutex-protected record with two condition
//! variables, not atomics: the lock is held for a `pwrite`, so its own cost
//! does not matter, and every decision is taken under that one mutex (no
//! ordering to argue), but for the spinner's two flags, which are hints:
//! every decision is taken again under that mutex. The data sits in a
//! second mutex that only the holder of the lock locks, so it is never
//! contended. A panic while holding the lock releases it (the guard's
//! drop), and a poisoned mutex is recovered: the writer keeps its state
//! consistent on every error path.

use super::backoff::{Backoff, Policy};
use super::mutant::{self, Mutant};
use super::{AtomicBool, Condvar, Mutex, MutexGuard, Ordering};

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
    /// Times an ordinary locker parked (for the tests of the spinning).
    #[cfg(test)]
    parked: u64,
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
    /// How an ordinary locker spins before it parks; `None`: it parks at
    /// once.
    spin: Option<Policy>,
    /// A copy of `State::held`, written under the state mutex, read by the
    /// spinner without it.
    held_hint: AtomicBool,
    /// A locker is spinning (at most one).
    spinner: AtomicBool,
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
    /// waiting priority locker. Its lockers park at once, unless
    /// [`HandoffLock::spinning`].
    pub fn new(data: T, fair: bool) -> Self {
        HandoffLock {
            state: Mutex::new(State::default()),
            to_priority: Condvar::new(),
            to_anyone: Condvar::new(),
            data: Mutex::new(data),
            fair,
            spin: None,
            held_hint: AtomicBool::new(false),
            spinner: AtomicBool::new(false),
        }
    }

    /// The lock with its ordinary lockers spinning, one at a time, within
    /// `spin` before they park (see the module docs); `None`: they park at
    /// once.
    pub fn spinning(mut self, spin: Option<Policy>) -> Self {
        self.spin = spin;
        self
    }

    /// Takes the lock as an ordinary locker: as soon as it is free and,
    /// with `fair`, no priority locker waits.
    pub fn lock(&self) -> HandoffGuard<'_, T> {
        // The mutant: ordinary lockers ignore the gate even when fair.
        let gated = self.fair && !mutant::active(Mutant::HandoffGateSkipped);
        let blocked = |s: &State| s.held || (gated && s.priority_waiting > 0);
        self.spin_while_held();
        let mut s = recover(&self.state);
        while blocked(&s) {
            s.ordinary_waiting += 1;
            #[cfg(test)]
            {
                s.parked += 1;
            }
            s = self.to_anyone.wait(s).unwrap_or_else(|e| e.into_inner());
            s.ordinary_waiting -= 1;
            if blocked(&s) && self.spin.is_some() {
                // Woken but passed: spin for the next release if nobody
                // else does.
                drop(s);
                self.spin_while_held();
                s = recover(&self.state);
            }
        }
        s.held = true;
        self.hint_held(true);
        if s.priority_waiting > 0 {
            s.overtaken += 1;
        }
        drop(s);
        self.guard(0)
    }

    /// With a spin policy, and if no other locker spins: yields while the
    /// lock looks held, until the policy completes. Decides nothing: the
    /// caller takes the state mutex next and looks again.
    fn spin_while_held(&self) {
        let Some(policy) = self.spin else {
            return;
        };
        // Relaxed: the flag only limits how many lockers spin; it guards no
        // data, and a lost race only makes a locker park.
        if self
            .spinner
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let mut backoff = Backoff::new(policy);
        // Relaxed: a hint; the locker decides under the state mutex, whose
        // lock orders it after the release it saw.
        while self.held_hint.load(Ordering::Relaxed) && !backoff.is_completed() {
            backoff.snooze();
        }
        // Relaxed: as at the exchange above.
        self.spinner.store(false, Ordering::Relaxed);
    }

    /// Mirrors `State::held` for the spinner; called under the state mutex.
    fn hint_held(&self, held: bool) {
        // Relaxed: a hint, read only to stop spinning (see `spin_while_held`).
        self.held_hint.store(held, Ordering::Relaxed);
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
        self.hint_held(true);
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
        self.hint_held(false);
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

    /// Times an ordinary locker parked.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn parked(&self) -> u64 {
        recover(&self.state).parked
    }

    /// A locker is spinning now.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_spun_on(&self) -> bool {
        // Relaxed: a test's poll of the flag, as good as any read of it.
        self.spinner.load(Ordering::Relaxed)
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
    fn storm(fair: bool, spin: Option<Policy>) -> (u64, usize) {
        let lock = Arc::new(HandoffLock::new(Vec::new(), fair).spinning(spin));
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
    /// holder: none passes the priority waiter, whether one of them spins
    /// or all park. Without it, the count it is told is exactly how many
    /// did.
    #[test]
    fn queued_ordinary_lockers_pass_the_priority_waiter_only_without_the_hand_off() {
        for spin in [None, Some(Policy::YIELD_THEN_PARK)] {
            assert_eq!(storm(true, spin), (0, 0), "{spin:?}");
            let (overtaken, before) = storm(false, spin);
            assert_eq!(overtaken as usize, before, "{spin:?}");
        }
    }

    /// Spins (yielding) until the lock is released, however long.
    const FOREVER: Policy = Policy {
        yields: u32::MAX,
        ..Policy::YIELD_THEN_PARK
    };

    /// A locker that spins takes the lock at the release without parking;
    /// one that does not spin parks.
    #[test]
    fn a_spinning_locker_takes_the_lock_without_parking() {
        for spin in [Some(FOREVER), None] {
            let lock = Arc::new(HandoffLock::new(0u32, true).spinning(spin));
            let g = lock.lock();
            let l2 = lock.clone();
            let locker = std::thread::spawn(move || *l2.lock() += 1);
            until(|| lock.is_spun_on() || lock.waiting().1 == 1);
            drop(g);
            locker.join().unwrap();
            assert_eq!(*lock.lock(), 1);
            assert_eq!(lock.parked(), u64::from(spin.is_none()), "{spin:?}");
        }
    }

    /// Of three lockers behind the holder, one spins and two park; all
    /// three then get the lock.
    #[test]
    fn one_locker_spins_and_the_others_park() {
        let lock = Arc::new(HandoffLock::new(0u32, true).spinning(Some(FOREVER)));
        let g = lock.lock();
        let lockers: Vec<_> = (0..3)
            .map(|_| {
                let l = lock.clone();
                std::thread::spawn(move || *l.lock() += 1)
            })
            .collect();
        until(|| lock.waiting().1 == 2);
        assert!(lock.is_spun_on(), "the third locker spins");
        drop(g);
        for t in lockers {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 3);
        assert!(lock.parked() >= 2, "{}", lock.parked());
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
