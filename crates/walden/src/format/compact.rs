//! The `CompactWalId` format: seed 001's proposal. The 8-byte `xl_prev`
//! gives way to a 2-byte `xl_walid`, the low 16 bits of the number of the
//! segment the record starts in, and the header shrinks to 16 bytes. Pages
//! carry their own magic and the same 16-bit id in the header's padding.
//!
//! Record header layout, little endian (16 bytes): `xl_tot_len` u32,
//! `xl_xid` u32, `xl_info` u8, `xl_rmid` u8, `xl_walid` u16, `xl_crc` u32.
//! The CRC covers the body, then the 12 header bytes before it.
//!
//! A reader ends the WAL at a record whose id differs from its segment's.
//! That rejects a stale record in a recycled segment unless the file's old
//! and new segment numbers are equal modulo 2^16 (65,536 segments apart: a
//! TiB of WAL with 16 MiB segments) — the weakness Tom Lane and Robert Haas
//! raised in 001, measured by the torn-write splice test.

use std::ops::Range;

use super::page::XLP_PADDING;
use super::record::{XL_TOT_LEN, XL_XID};
use crate::lsn::{Lsn, SegmentSize};

/// `xlp_magic` of `CompactWalId` pages.
pub const COMPACT_PAGE_MAGIC: u16 = 0xC0B1;

/// Size of the compact record header.
pub const COMPACT_RECORD_HEADER_SIZE: usize = 16;

/// Byte range of `xl_tot_len` (u32) in the compact record header: where
/// PostgreSQL's header has it.
pub const COMPACT_XL_TOT_LEN: Range<usize> = XL_TOT_LEN;
/// Byte range of `xl_xid` (u32) in the compact record header: where
/// PostgreSQL's header has it.
pub const COMPACT_XL_XID: Range<usize> = XL_XID;
/// Byte range of `xl_info` (u8) in the compact record header.
pub const COMPACT_XL_INFO: Range<usize> = 8..9;
/// Byte range of `xl_rmid` (u8) in the compact record header.
pub const COMPACT_XL_RMID: Range<usize> = 9..10;
/// Byte range of `xl_walid` (u16) in the compact record header.
pub const XL_WALID: Range<usize> = 10..12;
/// Byte range of `xl_crc` (u32) in the compact record header: the CRC
/// covers the header bytes before it.
pub const COMPACT_XL_CRC: Range<usize> = 12..16;

/// Byte range of the segment id (u16) in a page header: the first two of
/// the padding bytes after `xlp_rem_len` ([`XLP_PADDING`]), present in
/// short and long headers alike; the other two stay zero.
pub const XLP_WALID: Range<usize> = XLP_PADDING.start..XLP_PADDING.start + 2;

/// The id of the segment holding `lsn`: the low 16 bits of its number.
pub fn wal_id(seg: SegmentSize, lsn: Lsn) -> u16 {
    segment_wal_id(seg.segno(lsn))
}

/// The id of segment `segno`: the low 16 bits of its number. Segments
/// 65,536 apart share it, so a record one of them held reads as valid in
/// the other: recycling never renames one to the other
/// ([`plan_recycling`](crate::segment::plan_recycling)).
pub fn segment_wal_id(segno: u64) -> u16 {
    // Truncation is the design: 16 bits of the segment number.
    (segno & 0xFFFF) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;

    #[test]
    fn named_fields_tile_the_header_and_the_page_id_sits_in_the_padding() {
        let fields = [
            ("xl_tot_len", COMPACT_XL_TOT_LEN),
            ("xl_xid", COMPACT_XL_XID),
            ("xl_info", COMPACT_XL_INFO),
            ("xl_rmid", COMPACT_XL_RMID),
            ("xl_walid", XL_WALID),
            ("xl_crc", COMPACT_XL_CRC),
        ];
        assert_fields_tile(&fields, COMPACT_RECORD_HEADER_SIZE);
        assert!(XLP_PADDING.contains(&XLP_WALID.start));
        assert!(XLP_PADDING.contains(&(XLP_WALID.end - 1)));
    }
}
