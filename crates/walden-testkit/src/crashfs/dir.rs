//! One directory of the crash-simulating file system: the entries a crash
//! keeps, and the operations on it since its last sync, in order.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// A change to one directory's entries.
#[derive(Clone, Debug)]
enum DirOp {
    /// A name now refers to an inode (create, mkdir, the target side of a
    /// rename from another directory).
    Link(OsString, u64),
    /// A name is gone (unlink, rmdir, the source side of a rename to
    /// another directory).
    Unlink(OsString),
    /// A rename inside this directory: atomic, as in a journal.
    Rename(OsString, OsString),
}

impl DirOp {
    /// Applies the operation to `entries`.
    fn apply(&self, entries: &mut BTreeMap<OsString, u64>) {
        match self {
            DirOp::Link(name, ino) => {
                entries.insert(name.clone(), *ino);
            }
            DirOp::Unlink(name) => {
                entries.remove(name);
            }
            DirOp::Rename(from, to) => {
                if let Some(ino) = entries.remove(from) {
                    entries.insert(to.clone(), ino);
                }
            }
        }
    }
}

/// A directory: durable entries, the operations not yet synced, and the
/// visible entries (the durable ones with the operations applied).
#[derive(Debug, Default)]
pub(crate) struct Dir {
    durable: BTreeMap<OsString, u64>,
    pending: Vec<DirOp>,
    visible: BTreeMap<OsString, u64>,
}

impl Dir {
    /// The visible entries.
    pub(crate) fn entries(&self) -> &BTreeMap<OsString, u64> {
        &self.visible
    }

    /// The inode `name` refers to.
    pub(crate) fn get(&self, name: &OsStr) -> Option<u64> {
        self.visible.get(name).copied()
    }

    /// The inodes of the visible entries.
    pub(crate) fn entries_now(&self) -> impl Iterator<Item = u64> + '_ {
        self.visible.values().copied()
    }

    /// The inodes of the durable entries (what a crash leaves, once it has
    /// chosen).
    pub(crate) fn durable(&self) -> impl Iterator<Item = u64> + '_ {
        self.durable.values().copied()
    }

    fn push(&mut self, op: DirOp) {
        op.apply(&mut self.visible);
        self.pending.push(op);
    }

    /// `name` now refers to `ino`.
    pub(crate) fn link(&mut self, name: &OsStr, ino: u64) {
        self.push(DirOp::Link(name.to_owned(), ino));
    }

    /// `name` is gone.
    pub(crate) fn unlink(&mut self, name: &OsStr) {
        self.push(DirOp::Unlink(name.to_owned()));
    }

    /// `from` is renamed `to` (replacing it).
    pub(crate) fn rename(&mut self, from: &OsStr, to: &OsStr) {
        self.push(DirOp::Rename(from.to_owned(), to.to_owned()));
    }

    /// Makes every operation durable (`fsync` of the directory).
    pub(crate) fn sync(&mut self) {
        self.keep_first(self.pending.len());
    }

    /// A crash that keeps the first `n` operations (a journal persists a
    /// prefix) and loses the rest.
    pub(crate) fn keep_first(&mut self, n: usize) {
        for op in self.pending.drain(..n.min(self.pending.len())) {
            op.apply(&mut self.durable);
        }
        self.pending.clear();
        self.visible = self.durable.clone();
    }

    /// Operations not yet durable.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_keeps_a_prefix_of_the_operations() {
        let mut d = Dir::default();
        d.link("a".as_ref(), 2);
        d.sync();
        d.link("t".as_ref(), 3);
        d.rename("t".as_ref(), "b".as_ref());
        d.unlink("a".as_ref());
        assert_eq!(d.entries().keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(d.pending_len(), 3);
        d.keep_first(2);
        assert_eq!(d.get("a".as_ref()), Some(2));
        assert_eq!(d.get("b".as_ref()), Some(3));
        assert_eq!(d.get("t".as_ref()), None);
        assert_eq!(d.pending_len(), 0);
        d.unlink("b".as_ref());
        d.keep_first(0);
        assert_eq!(d.durable().collect::<Vec<_>>(), [2, 3]);
    }
}
