//! Space reservation: handing each record a disjoint range of usable byte
//! positions, and its prev-link.
//!
//! Every strategy is one file behind [`Reserver`]; adding one touches that
//! file and the matches here. Positions are *usable byte positions*
//! (page headers left out, see [`crate::lsn`]).
//!
//! - [`spinlock_reserver`]: current and previous position under one spinlock
//!   (PostgreSQL master);
//! - [`prev_link_table`]: `fetch_add` on the position, prev-links passed
//!   through the lock-free cuckoo table of [`cuckoo`] (seed 003, v7);
//! - [`prev_link_in_buffer`]: `fetch_add`; each inserter writes the next
//!   record's prev-link into the buffer just past its own record (seed 003's
//!   original patch);
//! - [`unlinked`]: `fetch_add` only, for formats without a prev-link;
//! - [`dumb_ceiling`]: bench only, `fetch_add` and `xl_prev` = start − 1
//!   (seed 003's "Dumb" ceiling; no reader accepts the log).
//!
//! The three `fetch_add` designs are each a
//! [`position_counter::HeadReserver`] over the position counter alone on its
//! cache line, differing only in their [`position_counter::PrevLinks`].

pub mod cuckoo;
pub mod dumb_ceiling;
pub mod position_counter;
pub mod prev_link_in_buffer;
pub mod prev_link_table;
#[cfg(all(test, shuttle))]
mod shuttle_model;
pub mod spinlock_reserver;
pub mod unlinked;

pub use dumb_ceiling::DumbCeilingReserver;
pub use prev_link_in_buffer::PrevLinkInBufferReserver;
pub use prev_link_table::PrevLinkTableReserver;
pub use spinlock_reserver::SpinlockReserver;
pub use unlinked::UnlinkedReserver;

use std::time::Duration;

use crate::config::ReservationKind;
use crate::lsn::{Lsn, SegmentSize};
use cuckoo::LinkTable;

/// How a reservation's prev-link reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevLink {
    /// The previous record's start LSN ([`Lsn::INVALID`] for the first
    /// record of a new log).
    Known(Lsn),
    /// The previous record's inserter writes it into the buffer, at this
    /// record's `xl_prev` field; see `insert::reserve::prev_link_in_buffer`.
    InBuffer,
    /// Not kept: the format has no prev-link.
    NotKept,
}

/// One record's reserved range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Usable byte position of the record's first byte.
    pub start: u64,
    /// Usable byte position just past the record and its alignment padding.
    pub end: u64,
    /// Usable byte position of the last record in the range: `start` for
    /// one record, the batch's last record for a batch (what the next
    /// reservation's prev-link points to).
    pub last: u64,
    /// The record's prev-link, or where to get it.
    pub prev: PrevLink,
}

/// The reservation strategy in use.
#[derive(Debug)]
pub enum Reserver {
    /// See [`ReservationKind::Spinlock`].
    Spinlock(SpinlockReserver),
    /// See [`ReservationKind::PrevLinkTable`].
    PrevLinkTable(PrevLinkTableReserver),
    /// See [`ReservationKind::PrevLinkInBuffer`].
    PrevLinkInBuffer(PrevLinkInBufferReserver),
    /// See [`ReservationKind::Unlinked`].
    Unlinked(UnlinkedReserver),
    /// See [`ReservationKind::DumbCeiling`].
    DumbCeiling(DumbCeilingReserver),
}

impl Reserver {
    /// A reserver whose next record starts at position `next` and whose
    /// last record started at LSN `prev` ([`Lsn::INVALID`] if none).
    /// `table_capacity` sizes the [`ReservationKind::PrevLinkTable`] table:
    /// a power of two, at least twice the number of threads that may
    /// reserve at once (see [`crate::config::link_table_capacity_for`]);
    /// `stuck_wait` limits its waits for a predecessor's link
    /// ([`cuckoo::LinkTable::watched`]).
    pub fn new(
        kind: ReservationKind,
        seg: SegmentSize,
        next: u64,
        prev: Lsn,
        table_capacity: usize,
        stuck_wait: Option<Duration>,
    ) -> Self {
        match kind {
            ReservationKind::Spinlock => Reserver::Spinlock(SpinlockReserver::new(seg, next, prev)),
            ReservationKind::PrevLinkTable => {
                let table = LinkTable::new(table_capacity).watched(seg, stuck_wait);
                Reserver::PrevLinkTable(PrevLinkTableReserver::with_table(seg, next, prev, table))
            }
            ReservationKind::PrevLinkInBuffer => {
                Reserver::PrevLinkInBuffer(PrevLinkInBufferReserver::new(seg, next, prev))
            }
            ReservationKind::Unlinked => Reserver::Unlinked(UnlinkedReserver::new(seg, next)),
            ReservationKind::DumbCeiling => {
                Reserver::DumbCeiling(DumbCeilingReserver::new(seg, next))
            }
        }
    }

    /// The design in use.
    pub fn kind(&self) -> ReservationKind {
        match self {
            Reserver::Spinlock(_) => ReservationKind::Spinlock,
            Reserver::PrevLinkTable(_) => ReservationKind::PrevLinkTable,
            Reserver::PrevLinkInBuffer(_) => ReservationKind::PrevLinkInBuffer,
            Reserver::Unlinked(_) => ReservationKind::Unlinked,
            Reserver::DumbCeiling(_) => ReservationKind::DumbCeiling,
        }
    }

    /// Reserves `size` bytes (a multiple of 8) for one record. The caller
    /// holds an insertion slot.
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        self.reserve_batch(size, 0)
    }

    /// Reserves `size` bytes (a multiple of 8) for a run of records whose
    /// last one starts `last` bytes into the range, so that the record
    /// after the run links to it. The caller holds an insertion slot.
    #[inline]
    pub fn reserve_batch(&self, size: u64, last: u64) -> Reservation {
        match self {
            Reserver::Spinlock(r) => r.reserve_batch(size, last),
            Reserver::PrevLinkTable(r) => r.reserve_batch(size, last),
            Reserver::PrevLinkInBuffer(r) => r.reserve_batch(size, last),
            Reserver::Unlinked(r) => r.reserve_batch(size, last),
            Reserver::DumbCeiling(r) => r.reserve_batch(size, last),
        }
    }

    /// Reserves an `XLOG_SWITCH` record and the rest of its segment, or
    /// returns `None` when the log already ends on a segment boundary. The
    /// caller holds every insertion slot (PostgreSQL: `ReserveXLogSwitch`).
    pub fn reserve_switch(&self, header_size: u64) -> Option<Reservation> {
        match self {
            Reserver::Spinlock(r) => r.reserve_switch(header_size),
            Reserver::PrevLinkTable(r) => r.reserve_switch(header_size),
            Reserver::PrevLinkInBuffer(r) => r.reserve_switch(header_size),
            Reserver::Unlinked(r) => r.reserve_switch(header_size),
            Reserver::DumbCeiling(r) => r.reserve_switch(header_size),
        }
    }

    /// End of reserved space, as a usable byte position. Acquire: an
    /// inserter whose reservation this reflects is seen holding its slot.
    #[inline]
    pub fn reserved_end(&self) -> u64 {
        match self {
            Reserver::Spinlock(r) => r.reserved_end(),
            Reserver::PrevLinkTable(r) => r.reserved_end(),
            Reserver::PrevLinkInBuffer(r) => r.reserved_end(),
            Reserver::Unlinked(r) => r.reserved_end(),
            Reserver::DumbCeiling(r) => r.reserved_end(),
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

/// A prev-link kept as a usable position: `prev`'s position, or `None`
/// for [`Lsn::INVALID`] (no record yet).
pub(crate) fn prev_position(seg: SegmentSize, prev: Lsn) -> Option<u64> {
    if prev.is_valid() {
        seg.lsn_to_pos(prev)
    } else {
        None
    }
}

/// The LSN of a prev-link kept as a position (see [`prev_position`]).
pub(crate) fn prev_lsn(seg: SegmentSize, prev: Option<u64>) -> Lsn {
    prev.map_or(Lsn::INVALID, |p| seg.pos_to_start_lsn(p))
}
