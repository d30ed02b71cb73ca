//! Power loss under the real binary: `walden write --flush-every 1 --acked F`
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
//! going round the sync methods (fdatasync, open_datasync, fsync) and the
//! crash policies.
//!
//! `WALDEN_FUSE_CYCLES` sets the crashes per format (default 70, 210 in
//! all); `WALDEN_CRASH_LONG=1` is the long mode, 700 per format;
//! `WALDEN_CRASH_SEED` replays a run (the seed is printed). Needs FUSE
//! (`/dev/fuse`, root): the test fails without it unless `WALDEN_SKIP_FUSE=1`.

mod common;
#[allow(dead_code)]
#[path = "../src/self_checking.rs"]
mod self_checking;

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{verify_acked, walden};
use self_checking::{RecordId, LOAD_RMID};
use walden::{Lsn, ReaderOptions, SegmentSize, WalReader};
use walden_testkit::crashfs::{CrashReport, Rng};
use walden_testkit::{CrashFs, CrashPolicy};

/// Segment size of the logs, in bytes (the smallest PostgreSQL allows).
const SEGMENT_BYTES: u64 = 1 << 20;
/// The sync methods each log goes round.
const SYNC_METHODS: [&str; 3] = ["fdatasync", "open_datasync", "fsync"];
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

/// Runs `cycles` kill-and-crash cycles of `format`; returns the number of
/// acknowledgements and what the crashes lost.
fn crash_cycles(format: &str, cycles: u32, seed: u64) -> (usize, CrashReport) {
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, store) = (tmp.path().join("mnt"), tmp.path().join("store"));
    fs::create_dir(&mnt).unwrap();
    fs::create_dir(&store).unwrap();
    let mut crashfs = CrashFs::mount(&mnt, &store).unwrap();
    let mut rng = Rng::new(seed);
    let mut totals = CrashReport::default();
    let mut acks = 0;
    let mut log = (mnt.join("none"), tmp.path().join("none"), Vec::new());
    for cycle in 0..cycles {
        if cycle % CYCLES_PER_LOG == 0 {
            // A fresh log. Its directory is made and synced here: Wal::create
            // does not sync the parent of the directory it creates.
            acks += fs::read_to_string(&log.1)
                .unwrap_or_default()
                .lines()
                .count();
            let n = cycle / CYCLES_PER_LOG;
            log = (
                mnt.join(format!("wal{n}")),
                tmp.path().join(format!("acked{n}")),
                Vec::new(),
            );
            fs::create_dir(&log.0).unwrap();
            fs::File::open(&mnt).unwrap().sync_all().unwrap();
        }
        let (dir, acked, before) = (&log.0, &log.1, &mut log.2);
        let sync = SYNC_METHODS[cycle as usize % SYNC_METHODS.len()];
        let policy = CrashPolicy::ALL[cycle as usize / SYNC_METHODS.len() % CrashPolicy::ALL.len()];
        let context =
            format!("{format}, crash {cycle} ({sync}, {policy:?}), WALDEN_CRASH_SEED={seed}");
        let mut child = walden()
            .arg("write")
            .arg(dir)
            .args([
                "--records",
                "100000000",
                "--threads",
                "4",
                "--flush-every",
                "1",
            ])
            .args([
                "--size",
                "0-3KB",
                "--buffers",
                "256KB",
                "--segments-ahead",
                "1",
            ])
            .args([
                "--segment-size",
                &SEGMENT_BYTES.to_string(),
                "--format",
                format,
            ])
            .args(["--sync", sync, "--seed", &rng.next_u64().to_string()])
            .arg("--acked")
            .arg(acked)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The kill moment: from during recovery to well into the run.
        std::thread::sleep(Duration::from_millis(5 + rng.below(250)));
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "{context}: walden write exited ({status}) before the kill: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let report = crashfs.crash(policy, &mut rng).unwrap();
        totals.files_unsynced += report.files_unsynced;
        totals.dir_ops_unsynced += report.dir_ops_unsynced;
        totals.inodes_lost += report.inodes_lost;
        // With nothing acknowledged yet the log may hold no record (killed
        // while it was being created), which the reader cannot open; the
        // next run must recover it all the same.
        let anything_acked = fs::metadata(acked).is_ok_and(|m| m.len() > 0);
        if !anything_acked {
            continue;
        }
        verify_acked(dir, acked, &context);
        let (now, first, last) = read_log(dir);
        let stale = stale_records(before, &now);
        assert!(
            stale.is_empty(),
            "{context}: stale records accepted: {stale:#?}"
        );
        *before = now;
        if format == "postgres15" {
            // The first and last segments are named: pg_waldump takes the
            // segment size from whichever file it lists first otherwise.
            let seg = SegmentSize::new(SEGMENT_BYTES).unwrap();
            let out = walden_testkit::run_pg_waldump([
                "-q".as_ref(),
                "-p".as_ref(),
                dir.as_os_str(),
                "-s".as_ref(),
                first.to_string().as_ref(),
                "-e".as_ref(),
                last.to_string().as_ref(),
                seg.file_name(1, seg.segno(first)).as_ref(),
                seg.file_name(1, seg.segno(Lsn(last.0 - 1))).as_ref(),
            ])
            .unwrap();
            assert!(
                out.status.success(),
                "{context}: pg_waldump: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    acks += fs::read_to_string(&log.1)
        .unwrap_or_default()
        .lines()
        .count();
    let seen = crashfs.activity();
    println!("{format}: {cycles} crashes, {acks} acknowledgements, lost in crashes: {totals:?}; the file system saw {seen:?}");
    assert!(
        seen.file_syncs > 0 && seen.sync_writes > 0 && seen.dir_syncs > 0,
        "{seen:?}"
    );
    crashfs.unmount().unwrap();
    (acks, totals)
}

/// Runs the cycles of one format, unless FUSE tests are skipped.
fn run_format(format: &str) {
    if std::env::var_os("WALDEN_SKIP_FUSE").is_some() {
        println!("WALDEN_SKIP_FUSE is set: skipping the FUSE crash test of {format}");
        return;
    }
    let long = std::env::var_os("WALDEN_CRASH_LONG").is_some();
    let cycles = env_or("WALDEN_FUSE_CYCLES", if long { 700 } else { 70 });
    let seed = env_or(
        "WALDEN_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    );
    println!("{format}: {cycles} crashes, WALDEN_CRASH_SEED={seed}");
    let (acks, totals) = crash_cycles(format, cycles, seed);
    assert!(
        acks > cycles as usize,
        "the runs acknowledged records ({acks})"
    );
    assert!(
        totals.files_unsynced > 0,
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
