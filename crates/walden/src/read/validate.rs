//! The checks that depend on the on-disk format, in one place: page header
//! validation and record header validation (length, rmgr, prev-link).
//!
//! Everything else the reader does (reassembly, continuation bookkeeping,
//! CRC, body decoding) is the same for every format. Formats without
//! prev-links or with another page magic get their variant of these
//! functions here.

use super::error::EndOfWalReason;
use crate::format::page::{PageHeader, PG15_PAGE_MAGIC, XLOG_BLCKSZ, XLP_ALL_FLAGS};
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::rmgr::is_valid_rmid;
use crate::lsn::{Lsn, SegmentSize, TimeLineId};

/// Records longer than this are refused: PostgreSQL's `XLogRecordMaxSize`
/// (1020 MiB; a PostgreSQL 15 server cannot allocate much more either).
pub const MAX_RECORD_LEN: u32 = 1020 * 1024 * 1024;

/// The newest page validated so far and its timeline (PostgreSQL:
/// `latestPagePtr`, `latestPageTLI`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LatestPage {
    pub(super) page: Lsn,
    pub(super) tli: u32,
}

/// Validates the header of the page at `page` (PostgreSQL:
/// `XLogReaderValidatePageHeader`): magic, info bits, the long header's
/// segment size and block size (and its presence on a segment's first page),
/// the page address, and a timeline that does not go down from one page to
/// a later one. `tli` names the segment file in messages.
pub(super) fn check_page_header(
    hdr: &PageHeader,
    page: Lsn,
    seg: SegmentSize,
    tli: TimeLineId,
    latest: &mut LatestPage,
) -> Result<(), EndOfWalReason> {
    let segment = || seg.file_name(tli, seg.segno(page));
    let offset = seg.offset(page);
    if hdr.magic != PG15_PAGE_MAGIC {
        return Err(EndOfWalReason::BadMagic {
            magic: hdr.magic,
            segment: segment(),
            offset,
            page,
        });
    }
    let bad_info = || EndOfWalReason::InvalidInfoBits {
        info: hdr.info,
        segment: segment(),
        offset,
        page,
    };
    if hdr.info & !XLP_ALL_FLAGS != 0 {
        return Err(bad_info());
    }
    match &hdr.long {
        // The system identifier is not checked: like pg_waldump, the reader
        // has no control file to compare it with.
        Some(long) if u64::from(long.seg_size) != seg.bytes() => {
            return Err(EndOfWalReason::WrongSegmentSize {
                got: long.seg_size,
                page,
            })
        }
        Some(long) if long.xlog_blcksz != XLOG_BLCKSZ => {
            return Err(EndOfWalReason::WrongBlcksz {
                got: long.xlog_blcksz,
                page,
            })
        }
        Some(_) => {}
        None if offset == 0 => return Err(bad_info()),
        None => {}
    }
    if hdr.pageaddr != page {
        return Err(EndOfWalReason::UnexpectedPageAddr {
            pageaddr: hdr.pageaddr,
            segment: segment(),
            offset,
            page,
        });
    }
    if page > latest.page && hdr.tli < latest.tli {
        return Err(EndOfWalReason::TimelineOutOfSequence {
            tli: hdr.tli,
            after: latest.tli,
            segment: segment(),
            offset,
            page,
        });
    }
    *latest = LatestPage { page, tli: hdr.tli };
    Ok(())
}

/// What a record's `xl_prev` must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PrevLink {
    /// The first record after a (re)start: only below the record's own LSN
    /// (PostgreSQL: `randAccess`).
    Below,
    /// Exactly the LSN of the record read before it.
    Exactly(Lsn),
}

/// Validates a record header (PostgreSQL: `ValidXLogRecordHeader`): length
/// at least 24 and at most [`MAX_RECORD_LEN`], a valid rmgr id, and the
/// prev-link.
pub(super) fn check_record_header(
    hdr: &RecordHeader,
    at: Lsn,
    prev: PrevLink,
) -> Result<(), EndOfWalReason> {
    if (hdr.tot_len as usize) < RECORD_HEADER_SIZE {
        return Err(EndOfWalReason::InvalidRecordLength {
            at,
            got: hdr.tot_len,
        });
    }
    if !is_valid_rmid(hdr.rmid) {
        return Err(EndOfWalReason::InvalidRmid { rmid: hdr.rmid, at });
    }
    let prev_ok = match prev {
        PrevLink::Below => hdr.prev < at,
        PrevLink::Exactly(lsn) => hdr.prev == lsn,
    };
    if !prev_ok {
        return Err(EndOfWalReason::BadPrevLink { prev: hdr.prev, at });
    }
    if hdr.tot_len > MAX_RECORD_LEN {
        return Err(EndOfWalReason::RecordTooLong {
            at,
            len: hdr.tot_len,
        });
    }
    Ok(())
}
