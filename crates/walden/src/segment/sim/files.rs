//! [`SimStorage`] as a [`Storage`]: the namespace operations, and the file
//! handles ([`SimFile`]) that die with the power.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::{eio, stale_handle, DirChange, Inode, InodeId, SimState, SimStorage};
use crate::segment::direct_io::{is_direct_aligned, DIRECT_IO_ALIGNMENT};
use crate::segment::storage::{FileSyncMode, LockOutcome, OpenOptions, Storage, StorageFile};

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
            if opts.direct && s.no_direct_io {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
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
            direct: opts.direct,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.op(|s| {
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
        self.op(|s| {
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
        self.op(|s| {
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
        self.op(|s| {
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
        self.op(|s| {
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

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.op(|s| {
            if !s.dirs.contains(dir) {
                return Err(io::ErrorKind::NotFound.into());
            }
            let holds = |p: &Path| p.parent() == Some(dir);
            if s.entries.keys().any(|p| holds(p)) || s.dirs.iter().any(|p| holds(p)) {
                return Err(io::ErrorKind::DirectoryNotEmpty.into());
            }
            s.denied(dir)?;
            s.dirs.remove(dir);
            Ok(())
        })
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.op(|s| Ok(s.entries.contains_key(path) || s.dirs.contains(path)))
    }

    /// In memory ([`LockTable`](crate::segment::LockTable)), not counted
    /// as an operation; a power cut releases every lock.
    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        let s = self.lock();
        if !s.powered {
            return Err(super::power_off());
        }
        Ok(s.locks.try_lock(path, holder))
    }
}

/// An open file of a [`SimStorage`], dead after a power cut.
struct SimFile {
    sim: SimStorage,
    ino: InodeId,
    boot: u64,
    sync: FileSyncMode,
    /// Opened with `O_DIRECT`: every transfer must be aligned.
    direct: bool,
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

    /// Fails as Linux does (`EINVAL`) a transfer of `buf` at `offset` that
    /// a file opened with `O_DIRECT` cannot make.
    fn check_direct(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.direct && !is_direct_aligned(buf, offset) {
            return Err(io::Error::new(
                io::Error::from_raw_os_error(libc::EINVAL).kind(),
                format!(
                    "simulated O_DIRECT transfer of {} bytes at offset {offset} from address \
                     {:#x} is not aligned to {DIRECT_IO_ALIGNMENT} (EINVAL)",
                    buf.len(),
                    buf.as_ptr() as usize
                ),
            ));
        }
        Ok(())
    }

    /// How many of `n` bytes a short or space-limited write may store: on a
    /// direct file, whole alignment units (0 if not even one fits).
    fn whole_units(&self, n: usize) -> usize {
        if self.direct {
            n - n % DIRECT_IO_ALIGNMENT
        } else {
            n
        }
    }
}

impl StorageFile for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.check_direct(buf, offset)?;
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
        self.check_direct(buf, offset)?;
        let sync = self.sync;
        self.with(|s| {
            let mut n = buf.len();
            if s.short_writes && n > 1 {
                let cut = self.whole_units(1 + s.rng.below(n as u64) as usize);
                if cut > 0 && cut < n {
                    s.stats.short_writes += 1;
                    n = cut;
                }
            }
            let len = s.inodes.get(&self.ino).ok_or_else(stale_handle)?.data.len() as u64;
            if let Some(limit) = s.space_limit {
                let growth = (offset + n as u64).saturating_sub(len);
                let free = limit.saturating_sub(s.total_bytes());
                if growth > free {
                    let fits = self.whole_units((len + free).saturating_sub(offset) as usize);
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

    /// Counted, and nothing more: the written sectors stay unsynced, so a
    /// power cut may still revert them (only syncs make data durable).
    fn start_writeback(&self, _offset: u64, _len: u64) -> io::Result<()> {
        self.with(|s| {
            s.inodes.get(&self.ino).ok_or_else(stale_handle)?;
            s.stats.writeback_hints += 1;
            Ok(())
        })
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

    /// Like a `set_len` that never shrinks: the new bytes are zeros and
    /// the new length is unsynced, so a power cut before a sync may take it
    /// back and leave the allocated tail as zeros, random or stale bytes,
    /// as for any unsynced growth.
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.with(|s| {
            if s.no_fallocate {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "simulated file system without fallocate (EOPNOTSUPP)",
                ));
            }
            let old = s.inodes.get(&self.ino).ok_or_else(stale_handle)?.data.len() as u64;
            if len <= old {
                return Ok(());
            }
            if let Some(limit) = s.space_limit {
                if s.total_bytes() + (len - old) > limit {
                    s.stats.no_space += 1;
                    return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                }
            }
            s.stats.allocations += 1;
            s.inodes
                .get_mut(&self.ino)
                .ok_or_else(stale_handle)?
                .set_len(len);
            Ok(())
        })
    }
}
