//! Lock-free reservation with prev-links handed over in the WAL buffer
//! (seed 003, Zhiguo Zhou's original patch 0001).
//!
//! The prev-link of the next record is always the start of this one, and
//! this inserter knows where the next record starts: its own end. So after
//! one `fetch_add`, each inserter writes its start into the buffer at the
//! next record's `xl_prev` field, `end + 8`, and waits until its own
//! `xl_prev` field, `start + 8`, has been written by its predecessor. The
//! buffer is the mailbox: a freshly initialised page is zero, and a real
//! prev-link is never zero. The copy of the record later overwrites the
//! field with the same value. The insert path does the buffer part
//! (`crate::insert`); this file has the reserver, where the field is, and
//! the field's protocol.
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

use super::backoff::Backoff;
use super::head::{HeadReserver, PrevLinks};
use super::PrevLink;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use std::sync::atomic::Ordering;

/// Offset of `xl_prev` in the record header.
pub const PREV_LINK_OFFSET: u64 = 8;

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
    fn prev_link(&self, _seg: SegmentSize, start: u64, _end: u64) -> PrevLink {
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

/// A 32-bit atomic: std's over buffer memory, loom's in the models.
pub trait Atomic32 {
    /// An atomic load.
    fn load(&self, order: Ordering) -> u32;
    /// An atomic store.
    fn store(&self, value: u32, order: Ordering);
}

/// Implements [`Atomic32`] for an atomic type with inherent `load` and
/// `store` of that shape.
macro_rules! impl_atomic32 {
    ($atomic:ty) => {
        impl Atomic32 for $atomic {
            fn load(&self, order: Ordering) -> u32 {
                <$atomic>::load(self, order)
            }

            fn store(&self, value: u32, order: Ordering) {
                <$atomic>::store(self, value, order)
            }
        }
    };
}

impl_atomic32!(std::sync::atomic::AtomicU32);
#[cfg(loom)]
impl_atomic32!(loom::sync::atomic::AtomicU32);

/// One 8-byte prev-link field as two 32-bit atomic halves (little endian:
/// the low half first).
#[derive(Debug)]
pub struct LinkCell<'a, A> {
    low: &'a A,
    high: &'a A,
}

impl<'a, A: Atomic32> LinkCell<'a, A> {
    /// The field whose halves are `low` and `high`.
    pub fn new(low: &'a A, high: &'a A) -> Self {
        LinkCell { low, high }
    }

    /// Writes `prev` (a record start: its low half is never 0).
    pub fn publish(&self, prev: Lsn) {
        debug_assert!(prev.0 as u32 != 0, "{prev} cannot be a record start");
        // Relaxed: published by the Release store of the low half.
        self.high.store((prev.0 >> 32) as u32, Ordering::Relaxed);
        // Release: makes the high half visible to a reader that sees this.
        self.low.store(prev.0 as u32, Ordering::Release);
    }

    /// The prev-link if it has been written.
    pub fn take(&self) -> Option<Lsn> {
        // Acquire: pairs with the Release in publish; the high half read
        // after it is then the one written before it.
        let low = self.low.load(Ordering::Acquire);
        if low == 0 {
            return None;
        }
        // Relaxed: ordered by the Acquire above.
        let high = self.high.load(Ordering::Relaxed);
        Some(Lsn(u64::from(high) << 32 | u64::from(low)))
    }

    /// Waits until the field is written and returns it, calling `check`
    /// between tries: its error (the log poisoned, so the predecessor will
    /// never write) ends the wait.
    pub fn wait<E>(&self, mut check: impl FnMut() -> Result<(), E>) -> Result<Lsn, E> {
        let mut backoff = Backoff::new();
        loop {
            if let Some(prev) = self.take() {
                return Ok(prev);
            }
            check()?;
            backoff.snooze();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::lsn::LONG_PAGE_HEADER_SIZE;
    use std::sync::atomic::AtomicU32;

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

    #[test]
    fn a_cell_reads_back_what_was_published_and_zero_as_absent() {
        let (low, high) = (AtomicU32::new(0), AtomicU32::new(0));
        let cell = LinkCell::new(&low, &high);
        assert_eq!(cell.take(), None);
        assert_eq!(cell.wait(|| Err("poisoned")), Err("poisoned"));
        cell.publish(Lsn(0x3_0000_2018));
        assert_eq!(cell.wait(|| Err("unused")), Ok(Lsn(0x3_0000_2018)));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc, AtomicU32};

    fn cell(cells: &[(AtomicU32, AtomicU32); 2], i: usize) -> LinkCell<'_, AtomicU32> {
        LinkCell::new(&cells[i].0, &cells[i].1)
    }

    /// Three records in a row: the first inserter publishes the second's
    /// link, which waits for it and then publishes the third's. Every
    /// link arrives whole (both halves), whatever the interleaving.
    #[test]
    fn links_hand_over_whole_along_a_chain() {
        loom::model(|| {
            let cells: Arc<[(AtomicU32, AtomicU32); 2]> = Arc::new([
                (AtomicU32::new(0), AtomicU32::new(0)),
                (AtomicU32::new(0), AtomicU32::new(0)),
            ]);
            let (c2, c3) = (cells.clone(), cells.clone());
            let second = thread::spawn(move || {
                let prev = cell(&c2, 0).wait(|| Ok::<(), ()>(())).unwrap();
                cell(&c2, 1).publish(Lsn(0x2_0000_0040));
                prev
            });
            let third = thread::spawn(move || cell(&c3, 1).wait(|| Ok::<(), ()>(())).unwrap());
            cell(&cells, 0).publish(Lsn(0x1_0000_0018));
            assert_eq!(second.join().unwrap(), Lsn(0x1_0000_0018));
            assert_eq!(third.join().unwrap(), Lsn(0x2_0000_0040));
        });
    }
}
