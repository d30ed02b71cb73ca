//! The corruption recipes on WAL freshly written by a throwaway PostgreSQL
//! 15 server (walden-testkit's generated-WAL fixture), with the LSNs taken
//! from the generator's facts and the WAL's own prev-links.

use crate::support::reader::corrupt;
use crate::support::reader::corrupt::{CorruptionPoints, Crossing};
use walden::internals::PAGE_SIZE;
use walden::{Lsn, ReaderOptions, SegmentSize, WalReader};

#[test]
fn corruption_recipes_on_fresh_postgres_wal() {
    let wal = walden_testkit::generated_wal();
    let facts = wal.facts();
    let fact = |key: &str| Lsn(facts.lsn(key).unwrap());
    let seg = SegmentSize::new(facts.number("SEGMENT_SIZE").unwrap()).unwrap();
    // The prev-link of the record at `lsn`.
    let prev_of = |lsn: Lsn| {
        let opts = ReaderOptions {
            start: Some(lsn),
            ..Default::default()
        };
        let record = WalReader::open(wal.dir(), opts)
            .unwrap()
            .next_record()
            .unwrap()
            .unwrap();
        assert_eq!(record.lsn, lsn);
        record.header.prev
    };
    let crossing = |record: Lsn| Crossing {
        prev: prev_of(record),
        record,
        page: Lsn(record.page_start().0 + PAGE_SIZE),
    };
    let first = fact("MSG_0_LSN");
    let r1 = fact("MSG_100_LSN");
    let points = CorruptionPoints {
        segment_start: seg.segment_start(seg.segno(first)),
        first,
        r0: prev_of(r1),
        r1,
        spanning: crossing(fact("MSG_8000_LSN")),
        split_header: crossing(fact("EDGE_8176_LSN")),
        page_end: fact("PAGE_END_RECORD_LSN"),
        page_after_end: fact("PAGE_END_LSN"),
        switch: fact("SWITCH_LSN"),
    };
    corrupt::check_corruptions(wal.dir(), &points);
}
