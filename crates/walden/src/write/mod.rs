//! The writer: writes finished pages from the buffer ring to segment files
//! and makes them durable, for everyone.
//!
//! PostgreSQL: `XLogWrite`, `XLogFlush`, `WALWriteLock`, `issue_xlog_fsync`.
//! As in PostgreSQL, writing and syncing are separate positions
//! (`LogwrtResult.Write` and `.Flush`), but here they are also separate
//! locks: the write lock covers the open segment and the `pwrite`s that
//! advance `written`; the sync line ([`SyncLine`]) runs the syncs, one at a
//! time by default, each of which covers exactly what was written to its
//! file when it started, and `flushed` advances to that point only after it
//! (and every sync started before it) returns. So a thread may write what
//! is finished while another's `fdatasync` is in flight. A finished segment
//! is synced (under the write lock) before the writer moves on to the next,
//! so `flushed` never passes an unsynced segment.
//!
//! Group commit is leader/follower ([`CommitQueue`]): a flusher whose data
//! is not durable becomes the one leader or parks under its LSN. The leader
//! writes everything finished (not only what it asked for), syncs, wakes
//! exactly the flushers its sync covered and ends the lead, so that the
//! next round goes to a running thread (itself on its next flush, or a
//! newcomer) rather than waiting for a parked one to be woken; if flushers
//! remain parked, one of them is woken to retry, in case nobody else comes
//! (the last one parked after a short grace, so that the returning leader's
//! next round can take its record in).
//!
//! Overlapped syncs ([`crate::Config::overlap_syncs`]): a leader whose round
//! needs a sync writes (while the previous round's sync may be in flight),
//! waits for that sync to end, writes what finished meanwhile, and ends its
//! lead just before its own sync, so the next flusher leads a round of its
//! own and writes while this sync is in flight. After its sync the leader
//! wakes the flushers it covered without touching the lead
//! ([`CommitQueue::wake_covered`]). So two rounds overlap: one syncing, the
//! next writing; syncs stay serialised, each covers exactly what was
//! written when it started, and each covers everything finished when it
//! started, as without the overlap. docs/io.md ("Overlapped syncs").
//!
//! Concurrent syncs ([`crate::Config::concurrent_syncs`]): the syncs go
//! through a [`SyncLine`] with two slots instead of one, so that with
//! overlapped syncs the next leader does not wait for the sync in flight
//! but starts its own beside it, through a second open file description of
//! the segment; `flushed` still advances in the order the syncs started.
//! docs/io.md ("Two syncs in flight on one file").
//!
//! A failed write or sync poisons the writer (PostgreSQL's post-2018 rule:
//! after a failed fsync the kernel may have dropped the dirty pages, so a
//! retry could report data durable that is not). Every later call fails
//! and the flushed LSN never advances again: the sync line checks the
//! poison flag under its lock before it starts a sync and before it
//! publishes one.

pub(crate) mod background;
mod chunked;
#[cfg(all(test, not(any(loom, shuttle))))]
mod overlap_tests;
#[cfg(test)]
mod rig;
mod segment_supply;
#[cfg(all(test, shuttle))]
mod shuttle_model;
mod stats;
mod sync_line;
mod sync_method;
#[cfg(test)]
mod tests;
mod through;
mod whole_pages;
mod write_lock;

pub(crate) use segment_supply::{is_sync_failure, Preallocator, SegmentSupply};
pub use stats::WriterStats;
use sync_line::{Ran, Stopped, SyncLine, MAX_SLOTS};
pub use sync_method::SyncMethod;
use through::write_ring_then_pages;
pub(crate) use through::ThroughPages;
use whole_pages::write_whole_pages;
pub use write_lock::Caller;

use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_utils::CachePadded;

use crate::buffer::BufferRing;
use crate::log_metrics::LogMetrics;
use crate::lsn::{Lsn, SegmentSize};
use crate::segment::{AlignedPage, OpenOptions, SegmentError, StorageFile};
use crate::sync::backoff::Policy;
use crate::sync::{
    AtomicBool, AtomicU64, CommitQueue, HandoffLock, Mutex, MutexGuard, Ordering, Turn,
};

/// Why a write or flush failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A segment file could not be created or opened.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// Writing to a segment failed.
    #[error("could not write to segment {segno} at offset {offset}: {source}")]
    Write {
        /// Segment number.
        segno: u64,
        /// Offset in the segment.
        offset: u64,
        /// The cause.
        source: std::io::Error,
    },
    /// Making a segment durable failed.
    #[error("could not {method} segment {segno}: {source}")]
    Sync {
        /// The sync method.
        method: SyncMethod,
        /// Segment number.
        segno: u64,
        /// The cause.
        source: std::io::Error,
    },
    /// Starting the write-back of written WAL failed (a hint that makes
    /// nothing durable, but whose failure, as PostgreSQL's `pg_flush_data`,
    /// is taken as a write failure).
    #[error("could not start the write-back of segment {segno} at offset {offset}: {source}")]
    Writeback {
        /// Segment number.
        segno: u64,
        /// Offset in the segment.
        offset: u64,
        /// The cause.
        source: std::io::Error,
    },
    /// An earlier write or sync failed; the log accepts nothing more.
    #[error("the log is poisoned by an earlier write or sync failure; reopen it to recover what was durable")]
    Poisoned,
}

/// Where the writer gets segment files from.
pub trait SegmentOpener: Send + Sync {
    /// Opens segment `segno` as `opts` say (the writer's: read and write,
    /// the sync method's flag, direct I/O if configured), creating it
    /// (prepared as configured) if it does not exist yet.
    fn open_segment(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError>;
    /// Opens segment `segno`, which [`SegmentOpener::open_segment`] has
    /// just opened, once more: a second open file description for the sync
    /// line's second slot, nothing created, waited for or counted. The
    /// default calls `open_segment`, which suits an opener for which
    /// opening an existing segment does nothing more.
    fn open_again(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        self.open_segment(segno, opts)
    }
    /// Opens segment `segno` as [`SegmentOpener::open_segment`] would, but
    /// only if it exists already and nothing is preparing it: nothing
    /// created, waited for or counted. The writer opens its next segment so
    /// before it enters it, so that a large record's pages there can be
    /// written ahead ([`Writer::open_for_ahead`]). The default opens
    /// nothing (`None`), which suits an opener that creates segments only
    /// when the writer enters them.
    fn open_if_ready(
        &self,
        _segno: u64,
        _opts: &OpenOptions,
    ) -> Result<Option<Box<dyn StorageFile>>, SegmentError> {
        Ok(None)
    }
    /// Called when the writer starts writing segment `segno`, so the next
    /// one can be prepared ahead of need; `opened_ahead` if the writer
    /// opened it before, with [`SegmentOpener::open_if_ready`] (it was
    /// found ready then), not with [`SegmentOpener::open_segment`].
    fn entered_segment(&self, segno: u64, opened_ahead: bool);
}

/// A segment's open file descriptions: the first for the writes and the
/// sync line's slot 0, the second for its slot 1 (the same description as
/// the first when the line has one slot). Shared with syncs in flight
/// outside the write lock.
type Descriptions = [Arc<dyn StorageFile>; MAX_SLOTS];

#[derive(Debug)]
struct OpenSegment {
    segno: u64,
    files: Descriptions,
}

/// The segments whose pages may be written ahead of `written`
/// ([`Writer::open_for_ahead`]): the one open for writing and, once asked
/// for, the one after it, opened before the writer enters it (which then
/// takes its descriptions rather than opening it again, so that its syncs
/// report the write-back errors of the writes made ahead through them).
#[derive(Debug, Default)]
struct AheadFiles {
    /// The segment open for writing and its first description; `None`
    /// while the writer is between two segments.
    open: Option<(u64, Arc<dyn StorageFile>)>,
    /// The segment after `open`, opened ahead.
    next: Option<OpenSegment>,
}

/// Where a write's bytes come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// The buffer ring's pages.
    Ring(&'a BufferRing),
    /// The buffer ring's pages up to a large record's whole pages, then
    /// those pages, from its inserter, and the ring's page with the
    /// record's end if the inserter copied it first
    /// ([`Writer::write_through`]): in one vectored write where they share
    /// a segment.
    Through(&'a BufferRing, &'a ThroughPages<'a>),
}

/// What the write lock protects.
#[derive(Debug, Default)]
struct WriterState {
    open: Option<OpenSegment>,
    /// Write counters (and, with `OpenDatasync`/`OpenSync`, syncs).
    stats: WriterStats,
    /// The page a partially filled last page is copied into to be written
    /// whole (allocated at the first such write).
    tail_page: Option<Box<AlignedPage>>,
    /// Pages written ahead of `written` ([`Writer::write_ahead`]), as
    /// `[from, to)` ranges in no order: `written` jumps over each when it
    /// reaches its start.
    ahead: Vec<(Lsn, Lsn)>,
}

/// What the sync statistics lock protects.
#[derive(Debug, Default)]
struct SyncState {
    /// Sync counters and the finished flush groups; the latest one is
    /// still gathering members in [`Writer::group_members`].
    stats: WriterStats,
    /// True once a group flush has happened: `group_members` then counts
    /// the latest group.
    group_open: bool,
}

/// A leader's round after its writes: what its sync is to cover.
struct Round {
    /// Everything below is durable once the round's sync returns.
    covers: Lsn,
    /// The segment to sync for that, if a sync is needed.
    file: Option<(u64, Descriptions)>,
    /// The writes made something durable already (a finished segment's
    /// sync, or any write with a method that needs no sync).
    made_durable: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Writer {
    /// The write lock; the background writer is handed it ahead of
    /// evictions and flushes if `Config::write_lock_handoff` (see
    /// `write_lock`), and one waiter spins before it sleeps if
    /// `Config::write_lock_spin`.
    state: HandoffLock<WriterState>,
    /// The syncs in flight: one at a time, or two with concurrent syncs.
    line: SyncLine,
    /// Sync statistics and flush groups (taken after the write lock).
    syncing: Mutex<SyncState>,
    /// Everything below is written (PostgreSQL: `LogwrtResult.Write`).
    written: CachePadded<AtomicU64>,
    /// The segment open for writing and the next one, for writes ahead
    /// of `written` outside the write lock ([`Writer::write_ahead`]);
    /// `open` changed under the write lock, `next` set by the insert path
    /// while `open` is the one before and taken by the writer. Taken
    /// after the write lock, never held across anything that waits.
    open_for_ahead: Mutex<AheadFiles>,
    /// Everything below is durable (PostgreSQL: `LogwrtResult.Flush`).
    flushed: CachePadded<AtomicU64>,
    /// The highest point a flusher has asked to make durable, below which
    /// every insertion has finished (PostgreSQL: `LogwrtRqst.Flush`). A
    /// leader writes up to it, so the flushers parked behind it find their
    /// work done: this is what makes group commit work.
    requested: CachePadded<AtomicU64>,
    poisoned: AtomicBool,
    /// Flushers: the leader and the parked ones.
    queue: CommitQueue,
    /// Flush calls that needed the writer.
    flush_requests: AtomicU64,
    /// Flush calls that waited for another thread's flush and found their
    /// data durable after it.
    flushes_covered: AtomicU64,
    /// Members of the latest group flush so far: its leader and every
    /// flush call that has found its data durable since.
    group_members: AtomicU64,
    method: SyncMethod,
    /// Direct I/O: segment files opened with `O_DIRECT`, whole pages written.
    direct: bool,
    /// Overlapped syncs: a leader whose round wrote at least this many
    /// bytes ends its lead before its sync; `None`: never.
    overlap_from: Option<u64>,
    /// Writes cut every this many bytes, each cut's write-back started
    /// before the next is written ([`crate::Config::writeback_every`]);
    /// `None`: never (always without a sync after writing, or with direct
    /// I/O).
    writeback_every: Option<NonZeroU64>,
    seg: SegmentSize,
    /// Writes, syncs and group flushes as `metrics` series of this log.
    metrics: LogMetrics,
}

/// Locks `m`, recovering it if a holder panicked (the writer's state stays
/// consistent: a failure poisons the log before anything is reported).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Writer {
    /// A writer for a log whose bytes below `start` are already durable,
    /// making WAL durable with `method`, with direct I/O if `direct`
    /// ([`crate::Config::direct_io`]), handing the write lock to the
    /// background writer first if `handoff`
    /// ([`crate::Config::write_lock_handoff`]), with a leader's sync
    /// overlapping the next leader's writes in rounds of at least
    /// `overlap_from` bytes ([`crate::Config::overlap_syncs`],
    /// [`crate::Config::overlap_syncs_from`]; `None`: never), and two syncs
    /// in flight at once if `concurrent_syncs`
    /// ([`crate::Config::concurrent_syncs`]).
    pub fn new(
        method: SyncMethod,
        direct: bool,
        seg: SegmentSize,
        start: Lsn,
        handoff: bool,
        overlap_from: Option<u64>,
        concurrent_syncs: bool,
    ) -> Self {
        Writer {
            state: HandoffLock::new(WriterState::default(), handoff),
            line: SyncLine::new(if concurrent_syncs { MAX_SLOTS } else { 1 }),
            syncing: Mutex::new(SyncState::default()),
            written: CachePadded::new(AtomicU64::new(start.0)),
            open_for_ahead: Mutex::default(),
            flushed: CachePadded::new(AtomicU64::new(start.0)),
            requested: CachePadded::new(AtomicU64::new(start.0)),
            poisoned: AtomicBool::new(false),
            queue: CommitQueue::new(if method.durable() {
                // A round ends with a sync: its followers sleep at once
                // unless `yielding_behind_syncs`.
                Policy::PARK
            } else {
                Policy::SPIN_THEN_PARK
            }),
            flush_requests: AtomicU64::new(0),
            flushes_covered: AtomicU64::new(0),
            group_members: AtomicU64::new(0),
            method,
            direct,
            overlap_from,
            writeback_every: None,
            seg,
            metrics: LogMetrics::default(),
        }
    }

    /// Cuts the writes every `every` bytes and starts each cut's
    /// write-back before the next is written
    /// ([`crate::Config::writeback_every`]), where the method syncs after
    /// writing and the segments go through the page cache; elsewhere, or
    /// with `None`, writes as they come.
    pub(crate) fn cutting_writes_every(mut self, every: Option<NonZeroU64>) -> Self {
        self.writeback_every = every.filter(|_| self.method.syncs() && !self.direct);
        self
    }

    /// Lets one thread at a time that finds the write lock held yield
    /// while it stays held before it sleeps
    /// ([`crate::Config::write_lock_spin`]); without, every waiter sleeps
    /// at once.
    pub(crate) fn spinning_for_the_lock(mut self, spin: bool) -> Self {
        self.state = self.state.spinning(spin.then_some(Policy::YIELD_THEN_PARK));
        self
    }

    /// Lets flushers parked behind a round that syncs yield while they
    /// wait, before they sleep ([`crate::Config::flush_wait_spin`]);
    /// without, they sleep at once. Rounds that only write keep their
    /// brief spin either way.
    pub(crate) fn yielding_behind_syncs(mut self, spin: bool) -> Self {
        if spin && self.method.durable() {
            self.queue = CommitQueue::new(Policy::YIELD_THEN_PARK);
        }
        self
    }

    /// Reports writes, syncs and group flushes as `metrics` series of the
    /// log `metrics` names (without it, under an empty name).
    pub(crate) fn label_metrics(&mut self, metrics: LogMetrics) {
        self.metrics = metrics;
    }

    /// Everything below this LSN has been written.
    #[inline]
    pub fn written(&self) -> Lsn {
        // Acquire: pairs with the Release store after the write, so a
        // thread re-initialising a ring slot sees the writer done with it.
        Lsn(self.written.load(Ordering::Acquire))
    }

    /// Everything below this LSN is durable.
    #[inline]
    pub fn flushed(&self) -> Lsn {
        // Acquire: pairs with the Release RMWs after the sync.
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// Fails if an earlier write or sync failed.
    #[inline]
    pub fn check(&self) -> Result<(), WriteError> {
        // Acquire: pairs with the SeqCst store in `poison`/`sync_to`; a
        // caller that sees it set also sees the state left by the failure.
        if self.poisoned.load(Ordering::Acquire) {
            Err(WriteError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// Makes every later call fail: after a failed sync nothing more may be
    /// reported durable (PostgreSQL: PANIC).
    pub(crate) fn poison(&self) {
        // SeqCst (⊇ Release, see `check`): set before the sync line's lock
        // is taken below, so every later publication sees it under that lock.
        self.poisoned.store(true, Ordering::SeqCst);
        tracing::error!(
            flushed = %self.flushed(),
            "WAL write or sync failed: log poisoned, nothing more becomes durable"
        );
        // Waits out a publication in progress and wakes the syncs waiting
        // on the line: once this returns, `flushed` never advances again.
        self.line.close();
        self.queue.poison();
    }

    /// Asks for everything below `finished` to be made durable;
    /// `finished` must be a point below which every insertion has finished.
    pub fn request_flush(&self, finished: Lsn) {
        // Release: a leader that reads this with Acquire also sees the
        // record bytes the caller saw finished (it synchronised with their
        // inserters in wait_for_inserts).
        self.requested.fetch_max(finished.0, Ordering::Release);
    }

    /// Writes the ring's bytes from the written point up to `target` for
    /// `caller` and, unless it is an eviction, makes them durable. `target`
    /// must be a point below which every insertion has finished.
    ///
    /// When durable, a leader raises `target` to the highest flush request
    /// ([`Writer::request_flush`]) and to `more()` (everything finished by
    /// then) if those are higher: one sync then covers every flusher parked
    /// behind it.
    ///
    /// Returns the LSN up to which the bytes are written (and durable, if
    /// asked), which is at least `target` on success.
    pub fn write(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        caller: Caller,
        more: impl Fn() -> Lsn,
    ) -> Result<Lsn, WriteError> {
        if caller == Caller::Eviction {
            if let Err(e) = self.check() {
                // The caller re-initialises the ring slot this eviction was
                // to free even though it failed (cooperative page init, so
                // that no thread waits forever for that claim). A write that
                // took the lock before the poison may still be reading that
                // slot; taking the lock once waits it out, and every later
                // write sees the poison under the lock and writes nothing.
                drop(self.lock_for(caller));
                return Err(e);
            }
            if self.written() >= target {
                return Ok(self.written());
            }
            return self
                .under_write_lock(caller, |st| {
                    self.write_locked(st, Source::Ring(ring), segments, target, caller)
                })
                .map(|_| self.written());
        }
        // Relaxed: a statistic.
        self.flush_requests.fetch_add(1, Ordering::Relaxed);
        let mut waited = false;
        loop {
            self.check()?;
            if self.flushed() >= target {
                return Ok(self.joined(waited));
            }
            let ready = || {
                // Acquire (the CommitQueue contract): pairs with the Release
                // RMWs of `flushed` and the SeqCst poison store.
                self.flushed.load(Ordering::Acquire) >= target.0
                    || self.poisoned.load(Ordering::Acquire)
            };
            let turn = if caller == Caller::BackgroundWriter {
                self.queue.enter_sleeping(target.0, ready)
            } else {
                self.queue.enter(target.0, ready)
            };
            match turn {
                Turn::Lead => return self.lead(ring, segments, target, caller, more, waited),
                Turn::Covered => waited = true,
                Turn::Ready => {}
                Turn::Poisoned => return Err(WriteError::Poisoned),
            }
        }
    }

    /// A write-only round for a streaming inserter (the background
    /// writer's, [`crate::Config::stream_after`]): writes the ring's bytes
    /// from the written point up to `target` (a point below which every
    /// insertion has finished) and syncs nothing, but a segment it
    /// finishes, as every write does. With a method that syncs after
    /// writing, and without direct I/O, it then starts the write-back of
    /// what it wrote ([`StorageFile::start_writeback`]), so the next sync
    /// finds less to do; that makes nothing durable, and `flushed` does not
    /// move for it. With `OpenDatasync`/`OpenSync` the writes are durable
    /// when they return, and `flushed` advances with them, as for any
    /// write. A failure poisons the writer.
    pub fn stream(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
    ) -> Result<(), WriteError> {
        self.check()?;
        if self.written() >= target {
            return Ok(());
        }
        let caller = Caller::BackgroundWriter;
        self.under_write_lock(caller, |st| {
            let from = self.written();
            self.write_locked(st, Source::Ring(ring), segments, target, caller)?;
            self.start_writeback(st, from)
        })
    }

    /// Under the write lock, after writes from `from`: starts the
    /// write-back of what they wrote to the open segment, if the method
    /// syncs after writing and the file goes through the page cache.
    fn start_writeback(&self, st: &WriterState, from: Lsn) -> Result<(), WriteError> {
        let Some(open) = &st.open else {
            return Ok(());
        };
        if self.direct || !self.method.syncs() {
            return Ok(());
        }
        let from = from.max(self.seg.segment_start(open.segno));
        let to = self.written();
        if to <= from {
            return Ok(());
        }
        let offset = self.seg.offset(from);
        open.files[0]
            .start_writeback(offset, to.0 - from.0)
            .map_err(|source| WriteError::Writeback {
                segno: open.segno,
                offset,
                source,
            })
    }

    /// A flush call found its data durable without making it so itself:
    /// counts it and returns the durable point.
    fn joined(&self, waited: bool) -> Lsn {
        if waited {
            // Relaxed: a statistic.
            self.flushes_covered.fetch_add(1, Ordering::Relaxed);
        }
        self.join_flush_group();
        self.flushed()
    }

    /// One round as the leader: write, sync, wake the flushers the sync
    /// covered and end the lead (see [`CommitQueue`]); with overlapped
    /// syncs the lead ends before the sync (see the module docs).
    fn lead(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        caller: Caller,
        more: impl Fn() -> Lsn,
        waited: bool,
    ) -> Result<Lsn, WriteError> {
        // A round under the write lock; a failure poisons the writer
        // (waking every parked flusher, which ends the lead).
        let locked_round = |target| {
            self.under_write_lock(caller, |st| {
                self.write_round(st, ring, segments, target, caller, &more)
            })
        };
        // The round's size: with concurrent syncs, what its sync is to make
        // durable (a record written through by its inserter leaves its
        // round little to write, but the next leader can sync beside this
        // sync); without, what the round writes (the next leader could
        // only write meanwhile).
        let from = if self.line.slots() > 1 {
            self.flushed()
        } else {
            self.written()
        };
        let mut round = locked_round(target)?;
        let handed_on = round.file.is_some()
            && self
                .overlap_from
                .is_some_and(|min| round.covers.0.saturating_sub(from.0) >= min);
        // Every slot of the sync line busy: syncs are in flight.
        if handed_on && self.line.full() {
            // These writes overlapped them: wait for a slot, then take in
            // what finished meanwhile, so that this round's sync covers it
            // too (as a round started now would).
            self.line.wait_for_a_slot(&self.poisoned);
            let first_made_durable = round.made_durable;
            round = locked_round(round.covers)?;
            round.made_durable |= first_made_durable;
        }
        if handed_on {
            // The lead ends before the sync: the next leader writes while
            // it is in flight. What is durable already is all the release
            // may report.
            self.queue.release_covered(self.flushed().0);
        }
        let synced = match &round.file {
            Some((segno, files)) => self.sync_to(files, *segno, round.covers),
            None => self.check().map(|()| false),
        };
        let led = matches!(synced, Ok(true)) || (synced.is_ok() && round.made_durable);
        if led {
            self.lead_flush_group(&mut lock(&self.syncing));
        }
        if let Err(e) = synced {
            self.poison();
            return Err(e);
        }
        if handed_on {
            self.queue.wake_covered();
        } else {
            self.queue.release_covered(self.flushed().0);
        }
        if led {
            Ok(self.flushed())
        } else {
            // Another thread's sync (or a finished segment's) covered it.
            Ok(self.joined(waited))
        }
    }

    /// A leader's writes, under the write lock: everything finished, and
    /// what the round's sync must then cover.
    fn write_round(
        &self,
        st: &mut WriterState,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        caller: Caller,
        more: &impl Fn() -> Lsn,
    ) -> Result<Round, WriteError> {
        self.check()?;
        // Acquire: pairs with the Release in request_flush.
        let requested = Lsn(self.requested.load(Ordering::Acquire));
        // The flushers parked behind the leader asked for no more than the
        // highest request: the round covers it, even if the leader's own
        // target is durable already (the commit queue's contract).
        let target = target.max(requested);
        let flushed = self.flushed();
        if flushed >= target {
            return Ok(Round {
                covers: flushed,
                file: None,
                made_durable: false,
            });
        }
        let target = target.max(more());
        self.queue.announce(target.0);
        let made_durable = self.write_locked(st, Source::Ring(ring), segments, target, caller)?;
        let covers = self.written();
        let file = match &st.open {
            Some(open) if self.method.syncs() && self.flushed() < covers => {
                Some((open.segno, open.files.clone()))
            }
            _ => None,
        };
        Ok(Round {
            covers,
            file,
            made_durable,
        })
    }

    /// Runs `f` under the write lock taken for `caller`; if it fails,
    /// poisons the writer once the lock is released (every write's
    /// failure does).
    fn under_write_lock<T>(
        &self,
        caller: Caller,
        f: impl FnOnce(&mut WriterState) -> Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        let mut st = self.lock_for(caller);
        let result = f(&mut st);
        drop(st);
        if result.is_err() {
            self.poison();
        }
        result
    }

    /// Under the write lock: writes up to `target` (nothing if the written
    /// point is there already), one write per contiguous run within a segment
    /// (two parts in one vectored write across the ring's wrap), syncing
    /// each segment it finishes, counting the bytes as `caller`'s. Returns
    /// true if that made anything durable (a segment sync, or any write
    /// with a method that needs no sync).
    fn write_locked(
        &self,
        st: &mut WriterState,
        source: Source,
        segments: &dyn SegmentOpener,
        target: Lsn,
        caller: Caller,
    ) -> Result<bool, WriteError> {
        // Under the write lock: a failed write before it was taken is seen.
        self.check()?;
        let mut pos = self.written();
        let mut made_durable = false;
        loop {
            let segno = self.seg.segno(pos);
            let seg_end = self.seg.segment_start(segno + 1);
            let ahead = st.ahead.iter().position(|&(from, _)| from == pos);
            if ahead.is_none() && pos >= target {
                break;
            }
            // Entered before pages written ahead are jumped over too: they
            // may lie in the segment after the open one, and the segment
            // they end is synced through the descriptions they went through.
            made_durable |= self.enter_segment(st, segments, segno)?;
            if let Some(i) = ahead {
                // Written ahead: nothing to write up to its end.
                pos = st.ahead.swap_remove(i).1;
                made_durable |= self.advance_written(st, pos, seg_end)?;
                continue;
            }
            // Up to the next pages written ahead, not over them.
            let end = st
                .ahead
                .iter()
                .map(|&(from, _)| from)
                .filter(|&from| from > pos)
                .fold(target.min(seg_end), Lsn::min);
            let Some(open) = &st.open else {
                unreachable!("segment {segno} entered above");
            };
            // Every write covers whole pages, as PostgreSQL's `XLogWrite`
            // does: from the start of the page holding `pos` (rewriting its
            // bytes below `pos`), the last page whole even if `end` falls
            // inside it. Direct I/O needs it; buffered, no write covers a
            // block in part, which ext4 would first read when it is not
            // cached (`ext4_block_write_begin`).
            let from = pos.page_start();
            let offset = self.seg.offset(from);
            let started = Instant::now();
            // Why the ring's range may be read, in both branches: every
            // insertion below `target` has finished (caller's contract), and
            // slots are not re-initialised before `written` passes their
            // page, which happens only below; so the range is at most the
            // ring's size. It starts at `pos`'s page, whose bytes below
            // `pos` were written before and whose slot still holds it
            // (`written` = `pos` has not passed its end).
            let written = match source {
                // The pages lie in one segment: this one, if the write
                // reaches them. `written` is never past their start (nothing
                // above it is finished), and the ring's bytes below them end
                // on their first page boundary, so the ring's part is whole
                // pages.
                Source::Through(ring, pages) if end > pages.from() => {
                    assert_eq!(end, pages.end(), "write-through pages in one segment");
                    assert!(from <= pages.from(), "written past the pages' start");
                    let tail_page = st.tail_page.get_or_insert_with(AlignedPage::boxed);
                    // SAFETY: see above; the tail's bytes are its
                    // inserter's, copied before the call.
                    let ((first, second), tail) = unsafe {
                        (
                            ring.range_parts(from, pages.from()),
                            pages.tail(ring, tail_page),
                        )
                    };
                    write_ring_then_pages(
                        open.files[0].as_ref(),
                        [first, second],
                        pages,
                        tail,
                        offset,
                        self.writeback_every,
                    )
                }
                Source::Ring(ring) | Source::Through(ring, _) => {
                    let tail_page = st.tail_page.get_or_insert_with(AlignedPage::boxed);
                    // SAFETY: see above.
                    unsafe {
                        write_whole_pages(
                            open.files[0].as_ref(),
                            ring,
                            (from, end),
                            offset,
                            tail_page,
                            self.writeback_every,
                        )
                    }
                }
            };
            let bytes = written.map_err(|e| e.in_segment(segno, offset))?;
            st.stats.count_write(bytes, caller);
            self.metrics.write(bytes);
            if self.method.sync_on_write() {
                self.count_sync(&mut st.stats, started);
            }
            pos = end;
            made_durable |= self.advance_written(st, pos, seg_end)?;
        }
        Ok(made_durable)
    }

    /// Under the write lock: makes segment `segno` the open one, unless it
    /// is already, finishing the one open before (returns true if that
    /// made anything durable). It takes the descriptions opened ahead for
    /// `segno` if the insert path opened it ([`Writer::open_for_ahead`]),
    /// else opens it: its descriptions are opened before anything is
    /// written to it, so that its syncs are told of every write-back error
    /// of those writes.
    fn enter_segment(
        &self,
        st: &mut WriterState,
        segments: &dyn SegmentOpener,
        segno: u64,
    ) -> Result<bool, WriteError> {
        if st.open.as_ref().is_some_and(|open| open.segno == segno) {
            return Ok(false);
        }
        let made_durable = self.finish_segment(st)?;
        // `open` is `None` now, so the insert path opens nothing ahead
        // until the writer has its files: taken from `next` or opened
        // here, never both.
        let opened_ahead = lock(&self.open_for_ahead)
            .next
            .take()
            .filter(|next| next.segno == segno);
        let adopted = opened_ahead.is_some();
        let entered = match opened_ahead {
            Some(next) => next,
            None => {
                let opts = self.segment_options();
                let file: Arc<dyn StorageFile> = Arc::from(segments.open_segment(segno, &opts)?);
                let twin = self.twin(segments, segno, &opts, &file)?;
                OpenSegment {
                    segno,
                    files: [file, twin],
                }
            }
        };
        segments.entered_segment(segno, adopted);
        lock(&self.open_for_ahead).open = Some((segno, entered.files[0].clone()));
        st.open = Some(entered);
        Ok(made_durable)
    }

    /// How the writer opens segment files: read and write, the sync
    /// method's flag, direct I/O if configured.
    fn segment_options(&self) -> OpenOptions {
        OpenOptions::new()
            .read(true)
            .write(true)
            .sync(self.method.file_mode())
            .direct(self.direct)
    }

    /// The description for the sync line's slot 1 of segment `segno`,
    /// whose first is `file`: with two sync slots, one of its own (see
    /// `SyncLine`), opened before anything is written to the segment, so
    /// that it is told of every write-back error of those writes; else
    /// `file` itself.
    fn twin(
        &self,
        segments: &dyn SegmentOpener,
        segno: u64,
        opts: &OpenOptions,
        file: &Arc<dyn StorageFile>,
    ) -> Result<Arc<dyn StorageFile>, SegmentError> {
        Ok(if self.line.slots() > 1 && self.method.syncs() {
            Arc::from(segments.open_again(segno, opts)?)
        } else {
            file.clone()
        })
    }

    /// Under the write lock, once everything below `pos` is written (in
    /// `pos`'s segment or the one ending at `seg_end`): publishes `pos` as
    /// written (and flushed, with a method that needs no sync), and syncs
    /// and closes the segment if `pos` is its end. Returns true if that
    /// made anything durable.
    fn advance_written(
        &self,
        st: &mut WriterState,
        pos: Lsn,
        seg_end: Lsn,
    ) -> Result<bool, WriteError> {
        // Release: publishes that the ring slots below `pos` are free
        // to re-initialise (the bytes are out of them).
        self.written.store(pos.0, Ordering::Release);
        let mut made_durable = false;
        if !self.method.syncs() {
            made_durable = true;
            // Release: nothing more to do for durability with these
            // methods (OpenDatasync/OpenSync writes are durable, None
            // promises nothing). An RMW, as every change of `flushed`.
            self.flushed.fetch_max(pos.0, Ordering::Release);
        }
        if pos == seg_end {
            // PostgreSQL fsyncs a segment as soon as it is finished.
            made_durable |= self.finish_segment(st)?;
        }
        Ok(made_durable)
    }

    /// Syncs the open segment up to the written point if that is not
    /// durable yet, and closes it. Returns true if it synced.
    fn finish_segment(&self, st: &mut WriterState) -> Result<bool, WriteError> {
        let Some(open) = st.open.take() else {
            return Ok(false);
        };
        lock(&self.open_for_ahead).open = None;
        self.sync_to(&open.files, open.segno, self.written())
    }

    /// Unless everything below `upto` is durable already (or a sync in
    /// flight covers it), syncs segment `segno` (which holds the bytes just
    /// below `upto`, every earlier segment being synced) through the sync
    /// line, each sync through its slot's description in `files`, and
    /// returns once `upto` is published as flushed. Returns true if it
    /// synced. A failure poisons the log before anything more is published;
    /// the caller completes the poison ([`Writer::poison`]).
    fn sync_to(&self, files: &Descriptions, segno: u64, upto: Lsn) -> Result<bool, WriteError> {
        self.check()?;
        if !self.method.syncs() {
            return Ok(false);
        }
        let ran = self
            .line
            .run(upto.0, &self.flushed, &self.poisoned, |slot| {
                let started = Instant::now();
                self.method.sync(files[slot].as_ref())?;
                self.count_sync(&mut lock(&self.syncing).stats, started);
                Ok(())
            });
        match ran {
            Ok(Ran::Covered) => Ok(false),
            Ok(Ran::Synced { overlapped }) => {
                if overlapped {
                    lock(&self.syncing).stats.concurrent_syncs += 1;
                }
                Ok(true)
            }
            Err(Stopped::Poisoned) => Err(WriteError::Poisoned),
            Err(Stopped::Failed(source)) => Err(WriteError::Sync {
                method: self.method,
                segno,
                source,
            }),
        }
    }

    /// Counts a sync (or a write that was one) that began at `started`, in
    /// `stats` and in the metrics alike.
    fn count_sync(&self, stats: &mut WriterStats, started: Instant) {
        let took = started.elapsed();
        stats.count_sync(took);
        self.metrics.sync(took);
    }

    /// Counts a flush call that found its data durable without making it
    /// so itself as a member of the latest group flush.
    fn join_flush_group(&self) {
        // Relaxed: a statistic; being an RMW on the same counter as the
        // leader's swap, the member lands in exactly one group.
        self.group_members.fetch_add(1, Ordering::Relaxed);
    }

    /// Called by a leader, under the sync statistics lock, after its round
    /// made its data durable: closes the previous group and opens its own, with
    /// itself as the first member.
    fn lead_flush_group(&self, sync: &mut SyncState) {
        if sync.group_open {
            // Relaxed: a statistic; the swap is an RMW, so no member's
            // increment is lost between the old group and the new one.
            let previous = self.group_members.swap(1, Ordering::Relaxed);
            sync.stats.count_flush_group(previous);
            self.metrics.flush_group(previous);
        } else {
            // The first group also takes the flush calls that found their
            // data durable before it (made so by a segment finished during
            // an eviction). Relaxed: a statistic, as above.
            self.group_members.fetch_add(1, Ordering::Relaxed);
            sync.group_open = true;
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> WriterStats {
        let st = self.state.lock();
        let sync = lock(&self.syncing);
        let mut stats = WriterStats {
            syncs: st.stats.syncs + sync.stats.syncs,
            concurrent_syncs: sync.stats.concurrent_syncs,
            sync_time: st.stats.sync_time + sync.stats.sync_time,
            flush_groups: sync.stats.flush_groups,
            flush_group_members: sync.stats.flush_group_members,
            largest_flush_group: sync.stats.largest_flush_group,
            flush_group_sizes: sync.stats.flush_group_sizes,
            ..st.stats.clone()
        };
        // Relaxed: a statistic; the latest group as it stands now.
        let latest = self.group_members.load(Ordering::Relaxed);
        if sync.group_open {
            stats.count_flush_group(latest);
        } else {
            // Served before any group flush: members, but of no group yet.
            stats.flush_group_members += latest;
        }
        drop(sync);
        drop(st);
        // Relaxed: statistics.
        stats.flush_requests = self.flush_requests.load(Ordering::Relaxed);
        stats.flushes_covered_by_others = self.flushes_covered.load(Ordering::Relaxed);
        stats
    }
}
