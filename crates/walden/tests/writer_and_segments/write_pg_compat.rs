//! `pg_waldump` reads what Walden writes: many threads, random sizes,
//! records larger than a segment, headers split at page offsets 8176 and
//! 8184, a record ending exactly at a page end, switches, checkpoints that
//! recycle segments (proven by inode and page address), a clean close/reopen
//! and a SIGKILL/reopen in the middle — under every reservation design that
//! keeps prev-links, with cooperative page initialisation and batch
//! eviction on a 4-page ring, with either page zeroing and with direct I/O. The formats without prev-links carry their
//! own page magic, which pg_waldump refuses outright.

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::wal::{insert_at_page_offset, payload, pg_waldump_agrees};
use walden::internals::format::page::PageHeader;
use walden::internals::{maxalign, ControlFile, PAGE_SIZE};
use walden::{
    Config, Eviction, PageInitKind, PageZeroing, Record, RecordSpan, ReservationKind, SegmentPrep,
    SegmentSize, SyncMethod, Wal, WalFormat,
};
use walden::{FsStorage, Lsn, WalRecord};

const RMID: u8 = 130;

/// Random sizes of the threaded records: up to 64 KiB.
const MAX_RECORD: usize = 64 << 10;

/// `threads` threads each insert `per_thread` records of random sizes
/// from 8 to `max_len` bytes of main data (both included).
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
                    let len = (x >> 33) as usize % (max_len + 1);
                    wal.insert(&Record::new(RMID, 0x10, payload(t, i, len.max(8))))
                        .unwrap();
                }
            });
        }
    });
}

/// The edge cases pg_waldump must read, appended to `wal`: 64 threads with
/// random sizes up to `max_record`, record headers split at page offsets
/// 8176 and 8184, a record ending exactly at a page end, a record with a
/// whole segment of continuation inside it, a switch, and more threads.
/// Flushes everything; returns the end of the last record.
fn edge_case_workload(wal: &Arc<Wal>, max_record: usize, salt: u32) -> Lsn {
    let seg = SegmentSize::new(wal.config().segment_size).unwrap();
    threaded(wal, 64, 12, max_record, salt);
    let s = insert_at_page_offset(wal, seg, RMID, 8176, 100);
    assert_eq!(s.start.page_offset(), 8176);
    let s = insert_at_page_offset(wal, seg, RMID, 8184, 100);
    assert_eq!(s.start.page_offset(), 8184);
    // A record ending exactly at a page end: 48 bytes from the end.
    let s = insert_at_page_offset(wal, seg, RMID, PAGE_SIZE - 48, 48 - 24 - 2);
    assert_eq!(s.end.page_offset(), 0, "ends at {}", s.end);
    let big = wal
        .insert_span(&Record::new(
            RMID,
            0x20,
            payload(999, salt, 2 * seg.bytes() as usize),
        ))
        .unwrap();
    assert!(seg.segno(big.end) >= seg.segno(big.start) + 2);
    let sw = wal.switch_segment().unwrap().expect("not on a boundary");
    assert_eq!(seg.offset(sw.end), 0);
    threaded(wal, 64, 8, 16 << 10, salt + 1);
    let end = wal
        .insert(&Record::new(RMID, 0, b"last of the edge cases".to_vec()))
        .unwrap();
    wal.flush(end).unwrap();
    end
}

/// The first record at or after `from`.
fn first_record(wal: &Wal, from: Lsn) -> Lsn {
    wal.reader(from)
        .unwrap()
        .next_record()
        .unwrap()
        .unwrap()
        .lsn
}

/// A segment file as found on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SegmentFile {
    ino: u64,
    /// The address its first page header claims.
    pageaddr: Lsn,
}

/// Every segment file in `dir`, by segment number.
fn segment_files(dir: &Path, seg: SegmentSize) -> BTreeMap<u64, SegmentFile> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let Some((_, segno)) = seg.parse_file_name(&name.to_string_lossy()) else {
            continue;
        };
        let mut header = [0u8; 40];
        std::fs::File::open(entry.path())
            .unwrap()
            .read_exact(&mut header)
            .unwrap();
        let pageaddr = PageHeader::decode(&header).unwrap().pageaddr;
        let ino = entry.metadata().unwrap().ino();
        files.insert(segno, SegmentFile { ino, pageaddr });
    }
    files
}

/// An obsolete segment a checkpoint renamed to a future segment name.
#[derive(Debug)]
struct Recycled {
    /// Its new segment number.
    segno: u64,
    /// Its inode, before and after the rename.
    ino: u64,
}

/// Runs a checkpoint and proves it recycled: every segment before the redo
/// point left its name, at least one of them now carries a future segment
/// name (same inode, still starting with its old page), and the stats
/// count exactly those. Returns the redo point and the recycled segments.
fn checkpoint_recycles(wal: &Wal) -> (Lsn, Vec<Recycled>) {
    let (dir, seg) = (
        wal.dir(),
        SegmentSize::new(wal.config().segment_size).unwrap(),
    );
    let before = segment_files(dir, seg);
    let stats_before = wal.stats();
    let checkpoint = wal.checkpoint().unwrap();
    let stats = wal.stats();
    let after = segment_files(dir, seg);
    let redo = ControlFile::read(&FsStorage, dir).unwrap().redo;
    assert!(redo <= checkpoint);
    let current = seg.segno(wal.insert_position());
    let obsolete: Vec<(u64, SegmentFile)> = (before.iter())
        .filter(|(&segno, _)| segno < seg.segno(redo))
        .map(|(&segno, &file)| (segno, file))
        .collect();
    assert!(
        after.keys().all(|&segno| segno >= seg.segno(redo)),
        "segments before the redo point {redo} are recycled or removed: {after:?}"
    );
    // A fresh file starts with zeros, a recycled one with its old first page.
    let recycled: Vec<Recycled> = (after.iter())
        .filter(|(_, file)| obsolete.iter().any(|(_, old)| old == *file))
        .map(|(&segno, file)| Recycled {
            segno,
            ino: file.ino,
        })
        .collect();
    assert!(
        !recycled.is_empty(),
        "the checkpoint recycled nothing: {before:?} became {after:?}"
    );
    assert!(
        recycled.iter().all(|r| r.segno > current),
        "recycled to future names, after {current}: {recycled:?}"
    );
    let counted = stats.segments_recycled - stats_before.segments_recycled;
    let removed = stats.segments_removed - stats_before.segments_removed;
    assert_eq!(counted, recycled.len() as u64, "segments_recycled");
    assert_eq!(
        counted + removed,
        obsolete.len() as u64,
        "recycled + removed"
    );
    (redo, recycled)
}

/// A record written into a recycled segment, to be read back.
struct WrittenInto {
    segment: Recycled,
    span: RecordSpan,
    data: Vec<u8>,
}

/// Switches segments up to the recycled segment `segment` and inserts a
/// record in it.
fn insert_into_recycled(wal: &Wal, segment: Recycled) -> WrittenInto {
    let seg = SegmentSize::new(wal.config().segment_size).unwrap();
    while seg.segno(wal.insert_position()) < segment.segno {
        if wal.switch_segment().unwrap().is_none() {
            // On a boundary already: a record moves it into the segment.
            wal.insert(&Record::new(RMID, 0, b"filler".to_vec()))
                .unwrap();
        }
    }
    let data = payload(777, segment.segno as u32, 3000);
    let span = wal
        .insert_span(&Record::new(RMID, 0x30, data.clone()))
        .unwrap();
    assert_eq!(seg.segno(span.start), segment.segno, "{span:?}");
    WrittenInto {
        segment,
        span,
        data,
    }
}

impl WrittenInto {
    /// The recycled file was written in place, and Walden's reader and
    /// pg_waldump both read the record written into it.
    fn check_read_back(&self, dir: &Path, seg: SegmentSize, records: &[WalRecord], text: &str) {
        let file = segment_files(dir, seg)[&self.segment.segno];
        assert_eq!(file.ino, self.segment.ino, "the recycled file was reused");
        assert_eq!(file.pageaddr, seg.segment_start(self.segment.segno));
        let record = (records.iter())
            .find(|r| r.lsn == self.span.start)
            .expect("Walden reads the record in the recycled segment");
        assert_eq!(maxalign(record.end.as_u64()), self.span.end.as_u64());
        assert_eq!(record.decode_body().unwrap().main_data, self.data);
        assert!(
            text.contains(&format!("lsn: {:#}, prev", self.span.start)),
            "pg_waldump shows the record at {} in the recycled segment",
            self.span.start
        );
    }
}

/// The shared check, on a log whose valid WAL starts at `first`: the edge
/// cases, read by pg_waldump; a checkpoint that recycles; WAL written into
/// a recycled segment; a clean close and reopen; more WAL; read again by
/// pg_waldump from the redo point, the recycled segment included.
fn edge_cases_checkpoint_close_reopen(wal: Arc<Wal>, first: Lsn, max_record: usize) {
    let (dir, config) = (wal.dir().to_path_buf(), wal.config().clone());
    let seg = SegmentSize::new(config.segment_size).unwrap();
    edge_case_workload(&wal, max_record, 1);
    let (_, text) = pg_waldump_agrees(&dir, seg, first);
    assert!(text.contains("SWITCH"), "a switch record is in range");

    let (redo, mut recycled) = checkpoint_recycles(&wal);
    let written = insert_into_recycled(&wal, recycled.remove(0));
    threaded(&wal, 16, 8, 4 << 10, 3);
    Arc::try_unwrap(wal).unwrap().close().unwrap();
    let (wal, report) = Wal::open(&dir, config).unwrap();
    assert!(report.clean_shutdown);
    let wal = Arc::new(wal);
    threaded(&wal, 32, 8, 8 << 10, 4);
    wal.switch_segment().unwrap();
    threaded(&wal, 8, 4, 1 << 10, 5);
    Arc::try_unwrap(wal).unwrap().close().unwrap();
    let (records, text) = pg_waldump_agrees(&dir, seg, redo);
    assert!(
        text.contains("CHECKPOINT_SHUTDOWN"),
        "the close before the reopen is in range"
    );
    written.check_read_back(&dir, seg, &records, &text);
}

fn config(segment_size: u64, reservation: ReservationKind) -> Config {
    Config {
        segment_size,
        reservation,
        buffers: 512 << 10,
        sync_method: SyncMethod::None,
        recycle_segments: 2,
        ..Config::default()
    }
}

/// The shared check on a new log.
fn check_config_with_pg_waldump(config: Config, max_record: usize) {
    let dir = tempfile::tempdir().unwrap();
    let seg = SegmentSize::new(config.segment_size).unwrap();
    let wal = Arc::new(Wal::create(dir.path(), config).unwrap());
    let first = first_record(&wal, seg.segment_start(1));
    edge_cases_checkpoint_close_reopen(wal, first, max_record);
}

fn check_with_pg_waldump(segment_size: u64, reservation: ReservationKind) {
    check_config_with_pg_waldump(config(segment_size, reservation), MAX_RECORD);
}

#[test]
fn pg_waldump_accepts_1mib_segments() {
    check_with_pg_waldump(1 << 20, ReservationKind::Spinlock);
}

#[test]
fn pg_waldump_accepts_16mib_segments() {
    check_with_pg_waldump(16 << 20, ReservationKind::Spinlock);
}

#[test]
fn pg_waldump_accepts_prev_link_table_logs() {
    check_with_pg_waldump(1 << 20, ReservationKind::PrevLinkTable);
    check_with_pg_waldump(16 << 20, ReservationKind::PrevLinkTable);
}

#[test]
fn pg_waldump_accepts_prev_link_in_buffer_logs() {
    check_with_pg_waldump(1 << 20, ReservationKind::PrevLinkInBuffer);
    check_with_pg_waldump(16 << 20, ReservationKind::PrevLinkInBuffer);
}

/// Every way of preparing segments, with several kept ready ahead: the
/// log pg_waldump reads runs through prepared and recycled segments.
#[test]
fn pg_waldump_accepts_logs_of_every_segment_preparation() {
    for segment_prep in SegmentPrep::ALL {
        for segment_size in [1 << 20, 16 << 20] {
            let config = Config {
                segment_prep,
                segments_ahead: 3,
                ..config(segment_size, ReservationKind::Spinlock)
            };
            check_config_with_pg_waldump(config, MAX_RECORD);
        }
    }
}

/// Direct I/O, with each sync method's way to durability (none, a sync
/// after the writes, `O_DIRECT | O_DSYNC`): whole pages written from the
/// ring, partial ones again at the next flush, read by pg_waldump.
#[test]
fn pg_waldump_accepts_direct_io_logs() {
    for sync_method in [
        SyncMethod::None,
        SyncMethod::Fdatasync,
        SyncMethod::OpenDatasync,
    ] {
        let config = Config {
            direct_io: true,
            sync_method,
            ..config(1 << 20, ReservationKind::Spinlock)
        };
        check_config_with_pg_waldump(config, MAX_RECORD);
    }
}

/// Pages zeroed whole at initialisation (`PageZeroing::WholePage`, the
/// behaviour kept to measure against) and header-only (the default): both
/// logs read in pg_waldump.
#[test]
fn pg_waldump_accepts_logs_of_either_page_zeroing() {
    for page_zeroing in PageZeroing::ALL {
        let config = Config {
            page_zeroing,
            ..config(1 << 20, ReservationKind::Spinlock)
        };
        check_config_with_pg_waldump(config, MAX_RECORD);
    }
}

/// Cooperative page initialisation and batch eviction on a 4-page ring,
/// under every reservation design that keeps prev-links: the threads'
/// records reach 4× the ring, the big one many times it.
#[test]
fn pg_waldump_accepts_cooperative_batch_logs_from_a_4_page_ring() {
    let ring = 4 * PAGE_SIZE;
    for reservation in [
        ReservationKind::Spinlock,
        ReservationKind::PrevLinkTable,
        ReservationKind::PrevLinkInBuffer,
    ] {
        for segment_size in [1 << 20, 16 << 20] {
            let config = Config {
                buffers: ring,
                page_init: PageInitKind::Cooperative,
                eviction: Eviction::Batch,
                ..config(segment_size, reservation)
            };
            check_config_with_pg_waldump(config, 4 * ring as usize);
        }
    }
}

/// Set in the child of a SIGKILL test: the directory it writes under.
const KILL_CHILD_DIR: &str = "WALDEN_PG_COMPAT_KILL_CHILD_DIR";

/// Longest the parent waits for the child's first checkpoint.
const CHILD_START_LIMIT: Duration = Duration::from_secs(120);

/// The SIGKILL/reopen check: a child process (this test, re-executed) runs
/// the edge cases and a checkpoint in a loop and is killed with SIGKILL at
/// a random moment after its first checkpoint; the log is then recovered,
/// takes the edge cases again, and pg_waldump reads it from its first
/// segment straight across the recovery point; then the shared check's
/// checkpoint, recycling, close and reopen follow.
fn sigkill_then_reopen(
    test_name: &str,
    segment_size: u64,
    segment_prep: SegmentPrep,
    direct_io: bool,
    kill_window: Duration,
) {
    let config = Config {
        segment_prep,
        segments_ahead: 3,
        direct_io,
        ..config(segment_size, ReservationKind::Spinlock)
    };
    if let Some(root) = std::env::var_os(KILL_CHILD_DIR) {
        run_until_killed(Path::new(&root), config);
    }
    let root = tempfile::tempdir().unwrap();
    let (dir, marker) = (root.path().join("wal"), root.path().join("checkpointed"));
    let stderr = root.path().join("child.stderr");
    // The filter is the test's path inside its binary: this module's path
    // without the crate's name, then the test's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let filter = format!("{module}::{test_name}");
    let child = Command::new(std::env::current_exe().unwrap())
        .args([&filter, "--exact", "--nocapture", "--test-threads=1"])
        .env(KILL_CHILD_DIR, root.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let child_failed = |what: &str| -> ! {
        let log = std::fs::read_to_string(&stderr).unwrap_or_default();
        panic!("the child {what}; its stderr:\n{log}")
    };
    let started = Instant::now();
    while !marker.exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            child_failed(&format!("exited ({status}) before its first checkpoint"));
        }
        if started.elapsed() > CHILD_START_LIMIT {
            child_failed("made no checkpoint in time");
        }
        // Polling for the marker, not hiding a race.
        std::thread::sleep(Duration::from_millis(5));
    }
    // This sleep only picks the moment of the kill.
    let delay = kill_window.mul_f64(random_fraction());
    std::thread::sleep(delay);
    child.0.kill().unwrap();
    let status = child.0.wait().unwrap();
    if status.signal() != Some(9) {
        child_failed(&format!("was not killed by SIGKILL but {status}"));
    }

    let (wal, report) = Wal::open(&dir, config).unwrap();
    println!(
        "killed {delay:?} after the first checkpoint; recovered from {} to {}: {} records, {}",
        report.redo, report.end, report.records, report.stop
    );
    assert!(!report.clean_shutdown);
    let seg = SegmentSize::new(segment_size).unwrap();
    let first_segno = *segment_files(&dir, seg).keys().next().unwrap();
    let first = first_record(&wal, seg.segment_start(first_segno));
    assert!(
        first <= report.redo && report.redo <= report.end,
        "the first segment holds the recovery's start"
    );
    edge_cases_checkpoint_close_reopen(Arc::new(wal), first, MAX_RECORD);
}

/// The child's side: creates the log and runs the edge cases and a
/// checkpoint in a loop, marking the first checkpoint, until killed (or
/// its parent is gone, or a bound is reached).
fn run_until_killed(root: &Path, config: Config) -> ! {
    let wal = Arc::new(Wal::create(root.join("wal"), config).unwrap());
    let parent = std::os::unix::process::parent_id();
    for round in 0..1000 {
        edge_case_workload(&wal, MAX_RECORD, 10 + 2 * round);
        wal.checkpoint().unwrap();
        if round == 0 {
            std::fs::write(root.join("checkpointed"), b"").unwrap();
        }
        if std::os::unix::process::parent_id() != parent {
            break;
        }
    }
    std::process::exit(0)
}

/// Kills and reaps the child if the test fails before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A random number in `[0, 1)`, from the standard library's hash seeds.
fn random_fraction() -> f64 {
    let bits = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn pg_waldump_reads_across_a_sigkill_with_1mib_segments() {
    sigkill_then_reopen(
        "pg_waldump_reads_across_a_sigkill_with_1mib_segments",
        1 << 20,
        SegmentPrep::ZeroFill,
        false,
        Duration::from_millis(300),
    );
}

#[test]
fn pg_waldump_reads_across_a_sigkill_with_fallocated_segments() {
    sigkill_then_reopen(
        "pg_waldump_reads_across_a_sigkill_with_fallocated_segments",
        1 << 20,
        SegmentPrep::Fallocate,
        false,
        Duration::from_millis(300),
    );
}

#[test]
fn pg_waldump_reads_across_a_sigkill_with_page_header_segments() {
    sigkill_then_reopen(
        "pg_waldump_reads_across_a_sigkill_with_page_header_segments",
        1 << 20,
        SegmentPrep::PageHeaders,
        false,
        Duration::from_millis(300),
    );
}

#[test]
fn pg_waldump_reads_across_a_sigkill_with_direct_io() {
    sigkill_then_reopen(
        "pg_waldump_reads_across_a_sigkill_with_direct_io",
        1 << 20,
        SegmentPrep::ZeroFill,
        true,
        Duration::from_millis(300),
    );
}

#[test]
fn pg_waldump_reads_across_a_sigkill_with_16mib_segments() {
    sigkill_then_reopen(
        "pg_waldump_reads_across_a_sigkill_with_16mib_segments",
        16 << 20,
        SegmentPrep::ZeroFill,
        false,
        Duration::from_millis(300),
    );
}

/// A log in a format without prev-links is refused by pg_waldump at its
/// first page (its magic is not PostgreSQL's), never misread.
#[test]
fn pg_waldump_refuses_formats_without_prev_links() {
    for format in [WalFormat::SelfLsn, WalFormat::CompactWalId] {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            format,
            reservation: ReservationKind::Unlinked,
            segment_size: 1 << 20,
            sync_method: SyncMethod::None,
            ..Config::default()
        };
        let wal = Wal::create(dir.path(), config).unwrap();
        wal.insert(&Record::new(RMID, 0, b"not for pg_waldump".to_vec()))
            .unwrap();
        wal.close().unwrap();
        let d = dir.path().to_str().unwrap();
        // The first segment is named: pg_waldump would otherwise take the
        // segment size from whichever file `readdir` lists first, and a
        // segment prepared ahead of need has none.
        let first = SegmentSize::new(1 << 20).unwrap().file_name(1, 1);
        let out = walden_testkit::run_pg_waldump(["-p", d, "-s", "0/100028", &first]).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{format}: pg_waldump accepted it");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("rmgr:"),
            "{format}: pg_waldump showed a record"
        );
        // PostgreSQL 15 hides the page error behind its first-record search.
        assert!(
            stderr.contains("could not find a valid record after 0/100028"),
            "{format}: {stderr}"
        );
    }
}

/// `pg_waldump -p DIR -s FIRST -e END`, with LSNs and no file names, takes
/// the segment size from whichever segment file the directory lists first.
/// Logs with several prepared (never written) segments, each way of
/// preparing them, closed or left as a crash leaves them, and starting at
/// different segments so that the directory lists its files in different
/// orders: pg_waldump reads every one, and some list a prepared segment
/// first.
#[test]
fn pg_waldump_reads_logs_whose_directory_lists_a_prepared_segment_first() {
    const AHEAD: usize = 4;
    let seg = SegmentSize::new(1 << 20).unwrap();
    let mut prepared_first = 0;
    for prep in SegmentPrep::ALL {
        for first_segment in 1..=8u64 {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("wal");
            let config = Config {
                segment_size: seg.bytes(),
                buffers: 1 << 20,
                sync_method: SyncMethod::None,
                segment_prep: prep,
                segments_ahead: AHEAD,
                ..Config::default()
            };
            let wal =
                Wal::create_at_segment(&dir, config, Arc::new(FsStorage), first_segment).unwrap();
            for i in 0..3_000u32 {
                wal.insert(&Record::new(RMID, 0x10, payload(0, i, 600)))
                    .unwrap();
            }
            let end = wal.flush(wal.insert_position()).unwrap();
            // The preallocator prepares AHEAD segments past the one in use.
            let written = seg.segno(end);
            let deadline = Instant::now() + Duration::from_secs(60);
            let files = |d: &Path| -> Vec<u64> {
                std::fs::read_dir(d)
                    .unwrap()
                    .filter_map(|e| {
                        let name = e.unwrap().file_name().into_string().unwrap();
                        seg.parse_file_name(&name).map(|(_, segno)| segno)
                    })
                    .collect()
            };
            while files(&dir).iter().filter(|&&s| s > written).count() < AHEAD {
                assert!(Instant::now() < deadline, "{prep}: segments not prepared");
                std::thread::yield_now();
            }
            if first_segment % 2 == 0 {
                wal.close().unwrap();
            } else {
                drop(wal);
            }
            let listed = files(&dir);
            if listed.first().is_some_and(|&s| s > written) {
                prepared_first += 1;
            }
            let start = seg.segment_start(first_segment);
            let first = Lsn(start.0 + seg.page_header_size(start));
            let (s, e) = (first.to_string(), end.to_string());
            let d = dir.to_str().unwrap();
            let out = walden_testkit::run_pg_waldump(["-q", "-p", d, "-s", &s, "-e", &e]).unwrap();
            assert!(
                out.status.success(),
                "{prep}, first segment {first_segment}, listed {listed:?}: pg_waldump -p {d} -s {s} -e {e}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert!(
        prepared_first > 0,
        "no directory listed a prepared segment first: the case was not tried"
    );
}
