//! What differs between the on-disk formats, in one place: the record
//! header's size and link field, the CRC's extent, the page magic and the
//! page header's extra id. The writer ([`crate::insert`], the buffer ring)
//! and the reader ([`crate::read`]) both go through these functions, so a
//! format is defined once.
//!
//! Everything else (page header layout and sizes, the usable-position
//! mapping, the record body, the CRC's algorithm and order) is shared.

use std::ops::Range;

use super::compact::{
    wal_id, COMPACT_PAGE_MAGIC, COMPACT_RECORD_HEADER_SIZE, COMPACT_XL_CRC, COMPACT_XL_INFO,
    COMPACT_XL_RMID, COMPACT_XL_TOT_LEN, COMPACT_XL_XID, XLP_WALID, XL_WALID,
};
use super::little_endian::{field, fixed_field};
use super::page::PG15_PAGE_MAGIC;
use super::record::{RecordHeader, RECORD_HEADER_SIZE, XL_CRC};
use super::self_lsn::{SELF_LSN_PAGE_MAGIC, XL_SELF_LSN};
use super::WalFormat;
use crate::lsn::{Lsn, SegmentSize};
use crate::named_enum::named_enum;

/// What a record header's link field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordLink {
    /// `Postgres15`: the start LSN of the previous record (`xl_prev`).
    Prev(Lsn),
    /// `SelfLsn`: the record's own start LSN.
    SelfLsn(Lsn),
    /// `CompactWalId`: the low 16 bits of the number of the segment the
    /// record starts in (`xl_walid`).
    WalId(u16),
}

impl WalFormat {
    /// Every format, in the order tables list them.
    pub const ALL: [WalFormat; 3] = [
        WalFormat::Postgres15,
        WalFormat::SelfLsn,
        WalFormat::CompactWalId,
    ];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            WalFormat::Postgres15 => "postgres15",
            WalFormat::SelfLsn => "self-lsn",
            WalFormat::CompactWalId => "compact-wal-id",
        }
    }

    /// Size of the record header (PostgreSQL: `SizeOfXLogRecord`, 24).
    pub const fn record_header_size(self) -> usize {
        match self {
            WalFormat::Postgres15 | WalFormat::SelfLsn => RECORD_HEADER_SIZE,
            WalFormat::CompactWalId => COMPACT_RECORD_HEADER_SIZE,
        }
    }

    /// Byte range of `xl_crc` in the record header.
    pub const fn crc_field(self) -> Range<usize> {
        match self {
            WalFormat::Postgres15 | WalFormat::SelfLsn => XL_CRC,
            WalFormat::CompactWalId => COMPACT_XL_CRC,
        }
    }

    /// Offset of the CRC in the record header; the CRC covers the record
    /// body, then the header bytes before this offset.
    pub const fn crc_offset(self) -> usize {
        self.crc_field().start
    }

    /// The `xlp_magic` of this format's pages.
    pub const fn page_magic(self) -> u16 {
        match self {
            WalFormat::Postgres15 => PG15_PAGE_MAGIC,
            WalFormat::SelfLsn => SELF_LSN_PAGE_MAGIC,
            WalFormat::CompactWalId => COMPACT_PAGE_MAGIC,
        }
    }

    /// The format whose pages carry `magic`, if any.
    pub fn from_page_magic(magic: u16) -> Option<WalFormat> {
        WalFormat::ALL.into_iter().find(|f| f.page_magic() == magic)
    }

    /// True if records carry the previous record's LSN: the reservation
    /// must then hand each record its predecessor's start.
    pub const fn has_prev_link(self) -> bool {
        matches!(self, WalFormat::Postgres15)
    }

    /// The link field of the record starting at `at` whose predecessor
    /// started at `prev` (used by `Postgres15` only).
    pub fn link(self, at: Lsn, prev: Lsn, seg: SegmentSize) -> RecordLink {
        match self {
            WalFormat::Postgres15 => RecordLink::Prev(prev),
            WalFormat::SelfLsn => RecordLink::SelfLsn(at),
            WalFormat::CompactWalId => RecordLink::WalId(wal_id(seg, at)),
        }
    }

    /// Writes the record header `h` of the record starting at `at` into the
    /// first [`record_header_size`](Self::record_header_size) bytes of
    /// `out`, padding as zeros. `h.prev` is used by `Postgres15` only; the
    /// CRC field is written as `h.crc`.
    ///
    /// Panics if `out` is shorter than the header (a caller bug).
    pub fn encode_header(self, h: &RecordHeader, at: Lsn, seg: SegmentSize, out: &mut [u8]) {
        match self {
            WalFormat::Postgres15 => out[..RECORD_HEADER_SIZE].copy_from_slice(&h.encode()),
            WalFormat::SelfLsn => {
                let out = &mut out[..RECORD_HEADER_SIZE];
                out.copy_from_slice(&h.encode());
                out[XL_SELF_LSN].copy_from_slice(&at.as_u64().to_le_bytes());
            }
            WalFormat::CompactWalId => {
                let out = &mut out[..COMPACT_RECORD_HEADER_SIZE];
                out[COMPACT_XL_TOT_LEN].copy_from_slice(&h.tot_len.to_le_bytes());
                out[COMPACT_XL_XID].copy_from_slice(&h.xid.to_le_bytes());
                out[COMPACT_XL_INFO].copy_from_slice(&[h.info]);
                out[COMPACT_XL_RMID].copy_from_slice(&[h.rmid]);
                out[XL_WALID].copy_from_slice(&wal_id(seg, at).to_le_bytes());
                out[COMPACT_XL_CRC].copy_from_slice(&h.crc.to_le_bytes());
            }
        }
    }

    /// Reads a record header from the first
    /// [`record_header_size`](Self::record_header_size) bytes of `bytes`;
    /// `None` if there are fewer. Nothing is validated. The returned
    /// header's `prev` is [`Lsn::INVALID`] in formats without a prev-link;
    /// the link field comes back separately.
    pub fn decode_header(self, bytes: &[u8]) -> Option<(RecordHeader, RecordLink)> {
        match self {
            WalFormat::Postgres15 | WalFormat::SelfLsn => {
                let raw: &[u8; RECORD_HEADER_SIZE] =
                    bytes.get(..RECORD_HEADER_SIZE)?.try_into().ok()?;
                let h = RecordHeader::decode(raw);
                Some(match self {
                    WalFormat::SelfLsn => (
                        RecordHeader {
                            prev: Lsn::INVALID,
                            ..h
                        },
                        RecordLink::SelfLsn(Lsn(u64::from_le_bytes(fixed_field(raw, XL_SELF_LSN)))),
                    ),
                    _ => (h, RecordLink::Prev(h.prev)),
                })
            }
            WalFormat::CompactWalId => {
                let b = bytes.get(..COMPACT_RECORD_HEADER_SIZE)?;
                let h = RecordHeader {
                    tot_len: u32::from_le_bytes(fixed_field(b, COMPACT_XL_TOT_LEN)),
                    xid: u32::from_le_bytes(fixed_field(b, COMPACT_XL_XID)),
                    prev: Lsn::INVALID,
                    info: u8::from_le_bytes(fixed_field(b, COMPACT_XL_INFO)),
                    rmid: u8::from_le_bytes(fixed_field(b, COMPACT_XL_RMID)),
                    crc: u32::from_le_bytes(fixed_field(b, COMPACT_XL_CRC)),
                };
                let id = u16::from_le_bytes(fixed_field(b, XL_WALID));
                Some((h, RecordLink::WalId(id)))
            }
        }
    }

    /// Completes a record's CRC from the CRC of its body
    /// (`format::crc::body_crc`) and its encoded header (only the bytes
    /// before [`crc_offset`](Self::crc_offset) are used).
    pub fn finish_crc(self, body_crc: u32, header: &[u8]) -> u32 {
        super::crc::append(body_crc, &header[..self.crc_offset()])
    }

    /// The CRC of a record with this encoded header and body.
    pub fn record_crc(self, header: &[u8], body: &[u8]) -> u32 {
        self.finish_crc(super::crc::body_crc(body), header)
    }

    /// Encodes `h` for the record at `at` with its CRC computed from
    /// `body_crc`, into the front of `out`.
    pub fn seal_header(
        self,
        h: &RecordHeader,
        at: Lsn,
        seg: SegmentSize,
        body_crc: u32,
        out: &mut [u8],
    ) {
        let words = self.header_words(h, at, seg);
        words.store(super::crc::finish_words(body_crc, &words), out);
    }

    /// Adds what this format puts into a page header beyond PostgreSQL's
    /// fields: for `CompactWalId`, the page's segment id in the padding.
    /// `page` starts with the encoded header of the page at `page_start`.
    pub fn stamp_page_header(self, page: &mut [u8], page_start: Lsn, seg: SegmentSize) {
        if self == WalFormat::CompactWalId {
            page[XLP_WALID].copy_from_slice(&wal_id(seg, page_start).to_le_bytes());
        }
    }

    /// The segment id a `CompactWalId` page header carries; `None` for
    /// other formats or if `page` is too short.
    pub fn page_wal_id(self, page: &[u8]) -> Option<u16> {
        (self == WalFormat::CompactWalId)
            .then(|| field(page, XLP_WALID))
            .flatten()
            .map(u16::from_le_bytes)
    }
}

named_enum!(WalFormat, "WAL format");

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> SegmentSize {
        SegmentSize::new(1 << 20).unwrap()
    }

    fn header() -> RecordHeader {
        RecordHeader {
            tot_len: 40,
            xid: 7,
            prev: Lsn(0x1_0000_0028),
            info: 0x10,
            rmid: 130,
            crc: 0,
        }
    }

    #[test]
    fn every_format_round_trips_its_header_and_link() {
        let at = Lsn(0x1_0020_0048);
        for format in WalFormat::ALL {
            let mut out = [0xAAu8; 32];
            format.seal_header(&header(), at, seg(), 0x1234_5678, &mut out);
            let size = format.record_header_size();
            assert_eq!(
                &out[size..],
                &[0xAA; 32][size..],
                "{format}: writes only the header"
            );
            let (h, link) = format.decode_header(&out).unwrap();
            assert_eq!(
                (h.tot_len, h.xid, h.info, h.rmid),
                (40, 7, 0x10, 130),
                "{format}"
            );
            assert_eq!(h.crc, format.finish_crc(0x1234_5678, &out), "{format}");
            assert_eq!(link, format.link(at, header().prev, seg()), "{format}");
            let expected_prev = if format.has_prev_link() {
                header().prev
            } else {
                Lsn::INVALID
            };
            assert_eq!(h.prev, expected_prev, "{format}");
        }
    }

    #[test]
    fn postgres15_header_is_the_plain_record_header() {
        let mut out = [0u8; 24];
        WalFormat::Postgres15.encode_header(&header(), Lsn(0x5000), seg(), &mut out);
        assert_eq!(out, header().encode());
    }

    #[test]
    fn compact_wal_id_is_the_low_16_bits_of_the_segment_number() {
        let at = seg().segment_start(0x1_0003);
        assert_eq!(
            WalFormat::CompactWalId.link(at, Lsn::INVALID, seg()),
            RecordLink::WalId(3)
        );
        let mut page = [0u8; 40];
        WalFormat::CompactWalId.stamp_page_header(&mut page, at, seg());
        assert_eq!(WalFormat::CompactWalId.page_wal_id(&page), Some(3));
        assert_eq!(WalFormat::SelfLsn.page_wal_id(&page), None);
    }

    #[test]
    fn the_crc_covers_the_link_field() {
        for format in WalFormat::ALL {
            let mut a = [0u8; 24];
            let mut b = [0u8; 24];
            format.seal_header(&header(), Lsn(0x1_0020_0048), seg(), 0, &mut a);
            let other = RecordHeader {
                prev: Lsn(0x1_0000_0030),
                ..header()
            };
            format.seal_header(&other, seg().segment_start(0x1_0021), seg(), 0, &mut b);
            assert_ne!(a[format.crc_field()], b[format.crc_field()], "{format}");
        }
    }

    #[test]
    fn magics_identify_formats_and_names_parse() {
        for format in WalFormat::ALL {
            assert_eq!(
                WalFormat::from_page_magic(format.page_magic()),
                Some(format)
            );
            assert_eq!(format.name().parse::<WalFormat>().unwrap(), format);
        }
        assert_eq!(WalFormat::from_page_magic(0xD113), None, "PostgreSQL 16");
        assert_eq!("SELF_LSN".parse::<WalFormat>().unwrap(), WalFormat::SelfLsn);
        assert!("pg16"
            .parse::<WalFormat>()
            .unwrap_err()
            .to_string()
            .contains("pg16"));
    }
}
