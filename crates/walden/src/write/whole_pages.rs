//! The writer's writes from the ring: whole pages, the partially filled
//! last page copied and written whole (PostgreSQL's `XLogWrite`, which
//! writes whole pages, direct or not). Direct I/O (`Config::direct_io`)
//! needs aligned whole pages; buffered writes take them so that the kernel
//! never reads a block a write covers only in part. docs/io.md describes
//! them ("What is written").

use std::num::NonZeroU64;

use super::chunked::{write_parts, PartsError};
use crate::buffer::BufferRing;
use crate::lsn::{Lsn, PAGE_SIZE};
use crate::segment::{AlignedPage, StorageFile};

/// Writes the ring's bytes `[from, end)` (within one segment, `from` on a
/// page boundary) to `file` at `offset` as whole pages: the
/// pages wholly below `end` straight from the ring, in one vectored write
/// with the last page if `end` falls inside it, copied into `tail_page` up
/// to `end` and the rest of it zeroed ([`last_page`]), cut every `every`
/// bytes with a write-back hint after each cut ([`write_parts`]). Returns
/// the bytes written.
///
/// # Safety
/// Every insertion below `end` has finished, and the ring's slots hold the
/// pages of `[from, end)` until this returns.
pub(super) unsafe fn write_whole_pages(
    file: &dyn StorageFile,
    ring: &BufferRing,
    (from, end): (Lsn, Lsn),
    offset: u64,
    tail_page: &mut AlignedPage,
    every: Option<NonZeroU64>,
) -> Result<u64, PartsError> {
    debug_assert_eq!(from.page_offset(), 0);
    let whole_end = end.page_start().max(from);
    // SAFETY: the caller's contract; at most the ring's size.
    let (first, second) = unsafe { ring.range_parts(from, whole_end) };
    let tail: &[u8] = if end > whole_end {
        // SAFETY: the caller's contract.
        unsafe { last_page(ring, whole_end, end, tail_page) }
    } else {
        &[]
    };
    // Empty parts are left out: each part of a direct write must be aligned.
    write_parts::<3>(file, [first, second, tail], offset, every)
}

/// The page the ring holds at `page`, filled up to `end` (inside it),
/// copied into `tail_page` with the rest zeroed: what the ring holds past
/// `end` may be a record another thread is still copying, so the page
/// written is the one a reader would see, ending in zeros.
///
/// # Safety
/// Every byte of the page below `end` is copied and no insertion writes
/// there any more (every insertion below `end` has finished, or, for a
/// write ahead, the page below `end` is all its inserter's), and the
/// ring's slot holds the page until the returned bytes are written.
pub(super) unsafe fn last_page<'t>(
    ring: &BufferRing,
    page: Lsn,
    end: Lsn,
    tail_page: &'t mut AlignedPage,
) -> &'t [u8] {
    debug_assert!(page.page_offset() == 0 && end > page && end.0 - page.0 < PAGE_SIZE);
    // SAFETY: the caller's contract; within one page, so no wrap.
    let filled = unsafe { ring.range(page, end) };
    let (head, rest) = tail_page.0.split_at_mut(filled.len());
    head.copy_from_slice(filled);
    rest.fill(0);
    &tail_page.0
}
