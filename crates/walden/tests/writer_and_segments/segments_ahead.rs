//! Segments kept ready ahead of the writer (`Config::segments_ahead`) and
//! prepared each way (`Config::segment_prep`), on the real file system: the
//! writer finds them ready, a log that has recycled creates none, the
//! writer never waits for the preparation of a later segment, and every
//! record reads back after a reopen.

use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::support::hooked_fs::{HookedFs, OpenHook};
use walden::{
    Config, FsStorage, OpenOptions, Record, SegmentPrep, SegmentSize, Stats, Storage, StorageFile,
    SyncMethod, Wal,
};

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

/// Inserts the user record numbered `*written`, counts it and flushes it.
fn flush_next(wal: &Wal, written: &mut u64) {
    let end = wal
        .insert(&Record::new(USER_RMID, 0, written.to_le_bytes().to_vec()))
        .unwrap();
    *written += 1;
    wal.flush(end).unwrap();
}

/// Writes a record into the next `n` segments, one after the other, each
/// flushed before the switch to the next: the writer enters every one.
fn enter_segments(wal: &Wal, n: usize, written: &mut u64) {
    for _ in 0..n {
        flush_next(wal, written);
        wal.switch_segment().unwrap();
    }
    flush_next(wal, written);
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

/// Longest the test waits for something that must happen without waiting
/// on the held preparation (a hang, not a slow machine, exceeds it).
const HANG: Duration = Duration::from_secs(60);

/// Where a [`GatedStorage`] holds the preparation of one segment.
#[derive(Debug)]
struct Gate {
    /// The temporary file whose opening is held.
    held: String,
    /// (the preparation reached the gate, the gate is open).
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, (bool, bool)> {
        self.state.lock().unwrap()
    }

    /// Waits until the preparation is held at the gate; false if it never
    /// came within [`HANG`].
    fn wait_reached(&self) -> bool {
        let (state, _) = self
            .changed
            .wait_timeout_while(self.lock(), HANG, |s| !s.0)
            .unwrap();
        state.0
    }

    /// True while a preparation is held at the gate.
    fn holding(&self) -> bool {
        let s = self.lock();
        s.0 && !s.1
    }

    fn open(&self) {
        self.lock().1 = true;
        self.changed.notify_all();
    }
}

/// The real file system, except that opening the temporary file of the
/// gated segment (the first step of its preparation) waits until the gate
/// opens.
#[derive(Debug)]
struct GatedStorage(Arc<Gate>);

impl OpenHook for GatedStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        if path.file_name().and_then(|n| n.to_str()) == Some(self.0.held.as_str()) {
            let mut s = self.0.lock();
            s.0 = true;
            self.0.changed.notify_all();
            while !s.1 {
                s = self.0.changed.wait(s).unwrap();
            }
        }
        FsStorage.open(path, opts)
    }
}

/// Issue 14: the writer never waits for the preparation of a later
/// segment. Writing segment 1, the preallocator prepares 2, then 3; the
/// preparation of 3 is held. Meanwhile records fill segment 1, the writer
/// enters segment 2 (ready) and flushes there many times: every flush
/// returns while the preparation of 3 is still held, and segment 2 is
/// found ready, not created. With and without direct I/O.
#[test]
fn the_writer_never_waits_for_the_preparation_of_a_later_segment() {
    for direct_io in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            direct_io,
            ..config(SegmentPrep::ZeroFill, 2)
        };
        let seg = SegmentSize::new(MIB).unwrap();
        let (wal, gate) = with_preparation_of_3_held(dir.path(), config.clone());
        let before = wal.stats();
        let (done, finished) = mpsc::channel();
        let written = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut written = 0u64;
                fill_into_segment(&wal, 2);
                for _ in 0..50 {
                    flush_next(&wal, &mut written);
                }
                let _ = done.send(());
                written
            });
            let in_time = finished.recv_timeout(HANG).is_ok();
            let still_held = gate.holding();
            // Let everything finish before asserting, so nothing hangs.
            gate.open();
            let written = writer.join().unwrap();
            assert!(
                in_time,
                "direct_io {direct_io}: the flushes did not finish while segment 3 was prepared"
            );
            assert!(
                still_held,
                "direct_io {direct_io}: the preparation of segment 3 was let go too early"
            );
            written
        });
        let (found, created, _) = delta(&before, &wal.stats());
        assert_eq!((found, created), (1, 0), "segment 2 was found ready");
        assert_eq!(seg.segno(wal.insert_position()), 2);
        wal.close().unwrap();
        let read = user_records(dir.path(), config);
        assert_eq!(read.len() as u64, written);
        assert!(read.iter().copied().eq(0..written));
    }
}

/// A log created in `dir` whose preallocator, asked for segments 2 and 3
/// at the creation, is held at the start of segment 3's preparation.
fn with_preparation_of_3_held(dir: &Path, config: Config) -> (Wal, Arc<Gate>) {
    let seg = SegmentSize::new(config.segment_size).unwrap();
    let gate = Arc::new(Gate {
        held: format!("{}.tmp", seg.file_name(1, 3)),
        state: Mutex::new((false, false)),
        changed: Condvar::new(),
    });
    let storage = Arc::new(HookedFs(GatedStorage(gate.clone())));
    let wal = Wal::create_with_storage(dir, config, storage).unwrap();
    assert!(
        gate.wait_reached(),
        "the preallocator never began segment 3"
    );
    (wal, gate)
}

/// Inserts and flushes 64 KiB fillers until the insert position is in
/// segment `segno`: the writer enters every segment before it.
fn fill_into_segment(wal: &Wal, segno: u64) {
    let seg = SegmentSize::new(wal.config().segment_size).unwrap();
    while seg.segno(wal.insert_position()) < segno {
        let filler = Record::new(USER_RMID + 1, 0, vec![7; 64 << 10]);
        wal.flush(wal.insert(&filler).unwrap()).unwrap();
    }
}

/// A checkpoint may recycle an old segment to the name the preallocator
/// is preparing (its temporary file has no name yet); the writer then
/// enters that segment at once rather than wait for the preparation.
/// With the preparation of segment 3 held, the writer fills segment 1
/// and enters 2, a checkpoint recycles segment 1 to 3, and the writer
/// enters 3 (found ready) and flushes there while the preparation is
/// still held; released, the preparation is abandoned before its first
/// write and leaves no file behind, and every record reads back.
#[test]
fn a_segment_recycled_to_the_name_being_prepared_is_entered_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(SegmentPrep::ZeroFill, 2);
    let (wal, gate) = with_preparation_of_3_held(dir.path(), config.clone());
    let (done, finished) = mpsc::channel();
    let written = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            fill_into_segment(&wal, 2);
            wal.checkpoint().unwrap();
            let recycled = wal.stats();
            fill_into_segment(&wal, 3);
            let mut written = 0u64;
            for _ in 0..50 {
                flush_next(&wal, &mut written);
            }
            let _ = done.send(());
            (written, recycled)
        });
        let in_time = finished.recv_timeout(HANG).is_ok();
        let still_held = gate.holding();
        gate.open();
        let (written, recycled) = writer.join().unwrap();
        assert!(
            in_time,
            "the writer waited for the preparation of a segment recycled to its name"
        );
        assert!(
            still_held,
            "the preparation of segment 3 was let go too early"
        );
        assert_eq!(recycled.segments_recycled, 1, "{recycled:?}");
        let (found, created, _) = delta(&recycled, &wal.stats());
        assert_eq!((found, created), (1, 0), "segment 3 was found ready");
        written
    });
    let deadline = std::time::Instant::now() + HANG;
    while wal.stats().segment_preparations_abandoned == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the preparation of segment 3 was not abandoned: {:?}",
            wal.stats()
        );
        std::thread::yield_now();
    }
    assert_eq!(wal.stats().segment_preparations_abandoned, 1);
    wal.close().unwrap();
    let temporary: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert_eq!(
        temporary,
        Vec::<String>::new(),
        "prepared files left behind"
    );
    let read = user_records(dir.path(), config);
    assert!(read.iter().copied().eq(0..written), "{read:?}");
}

/// A log opened without the segments after its end (recovery removes
/// those past the recovered end) gets them from the preallocator at once,
/// before any commit needs them: the first segment the writer enters after
/// the open is found ready, not created on the insert path.
#[test]
fn an_opened_log_prepares_the_segments_after_its_end_before_they_are_needed() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(SegmentPrep::ZeroFill, 2);
    let seg = SegmentSize::new(MIB).unwrap();
    let wal = Wal::create(dir.path(), config.clone()).unwrap();
    let mut written = 0;
    enter_segments(&wal, 3, &mut written);
    let current = wal.insert_position().0 / MIB;
    wal.close().unwrap();
    let later = |n: u64| dir.path().join(seg.file_name(1, current + n));
    for n in 1..=4 {
        match std::fs::remove_file(later(n)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other.unwrap(),
        }
    }
    let (wal, _) = Wal::open(dir.path(), config).unwrap();
    let opened = wal.stats();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(later(1).exists() && later(2).exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no segment prepared after the open ({} and {} missing; end {}): {:?} {:?}",
            later(1).display(),
            later(2).display(),
            wal.insert_position(),
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>(),
            wal.stats()
        );
        std::thread::yield_now();
    }
    enter_segments(&wal, 1, &mut written);
    let (found, created, _) = delta(&opened, &wal.stats());
    assert_eq!(created, 0, "{:?}", wal.stats());
    assert!(found >= 1, "{:?}", wal.stats());
    wal.close().unwrap();
}
