//! The page layer of the reader: fetches a page's bytes from the source up
//! to the end limit and validates its header, and the first page of every
//! segment it enters (PostgreSQL: `ReadPageInternal` with pg_waldump's
//! `WALDumpReadPage`).

use std::io;
use std::path::PathBuf;

use super::error::EndOfWalReason;
use super::segment_source::{SegmentPos, SegmentSource, SourceError};
use super::validate::{check_page_header, LatestPage};
use crate::format::little_endian::fixed_field;
use crate::format::page::{PageHeader, XLP_INFO};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, TimeLineId, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};

/// Why a page (and so a record) could not be read.
#[derive(Debug)]
pub(super) enum Halt {
    /// The bytes needed lie at or past the end limit: a clean stop.
    EndLimit,
    /// End of WAL or corruption.
    Invalid(EndOfWalReason),
    /// An I/O error other than a missing or short file.
    Io { path: PathBuf, source: io::Error },
}

impl From<EndOfWalReason> for Halt {
    fn from(r: EndOfWalReason) -> Self {
        Halt::Invalid(r)
    }
}

/// The page currently in the buffer.
#[derive(Clone, Copy, Debug)]
struct Loaded {
    page: Lsn,
    /// Bytes of the page read (all 8192 unless the end limit cut it).
    len: usize,
    header: PageHeader,
}

/// Reads validated pages from a [`SegmentSource`].
pub(super) struct PageReader {
    source: Box<dyn SegmentSource>,
    seg: SegmentSize,
    tli: TimeLineId,
    end: Option<Lsn>,
    buf: Vec<u8>,
    loaded: Option<Loaded>,
    /// The segment whose first page was validated last (PostgreSQL: `seg.ws_segno`).
    entered_segment: Option<u64>,
    latest: LatestPage,
    /// The format pages must have: given, or set by the first valid page.
    format: Option<WalFormat>,
}

impl PageReader {
    /// Pages of `format`, or of the format of the first valid page if `None`.
    pub(super) fn new(
        source: Box<dyn SegmentSource>,
        tli: TimeLineId,
        end: Option<Lsn>,
        format: Option<WalFormat>,
    ) -> Self {
        let seg = source.segment_size();
        PageReader {
            source,
            seg,
            tli,
            end,
            buf: vec![0; PAGE_SIZE as usize],
            loaded: None,
            entered_segment: None,
            latest: LatestPage::default(),
            format,
        }
    }

    /// The format of the pages, once known (given, or after a first valid page).
    pub(super) fn format(&self) -> Option<WalFormat> {
        self.format
    }

    pub(super) fn segment_size(&self) -> SegmentSize {
        self.seg
    }

    /// Makes at least `want` bytes of the page at `page` (page-aligned)
    /// available, with a validated header, and returns that header. Entering
    /// a new segment validates its first page too.
    pub(super) fn load(&mut self, page: Lsn, want: usize) -> Result<PageHeader, Halt> {
        let want = want.clamp(SHORT_PAGE_HEADER_SIZE as usize, PAGE_SIZE as usize);
        if let Some(l) = self.loaded.filter(|l| l.page == page && l.len >= want) {
            return Ok(l.header);
        }
        self.loaded = None;
        let segno = self.seg.segno(page);
        if self.entered_segment != Some(segno) && self.seg.offset(page) != 0 {
            let first = self.seg.segment_start(segno);
            self.fetch(first, PAGE_SIZE as usize)?;
        }
        let header = self.fetch(page, want)?;
        self.entered_segment = Some(segno);
        Ok(header)
    }

    /// The bytes of the loaded page that were read (empty if none is loaded).
    pub(super) fn bytes(&self) -> &[u8] {
        let len = self.loaded.map_or(0, |l| l.len);
        &self.buf[..len]
    }

    /// Reads at least `want` bytes of `page` into the buffer and validates
    /// its header, reading more if the header is the long one.
    fn fetch(&mut self, page: Lsn, want: usize) -> Result<PageHeader, Halt> {
        self.loaded = None;
        let mut len = self.read(page, want)?;
        let info = u16::from_le_bytes(fixed_field(&self.buf, XLP_INFO));
        let header_size = PageHeader::size_for_info(info);
        if len < header_size {
            len = self.read(page, header_size)?;
        }
        let header = PageHeader::decode(&self.buf[..len]).ok_or(Halt::EndLimit)?;
        check_page_header(
            &header,
            &self.buf[..len],
            page,
            self.seg,
            self.tli,
            &mut self.latest,
            &mut self.format,
        )?;
        self.loaded = Some(Loaded { page, len, header });
        Ok(header)
    }

    /// Reads the visible part of `page` (a whole page unless the end limit
    /// falls inside it), or stops if `want` bytes are not visible.
    fn read(&mut self, page: Lsn, want: usize) -> Result<usize, Halt> {
        let len = match self.end {
            Some(end) if page.0.saturating_add(PAGE_SIZE) > end.0 => {
                if page.0.saturating_add(want as u64) > end.0 {
                    return Err(Halt::EndLimit);
                }
                (end.0 - page.0) as usize
            }
            _ => PAGE_SIZE as usize,
        };
        let segno = self.seg.segno(page);
        let offset = self.seg.offset(page);
        let name = || self.seg.file_name(self.tli, segno);
        let read = match self.source.read_at(
            SegmentPos {
                tli: self.tli,
                segno,
                offset,
            },
            &mut self.buf[..len],
        ) {
            Ok(n) => n,
            Err(SourceError::Missing { .. }) => {
                let segment_start = self.seg.segment_start(segno);
                return Err(EndOfWalReason::MissingSegment {
                    name: name(),
                    segment_start,
                }
                .into());
            }
            Err(SourceError::Io { path, source }) => return Err(Halt::Io { path, source }),
        };
        if read < len {
            return Err(EndOfWalReason::TruncatedSegment {
                name: name(),
                offset,
                read,
                wanted: len,
                page,
            }
            .into());
        }
        Ok(len)
    }
}
