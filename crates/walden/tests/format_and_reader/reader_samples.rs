//! The reader against real PostgreSQL 15 WAL: every record of the samples
//! matches pg_waldump's output, and the samples README's start points.

use crate::support::reader::corrupt;
use crate::support::reader::read_to_stop;
use std::path::Path;

use crate::support::reader::dump_lines::{dump_line, expected_records};
use crate::support::reader::sample_dir::samples_dir;
use walden::{EndOfWalReason, Lsn, ReadError, ReaderOptions, WalReader, WalRecord};

fn lsn(s: &str) -> Lsn {
    s.parse().unwrap()
}

/// Reads until the reader stops; returns the records and the error, if any.
fn read_all(dir: &Path, opts: ReaderOptions) -> (Vec<WalRecord>, Option<ReadError>, WalReader) {
    let mut reader = WalReader::open(dir, opts).unwrap();
    let (records, err) = read_to_stop(&mut reader);
    (records, err, reader)
}

#[test]
fn every_sample_record_matches_pg_waldump() {
    let Some(dir) = samples_dir("every sample record matches pg_waldump") else {
        return;
    };
    let expected = expected_records(&dir);
    assert_eq!(expected.len(), 329);
    let (records, err, reader) = read_all(&dir, ReaderOptions::default());
    assert_eq!(records.len(), expected.len());
    for (r, e) in records.iter().zip(&expected) {
        let what = format!("record at {}", r.lsn);
        assert_eq!(
            (
                r.lsn,
                r.header.prev,
                r.rec_len(),
                r.header.tot_len,
                r.header.xid,
                r.rmgr_name().as_ref()
            ),
            (e.lsn, e.prev, e.rec_len, e.tot_len, e.xid, e.rmgr.as_str()),
            "{what}"
        );
        let line = dump_line(r);
        match e.cut_from {
            Some(n) => {
                assert_eq!(line.len(), n, "{what}: length of the cut line");
                assert_eq!(&line[..e.line.len()], e.line, "{what}");
            }
            None => assert_eq!(line, e.line, "{what}"),
        }
        assert!(
            r.end.0 - r.lsn.0 >= u64::from(r.header.tot_len),
            "{what}: end"
        );
    }
    for pair in records.windows(2) {
        assert_eq!(pair[1].header.prev, pair[0].lsn, "prev-link chain");
    }
    match err {
        Some(ReadError::EndOfWal { last_good, reason }) => {
            assert_eq!(last_good, Some(lsn("0/A8C740")));
            assert_eq!(
                reason,
                EndOfWalReason::InvalidRecordLength {
                    at: lsn("0/A8C7B8"),
                    got: 0
                }
            );
        }
        other => panic!("expected the end of WAL, got {other:?}"),
    }
    assert_eq!(
        err_text(&dir, ReaderOptions::default()),
        "error in WAL record at 0/A8C740: invalid record length at 0/A8C7B8: wanted 24, got 0"
    );
    assert_eq!(reader.next_lsn(), lsn("0/A8C7B8"));
    assert_eq!(reader.last_good(), Some(lsn("0/A8C740")));
    // The start was segment 6's first byte, a continuation of 6968 bytes.
    assert_eq!(
        reader.skipped(),
        Some((lsn("0/600000"), lsn("0/601B60"), 0x1B60))
    );
    assert_eq!(reader.aborted_contrecord(), None);
    assert_eq!(reader.segment_size().bytes(), 1 << 20);
}

fn err_text(dir: &Path, opts: ReaderOptions) -> String {
    read_all(dir, opts)
        .1
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn exact_end_stops_cleanly() {
    let Some(dir) = samples_dir("exact end stops cleanly") else {
        return;
    };
    let opts = ReaderOptions {
        end: Some(lsn("0/A8C7B8")),
        ..Default::default()
    };
    let (records, err, mut reader) = read_all(&dir, opts);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(records.len(), 329);
    // Stopping is repeatable.
    assert!(reader.next_record().unwrap().is_none());
    // Segment 6 alone, up to its end: 80 records.
    let opts = ReaderOptions {
        end: Some(lsn("0/700000")),
        ..Default::default()
    };
    let (records, err, _) = read_all(&dir, opts);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(records.len(), 80);
    assert_eq!(records.last().unwrap().lsn, lsn("0/611B18"));
}

#[test]
fn start_points_from_the_samples_readme() {
    let Some(dir) = samples_dir("start points from the samples README") else {
        return;
    };
    let opts = ReaderOptions {
        start: Some(lsn("0/700100")),
        end: Some(lsn("0/700200")),
        timeline: 1,
    };
    let (records, err, reader) = read_all(&dir, opts);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        reader.skipped(),
        Some((lsn("0/700100"), lsn("0/700130"), 48))
    );
    assert_eq!(
        records.iter().map(|r| r.lsn).collect::<Vec<_>>(),
        [lsn("0/700130"), lsn("0/7001D0")]
    );

    // A page that starts with a continuation.
    let mut reader = WalReader::open(
        &dir,
        ReaderOptions {
            start: Some(lsn("0/702000")),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(reader.next_record().unwrap().unwrap().lsn, lsn("0/702870"));
    assert_eq!(
        reader.skipped(),
        Some((lsn("0/702000"), lsn("0/702870"), 2160))
    );

    // The continuation-only segment.
    let mut reader = WalReader::open(
        &dir,
        ReaderOptions {
            start: Some(lsn("0/900000")),
            ..Default::default()
        },
    )
    .unwrap();
    let first = reader.next_record().unwrap().unwrap();
    assert_eq!(
        (first.lsn, first.header.prev),
        (lsn("0/A642D8"), lsn("0/800028"))
    );

    // A record start is not a skip; the big record spans three segments.
    let mut reader = WalReader::open(
        &dir,
        ReaderOptions {
            start: Some(lsn("0/800028")),
            ..Default::default()
        },
    )
    .unwrap();
    let big = reader.next_record().unwrap().unwrap();
    assert_eq!(reader.skipped(), None);
    assert_eq!((big.header.tot_len, big.end), (2_500_057, lsn("0/A642D1")));
    assert!(big
        .describe()
        .starts_with("MESSAGE transactional, prefix \"big\"; payload (2500000 bytes): 79 79 "));
    assert_eq!(reader.next_lsn(), lsn("0/A642D8"));
}

#[test]
fn segments_without_a_record_start_find_none() {
    let Some(dir) = samples_dir("segments without a record start") else {
        return;
    };
    for (start, end) in [("0/800000", "0/900000"), ("0/900000", "0/A00000")] {
        let opts = ReaderOptions {
            start: Some(lsn(start)),
            end: Some(lsn(end)),
            timeline: 1,
        };
        assert_eq!(
            err_text(&dir, opts),
            format!("could not find a valid record after {start}")
        );
    }
}

#[test]
fn stale_recycled_pages_after_the_end() {
    let Some(dir) = samples_dir("stale recycled pages") else {
        return;
    };
    let opts = ReaderOptions {
        start: Some(lsn("0/A8E000")),
        ..Default::default()
    };
    let (records, err, _) = read_all(&dir, opts);
    assert!(records.is_empty());
    match err {
        Some(ReadError::EndOfWal {
            last_good: None,
            reason:
                EndOfWalReason::NoValidFirstRecord {
                    after,
                    cause: Some(cause),
                },
        }) => {
            assert_eq!(after, lsn("0/A8E000"));
            assert_eq!(
                cause.to_string(),
                "unexpected pageaddr 0/18E000 in log segment 00000001000000000000000A, offset 581632"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_segment_inside_a_record_is_an_aborted_contrecord() {
    let Some(dir) = samples_dir("missing segment inside a record") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for name in ["000000010000000000000007", "000000010000000000000008"] {
        std::fs::copy(dir.join(name), tmp.path().join(name)).unwrap();
    }
    let (records, err, reader) = read_all(tmp.path(), ReaderOptions::default());
    assert_eq!(records.last().unwrap().lsn, lsn("0/70E0B8"));
    match err {
        Some(ReadError::EndOfWal {
            last_good,
            reason:
                EndOfWalReason::MissingSegment {
                    name,
                    segment_start,
                },
        }) => {
            assert_eq!(last_good, Some(lsn("0/70E0B8")));
            assert_eq!(
                (name.as_str(), segment_start),
                ("000000010000000000000009", lsn("0/900000"))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        reader.aborted_contrecord(),
        Some((lsn("0/800028"), lsn("0/900000")))
    );
    assert_eq!(reader.next_lsn(), lsn("0/800028"));
}

#[test]
fn open_reads_pg_wal_and_refuses_bad_sizes() {
    let Some(dir) = samples_dir("open") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pg_wal = tmp.path().join("pg_wal");
    std::fs::create_dir(&pg_wal).unwrap();
    let seg7 = std::fs::read(dir.join("000000010000000000000007")).unwrap();
    std::fs::write(pg_wal.join("000000010000000000000007"), &seg7).unwrap();
    let opts = ReaderOptions {
        end: Some(lsn("0/800000")),
        ..Default::default()
    };
    let (records, err, _) = read_all(tmp.path(), opts);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(records.len(), 25);

    let mut bad = seg7.clone();
    bad[32..36].copy_from_slice(&(3u32 << 20).to_le_bytes());
    std::fs::write(pg_wal.join("000000010000000000000007"), &bad).unwrap();
    let e = WalReader::open(tmp.path(), ReaderOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "WAL segment size must be a power of two between 1 MB and 1 GB, but the WAL file \"000000010000000000000007\" header specifies 3145728 bytes"
    );
    std::fs::write(pg_wal.join("000000010000000000000007"), &seg7[..4000]).unwrap();
    let e = WalReader::open(tmp.path(), ReaderOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "could not read file \"000000010000000000000007\": read 4000 of 8192"
    );
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        WalReader::open(empty.path(), ReaderOptions::default()),
        Err(ReadError::NoSegments { .. })
    ));
    std::fs::write(pg_wal.join("000000010000000000000007"), &seg7).unwrap();
    let opts = ReaderOptions {
        timeline: 2,
        ..Default::default()
    };
    assert!(matches!(
        WalReader::open(tmp.path(), opts),
        Err(ReadError::NoSegmentsOnTimeline { timeline: 2, .. })
    ));
}

/// The points of sample segment `000000010000000000000007`, from the samples
/// README and pgwal-format.md §11-12. A server running the same workload
/// puts its records at the same LSNs.
fn sample_segment_7_points() -> corrupt::CorruptionPoints {
    corrupt::CorruptionPoints {
        segment_start: lsn("0/700000"),
        first: lsn("0/700028"),
        r0: lsn("0/7000E8"),
        r1: lsn("0/700130"),
        spanning: corrupt::Crossing {
            prev: lsn("0/7008B0"),
            record: lsn("0/7008D8"),
            page: lsn("0/702000"),
        },
        split_header: corrupt::Crossing {
            prev: lsn("0/709AD0"),
            record: lsn("0/709FF0"),
            page: lsn("0/70A000"),
        },
        page_end: lsn("0/70C0B0"),
        page_after_end: lsn("0/70E000"),
        switch: lsn("0/70E0B8"),
    }
}

#[test]
fn corruption_recipes_on_sample_segment_7() {
    let Some(dir) = samples_dir("corruption recipes on sample segment 7") else {
        return;
    };
    corrupt::check_corruptions(&dir, &sample_segment_7_points());
}

/// Reading segments 6 then 7 with segment 7's long header changed.
#[test]
fn long_header_mismatch_in_the_next_segment() {
    let Some(dir) = samples_dir("long header mismatch") else {
        return;
    };
    for (field, value, expected) in [
        (
            32,
            2u32 << 20,
            "WAL file is from different database system: incorrect segment size in page header",
        ),
        (
            36,
            4096,
            "WAL file is from different database system: incorrect XLOG_BLCKSZ in page header",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::copy(
            dir.join("000000010000000000000006"),
            tmp.path().join("000000010000000000000006"),
        )
        .unwrap();
        let mut seg7 = std::fs::read(dir.join("000000010000000000000007")).unwrap();
        seg7[field..field + 4].copy_from_slice(&value.to_le_bytes());
        std::fs::write(tmp.path().join("000000010000000000000007"), seg7).unwrap();
        let (_, err, _) = read_all(tmp.path(), ReaderOptions::default());
        assert_eq!(
            err.unwrap().to_string(),
            format!("error in WAL record at 0/611B18: {expected}")
        );
    }
}
