//! [`FsStorage`]: the real [`Storage`], over `std::fs`.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::storage::{FileSyncMode, LockOutcome, OpenOptions, Storage, StorageFile, StorageLock};

/// Parts one `pwritev(2)` takes at most: Linux's `IOV_MAX`. A
/// write-through of up to 128 pages is 256 parts or a few more (a header
/// and the caller's bytes per page, the ring's pages below and above), so
/// one call; the `iovec` array stays on the stack (16 KiB).
pub(crate) const IOV_CHUNK: usize = 1024;

/// The operating system's file system, with positional I/O (`pread(2)`,
/// `pwrite(2)`), `O_DSYNC`/`O_SYNC` from [`FileSyncMode`] and `O_DIRECT`
/// from [`OpenOptions::direct`].
#[derive(Clone, Copy, Debug, Default)]
pub struct FsStorage;

impl FsStorage {
    /// The real file system.
    pub const fn new() -> Self {
        FsStorage
    }
}

/// The `open(2)` flag for a sync mode.
fn sync_flag(mode: FileSyncMode) -> libc::c_int {
    match mode {
        FileSyncMode::None => 0,
        FileSyncMode::Dsync => libc::O_DSYNC,
        FileSyncMode::Sync => libc::O_SYNC,
    }
}

/// Opens `path` with the `open(2)` flags `opts` stand for. A file system
/// that refuses `O_DIRECT` fails with `EINVAL`, as the kernel says.
fn open_file(path: &Path, opts: &OpenOptions) -> io::Result<fs::File> {
    let direct = if opts.direct { libc::O_DIRECT } else { 0 };
    fs::OpenOptions::new()
        .read(opts.read)
        .write(opts.write)
        .create(opts.create)
        .create_new(opts.create_new)
        .truncate(opts.truncate)
        .custom_flags(sync_flag(opts.sync) | direct)
        .open(path)
}

impl Storage for FsStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(FsFile {
            file: open_file(path, opts)?,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        fs::File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    /// `flock(2)` on the file: the lock belongs to the open file
    /// description, so the kernel releases it when the process ends, however
    /// it ends, and reading the file meanwhile (from anywhere) releases
    /// nothing. A registry of the locks this process holds tells a second
    /// opening in this process from a child process forked by another
    /// thread while the lock file was open, which holds the description too
    /// until its `exec` closes it: a lock that records this process as its
    /// holder, though the registry has none, is waited for (five seconds
    /// at most).
    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        let key = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => fs::canonicalize(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            })?
            .join(name),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a file path",
                ))
            }
        };
        let mut held = held_locks();
        if let Some(ours) = held.get(&key) {
            return Ok(LockOutcome::Held(ours.clone()));
        }
        let deadline = Instant::now() + FORK_HOLD_WAIT;
        let file = loop {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&key)?;
            // SAFETY: flock only reads its integer arguments and acts on
            // a descriptor `file` keeps open.
            while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(error);
                }
                // The holder may be writing its name right now: empty then.
                let recorded = recorded_holder(&file)?;
                if recorded != holder || Instant::now() >= deadline {
                    return Ok(LockOutcome::Held(recorded));
                }
                std::thread::sleep(FORK_HOLD_POLL);
            }
            // A holder removes the file before it lets go (a failed
            // `Wal::create`): a lock on the removed file locks nothing
            // another taker can see, so take the file now at the path.
            if still_named(&file, &key)? {
                break file;
            }
        };
        file.set_len(0)?;
        file.write_all_at(holder.as_bytes(), 0)?;
        held.insert(key.clone(), holder.to_owned());
        Ok(LockOutcome::Acquired(Box::new(FsLock {
            file: Some(file),
            key,
        })))
    }
}

/// True if `path` still names the open `file` (the same inode), false if
/// it names another file or none.
fn still_named(file: &fs::File, path: &Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match fs::metadata(path) {
        Ok(named) => Ok(named.dev() == held.dev() && named.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The holder a lock file records (at most its first 256 bytes).
fn recorded_holder(file: &fs::File) -> io::Result<String> {
    let mut buf = [0u8; 256];
    let n = file.read_at(&mut buf, 0)?;
    Ok(String::from_utf8_lossy(&buf[..n]).trim().to_owned())
}

/// How long [`FsStorage::try_lock`] waits for a lock held only by a child
/// process between its `fork` and its `exec`.
const FORK_HOLD_WAIT: Duration = Duration::from_secs(5);
/// How often it looks again meanwhile.
const FORK_HOLD_POLL: Duration = Duration::from_millis(1);

/// The locks this process holds through [`FsStorage::try_lock`], by the
/// lock file's canonical path, with their holders.
fn held_locks() -> MutexGuard<'static, HashMap<PathBuf, String>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    HELD.get_or_init(Mutex::default)
        .lock()
        // Every update is one insert or remove: never half done.
        .unwrap_or_else(|e| e.into_inner())
}

/// A lock of [`FsStorage`]: dropping it leaves the registry, then closing
/// the file releases the lock.
#[derive(Debug)]
struct FsLock {
    /// Always `Some` until dropped.
    file: Option<fs::File>,
    key: PathBuf,
}

impl Drop for FsLock {
    fn drop(&mut self) {
        let mut held = held_locks();
        // Closed before the registry lets another opening in this process
        // try, so that it finds the lock free.
        drop(self.file.take());
        held.remove(&self.key);
    }
}

impl StorageLock for FsLock {}

/// A file of [`FsStorage`].
#[derive(Debug)]
struct FsFile {
    file: fs::File,
}

impl StorageFile for FsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.file.write_at(buf, offset)
    }

    /// `pwritev(2)` calls of up to [`IOV_CHUNK`] parts each (looping on
    /// short writes): one call for the ring's one or two parts, a few for
    /// a write-through of a large record's pages (a header and the
    /// caller's bytes per page).
    fn write_all_vectored_at(&self, bufs: &[&[u8]], mut offset: u64) -> io::Result<()> {
        // The next byte to write: part `first`, `skip` bytes into it.
        let (mut first, mut skip) = (0, 0);
        let empty = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        let mut iov = [empty; IOV_CHUNK];
        loop {
            while bufs.get(first).is_some_and(|p| p.len() == skip) {
                (first, skip) = (first + 1, 0);
            }
            if first == bufs.len() {
                return Ok(());
            }
            let parts = &bufs[first..bufs.len().min(first + IOV_CHUNK)];
            for (slot, part) in iov.iter_mut().zip(parts) {
                *slot = libc::iovec {
                    iov_base: part.as_ptr() as *mut libc::c_void,
                    iov_len: part.len(),
                };
            }
            iov[0] = libc::iovec {
                // SAFETY: `skip` < the first part's length (loop above).
                iov_base: unsafe { parts[0].as_ptr().add(skip) } as *mut libc::c_void,
                iov_len: parts[0].len() - skip,
            };
            let at = libc::off_t::try_from(offset)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"))?;
            // SAFETY: `iov[..parts.len()]` describes slices borrowed for the
            // duration of the call (at most IOV_CHUNK <= IOV_MAX of them);
            // pwritev only reads them, and the descriptor is kept open by
            // `self.file`.
            let n = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iov.as_ptr(),
                    parts.len() as libc::c_int,
                    at,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("write at offset {offset} made no progress"),
                ));
            }
            let mut done = n as usize;
            offset += done as u64;
            while done > 0 {
                let take = done.min(bufs[first].len() - skip);
                skip += take;
                done -= take;
                if skip == bufs[first].len() {
                    (first, skip) = (first + 1, 0);
                }
            }
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length beyond off_t"))?;
        // SAFETY: fallocate only reads its integer arguments and acts on a
        // descriptor `self.file` keeps open.
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the file system does not support fallocate: {error}"),
            )),
            _ => Err(error),
        }
    }

    /// `sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE` alone: it starts
    /// the write-back and waits for none, so it neither reports nor
    /// consumes a write-back error (the file's error sequence advances only
    /// in the waits, which the next `fdatasync` does). A kernel or file
    /// system without it (`ENOSYS`, `EOPNOTSUPP`) leaves the hint unused.
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let range = |v: u64| {
            libc::off64_t::try_from(v)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "range beyond off64_t"))
        };
        let (offset, len) = (range(offset)?, range(len)?);
        loop {
            // SAFETY: sync_file_range only reads its integer arguments and
            // acts on a descriptor `self.file` keeps open.
            let rc = unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    offset,
                    len,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => return Ok(()),
                _ => return Err(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file status flags of an open file (`fcntl(F_GETFL)`).
    fn status_flags(file: &fs::File) -> libc::c_int {
        // SAFETY: F_GETFL only reads the flags of a descriptor `file` keeps open.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert!(flags >= 0, "fcntl: {}", io::Error::last_os_error());
        flags
    }

    /// The check `try_lock` makes once locked tells a lock file its holder
    /// removed (or one made at the path since) from the file the path
    /// names; a taker after a holder that removed the file locks, and
    /// writes its name into, a file at the path.
    #[test]
    fn a_removed_or_replaced_lock_file_is_told_from_the_one_at_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walden.lock");
        let old = fs::File::create(&path).unwrap();
        assert!(still_named(&old, &path).unwrap());
        fs::remove_file(&path).unwrap();
        assert!(!still_named(&old, &path).unwrap(), "removed");
        fs::write(&path, b"").unwrap();
        assert!(!still_named(&old, &path).unwrap(), "another file");

        let LockOutcome::Acquired(guard) = FsStorage.try_lock(&path, "1").unwrap() else {
            panic!("free")
        };
        fs::remove_file(&path).unwrap();
        drop(guard);
        let LockOutcome::Acquired(_guard) = FsStorage.try_lock(&path, "2").unwrap() else {
            panic!("free again")
        };
        assert_eq!(fs::read_to_string(&path).unwrap(), "2", "at the path");
    }

    #[test]
    fn sync_modes_set_the_open_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let create = OpenOptions::new().write(true).create(true);
        let plain = open_file(&path, &create).unwrap();
        assert_eq!(status_flags(&plain) & libc::O_DSYNC, 0);
        let dsync = open_file(&path, &create.sync(FileSyncMode::Dsync)).unwrap();
        assert_eq!(status_flags(&dsync) & libc::O_DSYNC, libc::O_DSYNC);
        assert_ne!(status_flags(&dsync) & libc::O_SYNC, libc::O_SYNC);
        let sync = open_file(&path, &create.sync(FileSyncMode::Sync)).unwrap();
        assert_eq!(status_flags(&sync) & libc::O_SYNC, libc::O_SYNC);
        assert_eq!(status_flags(&sync) & libc::O_DIRECT, 0);
        let direct_dsync = create.sync(FileSyncMode::Dsync).direct(true);
        let direct = open_file(&path, &direct_dsync).unwrap();
        assert_eq!(status_flags(&direct) & libc::O_DIRECT, libc::O_DIRECT);
        assert_eq!(status_flags(&direct) & libc::O_DSYNC, libc::O_DSYNC);
    }

    #[test]
    fn a_lock_excludes_a_second_taker_in_this_process_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let fs = FsStorage::new();
        let LockOutcome::Acquired(first) = fs.try_lock(&path, "first").unwrap() else {
            panic!("a fresh lock was held");
        };
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        // By another path to the same file too.
        let other = dir.path().join(".").join("lock");
        for p in [&path, &other] {
            match fs.try_lock(p, "second").unwrap() {
                LockOutcome::Held(holder) => assert_eq!(holder, "first"),
                LockOutcome::Acquired(_) => panic!("taken twice"),
            }
        }
        drop(first);
        let LockOutcome::Acquired(_second) = fs.try_lock(&path, "second").unwrap() else {
            panic!("a released lock was still held");
        };
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
    }

    /// A vectored write of more parts than one `pwritev` takes (a large
    /// record's write-through), empty parts among them, lands every byte
    /// in order at its offset.
    #[test]
    fn a_vectored_write_of_many_parts_writes_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions::new().read(true).write(true).create_new(true);
        let file = FsStorage.open(&dir.path().join("v"), &opts).unwrap();
        let parts: Vec<Vec<u8>> = (0..3 * IOV_CHUNK + 7)
            .map(|i| vec![i as u8; (i * 37) % 101])
            .collect();
        let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        file.write_all_vectored_at(&slices, 100).unwrap();
        let want = parts.concat();
        let mut got = vec![0; want.len()];
        file.read_exact_at(&mut got, 100).unwrap();
        assert!(got == want, "the bytes read back differ");
        assert_eq!(file.len().unwrap(), 100 + want.len() as u64);
    }

    #[test]
    fn positional_io_and_directory_operations() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FsStorage::new();
        let a = dir.path().join("a");
        let opts = OpenOptions::new().read(true).write(true).create_new(true);
        let file = fs.open(&a, &opts).unwrap();
        file.write_all_at(b"world", 6).unwrap();
        file.write_all_at(b"hello ", 0).unwrap();
        file.write_all_vectored_at(&[b"wo", b"", b"rld!"], 6)
            .unwrap();
        file.write_all_vectored_at(&[b"!"], 11).unwrap();
        file.sync_data().unwrap();
        assert_eq!(file.len().unwrap(), 12);
        let mut buf = [0u8; 12];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello world!");
        file.allocate(64 << 10).unwrap();
        assert_eq!(file.len().unwrap(), 64 << 10);
        let mut zeros = [1u8; 16];
        file.read_exact_at(&mut zeros, 32 << 10).unwrap();
        assert_eq!(zeros, [0u8; 16]);
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hello world!");
        file.set_len(5).unwrap();
        assert_eq!(file.len().unwrap(), 5);
        let again = fs.open(&a, &opts).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);

        let b = dir.path().join("sub/b");
        fs.create_dir_all(&dir.path().join("sub")).unwrap();
        fs.rename(&a, &b).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert!(!fs.exists(&a).unwrap());
        assert!(fs.exists(&b).unwrap());
        assert_eq!(fs.list_dir(&dir.path().join("sub")).unwrap(), vec!["b"]);
        fs.remove_file(&b).unwrap();
        assert!(fs.list_dir(&dir.path().join("sub")).unwrap().is_empty());
        let missing = fs.remove_file(&b).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    /// The write-back hint is accepted by the kernel for a written range
    /// (a wrong flag or descriptor would fail it with `EINVAL`/`EBADF`),
    /// changes nothing a read sees, and refuses a range beyond `off64_t`.
    #[test]
    fn the_write_back_hint_is_accepted_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions::new().read(true).write(true).create_new(true);
        let file = FsStorage::new().open(&dir.path().join("f"), &opts).unwrap();
        let data: Vec<u8> = (0..256 << 10).map(|i| (i % 253) as u8).collect();
        file.write_all_at(&data, 0).unwrap();
        file.start_writeback(8192, 128 << 10).unwrap();
        file.start_writeback(0, data.len() as u64).unwrap();
        let mut back = vec![0; data.len()];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, data);
        let beyond = file.start_writeback(u64::MAX, 1).unwrap_err();
        assert_eq!(beyond.kind(), io::ErrorKind::InvalidInput);
    }
}
