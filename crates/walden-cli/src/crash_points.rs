//! Crash points for the syscall crash sweep (`walden write --crash-at-io N`,
//! hidden): the engine's storage ([`FsStorage`]) with a crash point just
//! before every operation that changes the disk or syncs it, numbered in
//! one count over every thread of the process (the inserting threads, the
//! preallocator, the background writer, recovery and close), so that the
//! sweep can kill the process at each of them. Only the engine's files go
//! through [`Storage`]: `--acked`, the harness's oracle, is no crash point.
//!
//! strace's own injection (`-e inject=SYSCALL:signal=KILL:when=N`) counts
//! per thread: the N-th call of whichever thread reaches N first, so a
//! thread making few calls (the preallocator, close) is never the one
//! killed. Here the count is the process's.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use walden::{FsStorage, LockOutcome, OpenOptions, Storage, StorageFile};

/// The operations that are crash points, by the system call each makes.
#[derive(Clone, Copy, Debug)]
enum Call {
    /// `open(2)` creating or truncating a file.
    Create,
    /// `mkdir(2)` of the directory and missing parents.
    Mkdir,
    /// The lock file: `open(2)` creating it, `flock(2)`, the holder written.
    Lock,
    Pwrite64,
    Pwritev,
    Fdatasync,
    /// `fsync(2)` of a file or a directory.
    Fsync,
    Rename,
    Unlink,
    Ftruncate,
    Fallocate,
}

impl Call {
    const ALL: [Call; 11] = [
        Call::Create,
        Call::Mkdir,
        Call::Lock,
        Call::Pwrite64,
        Call::Pwritev,
        Call::Fdatasync,
        Call::Fsync,
        Call::Rename,
        Call::Unlink,
        Call::Ftruncate,
        Call::Fallocate,
    ];

    fn name(self) -> &'static str {
        match self {
            Call::Create => "create",
            Call::Mkdir => "mkdir",
            Call::Lock => "lock",
            Call::Pwrite64 => "pwrite64",
            Call::Pwritev => "pwritev",
            Call::Fdatasync => "fdatasync",
            Call::Fsync => "fsync",
            Call::Rename => "rename",
            Call::Unlink => "unlink",
            Call::Ftruncate => "ftruncate",
            Call::Fallocate => "fallocate",
        }
    }
}

/// The count of crash points passed, and where to crash.
#[derive(Debug)]
pub struct CrashPoints {
    /// Kill the process at this crash point (1 = the first); 0: never.
    at: u64,
    /// Crash points passed, over all threads.
    passed: AtomicU64,
    /// Crash points passed, by [`Call`].
    by_call: [AtomicU64; Call::ALL.len()],
    /// Crash points passed, by the name of the thread ("unnamed" for the
    /// inserting threads).
    by_thread: Mutex<BTreeMap<String, u64>>,
    /// Crash points passed before the log was closed.
    before_close: AtomicU64,
}

impl CrashPoints {
    /// Crash points that kill the process with `SIGKILL` just before the
    /// `at`-th (0: count them only).
    pub fn new(at: u64) -> Arc<Self> {
        Arc::new(CrashPoints {
            at,
            passed: AtomicU64::new(0),
            by_call: std::array::from_fn(|_| AtomicU64::new(0)),
            by_thread: Mutex::new(BTreeMap::new()),
            before_close: AtomicU64::new(0),
        })
    }

    /// Passes a crash point before `call`: the process dies here if it is
    /// the chosen one.
    fn pass(&self, call: Call) {
        // Relaxed: only the count matters; read-modify-writes of one atomic
        // are totally ordered, so every number is passed exactly once.
        let n = self.passed.fetch_add(1, Ordering::Relaxed) + 1;
        self.by_call[call as usize].fetch_add(1, Ordering::Relaxed);
        let thread = std::thread::current();
        *self
            .by_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(thread.name().unwrap_or("unnamed").to_owned())
            .or_insert(0) += 1;
        if n == self.at {
            // SAFETY: kill(2) with our own pid and a signal number; it
            // reads nothing of ours. SIGKILL ends every thread before the
            // operation below it is made.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }

    /// Notes that the log is about to be closed.
    pub fn closing(&self) {
        // Relaxed: as in `pass`; the inserting threads have been joined.
        let passed = self.passed.load(Ordering::Relaxed);
        self.before_close.store(passed, Ordering::Relaxed);
    }

    /// `crash points: N call=n ...; threads name=n ...; before close N`:
    /// the line the sweep reads.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "crash points: {}",
            // Relaxed: read after every thread of the log has ended.
            self.passed.load(Ordering::Relaxed)
        );
        for call in Call::ALL {
            let n = self.by_call[call as usize].load(Ordering::Relaxed);
            line.push_str(&format!(" {}={n}", call.name()));
        }
        line.push_str("; threads");
        for (name, n) in self
            .by_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            line.push_str(&format!(" {name}={n}"));
        }
        let before_close = self.before_close.load(Ordering::Relaxed);
        line.push_str(&format!("; before close {before_close}"));
        line
    }
}

/// [`FsStorage`] with crash points.
#[derive(Debug)]
pub struct CrashPointStorage(pub Arc<CrashPoints>);

impl Storage for CrashPointStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        if opts.create || opts.create_new || opts.truncate {
            self.0.pass(Call::Create);
        }
        let file = FsStorage.open(path, opts)?;
        Ok(Box::new(CrashPointFile {
            file,
            points: Arc::clone(&self.0),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.pass(Call::Rename);
        FsStorage.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.pass(Call::Unlink);
        FsStorage.remove_file(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        FsStorage.list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.pass(Call::Fsync);
        FsStorage.sync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.pass(Call::Mkdir);
        FsStorage.create_dir_all(dir)
    }

    /// Not a crash point: only a failed create removes a directory, and
    /// the sweep crashes at the calls of a create that succeeds.
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        FsStorage.remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        FsStorage.exists(path)
    }

    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        self.0.pass(Call::Lock);
        FsStorage.try_lock(path, holder)
    }
}

/// A file of [`CrashPointStorage`].
struct CrashPointFile {
    file: Box<dyn StorageFile>,
    points: Arc<CrashPoints>,
}

impl fmt::Debug for CrashPointFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.file.fmt(f)
    }
}

impl StorageFile for CrashPointFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.points.pass(Call::Pwrite64);
        self.file.write_at(buf, offset)
    }

    fn write_all_vectored_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
        self.points.pass(Call::Pwritev);
        self.file.write_all_vectored_at(bufs, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.points.pass(Call::Fdatasync);
        self.file.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.points.pass(Call::Fsync);
        self.file.sync_all()
    }

    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.points.pass(Call::Ftruncate);
        self.file.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.points.pass(Call::Fallocate);
        self.file.allocate(len)
    }

    /// Not a crash point: the hint changes nothing the disk promises (a
    /// kill before it is a kill before the next write or sync).
    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        self.file.start_writeback(offset, len)
    }
}
