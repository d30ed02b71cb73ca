//! Bad input: each is a typed error with a clear message, and nothing
//! already flushed is lost (the log reopens with every flushed record once
//! the problem is gone).

use std::path::Path;

use crate::support::fault::{
    assert_acknowledged, payload, read_log, small_config, storage, Acked, DIR, USER_RMID,
};
use walden::internals::ControlFile;
use walden::{
    Config, ConfigError, ControlFileError, CorruptControlFile, Error, Record, RecordError,
    SegmentError, SegmentSize, SimStorage, Storage, SyncMethod, Wal, WalFormat, WriteError,
    MAX_RECORD_SIZE,
};

fn config() -> Config {
    small_config(8)
}

/// A log on `sim` with `n` flushed records; returns their (start, tag, len).
fn flushed_log(sim: &SimStorage, n: u64) -> Vec<Acked> {
    let wal = Wal::create_with_storage(DIR, config(), storage(sim)).unwrap();
    let records = insert_flushed(&wal, 0, n);
    drop(wal);
    records
}

fn insert_flushed(wal: &Wal, first_tag: u64, n: u64) -> Vec<Acked> {
    let mut out = Vec::new();
    for tag in first_tag..first_tag + n {
        let len = 100 + (tag as usize * 37) % 3000;
        let span = wal
            .insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
            .unwrap();
        wal.flush(span.end).unwrap();
        out.push((span.start, tag, len));
    }
    out
}

/// Reopens the log on `sim` and checks every record of `flushed` is there.
fn assert_all_present(sim: &SimStorage, flushed: &[Acked]) {
    let (_wal, report) = Wal::open_with_storage(DIR, config(), storage(sim)).unwrap();
    let (records, _) = read_log(storage(sim), DIR, report.redo).unwrap();
    assert_acknowledged(&records, flushed);
}

fn segment_path(seg: u64) -> std::path::PathBuf {
    let size = SegmentSize::new(config().segment_size).unwrap();
    Path::new(DIR).join(size.file_name(1, seg))
}

#[test]
fn a_record_over_the_size_limit_is_refused_and_the_log_goes_on() {
    let sim = SimStorage::new(1);
    let wal = Wal::create_with_storage(DIR, config(), storage(&sim)).unwrap();
    let before = insert_flushed(&wal, 0, 5);
    let too_big = Record::new(USER_RMID, 0, vec![0; MAX_RECORD_SIZE]);
    let err = wal.insert(&too_big).unwrap_err();
    assert!(
        matches!(err, Error::Record(RecordError::TooLarge { len }) if len > MAX_RECORD_SIZE),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "invalid record: record of {} bytes is larger than the maximum of {MAX_RECORD_SIZE} bytes",
            too_big.encoded_len()
        )
    );
    let after = insert_flushed(&wal, 5, 5);
    drop(wal);
    assert_all_present(&sim, &[before, after].concat());
}

#[test]
fn zero_length_and_maximum_length_payloads_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        segment_size: 256 << 20,
        buffers: 16 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    let wal = Wal::create(dir.path(), config.clone()).unwrap();
    let empty = wal
        .insert_span(&Record::new(USER_RMID, 0x10, Vec::new()))
        .unwrap();
    // The largest record: main data whose encoded record is exactly the limit.
    let header = Record::new(USER_RMID, 0, vec![0; 1000]).encoded_len() - 1000;
    let mut data = vec![0u8; MAX_RECORD_SIZE - header];
    for (i, chunk) in data.chunks_mut(4096).enumerate() {
        chunk.fill(i as u8);
    }
    let max = Record::new(USER_RMID, 0x20, data);
    assert_eq!(max.encoded_len(), MAX_RECORD_SIZE);
    let big = wal.insert_span(&max).unwrap();
    wal.flush(big.end).unwrap();
    drop(wal);
    let (wal, report) = Wal::open(dir.path(), config).unwrap();
    assert_eq!(report.end, big.end);
    let mut reader = wal.reader(empty.start).unwrap();
    let first = reader.next_record().unwrap().unwrap();
    assert_eq!(first.lsn, empty.start);
    assert!(first.parse_body().unwrap().main_data.is_empty());
    let second = reader.next_record().unwrap().unwrap();
    assert_eq!(second.lsn, big.start);
    assert_eq!(second.tot_len() as usize, MAX_RECORD_SIZE);
    assert!(second.parse_body().unwrap().main_data == &max.data[..]);
}

#[test]
fn impossible_configurations_are_config_errors_naming_the_field() {
    let sim = SimStorage::new(2);
    let bad = [
        (
            Config {
                segment_size: 3 << 20,
                ..config()
            },
            ConfigError::SegmentSize(3 << 20),
        ),
        (
            Config {
                buffers: 8192,
                ..config()
            },
            ConfigError::Buffers(8192),
        ),
        (
            Config {
                insert_slots: 0,
                ..config()
            },
            ConfigError::InsertSlots(0),
        ),
    ];
    for (config, expected) in bad {
        let err = Wal::create_with_storage(DIR, config, storage(&sim)).unwrap_err();
        match err {
            Error::Config(e) => assert_eq!(e, expected),
            other => panic!("expected a config error, got {other:?}"),
        }
    }
    assert!(!sim.exists(&ControlFile::path(DIR.as_ref())).unwrap());

    // A log on disk and a configuration that contradicts it.
    let flushed = flushed_log(&sim, 10);
    let other_size = Config {
        segment_size: 2 << 20,
        ..config()
    };
    match Wal::open_with_storage(DIR, other_size, storage(&sim)).unwrap_err() {
        Error::Config(ConfigError::Mismatch {
            field,
            on_disk,
            configured,
        }) => {
            assert_eq!(field, "segment_size");
            assert_eq!(on_disk, (1u64 << 20).to_string());
            assert_eq!(configured, (2u64 << 20).to_string());
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    let control = ControlFile::read(&sim, DIR.as_ref()).unwrap();
    assert_eq!(control.format, WalFormat::Postgres15);
    assert_all_present(&sim, &flushed);
}

#[test]
fn a_corrupt_or_missing_control_file_is_a_typed_error() {
    let sim = SimStorage::new(3);
    let flushed = flushed_log(&sim, 10);
    let path = ControlFile::path(DIR.as_ref());
    let good = sim.contents(&path).unwrap();
    let mut bad = good.clone();
    bad[20] ^= 0xFF;
    sim.set_contents(&path, &bad).unwrap();
    match Wal::open_with_storage(DIR, config(), storage(&sim)).unwrap_err() {
        Error::Control(ControlFileError::Corrupt {
            problem: CorruptControlFile::BadCrc { .. },
            path: p,
        }) => assert_eq!(p, path),
        other => panic!("expected a corrupt control file, got {other:?}"),
    }
    sim.remove_file(&path).unwrap();
    let err = Wal::open_with_storage(DIR, config(), storage(&sim)).unwrap_err();
    assert!(
        matches!(&err, Error::Control(ControlFileError::Missing { path: p }) if *p == path),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("control file \"{}\" does not exist", path.display())
    );
    sim.set_contents(&path, &good).unwrap();
    assert_all_present(&sim, &flushed);
}

#[test]
fn a_segment_of_the_wrong_size_stops_recovery() {
    let sim = SimStorage::new(4);
    let flushed = flushed_log(&sim, 10);
    let path = segment_path(1);
    let good = sim.contents(&path).unwrap();
    sim.set_contents(&path, &good[..good.len() / 2]).unwrap();
    let err = Wal::open_with_storage(DIR, config(), storage(&sim)).unwrap_err();
    match &err {
        Error::Segment(SegmentError::WrongSize {
            path: p,
            len,
            expected,
        }) => {
            assert_eq!(*p, path);
            assert_eq!(*len, good.len() as u64 / 2);
            assert_eq!(*expected, good.len() as u64);
        }
        other => panic!("expected a wrong-size segment, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("has 524288 bytes, expected 1048576"),
        "{err}"
    );
    sim.set_contents(&path, &good).unwrap();
    assert_all_present(&sim, &flushed);
}

#[test]
fn a_missing_middle_segment_stops_recovery() {
    let sim = SimStorage::new(5);
    let wal = Wal::create_with_storage(DIR, config(), storage(&sim)).unwrap();
    let mut flushed = insert_flushed(&wal, 0, 10);
    wal.switch_segment().unwrap();
    flushed.extend(insert_flushed(&wal, 10, 10));
    wal.switch_segment().unwrap();
    flushed.extend(insert_flushed(&wal, 20, 10));
    drop(wal);
    let path = segment_path(2);
    let middle = sim.contents(&path).unwrap();
    sim.remove_file(&path).unwrap();
    let err = Wal::open_with_storage(DIR, config(), storage(&sim)).unwrap_err();
    assert!(
        matches!(&err, Error::Segment(SegmentError::Hole { segno: 2, later: 3, path: p }) if *p == path),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("segment 2 is missing"), "{err}");
    sim.set_contents(&path, &middle).unwrap();
    assert_all_present(&sim, &flushed);
}

/// Inserts and flushes records until one fails; returns the flushed ones
/// and the error.
fn fill_until_error(wal: &Wal) -> (Vec<Acked>, Error) {
    let mut flushed = Vec::new();
    for tag in 1000.. {
        let len = 4000;
        let step = wal
            .insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
            .and_then(|span| wal.flush(span.end).map(|_| span));
        match step {
            Ok(span) => flushed.push((span.start, tag, len)),
            Err(e) => return (flushed, e),
        }
    }
    unreachable!()
}

#[test]
fn an_unwritable_directory_fails_the_write_and_loses_nothing() {
    let sim = SimStorage::new(6);
    sim.create_dir_all(Path::new("/ro")).unwrap();
    sim.set_read_only(Path::new("/ro"), true);
    let err = Wal::create_with_storage("/ro/wal", config(), storage(&sim)).unwrap_err();
    assert!(err.to_string().contains("Permission denied"), "{err}");
    sim.set_read_only(Path::new("/ro"), false);

    let wal = Wal::create_with_storage(DIR, config(), storage(&sim)).unwrap();
    sim.set_read_only(DIR.as_ref(), true);
    let (flushed, err) = fill_until_error(&wal);
    assert!(flushed.len() > 200, "a segment's worth was written first");
    assert!(
        matches!(
            err,
            Error::Write(WriteError::Segment(_)) | Error::Write(WriteError::Poisoned)
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("Permission denied") || err.to_string().contains("poisoned"),
        "{err}"
    );
    assert!(wal.insert(&Record::new(USER_RMID, 0, vec![1])).is_err());
    drop(wal);
    sim.set_read_only(DIR.as_ref(), false);
    assert_all_present(&sim, &flushed);
}

#[test]
fn a_full_disk_fails_the_write_and_loses_nothing() {
    let sim = SimStorage::new(7);
    let wal = Wal::create_with_storage(DIR, config(), storage(&sim)).unwrap();
    let before = insert_flushed(&wal, 0, 5);
    // Room for the segments there are and half of another.
    sim.set_space_limit(Some(sim.used_bytes() + (1 << 19)));
    let (mut flushed, err) = fill_until_error(&wal);
    flushed.extend(before);
    let text = err.to_string();
    assert!(
        text.contains("No space left on device") || text.contains("poisoned"),
        "{text}"
    );
    assert!(sim.stats().no_space > 0);
    drop(wal);
    sim.set_space_limit(None);
    assert_all_present(&sim, &flushed);
}

/// `DirectIoUnsupported` naming the log's directory, as `err` must be.
fn assert_direct_io_refused(err: &Error) {
    let refused = match err {
        Error::Segment(e) | Error::Write(WriteError::Segment(e)) => e,
        other => panic!("expected DirectIoUnsupported: {other:?}"),
    };
    assert!(
        matches!(refused, SegmentError::DirectIoUnsupported { dir, .. } if dir == Path::new(DIR)),
        "{refused:?}"
    );
    assert!(
        err.to_string().starts_with(
            "direct I/O (O_DIRECT) is not supported by the file system holding \"/wal\""
        ),
        "{err}"
    );
}

/// Direct I/O where the file system refuses `O_DIRECT`: `create` and
/// `open` fail with `DirectIoUnsupported` before writing anything, the
/// same log works without direct I/O, and a segment the writer cannot
/// open with `O_DIRECT` later fails the flush with the same error, losing
/// nothing flushed before.
#[test]
fn direct_io_where_the_file_system_refuses_it_is_a_typed_error() {
    let sim = SimStorage::new(8);
    let direct = Config {
        direct_io: true,
        ..config()
    };
    sim.set_no_direct_io(true);
    let err = Wal::create_with_storage(DIR, direct.clone(), storage(&sim)).unwrap_err();
    assert_direct_io_refused(&err);
    assert!(!sim.exists(&ControlFile::path(DIR.as_ref())).unwrap());

    let flushed = flushed_log(&sim, 20);
    let err = Wal::open_with_storage(DIR, direct.clone(), storage(&sim)).unwrap_err();
    assert_direct_io_refused(&err);

    sim.set_no_direct_io(false);
    let (wal, _) = Wal::open_with_storage(DIR, direct, storage(&sim)).unwrap();
    sim.set_no_direct_io(true);
    let end = wal
        .insert(&Record::new(USER_RMID, 0, payload(99, 100)))
        .unwrap();
    assert_direct_io_refused(&wal.flush(end).unwrap_err());
    drop(wal);
    sim.set_no_direct_io(false);
    assert_all_present(&sim, &flushed);
}
