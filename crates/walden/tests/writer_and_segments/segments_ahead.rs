//! Segments kept ready ahead of the writer (`Config::segments_ahead`) and
//! prepared each way (`Config::segment_prep`), on the real file system: the
//! writer finds them ready, a log that has recycled creates none, and every
//! record reads back after a reopen.

use std::path::Path;

use walden::{Config, Record, SegmentPrep, Stats, SyncMethod, Wal};

const MIB: u64 = 1 << 20;
const USER_RMID: u8 = 128;

fn config(prep: SegmentPrep, ahead: usize) -> Config {
    Config {
        segment_size: MIB,
        buffers: MIB,
        sync_method: SyncMethod::Fdatasync,
        writer_delay: None,
        segment_prep: prep,
        segments_ahead: ahead,
        recycle_segments: 3,
        ..Config::default()
    }
}

/// Writes a record into the next `n` segments, one after the other, each
/// flushed before the switch to the next: the writer enters every one.
fn enter_segments(wal: &Wal, n: usize, written: &mut u64) {
    for _ in 0..n {
        let end = wal
            .insert(&Record::new(USER_RMID, 0, written.to_le_bytes().to_vec()))
            .unwrap();
        *written += 1;
        wal.flush(end).unwrap();
        wal.switch_segment().unwrap();
    }
    let end = wal
        .insert(&Record::new(USER_RMID, 0, written.to_le_bytes().to_vec()))
        .unwrap();
    *written += 1;
    wal.flush(end).unwrap();
}

/// The segment counters of `after` minus those of `before`:
/// (found ready, created on write, prepared ahead).
fn delta(before: &Stats, after: &Stats) -> (u64, u64, u64) {
    (
        after.segments_found_ready - before.segments_found_ready,
        after.segments_created_on_write - before.segments_created_on_write,
        after.segments_prepared_ahead - before.segments_prepared_ahead,
    )
}

/// The user records of the log in `dir`, in order, as their sequence numbers.
fn user_records(dir: &Path, config: Config) -> Vec<u64> {
    let (wal, report) = Wal::open(dir, config).unwrap();
    let mut reader = wal.reader(report.redo).unwrap();
    let mut out = Vec::new();
    while let Ok(Some(r)) = reader.next_record() {
        if r.header.rmid == USER_RMID {
            let body = r.decode_body().unwrap().main_data;
            out.push(u64::from_le_bytes(body.try_into().unwrap()));
        }
    }
    wal.close().unwrap();
    out
}

/// After a checkpoint has recycled, the writer enters as many segments as
/// the checkpoint recycled beyond those kept ready, and neither it nor the
/// preallocator creates any: the steady state. Every preparation.
#[test]
fn after_recycling_the_log_creates_no_segment() {
    for prep in SegmentPrep::ALL {
        let dir = tempfile::tempdir().unwrap();
        let config = config(prep, 2);
        let wal = Wal::create(dir.path(), config.clone()).unwrap();
        let mut written = 0;
        enter_segments(&wal, 8, &mut written);
        let fresh = wal.stats();
        assert!(
            fresh.segments_found_ready + fresh.segments_created_on_write >= 8,
            "{prep}: {fresh:?}"
        );
        wal.checkpoint().unwrap();
        let checkpointed = wal.stats();
        assert!(
            checkpointed.segments_recycled >= 3,
            "{prep}: {checkpointed:?}"
        );
        // The checkpoint record may have entered the next segment.
        enter_segments(&wal, 2, &mut written);
        let steady = wal.stats();
        let (found, created, prepared) = delta(&checkpointed, &steady);
        assert_eq!((created, prepared), (0, 0), "{prep}: {steady:?}");
        assert!(found >= 2, "{prep}: {steady:?}");
        wal.close().unwrap();
        let read: Vec<u64> = user_records(dir.path(), config);
        let expected: Vec<u64> = (written - read.len() as u64..written).collect();
        assert_eq!(read, expected, "{prep}: the records since the checkpoint");
        assert!(read.len() >= 3, "{prep}");
    }
}

/// With no segment kept ahead the writer creates every segment it enters
/// after the first, and the preallocator none.
#[test]
fn without_segments_ahead_the_writer_creates_each_segment() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config(SegmentPrep::ZeroFill, 0)).unwrap();
    let before = wal.stats();
    enter_segments(&wal, 5, &mut 0);
    let (found, created, prepared) = delta(&before, &wal.stats());
    assert_eq!((created, prepared), (5, 0), "found {found}");
}

/// Every segment the writer enters after the first was made by the
/// preallocator or by the writer, and counted once as found or created.
#[test]
fn every_segment_entered_is_counted_once() {
    for prep in SegmentPrep::ALL {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::create(dir.path(), config(prep, 3)).unwrap();
        enter_segments(&wal, 6, &mut 0);
        let stats = wal.stats();
        assert_eq!(
            stats.segments_found_ready + stats.segments_created_on_write,
            7,
            "{prep}: the writer entered segments 1 to 7: {stats:?}"
        );
        assert!(
            stats.segments_prepared_ahead + stats.segments_created_on_write >= 6,
            "{prep}: segments 2 to 7 were made by one or the other: {stats:?}"
        );
        wal.close().unwrap();
    }
}
