//! The WAL buffer ring: shared pages that inserters copy records into and
//! the writer writes out.
//!
//! PostgreSQL: `XLogCtl->pages`, `XLogCtl->xlblocks`. Page `P` (by LSN)
//! lives in slot `(P / PAGE_SIZE) % pages`. `page_end[slot]` holds the end
//! LSN of the page currently in the slot, 0 when none; an inserter may copy
//! into a page only after seeing `page_end` equal that page's end.
//!
//! Ownership of the bytes, which the `unsafe` blocks rely on:
//! - a page is initialised (header written, the rest zeroed only by a ring
//!   [`BufferRing::zeroing`] [`PageZeroing::WholePage`]) by exactly one thread, while no
//!   one else can reach the slot: its previous page was written out and no
//!   reservation maps to the new page's bytes until `page_end` is published
//!   (Release, read with Acquire);
//! - each inserter writes only the bytes of its own reservation, plus the
//!   contrecord fields of the header of each page its record continues onto
//!   (no other record covers that page's start);
//! - the writer reads only ranges below the point where every insertion has
//!   finished, and a slot is not re-initialised before the writer has
//!   written its page.
//!
//! What a page holds past its header before the inserters copy: by default
//! the bytes of the page its slot held before. Every byte the writer writes
//! is covered by a header or a reservation, and each reservation is filled
//! whole, its record's alignment padding with zeros (PostgreSQL 15 zeroes
//! the whole page instead, `AdvanceXLInsertBuffer`'s `MemSet`, and leaves
//! the padding as the zeros found there), so the log written is the same
//! byte for byte, without an 8 KiB `memset` per page that the copy then
//! overwrites (docs/buffers.md, "No page zeroed twice"). A design that
//! reads the ring before the reservation's owner writes it (the prev-link
//! in the buffer waits for a nonzero field) needs the pages zeroed:
//! [`BufferRing::zeroing`] with [`PageZeroing::WholePage`], which
//! [`crate::Config::page_zeroing`] also asks for (the before of a
//! before/after measurement).

use std::ptr::NonNull;

use crate::format::page::{
    LongPageHeader, PageHeader, XLP_BKP_REMOVABLE, XLP_FIRST_IS_CONTRECORD, XLP_LONG_HEADER,
};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{AtomicU64, Ordering};

use super::link_cell::LinkCell;
use super::page_zeroing::PageZeroing;
use page_tracker::PageTracker;

#[cfg(all(test, loom))]
mod loom_model;
mod page_tracker;
use crate::format::page::{XLP_INFO, XLP_REM_LEN};
use crate::segment::AlignedPage;

/// What every page header of this log carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageIdentity {
    /// Timeline written into `xlp_tli`.
    pub timeline: u32,
    /// System identifier written into long headers.
    pub system_id: u64,
    /// The log's format: its page magic, and what else it puts in headers.
    pub format: WalFormat,
}

impl PageIdentity {
    /// Writes the header of the page at `page_start` to the start of `out`
    /// (24 bytes, or 40 on a segment's first page, padding as zeros):
    /// `xlp_info` with [`XLP_BKP_REMOVABLE`], [`XLP_LONG_HEADER`] where it
    /// is long, and `extra_flags`; `xlp_rem_len` = `rem_len`; then what the
    /// format adds ([`WalFormat::stamp_page_header`]). The ring's
    /// [`BufferRing::init_page`] and a write-through of whole pages
    /// (`insert::write_through`) write the same bytes with it.
    pub fn encode_header(
        &self,
        seg: SegmentSize,
        page_start: Lsn,
        extra_flags: u16,
        rem_len: u32,
        out: &mut [u8],
    ) {
        let first_in_segment = seg.offset(page_start) == 0;
        let header = PageHeader {
            magic: self.format.page_magic(),
            info: XLP_BKP_REMOVABLE
                | extra_flags
                | if first_in_segment { XLP_LONG_HEADER } else { 0 },
            tli: self.timeline,
            pageaddr: page_start,
            rem_len,
            long: first_in_segment.then_some(LongPageHeader {
                sysid: self.system_id,
                seg_size: seg.bytes() as u32,
                xlog_blcksz: PAGE_SIZE as u32,
            }),
        };
        header.encode(out);
        self.format.stamp_page_header(out, page_start, seg);
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct BufferRing {
    base: NonNull<u8>,
    pages: usize,
    /// `pages - 1` when `pages` is a power of two (the default ring's
    /// 2048 pages): a page's slot is then a mask away, not a division.
    slot_mask: Option<u64>,
    page_end: Box<[AtomicU64]>,
    seg: SegmentSize,
    id: PageIdentity,
    /// Whether `init_page` zeroes the whole page, not only its header.
    zeroing: PageZeroing,
    /// The page memory as loom sees it (nothing outside loom).
    tracker: PageTracker,
}

// SAFETY: the page memory is shared under the ownership rules in the module
// docs; everything else is atomics or immutable.
unsafe impl Send for BufferRing {}
// SAFETY: as above.
unsafe impl Sync for BufferRing {}

impl BufferRing {
    /// A ring of `pages` pages (at least 2), pre-faulted so that first
    /// touches never happen on the insert path. The memory is aligned for
    /// direct I/O ([`AlignedPage`], 4 KiB), so the writer can write pages
    /// straight from it with `O_DIRECT`, and 8-aligned fields can be
    /// accessed atomically.
    pub fn new(pages: usize, seg: SegmentSize, id: PageIdentity) -> Self {
        let pages = pages.max(2);
        let mem: Box<[AlignedPage]> = vec![AlignedPage::ZERO; pages].into_boxed_slice();
        let base = NonNull::from(Box::leak(mem)).cast::<u8>();
        // One store per 4 KiB, the smallest page the OS maps: an 8 KiB WAL
        // page spans two of them.
        const OS_PAGE: usize = 4096;
        for offset in (0..pages * PAGE_SIZE as usize).step_by(OS_PAGE) {
            // SAFETY: in bounds; the ring is not shared yet. Volatile so the
            // pre-faulting store is not optimised away.
            unsafe { base.as_ptr().add(offset).write_volatile(0) };
        }
        BufferRing {
            base,
            pages,
            slot_mask: pages.is_power_of_two().then_some(pages as u64 - 1),
            page_end: (0..pages).map(|_| AtomicU64::new(0)).collect(),
            seg,
            id,
            zeroing: PageZeroing::HeaderOnly,
            tracker: PageTracker::new(pages),
        }
    }

    /// What every page header of this ring carries.
    pub fn identity(&self) -> PageIdentity {
        self.id
    }

    /// The same ring, whose [`BufferRing::init_page`] zeroes what
    /// `zeroing` says: with [`PageZeroing::WholePage`] the whole page
    /// before writing its header, for a design that reads bytes of a
    /// reservation before its owner has written them (the prev-link in the
    /// buffer: a zero field is one not written yet) or to measure against.
    pub fn zeroing(mut self, zeroing: PageZeroing) -> Self {
        self.zeroing = zeroing;
        self
    }

    /// Fills every page with `byte`, so that a test sees any byte written
    /// out that no header or reservation covered.
    #[cfg(test)]
    pub fn scribble(&mut self, byte: u8) {
        // SAFETY: in bounds; `&mut self`: the ring is not shared.
        unsafe { std::ptr::write_bytes(self.base.as_ptr(), byte, self.pages * PAGE_SIZE as usize) };
    }

    /// Number of pages in the ring.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Bytes the ring holds.
    pub fn bytes(&self) -> u64 {
        self.pages as u64 * PAGE_SIZE
    }

    #[inline]
    fn slot(&self, page_start: Lsn) -> usize {
        let page = page_start.0 / PAGE_SIZE;
        (match self.slot_mask {
            Some(mask) => page & mask,
            None => page % self.pages as u64,
        }) as usize
    }

    #[inline]
    fn ptr(&self, lsn: Lsn) -> *mut u8 {
        let off = self.slot(lsn.page_start()) * PAGE_SIZE as usize + lsn.page_offset() as usize;
        // SAFETY: slot < pages and page_offset < PAGE_SIZE keep it in bounds.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// True if the page starting at `page_start` is initialised in its slot.
    #[inline]
    pub fn holds(&self, page_start: Lsn) -> bool {
        // Acquire: pairs with the Release in `publish`, making the
        // initialiser's zeroing and header visible before we copy.
        self.page_end[self.slot(page_start)]
            .load(mutant::order(Mutant::RingHoldsRelaxed, Ordering::Acquire))
            == page_start.0 + PAGE_SIZE
    }

    /// End LSN of the page the slot for `page_start` holds now (0 if none):
    /// that page must be written out before the slot is re-initialised.
    #[inline]
    pub fn occupant_end(&self, page_start: Lsn) -> Lsn {
        // Acquire: pairs with `publish`; we only compare it.
        Lsn(self.page_end[self.slot(page_start)].load(Ordering::Acquire))
    }

    /// Initialises the slot for the page at `page_start`: writes its page
    /// header (long on a segment's first page), with `extra_flags` added to
    /// `xlp_info`, and publishes it. The rest of the page keeps what the
    /// slot held, unless the ring is [`BufferRing::zeroing`] whole pages:
    /// the inserters write every byte of it that is ever written out.
    ///
    /// # Safety
    /// The caller has exclusive ownership of the slot: the page it held was
    /// written out, and no other thread initialises or copies into it until
    /// this returns (module docs).
    pub unsafe fn init_page(&self, page_start: Lsn, extra_flags: u16) {
        let slot = self.slot(page_start);
        // Relaxed: invalidating only matters to readers comparing against
        // the new page's end, which is published with Release below.
        self.page_end[slot].store(0, Ordering::Relaxed);
        self.tracker.exclusive(slot);
        // SAFETY: exclusive ownership per the contract; the page is in bounds.
        let page =
            unsafe { std::slice::from_raw_parts_mut(self.ptr(page_start), PAGE_SIZE as usize) };
        if self.zeroing == PageZeroing::WholePage {
            page.fill(0);
        }
        self.id
            .encode_header(self.seg, page_start, extra_flags, 0, page);
        // Release: publishes the header (and zeroed page) to inserters.
        self.page_end[slot].store(
            page_start.0 + PAGE_SIZE,
            mutant::order(Mutant::RingPublishRelaxed, Ordering::Release),
        );
    }

    /// Loads a page's existing bytes `[page_start, page_start + bytes.len())`
    /// (the tail of the log found at start-up) and publishes it; the rest of
    /// the page is zeroed.
    ///
    /// # Safety
    /// As for [`BufferRing::init_page`].
    pub unsafe fn load_page(&self, page_start: Lsn, bytes: &[u8]) {
        let slot = self.slot(page_start);
        self.tracker.exclusive(slot);
        // SAFETY: exclusive ownership per the contract.
        let page =
            unsafe { std::slice::from_raw_parts_mut(self.ptr(page_start), PAGE_SIZE as usize) };
        let n = bytes.len().min(page.len());
        page[..n].copy_from_slice(&bytes[..n]);
        page[n..].fill(0);
        // Release: as in init_page.
        self.page_end[slot].store(page_start.0 + PAGE_SIZE, Ordering::Release);
    }

    /// Copies `bytes` to `at` (within one page).
    ///
    /// # Safety
    /// The page is initialised ([`BufferRing::holds`] returned true) and the
    /// range is part of the caller's reservation.
    #[inline]
    pub unsafe fn copy_in(&self, at: Lsn, bytes: &[u8]) {
        debug_assert!(at.page_offset() as usize + bytes.len() <= PAGE_SIZE as usize);
        self.tracker.shared(self.slot(at.page_start()));
        // SAFETY: in bounds (one page) and owned by the caller per the contract.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr(at), bytes.len()) };
    }

    /// The `len` bytes at `at` (within one page), for the caller to write a
    /// record of its reservation in place: copy it in, then CRC it where it
    /// lies.
    ///
    /// # Safety
    /// The page is initialised ([`BufferRing::holds`] returned true) and the
    /// range is part of the caller's reservation, so no other thread
    /// accesses these bytes while the slice lives: each inserter writes
    /// only its own reservation, and the writer reads it only after the
    /// caller's insertion has finished (module docs). With the prev-link in
    /// the buffer, the caller has read its own `xl_prev` field before.
    #[inline]
    #[allow(clippy::mut_from_ref)] // exclusive by the contract above
    pub unsafe fn reserved_mut(&self, at: Lsn, len: usize) -> &mut [u8] {
        debug_assert!(at.page_offset() as usize + len <= PAGE_SIZE as usize);
        self.tracker.shared(self.slot(at.page_start()));
        // SAFETY: in bounds (one page), and no other access to these bytes
        // while the slice lives, per the contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(at), len) }
    }

    /// Marks the page at `page_start` as beginning with `rem_len` bytes of a
    /// record continued from earlier pages.
    ///
    /// # Safety
    /// The page is initialised and the caller's record covers its start.
    pub unsafe fn set_contrecord(&self, page_start: Lsn, rem_len: u32) {
        self.tracker.shared(self.slot(page_start));
        let p = self.ptr(page_start);
        // SAFETY: header bytes of an initialised page the caller owns.
        unsafe {
            let info_ptr = p.add(XLP_INFO.start);
            let info = u16::from_le_bytes([*info_ptr, *info_ptr.add(1)]) | XLP_FIRST_IS_CONTRECORD;
            std::ptr::copy_nonoverlapping(info.to_le_bytes().as_ptr(), info_ptr, XLP_INFO.len());
            std::ptr::copy_nonoverlapping(
                rem_len.to_le_bytes().as_ptr(),
                p.add(XLP_REM_LEN.start),
                XLP_REM_LEN.len(),
            );
        }
    }

    /// The 8-byte prev-link field at `at` as two 32-bit atomics (the
    /// prev-link handoff of [`crate::insert::reserve::prev_link_in_buffer`]).
    /// Std's atomics even under loom: loom cannot model atomics over plain
    /// memory, and its models of the handoff use their own cells.
    ///
    /// # Safety
    /// The page is initialised, `at` is 8-aligned, and every other access
    /// to these 8 bytes (the page's zeroing, the record's copy, the writer's
    /// read) is ordered with these atomics by happens-before: the field is
    /// inside the reservation of the record it belongs to, whose inserter
    /// copies over it only after reading it, before releasing its slot.
    pub unsafe fn link_cell(&self, at: Lsn) -> LinkCell<'_, std::sync::atomic::AtomicU32> {
        debug_assert_eq!(at.0 % 8, 0);
        let p = self.ptr(at).cast::<u32>();
        // SAFETY: 8-aligned (ring memory is page-aligned and `at` is
        // 8-aligned), in bounds (a page holds whole 8-byte fields), and
        // accessed as the contract says.
        unsafe {
            LinkCell::new(
                std::sync::atomic::AtomicU32::from_ptr(p),
                std::sync::atomic::AtomicU32::from_ptr(p.add(1)),
            )
        }
    }

    /// Zeroes the bytes from `at` to the end of its page: the rest of a
    /// switch record's page, or (from the page start, header included) a
    /// page a switch record swallows, as PostgreSQL 15 writes them.
    ///
    /// # Safety
    /// The page is initialised and the bytes lie inside the caller's
    /// reservation (or, from a page start, the header of a page inside it).
    pub unsafe fn zero_to_page_end(&self, at: Lsn) {
        // SAFETY: the caller's contract; the range ends at the page's end.
        unsafe { self.zero(at, (PAGE_SIZE - at.page_offset()) as usize) };
    }

    /// Zeroes `len` bytes from `at`, within one page.
    ///
    /// # Safety
    /// As for [`BufferRing::copy_in`].
    pub unsafe fn zero(&self, at: Lsn, len: usize) {
        debug_assert!(at.page_offset() as usize + len <= PAGE_SIZE as usize);
        self.tracker.shared(self.slot(at.page_start()));
        // SAFETY: in bounds (one page) and owned by the caller per the contract.
        unsafe { std::ptr::write_bytes(self.ptr(at), 0, len) };
    }

    /// The bytes `[from, to)`, for writing out. The range must not wrap
    /// around the ring (see [`BufferRing::contiguous_end`]).
    ///
    /// # Safety
    /// Every insertion below `to` has finished and the slots hold these
    /// pages until the caller is done with the slice.
    pub unsafe fn range(&self, from: Lsn, to: Lsn) -> &[u8] {
        debug_assert!(to.0 <= self.contiguous_end(from).0);
        let pages = from.0 / PAGE_SIZE..to.0.div_ceil(PAGE_SIZE);
        self.tracker
            .shared_slots(pages.map(|p| self.slot(Lsn(p * PAGE_SIZE))));
        // SAFETY: in bounds and not concurrently written, per the contract.
        unsafe { std::slice::from_raw_parts(self.ptr(from), (to.0 - from.0) as usize) }
    }

    /// The bytes `[from, to)` as up to two slices, the second one starting
    /// where the ring's memory wraps around (empty if it does not), for one
    /// vectored write. The range must be at most the ring's size.
    ///
    /// # Safety
    /// As for [`BufferRing::range`].
    pub unsafe fn range_parts(&self, from: Lsn, to: Lsn) -> (&[u8], &[u8]) {
        debug_assert!(from <= to && to.0 - from.0 <= self.bytes());
        let wrap = self.contiguous_end(from);
        if to <= wrap {
            // SAFETY: the caller's contract; no wrap inside the range.
            return (unsafe { self.range(from, to) }, &[]);
        }
        // SAFETY: the caller's contract; `[from, wrap)` ends at the ring's
        // end and `[wrap, to)` starts at its beginning, and together they
        // are at most the ring's size, so they do not overlap.
        unsafe { (self.range(from, wrap), self.range(wrap, to)) }
    }

    /// The first LSN after `from` at which the ring's memory wraps around.
    pub fn contiguous_end(&self, from: Lsn) -> Lsn {
        let left_in_ring = (self.pages - self.slot(from.page_start())) as u64;
        Lsn(from.page_start().0 + left_in_ring * PAGE_SIZE)
    }
}

impl Drop for BufferRing {
    fn drop(&mut self) {
        let base = self.base.as_ptr().cast::<AlignedPage>();
        // SAFETY: `base` came from Box::leak of a boxed slice of `pages` pages.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(base, self.pages)) });
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    /// Page `P` lives in slot `P % pages` and the ring's memory wraps after
    /// the last slot, whether the slot is found by a mask (a power of two
    /// of pages) or by division.
    #[test]
    fn pages_map_to_slots_round_the_ring() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let id = PageIdentity {
            timeline: 1,
            system_id: 7,
            format: WalFormat::Postgres15,
        };
        for pages in [2, 3, 4, 5, 7, 8, 31, 32] {
            let ring = BufferRing::new(pages, seg, id);
            assert_eq!(ring.slot_mask.is_some(), pages.is_power_of_two());
            for p in 0..3 * pages as u64 + 2 {
                let page = Lsn(p * PAGE_SIZE);
                assert_eq!(
                    ring.slot(page),
                    (p % pages as u64) as usize,
                    "{pages} pages"
                );
                let wrap = (p / pages as u64 + 1) * pages as u64 * PAGE_SIZE;
                assert_eq!(
                    ring.contiguous_end(Lsn(page.0 + 100)),
                    Lsn(wrap),
                    "{pages} pages"
                );
            }
        }
    }
}
