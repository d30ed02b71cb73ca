//! [`SimStorage`]: an in-memory [`Storage`](super::Storage) that loses
//! power and injects faults, deterministically from a seed.
//!
//! It models what a real disk under a page cache may do, so that crash
//! recovery can be tested against every outcome the durability contract
//! of [`storage`](super::storage) allows:
//!
//! - **Power cuts** ([`SimStorage::power_cut`], or
//!   [`SimStorage::arm_power_cut`] to cut in the middle of the n-th
//!   operation). Every 512-byte sector written since its file's last
//!   successful sync independently survives with its new contents or
//!   reverts; a reverted sector past the file's durable length holds zeros,
//!   random bytes, or stale bytes of a file removed earlier. Directory
//!   changes (creates, renames, removals) not followed by a sync of their
//!   directory are each kept or forgotten, a rename as a whole. A file may
//!   come back longer than its durable data. After the cut every operation
//!   fails until [`SimStorage::restart`].
//! - **Failed syncs** ([`SimStorage::fail_sync`]): the n-th sync
//!   (`fsync`, `fdatasync`, a directory sync, or a write to a file opened
//!   with `O_DSYNC`/`O_SYNC`) fails with `EIO`. As on Linux, the data it
//!   should have made durable is then lost at the next power cut even though
//!   reads still see it, and the next sync succeeds.
//! - **Short writes**, **`ENOSPC`** past a space limit, **failed reads**
//!   (`EIO`), **read-only directories** (`EACCES`), and a file system
//!   **without `fallocate`** (`EOPNOTSUPP`) or **without `O_DIRECT`**
//!   (`EINVAL` at open).
//! - **Direct I/O** ([`OpenOptions::direct`](super::OpenOptions::direct)):
//!   the same durability as other writes (durable after a sync, or at once
//!   with `O_DSYNC`), but every read and write of such a file must be
//!   aligned as Linux wants it (offset, length and memory address multiples
//!   of [`DIRECT_IO_ALIGNMENT`](super::DIRECT_IO_ALIGNMENT)), or it fails with
//!   `EINVAL`; its short writes stop on that alignment.
//! - `fallocate` ([`StorageFile::allocate`](super::StorageFile::allocate))
//!   extends a file with zeros like any growth: unsynced until a sync, so a
//!   cut before one may take the new length back.
//!
//! Every random choice is drawn from one generator seeded by
//! [`SimStorage::new`], in the order operations reach the storage. With one
//! thread doing I/O a run is exactly reproducible from its seed; with
//! several, the operating system's thread schedule decides that order.
//!
//! Directories are kept durable as soon as they are created, and paths are
//! compared as given (no `..` or symlink resolution). Locks
//! ([`Storage::try_lock`](super::Storage::try_lock)) are kept in memory, not
//! as files, and a power cut releases them with the processes that held them.
//!
//! The parts: `tear`, the power-cut model (which unsynced sectors and
//! directory changes survive); `faults`, the injected errors (failed syncs
//! and reads, short writes, `ENOSPC`, `EACCES`); `files`, the
//! [`Storage`](super::Storage) and its file handles; `stats`, the counters
//! ([`SimStats`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

mod faults;
mod files;
mod stats;
mod tear;

pub use stats::SimStats;
use tear::{DirChange, Inode, InodeId};

use super::LockTable;

/// An in-memory file system with power cuts and fault injection; see the
/// module docs. Cloning gives another handle on the same disk.
///
/// ```
/// use std::path::Path;
/// use walden::{OpenOptions, SimStorage, Storage};
/// let sim = SimStorage::new(7);
/// let dir = Path::new("/wal");
/// sim.create_dir_all(dir).unwrap();
/// let f = sim.open(&dir.join("a"), &OpenOptions::new().write(true).create(true)).unwrap();
/// f.write_all_at(b"durable", 0).unwrap();
/// f.sync_data().unwrap();
/// sim.sync_dir(dir).unwrap();
/// f.write_all_at(b"lost?", 0).unwrap();
/// sim.power_cut();
/// assert!(f.sync_data().is_err()); // the handle died with the power
/// sim.restart();
/// let data = sim.contents(&dir.join("a")).unwrap();
/// assert!(data == b"durable" || data == b"lost?le");
/// ```
#[derive(Clone)]
pub struct SimStorage {
    state: Arc<Mutex<SimState>>,
}

impl fmt::Debug for SimStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimStorage")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// A small, fast, seedable generator (SplitMix64).
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let word = self.next().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

#[derive(Debug)]
struct SimState {
    rng: Rng,
    /// Incremented by every power cut; handles of older boots are dead.
    boot: u64,
    powered: bool,
    inodes: BTreeMap<InodeId, Inode>,
    next_inode: InodeId,
    /// What lookups see.
    entries: BTreeMap<PathBuf, InodeId>,
    /// What survives a power cut.
    durable_entries: BTreeMap<PathBuf, InodeId>,
    pending: Vec<DirChange>,
    dirs: BTreeSet<PathBuf>,
    read_only: BTreeSet<PathBuf>,
    /// Bytes of removed files: where stale sector contents come from.
    stale: Vec<u8>,
    /// Operations left before an armed power cut.
    cut_in: Option<u64>,
    /// Syncs left before the failing one, and whether later ones fail too.
    fail_sync_in: Option<(u64, bool)>,
    fail_read_in: Option<u64>,
    short_writes: bool,
    space_limit: Option<u64>,
    /// `fallocate` fails with `EOPNOTSUPP`.
    no_fallocate: bool,
    /// Opening with `O_DIRECT` fails with `EINVAL`.
    no_direct_io: bool,
    /// Locks held ([`Storage::try_lock`](super::Storage::try_lock)); a
    /// power cut ends the processes that held them.
    locks: LockTable,
    stats: SimStats,
}

fn power_off() -> io::Error {
    io::Error::other("simulated power cut: the device is off")
}

fn eio(what: &str) -> io::Error {
    io::Error::new(
        io::Error::from_raw_os_error(libc::EIO).kind(),
        format!("simulated I/O error on {what} (EIO)"),
    )
}

impl SimState {
    /// Counts an operation and fails it if the power is off or goes off now.
    /// `apply` runs before an armed cut, so the interrupted operation's
    /// writes are unsynced data the cut may tear.
    fn op<T>(
        &mut self,
        boot: u64,
        apply: impl FnOnce(&mut Self) -> io::Result<T>,
    ) -> io::Result<T> {
        if !self.powered || boot != self.boot {
            return Err(power_off());
        }
        self.stats.ops += 1;
        match self.cut_in {
            Some(0) | Some(1) => {
                // The interrupted operation's effect is partial at best: it
                // may land (unsynced) or not, then the power goes.
                let _ = apply(self);
                self.cut();
                Err(power_off())
            }
            Some(n) => {
                self.cut_in = Some(n - 1);
                apply(self)
            }
            None => apply(self),
        }
    }
}

fn stale_handle() -> io::Error {
    io::Error::other("simulated file was removed from the disk")
}

impl SimStorage {
    /// An empty, powered disk whose random choices follow `seed`.
    pub fn new(seed: u64) -> Self {
        SimStorage {
            state: Arc::new(Mutex::new(SimState {
                rng: Rng(seed),
                boot: 0,
                powered: true,
                inodes: BTreeMap::new(),
                next_inode: 1,
                entries: BTreeMap::new(),
                durable_entries: BTreeMap::new(),
                pending: Vec::new(),
                dirs: BTreeSet::new(),
                read_only: BTreeSet::new(),
                stale: Vec::new(),
                cut_in: None,
                fail_sync_in: None,
                fail_read_in: None,
                short_writes: false,
                space_limit: None,
                no_fallocate: false,
                no_direct_io: false,
                locks: LockTable::new(),
                stats: SimStats::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        // The state stays consistent across a panicking test thread: every
        // mutation is completed before anything that can panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs one storage operation in the current boot ([`SimState::op`]:
    /// refused while the power is off, counted, and where a planned power
    /// cut falls, applied or not before the power goes).
    fn op<T>(&self, apply: impl FnOnce(&mut SimState) -> io::Result<T>) -> io::Result<T> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, apply)
    }

    /// Counters so far.
    pub fn stats(&self) -> SimStats {
        self.lock().stats
    }

    /// The contents of the file at `path` as a read would see them, without
    /// counting an operation; `None` if there is no such file.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.lock();
        let ino = s.entries.get(path)?;
        s.inodes.get(ino).map(|i| i.data.clone())
    }

    /// Replaces the contents of the file at `path`, durably and without
    /// counting an operation (to plant damage in tests); creates it if
    /// missing. Fails if its directory does not exist.
    pub fn set_contents(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        let dir = path.parent().unwrap_or(Path::new(""));
        if !s.dirs.contains(dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let ino = match s.entries.get(path) {
            Some(&ino) => ino,
            None => {
                let ino = s.next_inode;
                s.next_inode += 1;
                s.inodes.insert(ino, Inode::default());
                s.entries.insert(path.to_path_buf(), ino);
                s.durable_entries.insert(path.to_path_buf(), ino);
                ino
            }
        };
        let inode = s.inodes.get_mut(&ino).ok_or_else(stale_handle)?;
        *inode = Inode {
            data: data.to_vec(),
            durable_len: data.len() as u64,
            ..Inode::default()
        };
        Ok(())
    }

    /// Writes every file directly in `dir` to the real directory `to`, as
    /// reads would see them (after a cut and restart: what survived).
    pub fn materialize(&self, dir: &Path, to: &Path) -> io::Result<()> {
        let files: Vec<(String, Vec<u8>)> = {
            let s = self.lock();
            s.entries
                .iter()
                .filter(|(p, _)| p.parent() == Some(dir))
                .filter_map(|(p, ino)| {
                    let name = p.file_name()?.to_str()?.to_owned();
                    Some((name, s.inodes.get(ino)?.data.clone()))
                })
                .collect()
        };
        std::fs::create_dir_all(to)?;
        for (name, data) in files {
            std::fs::write(to.join(name), data)?;
        }
        Ok(())
    }
}

/// A small disk for the tests of every part.
#[cfg(test)]
mod test_disk {
    use std::path::{Path, PathBuf};

    use super::SimStorage;
    use crate::segment::storage::{OpenOptions, Storage, StorageFile};

    const DIR: &str = "/wal";

    pub(super) fn disk(seed: u64) -> (SimStorage, PathBuf) {
        let sim = SimStorage::new(seed);
        sim.create_dir_all(Path::new(DIR)).unwrap();
        (sim, PathBuf::from(DIR))
    }

    pub(super) fn create(sim: &SimStorage, path: &Path) -> Box<dyn StorageFile> {
        sim.open(
            path,
            &OpenOptions::new().read(true).write(true).create(true),
        )
        .unwrap()
    }

    /// A file in `dir` holding `len` bytes of 1, synced with its
    /// directory, then overwritten with 2s, not synced.
    pub(super) fn synced_then_overwritten(
        sim: &SimStorage,
        dir: &Path,
        len: usize,
    ) -> (PathBuf, Box<dyn StorageFile>) {
        let path = dir.join("f");
        let f = create(sim, &path);
        f.write_all_at(&vec![1u8; len], 0).unwrap();
        f.sync_data().unwrap();
        sim.sync_dir(dir).unwrap();
        f.write_all_at(&vec![2u8; len], 0).unwrap();
        (path, f)
    }
}
