//! Batches round-trip in every format with every reservation design: one
//! reservation per batch, each record at the span returned, chained to the
//! one before it, the next record chained to the batch's last one; and
//! pg_waldump reads a Postgres15 log of batches.

use std::sync::Arc;

use super::designs_and_formats::{check_log, config, PAIRS};
use crate::support::wal::{payload, pg_waldump_agrees, read_from};
use walden::message::{BatchMarker, BATCH_MARKER_MAGIC};
use walden::{Batch, BatchSpans, Lsn, Record, SegmentSize, Wal, WalFormat, WalRecord};

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
