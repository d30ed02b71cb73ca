//! [`LockTable`]: the locks of [`Storage::try_lock`](super::Storage::try_lock)
//! kept in memory, for storages without real files to `flock`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::storage::{LockOutcome, StorageLock};

/// Exclusive locks by path, held until their guard drops or
/// [`LockTable::release_all`] (a simulated process death) ends them all.
/// Cloning gives another handle on the same table.
#[derive(Clone, Debug, Default)]
pub struct LockTable {
    inner: Arc<Mutex<Locks>>,
}

#[derive(Debug, Default)]
struct Locks {
    /// The token of each held lock's guard, and its holder.
    held: BTreeMap<PathBuf, (u64, String)>,
    /// The token of the next lock taken.
    next_token: u64,
}

impl LockTable {
    /// A table with no lock held.
    pub fn new() -> Self {
        LockTable::default()
    }

    fn locks(&self) -> MutexGuard<'_, Locks> {
        // Every mutation completes before anything that can panic.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`Storage::try_lock`](super::Storage::try_lock) on this table.
    pub fn try_lock(&self, path: &Path, holder: &str) -> LockOutcome {
        let mut locks = self.locks();
        if let Some((_, held_by)) = locks.held.get(path) {
            return LockOutcome::Held(held_by.clone());
        }
        let token = locks.next_token;
        locks.next_token += 1;
        locks
            .held
            .insert(path.to_path_buf(), (token, holder.to_owned()));
        LockOutcome::Acquired(Box::new(TableLock {
            table: self.clone(),
            path: path.to_path_buf(),
            token,
        }))
    }

    /// Releases every lock, as the death of the processes holding them does;
    /// their guards no longer hold anything.
    pub fn release_all(&self) {
        self.locks().held.clear();
    }
}

/// A lock of a [`LockTable`], released on drop unless it ended earlier.
#[derive(Debug)]
struct TableLock {
    table: LockTable,
    path: PathBuf,
    token: u64,
}

impl StorageLock for TableLock {}

impl Drop for TableLock {
    fn drop(&mut self) {
        let mut locks = self.table.locks();
        if locks
            .held
            .get(&self.path)
            .is_some_and(|l| l.0 == self.token)
        {
            locks.held.remove(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquired(outcome: LockOutcome) -> Box<dyn StorageLock> {
        match outcome {
            LockOutcome::Acquired(guard) => guard,
            LockOutcome::Held(holder) => panic!("held by {holder:?}"),
        }
    }

    #[test]
    fn a_lock_excludes_until_dropped_or_released() {
        let table = LockTable::new();
        let path = Path::new("/wal/walden.lock");
        let first = acquired(table.try_lock(path, "1"));
        assert!(matches!(table.try_lock(path, "2"), LockOutcome::Held(h) if h == "1"));
        drop(first);
        let second = acquired(table.try_lock(path, "2"));
        table.release_all();
        let third = acquired(table.try_lock(path, "3"));
        // The released guard must not end the lock taken after it.
        drop(second);
        assert!(matches!(table.try_lock(path, "4"), LockOutcome::Held(h) if h == "3"));
        drop(third);
        acquired(table.try_lock(path, "5"));
    }
}
