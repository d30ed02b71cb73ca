//! The background writer makes inserted WAL durable on its own, and
//! asynchronous commit relies on it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use walden::{Config, ConfigError, Lsn, Record, SyncMethod, Wal};

use crate::support::gate::{GatedStorage, SyncGate};
use crate::support::hooked_fs::HookedFs;

/// How long a test waits for the writer before failing.
const PATIENCE: Duration = Duration::from_secs(60);

fn config(async_commit: bool) -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        writer_delay: Some(Duration::from_millis(2)),
        async_commit,
        ..Config::default()
    }
}

/// Waits until everything below `end` is durable; fails after [`PATIENCE`].
fn wait_durable(wal: &Wal, end: Lsn) {
    let started = Instant::now();
    while wal.flushed() < end {
        assert!(
            started.elapsed() < PATIENCE,
            "{end} not durable after {PATIENCE:?}: flushed up to {}",
            wal.flushed()
        );
        std::thread::yield_now();
    }
}

#[test]
fn inserts_become_durable_without_a_flush_call() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config(false)).unwrap();
    let mut end = Lsn::INVALID;
    for i in 0..50u32 {
        end = wal
            .insert(&Record::new(128, 0, i.to_le_bytes().to_vec()))
            .unwrap();
    }
    wait_durable(&wal, end);
    // A flush caller now finds its work done: it does not need the writer.
    let before = wal.stats().writer.flush_requests;
    assert!(wal.flush(end).unwrap() >= end);
    assert_eq!(wal.stats().writer.flush_requests, before);
    wal.close().unwrap();
}

#[test]
fn async_commit_returns_before_durable_then_the_writer_makes_it_durable() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(SyncGate::default());
    let storage = Arc::new(HookedFs(GatedStorage(gate.clone())));
    let wal = Wal::create_with_storage(dir.path(), config(true), storage).unwrap();
    gate.close();
    let end = wal
        .insert_and_flush(&Record::new(128, 0, b"commit".to_vec()))
        .unwrap();
    // Every fdatasync is held at the gate, so nothing new can be durable.
    assert!(wal.flushed() < end, "insert_and_flush waited for a sync");
    gate.open();
    wait_durable(&wal, end);
    wal.close().unwrap();
}

#[test]
fn a_synchronous_commit_writes_its_record_itself() {
    let dir = tempfile::tempdir().unwrap();
    // The least `writer_flush_after` and a delay longer than the test: only
    // an inserter's wake-up could start a round of the background writer.
    let config = Config {
        writer_delay: Some(Duration::from_secs(10)),
        writer_flush_after: 8 << 10,
        sync_method: SyncMethod::None,
        ..config(false)
    };
    let wal = Wal::create(dir.path(), config).unwrap();
    let before = wal.stats().writer;
    let (records, bytes) = (20, 64 << 10);
    for _ in 0..records {
        wal.insert_and_flush(&Record::new(128, 0, vec![7; bytes]))
            .unwrap();
    }
    let after = wal.stats().writer;
    assert_eq!(
        after.bytes_by_background_writer, before.bytes_by_background_writer,
        "{after:?}"
    );
    let flushed = after.bytes_by_flushes - before.bytes_by_flushes;
    assert!(flushed >= (records * bytes) as u64, "{after:?}");
    // A plain insert still wakes it.
    let end = wal.insert(&Record::new(128, 0, vec![7; bytes])).unwrap();
    wait_durable(&wal, end);
    assert!(wal.stats().writer.bytes_by_background_writer > after.bytes_by_background_writer);
    wal.close().unwrap();
}

#[test]
fn writer_settings_are_checked() {
    let bad = |c: Config| c.validate().unwrap_err();
    assert_eq!(
        bad(Config {
            writer_delay: Some(Duration::ZERO),
            ..Config::default()
        }),
        ConfigError::WriterDelay(Duration::ZERO)
    );
    assert_eq!(
        bad(Config {
            writer_delay: None,
            async_commit: true,
            ..Config::default()
        })
        .to_string(),
        "async_commit = true needs the background writer: writer_delay must not be None"
    );
    assert_eq!(
        bad(Config {
            writer_flush_after: 100,
            ..Config::default()
        }),
        ConfigError::WriterFlushAfter(100)
    );
    assert_eq!(
        bad(Config {
            eviction_chunk: 12_000,
            ..Config::default()
        })
        .to_string(),
        "eviction_chunk = 12000: must be a positive multiple of 8192"
    );
}
