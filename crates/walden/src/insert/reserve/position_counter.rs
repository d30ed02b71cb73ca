//! The reserved-position counter ([`ReservedHead`]): the end of reserved
//! WAL as one atomic counter, alone on its cache line(s), advanced by
//! `fetch_add` (PostgreSQL with seeds 001 and 003: `CurrBytePos` as a
//! `pg_atomic_uint64`).
//!
//! The line holds nothing else, so the one write every reservation makes
//! does not drag fields that every inserter reads along with it (seed 003,
//! v1–v3's false-sharing regression: `RedoRecPtr` shared the line).
//!
//! The three `fetch_add` designs are one [`HeadReserver`] each, differing
//! only in how a reservation gets its prev-link ([`PrevLinks`]).

use std::fmt;

use crossbeam_utils::CachePadded;

use super::{switch_end, PrevLink, Reservation};
use crate::lsn::SegmentSize;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{AtomicU64, Ordering};

/// How a `fetch_add` design hands a reservation its prev-link.
pub trait PrevLinks: fmt::Debug {
    /// The prev-link of the reservation from usable position `start` to
    /// `end`, just made, in a log of `seg` segments, whose last record
    /// starts at `last` (the record the next reservation links to).
    fn prev_link(&self, seg: SegmentSize, start: u64, end: u64, last: u64) -> PrevLink;
}

/// A `fetch_add` reservation design: the reserved head (module docs), and
/// `L` for the prev-links. Memory ordering: the head's.
#[derive(Debug)]
pub struct HeadReserver<L> {
    head: ReservedHead,
    seg: SegmentSize,
    links: L,
}

impl<L: PrevLinks> HeadReserver<L> {
    /// Next record at position `next`, in a log of `seg` segments.
    pub(super) fn with_links(seg: SegmentSize, next: u64, links: L) -> Self {
        HeadReserver {
            head: ReservedHead::new(next),
            seg,
            links,
        }
    }

    /// The design's prev-link state.
    pub(super) fn links(&self) -> &L {
        &self.links
    }

    /// See [`super::Reserver::reserve`].
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        self.reserve_batch(size, 0)
    }

    /// See [`super::Reserver::reserve_batch`].
    #[inline]
    pub fn reserve_batch(&self, size: u64, last: u64) -> Reservation {
        let start = self.head.fetch_add(size);
        self.reservation(start, start + size, start + last)
    }

    /// See [`super::Reserver::reserve_switch`].
    pub fn reserve_switch(&self, header_size: u64) -> Option<Reservation> {
        let (start, end) = self.head.reserve_switch(self.seg, header_size)?;
        Some(self.reservation(start, end, start))
    }

    /// See [`super::Reserver::reserved_end`].
    #[inline]
    pub fn reserved_end(&self) -> u64 {
        self.head.reserved_end()
    }

    fn reservation(&self, start: u64, end: u64, last: u64) -> Reservation {
        Reservation {
            start,
            end,
            last,
            prev: self.links.prev_link(self.seg, start, end, last),
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct ReservedHead {
    /// End of reserved space, as a usable byte position.
    pos: CachePadded<AtomicU64>,
}

impl ReservedHead {
    /// A head at position `next`.
    pub(crate) fn new(next: u64) -> Self {
        ReservedHead {
            pos: CachePadded::new(AtomicU64::new(next)),
        }
    }

    /// Reserves `size` bytes; returns the start position.
    #[inline]
    pub(crate) fn fetch_add(&self, size: u64) -> u64 {
        // Release (DESIGN.md invariant 8): the reservation is published
        // after the caller's slot acquisition, so a flusher that reads this
        // value with Acquire sees the slot held. Nothing is read through
        // the head itself, so no Acquire is needed here.
        self.pos.fetch_add(
            size,
            mutant::order(Mutant::HeadReserveRelaxed, Ordering::Release),
        )
    }

    /// Reserves a switch record starting at the head and the rest of its
    /// segment; returns (start, end), or `None` when the head is on a
    /// segment boundary. The caller holds every insertion slot, so the CAS
    /// loop never retries in practice; it is a CAS (not a store) so that the
    /// head only ever moves by read-modify-writes (seed 003's review).
    pub(crate) fn reserve_switch(&self, seg: SegmentSize, header_size: u64) -> Option<(u64, u64)> {
        // Relaxed: with every slot held, all earlier reservations happened
        // before us (their slot releases are acquired by ours).
        let mut start = self.pos.load(Ordering::Relaxed);
        loop {
            let end = switch_end(seg, start, header_size)?;
            // Release on success: as in fetch_add. Relaxed on failure: we
            // only learn the newer head and retry from it.
            match self.pos.compare_exchange_weak(
                start,
                end,
                mutant::order(Mutant::HeadSwitchRelaxed, Ordering::Release),
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some((start, end)),
                Err(now) => start = now,
            }
        }
    }

    /// End of reserved space.
    #[inline]
    pub(crate) fn reserved_end(&self) -> u64 {
        // Acquire: pairs with the Release of fetch_add; every inserter whose
        // reservation this value covers is then seen holding its slot.
        self.pos
            .load(mutant::order(Mutant::HeadReadRelaxed, Ordering::Acquire))
    }

    /// The counter's address, for layout checks in tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn address(&self) -> usize {
        std::ptr::from_ref::<AtomicU64>(&self.pos) as usize
    }
}

/// Asserts at compile time that the head's padding covers a cache line.
const _: () = assert!(std::mem::align_of::<CachePadded<AtomicU64>>() >= 64);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::PrevLinkTableReserver;
    use crate::lsn::{Lsn, SegmentSize};

    #[test]
    fn the_head_is_alone_on_its_cache_line() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let r = PrevLinkTableReserver::new(seg, seg.usable_bytes(), Lsn::INVALID, 16);
        let line = |addr: usize| addr / 64;
        let head = r.head.address();
        for other in [
            std::ptr::from_ref(&r.seg) as usize,
            std::ptr::from_ref(&r.links) as usize,
        ] {
            assert_ne!(line(head), line(other));
        }
    }
}
