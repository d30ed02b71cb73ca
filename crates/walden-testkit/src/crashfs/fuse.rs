//! The FUSE side of the crash-simulating file system: each request the
//! kernel sends becomes one operation on the [`Model`].

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::model::{Kind, Model, OpResult};

/// How long the kernel may cache entries and attributes. Every change
/// goes through this mount, and a crash remounts, so the kernel's caches
/// never hold what the model lost.
const TTL: Duration = Duration::from_secs(1);

/// What the file system saw, for the tests' reports.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// `write` requests.
    pub(crate) writes: AtomicU64,
    /// Writes to files opened with `O_DSYNC` or `O_SYNC`.
    pub(crate) sync_writes: AtomicU64,
    /// `fsync`/`fdatasync` of files.
    pub(crate) file_syncs: AtomicU64,
    /// `fsync` of directories.
    pub(crate) dir_syncs: AtomicU64,
    /// Opens with `O_DIRECT`.
    pub(crate) direct_opens: AtomicU64,
    /// Writes to files opened with `O_DIRECT`.
    pub(crate) direct_writes: AtomicU64,
}

/// A power cut planned after a number of writes: from the cut on, every
/// request that would touch the file system fails with `EIO`, so nothing
/// after it takes effect (the crash then decides what of the state before
/// it survives).
#[derive(Debug)]
pub(crate) struct PowerSwitch {
    /// Writes still to serve before the cut (`u64::MAX`: none planned).
    writes_left: AtomicU64,
    /// Whether the power is cut.
    cut: AtomicBool,
}

impl Default for PowerSwitch {
    fn default() -> Self {
        PowerSwitch {
            writes_left: AtomicU64::new(u64::MAX),
            cut: AtomicBool::new(false),
        }
    }
}

impl PowerSwitch {
    /// Plans a cut right after the next `writes` writes (at least one).
    pub(crate) fn cut_after(&self, writes: u64) {
        // Relaxed: when the serving thread first sees the plan does not
        // matter; the cut lands after some later write.
        self.writes_left.store(writes.max(1), Ordering::Relaxed);
    }

    /// Whether the power is cut.
    pub(crate) fn is_cut(&self) -> bool {
        // Acquire: pairs with the Release in `count_write`, so a caller that
        // sees the cut sees the write before it applied.
        self.cut.load(Ordering::Acquire)
    }

    /// Restores the power, with no cut planned.
    pub(crate) fn restore(&self) {
        // Relaxed: called while no session serves requests (between
        // unmount and mount, which order it).
        self.writes_left.store(u64::MAX, Ordering::Relaxed);
        self.cut.store(false, Ordering::Relaxed);
    }

    /// Counts a served write; cuts the power if it was the last planned.
    fn count_write(&self) {
        // Relaxed: only the serving thread changes the count once planned.
        let left = self.writes_left.load(Ordering::Relaxed);
        if left != u64::MAX {
            self.writes_left.store(left - 1, Ordering::Relaxed);
            if left == 1 {
                // Release: pairs with the Acquire in `is_cut`.
                self.cut.store(true, Ordering::Release);
            }
        }
    }
}

/// Adds one to a counter.
fn bump(counter: &AtomicU64) {
    // Relaxed: a statistic, read after the writer has exited.
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The file system FUSE serves: the shared model and counters.
#[derive(Debug)]
pub(crate) struct CrashFsFuse {
    pub(crate) model: Arc<Mutex<Model>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) power: Arc<PowerSwitch>,
}

impl CrashFsFuse {
    /// The model, or `EIO` once the power is cut.
    fn model(&self) -> OpResult<MutexGuard<'_, Model>> {
        if self.power.is_cut() {
            return Err(libc::EIO);
        }
        // A panic in another request leaves the model as consistent as
        // the operation that panicked made it; keep serving.
        Ok(self.model.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The attributes of `ino`.
    fn attr(model: &Model, ino: u64) -> OpResult<FileAttr> {
        let node = model.node(ino)?;
        let (kind, size, nlink) = match &node.kind {
            Kind::Dir(_) => (FileType::Directory, 0, 2),
            Kind::File(f) => (FileType::RegularFile, f.len(), 1),
        };
        let t = SystemTime::UNIX_EPOCH;
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind,
            perm: node.perm,
            nlink,
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    /// Runs `op` on the model, then answers with the attributes of the
    /// inode it returns (or its error).
    fn entry(&self, reply: ReplyEntry, op: impl FnOnce(&mut Model) -> OpResult<u64>) {
        let result = self.model().and_then(|mut model| {
            let ino = op(&mut model)?;
            Self::attr(&model, ino)
        });
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    /// Runs `op` on the model, then answers with the attributes of `ino`
    /// (or the error).
    fn attr_after(&self, reply: ReplyAttr, ino: u64, op: impl FnOnce(&mut Model) -> OpResult<()>) {
        let result = self.model().and_then(|mut model| {
            op(&mut model)?;
            Self::attr(&model, ino)
        });
        match result {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    /// Runs `op` on the model, then answers empty (or its error).
    fn empty(&self, reply: ReplyEmpty, op: impl FnOnce(&mut Model) -> OpResult<()>) {
        match self.model().and_then(|mut model| op(&mut model)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }
}

impl CrashFsFuse {
    /// `fsync` of a file or a directory, counted in `counter`.
    fn sync(&self, ino: INodeNo, counter: &AtomicU64, reply: ReplyEmpty) {
        bump(counter);
        self.empty(reply, |m| m.sync(ino.0));
    }
}

/// Permission bits of a `mode` under `umask`.
fn perm(mode: u32, umask: u32) -> u16 {
    (mode & !umask & 0o7777) as u16
}

impl Filesystem for CrashFsFuse {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.entry(reply, |m| m.lookup(parent.0, name));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.attr_after(reply, ino.0, |_| Ok(()));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.attr_after(reply, ino.0, |model| {
            if let Some(len) = size {
                model.set_len(ino.0, len)?;
            }
            if let Some(mode) = mode {
                model.set_perm(ino.0, perm(mode, 0))?;
            }
            Ok(())
        });
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.entry(reply, |m| m.create(parent.0, name, perm(mode, umask), true));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |m| m.remove(parent.0, name, false));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.empty(reply, |m| m.remove(parent.0, name, true));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
            reply.error(Errno::EINVAL);
            return;
        }
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        self.empty(reply, |m| {
            m.rename(parent.0, name, newparent.0, newname, no_replace)
        });
    }

    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.0 & libc::O_DIRECT != 0 {
            bump(&self.counters.direct_opens);
        }
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self
            .model()
            .and_then(|mut model| model.read(ino.0, offset, u64::from(size)))
        {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        bump(&self.counters.writes);
        let sync = flags.0 & (libc::O_DSYNC | libc::O_SYNC) != 0;
        if sync {
            bump(&self.counters.sync_writes);
        }
        if flags.0 & libc::O_DIRECT != 0 {
            bump(&self.counters.direct_writes);
        }
        match self
            .model()
            .and_then(|mut model| model.write(ino.0, offset, data, sync))
        {
            Ok(()) => {
                self.power.count_write();
                reply.written(data.len() as u32)
            }
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2) makes nothing durable.
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.sync(ino, &self.counters.file_syncs, reply);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let model = match self.model() {
            Ok(model) => model,
            Err(e) => return reply.error(Errno::from_i32(e)),
        };
        let entries = match model.list(ino.0) {
            Ok(entries) => entries,
            Err(e) => return reply.error(Errno::from_i32(e)),
        };
        let dots = [(ino.0, ".".into()), (ino.0, "..".into())];
        for (i, (child, name)) in dots
            .into_iter()
            .chain(entries)
            .enumerate()
            .skip(offset as usize)
        {
            let kind = match model.node(child).map(|n| &n.kind) {
                Ok(Kind::File(_)) => FileType::RegularFile,
                _ => FileType::Directory,
            };
            if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.sync(ino, &self.counters.dir_syncs, reply);
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        if flags & libc::O_DIRECT != 0 {
            bump(&self.counters.direct_opens);
        }
        let result = self.model().and_then(|mut model| {
            let ino = model.create(parent.0, name, perm(mode, umask), false)?;
            Self::attr(&model, ino)
        });
        match result {
            Ok(attr) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(0),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if mode != 0 {
            reply.error(Errno::from_i32(libc::EOPNOTSUPP));
            return;
        }
        self.empty(reply, |m| m.allocate(ino.0, offset.saturating_add(length)));
    }
}
