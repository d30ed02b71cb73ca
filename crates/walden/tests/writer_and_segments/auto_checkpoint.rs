//! Automatic checkpoints and retention: a log written past
//! `max_wal_size` checkpoints by itself and retires the segments below the
//! new redo point; `checkpoint_timeout` checkpoints once records arrive;
//! `wal_keep_size`, `wal_keep_for` and `wal_keep_max_size` keep exactly the
//! segments below the redo point they say.

use std::path::Path;
use std::time::{Duration, Instant};

use walden::internals::ControlFile;
use walden::{Config, FsStorage, Lsn, Record, SegmentSize, Stats, SyncMethod, Wal};

const SEG: u64 = 1 << 20;

fn config() -> Config {
    Config {
        segment_size: SEG,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        recycle_segments: 0,
        segments_ahead: 0,
        writer_delay: None,
        ..Config::default()
    }
}

/// A new log with `config` in a new directory.
fn log(config: Config) -> (tempfile::TempDir, Wal) {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config).unwrap();
    (dir, wal)
}

/// Inserts 4 kB records until the insert position passes `upto`,
/// flushing every 16 records.
fn fill(wal: &Wal, upto: Lsn) {
    let mut n = 0u32;
    while wal.insert_position() < upto {
        let end = wal.insert(&Record::new(128, 0, vec![7; 4096])).unwrap();
        n += 1;
        if n.is_multiple_of(16) {
            wal.flush(end).unwrap();
        }
    }
    wal.flush(wal.insert_position()).unwrap();
}

/// The control file's redo point.
fn redo(dir: &Path) -> Lsn {
    ControlFile::read(&FsStorage, dir).unwrap().redo
}

/// The segment numbers in `dir`, ascending.
fn segments(dir: &Path) -> Vec<u64> {
    let seg = SegmentSize::new(SEG).unwrap();
    let mut out: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name();
            seg.parse_file_name(name.to_str()?).map(|(_, segno)| segno)
        })
        .collect();
    out.sort_unstable();
    out
}

/// The segments below the redo point's segment.
fn below_redo(dir: &Path) -> Vec<u64> {
    let redo_segno = redo(dir).0 / SEG;
    segments(dir)
        .into_iter()
        .filter(|&s| s < redo_segno)
        .collect()
}

/// Polls `stats` until `done` holds; fails after 10 s.
fn wait_for(wal: &Wal, what: &str, done: impl Fn(&Stats) -> bool) -> Stats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = wal.stats();
        if done(&stats) {
            return stats;
        }
        assert!(Instant::now() < deadline, "{what} within 10 s: {stats:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_log_written_past_max_wal_size_checkpoints_and_removes_old_segments() {
    let max = 3 * SEG;
    let (dir, wal) = log(Config {
        max_wal_size: Some(max),
        ..config()
    });
    fill(&wal, Lsn(11 * SEG));
    let stats = wal.stats();
    let end = wal.insert_position();
    let redo = redo(dir.path());
    // Without a background writer, each flush checks the policy after its
    // sync: 10 MiB past a 3 MiB limit checkpoints at least 3 times, and the
    // redo point is no further back than the limit plus one flush's records.
    assert!(stats.checkpoints_by_volume >= 3, "{stats:?}");
    assert_eq!(stats.checkpoints_requested, 0);
    assert!(
        end.0 - redo.0 < max + 17 * 4200,
        "redo {redo} too far behind the end {end}"
    );
    // Every segment wholly below the redo point went (none kept, none
    // recycled with recycle_segments = 0 and segments_ahead = 0).
    assert_eq!(below_redo(dir.path()), Vec::<u64>::new());
    assert_eq!(stats.segments_removed, redo.0 / SEG - 1, "{stats:?}");
    assert_eq!(stats.segments_recycled, 0);
    drop(wal);
    let (_wal, report) = Wal::open(dir.path(), config()).unwrap();
    assert_eq!(report.redo, redo);
}

#[test]
fn the_background_writer_checkpoints_by_volume_and_recycles() {
    let (dir, wal) = log(Config {
        max_wal_size: Some(2 * SEG),
        writer_delay: Some(Duration::from_millis(5)),
        recycle_segments: 2,
        ..config()
    });
    fill(&wal, Lsn(6 * SEG));
    // The rounds check the policy until less than max_wal_size lies past
    // the redo point; the first checkpoint recycles segments 1 and on.
    let stats = wait_for(&wal, "checkpoints by volume up to the end", |s| {
        s.segments_recycled > 0 && wal.insert_position().0 - redo(dir.path()).0 < 2 * SEG
    });
    assert!(stats.checkpoints_by_volume >= 1, "{stats:?}");
    // Closing waits for a checkpoint still retiring segments.
    wal.close().unwrap();
    assert_eq!(below_redo(dir.path()), Vec::<u64>::new());
}

#[test]
fn the_time_trigger_checkpoints_once_records_arrive() {
    let (dir, wal) = log(Config {
        checkpoint_timeout: Some(Duration::from_millis(20)),
        writer_delay: Some(Duration::from_millis(5)),
        ..config()
    });
    let end = wal.insert(&Record::new(128, 0, b"x".to_vec())).unwrap();
    wal.flush(end).unwrap();
    let stats = wait_for(&wal, "a checkpoint by time", |s| s.checkpoints_by_time >= 1);
    assert_eq!(stats.checkpoints_by_volume, 0);
    assert!(
        redo(dir.path()) >= end,
        "the redo point moved past the record"
    );
}

#[test]
fn wal_keep_size_keeps_exactly_that_many_segments_below_the_redo_point() {
    let (dir, wal) = log(Config {
        wal_keep_size: 2 * SEG + 1,
        ..config()
    });
    for upto in [8, 12] {
        fill(&wal, Lsn(upto * SEG));
        wal.checkpoint().unwrap();
        let r = redo(dir.path()).0 / SEG;
        // 2 MiB and a byte: three whole segments.
        assert_eq!(below_redo(dir.path()), vec![r - 3, r - 2, r - 1]);
        assert_eq!(wal.stats().wal_retained_bytes, 3 * SEG);
    }
    assert_eq!(wal.stats().checkpoints_requested, 2);
}

/// A log with `config` filled to segment `segs` and checkpointed: its
/// directory, the log and the segment of the redo point.
fn checkpointed(config: Config, segs: u64) -> (tempfile::TempDir, Wal, u64) {
    let (dir, wal) = log(config);
    fill(&wal, Lsn(segs * SEG));
    wal.checkpoint().unwrap();
    let redo_segno = redo(dir.path()).0 / SEG;
    (dir, wal, redo_segno)
}

#[test]
fn wal_keep_for_keeps_segments_up_to_the_cap() {
    let keep = Config {
        wal_keep_size: SEG,
        wal_keep_for: Some(Duration::from_secs(3600)),
        wal_keep_max_size: Some(4 * SEG),
        ..config()
    };
    let (dir, wal, r) = checkpointed(keep, 10);
    assert_eq!(below_redo(dir.path()), (r - 4..r).collect::<Vec<_>>());
    assert_eq!(wal.stats().wal_retained_bytes, 4 * SEG);
}

#[test]
fn wal_keep_for_lets_segments_go_when_they_age_out() {
    let keep = Config {
        wal_keep_size: SEG,
        wal_keep_for: Some(Duration::from_millis(50)),
        writer_delay: Some(Duration::from_millis(5)),
        ..config()
    };
    let (dir, wal, r) = checkpointed(keep, 8);
    // Once aged out, the background writer retires all but wal_keep_size.
    let stats = wait_for(&wal, "the aged-out segments retired", |s| {
        s.segments_removed == r - 2
    });
    assert_eq!(below_redo(dir.path()), vec![r - 1]);
    assert_eq!(stats.wal_retained_bytes, SEG);
}
