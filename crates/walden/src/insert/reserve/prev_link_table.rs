//! Lock-free reservation with prev-links passed through a hash table
//! (seed 003, Yura Sokolov's patch, v7's final protocol).
//!
//! A reservation is one `fetch_add` on the reserved head; the prev-link is
//! then exchanged with the neighbouring reservers through the lock-free
//! cuckoo table of [`super::cuckoo`]: publish `end → start`, consume
//! `start → prev`. The serialized step shrinks to the `fetch_add`; the
//! table's lines are shared only by neighbours in the reservation order.
//!
//! Invariants: reservations are disjoint and gap-free (the head's
//! modification order); each key is published once and consumed once, by
//! the one reservation starting there, so every record gets exactly its
//! predecessor's start; the table holds at most one link per concurrent
//! reserver plus one, and its capacity is at least twice the number of
//! concurrent reservers (insertion slots; checked by `Config::validate`).
//! Memory ordering: the head's (see [`super::position_counter`]) and the table's
//! entry protocol (Release publication of a key, Acquire lock).

use super::cuckoo::LinkTable;
use super::position_counter::{HeadReserver, PrevLinks};
use super::{prev_lsn, prev_position, PrevLink};
use crate::lsn::{Lsn, SegmentSize};

/// See the module docs.
pub type PrevLinkTableReserver = HeadReserver<LinkTable>;

impl PrevLinks for LinkTable {
    fn prev_link(&self, seg: SegmentSize, start: u64, end: u64, last: u64) -> PrevLink {
        PrevLink::Known(prev_lsn(seg, self.link_run(start, end, last)))
    }
}

impl PrevLinkTableReserver {
    /// Next record at position `next`; the last one started at `prev`;
    /// a table of `capacity` entries (see [`crate::config::link_table_capacity_for`]).
    pub fn new(seg: SegmentSize, next: u64, prev: Lsn, capacity: usize) -> Self {
        Self::with_table(seg, next, prev, LinkTable::new(capacity))
    }

    /// As [`PrevLinkTableReserver::new`], over the empty `table` (the
    /// models' tables swap more often).
    pub(crate) fn with_table(seg: SegmentSize, next: u64, prev: Lsn, table: LinkTable) -> Self {
        // PostgreSQL with seed 003: `LinkStartPrevPos`, before any insert.
        table.seed(next, prev_position(seg, prev));
        HeadReserver::with_links(seg, next, table)
    }

    /// The table's number of entries.
    pub fn capacity(&self) -> usize {
        self.links().capacity()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn links_survive_a_restart_and_a_switch() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let next = seg.usable_bytes() + 80;
        let last = Lsn(seg.pos_to_start_lsn(next).0 - 40);
        let r = PrevLinkTableReserver::new(seg, next, last, 16);
        let a = r.reserve(48);
        assert_eq!(a.prev, PrevLink::Known(last));
        let sw = r.reserve_switch(24).unwrap();
        assert_eq!(sw.prev, PrevLink::Known(seg.pos_to_start_lsn(a.start)));
        assert_eq!(sw.end, 2 * seg.usable_bytes());
        let b = r.reserve(24);
        assert_eq!(
            (b.start, b.prev),
            (sw.end, PrevLink::Known(seg.pos_to_start_lsn(sw.start)))
        );
    }
}
