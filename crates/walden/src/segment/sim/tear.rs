//! The power-cut model of [`SimStorage`]: every sector written since its
//! file's last successful sync survives or reverts on its own, a reverted
//! sector past the durable length holds zeros, random or stale bytes, and
//! each directory change not followed by a sync of its directory is kept or
//! forgotten.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{Rng, SimState, SimStats, SimStorage};

/// The sector size at which unsynced writes tear.
pub const SECTOR_SIZE: u64 = 512;
pub(super) const SECTOR: usize = SECTOR_SIZE as usize;
/// Bytes of removed files kept as the source of stale sector contents.
const STALE_POOL_BYTES: usize = 64 << 20;

/// A sector written since the last sync that reached it.
#[derive(Debug)]
pub(super) struct Unsynced {
    /// Its durable bytes (fewer than a sector, or none, at or past the
    /// durable length).
    old: Vec<u8>,
    /// A sync failed after it was written: it reverts at the next power cut.
    lost: bool,
}

/// A file's contents: what reads see, and how to get back to what is durable.
#[derive(Debug, Default)]
pub(super) struct Inode {
    pub(super) data: Vec<u8>,
    pub(super) durable_len: u64,
    /// The length changed (or a sync covering it failed) since the last sync.
    pub(super) len_unsynced: bool,
    pub(super) unsynced: BTreeMap<u64, Unsynced>,
}

impl Inode {
    /// Records the durable contents of the sectors of `start..end` before
    /// they change.
    pub(super) fn touch(&mut self, start: u64, end: u64) {
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

    pub(super) fn write(&mut self, buf: &[u8], offset: u64) {
        let end = offset + buf.len() as u64;
        let from = offset.min(self.data.len() as u64);
        self.touch(from, end);
        if self.data.len() < end as usize {
            self.data.resize(end as usize, 0);
            self.len_unsynced = true;
        }
        self.data[offset as usize..end as usize].copy_from_slice(buf);
    }

    pub(super) fn set_len(&mut self, len: u64) {
        let old = self.data.len() as u64;
        if len != old {
            self.touch(len.min(old), len.max(old));
            self.data.resize(len as usize, 0);
            self.len_unsynced = true;
        }
    }

    /// A sync succeeded: everything written is durable, except sectors a
    /// failed sync already dropped (the page cache marked them clean).
    pub(super) fn synced(&mut self) {
        self.unsynced.retain(|_, u| u.lost);
        if self.unsynced.is_empty() {
            self.durable_len = self.data.len() as u64;
            self.len_unsynced = false;
        }
    }

    /// A sync failed: what it should have written is dropped.
    pub(super) fn sync_failed(&mut self) {
        for u in self.unsynced.values_mut() {
            u.lost = true;
        }
    }

    /// The power went: keep or revert each unsynced sector.
    pub(super) fn crash(&mut self, rng: &mut Rng, stale: &[u8], stats: &mut SimStats) {
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

pub(super) type InodeId = u64;

/// A directory change not yet made durable.
#[derive(Debug, Clone)]
pub(super) struct DirChange {
    pub(super) dir: PathBuf,
    /// Entry removed (the source of a rename, or a removal).
    pub(super) unlink: Option<PathBuf>,
    /// Entry added (a creation, or the target of a rename).
    pub(super) link: Option<(PathBuf, InodeId)>,
}

impl SimState {
    pub(super) fn link(&mut self, path: &Path, ino: InodeId) {
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
    pub(super) fn release_if_unreferenced(&mut self, ino: InodeId) {
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
    pub(super) fn cut(&mut self) {
        self.powered = false;
        self.boot += 1;
        self.locks.release_all();
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

impl SimStorage {
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
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::SECTOR;
    use crate::segment::sim::test_disk::{create, disk, synced_then_overwritten};
    use crate::segment::storage::Storage;

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
