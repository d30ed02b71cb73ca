//! Compaction: how purged entries leave the disk, by way of
//! [`Wal::checkpoint_to`].
//!
//! # The invariant
//!
//! **Replaying every store record from the last checkpoint's redo point to
//! the end of WAL rebuilds the raft log.**
//!
//! Entries are appended in index order, and a truncation only removes
//! entries at the end, so the live entries' records sit in the WAL in index
//! order: everything from the first live entry's record on describes the
//! live entries completely (truncations and re-appends included). What lies
//! before it and still matters is the vote, the committed log id and the
//! purge point. So compaction, after a purge:
//!
//! 1. takes `X`, the start of the first live entry's record (the insert
//!    position if none is left);
//! 2. if `X` is in the redo point's segment, a checkpoint would free
//!    nothing: stop;
//! 3. logs the state records (purge point, vote, committed log id) again,
//!    after `X`, and flushes them;
//! 4. checkpoints with its redo point at `X`: the segments wholly below `X`
//!    are recycled or removed.
//!
//! A crash before step 4 completes leaves the previous checkpoint in force:
//! replay starts earlier and meets the restated records, which restate what
//! the log already holds at that point. A crash after step 4 replays from
//! `X`. Nothing is re-logged but three small records: the entries stay
//! where they are.
//!
//! The store is the only writer of its Walden log and never checkpoints it
//! otherwise (a plain [`Wal::checkpoint`] would put the redo point at the
//! insert position, past the live entries).

use std::path::Path;

use walden::{Batch, Lsn, Record, SegmentSize, Wal};

use crate::error::RaftStoreError;

/// What [`crate::WaldenLogStore::compact`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compaction {
    /// A checkpoint now has its redo point at `redo`, the start of the
    /// first live entry's record (or the insert position when no entry is
    /// live); the segments below it were recycled or removed.
    Done {
        /// Where recovery now starts.
        redo: Lsn,
    },
    /// The first live entry is in the segment the last checkpoint points
    /// into: a checkpoint would free nothing.
    NothingToReclaim,
}

/// Where recovery starts, and how compaction moves it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checkpoints {
    seg: SegmentSize,
    /// The last checkpoint's redo point.
    redo: Lsn,
}

impl Checkpoints {
    /// For a log whose last checkpoint's redo point is `redo`.
    pub(crate) fn new(seg: SegmentSize, redo: Lsn) -> Self {
        Checkpoints { seg, redo }
    }

    /// Where replay starts: the redo point.
    pub(crate) fn replay_start(&self) -> Lsn {
        self.redo
    }

    /// Runs the compaction steps of the module documentation on `wal` (in
    /// `dir`, for messages) for a log whose first live entry's record
    /// starts at `first_live` (`None`: no live entry); `state` are the
    /// state records, logged only when there is something to reclaim.
    /// The caller must be the only inserter into `wal` for the duration.
    ///
    /// PostgreSQL: `CreateCheckPoint`, with the redo point chosen by the
    /// application.
    pub(crate) fn compact(
        &mut self,
        wal: &Wal,
        dir: &Path,
        first_live: Option<Lsn>,
        state: Vec<Record<'static>>,
    ) -> Result<Compaction, RaftStoreError> {
        let wal_err = |source| RaftStoreError::Wal {
            dir: dir.to_path_buf(),
            source,
        };
        let redo = first_live.unwrap_or_else(|| wal.insert_position());
        if self.seg.segno(redo) <= self.seg.segno(self.redo) {
            return Ok(Compaction::NothingToReclaim);
        }
        let batch: Batch = state.into_iter().collect();
        let spans = wal.insert_batch(&batch).map_err(wal_err)?;
        if spans.end.is_valid() {
            wal.flush(spans.end).map_err(wal_err)?;
        }
        wal.checkpoint_to(redo).map_err(wal_err)?;
        self.redo = redo;
        Ok(Compaction::Done { redo })
    }
}
