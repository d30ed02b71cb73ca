//! [`DiscardStorage`]: a [`Storage`] that keeps file names and lengths in
//! memory and drops every byte written, so that a benchmark of the insert
//! path measures the insert path and not the page cache (algorithms.md
//! E4: "write to tmpfs or discard").
//!
//! Reads return zeros. Good for creating a log, inserting and closing it;
//! not for opening one again.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use walden::{LockOutcome, LockTable, OpenOptions, Storage, StorageFile};

/// See the module docs.
#[derive(Debug, Default)]
pub struct DiscardStorage {
    names: Mutex<Names>,
    locks: LockTable,
}

#[derive(Debug, Default)]
struct Names {
    files: BTreeMap<PathBuf, Arc<DiscardFile>>,
    dirs: BTreeSet<PathBuf>,
}

impl DiscardStorage {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    fn names(&self) -> MutexGuard<'_, Names> {
        // A poisoned lock is recovered: the maps are updated in one step.
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

impl Storage for DiscardStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        let mut names = self.names();
        let file = match names.files.get(path) {
            Some(_) if opts.create_new => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ))
            }
            Some(file) => file.clone(),
            None if opts.create || opts.create_new => {
                let file = Arc::new(DiscardFile::default());
                names.files.insert(path.to_path_buf(), file.clone());
                file
            }
            None => return Err(not_found(path)),
        };
        if opts.truncate {
            file.set_len(0)?;
        }
        Ok(Box::new(Handle(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut names = self.names();
        let file = names.files.remove(from).ok_or_else(|| not_found(from))?;
        names.files.insert(to.to_path_buf(), file);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.names()
            .files
            .remove(path)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let names = self.names();
        if !names.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(names
            .files
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut names = self.names();
        for d in dir.ancestors() {
            names.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let names = self.names();
        Ok(names.files.contains_key(path) || names.dirs.contains(path))
    }

    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        Ok(self.locks.try_lock(path, holder))
    }
}

/// A file: only its length is kept.
#[derive(Debug, Default)]
struct DiscardFile {
    len: AtomicU64,
}

impl DiscardFile {
    fn set_len(&self, len: u64) -> io::Result<()> {
        // Relaxed: the length is the only state; no other data to order.
        self.len.store(len, Ordering::Relaxed);
        Ok(())
    }
}

/// An open [`DiscardFile`].
#[derive(Debug)]
struct Handle(Arc<DiscardFile>);

impl StorageFile for Handle {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let len = self.len()?;
        let n = (len.saturating_sub(offset)).min(buf.len() as u64) as usize;
        buf[..n].fill(0);
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        // Relaxed: as in `set_len`.
        self.0
            .len
            .fetch_max(offset + buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn sync_all(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        // Relaxed: as in `set_len`.
        Ok(self.0.len.load(Ordering::Relaxed))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        // Relaxed: as in `set_len`.
        self.0.len.fetch_max(len, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lengths_are_kept_bytes_are_not() {
        let s = DiscardStorage::new();
        let dir = Path::new("/wal");
        s.create_dir_all(dir).unwrap();
        let opts = OpenOptions::new().write(true).create(true);
        let f = s.open(&dir.join("a.tmp"), &opts).unwrap();
        f.write_all_at(&[7; 10], 90).unwrap();
        assert_eq!(f.len().unwrap(), 100);
        f.allocate(50).unwrap();
        assert_eq!(f.len().unwrap(), 100, "allocating never shrinks");
        f.allocate(120).unwrap();
        assert_eq!(f.len().unwrap(), 120);
        f.set_len(100).unwrap();
        s.rename(&dir.join("a.tmp"), &dir.join("a")).unwrap();
        assert!(!s.exists(&dir.join("a.tmp")).unwrap());
        assert_eq!(s.list_dir(dir).unwrap(), vec!["a".to_owned()]);
        let mut buf = [1u8; 20];
        let g = s
            .open(&dir.join("a"), &OpenOptions::new().read(true))
            .unwrap();
        assert_eq!(g.read_at(&mut buf, 95).unwrap(), 5);
        assert_eq!(buf[..5], [0; 5]);
        let err = s.open(&dir.join("a"), &opts.create_new(true)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        s.remove_file(&dir.join("a")).unwrap();
        assert_eq!(
            s.open(&dir.join("a"), &OpenOptions::new().read(true))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }
}
