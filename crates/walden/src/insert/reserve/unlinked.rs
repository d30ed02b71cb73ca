//! Reservation without prev-links: one `fetch_add` on the reserved head
//! (seed 001's proposal, also 003's "dumb" measurement ceiling).
//!
//! For formats whose records do not name their predecessor (`SelfLsn`,
//! `CompactWalId`), nothing needs to pass between neighbouring reservers:
//! the serialized step is the `fetch_add` alone. Invariant: reservations
//! are disjoint and gap-free (the counter's modification order). Memory
//! ordering: see [`super::position_counter::HeadReserver`].

use super::position_counter::{HeadReserver, PrevLinks};
use super::PrevLink;
use crate::lsn::SegmentSize;

/// See the module docs.
pub type UnlinkedReserver = HeadReserver<NoPrevLinks>;

/// The prev-links of [`UnlinkedReserver`]: none.
#[derive(Debug)]
pub struct NoPrevLinks;

impl PrevLinks for NoPrevLinks {
    fn prev_link(&self, _seg: SegmentSize, _start: u64, _end: u64, _last: u64) -> PrevLink {
        PrevLink::NotKept
    }
}

impl UnlinkedReserver {
    /// Next record at position `next`, in a log of `seg` segments.
    pub fn new(seg: SegmentSize, next: u64) -> Self {
        HeadReserver::with_links(seg, next, NoPrevLinks)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn switch_swallows_the_segment_and_is_a_no_op_on_a_boundary() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let r = UnlinkedReserver::new(seg, seg.usable_bytes());
        let a = r.reserve(40);
        assert_eq!(
            (a.start, a.end, a.prev),
            (
                seg.usable_bytes(),
                seg.usable_bytes() + 40,
                PrevLink::NotKept
            )
        );
        let sw = r.reserve_switch(16).unwrap();
        assert_eq!(sw.start, a.end);
        assert_eq!(sw.end, 2 * seg.usable_bytes());
        assert_eq!(r.reserved_end(), sw.end);
        assert_eq!(r.reserve_switch(16), None, "already on a boundary");
    }
}
