//! The faults [`SimStorage`] injects on request: failing syncs (with
//! Linux's loss of the unsynced data), failing reads, short writes, a space
//! limit (`ENOSPC`) and read-only directories (`EACCES`).

use std::io;
use std::path::Path;

use super::{eio, stale_handle, InodeId, SimState, SimStorage};

impl SimState {
    pub(super) fn total_bytes(&self) -> u64 {
        self.inodes.values().map(|i| i.data.len() as u64).sum()
    }

    /// Whether `path`'s directory refuses changes.
    pub(super) fn denied(&mut self, path: &Path) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new(""));
        if self.read_only.contains(dir) {
            self.stats.denied += 1;
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        Ok(())
    }

    pub(super) fn next_sync_fails(&mut self) -> bool {
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

    pub(super) fn sync_file(&mut self, ino: InodeId) -> io::Result<()> {
        let fails = self.next_sync_fails();
        let inode = self.inodes.get_mut(&ino).ok_or_else(stale_handle)?;
        if fails {
            inode.sync_failed();
            return Err(eio("fsync"));
        }
        inode.synced();
        Ok(())
    }
}

impl SimStorage {
    /// Makes the `n`-th sync from now (1 = the next) fail with `EIO`, and
    /// with `persistent` every sync after it too.
    pub fn fail_sync(&self, n: u64, persistent: bool) {
        self.lock().fail_sync_in = Some((n.max(1), persistent));
    }

    /// Cancels every injected fault that has not happened yet: failing
    /// syncs and reads, short writes, the space limit, read-only
    /// directories, a missing `fallocate` or `O_DIRECT`.
    /// An armed power cut stays armed.
    pub fn clear_faults(&self) {
        let mut s = self.lock();
        s.fail_sync_in = None;
        s.fail_read_in = None;
        s.short_writes = false;
        s.space_limit = None;
        s.read_only.clear();
        s.no_fallocate = false;
        s.no_direct_io = false;
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

    /// Makes `fallocate` fail as on a file system without it
    /// (`EOPNOTSUPP`, [`std::io::ErrorKind::Unsupported`]), or work again.
    pub fn set_no_fallocate(&self, on: bool) {
        self.lock().no_fallocate = on;
    }

    /// Makes opening a file with [`OpenOptions::direct`] fail with
    /// `EINVAL`, as on a file system without `O_DIRECT`, or work again.
    ///
    /// [`OpenOptions::direct`]: crate::segment::OpenOptions::direct
    pub fn set_no_direct_io(&self, on: bool) {
        self.lock().no_direct_io = on;
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
}

#[cfg(test)]
mod tests {
    use crate::segment::sim::test_disk::{create, disk, synced_then_overwritten};
    use crate::segment::storage::{OpenOptions, Storage};

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
    fn direct_files_take_only_aligned_transfers_and_can_be_refused() {
        use crate::segment::{AlignedPage, DIRECT_IO_ALIGNMENT};
        let (sim, dir) = disk(3);
        let opts = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .direct(true);
        let f = sim.open(&dir.join("d"), &opts).unwrap();
        let page = AlignedPage::boxed();
        f.write_all_at(&page.0, 8192).unwrap();
        let einval = Some(libc::EINVAL);
        for (buf, offset) in [
            (&page.0[..], 512),
            (&page.0[..512], 0),
            (&page.0[8..4104], 0),
        ] {
            let err = f.write_at(buf, offset).unwrap_err();
            assert_eq!(
                err.kind(),
                std::io::Error::from_raw_os_error(libc::EINVAL).kind()
            );
            assert!(err.to_string().contains("not aligned"), "{err}");
        }
        let mut back = AlignedPage::boxed();
        f.read_exact_at(&mut back.0, 8192).unwrap();
        assert!(f.read_at(&mut back.0[..100], 0).is_err());
        sim.set_short_writes(true);
        for i in 0..20u64 {
            let n = f.write_at(&page.0, i * 8192).unwrap();
            assert!(n > 0 && n % DIRECT_IO_ALIGNMENT == 0, "short write of {n}");
        }
        sim.set_no_direct_io(true);
        let refused = sim.open(&dir.join("e"), &opts).unwrap_err();
        assert_eq!(refused.raw_os_error(), einval);
        sim.open(&dir.join("e"), &opts.direct(false)).unwrap();
        sim.clear_faults();
        sim.open(&dir.join("e"), &opts).unwrap();
    }
}
