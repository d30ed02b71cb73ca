//! Every reservation design with every format it serves, where the designs
//! differ: across the 4 GiB LSN boundary (where a prev-link's high half
//! changes), across restarts (the prev-link chain seeded from recovery), and
//! the recovery rule of the formats without prev-links (new records start
//! in a fresh segment after a crash).

use std::sync::Arc;

use crate::support::wal::{payload, read_from};
use walden::FsStorage;
use walden::{
    Config, ConfigError, Error, Lsn, Record, ReservationKind, SegmentSize, SyncMethod, Wal,
    WalFormat,
};

const RMID: u8 = 140;

/// Every pair DESIGN.md §3 allows.
pub(crate) const PAIRS: [(WalFormat, ReservationKind); 5] = [
    (WalFormat::Postgres15, ReservationKind::Spinlock),
    (WalFormat::Postgres15, ReservationKind::PrevLinkTable),
    (WalFormat::Postgres15, ReservationKind::PrevLinkInBuffer),
    (WalFormat::SelfLsn, ReservationKind::Unlinked),
    (WalFormat::CompactWalId, ReservationKind::Unlinked),
];

pub(crate) fn config(format: WalFormat, reservation: ReservationKind) -> Config {
    Config {
        format,
        reservation,
        segment_size: 1 << 20,
        buffers: 128 << 10,
        sync_method: SyncMethod::None,
        ..Config::default()
    }
}

/// Inserts `per_thread` records from each of `threads` threads.
fn insert_from_threads(wal: &Arc<Wal>, threads: u32, per_thread: u32, salt: u32) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let wal = wal.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    let len = 8 + ((t * 7919 + i * 104_729 + salt) % 3000) as usize;
                    wal.insert(&Record::new(RMID, 0, payload(t ^ salt, i, len)))
                        .unwrap();
                }
            });
        }
    });
}

/// Reads from `start` to the end of WAL and checks that records tile the
/// log and, in a format with prev-links, chain; returns how many there were.
pub(crate) fn check_log(dir: &std::path::Path, start: Lsn, config: &Config) -> usize {
    let (records, stop) = read_from(dir, Some(start));
    let (format, seg) = (
        config.format,
        SegmentSize::new(config.segment_size).unwrap(),
    );
    for w in records.windows(2) {
        if format.has_prev_link() {
            assert_eq!(w[1].header.prev, w[0].lsn, "prev-link of {}", w[1].lsn);
        }
        let aligned = seg.aligned_end(w[0].lsn, u64::from(w[0].header.tot_len));
        let is_switch = w[0].header.rmid == 0 && w[0].header.info == 0x40;
        if !is_switch {
            assert_eq!(
                Some(w[1].lsn),
                aligned.map(|end| {
                    // An end at a page start means past that page's header.
                    if end.page_offset() == 0 {
                        Lsn(end.0 + seg.page_header_size(end))
                    } else {
                        end
                    }
                }),
                "gap after {}",
                w[0].lsn
            );
        }
    }
    assert!(stop.to_string().contains("got 0"), "{stop}");
    records.len()
}

/// A log placed just below 4 GiB fills past it with many threads: the
/// prev-links whose high 32 bits change (the in-buffer handoff writes the
/// halves separately) arrive whole, in every design.
#[test]
fn every_design_crosses_the_4_gib_boundary() {
    for (format, reservation) in PAIRS {
        let dir = tempfile::tempdir().unwrap();
        let first = (1u64 << 32) / (1 << 20) - 1;
        let config = config(format, reservation);
        let wal =
            Wal::create_at_segment(dir.path(), config.clone(), Arc::new(FsStorage), first).unwrap();
        let wal = Arc::new(wal);
        insert_from_threads(&wal, 32, 40, 1);
        let end = wal.insert_position();
        assert!(end.0 > 1 << 32, "{format}/{reservation}: ended at {end}");
        wal.switch_segment().unwrap();
        insert_from_threads(&wal, 8, 10, 2);
        Arc::try_unwrap(wal).unwrap().close().unwrap();
        let start = Lsn((first << 20) + 40);
        let n = check_log(dir.path(), start, &config);
        assert!(n > 32 * 40 + 80, "{format}/{reservation}: {n} records");
    }
}

/// Close and reopen twice in the middle of a threaded load, with online
/// checkpoints: the first record after each start links to the last one
/// before it, in every design.
#[test]
fn every_design_chains_across_restarts() {
    for (format, reservation) in PAIRS {
        let dir = tempfile::tempdir().unwrap();
        // Segments large enough that no checkpoint recycles the first one.
        let config = Config {
            segment_size: 16 << 20,
            ..config(format, reservation)
        };
        let wal = Arc::new(Wal::create(dir.path(), config.clone()).unwrap());
        insert_from_threads(&wal, 16, 20, 3);
        Arc::try_unwrap(wal).unwrap().close().unwrap();
        for round in 0..2 {
            let (wal, report) = Wal::open(dir.path(), config.clone()).unwrap();
            assert!(report.clean_shutdown);
            let wal = Arc::new(wal);
            insert_from_threads(&wal, 16, 20, 4 + round);
            // An online checkpoint in the middle (it takes every slot).
            wal.checkpoint().unwrap();
            Arc::try_unwrap(wal).unwrap().close().unwrap();
        }
        let n = check_log(dir.path(), Lsn(0x1000028), &config);
        assert_eq!(
            n,
            3 * 16 * 20 + 6,
            "{format}/{reservation}: records plus checkpoints"
        );
    }
}

/// After a crash, a log in any format throws away every segment past the
/// end recovery found and switches to a fresh segment, so no new record is
/// ever written where an earlier incarnation's record may still lie at the
/// same LSN (with prev-links too: the old record's predecessor may have
/// started where the new one's does).
#[test]
fn crash_recovery_starts_a_fresh_segment_in_every_format() {
    for (format, reservation) in PAIRS {
        let dir = tempfile::tempdir().unwrap();
        let config = config(format, reservation);
        let seg = SegmentSize::new(config.segment_size).unwrap();
        let wal = Arc::new(Wal::create(dir.path(), config.clone()).unwrap());
        insert_from_threads(&wal, 8, 400, 5);
        let reached = wal.insert_position();
        // Dropped without close: flushed but not shut down cleanly.
        drop(Arc::try_unwrap(wal).unwrap());
        assert!(seg.segno(reached) >= 2, "{format}: reached {reached}");
        // A torn tail: everything from the middle of segment 1 on is lost,
        // while the later segments still hold what was written there.
        let cut = seg.segment_start(1).0 + 0x8_1230;
        let path = dir.path().join(seg.file_name(1, 1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[(cut % (1 << 20)) as usize..].fill(0);
        std::fs::write(&path, bytes).unwrap();

        let (wal, report) = Wal::open(dir.path(), config.clone()).unwrap();
        assert!(!report.clean_shutdown);
        // A record may end exactly at the cut (records are 8-aligned, and
        // so is the cut); none that crosses it survives.
        assert!(report.end.0 <= cut, "{format}: recovered to {}", report.end);
        let next = wal
            .insert_span(&Record::new(RMID, 0, b"after the crash".to_vec()))
            .unwrap();
        assert_eq!(
            next.start,
            Lsn(seg.segment_start(2).0 + 40),
            "{format}/{reservation}: a fresh segment after the crash"
        );
        wal.close().unwrap();
        // Everything reads back as one log: what survived, the switch, the
        // new record, the shutdown checkpoint; nothing from before the crash
        // past the cut.
        let (records, _) = read_from(dir.path(), Some(Lsn(0x100028)));
        let after: Vec<_> = records.iter().filter(|r| r.lsn >= report.end).collect();
        assert_eq!(after.len(), 3, "{format}: {after:?}");
        assert_eq!(after[1].lsn, next.start);
    }
}

#[test]
fn impossible_pairs_are_config_errors() {
    for format in WalFormat::ALL {
        for reservation in ReservationKind::ALL {
            let dir = tempfile::tempdir().unwrap();
            let result = Wal::create(dir.path(), config(format, reservation));
            if reservation.pairs_with(format) {
                result.unwrap().close().unwrap();
            } else {
                let err = result.unwrap_err();
                assert!(
                    matches!(err, Error::Config(ConfigError::Pairing { .. })),
                    "{format}/{reservation}: {err}"
                );
                assert!(err.to_string().contains(format.name()), "{err}");
            }
        }
    }
}
