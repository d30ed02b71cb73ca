//! Batches round-trip in every format with every reservation design: one
//! reservation per batch, each record at the span returned, chained to the
//! one before it, the next record chained to the batch's last one;
//! pg_waldump reads a Postgres15 log of batches; `insert_batch_end` writes
//! what `insert_batch` writes; a batch with an invalid record is refused
//! whole.

use std::sync::Arc;

use super::designs_and_formats::{check_log, config, PAIRS};
use crate::support::wal::{payload, pg_waldump_agrees, read_from};
use walden::message::{BatchMarker, BATCH_MARKER_MAGIC};
use walden::{
    Batch, BatchSpans, Error, Lsn, Record, RecordError, SegmentSize, Wal, WalFormat, WalRecord,
};

const RMID: u8 = 141;

/// Inserts `batches` batches from each of `threads` threads (1 to 40
/// records of 0 B to 3 KiB, some borrowed, some owned), and a single record
/// after each; returns every batch's payloads and spans.
fn insert_batches(wal: &Arc<Wal>, threads: u32, batches: u32) -> Vec<(Vec<Vec<u8>>, BatchSpans)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let wal = wal.clone();
                s.spawn(move || {
                    let mut out = Vec::new();
                    for b in 0..batches {
                        let n = 1 + (t * 31 + b * 17) % 40;
                        let payloads: Vec<Vec<u8>> = (0..n)
                            .map(|i| {
                                let len = ((t * 7919 + b * 104_729 + i * 613) % 3000) as usize;
                                payload(t, b << 8 | i, len.max(8))
                            })
                            .collect();
                        let mut batch = Batch::with_capacity(payloads.len());
                        for (i, p) in payloads.iter().enumerate() {
                            if i % 2 == 0 {
                                batch.push(Record::new(RMID, 0x10, &p[..]));
                            } else {
                                batch.push(Record::new(RMID, 0x10, p.clone()));
                            }
                        }
                        let spans = wal.insert_batch(&batch).unwrap();
                        wal.insert(&Record::new(RMID, 0x20, b"after".to_vec()))
                            .unwrap();
                        out.push((payloads, spans));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Checks that each batch is where its spans say, byte for byte, behind
/// its marker when it has more than one record.
fn check_batches(records: &[WalRecord], batches: &[(Vec<Vec<u8>>, BatchSpans)], format: WalFormat) {
    let at: std::collections::HashMap<Lsn, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.lsn, i))
        .collect();
    for (payloads, spans) in batches {
        assert_eq!(spans.records.len(), payloads.len());
        assert_eq!(Some(spans.end), spans.records.last().map(|s| s.end));
        let first = at[&spans.records[0].start];
        for (k, (p, span)) in payloads.iter().zip(&spans.records).enumerate() {
            let r = &records[first + k];
            assert_eq!(
                r.lsn, span.start,
                "record {k} of a batch is where its span says"
            );
            assert_eq!(r.decode_body().unwrap().main_data, *p);
            assert!(r.end <= span.end);
        }
        let marker = first.checked_sub(1).and_then(|i| {
            let before = &records[i];
            let data = before.parse_body().ok()?.main_data;
            let is_noop = (before.header.rmid, before.header.info) == (0, 0x20);
            (is_noop && data.starts_with(&BATCH_MARKER_MAGIC)).then(|| BatchMarker::decode(data))
        });
        assert_eq!(
            marker.is_some(),
            payloads.len() > 1,
            "a marker before each batch of two or more"
        );
        if let Some(m) = marker {
            assert_eq!(m.map(|m| m.records as usize), Some(payloads.len()));
        }
        if format.has_prev_link() {
            let after = &records[first + payloads.len()];
            assert_eq!(after.header.prev, spans.records.last().unwrap().start);
        }
    }
}

#[test]
fn batches_round_trip_in_every_format_and_design() {
    for (format, reservation) in PAIRS {
        let dir = tempfile::tempdir().unwrap();
        // A ring of 4 pages: batches larger than the ring evict as they copy.
        let config = walden::Config {
            buffers: 4 * 8192,
            ..config(format, reservation)
        };
        let wal = Arc::new(Wal::create(dir.path(), config.clone()).unwrap());
        let start = wal.insert_position();
        assert_eq!(
            wal.insert_batch(&Batch::new()).unwrap(),
            BatchSpans::default()
        );
        let batches = insert_batches(&wal, 4, 12);
        let before = wal.stats().records;
        Arc::into_inner(wal).unwrap().close().unwrap();
        assert!(before > 0);
        let n = check_log(dir.path(), start, &config);
        let (records, _) = read_from(dir.path(), Some(start));
        assert_eq!(records.len(), n);
        check_batches(&records, &batches, format);
        let (_wal, report) = Wal::open(dir.path(), config).unwrap();
        assert_eq!(report.dropped_batch, None, "{format}/{reservation}");
    }
}

#[test]
fn pg_waldump_reads_a_log_of_batches() {
    for (format, reservation) in PAIRS {
        if format != WalFormat::Postgres15 {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = config(format, reservation);
        let wal = Arc::new(Wal::create(dir.path(), config.clone()).unwrap());
        let start = wal.insert_position();
        let batches = insert_batches(&wal, 3, 6);
        Arc::into_inner(wal).unwrap().close().unwrap();
        let seg = SegmentSize::new(config.segment_size).unwrap();
        let (records, text) = pg_waldump_agrees(dir.path(), seg, start);
        check_batches(&records, &batches, format);
        assert!(text.contains("desc: NOOP"), "markers are NOOP records");
    }
}

/// `insert_batch_end` and `insert_batch`, given the same batches on two
/// fresh logs of the same configuration, return the same ends and write
/// the same records (positions, headers with their prev-links and CRCs,
/// bodies), in every format and design: batches of 0, 1, 2 and 100
/// records of 0 B to 9 KiB (records that cross pages and that are longer
/// than a page, in a ring of 4 pages that the larger batches overrun).
#[test]
fn insert_batch_end_writes_what_insert_batch_writes() {
    let sizes: [&[usize]; 6] = [
        &[],
        &[66],
        &[0, 9000],
        &[66; 100],
        &[5000, 1, 300],
        &[40; 7],
    ];
    for (format, reservation) in PAIRS {
        let config = walden::Config {
            buffers: 4 * 8192,
            ..config(format, reservation)
        };
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let [spans_wal, end_wal] = dirs
            .each_ref()
            .map(|d| Wal::create(d.path(), config.clone()).unwrap());
        let start = spans_wal.insert_position();
        assert_eq!(end_wal.insert_position(), start);
        let mut expected = 0;
        for (b, lens) in sizes.iter().cycle().take(30).enumerate() {
            let payloads: Vec<Vec<u8>> = lens
                .iter()
                .enumerate()
                .map(|(i, &len)| payload(b as u32, i as u32, len))
                .collect();
            let batch: Batch = payloads
                .iter()
                .map(|p| Record::new(RMID, 0x10, &p[..]))
                .collect();
            expected += lens.len();
            let spans = spans_wal.insert_batch(&batch).unwrap();
            let end = end_wal.insert_batch_end(&batch).unwrap();
            assert_eq!(end, spans.end, "{format}/{reservation}: batch {b}");
            assert_eq!(end_wal.insert_position(), spans_wal.insert_position());
        }
        for wal in [spans_wal, end_wal] {
            wal.close().unwrap();
        }
        let [(with_spans, _), (with_end, _)] =
            dirs.each_ref().map(|d| read_from(d.path(), Some(start)));
        let ours = with_spans.iter().filter(|r| r.header.rmid == RMID);
        assert_eq!(ours.count(), expected, "{format}/{reservation}");
        assert_eq!(with_end, with_spans, "{format}/{reservation}");
    }
}

/// A batch holding a record that cannot be inserted (a reserved resource
/// manager id, low info bits) is refused whole by both batch calls, with
/// the first such record's error, and inserts nothing.
#[test]
fn a_batch_with_an_invalid_record_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config(WalFormat::Postgres15, PAIRS[0].1)).unwrap();
    let (before, records) = (wal.insert_position(), wal.stats().records);
    let mut batch = Batch::new();
    batch
        .append(&b"fine"[..])
        .push(Record::new(30, 0, &b"reserved rmid"[..]))
        .push(Record::new(RMID, 0x01, &b"low info bits"[..]));
    let refused = |e: Error| matches!(e, Error::Record(RecordError::InvalidRmid(30)));
    assert!(wal.insert_batch(&batch).is_err_and(refused));
    assert!(wal.insert_batch_end(&batch).is_err_and(refused));
    assert_eq!(wal.insert_position(), before, "nothing inserted");
    assert_eq!(wal.stats().records, records);
}
