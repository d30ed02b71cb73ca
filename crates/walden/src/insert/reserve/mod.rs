//! Space reservation: handing each record a disjoint range of usable byte
//! positions, and its prev-link.
//!
//! Every strategy is one file behind [`Reserver`]; adding one touches that
//! file and the matches here. Positions are *usable byte positions*
//! (page headers left out, see [`crate::lsn`]).

mod spinlock;

pub use spinlock::SpinlockReserver;

use crate::lsn::{Lsn, SegmentSize};

/// Which reservation design to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReservationKind {
    /// Current and previous position under one PostgreSQL-style spinlock
    /// (PostgreSQL master: `ReserveXLogInsertLocation`).
    #[default]
    Spinlock,
}

/// One record's reserved range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Usable byte position of the record's first byte.
    pub start: u64,
    /// Usable byte position just past the record and its alignment padding.
    pub end: u64,
    /// Start LSN of the record reserved just before this one, or
    /// [`Lsn::INVALID`] for the first record of a new log.
    pub prev: Lsn,
}

/// The reservation strategy in use.
#[derive(Debug)]
pub enum Reserver {
    /// See [`ReservationKind::Spinlock`].
    Spinlock(SpinlockReserver),
}

impl Reserver {
    /// A reserver whose next record starts at position `next` and whose
    /// last record started at LSN `prev` ([`Lsn::INVALID`] if none).
    pub fn new(kind: ReservationKind, seg: SegmentSize, next: u64, prev: Lsn) -> Self {
        match kind {
            ReservationKind::Spinlock => Reserver::Spinlock(SpinlockReserver::new(seg, next, prev)),
        }
    }

    /// Reserves `size` bytes (a multiple of 8). The caller holds an
    /// insertion slot.
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        match self {
            Reserver::Spinlock(r) => r.reserve(size),
        }
    }

    /// Reserves an `XLOG_SWITCH` record and the rest of its segment, or
    /// returns `None` when the log already ends on a segment boundary. The
    /// caller holds every insertion slot (PostgreSQL: `ReserveXLogSwitch`).
    pub fn reserve_switch(&self, header_size: u64) -> Option<Reservation> {
        match self {
            Reserver::Spinlock(r) => r.reserve_switch(header_size),
        }
    }

    /// End of reserved space, as a usable byte position. Acquire: an
    /// inserter whose reservation this reflects is seen holding its slot.
    #[inline]
    pub fn reserved_end(&self) -> u64 {
        match self {
            Reserver::Spinlock(r) => r.reserved_end(),
        }
    }
}

/// PostgreSQL's switch arithmetic, shared by every strategy: the switch
/// record starting at `start` swallows the rest of its segment. Returns the
/// end position, or `None` if `start` is already on a segment boundary.
pub(crate) fn switch_end(seg: SegmentSize, start: u64, header_size: u64) -> Option<u64> {
    if seg.offset(seg.pos_to_end_lsn(start)) == 0 {
        return None;
    }
    let end = seg.pos_to_end_lsn(start + crate::lsn::maxalign(header_size));
    let left = seg.bytes() - seg.offset(end);
    let end = if left == seg.bytes() {
        end
    } else {
        Lsn(end.0 + left)
    };
    seg.lsn_to_pos(end)
}
