//! [`DelayStorage`]: a [`Storage`] on which every durable operation takes a
//! fixed time, so that a benchmark's result does not depend on the disk.
//!
//! Seed 002's drive took about 1 ms per durable 8 kB write. Here a file
//! opened with `O_DSYNC`/`O_SYNC` ([`FileSyncMode::Dsync`]/`Sync`) is opened
//! without the flag underneath, and each write to it, like each
//! `sync_data`, `sync_all` and `sync_dir`, sleeps for the delay instead of
//! reaching stable storage. Nothing is made durable: this is for
//! measurement only.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use walden::{FileSyncMode, LockOutcome, OpenOptions, Storage, StorageFile};

/// See the module docs.
pub struct DelayStorage {
    inner: Arc<dyn Storage>,
    delay: Duration,
    durable_ops: Arc<AtomicU64>,
}

impl DelayStorage {
    /// `inner` with `delay` per durable operation.
    pub fn new(inner: Arc<dyn Storage>, delay: Duration) -> Self {
        DelayStorage {
            inner,
            delay,
            durable_ops: Arc::default(),
        }
    }

    /// Durable operations (writes to sync-mode files, syncs) so far.
    pub fn durable_ops(&self) -> u64 {
        // Relaxed: a counter read after the work is done.
        self.durable_ops.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for DelayStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayStorage")
            .field("inner", &self.inner)
            .field("delay", &self.delay)
            .finish()
    }
}

/// Sleeps for one durable operation and counts it.
fn durable_op(delay: Duration, count: &AtomicU64) {
    // Relaxed: a counter.
    count.fetch_add(1, Ordering::Relaxed);
    std::thread::sleep(delay);
}

impl Storage for DelayStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        let file = self.inner.open(path, &opts.sync(FileSyncMode::None))?;
        Ok(Box::new(DelayFile {
            inner: file,
            delay: self.delay,
            durable_writes: opts.sync != FileSyncMode::None,
            durable_ops: self.durable_ops.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        durable_op(self.delay, &self.durable_ops);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }

    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        self.inner.try_lock(path, holder)
    }
}

/// A file of a [`DelayStorage`].
struct DelayFile {
    inner: Box<dyn StorageFile>,
    delay: Duration,
    /// Opened with a sync mode: every write is a durable operation.
    durable_writes: bool,
    durable_ops: Arc<AtomicU64>,
}

impl fmt::Debug for DelayFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayFile")
            .field("inner", &self.inner)
            .field("durable_writes", &self.durable_writes)
            .finish()
    }
}

impl StorageFile for DelayFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.write_at(buf, offset)?;
        if self.durable_writes {
            durable_op(self.delay, &self.durable_ops);
        }
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        durable_op(self.delay, &self.durable_ops);
        Ok(())
    }

    fn sync_all(&self) -> io::Result<()> {
        durable_op(self.delay, &self.durable_ops);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use walden::FsStorage;

    #[test]
    fn durable_writes_and_syncs_take_the_delay_plain_writes_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let delay = Duration::from_millis(20);
        let s = DelayStorage::new(Arc::new(FsStorage), delay);
        let opts = OpenOptions::new().read(true).write(true).create(true);
        let plain = s.open(&dir.path().join("plain"), &opts).unwrap();
        let dsync = s
            .open(&dir.path().join("dsync"), &opts.sync(FileSyncMode::Dsync))
            .unwrap();
        plain.write_all_at(&[1; 100], 0).unwrap();
        assert_eq!(s.durable_ops(), 0);
        let started = Instant::now();
        for i in 0..3 {
            dsync.write_all_at(&[2; 100], i * 100).unwrap();
        }
        dsync.sync_data().unwrap();
        assert!(started.elapsed() >= 4 * delay);
        assert_eq!(s.durable_ops(), 4);
        // The bytes went through to the file underneath.
        let mut back = [0u8; 300];
        dsync.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, [2; 300]);
    }

    #[test]
    fn directories_are_removed_through_it() {
        // A failed `Wal::create` removes the directories it made through
        // `remove_dir`; the trait's default refuses and would leave them.
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("wal");
        let s = DelayStorage::new(Arc::new(FsStorage), Duration::from_millis(1));
        s.create_dir_all(&made).unwrap();
        s.remove_dir(&made).unwrap();
        assert!(!made.exists());
    }
}
