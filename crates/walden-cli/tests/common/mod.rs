//! What the command-line tests share: running the `walden` binary and
//! checking that a run succeeded.

// Each test binary uses only some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output};

use walden::{Lsn, SegmentSize};

/// The `walden` binary under test.
pub fn walden() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walden"))
}

/// Runs the `walden` binary with `args` and returns what it did.
pub fn run(args: &[&str]) -> Output {
    walden().args(args).output().unwrap()
}

/// Asserts that `out` succeeded (the failure names `what` and shows both
/// streams) and returns its stdout.
pub fn succeeded(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `walden verify DIR --acked ACKED`, which must succeed (`what` says
/// after what, in the failure); returns its stdout.
pub fn verify_acked(dir: &Path, acked: &Path, what: &str) -> String {
    let out = walden()
        .arg("verify")
        .arg(dir)
        .arg("--acked")
        .arg(acked)
        .output()
        .unwrap();
    succeeded(out, &format!("{what}: walden verify"))
}

/// Kills `child`, which must still be running (else the failure names
/// `what` and shows its stderr, which must be piped).
pub fn kill_running(mut child: Child, what: &str) {
    if let Ok(Some(status)) = child.try_wait() {
        let out = child.wait_with_output().unwrap();
        panic!(
            "walden write exited ({status}) before {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `pg_waldump` reads the log in `dir` (segments of `segment_bytes`) from
/// `first` to `last`; the failure names `what`.
pub fn pg_waldump_reads(dir: &Path, segment_bytes: u64, first: Lsn, last: Lsn, what: &str) {
    // The first and last segments are named: without them pg_waldump takes
    // the segment size from whichever file `readdir` lists first, and a
    // zero-filled one prepared ahead of need has none.
    let seg = SegmentSize::new(segment_bytes).unwrap();
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
        "{what}: pg_waldump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
