//! [`WalReader`]: records from validated pages, with PostgreSQL's
//! xlogreader semantics (PostgreSQL: `XLogFindNextRecord`,
//! `XLogDecodeNextRecord`).

use std::path::Path;
use std::sync::Arc;

use super::dir_source::DirSource;
use super::error::{EndOfWalReason, ReadError};
use super::pages::{Halt, PageReader};
use super::segment_source::SegmentSource;
use super::validate::{check_record_header, too_short, PrevLink};
use super::{ReaderOptions, WalRecord};
use crate::format::body::Body;
use crate::format::little_endian::field;
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE, XL_TOT_LEN};
use crate::format::rmgr::is_switch;
use crate::format::{RecordLink, WalFormat};
use crate::lsn::{maxalign, Lsn, SegmentSize, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
use crate::segment::{ControlFile, FsStorage, Storage};

const PAGE: usize = PAGE_SIZE as usize;
/// Most bytes reserved for a record before its bytes have arrived.
const INITIAL_RECORD_CAPACITY: usize = 1 << 20;

/// Where the reader stands.
#[derive(Clone, Copy, Debug)]
enum Position {
    /// The first record at or after the start is still to be found.
    Search,
    /// `last_good` was read; the next record starts at `next` (a page start
    /// means past that page's header).
    After { last_good: Lsn, next: Lsn },
}

/// A record read, and where the one after it starts.
struct Read {
    record: WalRecord,
    next: Lsn,
}

/// The outcome of one attempt at a record.
enum Attempt {
    Done(Read),
    /// The continuation page was overwritten after a crash: read from this
    /// page instead.
    Restart(Lsn),
}

/// A record being put together from pages: header bytes first, then body.
struct Assembly {
    format: WalFormat,
    /// The header's bytes; the first `format.record_header_size()` are used.
    header: [u8; RECORD_HEADER_SIZE],
    header_len: usize,
    body: Vec<u8>,
}

impl Assembly {
    fn new(format: WalFormat, tot_len: u32) -> Self {
        let body_len = (tot_len as usize).saturating_sub(format.record_header_size());
        Assembly {
            format,
            header: [0; RECORD_HEADER_SIZE],
            header_len: 0,
            body: Vec::with_capacity(body_len.min(INITIAL_RECORD_CAPACITY)),
        }
    }

    fn header_size(&self) -> usize {
        self.format.record_header_size()
    }

    fn push(&mut self, bytes: &[u8]) {
        let n = (self.header_size() - self.header_len).min(bytes.len());
        self.header[self.header_len..self.header_len + n].copy_from_slice(&bytes[..n]);
        self.header_len += n;
        self.body.extend_from_slice(&bytes[n..]);
    }

    fn len(&self) -> usize {
        self.header_len + self.body.len()
    }

    fn header(&self) -> Option<(RecordHeader, RecordLink)> {
        if self.header_len == self.header_size() {
            self.format.decode_header(&self.header)
        } else {
            None
        }
    }
}

/// Reads and validates WAL records in LSN order, as PostgreSQL's xlogreader
/// does for pg_waldump.
///
/// Every format is read: the control file in the directory, if any, says
/// which; otherwise the first valid page's magic does, and every later page
/// must carry the same.
///
/// The first call of [`next_record`](Self::next_record) searches for the
/// first record at or after the start: it skips a continuation at the start
/// page, then reads records from there until one starts at or after the
/// start ([`skipped`](Self::skipped) tells how far that was). The first
/// record found only needs `xl_prev` below its own LSN; every later record's
/// `xl_prev` must be the previous record's LSN.
///
/// After an error or a clean stop the reader stays where it was; calling
/// [`next_record`](Self::next_record) again retries from there, which
/// follows a log that is still being written.
pub struct WalReader {
    pages: PageReader,
    start: Lsn,
    position: Position,
    skipped: Option<(Lsn, Lsn, u64)>,
    aborted: Option<(Lsn, Lsn)>,
    /// While a record is being put together across pages: (its LSN, the
    /// page being read), which becomes `aborted` if reading fails.
    assembling: Option<(Lsn, Lsn)>,
    /// How iteration ended ([`Iterator::next`] returned `None` or an error).
    pub(super) stopped: Option<Stopped>,
}

/// How a [`WalReader`] used as an [`Iterator`] ended.
#[derive(Debug)]
pub(super) enum Stopped {
    /// At the end limit.
    EndLimit,
    /// At the end of WAL, for this reason.
    EndOfWal(ReadError),
    /// On another error, returned once.
    Failed,
}

impl WalReader {
    /// Opens the WAL in `dir` (or `dir/pg_wal`, like `pg_waldump -p`). The
    /// segment size comes from the long header of the lowest-named segment
    /// file; the format from the directory's control file if it has a
    /// readable one, else from the first page's magic. Without a start,
    /// reading starts at the first byte of the timeline's lowest-numbered
    /// segment, skipping a leading continuation.
    pub fn open(dir: impl AsRef<Path>, opts: ReaderOptions) -> Result<WalReader, ReadError> {
        WalReader::open_with_storage(dir, opts, Arc::new(FsStorage))
    }

    /// [`WalReader::open`] over another [`Storage`]: every file of `dir`
    /// (the listing, the control file, the segments) is read through it.
    pub fn open_with_storage(
        dir: impl AsRef<Path>,
        opts: ReaderOptions,
        storage: Arc<dyn Storage>,
    ) -> Result<WalReader, ReadError> {
        let source = DirSource::open_with_storage(dir, storage)?;
        // A missing or unreadable control file leaves the choice to the
        // page magic, which is checked on every page either way.
        let format = ControlFile::read(&**source.storage(), source.dir())
            .ok()
            .map(|c| c.format);
        let start = match opts.start {
            Some(start) => start,
            None => {
                let segno = source.first_segment(opts.timeline)?.ok_or_else(|| {
                    ReadError::NoSegmentsOnTimeline {
                        dir: source.dir().to_path_buf(),
                        timeline: opts.timeline,
                    }
                })?;
                source.segment_size().segment_start(segno)
            }
        };
        WalReader::of_format(
            Box::new(source),
            ReaderOptions {
                start: Some(start),
                ..opts
            },
            format,
        )
    }

    /// A reader over any [`SegmentSource`]; `opts.start` is required
    /// ([`ReadError::NoStart`] otherwise). The format is the first valid
    /// page's.
    pub fn with_source(
        source: Box<dyn SegmentSource>,
        opts: ReaderOptions,
    ) -> Result<WalReader, ReadError> {
        WalReader::of_format(source, opts, None)
    }

    /// A reader whose pages must be of `format` (`None`: the first valid
    /// page's).
    fn of_format(
        source: Box<dyn SegmentSource>,
        opts: ReaderOptions,
        format: Option<WalFormat>,
    ) -> Result<WalReader, ReadError> {
        let start = opts.start.ok_or(ReadError::NoStart)?;
        Ok(WalReader {
            pages: PageReader::new(source, opts.timeline, opts.end, format),
            start,
            position: Position::Search,
            skipped: None,
            aborted: None,
            assembling: None,
            stopped: None,
        })
    }

    /// The segment size in use.
    pub fn segment_size(&self) -> SegmentSize {
        self.pages.segment_size()
    }

    /// The format of the log: from the control file, or from the first
    /// valid page read (`None` before one was read).
    pub fn format(&self) -> Option<WalFormat> {
        self.pages.format()
    }

    /// The format of the pages loaded so far. Every caller has loaded a
    /// valid page first, which fixes the format; the default is never used.
    fn loaded_format(&self) -> WalFormat {
        self.pages.format().unwrap_or_default()
    }

    /// The next valid record, `Ok(None)` at the end limit (the next record
    /// would need bytes at or after [`ReaderOptions::end`]), or why there is
    /// none: [`ReadError::EndOfWal`] for the end of WAL or corruption.
    ///
    /// PostgreSQL: `XLogReadRecord`.
    pub fn next_record(&mut self) -> Result<Option<WalRecord>, ReadError> {
        let (last_good, next) = match self.position {
            Position::Search => return self.find_first(),
            Position::After { last_good, next } => (last_good, next),
        };
        match self.read_record(next, PrevLink::Exactly(last_good)) {
            Ok(read) => {
                self.position = Position::After {
                    last_good: read.record.lsn,
                    next: read.next,
                };
                Ok(Some(read.record))
            }
            Err(Halt::EndLimit) => Ok(None),
            Err(Halt::Invalid(reason)) => Err(ReadError::EndOfWal {
                last_good: Some(last_good),
                reason,
            }),
            Err(Halt::Io { path, source }) => Err(ReadError::Io { path, source }),
        }
    }

    /// Forgets where the reader stands and searches again, as a new reader
    /// would, for the first record at or after `start` (its `xl_prev` only
    /// needs to be below it), keeping the source and the log's format:
    /// recovery's resynchronisation after invalid WAL (`wal::recovery_mode`).
    pub(crate) fn restart_at(&mut self, start: Lsn) {
        self.start = start;
        self.position = Position::Search;
        self.skipped = None;
        self.aborted = None;
        self.assembling = None;
        self.stopped = None;
    }

    /// When the first record was not at the requested start: (requested
    /// start, first record found, bytes skipped). `None` before the first
    /// record is found.
    pub fn skipped(&self) -> Option<(Lsn, Lsn, u64)> {
        self.skipped
    }

    /// Where the next record would start: after the last good record,
    /// MAXALIGNed and past a page header; after a SWITCH, the next segment's
    /// first record. Before the first record is found, the requested start.
    pub fn next_lsn(&self) -> Lsn {
        match self.position {
            Position::Search => self.start,
            Position::After { next, .. } if next.page_offset() == 0 => Lsn(next
                .0
                .saturating_add(self.segment_size().page_header_size(next))),
            Position::After { next, .. } => next,
        }
    }

    /// The LSN of the last record read successfully.
    pub fn last_good(&self) -> Option<Lsn> {
        match self.position {
            Position::Search => None,
            Position::After { last_good, .. } => Some(last_good),
        }
    }

    /// When the last read failed inside a multi-page record (a continuation
    /// page missing, invalid, or the record then failing its CRC or body
    /// checks): (that record's LSN, the LSN of the page being read). Recovery
    /// writes an `XLOG_OVERWRITE_CONTRECORD` at that page. Not set when the
    /// read stopped cleanly at the end limit.
    ///
    /// PostgreSQL: `abortedRecPtr`, `missingContrecPtr`.
    pub fn aborted_contrecord(&self) -> Option<(Lsn, Lsn)> {
        self.aborted
    }

    /// Finds and returns the first record at or after the start
    /// (PostgreSQL: `XLogFindNextRecord`).
    fn find_first(&mut self) -> Result<Option<WalRecord>, ReadError> {
        let after = self.start;
        let failed = |halt| match halt {
            Halt::EndLimit => ReadError::EndOfWal {
                last_good: None,
                reason: EndOfWalReason::NoValidFirstRecord { after, cause: None },
            },
            Halt::Invalid(reason) if reason.is_file_error() => ReadError::EndOfWal {
                last_good: None,
                reason,
            },
            Halt::Invalid(reason) => ReadError::EndOfWal {
                last_good: None,
                reason: EndOfWalReason::NoValidFirstRecord {
                    after,
                    cause: Some(Box::new(reason)),
                },
            },
            Halt::Io { path, source } => ReadError::Io { path, source },
        };
        let mut at = self.first_record_candidate().map_err(failed)?;
        let mut prev = PrevLink::Below;
        loop {
            let read = self.read_record(at, prev).map_err(failed)?;
            let lsn = read.record.lsn;
            if lsn >= self.start {
                if lsn != self.start {
                    self.skipped = Some((self.start, lsn, lsn.0 - self.start.0));
                }
                self.position = Position::After {
                    last_good: lsn,
                    next: read.next,
                };
                return Ok(Some(read.record));
            }
            prev = PrevLink::Exactly(lsn);
            at = read.next;
        }
    }

    /// The first place at or after the start page where a record can begin:
    /// past the page header and past any continuation, which may span pages.
    fn first_record_candidate(&mut self) -> Result<Lsn, Halt> {
        let mut at = self.start;
        loop {
            let page = at.page_start();
            let header = self.pages.load(page, at.page_offset() as usize)?;
            let data = page.0.saturating_add(header.size() as u64);
            if !header.is_contrecord() {
                return Ok(Lsn(data));
            }
            let rest = maxalign(u64::from(header.rem_len));
            if rest >= PAGE_SIZE - header.size() as u64 {
                at = Lsn(page.0.saturating_add(PAGE_SIZE));
            } else {
                return Ok(Lsn(data.saturating_add(rest)));
            }
        }
    }

    /// Reads the record at `at` (a page start means past its header),
    /// following an overwritten continuation to its new record.
    fn read_record(&mut self, at: Lsn, prev: PrevLink) -> Result<Read, Halt> {
        self.aborted = None;
        let mut at = at;
        loop {
            self.assembling = None;
            match self.try_read_record(at, prev) {
                Ok(Attempt::Done(read)) => return Ok(read),
                Ok(Attempt::Restart(page)) => at = page,
                Err(halt) => {
                    if let (Halt::Invalid(_), Some(assembling)) = (&halt, self.assembling) {
                        self.aborted = Some(assembling);
                    }
                    return Err(halt);
                }
            }
        }
    }

    /// One attempt at the record at `at`: header checks as soon as the
    /// header is complete, reassembly across pages with the continuation
    /// checks, then CRC and body (PostgreSQL: `XLogDecodeNextRecord`).
    fn try_read_record(&mut self, at: Lsn, prev: PrevLink) -> Result<Attempt, Halt> {
        let page = at.page_start();
        let mut off = at.page_offset() as usize;
        // Before the first page fixes the format, want the largest header.
        let record_header = self
            .pages
            .format()
            .map_or(RECORD_HEADER_SIZE, WalFormat::record_header_size);
        let header_want = |off: usize| (off + record_header).min(PAGE);
        let page_header = self.pages.load(page, header_want(off))?;
        let format = self.loaded_format();
        let record_header = format.record_header_size();
        let header_want = |off: usize| (off + record_header).min(PAGE);
        let header_size = page_header.size();
        if off == 0 {
            off = header_size;
            self.pages.load(page, header_want(off))?;
        } else if off < header_size {
            return Err(EndOfWalReason::InvalidRecordOffset { at }.into());
        }
        let at = Lsn(page.0.saturating_add(off as u64));
        if page_header.is_contrecord() && off == header_size {
            return Err(EndOfWalReason::ContrecordRequested { at }.into());
        }
        let bytes = self.pages.bytes();
        // `xl_tot_len` is at the same place in every format.
        let tot_len = match field(bytes, off + XL_TOT_LEN.start..off + XL_TOT_LEN.end) {
            Some(b) => u32::from_le_bytes(b),
            None => return Err(EndOfWalReason::InvalidRecordOffset { at }.into()),
        };
        let seg = self.segment_size();
        let mut record = Assembly::new(format, tot_len);
        let on_this_page = (PAGE - off).min(tot_len as usize);
        if off + record_header <= PAGE {
            record.push(bytes.get(off..off + record_header).unwrap_or_default());
            if let Some((header, link)) = record.header() {
                check_record_header((&header, link), at, prev, seg, format)?;
            }
        } else if (tot_len as usize) < record_header {
            return Err(too_short(format, at, tot_len).into());
        }
        // The rest of this page's part of the record.
        self.pages.load(page, off + on_this_page)?;
        let first_part = self
            .pages
            .bytes()
            .get(off + record.len()..off + on_this_page)
            .unwrap_or_default();
        record.push(first_part);
        if on_this_page == tot_len as usize {
            let end = Lsn(at.0.saturating_add(u64::from(tot_len)));
            let next = Lsn(at.0.saturating_add(maxalign(u64::from(tot_len))));
            return self.finish(at, record, end, next).map(Attempt::Done);
        }
        let mut cont_page = page;
        loop {
            cont_page = Lsn(cont_page.0.saturating_add(PAGE_SIZE));
            self.assembling = Some((at, cont_page));
            let due = tot_len - record.len() as u32;
            let cont = self.pages.load(
                cont_page,
                (due as usize).saturating_add(SHORT_PAGE_HEADER_SIZE as usize),
            )?;
            if cont.is_overwrite_contrecord() {
                return Ok(Attempt::Restart(cont_page));
            }
            if !cont.is_contrecord() {
                return Err(EndOfWalReason::MissingContrecordFlag { at }.into());
            }
            if cont.rem_len == 0 || cont.rem_len != due {
                return Err(EndOfWalReason::BadContrecordLength {
                    got: cont.rem_len,
                    expected: due,
                    at,
                }
                .into());
            }
            let data = cont.size();
            let len = (PAGE - data).min(due as usize);
            self.pages.load(cont_page, data + len)?;
            let had_header = record.header().is_some();
            record.push(self.pages.bytes().get(data..data + len).unwrap_or_default());
            if let (false, Some((header, link))) = (had_header, record.header()) {
                check_record_header((&header, link), at, prev, seg, format)?;
            }
            // The length is checked only now, after the first continuation
            // page's header, as PostgreSQL does: a garbage length before a
            // bad page reports the page (039_end_of_wal.pl).
            if tot_len > super::MAX_RECORD_LEN {
                return Err(EndOfWalReason::RecordTooLong { at, len: tot_len }.into());
            }
            if record.len() >= tot_len as usize {
                let data_start = cont_page.0.saturating_add(data as u64);
                let end = Lsn(data_start.saturating_add(len as u64));
                let next = Lsn(data_start.saturating_add(maxalign(len as u64)));
                return self.finish(at, record, end, next).map(Attempt::Done);
            }
        }
    }

    /// Checks the CRC and the body of a complete record and works out where
    /// the next one starts.
    fn finish(&self, at: Lsn, record: Assembly, end: Lsn, next: Lsn) -> Result<Read, Halt> {
        let (header, _) = record.header().ok_or(too_short(record.format, at, 0))?;
        let crc = record
            .format
            .record_crc(&record.header[..record.header_size()], &record.body);
        if crc != header.crc {
            return Err(EndOfWalReason::BadCrc { at }.into());
        }
        let mut next = next;
        if is_switch(&header) {
            // The rest of the segment belongs to the switch record.
            let seg = self.segment_size().bytes();
            let last = next.0.saturating_add(seg - 1);
            next = Lsn(last - last % seg);
        }
        Body::parse(&record.body).map_err(|error| EndOfWalReason::BadBody { at, error })?;
        Ok(Read {
            record: WalRecord {
                lsn: at,
                end,
                header,
                body: record.body,
            },
            next,
        })
    }
}
