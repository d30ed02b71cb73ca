//! The spinlock reservation design (the baseline): current and previous
//! position under one spinlock ([`crate::sync::SpinLock`], the lock itself).
//!
//! PostgreSQL: `ReserveXLogInsertLocation`, `insertpos_lck`, `CurrBytePos`,
//! `PrevBytePos`. The two positions sit alone on their cache line so the
//! line every reservation writes holds nothing else.
//!
//! Invariants: reservations are disjoint and gap-free, and each one's
//! prev-link is the start of the reservation made just before it (both
//! decided in one critical section). Memory ordering: the lock's Acquire
//! and Release; [`SpinlockReserver::reserved_end`] reads under the lock.

use crossbeam_utils::CachePadded;

use super::{prev_lsn, prev_position, switch_end, PrevLink, Reservation};
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::SpinLock;

#[derive(Debug)]
struct Positions {
    /// End of reserved space (PostgreSQL: `CurrBytePos`).
    curr: u64,
    /// Start of the last reserved record, `None` before the first
    /// (PostgreSQL: `PrevBytePos`). Kept as a position so the lock holder
    /// does no division; the LSN is computed after release.
    prev: Option<u64>,
}

/// See the module docs.
#[derive(Debug)]
pub struct SpinlockReserver {
    seg: SegmentSize,
    pos: CachePadded<SpinLock<Positions>>,
}

impl SpinlockReserver {
    /// Next record at position `next`; the last one started at `prev`.
    pub fn new(seg: SegmentSize, next: u64, prev: Lsn) -> Self {
        SpinlockReserver {
            seg,
            pos: CachePadded::new(SpinLock::new(Positions {
                curr: next,
                prev: prev_position(seg, prev),
            })),
        }
    }

    /// See [`super::Reserver::reserve`].
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        self.reserve_batch(size, 0)
    }

    /// Reserves `size` bytes for a run of records whose last one starts
    /// `last` bytes in: the next reservation links to that one.
    #[inline]
    pub fn reserve_batch(&self, size: u64, last: u64) -> Reservation {
        let (start, prev) = {
            let mut p = self.pos.lock();
            let start = p.curr;
            let prev = p.prev;
            p.curr = start + size;
            p.prev = Some(start + last);
            (start, prev)
        };
        Reservation {
            start,
            end: start + size,
            last: start + last,
            prev: PrevLink::Known(prev_lsn(self.seg, prev)),
        }
    }

    /// See [`super::Reserver::reserve_switch`].
    pub fn reserve_switch(&self, header_size: u64) -> Option<Reservation> {
        let mut p = self.pos.lock();
        let start = p.curr;
        let end = switch_end(self.seg, start, header_size)?;
        let prev = p.prev;
        p.curr = end;
        p.prev = Some(start);
        drop(p);
        Some(Reservation {
            start,
            end,
            last: start,
            prev: PrevLink::Known(prev_lsn(self.seg, prev)),
        })
    }

    /// See [`super::Reserver::reserved_end`]; read under the spinlock, whose
    /// acquire orders it after any reservation it reflects.
    #[inline]
    pub fn reserved_end(&self) -> u64 {
        self.pos.lock().curr
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc};

    /// Two threads reserve at once (one of them twice): the ranges tile the
    /// log from the start and each prev-link is the start of the range just
    /// before it.
    #[test]
    fn reservations_tile_and_chain() {
        loom::model(|| {
            let seg = SegmentSize::new(1 << 20).unwrap();
            let first = seg.usable_bytes();
            let r = Arc::new(SpinlockReserver::new(seg, first, Lsn::INVALID));
            let r2 = r.clone();
            let other = thread::spawn(move || r2.reserve(16));
            let mut all = vec![r.reserve(8), r.reserve(24)];
            all.push(other.join().unwrap());
            all.sort_by_key(|x| x.start);
            assert_eq!(all[0].start, first);
            assert_eq!(all[0].prev, PrevLink::Known(Lsn::INVALID));
            for w in all.windows(2) {
                assert_eq!(w[1].start, w[0].end, "gap-free and disjoint");
                assert_eq!(w[1].prev, PrevLink::Known(seg.pos_to_start_lsn(w[0].start)));
            }
            assert_eq!(r.reserved_end(), all[2].end);
        });
    }
}
