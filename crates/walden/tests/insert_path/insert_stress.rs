//! Many threads on two cores: the log they produce must tile exactly, chain
//! correctly, checksum correctly, and hold every record exactly once, for
//! every format with every reservation design that serves it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::support::wal::{payload, read_all};
use walden::internals::maxalign;
use walden::{
    Config, Eviction, Lsn, PageInitKind, Record, ReservationKind, SyncMethod, Wal, WalFormat,
};
use walden::{EndOfWalReason, ReadError, WalRecord};

const RMID: u8 = 200;

fn run(threads: u32, per_thread: u32, config: Config) {
    run_sized(threads, per_thread, config, 64 << 10);
}

/// [`run`] with the occasional large record up to `max_large` bytes.
fn run_sized(threads: u32, per_thread: u32, config: Config, max_large: usize) {
    let dir = tempfile::tempdir().unwrap();
    let seg = walden::SegmentSize::new(config.segment_size).unwrap();
    let format = config.format;
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
                            // Mostly small, now and then up to `max_large`.
                            let len = if x >> 60 == 0 {
                                (x >> 20) as usize % max_large
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
        if format.has_prev_link() {
            assert_eq!(b.header.prev, a.lsn, "prev-link of {}", b.lsn);
        }
    }
    for r in &records {
        let mut h = [0u8; 24];
        format.encode_header(&r.header, r.lsn, seg, &mut h);
        let h = &h[..format.record_header_size()];
        assert_eq!(
            format.record_crc(h, &r.body),
            r.header.crc,
            "CRC of {}",
            r.lsn
        );
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
                reason: EndOfWalReason::InvalidRecordLength { got: 0, .. }
                    | EndOfWalReason::RecordShorterThanHeader { got: 0, .. },
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

/// What every scenario runs with: 1 MiB segments, a ring of `buffers`
/// bytes, no syncing.
fn base(format: WalFormat, reservation: ReservationKind, buffers: u64) -> Config {
    Config {
        format,
        reservation,
        segment_size: 1 << 20,
        buffers,
        sync_method: SyncMethod::None,
        ..Config::default()
    }
}

/// `config` with cooperative page initialisation and batch eviction.
fn cooperative_batch(config: Config) -> Config {
    Config {
        page_init: PageInitKind::Cooperative,
        eviction: Eviction::Batch,
        ..config
    }
}

/// 256 threads, 8 slots, a 32-page ring.
fn many_threads(format: WalFormat, reservation: ReservationKind) {
    run(256, 24, base(format, reservation, 256 << 10));
}

/// One slot and a 4-page ring: records of up to 64 KiB are twice the ring.
fn one_slot_and_a_tiny_ring(format: WalFormat, reservation: ReservationKind) {
    let config = Config {
        insert_slots: 1,
        ..base(format, reservation, 32 << 10)
    };
    run(64, 16, config);
}

/// A tiny ring shared by many slots: records larger than the ring meet
/// inserters waiting for their prev-link.
fn many_slots_and_a_tiny_ring(format: WalFormat, reservation: ReservationKind) {
    let config = Config {
        insert_slots: 64,
        ..base(format, reservation, 32 << 10)
    };
    run(128, 12, config);
}

/// `many_threads` with cooperative page initialisation and batch eviction.
fn cooperative_batch_many_threads(format: WalFormat, reservation: ReservationKind) {
    run(
        256,
        24,
        cooperative_batch(base(format, reservation, 256 << 10)),
    );
}

/// Cooperative page initialisation and batch eviction on a 4-page ring,
/// with records up to 4× the ring: inserters claim pages past others'
/// unfinished records and evict pages they filled themselves.
fn cooperative_batch_tiny_ring(format: WalFormat, reservation: ReservationKind) {
    let buffers = 32 << 10;
    let config = Config {
        insert_slots: 8,
        ..base(format, reservation, buffers)
    };
    run_sized(64, 16, cooperative_batch(config), 4 * buffers as usize);
}

/// `config` writing through every page a record covers whole
/// ([`Config::write_through_from`] at one page).
fn write_through(config: Config) -> Config {
    Config {
        write_through_from: 8192,
        ..config
    }
}

/// Write-through under 128 threads on a 32-page ring with 8 slots: the
/// occasional record up to 64 KiB writes its whole pages while others
/// insert around it and flush (every record's bytes, links and CRCs are
/// checked by `run`).
fn write_through_many_threads(format: WalFormat, reservation: ReservationKind) {
    run(128, 24, write_through(base(format, reservation, 256 << 10)));
}

/// The CRC beside the write ([`Config::crc_helper`]) under 128 threads,
/// as [`write_through_many_threads`]: the helper takes one record's CRC at
/// a time while its pages are written ahead of the written point, and the
/// others compute their own.
fn crc_beside_write_many_threads(format: WalFormat, reservation: ReservationKind) {
    let config = Config {
        crc_helper: true,
        ..write_through(base(format, reservation, 256 << 10))
    };
    run(128, 24, config);
}

/// Write-through with cooperative page initialisation and batch eviction
/// on a 4-page ring, records up to 4× the ring: a record's whole pages
/// leave slots that later pages initialise after they were written.
fn write_through_tiny_ring(format: WalFormat, reservation: ReservationKind) {
    let buffers = 32 << 10;
    let config = Config {
        insert_slots: 8,
        ..base(format, reservation, buffers)
    };
    run_sized(
        64,
        16,
        write_through(cooperative_batch(config)),
        4 * buffers as usize,
    );
}

/// One test per scenario and (format, reservation) pair that applies.
macro_rules! for_every_pair {
    (@tests $scenario:ident: $($test:ident: $format:ident, $reservation:ident;)*) => {
        $(#[test]
        fn $test() {
            super::$scenario(WalFormat::$format, ReservationKind::$reservation);
        })*
    };
    ($($scenario:ident),* $(,)?) => {
        $(mod $scenario {
            use super::*;

            for_every_pair!(@tests $scenario:
                postgres15_spinlock: Postgres15, Spinlock;
                postgres15_prev_link_table: Postgres15, PrevLinkTable;
                postgres15_prev_link_in_buffer: Postgres15, PrevLinkInBuffer;
                self_lsn_unlinked: SelfLsn, Unlinked;
                compact_wal_id_unlinked: CompactWalId, Unlinked;
            );
        })*
    };
}

for_every_pair!(
    many_threads,
    one_slot_and_a_tiny_ring,
    many_slots_and_a_tiny_ring,
    cooperative_batch_many_threads,
    cooperative_batch_tiny_ring,
    write_through_many_threads,
    crc_beside_write_many_threads,
    write_through_tiny_ring,
);
