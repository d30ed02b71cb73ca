//! Insertion slots: the WAL insertion locks, acquired one at a time by
//! inserters or all at once; their `inserting_at` progress and waiting for
//! in-flight insertions are in [`progress`].
//!
//! PostgreSQL: `WALInsertLocks`, `WALInsertLockAcquire`,
//! `WALInsertLockUpdateInsertingAt`, `WaitXLogInsertionsToFinish`,
//! `WALInsertLockAcquireExclusive`.
//!
//! An inserter holds one slot from before it reserves space until its record
//! is copied into the buffer ring. While it holds it, `inserting_at` says how
//! far it has got: 0 means "unknown, assume below anything you wait for";
//! `x > 0` means "every byte of my record below LSN `x` is copied, and I will
//! not touch anything below `x` again". A flusher asks
//! [`SlotArray::wait_for_inserts`] for the point below which all copies are
//! finished, and writes only up to there. It waits for the holder it saw
//! to advertise enough or to leave, not for the slot to be free: the lock
//! word counts acquisitions and releases (PostgreSQL's
//! `LWLockWaitForVar` waits for the lock to be free, which an inserter
//! taking its slot again for each record seldom lets a waiter see).

use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::config::SlotChoice;
use crate::lsn::Lsn;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{AtomicU64, Ordering, StuckOn, WaitQueue, Watchdog};

#[cfg(all(test, loom))]
mod loom_model;
mod progress;
#[cfg(all(test, shuttle))]
mod shuttle_model;

pub use progress::InsertionProgress;

/// `inserting_at` of a slot held for exclusive (all-slots) access on every
/// slot but the last, so waiters never block on those.
const EXCLUSIVE_MARK: u64 = u64::MAX;

/// One insertion slot, alone on its cache line(s).
#[derive(Debug, Default)]
struct Slot {
    /// The slot's lock word: odd while held ([`is_held`]). Every
    /// acquisition and every release adds 1, so a flusher that saw one
    /// holder knows it has gone once the word changes, even if the slot
    /// was taken again meanwhile ([`SlotArray::wait_for_inserts`]).
    word: AtomicU64,
    /// See the module docs. Only the holder changes it while held.
    inserting_at: AtomicU64,
    /// Waiters for the slot's release or for `inserting_at` to change
    /// (flushers, [`SlotArray::wait_for_inserts`]): woken all at once.
    /// Both queues are [`WaitQueue::seq_cst`]: each notification follows
    /// a `SeqCst` write of `word` or `inserting_at` that their conditions
    /// read with `SeqCst`.
    waiters: WaitQueue,
    /// Waiters to take the slot ([`SlotArray::acquire`]): woken one at a
    /// release ([`WaitQueue::notify_one`]), never by an advertisement.
    lockers: WaitQueue,
    /// Records inserted under this slot (written only by the holder, by
    /// a load and a store: see `count_records`).
    records: AtomicU64,
    /// Bytes reserved under this slot, alignment padding included
    /// (written as `records`).
    bytes: AtomicU64,
    /// Acquisitions that found the slot held and had to wait.
    waits: AtomicU64,
}

/// Counters summed over all slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotStats {
    /// Records inserted.
    pub records: u64,
    /// Bytes reserved, alignment padding included.
    pub bytes: u64,
    /// Slot acquisitions that had to wait for another inserter.
    pub waits: u64,
}

/// The array of insertion slots.
#[derive(Debug)]
pub struct SlotArray {
    slots: Box<[CachePadded<Slot>]>,
    /// How long a wait for another slot's holder may last
    /// ([`crate::Config::stuck_wait_timeout`]).
    stuck_wait: Option<Duration>,
}

/// Whether a slot's lock `word` says it is held.
fn is_held(word: u64) -> bool {
    word % 2 == 1
}

/// A held slot; released (and `inserting_at` cleared) on drop.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    slots: &'a SlotArray,
    index: usize,
}

/// All slots held at once (switch, checkpoint); released on drop.
#[derive(Debug)]
pub struct ExclusiveGuard<'a> {
    slots: &'a SlotArray,
}

thread_local! {
    /// This thread's sticky slot (PostgreSQL: `lockToTry`), `usize::MAX` until first use.
    static STICKY_SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// This thread's current slot and stride for [`SlotChoice::Attempts`],
    /// stride 0 until first use.
    static ATTEMPT_WALK: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

impl Slot {
    /// A free slot.
    fn new() -> Self {
        Slot {
            waiters: WaitQueue::seq_cst(),
            lockers: WaitQueue::seq_cst(),
            ..Slot::default()
        }
    }
}

impl SlotArray {
    /// `n` free slots; `n >= 1`.
    pub fn new(n: usize) -> Self {
        SlotArray {
            slots: (0..n.max(1))
                .map(|_| CachePadded::new(Slot::new()))
                .collect(),
            stuck_wait: None,
        }
    }

    /// The same slots, whose waits for another holder panic with a report
    /// after `limit` (see [`crate::sync::watchdog`]).
    pub fn with_stuck_wait_timeout(self, limit: Option<Duration>) -> Self {
        SlotArray {
            stuck_wait: limit,
            ..self
        }
    }

    /// A watchdog for one wait on another slot's holder.
    fn watchdog(&self) -> Watchdog {
        Watchdog::new(self.stuck_wait)
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    fn try_lock(&self, i: usize) -> bool {
        let s = &self.slots[i];
        // Relaxed: only a guess at the word; the CAS checks it.
        let word = s.word.load(Ordering::Relaxed);
        // Acquire: pairs with the Release in unlock, so we see the previous
        // holder's writes (its counters, its cleared inserting_at).
        // Relaxed on failure: we only learn that it is busy.
        !is_held(word)
            && s.word
                .compare_exchange(
                    word,
                    word + 1,
                    mutant::order(Mutant::SlotAcquireRelaxed, Ordering::Acquire),
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// Blocks until slot `i` is ours; returns true if it had to wait.
    fn lock(&self, i: usize) -> bool {
        if self.try_lock(i) {
            return false;
        }
        let s = &self.slots[i];
        let mut watchdog = self.watchdog();
        loop {
            // SeqCst (⊇ Acquire): the seq_cst WaitQueue contract; pairs
            // with unlock's add.
            s.lockers
                .wait_until(|| !is_held(s.word.load(Ordering::SeqCst)), &mut watchdog)
                .unwrap_or_else(|_| {
                    watchdog.stuck(StuckOn::SlotRelease {
                        slot: i,
                        // Relaxed: for the report only.
                        inserting_at: Lsn(s.inserting_at.load(Ordering::Relaxed)),
                    })
                });
            if self.try_lock(i) {
                // Relaxed: a statistics counter; nothing is read through it.
                s.waits.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
    }

    fn unlock(&self, i: usize) {
        let s = &self.slots[i];
        // Relaxed: published by the SeqCst add to `word` below.
        s.inserting_at.store(0, Ordering::Relaxed);
        // SeqCst (⊇ Release): publishes the copied record bytes to the next
        // holder and to flushers that see the word change (the next
        // holder's CAS continues this release sequence); SeqCst and made
        // before the notifications, as the seq_cst WaitQueue contract
        // asks (their checks are loads). An RMW rather than a
        // store (a `lock xadd`, as costly as the `xchg` of a SeqCst store on
        // x86): every write to `word` is then an RMW, which loom models
        // exactly (there a plain store racing a CAS can produce impossible
        // histories, tokio-rs/loom#254).
        s.word.fetch_add(
            1,
            mutant::order(Mutant::SlotReleaseRelaxed, Ordering::SeqCst),
        );
        s.waiters.notify_all();
        s.lockers.notify_one();
    }

    /// Acquires a slot for one insertion, chosen by `choice`.
    pub fn acquire(&self, choice: SlotChoice) -> SlotGuard<'_> {
        match choice {
            SlotChoice::Sticky => {
                let n = self.len();
                let start = STICKY_SLOT.with(|c| {
                    let v = c.get();
                    if v == usize::MAX {
                        thread_seed() % n
                    } else {
                        v % n
                    }
                });
                let waited = self.lock(start);
                let next = if waited { (start + 1) % n } else { start };
                STICKY_SLOT.with(|c| c.set(next));
                SlotGuard {
                    slots: self,
                    index: start,
                }
            }
            SlotChoice::Attempts(k) => {
                let n = self.len();
                let (mut at, stride) = ATTEMPT_WALK.with(|c| match c.get() {
                    (_, 0) => {
                        let seed = thread_seed();
                        (seed % n, coprime_stride(seed >> 16, n))
                    }
                    (at, stride) => (at % n, stride),
                });
                // `k` conditional tries in all, as the patch's `attempts`:
                // the current slot, then `k - 1` more along the walk.
                let mut won = self.try_lock(at);
                for _ in 1..k {
                    if won {
                        break;
                    }
                    at = (at + stride) % n;
                    won = self.try_lock(at);
                }
                if !won {
                    at = (at + stride) % n;
                    self.lock(at);
                }
                ATTEMPT_WALK.with(|c| c.set((at, stride)));
                SlotGuard {
                    slots: self,
                    index: at,
                }
            }
        }
    }

    /// Acquires every slot, in index order (PostgreSQL:
    /// `WALInsertLockAcquireExclusive`). All but the last advertise
    /// `u64::MAX` so that waiters skip them; the last carries progress.
    pub fn acquire_all(&self) -> ExclusiveGuard<'_> {
        let last = self.len() - 1;
        for i in 0..self.len() {
            self.lock(i);
            if i != last {
                // SeqCst (⊇ Release): waiters read it with SeqCst (the
                // seq_cst WaitQueue contract) and must see the mark before
                // skipping the slot.
                self.slots[i]
                    .inserting_at
                    .store(EXCLUSIVE_MARK, Ordering::SeqCst);
                self.slots[i].waiters.notify_all();
            }
        }
        ExclusiveGuard { slots: self }
    }

    /// Sums the per-slot counters.
    pub fn stats(&self) -> SlotStats {
        let mut t = SlotStats::default();
        for s in self.slots.iter() {
            // Relaxed: statistics, read without synchronisation.
            t.records += s.records.load(Ordering::Relaxed);
            t.bytes += s.bytes.load(Ordering::Relaxed);
            t.waits += s.waits.load(Ordering::Relaxed);
        }
        t
    }
}

/// A stride in `1..=n` coprime with `n`, picked from `seed`: stepping by
/// it from any slot visits every slot before coming back.
fn coprime_stride(seed: usize, n: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut stride = 1 + seed % n;
    while gcd(stride, n) != 1 {
        stride += 1;
    }
    stride
}

/// A per-thread seed for spreading threads over slots.
fn thread_seed() -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() as usize
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.slots.unlock(self.index);
    }
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        for i in (0..self.slots.len()).rev() {
            self.slots.unlock(i);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn strides_visit_every_slot() {
        for n in [1usize, 2, 3, 6, 8, 12, 64, 1000, 1024] {
            for seed in 0..50 {
                let stride = coprime_stride(seed * 7919, n);
                let mut seen = vec![false; n];
                let mut at = seed % n;
                for _ in 0..n {
                    seen[at] = true;
                    at = (at + stride) % n;
                }
                assert!(seen.iter().all(|&s| s), "n {n} stride {stride}");
            }
        }
    }

    /// A slot held for ever (the test holds it): a flusher waiting for the
    /// insertions below a point, and an inserter waiting for the slot, each
    /// panic after the limit with a report naming the slot and the LSNs.
    #[test]
    fn waits_on_a_slot_never_released_are_reported() {
        use crate::sync::watchdog::stuck_report;
        let slots =
            SlotArray::new(2).with_stuck_wait_timeout(Some(std::time::Duration::from_millis(50)));
        let held = slots.acquire(SlotChoice::Sticky);
        held.advertise(Lsn(0x1_0000_1000));
        let report = stuck_report(|| {
            slots.wait_for_inserts(Lsn(0x1_0000_2000), Lsn(0x1_0000_3000));
        });
        let slot = format!("slot {} is held", held.index);
        for part in [slot.as_str(), "advertised 1/1000", "below 1/2000"] {
            assert!(report.contains(part), "{part} missing from: {report}");
        }
        let report = stuck_report(|| drop(slots.acquire_all()));
        let slot = format!("insertion slot {} to be released", held.index);
        for part in [slot.as_str(), "advertised 1/1000"] {
            assert!(report.contains(part), "{part} missing from: {report}");
        }
    }

    /// A flusher parked on a held slot returns once that holder releases
    /// it, though the slot is taken again at once and kept: it waits for
    /// the holder it saw, not for the slot to be free (which an inserter
    /// taking the slot again for its next record leaves it almost no chance
    /// to see; each of those releases then paid a wake-up syscall).
    #[test]
    fn a_flusher_waits_for_the_holder_it_saw_not_for_a_free_slot() {
        let slots =
            SlotArray::new(1).with_stuck_wait_timeout(Some(std::time::Duration::from_secs(2)));
        let first = slots.acquire(SlotChoice::Sticky);
        std::thread::scope(|s| {
            let flusher = s.spawn(|| slots.wait_for_inserts(Lsn(0x2000), Lsn(0x3000)));
            while slots.slots[0].waiters.parked() == 0 {
                std::thread::yield_now();
            }
            drop(first);
            let again = slots.acquire(SlotChoice::Sticky);
            assert_eq!(again.index, 0);
            let finished = flusher
                .join()
                .expect("the flusher was never woken for good");
            assert_eq!(finished, Lsn(0x3000), "nothing in flight below the end");
            drop(again);
        });
    }

    /// Threads waiting to take a held slot are not woken by its holder's
    /// advertisements, and its release wakes one of them, not all: the
    /// others stay parked (their announcements counted) until the next
    /// release. With one queue for lockers and flushers, woken all at
    /// once, 64 threads on eight slots switched about eight times per
    /// 1 MiB record, most of them to find the slot taken again.
    #[test]
    fn a_release_wakes_one_waiting_locker_and_an_advertisement_none() {
        let slots =
            SlotArray::new(1).with_stuck_wait_timeout(Some(std::time::Duration::from_secs(10)));
        let held = slots.acquire(SlotChoice::Sticky);
        let lockers = &slots.slots[0].lockers;
        // Each taker keeps the slot until `go`: the one the release woke
        // must not release it (waking the other) before the count is read.
        let go = std::sync::atomic::AtomicBool::new(false);
        let take = || {
            let slot = slots.acquire(SlotChoice::Sticky);
            // Acquire: pairs with the Release store below (no data rides on it).
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            drop(slot);
        };
        std::thread::scope(|s| {
            let takers: Vec<_> = (0..2).map(|_| s.spawn(take)).collect();
            lockers.wait_for_parked(2);
            held.advertise(Lsn(0x1000));
            assert_eq!(lockers.parked(), 2, "an advertisement woke a locker");
            drop(held);
            let left = lockers.parked();
            // Release: see the takers' load.
            go.store(true, Ordering::Release);
            // At least the other's announcement: `notify_all` would have
            // cleared both. More if the other woke anyway (the condition
            // variable may wake a thread that was about to wait) and
            // announced itself again.
            assert!(left >= 1, "the release woke both lockers");
            for taker in takers {
                taker.join().expect("a locker was never woken");
            }
        });
        assert_eq!(slots.stats().waits, 2, "both lockers waited");
    }

    #[test]
    fn attempts_moves_past_held_slots_without_blocking() {
        let slots = SlotArray::new(4);
        let held: Vec<_> = (0..3)
            .map(|_| slots.acquire(SlotChoice::Attempts(3)))
            .collect();
        let mut indexes: Vec<_> = held.iter().map(|g| g.index).collect();
        indexes.sort_unstable();
        indexes.dedup();
        assert_eq!(indexes.len(), 3, "three distinct slots");
        let fourth = slots.acquire(SlotChoice::Attempts(3));
        assert!(!indexes.contains(&fourth.index));
        assert_eq!(slots.stats().waits, 0, "no acquisition blocked");
    }

    /// `Attempts(k)` makes `k` conditional tries in all, as seed 000's
    /// patch, then blocks on the next slot along its walk: on 4 slots with
    /// slots `0..=k` held (the test holds them) and a thread walking from
    /// slot 0 by stride 1, the thread parks on slot `k` (after failing
    /// `0..k`) and leaves the free slots above `k` alone; once the test
    /// releases slot `k` it gets that slot, and its acquisition is counted
    /// as the one wait.
    fn attempts_tries_k_slots_then_blocks_on_the_next(k: usize) {
        let slots = SlotArray::new(4);
        for i in 0..=k {
            assert!(slots.try_lock(i), "slot {i} free at first");
        }
        std::thread::scope(|s| {
            let inserter = s.spawn(|| {
                ATTEMPT_WALK.with(|c| c.set((0, 1)));
                slots
                    .acquire(SlotChoice::Attempts(u32::try_from(k).expect("a small k")))
                    .index
            });
            let parked = || slots.slots.iter().any(|s| s.lockers.parked() > 0);
            while !parked() && !inserter.is_finished() {
                std::thread::yield_now();
            }
            assert!(
                !inserter.is_finished(),
                "Attempts({k}) took a slot past the {k} it may try"
            );
            assert_eq!(slots.slots[k].lockers.parked(), 1, "parked on slot {k}");
            for free in k + 1..4 {
                // Relaxed: the word's parity only; the inserter is parked.
                let word = slots.slots[free].word.load(Ordering::Relaxed);
                assert!(!is_held(word), "Attempts({k}) took slot {free}");
            }
            (0..=k).for_each(|i| slots.unlock(i));
            let got = inserter.join().expect("the inserter panicked");
            assert_eq!(got, k, "Attempts({k}) blocked on slot {k}");
        });
        assert_eq!(slots.stats().waits, 1, "one acquisition waited");
    }

    /// `Attempts(1)`: the current slot only, then a wait for the next.
    #[test]
    fn attempts_1_tries_its_slot_then_waits_for_the_next() {
        attempts_tries_k_slots_then_blocks_on_the_next(1);
    }

    /// `Attempts(2)`: the current slot and exactly one other, then a wait.
    #[test]
    fn attempts_2_tries_one_other_slot_then_waits_for_the_next() {
        attempts_tries_k_slots_then_blocks_on_the_next(2);
    }

    /// Inserters choosing by `Attempts` and a thread taking every slot now
    /// and then never hold a slot together: each slot counts its holders.
    #[test]
    fn attempts_and_exclusive_acquisition_exclude_each_other() {
        use std::sync::atomic::AtomicU32 as Holders;
        let slots = SlotArray::new(4);
        let holders: Vec<Holders> = (0..4).map(|_| Holders::new(0)).collect();
        let enter = |i: usize| {
            // Relaxed: the slot lock orders these; a count above 1 is the bug.
            assert_eq!(
                holders[i].fetch_add(1, Ordering::Relaxed),
                0,
                "slot {i} shared"
            );
        };
        let leave = |i: usize| {
            // Relaxed: as above.
            holders[i].fetch_sub(1, Ordering::Relaxed);
        };
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let slot = slots.acquire(SlotChoice::Attempts(2));
                        enter(slot.index);
                        std::hint::spin_loop();
                        leave(slot.index);
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..2_000 {
                    let _all = slots.acquire_all();
                    (0..4).for_each(enter);
                    (0..4).for_each(leave);
                }
            });
        });
    }
}
