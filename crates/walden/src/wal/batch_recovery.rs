//! Recovery's view of batches: a batch marker read opens a batch that its
//! records close; one still open at the end of WAL is dropped (see
//! `wal/open.rs`). PostgreSQL: none.

use crate::format::message::BatchMarker;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_NOOP};
use crate::lsn::{maxalign, Lsn, SegmentSize};
use crate::read::WalRecord;

/// A batch whose marker recovery has read and not all of whose records yet.
pub(super) struct OpenBatch {
    /// The marker's LSN.
    pub(super) marker: Lsn,
    /// The last record before it.
    pub(super) before: Option<Lsn>,
    /// The records before it.
    pub(super) records_before: u64,
    /// Its records not read yet.
    pub(super) left: u32,
    /// The LSN just past its reservation.
    pub(super) end: Lsn,
}

impl OpenBatch {
    /// True if `rec` is the marker of a batch of at least one record.
    pub(super) fn is_marker(rec: &WalRecord) -> bool {
        Self::marker_of(rec).is_some()
    }

    /// The marker `rec` holds, if it is one of a batch of records.
    fn marker_of(rec: &WalRecord) -> Option<BatchMarker> {
        if (rec.header.rmid, rec.header.info) != (RM_XLOG_ID, XLOG_NOOP) {
            return None;
        }
        let marker = BatchMarker::decode(rec.parse_body().ok()?.main_data)?;
        // Walden never writes an empty batch's marker: nothing to close.
        (marker.records > 0).then_some(marker)
    }

    /// The batch `rec` opens, if it is a batch marker.
    pub(super) fn opened_by(
        rec: &WalRecord,
        seg: SegmentSize,
        before: Option<Lsn>,
        records_before: u64,
    ) -> Option<Self> {
        let marker = Self::marker_of(rec)?;
        let marker_end = seg.lsn_to_pos(rec.lsn)? + maxalign(u64::from(rec.header.tot_len));
        Some(OpenBatch {
            marker: rec.lsn,
            before,
            records_before,
            left: marker.records,
            end: seg.pos_to_end_lsn(marker_end + marker.bytes),
        })
    }
}
