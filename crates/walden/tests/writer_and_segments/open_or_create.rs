//! `Wal::open_or_create`, and open adopting the log's format and segment
//! size when the configuration leaves them unset (and refusing values set
//! that differ, the default included when set through the builder).

use walden::{
    AdoptDefaults, Config, ConfigError, Error, Record, ReservationKind, SyncMethod, Wal, WalFormat,
};

fn self_lsn_1mib() -> Config {
    Config {
        format: WalFormat::SelfLsn,
        reservation: ReservationKind::Unlinked,
        segment_size: 1 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    }
}

#[test]
fn open_adopts_a_default_format_and_segment_size_and_refuses_other_values() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), self_lsn_1mib()).unwrap();
    wal.append(b"kept").unwrap();
    wal.close().unwrap();

    let (wal, report) = Wal::open(dir.path(), Config::default()).unwrap();
    assert!(report.clean_shutdown);
    assert_eq!(wal.config().format, WalFormat::SelfLsn);
    assert_eq!(wal.config().segment_size, 1 << 20);
    assert_eq!(wal.config().reservation, ReservationKind::Unlinked);
    let kept = wal
        .reader(report.redo)
        .unwrap()
        .map(Result::unwrap)
        .filter(|r| r.header.rmid == walden::DEFAULT_RMID)
        .count();
    assert_eq!(kept, 1);
    wal.close().unwrap();

    let two_mib = Config {
        segment_size: 2 << 20,
        ..Config::default()
    };
    match Wal::open(dir.path(), two_mib).unwrap_err() {
        Error::Config(ConfigError::Mismatch { field, .. }) => assert_eq!(field, "segment_size"),
        other => panic!("expected a mismatch, got {other:?}"),
    }
    let compact = Config {
        format: WalFormat::CompactWalId,
        reservation: ReservationKind::Unlinked,
        ..Config::default()
    };
    match Wal::open(dir.path(), compact).unwrap_err() {
        Error::Config(ConfigError::Mismatch { field, .. }) => assert_eq!(field, "format"),
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn open_or_create_creates_then_opens_and_refuses_a_directory_of_strays() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, report) = Wal::open_or_create(dir.path(), self_lsn_1mib()).unwrap();
    assert!(report.is_none(), "created");
    let end = wal.insert(&Record::bytes(&b"first"[..])).unwrap();
    wal.flush(end).unwrap();
    drop(wal);
    let (wal, report) = Wal::open_or_create(dir.path(), Config::default()).unwrap();
    let report = report.expect("opened");
    assert!(!report.clean_shutdown, "dropped without close: recovered");
    assert!(report.end >= end);
    assert_eq!(wal.config().format, WalFormat::SelfLsn);
    drop(wal);

    // Segment files without a control file: not a log to open, and not an
    // empty directory to create one in.
    let strays = tempfile::tempdir().unwrap();
    std::fs::write(
        strays.path().join("000000010000000000000001"),
        vec![0u8; 1 << 20],
    )
    .unwrap();
    match Wal::open_or_create(strays.path(), self_lsn_1mib()) {
        Err(Error::AlreadyExists(path)) => assert_eq!(path, strays.path()),
        other => panic!("expected AlreadyExists, got {:?}", other.map(|_| ())),
    }
}

/// A format or segment size set through the builder (or marked so in a
/// struct literal's `adopt_defaults`) is the caller's choice even when it is
/// the default: open refuses it if the log differs, rather than adopting the
/// log's silently. Fields the builder did not set are still adopted.
#[test]
fn open_refuses_a_default_value_set_explicitly_through_the_builder() {
    let dir = tempfile::tempdir().unwrap();
    Wal::create(dir.path(), self_lsn_1mib())
        .unwrap()
        .close()
        .unwrap();
    let default = Config::default();
    let sixteen_mib = Config::builder()
        .segment_size(default.segment_size)
        .build()
        .unwrap();
    assert_eq!(
        mismatch(Wal::open(dir.path(), sixteen_mib).map(drop)),
        (
            "segment_size",
            (1u64 << 20).to_string(),
            default.segment_size.to_string()
        )
    );
    let postgres15 = Config::builder().format(default.format).build().unwrap();
    let found = mismatch(Wal::open(dir.path(), postgres15).map(drop));
    assert_eq!(found.0, "format");
    // A struct literal says so with the flags.
    let literal = Config {
        adopt_defaults: AdoptDefaults::NONE,
        ..Config::default()
    };
    let found = mismatch(Wal::open(dir.path(), literal).map(drop));
    assert_eq!(found.0, "segment_size");
    let unset = Config::builder()
        .sync_method(SyncMethod::None)
        .build()
        .unwrap();
    let (wal, _) = Wal::open(dir.path(), unset).unwrap();
    assert_eq!(wal.config().segment_size, 1 << 20);
    assert_eq!(wal.config().format, WalFormat::SelfLsn);
    wal.close().unwrap();
}

/// The field, on-disk value and configured value of the
/// `ConfigError::Mismatch` that `result` must be.
fn mismatch(result: Result<(), Error>) -> (&'static str, String, String) {
    match result {
        Err(Error::Config(ConfigError::Mismatch {
            field,
            on_disk,
            configured,
        })) => (field, on_disk, configured),
        other => panic!("expected a mismatch, got {other:?}"),
    }
}
