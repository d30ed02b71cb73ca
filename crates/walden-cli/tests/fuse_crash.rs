//! Power loss under the real binary: `walden write --flush-every N --acked F`
//! runs on the crash-simulating FUSE file system (`walden_testkit::crashfs`),
//! is killed with SIGKILL at a random moment, and the file system then
//! "crashes": it loses what was not made durable (all of it, a random
//! subset of sectors and directory operations, or part of the last write).
//! After each crash, on the remounted file system:
//! - `walden verify --acked F` finds every acknowledged record (F lives
//!   outside the mount: it is the oracle);
//! - no stale record is accepted: the log read is the log read after the
//!   previous crash, followed only by records of the runs since, in run
//!   order, each thread's records in sequence from its first;
//! - `pg_waldump` reads a `postgres15` log from its first record to its last.
//!
//! The next run recovers the log and appends. Each format gets its own log,
//! going round the I/O modes (fdatasync, open_datasync, fsync, and direct
//! I/O with fdatasync and with open_datasync) and, independently, the crash
//! policies, with a random way of preparing segments, number of segments
//! kept ready ahead (0 to 2), choice of small records or records up to
//! 20 KB written through (`--write-through-from 8KB`) and choice of writes
//! as they come or cut at every page (`--writeback-every 8KB`) per run.
//!
//! `WALDEN_FUSE_CYCLES` sets the crashes per format (default 70, 210 in
//! all; every I/O mode meets every crash policy in 15); `WALDEN_CRASH_LONG=1`
//! is the long mode, 700 per format;
//! `WALDEN_CRASH_SEED` replays a run (the seed is printed). Needs FUSE
//! (`/dev/fuse`, root): the test fails without it unless `WALDEN_SKIP_FUSE=1`.

mod common;
#[allow(dead_code)]
#[path = "../src/self_checking.rs"]
mod self_checking;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{kill_running, pg_waldump_reads, verify_acked, walden};
use self_checking::{RecordId, LOAD_RMID};
use walden::{Lsn, ReaderOptions, WalReader};
use walden_testkit::crashfs::{CrashReport, Rng};
use walden_testkit::{CrashFs, CrashPolicy};

/// Segment size of the logs, in bytes (the smallest PostgreSQL allows).
const SEGMENT_BYTES: u64 = 1 << 20;
/// The I/O modes each log goes round: a sync method, and whether segments
/// are written with direct I/O (`--direct-io`: with `fdatasync` and with
/// `open_datasync`, where PostgreSQL's `debug_io_direct = wal` is used).
const IO_MODES: [(&str, bool); 5] = [
    ("fdatasync", false),
    ("open_datasync", false),
    ("fsync", false),
    ("fdatasync", true),
    ("open_datasync", true),
];
/// The ways of preparing a segment (`--segment-prep`), one drawn per run.
const SEGMENT_PREPS: [&str; 3] = ["zero-fill", "fallocate", "page-headers"];
/// A log is started afresh after this many crashes, bounding its size.
const CYCLES_PER_LOG: u32 = 100;

/// One record of `walden write` in a log: where and which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Found {
    lsn: Lsn,
    id: RecordId,
}

/// The records of `walden write` in the log in `dir`, in LSN order, and
/// the LSN range of all its records.
fn read_log(dir: &Path) -> (Vec<Found>, Lsn, Lsn) {
    let mut reader = WalReader::open(dir, ReaderOptions::default()).unwrap();
    let (mut found, mut first, mut last) = (Vec::new(), None, Lsn::INVALID);
    while let Ok(Some(rec)) = reader.next_record() {
        first.get_or_insert(rec.lsn);
        last = rec.end;
        if rec.header.rmid != LOAD_RMID {
            continue;
        }
        let body = rec.decode_body().unwrap();
        if let Some(id) = self_checking::decode(&body.main_data).unwrap() {
            found.push(Found { lsn: rec.lsn, id });
        }
    }
    (found, first.unwrap_or(Lsn::INVALID), last)
}

/// Stale records in `now`, the log read after a crash, given `before`,
/// the log read after an earlier one: `before` must be a prefix of `now`,
/// and the rest records of later runs, in run order, each thread's in
/// sequence from 0. Returns a description of each record that breaks it.
fn stale_records(before: &[Found], now: &[Found]) -> Vec<String> {
    let mut stale = Vec::new();
    let keep = before.len().min(now.len());
    if now[..keep] != before[..keep] || now.len() < before.len() {
        let at = (0..keep).find(|&i| now[i] != before[i]).unwrap_or(keep);
        stale.push(format!(
            "the log no longer starts with what the previous crash left: record {at} was {:?}, now {:?}",
            before.get(at),
            now.get(at)
        ));
        return stale;
    }
    // Runs are numbered by their start time.
    let prefix_run = before.iter().map(|f| f.id.run).max().unwrap_or(0);
    let mut last_run = prefix_run;
    let mut next_seq = std::collections::HashMap::new();
    for f in &now[keep..] {
        let expected = next_seq.entry((f.id.run, f.id.thread)).or_insert(0);
        if f.id.run <= prefix_run || f.id.run < last_run || f.id.seq != *expected {
            stale.push(format!(
                "{:?} at {} (expected a run after {last_run}, or sequence {expected})",
                f.id, f.lsn
            ));
        }
        last_run = last_run.max(f.id.run);
        *expected = f.id.seq + 1;
    }
    stale
}

/// A parsed variable, or `default`.
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Starts `walden write` on `dir`, acknowledging into `acked`, syncing
/// with `sync`, with direct I/O if `direct`.
fn start_writer(
    dir: &Path,
    acked: &Path,
    format: &str,
    (sync, direct): (&str, bool),
    rng: &mut Rng,
) -> Child {
    // Flushing after every insert, or after every 16th: then buffer
    // evictions and the background writer write what no sync covers yet.
    let flush_every = if rng.coin() { "1" } else { "16" };
    let prep = SEGMENT_PREPS[rng.below(SEGMENT_PREPS.len() as u64) as usize];
    let ahead = rng.below(3).to_string();
    // Small records, or records up to 20 KB with every page one covers
    // whole written through (`--write-through-from`; the direct-I/O modes
    // do not use it).
    let (size, through) = if rng.coin() {
        ("0-3KB", "256KB")
    } else {
        ("0-20KB", "8KB")
    };
    // Writes as they come, or cut at every page with the write-back of each
    // cut started (`--writeback-every`; not with direct I/O or O_DSYNC).
    let writeback_every = if rng.coin() { "0" } else { "8KB" };
    walden()
        .arg("write")
        .arg(dir)
        .args(["--records", "100000000", "--threads", "4"])
        .args(["--flush-every", flush_every, "--size", size])
        .args(["--write-through-from", through])
        .args(["--writeback-every", writeback_every])
        .args(["--buffers", "256KB", "--segment-prep", prep])
        .args(["--segments-ahead", &ahead])
        .args(["--segment-size", &SEGMENT_BYTES.to_string()])
        .args(["--format", format, "--sync", sync])
        .args(["--seed", &rng.next_u64().to_string()])
        .args(direct.then_some("--direct-io"))
        .arg("--acked")
        .arg(acked)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded, polling) until `done` holds or `child` has exited;
/// returns whether `done` held.
fn wait_until(child: &mut Child, mut done: impl FnMut() -> bool, what: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() && !matches!(child.try_wait(), Ok(Some(_))) {
        assert!(Instant::now() < deadline, "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

/// Stops `child` at a random moment, one of three ways: killed after a
/// random time (anywhere from during recovery on); killed a little after
/// its next acknowledgement (so that every run gets to write, however long
/// recovery takes); or the power is cut right after a random number of
/// write requests, then it is killed (it may also have exited on the
/// errors). Returns whether the run acknowledged anything.
fn stop_writer(
    mut child: Child,
    acked: &Path,
    crashfs: &CrashFs,
    rng: &mut Rng,
    context: &str,
) -> bool {
    let acked_len = || fs::metadata(acked).map_or(0, |m| m.len());
    let before = acked_len();
    let may_exit = match rng.below(3) {
        0 => {
            std::thread::sleep(Duration::from_millis(5 + rng.below(250)));
            false
        }
        1 => {
            let what = format!("{context}: an acknowledgement");
            wait_until(&mut child, || acked_len() > before, &what);
            std::thread::sleep(Duration::from_millis(rng.below(40)));
            false
        }
        _ => {
            crashfs.cut_power_after_writes(1 + rng.below(400));
            let what = format!("{context}: the power cut");
            wait_until(&mut child, || crashfs.power_is_cut(), &what)
        }
    };
    if may_exit {
        // Killing a process that has exited, but not been waited for, is
        // not an error.
        child.kill().unwrap();
        child.wait().unwrap();
    } else {
        kill_running(child, &format!("the kill ({context})"));
    }
    acked_len() > before
}

/// One log on the mount: its directory, its acknowledgement file (outside
/// the mount) and its records as read after the last crash.
struct Log {
    dir: PathBuf,
    acked: PathBuf,
    records: Vec<Found>,
}

impl Log {
    /// A fresh log in `mnt`: `walden write` makes its directory (and
    /// `Wal::create` syncs the parent, which
    /// `a_new_log_directory_survives_a_crash` checks).
    fn new(mnt: &Path, acks_dir: &Path, n: u32) -> Log {
        let dir = mnt.join(format!("wal{n}"));
        Log {
            dir,
            acked: acks_dir.join(format!("acked{n}")),
            records: Vec::new(),
        }
    }

    /// Acknowledgements so far.
    fn acks(&self) -> usize {
        fs::read_to_string(&self.acked)
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// Checks the log after a crash: acknowledged records, stale records,
    /// and `pg_waldump` for `postgres15`.
    fn check(&mut self, format: &str, context: &str) {
        verify_acked(&self.dir, &self.acked, context);
        let (now, first, last) = read_log(&self.dir);
        let stale = stale_records(&self.records, &now);
        assert!(
            stale.is_empty(),
            "{context}: stale records accepted: {stale:#?}"
        );
        self.records = now;
        if format == "postgres15" {
            pg_waldump_reads(&self.dir, SEGMENT_BYTES, first, last, context);
        }
    }
}

/// What the cycles of one format did.
#[derive(Debug, Default)]
struct Totals {
    /// Acknowledged records.
    acks: usize,
    /// Runs that acknowledged a record before their kill.
    runs_acking: u32,
    /// What the crashes lost.
    lost: CrashReport,
}

/// Lets one test at a time have a mount. A child spawned by one test's
/// thread holds copies of all the process's descriptors from its `fork` to
/// its `exec`, so a segment another test had just read in-process (the
/// stale-record check) could still be open there when that test unmounts:
/// the unmount then fails with `EBUSY` (seen once in CI). One test at a
/// time, the process has no file open on a mount while it spawns.
static ONE_MOUNT_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A crash-simulating file system mounted for one test, in a temporary
/// directory (the mount point `mnt` and the durable store beside it).
struct Mounted {
    crashfs: CrashFs,
    tmp: tempfile::TempDir,
    /// Held until the test ends, after the file system is unmounted.
    _turn: MutexGuard<'static, ()>,
}

impl Mounted {
    /// Mounts once no other test has a mount, or `None` when
    /// `WALDEN_SKIP_FUSE` is set (saying so, for `what`).
    fn new(what: &str) -> Option<Mounted> {
        if std::env::var_os("WALDEN_SKIP_FUSE").is_some() {
            println!("WALDEN_SKIP_FUSE is set: skipping {what}");
            return None;
        }
        // A test that failed holding the lock poisoned it; the next test
        // still mounts its own file system.
        let turn = ONE_MOUNT_AT_A_TIME
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let crashfs = CrashFs::mount_in(tmp.path()).unwrap();
        Some(Mounted {
            crashfs,
            tmp,
            _turn: turn,
        })
    }
}

/// Runs `cycles` kill-and-crash cycles of `format` on `mounted`.
fn crash_cycles(mut mounted: Mounted, format: &str, cycles: u32, seed: u64) -> Totals {
    let (mnt, tmp) = (mounted.crashfs.path().to_path_buf(), mounted.tmp.path());
    let mut rng = Rng::new(seed);
    let mut totals = Totals::default();
    let mut log = Log::new(&mnt, tmp, 0);
    for cycle in 0..cycles {
        if cycle > 0 && cycle % CYCLES_PER_LOG == 0 {
            totals.acks += log.acks();
            log = Log::new(&mnt, tmp, cycle / CYCLES_PER_LOG);
        }
        // 5 modes and 3 policies: every pair in 15 consecutive cycles.
        let io = IO_MODES[cycle as usize % IO_MODES.len()];
        let policy = CrashPolicy::ALL[cycle as usize % CrashPolicy::ALL.len()];
        let (sync, direct) = io;
        let direct = if direct { ", direct I/O" } else { "" };
        let context = format!(
            "{format}, crash {cycle} ({sync}{direct}, {policy:?}), WALDEN_CRASH_SEED={seed}"
        );
        let child = start_writer(&log.dir, &log.acked, format, io, &mut rng);
        totals.runs_acking += u32::from(stop_writer(
            child,
            &log.acked,
            &mounted.crashfs,
            &mut rng,
            &context,
        ));
        let report = mounted.crashfs.crash(policy, &mut rng).unwrap();
        totals.lost.files_unsynced += report.files_unsynced;
        totals.lost.dir_ops_unsynced += report.dir_ops_unsynced;
        totals.lost.files_lost += report.files_lost;
        // With nothing acknowledged yet the log may hold no record (killed
        // while it was being created), which the reader cannot open; the
        // next run must recover it all the same.
        if log.acks() > 0 {
            log.check(format, &context);
        }
    }
    totals.acks += log.acks();
    let seen = mounted.crashfs.activity();
    println!("{format}: {cycles} crashes: {totals:?}; the file system saw {seen:?}");
    assert!(
        seen.file_syncs > 0 && seen.sync_writes > 0 && seen.dir_syncs > 0,
        "{seen:?}"
    );
    // `--direct-io` opens segments (and its probe) with O_DIRECT and
    // writes them so.
    assert!(
        cycles < IO_MODES.len() as u32 || (seen.direct_opens > 0 && seen.direct_writes > 0),
        "no O_DIRECT write reached the file system: {seen:?}"
    );
    mounted.crashfs.unmount().unwrap();
    totals
}

/// Runs the cycles of one format, unless FUSE tests are skipped.
fn run_format(format: &str) {
    let Some(mounted) = Mounted::new(&format!("the FUSE crash test of {format}")) else {
        return;
    };
    let long = std::env::var_os("WALDEN_CRASH_LONG").is_some();
    let cycles = env_or("WALDEN_FUSE_CYCLES", if long { 700 } else { 70 });
    let seed = env_or(
        "WALDEN_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    );
    println!("{format}: {cycles} crashes, WALDEN_CRASH_SEED={seed}");
    let totals = crash_cycles(mounted, format, cycles, seed);
    assert!(
        totals.runs_acking >= cycles / 5 && totals.acks > cycles as usize,
        "the runs acknowledged records (a third of them wait for one): {totals:?}"
    );
    assert!(
        totals.lost.files_unsynced > 0,
        "the crashes lost something: {totals:?}"
    );
}

#[test]
fn postgres15_loses_nothing_acknowledged_and_accepts_nothing_stale() {
    run_format("postgres15");
}

#[test]
fn self_lsn_loses_nothing_acknowledged_and_accepts_nothing_stale() {
    run_format("self-lsn");
}

#[test]
fn compact_wal_id_loses_nothing_acknowledged_and_accepts_nothing_stale() {
    run_format("compact-wal-id");
}

#[test]
fn stale_records_are_told_apart_from_new_ones() {
    let at = |lsn: u64, run: u64, thread: u32, seq: u64| Found {
        lsn: Lsn(lsn),
        id: RecordId { run, thread, seq },
    };
    let before = [at(1, 5, 0, 0), at(2, 5, 1, 0), at(3, 5, 0, 1)];
    let good = [
        &before[..],
        &[
            at(4, 7, 0, 0),
            at(5, 7, 1, 0),
            at(6, 7, 0, 1),
            at(7, 9, 0, 0),
        ],
    ]
    .concat();
    assert!(stale_records(&before, &good).is_empty());
    // A record of the crashed run after the new run's, a gap in a
    // thread's sequence, the crashed run resumed, a lost prefix.
    for bad in [
        vec![at(4, 7, 0, 0), at(5, 5, 0, 2)],
        vec![at(4, 7, 0, 0), at(5, 7, 0, 2)],
        vec![at(4, 5, 0, 2)],
    ] {
        let now = [&before[..], &bad[..]].concat();
        assert_eq!(stale_records(&before, &now).len(), 1, "{bad:?}");
    }
    assert_eq!(stale_records(&before, &before[..2]).len(), 1);
}

/// `Wal::create` makes the log's directory and syncs its parent, so a
/// power cut right after the first acknowledgements cannot take the whole
/// new log (it did before the parent was synced: docs/reliability.md).
#[test]
fn a_new_log_directory_survives_a_crash() {
    let Some(mut mounted) = Mounted::new("the FUSE test of a new log directory") else {
        return;
    };
    let dir = mounted.crashfs.path().join("wal");
    let acked = mounted.tmp.path().join("acked");
    let out = walden()
        .arg("write")
        .arg(&dir)
        .args([
            "--records",
            "100",
            "--flush-every",
            "1",
            "--segment-size",
            "1MB",
        ])
        .arg("--acked")
        .arg(&acked)
        .output()
        .unwrap();
    common::succeeded(out, "walden write");
    mounted
        .crashfs
        .crash(CrashPolicy::LoseUnsynced, &mut Rng::new(1))
        .unwrap();
    verify_acked(&dir, &acked, "after a crash right after the log was made");
}
