//! Baseline reservation: current and previous position under one spinlock.
//!
//! PostgreSQL: `ReserveXLogInsertLocation`, `insertpos_lck`, `CurrBytePos`,
//! `PrevBytePos`. The two positions sit alone on their cache line so the
//! line every reservation writes holds nothing else.

use crossbeam_utils::CachePadded;

use super::{switch_end, Reservation};
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::SpinLock;

/// `prev` of a log with no record yet.
const NO_PREV: u64 = u64::MAX;

#[derive(Debug)]
struct Positions {
    /// End of reserved space (PostgreSQL: `CurrBytePos`).
    curr: u64,
    /// Start of the last reserved record, or [`NO_PREV`] (PostgreSQL:
    /// `PrevBytePos`). Kept as a position so the lock holder does no
    /// division; the LSN is computed after release.
    prev: u64,
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
        let prev = if prev.is_valid() {
            seg.lsn_to_pos(prev).unwrap_or(NO_PREV)
        } else {
            NO_PREV
        };
        SpinlockReserver {
            seg,
            pos: CachePadded::new(SpinLock::new(Positions { curr: next, prev })),
        }
    }

    fn prev_lsn(&self, prev: u64) -> Lsn {
        if prev == NO_PREV {
            Lsn::INVALID
        } else {
            self.seg.pos_to_start_lsn(prev)
        }
    }

    /// See [`super::Reserver::reserve`].
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        let (start, prev) = {
            let mut p = self.pos.lock();
            let start = p.curr;
            let prev = p.prev;
            p.curr = start + size;
            p.prev = start;
            (start, prev)
        };
        Reservation {
            start,
            end: start + size,
            prev: self.prev_lsn(prev),
        }
    }

    /// See [`super::Reserver::reserve_switch`].
    pub fn reserve_switch(&self, header_size: u64) -> Option<Reservation> {
        let mut p = self.pos.lock();
        let start = p.curr;
        let end = switch_end(self.seg, start, header_size)?;
        let prev = p.prev;
        p.curr = end;
        p.prev = start;
        drop(p);
        Some(Reservation {
            start,
            end,
            prev: self.prev_lsn(prev),
        })
    }

    /// See [`super::Reserver::reserved_end`]; read under the spinlock, whose
    /// acquire orders it after any reservation it reflects.
    #[inline]
    pub fn reserved_end(&self) -> u64 {
        self.pos.lock().curr
    }
}
