//! [`HeaderWords`]: a record header as the little-endian words it is stored
//! and CRC'd in, in every format.
//!
//! Every format's header is the words `xl_tot_len ‖ xl_xid` (8 bytes), the
//! link (`xl_prev` or the record's own LSN, 8 bytes; none in
//! `CompactWalId`), then `xl_info ‖ xl_rmid ‖` two bytes (zero padding, or
//! `xl_walid`) and `xl_crc`. The CRC covers everything before `xl_crc`, so
//! a header built in registers is CRC'd from them and stored with two or
//! three 8-byte stores: never stored in pieces and read back, which would
//! wait on the stores (PostgreSQL: `XLogRecord`, written by
//! `XLogInsertRecord` and `CopyXLogRecordToWAL`).

use std::ops::Range;

use super::compact::{wal_id, COMPACT_XL_CRC, COMPACT_XL_INFO, COMPACT_XL_TOT_LEN, COMPACT_XL_XID};
use super::record::{RecordHeader, XL_CRC, XL_INFO, XL_PREV, XL_TOT_LEN, XL_XID};
use super::WalFormat;
use crate::lsn::{Lsn, SegmentSize};

/// A record header's covered bytes as words: `first` at the header's
/// start, then `link` if the format has one, then `last`, which `xl_crc`
/// follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderWords {
    /// `xl_tot_len` and `xl_xid`.
    pub first: u64,
    /// `xl_prev` (`Postgres15`) or the record's own LSN (`SelfLsn`);
    /// `None` in `CompactWalId`.
    pub link: Option<u64>,
    /// `xl_info`, `xl_rmid`, then the zero padding or `xl_walid`.
    pub last: u32,
}

/// Where `first` and `last ‖ xl_crc` lie in a header of each layout.
const FIRST: Range<usize> = XL_TOT_LEN.start..XL_XID.end;
const LAST_AND_CRC: Range<usize> = XL_INFO.start..XL_CRC.end;
const COMPACT_FIRST: Range<usize> = COMPACT_XL_TOT_LEN.start..COMPACT_XL_XID.end;
const COMPACT_LAST_AND_CRC: Range<usize> = COMPACT_XL_INFO.start..COMPACT_XL_CRC.end;

impl WalFormat {
    /// The header `h` of the record starting at `at` in this format, as
    /// words (`h.prev` used by `Postgres15` only; `h.crc` not used).
    #[inline(always)]
    pub fn header_words(self, h: &RecordHeader, at: Lsn, seg: SegmentSize) -> HeaderWords {
        let first = u64::from(h.tot_len) | u64::from(h.xid) << 32;
        let info_rmid = u32::from(h.info) | u32::from(h.rmid) << 8;
        match self {
            WalFormat::Postgres15 => HeaderWords {
                first,
                link: Some(h.prev.as_u64()),
                last: info_rmid,
            },
            WalFormat::SelfLsn => HeaderWords {
                first,
                link: Some(at.as_u64()),
                last: info_rmid,
            },
            WalFormat::CompactWalId => HeaderWords {
                first,
                link: None,
                last: info_rmid | u32::from(wal_id(seg, at)) << 16,
            },
        }
    }
}

impl HeaderWords {
    /// Stores the header with `crc` as its `xl_crc` into the front of
    /// `out` (the format's header size, 24 or 16 bytes).
    ///
    /// Panics if `out` is shorter than the header (a caller bug).
    #[inline(always)]
    pub fn store(&self, crc: u32, out: &mut [u8]) {
        let last_and_crc = (u64::from(self.last) | u64::from(crc) << 32).to_le_bytes();
        match self.link {
            Some(link) => {
                out[FIRST].copy_from_slice(&self.first.to_le_bytes());
                out[XL_PREV].copy_from_slice(&link.to_le_bytes());
                out[LAST_AND_CRC].copy_from_slice(&last_and_crc);
            }
            None => {
                out[COMPACT_FIRST].copy_from_slice(&self.first.to_le_bytes());
                out[COMPACT_LAST_AND_CRC].copy_from_slice(&last_and_crc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are the header as `encode_header` writes it, in every
    /// format, with every field's bytes distinct: stored, they are its
    /// bytes; the CRC field holds what was passed.
    #[test]
    fn stored_words_are_the_encoded_header() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let at = Lsn(seg.segment_start(0x1_0203).0 + 0x48);
        let h = RecordHeader {
            tot_len: 0x0403_0201,
            xid: 0x0807_0605,
            prev: Lsn(0x100F_0E0D_0C0B_0A09),
            info: 0x11,
            rmid: 0x12,
            crc: 0x1615_1413,
        };
        for format in WalFormat::ALL {
            let size = format.record_header_size();
            let mut encoded = [0xAA; 32];
            format.encode_header(&h, at, seg, &mut encoded);
            let mut stored = [0xAA; 32];
            format.header_words(&h, at, seg).store(h.crc, &mut stored);
            assert_eq!(stored, encoded, "{format}: {size} bytes, nothing past");
        }
    }
}
