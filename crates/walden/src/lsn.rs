//! Log sequence numbers and the arithmetic that places bytes in the log.
//!
//! An [`Lsn`] is a byte address in one endless WAL stream. Inserters do not
//! reserve LSNs directly: they reserve *usable byte positions*, a virtual
//! stream that leaves page headers out (PostgreSQL: `CurrBytePos`), and
//! [`SegmentSize`] maps positions to LSNs and back exactly as PostgreSQL 15
//! does (`XLogBytePosToRecPtr`, `XLogBytePosToEndRecPtr`,
//! `XLogRecPtrToBytePos`). Using the same mapping makes Walden's LSNs
//! identical to PostgreSQL's for the same sequence of records.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

/// Size of one WAL page (PostgreSQL: `XLOG_BLCKSZ`).
pub const PAGE_SIZE: u64 = 8192;
/// Size of the header at the start of every page but a segment's first
/// (PostgreSQL: `SizeOfXLogShortPHD`).
pub const SHORT_PAGE_HEADER_SIZE: u64 = 24;
/// Size of the header at the start of a segment's first page
/// (PostgreSQL: `SizeOfXLogLongPHD`).
pub const LONG_PAGE_HEADER_SIZE: u64 = 40;
/// Bytes of record data a page after a segment's first can hold
/// (PostgreSQL: `UsableBytesInPage`).
pub const USABLE_BYTES_IN_PAGE: u64 = PAGE_SIZE - SHORT_PAGE_HEADER_SIZE;
/// Smallest segment size PostgreSQL accepts (1 MiB).
pub const MIN_SEGMENT_SIZE: u64 = 1 << 20;
/// Largest segment size PostgreSQL accepts (1 GiB).
pub const MAX_SEGMENT_SIZE: u64 = 1 << 30;
/// PostgreSQL's default segment size (16 MiB).
pub const DEFAULT_SEGMENT_SIZE: u64 = 16 << 20;

/// Rounds `x` up to the next multiple of 8 (PostgreSQL: `MAXALIGN`).
#[inline]
pub const fn maxalign(x: u64) -> u64 {
    (x + 7) & !7
}

/// A log sequence number: a byte address in the WAL stream
/// (PostgreSQL: `XLogRecPtr`).
///
/// It prints and parses as PostgreSQL does: the high and low 32 bits in
/// upper-case hex without leading zeros, `0/1A2B3C8`. [`Lsn::INVALID`] (0)
/// never addresses a record.
///
/// ```
/// use walden::Lsn;
/// let lsn: Lsn = "0/A8C7B8".parse().unwrap();
/// assert_eq!(lsn.as_u64(), 0xA8C7B8);
/// assert_eq!(lsn.to_string(), "0/A8C7B8");
/// assert_eq!(format!("{lsn:#}"), "0/00A8C7B8"); // pg_waldump's padded form
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The invalid LSN, 0 (PostgreSQL: `InvalidXLogRecPtr`).
    pub const INVALID: Lsn = Lsn(0);

    /// The LSN as a plain integer.
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// True unless this is [`Lsn::INVALID`].
    #[inline]
    pub const fn is_valid(self) -> bool {
        self.0 != 0
    }

    /// Offset of this LSN within its page.
    #[inline]
    pub const fn page_offset(self) -> u64 {
        self.0 % PAGE_SIZE
    }

    /// The LSN of the start of the page holding this LSN.
    #[inline]
    pub const fn page_start(self) -> Lsn {
        Lsn(self.0 - self.0 % PAGE_SIZE)
    }

    /// This LSN plus `bytes`, or `None` on overflow.
    #[inline]
    pub const fn checked_add(self, bytes: u64) -> Option<Lsn> {
        match self.0.checked_add(bytes) {
            Some(v) => Some(Lsn(v)),
            None => None,
        }
    }
}

impl fmt::Display for Lsn {
    /// `X/Y`; with `{:#}` the low half is zero-padded to 8 digits as in
    /// pg_waldump's record lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (hi, lo) = ((self.0 >> 32) as u32, self.0 as u32);
        if f.alternate() {
            write!(f, "{hi:X}/{lo:08X}")
        } else {
            write!(f, "{hi:X}/{lo:X}")
        }
    }
}

impl fmt::Debug for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lsn({self})")
    }
}

impl From<u64> for Lsn {
    fn from(v: u64) -> Self {
        Lsn(v)
    }
}

impl From<Lsn> for u64 {
    fn from(l: Lsn) -> Self {
        l.0
    }
}

/// Why a string is not an LSN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid LSN {text:?}: expected two hex numbers of at most 8 digits each, as in 0/1A2B3C8")]
pub struct ParseLsnError {
    text: String,
}

impl FromStr for Lsn {
    type Err = ParseLsnError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseLsnError { text: s.to_owned() };
        let (hi, lo) = s.split_once('/').ok_or_else(err)?;
        let half = |h: &str| -> Result<u64, ParseLsnError> {
            if h.is_empty() || h.len() > 8 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            u64::from_str_radix(h, 16).map_err(|_| err())
        };
        Ok(Lsn((half(hi)? << 32) | half(lo)?))
    }
}

crate::named_enum::serde_as_text!(Lsn);

/// A timeline ID (PostgreSQL: `TimeLineID`).
pub type TimeLineId = u32;

/// Why a segment size is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("segment size {0} bytes is not a power of two between 1 MiB and 1 GiB")]
pub struct BadSegmentSize(pub u64);

/// A validated WAL segment size, and the position arithmetic that depends on it.
///
/// A power of two from 1 MiB to 1 GiB, as PostgreSQL requires.
///
/// ```
/// use walden::SegmentSize;
/// use walden::Lsn;
/// let seg = SegmentSize::new(1 << 20).unwrap();
/// assert_eq!(seg.usable_bytes(), 1_045_488);
/// // The first usable byte of segment 1 sits after its long page header.
/// assert_eq!(seg.pos_to_start_lsn(seg.usable_bytes()), Lsn(0x100028));
/// assert_eq!(seg.file_name(1, 10), "00000001000000000000000A");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentSize(u64);

impl Default for SegmentSize {
    fn default() -> Self {
        SegmentSize(DEFAULT_SEGMENT_SIZE)
    }
}

impl SegmentSize {
    /// Validates `bytes` as a segment size.
    pub const fn new(bytes: u64) -> Result<Self, BadSegmentSize> {
        if bytes.is_power_of_two() && bytes >= MIN_SEGMENT_SIZE && bytes <= MAX_SEGMENT_SIZE {
            Ok(SegmentSize(bytes))
        } else {
            Err(BadSegmentSize(bytes))
        }
    }

    /// The size in bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// Pages per segment.
    #[inline]
    pub const fn pages(self) -> u64 {
        self.0 / PAGE_SIZE
    }

    /// Record bytes one segment holds (PostgreSQL: `UsableBytesInSegment`).
    #[inline]
    pub const fn usable_bytes(self) -> u64 {
        self.pages() * USABLE_BYTES_IN_PAGE - (LONG_PAGE_HEADER_SIZE - SHORT_PAGE_HEADER_SIZE)
    }

    /// Segments per 4 GiB "log id" (used in file names).
    #[inline]
    pub const fn segments_per_id(self) -> u64 {
        0x1_0000_0000 / self.0
    }

    /// The segment number holding `lsn`.
    #[inline]
    pub const fn segno(self, lsn: Lsn) -> u64 {
        lsn.0 / self.0
    }

    /// Offset of `lsn` within its segment file.
    #[inline]
    pub const fn offset(self, lsn: Lsn) -> u64 {
        lsn.0 % self.0
    }

    /// The first LSN of segment `segno`.
    #[inline]
    pub const fn segment_start(self, segno: u64) -> Lsn {
        Lsn(segno * self.0)
    }

    /// Size of the page header at `lsn`'s page: long on a segment's first page.
    #[inline]
    pub const fn page_header_size(self, lsn: Lsn) -> u64 {
        if self.offset(lsn) < PAGE_SIZE {
            LONG_PAGE_HEADER_SIZE
        } else {
            SHORT_PAGE_HEADER_SIZE
        }
    }

    /// Splits a usable byte position into (full segments, segment offset of
    /// the byte), with `on_boundary` choosing the offset reported for a
    /// position that falls exactly on a page boundary.
    #[inline]
    fn place(self, pos: u64, end_flavour: bool) -> Lsn {
        let fullsegs = pos / self.usable_bytes();
        let mut left = pos % self.usable_bytes();
        let first_page_room = PAGE_SIZE - LONG_PAGE_HEADER_SIZE;
        let seg_offset = if left < first_page_room {
            if end_flavour && left == 0 {
                0
            } else {
                left + LONG_PAGE_HEADER_SIZE
            }
        } else {
            left -= first_page_room;
            let fullpages = left / USABLE_BYTES_IN_PAGE;
            let in_page = left % USABLE_BYTES_IN_PAGE;
            if end_flavour && in_page == 0 {
                PAGE_SIZE + fullpages * PAGE_SIZE
            } else {
                PAGE_SIZE + fullpages * PAGE_SIZE + in_page + SHORT_PAGE_HEADER_SIZE
            }
        };
        Lsn(fullsegs * self.0 + seg_offset)
    }

    /// Maps a usable byte position to the LSN where a record starting there
    /// begins: a position at a page boundary maps past the page header
    /// (PostgreSQL: `XLogBytePosToRecPtr`).
    #[inline]
    pub fn pos_to_start_lsn(self, pos: u64) -> Lsn {
        self.place(pos, false)
    }

    /// Maps a usable byte position to the LSN just past a record ending
    /// there: a position at a page boundary maps to the page start
    /// (PostgreSQL: `XLogBytePosToEndRecPtr`).
    #[inline]
    pub fn pos_to_end_lsn(self, pos: u64) -> Lsn {
        self.place(pos, true)
    }

    /// Maps an LSN back to its usable byte position (PostgreSQL:
    /// `XLogRecPtrToBytePos`). Returns `None` for an LSN inside a page
    /// header; a page start is accepted (the end flavour of a boundary).
    pub fn lsn_to_pos(self, lsn: Lsn) -> Option<u64> {
        let fullsegs = self.segno(lsn);
        let off = self.offset(lsn);
        let fullpages = off / PAGE_SIZE;
        let in_page = off % PAGE_SIZE;
        let base = fullsegs * self.usable_bytes();
        if fullpages == 0 {
            match in_page {
                0 => Some(base),
                o if o < LONG_PAGE_HEADER_SIZE => None,
                o => Some(base + o - LONG_PAGE_HEADER_SIZE),
            }
        } else {
            let page_base =
                base + (PAGE_SIZE - LONG_PAGE_HEADER_SIZE) + (fullpages - 1) * USABLE_BYTES_IN_PAGE;
            match in_page {
                0 => Some(page_base),
                o if o < SHORT_PAGE_HEADER_SIZE => None,
                o => Some(page_base + o - SHORT_PAGE_HEADER_SIZE),
            }
        }
    }

    /// Where a record of `tot_len` bytes starting at `start` ends once its
    /// alignment padding is counted: the page-start flavour of the LSN where
    /// the next record goes (PostgreSQL: what `XLogInsert` returns). `None`
    /// if `start` lies inside a page header.
    pub fn aligned_end(self, start: Lsn, tot_len: u64) -> Option<Lsn> {
        Some(self.pos_to_end_lsn(self.lsn_to_pos(start)? + maxalign(tot_len)))
    }

    /// The file name of segment `segno` on timeline `tli`
    /// (PostgreSQL: `XLogFileName`).
    pub fn file_name(self, tli: TimeLineId, segno: u64) -> String {
        let per_id = self.segments_per_id();
        format!("{:08X}{:08X}{:08X}", tli, segno / per_id, segno % per_id)
    }

    /// Parses a segment file name back into (timeline, segment number).
    /// Returns `None` unless `name` is exactly 24 hex digits whose segment
    /// part fits this segment size.
    pub fn parse_file_name(self, name: &str) -> Option<(TimeLineId, u64)> {
        if !is_segment_file_name(name) {
            return None;
        }
        let tli = u32::from_str_radix(&name[NAME_TLI], 16).ok()?;
        let log = u64::from_str_radix(&name[NAME_LOG], 16).ok()?;
        let seg = u64::from_str_radix(&name[NAME_SEG], 16).ok()?;
        if seg >= self.segments_per_id() {
            return None;
        }
        Some((tli, log * self.segments_per_id() + seg))
    }
}

/// Character range of the timeline in a segment file name: 8 hex digits
/// (PostgreSQL: `XLogFileName`'s `%08X%08X%08X`).
const NAME_TLI: Range<usize> = 0..8;
/// Character range of the high part of the segment number (the "log").
const NAME_LOG: Range<usize> = 8..16;
/// Character range of the low part of the segment number; it ends the name.
const NAME_SEG: Range<usize> = 16..24;

/// True if `name` looks like a segment file name (24 hex digits).
pub fn is_segment_file_name(name: &str) -> bool {
    name.len() == NAME_SEG.end && name.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn display_and_parse() {
        assert_eq!(Lsn(0x1_2A00_0000).to_string(), "1/2A000000");
        assert_eq!(format!("{:#}", Lsn(0x601B60)), "0/00601B60");
        assert_eq!("0/1A2B3C8".parse::<Lsn>().unwrap(), Lsn(0x1A2B3C8));
        assert_eq!("FFFFFFFF/FFFFFFFF".parse::<Lsn>().unwrap(), Lsn(u64::MAX));
        for bad in [
            "",
            "0",
            "/1",
            "1/",
            "0/123456789",
            "g/1",
            "0/-1",
            "0/1/2",
            "0/ 1",
        ] {
            assert!(bad.parse::<Lsn>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn segment_size_validation() {
        for ok in [1 << 20, 2 << 20, 16 << 20, 1 << 30] {
            assert_eq!(SegmentSize::new(ok).map(|s| s.bytes()), Ok(ok));
        }
        for bad in [0, 1 << 19, 3 << 20, 2 << 30, (1 << 20) + 8192] {
            assert_eq!(SegmentSize::new(bad), Err(BadSegmentSize(bad)));
        }
    }

    #[test]
    fn known_points_from_postgres_samples() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        assert_eq!(seg.usable_bytes(), 1_045_488);
        // 0/800028 + MAXALIGN(2,500,057) -> 0/A642D8 (pgwal-samples README).
        let start = seg.lsn_to_pos(Lsn(0x800028)).unwrap();
        assert_eq!(
            seg.pos_to_start_lsn(start + maxalign(2_500_057)),
            Lsn(0xA642D8)
        );
        // 0/70C0B0 + 8016 ends exactly at a page end; the next record is past the header.
        let p = seg.lsn_to_pos(Lsn(0x70C0B0)).unwrap() + 8016;
        assert_eq!(seg.pos_to_end_lsn(p), Lsn(0x70E000));
        assert_eq!(seg.pos_to_start_lsn(p), Lsn(0x70E018));
        assert_eq!(
            seg.file_name(1, seg.segno(Lsn(0xA8C7B8))),
            "00000001000000000000000A"
        );
        let seg16 = SegmentSize::new(16 << 20).unwrap();
        assert_eq!(
            seg16.file_name(1, seg16.segno(Lsn(0x1_2A00_0000))),
            "00000001000000010000002A"
        );
        assert_eq!(
            seg16.parse_file_name("00000001000000010000002A"),
            Some((1, 0x12A))
        );
        assert_eq!(seg16.parse_file_name("000000010000000100000100"), None);
        assert_eq!(seg16.parse_file_name("00000001000000010000002"), None);
    }

    #[test]
    fn header_bytes_have_no_position() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        assert_eq!(seg.lsn_to_pos(Lsn(0x100000 + 39)), None);
        assert_eq!(seg.lsn_to_pos(Lsn(0x102000 + 23)), None);
        assert_eq!(
            seg.lsn_to_pos(Lsn(0x102000 + 24)),
            seg.lsn_to_pos(Lsn(0x102000))
        );
    }

    fn sizes() -> impl Strategy<Value = SegmentSize> {
        prop_oneof![Just(1u64 << 20), Just(16 << 20), Just(1 << 30)]
            .prop_map(|b| SegmentSize::new(b).unwrap())
    }

    /// Positions near page and segment boundaries, where mapping bugs live.
    fn boundary_pos(seg: SegmentSize) -> impl Strategy<Value = u64> {
        let usable = seg.usable_bytes();
        (0u64..4096, 0u64..seg.pages(), -9i64..9, any::<bool>()).prop_map(
            move |(s, page, delta, page_edge)| {
                let seg_base = s * usable;
                let edge = if page_edge && page > 0 {
                    (PAGE_SIZE - LONG_PAGE_HEADER_SIZE) + (page - 1) * USABLE_BYTES_IN_PAGE
                } else {
                    0
                };
                (seg_base + edge).saturating_add_signed(delta)
            },
        )
    }

    proptest! {
        #[test]
        fn start_lsn_round_trips(
            (seg, pos) in sizes().prop_flat_map(|s| (Just(s), prop_oneof![boundary_pos(s), 0u64..u64::MAX / (1 << 14)]))
        ) {
            let lsn = seg.pos_to_start_lsn(pos);
            prop_assert!(lsn.page_offset() >= seg.page_header_size(lsn), "{lsn} inside a page header");
            prop_assert_eq!(seg.lsn_to_pos(lsn), Some(pos));
            let end = seg.pos_to_end_lsn(pos);
            prop_assert_eq!(seg.lsn_to_pos(end), Some(pos));
            // The two flavours differ only on page boundaries.
            if end != lsn {
                prop_assert_eq!(end.page_offset(), 0);
                prop_assert_eq!(lsn.0 - end.0, seg.page_header_size(end));
            }
        }

        #[test]
        fn positions_are_monotone(seg in sizes(), pos in 0u64..1 << 40, step in 1u64..20_000) {
            prop_assert!(seg.pos_to_start_lsn(pos) < seg.pos_to_start_lsn(pos + step));
            prop_assert!(seg.pos_to_end_lsn(pos) < seg.pos_to_end_lsn(pos + step));
        }

        #[test]
        fn file_names_round_trip(seg in sizes(), tli in 1u32.., segno in 0u64..(1u64 << 40)) {
            let segno = segno % (seg.segments_per_id() << 32);
            let name = seg.file_name(tli, segno);
            prop_assert!(is_segment_file_name(&name));
            prop_assert_eq!(seg.parse_file_name(&name), Some((tli, segno)));
        }

        #[test]
        fn lsn_text_round_trips(v in any::<u64>()) {
            let l = Lsn(v);
            prop_assert_eq!(l.to_string().parse::<Lsn>().unwrap(), l);
            prop_assert_eq!(format!("{l:#}").parse::<Lsn>().unwrap(), l);
        }
    }
}
