//! Many threads on two cores: the log they produce must tile exactly, chain
//! correctly, checksum correctly, and hold every record exactly once.

use std::collections::HashMap;
use std::sync::Arc;

mod support;

use support::{payload, read_all};
use walden::format::crc::record_crc;
use walden::lsn::maxalign;
use walden::read::{EndOfWalReason, ReadError, WalRecord};
use walden::{Config, Lsn, Record, SyncMethod, Wal};

const RMID: u8 = 200;

fn run(threads: u32, per_thread: u32, config: Config) {
    let dir = tempfile::tempdir().unwrap();
    let seg = walden::SegmentSize::new(config.segment_size).unwrap();
    let wal = Arc::new(Wal::create(dir.path(), config).unwrap());
    let spans: Vec<Vec<(walden::RecordSpan, usize)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let wal = wal.clone();
                s.spawn(move || {
                    let mut x = u64::from(t) * 7919 + 1;
                    (0..per_thread)
                        .map(|i| {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            // Mostly small, now and then up to 64 KiB.
                            let len = if x >> 60 == 0 {
                                (x >> 20) as usize % 65536
                            } else {
                                (x >> 20) as usize % 600
                            };
                            let len = len.max(8);
                            let span = wal
                                .insert_span(&Record::new(RMID, 0, payload(t, i, len)))
                                .unwrap();
                            if i % 8 == 7 {
                                assert!(wal.flush(span.end).unwrap() >= span.end);
                            }
                            (span, len)
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let end = wal.insert_position();
    let stats = wal.stats();
    Arc::try_unwrap(wal).unwrap().close().unwrap();

    let (records, stop) = read_all(dir.path());
    // Reservations tile the log: each record starts where the previous one's
    // aligned end maps, and links back to it.
    for w in records.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let next = seg.pos_to_start_lsn(
            seg.lsn_to_pos(a.lsn).unwrap() + maxalign(u64::from(a.header.tot_len)),
        );
        assert_eq!(b.lsn, next, "gap or overlap after {}", a.lsn);
        assert_eq!(b.header.prev, a.lsn, "prev-link of {}", b.lsn);
    }
    for r in &records {
        let mut h = r.header.encode();
        h[20..24].fill(0);
        assert_eq!(record_crc(&h, &r.body), r.header.crc, "CRC of {}", r.lsn);
    }
    // Every inserted record is there exactly once, byte-identical.
    let by_lsn: HashMap<Lsn, &WalRecord> = records.iter().map(|r| (r.lsn, r)).collect();
    let ours = records.iter().filter(|r| r.header.rmid == RMID).count();
    let inserted: usize = spans.iter().map(Vec::len).sum();
    assert_eq!(
        ours, inserted,
        "records read back vs inserted; the scan stopped: {stop}"
    );
    for (t, list) in spans.iter().enumerate() {
        for (i, (span, len)) in list.iter().enumerate() {
            let r = by_lsn
                .get(&span.start)
                .unwrap_or_else(|| panic!("record {t}/{i} at {} missing", span.start));
            // insert returns the aligned end (where the next record goes),
            // the reader the end of the record's own bytes.
            assert_eq!(
                seg.aligned_end(r.lsn, u64::from(r.header.tot_len)),
                Some(span.end)
            );
            assert_eq!(
                r.decode_body().unwrap().main_data,
                payload(t as u32, i as u32, *len),
                "record {t}/{i}"
            );
        }
    }
    // The log ends where inserting ended (plus the shutdown checkpoint), in zeros.
    let last = records.last().unwrap();
    assert!(last.lsn >= end);
    assert!(
        matches!(
            stop,
            ReadError::EndOfWal {
                reason: EndOfWalReason::InvalidRecordLength { got: 0, .. },
                ..
            }
        ),
        "{stop}"
    );
    assert_eq!(
        stats.records as usize,
        inserted + 1,
        "stats count every insert (and the first checkpoint)"
    );
}

#[test]
fn many_threads_tile_the_log_exactly() {
    let config = Config {
        segment_size: 1 << 20,
        buffers: 256 << 10,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    run(256, 24, config);
}

#[test]
fn one_slot_and_a_tiny_ring() {
    let config = Config {
        segment_size: 1 << 20,
        buffers: 32 << 10,
        insert_slots: 1,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    run(64, 16, config);
}
