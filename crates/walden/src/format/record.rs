//! The 24-byte record header (`XLogRecord`).

use super::crc;
use crate::lsn::Lsn;

/// Size of the record header (PostgreSQL: `SizeOfXLogRecord`).
pub const RECORD_HEADER_SIZE: usize = 24;

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
        out[0..4].copy_from_slice(&self.tot_len.to_le_bytes());
        out[4..8].copy_from_slice(&self.xid.to_le_bytes());
        out[8..16].copy_from_slice(&self.prev.as_u64().to_le_bytes());
        out[16] = self.info;
        out[17] = self.rmid;
        out[crc::CRC_OFFSET..].copy_from_slice(&self.crc.to_le_bytes());
        out
    }

    /// Reads a header from its 24 on-disk bytes. Nothing is validated; the
    /// padding bytes are ignored (they are covered by the CRC, though).
    pub fn decode(bytes: &[u8; RECORD_HEADER_SIZE]) -> Self {
        let u32_at =
            |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        let mut prev = [0u8; 8];
        prev.copy_from_slice(&bytes[8..16]);
        RecordHeader {
            tot_len: u32_at(0),
            xid: u32_at(4),
            prev: Lsn(u64::from_le_bytes(prev)),
            info: bytes[16],
            rmid: bytes[17],
            crc: u32_at(crc::CRC_OFFSET),
        }
    }

    /// The record type: `info` without the generic flag bits.
    pub fn record_type(&self) -> u8 {
        self.info & XLR_RMGR_INFO_MASK
    }

    /// Sets [`crc`](Self::crc) to the CRC of this header with `body`
    /// (the bytes after the header).
    pub fn seal(&mut self, body: &[u8]) {
        self.crc = crc::record_crc(&self.encode(), body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(&bytes[18..20], &[0, 0]);
        bytes[18] = 0x41;
        bytes[19] = 0x42;
        assert_eq!(RecordHeader::decode(&bytes), h);
        assert_eq!(h.record_type(), 0x40);
    }

    #[test]
    fn seal_matches_a_real_switch_record() {
        // The SWITCH at 0/70E0B8 (pgwal-format.md §9.2).
        let mut h = RecordHeader {
            tot_len: 24,
            xid: 0,
            prev: Lsn(0x70E018),
            info: 0x40,
            rmid: 0,
            crc: 0,
        };
        h.seal(&[]);
        assert_eq!(h.crc, 0xC43F_6B0B);
    }
}
