//! A crash-simulating file system (FUSE), after LazyFS's model: programs
//! run on the mount as on any file system, but only what they made durable
//! survives a [`CrashFs::crash`].
//!
//! What is durable:
//! - a file's data and length once an `fsync`/`fdatasync` of it returned,
//!   or once a write to it returned if it was opened with `O_DSYNC` or
//!   `O_SYNC` (the kernel's FUSE follows such a write with an `fsync` of
//!   the file, so all of the file's data is durable then, not only that
//!   write's);
//! - a directory's entries (create, mkdir, rename, unlink, rmdir) once an
//!   `fsync` of *that* directory returned. Syncing a file does not make its
//!   name durable, and a new directory's own entry needs a sync of its
//!   parent (POSIX's rule, stricter than ext4's journal).
//!
//! Everything else lives in memory: unsynced writes as dirty 512-byte
//! sectors over the file's durable bytes (kept in a backing directory, one
//! file per inode), unsynced directory operations as an ordered list per
//! directory. A crash unmounts, applies a [`CrashPolicy`] and mounts again
//! (the kernel's caches go with the old mount):
//! - [`CrashPolicy::LoseUnsynced`]: nothing unsynced survives (LazyFS's
//!   `clear-cache`);
//! - [`CrashPolicy::KeepRandomSectors`]: each unsynced sector, pending
//!   truncation and file length survives or not, independently with
//!   probability one half (reordered and torn writes); each directory keeps
//!   a random prefix of its unsynced operations (a journal: a rename is
//!   atomic);
//! - [`CrashPolicy::TearLastWrite`]: everything reached the disk except the
//!   last write, of which a random subset of sectors did (LazyFS's
//!   `torn-op`).
//!
//! A crash can also be planned at an exact point: after the next N write
//! requests the power is cut ([`CrashFs::cut_power_after_writes`]), so the
//! crash happens between a write and the sync that would have covered it.
//!
//! Inodes that no durable entry reaches after a crash are gone. O_DIRECT
//! opens are served like others, with no `FOPEN_DIRECT_IO` needed: FUSE
//! (without writeback caching, which this mount does not ask for) sends
//! every write to the file system before `write(2)` returns, O_DIRECT or
//! not, and an O_DIRECT file's writes carry the flag. Both are counted, and
//! an O_DIRECT write is, like any other, durable only once synced.
//!
//! Mounting needs `/dev/fuse` and the right to mount (root): the mount is
//! made with `mount(2)` directly, no `fusermount3`.

mod dir;
mod file;
mod fuse;
mod model;
mod rng;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use fuser::{BackgroundSession, MountOption};

pub use file::SECTOR;
pub use model::CrashReport;
pub use rng::Rng;

use fuse::{Counters, CrashFsFuse, PowerSwitch};
use model::Model;

/// What a crash keeps of what was not made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPolicy {
    /// Nothing.
    LoseUnsynced,
    /// A random subset of sectors, pending truncations and lengths, and a
    /// random prefix of each directory's operations.
    KeepRandomSectors,
    /// Everything but a random part of the last write.
    TearLastWrite,
}

impl CrashPolicy {
    /// Every policy.
    pub const ALL: [CrashPolicy; 3] = [
        CrashPolicy::LoseUnsynced,
        CrashPolicy::KeepRandomSectors,
        CrashPolicy::TearLastWrite,
    ];
}

/// Why the crash-simulating file system failed.
#[derive(Debug, thiserror::Error)]
pub enum CrashFsError {
    /// FUSE is not usable here.
    #[error(
        "FUSE is unavailable ({path}: {source}); the FUSE crash tests need /dev/fuse and root"
    )]
    Unavailable {
        /// The device.
        path: PathBuf,
        /// Why it could not be opened.
        source: std::io::Error,
    },
    /// A directory for the mount point or the store could not be made
    /// ([`CrashFs::mount_in`]).
    #[error("could not create {path} for the crash-simulating file system: {source}")]
    Prepare {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Mounting failed.
    #[error("could not mount the crash-simulating file system on {path}: {source}")]
    Mount {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Unmounting failed.
    #[error("could not unmount {path}: {source}")]
    Unmount {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Unmounting failed because a file on the mount was open. The file
    /// system stays mounted, served until the kernel ends it; the next
    /// [`CrashFs::crash`] or [`CrashFs::unmount`] (or the drop) tries the
    /// unmount again.
    #[error("could not unmount {path}: a file on it is open ({holders})")]
    Busy {
        /// The mount point.
        path: PathBuf,
        /// Who held a file there, as found right after the failure.
        holders: Holders,
    },
    /// The backing directory failed during a crash.
    #[error("the backing directory {path} failed during a crash: {source}")]
    Backing {
        /// The backing directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Checks that `/dev/fuse` can be opened.
pub fn fuse_available() -> Result<(), CrashFsError> {
    let path = PathBuf::from("/dev/fuse");
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map(drop)
        .map_err(|source| CrashFsError::Unavailable { path, source })
}

/// The processes that held a file (or their working directory) under a
/// mount point, found in `/proc` right after an unmount failed.
#[derive(Debug)]
pub struct Holders(Vec<String>);

impl Holders {
    /// Each process with a descriptor or working directory under `mount`,
    /// as "pid N (command): path". A process that exits (or closes) while
    /// `/proc` is read is missed, as it should be.
    fn of(mount: &Path) -> Holders {
        let mut found = Vec::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Holders(found);
        };
        for entry in procs.flatten() {
            // Processes only: not `self`, `thread-self` and the rest.
            let Some(number) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let pid = entry.path();
            let comm = std::fs::read_to_string(pid.join("comm")).unwrap_or_default();
            let fds = std::fs::read_dir(pid.join("fd")).into_iter().flatten();
            let links = fds.flatten().map(|fd| fd.path()).chain([pid.join("cwd")]);
            for target in links.filter_map(|link| std::fs::read_link(link).ok()) {
                if target.starts_with(mount) {
                    found.push(format!(
                        "pid {number} ({}): {}",
                        comm.trim(),
                        target.display()
                    ));
                }
            }
        }
        Holders(found)
    }
}

impl std::fmt::Display for Holders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            // The holder let go between the failure and the look: one
            // that holds briefly, such as a child between fork and exec.
            return f.write_str("no process holds one any more: the holder was transient, such as a child being spawned, which holds copies of its parent's descriptors until its exec");
        }
        f.write_str(&self.0.join("; "))
    }
}

/// What the file system saw since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// Write requests.
    pub writes: u64,
    /// Writes made durable by `O_DSYNC`/`O_SYNC`.
    pub sync_writes: u64,
    /// `fsync`/`fdatasync` of files.
    pub file_syncs: u64,
    /// `fsync` of directories.
    pub dir_syncs: u64,
    /// Opens with `O_DIRECT`.
    pub direct_opens: u64,
    /// Writes to files opened with `O_DIRECT`.
    pub direct_writes: u64,
}

/// A mounted crash-simulating file system; unmounted when dropped.
#[derive(Debug)]
pub struct CrashFs {
    mountpoint: PathBuf,
    store: PathBuf,
    model: Arc<Mutex<Model>>,
    counters: Arc<Counters>,
    power: Arc<PowerSwitch>,
    session: Option<BackgroundSession>,
    /// A refused unmount left the file system mounted, its session gone
    /// ([`CrashFsError::Busy`]): the next stop unmounts it directly.
    stranded: bool,
}

impl CrashFs {
    /// Mounts an empty file system on `dir/mnt`, keeping durable file
    /// contents in `dir/store`: both made here, so `dir` (an existing
    /// directory, a test's temporary one) must hold neither.
    pub fn mount_in(dir: &Path) -> Result<CrashFs, CrashFsError> {
        let (mnt, store) = (dir.join("mnt"), dir.join("store"));
        for path in [&mnt, &store] {
            std::fs::create_dir(path).map_err(|source| CrashFsError::Prepare {
                path: path.clone(),
                source,
            })?;
        }
        CrashFs::mount(&mnt, &store)
    }

    /// Mounts an empty file system on `mountpoint` (an existing empty
    /// directory), keeping durable file contents in `store` (an existing
    /// empty directory, not under the mount).
    pub fn mount(mountpoint: &Path, store: &Path) -> Result<CrashFs, CrashFsError> {
        fuse_available()?;
        let mut fs = CrashFs {
            mountpoint: mountpoint.to_path_buf(),
            store: store.to_path_buf(),
            model: Arc::new(Mutex::new(Model::new(store.to_path_buf()))),
            counters: Arc::new(Counters::default()),
            power: Arc::new(PowerSwitch::default()),
            session: None,
            stranded: false,
        };
        fs.start()?;
        Ok(fs)
    }

    fn start(&mut self) -> Result<(), CrashFsError> {
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            MountOption::FSName("walden-crashfs".into()),
            MountOption::Subtype("walden-crashfs".into()),
        ];
        let fs = CrashFsFuse {
            model: self.model.clone(),
            counters: self.counters.clone(),
            power: self.power.clone(),
        };
        let session = fuser::spawn_mount(fs, &self.mountpoint, &config).map_err(|source| {
            CrashFsError::Mount {
                path: self.mountpoint.clone(),
                source,
            }
        })?;
        self.session = Some(session);
        Ok(())
    }

    fn stop(&mut self) -> Result<(), CrashFsError> {
        let stopped = match self.session.take() {
            Some(session) => session.umount_and_join(),
            // The session went with the refused unmount; its thread ends
            // when the kernel ends the connection, at this unmount.
            None if self.stranded => {
                rustix::mount::unmount(&self.mountpoint, rustix::mount::UnmountFlags::empty())
                    .map_err(std::io::Error::from)
            }
            None => Ok(()),
        };
        match stopped {
            // The session's loop may end reading `ECONNABORTED` from
            // /dev/fuse when the unmount tears the connection down before
            // it sees `ENODEV`: the file system is unmounted either way.
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                self.stranded = true;
                return Err(CrashFsError::Busy {
                    path: self.mountpoint.clone(),
                    holders: Holders::of(&self.mountpoint),
                });
            }
            Err(source) => {
                return Err(CrashFsError::Unmount {
                    path: self.mountpoint.clone(),
                    source,
                })
            }
            Ok(()) => {}
        }
        self.stranded = false;
        Ok(())
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// A crash: unmounts (no program may have a file open on the mount),
    /// keeps what `policy` keeps of what was not durable (choices drawn
    /// from `rng`), and mounts again.
    ///
    /// "No program" includes a child that another thread of this process
    /// is spawning: from its `fork` to its `exec` it holds copies of all
    /// this process's descriptors, so a file this process had open on the
    /// mount may still be open there after this process closed it, and the
    /// unmount fails ([`CrashFsError::Busy`]). A process that reads the
    /// mount itself must not spawn children from other threads meanwhile.
    pub fn crash(
        &mut self,
        policy: CrashPolicy,
        rng: &mut Rng,
    ) -> Result<CrashReport, CrashFsError> {
        self.stop()?;
        let report = self
            .model
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .crash(policy, rng)
            .map_err(|source| CrashFsError::Backing {
                path: self.store.clone(),
                source,
            })?;
        self.power.restore();
        self.start()?;
        Ok(report)
    }

    /// Plans a power cut right after the next `writes` write requests (at
    /// least one): from then on every operation fails with `EIO` and
    /// changes nothing, until [`crash`](Self::crash) decides what of the
    /// state at the cut survives. The last write before the cut is the one
    /// [`CrashPolicy::TearLastWrite`] tears.
    pub fn cut_power_after_writes(&self, writes: u64) {
        self.power.cut_after(writes);
    }

    /// Whether a planned power cut has happened.
    pub fn power_is_cut(&self) -> bool {
        self.power.is_cut()
    }

    /// What the file system saw since it was mounted first.
    pub fn activity(&self) -> Activity {
        let c = &self.counters;
        // Relaxed: statistics; the requests that counted them have been answered.
        let get = |x: &std::sync::atomic::AtomicU64| x.load(Ordering::Relaxed);
        Activity {
            writes: get(&c.writes),
            sync_writes: get(&c.sync_writes),
            file_syncs: get(&c.file_syncs),
            dir_syncs: get(&c.dir_syncs),
            direct_opens: get(&c.direct_opens),
            direct_writes: get(&c.direct_writes),
        }
    }

    /// Unmounts, reporting a failure (dropping unmounts too, silently).
    pub fn unmount(mut self) -> Result<(), CrashFsError> {
        self.stop()
    }
}

impl Drop for CrashFs {
    fn drop(&mut self) {
        // Errors are reported by `unmount`; a drop can only try.
        let _ = self.stop();
    }
}
