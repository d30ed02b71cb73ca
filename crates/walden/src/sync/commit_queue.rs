//! Group commit with one leader, and wake-ups by round groups: no
//! thundering herd, one wake-up call per group.
//!
//! PostgreSQL queues every flusher on `WALWriteLock` and wakes them all
//! when the holder is done; RocksDB's write thread and raft-engine instead
//! keep one leader that works for everyone queued behind it. Here a flusher
//! whose target is not durable yet calls [`CommitQueue::enter`]: it becomes
//! the leader if there is none, else it sleeps in a group. The leader
//! announces what its round will cover ([`CommitQueue::announce`]: the
//! highest request, below which everything has finished), writes and
//! syncs; then it calls [`CommitQueue::release_covered`] with the durable
//! point, which wakes its round's group and ends the lead.
//!
//! Groups: a flusher that parks while the round in progress has announced
//! a cover at or above its target joins that round's group; one whose
//! target is higher joins the next round's group. A flusher parking before
//! the announcement joins the round's group too: almost always covered,
//! as it asked for its flush before entering, and if not, it is woken with
//! the group, finds its target not durable and enters again. Each group
//! sleeps on one [`Futex`] word (two words, by the round's parity), so a
//! release wakes its whole group with one call. Waking them one condition
//! variable at a time, as this queue did before, let the first woken
//! flusher preempt the leader with the rest still asleep: a profile of 64
//! committers on 2 vCPUs found the leader switched out about six times a
//! round inside that loop (docs/io.md, "Group commit").
//!
//! The next round goes to a thread that is running if there is one: waking
//! a parked thread puts a scheduler wake-up (up to a tick on a loaded
//! machine) on the log's critical path, while the leader that just
//! returned, or any newcomer, can start the next round at once (as with
//! PostgreSQL's lock, which the releasing thread may take again). So the
//! release leaves the queue without a leader. If the next group is all
//! covered by the release too (its highest target is durable), it is woken
//! with the round's group; otherwise it becomes the coming round's group
//! and one of it is woken to retry (the word is bumped, so one that is not
//! asleep yet returns as well): a retrier leads if nobody has taken the
//! lead by the time it runs, else it parks again behind the new leader. A
//! retrier that finds its own target durable but the group it came from
//! still without a leader leads all the same: the writer's round then
//! covers the highest request, which covers the group.
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
//! writer from its sync method and `Config::flush_wait_spin`: behind a
//! round that syncs (a hundred microseconds and more) it yields the CPU
//! for about a millisecond before it sleeps ([`Policy::YIELD_THEN_PARK`],
//! the default), or sleeps at once ([`Policy::PARK`]). A spin of CPU
//! relaxes cannot outlast the round, and with more committers than cores
//! it only takes the CPU from the threads that make progress (a profile of
//! 64 committers on 2 vCPUs spent 28 % of its time in that spin); a yield
//! gives the CPU to any thread with work, and a flusher that is still
//! yielding when its round ends sees it without the wake-up of a sleeping
//! thread (100 B commits at 64 threads: a fifth more per second on 2
//! vCPUs, docs/io.md). Behind a round that only writes
//! (`SyncMethod::None`, a few microseconds) it spins first
//! ([`Policy::SPIN_THEN_PARK`]), as the round is often over before a sleep
//! would even start.
//!
//! Invariant (no lost wake-up): a flusher parks only while a leader is
//! active, under the queue's lock, after finding its target not durable
//! under that lock, and reads its group's word under that lock. A group's
//! word is bumped only under the lock, by the release that wakes it (or by
//! `poison`), so a sleeper either sees the bump or is asleep when the wake
//! call comes ([`Futex`]'s contract). The round's group is always woken by
//! the round's release. The next group is woken whole by that release if
//! covered, else it becomes the coming round's group, which that round's
//! release wakes; and the coming round happens: the release leaves no
//! leader and wakes at least one of the group (`retry_group` set), which
//! enters again under the lock and, finding no leader, leads, even if its
//! own target is durable; or it finds a leader, whose round's release
//! wakes the group. [`CommitQueue::poison`] wakes everyone, and every
//! later `enter` returns [`Turn::Poisoned`].
//!
//! The leader's contract: after [`Turn::Lead`], write up to at least the
//! highest request (the flushers parked behind it asked for no more), call
//! `announce` with the round's target before writing if it will sync,
//! then `release_covered` once its round is over (on success), or `poison`
//! (on failure).
//!
//! With overlapped syncs (`Config::overlap_syncs`) a leader releases
//! before its sync, with what is durable already, and once its sync is
//! over calls [`CommitQueue::wake_covered`]: that wakes every parked
//! flusher without touching the lead (one wake-up call per group); each
//! finds its target durable, or enters again and leads if nobody does, or
//! parks behind the leader, so the invariant above holds.

use super::backoff::{Backoff, Policy};
use super::futex::Futex;
use super::{AtomicBool, AtomicU32, Mutex, Ordering};

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

#[derive(Debug, Default)]
struct Inner {
    /// True while a flusher leads: from [`Turn::Lead`] to its
    /// `release_covered`.
    leader: bool,
    poisoned: bool,
    /// Rounds released so far; its parity names the round group's word
    /// (the coming or current round's), the other parity the next group's.
    round: u64,
    /// What the current round will make durable, once its leader has
    /// announced it.
    cover: Option<u64>,
    /// Flushers that joined each group since its word was last bumped (an
    /// upper bound on those asleep on it: one that left is still counted).
    members: [u32; 2],
    /// The highest target in the next group.
    next_max: u64,
}

impl Inner {
    /// The index of the current (or coming) round's group.
    fn current(&self) -> usize {
        (self.round % 2) as usize
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct CommitQueue {
    inner: Mutex<Inner>,
    /// The groups' words, by round parity.
    groups: [Futex; 2],
    /// Set under the lock by `poison`, read by woken flushers.
    poisoned: AtomicBool,
    /// From a release that left a group without a leader and woke one of
    /// it to retry until a flusher takes the lead: that group's index plus
    /// one (0: none). A flusher woken from that group enters again under
    /// the lock even if its own target is durable.
    retry_group: AtomicU32,
    /// Set by a release whose retrier was the only one left parked.
    retry_alone: AtomicBool,
    /// How a parked flusher waits before it sleeps (see the module docs).
    wait: Policy,
}

impl CommitQueue {
    /// An empty queue with no leader whose parked flushers wait as `wait`
    /// says: [`Policy::YIELD_THEN_PARK`] or [`Policy::PARK`] where rounds
    /// sync, [`Policy::SPIN_THEN_PARK`] where they only write (see the
    /// module docs).
    pub fn new(wait: Policy) -> Self {
        CommitQueue {
            inner: Mutex::default(),
            groups: Default::default(),
            poisoned: AtomicBool::new(false),
            retry_group: AtomicU32::new(0),
            retry_alone: AtomicBool::new(false),
            wait,
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by a flusher whose `target` is not durable: returns
    /// [`Turn::Ready`] if `ready()` holds under the queue's lock,
    /// [`Turn::Lead`] if there is no leader (or if there is none and a
    /// group waits for one, see the module docs), and otherwise parks until
    /// its group is woken and finds its target durable ([`Turn::Covered`])
    /// or the queue poisoned; woken without either, it does all this
    /// again. `ready` must read the durable point (and the poison flag)
    /// with at least `Acquire`.
    pub fn enter(&self, target: u64, ready: impl Fn() -> bool) -> Turn {
        self.enter_waiting(target, ready, self.wait)
    }

    /// [`CommitQueue::enter`] for a flusher that sleeps at once if it
    /// parks, whatever the queue's policy: one that no commit waits for
    /// (the background writer), whose spin would only take a CPU from the
    /// threads that make progress.
    pub fn enter_sleeping(&self, target: u64, ready: impl Fn() -> bool) -> Turn {
        self.enter_waiting(target, ready, Policy::PARK)
    }

    fn enter_waiting(&self, target: u64, ready: impl Fn() -> bool, wait: Policy) -> Turn {
        loop {
            let (group, seen) = {
                let mut inner = self.lock();
                if inner.poisoned {
                    return Turn::Poisoned;
                }
                let current = inner.current();
                if ready() && (inner.leader || inner.members[current] == 0) {
                    return Turn::Ready;
                }
                if !inner.leader {
                    inner.leader = true;
                    inner.cover = None;
                    // Relaxed: read and written under the lock; woken
                    // flushers read it only to choose the locked path.
                    self.retry_group.store(0, Ordering::Relaxed);
                    return Turn::Lead;
                }
                let group = match inner.cover {
                    Some(cover) if target > cover => {
                        inner.next_max = inner.next_max.max(target);
                        current ^ 1
                    }
                    _ => current,
                };
                inner.members[group] += 1;
                (group, self.groups[group].load())
            };
            let word = &self.groups[group];
            let mut backoff = Backoff::new(wait);
            while word.load() == seen {
                if backoff.is_completed() {
                    word.wait(seen);
                } else {
                    backoff.snooze();
                }
            }
            // Acquire: pairs with the store in `poison` (made before its
            // bump, which this flusher has seen).
            if self.poisoned.load(Ordering::Acquire) {
                return Turn::Poisoned;
            }
            // Relaxed: read after this flusher saw its group's bump, which
            // the release made after setting it, under the lock; a stale 0
            // is impossible and a stale group index only sends it through
            // the locked path.
            if ready() && self.retry_group.load(Ordering::Relaxed) != group as u32 + 1 {
                return Turn::Covered;
            }
            // Relaxed: a hint for the grace only.
            if self.retry_alone.swap(false, Ordering::Relaxed) {
                Backoff::new(RETRY_GRACE).snooze();
            }
        }
    }

    /// Called by the leader before its round's writes: the round will make
    /// everything below `cover` durable. Flushers parking from now on with
    /// a higher target join the next group.
    pub fn announce(&self, cover: u64) {
        let mut inner = self.lock();
        if inner.leader {
            inner.cover = Some(cover);
        }
    }

    /// Ends the lead: everything below `durable` is durable (the caller has
    /// published it with at least `Release`). Wakes the round's group, and
    /// the next group too if `durable` covers it, else one of it to retry
    /// (see the module docs).
    pub fn release_covered(&self, durable: u64) {
        let (current, next) = {
            let mut inner = self.lock();
            inner.leader = false;
            let current = inner.current();
            let next = current ^ 1;
            let wake_current = inner.members[current] > 0;
            if wake_current {
                self.groups[current].bump();
            }
            inner.members[current] = 0;
            let wake_next = match inner.members[next] {
                0 => None,
                _ if inner.next_max <= durable => {
                    inner.members[next] = 0;
                    Some(true)
                }
                n => {
                    // Relaxed: under the lock (see the fields).
                    self.retry_group.store(next as u32 + 1, Ordering::Relaxed);
                    self.retry_alone.store(n == 1, Ordering::Relaxed);
                    Some(false)
                }
            };
            if wake_next.is_some() {
                self.groups[next].bump();
            }
            inner.round += 1;
            inner.cover = None;
            inner.next_max = 0;
            (
                wake_current.then_some(current),
                wake_next.map(|all| (next, all)),
            )
        };
        if let Some(group) = current {
            self.groups[group].wake_all();
        }
        match next {
            Some((group, true)) => self.groups[group].wake_all(),
            Some((group, false)) => self.groups[group].wake_one(),
            None => {}
        }
    }

    /// For a leader that released before its sync (overlapped syncs), once
    /// that sync is over and its durable point published with at least
    /// `Release`: wakes every parked flusher, leaving the lead as it is;
    /// each finds its target durable, or enters again (see the module docs).
    pub fn wake_covered(&self) {
        self.wake_everyone(false);
    }

    /// Wakes every parked flusher with [`Turn::Poisoned`]; every later
    /// [`CommitQueue::enter`] returns it too.
    pub fn poison(&self) {
        self.wake_everyone(true);
    }

    /// Wakes both groups (those with members, or both if `poison`, which
    /// it sets first), one wake-up call per group.
    fn wake_everyone(&self, poison: bool) {
        let woken = {
            let mut inner = self.lock();
            if poison {
                inner.poisoned = true;
                // Release: before the bumps, so a flusher that sees a bump
                // sees this (see `enter`).
                self.poisoned.store(true, Ordering::Release);
            }
            let woken = inner.members.map(|members| poison || members > 0);
            inner.members = [0, 0];
            for (group, _) in self.groups.iter().zip(woken).filter(|(_, w)| *w) {
                group.bump();
            }
            woken
        };
        for (group, _) in self.groups.iter().zip(woken).filter(|(_, w)| *w) {
            group.wake_all();
        }
    }

    /// Flushers that joined a group since it was last woken (for the unit
    /// tests: exact while no release has run since).
    #[cfg(all(test, not(any(loom, shuttle))))]
    pub fn parked(&self) -> usize {
        let inner = self.lock();
        (inner.members[0] + inner.members[1]) as usize
    }
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::{mpsc, Arc};

    /// Parks a flusher for `target` on its own thread, durable once
    /// `durable` reaches it; its turn comes back on `tx`.
    fn park(
        q: &Arc<CommitQueue>,
        durable: &Arc<AtomicU64>,
        target: u64,
        tx: &mpsc::Sender<(u64, Turn)>,
    ) {
        let (q, durable, tx) = (q.clone(), durable.clone(), tx.clone());
        std::thread::spawn(move || {
            let turn = q.enter(target, || durable.load(Ordering::Acquire) >= target);
            tx.send((target, turn)).unwrap();
        });
    }

    fn wait_parked(q: &CommitQueue, n: usize) {
        while q.parked() != n {
            std::thread::yield_now();
        }
    }

    /// A release wakes its round's group; the next group stays asleep but
    /// for one retrier, which leads if nobody else came; a release that
    /// covers the next group wakes it whole.
    #[test]
    fn wakes_the_round_group_and_one_retrier() {
        let q = Arc::new(CommitQueue::new(Policy::PARK));
        let durable = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        assert_eq!(q.enter(5, || false), Turn::Lead);
        // Parked before the announcement: the round's group.
        park(&q, &durable, 10, &tx);
        wait_parked(&q, 1);
        q.announce(15);
        // Above the cover: the next group.
        for target in [20, 30] {
            park(&q, &durable, target, &tx);
        }
        wait_parked(&q, 3);
        durable.store(15, Ordering::Release);
        q.release_covered(15);
        // 10 is covered; one of 20 and 30 retries and, finding no leader,
        // leads; the other stays asleep.
        let mut woken = [rx.recv().unwrap(), rx.recv().unwrap()];
        woken.sort_unstable_by_key(|(t, _)| *t);
        assert_eq!(woken[0], (10, Turn::Covered));
        assert_eq!(woken[1].1, Turn::Lead);
        assert!(rx.try_recv().is_err());
        // The retrier's round covers the other one (the highest request).
        q.announce(30);
        durable.store(30, Ordering::Release);
        q.release_covered(30);
        let other = rx.recv().unwrap();
        assert_eq!(other.1, Turn::Covered);
        assert_ne!(other.0, woken[1].0);
        // Nobody parked, no leader: the next flusher leads.
        assert_eq!(q.enter(60, || false), Turn::Lead);
        park(&q, &durable, 70, &tx);
        wait_parked(&q, 1);
        q.announce(65);
        park(&q, &durable, 80, &tx);
        wait_parked(&q, 2);
        // The round went further than it announced: both groups covered.
        durable.store(80, Ordering::Release);
        q.release_covered(80);
        let mut woken = [rx.recv().unwrap(), rx.recv().unwrap()];
        woken.sort_unstable_by_key(|(t, _)| *t);
        assert_eq!(woken, [(70, Turn::Covered), (80, Turn::Covered)]);
        assert_eq!(q.enter(90, || true), Turn::Ready);
    }

    /// Overlapped syncs: a leader that released before its sync wakes every
    /// parked flusher once its sync is over, without ending the next
    /// leader's lead: the one its sync covered returns, the other parks
    /// again behind that leader, whose release wakes it.
    #[test]
    fn wake_covered_leaves_the_lead_alone_but_never_strands_a_flusher() {
        let q = Arc::new(CommitQueue::new(Policy::PARK));
        let durable = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        // A leads and releases before its sync; B leads while it syncs.
        assert_eq!(q.enter(5, || false), Turn::Lead);
        q.release_covered(0);
        assert_eq!(q.enter(8, || false), Turn::Lead);
        park(&q, &durable, 5, &tx);
        park(&q, &durable, 20, &tx);
        wait_parked(&q, 2);
        // A's sync made 5 durable: 5 returns, 20 parks again behind B.
        durable.store(5, Ordering::Release);
        q.wake_covered();
        assert_eq!(rx.recv().unwrap(), (5, Turn::Covered));
        wait_parked(&q, 1);
        assert!(rx.try_recv().is_err(), "B still leads: 20 waits for it");
        durable.store(20, Ordering::Release);
        q.release_covered(20);
        assert_eq!(rx.recv().unwrap(), (20, Turn::Covered));
        assert_eq!(q.enter(21, || false), Turn::Lead);
    }

    #[test]
    fn poison_wakes_everyone_and_refuses_newcomers() {
        let q = Arc::new(CommitQueue::new(Policy::PARK));
        let durable = Arc::new(AtomicU64::new(0));
        assert_eq!(q.enter(1, || false), Turn::Lead);
        let (tx, rx) = mpsc::channel();
        park(&q, &durable, 2, &tx);
        wait_parked(&q, 1);
        q.announce(2);
        park(&q, &durable, 3, &tx);
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
    use crate::sync::{thread, Arc, AtomicU64};

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
            self.flush_with(target, fail, false)
        }

        /// As `flush`; with `overlap`, a round as `Writer::lead` runs it
        /// with overlapped syncs.
        fn flush_with(&self, target: u64, fail: bool, overlap: bool) -> bool {
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
                    Turn::Lead if overlap => self.lead_overlapped(target),
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
            self.queue.announce(covers);
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

    impl Log {
        /// A round with overlapped syncs: the lead ends after the "write"
        /// (reading what to cover), before the "sync"; the sync's waiters
        /// are woken with `wake_covered`. Other rounds may run meanwhile.
        fn lead_overlapped(&self, target: u64) {
            let covers = self.requested.load(Ordering::SeqCst).max(target);
            self.queue.announce(covers);
            self.queue
                .release_covered(self.durable.load(Ordering::SeqCst));
            self.durable.fetch_max(covers, Ordering::SeqCst);
            self.queue.wake_covered();
        }
    }

    /// Overlapped syncs: three flushers, each round handing the lead on
    /// before its sync; every flush returns with its target durable and
    /// nobody is left parked (among the interleavings: the early release's
    /// retrier finding its target durable and leaving, the lowest flusher
    /// still parked, which `wake_covered` must wake).
    #[test]
    fn overlapped_rounds_strand_nobody() {
        for wait in [Policy::PARK, Policy::YIELD_THEN_PARK] {
            bounded_model(move || three_flushers(true, wait));
        }
    }

    /// Checks `f` under loom with at most two preemptions per execution.
    fn bounded_model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(2);
        builder.check(f);
    }

    /// Three flushers with targets 1, 2 and 3, rounds overlapped if
    /// `overlap`, parked flushers waiting as `wait` says: all return with
    /// their target durable (a flusher left parked is a loom deadlock).
    fn three_flushers(overlap: bool, wait: Policy) {
        let log = Arc::new(Log::new(wait));
        let handles: Vec<_> = [2u64, 3]
            .into_iter()
            .map(|t| {
                let log = log.clone();
                thread::spawn(move || assert!(log.flush_with(t, false, overlap)))
            })
            .collect();
        assert!(log.flush_with(1, false, overlap));
        for h in handles {
            h.join().unwrap();
        }
        assert!(log.durable.load(Ordering::SeqCst) >= 3);
    }

    /// Three flushers with different targets all return with their target
    /// durable: nobody is left parked; parked flushers wait as `wait` says.
    fn every_flusher_is_covered_or_leads(wait: Policy) {
        bounded_model(move || three_flushers(false, wait));
    }

    #[test]
    fn every_flusher_is_covered_or_leads_parking_at_once() {
        every_flusher_is_covered_or_leads(Policy::PARK);
    }

    #[test]
    fn every_flusher_is_covered_or_leads_spinning_first() {
        every_flusher_is_covered_or_leads(Policy::SPIN_THEN_PARK);
    }

    #[test]
    fn every_flusher_is_covered_or_leads_yielding_first() {
        every_flusher_is_covered_or_leads(Policy::YIELD_THEN_PARK);
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
        });
    }
}
