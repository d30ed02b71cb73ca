//! The 24-byte record header (`XLogRecord`).

use std::ops::Range;

use super::little_endian::fixed_field;
use crate::lsn::Lsn;

/// Size of the record header (PostgreSQL: `SizeOfXLogRecord`).
pub const RECORD_HEADER_SIZE: usize = 24;

/// Byte range of `xl_tot_len` (u32) in the record header.
pub const XL_TOT_LEN: Range<usize> = 0..4;
/// Byte range of `xl_xid` (u32) in the record header.
pub const XL_XID: Range<usize> = 4..8;
/// Byte range of `xl_prev` (u64) in the record header; `SelfLsn` keeps the
/// record's own LSN here (`format::self_lsn::XL_SELF_LSN`).
pub const XL_PREV: Range<usize> = 8..16;
/// Byte range of `xl_info` (u8) in the record header.
pub const XL_INFO: Range<usize> = 16..17;
/// Byte range of `xl_rmid` (u8) in the record header.
pub const XL_RMID: Range<usize> = 17..18;
/// Byte range of the 2 padding bytes before `xl_crc`: written as zeros,
/// ignored on decode, covered by the CRC.
pub const XL_PADDING: Range<usize> = 18..20;
/// Byte range of `xl_crc` (u32) in the record header: the CRC covers the
/// header bytes before it (PostgreSQL: `offsetof(XLogRecord, xl_crc)`).
pub const XL_CRC: Range<usize> = 20..24;

/// Mask of the generic flag bits of `xl_info`; the rest, `0xF0`, is the
/// record type chosen by the rmgr (PostgreSQL: `XLR_INFO_MASK`).
pub const XLR_INFO_MASK: u8 = 0x0F;
/// The record-type bits of `xl_info` (PostgreSQL: `XLR_RMGR_INFO_MASK`).
pub const XLR_RMGR_INFO_MASK: u8 = 0xF0;
/// `xl_info` flag: the record updates a "special" relation
/// (PostgreSQL: `XLR_SPECIAL_REL_UPDATE`).
pub const XLR_SPECIAL_REL_UPDATE: u8 = 0x01;
/// `xl_info` flag: check page consistency on replay
/// (PostgreSQL: `XLR_CHECK_CONSISTENCY`).
pub const XLR_CHECK_CONSISTENCY: u8 = 0x02;

/// A record header (PostgreSQL: `XLogRecord`).
///
/// Layout, little endian: `xl_tot_len` u32, `xl_xid` u32, `xl_prev` u64,
/// `xl_info` u8, `xl_rmid` u8, 2 padding bytes (written as zeros, ignored on
/// decode), `xl_crc` u32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    /// Total record length: this header, the body headers and all data; not
    /// the alignment padding after the record (`xl_tot_len`).
    pub tot_len: u32,
    /// Transaction ID, 0 if none (`xl_xid`).
    pub xid: u32,
    /// Start LSN of the previous record (`xl_prev`).
    pub prev: Lsn,
    /// Flag bits (low 4) and record type (high 4) (`xl_info`).
    pub info: u8,
    /// Resource manager ID (`xl_rmid`).
    pub rmid: u8,
    /// CRC-32C of body and header, see `format::crc` (`xl_crc`).
    pub crc: u32,
}

impl RecordHeader {
    /// The header's 24 on-disk bytes; the padding is zero.
    pub fn encode(&self) -> [u8; RECORD_HEADER_SIZE] {
        let mut out = [0u8; RECORD_HEADER_SIZE];
        out[XL_TOT_LEN].copy_from_slice(&self.tot_len.to_le_bytes());
        out[XL_XID].copy_from_slice(&self.xid.to_le_bytes());
        out[XL_PREV].copy_from_slice(&self.prev.as_u64().to_le_bytes());
        out[XL_INFO].copy_from_slice(&[self.info]);
        out[XL_RMID].copy_from_slice(&[self.rmid]);
        out[XL_CRC].copy_from_slice(&self.crc.to_le_bytes());
        out
    }

    /// Reads a header from its 24 on-disk bytes. Nothing is validated; the
    /// padding bytes are ignored (they are covered by the CRC, though).
    pub fn decode(bytes: &[u8; RECORD_HEADER_SIZE]) -> Self {
        RecordHeader {
            tot_len: u32::from_le_bytes(fixed_field(bytes, XL_TOT_LEN)),
            xid: u32::from_le_bytes(fixed_field(bytes, XL_XID)),
            prev: Lsn(u64::from_le_bytes(fixed_field(bytes, XL_PREV))),
            info: u8::from_le_bytes(fixed_field(bytes, XL_INFO)),
            rmid: u8::from_le_bytes(fixed_field(bytes, XL_RMID)),
            crc: u32::from_le_bytes(fixed_field(bytes, XL_CRC)),
        }
    }

    /// The record type: `info` without the generic flag bits.
    pub fn record_type(&self) -> u8 {
        self.info & XLR_RMGR_INFO_MASK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;

    #[test]
    fn decodes_the_sample_commit_header() {
        // The COMMIT at 0/700060 (pgwal-format.md §12).
        let bytes: [u8; 24] = [
            0x22, 0, 0, 0, 0xd4, 0x02, 0, 0, 0x28, 0x00, 0x70, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0,
            0xa1, 0x5e, 0x22, 0x1f,
        ];
        let h = RecordHeader::decode(&bytes);
        assert_eq!(
            h,
            RecordHeader {
                tot_len: 34,
                xid: 724,
                prev: Lsn(0x700028),
                info: 0,
                rmid: 1,
                crc: 0x1F22_5EA1
            }
        );
        assert_eq!(h.encode(), bytes);
    }

    #[test]
    fn padding_is_ignored_on_decode_and_zero_on_encode() {
        let h = RecordHeader {
            tot_len: 24,
            info: 0x4B,
            ..Default::default()
        };
        let mut bytes = h.encode();
        assert_eq!(&bytes[XL_PADDING], &[0, 0]);
        bytes[XL_PADDING].copy_from_slice(&[0x41, 0x42]);
        assert_eq!(RecordHeader::decode(&bytes), h);
        assert_eq!(h.record_type(), 0x40);
    }

    #[test]
    fn named_fields_tile_the_header() {
        let fields = [
            ("xl_tot_len", XL_TOT_LEN),
            ("xl_xid", XL_XID),
            ("xl_prev", XL_PREV),
            ("xl_info", XL_INFO),
            ("xl_rmid", XL_RMID),
            ("padding", XL_PADDING),
            ("xl_crc", XL_CRC),
        ];
        assert_fields_tile(&fields, RECORD_HEADER_SIZE);
    }
}
