//! The real file system with the opening of files handed to a hook: the
//! storage of the tests that hold or wrap what a log does to its files.

use std::fmt::Debug;
use std::io;
use std::path::Path;

use walden::{FsStorage, LockOutcome, OpenOptions, Storage, StorageFile};

/// What [`HookedFs`] does to open a file.
pub trait OpenHook: Send + Sync + Debug {
    /// Opens `path` as `opts` say (with [`FsStorage`], held or wrapped).
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>>;
}

/// [`FsStorage`], but for opening files, which the hook does.
#[derive(Debug)]
pub struct HookedFs<H>(pub H);

impl<H: OpenHook> Storage for HookedFs<H> {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        self.0.open(path, opts)
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
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        FsStorage.remove_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        FsStorage.exists(path)
    }
    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        FsStorage.try_lock(path, holder)
    }
}
