//! `walden write` and `walden bench` refuse impossible values, and
//! `walden write` refuses options that contradict an existing log instead
//! of ignoring them.

mod common;

use common::{run, succeeded};

/// Runs `walden ARGS`, which must fail with an error mentioning `reason`.
fn refused(args: &[&str], reason: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} ran: {stderr}");
    assert!(
        stderr.contains(reason),
        "{args:?}: no {reason:?} in: {stderr}"
    );
}

#[test]
fn impossible_values_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let d = dir.to_str().unwrap();
    refused(&["write", d, "--threads", "0"], "--threads");
    refused(&["write", d, "--size", "2GB"], "at most");
    refused(&["write", d, "--size", "2KB-1KB"], "minimum above maximum");
    refused(&["write", d, "--insert-slots", "0"], "insert");
    refused(&["write", d, "--segment-size", "3MB"], "segment");
    refused(&["write", d, "--segments-ahead", "100000"], "segments");
    refused(
        &["write", d, "--concurrent-syncs", "maybe"],
        "--concurrent-syncs",
    );
    refused(&["write", d, "--overlap-syncs-from", "lots"], "lots");
    refused(&["write", d, "--crc-helper", "yes"], "--crc-helper");
    assert!(!dir.exists(), "a refused write created the log");
    refused(&["bench", "splice", "--segments", "0"], "--segments");
    refused(&["bench", "splice", "--max-sectors", "0"], "--max-sectors");
    refused(&["bench", "rwlock", "--duration-ms", "0"], "--duration-ms");
}

#[test]
fn options_contradicting_the_log_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let d = dir.to_str().unwrap();
    let new = ["--records", "50", "--sync", "none", "--segment-size", "1MB"];
    succeeded(run(&[&["write", d][..], &new].concat()), "creating the log");
    refused(&["write", d, "--format", "self-lsn"], "contradicts");
    refused(&["write", d, "--segment-size", "2MB"], "contradicts");
    // The log's own values, or none, append.
    let same = [
        "--records",
        "50",
        "--format",
        "postgres15",
        "--segment-size",
        "1MB",
    ];
    succeeded(
        run(&[&["write", d][..], &same].concat()),
        "appending with the log's options",
    );
    succeeded(
        run(&["write", d, "--records", "50"]),
        "appending without options",
    );
    let out = succeeded(run(&["verify", d]), "verify");
    assert!(out.contains("150 from walden write"), "{out}");
}

#[test]
fn recovery_mode_decides_what_opening_a_damaged_log_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let d = dir.to_str().unwrap();
    let new = ["--records", "4000", "--size", "1KB", "--sync", "none"];
    let segment_size = ["--segment-size", "1MB"];
    succeeded(
        run(&[&["write", d][..], &new, &segment_size].concat()),
        "creating the log",
    );
    std::fs::remove_file(dir.join("000000010000000000000003")).unwrap();
    let more = ["--records", "10", "--sync", "none"];
    refused(&[&["write", d][..], &more].concat(), "is missing");
    refused(
        &[
            &["write", d, "--recovery-mode", "absolute-consistency"][..],
            &more,
        ]
        .concat(),
        "recovery refused: absolute-consistency",
    );
    let out = run(&[
        &["write", d, "--recovery-mode", "skip-any-corrupted-records"][..],
        &more,
    ]
    .concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "skipping: {stderr}");
    assert!(stderr.contains("skipped invalid WAL from"), "{stderr}");
    // Later opens start past the skipped WAL, in the default mode too.
    succeeded(
        run(&[&["write", d][..], &more].concat()),
        "appending after the skip",
    );
}
