//! loom models of the insertion slots and of waiting for insertions, on the
//! real types: the [`SlotArray`], and the real reserved head (an
//! [`UnlinkedReserver`], the bare `HeadReserver`) in place of a stand-in
//! counter, so the head's Release `fetch_add` and Acquire read are the ones
//! checked. The "buffer" is loom-tracked cells, so loom fails a model in
//! which a flusher's read, or the next holder's write, is not ordered after
//! the copy it must follow.
//!
//! Each ordering the argument rests on has a mutant (`sync::mutant`) and a
//! test here asserting that a model fails with it in place.

use super::SlotArray;
use crate::config::SlotChoice;
use crate::insert::reserve::UnlinkedReserver;
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc, AtomicBool, Ordering};
use loom::cell::UnsafeCell;

/// Where the inserter's reservation starts.
const START: u64 = 1000;
/// Its size: two halves, one cell each.
const SIZE: u64 = 32;

/// Slots, the reserved head and the two halves of a record in the buffer.
struct Model {
    slots: SlotArray,
    reserver: UnlinkedReserver,
    /// The record's bytes below and above its middle: plain cells, so loom
    /// flags an unsynchronised access.
    halves: [UnsafeCell<u64>; 2],
}

// SAFETY: `halves` is only accessed under the protocol under test; loom
// checks that the accesses are ordered.
unsafe impl Sync for Model {}

/// Forgets the slot choices of earlier iterations: loom runs every model
/// thread on one OS thread, whose `Sticky` and `Attempts` state would
/// otherwise carry over and make the iterations differ (loom needs each to
/// replay the same choices).
fn fresh_slot_choices() {
    super::STICKY_SLOT.with(|c| c.set(usize::MAX));
    super::ATTEMPT_WALK.with(|c| c.set((0, 0)));
}

impl Model {
    fn new(slots: usize) -> Arc<Self> {
        fresh_slot_choices();
        Arc::new(Model {
            slots: SlotArray::new(slots),
            reserver: UnlinkedReserver::new(SegmentSize::new(1 << 20).unwrap(), START),
            halves: [UnsafeCell::new(0), UnsafeCell::new(0)],
        })
    }

    fn write(&self, half: usize, value: u64) {
        // SAFETY: see `Sync`.
        self.halves[half].with_mut(|c| unsafe { *c = value });
    }

    fn add(&self, half: usize, n: u64) {
        // SAFETY: see `Sync`.
        self.halves[half].with_mut(|c| unsafe { *c += n });
    }

    fn read(&self, half: usize) -> u64 {
        // SAFETY: see `Sync`.
        self.halves[half].with(|c| unsafe { *c })
    }
}

/// The two models below: an inserter takes a slot, reserves [`SIZE`]
/// through the real head, copies the first half, advertises the middle,
/// copies the second half and releases; beside it, an observer that sees
/// the whole reservation calls `observe` with the model and that
/// reservation's end.
fn against_one_inserter(observe: fn(&Model, Lsn)) {
    loom::model(move || {
        let m = Model::new(2);
        let inserter = {
            let m = m.clone();
            thread::spawn(move || {
                let slot = m.slots.acquire(SlotChoice::Sticky);
                let r = m.reserver.reserve(SIZE);
                m.write(0, 42);
                super::InsertionProgress::advertise(&slot, Lsn(r.start + SIZE / 2));
                m.write(1, 43);
                drop(slot);
            })
        };
        let reserved = m.reserver.reserved_end();
        if reserved == START + SIZE {
            observe(&m, Lsn(reserved));
        }
        inserter.join().unwrap();
    });
}

/// A flusher that sees the reservation asks for the middle: what
/// `wait_for_inserts` returns is never above an unfinished copy
/// (invariant 5), whether it returns on the advertisement or on the release.
fn wait_for_inserts_model() {
    against_one_inserter(|m, reserved| {
        let middle = Lsn(START + SIZE / 2);
        let finished = m.slots.wait_for_inserts(middle, reserved);
        assert!(finished >= middle, "{finished} below {middle}");
        assert_eq!(m.read(0), 42);
        if finished.0 >= START + SIZE {
            assert_eq!(m.read(1), 43);
        }
    });
}

#[test]
fn wait_for_inserts_never_passes_an_unfinished_copy() {
    wait_for_inserts_model();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_head_reservation_is_caught() {
    mutant::with(Mutant::HeadReserveRelaxed, wait_for_inserts_model);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_head_read_is_caught() {
    mutant::with(Mutant::HeadReadRelaxed, wait_for_inserts_model);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_slot_release_is_caught() {
    mutant::with(Mutant::SlotReleaseRelaxed, wait_for_inserts_model);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_advertisement_is_caught() {
    mutant::with(Mutant::AdvertiseRelaxed, wait_for_inserts_model);
}

/// The inserter of [`wait_for_inserts_model`] against an observer that
/// does not wait (`finished_now`, the check a record makes before it is
/// written through): whatever point it returns, the copies below it are
/// finished and visible.
fn finished_now_model() {
    against_one_inserter(|m, reserved| {
        let finished = m.slots.finished_now(reserved).0;
        if finished > START {
            assert_eq!(m.read(0), 42);
        }
        if finished >= START + SIZE {
            assert_eq!(m.read(1), 43);
        }
    });
}

#[test]
fn finished_now_never_passes_an_unfinished_copy() {
    finished_now_model();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_advertisement_is_caught_without_waiting() {
    mutant::with(Mutant::AdvertiseRelaxed, finished_now_model);
}

/// A switch takes every slot, reserves the rest of the segment through the
/// real head (`reserve_switch`'s CAS) and copies its record, while a
/// flusher that sees the switch's reservation waits for the insertions
/// below its end: the slots it reads are then held (the CAS's Release
/// publishes their acquisition), so it returns only after the copy.
///
/// The switcher also raises a flag, Relaxed (no synchronisation), once it
/// has reserved, and the flusher reads the head only if it sees the flag:
/// loom's partial-order reduction compares an access with the last one to
/// its object only, and `reserve_switch` reads the head (Relaxed) before its
/// CAS, so a flusher reading the head alone is never scheduled after the
/// CAS; spinning on the head instead would yield, after which loom lets no
/// load return a value this thread could see before (its progress rule),
/// and the stale slot words the mutant allows would never be read.
fn switch_model() {
    loom::model(|| {
        let m = Model::new(2);
        let reserved_flag = Arc::new(AtomicBool::new(false));
        let (m2, flag2) = (m.clone(), reserved_flag.clone());
        let switcher = thread::spawn(move || {
            let all = m2.slots.acquire_all();
            m2.reserver.reserve_switch(SIZE).unwrap();
            // Relaxed: a scheduling aid only (see above).
            flag2.store(true, Ordering::Relaxed);
            m2.write(0, 42);
            m2.write(1, 43);
            drop(all);
        });
        // Relaxed: as above.
        if reserved_flag.load(Ordering::Relaxed) {
            let reserved = m.reserver.reserved_end();
            if reserved > START {
                let end = Lsn(START + SIZE);
                let finished = m.slots.wait_for_inserts(end, Lsn(reserved));
                assert!(finished >= end, "{finished} below {end}");
                assert_eq!((m.read(0), m.read(1)), (42, 43));
            }
        }
        switcher.join().unwrap();
    });
}

#[test]
fn wait_for_inserts_never_passes_an_unfinished_switch() {
    switch_model();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_switch_reservation_is_caught() {
    mutant::with(Mutant::HeadSwitchRelaxed, switch_model);
}

/// An inserter copies a record, releases its slot and takes it again for
/// a second record, while a flusher that saw the first reservation waits
/// for it: whichever holder the flusher sees, and whether it returns on the
/// first holder's release or on the second's, the first record's bytes are
/// ordered before its return (a changed slot word ends the wait).
fn holder_takes_the_slot_again_model() {
    loom::model(|| {
        let m = Model::new(1);
        let m2 = m.clone();
        let inserter = thread::spawn(move || {
            let slot = m2.slots.acquire(SlotChoice::Sticky);
            m2.reserver.reserve(SIZE);
            m2.write(0, 42);
            m2.write(1, 43);
            drop(slot);
            let again = m2.slots.acquire(SlotChoice::Sticky);
            m2.reserver.reserve(SIZE);
            drop(again);
        });
        let reserved = m.reserver.reserved_end();
        if reserved >= START + SIZE {
            let end = Lsn(START + SIZE);
            let finished = m.slots.wait_for_inserts(end, Lsn(reserved));
            assert!(finished >= end, "{finished} below {end}");
            assert_eq!((m.read(0), m.read(1)), (42, 43));
        }
        inserter.join().unwrap();
    });
}

#[test]
fn a_holder_taking_the_slot_again_never_hides_its_copy() {
    holder_takes_the_slot_again_model();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_release_before_taking_the_slot_again_is_caught() {
    mutant::with(
        Mutant::SlotReleaseRelaxed,
        holder_takes_the_slot_again_model,
    );
}

/// `inserters` threads choosing by `Attempts(1)` among `slots` slots:
/// no two ever hold the same slot at once (loom flags a concurrent
/// access to the slot's cell), and every chosen index is in range.
fn attempts_model(slots: usize, inserters: usize) {
    loom::model(move || {
        fresh_slot_choices();
        let array = Arc::new(SlotArray::new(slots));
        let cells: Arc<Vec<UnsafeCell<u32>>> =
            Arc::new((0..slots).map(|_| UnsafeCell::new(0)).collect());
        let threads: Vec<_> = (0..inserters)
            .map(|_| {
                let (array, cells) = (array.clone(), cells.clone());
                thread::spawn(move || {
                    let slot = array.acquire(SlotChoice::Attempts(1));
                    assert!(slot.index < slots);
                    // SAFETY: exclusive per slot, as the test checks.
                    cells[slot.index].with_mut(|c| unsafe { *c += 1 });
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // SAFETY: every thread is done.
        let total: usize = cells
            .iter()
            .map(|c| c.with(|v| unsafe { *v }) as usize)
            .sum();
        assert_eq!(total, inserters);
    });
}

/// Two inserters on two slots: each finds a free one without blocking.
#[test]
fn attempts_two_inserters_two_slots() {
    attempts_model(2, 2);
}

/// Two inserters on one slot: the loser's attempts fail and it blocks.
#[test]
fn attempts_then_block_on_one_slot() {
    attempts_model(1, 2);
}

/// Exclusive acquisition waits for a holder and excludes it: both write
/// the same cell, which loom flags unless the slot orders them.
fn exclusive_model() {
    loom::model(|| {
        let m = Model::new(2);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let _slot = m2.slots.acquire(SlotChoice::Sticky);
            m2.add(0, 1);
        });
        {
            let _all = m.slots.acquire_all();
            m.add(0, 1);
        }
        t.join().unwrap();
        assert_eq!(m.read(0), 2);
    });
}

#[test]
fn acquire_all_excludes_inserters() {
    exclusive_model();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_slot_acquisition_is_caught() {
    mutant::with(Mutant::SlotAcquireRelaxed, exclusive_model);
}

/// Two inserters choosing by `Attempts(1)` and a thread taking every slot,
/// on two slots: no two ever hold a slot together (each slot's cell is
/// written by its holders only; loom flags a concurrent access). Without
/// `fresh_slot_choices` this model failed with loom reporting impossible
/// histories or a deadlock, which was once put down to loom's own bugs: the
/// iterations differed.
#[test]
fn attempts_and_acquire_all_exclude_each_other() {
    loom::model(|| {
        fresh_slot_choices();
        let array = Arc::new(SlotArray::new(2));
        let cells: Arc<[UnsafeCell<u32>; 2]> = Arc::new([UnsafeCell::new(0), UnsafeCell::new(0)]);
        let inserters: Vec<_> = (0..2)
            .map(|_| {
                let (array, cells) = (array.clone(), cells.clone());
                thread::spawn(move || {
                    let slot = array.acquire(SlotChoice::Attempts(1));
                    // SAFETY: exclusive per slot, as the test checks.
                    cells[slot.index].with_mut(|c| unsafe { *c += 1 });
                })
            })
            .collect();
        {
            let _all = array.acquire_all();
            for c in cells.iter() {
                // SAFETY: as above.
                c.with_mut(|c| unsafe { *c += 1 });
            }
        }
        for t in inserters {
            t.join().unwrap();
        }
        // SAFETY: every thread is done.
        let total: u32 = cells.iter().map(|c| c.with(|v| unsafe { *v })).sum();
        assert_eq!(total, 4);
    });
}
