//! [`SimStats`]: what a [`SimStorage`](super::SimStorage) did and injected.

/// What happened on a [`SimStorage`](super::SimStorage) so far: operations, power cuts and the
/// faults injected, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Storage and file operations carried out or failed.
    pub ops: u64,
    /// Power cuts.
    pub power_cuts: u64,
    /// Unsynced sectors that reverted at a power cut.
    pub sectors_lost: u64,
    /// Unsynced sectors that survived a power cut.
    pub sectors_kept: u64,
    /// Reverted sectors filled with stale bytes of a removed file.
    pub stale_sectors: u64,
    /// Unsynced directory changes forgotten at a power cut.
    pub dir_changes_lost: u64,
    /// Unsynced directory changes kept at a power cut.
    pub dir_changes_kept: u64,
    /// Syncs: file and directory syncs, and writes to files opened with
    /// `O_DSYNC`/`O_SYNC`.
    pub syncs: u64,
    /// Syncs failed with `EIO`.
    pub sync_failures: u64,
    /// Writes cut short.
    pub short_writes: u64,
    /// Writes or extensions failed with `ENOSPC`.
    pub no_space: u64,
    /// Reads failed with `EIO`.
    pub read_failures: u64,
    /// Operations refused in a read-only directory.
    pub denied: u64,
    /// Files extended by `fallocate` ([`StorageFile::allocate`](crate::StorageFile::allocate)).
    pub allocations: u64,
    /// Write-back hints ([`StorageFile::start_writeback`](crate::StorageFile::start_writeback)):
    /// counted and nothing more; they make nothing durable.
    pub writeback_hints: u64,
}
