//! The bench-only `DumbCeiling` reservation (seed 003's "Dumb" ceiling:
//! `xl_prev` = start − 1) is refused without its explicit flag, and the log
//! it writes is refused by the reader at its second record, on the
//! prev-link, as pg_waldump refuses it.

use std::sync::Arc;

use crate::support::wal::read_all;
use walden::{
    Config, ConfigError, EndOfWalReason, Error, Lsn, ReadError, Record, ReservationKind,
    SegmentSize, SyncMethod, Wal, WalFormat,
};

fn config(allowed: bool) -> Config {
    Config {
        format: WalFormat::Postgres15,
        reservation: ReservationKind::DumbCeiling,
        bench_unreadable_ceiling: allowed,
        segment_size: 1 << 20,
        buffers: 128 << 10,
        sync_method: SyncMethod::None,
        ..Config::default()
    }
}

#[test]
fn the_dumb_ceiling_needs_its_bench_flag() {
    let dir = tempfile::tempdir().unwrap();
    let err = Wal::create(dir.path(), config(false)).unwrap_err();
    assert!(
        matches!(err, Error::Config(ConfigError::DumbCeilingNotAllowed)),
        "{err}"
    );
    assert!(
        !ReservationKind::ALL.contains(&ReservationKind::DumbCeiling),
        "not among the designs a log is made with"
    );
    assert_eq!(
        "dumb-ceiling".parse::<ReservationKind>().unwrap(),
        ReservationKind::DumbCeiling
    );
}

#[test]
fn a_dumb_ceiling_log_is_refused_by_the_reader_at_its_second_record() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(Wal::create(dir.path(), config(true)).unwrap());
    let spans: Vec<_> = (0..3u8)
        .map(|i| wal.insert_span(&Record::new(140, 0, vec![i; 100])).unwrap())
        .collect();
    wal.flush(spans[2].end).unwrap();
    drop(wal);
    let (records, err) = read_all(dir.path());
    // The log's first record passes (a first record's link only has to be
    // below it); the one after it is refused, whichever it is.
    assert_eq!(records.len(), 1, "only the first record reads");
    let second = if records[0].lsn == spans[0].start {
        spans[1].start
    } else {
        spans[0].start
    };
    match err {
        ReadError::EndOfWal {
            reason: EndOfWalReason::BadPrevLink { prev, at },
            ..
        } => {
            assert_eq!(at, second);
            assert_eq!(prev, Lsn(second.as_u64() - 1));
        }
        other => panic!("expected a bad prev-link at {second}: {other}"),
    }
    let seg = SegmentSize::new(1 << 20).unwrap();
    let d = dir.path().to_str().unwrap();
    let first_seg = seg.file_name(1, seg.segno(records[0].lsn));
    let out = walden_testkit::run_pg_waldump(["-p", d, &first_seg]).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "record with incorrect prev-link {}",
            Lsn(second.as_u64() - 1)
        )),
        "pg_waldump: {stderr}"
    );
}
