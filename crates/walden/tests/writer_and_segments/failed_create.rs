//! A `Wal::create` that fails leaves the directory as it found it: a
//! directory it made is gone (with every parent it made), one that was
//! there holds what it held, no lock file is left behind, and a retry
//! with a configuration that works creates the log. A create refused
//! because the directory is in use or already holds a log removes nothing.
//! (A file system that really refuses `O_DIRECT` is in `direct_io.rs`.)

use std::path::Path;
use std::sync::Arc;

use walden::{Config, Error, SegmentError, SimStorage, Storage, SyncMethod, Wal};

fn config(direct_io: bool) -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 256 << 10,
        sync_method: SyncMethod::Fdatasync,
        writer_delay: None,
        // No preallocator: the tests compare directory listings, which it
        // would change in the background (a segment being prepared).
        segments_ahead: 0,
        direct_io,
        ..Config::default()
    }
}

/// The names in `dir`, sorted.
fn names(sim: &SimStorage, dir: &Path) -> Vec<String> {
    let mut names = sim.list_dir(dir).unwrap();
    names.sort();
    names
}

#[test]
fn a_refused_direct_io_create_removes_the_directories_it_made_and_a_retry_creates_the_log() {
    let sim = Arc::new(SimStorage::new(3));
    sim.create_dir_all(Path::new("/data")).unwrap();
    sim.set_no_direct_io(true);
    let dir = Path::new("/data/a/wal");
    let err = Wal::create_with_storage(dir, config(true), sim.clone()).map(drop);
    assert!(
        matches!(
            err,
            Err(Error::Segment(SegmentError::DirectIoUnsupported { .. }))
        ),
        "{err:?}"
    );
    assert!(!sim.exists(Path::new("/data/a")).unwrap(), "made, removed");
    assert!(sim.list_dir(Path::new("/data")).unwrap().is_empty());
    // The same create without direct I/O works.
    let wal = Wal::create_with_storage(dir, config(false), sim.clone()).unwrap();
    wal.close().unwrap();
    assert!(sim.exists(&dir.join("walden.control")).unwrap());
}

#[test]
fn a_create_that_fails_after_writing_leaves_a_found_directory_as_it_was() {
    let sim = Arc::new(SimStorage::new(4));
    let dir = Path::new("/wal");
    sim.create_dir_all(dir).unwrap();
    sim.set_contents(&dir.join("README"), b"the operator's notes")
        .unwrap();
    // Room for the control file, not for the first 1 MiB segment.
    sim.set_space_limit(Some(64 << 10));
    let err = Wal::create_with_storage(dir, config(false), sim.clone()).map(drop);
    assert!(err.is_err(), "no room for a segment");
    assert_eq!(names(&sim, dir), ["README"], "{err:?}");
    assert_eq!(
        sim.contents(&dir.join("README")).unwrap(),
        b"the operator's notes"
    );
    sim.set_space_limit(None);
    let wal = Wal::create_with_storage(dir, config(false), sim.clone()).unwrap();
    wal.close().unwrap();
}

#[test]
fn a_create_refused_for_an_existing_or_open_log_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().join("wal");
    let wal = Wal::create(&dir, config(false)).unwrap();
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let open_files = listing();
    assert!(open_files.contains(&walden::LOCK_FILE_NAME.to_owned()));
    // In use: the lock is another writer's.
    let err = Wal::create(&dir, config(false)).map(drop).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err:?}");
    assert_eq!(listing(), open_files);
    wal.append(b"kept").unwrap();
    wal.close().unwrap();
    let closed_files = listing();
    // Closed: the lock is free, but the directory holds a log.
    let err = Wal::create(&dir, config(false)).map(drop).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists(_)), "{err:?}");
    assert_eq!(listing(), closed_files);
    let (wal, report) = Wal::open(&dir, config(false)).unwrap();
    assert!(report.clean_shutdown);
    wal.close().unwrap();
}
