//! Lock-free reservation with prev-links handed over in the WAL buffer
//! (seed 003, Zhiguo Zhou's original patch 0001).
//!
//! The prev-link of the next record is always the start of this one, and
//! this inserter knows where the next record starts: its own end. So after
//! one `fetch_add`, each inserter writes its start into the buffer at the
//! next record's `xl_prev` field, `end + 8`, and waits until its own
//! `xl_prev` field, `start + 8`, has been written by its predecessor. The
//! buffer is the mailbox: a freshly initialised page is zero (the ring of
//! a log with this design zeroes whole pages, `InsertPath::ring`), and a real
//! prev-link is never zero. The copy of the record later overwrites the
//! field with the same value. The insert path does the buffer part
//! (`crate::insert`); this file has the reserver and where the field is;
//! the field itself, read and written in halves, is `buffer::LinkCell`.
//!
//! Invariants:
//! - exactly one writer per field (the reserver of the range before it)
//!   and one reader (the reserver of the range it is in);
//! - an 8-byte field is never seen half-written: it is two 32-bit atomics,
//!   the high half stored first and the low half stored with Release; the
//!   reader loads the low half with Acquire and, if non-zero, the high half.
//!   A record start LSN never has zero low 32 bits (a record never starts
//!   at a page start, and 2^32 is a multiple of the page size). With
//!   8-aligned records the field never straddles a page; it may lie on the
//!   page (or segment) after the one where its record starts, past that
//!   page's header, which the position mapping handles;
//! - an inserter advertises its own start before it touches a future page
//!   for its successor's field and before it waits for its own field, so
//!   evictions never wait for it, and it never advertises beyond its start
//!   until its record is copied;
//! - when the successor's field lies so far ahead that mapping its page
//!   could need the ring slot of our own start page (records about the
//!   ring's size), the field is written after our record is copied
//!   ([`publish_after_copy`]);
//! - the first record after start-up takes its prev-link from the reserver
//!   (the last record found by recovery) instead of the buffer: seeding it
//!   into the buffer at start-up would map a page outside any insertion
//!   slot (algorithms.md §4), and the first record of a new log has no
//!   prev-link, which the "zero means absent" mailbox cannot express.
//!
//! A predecessor preempted between its `fetch_add` and its link write
//! stalls its successor (and so every later one): lock-free in name only,
//! which oversubscribed runs show. A predecessor whose write fails poisons
//! the log, and a waiting successor gives up when it sees that.

use super::position_counter::{HeadReserver, PrevLinks};
use super::PrevLink;
use crate::format::record::XL_PREV;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};

/// Offset of `xl_prev` in the record header.
pub const PREV_LINK_OFFSET: u64 = XL_PREV.start as u64;

/// See the module docs.
pub type PrevLinkInBufferReserver = HeadReserver<BufferLinks>;

/// The prev-links of [`PrevLinkInBufferReserver`]: in the buffer, but for
/// the first record after start-up.
#[derive(Debug)]
pub struct BufferLinks {
    /// Position of the first record after start-up.
    first: u64,
    /// Its prev-link: the last record found at start-up, or none.
    first_prev: Lsn,
}

impl PrevLinks for BufferLinks {
    fn prev_link(&self, _seg: SegmentSize, start: u64, _end: u64, _last: u64) -> PrevLink {
        if start == self.first {
            PrevLink::Known(self.first_prev)
        } else {
            PrevLink::InBuffer
        }
    }
}

impl PrevLinkInBufferReserver {
    /// Next record at position `next`; the last one started at `prev`.
    pub fn new(seg: SegmentSize, next: u64, prev: Lsn) -> Self {
        let links = BufferLinks {
            first: next,
            first_prev: prev,
        };
        HeadReserver::with_links(seg, next, links)
    }
}

/// Where the prev-link field of the record starting at usable position
/// `pos` lies: 8 usable bytes further, past a page header if the record
/// starts in the last 8 bytes of a page.
pub fn link_lsn(seg: SegmentSize, pos: u64) -> Lsn {
    seg.pos_to_start_lsn(pos + PREV_LINK_OFFSET)
}

/// True if the successor's field (of the record starting at position
/// `end`) must be written after our record, which starts at LSN `start`,
/// is copied: mapping its page first could need the ring slot of our own
/// start page, which we pin by advertising our start. Two pages of margin
/// cover our start page and a partly written one.
pub fn publish_after_copy(seg: SegmentSize, ring_bytes: u64, start: Lsn, end: u64) -> bool {
    let ahead = link_lsn(seg, end).page_start().0 - start.page_start().0;
    ahead + 2 * PAGE_SIZE > ring_bytes
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lsn::LONG_PAGE_HEADER_SIZE;

    #[test]
    fn the_field_follows_the_record_start_across_pages_and_segments() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        // A record in the last 8 bytes of a segment: its field is past the
        // next segment's long header.
        let last_page = seg.segment_start(2).0 - PAGE_SIZE;
        let pos = seg.lsn_to_pos(Lsn(last_page + PAGE_SIZE - 8)).unwrap();
        assert_eq!(
            link_lsn(seg, pos),
            Lsn(seg.segment_start(2).0 + LONG_PAGE_HEADER_SIZE)
        );
        // Elsewhere it is 8 bytes on.
        let pos = seg.lsn_to_pos(Lsn(last_page + 0x100)).unwrap();
        assert_eq!(link_lsn(seg, pos), Lsn(last_page + 0x108));
    }

    #[test]
    fn records_near_the_ring_size_publish_after_copying() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let start = Lsn(seg.segment_start(1).0 + 0x2040);
        let pos = seg.lsn_to_pos(start).unwrap();
        let ring = 16 * PAGE_SIZE;
        assert!(!publish_after_copy(seg, ring, start, pos + 64));
        assert!(!publish_after_copy(seg, ring, start, pos + 12 * PAGE_SIZE));
        assert!(publish_after_copy(seg, ring, start, pos + 15 * PAGE_SIZE));
        assert!(publish_after_copy(seg, ring, start, pos + 40 * PAGE_SIZE));
    }

    #[test]
    fn the_first_record_after_start_up_takes_the_recovered_link() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let next = seg.usable_bytes() + 64;
        let r = PrevLinkInBufferReserver::new(seg, next, Lsn(0x100050));
        assert_eq!(r.reserve(32).prev, PrevLink::Known(Lsn(0x100050)));
        assert_eq!(r.reserve(32).prev, PrevLink::InBuffer);
        let fresh = PrevLinkInBufferReserver::new(seg, next, Lsn::INVALID);
        assert_eq!(fresh.reserve(32).prev, PrevLink::Known(Lsn::INVALID));
    }
}
