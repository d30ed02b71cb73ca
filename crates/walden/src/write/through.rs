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
//! ring's pages of that segment below them and the pages (one `pwritev`
//! for a 1 MiB record: up to 256 parts a call).

use super::{Caller, SegmentOpener, Source, WriteError, Writer};
use crate::buffer::BufferRing;
use crate::lsn::Lsn;
use crate::segment::{StorageFile, IOV_CHUNK};

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
    /// `pages`, under the write lock, so that `written` moves to their end
    /// (the ring's bytes in `pages`' segment and the pages in one vectored
    /// write);
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

/// Writes `ring` (the ring's whole pages below `pages`, in up to two parts
/// across its wrap, either or both empty) then `pages` to `file` at
/// `offset`, the ring's parts and the pages' first parts in one vectored
/// write of at most [`IOV_CHUNK`] parts (one `pwritev`: a 1 MiB record's
/// 127 pages are 254 parts), the pages' other parts after them. The parts
/// are gathered on the stack: the insert path allocates nothing per record.
pub(super) fn write_ring_then_pages(
    file: &dyn StorageFile,
    ring: [&[u8]; 2],
    pages: &ThroughPages,
    offset: u64,
) -> std::io::Result<()> {
    let mut head: [&[u8]; IOV_CHUNK] = [&[]; IOV_CHUNK];
    let mut n = 0;
    for part in ring.into_iter().filter(|part| !part.is_empty()) {
        head[n] = part;
        n += 1;
    }
    let (first, rest) = pages
        .parts()
        .split_at(pages.parts().len().min(IOV_CHUNK - n));
    head[n..n + first.len()].copy_from_slice(first);
    let head = &head[..n + first.len()];
    file.write_all_vectored_at(head, offset)?;
    if rest.is_empty() {
        return Ok(());
    }
    let written: usize = head.iter().map(|part| part.len()).sum();
    file.write_all_vectored_at(rest, offset + written as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{FsStorage, OpenOptions, Storage};

    /// The ring's parts (none, one or two) then pages of fewer or more
    /// parts than one `pwritev` takes (so that the pages' parts are split
    /// between two calls) land in order at their offset.
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
                write_ring_then_pages(file.as_ref(), ring, &pages, 8192).unwrap();
                let want = [ring[0], ring[1], &parts.concat()].concat();
                let mut got = vec![0; want.len()];
                file.read_exact_at(&mut got, 8192).unwrap();
                assert!(got == want, "ring case {case}, {count} parts: bytes differ");
            }
        }
    }
}
