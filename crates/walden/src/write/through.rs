//! Write-through of a large record's whole pages
//! ([`crate::Config::write_through_from`]): the pages a record covers from
//! header to end go from the caller's bytes straight to the segment file,
//! never through the buffer ring. docs/io.md ("Write-through of large
//! records").
//!
//! The inserter builds each page's header itself and hands the writer the
//! pages as parts (a header, then the caller's bytes on that page), which
//! [`Writer::write_through`] writes with vectored writes after the ring's
//! bytes below them, under the write lock, so that `written` stays one
//! contiguous point. The pages of one call lie in one segment, so one
//! write (in at most a few `pwritev` calls) takes them all.

use super::{Caller, SegmentOpener, Source, WriteError, Writer};
use crate::buffer::BufferRing;
use crate::lsn::Lsn;

/// The bytes of the whole pages `[from, from + len)`, back to back in
/// `parts`, within one segment.
#[derive(Debug)]
pub(crate) struct ThroughPages<'a> {
    from: Lsn,
    parts: &'a [&'a [u8]],
    len: u64,
}

impl<'a> ThroughPages<'a> {
    /// Pages from `from` (a page boundary), whose bytes `parts` are, in
    /// order, all in `from`'s segment.
    pub(crate) fn new(from: Lsn, parts: &'a [&'a [u8]]) -> Self {
        let len = parts.iter().map(|p| p.len() as u64).sum();
        ThroughPages { from, parts, len }
    }

    /// Where the pages start.
    pub(crate) fn from(&self) -> Lsn {
        self.from
    }

    /// Just past the last page.
    pub(crate) fn end(&self) -> Lsn {
        Lsn(self.from.0 + self.len)
    }

    /// The bytes, as parts.
    pub(super) fn parts(&self) -> &'a [&'a [u8]] {
        self.parts
    }
}

impl Writer {
    /// Writes the ring's bytes from the written point up to `pages`' start
    /// (every insertion below it has finished: the caller's contract), then
    /// `pages`, under the write lock, so that `written` moves to their end;
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
            self.write_locked(st, Source::Ring(ring), segments, pages.from(), caller)?;
            self.write_locked(st, Source::Through(pages), segments, pages.end(), caller)
        })
        .map(drop)
    }
}
