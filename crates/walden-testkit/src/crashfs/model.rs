//! The state of the crash-simulating file system, independent of FUSE:
//! inodes (directories and regular files), what each operation does to
//! them, and what a crash keeps.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io;
use std::path::PathBuf;

use super::dir::Dir;
use super::file::{FileData, Sector};
use super::rng::Rng;
use super::CrashPolicy;

/// The root directory's inode number (FUSE's).
pub(crate) const ROOT: u64 = 1;

/// What an inode is.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A directory.
    Dir(Dir),
    /// A regular file.
    File(FileData),
}

/// An inode: its kind and permission bits.
#[derive(Debug)]
pub(crate) struct Node {
    /// Directory or file.
    pub(crate) kind: Kind,
    /// Permission bits (`st_mode & 07777`).
    pub(crate) perm: u16,
}

/// The sectors the last write touched, with their content before it.
#[derive(Debug)]
struct LastWrite {
    ino: u64,
    before: Vec<(u64, Sector)>,
}

/// A failed operation: the `errno` FUSE answers.
pub(crate) type OpResult<T> = Result<T, i32>;

/// The `errno` of an I/O error of the backing store.
fn errno(e: io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// What one crash did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Files that had data or a length not yet synced.
    pub files_unsynced: usize,
    /// Directory operations not yet synced (create, rename, unlink).
    pub dir_ops_unsynced: usize,
    /// Files and directories reachable before the crash that no entry
    /// reaches after it (created, or renamed, without a sync of the
    /// directory).
    pub files_lost: usize,
}

/// Every inode, the backing directory their durable bytes live in, and the
/// last write (which a torn crash tears).
#[derive(Debug)]
pub(crate) struct Model {
    store: PathBuf,
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    last_write: Option<LastWrite>,
}

impl Model {
    /// An empty file system whose durable file contents live in `store`
    /// (an existing, empty directory).
    pub(crate) fn new(store: PathBuf) -> Model {
        let root = Node {
            kind: Kind::Dir(Dir::default()),
            perm: 0o755,
        };
        Model {
            store,
            nodes: HashMap::from([(ROOT, root)]),
            next_ino: ROOT + 1,
            last_write: None,
        }
    }

    /// The inode `ino`.
    pub(crate) fn node(&self, ino: u64) -> OpResult<&Node> {
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    fn dir(&self, ino: u64) -> OpResult<&Dir> {
        match &self.node(ino)?.kind {
            Kind::Dir(d) => Ok(d),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> OpResult<&mut Dir> {
        match &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::Dir(d) => Ok(d),
            Kind::File(_) => Err(libc::ENOTDIR),
        }
    }

    fn file_mut(&mut self, ino: u64) -> OpResult<&mut FileData> {
        match &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::File(f) => Ok(f),
            Kind::Dir(_) => Err(libc::EISDIR),
        }
    }

    /// The inode `name` in directory `parent` refers to.
    pub(crate) fn lookup(&self, parent: u64, name: &OsStr) -> OpResult<u64> {
        self.dir(parent)?.get(name).ok_or(libc::ENOENT)
    }

    /// The entries of directory `ino`, as (inode, name).
    pub(crate) fn list(&self, ino: u64) -> OpResult<Vec<(u64, std::ffi::OsString)>> {
        Ok(self
            .dir(ino)?
            .entries()
            .iter()
            .map(|(name, &ino)| (ino, name.clone()))
            .collect())
    }

    /// Creates `name` in `parent`: a directory, or an empty file.
    pub(crate) fn create(
        &mut self,
        parent: u64,
        name: &OsStr,
        perm: u16,
        directory: bool,
    ) -> OpResult<u64> {
        if self.dir(parent)?.get(name).is_some() {
            return Err(libc::EEXIST);
        }
        let ino = self.next_ino;
        let kind = if directory {
            Kind::Dir(Dir::default())
        } else {
            Kind::File(FileData::create(self.store.join(ino.to_string())).map_err(errno)?)
        };
        self.next_ino += 1;
        self.nodes.insert(ino, Node { kind, perm });
        self.dir_mut(parent)?.link(name, ino);
        Ok(ino)
    }

    /// Removes `name` from `parent`: a file (`unlink`) or an empty
    /// directory (`rmdir`).
    pub(crate) fn remove(&mut self, parent: u64, name: &OsStr, directory: bool) -> OpResult<()> {
        let ino = self.lookup(parent, name)?;
        match (&self.node(ino)?.kind, directory) {
            (Kind::Dir(d), true) if !d.entries().is_empty() => return Err(libc::ENOTEMPTY),
            (Kind::Dir(_), false) => return Err(libc::EISDIR),
            (Kind::File(_), true) => return Err(libc::ENOTDIR),
            _ => {}
        }
        self.dir_mut(parent)?.unlink(name);
        Ok(())
    }

    /// Renames `parent/name` to `new_parent/new_name`, replacing a target
    /// of the same kind (an empty directory only) unless `no_replace`.
    pub(crate) fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        no_replace: bool,
    ) -> OpResult<()> {
        let ino = self.lookup(parent, name)?;
        let source_is_dir = matches!(self.node(ino)?.kind, Kind::Dir(_));
        if let Some(target) = self.dir(new_parent)?.get(new_name) {
            if target == ino {
                return Ok(());
            }
            if no_replace {
                return Err(libc::EEXIST);
            }
            match (&self.node(target)?.kind, source_is_dir) {
                (Kind::Dir(d), true) if !d.entries().is_empty() => return Err(libc::ENOTEMPTY),
                (Kind::Dir(_), false) => return Err(libc::EISDIR),
                (Kind::File(_), true) => return Err(libc::ENOTDIR),
                _ => {}
            }
        }
        if parent == new_parent {
            self.dir_mut(parent)?.rename(name, new_name);
        } else {
            self.dir_mut(new_parent)?.link(new_name, ino);
            self.dir_mut(parent)?.unlink(name);
        }
        Ok(())
    }

    /// Reads up to `size` bytes of file `ino` at `offset`.
    pub(crate) fn read(&mut self, ino: u64, offset: u64, size: u64) -> OpResult<Vec<u8>> {
        self.file_mut(ino)?.read(offset, size).map_err(errno)
    }

    /// Writes `data` to file `ino` at `offset`; when the file was opened
    /// with `O_DSYNC` or `O_SYNC` (`sync`), the file is synced at once
    /// (the kernel's FUSE sends an `fsync` of the file after such a write
    /// anyway, so no stricter model could be seen).
    pub(crate) fn write(&mut self, ino: u64, offset: u64, data: &[u8], sync: bool) -> OpResult<()> {
        let file = self.file_mut(ino)?;
        let before = file.write(offset, data).map_err(errno)?;
        if sync {
            file.sync().map_err(errno)?;
            self.last_write = None;
        } else {
            self.last_write = Some(LastWrite { ino, before });
        }
        Ok(())
    }

    /// Sets the length of file `ino`.
    pub(crate) fn set_len(&mut self, ino: u64, len: u64) -> OpResult<()> {
        self.file_mut(ino)?.set_len(len);
        self.forget_last_write_of(ino);
        Ok(())
    }

    /// Sets the permission bits of `ino`.
    pub(crate) fn set_perm(&mut self, ino: u64, perm: u16) -> OpResult<()> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.perm = perm;
        Ok(())
    }

    /// Makes file `ino` at least `len` bytes long (`fallocate`).
    pub(crate) fn allocate(&mut self, ino: u64, len: u64) -> OpResult<()> {
        let file = self.file_mut(ino)?;
        if len > file.len() {
            file.set_len(len);
        }
        Ok(())
    }

    /// `fsync`/`fdatasync` of a file (its data and length) or a directory
    /// (its entries).
    pub(crate) fn sync(&mut self, ino: u64) -> OpResult<()> {
        match &mut self.nodes.get_mut(&ino).ok_or(libc::ENOENT)?.kind {
            Kind::Dir(d) => d.sync(),
            Kind::File(f) => f.sync().map_err(errno)?,
        }
        self.forget_last_write_of(ino);
        Ok(())
    }

    fn forget_last_write_of(&mut self, ino: u64) {
        if self.last_write.as_ref().is_some_and(|w| w.ino == ino) {
            self.last_write = None;
        }
    }

    /// A crash under `policy`: afterwards the visible state is the durable
    /// one, and inodes no durable entry reaches are gone.
    pub(crate) fn crash(&mut self, policy: CrashPolicy, rng: &mut Rng) -> io::Result<CrashReport> {
        let mut report = CrashReport::default();
        let visible = self.reachable(Dir::entries_now);
        for node in self.nodes.values() {
            match &node.kind {
                Kind::File(f) => report.files_unsynced += usize::from(f.has_unsynced()),
                Kind::Dir(d) => report.dir_ops_unsynced += d.pending_len(),
            }
        }
        if policy == CrashPolicy::TearLastWrite {
            if let Some(w) = self.last_write.take() {
                if let Some(Node {
                    kind: Kind::File(f),
                    ..
                }) = self.nodes.get_mut(&w.ino)
                {
                    for (s, before) in w.before {
                        if rng.coin() {
                            f.restore(s, before);
                        }
                    }
                }
            }
        }
        // A stable order, so that a seed replays the same crash.
        let mut inos: Vec<u64> = self.nodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let Some(node) = self.nodes.get_mut(&ino) else {
                continue;
            };
            match (&mut node.kind, policy) {
                (Kind::File(f), CrashPolicy::LoseUnsynced) => f.forget_unsynced(),
                (Kind::File(f), CrashPolicy::KeepRandomSectors) => f.crash_keeping_some(rng)?,
                (Kind::File(f), CrashPolicy::TearLastWrite) => f.sync()?,
                (Kind::Dir(d), CrashPolicy::LoseUnsynced) => d.keep_first(0),
                (Kind::Dir(d), CrashPolicy::KeepRandomSectors) => {
                    let n = rng.below(d.pending_len() as u64 + 1) as usize;
                    d.keep_first(n);
                }
                (Kind::Dir(d), CrashPolicy::TearLastWrite) => d.sync(),
            }
        }
        self.last_write = None;
        let reached = self.reachable(Dir::durable);
        report.files_lost = visible.difference(&reached).count();
        self.remove_all_but(&reached)?;
        Ok(report)
    }

    /// The inodes reached from the root through `entries` of each directory.
    fn reachable<'a, I: Iterator<Item = u64> + 'a>(
        &'a self,
        entries: impl Fn(&'a Dir) -> I,
    ) -> HashSet<u64> {
        let mut reached = HashSet::from([ROOT]);
        let mut todo = vec![ROOT];
        while let Some(ino) = todo.pop() {
            if let Some(Node {
                kind: Kind::Dir(d), ..
            }) = self.nodes.get(&ino)
            {
                for child in entries(d) {
                    if reached.insert(child) {
                        todo.push(child);
                    }
                }
            }
        }
        reached
    }

    /// Removes every inode but `keep` (and their backing files).
    fn remove_all_but(&mut self, keep: &HashSet<u64>) -> io::Result<()> {
        let gone: Vec<u64> = self
            .nodes
            .keys()
            .copied()
            .filter(|ino| !keep.contains(ino))
            .collect();
        for ino in gone {
            if let Some(Node {
                kind: Kind::File(f),
                ..
            }) = self.nodes.remove(&ino)
            {
                std::fs::remove_file(f.backing_path())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTOR_BYTES: usize = super::super::file::SECTOR as usize;

    fn model(dir: &tempfile::TempDir) -> Model {
        Model::new(dir.path().to_path_buf())
    }

    #[test]
    fn a_file_whose_directory_was_not_synced_is_lost_even_if_synced() {
        let store = tempfile::tempdir().unwrap();
        let mut m = model(&store);
        let d = m.create(ROOT, "wal".as_ref(), 0o755, true).unwrap();
        m.sync(ROOT).unwrap();
        let f = m.create(d, "seg".as_ref(), 0o644, false).unwrap();
        m.write(f, 0, b"data", false).unwrap();
        m.sync(f).unwrap();
        let report = m
            .crash(CrashPolicy::LoseUnsynced, &mut Rng::new(1))
            .unwrap();
        assert_eq!(report.dir_ops_unsynced, 1);
        assert_eq!(report.files_lost, 1);
        assert_eq!(m.lookup(d, "seg".as_ref()), Err(libc::ENOENT));
        assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);

        let f = m.create(d, "seg".as_ref(), 0o644, false).unwrap();
        m.sync(d).unwrap();
        m.write(f, 0, b"data", true).unwrap();
        m.write(f, 4, b"more", false).unwrap();
        m.crash(CrashPolicy::LoseUnsynced, &mut Rng::new(1))
            .unwrap();
        let f = m.lookup(d, "seg".as_ref()).unwrap();
        assert_eq!(m.read(f, 0, 100).unwrap(), b"data");
    }

    #[test]
    fn a_torn_crash_keeps_earlier_writes_and_part_of_the_last() {
        let mut torn = 0;
        for seed in 0..16 {
            let store = tempfile::tempdir().unwrap();
            let mut m = model(&store);
            let f = m
                .create(ROOT, seed.to_string().as_ref(), 0o644, false)
                .unwrap();
            m.sync(ROOT).unwrap();
            m.write(f, 0, &[1u8; 2048], false).unwrap();
            m.write(f, 0, &[2u8; 2048], false).unwrap();
            m.crash(CrashPolicy::TearLastWrite, &mut Rng::new(seed))
                .unwrap();
            let got = m.read(f, 0, 4096).unwrap();
            assert_eq!(got.len(), 2048, "the first write's length is kept");
            let twos = got.iter().filter(|&&b| b == 2).count();
            assert_eq!(got.iter().filter(|&&b| b == 1).count() + twos, 2048);
            assert_eq!(twos % SECTOR_BYTES, 0);
            torn += usize::from(twos != 0 && twos != 2048);
        }
        assert!(torn > 0, "no seed tore the last write");
    }

    #[test]
    fn renames_are_atomic_and_a_random_crash_keeps_a_prefix() {
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..32 {
            let store = tempfile::tempdir().unwrap();
            let mut m = model(&store);
            let d = m
                .create(ROOT, seed.to_string().as_ref(), 0o755, true)
                .unwrap();
            m.sync(ROOT).unwrap();
            let old = m.create(d, "old".as_ref(), 0o644, false).unwrap();
            m.sync(d).unwrap();
            let t = m.create(d, "tmp".as_ref(), 0o644, false).unwrap();
            m.rename(d, "tmp".as_ref(), d, "old".as_ref(), false)
                .unwrap();
            m.crash(CrashPolicy::KeepRandomSectors, &mut Rng::new(seed))
                .unwrap();
            let names: Vec<_> = m.list(d).unwrap();
            match names.as_slice() {
                [(ino, name)] if name == "old" && *ino == old => outcomes.insert(0),
                [(ino, name), (_, tmp)] if name == "old" && *ino == old && tmp == "tmp" => {
                    outcomes.insert(1)
                }
                [(ino, name)] if name == "old" && *ino == t => outcomes.insert(2),
                other => panic!("not a prefix of the operations: {other:?}"),
            };
        }
        assert_eq!(outcomes.len(), 3, "every prefix occurs over 32 seeds");
    }
}
