//! `walden verify` is honest: it exits 0 on a log that reads cleanly to
//! where a clean log ends, and non-zero, with the reason, on a log with a
//! missing, truncated or corrupted middle segment.

mod common;

use std::path::{Path, PathBuf};

use walden::internals::{ControlFile, SegmentFiles};
use walden::{Config, FsStorage, Lsn, Record, SegmentSize, SyncMethod, Wal};

/// Segments of 1 MiB.
const SEGMENT: u64 = 1 << 20;

/// A log of about five segments, closed cleanly if `clean`, else left as
/// a crash leaves it (after a checkpoint in its first segment). Returns
/// the temporary directory and the log's directory.
fn log(clean: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let config = Config {
        segment_size: SEGMENT,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    let wal = Wal::create(&dir, config).unwrap();
    for i in 0..2_500u32 {
        wal.insert(&Record::new(128, 0, i.to_le_bytes().repeat(500)))
            .unwrap();
    }
    wal.flush(wal.insert_position()).unwrap();
    assert!(wal.insert_position().0 > 4 * SEGMENT, "too short a log");
    if clean {
        wal.close().unwrap();
    }
    (tmp, dir)
}

/// The path of segment `segno` of the log in `dir`.
fn segment(dir: &Path, segno: u64) -> PathBuf {
    let seg = SegmentSize::new(SEGMENT).unwrap();
    SegmentFiles::new(std::sync::Arc::new(FsStorage), dir, seg, 1).path(segno)
}

/// Cuts the file at `path` to half a segment.
fn truncate_to_half(path: &Path) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(SEGMENT / 2).unwrap();
}

/// Runs `walden verify DIR`; returns whether it succeeded, and its stderr.
fn verify(dir: &Path) -> (bool, String) {
    let out = common::run(&["verify", dir.to_str().unwrap()]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fails_with(dir: &Path, reason: &str, what: &str) {
    let (ok, stderr) = verify(dir);
    assert!(!ok, "verify passed a log with {what}");
    assert!(
        stderr.contains(reason),
        "{what}: the error does not say {reason:?}: {stderr}"
    );
}

#[test]
fn a_clean_log_verifies_and_a_crashed_one_too() {
    for clean in [true, false] {
        let (_tmp, dir) = log(clean);
        let (ok, stderr) = verify(&dir);
        assert!(ok, "clean: {clean}: {stderr}");
    }
}

#[test]
fn a_missing_middle_segment_fails() {
    let (_tmp, dir) = log(true);
    std::fs::remove_file(segment(&dir, 3)).unwrap();
    fails_with(
        &dir,
        "before the control file's last checkpoint",
        "a missing segment",
    );
}

#[test]
fn a_truncated_middle_segment_fails() {
    let (_tmp, dir) = log(true);
    truncate_to_half(&segment(&dir, 3));
    fails_with(
        &dir,
        "before the control file's last checkpoint",
        "a truncated segment",
    );
}

#[test]
fn a_bad_crc_in_the_middle_fails() {
    let (_tmp, dir) = log(true);
    let path = segment(&dir, 3);
    let mut bytes = std::fs::read(&path).unwrap();
    // Well inside a record's payload: its CRC no longer matches.
    let at = (SEGMENT / 2) as usize + 1000;
    bytes[at] ^= 0x5a;
    std::fs::write(&path, bytes).unwrap();
    fails_with(
        &dir,
        "incorrect resource manager data checksum",
        "a bad CRC",
    );
}

#[test]
fn after_a_crash_a_hole_before_later_wal_fails() {
    let (_tmp, dir) = log(false);
    // The checkpoint is in segment 1: the reader ends cleanly at the hole,
    // but WAL of this log follows it.
    std::fs::remove_file(segment(&dir, 3)).unwrap();
    fails_with(
        &dir,
        "WAL follows a hole",
        "a missing segment after a crash",
    );
    let (_tmp, dir) = log(false);
    truncate_to_half(&segment(&dir, 3));
    fails_with(
        &dir,
        "a segment is damaged",
        "a truncated segment after a crash",
    );
}

#[test]
fn a_log_whose_create_crashed_before_its_first_checkpoint_verifies() {
    // As a crash between `Wal::create`'s first control-file write and its
    // first checkpoint record leaves it: the control file names no
    // checkpoint, and recovery (and verify) start at the redo point.
    let (_tmp, dir) = log(false);
    let mut control = ControlFile::read(&FsStorage, &dir).unwrap();
    control.checkpoint = Lsn::INVALID;
    control.write(&FsStorage, &dir).unwrap();
    let (ok, stderr) = verify(&dir);
    assert!(ok, "{stderr}");
    // A checkpoint named but never read still fails.
    control.checkpoint = Lsn(64 * SEGMENT);
    control.write(&FsStorage, &dir).unwrap();
    fails_with(
        &dir,
        "before the control file's last checkpoint",
        "an unread checkpoint",
    );
}
