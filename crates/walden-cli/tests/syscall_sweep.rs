//! A crash at every system call on the log's files (reliability.md T9): a
//! deterministic single-writer `walden write` is killed with SIGKILL just
//! before its N-th operation that changes the disk or syncs it (`open`
//! creating a file, `mkdir`, the lock, `pwrite64`, `pwritev`, `fdatasync`,
//! `fsync` of a file or directory, `rename`, `unlink`, `ftruncate`,
//! `fallocate`), for every N the run makes, once per way of preparing
//! segments (`--segment-prep`), once with direct I/O, once with the
//! background writer at work and once with write-through, the CRC beside
//! the write (`--crc-helper`) and writes cut at every page
//! (`--writeback-every`; the hint after each cut is no crash point: it
//! changes nothing the disk promises). After each kill: `walden verify
//! --acked` finds every acknowledged record; a second run recovers the log
//! and appends to it; `walden verify` again finds every acknowledged record
//! of both runs.
//!
//! The crash points are `walden write --crash-at-io N` (hidden,
//! `walden-cli/src/crash_points.rs`): numbered in one count over every
//! thread of the process, so the preallocator's calls, the background
//! writer's, recovery's and close's are crash points as the inserting
//! thread's are, and the harness's `--acked` file is none. (strace's
//! `inject=…:when=N` counts per thread: it kills at the N-th call of
//! whichever thread gets there first, and counted the acknowledgement
//! file's syncs as the engine's.) A first run under strace checks that the
//! crash points are exactly the engine's system calls on the log's files,
//! by call, with the acknowledgement file left out.
//!
//! The inserting thread and the preallocator race, so a run's order of
//! calls, and now and then their number, varies: a run may finish before its
//! N-th point; most must be killed.
//!
//! Every crash point is swept in a sweep of at most [`POINTS_PER_SWEEP`]; a
//! longer one (segments prepared with page headers: a write per page) takes
//! every k-th point and the last few. `WALDEN_SWEEP_LONG=1` takes every
//! point of every sweep. Needs `/usr/bin/strace` (scripts/test installs
//! it). `WALDEN_SWEEP_RECORDS` sets the first run's records (default 30).

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use common::verify_acked;

const STRACE: &str = "/usr/bin/strace";
/// Crash points a sweep takes at most, unless `WALDEN_SWEEP_LONG` is set.
const POINTS_PER_SWEEP: u64 = 150;
/// The system calls the crash points stand for, as strace names them.
const TRACED: &str =
    "mkdir,flock,pwrite64,pwritev,fdatasync,fsync,rename,unlink,ftruncate,fallocate";

fn records() -> u32 {
    std::env::var("WALDEN_SWEEP_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

fn long_mode() -> bool {
    std::env::var_os("WALDEN_SWEEP_LONG").is_some_and(|v| v != "0")
}

/// How a sweep's runs write.
#[derive(Clone, Copy)]
struct Plan {
    name: &'static str,
    /// `--segment-prep`.
    how: &'static str,
    /// `--segments-ahead`.
    ahead: u32,
    /// `--direct-io`.
    direct_io: bool,
    /// `--flush-every`.
    flush_every: u32,
    /// `--writer-delay-ms` (the background writer).
    writer_delay_ms: u32,
    /// `--concurrent-syncs`.
    concurrent_syncs: bool,
    /// `--write-through-from`.
    write_through_from: &'static str,
    /// `--crc-helper`.
    crc_helper: bool,
    /// `--writeback-every`.
    writeback_every: &'static str,
    /// Records of the first run, over the default.
    records_factor: u32,
}

const PLAN: Plan = Plan {
    name: "zero-fill",
    how: "zero-fill",
    ahead: 2,
    direct_io: false,
    flush_every: 1,
    writer_delay_ms: 200,
    concurrent_syncs: false,
    write_through_from: "256KB",
    crc_helper: false,
    writeback_every: "256KB",
    records_factor: 1,
};

/// `walden write` appending `n` records to `dir`, acknowledging to `acked`,
/// as `plan` says, killed at crash point `crash_at` (0: never).
fn write_args(
    dir: &Path,
    acked: &Path,
    n: u32,
    seed: u32,
    plan: Plan,
    crash_at: u64,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        env!("CARGO_BIN_EXE_walden").into(),
        "write".into(),
        dir.display().to_string(),
    ];
    for (k, v) in [
        ("--records", n.to_string()),
        ("--threads", "1".into()),
        ("--flush-every", plan.flush_every.to_string()),
        ("--size", "0-20KB".into()),
        ("--segment-size", "1MB".into()),
        ("--buffers", "64KB".into()),
        ("--sync", "fdatasync".into()),
        ("--seed", seed.to_string()),
        ("--segment-prep", plan.how.into()),
        ("--segments-ahead", plan.ahead.to_string()),
        ("--writer-delay-ms", plan.writer_delay_ms.to_string()),
        ("--concurrent-syncs", plan.concurrent_syncs.to_string()),
        ("--write-through-from", plan.write_through_from.into()),
        ("--crc-helper", plan.crc_helper.to_string()),
        ("--writeback-every", plan.writeback_every.into()),
        ("--crash-at-io", crash_at.to_string()),
    ] {
        args.push(k.into());
        args.push(v);
    }
    if plan.direct_io {
        args.push("--direct-io".into());
    }
    args.push("--acked".into());
    args.push(acked.display().to_string());
    args
}

/// What `--crash-at-io 0` reports: `crash points: N call=n …; threads
/// name=n …; before close N`.
#[derive(Debug)]
struct Points {
    total: u64,
    by_call: BTreeMap<String, u64>,
    by_thread: BTreeMap<String, u64>,
    before_close: u64,
    /// Writes ahead of the written point (`(N ahead of the written
    /// point)` on the `wrote` line).
    writes_ahead: u64,
}

fn parse_points(stdout: &str) -> Points {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("crash points: "))
        .unwrap_or_else(|| panic!("no crash points line in {stdout}"));
    let parts: Vec<&str> = line.split("; ").collect();
    let pairs = |s: &str| -> BTreeMap<String, u64> {
        s.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
            .collect()
    };
    let (Some(calls), Some(threads), Some(close)) = (
        parts.first(),
        parts.get(1).and_then(|t| t.strip_prefix("threads")),
        parts.get(2).and_then(|c| c.strip_prefix("before close ")),
    ) else {
        panic!("unexpected crash points line: {line}");
    };
    let (total, calls) = calls.split_once(' ').unwrap_or((calls, ""));
    let writes_ahead = stdout
        .lines()
        .find_map(|l| l.strip_suffix(" ahead of the written point)"))
        .and_then(|l| l.rsplit_once('(')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no writes ahead on the wrote line of {stdout}"));
    Points {
        writes_ahead,
        total: total.parse().unwrap(),
        by_call: pairs(calls),
        by_thread: pairs(threads),
        before_close: close.parse().unwrap(),
    }
}

/// The first run, under strace, counting its crash points; checks that
/// they are the engine's system calls on the log's files, one for one.
fn count_points(tmp: &Path, plan: Plan) -> Points {
    let (dir, acked_dir, trace) = (tmp.join("count"), tmp.join("acked-dir"), tmp.join("trace"));
    std::fs::create_dir_all(&acked_dir).unwrap();
    let acked = acked_dir.join("acked");
    let n = records() * plan.records_factor;
    let out = Command::new(STRACE)
        .args(["-f", "-qq", "-y", "-o"])
        .arg(&trace)
        .args(["-e", &format!("trace={TRACED}")])
        .args(write_args(&dir, &acked, n, 1, plan, 0))
        .output()
        .unwrap();
    let stdout = common::succeeded(out, "the counting run");
    let points = parse_points(&stdout);
    // Each call's first line (an unfinished call's too) names its file or
    // directory (`-y`); the acknowledgement file and its directory are the
    // harness's.
    let harness = acked_dir.display().to_string();
    let mut traced: BTreeMap<String, u64> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let Some(call) = line.split_whitespace().nth(1) else {
            continue;
        };
        if call.starts_with("<...") || line.contains(&harness) {
            continue;
        }
        if let Some((name, _)) = call.split_once('(') {
            *traced.entry(name.to_owned()).or_insert(0) += 1;
        }
    }
    let ours = |call: &str| points.by_call.get(call).copied().unwrap_or(0);
    let theirs = |call: &str| traced.get(call).copied().unwrap_or(0);
    // Taking the lock is one crash point: flock, then the lock file
    // truncated and its holder written.
    let lock = ours("lock");
    for (call, expected) in [
        ("mkdir", ours("mkdir")),
        ("flock", lock),
        ("pwrite64", ours("pwrite64") + lock),
        ("pwritev", ours("pwritev")),
        ("fdatasync", ours("fdatasync")),
        ("fsync", ours("fsync")),
        ("rename", ours("rename")),
        ("unlink", ours("unlink")),
        ("ftruncate", ours("ftruncate") + lock),
        ("fallocate", ours("fallocate")),
    ] {
        assert_eq!(
            theirs(call),
            expected,
            "{}: strace saw {} {call} calls of the engine, the crash points {expected} \
             (crash points {points:?}, strace {traced:?})",
            plan.name,
            theirs(call)
        );
    }
    points
}

#[test]
fn a_crash_at_every_write_sync_and_rename_loses_no_acknowledged_record() {
    sweep(
        PLAN,
        &["create", "pwrite64", "fdatasync", "fsync", "rename"],
        &["main", "unnamed", "walden-prealloc"],
    );
}

/// Segments allocated with `fallocate`, the background writer writing
/// and syncing every millisecond between the flushes of every 16th record,
/// and two syncs allowed in flight at once (the background writer's and a
/// flush's, each through its slot's description of the segment).
#[test]
fn a_crash_at_every_call_with_fallocated_segments_loses_no_acknowledged_record() {
    let plan = Plan {
        name: "fallocate, background writer",
        how: "fallocate",
        flush_every: 16,
        writer_delay_ms: 1,
        concurrent_syncs: true,
        records_factor: 2,
        ..PLAN
    };
    sweep(
        plan,
        &["pwrite64", "fdatasync", "rename", "fallocate"],
        &["main", "unnamed", "walden-prealloc", "walden-writer"],
    );
}

/// Direct I/O: the writer's whole-page writes (one `pwritev` of the pages
/// and the partial last page, written again by the next flush), each a
/// crash point.
#[test]
fn a_crash_at_every_call_with_direct_io_loses_no_acknowledged_record() {
    let plan = Plan {
        name: "direct-io",
        direct_io: true,
        ..PLAN
    };
    sweep(
        plan,
        &["pwritev", "fdatasync", "rename"],
        &["main", "unnamed", "walden-prealloc"],
    );
}

/// Write-through with the CRC beside the write: a record of 8 kB or more
/// has the pages it covers whole written straight from its payload
/// (`pwritev`), and those after its first page, while the helper computes
/// its CRC, by the inserting thread ahead of the written point, cut at
/// every page (a crash point between the cuts); the counting run must have
/// written ahead.
#[test]
fn a_crash_at_every_call_with_the_crc_beside_the_write_loses_no_acknowledged_record() {
    let plan = Plan {
        name: "write-through, crc helper, cut writes",
        write_through_from: "8KB",
        crc_helper: true,
        writeback_every: "8KB",
        ..PLAN
    };
    sweep(
        plan,
        &["pwrite64", "pwritev", "fdatasync", "rename"],
        &["main", "unnamed", "walden-prealloc"],
    );
}

/// The writer prepares each segment itself (none ahead), writing each
/// page's header: many small writes.
#[test]
fn a_crash_at_calls_with_page_header_segments_loses_no_acknowledged_record() {
    let plan = Plan {
        name: "page-headers",
        how: "page-headers",
        ahead: 0,
        ..PLAN
    };
    sweep(
        plan,
        &["pwrite64", "fdatasync", "rename", "fallocate"],
        &["main", "unnamed"],
    );
}

/// The sweep of `plan`, whose run makes each of the `expected` calls, and
/// calls in each thread of `threads` ("unnamed": the inserting thread).
fn sweep(plan: Plan, expected: &[&str], threads: &[&str]) {
    assert!(
        Path::new(STRACE).exists(),
        "{STRACE} is missing: scripts/test installs it (apt-get install strace)"
    );
    let name = plan.name;
    let tmp = tempfile::tempdir().unwrap();
    let counted = count_points(tmp.path(), plan);
    println!("{name}: crash points of the run: {counted:?}");
    // The helper is left alone while as many insertions are in flight as
    // CPUs: one inserter needs a second CPU for it.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        counted.writes_ahead > 0,
        plan.crc_helper && cpus > 1,
        "{name}: writes ahead of the written point (with {cpus} CPUs): {counted:?}"
    );
    for &call in expected {
        assert!(
            counted.by_call.get(call).copied().unwrap_or(0) > 0,
            "{name}: the run makes {call}"
        );
    }
    for &thread in threads {
        assert!(
            counted.by_thread.get(thread).copied().unwrap_or(0) > 0,
            "{name}: thread {thread} has crash points: {counted:?}"
        );
    }
    assert!(
        counted.before_close < counted.total,
        "{name}: close has crash points: {counted:?}"
    );
    let total = counted.total;
    let stride = if long_mode() {
        1
    } else {
        total.div_ceil(POINTS_PER_SWEEP)
    };
    let mut points = 0;
    let mut completed = 0;
    let mut in_close = 0;
    for n in (1..=total).filter(|n| n % stride == 0 || n + 4 > total) {
        let case = tmp.path().join(format!("point-{n}"));
        let (dir, acked) = (case.join("wal"), case.join("acked"));
        std::fs::create_dir_all(&case).unwrap();
        let first = write_args(&dir, &acked, records() * plan.records_factor, 1, plan, n);
        let status = Command::new(&first[0])
            .args(&first[1..])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        // The preallocator races the inserting thread: a run may make a
        // call or two fewer and finish before its N-th point.
        if status.success() {
            completed += 1;
        } else {
            assert_eq!(
                status.signal(),
                Some(libc::SIGKILL),
                "{name}: the run to crash point {n} failed otherwise: {status}"
            );
        }
        in_close += u64::from(n > counted.before_close);
        let what = format!("{name}: killed at crash point {n} of {total}");
        // With nothing acknowledged the log may have no record yet
        // (killed while being created): the second run must cope.
        if std::fs::metadata(&acked).is_ok_and(|m| m.len() > 0) {
            verify_acked(&dir, &acked, &what);
        }
        let second = write_args(&dir, &acked, 5, 2, plan, 0);
        let out = Command::new(&second[0])
            .args(&second[1..])
            .output()
            .unwrap();
        common::succeeded(out, &format!("{what}: recovering and appending"));
        verify_acked(
            &dir,
            &acked,
            &format!("{what}, then recovered and appended"),
        );
        std::fs::remove_dir_all(&case).unwrap();
        points += 1;
    }
    println!(
        "{name}: {points} of {total} crash points (one in {stride} and the last 4; \
         {in_close} in close; {completed} runs finished before their point), each recovered \
         with no acknowledged record lost"
    );
    assert!(points >= 50, "{points} crash points");
    assert!(in_close > 0, "{name}: no crash point in close");
    assert!(
        completed * 4 < points,
        "most runs were killed at their point"
    );
}
