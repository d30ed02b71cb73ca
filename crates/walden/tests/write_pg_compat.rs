//! `pg_waldump` reads what Walden writes: many threads, random sizes,
//! records larger than a segment, headers split at page offsets 8176 and
//! 8184, a record ending exactly at a page end, switches, checkpoints that
//! recycle segments, and a close/reopen in the middle.

mod support;

use std::sync::Arc;

use support::{insert_at_page_offset, payload, read_from};
use walden::lsn::{Lsn, PAGE_SIZE};
use walden::{Config, Record, SegmentSize, SyncMethod, Wal};

const RMID: u8 = 130;

fn threaded(wal: &Arc<Wal>, threads: u32, per_thread: u32, max_len: usize, salt: u32) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let wal = wal.clone();
            s.spawn(move || {
                let mut x = u64::from(t ^ salt) * 2654435761 + 17;
                for i in 0..per_thread {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let len = (x >> 33) as usize % max_len;
                    wal.insert(&Record::new(RMID, 0x10, payload(t, i, len.max(8))))
                        .unwrap();
                }
            });
        }
    });
}

/// Runs `pg_waldump` over `[start, end)`: it must exit 0 and show as many
/// records as Walden's reader reads there; returns its output.
fn pg_waldump_agrees(dir: &std::path::Path, start: Lsn) -> String {
    let (records, _) = read_from(dir, Some(start));
    let end = records.last().unwrap().end;
    let d = dir.to_str().unwrap();
    let (s, e) = (start.to_string(), end.to_string());
    let out = walden_testkit::run_pg_waldump(["-p", d, "-s", &s, "-e", &e]).unwrap();
    assert!(
        out.status.success(),
        "pg_waldump -p {d} -s {s} -e {e}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = text.lines().filter(|l| l.starts_with("rmgr:")).count();
    assert_eq!(
        lines,
        records.len(),
        "records shown by pg_waldump vs read by Walden"
    );
    text
}

fn check_with_pg_waldump(segment_size: u64) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let seg = SegmentSize::new(segment_size).unwrap();
    let config = Config {
        segment_size,
        buffers: 512 << 10,
        sync_method: SyncMethod::None,
        recycle_segments: 2,
        ..Config::default()
    };
    let wal = Arc::new(Wal::create(dir, config.clone()).unwrap());
    let first = wal
        .reader(seg.segment_start(1))
        .unwrap()
        .next_record()
        .unwrap()
        .unwrap()
        .lsn;
    threaded(&wal, 64, 12, 64 << 10, 1);
    let s = insert_at_page_offset(&wal, seg, RMID, 8176, 100);
    assert_eq!(s.start.page_offset(), 8176);
    let s = insert_at_page_offset(&wal, seg, RMID, 8184, 100);
    assert_eq!(s.start.page_offset(), 8184);
    // A record ending exactly at a page end: 48 bytes from the end.
    let s = insert_at_page_offset(&wal, seg, RMID, PAGE_SIZE - 48, 48 - 24 - 2);
    assert_eq!(s.end.page_offset(), 0, "ends at {}", s.end);
    // A record with a whole segment of continuation inside it.
    let big = wal
        .insert_span(&Record::new(
            RMID,
            0x20,
            payload(999, 0, 2 * segment_size as usize),
        ))
        .unwrap();
    assert!(seg.segno(big.end) >= seg.segno(big.start) + 2);
    let sw = wal.switch_segment().unwrap().expect("not on a boundary");
    assert_eq!(seg.offset(sw.end), 0);
    threaded(&wal, 64, 8, 16 << 10, 2);
    let end = wal
        .insert(&Record::new(RMID, 0, b"last before checkpoint".to_vec()))
        .unwrap();
    wal.flush(end).unwrap();
    let text = pg_waldump_agrees(dir, first);
    assert!(text.contains("SWITCH"), "a switch record is in range");

    // A checkpoint recycles the segments before its redo point; the log
    // reads straight across it, a clean close and a reopen.
    let checkpoint = wal.checkpoint().unwrap();
    let redo = walden::segment::ControlFile::read(&walden::segment::FsStorage, dir)
        .unwrap()
        .redo;
    assert!(redo <= checkpoint);
    assert!(
        !dir.join(seg.file_name(1, seg.segno(first))).exists()
            || seg.segno(redo) == seg.segno(first),
        "segments before the redo point are recycled or removed"
    );
    threaded(&wal, 16, 8, 4 << 10, 3);
    Arc::try_unwrap(wal).unwrap().close().unwrap();
    let (wal, report) = Wal::open(dir, config).unwrap();
    assert!(report.clean_shutdown);
    let wal = Arc::new(wal);
    threaded(&wal, 32, 8, 8 << 10, 4);
    wal.switch_segment().unwrap();
    threaded(&wal, 8, 4, 1 << 10, 5);
    Arc::try_unwrap(wal).unwrap().close().unwrap();
    let text = pg_waldump_agrees(dir, redo);
    assert!(
        text.contains("CHECKPOINT_SHUTDOWN"),
        "the close before the reopen is in range"
    );
}

#[test]
fn pg_waldump_accepts_1mib_segments() {
    check_with_pg_waldump(1 << 20);
}

#[test]
fn pg_waldump_accepts_16mib_segments() {
    check_with_pg_waldump(16 << 20);
}
