//! `walden write --max-wal-size`: the load generator checkpoints on its
//! own, so recovery after a crash reads at most about that much WAL, and
//! `walden verify --acked` accounts for the acknowledged records whose
//! segments the checkpoints removed.

mod common;

use std::path::Path;

use walden::internals::ControlFile;
use walden::FsStorage;

/// The number just before `marker` in `text`.
fn number_before(text: &str, marker: &str) -> u64 {
    let head = &text[..text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in {text}"))];
    head.split_whitespace()
        .last()
        .and_then(|n| n.trim_start_matches('(').parse().ok())
        .unwrap_or_else(|| panic!("a number before {marker:?} in {text}"))
}

fn write(dir: &Path, acked: &Path) -> String {
    common::succeeded(
        common::run(&[
            "write",
            dir.to_str().unwrap(),
            "--records",
            "1500",
            "--threads",
            "2",
            "--size",
            "4KB",
            "--sync",
            "none",
            "--segment-size",
            "1MB",
            "--max-wal-size",
            "2MB",
            "--flush-every",
            "1",
            "--acked",
            acked.to_str().unwrap(),
        ]),
        "walden write",
    )
}

#[test]
fn write_checkpoints_by_volume_and_verify_counts_the_removed_acknowledgements() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, acked) = (tmp.path().join("wal"), tmp.path().join("acked"));
    for _ in 0..2 {
        let out = write(&dir, &acked);
        // 1,500 records of 4 KB: about 6 MB of WAL, past a 2 MB limit.
        assert!(number_before(&out, "by volume") >= 1, "{out}");
    }
    let control = ControlFile::read(&FsStorage, &dir).unwrap();
    // The background writer checks the limit after its rounds (one at
    // least every writer_delay, and after each 1 MiB of new WAL), so what
    // lies past the redo point at the end is about the limit plus a round's
    // worth: far from the 12 MB the two runs wrote. (The exact bound is
    // `auto_checkpoint.rs`'s, without a background writer.)
    let wal_since_redo = control.checkpoint.0 - control.redo.0;
    assert!(
        wal_since_redo < 6 << 20,
        "{wal_since_redo} bytes since the redo point"
    );
    let verified = common::succeeded(
        common::run(&[
            "verify",
            dir.to_str().unwrap(),
            "--acked",
            acked.to_str().unwrap(),
        ]),
        "walden verify",
    );
    let removed = number_before(&verified, "for records checkpoints removed");
    let hold = number_before(&verified, "acknowledgements hold");
    assert!(removed > 0 && hold > 0, "{verified}");
    assert_eq!(removed + hold, 3000, "{verified}");
}
