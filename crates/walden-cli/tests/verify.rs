//! `walden verify` is honest: it exits 0 on a log that reads cleanly to
//! where a clean log ends, and non-zero, with the reason, on a log with a
//! missing, truncated or corrupted middle segment. With `--recovery-mode`
//! it reads a damaged log as opening it with that mode would.

mod common;

use std::path::{Path, PathBuf};

use walden::internals::{ControlFile, SegmentFiles};
use walden::{Config, FsStorage, Lsn, Record, SegmentSize, SyncMethod, Wal};

/// Segments of 1 MiB.
const SEGMENT: u64 = 1 << 20;

/// A log of about five segments (a checkpoint in its first one), open:
/// 2500 records of 2000 bytes, every `batch_every`th insert (if any) a
/// batch of two such records instead. Returns the temporary directory, the
/// log's directory and the log.
fn write_log(batch_every: Option<u32>) -> (tempfile::TempDir, PathBuf, Wal) {
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
        let data = i.to_le_bytes().repeat(500);
        if batch_every.is_some_and(|n| i % n == 0) {
            let mut batch = walden::Batch::new();
            batch.append(data.clone()).append(data);
            wal.insert_batch(&batch).unwrap();
        } else {
            wal.insert(&Record::new(128, 0, data)).unwrap();
        }
    }
    wal.flush(wal.insert_position()).unwrap();
    assert!(wal.insert_position().0 > 4 * SEGMENT, "too short a log");
    (tmp, dir, wal)
}

/// A log of about five segments, closed cleanly if `clean`, else left as
/// a crash leaves it (after a checkpoint in its first segment). Returns
/// the temporary directory and the log's directory.
fn log(clean: bool) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir, wal) = write_log(None);
    if clean {
        wal.close().unwrap();
    }
    (tmp, dir)
}

/// Flips bits well inside a record's payload in the middle of segment 3:
/// its CRC no longer matches.
fn corrupt_segment_3(dir: &Path) {
    let path = segment(dir, 3);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(SEGMENT / 2) as usize + 1000] ^= 0x5a;
    std::fs::write(&path, bytes).unwrap();
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
    corrupt_segment_3(&dir);
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

/// A crashed log of about five segments whose every 100th insert is a batch
/// of two records (whose marker is where skipping may resume), with a bad
/// CRC in the middle of segment 3.
fn damaged_log_with_batches() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir, wal) = write_log(Some(100));
    drop(wal); // a crash: no clean close
    corrupt_segment_3(&dir);
    (tmp, dir)
}

/// Every file of `dir` and its bytes.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The records a real open of a copy of `dir` with `mode` keeps.
fn records_an_open_keeps(dir: &Path, mode: walden::RecoveryMode) -> u64 {
    let copy = tempfile::tempdir().unwrap();
    for (path, bytes) in contents(dir) {
        std::fs::write(copy.path().join(path.file_name().unwrap()), bytes).unwrap();
    }
    let config = Config {
        recovery_mode: mode,
        ..Config::default()
    };
    let (wal, report) = Wal::open(copy.path(), config).unwrap();
    drop(wal);
    report.records
}

/// `walden verify --recovery-mode M` on a damaged log: the records each mode
/// keeps are those a real open with it keeps and those verify reads (and
/// checks acknowledgements against), what skipping skips is named,
/// a mode that refuses the log fails verify with its reason, and the log is
/// left as it was.
#[test]
fn recovery_modes_read_a_damaged_log_as_opening_it_would() {
    use walden::RecoveryMode::{
        PointInTimeRecovery, SkipAnyCorruptedRecords, TolerateCorruptedTailRecords,
    };
    let (_tmp, dir) = damaged_log_with_batches();
    let before = contents(&dir);
    let verify_with = |mode: walden::RecoveryMode| {
        common::run(&[
            "verify",
            dir.to_str().unwrap(),
            "--recovery-mode",
            &mode.to_string(),
        ])
    };
    let kept = |mode: walden::RecoveryMode| {
        let stdout = common::succeeded(verify_with(mode), &format!("verify with {mode}"));
        let prefix = format!("recovery mode {mode}: keeps ");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{mode}: no report in {stdout}"));
        let count = |text: &str| text.split(' ').next().unwrap().parse::<u64>().unwrap();
        let kept = count(&line[prefix.len()..]);
        // verify's own reading (for --acked) follows the mode's.
        let verified = stdout.split("verified ").nth(1).map(count);
        assert_eq!(verified, Some(kept), "{mode}: {stdout}");
        (kept, stdout)
    };
    let (pitr, pitr_out) = kept(PointInTimeRecovery);
    let (skip, skip_out) = kept(SkipAnyCorruptedRecords);
    assert_eq!(pitr, records_an_open_keeps(&dir, PointInTimeRecovery));
    assert_eq!(skip, records_an_open_keeps(&dir, SkipAnyCorruptedRecords));
    assert!(
        skip > pitr + 500,
        "skipping keeps the segments after the damage: {skip} against {pitr}"
    );
    assert!(!pitr_out.contains("skips from"), "{pitr_out}");
    assert!(
        skip_out.contains("skips from") && skip_out.contains("checksum"),
        "{skip_out}"
    );
    let refused = verify_with(TolerateCorruptedTailRecords);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "tolerating a tail passed: {stderr}"
    );
    assert!(
        stderr.contains("would fail") && stderr.contains("but a valid record follows"),
        "{stderr}"
    );
    assert!(contents(&dir) == before, "verify changed the log");
}
