//! Inserting a [`Batch`]: one reservation for the batch marker and every
//! record, one pass copying them in.
//!
//! The reservation holds a [`BatchMarker`] (an `XLOG_NOOP` record naming
//! how many records follow and the bytes they take) and then the records,
//! each chained to the one before it; the next reservation links to the
//! batch's last record ([`super::reserve::Reserver::reserve_batch`]). With
//! every design the batch is one reservation: the prev-links inside it are
//! known from the positions alone. Recovery (`wal/open.rs`) drops a batch
//! whose records are not all valid, so a batch survives a crash whole or
//! not at all. A batch of one record is inserted as that record alone.
//! PostgreSQL: none (its records are inserted one at a time).

use super::page_run::reserved_size;
use super::pending::{body_len, Pending};
use super::slots::InsertionProgress;
use super::{CriticalSection, InsertPath, RecordSpan};
use crate::error::Error;
use crate::format::message::BatchMarker;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_NOOP};
use crate::lsn::Lsn;
use crate::record::{Batch, Record, RecordError};

/// Where a batch landed: each record's span, in the batch's order, and the
/// end to pass to [`crate::Wal::flush`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchSpans {
    /// Each record's start and end LSN (the batch marker is not listed).
    pub records: Vec<RecordSpan>,
    /// The LSN just past the batch's last record ([`Lsn::INVALID`] for an
    /// empty batch, which inserts nothing).
    pub end: Lsn,
}

impl InsertPath {
    /// Inserts `batch`; see [`crate::Wal::insert_batch`].
    pub(crate) fn insert_batch(&self, batch: &Batch) -> Result<BatchSpans, Error> {
        let mut records = Vec::with_capacity(batch.len());
        let end = self.insert_batch_with(batch, |s| records.push(s))?;
        Ok(BatchSpans { records, end })
    }

    /// Inserts `batch` and returns only its end; see
    /// [`crate::Wal::insert_batch_end`].
    pub(crate) fn insert_batch_end(&self, batch: &Batch) -> Result<Lsn, Error> {
        self.insert_batch_with(batch, |_| {})
    }

    /// Inserts `batch`, reporting each record's span to `placed` in the
    /// batch's order; returns the batch's end ([`Lsn::INVALID`] for an
    /// empty batch).
    fn insert_batch_with(
        &self,
        batch: &Batch,
        mut placed: impl FnMut(RecordSpan),
    ) -> Result<Lsn, Error> {
        let records = batch.records();
        if let [only] = records {
            let span = self.insert(only)?;
            placed(span);
            return Ok(span.end);
        }
        let Some(last) = records.last() else {
            return Ok(Lsn::INVALID);
        };
        let format = self.format;
        // Validated and sized as they were added to the batch.
        let bytes = batch.reserved_bytes(format.record_header_size())?;
        let count =
            u32::try_from(records.len()).map_err(|_| RecordError::BatchTooLarge(records.len()))?;
        self.writer.check()?;
        let marker = BatchMarker {
            records: count,
            bytes,
        };
        let marker_data = marker.encode();
        let marker_rec = Record::new(RM_XLOG_ID, XLOG_NOOP, &marker_data[..]);
        let marker_item = Pending::new(format, &marker_rec);
        let total = marker_item.size + bytes;
        let last = total - reserved_size(format, body_len(last));
        // The records are built as they are placed, their CRCs computed
        // from the caller's bytes in the pass that copies them
        // (`page_run`).
        let _critical = CriticalSection;
        let slot = self.slots.acquire(self.slot_choice);
        let r = self.reserver.reserve_batch(total, last);
        let placed = self.place_run(r, marker_item, records, &slot, placed);
        // The marker is not counted: `Stats::records` counts the caller's records.
        slot.count_records(records.len() as u64, total);
        placed?;
        Ok(self.seg.pos_to_end_lsn(r.end))
    }
}
