//! A crash at every system call of a run (reliability.md T9): a
//! deterministic single-writer `walden write` is killed with SIGKILL at the
//! N-th `pwrite64`, `pwritev`, `fdatasync`, `fsync`, `rename`, `unlink` or
//! `fallocate`, for every N the run makes, once per way of preparing
//! segments (`--segment-prep`) and once with direct I/O (`--direct-io`), by
//! strace's fault injection
//! (`strace -e inject=SYSCALL:signal=KILL:when=N`). After each kill:
//! `walden verify --acked` finds every acknowledged record; a second run
//! recovers the log and appends to it; `walden verify` again finds every
//! acknowledged record of both runs.
//!
//! Background threads make a run's system call counts vary slightly, so a
//! run may finish before its N-th call; most must be killed.
//!
//! Needs `/usr/bin/strace` (scripts/test installs it). `WALDEN_SWEEP_RECORDS`
//! sets the first run's records (default 30).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::verify_acked;

/// System calls a crash is injected at.
const SYSCALLS: &[&str] = &[
    "pwrite64",
    "pwritev",
    "fdatasync",
    "fsync",
    "rename",
    "unlink",
    "fallocate",
];
const STRACE: &str = "/usr/bin/strace";

fn records() -> u32 {
    std::env::var("WALDEN_SWEEP_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

/// How a sweep's runs prepare segments.
#[derive(Clone, Copy)]
struct Prep {
    /// `--segment-prep`.
    how: &'static str,
    /// `--segments-ahead`.
    ahead: u32,
    /// Crash at every this-th `pwrite64` only (and the last few).
    pwrite_stride: u64,
    /// `--direct-io`.
    direct_io: bool,
}

/// `walden write` appending `n` records to `dir`, acknowledging to `acked`,
/// preparing new segments as `prep` says.
fn write_args(dir: &Path, acked: &Path, n: u32, seed: u32, prep: Prep) -> Vec<String> {
    let mut args: Vec<String> = vec![
        env!("CARGO_BIN_EXE_walden").into(),
        "write".into(),
        dir.display().to_string(),
    ];
    for (k, v) in [
        ("--records", n.to_string()),
        ("--threads", "1".into()),
        ("--flush-every", "1".into()),
        ("--size", "0-20KB".into()),
        ("--segment-size", "1MB".into()),
        ("--buffers", "64KB".into()),
        ("--sync", "fdatasync".into()),
        ("--seed", seed.to_string()),
        ("--segment-prep", prep.how.into()),
        ("--segments-ahead", prep.ahead.to_string()),
    ] {
        args.push(k.into());
        args.push(v);
    }
    if prep.direct_io {
        args.push("--direct-io".into());
    }
    args.push("--acked".into());
    args.push(acked.display().to_string());
    args
}

/// How many times the first run makes each system call.
fn count_syscalls(tmp: &Path, prep: Prep) -> BTreeMap<String, u64> {
    let (dir, acked, log) = (
        tmp.join("count"),
        tmp.join("count.acked"),
        tmp.join("trace"),
    );
    let status = Command::new(STRACE)
        .args(["-f", "-qq", "-o"])
        .arg(&log)
        .arg("-e")
        .arg(format!("trace={}", SYSCALLS.join(",")))
        .args(write_args(&dir, &acked, records(), 1, prep))
        .status()
        .unwrap();
    assert!(status.success(), "the traced run failed: {status}");
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let call = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.split('(').next())
            .unwrap_or_default();
        if SYSCALLS.contains(&call) {
            *counts.entry(call.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn a_crash_at_every_write_sync_and_rename_loses_no_acknowledged_record() {
    let prep = Prep {
        how: "zero-fill",
        ahead: 2,
        pwrite_stride: 1,
        direct_io: false,
    };
    sweep(prep, &["pwrite64", "fdatasync", "rename"]);
}

#[test]
fn a_crash_at_every_call_with_fallocated_segments_loses_no_acknowledged_record() {
    let prep = Prep {
        how: "fallocate",
        ahead: 2,
        pwrite_stride: 1,
        direct_io: false,
    };
    sweep(prep, &["pwrite64", "fdatasync", "rename", "fallocate"]);
}

/// Direct I/O: the writer's whole-page writes (one `pwritev` of the pages
/// and the partial last page, written again by the next flush), each a
/// crash point.
#[test]
fn a_crash_at_every_call_with_direct_io_loses_no_acknowledged_record() {
    let prep = Prep {
        how: "zero-fill",
        ahead: 2,
        pwrite_stride: 1,
        direct_io: true,
    };
    sweep(prep, &["pwritev", "fdatasync", "rename"]);
}

/// The writer prepares each segment itself (none ahead), so that the page
/// headers' many small writes come at the same calls in every run; a crash
/// at every 8th of them.
#[test]
fn a_crash_at_calls_with_page_header_segments_loses_no_acknowledged_record() {
    let prep = Prep {
        how: "page-headers",
        ahead: 0,
        pwrite_stride: 8,
        direct_io: false,
    };
    sweep(prep, &["pwrite64", "fdatasync", "rename", "fallocate"]);
}

/// The sweep with segments prepared as `prep`, whose run makes each of
/// the `expected` calls.
fn sweep(prep: Prep, expected: &[&str]) {
    let name = if prep.direct_io {
        "direct-io"
    } else {
        prep.how
    };
    assert!(
        Path::new(STRACE).exists(),
        "{STRACE} is missing: scripts/test installs it (apt-get install strace)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let counts = count_syscalls(tmp.path(), prep);
    println!("{name}: system calls of the run: {counts:?}");
    for &call in expected {
        assert!(
            counts.get(call).copied().unwrap_or(0) > 0,
            "the run makes {call}"
        );
    }
    let mut points = 0;
    let mut completed = 0;
    for (call, &count) in &counts {
        let stride = if call == "pwrite64" {
            prep.pwrite_stride
        } else {
            1
        };
        for n in (1..=count).filter(|n| n % stride == 0 || n + 4 > count) {
            let case = tmp.path().join(format!("{call}-{n}"));
            let (dir, acked) = (case.join("wal"), case.join("acked"));
            std::fs::create_dir_all(&case).unwrap();
            // Nothing acknowledged yet: an empty acknowledgement file.
            std::fs::write(&acked, "").unwrap();
            let status = Command::new(STRACE)
                .args(["-f", "-qq", "-o", "/dev/null", "-e"])
                .arg(format!("trace={call}"))
                .arg("-e")
                .arg(format!("inject={call}:signal=KILL:when={n}"))
                .args(write_args(&dir, &acked, records(), 1, prep))
                .status()
                .unwrap();
            // The background threads (segment preallocation, the
            // background writer) make the counts vary a little between
            // runs: a run may finish before its N-th call.
            if status.success() {
                completed += 1;
            }
            let what = format!("{name}: killed at {call} #{n}");
            // With nothing acknowledged the log may have no record yet
            // (killed while being created): the second run must cope.
            if std::fs::metadata(&acked).unwrap().len() > 0 {
                verify_acked(&dir, &acked, &what);
            }
            let second = write_args(&dir, &acked, 5, 2, prep);
            let out = Command::new(&second[0])
                .args(&second[1..])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{what}: recovering and appending failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            verify_acked(
                &dir,
                &acked,
                &format!("{what}, then recovered and appended"),
            );
            std::fs::remove_dir_all(&case).unwrap();
            points += 1;
        }
    }
    println!(
        "{name}: {points} crash points ({completed} runs finished before their point), each \
         recovered with no acknowledged record lost"
    );
    assert!(points >= 50, "{points} crash points");
    assert!(
        completed * 4 < points,
        "most runs were killed at their point"
    );
}
