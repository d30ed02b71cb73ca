//! Recovery's reading of the log under a [`RecoveryMode`]: reading to the
//! end of WAL, skipping invalid WAL (`SkipAnyCorruptedRecords`), and the
//! checks of the modes that refuse (`TolerateCorruptedTailRecords`,
//! `AbsoluteConsistency`). `PointInTimeRecovery` reads as PostgreSQL's
//! `StartupXLOG` does and checks nothing more. RocksDB: `WALRecoveryMode`
//! in `DBImpl::RecoverLogFiles`.
//!
//! Skipping resumes only at the start of a later segment, whose first page
//! carries the long header that ties it to its position; the rest of the
//! damaged segment is skipped. A segment recovery removed or that a
//! checkpoint recycled holds no page of its new position (the page address
//! differs), and after the switch record of an unclean open the writer
//! fills the rest of its segment with zero pages before the open returns.
//! What this cannot tell: a log opened after a clean shutdown whose
//! recovery stopped at damage keeps its later segments (no fresh segment
//! is started then) and writes over them as it goes; their records past
//! what was rewritten belong to the history before the damage, and a later
//! skip could resume among them. Records read after resuming before the
//! first one no batch can span (a batch marker, or a checkpoint, switch or
//! overwrite-contrecord record, which Walden writes as their own
//! reservations) are dropped: they may be the tail of a batch whose marker
//! was in the skipped WAL.

use super::batch_recovery::OpenBatch;
use crate::config::{RecoveryMode, RecoveryRefused};
use crate::error::Error;
use crate::format::record::XLR_RMGR_INFO_MASK;
use crate::format::rmgr::{
    is_switch, RM_XLOG_ID, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN,
    XLOG_OVERWRITE_CONTRECORD, XLOG_SWITCH,
};
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use crate::read::{EndOfWalReason, ReadError, ReaderOptions, StorageSource, WalReader, WalRecord};
use crate::segment::{ControlFile, FileOp, IoFailure, SegmentError, SegmentFiles};

/// WAL that [`RecoveryMode::SkipAnyCorruptedRecords`] skipped, and the valid
/// records it dropped with it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SkippedWal {
    /// The first byte not kept: where the invalid record was due, or the
    /// marker of the batch it was in.
    pub from: Lsn,
    /// The first record kept after it; `None`: nothing after it was kept,
    /// and the log continues at `from` (in a fresh segment).
    pub resumed: Option<Lsn>,
    /// Why the WAL was invalid at `from` (the end-of-WAL reason).
    pub reason: String,
    /// Valid records dropped: those of a batch the damage cut, and those
    /// read after the damage before `resumed`.
    pub records_dropped: u64,
}

/// The log read from the redo point to the end of WAL.
pub(super) struct Scan {
    /// The reader, standing after the last record kept.
    pub(super) reader: WalReader,
    /// Records kept.
    pub(super) records: u64,
    /// A batch still open at the end of WAL.
    pub(super) open_batch: Option<OpenBatch>,
    /// Why reading stopped (text for the report).
    pub(super) stop: String,
    /// Why reading stopped, unless at an end limit.
    pub(super) reason: Option<EndOfWalReason>,
    /// What was skipped, in LSN order.
    pub(super) skipped: Vec<SkippedWal>,
    /// What each switch record read swallowed: from its end to the end of
    /// its segment, in LSN order.
    pub(super) swallowed: Vec<(Lsn, Lsn)>,
}

/// A reader of `files` from `start` on.
fn reader_at(files: &SegmentFiles, control: &ControlFile, start: Lsn) -> Result<WalReader, Error> {
    let opts = ReaderOptions {
        start: Some(start),
        end: None,
        timeline: control.timeline,
    };
    let source = StorageSource::new(files.storage().clone(), files.dir(), files.segment_size());
    Ok(WalReader::with_source(Box::new(source), opts)?)
}

/// Reads from the redo point to the end of WAL, skipping invalid WAL in
/// [`RecoveryMode::SkipAnyCorruptedRecords`].
pub(super) fn read_to_end(
    files: &SegmentFiles,
    control: &ControlFile,
    mode: RecoveryMode,
) -> Result<Scan, Error> {
    let seg = control.segment_size;
    let mut reader = reader_at(files, control, control.redo)?;
    let mut records = 0u64;
    let mut open_batch: Option<OpenBatch> = None;
    let mut skipped = Vec::new();
    let mut swallowed = Vec::new();
    // The record reading resumed at, and the one read before it.
    let mut pending: Option<(WalRecord, Option<Lsn>)> = None;
    let (stop, reason) = loop {
        let (read, before) = match pending.take() {
            Some((rec, before)) => (Ok(Some(rec)), before),
            None => {
                let before = reader.last_good();
                (reader.next_record(), before)
            }
        };
        match read {
            Ok(Some(rec)) => {
                records += 1;
                if is_switch(&rec.header) {
                    swallowed.push((rec.end, Lsn(rec.end.0.next_multiple_of(seg.bytes()))));
                }
                match &mut open_batch {
                    Some(b) => {
                        b.left -= 1;
                        if b.left == 0 {
                            open_batch = None;
                        }
                    }
                    None => open_batch = OpenBatch::opened_by(&rec, seg, before, records - 1),
                }
            }
            Ok(None) => break ("end of the requested range".to_owned(), None),
            Err(ReadError::EndOfWal { last_good, reason }) => {
                let text = ReadError::EndOfWal {
                    last_good,
                    reason: reason.clone(),
                }
                .to_string();
                if mode != RecoveryMode::SkipAnyCorruptedRecords {
                    break (text, Some(reason));
                }
                let Some(resync) = resync(files, control, damaged_segment(&reader, &reason, seg))?
                else {
                    // Nothing valid follows: the damage is the tail.
                    break (text, Some(reason));
                };
                let (from, in_batch) = match &open_batch {
                    Some(b) => (b.marker, records - b.records_before),
                    None => (reader.next_lsn(), 0),
                };
                skipped.push(SkippedWal {
                    from,
                    resumed: resync.anchor.as_ref().map(|rec| rec.lsn),
                    reason: reason.to_string(),
                    records_dropped: in_batch + resync.dropped,
                });
                let Some(anchor) = resync.anchor else {
                    // Valid records after the damage, none of which can
                    // be kept: the log ends at it as in the other modes
                    // (a batch it cut is dropped by the caller).
                    let stop = format!(
                        "{text}; the {} valid records after it were dropped",
                        resync.dropped
                    );
                    break (stop, Some(reason));
                };
                records -= in_batch;
                open_batch = None;
                reader = resync.reader;
                pending = Some((anchor, resync.before));
            }
            Err(e) => return Err(e.into()),
        }
    };
    Ok(Scan {
        reader,
        records,
        open_batch,
        stop,
        reason,
        skipped,
        swallowed,
    })
}

/// The segment the invalid WAL that stopped `reader` lies in: the later of
/// the segment where the next record was due and the one named by the
/// reason (a continuation page, a missing or short segment).
fn damaged_segment(reader: &WalReader, reason: &EndOfWalReason, seg: SegmentSize) -> u64 {
    let due = seg.segno(reader.next_lsn());
    reason.lsn().map_or(due, |at| due.max(seg.segno(at)))
}

/// Where reading resumed after invalid WAL.
struct Resync {
    /// The reader standing on `anchor`.
    reader: WalReader,
    /// The first record kept, if any was found before the end of WAL.
    anchor: Option<WalRecord>,
    /// Valid records read before it and dropped.
    dropped: u64,
    /// The last of them: where the log continues from if `anchor` opens a
    /// batch that the end of WAL cuts.
    before: Option<Lsn>,
}

/// Resumes reading after segment `damaged`: at the first record of the
/// first later segment that has one, and from there at the first record no
/// earlier batch can span. `None` if no later segment holds a valid record.
fn resync(
    files: &SegmentFiles,
    control: &ControlFile,
    damaged: u64,
) -> Result<Option<Resync>, Error> {
    let seg = control.segment_size;
    let Some(&last) = files.list()?.last() else {
        return Ok(None);
    };
    let mut reader = reader_at(files, control, seg.segment_start(damaged + 1))?;
    let mut segno = damaged + 1;
    let mut dropped = 0u64;
    let mut before = None;
    while segno <= last {
        reader.restart_at(seg.segment_start(segno));
        loop {
            match reader.next_record() {
                Ok(Some(rec)) if cannot_be_in_a_batch(&rec) => {
                    return Ok(Some(Resync {
                        reader,
                        anchor: Some(rec),
                        dropped,
                        before,
                    }))
                }
                Ok(Some(rec)) => {
                    before = Some(rec.lsn);
                    dropped += 1;
                }
                Ok(None) => break,
                Err(ReadError::EndOfWal { reason, .. }) => {
                    segno = damaged_segment(&reader, &reason, seg).max(segno);
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
        segno += 1;
    }
    Ok(before.is_some().then_some(Resync {
        reader,
        anchor: None,
        dropped,
        before,
    }))
}

/// True for a record no batch begun before it can hold: a batch marker
/// (the start of a batch) or a record Walden writes in a reservation of
/// its own (checkpoint, segment switch, overwrite-contrecord).
fn cannot_be_in_a_batch(rec: &WalRecord) -> bool {
    if rec.header.rmid != RM_XLOG_ID {
        return false;
    }
    let info = rec.header.info & XLR_RMGR_INFO_MASK;
    matches!(
        info,
        XLOG_CHECKPOINT_SHUTDOWN | XLOG_CHECKPOINT_ONLINE | XLOG_SWITCH | XLOG_OVERWRITE_CONTRECORD
    ) || OpenBatch::is_marker(rec)
}

/// The checks of the modes that refuse: `TolerateCorruptedTailRecords`
/// refuses invalid WAL followed by a valid record; `AbsoluteConsistency`
/// that too, a batch cut by the end of WAL, and any end that is not clean.
pub(super) fn check(
    mode: RecoveryMode,
    files: &SegmentFiles,
    control: &ControlFile,
    scan: &Scan,
) -> Result<(), Error> {
    let absolute = match mode {
        RecoveryMode::TolerateCorruptedTailRecords => false,
        RecoveryMode::AbsoluteConsistency => true,
        RecoveryMode::PointInTimeRecovery | RecoveryMode::SkipAnyCorruptedRecords => return Ok(()),
    };
    let Some(reason) = &scan.reason else {
        return Ok(());
    };
    let at = scan.reader.next_lsn();
    if let Some(valid) = first_valid_record_after(files, control, at)? {
        return Err(RecoveryRefused::ValidWalAfter {
            mode,
            at,
            reason: reason.to_string(),
            valid,
        }
        .into());
    }
    if !absolute {
        return Ok(());
    }
    if let Some(b) = &scan.open_batch {
        return Err(RecoveryRefused::IncompleteBatch { marker: b.marker }.into());
    }
    if scan.reader.aborted_contrecord().is_some() || !is_clean_end(files, reason)? {
        return Err(RecoveryRefused::TornTail {
            at,
            reason: reason.to_string(),
        }
        .into());
    }
    Ok(())
}

/// The first valid record starting on a page after the one holding `at`,
/// in any segment file of the log: the first record after the page's
/// continuation, read with every check but the link to the record before.
fn first_valid_record_after(
    files: &SegmentFiles,
    control: &ControlFile,
    at: Lsn,
) -> Result<Option<Lsn>, Error> {
    let seg = control.segment_size;
    let first_page = Lsn(at.page_start().0 + PAGE_SIZE);
    let mut reader = reader_at(files, control, first_page)?;
    for segno in files
        .list()?
        .into_iter()
        .filter(|&s| s >= seg.segno(first_page))
    {
        let start = seg.segment_start(segno).max(first_page);
        let end = seg.segment_start(segno + 1);
        let mut page = start;
        while page < end {
            reader.restart_at(page);
            match reader.next_record() {
                Ok(Some(rec)) => return Ok(Some(rec.lsn)),
                Ok(None) | Err(ReadError::EndOfWal { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            page = Lsn(page.0 + PAGE_SIZE);
        }
    }
    Ok(None)
}

/// True if the WAL ends where nothing was ever written: zeros from where
/// the next record was due to the end of its page; a next page that is all
/// zeros or an older incarnation of the page (a recycled segment); or no
/// next segment.
fn is_clean_end(files: &SegmentFiles, reason: &EndOfWalReason) -> Result<bool, Error> {
    use EndOfWalReason::*;
    Ok(match reason {
        InvalidRecordLength { at, got: 0 } | RecordShorterThanHeader { at, got: 0, .. } => {
            let page =
                read_page_prefix(files, at.page_start(), Lsn(at.page_start().0 + PAGE_SIZE))?;
            page[at.page_offset() as usize..].iter().all(|&b| b == 0)
        }
        UnexpectedPageAddr { pageaddr, page, .. } => pageaddr < page,
        BadMagic { page, .. } | InvalidInfoBits { page, .. } => {
            read_page_prefix(files, *page, Lsn(page.0 + PAGE_SIZE))?
                .iter()
                .all(|&b| b == 0)
        }
        MissingSegment { .. } => true,
        _ => false,
    })
}

/// The bytes of `page` before `end`, from its segment file.
pub(super) fn read_page_prefix(
    files: &SegmentFiles,
    page: Lsn,
    end: Lsn,
) -> Result<Vec<u8>, Error> {
    let seg = files.segment_size();
    let segno = seg.segno(page);
    let mut bytes = vec![0u8; (end.0 - page.0) as usize];
    files
        .open_for_read(segno)?
        .read_exact_at(&mut bytes, seg.offset(page))
        .map_err(|e| SegmentError::from(IoFailure::new(FileOp::Read, &files.path(segno), e)))?;
    Ok(bytes)
}
