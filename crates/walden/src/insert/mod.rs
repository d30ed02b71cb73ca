//! The insert path: take a slot, reserve space, finish the header, copy the
//! record into the buffer ring, release.
//!
//! PostgreSQL: `XLogInsertRecord`, `CopyXLogRecordToWAL`, `GetXLogBuffer`.
//! Nothing between reservation and release may fail silently or unwind: a
//! reserved range that is never filled would cut the log at that point.
//! A critical-section guard turns a panic there into an abort, and an I/O error
//! (the only error possible there) poisons the log.

pub mod reserve;
pub mod slots;

use std::cell::RefCell;

use crate::error::Error;
use crate::format::crc;
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::rmgr::{RM_XLOG_ID, XLOG_SWITCH};
use crate::lsn::{maxalign, Lsn, PAGE_SIZE};
use crate::record::Record;
use crate::wal::Shared;
use slots::InsertionProgress;

/// Encode buffers above this size are not kept between inserts.
const KEEP_ENCODE_BUFFER: usize = 1 << 20;

thread_local! {
    static ENCODE_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Where an inserted record landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordSpan {
    /// LSN of the record's first byte (what the next record's prev-link holds).
    pub start: Lsn,
    /// LSN just past the record: pass it to [`crate::Wal::flush`]
    /// (PostgreSQL: `XLogInsert`'s return value).
    pub end: Lsn,
}

/// Aborts the process if dropped while unwinding: a panic between
/// reservation and release must not leave a hole in the log that later
/// records are chained past.
pub(crate) struct CriticalSection;

impl Drop for CriticalSection {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("walden: panic inside a WAL insertion critical section; aborting");
            std::process::abort();
        }
    }
}

impl Shared {
    /// Inserts `rec`; see [`crate::Wal::insert_span`].
    pub(crate) fn insert(&self, rec: &Record) -> Result<RecordSpan, Error> {
        rec.validate()?;
        self.writer.check()?;
        ENCODE_BUFFER.with(|cell| {
            let mut buf = cell.borrow_mut();
            buf.clear();
            buf.resize(RECORD_HEADER_SIZE, 0);
            rec.encode_body(&mut buf);
            let body_crc = crc::body_crc(&buf[RECORD_HEADER_SIZE..]);
            let size = maxalign(buf.len() as u64);
            let header = RecordHeader {
                tot_len: buf.len() as u32,
                xid: rec.xid,
                prev: Lsn::INVALID,
                info: rec.info,
                rmid: rec.rmid,
                crc: 0,
            };
            let result = {
                let _critical = CriticalSection;
                let slot = self.slots.acquire(self.config.slot_choice);
                let r = self.reserver.reserve(size);
                finish_header(
                    &mut buf,
                    RecordHeader {
                        prev: r.prev,
                        ..header
                    },
                    body_crc,
                );
                let copied = self.copy_record(&buf, r.start, &slot);
                slot.count_record(size);
                copied.map(|()| RecordSpan {
                    start: self.seg.pos_to_start_lsn(r.start),
                    end: self.seg.pos_to_end_lsn(r.end),
                })
            };
            if buf.capacity() > KEEP_ENCODE_BUFFER {
                *buf = Vec::new();
            }
            result
        })
    }

    /// Inserts an `XLOG_SWITCH` record and swallows the rest of its segment;
    /// returns the end (a segment boundary), or `None` when the log already
    /// ends on a segment boundary (PostgreSQL: `RequestXLogSwitch`).
    pub(crate) fn switch(&self) -> Result<Option<RecordSpan>, Error> {
        self.writer.check()?;
        let _critical = CriticalSection;
        let all = self.slots.acquire_all();
        let Some(r) = self.reserver.reserve_switch(RECORD_HEADER_SIZE as u64) else {
            return Ok(None);
        };
        let mut buf = vec![0u8; RECORD_HEADER_SIZE];
        let header = RecordHeader {
            tot_len: RECORD_HEADER_SIZE as u32,
            xid: 0,
            prev: r.prev,
            info: XLOG_SWITCH,
            rmid: RM_XLOG_ID,
            crc: 0,
        };
        finish_header(&mut buf, header, crc::body_crc(&[]));
        self.copy_record(&buf, r.start, &all)?;
        // The rest of the segment belongs to the switch record: every page
        // after the record's last one goes out all zeros, header included,
        // as PostgreSQL 15 writes it.
        let record_end = self.seg.pos_to_end_lsn(r.start + RECORD_HEADER_SIZE as u64);
        let seg_end = self.seg.pos_to_end_lsn(r.end);
        let mut page = Lsn(record_end.0.next_multiple_of(PAGE_SIZE));
        while page < seg_end {
            self.map_page(page, page, &all)?;
            // SAFETY: the page is initialised (map_page) and inside our
            // reservation, which holds every slot.
            unsafe { self.ring.zero_header(page) };
            page = Lsn(page.0 + PAGE_SIZE);
        }
        all.count_record(r.end - r.start);
        Ok(Some(RecordSpan {
            start: self.seg.pos_to_start_lsn(r.start),
            end: seg_end,
        }))
    }

    /// Copies an encoded record into the ring at usable position `start`,
    /// across pages and segments, marking each page it continues onto.
    fn copy_record(
        &self,
        bytes: &[u8],
        start: u64,
        progress: &impl InsertionProgress,
    ) -> Result<(), Error> {
        let mut at = self.seg.pos_to_start_lsn(start);
        let mut rest = bytes;
        let mut continued = false;
        loop {
            let page = at.page_start();
            self.map_page(page, at, progress)?;
            if continued {
                // SAFETY: the page is initialised and our record covers its start.
                unsafe { self.ring.set_contrecord(page, rest.len() as u32) };
            }
            let n = rest.len().min((PAGE_SIZE - at.page_offset()) as usize);
            // SAFETY: the page is initialised and these bytes are ours.
            unsafe { self.ring.copy_in(at, &rest[..n]) };
            rest = &rest[n..];
            if rest.is_empty() {
                return Ok(());
            }
            let next = Lsn(page.0 + PAGE_SIZE);
            at = Lsn(next.0 + self.seg.page_header_size(next));
            continued = true;
        }
    }

    /// Makes sure the page at `page` is initialised in the ring before we
    /// copy to `at` in it (PostgreSQL: `GetXLogBuffer`). If it is not, first
    /// advertise our progress — the page start when `at` is just past its
    /// header, which we may still have to write — then initialise it,
    /// writing out old pages if needed.
    fn map_page(&self, page: Lsn, at: Lsn, progress: &impl InsertionProgress) -> Result<(), Error> {
        if self.ring.holds(page) {
            return Ok(());
        }
        let advertised = if at.page_offset() <= self.seg.page_header_size(page) {
            page
        } else {
            at
        };
        progress.advertise(advertised);
        self.init.ensure(
            &self.ring,
            page,
            || self.writer.written(),
            |occupant| self.evict(occupant),
        )
    }

    /// Writes out the page ending at `occupant_end` (and, per the eviction
    /// policy, more) so its ring slot can be reused.
    fn evict(&self, occupant_end: Lsn) -> Result<(), Error> {
        self.count_eviction();
        let finished = self
            .slots
            .wait_for_inserts(occupant_end, self.reserved_end());
        let target = occupant_end.min(finished);
        self.writer
            .write(&self.ring, &self.segments, target, false, || target)?;
        Ok(())
    }
}

/// Fills in the header of an encoded record, CRC included.
fn finish_header(buf: &mut [u8], header: RecordHeader, body_crc: u32) {
    let mut bytes = header.encode();
    let crc = crc::finish_record_crc(body_crc, &bytes);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    buf[..RECORD_HEADER_SIZE].copy_from_slice(&bytes);
}
