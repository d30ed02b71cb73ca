//! Compaction: how purged entries leave the disk, by way of Walden's
//! checkpoint.
//!
//! # The invariant
//!
//! **The first record of the segment that holds the last checkpoint's redo
//! point starts a complete description of the raft log: replaying every
//! store record from there to the end of WAL rebuilds the log.**
//!
//! Walden's checkpoint takes the insert position as its redo point and, before
//! it returns, recycles or removes every segment *below the redo point's
//! segment*. Re-logging the state after the checkpoint would leave a window
//! (checkpoint done, re-logged records not yet durable) in which a crash loses
//! the whole log. So compaction re-logs first and checkpoints after, inside
//! one segment:
//!
//! 1. if the log has not left the redo point's segment, a checkpoint would
//!    free nothing: stop;
//! 2. if the rebuild records (purge point, vote, committed, live entries) do
//!    not fit in one segment, stop: nothing is reclaimed until more is purged;
//! 3. switch to a fresh segment `k` (an `XLOG_SWITCH` record), so the
//!    rebuild records start segment `k`;
//! 4. insert the rebuild records and flush them;
//! 5. checkpoint: its redo point is the insert position, still in segment
//!    `k`, so segment `k` is kept and everything below it goes.
//!
//! Recovery replays from the start of the redo point's segment. A crash
//! before step 5 completes leaves the previous checkpoint in force: replay
//! starts at the previous segment and also meets the rebuild records (all or
//! a prefix), which describe exactly the log as it already is at that point
//! and so change nothing (see `LogContents::rebuild_records`). A crash after
//! step 5 replays from segment `k`, whose records start with the complete
//! rebuild. The store is the only writer of its Walden log and never calls
//! [`Wal::close`] (whose shutdown checkpoint would drop older segments
//! without re-logging); dropping the store flushes instead.

use std::path::Path;

use walden::{Lsn, Record, SegmentSize, Wal};

use crate::error::RaftStoreError;

/// What [`crate::WaldenLogStore::compact`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compaction {
    /// A checkpoint now points into segment `segno`, which starts with the
    /// rebuild records; the segments below it were recycled or removed.
    Done {
        /// The segment recovery now starts at.
        segno: u64,
        /// Rebuild records written.
        records: usize,
        /// Their size in WAL bytes (alignment included, page headers not).
        bytes: u64,
    },
    /// The log has not left the segment the last checkpoint points into: a
    /// checkpoint would free nothing.
    NothingToReclaim,
    /// The rebuild records do not fit in one segment, so they cannot lead a
    /// segment that a checkpoint keeps; nothing was reclaimed.
    TooLarge {
        /// WAL bytes the rebuild records need.
        bytes: u64,
        /// Record bytes one segment holds.
        capacity: u64,
    },
}

/// Where recovery starts, and how compaction moves it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkpoints {
    seg: SegmentSize,
    /// The segment holding the last checkpoint's redo point.
    redo_segno: u64,
}

impl Checkpoints {
    /// For a log whose last checkpoint's redo point is `redo`.
    pub(crate) fn new(seg: SegmentSize, redo: Lsn) -> Self {
        Checkpoints {
            seg,
            redo_segno: seg.segno(redo),
        }
    }

    /// Where replay starts: the first record of the redo point's segment.
    pub(crate) fn replay_start(&self) -> Lsn {
        self.seg.segment_start(self.redo_segno)
    }

    /// Runs the compaction steps of the module documentation on `wal` (in
    /// `dir`, for messages); `rebuild` gives the rebuild records, asked for
    /// only when there is something to reclaim. The caller must be the only
    /// inserter into `wal` for the duration.
    ///
    /// PostgreSQL: `CreateCheckPoint`, with re-logging the live state in
    /// place of flushing dirty buffers.
    pub(crate) fn compact(
        &mut self,
        wal: &Wal,
        dir: &Path,
        rebuild: impl FnOnce() -> Result<Vec<Record<'static>>, RaftStoreError>,
    ) -> Result<Compaction, RaftStoreError> {
        let outcome = self.write_rebuild(wal, dir, rebuild)?;
        if let Compaction::Done { segno, .. } = outcome {
            wal.checkpoint().map_err(|source| RaftStoreError::Wal {
                dir: dir.to_path_buf(),
                source,
            })?;
            self.redo_segno = segno;
        }
        Ok(outcome)
    }

    /// Steps 1 to 4, everything but the checkpoint. Returns `Done` once the
    /// rebuild records lead segment `segno` and are durable: a checkpoint
    /// may then be taken.
    pub(crate) fn write_rebuild(
        &self,
        wal: &Wal,
        dir: &Path,
        rebuild: impl FnOnce() -> Result<Vec<Record<'static>>, RaftStoreError>,
    ) -> Result<Compaction, RaftStoreError> {
        let wal_err = |source| RaftStoreError::Wal {
            dir: dir.to_path_buf(),
            source,
        };
        if self.seg.segno(wal.insert_position()) <= self.redo_segno {
            return Ok(Compaction::NothingToReclaim);
        }
        let records = rebuild()?;
        let bytes: u64 = records.iter().map(|r| r.aligned_len()).sum();
        let capacity = self.seg.usable_bytes();
        if bytes >= capacity {
            return Ok(Compaction::TooLarge { bytes, capacity });
        }
        wal.switch_segment().map_err(wal_err)?;
        let start = wal.insert_position();
        let segno = self.seg.segno(start);
        let expected = self.seg.pos_to_start_lsn(segno * capacity);
        if start != expected {
            return Err(RaftStoreError::SwitchMisplaced {
                dir: dir.to_path_buf(),
                segno,
                expected,
                actual: start,
            });
        }
        let mut end = None;
        for record in &records {
            end = Some(wal.insert(record).map_err(wal_err)?);
        }
        if let Some(end) = end {
            wal.flush(end).map_err(wal_err)?;
        }
        if self.seg.segno(wal.insert_position()) != segno {
            // Cannot happen when `bytes < capacity`; if it did, a checkpoint
            // now would drop the start of the rebuild records.
            return Ok(Compaction::TooLarge { bytes, capacity });
        }
        Ok(Compaction::Done {
            segno,
            records: records.len(),
            bytes,
        })
    }
}
