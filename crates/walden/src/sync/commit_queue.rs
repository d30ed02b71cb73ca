//! An LSN-ordered queue of flushers: group commit with one leader and no
//! thundering herd.
//!
//! PostgreSQL queues every flusher on `WALWriteLock` and wakes them all
//! when the holder is done; RocksDB's write thread and raft-engine instead
//! keep one leader that works for everyone queued behind it. Here a flusher
//! whose target is not durable yet calls [`CommitQueue::enter`]: it becomes
//! the leader if there is none, else it parks under its target.
//!
//! The leader writes, then calls [`CommitQueue::hand_off`] with the point
//! its round will make durable (`covers`). As a rule it keeps the lead: a
//! thread that is running takes the next round, because waking a parked
//! one puts a scheduler wake-up (up to a tick on a loaded machine) on the
//! log's critical path. Only after [`LEAD_ROUNDS`] rounds in a row, and if
//! a flusher is parked above `covers`, does it hand the lead to the lowest
//! such flusher (exactly one), which then writes while the old leader's
//! sync is in flight: the wake-up overlaps that sync, and no thread leads
//! for ever. Once the round's sync is done the leader calls
//! [`CommitQueue::release_covered`] with the durable point, which wakes
//! exactly the parked flushers whose target it covers; if the caller still
//! leads and flushers remain parked, it returns the highest of their
//! targets and the caller leads another round for them, else the queue is
//! left without a leader.
//!
//! Invariant (no lost wake-up): a flusher parks only while a leader is
//! active, under the queue's lock, after finding its target not durable
//! under that lock, and the leader flag is cleared only under that lock
//! with nobody parked. Every leader ends each round with a
//! `release_covered` that either leaves nobody parked or keeps a leader
//! (itself, or the one it handed to). A flusher parking after the release
//! re-checks the durable point under the lock first, so it sees what the
//! release saw. [`CommitQueue::poison`] wakes everyone with
//! [`Turn::Poisoned`], and every later `enter` returns it.
//!
//! The leader's contract: after [`Turn::Lead`], per round, call `hand_off`
//! exactly once, then `release_covered` once the round is over (on
//! success), passing what `hand_off` returned, and lead again while it
//! returns a target; or `poison` (on failure).

use std::collections::BTreeMap;

use super::backoff::{Backoff, Policy};
use super::{Arc, AtomicU32, Condvar, Mutex, Ordering};

/// Spins before parking, as [`super::WaitQueue`] does: a wake-up costs tens
/// of microseconds, a few microseconds of spinning may save it.
const BEFORE_PARKING: Policy = Policy {
    spin_steps: if cfg!(loom) { 1 } else { 200 },
    doubling: false,
    yields: 0,
    sleep_cap_us: None,
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

impl Turn {
    fn code(self) -> u32 {
        match self {
            Turn::Ready => 1,
            Turn::Lead => 2,
            Turn::Covered => 3,
            Turn::Poisoned => 4,
        }
    }

    /// The turn a verdict code stands for; `None` for 0, no verdict yet.
    fn from_code(code: u32) -> Option<Turn> {
        match code {
            1 => Some(Turn::Ready),
            2 => Some(Turn::Lead),
            3 => Some(Turn::Covered),
            4 => Some(Turn::Poisoned),
            _ => None,
        }
    }
}

/// One parked flusher: its verdict, and where it sleeps until there is one.
#[derive(Debug, Default)]
struct Waiter {
    verdict: AtomicU32,
    lock: Mutex<()>,
    cond: Condvar,
}

impl Waiter {
    /// Gives the waiter its verdict and wakes it (only it).
    fn wake(&self, turn: Turn) {
        // Release: pairs with the Acquire in `wait`; the waiter then sees
        // what the waker saw (the durable point, the poison flag).
        self.verdict.store(turn.code(), Ordering::Release);
        // Taking the lock means the waiter is either before its check under
        // the lock (and sees the verdict) or already in `wait`.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.cond.notify_one();
    }

    fn verdict(&self) -> Option<Turn> {
        // Acquire: pairs with the Release in `wake`.
        Turn::from_code(self.verdict.load(Ordering::Acquire))
    }

    fn wait(&self) -> Turn {
        let mut backoff = Backoff::new(BEFORE_PARKING);
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

/// Rounds a leader leads in a row before it hands the lead to a parked
/// flusher (see the module docs): it bounds the leader's own latency.
/// Under loom, 2: the model then reaches both a kept and a handed lead.
pub const LEAD_ROUNDS: u32 = if cfg!(loom) { 2 } else { 4 };

#[derive(Debug, Default)]
struct Inner {
    /// True while a flusher leads: from [`Turn::Lead`] to the
    /// `release_covered` that leaves nobody parked.
    leader: bool,
    poisoned: bool,
    /// Tie-breaker for equal targets, in arrival order.
    next_id: u64,
    /// Parked flushers by (target, arrival).
    parked: BTreeMap<(u64, u64), Arc<Waiter>>,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct CommitQueue {
    inner: Mutex<Inner>,
}

impl CommitQueue {
    /// An empty queue with no leader.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by a flusher whose `target` is not durable: returns
    /// [`Turn::Ready`] if `ready()` holds under the queue's lock,
    /// [`Turn::Lead`] if there is no leader, and otherwise parks until a
    /// round covers `target` ([`Turn::Covered`]), leadership is handed to
    /// it ([`Turn::Lead`]) or the queue is poisoned. `ready` must read the
    /// durable point (and the poison flag) with at least `Acquire`.
    pub fn enter(&self, target: u64, ready: impl FnOnce() -> bool) -> Turn {
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
        waiter.wait()
    }

    /// The leader is done writing its `round`-th round in a row (from 1);
    /// that round will make everything below `covers` durable (or fail).
    /// Returns true if the caller keeps the lead (see the module docs);
    /// false if it handed it to the parked flusher with the lowest target
    /// above `covers`, which happens only from round [`LEAD_ROUNDS`] on.
    pub fn hand_off(&self, covers: u64, round: u32) -> bool {
        if round < LEAD_ROUNDS {
            return true;
        }
        let next = {
            let mut inner = self.lock();
            let next = match covers.checked_add(1) {
                Some(above) => inner.parked.range((above, 0)..).next().map(|(k, _)| *k),
                None => None,
            };
            next.and_then(|k| inner.parked.remove(&k))
        };
        match next {
            Some(waiter) => {
                waiter.wake(Turn::Lead);
                false
            }
            None => true,
        }
    }

    /// Everything below `durable` is durable (the caller has published it
    /// with at least `Release`): wakes exactly the parked flushers whose
    /// target is at most `durable`. `leading` is what the caller's
    /// `hand_off` returned. If the caller still leads and flushers remain
    /// parked, returns the highest of their targets: the caller leads
    /// another round for them. Otherwise returns `None`, and a caller that
    /// led leaves the queue without a leader.
    pub fn release_covered(&self, durable: u64, leading: bool) -> Option<u64> {
        let (covered, again) = {
            let mut inner = self.lock();
            let covered = match durable.checked_add(1) {
                Some(above) => {
                    let rest = inner.parked.split_off(&(above, 0));
                    std::mem::replace(&mut inner.parked, rest)
                }
                None => std::mem::take(&mut inner.parked),
            };
            let highest = inner
                .parked
                .last_key_value()
                .map(|((target, _), _)| *target);
            let again = match highest {
                Some(target) if leading && !inner.poisoned => Some(target),
                _ => {
                    if leading {
                        inner.leader = false;
                    }
                    None
                }
            };
            (covered, again)
        };
        for waiter in covered.values() {
            waiter.wake(Turn::Covered);
        }
        again
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
            waiter.wake(Turn::Poisoned);
        }
    }

    /// Number of parked flushers.
    #[cfg(test)]
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

    /// The leader keeps the lead for its first rounds; a release wakes
    /// exactly the covered flushers and sends the leader round again for
    /// the rest; from round `LEAD_ROUNDS` a hand-off wakes exactly one
    /// flusher, the lowest above what the round covers.
    #[test]
    fn wakes_only_the_covered_and_one_next_leader() {
        let q = Arc::new(CommitQueue::new());
        assert_eq!(q.enter(5, || false), Turn::Lead);
        let (tx, rx) = mpsc::channel();
        for target in [30, 10, 20, 40, 50] {
            park(&q, target, &tx);
        }
        wait_parked(&q, 5);
        // Rounds before LEAD_ROUNDS keep the lead and wake nobody.
        for round in 1..LEAD_ROUNDS {
            assert!(q.hand_off(15, round));
        }
        assert_eq!(q.parked(), 5);
        assert!(rx.try_recv().is_err());
        assert_eq!(q.release_covered(15, true), Some(50));
        assert_eq!(rx.recv().unwrap(), (10, Turn::Covered));
        assert_eq!(q.parked(), 4);
        // Round LEAD_ROUNDS covers 25: 30 leads next, the old leader's
        // release wakes 20 and leaves 40 and 50 to the new leader.
        assert!(!q.hand_off(25, LEAD_ROUNDS));
        assert_eq!(rx.recv().unwrap(), (30, Turn::Lead));
        assert_eq!(q.release_covered(25, false), None);
        assert_eq!(rx.recv().unwrap(), (20, Turn::Covered));
        assert_eq!(q.parked(), 2);
        // The new leader's round covers 40: it leads again for 50.
        assert!(q.hand_off(40, 1));
        assert_eq!(q.release_covered(40, true), Some(50));
        assert_eq!(rx.recv().unwrap(), (40, Turn::Covered));
        assert!(q.hand_off(50, 2));
        assert_eq!(q.release_covered(50, true), None);
        assert_eq!(rx.recv().unwrap(), (50, Turn::Covered));
        assert_eq!(q.parked(), 0);
        // Nobody parked: the lead ended, the next flusher leads.
        assert_eq!(q.enter(60, || false), Turn::Lead);
        assert_eq!(q.enter(60, || true), Turn::Ready);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn poison_wakes_everyone_and_refuses_newcomers() {
        let q = Arc::new(CommitQueue::new());
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
        /// True while a leader computes what its round covers.
        writing: AtomicBool,
    }

    impl Log {
        fn new() -> Self {
            Log {
                queue: CommitQueue::new(),
                requested: AtomicU64::new(0),
                durable: AtomicU64::new(0),
                poisoned: AtomicBool::new(false),
                writing: AtomicBool::new(false),
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

        /// Rounds as the leader, as `Writer::lead` runs them. Each round's
        /// "write" (up to `hand_off`) must be the only one in progress: at
        /// most one leader at a time.
        fn lead(&self, target: u64, fail: bool) -> bool {
            let mut round = 1;
            let mut target = target;
            loop {
                assert!(!self.writing.swap(true, Ordering::SeqCst), "two leaders");
                let covers = self.requested.load(Ordering::SeqCst).max(target);
                self.writing.store(false, Ordering::SeqCst);
                let leading = self.queue.hand_off(covers, round);
                if fail {
                    self.poisoned.store(true, Ordering::SeqCst);
                    self.queue.poison();
                    return false;
                }
                self.durable.fetch_max(covers, Ordering::SeqCst);
                let durable = self.durable.load(Ordering::SeqCst);
                match self.queue.release_covered(durable, leading) {
                    Some(next) => {
                        assert!(leading && next > durable);
                        target = next;
                        round += 1;
                    }
                    None => return true,
                }
            }
        }
    }

    /// Three flushers with different targets all return with their target
    /// durable: nobody is left parked.
    #[test]
    fn every_flusher_is_covered_or_leads() {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(|| {
            let log = Arc::new(Log::new());
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

    /// A leader that fails wakes the flusher parked behind it, which fails
    /// too; nobody hangs.
    #[test]
    fn a_failed_round_wakes_everyone() {
        loom::model(|| {
            let log = Arc::new(Log::new());
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
