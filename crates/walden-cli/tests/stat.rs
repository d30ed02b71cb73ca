//! `walden stat` reports what `walden write` wrote.

mod common;

#[test]
fn stat_counts_what_write_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let d = dir.to_str().unwrap();
    let out = common::run(&[
        "write",
        d,
        "--records",
        "777",
        "--threads",
        "3",
        "--segment-size",
        "1MB",
        "--sync",
        "none",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::run(&["stat", d]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("custom128"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(row.split_whitespace().nth(1), Some("777"), "{row}");
    assert!(text.contains("closed cleanly"), "{text}");
    assert!(text.contains("segments: "), "{text}");

    let out = common::run(&["stat", tmp.path().join("nothing").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("walden: error: "), "{err}");
}
