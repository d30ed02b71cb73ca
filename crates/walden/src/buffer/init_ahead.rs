//! Initialising pages ahead of the inserters, from the background writer.
//!
//! PostgreSQL: the walwriter's `AdvanceXLInsertBuffer(InvalidXLogRecPtr,
//! tli, true)` (the "opportunistic" call at the end of
//! `XLogBackgroundFlush`): after a round has written the ring out, the
//! writer zeroes and heads the pages the inserters will need next, so that
//! they find them published ([`BufferRing::holds`]) and skip the mapping
//! lock or the claim. It only ever takes a page whose slot's previous page
//! is written already: it never evicts, and stops at the first slot that
//! would need it.
//!
//! It uses each design's own protocol, so no page is initialised twice and
//! none while an inserter copies into it:
//! - [`MappingLockInit`]: under the mapping lock, the next page after
//!   `initialized_upto`, while its slot's occupant is written;
//! - [`CooperativeInit`]: a claim by the same CAS on `claimed_upto` as an
//!   inserter's, made only after checking that the claimed page's previous
//!   page is written (the writer's position only grows, so the check holds
//!   after the claim), then the inserters' steps 1–4, whose eviction step
//!   never runs. The writer is one more claimer of the same protocol; the
//!   loom model `the_writer_initialising_ahead_races_the_inserters`
//!   (`cooperative/loom_model.rs`) checks it.
//!
//! A page initialised ahead is beyond every reservation, so no inserter
//! copies into it before it is published, and the writer writes it only
//! once an insertion past it has finished.

use std::convert::Infallible;

use crate::lsn::{Lsn, PAGE_SIZE};

use super::cooperative::{previous_end, Slots};
use super::{BufferRing, CooperativeInit, MappingLockInit, PageInit};

impl PageInit {
    /// Initialises the pages from the first uninitialised one up to (not
    /// including) `limit`, stopping at the first whose slot still holds a
    /// page not written by `written`; returns how many it initialised.
    /// Never writes anything out (see the module docs).
    pub fn init_ahead(&self, ring: &BufferRing, limit: Lsn, written: Lsn) -> u64 {
        match self {
            PageInit::MappingLock(m) => m.init_ahead(ring, limit, written),
            PageInit::Cooperative(c) => c.init_ahead(ring, limit, written),
        }
    }
}

impl MappingLockInit {
    /// See [`PageInit::init_ahead`].
    fn init_ahead(&self, ring: &BufferRing, limit: Lsn, written: Lsn) -> u64 {
        let mut upto = self
            .initialized_upto
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut pages = 0;
        while *upto < limit && ring.occupant_end(*upto) <= written {
            // SAFETY: the mapping lock makes us the only initialiser, the
            // slot's previous page is written (checked just above), and no
            // inserter copies into a page beyond `initialized_upto` before
            // `holds` sees it published.
            unsafe { ring.init_page(*upto, 0) };
            *upto = Lsn(upto.0 + PAGE_SIZE);
            pages += 1;
        }
        pages
    }
}

impl CooperativeInit {
    /// See [`PageInit::init_ahead`]; `ring` is the [`BufferRing`], or the
    /// loom model's.
    pub(super) fn init_ahead<R: Slots>(&self, ring: &R, limit: Lsn, written: Lsn) -> u64 {
        let mut pages = 0;
        let mut next = self.next_claim();
        while next < limit.0 && previous_end(ring, Lsn(next)) <= written {
            match self.claim(next) {
                Ok(()) => {
                    // The previous page is written (checked before the
                    // claim, for this very page), so there is nothing to
                    // evict.
                    let nothing_to_evict = self.initialise(
                        ring,
                        Lsn(next),
                        &|| written,
                        &mut |_| -> Result<(), Infallible> {
                            unreachable!("the page's previous page was written before the claim")
                        },
                    );
                    let Ok(()) = nothing_to_evict;
                    next += PAGE_SIZE;
                    pages += 1;
                }
                Err(now) => next = now,
            }
        }
        pages
    }
}
