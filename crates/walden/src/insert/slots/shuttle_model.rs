//! Randomised schedules (shuttle) of the insertion-slot protocol at 4–8
//! threads, beyond what loom can explore: inserters reserve ranges after
//! taking a slot, copy them in two halves advertising progress in between,
//! and a flusher's `wait_for_inserts` never returns a point above a byte not
//! yet copied (DESIGN.md invariant 5); exclusive acquisition excludes every
//! inserter. The loom models of the same protocol are inline in `slots.rs`
//! and `progress.rs`.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib insert::slots::shuttle_model`
//! (`WALDEN_SHUTTLE_ITERATIONS` sets the iterations per scheduler, default
//! 2,000).

use shuttle::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use shuttle::sync::Arc;
use shuttle::thread;

use crate::config::SlotChoice;
use crate::insert::slots::{InsertionProgress, SlotArray};
use crate::lsn::Lsn;
use crate::sync::shuttle_support;

/// Bytes per reservation; a record is copied in two halves.
const RECORD: u64 = 16;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 2_000;

struct Model {
    slots: SlotArray,
    /// The reservation head (a stand-in reserver: fetch_add under a slot).
    reserved: AtomicU64,
    /// One flag per half record: copied.
    copied: Vec<AtomicBool>,
}

fn model(inserters: usize, records_each: usize, slots: usize) {
    let total = inserters * records_each;
    let m = Arc::new(Model {
        slots: SlotArray::new(slots),
        // Positions start at 8 so that 0 keeps meaning "nothing advertised".
        reserved: AtomicU64::new(RECORD),
        copied: (0..2 * total).map(|_| AtomicBool::new(false)).collect(),
    });
    let mut handles = Vec::new();
    for _ in 0..inserters {
        let m = m.clone();
        handles.push(thread::spawn(move || {
            for _ in 0..records_each {
                let slot = m.slots.acquire(SlotChoice::Sticky);
                // Release: published after the slot is held (invariant 8).
                let start = m.reserved.fetch_add(RECORD, Ordering::AcqRel);
                let half = ((start / RECORD - 1) * 2) as usize;
                // Release: the flusher reads it after seeing our progress.
                m.copied[half].store(true, Ordering::Release);
                slot.advertise(Lsn(start + RECORD / 2));
                m.copied[half + 1].store(true, Ordering::Release);
                drop(slot);
            }
        }));
    }
    let flusher = {
        let m = m.clone();
        thread::spawn(move || {
            for _ in 0..3 {
                // Acquire: every slot of a reservation seen here is seen held.
                let reserved = Lsn(m.reserved.load(Ordering::Acquire));
                let finished = m.slots.wait_for_inserts(reserved, reserved);
                assert!(finished >= reserved || finished.0 % (RECORD / 2) == 0);
                let halves = ((finished.0 - RECORD) / (RECORD / 2)) as usize;
                for (i, flag) in m.copied.iter().enumerate().take(halves) {
                    assert!(
                        flag.load(Ordering::Acquire),
                        "finished point {finished} passes half {i}, not copied yet"
                    );
                }
                thread::yield_now();
            }
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    flusher.join().unwrap();
    let end = Lsn(m.reserved.load(Ordering::Acquire));
    assert_eq!(m.slots.wait_for_inserts(end, end), end);
}

#[test]
fn wait_for_inserts_never_passes_an_unfinished_copy_random() {
    shuttle::check_random(|| model(4, 3, 2), shuttle_support::iterations(ITERATIONS));
}

#[test]
fn wait_for_inserts_never_passes_an_unfinished_copy_pct() {
    shuttle::check_pct(
        || model(6, 2, 3),
        shuttle_support::iterations(ITERATIONS),
        3,
    );
}

#[test]
fn acquire_all_excludes_every_inserter() {
    shuttle::check_random(
        || {
            let slots = Arc::new(SlotArray::new(4));
            let inside = Arc::new(AtomicU64::new(0));
            let exclusive = Arc::new(AtomicBool::new(false));
            let mut handles = Vec::new();
            for t in 0..6 {
                let (slots, inside, exclusive) = (slots.clone(), inside.clone(), exclusive.clone());
                handles.push(thread::spawn(move || {
                    if t == 0 {
                        let _all = slots.acquire_all();
                        exclusive.store(true, Ordering::SeqCst);
                        assert_eq!(inside.load(Ordering::SeqCst), 0, "an inserter is inside");
                        thread::yield_now();
                        exclusive.store(false, Ordering::SeqCst);
                    } else {
                        let _slot = slots.acquire(SlotChoice::Sticky);
                        inside.fetch_add(1, Ordering::SeqCst);
                        assert!(!exclusive.load(Ordering::SeqCst), "inside during exclusive");
                        thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                }));
            }
            for h in handles {
                h.join().unwrap();
            }
        },
        shuttle_support::iterations(ITERATIONS),
    );
}

/// The mutant: a "flusher" that trusts the reservation head without waiting
/// for insertions must be caught.
#[test]
#[should_panic(expected = "not copied yet")]
fn a_flusher_that_does_not_wait_is_caught() {
    shuttle::check_random(
        || {
            let m = Arc::new(Model {
                slots: SlotArray::new(2),
                reserved: AtomicU64::new(RECORD),
                copied: (0..8).map(|_| AtomicBool::new(false)).collect(),
            });
            let m2 = m.clone();
            let t = thread::spawn(move || {
                for _ in 0..2 {
                    let _slot = m2.slots.acquire(SlotChoice::Sticky);
                    let start = m2.reserved.fetch_add(RECORD, Ordering::AcqRel);
                    let half = ((start / RECORD - 1) * 2) as usize;
                    m2.copied[half].store(true, Ordering::Release);
                    m2.copied[half + 1].store(true, Ordering::Release);
                }
            });
            let reserved = m.reserved.load(Ordering::Acquire);
            let halves = ((reserved - RECORD) / (RECORD / 2)) as usize;
            for flag in m.copied.iter().take(halves) {
                assert!(flag.load(Ordering::Acquire), "not copied yet");
            }
            t.join().unwrap();
        },
        shuttle_support::iterations(ITERATIONS),
    );
}
