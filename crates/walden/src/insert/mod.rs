//! The insert path: take a slot, reserve space, finish the header, copy the
//! record into the buffer ring, release; and the switch record, evicting
//! unwritten pages, and flushing once in-flight insertions have finished.
//! [`InsertPath`] owns everything it needs (slots, reserver, ring, page
//! initialisation, writer, segment supply).
//!
//! PostgreSQL: `XLogInsertRecord`, `CopyXLogRecordToWAL`, `GetXLogBuffer`,
//! `RequestXLogSwitch`, `XLogFlush`.
//! Nothing between reservation and release may fail silently or unwind: a
//! reserved range that is never filled would cut the log at that point.
//! A critical-section guard turns a panic there into an abort, and an I/O error
//! (the only error possible there) poisons the log.

mod batch;
mod crc_helper;
mod page_run;
mod parts;
mod pending;
pub mod reserve;
pub mod slots;
#[cfg(test)]
mod tests;

pub use batch::BatchSpans;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use crate::buffer::{BufferRing, Eviction, PageIdentity, PageInit};
use crate::config::{Config, ReservationKind, SlotChoice};
use crate::error::Error;
use crate::format::crc;
use crate::format::page::XLP_FIRST_IS_CONTRECORD;
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::rmgr::{RM_XLOG_ID, XLOG_SWITCH};
use crate::format::WalFormat;
use crate::lsn::{maxalign, Lsn, SegmentSize, LONG_PAGE_HEADER_SIZE, PAGE_SIZE};
use crate::record::Record;
use crate::sync::{AtomicU64, Ordering, StuckOn, Watchdog};
use crate::write::background::Wakeup;
use crate::write::{Caller, SegmentSupply, ThroughPages, Writer};
use crc_helper::CrcHelper;
use page_run::{reserved_size, PageRun, RunLog, RunPoint};
use parts::Parts;
use pending::{body_len, Pending};
use reserve::prev_link_in_buffer::{link_lsn, publish_after_copy};
use reserve::{PrevLink, Reservation, Reserver};
use slots::{InsertionProgress, SlotArray, SlotStats};

/// Where an inserted record landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordSpan {
    /// LSN of the record's first byte (what the next record's prev-link holds).
    pub start: Lsn,
    /// LSN just past the record: pass it to [`crate::Wal::flush`]
    /// (PostgreSQL: `XLogInsert`'s return value).
    pub end: Lsn,
}

/// Pages one write-through writes at most ([`InsertPath::write_through`]):
/// 1 MiB, so a 1 MiB record takes one write; its headers and parts (10 KiB)
/// live on the inserter's stack.
const THROUGH_PAGES: usize = 128;

/// Parts a page written through takes at most: its header, and the
/// record's bytes on it, which may span each of the record's parts (the
/// sealed header and the body's parts). A record of more parts is copied
/// into the ring instead.
const THROUGH_PARTS_PER_PAGE: usize = 4;

/// Room for one page's header in a write-through: a long header's.
const THROUGH_HEADER_ROOM: usize = LONG_PAGE_HEADER_SIZE as usize;
/// Bytes of the page headers one write-through builds (on the stack).
const THROUGH_HEADERS: usize = THROUGH_PAGES * THROUGH_HEADER_ROOM;
/// Parts one write-through passes at most.
const THROUGH_PARTS: usize = THROUGH_PAGES * THROUGH_PARTS_PER_PAGE;

/// Pages of a record written ahead of the written point with the CRC
/// beside the write ([`InsertPath::crc_beside_write`]), which
/// [`InsertPath::copy_record`] skips.
#[derive(Clone, Copy, Debug)]
struct WrittenAhead {
    /// The first page's start.
    from: Lsn,
    /// Just past the last page, or the record's end where its last page
    /// went with them (its bytes copied into the ring first).
    to: Lsn,
    /// The record's bytes on them (and on that last page).
    bytes: usize,
}

/// Pages a record copies into the ring after a write-through declined
/// (another insertion below was in flight) before it asks again: the
/// question reads every slot, lines the other inserters write.
const THROUGH_RETRY_PAGES: u64 = 16;

/// Large records (long enough to be written through) that compute their
/// own CRC after an inserter found no CPU to spare for the CRC helper (as
/// many insertions in flight as CPUs): while insertions keep the CPUs
/// busy the helper rests, instead of taking a CPU from them whenever one
/// of them happens to find a moment alone.
const HELPER_REST_RECORDS: u64 = 64;

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

/// The insert path's state: the insertion slots, the reserver, the buffer
/// ring and how its pages are initialised, the writer and the segment
/// files it writes, and the configuration values they use.
#[derive(Debug)]
pub(crate) struct InsertPath {
    pub(crate) seg: SegmentSize,
    format: WalFormat,
    slot_choice: SlotChoice,
    eviction: Eviction,
    eviction_chunk: u64,
    /// Bytes beyond the page to free that the switch record's evictions
    /// write ([`Config::switch_eviction`]).
    switch_chunk: u64,
    pub(crate) slots: SlotArray,
    reserver: Reserver,
    ring: BufferRing,
    init: PageInit,
    pub(crate) writer: Writer,
    pub(crate) supply: SegmentSupply,
    /// Pages inserters had to write out themselves.
    evictions: AtomicU64,
    /// Pages the background writer initialised ahead of the inserters.
    pages_initialised_ahead: AtomicU64,
    /// [`Config::stuck_wait_timeout`], for the wait for an in-buffer
    /// prev-link.
    stuck_wait: Option<Duration>,
    /// [`Config::stream_after`], `None` when off or without a background
    /// writer to stream.
    stream_after: Option<u64>,
    /// The background writer's wake-up, which streaming asks for
    /// write-only rounds.
    background: Arc<Wakeup>,
    /// [`Config::write_through_from`], `None` when off, with direct I/O or
    /// with a sync method whose writes are syncs.
    write_through_from: Option<u64>,
    /// The CPUs this process may run on: with more insertions in flight
    /// than this, they cannot all copy at once, and a record is written
    /// through after waiting for those below it ([`Self::write_through`]).
    cpus: usize,
    /// [`Config::crc_helper`]'s thread, with write-through on.
    crc_helper: Option<CrcHelper>,
    /// Large records still to compute their own CRC since insertions last
    /// crowded the CPUs ([`HELPER_REST_RECORDS`], [`Self::crowded`]).
    helper_rest: AtomicU64,
}

/// Where an [`InsertPath`] starts: what recovery (or a new log) left.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StartPoint {
    /// Usable position of the next record.
    pub(crate) next_pos: u64,
    /// Start of the last record, [`Lsn::INVALID`] if none.
    pub(crate) prev: Lsn,
    /// Pages below this are initialised in the ring already.
    pub(crate) initialized_upto: Lsn,
    /// Everything below this is on disk.
    pub(crate) written: Lsn,
}

impl InsertPath {
    /// The insert path of a log configured by `config` (validated), over
    /// `ring` and `supply`, continuing from `start`; a streaming inserter
    /// asks `background` for write-only rounds.
    pub(crate) fn new(
        config: &Config,
        seg: SegmentSize,
        ring: BufferRing,
        supply: SegmentSupply,
        start: StartPoint,
        background: Arc<Wakeup>,
    ) -> Self {
        InsertPath {
            seg,
            format: config.format,
            slot_choice: config.slot_choice,
            eviction: config.eviction,
            eviction_chunk: config.eviction_chunk,
            switch_chunk: config.switch_eviction.chunk(config.eviction_chunk),
            slots: SlotArray::new(config.insert_slots)
                .with_stuck_wait_timeout(config.stuck_wait_timeout),
            reserver: Reserver::new(
                config.reservation,
                seg,
                start.next_pos,
                start.prev,
                config.link_table_capacity(),
                config.stuck_wait_timeout,
            ),
            ring,
            init: PageInit::new(
                config.page_init,
                start.initialized_upto,
                config.stuck_wait_timeout,
            ),
            writer: Writer::new(
                config.sync_method,
                config.direct_io,
                seg,
                start.written,
                config.write_lock_handoff,
                config.overlap_syncs.then_some(config.overlap_syncs_from),
                config.concurrent_syncs,
            )
            .cutting_writes_every(NonZeroU64::new(config.writeback_every))
            .spinning_for_the_lock(config.write_lock_spin)
            .yielding_behind_syncs(config.flush_wait_spin),
            supply,
            evictions: AtomicU64::new(0),
            pages_initialised_ahead: AtomicU64::new(0),
            stuck_wait: config.stuck_wait_timeout,
            stream_after: Some(config.stream_after)
                .filter(|&n| n > 0 && config.writer_delay.is_some()),
            background,
            write_through_from: Some(config.write_through_from)
                .filter(|&n| n > 0 && !config.direct_io && !config.sync_method.sync_on_write()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            crc_helper: None,
            helper_rest: AtomicU64::new(0),
        }
        .with_crc_helper(config.crc_helper)
    }

    /// Starts the CRC helper if `wanted` and records are written through;
    /// a helper whose thread cannot start is left out (a warning): the
    /// inserters compute every CRC themselves, as without it.
    fn with_crc_helper(mut self, wanted: bool) -> Self {
        if wanted && self.write_through_from.is_some() {
            self.crc_helper = CrcHelper::new()
                .map_err(|e| tracing::warn!(error = %e, "CRC helper not started"))
                .ok();
        }
        self
    }

    /// The buffer ring of a log configured by `config` (validated), whose
    /// pages carry `id`: [`Config::buffers`] of pages, zeroed whole at
    /// initialisation only with [`crate::PageZeroing::WholePage`] or for
    /// the prev-link in the buffer, which waits for a zero field to be
    /// written ([`Config::page_zeroing_in_effect`]).
    pub(crate) fn ring(config: &Config, seg: SegmentSize, id: PageIdentity) -> BufferRing {
        BufferRing::new((config.buffers / PAGE_SIZE) as usize, seg, id)
            .zeroing(config.page_zeroing_in_effect())
    }

    /// Initialises the ring's pages up to `pages` pages past the one the
    /// next record starts on, as far as their slots are written out
    /// (`buffer::init_ahead`). The background writer calls it.
    pub(crate) fn init_ahead(&self, pages: u64) {
        let limit = self
            .insert_position()
            .page_start()
            .0
            .saturating_add(pages.saturating_add(1).saturating_mul(PAGE_SIZE));
        let done = self
            .init
            .init_ahead(&self.ring, Lsn(limit), self.writer.written());
        // Relaxed: a statistic.
        self.pages_initialised_ahead
            .fetch_add(done, Ordering::Relaxed);
    }

    /// Pages the background writer initialised ahead of the inserters.
    pub(crate) fn pages_initialised_ahead(&self) -> u64 {
        // Relaxed: a statistic.
        self.pages_initialised_ahead.load(Ordering::Relaxed)
    }

    /// The segment supply and the writer, for the preallocator thread.
    pub(crate) fn supply_and_writer(&self) -> (&SegmentSupply, &Writer) {
        (&self.supply, &self.writer)
    }

    /// End of reserved WAL as an LSN (end flavour).
    pub(crate) fn reserved_end(&self) -> Lsn {
        self.seg.pos_to_end_lsn(self.reserver.reserved_end())
    }

    /// Where the next record will start.
    pub(crate) fn insert_position(&self) -> Lsn {
        self.seg.pos_to_start_lsn(self.reserver.reserved_end())
    }

    /// Counters summed over the insertion slots.
    pub(crate) fn slot_stats(&self) -> SlotStats {
        self.slots.stats()
    }

    /// Pages inserters had to write out themselves.
    pub(crate) fn evictions(&self) -> u64 {
        // Relaxed: a statistic.
        self.evictions.load(Ordering::Relaxed)
    }

    /// The reserved end, or [`Error::FlushBeyondEnd`] if `upto` is past it:
    /// what a flush to `upto` may wait for.
    pub(crate) fn flushable_end(&self, upto: Lsn) -> Result<Lsn, Error> {
        let reserved = self.reserved_end();
        if upto > reserved {
            return Err(Error::FlushBeyondEnd {
                requested: upto,
                end: reserved,
            });
        }
        Ok(reserved)
    }

    /// Returns once everything below `upto` is written and durable; see
    /// [`crate::Wal::flush`]. Fails if `upto` is beyond the reserved end.
    /// `caller` is a flush call or the background writer.
    pub(crate) fn flush(&self, upto: Lsn, caller: Caller) -> Result<Lsn, Error> {
        self.writer.check()?;
        if self.writer.flushed() >= upto {
            return Ok(self.writer.flushed());
        }
        let reserved = self.flushable_end(upto)?;
        // Wait for in-flight insertions before taking the writer lock: an
        // inserter below `upto` may need that lock to evict a page.
        let finished = self.slots.wait_for_inserts(upto, reserved);
        self.writer.request_flush(finished);
        let more = || self.slots.finished_now(self.reserved_end()).max(finished);
        Ok(self
            .writer
            .write(&self.ring, &self.supply, finished, caller, more)?)
    }

    /// The background writer's write-only round for a streaming inserter
    /// that has copied its record below `upto`
    /// ([`crate::Config::stream_after`]): writes what is finished from
    /// there on without a sync ([`Writer::stream`]).
    pub(crate) fn stream(&self, upto: Lsn) {
        if self.writer.written() >= upto {
            return;
        }
        let finished = self.slots.wait_for_inserts(upto, self.reserved_end());
        // A failure poisons the log, and the next insert or flush reports
        // it: there is no one else to tell here.
        let _ = self.writer.stream(&self.ring, &self.supply, finished);
    }

    /// Inserts `rec`; see [`crate::Wal::insert_span`].
    ///
    /// The record is never assembled: its body is the small main-data
    /// header and the caller's data, CRC'd in place and copied once,
    /// straight into the ring (PostgreSQL: `XLogRecordAssemble`'s rdata
    /// chain, `CopyXLogRecordToWAL`).
    pub(crate) fn insert(&self, rec: &Record) -> Result<RecordSpan, Error> {
        rec.validate()?;
        // With the CRC helper and a CPU to spare for it (fewer insertions
        // in flight than CPUs, ours to come included, and none crowding
        // them lately), a record long enough to be written through leaves
        // its body's CRC to [`Self::crc_beside_write`]; otherwise it is
        // computed here, before the reservation, as without the helper.
        let deferred_from = match (&self.crc_helper, self.write_through_from) {
            // The size first: `held_now` reads every slot's line, which a
            // small record need not pay for.
            (Some(_), Some(from))
                if reserved_size(self.format, body_len(rec)) >= from
                    && !self.crowded(1)
                    && !self.helper_resting() =>
            {
                from
            }
            _ => u64::MAX,
        };
        self.insert_pending(Pending::deferring_crc(self.format, rec, deferred_from))
    }

    /// Whether the insertions in flight, with `ours` more (1 before our
    /// reservation, 0 after it, when our slot is among them), are as many
    /// as the CPUs: then the CRC helper would take a CPU from them, and it
    /// rests for the next [`HELPER_REST_RECORDS`] large records.
    fn crowded(&self, ours: usize) -> bool {
        let crowded = self.slots.held_now() + ours >= self.cpus;
        if crowded {
            // Relaxed: a hint for a heuristic; nothing is published with it.
            self.helper_rest
                .store(HELPER_REST_RECORDS, Ordering::Relaxed);
        }
        crowded
    }

    /// Whether the CRC helper rests ([`Self::crowded`]); counts the rest
    /// down by this record.
    fn helper_resting(&self) -> bool {
        // Relaxed, load and store: a hint for a heuristic; two inserters
        // taking the same count down make the rest a record shorter.
        let rest = self.helper_rest.load(Ordering::Relaxed);
        if rest > 0 {
            self.helper_rest.store(rest - 1, Ordering::Relaxed);
        }
        rest > 0
    }

    /// Inserts `item`, whose record is validated.
    fn insert_pending(&self, item: Pending) -> Result<RecordSpan, Error> {
        self.writer.check()?;
        let size = item.size;
        let _critical = CriticalSection;
        let slot = self.slots.acquire(self.slot_choice);
        let r = self.reserver.reserve(size);
        let placed = self.place_run(r, item, &[], &slot, |_| ());
        slot.count_records(1, size);
        placed.map(|()| RecordSpan {
            start: self.seg.pos_to_start_lsn(r.start),
            end: self.seg.pos_to_end_lsn(r.end),
        })
    }

    /// The reference for [`Self::insert`]: encodes `rec`'s body into one
    /// contiguous buffer first, as the insert path did before it copied
    /// parts; the log it produces must be byte-identical.
    #[cfg(test)]
    pub(crate) fn insert_contiguous(&self, rec: &Record) -> Result<RecordSpan, Error> {
        rec.validate()?;
        let mut body = Vec::new();
        rec.encode_body(&mut body);
        self.insert_pending(Pending::with_body(self.format, rec, false, &body))
    }

    /// Fills the reservation `r` with `head`, a record whose header is
    /// still to be finished, then `records` (validated), one after the
    /// other, and reports each of `records`' spans to `placed`: gets the
    /// first one's prev-link (each later one links to the one before it),
    /// seals each header in the log's format, copies the headers and
    /// bodies in (the records of `records` that fit whole in the rest of
    /// a page written there in one loop, [`page_run`]; a record that
    /// crosses a page by [`Self::copy_record`]), and, with
    /// `PrevLinkInBuffer`, writes the next reservation's prev-link, the
    /// last record's start, into the buffer (before the copy, or after it
    /// for a run about the ring's size; see [`reserve::prev_link_in_buffer`]).
    fn place_run<'b>(
        &self,
        r: Reservation,
        head: Pending<'b>,
        records: &[Record],
        progress: &impl InsertionProgress,
        mut placed: impl FnMut(RecordSpan),
    ) -> Result<(), Error> {
        let run_start = self.seg.pos_to_start_lsn(r.start);
        let run_end = self.seg.pos_to_end_lsn(r.end);
        let links_in_buffer = self.reserver.kind() == ReservationKind::PrevLinkInBuffer;
        let after_copy =
            links_in_buffer && publish_after_copy(self.seg, self.ring.bytes(), run_start, r.end);
        if links_in_buffer && !after_copy {
            self.publish_next_link(&r, self.advertisement(run_start), progress)?;
        }
        let log = RunLog {
            format: self.format,
            seg: self.seg,
            keep_prev: r.prev != PrevLink::NotKept,
        };
        let mut point = RunPoint {
            at: run_start,
            prev: self.prev_link(&r, run_start, progress)?,
        };
        // The page last made sure of (`map_page`), so that a run of
        // records in one page maps it once.
        let mut mapped = None;
        let mut end = self.place_one(&head, log, &mut point, &mut mapped, progress)?;
        let mut rest = records;
        while let Some(first) = rest.first() {
            let room = (PAGE_SIZE - point.at.page_offset()).min(run_end.0 - point.at.0);
            let mut written = 0;
            if reserved_size(self.format, body_len(first)) <= room {
                self.map_page_once(point.at, &mut mapped, progress)?;
                // SAFETY: the page is initialised (map_page) and these
                // bytes, up to the page's end or the reservation's, are
                // in our reservation and in this page.
                let out = unsafe { self.ring.reserved_mut(point.at, room as usize) };
                let run = PageRun {
                    log,
                    records: rest,
                    point: &mut point,
                    out,
                };
                written = page_run::write_page_run(run, &mut placed);
                end = point.at;
                self.skip_page_header(&mut point);
            }
            if written == 0 {
                // The first record crosses a page boundary.
                let start = point.at;
                end = self.place_one(
                    &Pending::new(self.format, first),
                    log,
                    &mut point,
                    &mut mapped,
                    progress,
                )?;
                placed(RecordSpan { start, end });
                written = 1;
            }
            rest = &rest[written..];
        }
        debug_assert_eq!(end, run_end, "the records fill the reservation");
        if after_copy {
            self.publish_next_link(&r, self.advertisement(run_end), progress)?;
        }
        Ok(())
    }

    /// Places `item` at `point` (the page `mapped` made sure of already):
    /// written in one go if it fits in the rest of its page
    /// ([`Pending::write_in_page`]), copied part by part
    /// ([`Self::copy_record`]) if it crosses a page. Moves `point` past it
    /// and returns its end.
    fn place_one(
        &self,
        item: &Pending,
        log: RunLog,
        point: &mut RunPoint,
        mapped: &mut Option<Lsn>,
        progress: &impl InsertionProgress,
    ) -> Result<Lsn, Error> {
        let at = point.at;
        let header = RecordHeader {
            prev: point.prev,
            ..item.header
        };
        let end = if item.size <= PAGE_SIZE - at.page_offset() {
            self.map_page_once(at, mapped, progress)?;
            // SAFETY: the page is initialised (map_page) and the record's
            // bytes, padding included, are in our reservation and in
            // this page.
            let out = unsafe { self.ring.reserved_mut(at, item.size as usize) };
            item.write_in_page(&header, self.format, at, self.seg, out);
            Lsn(at.0 + item.size)
        } else if let Some(end) = self.crc_beside_write(item, &header, at, progress)? {
            end
        } else {
            let mut sealed = [0; RECORD_HEADER_SIZE];
            let sealed = &mut sealed[..self.format.record_header_size()];
            self.format
                .seal_header(&header, at, self.seg, item.body_crc(), sealed);
            let prefix = item.prefix();
            self.copy_record(
                sealed,
                &[prefix.as_bytes(), item.data()],
                at,
                progress,
                None,
            )?
        };
        if log.keep_prev {
            point.prev = at;
        }
        point.at = end;
        self.skip_page_header(point);
        Ok(end)
    }

    /// [`Self::map_page`] for the page of `at`, a record's start, unless
    /// it is `mapped`, the page a run made sure of last (so that a run of
    /// records in one page maps it once); then that page is `mapped`.
    fn map_page_once(
        &self,
        at: Lsn,
        mapped: &mut Option<Lsn>,
        progress: &impl InsertionProgress,
    ) -> Result<(), Error> {
        let page = at.page_start();
        if *mapped != Some(page) {
            self.map_page(page, self.advertisement(at), progress)?;
            *mapped = Some(page);
        }
        Ok(())
    }

    /// After a record ending on a page boundary, the next one starts past
    /// the next page's header.
    fn skip_page_header(&self, point: &mut RunPoint) {
        if point.at.page_offset() == 0 {
            point.at = Lsn(point.at.0 + self.seg.page_header_size(point.at));
        }
    }

    /// The prev-link of the record reserved as `r`, starting at `start`;
    /// with `PrevLinkInBuffer`, waits for the previous inserter to write it
    /// into the buffer, having first advertised our start so that nothing
    /// it needs to evict waits for us (PostgreSQL with seed 003's 0001:
    /// `GetPrevRecPtr`). Fails if the log is poisoned meanwhile.
    fn prev_link(
        &self,
        r: &Reservation,
        start: Lsn,
        progress: &impl InsertionProgress,
    ) -> Result<Lsn, Error> {
        match r.prev {
            PrevLink::Known(prev) => Ok(prev),
            PrevLink::NotKept => Ok(Lsn::INVALID),
            PrevLink::InBuffer => {
                let field = link_lsn(self.seg, r.start);
                let advertised = self.advertisement(start);
                progress.advertise(advertised);
                self.map_page(field.page_start(), advertised, progress)?;
                // SAFETY: the page is initialised (map_page) and held in the
                // ring while we advertise our start; the field is in our own
                // reservation, 8-aligned, and we copy over it only after
                // reading it here.
                let cell = unsafe { self.ring.link_cell(field) };
                let mut watchdog = Watchdog::new(self.stuck_wait);
                Ok(cell.wait(|| {
                    if watchdog.round() {
                        watchdog.stuck(StuckOn::PrevLinkInBuffer {
                            record: start,
                            field,
                        });
                    }
                    self.writer.check()
                })?)
            }
        }
    }

    /// `PrevLinkInBuffer`: writes the start of our (last) record as the
    /// prev-link of the record that follows the reservation `r`, at its
    /// `xl_prev` field, after advertising `advertised` (our start, or our
    /// end once our records are copied) so that mapping that page never
    /// waits for us
    /// (PostgreSQL with seed 003's 0001: `SetPrevRecPtr`).
    fn publish_next_link(
        &self,
        r: &Reservation,
        advertised: Lsn,
        progress: &impl InsertionProgress,
    ) -> Result<(), Error> {
        let field = link_lsn(self.seg, r.end);
        progress.advertise(advertised);
        self.map_page(field.page_start(), advertised, progress)?;
        // SAFETY: the page is initialised (map_page) and cannot be written
        // out or re-initialised before the next record's inserter, whose
        // reservation holds the field, has read it and copied its record.
        let cell = unsafe { self.ring.link_cell(field) };
        cell.publish(self.seg.pos_to_start_lsn(r.last));
        Ok(())
    }

    /// Inserts an `XLOG_SWITCH` record and swallows the rest of its segment;
    /// returns the end (a segment boundary), or `None` when the log already
    /// ends on a segment boundary (PostgreSQL: `RequestXLogSwitch`).
    pub(crate) fn switch(&self) -> Result<Option<RecordSpan>, Error> {
        self.writer.check()?;
        let format = self.format;
        let header_size = format.record_header_size();
        let _critical = CriticalSection;
        let all = self.slots.acquire_all();
        let Some(r) = self.reserver.reserve_switch(header_size as u64) else {
            return Ok(None);
        };
        let start = self.seg.pos_to_start_lsn(r.start);
        let header = RecordHeader {
            tot_len: header_size as u32,
            xid: 0,
            prev: self.prev_link(&r, start, &all)?,
            info: XLOG_SWITCH,
            rmid: RM_XLOG_ID,
            crc: 0,
        };
        let mut sealed = [0; RECORD_HEADER_SIZE];
        let sealed = &mut sealed[..header_size];
        format.seal_header(&header, start, self.seg, crc::body_crc(&[]), sealed);
        let record_end = self.copy_record(sealed, &[], start, &all, None)?;
        // The rest of the segment belongs to the switch record: the rest of
        // its page and every page after it go out all zeros, headers
        // included, as PostgreSQL 15 writes them. The ring does not zero
        // pages (`BufferRing::init_page`), so this does.
        let seg_end = self.seg.pos_to_end_lsn(r.end);
        if record_end.page_offset() != 0 {
            // SAFETY: the record's page is initialised (copy_record mapped
            // it) and the rest of it is inside our reservation.
            unsafe { self.ring.zero_to_page_end(record_end) };
        }
        let mut page = Lsn(record_end.0.next_multiple_of(PAGE_SIZE));
        while page < seg_end {
            self.map_page_evicting(page, page, &all, self.switch_chunk)?;
            // SAFETY: the page is initialised (map_page) and inside our
            // reservation, which holds every slot.
            unsafe { self.ring.zero_to_page_end(page) };
            page = Lsn(page.0 + PAGE_SIZE);
        }
        if self.reserver.kind() == ReservationKind::PrevLinkInBuffer {
            // In order, after the zero pages: nobody waits while we hold
            // every slot, and the field is a whole segment ahead.
            self.publish_next_link(&r, seg_end, &all)?;
        }
        all.count_records(1, r.end - r.start);
        Ok(Some(RecordSpan {
            start,
            end: seg_end,
        }))
    }

    /// Copies a record, its sealed `header` then its `body` parts in
    /// order, into the ring at `start` (the LSN of its first byte), each
    /// byte once, across pages and segments, marking each page it
    /// continues onto with the record bytes still to come (`xlp_rem_len`),
    /// and zeroes its alignment padding: every byte of its reservation is
    /// written. Returns the LSN just past the record and its padding.
    ///
    /// Write-through ([`Config::write_through_from`]): a record at least
    /// that long writes the pages it covers whole straight to the file
    /// ([`Self::write_through`]) instead of copying them into the ring.
    ///
    /// `ahead`, from [`Self::crc_beside_write`]: the pages `[from, to)`,
    /// written ahead already with the next `bytes` of the record: skipped.
    ///
    /// Streaming ([`Config::stream_after`]), for a record not written
    /// through: a record longer than `stream_after` advertises its start,
    /// then, at the first page boundary after every `stream_after` bytes,
    /// advertises that boundary (every byte of the reservation below it is
    /// copied: `WALInsertLockUpdateInsertingAt`) and asks the background
    /// writer to write up to there while the rest is copied.
    fn copy_record(
        &self,
        header: &[u8],
        body: &[&[u8]],
        start: Lsn,
        progress: &impl InsertionProgress,
        ahead: Option<WrittenAhead>,
    ) -> Result<Lsn, Error> {
        let mut src = Parts::new(header, body);
        let through = self
            .write_through_from
            .is_some_and(|n| src.remaining() as u64 >= n)
            && 2 + body.len() <= THROUGH_PARTS_PER_PAGE;
        let mut at = start;
        // Where write-through may next be tried (after it declined).
        let mut through_retry = start;
        // (every, next due point) while this record streams.
        let mut stream = self
            .stream_after
            .filter(|&n| !through && src.remaining() as u64 > n)
            .map(|n| (n, start.0 + n));
        if stream.is_some() {
            // So that a stream round for an earlier record never waits for
            // this one: a holder that advertised nothing may be anywhere.
            progress.advertise(self.advertisement(start));
        }
        self.map_page(at.page_start(), self.advertisement(at), progress)?;
        let mut room = (PAGE_SIZE - at.page_offset()) as usize;
        while src.remaining() > 0 {
            if room == 0 {
                // `at` is the next page's start: continue the record there.
                let page = at;
                if let Some(ahead) = ahead.filter(|a| a.from == page) {
                    src.skip(ahead.bytes);
                    at = ahead.to;
                    continue;
                }
                if through
                    && page >= through_retry
                    && src.remaining() as u64 >= PAGE_SIZE - self.seg.page_header_size(page)
                {
                    if let Some(end) = self.write_through(page, &mut src, progress)? {
                        at = end;
                        continue;
                    }
                    through_retry = Lsn(page.0 + THROUGH_RETRY_PAGES * PAGE_SIZE);
                }
                if let Some((every, due)) = &mut stream {
                    if page.0 >= *due {
                        progress.advertise(page);
                        self.background.stream(page);
                        *due = page.0 + *every;
                    }
                }
                at = Lsn(page.0 + self.seg.page_header_size(page));
                self.map_page(page, self.advertisement(at), progress)?;
                // SAFETY: the page is initialised and our record covers its start.
                unsafe { self.ring.set_contrecord(page, src.remaining() as u32) };
                room = (PAGE_SIZE - at.page_offset()) as usize;
            }
            let bytes = src.take(room);
            // SAFETY: the page is initialised and these bytes are ours.
            unsafe { self.ring.copy_in(at, bytes) };
            at = Lsn(at.0 + bytes.len() as u64);
            room -= bytes.len();
        }
        Ok(self.pad_record(at))
    }

    /// Zeroes the alignment padding after a record's last byte at `at`, in
    /// its page in the ring (initialised), and returns the padded end. The
    /// padding is part of the reservation: zeros, as PostgreSQL leaves it;
    /// never past the page's end, which is aligned.
    fn pad_record(&self, at: Lsn) -> Lsn {
        let pad = (maxalign(at.0) - at.0) as usize;
        if pad > 0 {
            // SAFETY: the page is initialised (the caller's contract) and
            // the padding is ours.
            unsafe { self.ring.zero(at, pad) };
        }
        Lsn(at.0 + pad as u64)
    }

    /// Write-through ([`Config::write_through_from`]): writes the pages
    /// from `page` on that the rest of the record in `src` covers whole
    /// (header to end), at most [`THROUGH_PAGES`] and within `page`'s
    /// segment, straight to the file, each with the header
    /// [`BufferRing::init_page`] and [`BufferRing::set_contrecord`] would
    /// give it, and consumes their bytes from `src`. Returns the start of
    /// the page after them, where the record goes on (written through
    /// again, or copied into the ring), or `None` with nothing written or
    /// consumed when it declines (below).
    /// Allocates nothing: the headers and the parts live on the stack.
    ///
    /// Every byte of our reservation below `page` is copied, so we
    /// advertise `page`; where every insertion below `page` has finished,
    /// we write the ring's bytes up to `page` and then these pages
    /// (`Writer::write_through`) under the write lock. If one is still in
    /// flight, waiting for it would put our kernel copy after its copy,
    /// and the next inserter's after ours: with no more insertions in
    /// flight than CPUs to run them, copying into the ring side by side
    /// and leaving the writes to the writer is faster, so we decline
    /// (`None`, and the caller copies the page into the ring). With more
    /// in flight than CPUs, they cannot all copy at once anyway, and the
    /// copy we save is CPU time another thread needs: we write the pages
    /// ahead of the written point (`Writer::write_ahead`: outside the
    /// write lock, without waiting for the insertions below; `written`
    /// jumps over the pages once the writes below reach them) where the
    /// writer has their segment open or it is the next one and ready
    /// (`Writer::open_for_ahead`), else wait for those insertions (as
    /// an eviction does, before the write lock: nobody holding it waits
    /// for an inserter) and write through (docs/io.md, "Write-through of
    /// large records"). `written` is then past the pages (or jumps past
    /// them later) and we advertise their end. Their ring slots are never
    /// copied into: a later initialisation of them (in order, as every
    /// page is) finds them written, or waits, as for any page, until the
    /// writes below reach them. A failure poisons the log.
    fn write_through(
        &self,
        page: Lsn,
        src: &mut Parts,
        progress: &impl InsertionProgress,
    ) -> Result<Option<Lsn>, Error> {
        progress.advertise(page);
        let reserved_end = self.reserved_end();
        let mut ahead = None;
        if self.slots.finished_now(reserved_end) < page {
            if self.slots.held_now() <= self.cpus {
                return Ok(None);
            }
            ahead = self
                .writer
                .open_for_ahead(&self.supply, self.seg.segno(page));
            if ahead.is_none() {
                self.slots.wait_for_inserts(page, reserved_end);
            }
        }
        let mut headers = [0; THROUGH_HEADERS];
        let mut parts: [&[u8]; THROUGH_PARTS] = [&[]; THROUGH_PARTS];
        let through = self.through_pages(page, src, &mut headers, &mut parts);
        let through = self.copy_tail(through, src, page, progress)?;
        match ahead {
            Some(file) => {
                self.writer
                    .write_ahead(&self.ring, &self.supply, file.as_ref(), &through)?
            }
            None => self
                .writer
                .write_through(&self.ring, &self.supply, &through)?,
        }
        progress.advertise(through.end());
        Ok(Some(through.end()))
    }

    /// The pages from `page` on that the rest of the record in `src`
    /// covers whole (header to end), at most [`THROUGH_PAGES`] and within
    /// `page`'s segment, as parts: each page's header, as
    /// [`BufferRing::init_page`] and [`BufferRing::set_contrecord`] would
    /// give it, built in `headers`, then the record's bytes on it, taken
    /// from `src`. No parts, ending at `page` itself, if the rest covers
    /// no page whole.
    fn through_pages<'p, 's: 'p>(
        &self,
        page: Lsn,
        src: &mut Parts<'s>,
        headers: &'p mut [u8; THROUGH_HEADERS],
        parts: &'p mut [&'p [u8]; THROUGH_PARTS],
    ) -> ThroughPages<'p> {
        let segment_end = self.seg.segment_start(self.seg.segno(page) + 1);
        let (mut used, mut end) = (0, page);
        // One room per page, at most THROUGH_PAGES: each page's header,
        // then the record's bytes on it, while they cover it whole.
        for room in headers.chunks_mut(THROUGH_HEADER_ROOM) {
            let header = self.seg.page_header_size(end) as usize;
            let data = PAGE_SIZE as usize - header;
            if end >= segment_end || src.remaining() < data {
                break;
            }
            self.ring.identity().encode_header(
                self.seg,
                end,
                XLP_FIRST_IS_CONTRECORD,
                src.remaining() as u32,
                room,
            );
            parts[used] = &room[..header];
            used += 1 + src.take_whole(data, &mut parts[used + 1..]);
            end = Lsn(end.0 + PAGE_SIZE);
        }
        let through = ThroughPages::new(page, &parts[..used]);
        debug_assert_eq!(through.pages_end(), end);
        through
    }

    /// The CRC beside the write ([`Config::crc_helper`]): for a record
    /// `item` (its header `header` but for the CRC) at `at`, long enough to
    /// be written through and whose body's CRC is still to compute, hands
    /// the CRC to the helper and meanwhile writes the record's whole pages
    /// after its first page ahead of the written point
    /// ([`Writer::write_ahead`]; the first page, which holds the header,
    /// is not filled yet), with the record's last page where it ends in
    /// the page after them ([`Self::copy_tail`]: copied into the ring
    /// first, so that the flush after the insert writes only the first
    /// page); then seals the header with the helper's CRC and
    /// copies the record's first page and the rest after those pages into
    /// the ring ([`Self::copy_record`], which skips them). Returns the
    /// record's end, or `None`, with nothing written, where the helper is
    /// off or busy, as many insertions are in flight as the process has
    /// CPUs (the helper would take one from them: measured 0.8–0.96× at
    /// two threads on two CPUs without this), the record's header does
    /// not fit in its first page,
    /// the pages after the first lie in a segment the writer has neither
    /// open nor ready next (`Writer::open_for_ahead`), or cover no page
    /// whole: the caller computes the CRC and
    /// copies the record as without the helper.
    ///
    /// Until the copy we advertise nothing past what we advertised before:
    /// the pages written ahead are not `written` until the writes below
    /// them reach them, which they cannot before our first page is copied.
    fn crc_beside_write(
        &self,
        item: &Pending,
        header: &RecordHeader,
        at: Lsn,
        progress: &impl InsertionProgress,
    ) -> Result<Option<Lsn>, Error> {
        let (Some(helper), Some(from)) = (&self.crc_helper, self.write_through_from) else {
            return Ok(None);
        };
        let prefix = item.prefix();
        let body = [prefix.as_bytes(), item.data()];
        if !item.crc_deferred() || item.size < from || 2 + body.len() > THROUGH_PARTS_PER_PAGE {
            return Ok(None);
        }
        if self.crowded(0) {
            // No CPU to spare for the helper: as many insertions in flight
            // (ours included) as CPUs; it would take one from them.
            return Ok(None);
        }
        let header_size = self.format.record_header_size();
        if PAGE_SIZE - at.page_offset() < header_size as u64 {
            // The header crosses into the next page: that page would be
            // written ahead with the header unsealed.
            return Ok(None);
        }
        let unsealed = [0; RECORD_HEADER_SIZE];
        let mut src = Parts::new(&unsealed[..header_size], &body);
        // The first page's bytes: copied after the CRC, with the header.
        src.skip((PAGE_SIZE - at.page_offset()) as usize);
        let page = Lsn(at.page_start().0 + PAGE_SIZE);
        let Some(file) = self
            .writer
            .open_for_ahead(&self.supply, self.seg.segno(page))
        else {
            return Ok(None);
        };
        let mut headers = [0; THROUGH_HEADERS];
        let mut parts: [&[u8]; THROUGH_PARTS] = [&[]; THROUGH_PARTS];
        let before = src.remaining();
        let through = self.through_pages(page, &mut src, &mut headers, &mut parts);
        if through.pages_end() == page {
            return Ok(None);
        }
        let Some(ticket) = helper.start(body) else {
            return Ok(None);
        };
        // The record's last page goes with them where it can, so that the
        // flush after the insert writes only the first page.
        let advertised = self.advertisement(at);
        let through = self.copy_tail(through, &mut src, advertised, progress)?;
        self.writer
            .write_ahead(&self.ring, &self.supply, file.as_ref(), &through)?;
        let crc = ticket.finish();
        let mut sealed = [0; RECORD_HEADER_SIZE];
        let sealed = &mut sealed[..header_size];
        self.format.seal_header(header, at, self.seg, crc, sealed);
        let ahead = WrittenAhead {
            from: page,
            to: through.end(),
            bytes: before - src.remaining(),
        };
        self.copy_record(sealed, &body, at, progress, Some(ahead))
            .map(Some)
    }

    /// For a write of the pages `through` from the caller's bytes
    /// (write-through, or written ahead beside the CRC): if the rest of
    /// the record in `src` ends in the page just after them, in the same
    /// segment, copies it there in the ring (with the page's header, which
    /// marks it continued, and the alignment padding) and returns the
    /// pages with that page as their tail ([`ThroughPages::with_tail`]),
    /// so that the same write takes that page and the flush after the
    /// insert finds nothing of it left to write. The pages as they were,
    /// with nothing copied, where the rest covers that page whole, crosses
    /// into another segment, or where that page's ring slot last held a
    /// page at or above `advertised`'s (a record about as long as the
    /// ring: freeing the slot would wait for this insertion, whose bytes
    /// from there on are not copied yet).
    ///
    /// We advertise `advertised` meanwhile, not more: every byte of ours
    /// below it is copied (`page` for a write-through; our start for a
    /// write ahead, whose first page is filled only after the CRC).
    fn copy_tail<'a>(
        &self,
        through: ThroughPages<'a>,
        src: &mut Parts,
        advertised: Lsn,
        progress: &impl InsertionProgress,
    ) -> Result<ThroughPages<'a>, Error> {
        let (page, end) = (through.from(), through.pages_end());
        let header = self.seg.page_header_size(end);
        let rest = src.remaining() as u64;
        let same_segment = self.seg.segno(end) == self.seg.segno(page);
        let in_ring = end.0 + PAGE_SIZE - advertised.page_start().0 <= self.ring.bytes();
        if rest == 0 || rest >= PAGE_SIZE - header || !same_segment || !in_ring {
            return Ok(through);
        }
        self.map_page(end, advertised, progress)?;
        // SAFETY: the page is initialised and our record covers its start.
        unsafe { self.ring.set_contrecord(end, rest as u32) };
        let mut at = Lsn(end.0 + header);
        while src.remaining() > 0 {
            let bytes = src.take(src.remaining());
            // SAFETY: the page is initialised and these bytes are ours.
            unsafe { self.ring.copy_in(at, bytes) };
            at = Lsn(at.0 + bytes.len() as u64);
        }
        Ok(through.with_tail(self.pad_record(at)))
    }

    /// What an inserter about to write at `at` may advertise: `at`, or the
    /// page start when `at` is just past its page's header, which may not
    /// be written yet.
    fn advertisement(&self, at: Lsn) -> Lsn {
        let page = at.page_start();
        if at.page_offset() <= self.seg.page_header_size(page) {
            page
        } else {
            at
        }
    }

    /// Makes sure the page at `page` is initialised in the ring before we
    /// write to it (PostgreSQL: `GetXLogBuffer`). If it is not, first
    /// advertise our progress, `advertised` (see [`Self::advertisement`]),
    /// then initialise it, writing out old pages if needed.
    fn map_page(
        &self,
        page: Lsn,
        advertised: Lsn,
        progress: &impl InsertionProgress,
    ) -> Result<(), Error> {
        self.map_page_evicting(page, advertised, progress, self.eviction_chunk)
    }

    /// [`Self::map_page`], an eviction writing at most `chunk` bytes beyond
    /// the page to free ([`Eviction::Batch`]).
    fn map_page_evicting(
        &self,
        page: Lsn,
        advertised: Lsn,
        progress: &impl InsertionProgress,
        chunk: u64,
    ) -> Result<(), Error> {
        if self.ring.holds(page) {
            return Ok(());
        }
        progress.advertise(advertised);
        self.init.ensure(
            &self.ring,
            page,
            || self.writer.written(),
            |occupant| self.evict(occupant, chunk),
        )
    }

    /// Writes out the page ending at `occupant_end` (and, per the eviction
    /// policy, up to `chunk` bytes more) so its ring slot can be reused.
    fn evict(&self, occupant_end: Lsn, chunk: u64) -> Result<(), Error> {
        // Relaxed: a statistic.
        self.evictions.fetch_add(1, Ordering::Relaxed);
        let finished = self
            .slots
            .wait_for_inserts(occupant_end, self.reserved_end());
        // One write may cross the ring's wrap (a vectored write in two
        // parts), not the segment's end (a second write and a sync).
        let written = self.writer.written();
        let segment_end = self.seg.segment_start(self.seg.segno(written) + 1);
        let target = self
            .eviction
            .target(occupant_end, finished, segment_end, chunk);
        self.writer
            .write(&self.ring, &self.supply, target, Caller::Eviction, || {
                target
            })?;
        Ok(())
    }
}
