//! Bench only: the "Dumb" ceiling of seed 003 (Yura Sokolov, #34):
//! `fetch_add` on the reserved head and `xl_prev` = the record's own start
//! − 1, in the `Postgres15` format. No prev-link step at all: the upper
//! bound of what removing it can gain. The log it writes is refused by
//! every reader (`ReservationKind::DumbCeiling`); `Config::validate` takes
//! it only with `Config::bench_unreadable_ceiling`. Memory ordering: see
//! [`super::position_counter::HeadReserver`].

use super::position_counter::{HeadReserver, PrevLinks};
use super::PrevLink;
use crate::lsn::{Lsn, SegmentSize};

/// See the module docs.
pub type DumbCeilingReserver = HeadReserver<StartMinusOne>;

/// The prev-links of [`DumbCeilingReserver`]: the record's start − 1.
#[derive(Debug)]
pub struct StartMinusOne;

impl PrevLinks for StartMinusOne {
    fn prev_link(&self, seg: SegmentSize, start: u64, _end: u64, _last: u64) -> PrevLink {
        // A record starts past a page header, so its LSN is never 0.
        PrevLink::Known(Lsn(seg.pos_to_start_lsn(start).0 - 1))
    }
}

impl DumbCeilingReserver {
    /// Next record at position `next`, in a log of `seg` segments.
    pub fn new(seg: SegmentSize, next: u64) -> Self {
        HeadReserver::with_links(seg, next, StartMinusOne)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_link_is_the_start_minus_one() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let r = DumbCeilingReserver::new(seg, 0);
        for size in [24, 8200, 40] {
            let a = r.reserve(size);
            let start = seg.pos_to_start_lsn(a.start);
            assert_eq!(a.prev, PrevLink::Known(Lsn(start.0 - 1)), "{start}");
        }
    }
}
