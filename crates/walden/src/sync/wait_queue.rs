//! A wait queue for "sleep until this condition on atomics holds".
//!
//! PostgreSQL: the wait-list half of `LWLockWaitForVar` /
//! `LWLockUpdateVar`. A waiter spins briefly (waking a thread on the other
//! core costs tens of microseconds), then parks on a condition variable. A
//! notifier changes the atomics it owns and calls [`WaitQueue::notify_all`]
//! (or [`WaitQueue::notify_one`], where only one waiter can use the change:
//! a lock's waiters), which takes the slow path only when someone is
//! parked.
//!
//! Contract: every change that can make a waiter's condition true is made
//! (with any ordering) before the changing thread calls
//! [`WaitQueue::notify_all`] or [`WaitQueue::notify_one`], and the
//! condition reads those atomics with at
//! least `Acquire`. No wake-up is then lost: the waiter's announcement and
//! the notifier's check are read-modify-writes of one counter, so one of
//! them comes first in its modification order. If the notifier's comes
//! first, the waiter's RMW reads from it (Release → Acquire) and its
//! re-check sees the change; otherwise the notifier sees the waiter and
//! wakes it under the lock.
//!
//! A notifier that wakes the waiters also clears the count, and a waiter
//! announces itself again before each re-check: between a wake-up and the
//! moment the woken thread runs (tens of microseconds on a loaded machine)
//! later notifiers see no one parked and skip the lock and the `futex`
//! call. A holder of an insertion slot notifies at every release, so
//! counting the woken waiter as parked until it ran cost that holder a
//! system call per record. A woken waiter whose condition holds leaves
//! without announcing itself again; one whose condition turns true
//! between its announcement and its re-check leaves a stale count behind,
//! which costs the next notifier one needless wake-up.
//!
//! **A queue whose changes are `SeqCst`** ([`WaitQueue::seq_cst`]) checks
//! for waiters with a load, not a read-modify-write: one locked
//! instruction fewer per notification, which an insertion slot's holder
//! pays twice per record (its flushers' queue and its lockers'). Its
//! contract is stronger: each notification follows a `SeqCst` write
//! (store or RMW) that makes the waiter's condition true on its own
//! (earlier writes may too, with any ordering), and the condition reads it
//! with `SeqCst`. No wake-up is
//! lost: a waiter's announcement (a `SeqCst` RMW) comes before its
//! re-check in the single total order S of `SeqCst` operations, as the
//! notifier's change comes before its check. If the check reads no
//! announcement, it precedes the announcement in S (it reads an earlier
//! value of the counter), so the change precedes the re-check in S, and a
//! `SeqCst` load reads the latest `SeqCst` write before it in S: the
//! re-check sees the change (store buffering is ruled out, as in
//! Dekker's algorithm). On x86 the load is a plain `mov`; the change's
//! locked instruction drains the store buffer before it.
//!
//! loom models `SeqCst` loads and stores as `Acquire`/`Release`
//! (tokio-rs/loom#180), under which the argument fails, but models
//! `SeqCst` fences exactly. So under `cfg(loom)` the check is a `SeqCst`
//! fence, then the load, and every waiter puts a `SeqCst` fence between
//! its announcement and its re-check (in every build: it is on the way to
//! parking): the fence-to-fence form of the same argument, which the
//! models of the slots check, with a mutant that drops the check's fence
//! (`Mutant::NotifyCheckUnfenced`).

use super::backoff::{Backoff, Policy};
use super::mutant::{self, Mutant};
use super::watchdog::{Stuck, Watchdog};
use super::{AtomicU32, Condvar, Mutex, Ordering};

/// Threads parked on one condition, and the lock-free check that skips the
/// wake-up path when there are none.
#[derive(Debug, Default)]
pub struct WaitQueue {
    /// Announcements of waiters about to park since the last notifier
    /// that woke them cleared it (see the module docs).
    parked: AtomicU32,
    /// The stronger contract: every change `SeqCst`, so a notifier checks
    /// for waiters with a load ([`WaitQueue::seq_cst`]).
    seq_cst: bool,
    lock: Mutex<()>,
    cond: Condvar,
}

impl WaitQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty queue with the stronger contract (module docs): each
    /// notification follows a `SeqCst` write that makes a waiter's
    /// condition true on its own, and the condition reads it with
    /// `SeqCst`; in return a notification
    /// with nobody parked costs a load rather than a locked
    /// read-modify-write.
    pub fn seq_cst() -> Self {
        WaitQueue {
            seq_cst: true,
            ..Self::default()
        }
    }

    /// Whether anyone announced themselves, checked as the queue's
    /// contract allows (module docs): a `SeqCst` load (under loom, after a
    /// `SeqCst` fence), or a read-modify-write adding nothing, which is
    /// ordered against a waiter's announcement whatever the orderings of
    /// the changes (a failed compare-exchange would only be a load).
    fn anyone_announced(&self) -> bool {
        if self.seq_cst {
            // Under loom only (a constant false elsewhere, compiled away).
            if cfg!(loom) && !mutant::active(Mutant::NotifyCheckUnfenced) {
                // SeqCst fence: loom's form of the SeqCst load below (module docs).
                super::fence(Ordering::SeqCst);
            }
            // SeqCst: after the caller's SeqCst change in S (module docs).
            self.parked.load(Ordering::SeqCst) != 0
        } else {
            // AcqRel: Release publishes the caller's change to a waiter
            // whose announcement reads from this RMW (module docs).
            self.parked.fetch_add(0, Ordering::AcqRel) != 0
        }
    }

    /// Returns once `ready()` is true, or fails once `watchdog` finds the
    /// wait stuck (the caller reports what it waited for). Never unwinds: a
    /// poisoned lock is recovered (the queue protects no data).
    pub fn wait_until(
        &self,
        mut ready: impl FnMut() -> bool,
        watchdog: &mut Watchdog,
    ) -> Result<(), Stuck> {
        let mut backoff = Backoff::new(Policy::SPIN_THEN_PARK);
        while !backoff.is_completed() {
            if ready() {
                return Ok(());
            }
            if watchdog.round() {
                return Err(Stuck);
            }
            backoff.snooze();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut result = Ok(());
        // A woken waiter whose condition holds leaves without announcing
        // itself again, so it leaves no stale count behind.
        while !ready() {
            // SeqCst (⊇ AcqRel): Acquire pairs with the Release RMW in
            // notify_all (see the module docs); an RMW, not a store, so the
            // two are totally ordered; SeqCst for a queue whose notifiers
            // check with a load. Made again after every wake-up: the
            // notifier that woke us cleared the count.
            self.parked.fetch_add(1, Ordering::SeqCst);
            // SeqCst fence: the announcement before the re-check, in the
            // form loom models (module docs); on the way to parking.
            super::fence(Ordering::SeqCst);
            if ready() {
                break;
            }
            guard = match watchdog.park_timeout() {
                None => self.cond.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(timeout) => {
                    if watchdog.check_clock() {
                        result = Err(Stuck);
                        break;
                    }
                    self.cond
                        .wait_timeout(guard, timeout)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        drop(guard);
        result
    }

    /// Announcements since the last wake-up (threads parked, or about to
    /// park): tests wait for a waiter to be parked before they change its
    /// condition.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn parked(&self) -> u32 {
        // Relaxed: the caller polls it.
        self.parked.load(Ordering::Relaxed)
    }

    /// Returns once `n` waiters have announced themselves and every waiter
    /// that announced itself is in `wait`: a waiter holds the queue's lock
    /// from its announcement to its wait, so taking the lock once after
    /// the count reached `n` finds them there. Tests call it before they
    /// change a condition, so that no waiter still between its
    /// announcement and its re-check sees the change without a wake-up.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn wait_for_parked(&self, n: u32) {
        while self.parked() < n {
            std::thread::yield_now();
        }
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Wakes every parked waiter so it re-checks its condition.
    pub fn notify_all(&self) {
        if self.seq_cst && !self.anyone_announced() {
            return;
        }
        // AcqRel: Release publishes the caller's state change to a waiter
        // whose RMW reads from this one; an RMW rather than a load so it is
        // ordered against the waiter's announcement (with the stronger
        // contract, the load above was that check). It clears the count:
        // every waiter announced so far is woken below and announces
        // itself again before it re-checks.
        if self.parked.swap(0, Ordering::AcqRel) == 0 {
            return;
        }
        // Taking the lock means a waiter that announced itself is either
        // still re-checking under the lock (and will see the new state) or
        // already in `wait`, so the notification reaches it.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_all();
    }

    /// Wakes one parked waiter, if any announced itself: for a queue
    /// whose waiters all wait for the same thing, which only one of them
    /// can take (a lock's waiters). The woken waiter takes it, or finds it
    /// taken by a thread that never parked and parks again, announcing
    /// itself, so that thread's release wakes one in turn. Waking them all
    /// would send every one but the winner back to sleep (a herd: with 64
    /// threads on eight insertion slots, seven wake-ups per release).
    ///
    /// The count stays at least the number of waiters in `wait`: this
    /// takes one announcement for each waiter it wakes, a waiter woken
    /// otherwise (a timeout) announces itself again before it parks, and
    /// a stale announcement only makes a later call wake nobody or
    /// someone early. So a count of zero means nobody is parked.
    pub fn notify_one(&self) {
        if !self.anyone_announced() {
            return;
        }
        // The mutant: no lock, so a waiter that announced itself may not
        // be in `wait` yet.
        let guard = (!mutant::active(Mutant::NotifyOneUnlocked))
            .then(|| self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        // AcqRel, as above. Under the lock, so no waiter announces itself
        // meanwhile; a concurrent notifier may have taken the last
        // announcement (it woke that waiter), or notify_all cleared them.
        let took = self
            .parked
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        drop(guard);
        if took {
            self.cond.notify_one();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Once a notifier has woken a parked waiter whose condition now
    /// holds, the next notifier finds no one parked, even before the woken
    /// waiter ran: it skips the lock and the wake-up call. (With the count
    /// held until the waiter left, every notifier in between paid both.)
    #[test]
    fn a_notifier_clears_the_count_of_the_waiters_it_woke() {
        let q = WaitQueue::new();
        let flag = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                // Acquire: the WaitQueue contract.
                q.wait_until(|| flag.load(Ordering::Acquire), &mut Watchdog::new(None))
            });
            while q.parked() == 0 {
                std::thread::yield_now();
            }
            // Relaxed: notify_all publishes it.
            flag.store(true, Ordering::Relaxed);
            q.notify_all();
            assert_eq!(q.parked(), 0, "the woken waiter is still counted");
            assert!(waiter.join().unwrap().is_ok());
            assert_eq!(q.parked(), 0, "the waiter left a stale count");
        });
    }

    /// Two waiters parked for one token each: `notify_one` after the
    /// first token wakes one of them and leaves the other's announcement
    /// counted (`notify_all` would clear it), and the second token's
    /// `notify_one` wakes the other.
    #[test]
    fn notify_one_wakes_one_waiter_and_leaves_the_other_counted() {
        let q = WaitQueue::new();
        let tokens = AtomicU32::new(0);
        // AcqRel/Acquire: the WaitQueue contract (at least Acquire).
        let take = || {
            tokens
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(1))
                .is_ok()
        };
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..2)
                .map(|_| s.spawn(|| q.wait_until(take, &mut Watchdog::new(None))))
                .collect();
            q.wait_for_parked(2);
            for left in [1, 0] {
                // Relaxed: notify_one publishes it.
                tokens.fetch_add(1, Ordering::Relaxed);
                q.notify_one();
                // At least the other's announcement (`notify_all` would
                // clear it); more if the condition variable woke the other
                // too (it may wake a thread about to wait), which then
                // announced itself again.
                assert!(q.parked() >= left, "woken more than one");
            }
            for waiter in waiters {
                assert!(waiter.join().expect("a waiter panicked").is_ok());
            }
        });
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
                f2.store(1, Ordering::Relaxed);
                q2.notify_all();
            });
            q.wait_until(
                || flag.load(Ordering::Acquire) == 1,
                &mut Watchdog::new(None),
            )
            .unwrap();
            t.join().unwrap();
        });
    }

    /// A waiter for a flag set twice, with a notification after each: the
    /// first may wake it too early, after which it announces itself again
    /// (the notifier cleared the count), so the second wake-up is not lost.
    /// With one announcement per wait loom reports a deadlock.
    #[test]
    fn no_lost_wakeup_after_a_cleared_count() {
        loom::model(|| {
            let q = Arc::new(WaitQueue::new());
            let flag = Arc::new(AtomicU64::new(0));
            let (q2, f2) = (q.clone(), flag.clone());
            let t = thread::spawn(move || {
                for v in 1..=2 {
                    f2.store(v, Ordering::Relaxed);
                    q2.notify_all();
                }
            });
            q.wait_until(
                || flag.load(Ordering::Acquire) == 2,
                &mut Watchdog::new(None),
            )
            .unwrap();
            t.join().unwrap();
        });
    }

    /// A lock made of a flag and a queue woken one at a time, as an
    /// insertion slot's lockers are: two threads wait for it while a
    /// third holds it, and each release wakes one waiter with
    /// `notify_one`. Every thread gets the lock: a release whose
    /// wake-up went to nobody, or to a waiter that found the lock taken
    /// again and did not announce itself anew, would leave one parked
    /// for good (loom reports the deadlock).
    #[test]
    fn notify_one_hands_a_lock_to_every_waiter() {
        notify_one_lock_model(Queue::AnyOrder);
    }

    /// [`notify_one_hands_a_lock_to_every_waiter`] on a
    /// [`WaitQueue::seq_cst`] queue, whose notifier checks for waiters
    /// with a load (the slots' queues).
    #[test]
    fn a_seq_cst_queue_hands_a_lock_to_every_waiter() {
        notify_one_lock_model(Queue::SeqCst);
    }

    /// [`notify_one_hands_a_lock_to_every_waiter`] with a `notify_one`
    /// that does not take the queue's lock: a waiter that announced itself
    /// and found the lock held is not in `wait` yet when the release's
    /// wake-up goes out, and parks for good.
    #[test]
    #[should_panic]
    fn an_unlocked_notify_one_is_caught() {
        mutant::with(Mutant::NotifyOneUnlocked, || {
            notify_one_lock_model(Queue::AnyOrder)
        });
    }

    /// [`a_seq_cst_queue_hands_a_lock_to_every_waiter`] with the check's
    /// fence dropped: the release's check may read no announcement while
    /// the waiter's re-check reads the lock still held (store buffering),
    /// and the waiter parks for good.
    #[test]
    #[should_panic]
    fn an_unfenced_seq_cst_check_is_caught() {
        mutant::with(Mutant::NotifyCheckUnfenced, || {
            notify_one_lock_model(Queue::SeqCst)
        });
    }

    /// Which queue the lock model uses, and so which orderings its lock's
    /// changes and condition take.
    #[derive(Clone, Copy)]
    enum Queue {
        /// [`WaitQueue::new`]: Release/Acquire suffice.
        AnyOrder,
        /// [`WaitQueue::seq_cst`]: SeqCst changes and condition.
        SeqCst,
    }

    fn notify_one_lock_model(queue: Queue) {
        loom::model(move || {
            let (q, [take_won, take_lost, release]) = match queue {
                Queue::AnyOrder => (
                    WaitQueue::new(),
                    [Ordering::AcqRel, Ordering::Acquire, Ordering::Release],
                ),
                Queue::SeqCst => (WaitQueue::seq_cst(), [Ordering::SeqCst; 3]),
            };
            let q = Arc::new(q);
            let held = Arc::new(AtomicU64::new(1));
            // AcqRel/Acquire, or SeqCst: taking the lock (the queue's
            // contract: at least Acquire in the condition; SeqCst for a
            // seq_cst queue).
            let take = move |h: &AtomicU64| h.compare_exchange(0, 1, take_won, take_lost).is_ok();
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let (q, held) = (q.clone(), held.clone());
                    thread::spawn(move || {
                        q.wait_until(|| take(&held), &mut Watchdog::new(None))
                            .unwrap();
                        // Release, or SeqCst: the next holder's Acquire
                        // (SeqCst: the seq_cst queue's contract).
                        held.store(0, release);
                        q.notify_one();
                    })
                })
                .collect();
            // As above.
            held.store(0, release);
            q.notify_one();
            for w in waiters {
                w.join().unwrap();
            }
        });
    }
}
