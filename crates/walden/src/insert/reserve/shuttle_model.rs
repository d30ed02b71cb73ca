//! Randomised schedules (shuttle) of the two lock-free reservation designs
//! that hand out prev-links, at 4–8 threads, beyond what loom can explore:
//! the real `PrevLinkTableReserver` (its head plus the cuckoo link table,
//! here the smallest table of 8 entries) and the real
//! `PrevLinkInBufferReserver` with its `LinkCell` handoff (the buffer
//! stood in for by a map of 8-byte fields, each two shuttle atomics).
//! Inserters take an insertion slot, reserve and get their prev-link; one
//! thread also reserves a segment switch holding every slot. Invariants:
//! the reservations tile the positions exactly, from the start to the
//! reserver's end, and every prev-link is the previous reservation's start.
//!
//! The positions start near the end of a segment above 4 GiB, so the
//! reservations cross a segment's long header and the prev-links have
//! non-zero high halves (a torn 8-byte field would show; a mutant that
//! writes the halves in the wrong order is caught). Shuttle runs threads
//! sequentially consistent: this checks interleavings, not memory orderings
//! (the loom models in `cuckoo.rs`, `spinlock_reserver.rs` and
//! `buffer/link_cell.rs` do).
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib insert::reserve::shuttle_model`
//! (`WALDEN_SHUTTLE_ITERATIONS` sets the iterations per scheduler, default
//! 5,000).

use std::collections::HashMap;

use shuttle::sync::atomic::{AtomicU32, Ordering};
use shuttle::sync::{Arc, Mutex};

use crate::buffer::{Atomic32, LinkCell};
use crate::config::SlotChoice;
use crate::insert::reserve::cuckoo::MIN_CAPACITY as LINK_TABLE_MIN_CAPACITY;
use crate::insert::reserve::prev_link_in_buffer::link_lsn;
use crate::insert::reserve::{
    PrevLink, PrevLinkInBufferReserver, PrevLinkTableReserver, Reservation,
};
use crate::insert::slots::SlotArray;
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::shuttle_support;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 5_000;
/// The segment whose end the positions start near: above 4 GiB.
const SEGNO: u64 = 5_000;
/// Record header size of the switch record.
const SWITCH_HEADER: u64 = 24;

fn seg() -> SegmentSize {
    SegmentSize::new(1 << 20).unwrap()
}

/// One reservation and the prev-link its reserver got.
#[derive(Clone, Copy, Debug)]
struct Got {
    start: u64,
    end: u64,
    prev: Lsn,
}

/// A reservation design under test, with its prev-links resolved.
trait Design: Send + Sync + 'static {
    /// Reserves `size` bytes (the caller holds a slot) and gets the
    /// prev-link.
    fn reserve(&self, size: u64) -> Got;
    /// Reserves a switch (the caller holds every slot).
    fn reserve_switch(&self) -> Option<Got>;
    /// The end of reserved space.
    fn reserved_end(&self) -> u64;
}

/// The known prev-link of `r`.
fn known(r: Reservation) -> Got {
    match r.prev {
        PrevLink::Known(prev) => Got {
            start: r.start,
            end: r.end,
            prev,
        },
        other => panic!("the table design handed out {other:?}"),
    }
}

impl Design for PrevLinkTableReserver {
    fn reserve(&self, size: u64) -> Got {
        known(PrevLinkTableReserver::reserve(self, size))
    }

    fn reserve_switch(&self) -> Option<Got> {
        PrevLinkTableReserver::reserve_switch(self, SWITCH_HEADER).map(known)
    }

    fn reserved_end(&self) -> u64 {
        PrevLinkTableReserver::reserved_end(self)
    }
}

/// Half of an 8-byte field: a shuttle atomic, so waiting on it yields.
#[derive(Debug, Default)]
struct Half(AtomicU32);

impl Atomic32 for Half {
    fn load(&self, order: Ordering) -> u32 {
        // `order`: the caller's, `LinkCell`'s protocol.
        self.0.load(order)
    }

    fn store(&self, value: u32, order: Ordering) {
        // `order`: as in `load`.
        self.0.store(value, order)
    }
}

/// A prev-link field: (low half, high half).
type Field = Arc<(Half, Half)>;

/// How an inserter writes its successor's field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Publish {
    /// `LinkCell::publish`, as the insert path does.
    Real,
    /// The mutant: the low half (which readers poll) first.
    LowHalfFirst,
}

/// The buffer design: the real reserver, and its prev-link fields kept in
/// a map by LSN instead of in buffer pages.
struct InBuffer {
    reserver: PrevLinkInBufferReserver,
    fields: Mutex<HashMap<Lsn, Field>>,
    publish: Publish,
}

impl InBuffer {
    fn field(&self, at: Lsn) -> Field {
        self.fields.lock().unwrap().entry(at).or_default().clone()
    }

    /// Writes `r`'s start into its successor's field.
    fn publish_next(&self, r: &Reservation) {
        let field = self.field(link_lsn(seg(), r.end));
        let value = seg().pos_to_start_lsn(r.start);
        match self.publish {
            Publish::Real => LinkCell::new(&field.0, &field.1).publish(value),
            Publish::LowHalfFirst => {
                // SeqCst (both): the mutant is wrong in its order of
                // stores, not in their orderings.
                field.0.store(value.0 as u32, Ordering::SeqCst);
                field.1.store((value.0 >> 32) as u32, Ordering::SeqCst);
            }
        }
    }

    /// `r`'s prev-link: known, or waited for in its field.
    fn prev(&self, r: &Reservation) -> Lsn {
        match r.prev {
            PrevLink::Known(prev) => prev,
            PrevLink::InBuffer => {
                let field = self.field(link_lsn(seg(), r.start));
                let cell = LinkCell::new(&field.0, &field.1);
                cell.wait(|| Ok::<(), ()>(())).unwrap()
            }
            PrevLink::NotKept => panic!("the buffer design kept no prev-link"),
        }
    }

    /// Both steps, the successor's field first (the insert path's order for
    /// records smaller than the ring) or last (for larger ones).
    fn link(&self, r: Reservation, publish_first: bool) -> Got {
        if publish_first {
            self.publish_next(&r);
        }
        let prev = self.prev(&r);
        if !publish_first {
            self.publish_next(&r);
        }
        Got {
            start: r.start,
            end: r.end,
            prev,
        }
    }
}

impl Design for InBuffer {
    fn reserve(&self, size: u64) -> Got {
        // Records of a page or more publish after copying.
        self.link(self.reserver.reserve(size), size < 8192)
    }

    fn reserve_switch(&self) -> Option<Got> {
        let r = self.reserver.reserve_switch(SWITCH_HEADER)?;
        Some(self.link(r, false))
    }

    fn reserved_end(&self) -> u64 {
        self.reserver.reserved_end()
    }
}

/// Where the first reservation starts and its prev-link.
fn first() -> (u64, Lsn) {
    let seg = seg();
    let next = seg
        .lsn_to_pos(Lsn(seg.segment_start(SEGNO).0 - 96))
        .unwrap();
    (next, seg.pos_to_start_lsn(next - 48))
}

/// The size of record `j` of thread `t`: mostly small, now and then more
/// than a page.
fn size(t: usize, j: usize) -> u64 {
    if (t + j) % 5 == 4 {
        8200
    } else {
        8 * (1 + (t * 7 + j * 3) as u64 % 8)
    }
}

/// Runs `threads` inserters of `records` each over `slots` slots on
/// `design`; thread 0 reserves a switch after its first record (holding
/// every slot). Checks the
/// invariants of the module docs.
fn run<D: Design>(design: D, threads: usize, records: usize, slots: usize) {
    let (next, prev) = first();
    let design = Arc::new(design);
    let slots = Arc::new(SlotArray::new(slots));
    let (d, s) = (design.clone(), slots.clone());
    let got = shuttle_support::run_threads(threads, move |t| {
        let mut mine = Vec::new();
        for j in 0..records {
            let slot = s.acquire(SlotChoice::Sticky);
            mine.push(d.reserve(size(t, j)));
            drop(slot);
            if t == 0 && j == 0 {
                let _all = s.acquire_all();
                mine.extend(d.reserve_switch());
            }
        }
        mine
    });
    let mut got: Vec<Got> = got.into_iter().flatten().collect();
    got.sort_by_key(|g| g.start);
    // The switch is `None` if the head happened to be on a boundary.
    assert!(got.len() - threads * records <= 1, "one switch at most");
    assert_eq!((got[0].start, got[0].prev), (next, prev), "the first");
    for w in got.windows(2) {
        assert_eq!(w[1].start, w[0].end, "not tiled: {w:?}");
        assert_eq!(
            w[1].prev,
            seg().pos_to_start_lsn(w[0].start),
            "wrong prev-link: {w:?}"
        );
    }
    assert_eq!(got.last().map(|g| g.end), Some(design.reserved_end()));
}

fn table(capacity: usize) -> PrevLinkTableReserver {
    let (next, prev) = first();
    PrevLinkTableReserver::new(seg(), next, prev, capacity)
}

fn in_buffer(publish: Publish) -> InBuffer {
    let (next, prev) = first();
    InBuffer {
        reserver: PrevLinkInBufferReserver::new(seg(), next, prev),
        fields: Mutex::new(HashMap::new()),
        publish,
    }
}

#[test]
fn prev_link_table_chains_every_link_random() {
    // 8 threads, 4 slots: the smallest table that serves 4 reservers.
    shuttle::check_random(
        || run(table(LINK_TABLE_MIN_CAPACITY), 8, 2, 4),
        shuttle_support::iterations(ITERATIONS),
    );
}

#[test]
fn prev_link_table_chains_every_link_pct() {
    shuttle::check_pct(
        || run(table(LINK_TABLE_MIN_CAPACITY), 6, 2, 4),
        shuttle_support::iterations(ITERATIONS),
        3,
    );
}

#[test]
fn prev_link_in_buffer_hands_over_every_link_random() {
    shuttle::check_random(
        || run(in_buffer(Publish::Real), 8, 2, 4),
        shuttle_support::iterations(ITERATIONS),
    );
}

#[test]
fn prev_link_in_buffer_hands_over_every_link_pct() {
    shuttle::check_pct(
        || run(in_buffer(Publish::Real), 5, 3, 3),
        shuttle_support::iterations(ITERATIONS),
        3,
    );
}

/// The mutant: publishing the low half first lets a reader take a link
/// whose high half is not written yet; the schedules must find one.
#[test]
#[should_panic(expected = "wrong prev-link")]
fn a_field_written_low_half_first_is_caught() {
    shuttle::check_random(
        || run(in_buffer(Publish::LowHalfFirst), 4, 2, 4),
        shuttle_support::iterations(ITERATIONS),
    );
}
