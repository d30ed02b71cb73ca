//! `walden write` in every format and reservation design, `walden verify`
//! and `walden dump` reading each without being told which.

mod common;

use std::path::Path;
use std::process::Output;

fn ok(out: Output) -> String {
    common::succeeded(out, "walden")
}

fn write(dir: &Path, extra: &[&str]) -> Output {
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "write",
        d,
        "--records",
        "3000",
        "--threads",
        "8",
        "--sync",
        "none",
        "--segment-size",
        "1MB",
        "--buffers",
        "256KB",
        "--flush-every",
        "7",
    ];
    args.extend_from_slice(extra);
    common::run(&args)
}

#[test]
fn every_design_writes_a_log_that_verify_and_dump_read() {
    let designs: [&[&str]; 6] = [
        &["--reservation", "spinlock"],
        &[
            "--reservation",
            "prev-link-table",
            "--insert-slots",
            "64",
            "--link-table-capacity",
            "256",
        ],
        &[
            "--reservation",
            "prev-link-in-buffer",
            "--slot-choice",
            "attempts:2",
        ],
        &["--format", "self-lsn"],
        &[
            "--format",
            "compact-wal-id",
            "--reservation",
            "unlinked",
            "--slot-choice",
            "attempts:1",
        ],
        &["--format", "self-lsn", "--insert-slots", "1024"],
    ];
    for extra in designs {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("wal");
        let wrote = ok(write(&log, extra));
        // Appending takes the format from the control file.
        ok(write(&log, &[]));
        let d = log.to_str().unwrap();
        let verified = ok(common::run(&["verify", d]));
        assert!(
            verified.contains("(6000 from walden write"),
            "{extra:?}: {verified}"
        );
        let format = wrote.split(", ").nth(1).unwrap_or("?").to_owned();
        assert!(
            verified.contains(&format!("{format} format")),
            "{extra:?}: {wrote} / {verified}"
        );
        let dump = common::run(&["dump", d]);
        let lines = String::from_utf8_lossy(&dump.stdout).lines().count();
        assert!(lines >= 6000, "{extra:?}: dump showed {lines} records");
    }
}

#[test]
fn an_impossible_pair_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = write(
        dir.path(),
        &["--format", "self-lsn", "--reservation", "spinlock"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reservation = spinlock does not suit format = self-lsn"),
        "{err}"
    );
    let out = write(dir.path(), &["--slot-choice", "attempts:0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("attempts:0"));
}
