//! One regular file of the crash-simulating file system: its durable bytes
//! in a backing file, and what was written since the last sync as dirty
//! 512-byte sectors held in memory over them.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::rng::Rng;

/// The unit in which a crash keeps or loses unsynced data.
pub const SECTOR: u64 = 512;

/// The content of one sector.
pub(crate) type Sector = Box<[u8; SECTOR as usize]>;

/// A regular file: durable bytes in `backing`, unsynced ones in `dirty`.
///
/// Visible content: a dirty sector if there is one; else the backing
/// file's bytes below `zero_from`; else zero. Invariants: `zero_from <=
/// durable_len` (the backing file's length) and `zero_from <= len`; every
/// byte of a dirty sector at or past `len` is zero.
#[derive(Debug)]
pub(crate) struct FileData {
    /// The file holding the durable bytes.
    backing: PathBuf,
    /// Length of the backing file.
    durable_len: u64,
    /// Backing bytes at or past this offset are not visible (a truncation
    /// not yet synced).
    zero_from: u64,
    /// Visible length.
    len: u64,
    /// Sectors written since the last sync, by index.
    dirty: BTreeMap<u64, Sector>,
}

/// The sector index of a byte offset.
fn sector_of(offset: u64) -> u64 {
    offset / SECTOR
}

impl FileData {
    /// A new empty file whose durable bytes live in `backing` (created).
    pub(crate) fn create(backing: PathBuf) -> io::Result<FileData> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&backing)?;
        Ok(FileData {
            backing,
            durable_len: 0,
            zero_from: 0,
            len: 0,
            dirty: BTreeMap::new(),
        })
    }

    /// The backing file, opened for reading and writing.
    fn open_backing(&self) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.backing)
    }

    /// Where the durable bytes live.
    pub(crate) fn backing_path(&self) -> &PathBuf {
        &self.backing
    }

    /// Visible length.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether anything (data, length) is not yet durable.
    pub(crate) fn has_unsynced(&self) -> bool {
        !self.dirty.is_empty() || self.len != self.durable_len || self.zero_from != self.durable_len
    }

    /// Up to `size` visible bytes from `offset` (fewer at the end).
    pub(crate) fn read(&self, offset: u64, size: u64) -> io::Result<Vec<u8>> {
        if offset >= self.len || size == 0 {
            return Ok(Vec::new());
        }
        let end = self.len.min(offset.saturating_add(size));
        let mut out = vec![0u8; (end - offset) as usize];
        let base_end = end.min(self.zero_from);
        if offset < base_end {
            self.open_backing()?
                .read_exact_at(&mut out[..(base_end - offset) as usize], offset)?;
        }
        for (&s, data) in self.dirty.range(sector_of(offset)..=sector_of(end - 1)) {
            let (from, to) = ((s * SECTOR).max(offset), ((s + 1) * SECTOR).min(end));
            out[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&data[(from - s * SECTOR) as usize..(to - s * SECTOR) as usize]);
        }
        Ok(out)
    }

    /// The visible content of sector `s`.
    fn sector(&self, s: u64) -> io::Result<Sector> {
        if let Some(data) = self.dirty.get(&s) {
            return Ok(data.clone());
        }
        let mut data: Sector = Box::new([0u8; SECTOR as usize]);
        let start = s * SECTOR;
        let base_end = ((s + 1) * SECTOR).min(self.zero_from);
        if start < base_end {
            self.open_backing()?
                .read_exact_at(&mut data[..(base_end - start) as usize], start)?;
        }
        Ok(data)
    }

    /// Writes `data` at `offset` into the dirty sectors; returns each
    /// touched sector's content before the write (for a torn write).
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<Vec<(u64, Sector)>> {
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let end = offset + data.len() as u64;
        let mut before = Vec::new();
        for s in sector_of(offset)..=sector_of(end - 1) {
            let old = self.sector(s)?;
            let mut new = old.clone();
            let (from, to) = ((s * SECTOR).max(offset), ((s + 1) * SECTOR).min(end));
            new[(from - s * SECTOR) as usize..(to - s * SECTOR) as usize]
                .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
            self.dirty.insert(s, new);
            before.push((s, old));
        }
        self.len = self.len.max(end);
        Ok(before)
    }

    /// Puts back a sector's earlier content (a torn write's lost part).
    pub(crate) fn restore(&mut self, s: u64, data: Sector) {
        if s * SECTOR < self.len {
            self.dirty.insert(s, data);
        }
    }

    /// Sets the visible length (`ftruncate`, or `fallocate` growing it):
    /// bytes past a shrink read as zero if the file grows again.
    pub(crate) fn set_len(&mut self, len: u64) {
        if len < self.len {
            self.zero_from = self.zero_from.min(len);
            let first_gone = len.div_ceil(SECTOR);
            self.dirty.split_off(&first_gone);
            if !len.is_multiple_of(SECTOR) {
                if let Some(data) = self.dirty.get_mut(&sector_of(len)) {
                    data[(len % SECTOR) as usize..].fill(0);
                }
            }
        }
        self.len = len;
    }

    /// Writes the sectors `keep` selects to the backing file (each clipped
    /// to the visible length); returns the end of the last one written.
    fn write_back(&self, file: &File, mut keep: impl FnMut() -> bool) -> io::Result<u64> {
        let mut end = 0;
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        let flush = |run: &mut Vec<u8>, start: u64| -> io::Result<()> {
            if !run.is_empty() {
                file.write_all_at(run, start)?;
                run.clear();
            }
            Ok(())
        };
        for (&s, data) in &self.dirty {
            if !keep() {
                continue;
            }
            let start = s * SECTOR;
            let stop = ((s + 1) * SECTOR).min(self.len);
            if run_start + run.len() as u64 != start {
                flush(&mut run, run_start)?;
                run_start = start;
            }
            run.extend_from_slice(&data[..(stop - start) as usize]);
            end = stop;
        }
        flush(&mut run, run_start)?;
        Ok(end)
    }

    /// Makes everything durable (`fsync`): the backing file becomes the
    /// visible content. (The backing file itself is not synced: the test
    /// process, which holds this state, does not crash.)
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if !self.has_unsynced() {
            return Ok(());
        }
        let file = self.open_backing()?;
        if self.zero_from < self.durable_len {
            file.set_len(self.zero_from)?;
        }
        self.write_back(&file, || true)?;
        file.set_len(self.len)?;
        self.durable_len = self.len;
        self.forget_unsynced();
        Ok(())
    }

    /// A crash that keeps a random part of what was not synced: the pending
    /// truncation, each dirty sector and the new length, each with
    /// probability one half and independently (writes reordered, sectors
    /// torn). Then the visible content is the durable one.
    pub(crate) fn crash_keeping_some(&mut self, rng: &mut Rng) -> io::Result<()> {
        if !self.has_unsynced() {
            return Ok(());
        }
        let file = self.open_backing()?;
        let mut len = self.durable_len;
        if self.zero_from < self.durable_len && rng.coin() {
            file.set_len(self.zero_from)?;
            len = self.zero_from;
        }
        len = len.max(self.write_back(&file, || rng.coin())?);
        if rng.coin() {
            len = self.len;
        }
        file.set_len(len)?;
        self.durable_len = len;
        self.forget_unsynced();
        Ok(())
    }

    /// A crash that loses everything not synced.
    pub(crate) fn forget_unsynced(&mut self) {
        self.dirty.clear();
        self.len = self.durable_len;
        self.zero_from = self.durable_len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir) -> FileData {
        FileData::create(dir.path().join("f")).unwrap()
    }

    #[test]
    fn unsynced_writes_are_visible_and_lost_unless_synced() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = file(&dir);
        f.write(100, b"hello").unwrap();
        assert_eq!(f.len(), 105);
        assert_eq!(&f.read(98, 10).unwrap(), b"\0\0hello");
        f.sync().unwrap();
        f.write(0, &[7u8; 1000]).unwrap();
        f.forget_unsynced();
        assert_eq!(f.len(), 105);
        assert_eq!(&f.read(100, 5).unwrap(), b"hello");
        assert_eq!(f.read(0, 100).unwrap(), vec![0u8; 100]);
        assert_eq!(std::fs::read(f.backing_path()).unwrap().len(), 105);
    }

    #[test]
    fn a_truncation_zeroes_what_grows_back_and_is_undone_by_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = file(&dir);
        f.write(0, &[1u8; 2000]).unwrap();
        f.sync().unwrap();
        f.set_len(700);
        f.set_len(1500);
        let got = f.read(0, 2000).unwrap();
        assert_eq!(got.len(), 1500);
        assert!(got[..700].iter().all(|&b| b == 1));
        assert!(got[700..].iter().all(|&b| b == 0));
        f.forget_unsynced();
        assert_eq!(f.read(0, 4000).unwrap(), vec![1u8; 2000]);
        f.set_len(10);
        f.write(600, b"x").unwrap();
        f.sync().unwrap();
        let got = std::fs::read(f.backing_path()).unwrap();
        assert_eq!(got.len(), 601);
        assert_eq!(&got[..10], &[1u8; 10]);
        assert!(got[10..600].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_partial_crash_keeps_whole_sectors_of_the_new_content_or_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let mut mixed = 0;
        for seed in 0..16 {
            let mut f = FileData::create(dir.path().join(seed.to_string())).unwrap();
            f.write(0, &[1u8; 4096]).unwrap();
            f.sync().unwrap();
            f.write(0, &[2u8; 4096]).unwrap();
            f.crash_keeping_some(&mut Rng::new(seed)).unwrap();
            assert!(!f.has_unsynced());
            let got = f.read(0, 8192).unwrap();
            assert_eq!(got.len(), 4096);
            let mut seen = [false; 3];
            for sector in got.chunks(SECTOR as usize) {
                assert!(sector.iter().all(|&b| b == sector[0]), "a torn sector");
                seen[sector[0] as usize] = true;
            }
            mixed += usize::from(seen[1] && seen[2]);
        }
        assert!(mixed > 0, "no crash kept part of the 8 sectors");
    }
}
