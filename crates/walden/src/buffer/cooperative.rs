//! Cooperative page initialisation: no global lock.
//!
//! PostgreSQL: `AdvanceXLInsertBuffer` as committed in `bc22dc0e0d` (seed
//! 000, "Get rid of WALBufMappingLock"; reverted in `c13070a27b`, see
//! below). Two page-aligned counters replace the mapping lock:
//! - `claimed_upto` (PostgreSQL: `InitializeReserved`): every page below it
//!   has been claimed by exactly one initialiser;
//! - `initialized_upto` (PostgreSQL: `InitializedUpTo`): every page below it
//!   is initialised and published in the ring (a contiguous prefix).
//!
//! An inserter that needs page `P` claims the pages from `claimed_upto` on,
//! one at a time by CAS, until the claims pass `P`. For each claimed page
//! `R` it
//! 1. waits until `initialized_upto` has passed the end of the page that
//!    used `R`'s slot before (`R + PAGE - ring bytes`): that page's own
//!    initialiser, maybe another thread, is done with the slot;
//! 2. writes that page out if the writer has not yet (`evict`);
//! 3. initialises and publishes `R` (its slot word, PostgreSQL's
//!    `xlblocks` entry, set with Release);
//! 4. pushes `initialized_upto` on from `R`: a CAS from `b` to `b + PAGE`,
//!    repeated while the page at the new `b` is published.
//!
//! Then it waits until `initialized_upto` has passed `P`, which pages claimed
//! by others may still hold back.
//!
//! Why `initialized_upto` always catches up (the commit's argument): say
//! page `k` is published but the counter sticks at `k` (its start). `k`'s
//! initialiser did publish, fence, CAS from `k`; that CAS failed, so it read
//! a value below `k`. The thread `m` that later moved the counter to `k`
//! then fenced and read `k`'s slot word. Publish-fence-read-counter against
//! write-counter-fence-read-word is the store-buffering pattern: with a
//! `SeqCst` fence on both sides, at least one of the two reads sees the
//! other's write. `k`'s CAS did not see `m`'s, so `m` saw `k` published and
//! CASed on from `k`: a contradiction. The slot-reuse wait of step 1 means
//! two pages never share a slot at the same time.
//!
//! Deadlock freedom: every wait is for pages (or insertions) below the
//! waiter's own claim or its advertised progress, so the lowest claimed
//! page not yet published can always go on: the pages below it are
//! published, and the insertions its eviction waits for are past their
//! pages or have advertised progress beyond that eviction's bound.
//!
//! Waiting inside the critical section: PostgreSQL reverted this design
//! because its waits were condition-variable sleeps, which leave the
//! process (releasing its locks, not crashing) when the postmaster dies.
//! In Walden both waits are [`WaitQueue::wait_until`]: a short spin, then a
//! `Condvar` wait with no timeout, no cancellation and no exit path; a
//! poisoned lock is recovered, never unwrapped, so it does not unwind
//! either. A wait ends only when its condition holds. A panic here anyway
//! (a bug) unwinds into the insert path's `CriticalSection`, which aborts
//! the process: a crash, like PostgreSQL's PANIC, never an orderly exit
//! with a reserved range left unfilled.
//!
//! A failed eviction (only possible once the log is poisoned: nothing is
//! written out after) still initialises the claimed page, whose old bytes
//! can then never reach disk, so no thread waits forever for the claim;
//! the error is returned. Before it fails, the eviction waits out a write
//! that took the write lock before the poison (`Writer::write`): such a
//! write could still be reading the slot, and would put the new page's
//! bytes over the old page's acknowledged ones in its file.

use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::lsn::{Lsn, PAGE_SIZE};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{fence, AtomicU64, Ordering, StuckOn, WaitQueue, Watchdog};

use super::BufferRing;

#[cfg(all(test, loom))]
mod loom_model;
#[cfg(all(test, shuttle))]
mod shuttle_model;

/// See the module docs.
#[derive(Debug)]
pub struct CooperativeInit {
    /// Every page below is claimed (PostgreSQL: `InitializeReserved`).
    claimed_upto: CachePadded<AtomicU64>,
    /// Every page below is initialised and published (PostgreSQL:
    /// `InitializedUpTo`).
    initialized_upto: CachePadded<AtomicU64>,
    /// Threads waiting for `initialized_upto` to pass a point.
    advanced: WaitQueue,
    /// How long such a wait may last ([`crate::Config::stuck_wait_timeout`]).
    stuck_wait: Option<Duration>,
}

/// What the protocol needs from the ring; the loom model wraps the real
/// ring to track each slot's page state beside it.
pub(super) trait Slots {
    /// Bytes the ring holds: a slot's previous page ended this much earlier.
    fn ring_bytes(&self) -> u64;
    /// True if the page at `page_start` is published (Acquire).
    fn holds(&self, page_start: Lsn) -> bool;
    /// Initialises the page at `page_start` and publishes it (Release).
    ///
    /// # Safety
    /// As for [`BufferRing::init_page`]: the caller owns the slot.
    unsafe fn init_page(&self, page_start: Lsn);
}

impl Slots for BufferRing {
    fn ring_bytes(&self) -> u64 {
        self.bytes()
    }

    fn holds(&self, page_start: Lsn) -> bool {
        BufferRing::holds(self, page_start)
    }

    unsafe fn init_page(&self, page_start: Lsn) {
        // SAFETY: forwarded contract.
        unsafe { BufferRing::init_page(self, page_start, 0) }
    }
}

/// End of the page that used `page`'s slot before it (0 at first).
pub(super) fn previous_end<R: Slots>(ring: &R, page: Lsn) -> Lsn {
    Lsn((page.0 + PAGE_SIZE).saturating_sub(ring.ring_bytes()))
}

impl CooperativeInit {
    /// Pages below `initialized_upto` are initialised already; a wait for
    /// a page another thread claimed panics with a report after
    /// `stuck_wait` (see [`crate::sync::watchdog`]).
    pub fn new(initialized_upto: Lsn, stuck_wait: Option<Duration>) -> Self {
        CooperativeInit {
            claimed_upto: CachePadded::new(AtomicU64::new(initialized_upto.0)),
            initialized_upto: CachePadded::new(AtomicU64::new(initialized_upto.0)),
            advanced: WaitQueue::new(),
            stuck_wait,
        }
    }

    /// See [`super::PageInit::ensure`]; `ring` is the [`BufferRing`], or
    /// the loom model's.
    pub(super) fn ensure<R: Slots, E>(
        &self,
        ring: &R,
        page_start: Lsn,
        written: impl Fn() -> Lsn,
        mut evict: impl FnMut(Lsn) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut next = self.next_claim();
        while next <= page_start.0 {
            match self.claim(next) {
                Ok(()) => {
                    self.initialise(ring, Lsn(next), &written, &mut evict)?;
                    next += PAGE_SIZE;
                }
                Err(now) => next = now,
            }
        }
        // Pages claimed by others below ours may still be in progress.
        self.wait_initialized(page_start.0 + PAGE_SIZE);
        Ok(())
    }

    /// Claims the page at `page` if `claimed_upto` is there: `Err` with
    /// the counter's value if it is not.
    pub(super) fn claim(&self, page: u64) -> Result<(), u64> {
        // Relaxed (both): a claim is ownership of a number; everything the
        // claimer must see about the slot comes through `initialized_upto`
        // and the writer's position (both read with Acquire or stronger).
        self.claimed_upto
            .compare_exchange(page, page + PAGE_SIZE, Ordering::Relaxed, Ordering::Relaxed)
            .map(drop)
    }

    /// Where the next claim starts (a guess: [`Self::claim`] decides).
    pub(super) fn next_claim(&self) -> u64 {
        // Relaxed: a guess at the next page to claim; the CAS decides.
        self.claimed_upto.load(Ordering::Relaxed)
    }

    /// Steps 1–4 of the module docs for claimed page `page`.
    pub(super) fn initialise<R: Slots, E>(
        &self,
        ring: &R,
        page: Lsn,
        written: &impl Fn() -> Lsn,
        evict: &mut impl FnMut(Lsn) -> Result<(), E>,
    ) -> Result<(), E> {
        let previous_end = previous_end(ring, page);
        self.wait_initialized(previous_end.0);
        let evicted = if previous_end > written() {
            evict(previous_end)
        } else {
            Ok(())
        };
        // SAFETY: the claim makes us the slot's only initialiser; its
        // previous page's initialiser is done (waited above) and that page
        // is written out (checked or evicted above), or the log is poisoned
        // and it never will be (module docs); no inserter copies into
        // `page` before it sees it published.
        unsafe { ring.init_page(page) };
        self.advance_from(ring, page);
        evicted
    }

    /// Step 4: pushes `initialized_upto` on from `page` (just published)
    /// while the pages it reaches are published, then wakes waiters.
    fn advance_from<R: Slots>(&self, ring: &R, page: Lsn) {
        // SeqCst fence: our publication (the slot word's Release store) is
        // ordered before the counter read in the CAS below, against the
        // fence between a counter CAS and the slot-word read in the loop
        // (store buffering, module docs).
        fence(mutant::fence_order(
            Mutant::InitPublishFenceWeakened,
            Ordering::SeqCst,
        ));
        let mut at = page.0;
        // SeqCst (⊇ Release) on success: a waiter that reads the counter
        // with Acquire sees every page below it initialised (ours directly,
        // the others through the Acquire reads of their slot words and the
        // release sequence of earlier CASes); made before notify_all, as
        // the WaitQueue contract asks. Relaxed on failure: the counter is
        // below us (whoever moves it to us will carry on, per the module
        // docs) or past us.
        while self
            .initialized_upto
            .compare_exchange(
                at,
                at + PAGE_SIZE,
                mutant::order(Mutant::InitAdvanceRelaxed, Ordering::SeqCst),
                Ordering::Relaxed,
            )
            .is_ok()
        {
            at += PAGE_SIZE;
            // SeqCst fence: the other half of the store-buffering pair above.
            fence(mutant::fence_order(
                Mutant::InitAdvanceFenceWeakened,
                Ordering::SeqCst,
            ));
            if !ring.holds(Lsn(at)) {
                break;
            }
        }
        self.advanced.notify_all();
    }

    /// Returns once `initialized_upto >= upto`.
    fn wait_initialized(&self, upto: u64) {
        let mut watchdog = Watchdog::new(self.stuck_wait);
        // SeqCst (⊇ Acquire): pairs with the CASes in `advance_from`, so the
        // pages below are visible; the WaitQueue contract's reading side.
        let initialized = || {
            self.initialized_upto
                .load(mutant::order(Mutant::InitWaitRelaxed, Ordering::SeqCst))
        };
        self.advanced
            .wait_until(|| initialized() >= upto, &mut watchdog)
            .unwrap_or_else(|_| {
                watchdog.stuck(StuckOn::PageInit {
                    upto: Lsn(upto),
                    initialized_upto: Lsn(initialized()),
                    // Relaxed: for the report only.
                    claimed_upto: Lsn(self.claimed_upto.load(Ordering::Relaxed)),
                })
            });
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;
    use crate::buffer::PageIdentity;
    use crate::format::WalFormat;
    use crate::lsn::SegmentSize;
    use crate::sync::watchdog::stuck_report;

    /// A page claimed by a thread that never initialises it (the test
    /// moves the claim by hand): an inserter needing it panics after the
    /// limit, naming the page and both counters.
    #[test]
    fn a_page_that_is_never_initialised_is_reported() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let id = PageIdentity {
            timeline: 1,
            system_id: 1,
            format: WalFormat::Postgres15,
        };
        let ring = BufferRing::new(4, seg, id);
        let init = CooperativeInit::new(Lsn(0), Some(Duration::from_millis(50)));
        // Relaxed: no other thread uses the counters.
        init.claimed_upto.store(2 * PAGE_SIZE, Ordering::Relaxed);
        let report = stuck_report(|| {
            let _ = init.ensure(&ring, Lsn(PAGE_SIZE), || Lsn(0), |_| Ok::<(), ()>(()));
        });
        for part in [
            "pages below 0/4000",
            "initialised up to 0/0",
            "claimed up to 0/4000",
        ] {
            assert!(report.contains(part), "{part} missing from: {report}");
        }
    }
}
