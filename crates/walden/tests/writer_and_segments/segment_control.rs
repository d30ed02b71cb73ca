//! The control file on the real file system: round trip, typed errors for
//! missing and corrupt files.

use std::fs;
use std::path::Path;

use walden::internals::{ControlFile, CONTROL_FILE_LEN, CONTROL_FILE_NAME};
use walden::{ControlFileError, CorruptControlFile, FsStorage, Lsn, SegmentSize, WalFormat};

fn sample() -> ControlFile {
    let mut c = ControlFile::new(WalFormat::Postgres15, SegmentSize::new(1 << 20).unwrap(), 1);
    c.checkpoint = Lsn(0x0300_0128);
    c.redo = Lsn(0x0300_0028);
    c
}

fn corruption(dir: &Path) -> CorruptControlFile {
    match ControlFile::read(&FsStorage::new(), dir) {
        Err(ControlFileError::Corrupt { path, problem }) => {
            assert_eq!(path, dir.join(CONTROL_FILE_NAME));
            problem
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn round_trip_and_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let fs_ = FsStorage::new();
    let first = sample();
    first.write(&fs_, dir.path()).unwrap();
    assert_eq!(ControlFile::read(&fs_, dir.path()).unwrap(), first);
    let second = ControlFile {
        checkpoint: Lsn(0x0500_0060),
        redo: Lsn(0x0480_0000),
        clean_shutdown: true,
        ..first
    };
    second.write(&fs_, dir.path()).unwrap();
    assert_eq!(ControlFile::read(&fs_, dir.path()).unwrap(), second);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [CONTROL_FILE_NAME], "no temporary file left");
    assert_eq!(
        fs::metadata(dir.path().join(CONTROL_FILE_NAME))
            .unwrap()
            .len(),
        CONTROL_FILE_LEN as u64
    );
}

#[test]
fn a_missing_control_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    match ControlFile::read(&FsStorage::new(), dir.path()) {
        Err(e @ ControlFileError::Missing { .. }) => {
            assert!(e.to_string().contains(CONTROL_FILE_NAME), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_flipped_byte_and_truncation_on_disk_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONTROL_FILE_NAME);
    sample().write(&FsStorage::new(), dir.path()).unwrap();
    let good = fs::read(&path).unwrap();
    for at in 0..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 0x5A;
        fs::write(&path, &bad).unwrap();
        let problem = corruption(dir.path());
        assert!(
            matches!(
                problem,
                CorruptControlFile::BadMagic { .. }
                    | CorruptControlFile::UnsupportedVersion { .. }
                    | CorruptControlFile::BadCrc { .. }
            ),
            "byte {at}: {problem}"
        );
    }
    for len in 0..good.len() {
        fs::write(&path, &good[..len]).unwrap();
        assert_eq!(
            corruption(dir.path()),
            CorruptControlFile::Truncated { len: len as u64 }
        );
    }
}

#[test]
fn a_huge_or_foreign_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONTROL_FILE_NAME);
    fs::write(&path, vec![0u8; 1 << 20]).unwrap();
    assert_eq!(
        corruption(dir.path()),
        CorruptControlFile::TooLong { len: 1 << 20 }
    );
    // A PostgreSQL pg_control is 8192 bytes starting with the system identifier.
    fs::write(&path, vec![0x11u8; 8192]).unwrap();
    assert!(matches!(
        corruption(dir.path()),
        CorruptControlFile::TooLong { .. }
    ));
    fs::write(&path, vec![0x11u8; CONTROL_FILE_LEN]).unwrap();
    let problem = corruption(dir.path());
    assert_eq!(problem, CorruptControlFile::BadMagic { found: [0x11; 4] });
    let text = ControlFile::read(&FsStorage::new(), dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        text.starts_with(&format!(
            "control file \"{}\" is corrupt: bad magic",
            path.display()
        )),
        "{text}"
    );
}

#[test]
fn an_invalid_control_file_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad = ControlFile {
        timeline: 0,
        ..sample()
    };
    match bad.write(&FsStorage::new(), dir.path()) {
        Err(ControlFileError::Refused { value, .. }) => assert_eq!(value.field, "timeline"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}
