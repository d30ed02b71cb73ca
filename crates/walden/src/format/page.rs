//! WAL page headers: the 24-byte short header on every page and the 40-byte
//! long header on the first page of each segment.
//!
//! [`PageHeader::decode`] is raw: it reads fields and validates nothing.
//! Validation with reasons is the reader's job (`read`).

use std::ops::Range;

use crate::lsn::{Lsn, LONG_PAGE_HEADER_SIZE, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};

use super::little_endian::{field, fixed_field};

/// Byte range of `xlp_magic` (u16) in a page header.
pub const XLP_MAGIC: Range<usize> = 0..2;
/// Byte range of `xlp_info` (u16, the `XLP_*` flags) in a page header.
pub const XLP_INFO: Range<usize> = 2..4;
/// Byte range of `xlp_tli` (u32) in a page header.
pub const XLP_TLI: Range<usize> = 4..8;
/// Byte range of `xlp_pageaddr` (u64, the page's LSN) in a page header.
pub const XLP_PAGEADDR: Range<usize> = 8..16;
/// Byte range of `xlp_rem_len` (u32) in a page header.
pub const XLP_REM_LEN: Range<usize> = 16..20;
/// Byte range of the padding that aligns the short header to 8 bytes:
/// zeros in PostgreSQL's format; `CompactWalId` keeps its segment id in the
/// first two of these bytes (`format::compact::XLP_WALID`).
pub const XLP_PADDING: Range<usize> = 20..24;
/// Byte range of `xlp_sysid` (u64) in a long page header.
pub const XLP_SYSID: Range<usize> = 24..32;
/// Byte range of `xlp_seg_size` (u32) in a long page header.
pub const XLP_SEG_SIZE: Range<usize> = 32..36;
/// Byte range of `xlp_xlog_blcksz` (u32) in a long page header.
pub const XLP_XLOG_BLCKSZ: Range<usize> = 36..40;

/// `xlp_magic` of PostgreSQL 15 (PostgreSQL: `XLOG_PAGE_MAGIC`).
pub const PG15_PAGE_MAGIC: u16 = 0xD110;

/// The page begins with the rest of a record started on an earlier page
/// (PostgreSQL: `XLP_FIRST_IS_CONTRECORD`).
pub const XLP_FIRST_IS_CONTRECORD: u16 = 0x0001;
/// The header is the long one: set on, and only on, a segment's first page
/// (PostgreSQL: `XLP_LONG_HEADER`).
pub const XLP_LONG_HEADER: u16 = 0x0002;
/// No base backup was running; readers ignore it
/// (PostgreSQL: `XLP_BKP_REMOVABLE`).
pub const XLP_BKP_REMOVABLE: u16 = 0x0004;
/// Recovery wrote fresh WAL here over a missing continuation; the page's
/// first record is an `XLOG_OVERWRITE_CONTRECORD`
/// (PostgreSQL: `XLP_FIRST_IS_OVERWRITE_CONTRECORD`).
pub const XLP_FIRST_IS_OVERWRITE_CONTRECORD: u16 = 0x0008;
/// Every valid `xlp_info` bit (PostgreSQL: `XLP_ALL_FLAGS`).
pub const XLP_ALL_FLAGS: u16 = 0x000F;

/// `xlp_xlog_blcksz` of every page Walden reads or writes
/// (PostgreSQL: `XLOG_BLCKSZ`).
pub const XLOG_BLCKSZ: u32 = PAGE_SIZE as u32;

/// The fields only the long header has (PostgreSQL: the tail of
/// `XLogLongPageHeaderData`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LongPageHeader {
    /// Database system identifier (`xlp_sysid`); never 0 for a real cluster.
    pub sysid: u64,
    /// Segment size in bytes (`xlp_seg_size`).
    pub seg_size: u32,
    /// WAL page size, 8192 (`xlp_xlog_blcksz`).
    pub xlog_blcksz: u32,
}

/// A page header (PostgreSQL: `XLogPageHeaderData`, and
/// `XLogLongPageHeaderData` when [`long`](Self::long) is set).
///
/// Short layout, little endian: `xlp_magic` u16, `xlp_info` u16, `xlp_tli`
/// u32, `xlp_pageaddr` u64, `xlp_rem_len` u32, 4 padding bytes; the long
/// header appends `xlp_sysid` u64, `xlp_seg_size` u32, `xlp_xlog_blcksz` u32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PageHeader {
    /// Format magic, [`PG15_PAGE_MAGIC`] (`xlp_magic`).
    pub magic: u16,
    /// `XLP_*` flag bits (`xlp_info`).
    pub info: u16,
    /// Timeline of the first record on the page (`xlp_tli`).
    pub tli: u32,
    /// LSN of the page's first byte (`xlp_pageaddr`).
    pub pageaddr: Lsn,
    /// Bytes of a continued record still to come from this page on
    /// (`xlp_rem_len`).
    pub rem_len: u32,
    /// The long part; encoded iff present, decoded iff `info` has
    /// [`XLP_LONG_HEADER`].
    pub long: Option<LongPageHeader>,
}

impl PageHeader {
    /// Encoded size: 40 with the long part, else 24
    /// (PostgreSQL: `XLogPageHeaderSize`).
    pub fn size(&self) -> usize {
        if self.long.is_some() {
            LONG_PAGE_HEADER_SIZE as usize
        } else {
            SHORT_PAGE_HEADER_SIZE as usize
        }
    }

    /// Size of the header a page whose `xlp_info` is `info` starts with.
    pub fn size_for_info(info: u16) -> usize {
        if info & XLP_LONG_HEADER != 0 {
            LONG_PAGE_HEADER_SIZE as usize
        } else {
            SHORT_PAGE_HEADER_SIZE as usize
        }
    }

    /// Writes exactly [`size`](Self::size) bytes to the start of `out`,
    /// padding as zeros. `info` is written as given: keep
    /// [`XLP_LONG_HEADER`] consistent with [`long`](Self::long).
    ///
    /// Writes only the part of the header that fits if `out` is shorter.
    pub fn encode(&self, out: &mut [u8]) {
        let mut bytes = [0u8; LONG_PAGE_HEADER_SIZE as usize];
        bytes[XLP_MAGIC].copy_from_slice(&self.magic.to_le_bytes());
        bytes[XLP_INFO].copy_from_slice(&self.info.to_le_bytes());
        bytes[XLP_TLI].copy_from_slice(&self.tli.to_le_bytes());
        bytes[XLP_PAGEADDR].copy_from_slice(&self.pageaddr.as_u64().to_le_bytes());
        bytes[XLP_REM_LEN].copy_from_slice(&self.rem_len.to_le_bytes());
        if let Some(long) = &self.long {
            bytes[XLP_SYSID].copy_from_slice(&long.sysid.to_le_bytes());
            bytes[XLP_SEG_SIZE].copy_from_slice(&long.seg_size.to_le_bytes());
            bytes[XLP_XLOG_BLCKSZ].copy_from_slice(&long.xlog_blcksz.to_le_bytes());
        }
        let n = self.size().min(out.len());
        out[..n].copy_from_slice(&bytes[..n]);
    }

    /// Reads a header from the start of `bytes`, with the long part iff
    /// `xlp_info` has [`XLP_LONG_HEADER`]. `None` if `bytes` is too short
    /// for the header it announces. Nothing is validated.
    pub fn decode(bytes: &[u8]) -> Option<PageHeader> {
        let info = u16::from_le_bytes(field(bytes, XLP_INFO)?);
        let b = bytes.get(..Self::size_for_info(info))?;
        let long = (info & XLP_LONG_HEADER != 0).then(|| LongPageHeader {
            sysid: u64::from_le_bytes(fixed_field(b, XLP_SYSID)),
            seg_size: u32::from_le_bytes(fixed_field(b, XLP_SEG_SIZE)),
            xlog_blcksz: u32::from_le_bytes(fixed_field(b, XLP_XLOG_BLCKSZ)),
        });
        Some(PageHeader {
            magic: u16::from_le_bytes(fixed_field(b, XLP_MAGIC)),
            info,
            tli: u32::from_le_bytes(fixed_field(b, XLP_TLI)),
            pageaddr: Lsn(u64::from_le_bytes(fixed_field(b, XLP_PAGEADDR))),
            rem_len: u32::from_le_bytes(fixed_field(b, XLP_REM_LEN)),
            long,
        })
    }

    /// True if the page begins with a continuation
    /// ([`XLP_FIRST_IS_CONTRECORD`]).
    pub fn is_contrecord(&self) -> bool {
        self.info & XLP_FIRST_IS_CONTRECORD != 0
    }

    /// True if the page overwrites a missing continuation
    /// ([`XLP_FIRST_IS_OVERWRITE_CONTRECORD`]).
    pub fn is_overwrite_contrecord(&self) -> bool {
        self.info & XLP_FIRST_IS_OVERWRITE_CONTRECORD != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;

    /// The first 40 bytes of sample segment 7 (pgwal-format.md §12).
    const SEGMENT_7_PAGE_0: [u8; 40] = [
        0x10, 0xd1, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x70, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3c, 0xe1, 0xbc, 0x1c, 0x5d, 0x55,
        0x02, 0x6b, 0x00, 0x00, 0x10, 0x00, 0x00, 0x20, 0x00, 0x00,
    ];

    #[test]
    fn long_header_of_a_real_segment() {
        let h = PageHeader::decode(&SEGMENT_7_PAGE_0).unwrap();
        assert_eq!(
            h,
            PageHeader {
                magic: PG15_PAGE_MAGIC,
                info: XLP_LONG_HEADER | XLP_BKP_REMOVABLE,
                tli: 1,
                pageaddr: Lsn(0x700000),
                rem_len: 0,
                long: Some(LongPageHeader {
                    sysid: 0x6B02_555D_1CBC_E13C,
                    seg_size: 1 << 20,
                    xlog_blcksz: 8192
                }),
            }
        );
        assert_eq!(h.size(), 40);
        let mut out = [0xAAu8; 48];
        h.encode(&mut out);
        assert_eq!(&out[..40], &SEGMENT_7_PAGE_0);
        assert_eq!(&out[40..], &[0xAA; 8], "encode writes exactly size() bytes");
    }

    #[test]
    fn short_header_of_a_continuation_page() {
        // Sample segment 7 at 0x2000: info 0x0005, rem_len 2130.
        let mut bytes = [0u8; 24];
        bytes[..20].copy_from_slice(&[
            0x10, 0xd1, 0x05, 0x00, 0x01, 0, 0, 0, 0x00, 0x20, 0x70, 0, 0, 0, 0, 0, 0x52, 0x08, 0,
            0,
        ]);
        let h = PageHeader::decode(&bytes).unwrap();
        assert!(h.is_contrecord() && !h.is_overwrite_contrecord());
        assert_eq!(
            (h.pageaddr, h.rem_len, h.long, h.size()),
            (Lsn(0x702000), 2130, None, 24)
        );
        let mut out = [0xFFu8; 24];
        h.encode(&mut out);
        assert_eq!(out, bytes, "padding is written as zeros");
    }

    #[test]
    fn decode_needs_the_announced_length() {
        assert_eq!(PageHeader::decode(&SEGMENT_7_PAGE_0[..23]), None);
        assert_eq!(PageHeader::decode(&SEGMENT_7_PAGE_0[..39]), None);
        let mut short = SEGMENT_7_PAGE_0;
        short[XLP_INFO.start] = 0x04; // LONG_HEADER cleared: 24 bytes suffice
        assert!(PageHeader::decode(&short[..24]).unwrap().long.is_none());
        assert_eq!(PageHeader::size_for_info(0x0006), 40);
        assert_eq!(PageHeader::size_for_info(0x0005), 24);
    }

    #[test]
    fn named_fields_tile_the_short_and_long_headers() {
        let short = [
            ("xlp_magic", XLP_MAGIC),
            ("xlp_info", XLP_INFO),
            ("xlp_tli", XLP_TLI),
            ("xlp_pageaddr", XLP_PAGEADDR),
            ("xlp_rem_len", XLP_REM_LEN),
            ("padding", XLP_PADDING),
        ];
        assert_fields_tile(&short, SHORT_PAGE_HEADER_SIZE as usize);
        let long = [
            ("xlp_sysid", XLP_SYSID),
            ("xlp_seg_size", XLP_SEG_SIZE),
            ("xlp_xlog_blcksz", XLP_XLOG_BLCKSZ),
        ];
        let all: Vec<_> = short.into_iter().chain(long).collect();
        assert_fields_tile(&all, LONG_PAGE_HEADER_SIZE as usize);
    }
}
