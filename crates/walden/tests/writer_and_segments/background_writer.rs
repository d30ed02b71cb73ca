//! The background writer makes inserted WAL durable on its own, and
//! asynchronous commit relies on it.

use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use walden::{
    Config, ConfigError, FsStorage, LockOutcome, Lsn, OpenOptions, Record, Storage, StorageFile,
    SyncMethod, Wal,
};

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
    let storage = Arc::new(GatedStorage(gate.clone()));
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

/// Holds every `fdatasync` while closed.
#[derive(Debug, Default)]
struct SyncGate {
    closed: Mutex<bool>,
    changed: Condvar,
}

impl SyncGate {
    fn close(&self) {
        *self.closed.lock().unwrap() = true;
    }

    fn open(&self) {
        *self.closed.lock().unwrap() = false;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock().unwrap();
        while *closed {
            closed = self.changed.wait(closed).unwrap();
        }
    }
}

/// The real file system, with `sync_data` held at a [`SyncGate`].
#[derive(Debug)]
struct GatedStorage(Arc<SyncGate>);

#[derive(Debug)]
struct GatedFile(Box<dyn StorageFile>, Arc<SyncGate>);

impl Storage for GatedStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(GatedFile(
            FsStorage.open(path, opts)?,
            self.0.clone(),
        )))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        FsStorage.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        FsStorage.remove_file(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        FsStorage.list_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        FsStorage.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        FsStorage.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        FsStorage.exists(path)
    }
    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        FsStorage.try_lock(path, holder)
    }
}

impl StorageFile for GatedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.1.pass();
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}
