//! [`SimStorage`]: an in-memory [`Storage`] that loses power and injects
//! faults, deterministically from a seed.
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
//!   (`EIO`), and **read-only directories** (`EACCES`).
//!
//! Every random choice is drawn from one generator seeded by
//! [`SimStorage::new`], in the order operations reach the storage. With one
//! thread doing I/O a run is exactly reproducible from its seed; with
//! several, the operating system's thread schedule decides that order.
//!
//! Directories are kept durable as soon as they are created, and paths are
//! compared as given (no `..` or symlink resolution).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::storage::{FileSyncMode, OpenOptions, Storage, StorageFile};

/// The sector size at which unsynced writes tear.
pub const SECTOR_SIZE: u64 = 512;
const SECTOR: usize = SECTOR_SIZE as usize;
/// Bytes of removed files kept as the source of stale sector contents.
const STALE_POOL_BYTES: usize = 64 << 20;

/// What happened on a [`SimStorage`] so far: operations, power cuts and the
/// faults injected, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Storage and file operations carried out or failed.
    pub ops: u64,
    /// Power cuts.
    pub power_cuts: u64,
    /// Unsynced sectors that reverted at a power cut.
    pub sectors_lost: u64,
    /// Unsynced sectors that survived a power cut.
    pub sectors_kept: u64,
    /// Reverted sectors filled with stale bytes of a removed file.
    pub stale_sectors: u64,
    /// Unsynced directory changes forgotten at a power cut.
    pub dir_changes_lost: u64,
    /// Unsynced directory changes kept at a power cut.
    pub dir_changes_kept: u64,
    /// Syncs: file and directory syncs, and writes to files opened with
    /// `O_DSYNC`/`O_SYNC`.
    pub syncs: u64,
    /// Syncs failed with `EIO`.
    pub sync_failures: u64,
    /// Writes cut short.
    pub short_writes: u64,
    /// Writes or extensions failed with `ENOSPC`.
    pub no_space: u64,
    /// Reads failed with `EIO`.
    pub read_failures: u64,
    /// Operations refused in a read-only directory.
    pub denied: u64,
}

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

/// A sector written since the last sync that reached it.
#[derive(Debug)]
struct Unsynced {
    /// Its durable bytes (fewer than a sector, or none, at or past the
    /// durable length).
    old: Vec<u8>,
    /// A sync failed after it was written: it reverts at the next power cut.
    lost: bool,
}

/// A file's contents: what reads see, and how to get back to what is durable.
#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    durable_len: u64,
    /// The length changed (or a sync covering it failed) since the last sync.
    len_unsynced: bool,
    unsynced: BTreeMap<u64, Unsynced>,
}

impl Inode {
    /// Records the durable contents of the sectors of `start..end` before
    /// they change.
    fn touch(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        for sector in start / SECTOR_SIZE..end.div_ceil(SECTOR_SIZE) {
            let data = &self.data;
            let durable_len = self.durable_len;
            let entry = self.unsynced.entry(sector).or_insert_with(|| {
                let at = sector * SECTOR_SIZE;
                let durable = durable_len.saturating_sub(at).min(SECTOR_SIZE) as usize;
                let have = data.len().saturating_sub(at as usize).min(durable);
                let mut old = data
                    .get(at as usize..at as usize + have)
                    .unwrap_or_default()
                    .to_vec();
                old.resize(durable, 0);
                Unsynced { old, lost: false }
            });
            entry.lost = false;
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) {
        let end = offset + buf.len() as u64;
        let from = offset.min(self.data.len() as u64);
        self.touch(from, end);
        if self.data.len() < end as usize {
            self.data.resize(end as usize, 0);
            self.len_unsynced = true;
        }
        self.data[offset as usize..end as usize].copy_from_slice(buf);
    }

    fn set_len(&mut self, len: u64) {
        let old = self.data.len() as u64;
        if len != old {
            self.touch(len.min(old), len.max(old));
            self.data.resize(len as usize, 0);
            self.len_unsynced = true;
        }
    }

    /// A sync succeeded: everything written is durable, except sectors a
    /// failed sync already dropped (the page cache marked them clean).
    fn synced(&mut self) {
        self.unsynced.retain(|_, u| u.lost);
        if self.unsynced.is_empty() {
            self.durable_len = self.data.len() as u64;
            self.len_unsynced = false;
        }
    }

    /// A sync failed: what it should have written is dropped.
    fn sync_failed(&mut self) {
        for u in self.unsynced.values_mut() {
            u.lost = true;
        }
    }

    /// The power went: keep or revert each unsynced sector.
    fn crash(&mut self, rng: &mut Rng, stale: &[u8], stats: &mut SimStats) {
        let written_len = self.data.len();
        let durable_len = self.durable_len as usize;
        // A shrink that does not survive brings the durable bytes back.
        if written_len < durable_len {
            self.data.resize(durable_len, 0);
        }
        let filler = rng.below(3);
        let mut kept_end = 0;
        for (sector, u) in std::mem::take(&mut self.unsynced) {
            let at = (sector * SECTOR_SIZE) as usize;
            if at >= self.data.len() {
                continue;
            }
            let end = (at + SECTOR).min(self.data.len());
            if !u.lost && at < written_len && rng.coin() {
                stats.sectors_kept += 1;
                kept_end = kept_end.max(end.min(written_len));
                continue;
            }
            stats.sectors_lost += 1;
            let sector = &mut self.data[at..end];
            let (old, rest) = sector.split_at_mut(u.old.len().min(sector.len()));
            old.copy_from_slice(&u.old[..old.len()]);
            match filler {
                0 => rest.fill(0),
                1 if stale.len() >= end => {
                    rest.copy_from_slice(&stale[end - rest.len()..end]);
                    stats.stale_sectors += 1;
                }
                _ => rng.fill(rest),
            }
        }
        // A file keeps its durable length, grows to its last surviving
        // sector, and sometimes (the length reached the disk, the data did
        // not) takes its written length.
        let mut len = durable_len.max(kept_end);
        if self.len_unsynced && rng.below(4) == 0 {
            len = written_len;
        }
        self.data.truncate(len);
        self.durable_len = len as u64;
        self.len_unsynced = false;
    }
}

type InodeId = u64;

/// A directory change not yet made durable.
#[derive(Debug, Clone)]
struct DirChange {
    dir: PathBuf,
    /// Entry removed (the source of a rename, or a removal).
    unlink: Option<PathBuf>,
    /// Entry added (a creation, or the target of a rename).
    link: Option<(PathBuf, InodeId)>,
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

    fn total_bytes(&self) -> u64 {
        self.inodes.values().map(|i| i.data.len() as u64).sum()
    }

    /// Whether `path`'s directory refuses changes.
    fn denied(&mut self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new(""));
        if self.read_only.contains(dir) {
            self.stats.denied += 1;
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        Ok(())
    }

    fn next_sync_fails(&mut self) -> bool {
        self.stats.syncs += 1;
        match self.fail_sync_in {
            Some((0, persistent)) | Some((1, persistent)) => {
                self.fail_sync_in = persistent.then_some((0, true));
                self.stats.sync_failures += 1;
                true
            }
            Some((n, p)) => {
                self.fail_sync_in = Some((n - 1, p));
                false
            }
            None => false,
        }
    }

    fn sync_file(&mut self, ino: InodeId) -> io::Result<()> {
        let fails = self.next_sync_fails();
        let inode = self.inodes.get_mut(&ino).ok_or_else(stale_handle)?;
        if fails {
            inode.sync_failed();
            return Err(eio("fsync"));
        }
        inode.synced();
        Ok(())
    }

    fn link(&mut self, path: &Path, ino: InodeId) {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        if let Some(old) = self.entries.insert(path.to_path_buf(), ino) {
            self.release_if_unreferenced(old);
        }
        self.pending.push(DirChange {
            dir,
            unlink: None,
            link: Some((path.to_path_buf(), ino)),
        });
    }

    /// Keeps an inode no entry names (now or durably) as stale bytes only.
    fn release_if_unreferenced(&mut self, ino: InodeId) {
        let named = self.entries.values().any(|&i| i == ino)
            || self.durable_entries.values().any(|&i| i == ino)
            || self
                .pending
                .iter()
                .any(|c| c.link.as_ref().is_some_and(|l| l.1 == ino));
        if !named {
            if let Some(inode) = self.inodes.remove(&ino) {
                if inode.data.len() <= STALE_POOL_BYTES {
                    self.stale = inode.data;
                }
            }
        }
    }

    /// The power goes: unsynced data and directory changes are kept or lost.
    fn cut(&mut self) {
        self.powered = false;
        self.boot += 1;
        self.cut_in = None;
        self.stats.power_cuts += 1;
        let pending = std::mem::take(&mut self.pending);
        for change in pending {
            if self.rng.coin() {
                self.stats.dir_changes_kept += 1;
                if let Some(from) = &change.unlink {
                    self.durable_entries.remove(from);
                }
                if let Some((to, ino)) = &change.link {
                    self.durable_entries.insert(to.clone(), *ino);
                }
            } else {
                self.stats.dir_changes_lost += 1;
            }
        }
        self.entries = self.durable_entries.clone();
        let live: BTreeSet<InodeId> = self.entries.values().copied().collect();
        let dead: Vec<InodeId> = self
            .inodes
            .keys()
            .copied()
            .filter(|i| !live.contains(i))
            .collect();
        for ino in dead {
            if let Some(inode) = self.inodes.remove(&ino) {
                if !inode.data.is_empty() && inode.data.len() <= STALE_POOL_BYTES {
                    self.stale = inode.data;
                }
            }
        }
        let stale = std::mem::take(&mut self.stale);
        for inode in self.inodes.values_mut() {
            inode.crash(&mut self.rng, &stale, &mut self.stats);
        }
        self.stale = stale;
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
                stats: SimStats::default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        // The state stays consistent across a panicking test thread: every
        // mutation is completed before anything that can panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cuts the power now (see the module docs). Open files and every
    /// operation fail until [`SimStorage::restart`]. Does nothing if the
    /// power is already off.
    pub fn power_cut(&self) {
        let mut s = self.lock();
        if s.powered {
            s.cut();
        }
    }

    /// Cuts the power in the middle of the `n`-th operation from now
    /// (1 = the next one); that operation fails.
    pub fn arm_power_cut(&self, n: u64) {
        self.lock().cut_in = Some(n.max(1));
    }

    /// Cancels an armed power cut.
    pub fn disarm_power_cut(&self) {
        self.lock().cut_in = None;
    }

    /// Whether the power is off.
    pub fn is_cut(&self) -> bool {
        !self.lock().powered
    }

    /// Turns the power back on after a cut: what survived is there, handles
    /// opened before the cut stay dead. Stop every user of the old boot first.
    pub fn restart(&self) {
        self.lock().powered = true;
    }

    /// Makes the `n`-th sync from now (1 = the next) fail with `EIO`, and
    /// with `persistent` every sync after it too.
    pub fn fail_sync(&self, n: u64, persistent: bool) {
        self.lock().fail_sync_in = Some((n.max(1), persistent));
    }

    /// Cancels every injected fault that has not happened yet: failing
    /// syncs and reads, short writes, the space limit, read-only directories.
    /// An armed power cut stays armed.
    pub fn clear_faults(&self) {
        let mut s = self.lock();
        s.fail_sync_in = None;
        s.fail_read_in = None;
        s.short_writes = false;
        s.space_limit = None;
        s.read_only.clear();
    }

    /// Makes the `n`-th read from now (1 = the next) fail with `EIO`.
    pub fn fail_read(&self, n: u64) {
        self.lock().fail_read_in = Some(n.max(1));
    }

    /// Turns short writes on or off: each write then stores and reports a
    /// random part of its bytes, at least one.
    pub fn set_short_writes(&self, on: bool) {
        self.lock().short_writes = on;
    }

    /// Limits the bytes all files may hold together; writes past it fail with
    /// `ENOSPC` (after storing what fits). `None` removes the limit.
    pub fn set_space_limit(&self, bytes: Option<u64>) {
        self.lock().space_limit = bytes;
    }

    /// Bytes all files hold now.
    pub fn used_bytes(&self) -> u64 {
        self.lock().total_bytes()
    }

    /// Makes `dir` refuse creations, renames and removals (`EACCES`), or
    /// accept them again.
    pub fn set_read_only(&self, dir: &Path, read_only: bool) {
        let mut s = self.lock();
        if read_only {
            s.read_only.insert(dir.to_path_buf());
        } else {
            s.read_only.remove(dir);
        }
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

impl Storage for SimStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        let mut s = self.lock();
        let boot = s.boot;
        let ino = s.op(boot, |s| {
            let dir = path.parent().unwrap_or(Path::new(""));
            if !s.dirs.contains(dir) {
                return Err(io::ErrorKind::NotFound.into());
            }
            let ino = match s.entries.get(path) {
                Some(_) if opts.create_new => return Err(io::ErrorKind::AlreadyExists.into()),
                Some(&ino) => ino,
                None if opts.create || opts.create_new => {
                    s.denied(path)?;
                    let ino = s.next_inode;
                    s.next_inode += 1;
                    s.inodes.insert(ino, Inode::default());
                    s.link(path, ino);
                    ino
                }
                None => return Err(io::ErrorKind::NotFound.into()),
            };
            if opts.truncate && opts.write {
                s.inodes.get_mut(&ino).ok_or_else(stale_handle)?.set_len(0);
            }
            Ok(ino)
        })?;
        Ok(Box::new(SimFile {
            sim: self.clone(),
            ino,
            boot,
            sync: opts.sync,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            let ino = *s.entries.get(from).ok_or(io::ErrorKind::NotFound)?;
            if !s.dirs.contains(to.parent().unwrap_or(Path::new(""))) {
                return Err(io::ErrorKind::NotFound.into());
            }
            s.denied(from)?;
            s.denied(to)?;
            s.entries.remove(from);
            let replaced = s.entries.insert(to.to_path_buf(), ino);
            s.pending.push(DirChange {
                dir: to.parent().unwrap_or(Path::new("")).to_path_buf(),
                unlink: Some(from.to_path_buf()),
                link: Some((to.to_path_buf(), ino)),
            });
            if let Some(old) = replaced.filter(|&old| old != ino) {
                s.release_if_unreferenced(old);
            }
            Ok(())
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            let ino = *s.entries.get(path).ok_or(io::ErrorKind::NotFound)?;
            s.denied(path)?;
            s.entries.remove(path);
            s.pending.push(DirChange {
                dir: path.parent().unwrap_or(Path::new("")).to_path_buf(),
                unlink: Some(path.to_path_buf()),
                link: None,
            });
            s.release_if_unreferenced(ino);
            Ok(())
        })
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            if !s.dirs.contains(dir) {
                return Err(io::ErrorKind::NotFound.into());
            }
            Ok(s.entries
                .keys()
                .filter(|p| p.parent() == Some(dir))
                .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
                .collect())
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            if !s.dirs.contains(dir) {
                return Err(io::ErrorKind::NotFound.into());
            }
            let fails = s.next_sync_fails();
            let (done, rest): (Vec<DirChange>, Vec<DirChange>) = std::mem::take(&mut s.pending)
                .into_iter()
                .partition(|c| c.dir == dir);
            s.pending = rest;
            if fails {
                // Linux: the failed changes may or may not be on disk; model
                // the worst case, that they are not and the error is not
                // repeated (they stay unsynced until a cut decides).
                s.pending.extend(done);
                return Err(eio("directory fsync"));
            }
            for change in done {
                if let Some(from) = &change.unlink {
                    s.durable_entries.remove(from);
                }
                if let Some((to, ino)) = change.link {
                    s.durable_entries.insert(to, ino);
                }
            }
            Ok(())
        })
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            if s.entries.contains_key(dir) {
                return Err(io::ErrorKind::AlreadyExists.into());
            }
            let mut d = Some(dir);
            while let Some(p) = d.filter(|p| !p.as_os_str().is_empty()) {
                if !s.dirs.contains(p) {
                    s.denied(p)?;
                }
                d = p.parent();
            }
            let mut d = Some(dir);
            while let Some(p) = d.filter(|p| !p.as_os_str().is_empty()) {
                s.dirs.insert(p.to_path_buf());
                d = p.parent();
            }
            Ok(())
        })
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let mut s = self.lock();
        let boot = s.boot;
        s.op(boot, |s| {
            Ok(s.entries.contains_key(path) || s.dirs.contains(path))
        })
    }
}

/// An open file of a [`SimStorage`], dead after a power cut.
struct SimFile {
    sim: SimStorage,
    ino: InodeId,
    boot: u64,
    sync: FileSyncMode,
    path: PathBuf,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("path", &self.path)
            .field("boot", &self.boot)
            .finish_non_exhaustive()
    }
}

impl SimFile {
    fn with<T>(&self, f: impl FnOnce(&mut SimState) -> io::Result<T>) -> io::Result<T> {
        let mut s = self.sim.lock();
        s.op(self.boot, f)
    }
}

impl StorageFile for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.with(|s| {
            if let Some(n) = s.fail_read_in {
                if n <= 1 {
                    s.fail_read_in = None;
                    s.stats.read_failures += 1;
                    return Err(eio("read"));
                }
                s.fail_read_in = Some(n - 1);
            }
            let inode = s.inodes.get(&self.ino).ok_or_else(stale_handle)?;
            let start = (offset as usize).min(inode.data.len());
            let n = buf.len().min(inode.data.len() - start);
            buf[..n].copy_from_slice(&inode.data[start..start + n]);
            Ok(n)
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let sync = self.sync;
        self.with(|s| {
            let mut n = buf.len();
            if s.short_writes && n > 1 {
                let cut = 1 + s.rng.below(n as u64) as usize;
                if cut < n {
                    s.stats.short_writes += 1;
                    n = cut;
                }
            }
            let len = s.inodes.get(&self.ino).ok_or_else(stale_handle)?.data.len() as u64;
            if let Some(limit) = s.space_limit {
                let growth = (offset + n as u64).saturating_sub(len);
                let free = limit.saturating_sub(s.total_bytes());
                if growth > free {
                    let fits = (len + free).saturating_sub(offset) as usize;
                    if fits == 0 || offset > len {
                        s.stats.no_space += 1;
                        return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                    }
                    n = n.min(fits);
                }
            }
            let inode = s.inodes.get_mut(&self.ino).ok_or_else(stale_handle)?;
            inode.write(&buf[..n], offset);
            if sync != FileSyncMode::None {
                if s.next_sync_fails() {
                    if let Some(inode) = s.inodes.get_mut(&self.ino) {
                        inode.sync_failed();
                    }
                    return Err(eio("O_DSYNC write"));
                }
                if let Some(inode) = s.inodes.get_mut(&self.ino) {
                    inode.synced();
                }
            }
            Ok(n)
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.with(|s| s.sync_file(self.ino))
    }

    fn sync_all(&self) -> io::Result<()> {
        self.with(|s| s.sync_file(self.ino))
    }

    fn len(&self) -> io::Result<u64> {
        self.with(|s| Ok(s.inodes.get(&self.ino).ok_or_else(stale_handle)?.data.len() as u64))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(|s| {
            let old = s.inodes.get(&self.ino).ok_or_else(stale_handle)?.data.len() as u64;
            if let Some(limit) = s.space_limit {
                if len > old && s.total_bytes() + (len - old) > limit {
                    s.stats.no_space += 1;
                    return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                }
            }
            s.inodes
                .get_mut(&self.ino)
                .ok_or_else(stale_handle)?
                .set_len(len);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/wal";

    fn disk(seed: u64) -> (SimStorage, PathBuf) {
        let sim = SimStorage::new(seed);
        sim.create_dir_all(Path::new(DIR)).unwrap();
        (sim, PathBuf::from(DIR))
    }

    fn create(sim: &SimStorage, path: &Path) -> Box<dyn StorageFile> {
        sim.open(
            path,
            &OpenOptions::new().read(true).write(true).create(true),
        )
        .unwrap()
    }

    /// A file in `dir` holding `len` bytes of 1, synced with its
    /// directory, then overwritten with 2s, not synced.
    fn synced_then_overwritten(
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

    #[test]
    fn unsynced_sectors_tear_independently_and_synced_ones_stay() {
        let mut outcomes = BTreeSet::new();
        for seed in 0..64 {
            let (sim, dir) = disk(seed);
            let (path, _f) = synced_then_overwritten(&sim, &dir, 2048);
            sim.power_cut();
            sim.restart();
            let data = sim.contents(&path).unwrap();
            assert_eq!(data.len(), 2048);
            let sectors: Vec<u8> = data.chunks(SECTOR).map(|s| s[0]).collect();
            for (s, &first) in data.chunks(SECTOR).zip(&sectors) {
                assert!(
                    s.iter().all(|&b| b == first),
                    "a sector is all old or all new"
                );
                assert!(first == 1 || first == 2);
            }
            outcomes.insert(sectors);
        }
        assert!(
            outcomes.len() > 8,
            "sectors torn in many ways: {outcomes:?}"
        );
    }

    #[test]
    fn directory_changes_need_a_directory_sync() {
        let (mut forgotten, mut kept) = (0, 0);
        for seed in 0..32 {
            let (sim, dir) = disk(seed);
            let f = create(&sim, &dir.join("new"));
            f.write_all_at(b"data", 0).unwrap();
            f.sync_all().unwrap();
            let g = create(&sim, &dir.join("synced"));
            g.sync_all().unwrap();
            sim.sync_dir(&dir).unwrap();
            sim.rename(&dir.join("synced"), &dir.join("renamed"))
                .unwrap();
            sim.power_cut();
            sim.restart();
            let names = sim.list_dir(&dir).unwrap();
            assert!(names.contains(&"new".to_owned()));
            let renamed = names.contains(&"renamed".to_owned());
            assert_ne!(renamed, names.contains(&"synced".to_owned()), "{names:?}");
            if renamed {
                kept += 1;
            } else {
                forgotten += 1;
            }
        }
        assert!(kept > 0 && forgotten > 0);
    }

    #[test]
    fn a_failed_sync_loses_its_data_and_the_next_sync_succeeds() {
        let (sim, dir) = disk(9);
        let (path, f) = synced_then_overwritten(&sim, &dir, 1024);
        sim.fail_sync(1, false);
        let err = f.sync_data().unwrap_err();
        assert_eq!(err.raw_os_error(), None);
        assert!(err.to_string().contains("EIO"), "{err}");
        assert_eq!(
            sim.contents(&path).unwrap(),
            vec![2u8; 1024],
            "reads see the page cache"
        );
        f.sync_data().unwrap();
        sim.power_cut();
        sim.restart();
        assert_eq!(sim.contents(&path).unwrap(), vec![1u8; 1024]);
        assert_eq!(sim.stats().sync_failures, 1);
    }

    #[test]
    fn short_writes_no_space_and_read_errors() {
        let (sim, dir) = disk(5);
        let f = create(&sim, &dir.join("f"));
        sim.set_short_writes(true);
        let mut shorts = 0;
        for i in 0..20u64 {
            let n = f.write_at(&[3u8; 4096], i * 4096).unwrap();
            assert!((1..=4096).contains(&n));
            shorts += usize::from(n < 4096);
        }
        assert!(shorts > 10);
        f.write_all_at(&[4u8; 4096], 0).unwrap();
        sim.set_short_writes(false);
        sim.set_space_limit(Some(sim.used_bytes() + 100));
        let len = f.len().unwrap();
        assert_eq!(f.write_at(&[5u8; 1000], len).unwrap(), 100);
        let err = f.write_at(&[5u8; 1000], len + 100).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        sim.fail_read(2);
        let mut buf = [0u8; 16];
        f.read_at(&mut buf, 0).unwrap();
        assert!(f.read_at(&mut buf, 0).is_err());
        f.read_at(&mut buf, 0).unwrap();
        sim.set_read_only(&dir, true);
        let err = sim
            .open(&dir.join("g"), &OpenOptions::new().write(true).create(true))
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES));
    }

    #[test]
    fn an_armed_cut_interrupts_the_nth_operation_and_kills_old_handles() {
        let (sim, dir) = disk(11);
        let f = create(&sim, &dir.join("f"));
        sim.arm_power_cut(2);
        f.write_all_at(b"a", 0).unwrap();
        assert!(f.write_all_at(b"b", 1).is_err());
        assert!(sim.is_cut());
        assert!(sim.list_dir(&dir).is_err());
        sim.restart();
        assert!(f.len().is_err(), "a handle of the old boot stays dead");
        if let Some(data) = sim.contents(&dir.join("f")) {
            assert!(
                data.is_empty() || data == b"a" || data.len() == 2,
                "{data:?}"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_crash() {
        let run = |seed| {
            let (sim, dir) = disk(seed);
            let f = create(&sim, &dir.join("f"));
            f.sync_all().unwrap();
            sim.sync_dir(&dir).unwrap();
            for i in 0..16u8 {
                f.write_all_at(&[i; 700], u64::from(i) * 700).unwrap();
            }
            sim.power_cut();
            sim.restart();
            sim.contents(&dir.join("f")).unwrap()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
