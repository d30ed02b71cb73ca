//! Randomised schedules (shuttle) of cooperative page initialisation at
//! 4–8 threads on a ring of 2–3 pages, beyond the loom models' 2–3 threads:
//! the real `PageInit::Cooperative` over the real `BufferRing`.
//!
//! Inserters take record slots in order (two per page; every third page has
//! none, as a page inside a long record, and is only claimed on the way to a
//! later one), make sure their page is initialised, check it is theirs, and
//! copy a marker into it. The
//! eviction callback stands in for the writer: it waits until every page
//! below its bound is filled, then writes the pages in order under a lock,
//! checking that each is still in its slot (a slot is never re-initialised
//! before its page is written), carries its own page address, and holds
//! every marker copied into it (a page is never initialised again once in
//! use). At the end every page not written yet must still be in the ring
//! with its markers.
//!
//! The pages start two before a segment boundary, so the ring also
//! initialises a page with a long header.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib buffer::cooperative::shuttle_model`
//! (`WALDEN_SHUTTLE_ITERATIONS` sets the iterations per scheduler, default
//! 2,000).

use std::convert::Infallible;

use shuttle::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use shuttle::sync::{Arc, Mutex};

use crate::buffer::{BufferRing, PageIdentity, PageInit, PageInitKind};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use crate::sync::shuttle_support;
use crate::sync::{WaitQueue, Watchdog};

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 10_000;
/// Record slots per page, but for every third page (not the last), which
/// has none.
const PER_PAGE: u64 = 2;
/// Where a page's markers go: past the longest header.
const MARKER_OFFSET: u64 = 64;
/// Bytes of `xlp_pageaddr` in a page header start here.
const PAGEADDR_OFFSET: usize = 8;

struct Model {
    ring: BufferRing,
    init: PageInit,
    first: Lsn,
    /// Record slots handed out so far (the stand-in reservation head).
    next_slot: AtomicU64,
    /// Per record slot: (its page, its index in the page).
    slots: Vec<(u64, u64)>,
    /// Per page: its record slots.
    slots_of: Vec<u32>,
    /// Per page: its record slots copied.
    filled: Vec<AtomicU32>,
    filled_changed: WaitQueue,
    /// Pages below are written.
    written: AtomicU64,
    /// Held while writing.
    writer: Mutex<()>,
}

impl Model {
    fn new(ring_pages: usize, pages: u64) -> Arc<Model> {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let id = PageIdentity {
            timeline: 1,
            system_id: 7,
            format: WalFormat::Postgres15,
        };
        let first = Lsn(seg.segment_start(2).0 - 2 * PAGE_SIZE);
        let slots_of: Vec<u32> = (0..pages)
            .map(|n| {
                if n % 3 == 1 && n + 1 < pages {
                    0
                } else {
                    PER_PAGE as u32
                }
            })
            .collect();
        let slots = (0..pages)
            .flat_map(|n| (0..u64::from(slots_of[n as usize])).map(move |j| (n, j)))
            .collect();
        Arc::new(Model {
            ring: BufferRing::new(ring_pages, seg, id),
            init: PageInit::new(PageInitKind::Cooperative, first, None),
            first,
            next_slot: AtomicU64::new(0),
            slots,
            slots_of,
            filled: (0..pages).map(|_| AtomicU32::new(0)).collect(),
            filled_changed: WaitQueue::new(),
            written: AtomicU64::new(first.0),
            writer: Mutex::new(()),
        })
    }

    fn page(&self, n: u64) -> Lsn {
        Lsn(self.first.0 + n * PAGE_SIZE)
    }

    /// The marker of record slot `j` of page `n`, and where it goes.
    fn marker(&self, n: u64, j: u64) -> (Lsn, [u8; 8]) {
        let page = self.page(n);
        let at = Lsn(page.0 + MARKER_OFFSET + 8 * j);
        (at, (page.0 ^ (j + 1) << 56).to_le_bytes())
    }

    /// Takes the next record slot and fills it; false once all are taken.
    fn insert_one(&self) -> bool {
        // SeqCst: a stand-in reservation (shuttle checks interleavings only).
        let i = self.next_slot.fetch_add(1, Ordering::SeqCst);
        let Some(&(n, j)) = self.slots.get(i as usize) else {
            return false;
        };
        let page = self.page(n);
        let result: Result<(), Infallible> = self.init.ensure(
            &self.ring,
            page,
            // Acquire: pairs with the writer's Release store.
            || Lsn(self.written.load(Ordering::Acquire)),
            |bound| {
                self.evict(bound);
                Ok(())
            },
        );
        let Ok(()) = result;
        assert!(
            self.ring.holds(page),
            "ensure returned before page {n} was in the ring"
        );
        let (at, marker) = self.marker(n, j);
        // SAFETY: the page is initialised and these 8 bytes are only ours.
        unsafe { self.ring.copy_in(at, &marker) };
        // SeqCst (⊇ Release): publishes the copy to the writer; made before
        // notify_all (WaitQueue contract).
        self.filled[n as usize].fetch_add(1, Ordering::SeqCst);
        self.filled_changed.notify_all();
        true
    }

    /// Checks page `n` in the ring: its own, with its header's page
    /// address and every marker copied into it.
    fn check_page(&self, n: u64) {
        let page = self.page(n);
        assert!(
            self.ring.holds(page),
            "the slot of page {n} was re-initialised before the page was written"
        );
        // SAFETY: every record slot of the page is filled and its slot holds
        // it (checked above) until the writer lock we hold is released.
        let bytes = unsafe { self.ring.range(page, Lsn(page.0 + PAGE_SIZE)) };
        let pageaddr = &bytes[PAGEADDR_OFFSET..PAGEADDR_OFFSET + 8];
        assert_eq!(pageaddr, page.0.to_le_bytes(), "header of page {n}");
        for j in 0..u64::from(self.slots_of[n as usize]) {
            let (at, marker) = self.marker(n, j);
            let offset = (at.0 - page.0) as usize;
            assert_eq!(
                bytes[offset..offset + 8],
                marker,
                "page {n} initialised again after record slot {j} was copied"
            );
        }
    }

    /// Writes every page below `bound` (the stand-in writer).
    fn evict(&self, bound: Lsn) {
        let pages_below = (bound.0 - self.first.0) / PAGE_SIZE;
        for (filled, &slots) in self
            .filled
            .iter()
            .zip(&self.slots_of)
            .take(pages_below as usize)
        {
            // SeqCst (⊇ Acquire): pairs with the increment in `insert_one`.
            self.filled_changed
                .wait_until(
                    || filled.load(Ordering::SeqCst) == slots,
                    &mut Watchdog::new(None),
                )
                .unwrap();
        }
        let _writer = self.writer.lock().unwrap();
        // Relaxed: only changed under the writer lock we hold.
        let mut at = self.written.load(Ordering::Relaxed);
        while at < bound.0 {
            self.check_page((at - self.first.0) / PAGE_SIZE);
            at += PAGE_SIZE;
            // Release: the initialiser that reads it may reuse the slot.
            self.written.store(at, Ordering::Release);
        }
    }

    /// After every thread is done: the pages not written are in the ring,
    /// whole.
    fn check_end(&self) {
        // Relaxed: every thread has been joined.
        let written = self.written.load(Ordering::Relaxed);
        let pages = self.filled.len() as u64;
        let unwritten = pages - (written - self.first.0) / PAGE_SIZE;
        assert!(
            unwritten <= self.ring.pages() as u64,
            "{unwritten} pages unwritten"
        );
        let _writer = self.writer.lock().unwrap();
        for n in pages - unwritten..pages {
            self.check_page(n);
        }
    }
}

/// `threads` inserters fill `pages` pages through a ring of `ring_pages`.
fn run(threads: usize, ring_pages: usize, pages: u64) {
    let m = Model::new(ring_pages, pages);
    let m2 = m.clone();
    shuttle_support::run_threads(threads, move |_| while m2.insert_one() {});
    m.check_end();
}

#[test]
fn cooperative_init_initialises_each_page_once_per_use_random() {
    shuttle::check_random(|| run(8, 2, 9), shuttle_support::iterations(ITERATIONS));
}

#[test]
fn cooperative_init_initialises_each_page_once_per_use_pct() {
    shuttle::check_pct(|| run(4, 2, 8), shuttle_support::iterations(ITERATIONS), 3);
}
