//! Why reading stopped: [`ReadError`] and the end-of-WAL reasons.

use std::io;
use std::path::PathBuf;

use crate::format::body::BodyError;
use crate::lsn::{Lsn, TimeLineId};

/// Why the WAL is not readable past some point: the end of WAL, or
/// corruption, at an LSN (PostgreSQL: the `report_invalid_record` messages of
/// `xlogreader.c`, and pg_waldump's file errors).
///
/// Display is pg_waldump 15's wording. PostgreSQL cannot tell the end of WAL
/// from corruption there, and neither can Walden: zeros after the last record
/// ([`InvalidRecordLength`](Self::InvalidRecordLength) with `got: 0`), a
/// zeroed or stale page, a CRC or prev-link mismatch all end the WAL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndOfWalReason {
    /// `xl_tot_len` below 24; `got: 0` is the usual end of WAL (zeros).
    #[error("invalid record length at {at}: wanted 24, got {got}")]
    InvalidRecordLength {
        /// The record's LSN.
        at: Lsn,
        /// Its `xl_tot_len`.
        got: u32,
    },
    /// `xl_tot_len` below the header size of a format whose header is not
    /// 24 bytes (`CompactWalId`); `got: 0` is the usual end of WAL there.
    #[error("invalid record length at {at}: wanted {wanted}, got {got}")]
    RecordShorterThanHeader {
        /// The record's LSN.
        at: Lsn,
        /// Its `xl_tot_len`.
        got: u32,
        /// The format's record header size.
        wanted: u32,
    },
    /// `xl_tot_len` above `MAX_RECORD_LEN` (1020 MiB).
    #[error("record length {len} at {at} too long")]
    RecordTooLong {
        /// The record's LSN.
        at: Lsn,
        /// Its `xl_tot_len`.
        len: u32,
    },
    /// A page whose `xlp_magic` is not the format's.
    #[error("invalid magic number {magic:04X} in log segment {segment}, offset {offset}")]
    BadMagic {
        /// The magic found.
        magic: u16,
        /// The segment file's name.
        segment: String,
        /// The page's offset in the file.
        offset: u64,
        /// The page's LSN.
        page: Lsn,
    },
    /// `xlp_info` bits outside `XLP_ALL_FLAGS`, or a segment's first page
    /// without the long header.
    #[error("invalid info bits {info:04X} in log segment {segment}, offset {offset}")]
    InvalidInfoBits {
        /// The `xlp_info` found.
        info: u16,
        /// The segment file's name.
        segment: String,
        /// The page's offset in the file.
        offset: u64,
        /// The page's LSN.
        page: Lsn,
    },
    /// A long header whose `xlp_seg_size` is not the segment size in use.
    #[error("WAL file is from different database system: incorrect segment size in page header")]
    WrongSegmentSize {
        /// The `xlp_seg_size` found.
        got: u32,
        /// The page's LSN.
        page: Lsn,
    },
    /// A long header whose `xlp_xlog_blcksz` is not 8192.
    #[error("WAL file is from different database system: incorrect XLOG_BLCKSZ in page header")]
    WrongBlcksz {
        /// The `xlp_xlog_blcksz` found.
        got: u32,
        /// The page's LSN.
        page: Lsn,
    },
    /// A page whose `xlp_pageaddr` is not its own LSN: typically a stale
    /// page of a recycled segment.
    #[error("unexpected pageaddr {pageaddr} in log segment {segment}, offset {offset}")]
    UnexpectedPageAddr {
        /// The `xlp_pageaddr` found.
        pageaddr: Lsn,
        /// The segment file's name.
        segment: String,
        /// The page's offset in the file.
        offset: u64,
        /// The page's LSN.
        page: Lsn,
    },
    /// A page whose `xlp_tli` is below an earlier page's.
    #[error("out-of-sequence timeline ID {tli} (after {after}) in log segment {segment}, offset {offset}")]
    TimelineOutOfSequence {
        /// The page's `xlp_tli`.
        tli: u32,
        /// The earlier page's timeline.
        after: u32,
        /// The segment file's name.
        segment: String,
        /// The page's offset in the file.
        offset: u64,
        /// The page's LSN.
        page: Lsn,
    },
    /// A record asked for inside a page header.
    #[error("invalid record offset at {at}")]
    InvalidRecordOffset {
        /// The LSN asked for.
        at: Lsn,
    },
    /// A record asked for right after the header of a page that begins with
    /// a continuation.
    #[error("contrecord is requested by {at}")]
    ContrecordRequested {
        /// The LSN asked for.
        at: Lsn,
    },
    /// `xl_rmid` in 22..=127.
    #[error("invalid resource manager ID {rmid} at {at}")]
    InvalidRmid {
        /// The `xl_rmid` found.
        rmid: u8,
        /// The record's LSN.
        at: Lsn,
    },
    /// `xl_prev` is not the previous record's LSN (or, for the first record
    /// read, not below the record's own LSN).
    #[error("record with incorrect prev-link {prev} at {at}")]
    BadPrevLink {
        /// The `xl_prev` found.
        prev: Lsn,
        /// The record's LSN.
        at: Lsn,
    },
    /// A `SelfLsn` record whose self-LSN is not where it was read: a stale
    /// record, typically from a recycled segment.
    #[error("record with incorrect self-LSN {found} at {at}")]
    BadSelfLsn {
        /// The self-LSN found.
        found: Lsn,
        /// The record's LSN.
        at: Lsn,
    },
    /// A `CompactWalId` record whose `xl_walid` is not its segment's id.
    #[error("record with incorrect WAL id {found:04X} (segment id {expected:04X}) at {at}")]
    BadWalId {
        /// The id found.
        found: u16,
        /// The low 16 bits of the record's segment number.
        expected: u16,
        /// The record's LSN.
        at: Lsn,
    },
    /// A `CompactWalId` page whose header id is not its segment's.
    #[error("unexpected WAL id {found:04X} (segment id {expected:04X}) in log segment {segment}, offset {offset}")]
    BadPageWalId {
        /// The id found.
        found: u16,
        /// The low 16 bits of the page's segment number.
        expected: u16,
        /// The segment file's name.
        segment: String,
        /// The page's offset in the file.
        offset: u64,
        /// The page's LSN.
        page: Lsn,
    },
    /// A page a record continues onto lacks `XLP_FIRST_IS_CONTRECORD`.
    #[error("there is no contrecord flag at {at}")]
    MissingContrecordFlag {
        /// The continued record's LSN.
        at: Lsn,
    },
    /// A continuation page whose `xlp_rem_len` is not the bytes still due.
    #[error("invalid contrecord length {got} (expected {expected}) at {at}")]
    BadContrecordLength {
        /// The `xlp_rem_len` found.
        got: u32,
        /// The bytes of the record still due.
        expected: u32,
        /// The continued record's LSN.
        at: Lsn,
    },
    /// The CRC over the reassembled record does not match `xl_crc`.
    #[error("incorrect resource manager data checksum in record at {at}")]
    BadCrc {
        /// The record's LSN.
        at: Lsn,
    },
    /// The body's headers are inconsistent.
    #[error("{error} at {at}")]
    BadBody {
        /// The record's LSN.
        at: Lsn,
        /// What is wrong.
        error: BodyError,
    },
    /// The segment file holding the next bytes does not exist.
    #[error("could not find file \"{name}\": No such file or directory")]
    MissingSegment {
        /// The missing file's name.
        name: String,
        /// The segment's first LSN.
        segment_start: Lsn,
    },
    /// A segment file ends before the bytes needed.
    #[error("could not read from file {name}, offset {offset}: read {read} of {wanted}")]
    TruncatedSegment {
        /// The file's name.
        name: String,
        /// File offset of the read (a page start).
        offset: u64,
        /// Bytes the file had.
        read: usize,
        /// Bytes asked for.
        wanted: usize,
        /// LSN of the page read.
        page: Lsn,
    },
    /// The first-record search found no valid record at or after the start.
    /// PostgreSQL 15 prints no detail; `cause` keeps the failure that ended
    /// the search (`None` when it reached the end limit).
    #[error("could not find a valid record after {after}")]
    NoValidFirstRecord {
        /// The requested start.
        after: Lsn,
        /// Why the search failed.
        cause: Option<Box<EndOfWalReason>>,
    },
}

impl EndOfWalReason {
    /// The LSN this reason names: the record's, the page's, the missing
    /// segment's start, or the search's start.
    pub fn lsn(&self) -> Option<Lsn> {
        use EndOfWalReason::*;
        Some(match self {
            InvalidRecordLength { at, .. }
            | RecordShorterThanHeader { at, .. }
            | BadSelfLsn { at, .. }
            | BadWalId { at, .. }
            | RecordTooLong { at, .. }
            | InvalidRecordOffset { at }
            | ContrecordRequested { at }
            | InvalidRmid { at, .. }
            | BadPrevLink { at, .. }
            | MissingContrecordFlag { at }
            | BadContrecordLength { at, .. }
            | BadCrc { at }
            | BadBody { at, .. } => *at,
            BadMagic { page, .. }
            | InvalidInfoBits { page, .. }
            | WrongSegmentSize { page, .. }
            | WrongBlcksz { page, .. }
            | UnexpectedPageAddr { page, .. }
            | BadPageWalId { page, .. }
            | TimelineOutOfSequence { page, .. }
            | TruncatedSegment { page, .. } => *page,
            MissingSegment { segment_start, .. } => *segment_start,
            NoValidFirstRecord { after, .. } => *after,
        })
    }

    /// True for the reasons about segment files (missing or short) rather
    /// than their contents; pg_waldump reports these without the
    /// "error in WAL record" prefix.
    pub fn is_file_error(&self) -> bool {
        matches!(
            self,
            EndOfWalReason::MissingSegment { .. } | EndOfWalReason::TruncatedSegment { .. }
        )
    }
}

/// An error from [`WalReader`](super::WalReader).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading stopped at the end of the WAL or at corruption.
    #[error("{}", end_of_wal_message(.last_good, .reason))]
    EndOfWal {
        /// The last record read successfully, if any.
        last_good: Option<Lsn>,
        /// Why no further record could be read.
        reason: EndOfWalReason,
    },
    /// An I/O error other than a missing or short segment file.
    #[error("could not read \"{}\": {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The directory (nor its `pg_wal`) holds no segment file.
    #[error("no WAL segment files in \"{}\" or its pg_wal subdirectory", .dir.display())]
    NoSegments {
        /// The directory given.
        dir: PathBuf,
    },
    /// The directory holds no segment file of the timeline to read.
    #[error("no WAL segment files of timeline {timeline} in \"{}\"", .dir.display())]
    NoSegmentsOnTimeline {
        /// The directory searched.
        dir: PathBuf,
        /// The timeline asked for.
        timeline: TimeLineId,
    },
    /// The first segment file's long header gives an impossible size.
    #[error("WAL segment size must be a power of two between 1 MB and 1 GB, but the WAL file \"{file}\" header specifies {size} bytes")]
    BadSegmentSize {
        /// The file's name.
        file: String,
        /// The `xlp_seg_size` found.
        size: u32,
    },
    /// The first segment file is shorter than a page, so its size is unknown.
    #[error("could not read file \"{file}\": read {read} of {wanted}")]
    ShortFirstSegment {
        /// The file's name.
        file: String,
        /// Bytes it had.
        read: usize,
        /// Bytes needed (one page).
        wanted: usize,
    },
    /// No start LSN for a source that cannot list its segments.
    #[error("no start WAL location given")]
    NoStart,
}

fn end_of_wal_message(last_good: &Option<Lsn>, reason: &EndOfWalReason) -> String {
    match last_good {
        Some(lsn) if !reason.is_file_error() => format!("error in WAL record at {lsn}: {reason}"),
        _ => reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_pg_waldump() {
        let e = ReadError::EndOfWal {
            last_good: Some(Lsn(0xA8C740)),
            reason: EndOfWalReason::InvalidRecordLength {
                at: Lsn(0xA8C7B8),
                got: 0,
            },
        };
        assert_eq!(
            e.to_string(),
            "error in WAL record at 0/A8C740: invalid record length at 0/A8C7B8: wanted 24, got 0"
        );
        let e = ReadError::EndOfWal {
            last_good: None,
            reason: EndOfWalReason::NoValidFirstRecord {
                after: Lsn(0x800000),
                cause: None,
            },
        };
        assert_eq!(
            e.to_string(),
            "could not find a valid record after 0/800000"
        );
        let r = EndOfWalReason::BadMagic {
            magic: 0,
            segment: "000000010000000000000007".into(),
            offset: 8192,
            page: Lsn(0x702000),
        };
        assert_eq!(
            r.to_string(),
            "invalid magic number 0000 in log segment 000000010000000000000007, offset 8192"
        );
        assert_eq!(r.lsn(), Some(Lsn(0x702000)));
        let r = EndOfWalReason::BadBody {
            at: Lsn(0x700130),
            error: BodyError::InvalidBlockId(64),
        };
        assert_eq!(r.to_string(), "invalid block_id 64 at 0/700130");
        let e = ReadError::EndOfWal {
            last_good: Some(Lsn(0x70E0B8)),
            reason: EndOfWalReason::MissingSegment {
                name: "000000010000000000000008".into(),
                segment_start: Lsn(0x800000),
            },
        };
        assert_eq!(
            e.to_string(),
            "could not find file \"000000010000000000000008\": No such file or directory"
        );
    }
}
