//! The writer's counters: writes, syncs and group flushes.

use std::time::Duration;

use super::Caller;

/// Number of power-of-two write-size buckets kept (8 kB ... 1 GiB and up).
pub const WRITE_SIZE_BUCKETS: usize = 18;

/// Number of power-of-two flush-group-size buckets kept (1, 2, 3–4, 5–8,
/// ... 513–1024 flush calls, and more).
pub const FLUSH_GROUP_BUCKETS: usize = 12;

/// Index of the power-of-two bucket holding `units` (bucket `i` holds
/// `2^(i-1) < units <= 2^i`; 0 and 1 go to bucket 0), capped at `buckets - 1`.
fn pow2_bucket(units: u64, buckets: usize) -> usize {
    (units.max(1).next_power_of_two().trailing_zeros() as usize).min(buckets - 1)
}

/// Counters of the writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct WriterStats {
    /// `write` system calls issued.
    pub writes: u64,
    /// Bytes written: handed to `write` calls. These are whole pages (the
    /// writer writes whole pages, buffered or direct), and a partially
    /// filled page counts each time it is written again.
    pub bytes_written: u64,
    /// Of `bytes_written`, those written by the background writer's rounds.
    pub bytes_by_background_writer: u64,
    /// Of `bytes_written`, those written by evictions: inserters that found
    /// the ring page they needed unwritten (PostgreSQL: `wal_buffers_full`).
    pub bytes_by_evictions: u64,
    /// Of `bytes_written`, those written by flush calls.
    pub bytes_by_flushes: u64,
    /// Of `bytes_written`, those of large records' whole pages that their
    /// inserters wrote straight from the caller's bytes
    /// ([`crate::Config::write_through_from`]), with the ring's pages
    /// below them, written in the same write.
    #[cfg_attr(feature = "serde", serde(default))]
    pub bytes_by_write_through: u64,
    /// Writes of large records' pages ahead of the written point, with the
    /// CRC beside the write ([`crate::Config::crc_helper`]); their bytes
    /// count in `bytes_by_write_through`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub writes_ahead: u64,
    /// Times the background writer took the write lock.
    pub background_lock_acquisitions: u64,
    /// Acquisitions of the write lock by others (evictions, flushes) while
    /// the background writer waited for it, summed over its waits: 0 with
    /// [`crate::Config::write_lock_handoff`].
    pub background_lock_overtaken: u64,
    /// The most acquisitions by others during one wait of the background
    /// writer for the write lock.
    pub background_lock_most_overtaken: u64,
    /// Largest single write, bytes.
    pub largest_write: u64,
    /// Writes by size: bucket `i` counts writes of at most `8 KiB << i`
    /// bytes (the last bucket counts all larger ones).
    pub write_sizes: [u64; WRITE_SIZE_BUCKETS],
    /// Syncs issued (fsync/fdatasync calls; with `OpenDatasync`/`OpenSync`
    /// every write is one, counted here as well).
    pub syncs: u64,
    /// Time spent in syncs (and in synchronous writes).
    pub sync_time: Duration,
    /// Of `syncs`, those that started while another sync was in flight
    /// ([`crate::Config::concurrent_syncs`]; always 0 without it).
    #[cfg_attr(feature = "serde", serde(default))]
    pub concurrent_syncs: u64,
    /// Calls that wanted data durable.
    pub flush_requests: u64,
    /// Of those, calls that waited for another thread's flush and found
    /// their data durable after it.
    pub flushes_covered_by_others: u64,
    /// Group flushes: rounds in which a flush call led (the commit queue's
    /// leader) and made everything finished durable with its own sync, for
    /// itself and for the flush calls it covered.
    pub flush_groups: u64,
    /// Flush calls served by those rounds, their leaders included: the sum
    /// of the group sizes. Every flush call that succeeds is counted here
    /// exactly once, as a member of the latest group flush when it found
    /// its data durable (or, before the first one, of none: an eviction's
    /// write made it durable), so once no flush is in progress this equals
    /// the successful `flush_requests`.
    pub flush_group_members: u64,
    /// Largest group: the most flush calls one round served.
    pub largest_flush_group: u64,
    /// Group flushes by size: bucket `i` counts groups of more than
    /// `2^(i-1)` and at most `2^i` flush calls (bucket 0: a leader alone;
    /// the last bucket counts all larger ones).
    pub flush_group_sizes: [u64; FLUSH_GROUP_BUCKETS],
}

impl WriterStats {
    /// A write of `n` bytes for `caller`.
    pub(super) fn count_write(&mut self, n: u64, caller: Caller) {
        self.writes += 1;
        self.bytes_written += n;
        *match caller {
            Caller::BackgroundWriter => &mut self.bytes_by_background_writer,
            Caller::Eviction => &mut self.bytes_by_evictions,
            Caller::Flush => &mut self.bytes_by_flushes,
            Caller::WriteThrough => &mut self.bytes_by_write_through,
        } += n;
        self.largest_write = self.largest_write.max(n);
        self.write_sizes[pow2_bucket(n.div_ceil(8192), WRITE_SIZE_BUCKETS)] += 1;
    }

    /// The background writer took the write lock after `overtaken`
    /// acquisitions by others while it waited.
    pub(super) fn count_background_lock(&mut self, overtaken: u64) {
        self.background_lock_acquisitions += 1;
        self.background_lock_overtaken += overtaken;
        self.background_lock_most_overtaken = self.background_lock_most_overtaken.max(overtaken);
    }

    /// The background writer's share of the bytes written, 0 to 1 (0 when
    /// nothing was written).
    pub fn background_writer_share(&self) -> f64 {
        if self.bytes_written == 0 {
            0.0
        } else {
            self.bytes_by_background_writer as f64 / self.bytes_written as f64
        }
    }

    /// A sync (or a synchronous write) that took `took`.
    pub(super) fn count_sync(&mut self, took: Duration) {
        self.syncs += 1;
        self.sync_time += took;
    }

    pub(super) fn count_flush_group(&mut self, size: u64) {
        self.flush_groups += 1;
        self.flush_group_members += size;
        self.largest_flush_group = self.largest_flush_group.max(size);
        self.flush_group_sizes[pow2_bucket(size, FLUSH_GROUP_BUCKETS)] += 1;
    }
}
