//! An LSN-ordered queue of flushers: group commit with one leader and no
//! thundering herd.
//!
//! PostgreSQL queues every flusher on `WALWriteLock` and wakes them all
//! when the holder is done; RocksDB's write thread and raft-engine instead
//! keep one leader that works for everyone queued behind it. Here a flusher
//! whose target is not durable yet calls [`CommitQueue::enter`]: it becomes
//! the leader if there is none, else it parks under its target. The leader
//! writes and syncs; then it calls [`CommitQueue::release_covered`] with
//! the durable point, which wakes exactly the parked flushers whose target
//! it covers and ends the lead.
//!
//! The next round goes to a thread that is running if there is one: waking
//! a parked thread puts a scheduler wake-up (up to a tick on a loaded
//! machine) on the log's critical path, while the leader that just
//! returned, or any newcomer, can start the next round at once (as with
//! PostgreSQL's lock, which the releasing thread may take again). So the
//! release leaves the queue without a leader, and if flushers remain
//! parked it wakes exactly one of them, the lowest, to retry: that one
//! leads if nobody has taken the lead by the time it runs, else it parks
//! again behind the new leader. Each release thus wakes the covered
//! flushers and at most one more.
//!
//! A retrier that was the only flusher left parked sleeps briefly
//! ([`RETRY_GRACE`]) before entering again. Its record finished during the
//! round just ended, so leading at once would sync it alone; meanwhile the
//! released leader usually comes back with its next flush, leads, and its
//! round takes in the retrier's record too (the writer writes up to the
//! highest request). Without the grace, with two committers, most rounds
//! carried one commit: the woken retrier took the lead before the other's
//! next record was finished. Sleeping rather than spinning leaves the CPU
//! to that thread. With others still parked there is a backlog, and the
//! retrier enters at once: the next round has work for many.
//!
//! How a parked flusher waits is the queue's [`Policy`], chosen by the
//! writer from its sync method: behind a round that syncs (a hundred
//! microseconds and more) it sleeps at once ([`Policy::PARK`]): a spin
//! cannot outlast the round, and with more committers than cores it only
//! takes the CPU from the threads that make progress (a profile of 64
//! committers on 2 vCPUs spent 28 % of its time in that spin). Behind a
//! round that only writes (`SyncMethod::None`, a few microseconds) it
//! spins first ([`Policy::SPIN_THEN_PARK`]), as the round is often over
//! before a sleep would even start.
//!
//! Invariant (no lost wake-up): a flusher parks only while a leader is
//! active, under the queue's lock, after finding its target not durable
//! under that lock. The leader flag is cleared only by a release, under the
//! lock, and then either nobody is parked or the woken retrier enters
//! again, leading or parking behind a leader whose own release comes
//! later. A flusher parking after a release re-checks the durable point
//! under the lock first, so it sees what the release saw.
//! [`CommitQueue::poison`] wakes everyone with [`Turn::Poisoned`], and
//! every later `enter` returns it.
//!
//! The leader's contract: after [`Turn::Lead`], call `release_covered`
//! once its round is over (on success), or `poison` (on failure).

use std::collections::BTreeMap;

use super::backoff::{Backoff, Policy};
use super::{Arc, AtomicU32, Condvar, Mutex, Ordering};

/// A woken retrier's one step before it enters again: the shortest sleep
/// (in practice the OS's timer slack, tens of microseconds), so that the
/// leader that just released, back with its next flush, leads the round
/// that covers the retrier too (see the module docs); under loom, a yield.
const RETRY_GRACE: Policy = Policy {
    spin_steps: 0,
    doubling: false,
    yields: 0,
    sleep_cap_us: Some(1),
};

/// What a flusher leaving [`CommitQueue::enter`] does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// The caller's condition held on entry: it did not wait.
    Ready,
    /// The caller leads the next round (see the module docs).
    Lead,
    /// The caller parked and a round's sync covered its target.
    Covered,
    /// The queue is poisoned: a write or sync failed.
    Poisoned,
}

/// A parked flusher's verdicts (0: none yet).
const COVERED: u32 = 1;
const POISONED: u32 = 2;
/// Woken to enter again (see the module docs).
const RETRY: u32 = 3;
/// Woken to enter again, after [`RETRY_GRACE`]: nobody else is parked.
const RETRY_ALONE: u32 = 4;

/// One parked flusher: its verdict, and where it sleeps until there is one.
#[derive(Debug, Default)]
struct Waiter {
    verdict: AtomicU32,
    lock: Mutex<()>,
    cond: Condvar,
}

impl Waiter {
    /// Gives the waiter its verdict and wakes it (only it).
    fn wake(&self, code: u32) {
        // Release: pairs with the Acquire in `wait`; the waiter then sees
        // what the waker saw (the durable point, the poison flag).
        self.verdict.store(code, Ordering::Release);
        // Taking the lock means the waiter is either before its check under
        // the lock (and sees the verdict) or already in `wait`.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_one();
    }

    /// The verdict, if there is one yet.
    fn verdict(&self) -> Option<u32> {
        // Acquire: pairs with the Release in `wake`.
        match self.verdict.load(Ordering::Acquire) {
            0 => None,
            code => Some(code),
        }
    }

    /// Waits for a verdict, spinning first as `policy` says, and returns it.
    fn wait(&self, policy: Policy) -> u32 {
        let mut backoff = Backoff::new(policy);
        while !backoff.is_completed() {
            if let Some(turn) = self.verdict() {
                return turn;
            }
            backoff.snooze();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(turn) = self.verdict() {
                return turn;
            }
            guard = self.cond.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// True while a flusher leads: from [`Turn::Lead`] to its
    /// `release_covered`.
    leader: bool,
    poisoned: bool,
    /// Tie-breaker for equal targets, in arrival order.
    next_id: u64,
    /// Parked flushers by (target, arrival).
    parked: BTreeMap<(u64, u64), Arc<Waiter>>,
}

/// See the module docs.
#[derive(Debug)]
pub struct CommitQueue {
    inner: Mutex<Inner>,
    /// How a parked flusher waits before it sleeps (see the module docs).
    wait: Policy,
}

impl CommitQueue {
    /// An empty queue with no leader whose parked flushers wait as `wait`
    /// says: [`Policy::PARK`] where rounds sync, [`Policy::SPIN_THEN_PARK`]
    /// where they only write (see the module docs).
    pub fn new(wait: Policy) -> Self {
        CommitQueue {
            inner: Mutex::default(),
            wait,
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by a flusher whose `target` is not durable: returns
    /// [`Turn::Ready`] if `ready()` holds under the queue's lock,
    /// [`Turn::Lead`] if there is no leader, and otherwise parks until a
    /// round covers `target` ([`Turn::Covered`]) or the queue is poisoned;
    /// woken to retry (see the module docs), it does all this again.
    /// `ready` must read the durable point (and the poison flag) with at
    /// least `Acquire`.
    pub fn enter(&self, target: u64, ready: impl Fn() -> bool) -> Turn {
        loop {
            let waiter = {
                let mut inner = self.lock();
                if inner.poisoned {
                    return Turn::Poisoned;
                }
                if ready() {
                    return Turn::Ready;
                }
                if !inner.leader {
                    inner.leader = true;
                    return Turn::Lead;
                }
                let waiter = Arc::new(Waiter::default());
                let id = inner.next_id;
                inner.next_id += 1;
                inner.parked.insert((target, id), waiter.clone());
                waiter
            };
            match waiter.wait(self.wait) {
                COVERED => return Turn::Covered,
                POISONED => return Turn::Poisoned,
                // The lone retrier: a grace before entering again.
                RETRY_ALONE => Backoff::new(RETRY_GRACE).snooze(),
                _ => {} // RETRY
            }
        }
    }

    /// Ends the lead: everything below `durable` is durable (the caller has
    /// published it with at least `Release`). Wakes exactly the parked
    /// flushers whose target is at most `durable` and, if any remain
    /// parked, the lowest of them to retry (see the module docs).
    pub fn release_covered(&self, durable: u64) {
        let (covered, retry) = {
            let mut inner = self.lock();
            let covered = match durable.checked_add(1) {
                Some(above) => {
                    let rest = inner.parked.split_off(&(above, 0));
                    std::mem::replace(&mut inner.parked, rest)
                }
                None => std::mem::take(&mut inner.parked),
            };
            inner.leader = false;
            let retry = inner.parked.pop_first().map(|(_, w)| w);
            let code = if inner.parked.is_empty() {
                RETRY_ALONE
            } else {
                RETRY
            };
            (covered, retry.map(|w| (w, code)))
        };
        for waiter in covered.values() {
            waiter.wake(COVERED);
        }
        if let Some((waiter, code)) = retry {
            waiter.wake(code);
        }
    }

    /// Wakes every parked flusher with [`Turn::Poisoned`]; every later
    /// [`CommitQueue::enter`] returns it too.
    pub fn poison(&self) {
        let parked = {
            let mut inner = self.lock();
            inner.poisoned = true;
            std::mem::take(&mut inner.parked)
        };
        for waiter in parked.values() {
            waiter.wake(POISONED);
        }
    }

    /// Number of parked flushers (for the unit tests and the loom model).
    #[cfg(all(test, not(shuttle)))]
    pub fn parked(&self) -> usize {
        self.lock().parked.len()
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Parks a flusher for `target` on its own thread; its turn comes back
    /// on `tx`.
    fn park(q: &Arc<CommitQueue>, target: u64, tx: &mpsc::Sender<(u64, Turn)>) {
        let (q, tx) = (q.clone(), tx.clone());
        std::thread::spawn(move || {
            let turn = q.enter(target, || false);
            tx.send((target, turn)).unwrap();
        });
    }

    fn wait_parked(q: &CommitQueue, n: usize) {
        while q.parked() != n {
            std::thread::yield_now();
        }
    }

    /// A release wakes exactly the covered flushers and one retrier, the
    /// lowest of the rest, and ends the lead; the retrier leads if nobody
    /// else came (after its grace when it was the last one parked). (A newcomer taking the lead first is in the loom model.)
    #[test]
    fn wakes_only_the_covered_and_one_retrier() {
        let q = Arc::new(CommitQueue::new(Policy::PARK));
        assert_eq!(q.enter(5, || false), Turn::Lead);
        let (tx, rx) = mpsc::channel();
        for target in [30, 10, 20, 40] {
            park(&q, target, &tx);
        }
        wait_parked(&q, 4);
        q.release_covered(15);
        let mut woken = [rx.recv().unwrap(), rx.recv().unwrap()];
        woken.sort_unstable_by_key(|(t, _)| *t);
        assert_eq!(woken, [(10, Turn::Covered), (20, Turn::Lead)]);
        assert_eq!(q.parked(), 2);
        // 20 leads; a newcomer parks behind it.
        park(&q, 50, &tx);
        wait_parked(&q, 3);
        // 20's round covers 40: 30 and 40 are covered, 50 retries and,
        // finding no leader, leads.
        q.release_covered(40);
        let mut woken = [rx.recv().unwrap(), rx.recv().unwrap(), rx.recv().unwrap()];
        woken.sort_unstable_by_key(|(t, _)| *t);
        assert_eq!(
            woken,
            [(30, Turn::Covered), (40, Turn::Covered), (50, Turn::Lead)]
        );
        assert_eq!(q.parked(), 0);
        q.release_covered(50);
        // Nobody parked, no leader: the next flusher leads.
        assert_eq!(q.enter(60, || false), Turn::Lead);
        assert_eq!(q.enter(60, || true), Turn::Ready);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn poison_wakes_everyone_and_refuses_newcomers() {
        let q = Arc::new(CommitQueue::new(Policy::PARK));
        assert_eq!(q.enter(1, || false), Turn::Lead);
        let (tx, rx) = mpsc::channel();
        park(&q, 2, &tx);
        park(&q, 3, &tx);
        wait_parked(&q, 2);
        q.poison();
        let mut turns = [rx.recv().unwrap(), rx.recv().unwrap()];
        turns.sort_unstable_by_key(|(t, _)| *t);
        assert_eq!(turns, [(2, Turn::Poisoned), (3, Turn::Poisoned)]);
        assert_eq!(q.enter(4, || false), Turn::Poisoned);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, AtomicBool, AtomicU64};

    /// The writer's protocol in miniature: `requested` is the highest
    /// target asked for, a round "writes" up to it and "syncs" by raising
    /// `durable`.
    struct Log {
        queue: CommitQueue,
        requested: AtomicU64,
        durable: AtomicU64,
        poisoned: AtomicBool,
        /// True during a leader's round.
        leading: AtomicBool,
    }

    impl Log {
        fn new(wait: Policy) -> Self {
            Log {
                queue: CommitQueue::new(wait),
                requested: AtomicU64::new(0),
                durable: AtomicU64::new(0),
                poisoned: AtomicBool::new(false),
                leading: AtomicBool::new(false),
            }
        }

        /// Returns true once `target` is durable, false if poisoned.
        fn flush(&self, target: u64, fail: bool) -> bool {
            self.requested.fetch_max(target, Ordering::SeqCst);
            loop {
                if self.poisoned.load(Ordering::SeqCst) {
                    return false;
                }
                if self.durable.load(Ordering::SeqCst) >= target {
                    return true;
                }
                let ready = || {
                    self.durable.load(Ordering::SeqCst) >= target
                        || self.poisoned.load(Ordering::SeqCst)
                };
                match self.queue.enter(target, ready) {
                    Turn::Lead => {
                        if !self.lead(target, fail) {
                            return false;
                        }
                    }
                    Turn::Poisoned => return false,
                    Turn::Ready | Turn::Covered => {}
                }
            }
        }

        /// A round as the leader, as `Writer::lead` runs it; it must be
        /// the only round in progress: at most one leader at a time.
        fn lead(&self, target: u64, fail: bool) -> bool {
            assert!(!self.leading.swap(true, Ordering::SeqCst), "two leaders");
            let covers = self.requested.load(Ordering::SeqCst).max(target);
            if fail {
                self.poisoned.store(true, Ordering::SeqCst);
                self.leading.store(false, Ordering::SeqCst);
                self.queue.poison();
                return false;
            }
            self.durable.fetch_max(covers, Ordering::SeqCst);
            let durable = self.durable.load(Ordering::SeqCst);
            self.leading.store(false, Ordering::SeqCst);
            self.queue.release_covered(durable);
            true
        }
    }

    /// Checks `f` under loom with at most two preemptions per execution.
    fn bounded_model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(f);
    }

    /// Three flushers with different targets all return with their target
    /// durable: nobody is left parked; parked flushers wait as `wait` says.
    fn every_flusher_is_covered_or_leads(wait: Policy) {
        bounded_model(move || {
            let log = Arc::new(Log::new(wait));
            let handles: Vec<_> = [2u64, 3]
                .into_iter()
                .map(|t| {
                    let log = log.clone();
                    thread::spawn(move || assert!(log.flush(t, false)))
                })
                .collect();
            assert!(log.flush(1, false));
            for h in handles {
                h.join().unwrap();
            }
            assert!(log.durable.load(Ordering::SeqCst) >= 3);
            assert_eq!(log.queue.parked(), 0);
        });
    }

    #[test]
    fn every_flusher_is_covered_or_leads_parking_at_once() {
        every_flusher_is_covered_or_leads(Policy::PARK);
    }

    #[test]
    fn every_flusher_is_covered_or_leads_spinning_first() {
        every_flusher_is_covered_or_leads(Policy::SPIN_THEN_PARK);
    }

    /// Two committers, two flushes each (the pattern the lone retrier's
    /// grace serves): one leader at a time, every flush returns durable,
    /// nobody is left parked.
    #[test]
    fn two_committers_flushing_in_turn() {
        bounded_model(|| {
            let log = Arc::new(Log::new(Policy::PARK));
            let log2 = log.clone();
            let t = thread::spawn(move || {
                assert!(log2.flush(2, false));
                assert!(log2.flush(4, false));
            });
            assert!(log.flush(1, false));
            assert!(log.flush(3, false));
            t.join().unwrap();
            assert!(log.durable.load(Ordering::SeqCst) >= 4);
            assert_eq!(log.queue.parked(), 0);
        });
    }

    /// A leader that fails wakes the flusher parked behind it, which fails
    /// too; nobody hangs.
    #[test]
    fn a_failed_round_wakes_everyone() {
        loom::model(|| {
            let log = Arc::new(Log::new(Policy::PARK));
            let log2 = log.clone();
            let t = thread::spawn(move || log2.flush(2, false));
            let mine = log.flush(1, true);
            let theirs = t.join().unwrap();
            // Each either was covered by a round that succeeded or fails.
            let durable = log.durable.load(Ordering::SeqCst);
            assert!(!mine || durable >= 1);
            assert!(!theirs || durable >= 2);
            assert_eq!(log.queue.parked(), 0);
        });
    }
}
