//! The reader on WAL written by the synthetic writer: records read back
//! exactly, across page edges, header splits, segments and switches, and
//! recovery's overwritten continuations.

use crate::support::reader::synth::{edge_case_wal, MemSource, SynthWal};
use crate::support::reader::{read_to_stop, reader_of};
use crate::support::regressions::next_to_source;
use proptest::prelude::*;
use walden::internals::format::body::encode_main_data;
use walden::internals::PAGE_SIZE;
use walden::message::OverwriteContrecord;
use walden::rmgr::{RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD};
use walden::{
    EndOfWalReason, ReadError, ReaderOptions, SegmentSource, SourceError, WalReader, WalRecord,
};
use walden::{Lsn, SegmentPos, SegmentSize};

fn seg() -> SegmentSize {
    SegmentSize::new(1 << 20).unwrap()
}

fn assert_read_back(w: &SynthWal, records: &[WalRecord]) {
    assert_eq!(records.len(), w.written.len());
    for (r, e) in records.iter().zip(&w.written) {
        assert_eq!((r.lsn, r.header, &r.body), (e.lsn, e.header, &e.body));
    }
}

#[test]
fn edge_cases_read_back_exactly() {
    let (w, edges) = edge_case_wal(seg());
    assert_eq!(edges[0].page_offset(), 8176);
    assert_eq!(edges[1].page_offset(), 8184);
    assert_eq!(
        edges[2].page_offset(),
        24,
        "after a record ending at a page end"
    );
    let mut r = reader_of(w.source(), seg().segment_start(1), None).unwrap();
    let (records, err) = read_to_stop(&mut r);
    assert_read_back(&w, &records);
    // The switch sends the next record to the next segment's first byte after its header.
    assert_eq!(
        edges[5],
        Lsn(seg().segment_start(seg().segno(edges[4]) + 1).0 + 40)
    );
    match err {
        Some(ReadError::EndOfWal {
            last_good,
            reason: EndOfWalReason::InvalidRecordLength { at, got: 0 },
        }) => {
            assert_eq!((last_good, at), (Some(edges[5]), w.next_lsn()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.next_lsn(), w.next_lsn());
}

#[test]
fn end_limit_stops_before_a_record_that_needs_bytes_past_it() {
    let (w, edges) = edge_case_wal(seg());
    let big = edges[3];
    let before_big: Vec<Lsn> = w
        .written
        .iter()
        .map(|x| x.lsn)
        .filter(|&l| l < big)
        .collect();
    for end in [Lsn(big.0 + 100), Lsn(big.0 + 3 * PAGE_SIZE), big] {
        let mut r = reader_of(w.source(), seg().segment_start(1), Some(end)).unwrap();
        let (records, err) = read_to_stop(&mut r);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            records.iter().map(|r| r.lsn).collect::<Vec<_>>(),
            before_big,
            "end {end}"
        );
        assert_eq!(
            r.aborted_contrecord(),
            None,
            "a clean stop is not an aborted record"
        );
    }
    // An end exactly at a record's end includes it.
    let last = w.written.last().unwrap();
    let end = Lsn(last.lsn.0 + u64::from(last.header.tot_len));
    let (records, err) =
        read_to_stop(&mut reader_of(w.source(), seg().segment_start(1), Some(end)).unwrap());
    assert!(err.is_none(), "{err:?}");
    assert_read_back(&w, &records);
}

#[test]
fn lost_continuation_is_reported_as_an_aborted_record() {
    let mut w = SynthWal::new(seg(), 1);
    let r1 = w.message(10);
    let big = w.message(30_000);
    let lost_page = Lsn(big.page_start().0 + 2 * PAGE_SIZE);
    let mut source = w.source();
    let (segno, off) = (seg().segno(lost_page), seg().offset(lost_page) as usize);
    source.segments.get_mut(&segno).unwrap()[off..off + PAGE_SIZE as usize].fill(0);
    let mut r = reader_of(source, seg().segment_start(1), None).unwrap();
    let (records, err) = read_to_stop(&mut r);
    assert_eq!(records.iter().map(|r| r.lsn).collect::<Vec<_>>(), [r1]);
    match err {
        Some(ReadError::EndOfWal {
            last_good,
            reason: EndOfWalReason::BadMagic { magic: 0, page, .. },
        }) => {
            assert_eq!((last_good, page), (Some(r1), lost_page));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.aborted_contrecord(), Some((big, lost_page)));
    assert_eq!(r.next_lsn(), big);
}

#[test]
fn overwritten_continuation_restarts_at_that_page() {
    let mut w = SynthWal::new(seg(), 1);
    let r1 = w.message(10);
    let big = w.message(30_000);
    let missing = Lsn(big.page_start().0 + 2 * PAGE_SIZE);
    w.overwrite_from(missing, r1);
    let mut main = Vec::new();
    main.extend_from_slice(
        &OverwriteContrecord {
            overwritten_lsn: big,
            overwrite_time: 1,
        }
        .encode(),
    );
    let mut body = Vec::new();
    encode_main_data(&main, &mut body);
    let overwrite = w.append(RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD, 0, &body);
    assert_eq!(overwrite, Lsn(missing.0 + 24));
    w.message(20);
    let mut r = reader_of(w.source(), seg().segment_start(1), None).unwrap();
    let (records, _) = read_to_stop(&mut r);
    assert_read_back(&w, &records);
    assert_eq!(
        records[1].describe(),
        format!("OVERWRITE_CONTRECORD lsn {big}; time 2000-01-01 00:00:00.000001 UTC")
    );
    assert_eq!(r.aborted_contrecord(), None);
}

/// A source whose reads of one segment fail with an I/O error.
struct FailingSource {
    inner: MemSource,
    failing_segno: u64,
}

impl SegmentSource for FailingSource {
    fn segment_size(&self) -> SegmentSize {
        self.inner.seg
    }

    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError> {
        let SegmentPos { tli, segno, .. } = at;
        if segno == self.failing_segno {
            let source = std::io::Error::from_raw_os_error(5);
            return Err(SourceError::Io {
                path: self.inner.seg.file_name(tli, segno).into(),
                source,
            });
        }
        self.inner.read_at(at, buf)
    }
}

#[test]
fn source_errors_are_typed() {
    let (w, edges) = edge_case_wal(seg());
    let failing_segno = seg().segno(edges[5]);
    let mut r = reader_of(
        FailingSource {
            inner: w.source(),
            failing_segno,
        },
        seg().segment_start(1),
        None,
    )
    .unwrap();
    let (records, err) = read_to_stop(&mut r);
    assert_eq!(
        records.last().map(|r| r.lsn),
        Some(edges[4]),
        "the switch is read"
    );
    match err {
        Some(ReadError::Io { path, source }) => {
            assert_eq!(
                path,
                std::path::PathBuf::from(seg().file_name(1, failing_segno))
            );
            assert_eq!(source.raw_os_error(), Some(5));
        }
        other => panic!("{other:?}"),
    }
    // A retry reads the same failure again, from the same place.
    assert!(matches!(r.next_record(), Err(ReadError::Io { .. })));
    assert_eq!(r.last_good(), Some(edges[4]));
    let no_start = WalReader::with_source(Box::new(w.source()), ReaderOptions::default());
    assert!(matches!(no_start, Err(ReadError::NoStart)));
}

proptest! {
    #![proptest_config(next_to_source(ProptestConfig::with_cases(24)))]

    /// Random record sizes, including multi-page and multi-segment ones, and
    /// switches, read back exactly and end where the writer stopped.
    #[test]
    fn random_wal_reads_back(ops in prop::collection::vec(
        prop_oneof![
            8 => (0usize..600).prop_map(Some),
            4 => (600usize..20_000).prop_map(Some),
            1 => (1_000_000usize..1_200_000).prop_map(Some),
            1 => Just(None),
        ],
        1..40,
    )) {
        let mut w = SynthWal::new(seg(), 3);
        for op in ops {
            match op {
                Some(len) => { w.message(len); }
                None => { w.switch(); }
            }
        }
        let mut r = reader_of(w.source(), seg().segment_start(3), None).unwrap();
        let (records, err) = read_to_stop(&mut r);
        assert_read_back(&w, &records);
        let stopped_at = match err {
            Some(ReadError::EndOfWal { reason: EndOfWalReason::InvalidRecordLength { at, got: 0 }, .. }) => at,
            // After a final switch the next segment does not exist.
            Some(ReadError::EndOfWal { reason: EndOfWalReason::MissingSegment { segment_start, .. }, .. }) => Lsn(segment_start.0 + 40),
            // The last record ended exactly at a page end: the next page was
            // never written, so its header is zeros (pg_waldump: "invalid
            // magic number 0000"); the next record would start past that
            // page's header, long on a segment's first page.
            Some(ReadError::EndOfWal { reason: EndOfWalReason::BadMagic { magic: 0, page, .. }, .. }) => {
                let header = if seg().offset(page) == 0 { 40 } else { 24 };
                Lsn(page.0 + header)
            }
            other => panic!("{other:?}"),
        };
        prop_assert_eq!(stopped_at, w.next_lsn());
        prop_assert_eq!(r.next_lsn(), w.next_lsn());
    }
}
