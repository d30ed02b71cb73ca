//! The file-system interface every file operation of the engine goes through.
//!
//! [`Storage`] and [`StorageFile`] are deliberately small and object-safe so
//! that the engine holds an `Arc<dyn Storage>` and tests can swap in an
//! implementation that injects faults: lost or torn unsynced writes, directory
//! entries forgotten without a directory sync, failed syncs, short writes,
//! `ENOSPC`, failed reads. [`FsStorage`](super::FsStorage) is the real one.
//!
//! Durability contract, the one a fault-injecting implementation models:
//! data written through [`StorageFile::write_at`] is durable only after
//! [`StorageFile::sync_data`] or [`StorageFile::sync_all`] returned `Ok`
//! (or at once for a file opened with [`FileSyncMode::Dsync`] or
//! [`FileSyncMode::Sync`]); a created, renamed or removed directory entry is
//! durable only after [`Storage::sync_dir`] on its directory returned `Ok`.

use std::fmt;
use std::io;
use std::path::Path;

/// How writes to an opened file reach stable storage.
///
/// PostgreSQL: the `open_datasync` and `open_sync` values of `wal_sync_method`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FileSyncMode {
    /// Writes stay in the page cache until an explicit sync.
    #[default]
    None,
    /// Every write returns once its data is durable (`O_DSYNC`).
    Dsync,
    /// Every write returns once its data and all metadata are durable (`O_SYNC`).
    Sync,
}

/// How to open a file; the subset of `open(2)` flags the engine uses.
///
/// Built with chained setters, as [`std::fs::OpenOptions`]:
///
/// ```
/// use walden::{FileSyncMode, OpenOptions};
/// let opts = OpenOptions::new().write(true).sync(FileSyncMode::Dsync);
/// assert!(opts.write && !opts.create);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Create the file if it does not exist.
    pub create: bool,
    /// Create the file, failing with [`io::ErrorKind::AlreadyExists`] if it exists.
    pub create_new: bool,
    /// Truncate the file to length 0 on opening (needs `write`).
    pub truncate: bool,
    /// How writes reach stable storage.
    pub sync: FileSyncMode,
    /// Direct I/O (`O_DIRECT`): reads and writes bypass the page cache, and
    /// their offsets, lengths and memory addresses must be multiples of
    /// [`DIRECT_IO_ALIGNMENT`](super::DIRECT_IO_ALIGNMENT). Durability is
    /// unchanged: a write is durable only after a sync, unless `sync` says
    /// otherwise (`O_DIRECT | O_DSYNC`). A file system that refuses it fails
    /// the open with `EINVAL`.
    pub direct: bool,
}

impl OpenOptions {
    /// All flags off, [`FileSyncMode::None`].
    pub const fn new() -> Self {
        OpenOptions {
            read: false,
            write: false,
            create: false,
            create_new: false,
            truncate: false,
            sync: FileSyncMode::None,
            direct: false,
        }
    }

    /// Sets [`OpenOptions::read`].
    pub const fn read(mut self, on: bool) -> Self {
        self.read = on;
        self
    }

    /// Sets [`OpenOptions::write`].
    pub const fn write(mut self, on: bool) -> Self {
        self.write = on;
        self
    }

    /// Sets [`OpenOptions::create`].
    pub const fn create(mut self, on: bool) -> Self {
        self.create = on;
        self
    }

    /// Sets [`OpenOptions::create_new`].
    pub const fn create_new(mut self, on: bool) -> Self {
        self.create_new = on;
        self
    }

    /// Sets [`OpenOptions::truncate`].
    pub const fn truncate(mut self, on: bool) -> Self {
        self.truncate = on;
        self
    }

    /// Sets [`OpenOptions::sync`].
    pub const fn sync(mut self, mode: FileSyncMode) -> Self {
        self.sync = mode;
        self
    }

    /// Sets [`OpenOptions::direct`].
    pub const fn direct(mut self, on: bool) -> Self {
        self.direct = on;
        self
    }
}

/// A file system: the directory-level operations of the engine.
///
/// Object-safe and shareable: the engine holds it as `Arc<dyn Storage>`.
/// Errors are plain [`io::Error`]s; callers add the path and operation.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Opens the file at `path` as `opts` say.
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>>;

    /// Renames `from` to `to`, atomically replacing `to` if it exists
    /// (`rename(2)`). Durable only after [`Storage::sync_dir`].
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file at `path`. Durable only after [`Storage::sync_dir`].
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// The names (not paths) of the entries of `dir`, in no particular order.
    /// Names that are not valid UTF-8 are left out: no engine file has one.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Makes the entries of `dir` (creations, renames, removals) durable
    /// (`fsync(2)` on the directory; PostgreSQL: `fsync_fname(dir, true)`).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Creates `dir` and any missing parents; `Ok` if it already exists.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Removes the empty directory `dir` (`rmdir(2)`); an error if it is
    /// not empty. Durable only after [`Storage::sync_dir`] of its parent.
    /// A failed [`crate::Wal::create`] calls it to remove the directories
    /// it made. The default refuses ([`io::ErrorKind::Unsupported`]): such
    /// a storage keeps them, empty.
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let _ = dir;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Whether anything exists at `path`; an error if that cannot be told.
    fn exists(&self, path: &Path) -> io::Result<bool>;

    /// Takes the exclusive lock named by the file at `path` (created if
    /// missing) without waiting, and records `holder` as its holder
    /// (`flock(2)` with `LOCK_EX | LOCK_NB`). The lock is held until the
    /// returned guard is dropped, or the process ends; a second attempt,
    /// from this process or another, gets [`LockOutcome::Held`] meanwhile.
    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome>;
}

/// What [`Storage::try_lock`] found.
#[derive(Debug)]
pub enum LockOutcome {
    /// The lock is ours until the guard is dropped.
    Acquired(Box<dyn StorageLock>),
    /// Someone else holds it; what its holder recorded (empty if unknown).
    Held(String),
}

/// A lock taken by [`Storage::try_lock`]; dropping it releases the lock.
pub trait StorageLock: Send + Sync + fmt::Debug {}

/// An open file, read and written at explicit offsets.
///
/// All methods take `&self`, so one handle may serve several threads
/// (`pread(2)`/`pwrite(2)` semantics: no shared cursor).
pub trait StorageFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read,
    /// 0 at or past the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes up to `buf.len()` bytes at `offset`; returns how many were
    /// written, which may be fewer (a short write).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `offset`, looping on short writes and retrying
    /// on [`io::ErrorKind::Interrupted`]. A write that makes no progress is
    /// an [`io::ErrorKind::WriteZero`] error.
    fn write_all_at(&self, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_at(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("write at offset {offset} made no progress"),
                    ))
                }
                Ok(n) => {
                    buf = buf.get(n..).unwrap_or_default();
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes the parts of `bufs` back to back from `offset`, in one
    /// vectored write (`pwritev(2)`) where the storage has one. The default
    /// writes the parts in turn with [`StorageFile::write_all_at`]; a crash
    /// during a vectored write may leave any prefix of it, as with these
    /// writes, so fault-injecting storage models it with the default.
    fn write_all_vectored_at(&self, bufs: &[&[u8]], mut offset: u64) -> io::Result<()> {
        for buf in bufs {
            self.write_all_at(buf, offset)?;
            offset += buf.len() as u64;
        }
        Ok(())
    }

    /// Fills all of `buf` from `offset`, looping on short reads and retrying
    /// on [`io::ErrorKind::Interrupted`]. Reaching the end of the file first
    /// is an [`io::ErrorKind::UnexpectedEof`] error.
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("end of file at offset {offset}"),
                    ))
                }
                Ok(n) => {
                    buf = std::mem::take(&mut buf).get_mut(n..).unwrap_or_default();
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes the written data durable, with the metadata needed to read it
    /// back such as the length (`fdatasync(2)`). An error means the written
    /// data may be lost even if a later sync succeeds.
    fn sync_data(&self) -> io::Result<()>;

    /// Makes the written data and all metadata durable (`fsync(2)`).
    /// An error means as for [`StorageFile::sync_data`].
    fn sync_all(&self) -> io::Result<()>;

    /// The current length of the file in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Truncates or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Allocates disk space for the file's first `len` bytes without
    /// writing them (`fallocate(2)`, mode 0), extending it to at least `len`
    /// bytes; the new bytes read as zeros. Like a length change, durable
    /// only after [`StorageFile::sync_all`] or [`StorageFile::sync_data`].
    ///
    /// A storage that cannot allocate fails with
    /// [`io::ErrorKind::Unsupported`], as this default does.
    fn allocate(&self, len: u64) -> io::Result<()> {
        let _ = len;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this storage cannot allocate space without writing (no fallocate)",
        ))
    }

    /// A hint: starts writing the `len` bytes written at `offset` back to
    /// the device without waiting for it (`sync_file_range(2)` with
    /// `SYNC_FILE_RANGE_WRITE`; PostgreSQL: `pg_flush_data`), so that a
    /// later sync finds less to do. It makes nothing durable: only
    /// [`StorageFile::sync_data`] and [`StorageFile::sync_all`] do. The
    /// default does nothing, for a storage without write-back.
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An in-memory file whose writes and reads move at most `step` bytes,
    /// interrupted every other call.
    #[derive(Debug)]
    struct Trickle {
        data: Mutex<Vec<u8>>,
        step: usize,
        calls: Mutex<u32>,
    }

    impl Trickle {
        fn interrupted(&self) -> bool {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            (*calls).is_multiple_of(2)
        }
    }

    impl StorageFile for Trickle {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            if self.interrupted() {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let data = self.data.lock().unwrap();
            let start = (offset as usize).min(data.len());
            let n = buf.len().min(self.step).min(data.len() - start);
            buf[..n].copy_from_slice(&data[start..start + n]);
            Ok(n)
        }

        fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
            if self.interrupted() {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut data = self.data.lock().unwrap();
            let n = buf.len().min(self.step);
            let end = offset as usize + n;
            if data.len() < end {
                data.resize(end, 0);
            }
            data[offset as usize..end].copy_from_slice(&buf[..n]);
            Ok(n)
        }

        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }

        fn sync_all(&self) -> io::Result<()> {
            Ok(())
        }

        fn len(&self) -> io::Result<u64> {
            Ok(self.data.lock().unwrap().len() as u64)
        }

        fn set_len(&self, len: u64) -> io::Result<()> {
            self.data.lock().unwrap().resize(len as usize, 0);
            Ok(())
        }
    }

    fn trickle(step: usize) -> Trickle {
        Trickle {
            data: Mutex::new(Vec::new()),
            step,
            calls: Mutex::new(0),
        }
    }

    #[test]
    fn provided_methods_loop_over_short_and_interrupted_calls() {
        let f = trickle(3);
        let payload: Vec<u8> = (0..100u8).collect();
        f.write_all_at(&payload, 5).unwrap();
        assert_eq!(f.len().unwrap(), 105);
        let mut back = vec![0u8; 100];
        f.read_exact_at(&mut back, 5).unwrap();
        assert_eq!(back, payload);
    }

    #[test]
    fn read_exact_past_end_is_unexpected_eof() {
        let f = trickle(4);
        f.write_all_at(&[1; 10], 0).unwrap();
        let mut buf = [0u8; 8];
        let err = f.read_exact_at(&mut buf, 6).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_storage_without_allocate_refuses_it() {
        let err = trickle(4).allocate(10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
    }

    #[test]
    fn write_without_progress_is_write_zero() {
        let f = trickle(0);
        let err = f.write_all_at(&[1; 10], 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WriteZero);
        assert!(f.is_empty().unwrap());
    }
}
