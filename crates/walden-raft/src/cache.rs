//! [`TailCache`]: the encoded records of the most recently appended
//! entries, so that replication to followers that keep up reads memory,
//! not the WAL.
//!
//! Raft reads the log's tail (followers catching up by a few entries) far
//! more often than its middle, so the cache is the newest consecutive
//! entries rather than an LRU: appending pushes at the back and evicts at
//! the front until the cache fits its capacity. It holds entries encoded
//! (the record's main data), so what it costs is known to the byte.

use std::collections::VecDeque;
use std::mem::size_of;

/// What one cached entry costs beyond its bytes: its slot in the ring.
const SLOT: usize = size_of::<Box<[u8]>>();

/// The newest consecutive entries' encoded records, at most `capacity`
/// bytes (slots included).
#[derive(Debug)]
pub(crate) struct TailCache {
    capacity: usize,
    /// Index of `entries[0]`.
    first: u64,
    entries: VecDeque<Box<[u8]>>,
    /// Bytes charged: each entry's length plus [`SLOT`].
    charged: usize,
}

impl TailCache {
    /// An empty cache of `capacity` bytes (0 caches nothing).
    pub(crate) fn new(capacity: usize) -> Self {
        TailCache {
            capacity,
            first: 0,
            entries: VecDeque::new(),
            charged: 0,
        }
    }

    /// Caches entry `index`'s record `data`. An index that does not follow
    /// the cached ones restarts the cache there.
    pub(crate) fn push(&mut self, index: u64, data: &[u8]) {
        let cost = data.len() + SLOT;
        if cost > self.capacity {
            return self.clear();
        }
        if self.entries.is_empty() || index != self.first + self.entries.len() as u64 {
            self.clear();
            self.first = index;
        }
        self.entries.push_back(data.into());
        self.charged += cost;
        while self.charged > self.capacity {
            self.evict_front();
        }
    }

    /// Entry `index`'s record, if cached.
    pub(crate) fn get(&self, index: u64) -> Option<&[u8]> {
        let at = usize::try_from(index.checked_sub(self.first)?).ok()?;
        self.entries.get(at).map(|e| &e[..])
    }

    /// Index of the oldest cached entry.
    pub(crate) fn first_index(&self) -> Option<u64> {
        (!self.entries.is_empty()).then_some(self.first)
    }

    /// Drops the entries at and after `since`.
    pub(crate) fn truncate(&mut self, since: u64) {
        while self.first + self.entries.len() as u64 > since {
            let Some(last) = self.entries.pop_back() else {
                break;
            };
            self.charged -= last.len() + SLOT;
        }
    }

    /// Drops the entries at and before `upto`.
    pub(crate) fn purge(&mut self, upto: u64) {
        while !self.entries.is_empty() && self.first <= upto {
            self.evict_front();
        }
    }

    fn evict_front(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            self.charged -= e.len() + SLOT;
            self.first += 1;
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.charged = 0;
    }

    /// Heap bytes the cache holds: the entries' bytes and its ring at its
    /// capacity. The ring grows by doubling to at most twice the most
    /// entries ever cached at once, so this stays below twice the
    /// configured capacity.
    pub(crate) fn footprint(&self) -> usize {
        self.charged + (self.entries.capacity() - self.entries.len()) * SLOT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_entries_within_capacity() {
        let mut cache = TailCache::new(3 * (10 + SLOT));
        for i in 0..5u64 {
            cache.push(i, &[i as u8; 10]);
        }
        assert_eq!(cache.first_index(), Some(2));
        assert_eq!(cache.get(1), None);
        assert_eq!(cache.get(4), Some(&[4u8; 10][..]));
        assert!(cache.footprint() >= 3 * (10 + SLOT));
        cache.truncate(4);
        assert_eq!(cache.get(4), None);
        cache.push(4, &[9; 10]);
        assert_eq!(cache.get(4), Some(&[9u8; 10][..]));
        cache.purge(3);
        assert_eq!(cache.first_index(), Some(4));
        cache.push(9, &[1; 10]);
        assert_eq!(cache.first_index(), Some(9), "a gap restarts the cache");
        cache.push(10, &[0; 1000]);
        assert_eq!(
            cache.first_index(),
            None,
            "an entry over capacity empties it"
        );
    }
}
