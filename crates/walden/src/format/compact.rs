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

use crate::lsn::{Lsn, SegmentSize};

/// `xlp_magic` of `CompactWalId` pages.
pub const COMPACT_PAGE_MAGIC: u16 = 0xC0B1;

/// Size of the compact record header.
pub const COMPACT_RECORD_HEADER_SIZE: usize = 16;

/// Offset of `xl_walid` in the record header.
pub const WAL_ID_OFFSET: usize = 10;

/// Offset of `xl_crc` in the record header: the CRC covers the bytes before.
pub const COMPACT_CRC_OFFSET: usize = 12;

/// Offset of the id in a page header: the first two of the four padding
/// bytes after `xlp_rem_len`, present in short and long headers alike.
pub const PAGE_WAL_ID_OFFSET: usize = 20;

/// The id of the segment holding `lsn`: the low 16 bits of its number.
pub fn wal_id(seg: SegmentSize, lsn: Lsn) -> u16 {
    // Truncation is the design: 16 bits of the segment number.
    (seg.segno(lsn) & 0xFFFF) as u16
}
