//! [`Wal`]: the public handle of a log, and the state its threads share.

mod open;
mod segments;

pub use open::RecoveryReport;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::buffer::{BufferRing, PageInit};
use crate::config::Config;
use crate::error::Error;
use crate::format::message::CheckPoint;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN};
use crate::insert::reserve::Reserver;
use crate::insert::slots::SlotArray;
use crate::insert::RecordSpan;
use crate::lsn::{Lsn, SegmentSize};
use crate::read::{ReaderOptions, StorageSource, WalReader};
use crate::record::Record;
use crate::segment::{
    plan_recycling, ControlFile, ControlFileError, FileOp, SegmentError, Storage,
};
use crate::sync::{AtomicU64, Ordering};
use crate::write::background::{BackgroundWriter, Wakeup};
use crate::write::{Writer, WriterStats, FLUSH_GROUP_BUCKETS, WRITE_SIZE_BUCKETS};
use segments::{is_sync_failure, Preallocator, Segments};

/// State shared by every thread using a log.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) seg: SegmentSize,
    pub(crate) slots: SlotArray,
    pub(crate) reserver: Reserver,
    pub(crate) ring: BufferRing,
    pub(crate) init: PageInit,
    pub(crate) writer: Writer,
    pub(crate) segments: Segments,
    /// Wakes the background writer early (`writer_flush_after`).
    pub(crate) background: Arc<Wakeup>,
    control: Mutex<ControlFile>,
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    evictions: AtomicU64,
    /// Segments checkpoints renamed to future names.
    recycled: AtomicU64,
    /// Segments checkpoints removed.
    removed: AtomicU64,
}

impl Shared {
    /// End of reserved WAL as an LSN (end flavour).
    pub(crate) fn reserved_end(&self) -> Lsn {
        self.seg.pos_to_end_lsn(self.reserver.reserved_end())
    }

    pub(crate) fn count_eviction(&self) {
        // Relaxed: a statistic.
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    /// One round of the background writer: writes and flushes everything
    /// inserted so far; returns where the writer stands.
    fn background_round(&self) -> Lsn {
        let end = self.reserved_end();
        if self.writer.flushed() < end {
            // A failure poisons the log, and the next insert or flush
            // reports it: there is no one else to tell here.
            let _ = self.flush(end);
        }
        self.writer.written()
    }

    fn flush(&self, upto: Lsn) -> Result<Lsn, Error> {
        self.writer.check()?;
        if self.writer.flushed() >= upto {
            return Ok(self.writer.flushed());
        }
        let reserved = self.reserved_end();
        if upto > reserved {
            return Err(Error::FlushBeyondEnd {
                requested: upto,
                end: reserved,
            });
        }
        // Wait for in-flight insertions before taking the writer lock: an
        // inserter below `upto` may need that lock to evict a page.
        let finished = self.slots.wait_for_inserts(upto, reserved);
        self.writer.request_flush(finished);
        let more = || self.slots.finished_now(self.reserved_end()).max(finished);
        Ok(self
            .writer
            .write(&self.ring, &self.segments, finished, true, more)?)
    }

    /// Writes a checkpoint record and records it in the control file
    /// (PostgreSQL: `CreateCheckPoint`).
    ///
    /// An online checkpoint moves the redo point to the insert position now:
    /// the caller says everything before it is safe elsewhere, so recovery
    /// starts there and the segments before it are recycled or removed.
    /// A shutdown checkpoint (on close) keeps the redo point: Walden cannot
    /// know that the caller's state is safe, so recovery still replays from
    /// the last online checkpoint; it only marks the log cleanly closed.
    fn checkpoint(&self, shutdown: bool) -> Result<Lsn, Error> {
        let (timeline, old_redo) = {
            let c = self.control.lock().unwrap_or_else(|e| e.into_inner());
            (c.timeline, c.redo)
        };
        let redo = if shutdown {
            old_redo
        } else {
            // PostgreSQL takes every insertion lock to fix the redo point:
            // with them held no reservation is half done.
            let _all = self.slots.acquire_all();
            self.seg.pos_to_start_lsn(self.reserver.reserved_end())
        };
        let checkpoint = CheckPoint {
            redo,
            this_timeline: timeline,
            prev_timeline: timeline,
            full_page_writes: true,
            time: unix_time(),
            ..CheckPoint::default()
        };
        let info = if shutdown {
            XLOG_CHECKPOINT_SHUTDOWN
        } else {
            XLOG_CHECKPOINT_ONLINE
        };
        let span = self.insert(&Record::new(RM_XLOG_ID, info, checkpoint.encode().to_vec()))?;
        self.flush(span.end)?;
        let mut control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        control.checkpoint = span.start;
        control.redo = redo;
        control.clean_shutdown = shutdown;
        control.write(&*self.storage, &self.dir)?;
        drop(control);
        if !shutdown {
            let current = self.seg.segno(self.reserved_end());
            self.segments
                .exclusively(|files| -> Result<(), SegmentError> {
                    let present = files.list()?;
                    let keep = self.config.recycle_segments as u64;
                    let plan = plan_recycling(&present, self.seg.segno(redo), current, keep);
                    files.apply(&plan)?;
                    // Relaxed: statistics.
                    self.recycled
                        .fetch_add(plan.recycle.len() as u64, Ordering::Relaxed);
                    self.removed
                        .fetch_add(plan.remove.len() as u64, Ordering::Relaxed);
                    Ok(())
                })?;
        }
        Ok(span.start)
    }
}

fn unix_time() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Counters of a log since it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records inserted.
    pub records: u64,
    /// Bytes reserved for them, alignment padding included.
    pub bytes: u64,
    /// Slot acquisitions that had to wait for another inserter.
    pub slot_waits: u64,
    /// Times an inserter found the ring page it needed still unwritten and
    /// had to write it out itself (PostgreSQL: `wal_buffers_full`).
    pub buffer_full_evictions: u64,
    /// `write` system calls.
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Largest single write, bytes.
    pub largest_write: u64,
    /// Writes by size: bucket `i` counts writes of at most `8 KiB << i`.
    pub write_sizes: [u64; WRITE_SIZE_BUCKETS],
    /// Syncs (fsync/fdatasync calls, or durable writes with O_DSYNC/O_SYNC).
    pub syncs: u64,
    /// Time spent syncing.
    pub sync_time: Duration,
    /// Flush calls that needed the writer.
    pub flush_requests: u64,
    /// Of those, the ones another thread's sync had already covered: the
    /// group-commit effect.
    pub flushes_covered_by_others: u64,
    /// Group flushes: rounds in which one flush call made everything
    /// finished durable (one sync, or one per segment finished) for itself
    /// and every flush call it covered.
    pub flush_groups: u64,
    /// Flush calls served by the group flushes, leaders included: the sum
    /// of their sizes. Each successful flush call counts once, in the
    /// latest group flush when it found its data durable, so with no flush
    /// in progress this equals the successful `flush_requests`.
    pub flush_group_members: u64,
    /// The most flush calls one group flush served.
    pub largest_flush_group: u64,
    /// Group flushes by size: bucket `i` counts groups of more than
    /// `2^(i-1)` and at most `2^i` flush calls (bucket 0: a flush that
    /// served only itself; the last bucket counts all larger ones).
    pub flush_group_sizes: [u64; FLUSH_GROUP_BUCKETS],
    /// Obsolete segments that checkpoints renamed to future segment names,
    /// to be written again without creating a file (PostgreSQL's recycling).
    pub segments_recycled: u64,
    /// Obsolete segments that checkpoints removed (beyond
    /// [`Config::recycle_segments`] ready ahead).
    pub segments_removed: u64,
}

/// A write-ahead log. `Send + Sync`: share it (`&Wal` or `Arc<Wal>`)
/// between any number of inserting threads.
///
/// ```
/// use walden::{Config, Record, SyncMethod, Wal};
/// let dir = tempfile::tempdir().unwrap();
/// let config = Config { segment_size: 1 << 20, buffers: 1 << 20, sync_method: SyncMethod::None, ..Config::default() };
/// let wal = Wal::create(dir.path(), config.clone()).unwrap();
/// let end = wal.insert(&Record::new(128, 0, b"hello".to_vec())).unwrap();
/// wal.flush(end).unwrap();
/// wal.close().unwrap();
///
/// let (wal, report) = Wal::open(dir.path(), config).unwrap();
/// let mut reader = wal.reader(report.redo).unwrap();
/// let hello = std::iter::from_fn(|| reader.next_record().ok().flatten())
///     .find(|r| r.header.rmid == 128)
///     .unwrap();
/// assert_eq!(hello.decode_body().unwrap().main_data, b"hello");
/// ```
#[derive(Debug)]
pub struct Wal {
    shared: Arc<Shared>,
    _prealloc: Preallocator,
    _writer: Option<BackgroundWriter>,
    closed: bool,
}

// Every method takes `&self`, so one `Wal` serves any number of threads
// (shared through an `Arc` or a scope); this fails to compile if a field
// ever makes it lose `Send` or `Sync`.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Wal>();
};

impl Wal {
    /// Inserts a record from any thread; returns the LSN just past it, to
    /// pass to [`Wal::flush`] (PostgreSQL: `XLogInsert`).
    pub fn insert(&self, rec: &Record) -> Result<Lsn, Error> {
        Ok(self.insert_span(rec)?.end)
    }

    /// Inserts a record; returns both its start and end LSN.
    pub fn insert_span(&self, rec: &Record) -> Result<RecordSpan, Error> {
        let span = self.shared.insert(rec)?;
        self.shared.background.inserted(span.end);
        Ok(span)
    }

    /// Returns once everything below `upto` is durable (per the sync
    /// method); returns the LSN now durable, which may be higher: a flush
    /// writes everything finished, and one sync serves every waiting thread
    /// (PostgreSQL: `XLogFlush`). After a write or sync failure every call
    /// fails and nothing more is reported durable.
    pub fn flush(&self, upto: Lsn) -> Result<Lsn, Error> {
        self.shared.flush(upto)
    }

    /// Inserts a record and flushes it: a durable commit.
    ///
    /// With [`Config::async_commit`] it returns once the record is inserted
    /// (PostgreSQL: `synchronous_commit = off`): the background writer makes
    /// it durable within `writer_delay` plus the length of one of its rounds
    /// (one write and one sync), as long as its rounds take less than
    /// `writer_delay`; a crash before then loses it. If a write or sync
    /// fails first, it never becomes durable and every later call fails.
    pub fn insert_and_flush(&self, rec: &Record) -> Result<Lsn, Error> {
        let end = self.insert(rec)?;
        if !self.shared.config.async_commit {
            self.flush(end)?;
        }
        Ok(end)
    }

    /// Ends the current segment with an `XLOG_SWITCH` record; the next
    /// record starts the next segment. Returns the switch record's span,
    /// or `None` if the log already ends on a segment boundary
    /// (PostgreSQL: `pg_switch_wal`).
    pub fn switch_segment(&self) -> Result<Option<RecordSpan>, Error> {
        self.shared.switch()
    }

    /// Writes a checkpoint record, flushes it, records it in the control
    /// file and recycles or removes the segments recovery no longer needs.
    /// Recovery starts at the checkpoint's redo point: the insert position
    /// when this was called. Returns the checkpoint record's LSN.
    pub fn checkpoint(&self) -> Result<Lsn, Error> {
        let result = self.shared.checkpoint(false);
        let failed_sync = match &result {
            Err(Error::Segment(e)) => is_sync_failure(e),
            Err(Error::Control(ControlFileError::Io(e))) => {
                matches!(e.op, FileOp::Sync | FileOp::SyncDir)
            }
            _ => false,
        };
        if failed_sync {
            // Which segments or control file are durable is unknown.
            self.shared.writer.poison();
        }
        result
    }

    /// A reader over this log's segments from `from` (a record start, or any
    /// LSN: the first record after it). It sees what has been written.
    pub fn reader(&self, from: Lsn) -> Result<WalReader, Error> {
        let opts = ReaderOptions {
            start: Some(from),
            ..ReaderOptions::default()
        };
        let files = self.shared.segments.files();
        let source = StorageSource::new(files.storage().clone(), files.dir(), self.shared.seg);
        Ok(WalReader::with_source(Box::new(source), opts)?)
    }

    /// Where the next record will start.
    pub fn insert_position(&self) -> Lsn {
        self.shared
            .seg
            .pos_to_start_lsn(self.shared.reserver.reserved_end())
    }

    /// Everything below this LSN is durable.
    pub fn flushed(&self) -> Lsn {
        self.shared.writer.flushed()
    }

    /// True if `dir` holds a Walden log: its control file exists, so
    /// [`Wal::open`] applies there and [`Wal::create`] would refuse it.
    pub fn exists(dir: &Path) -> bool {
        ControlFile::path(dir).exists()
    }

    /// The directory of the log.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Counters since the log was opened.
    pub fn stats(&self) -> Stats {
        let s = self.shared.slots.stats();
        let WriterStats {
            writes,
            bytes_written,
            largest_write,
            write_sizes,
            syncs,
            sync_time,
            flush_requests,
            flushes_covered_by_others,
            flush_groups,
            flush_group_members,
            largest_flush_group,
            flush_group_sizes,
        } = self.shared.writer.stats();
        Stats {
            records: s.records,
            bytes: s.bytes,
            slot_waits: s.waits,
            // Relaxed: a statistic.
            buffer_full_evictions: self.shared.evictions.load(Ordering::Relaxed),
            writes,
            bytes_written,
            largest_write,
            write_sizes,
            syncs,
            sync_time,
            flush_requests,
            flushes_covered_by_others,
            flush_groups,
            flush_group_members,
            largest_flush_group,
            flush_group_sizes,
            // Relaxed: statistics.
            segments_recycled: self.shared.recycled.load(Ordering::Relaxed),
            segments_removed: self.shared.removed.load(Ordering::Relaxed),
        }
    }

    /// Shuts the log down cleanly: a shutdown checkpoint record, flushed,
    /// and the control file marked clean. Recovery still starts at the last
    /// [`Wal::checkpoint`]'s redo point, so the records since then are
    /// read back on the next open.
    pub fn close(mut self) -> Result<(), Error> {
        self.closed = true;
        self.shared.checkpoint(true)?;
        Ok(())
    }
}

impl Drop for Wal {
    /// Flushes everything inserted (errors are dropped: call
    /// [`Wal::close`] to see them). Without `close` the next open recovers.
    fn drop(&mut self) {
        if !self.closed {
            let end = self.shared.reserved_end();
            let _ = self.shared.flush(end);
        }
    }
}
