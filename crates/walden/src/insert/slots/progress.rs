//! Insertion progress: how far each slot's holder has copied its record
//! (`inserting_at`), and waiting for the insertions in flight below a point
//! to finish.
//!
//! PostgreSQL: `WALInsertLockUpdateInsertingAt`, `WaitXLogInsertionsToFinish`.
//! The protocol is in the module docs of [`super`]; a flusher writes only
//! below what [`SlotArray::wait_for_inserts`] returns (invariant 5).

use super::{is_held, ExclusiveGuard, SlotArray, SlotGuard};
use crate::lsn::Lsn;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{AtomicU64, Ordering, StuckOn, Watchdog};

impl SlotArray {
    /// Returns a point `>= upto` (or the reserved end, if lower) below
    /// which every insertion has finished copying, waiting for insertions
    /// below `upto` still in flight (PostgreSQL: `WaitXLogInsertionsToFinish`).
    ///
    /// `reserved_end` is the end of reserved WAL, read with Acquire *before*
    /// calling: every inserter that reserved below it holds its slot as
    /// seen from here.
    ///
    /// Never call this while holding something an inserter may need (the
    /// writer lock, the page-mapping lock): an inserter below `upto` may be
    /// waiting for it to evict a page.
    pub fn wait_for_inserts(&self, upto: Lsn, reserved_end: Lsn) -> Lsn {
        let upto = upto.min(reserved_end).0;
        let mut finished = reserved_end.0;
        let mut watchdog = self.watchdog();
        for i in 0..self.slots.len() {
            let seen = self.wait_for_holder(i, upto, &mut watchdog);
            if seen != 0 && seen < finished {
                finished = seen;
            }
        }
        Lsn(finished)
    }

    /// Waits until slot `i`'s holder, if any, has advertised a point at or
    /// past `upto` or released the slot; returns what it advertised (0:
    /// nothing to wait for).
    fn wait_for_holder(&self, i: usize, upto: u64, watchdog: &mut Watchdog) -> u64 {
        let s = &self.slots[i];
        // SeqCst (⊇ Acquire): pairs with the holder's Release stores
        // (WaitQueue contract); loads after the caller's Acquire read of the
        // reserved end see every slot held by a reserver it reflects. A
        // holder that takes the slot after this load reserves after it too,
        // at or past the reserved end: only the holder seen here (this
        // `word`) can have bytes below `upto` in flight.
        let word = s.word.load(Ordering::SeqCst);
        if !is_held(word) {
            return 0;
        }
        loop {
            // SeqCst (⊇ Acquire): as above.
            let seen = s.inserting_at.load(Ordering::SeqCst);
            if seen >= upto && seen != 0 {
                return seen;
            }
            // SeqCst (⊇ Acquire), as the loads above: the seq_cst
            // WaitQueue contract; pairs with the holder's release or
            // advertisement. A
            // changed word is that holder's release (or a later holder's
            // acquisition, whose CAS continues the release sequence), so a
            // holder that releases and takes the slot again at once cannot
            // keep us waiting: we need not see the slot free.
            s.waiters
                .wait_until(
                    || {
                        s.word.load(Ordering::SeqCst) != word
                            || s.inserting_at.load(Ordering::SeqCst) != seen
                    },
                    watchdog,
                )
                .unwrap_or_else(|_| {
                    watchdog.stuck(StuckOn::Insertion {
                        slot: i,
                        inserting_at: Lsn(seen),
                        upto: Lsn(upto),
                    })
                });
            // SeqCst: as above.
            if s.word.load(Ordering::SeqCst) != word {
                return 0;
            }
        }
    }

    /// Like [`SlotArray::wait_for_inserts`] but never waits: the point below
    /// which every insertion has finished right now. Safe to call while
    /// holding the writer lock.
    pub fn finished_now(&self, reserved_end: Lsn) -> Lsn {
        let mut finished = reserved_end.0;
        for s in self.slots.iter() {
            // SeqCst: as in wait_for_inserts.
            if is_held(s.word.load(Ordering::SeqCst)) {
                let seen = s.inserting_at.load(Ordering::SeqCst);
                // A holder that advertised nothing (0) may be anywhere: the
                // result is then 0, "nothing known beyond what you had".
                finished = finished.min(seen);
            }
        }
        Lsn(finished)
    }
}

impl SlotArray {
    /// How many slots are held right now: the insertions in flight, as a
    /// heuristic's input (write-through's choice between waiting and the
    /// ring), never as a reason to read or write anything.
    pub fn held_now(&self) -> usize {
        self.slots
            .iter()
            // Relaxed: a count for a heuristic; no access depends on it.
            .filter(|s| is_held(s.word.load(Ordering::Relaxed)))
            .count()
    }

    fn advertise(&self, i: usize, at: Lsn) {
        let s = &self.slots[i];
        // SeqCst (⊇ Release): publishes the bytes copied below `at` to a
        // flusher that reads this value (Acquire); SeqCst and made before
        // notify_all, as the seq_cst WaitQueue contract asks.
        s.inserting_at.store(
            at.0,
            mutant::order(Mutant::AdvertiseRelaxed, Ordering::SeqCst),
        );
        s.waiters.notify_all();
    }

    fn count_records(&self, i: usize, records: u64, bytes: u64) {
        let s = &self.slots[i];
        // Relaxed loads and stores: statistics written only by the holder
        // (the slot's Acquire/Release hand them from holder to holder), so
        // no update is lost without an RMW. Two locked RMWs per record
        // would each wait for the record's stores into the ring to reach
        // the cache, lines the other inserter may hold.
        let add = |counter: &AtomicU64, n: u64| {
            counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        };
        add(&s.records, records);
        add(&s.bytes, bytes);
    }
}

/// What the copy step needs from whichever slot(s) an insertion holds.
pub trait InsertionProgress {
    /// Advertises that every byte of this record below `at` is copied
    /// (PostgreSQL: `WALInsertLockUpdateInsertingAt`), waking flushers.
    fn advertise(&self, at: Lsn);
    /// Counts `records` inserted records of `bytes` reserved bytes in all.
    fn count_records(&self, records: u64, bytes: u64);
}

impl InsertionProgress for SlotGuard<'_> {
    fn advertise(&self, at: Lsn) {
        self.slots.advertise(self.index, at);
    }

    fn count_records(&self, records: u64, bytes: u64) {
        self.slots.count_records(self.index, records, bytes);
    }
}

impl InsertionProgress for ExclusiveGuard<'_> {
    /// Advertises on the last slot, the one waiters look at.
    fn advertise(&self, at: Lsn) {
        self.slots.advertise(self.slots.len() - 1, at);
    }

    fn count_records(&self, records: u64, bytes: u64) {
        self.slots
            .count_records(self.slots.len() - 1, records, bytes);
    }
}
