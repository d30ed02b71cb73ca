//! Write-through of a large record's whole pages
//! ([`crate::Config::write_through_from`]): the pages a record covers from
//! header to end go from the caller's bytes straight to the segment file,
//! never through the buffer ring. docs/io.md ("Write-through of large
//! records").
//!
//! The inserter builds each page's header itself and hands the writer the
//! pages as parts (a header, then the caller's bytes on that page), which
//! [`Writer::write_through`] writes after the ring's bytes below them,
//! under the write lock, so that `written` stays one contiguous point. The
//! pages of one call lie in one segment, so one vectored write takes the
//! ring's pages of that segment below them, the pages and, where the
//! inserter copied the record's last bytes into the ring's next page
//! first, that page (one `pwritev` for a 1 MiB record: up to
//! [`IOV_CHUNK`] parts a call).

use std::num::NonZeroU64;
use std::sync::Arc;

use super::chunked::{write_parts, PartsError};
use super::whole_pages::last_page;
use super::{lock, Caller, OpenSegment, SegmentOpener, Source, WriteError, Writer};
use crate::buffer::BufferRing;
use crate::lsn::{Lsn, PAGE_SIZE};
use crate::segment::{AlignedPage, StorageFile, IOV_CHUNK};

/// The bytes of the whole pages `[from, from + len)`, back to back in
/// `parts`, within one segment; and, where the record's inserter copied
/// its last bytes into the ring's page after them first, where they end
/// there (the same write then takes that page, from the ring).
#[derive(Debug)]
pub(crate) struct ThroughPages<'a> {
    from: Lsn,
    parts: &'a [&'a [u8]],
    len: u64,
    tail_end: Option<Lsn>,
}

impl<'a> ThroughPages<'a> {
    /// Pages from `from` (a page boundary), whose bytes `parts` are, in
    /// order, all in `from`'s segment.
    pub(crate) fn new(from: Lsn, parts: &'a [&'a [u8]]) -> Self {
        let len = parts.iter().map(|p| p.len() as u64).sum();
        ThroughPages {
            from,
            parts,
            len,
            tail_end: None,
        }
    }

    /// The same pages, then the ring's page after them up to `end` (inside
    /// that page, in the same segment): every byte of it below `end` is
    /// copied into the ring.
    pub(crate) fn with_tail(self, end: Lsn) -> Self {
        debug_assert!(end > self.pages_end() && end.0 - self.pages_end().0 < PAGE_SIZE);
        ThroughPages {
            tail_end: Some(end),
            ..self
        }
    }

    /// Where the pages start.
    pub(crate) fn from(&self) -> Lsn {
        self.from
    }

    /// Just past the last whole page.
    pub(crate) fn pages_end(&self) -> Lsn {
        Lsn(self.from.0 + self.len)
    }

    /// Where the write ends: the tail's end, or just past the last page.
    pub(crate) fn end(&self) -> Lsn {
        self.tail_end.unwrap_or(self.pages_end())
    }

    /// The bytes, as parts.
    pub(super) fn parts(&self) -> &'a [&'a [u8]] {
        self.parts
    }

    /// The ring's last page, filled up to the tail's end and copied into
    /// `tail_page` with the rest zeroed ([`last_page`]); empty without a
    /// tail.
    ///
    /// # Safety
    /// The write's contract ([`Writer::write_through`],
    /// [`Writer::write_ahead`]): the tail's bytes are copied, and its ring
    /// slot holds the page until the write is done.
    pub(super) unsafe fn tail<'t>(
        &self,
        ring: &BufferRing,
        tail_page: &'t mut AlignedPage,
    ) -> &'t [u8] {
        match self.tail_end {
            // SAFETY: the caller's contract.
            Some(end) => unsafe { last_page(ring, self.pages_end(), end, tail_page) },
            None => &[],
        }
    }
}

impl Writer {
    /// Writes the ring's bytes from the written point up to `pages`' start
    /// (every insertion below it has finished: the caller's contract), then
    /// `pages` and their tail, if any (the ring's page after them, whose
    /// bytes up to the tail's end the caller copied), under the write lock,
    /// so that `written` moves to their end (the ring's bytes in `pages`'
    /// segment, the pages and the tail in one vectored write);
    /// syncs nothing but the segments it finishes, as every write does, and
    /// with `OpenDatasync`/`OpenSync` the writes are durable when they
    /// return, as any write (the insert path does not write through with
    /// those methods, nor with direct I/O, for which the caller's bytes
    /// are not aligned). A failure poisons the writer.
    pub(crate) fn write_through(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        pages: &ThroughPages,
    ) -> Result<(), WriteError> {
        debug_assert!(!self.direct, "write-through is not used with direct I/O");
        self.check()?;
        let caller = Caller::WriteThrough;
        self.under_write_lock(caller, |st| {
            self.write_locked(
                st,
                Source::Through(ring, pages),
                segments,
                pages.end(),
                caller,
            )
        })
        .map(drop)
    }
}

impl Writer {
    /// The description through which [`Writer::write_ahead`] may write
    /// pages of segment `segno`: the segment open for writing's, or, if
    /// `segno` is the one after it, that segment's, opened now if
    /// `segments` has it ready ([`SegmentOpener::open_if_ready`]: nothing
    /// created or waited for) and kept for the writer to enter it with
    /// (`Writer::enter_segment`). `None` for any other segment, while the
    /// writer is between two segments, or where the next is not ready or
    /// fails to open (the writer meets that failure when it enters it).
    /// With many insertions in flight, records run a few segments ahead of
    /// `written`; without the next segment they would wait for the
    /// insertions below them instead (docs/io.md).
    pub(crate) fn open_for_ahead(
        &self,
        segments: &dyn SegmentOpener,
        segno: u64,
    ) -> Option<Arc<dyn StorageFile>> {
        let mut files = lock(&self.open_for_ahead);
        let open = files.open.as_ref()?;
        if open.0 == segno {
            return Some(open.1.clone());
        }
        if open.0 + 1 != segno {
            return None;
        }
        if files.next.is_none() {
            let opts = self.segment_options();
            let file: Arc<dyn StorageFile> = Arc::from(segments.open_if_ready(segno, &opts).ok()??);
            let twin = self.twin(segments, segno, &opts, &file).ok()?;
            files.next = Some(OpenSegment {
                segno,
                files: [file, twin],
            });
        }
        files
            .next
            .as_ref()
            .filter(|next| next.segno == segno)
            .map(|next| next.files[0].clone())
    }

    /// Writes `pages` and their tail, if any, to `file`, the description
    /// [`Writer::open_for_ahead`] gave for their segment, ahead of
    /// `written`: outside the write lock, while insertions below them may
    /// still be in flight; then, under the write lock, records them as
    /// written ahead, so that `written` jumps to their end (the tail's,
    /// inside its page, as after a write-through with one) when it reaches
    /// their start (at once, if it is there). The caller's contract: the
    /// pages are its record's, as is every byte of the tail's page below
    /// its end (copied before the call), and its insertion does not finish
    /// before this returns, so no write reaches them first and the tail's
    /// ring slot holds its page; the segment stays open until then
    /// (`written` cannot pass the pages). A failure poisons the writer.
    pub(crate) fn write_ahead(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        file: &dyn StorageFile,
        pages: &ThroughPages,
    ) -> Result<(), WriteError> {
        debug_assert!(!self.direct, "write-through is not used with direct I/O");
        self.check()?;
        let caller = Caller::WriteThrough;
        let offset = self.seg.offset(pages.from());
        // On the stack: outside the write lock, the writer's own
        // (`WriterState::tail_page`) may be in use.
        let mut tail_page = AlignedPage::ZERO;
        // SAFETY: the caller's contract: the tail's page below its end is
        // all its record's, copied, and its slot holds the page until the
        // insertion finishes, after this returns.
        let tail = unsafe { pages.tail(ring, &mut tail_page) };
        let bytes =
            write_ring_then_pages(file, [&[], &[]], pages, tail, offset, self.writeback_every)
                .map_err(|e| {
                    self.poison();
                    e.in_segment(self.seg.segno(pages.from()), offset)
                })?;
        self.under_write_lock(caller, |st| {
            st.stats.count_write(bytes, caller);
            st.stats.writes_ahead += 1;
            self.metrics.write(bytes);
            st.ahead.push((pages.from(), pages.end()));
            self.write_locked(st, Source::Ring(ring), segments, self.written(), caller)
        })
        .map(drop)
    }
}

/// Writes `ring` (the ring's whole pages below `pages`, in up to two parts
/// across its wrap, either or both empty), `pages` and `tail` (the ring's
/// page after them, or empty) to `file` at `offset` ([`write_parts`]: in
/// vectored writes of at most [`IOV_CHUNK`] parts, one `pwritev` for a
/// 1 MiB record, whose 128 pages are 256 parts or a few more; cut every
/// `every` bytes with a write-back hint after each cut). The parts are
/// gathered on the stack: the insert path allocates nothing per record.
/// Returns the bytes written.
pub(super) fn write_ring_then_pages(
    file: &dyn StorageFile,
    ring: [&[u8]; 2],
    pages: &ThroughPages,
    tail: &[u8],
    offset: u64,
    every: Option<NonZeroU64>,
) -> Result<u64, PartsError> {
    let parts = ring
        .into_iter()
        .chain(pages.parts().iter().copied())
        .chain([tail]);
    write_parts::<IOV_CHUNK>(file, parts, offset, every)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{FsStorage, OpenOptions, Storage};

    /// The ring's parts (none, one or two), then pages of fewer or more
    /// parts than one `pwritev` takes (so that the parts are split between
    /// two calls), then a tail page or none, land in order at their
    /// offset, and the bytes written are counted.
    #[test]
    fn the_rings_parts_then_the_pages_land_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions::new().read(true).write(true).create_new(true);
        let ring_a = vec![0xA1; 8192];
        let ring_b = vec![0xB2; 3 * 8192];
        for (case, ring) in [[&[][..], &[][..]], [&ring_a, &[]], [&ring_a, &ring_b]]
            .into_iter()
            .enumerate()
        {
            for count in [IOV_CHUNK - 2, IOV_CHUNK + 40] {
                let parts: Vec<Vec<u8>> = (0..count)
                    .map(|i| vec![i as u8; if i % 2 == 0 { 24 } else { 8168 }])
                    .collect();
                let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                let pages = ThroughPages::new(Lsn(0), &slices);
                let file = FsStorage
                    .open(&dir.path().join(format!("{case}-{count}")), &opts)
                    .unwrap();
                let tail = if case == 1 {
                    &[][..]
                } else {
                    &[0xC3; 8192][..]
                };
                let written =
                    write_ring_then_pages(file.as_ref(), ring, &pages, tail, 8192, None).unwrap();
                let want = [ring[0], ring[1], &parts.concat(), tail].concat();
                assert_eq!(
                    written,
                    want.len() as u64,
                    "ring case {case}: bytes counted"
                );
                let mut got = vec![0; want.len()];
                file.read_exact_at(&mut got, 8192).unwrap();
                assert!(got == want, "ring case {case}, {count} parts: bytes differ");
            }
        }
    }
}
