//! Space reservation: handing each record a disjoint range of usable byte
//! positions, and its prev-link.
//!
//! Every strategy is one file behind [`Reserver`]; adding one touches that
//! file and the matches here. Positions are *usable byte positions*
//! (page headers left out, see [`crate::lsn`]).
//!
//! - [`spinlock`]: current and previous position under one spinlock
//!   (PostgreSQL master);
//! - [`prev_link_table`]: `fetch_add` on the position, prev-links passed
//!   through the lock-free cuckoo table of [`cuckoo`] (seed 003, v7);
//! - [`prev_link_in_buffer`]: `fetch_add`; each inserter writes the next
//!   record's prev-link into the buffer just past its own record (seed 003's
//!   original patch);
//! - [`unlinked`]: `fetch_add` only, for formats without a prev-link.
//!
//! The three `fetch_add` designs are each a [`head::HeadReserver`] over
//! the position counter alone on its cache line, differing only in their
//! [`head::PrevLinks`].

mod backoff;
pub mod cuckoo;
pub mod head;
pub mod prev_link_in_buffer;
pub mod prev_link_table;
pub mod spinlock;
pub mod unlinked;

pub use prev_link_in_buffer::PrevLinkInBufferReserver;
pub use prev_link_table::PrevLinkTableReserver;
pub use spinlock::SpinlockReserver;
pub use unlinked::UnlinkedReserver;

use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize};
use crate::names::named_enum;

/// Which reservation design to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReservationKind {
    /// Current and previous position under one PostgreSQL-style spinlock
    /// (PostgreSQL master: `ReserveXLogInsertLocation`).
    #[default]
    Spinlock,
    /// `fetch_add` on the position; prev-links go through a lock-free
    /// cuckoo hash table (seed 003, Yura Sokolov's v1–v7).
    PrevLinkTable,
    /// `fetch_add` on the position; each inserter writes the next record's
    /// prev-link into the WAL buffer and the next inserter waits for it
    /// (seed 003, Zhiguo Zhou's original patch).
    PrevLinkInBuffer,
    /// `fetch_add` only: for formats whose records carry no prev-link
    /// (`SelfLsn`, `CompactWalId`; seed 001).
    Unlinked,
}

impl ReservationKind {
    /// Every design, in the order tables list them.
    pub const ALL: [ReservationKind; 4] = [
        ReservationKind::Spinlock,
        ReservationKind::PrevLinkTable,
        ReservationKind::PrevLinkInBuffer,
        ReservationKind::Unlinked,
    ];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            ReservationKind::Spinlock => "spinlock",
            ReservationKind::PrevLinkTable => "prev-link-table",
            ReservationKind::PrevLinkInBuffer => "prev-link-in-buffer",
            ReservationKind::Unlinked => "unlinked",
        }
    }

    /// True if the design hands each record its predecessor's start.
    pub const fn keeps_prev_link(self) -> bool {
        !matches!(self, ReservationKind::Unlinked)
    }

    /// True if the design can serve `format` (DESIGN.md §3): a format with
    /// a prev-link needs a design that keeps one, and a format without one
    /// takes [`ReservationKind::Unlinked`], the only design that does not
    /// pay for links nobody reads.
    pub const fn pairs_with(self, format: WalFormat) -> bool {
        self.keeps_prev_link() == format.has_prev_link()
    }

    /// The default design for `format`: [`ReservationKind::default`] for a
    /// format with a prev-link, [`ReservationKind::Unlinked`] otherwise.
    pub fn default_for(format: WalFormat) -> ReservationKind {
        if format.has_prev_link() {
            ReservationKind::default()
        } else {
            ReservationKind::Unlinked
        }
    }
}

named_enum!(ReservationKind, "reservation");

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
}

impl Reserver {
    /// A reserver whose next record starts at position `next` and whose
    /// last record started at LSN `prev` ([`Lsn::INVALID`] if none).
    /// `table_capacity` sizes the [`ReservationKind::PrevLinkTable`] table:
    /// a power of two, at least twice the number of threads that may
    /// reserve at once (see [`cuckoo::LinkTable::capacity_for`]).
    pub fn new(
        kind: ReservationKind,
        seg: SegmentSize,
        next: u64,
        prev: Lsn,
        table_capacity: usize,
    ) -> Self {
        match kind {
            ReservationKind::Spinlock => Reserver::Spinlock(SpinlockReserver::new(seg, next, prev)),
            ReservationKind::PrevLinkTable => {
                Reserver::PrevLinkTable(PrevLinkTableReserver::new(seg, next, prev, table_capacity))
            }
            ReservationKind::PrevLinkInBuffer => {
                Reserver::PrevLinkInBuffer(PrevLinkInBufferReserver::new(seg, next, prev))
            }
            ReservationKind::Unlinked => Reserver::Unlinked(UnlinkedReserver::new(seg, next)),
        }
    }

    /// The design in use.
    pub fn kind(&self) -> ReservationKind {
        match self {
            Reserver::Spinlock(_) => ReservationKind::Spinlock,
            Reserver::PrevLinkTable(_) => ReservationKind::PrevLinkTable,
            Reserver::PrevLinkInBuffer(_) => ReservationKind::PrevLinkInBuffer,
            Reserver::Unlinked(_) => ReservationKind::Unlinked,
        }
    }

    /// Reserves `size` bytes (a multiple of 8). The caller holds an
    /// insertion slot.
    #[inline]
    pub fn reserve(&self, size: u64) -> Reservation {
        match self {
            Reserver::Spinlock(r) => r.reserve(size),
            Reserver::PrevLinkTable(r) => r.reserve(size),
            Reserver::PrevLinkInBuffer(r) => r.reserve(size),
            Reserver::Unlinked(r) => r.reserve(size),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_pair_as_design_section_3_says() {
        use ReservationKind::*;
        for kind in ReservationKind::ALL {
            assert_eq!(kind.pairs_with(WalFormat::Postgres15), kind != Unlinked);
            assert_eq!(kind.pairs_with(WalFormat::SelfLsn), kind == Unlinked);
            assert_eq!(kind.pairs_with(WalFormat::CompactWalId), kind == Unlinked);
        }
        for format in WalFormat::ALL {
            assert!(ReservationKind::default_for(format).pairs_with(format));
        }
    }

    #[test]
    fn names_parse_back() {
        for kind in ReservationKind::ALL {
            assert_eq!(kind.name().parse::<ReservationKind>().unwrap(), kind);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!(
            "Prev_Link_Table".parse::<ReservationKind>().unwrap(),
            ReservationKind::PrevLinkTable
        );
        assert!("mutex".parse::<ReservationKind>().is_err());
    }
}
