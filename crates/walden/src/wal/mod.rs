//! [`Wal`]: the public handle of a log (create, open with recovery,
//! checkpoint, statistics, close), and the state its threads share: the
//! insert path ([`InsertPath`]) and the control file beside it.
//!
//! PostgreSQL: `XLogCtl` and the functions over it that are not the insert
//! path: `CreateCheckPoint`, `pg_switch_wal`, `pg_stat_wal`.

mod async_flush;
mod batch_recovery;
mod checkpoint_policy;
mod failed_create;
mod open;
mod open_or_create;
mod recovery_mode;
mod retention;
#[cfg(all(test, not(any(loom, shuttle))))]
mod stream_tests;
#[cfg(all(test, not(any(loom, shuttle))))]
mod writeback_tests;

pub use async_flush::FlushFuture;
pub use open::{preview_recovery, RecoveryReport};
pub use recovery_mode::SkippedWal;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use checkpoint_policy::{Cause, CheckpointPolicy, Last, Phase};
use retention::Retention;

use crate::config::Config;
use crate::error::Error;
use crate::format::message::CheckPoint;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN};
use crate::insert::{BatchSpans, InsertPath, RecordSpan};
use crate::log_metrics::LogMetrics;
use crate::lsn::{maxalign, Lsn};
use crate::read::{ReaderOptions, StorageSource, WalReader};
use crate::record::{Batch, Record};
use crate::segment::{
    plan_recycling, ControlFile, ControlFileError, FileOp, SegmentError, Storage, StorageLock,
};
use crate::sync::{AsyncWaiters, AtomicU64, Ordering};
use crate::write::background::{BackgroundWriter, Wakeup};
use crate::write::{is_sync_failure, Caller, Preallocator, WriterStats};

/// State shared by every thread using a log.
#[derive(Debug)]
pub(crate) struct Shared {
    config: Config,
    /// Everything inserting, switching and flushing uses.
    insert: InsertPath,
    /// Wakes the background writer early (`writer_flush_after`, or an
    /// async flush waiting).
    background: Arc<Wakeup>,
    /// The futures of [`Wal::flush_async`], woken by the background writer.
    durable: AsyncWaiters,
    control: Mutex<ControlFile>,
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    /// Segments checkpoints renamed to future names.
    recycled: AtomicU64,
    /// Segments checkpoints removed.
    removed: AtomicU64,
    /// Bytes of segments below the redo point kept on disk by retention.
    retained: AtomicU64,
    /// When to checkpoint automatically; serialises every checkpoint.
    policy: CheckpointPolicy,
    /// How much WAL below the redo point is kept.
    retention: Retention,
    /// The log's `metrics` series (`publish_metrics`).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    metrics: LogMetrics,
}

impl Shared {
    /// One round of the background writer: writes and flushes everything
    /// inserted so far; returns where the writer stands.
    fn background_round(&self) -> Lsn {
        let end = self.insert.reserved_end();
        if self.insert.writer.flushed() < end {
            // A failure poisons the log, and the next insert or flush
            // reports it: there is no one else to tell here.
            let _ = self.insert.flush(end, Caller::BackgroundWriter);
        }
        if self.config.writer_init_ahead > 0 {
            self.insert.init_ahead(self.config.writer_init_ahead);
        }
        self.auto_checkpoint();
        #[cfg(feature = "metrics")]
        self.publish_metrics();
        if self.wake_async_flushes() {
            // Async flushes of records inserted during this round.
            self.background.request();
        }
        self.insert.writer.written()
    }

    /// The background writer's write-only round for a streaming inserter
    /// that has copied its record below `upto` (see [`InsertPath::stream`]).
    fn stream_round(&self, upto: Lsn) {
        self.insert.stream(upto);
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
        self.checkpoint_at(if shutdown {
            RedoPoint::Keep
        } else {
            RedoPoint::Now
        })
    }

    /// [`Shared::checkpoint`] with the redo point `redo` says.
    fn checkpoint_at(&self, redo: RedoPoint) -> Result<Lsn, Error> {
        let result = self.checkpoint_locked(&mut self.policy.serial(), redo);
        self.poison_on_failed_sync(result)
    }

    /// The shutdown checkpoint of [`Wal::close`]: no automatic checkpoint
    /// follows it.
    fn close_checkpoint(&self) -> Result<Lsn, Error> {
        let mut last = self.policy.serial();
        last.phase = Phase::Closed;
        self.checkpoint_locked(&mut last, RedoPoint::Keep)
    }

    /// True if the log takes automatic checkpoints (by volume or time) or
    /// retires segments by age: work [`Shared::auto_checkpoint`] does.
    fn checkpoints_on_its_own(&self) -> bool {
        !self.policy.is_off() || self.config.wal_keep_for.is_some()
    }

    /// Takes a checkpoint if the policy says one is due, or retires
    /// segments whose retention by age ran out; errors are logged (a
    /// failed sync poisons the log, and the next call reports it).
    fn auto_checkpoint(&self) {
        // A poisoned log takes no checkpoint: the next call reports why.
        if !self.checkpoints_on_its_own() || self.insert.writer.check().is_err() {
            return;
        }
        let Some(mut last) = self.policy.try_serial() else {
            return;
        };
        let now = Instant::now();
        let result = match self.policy.due(&last, self.insert.insert_position(), now) {
            Some(cause) => self
                .checkpoint_locked(&mut last, RedoPoint::Now)
                .map(|_| self.policy.count(cause)),
            None if last.phase == Phase::Open && self.retention.aged_out(now) => {
                let redo = last.redo;
                self.retire_segments(redo, redo).map_err(Error::from)
            }
            None => Ok(()),
        };
        drop(last);
        if let Err(e) = self.poison_on_failed_sync(result) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "automatic checkpoint failed");
        }
    }

    /// Poisons the log if a checkpoint's sync failed, and passes `result` on.
    fn poison_on_failed_sync<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        let failed_sync = match &result {
            Err(Error::Segment(e)) => is_sync_failure(e),
            Err(Error::Control(ControlFileError::Io(e))) => {
                matches!(e.op, FileOp::Sync | FileOp::SyncDir)
            }
            _ => false,
        };
        if failed_sync {
            // Which segments or control file are durable is unknown.
            self.insert.writer.poison();
        }
        result
    }

    /// [`Shared::checkpoint_at`] with the checkpoint lock held, which it
    /// updates.
    fn checkpoint_locked(&self, last: &mut Last, redo: RedoPoint) -> Result<Lsn, Error> {
        let shutdown = redo == RedoPoint::Keep;
        let recycle = matches!(redo, RedoPoint::Now | RedoPoint::At(_));
        let (timeline, old_redo) = {
            let c = self.control.lock().unwrap_or_else(|e| e.into_inner());
            (c.timeline, c.redo)
        };
        let redo = match redo {
            RedoPoint::Keep => old_redo,
            RedoPoint::Now => {
                // PostgreSQL takes every insertion lock to fix the redo
                // point: with them held no reservation is half done.
                let _all = self.insert.slots.acquire_all();
                self.insert.insert_position()
            }
            RedoPoint::At(lsn) => self.record_start_at(lsn)?.max(old_redo),
            RedoPoint::Resumed(lsn) => lsn,
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
        let record = Record::new(RM_XLOG_ID, info, checkpoint.encode().to_vec());
        let span = self.insert.insert(&record)?;
        self.insert.flush(span.end, Caller::Flush)?;
        let mut control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        control.checkpoint = span.start;
        control.redo = redo;
        control.clean_shutdown = shutdown;
        control.write(&*self.storage, &self.dir)?;
        drop(control);
        *last = Last {
            redo,
            end: span.end,
            at: Instant::now(),
            phase: last.phase,
        };
        tracing::info!(
            checkpoint = %span.start,
            %redo,
            shutdown,
            dir = %self.dir.display(),
            "checkpoint"
        );
        if recycle {
            self.retire_segments(old_redo, redo)?;
        }
        Ok(span.start)
    }

    /// Recycles or removes the segments below the redo point `redo` (it
    /// was at `old_redo` before) that retention does not keep.
    fn retire_segments(&self, old_redo: Lsn, redo: Lsn) -> Result<(), SegmentError> {
        let seg = self.insert.seg;
        let redo_segno = seg.segno(redo);
        let keep_from = self
            .retention
            .keep_from(seg.segno(old_redo), redo_segno, Instant::now());
        let current = seg.segno(self.insert.reserved_end());
        self.insert.supply.exclusively(|files| {
            let present = files.list()?;
            // The preallocator keeps `ahead` ready; recycling fills those
            // still missing and `recycle_segments` beyond them, so that in
            // the steady state nothing is created.
            let ahead = self.insert.supply.ahead();
            let keep = ahead.saturating_add(self.config.recycle_segments as u64);
            let plan = plan_recycling(&present, keep_from, current, keep);
            files.apply(&plan)?;
            let retained = present
                .iter()
                .filter(|&&segno| (keep_from..redo_segno).contains(&segno))
                .count() as u64;
            // Relaxed: statistics.
            self.recycled
                .fetch_add(plan.recycle.len() as u64, Ordering::Relaxed);
            self.removed
                .fetch_add(plan.remove.len() as u64, Ordering::Relaxed);
            self.retained
                .store(retained * seg.bytes(), Ordering::Relaxed);
            Ok(())
        })
    }
}

#[cfg(feature = "metrics")]
impl Shared {
    /// The counts kept on the insert path, published by the background
    /// writer after each round rather than per insert: records and bytes
    /// inserted, the insert and durable positions, checkpoints by cause,
    /// segments recycled and removed, and WAL retained.
    fn publish_metrics(&self) {
        use crate::log_metrics::METRICS_LOG_LABEL as LOG;
        let log = || self.metrics.log();
        let slots = self.insert.slot_stats();
        metrics::counter!("walden_records_total", LOG => log()).absolute(slots.records);
        metrics::counter!("walden_record_bytes_total", LOG => log()).absolute(slots.bytes);
        let insert_lsn = self.insert.insert_position().0 as f64;
        metrics::gauge!("walden_insert_lsn", LOG => log()).set(insert_lsn);
        let flushed_lsn = self.insert.writer.flushed().0 as f64;
        metrics::gauge!("walden_flushed_lsn", LOG => log()).set(flushed_lsn);
        let checkpoints = self.policy.counts();
        for (cause, n) in [
            ("requested", checkpoints.requested),
            ("volume", checkpoints.by_volume),
            ("time", checkpoints.by_time),
        ] {
            metrics::counter!("walden_checkpoints_total", LOG => log(), "cause" => cause)
                .absolute(n);
        }
        // Relaxed: statistics.
        let recycled = self.recycled.load(Ordering::Relaxed);
        let removed = self.removed.load(Ordering::Relaxed);
        metrics::counter!("walden_segments_recycled_total", LOG => log()).absolute(recycled);
        metrics::counter!("walden_segments_removed_total", LOG => log()).absolute(removed);
        let retained = self.retained.load(Ordering::Relaxed) as f64;
        metrics::gauge!("walden_wal_retained_bytes", LOG => log()).set(retained);
    }
}

/// Where a checkpoint puts the redo point, where recovery starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RedoPoint {
    /// Where it is (a shutdown checkpoint).
    Keep,
    /// At the insert position.
    Now,
    /// At the first record starting at or after this LSN, or where it is
    /// if that is further on ([`Wal::checkpoint_to`]).
    At(Lsn),
    /// At this record, where recovery resumed after skipping invalid WAL
    /// ([`crate::RecoveryMode::SkipAnyCorruptedRecords`]), with nothing
    /// recycled: the records before it stay for readers.
    Resumed(Lsn),
}

impl Shared {
    /// The start of the first record at or after `lsn` (a record's start
    /// or end, as `insert` returns them, or any LSN up to the insert
    /// position).
    fn record_start_at(&self, lsn: Lsn) -> Result<Lsn, Error> {
        let end = self.insert.insert_position();
        if lsn > end {
            return Err(Error::CheckpointBeyondEnd {
                requested: lsn,
                end,
            });
        }
        let seg = self.insert.seg;
        // An LSN inside a page header stands for the page's first byte of
        // WAL; record starts are MAXALIGNed positions.
        let pos = seg
            .lsn_to_pos(lsn)
            .or_else(|| seg.lsn_to_pos(lsn.page_start()))
            .unwrap_or(0);
        Ok(seg.pos_to_start_lsn(maxalign(pos)).min(end))
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
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
    /// The writer's counters: writes, syncs and group flushes (each
    /// field documented on [`WriterStats`]).
    pub writer: WriterStats,
    /// Obsolete segments that checkpoints renamed to future segment names,
    /// to be written again without creating a file (PostgreSQL's recycling).
    pub segments_recycled: u64,
    /// Obsolete segments that checkpoints removed (beyond
    /// [`Config::segments_ahead`] plus [`Config::recycle_segments`] ready
    /// ahead).
    pub segments_removed: u64,
    /// Segments the writer entered and found ready: prepared ahead,
    /// recycled, or left by an earlier run.
    pub segments_found_ready: u64,
    /// Segments the writer had to create itself, on the insert path
    /// (the preallocator had not prepared them in time, or
    /// [`Config::segments_ahead`] is 0).
    pub segments_created_on_write: u64,
    /// Segments the background preallocator created ahead of need.
    pub segments_prepared_ahead: u64,
    /// Preparations of a segment the preallocator stopped because a
    /// checkpoint recycled an old segment to that name meanwhile (its
    /// fill, written for nothing, is removed).
    pub segment_preparations_abandoned: u64,
    /// Checkpoints the caller asked for ([`Wal::checkpoint`],
    /// [`Wal::checkpoint_to`]).
    pub checkpoints_requested: u64,
    /// Automatic checkpoints by volume ([`Config::max_wal_size`]).
    pub checkpoints_by_volume: u64,
    /// Automatic checkpoints by time ([`Config::checkpoint_timeout`]).
    pub checkpoints_by_time: u64,
    /// Bytes of whole segments below the redo point that retention kept
    /// on disk at the last checkpoint or retirement
    /// ([`Config::wal_keep_size`], [`Config::wal_keep_for`]).
    pub wal_retained_bytes: u64,
    /// Buffer pages the background writer initialised ahead of the
    /// inserters ([`Config::writer_init_ahead`]).
    pub pages_initialised_ahead: u64,
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
/// let hello = reader
///     .find(|r| r.as_ref().map_or(true, |r| r.header.rmid == 128))
///     .unwrap()
///     .unwrap();
/// assert_eq!(hello.decode_body().unwrap().main_data, b"hello");
/// ```
#[derive(Debug)]
pub struct Wal {
    shared: Arc<Shared>,
    _prealloc: Preallocator,
    _writer: Option<BackgroundWriter>,
    closed: bool,
    /// One writer per log: the WAL directory's lock, released last, after
    /// the threads above have stopped (shared only with a create that is
    /// still undoing what it made, when it fails: `wal/failed_create.rs`).
    _lock: Arc<dyn StorageLock>,
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
        let span = self.shared.insert.insert(rec)?;
        self.shared.background.inserted(span.end);
        Ok(span)
    }

    /// Inserts a plain-bytes record ([`Record::bytes`]: resource manager
    /// [`crate::DEFAULT_RMID`], info 0); returns the LSN just past it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let wal = walden::Wal::create(dir.path(), walden::Config::default()).unwrap();
    /// let end = wal.append(b"put k=v").unwrap();
    /// wal.flush(end).unwrap();
    /// ```
    pub fn append(&self, data: &[u8]) -> Result<Lsn, Error> {
        self.insert(&Record::bytes(data))
    }

    /// Inserts every record of `batch` with one reservation and one pass
    /// of copying; returns each record's span and the batch's end, to pass
    /// to [`Wal::flush`]. The records are consecutive in the log, behind a
    /// small `XLOG_NOOP` marker record that names them, and recovery keeps
    /// all of them or none: after a crash, a batch whose records did not
    /// all reach the disk is dropped whole (see [`RecoveryReport::dropped_batch`]).
    /// Every reservation design and format takes a batch as one reservation.
    /// A batch of one record is inserted as that record alone (no marker);
    /// an empty batch inserts nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use walden::{Batch, Wal, Config};
    /// let wal = Wal::create(dir.path(), Config::default()).unwrap();
    /// let payloads: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 66]).collect();
    /// let batch: Batch = payloads.iter().map(|p| walden::Record::bytes(&p[..])).collect();
    /// let spans = wal.insert_batch(&batch).unwrap();
    /// assert_eq!(spans.records.len(), 16);
    /// assert_eq!(spans.end, spans.records[15].end);
    /// wal.flush(spans.end).unwrap();
    /// ```
    pub fn insert_batch(&self, batch: &Batch) -> Result<BatchSpans, Error> {
        let spans = self.shared.insert.insert_batch(batch)?;
        self.batch_inserted(spans.end);
        Ok(spans)
    }

    /// [`Wal::insert_batch`] for a caller that needs only the batch's end
    /// (to pass to [`Wal::flush`]), not each record's span: the same
    /// records at the same places, without collecting the spans
    /// ([`Lsn::INVALID`] for an empty batch, which inserts nothing).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use walden::{Batch, Wal, Config};
    /// let wal = Wal::create(dir.path(), Config::default()).unwrap();
    /// let mut batch = Batch::new();
    /// batch.append(&b"put a=1"[..]).append(&b"put b=2"[..]);
    /// let end = wal.insert_batch_end(&batch).unwrap();
    /// assert_eq!(end, wal.insert_position());
    /// wal.flush(end).unwrap();
    /// ```
    pub fn insert_batch_end(&self, batch: &Batch) -> Result<Lsn, Error> {
        let end = self.shared.insert.insert_batch_end(batch)?;
        self.batch_inserted(end);
        Ok(end)
    }

    /// Tells the background writer about a batch that ended at `end`
    /// ([`Lsn::INVALID`] for an empty batch, which inserted nothing).
    fn batch_inserted(&self, end: Lsn) {
        if end.is_valid() {
            self.shared.background.inserted(end);
        }
    }

    /// Returns once everything below `upto` is durable (per the sync
    /// method); returns the LSN now durable, which may be higher: a flush
    /// writes everything finished, and one sync serves every waiting thread
    /// (PostgreSQL: `XLogFlush`). After a write or sync failure every call
    /// fails and nothing more is reported durable.
    pub fn flush(&self, upto: Lsn) -> Result<Lsn, Error> {
        let durable = self.shared.insert.flush(upto, Caller::Flush)?;
        if self._writer.is_none() {
            // Without a background writer, automatic checkpoints are
            // taken here, after the sync.
            self.shared.auto_checkpoint();
        }
        Ok(durable)
    }

    /// Inserts a record and flushes it: a durable commit.
    ///
    /// With [`Config::async_commit`] it returns once the record is inserted
    /// (PostgreSQL: `synchronous_commit = off`): the background writer makes
    /// it durable within `writer_delay` plus the length of one of its rounds
    /// (one write and one sync), as long as its rounds take less than
    /// `writer_delay`; a crash before then loses it. If a write or sync
    /// fails first, it never becomes durable and every later call fails.
    ///
    /// Without it, the caller writes its record itself, and unless the log
    /// checkpoints on its own (`max_wal_size`, `checkpoint_timeout`,
    /// `wal_keep_for`: the background writer's rounds take those
    /// checkpoints, and `writer_flush_after` bounds how late) it does not
    /// wake the background writer for it, as a synchronous commit does not
    /// wake PostgreSQL's walwriter: the wake-up would only hand the write
    /// to another thread while this one waits for it (in profiles of 1 MiB
    /// messages without sync, the background writer made a third of the
    /// samples, each message a wake-up).
    pub fn insert_and_flush(&self, rec: &Record) -> Result<Lsn, Error> {
        if self.shared.config.async_commit {
            return self.insert(rec);
        }
        let end = if self.shared.checkpoints_on_its_own() {
            self.insert(rec)?
        } else {
            self.shared.insert.insert(rec)?.end
        };
        self.flush(end)?;
        Ok(end)
    }

    /// Ends the current segment with an `XLOG_SWITCH` record; the next
    /// record starts the next segment. Returns the switch record's span,
    /// or `None` if the log already ends on a segment boundary
    /// (PostgreSQL: `pg_switch_wal`).
    pub fn switch_segment(&self) -> Result<Option<RecordSpan>, Error> {
        self.shared.insert.switch()
    }

    /// Writes a checkpoint record, flushes it, records it in the control
    /// file and recycles or removes the segments recovery no longer needs.
    /// Recovery starts at the checkpoint's redo point: the insert position
    /// when this was called. Returns the checkpoint record's LSN.
    pub fn checkpoint(&self) -> Result<Lsn, Error> {
        self.requested(self.shared.checkpoint(false))
    }

    /// Counts a checkpoint the caller asked for, if it was taken.
    fn requested(&self, result: Result<Lsn, Error>) -> Result<Lsn, Error> {
        if result.is_ok() {
            self.shared.policy.count(Cause::Requested);
        }
        result
    }

    /// Checkpoints with the redo point at `upto`: the caller says that
    /// everything before `upto` is safe elsewhere and may go. Recovery will
    /// start at the first record at or after `upto`, and the segments
    /// wholly before it are recycled or removed (as [`Wal::checkpoint`]
    /// does for the insert position). `upto` is an LSN `insert` returned
    /// (a record's end) or a record's start; a redo point never moves back,
    /// so an LSN below the current one keeps it. Fails with
    /// [`Error::CheckpointBeyondEnd`] past the insert position. Returns the
    /// checkpoint record's LSN.
    ///
    /// ```
    /// # use walden::{Config, Record, SyncMethod, Wal};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let config = Config { segment_size: 1 << 20, buffers: 1 << 20, sync_method: SyncMethod::None, ..Config::default() };
    /// let wal = Wal::create(dir.path(), config.clone())?;
    /// let applied = wal.insert(&Record::new(128, 0, b"applied".to_vec()))?;
    /// wal.insert(&Record::new(128, 0, b"pending".to_vec()))?;
    /// // The application has applied everything up to `applied`.
    /// wal.checkpoint_to(applied)?;
    /// wal.close()?;
    /// let (_wal, report) = Wal::open(dir.path(), config)?;
    /// assert_eq!(report.redo, applied);
    /// # Ok::<(), walden::Error>(())
    /// ```
    pub fn checkpoint_to(&self, upto: Lsn) -> Result<Lsn, Error> {
        self.requested(self.shared.checkpoint_at(RedoPoint::At(upto)))
    }

    /// A reader over this log's segments from `from` (a record start, or any
    /// LSN: the first record after it). It sees what has been written.
    pub fn reader(&self, from: Lsn) -> Result<WalReader, Error> {
        let opts = ReaderOptions {
            start: Some(from),
            ..ReaderOptions::default()
        };
        let files = self.shared.insert.supply.files();
        let source =
            StorageSource::new(files.storage().clone(), files.dir(), self.shared.insert.seg);
        Ok(WalReader::with_source(Box::new(source), opts)?)
    }

    /// Where the next record will start.
    pub fn insert_position(&self) -> Lsn {
        self.shared.insert.insert_position()
    }

    /// Everything below this LSN is durable.
    pub fn flushed(&self) -> Lsn {
        self.shared.insert.writer.flushed()
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
        let s = self.shared.insert.slot_stats();
        let supply = self.shared.insert.supply.stats();
        let checkpoints = self.shared.policy.counts();
        Stats {
            records: s.records,
            bytes: s.bytes,
            slot_waits: s.waits,
            buffer_full_evictions: self.shared.insert.evictions(),
            writer: self.shared.insert.writer.stats(),
            // Relaxed: statistics.
            segments_recycled: self.shared.recycled.load(Ordering::Relaxed),
            segments_removed: self.shared.removed.load(Ordering::Relaxed),
            segments_found_ready: supply.found_ready,
            segments_created_on_write: supply.created_on_write,
            segments_prepared_ahead: supply.prepared_ahead,
            segment_preparations_abandoned: supply.abandoned,
            checkpoints_requested: checkpoints.requested,
            checkpoints_by_volume: checkpoints.by_volume,
            checkpoints_by_time: checkpoints.by_time,
            // Relaxed: statistics.
            wal_retained_bytes: self.shared.retained.load(Ordering::Relaxed),
            pages_initialised_ahead: self.shared.insert.pages_initialised_ahead(),
        }
    }

    /// Shuts the log down cleanly: a shutdown checkpoint record, flushed,
    /// and the control file marked clean. Recovery still starts at the last
    /// [`Wal::checkpoint`]'s redo point, so the records since then are
    /// read back on the next open.
    pub fn close(mut self) -> Result<(), Error> {
        self.closed = true;
        self.shared.close_checkpoint()?;
        Ok(())
    }
}

impl Drop for Wal {
    /// Flushes everything inserted (errors are dropped: call
    /// [`Wal::close`] to see them). Without `close` the next open recovers.
    fn drop(&mut self) {
        if !self.closed {
            let end = self.shared.insert.reserved_end();
            let _ = self.shared.insert.flush(end, Caller::Flush);
        }
    }
}
