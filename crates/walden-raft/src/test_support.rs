//! Types and builders shared by the unit tests.

use std::io::Cursor;

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};

openraft::declare_raft_types!(
    /// A type config with openraft's default types.
    pub TestConfig
);

/// Log id `(term, node 0, index)`.
pub fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 0), index)
}

/// A normal entry at `(term, index)` whose request is `len` bytes naming
/// its index.
pub fn entry(term: u64, index: u64, len: usize) -> Entry<TestConfig> {
    let request = format!("{index:>width$}", width = len);
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(request),
    }
}
