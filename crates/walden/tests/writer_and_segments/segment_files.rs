//! SegmentFiles on the real file system: naming, listing, creating,
//! recycling, removing and opening segment files.

use crate::support::regressions::next_to_source;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use walden::internals::format::page::XLP_SEG_SIZE;
use walden::internals::{plan_recycling, SegmentFiles};
use walden::{FileOp, FileSyncMode, FsStorage, SegmentError, SegmentSize};

const MIB: u64 = 1 << 20;

fn segments(dir: &Path) -> SegmentFiles {
    SegmentFiles::new(
        Arc::new(FsStorage::new()),
        dir,
        SegmentSize::new(MIB).unwrap(),
        1,
    )
}

fn dir_names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Writes `marker` at offset 8192 of segment `segno`.
fn mark(files: &SegmentFiles, segno: u64, marker: &[u8]) {
    let f = files.open_for_write(segno, FileSyncMode::None).unwrap();
    f.write_all_at(marker, 8192).unwrap();
    f.sync_data().unwrap();
}

fn marker_of(files: &SegmentFiles, segno: u64, len: usize) -> Vec<u8> {
    let f = files.open_for_read(segno).unwrap();
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, 8192).unwrap();
    buf
}

#[test]
fn list_finds_this_timelines_segments_and_ignores_other_names() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    let seg = files.segment_size();
    // 1 MiB segments: 4096 per log id, so 4095 -> 4096 crosses a log id.
    let wanted = [0u64, 1, 10, 4095, 4096, 8193];
    for segno in wanted {
        fs::write(files.path(segno), b"").unwrap();
    }
    for other in [
        format!("{}.partial", seg.file_name(1, 2)),
        format!("{}.tmp", seg.file_name(1, 3)),
        seg.file_name(2, 4),
        "00000002.history".to_owned(),
        "000000010000000000001000".to_owned(), // segment part 0x1000 is out of range
        "walden.control".to_owned(),
        seg.file_name(1, 11).to_lowercase(), // "...000b"
    ] {
        fs::write(dir.path().join(other), b"").unwrap();
    }
    assert_eq!(files.list().unwrap(), wanted);
    assert_eq!(
        files.path(4096).file_name().unwrap(),
        "000000010000000100000000"
    );
}

proptest! {
    #![proptest_config(next_to_source(ProptestConfig::with_cases(32)))]
    #[test]
    fn names_round_trip_through_list(segnos in proptest::collection::btree_set(0u64..1 << 24, 0..12)) {
        let dir = tempfile::tempdir().unwrap();
        let files = segments(dir.path());
        for &segno in &segnos {
            fs::write(files.path(segno), b"").unwrap();
        }
        prop_assert_eq!(files.list().unwrap(), segnos.into_iter().collect::<Vec<_>>());
    }
}

#[test]
fn create_zeroed_makes_a_full_zero_file_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(7).unwrap();
    let bytes = fs::read(files.path(7)).unwrap();
    assert_eq!(bytes.len() as u64, MIB);
    // Zeros, but for the segment size where pg_waldump reads it.
    assert_eq!(bytes[XLP_SEG_SIZE], (MIB as u32).to_le_bytes());
    assert!(bytes[..XLP_SEG_SIZE.start].iter().all(|&b| b == 0));
    assert!(bytes[XLP_SEG_SIZE.end..].iter().all(|&b| b == 0));
    assert_eq!(
        dir_names(dir.path()),
        BTreeSet::from([files.segment_size().file_name(1, 7)])
    );
    assert!(files.exists(7).unwrap());
    assert!(!files.exists(8).unwrap());
}

#[test]
fn create_zeroed_refuses_an_existing_segment_and_keeps_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(3).unwrap();
    mark(&files, 3, b"live WAL");
    match files.create_zeroed(3) {
        Err(SegmentError::AlreadyExists { path }) => assert_eq!(path, files.path(3)),
        other => panic!("{other:?}"),
    }
    assert_eq!(marker_of(&files, 3, 8), b"live WAL");
}

#[test]
fn recycle_renames_and_keeps_the_old_contents() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(1).unwrap();
    mark(&files, 1, b"old cycle");
    files.recycle(1, 5).unwrap();
    assert_eq!(files.list().unwrap(), [5]);
    assert_eq!(marker_of(&files, 5, 9), b"old cycle");
    assert_eq!(fs::metadata(files.path(5)).unwrap().len(), MIB);
}

#[test]
fn recycle_onto_an_existing_segment_or_from_a_missing_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(1).unwrap();
    files.create_zeroed(2).unwrap();
    mark(&files, 2, b"keep me");
    assert!(matches!(
        files.recycle(1, 2),
        Err(SegmentError::AlreadyExists { .. })
    ));
    assert_eq!(files.list().unwrap(), [1, 2]);
    assert_eq!(marker_of(&files, 2, 7), b"keep me");

    let err = files.recycle(9, 10).unwrap_err();
    match &err {
        SegmentError::Io(failure) => {
            assert_eq!(failure.op, FileOp::Rename);
            assert_eq!(failure.error.kind(), io::ErrorKind::NotFound);
            assert_eq!(failure.to.as_deref(), Some(files.path(10).as_path()));
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "could not rename \"{}\" to \"{}\": ",
            files.path(9).display(),
            files.path(10).display()
        )),
        "{text}"
    );
}

#[test]
fn remove_and_open_missing_segments() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(4).unwrap();
    files.remove(4).unwrap();
    assert!(files.list().unwrap().is_empty());
    match files.open_for_read(4) {
        Err(SegmentError::Missing { segno, path }) => {
            assert_eq!((segno, path), (4, files.path(4)));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        files.open_for_write(4, FileSyncMode::Dsync),
        Err(SegmentError::Missing { segno: 4, .. })
    ));
    let err = files.remove(4).unwrap_err();
    assert!(
        matches!(&err, SegmentError::Io(f) if f.op == FileOp::Remove && f.path == files.path(4)),
        "{err:?}"
    );
}

#[test]
fn writes_through_every_sync_mode_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(0).unwrap();
    for (i, mode) in [FileSyncMode::None, FileSyncMode::Dsync, FileSyncMode::Sync]
        .into_iter()
        .enumerate()
    {
        let f = files.open_for_write(0, mode).unwrap();
        f.write_all_at(&[i as u8 + 1; 8192], i as u64 * 8192)
            .unwrap();
    }
    let bytes = fs::read(files.path(0)).unwrap();
    assert_eq!(bytes.len() as u64, MIB, "writing must not change the size");
    for i in 0..3 {
        assert!(bytes[i * 8192..(i + 1) * 8192]
            .iter()
            .all(|&b| b == i as u8 + 1));
    }
}

#[test]
fn applying_a_plan_recycles_and_removes_as_planned() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    for segno in [0, 1, 2, 3, 4, 5, 7] {
        files.create_zeroed(segno).unwrap();
        mark(&files, segno, &[segno as u8 + 100]);
    }
    let plan = plan_recycling(&files.list().unwrap(), 4, 5, 4);
    assert_eq!(plan.recycle, vec![(0, 6), (1, 8), (2, 9)]);
    assert_eq!(plan.remove, vec![3]);
    files.apply(&plan).unwrap();
    assert_eq!(files.list().unwrap(), [4, 5, 6, 7, 8, 9]);
    for (old, new) in plan.recycle {
        assert_eq!(marker_of(&files, new, 1), [old as u8 + 100]);
    }
}

#[test]
fn leftover_temp_files_are_removed_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let files = segments(dir.path());
    files.create_zeroed(2).unwrap();
    let seg = files.segment_size();
    fs::write(
        dir.path().join(format!("{}.tmp", seg.file_name(1, 3))),
        [0u8; 100],
    )
    .unwrap();
    fs::write(dir.path().join("walden.control.tmp"), b"x").unwrap();
    assert_eq!(files.remove_temp_files().unwrap(), 1);
    assert_eq!(
        dir_names(dir.path()),
        BTreeSet::from([seg.file_name(1, 2), "walden.control.tmp".to_owned()])
    );
    assert_eq!(files.remove_temp_files().unwrap(), 0);
}

#[test]
fn an_unreadable_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir");
    let files = segments(&missing);
    let err = files.list().unwrap_err();
    assert!(
        matches!(&err, SegmentError::Io(f) if f.op == FileOp::ListDir && f.path == missing),
        "{err:?}"
    );
    assert!(err.to_string().contains("no-such-dir"), "{err}");
    assert!(files.create_zeroed(0).is_err());
}
