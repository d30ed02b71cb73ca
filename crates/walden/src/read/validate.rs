//! The checks that depend on the on-disk format, in one place: page header
//! validation and record header validation (length, rmgr, prev-link).
//!
//! Everything else the reader does (reassembly, continuation bookkeeping,
//! CRC, body decoding) is the same for every format; the per-format
//! checks (page magic and id, record link field) are made here, from the
//! layout in [`crate::format`].

use super::error::EndOfWalReason;
use crate::format::compact::wal_id;
use crate::format::page::{PageHeader, XLOG_BLCKSZ, XLP_ALL_FLAGS};
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::rmgr::is_valid_rmid;
use crate::format::{RecordLink, WalFormat};
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
/// the page address, a timeline that does not go down from one page to a
/// later one, and for `CompactWalId` the page's segment id (in `raw`, the
/// page's bytes). `tli` names the segment file in messages.
///
/// The magic must be `format`'s; when the format is not known yet (no
/// control file said), the first valid page's magic decides it.
pub(super) fn check_page_header(
    hdr: &PageHeader,
    raw: &[u8],
    page: Lsn,
    seg: SegmentSize,
    tli: TimeLineId,
    latest: &mut LatestPage,
    format: &mut Option<WalFormat>,
) -> Result<(), EndOfWalReason> {
    let segment = || seg.file_name(tli, seg.segno(page));
    let offset = seg.offset(page);
    let bad_magic = || EndOfWalReason::BadMagic {
        magic: hdr.magic,
        segment: segment(),
        offset,
        page,
    };
    let page_format = match *format {
        Some(known) => known,
        None => WalFormat::from_page_magic(hdr.magic).ok_or_else(bad_magic)?,
    };
    if hdr.magic != page_format.page_magic() {
        return Err(bad_magic());
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
    if let Some(found) = page_format.page_wal_id(raw) {
        let expected = wal_id(seg, page);
        if found != expected {
            return Err(EndOfWalReason::BadPageWalId {
                found,
                expected,
                segment: segment(),
                offset,
                page,
            });
        }
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
    *format = Some(page_format);
    Ok(())
}

/// What a record's `xl_prev` must be (formats with a prev-link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PrevLink {
    /// The first record after a (re)start: only below the record's own LSN
    /// (PostgreSQL: `randAccess`).
    Below,
    /// Exactly the LSN of the record read before it.
    Exactly(Lsn),
}

/// The error for a record at `at` whose `xl_tot_len` (`got`) is below the
/// format's header size: pg_waldump's wording, with the right size.
pub(super) fn too_short(format: WalFormat, at: Lsn, got: u32) -> EndOfWalReason {
    match format.record_header_size() {
        RECORD_HEADER_SIZE => EndOfWalReason::InvalidRecordLength { at, got },
        wanted => EndOfWalReason::RecordShorterThanHeader {
            at,
            got,
            wanted: wanted as u32,
        },
    }
}

/// Validates a record header (PostgreSQL: `ValidXLogRecordHeader`): length
/// at least the header size, a valid rmgr
/// id, and the link field: the prev-link (`Postgres15`), the record's own
/// LSN (`SelfLsn`), or its segment's id (`CompactWalId`).
pub(super) fn check_record_header(
    (hdr, link): (&RecordHeader, RecordLink),
    at: Lsn,
    prev: PrevLink,
    seg: SegmentSize,
    format: WalFormat,
) -> Result<(), EndOfWalReason> {
    if (hdr.tot_len as usize) < format.record_header_size() {
        return Err(too_short(format, at, hdr.tot_len));
    }
    if !is_valid_rmid(hdr.rmid) {
        return Err(EndOfWalReason::InvalidRmid { rmid: hdr.rmid, at });
    }
    match link {
        RecordLink::Prev(found) => {
            let prev_ok = match prev {
                PrevLink::Below => found < at,
                PrevLink::Exactly(lsn) => found == lsn,
            };
            if !prev_ok {
                return Err(EndOfWalReason::BadPrevLink { prev: found, at });
            }
        }
        RecordLink::SelfLsn(found) if found != at => {
            return Err(EndOfWalReason::BadSelfLsn { found, at })
        }
        RecordLink::WalId(found) if found != wal_id(seg, at) => {
            return Err(EndOfWalReason::BadWalId {
                found,
                expected: wal_id(seg, at),
                at,
            })
        }
        RecordLink::SelfLsn(_) | RecordLink::WalId(_) => {}
    }
    Ok(())
}
