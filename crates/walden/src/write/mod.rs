//! The writer: writes finished pages from the buffer ring to segment files
//! and makes them durable, one thread at a time for everyone.
//!
//! PostgreSQL: `XLogWrite`, `XLogFlush`, `WALWriteLock`, `issue_xlog_fsync`.
//! Group commit falls out of the lock: while one thread writes and syncs,
//! the others queue on the writer lock; the next holder writes everything
//! finished by then, not only what it asked for, so the ones behind it find
//! their records already durable and return without a sync.
//!
//! A failed write or sync poisons the writer (PostgreSQL's post-2018 rule:
//! after a failed fsync the kernel may have dropped the dirty pages, so a
//! retry could report data durable that is not). Every later call fails
//! and the flushed LSN never advances again.

pub(crate) mod background;
mod segment_supply;
#[cfg(all(test, shuttle))]
mod shuttle_model;
mod sync_method;

pub(crate) use segment_supply::{is_sync_failure, Preallocator, SegmentSupply};
pub use sync_method::SyncMethod;

use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::buffer::BufferRing;
use crate::lsn::{Lsn, SegmentSize};
use crate::segment::{SegmentError, StorageFile};
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering, WaitQueue};
use std::sync::TryLockError;

/// Number of power-of-two write-size buckets kept (8 kB ... 1 GiB and up).
pub const WRITE_SIZE_BUCKETS: usize = 18;

/// Number of power-of-two flush-group-size buckets kept (1, 2, 3–4, 5–8,
/// ... 513–1024 flush calls, and more).
pub const FLUSH_GROUP_BUCKETS: usize = 12;

/// Index of the power-of-two bucket holding `units` (bucket `i` holds
/// `2^(i-1) < units <= 2^i`; 0 and 1 go to bucket 0), capped at `buckets - 1`.
fn pow2_bucket(units: u64, buckets: usize) -> usize {
    (units.max(1).next_power_of_two().trailing_zeros() as usize).min(buckets - 1)
}

/// Counters of the writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// `write` system calls issued.
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Largest single write, bytes.
    pub largest_write: u64,
    /// Writes by size: bucket `i` counts writes of at most `8 KiB << i`
    /// bytes (the last bucket counts all larger ones).
    pub write_sizes: [u64; WRITE_SIZE_BUCKETS],
    /// Syncs issued (fsync/fdatasync calls; with `OpenDatasync`/`OpenSync`
    /// every write is one, counted here as well).
    pub syncs: u64,
    /// Time spent in syncs (and in synchronous writes).
    pub sync_time: Duration,
    /// Calls that wanted data durable.
    pub flush_requests: u64,
    /// Of those, calls that waited for another thread's flush and found
    /// their data durable after it.
    pub flushes_covered_by_others: u64,
    /// Group flushes: rounds in which a flush call held the writer and
    /// made everything finished durable, for itself and for the flush
    /// calls it covered.
    pub flush_groups: u64,
    /// Flush calls served by those rounds, their leaders included: the sum
    /// of the group sizes. Every flush call that succeeds is counted here
    /// exactly once, as a member of the latest group flush when it found
    /// its data durable (or, before the first one, of none: an eviction's
    /// write made it durable), so once no flush is in progress this equals
    /// the successful `flush_requests`.
    pub flush_group_members: u64,
    /// Largest group: the most flush calls one round served.
    pub largest_flush_group: u64,
    /// Group flushes by size: bucket `i` counts groups of more than
    /// `2^(i-1)` and at most `2^i` flush calls (bucket 0: a leader alone;
    /// the last bucket counts all larger ones).
    pub flush_group_sizes: [u64; FLUSH_GROUP_BUCKETS],
}

impl WriterStats {
    fn count_write(&mut self, n: u64) {
        self.writes += 1;
        self.bytes_written += n;
        self.largest_write = self.largest_write.max(n);
        self.write_sizes[pow2_bucket(n.div_ceil(8192), WRITE_SIZE_BUCKETS)] += 1;
    }

    fn count_flush_group(&mut self, size: u64) {
        self.flush_groups += 1;
        self.flush_group_members += size;
        self.largest_flush_group = self.largest_flush_group.max(size);
        self.flush_group_sizes[pow2_bucket(size, FLUSH_GROUP_BUCKETS)] += 1;
    }
}

/// Why a write or flush failed.
#[derive(Debug, thiserror::Error)]
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
    /// An earlier write or sync failed; the log accepts nothing more.
    #[error("the log is poisoned by an earlier write or sync failure; reopen it to recover what was durable")]
    Poisoned,
}

/// Where the writer gets segment files from.
pub trait SegmentOpener: Send + Sync {
    /// Opens segment `segno` for writing, creating it (prepared as configured) if it
    /// does not exist yet.
    fn open_segment(
        &self,
        segno: u64,
        method: SyncMethod,
    ) -> Result<Box<dyn StorageFile>, SegmentError>;
    /// Called when the writer starts writing segment `segno`, so the next
    /// one can be prepared ahead of need.
    fn entered_segment(&self, segno: u64);
}

#[derive(Debug)]
struct OpenSegment {
    segno: u64,
    file: Box<dyn StorageFile>,
    /// Written bytes not yet synced (only with Fsync/Fdatasync).
    unsynced: bool,
}

#[derive(Debug, Default)]
struct WriterState {
    open: Option<OpenSegment>,
    /// The finished groups are counted here; the latest one is still
    /// gathering members in [`Writer::group_members`].
    stats: WriterStats,
    /// True once a group flush has happened: `group_members` then counts
    /// the latest group.
    group_open: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Writer {
    state: Mutex<WriterState>,
    /// Everything below is written (PostgreSQL: `LogwrtResult.Write`).
    written: CachePadded<AtomicU64>,
    /// Everything below is durable (PostgreSQL: `LogwrtResult.Flush`).
    flushed: CachePadded<AtomicU64>,
    /// The highest point a flusher has asked to make durable, below which
    /// every insertion has finished (PostgreSQL: `LogwrtRqst.Flush`). The
    /// writer-lock holder writes up to it, so the flushers queued behind
    /// it find their work done: this is what makes group commit work.
    requested: CachePadded<AtomicU64>,
    poisoned: AtomicBool,
    /// True while a thread holds the writer lock.
    busy: AtomicBool,
    /// Flushers waiting for the lock holder to finish.
    waiters: WaitQueue,
    /// Flush calls that needed the writer.
    flush_requests: AtomicU64,
    /// Flush calls that waited for another thread's flush and found their
    /// data durable after it.
    flushes_covered: AtomicU64,
    /// Members of the latest group flush so far: its leader and every
    /// flush call that has found its data durable since.
    group_members: AtomicU64,
    method: SyncMethod,
    seg: SegmentSize,
}

impl Writer {
    /// A writer for a log whose bytes below `start` are already durable.
    pub fn new(method: SyncMethod, seg: SegmentSize, start: Lsn) -> Self {
        Writer {
            state: Mutex::new(WriterState::default()),
            written: CachePadded::new(AtomicU64::new(start.0)),
            flushed: CachePadded::new(AtomicU64::new(start.0)),
            requested: CachePadded::new(AtomicU64::new(start.0)),
            poisoned: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            waiters: WaitQueue::new(),
            flush_requests: AtomicU64::new(0),
            flushes_covered: AtomicU64::new(0),
            group_members: AtomicU64::new(0),
            method,
            seg,
        }
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
        // Acquire: pairs with the Release store after the sync.
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// Fails if an earlier write or sync failed.
    #[inline]
    pub fn check(&self) -> Result<(), WriteError> {
        // Acquire: pairs with the Release in `poison`; a caller that sees
        // it set also sees the state left by the failure.
        if self.poisoned.load(Ordering::Acquire) {
            Err(WriteError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// Makes every later call fail: after a failed sync nothing more may be
    /// reported durable (PostgreSQL: PANIC).
    pub(crate) fn poison(&self) {
        // SeqCst (⊇ Release, see `check`); made before notify_all so that
        // waiting flushers wake up and fail (WaitQueue contract).
        self.poisoned.store(true, Ordering::SeqCst);
        self.waiters.notify_all();
    }

    /// Asks for everything below `finished` to be made durable;
    /// `finished` must be a point below which every insertion has finished.
    pub fn request_flush(&self, finished: Lsn) {
        // Release: a lock holder that reads this with Acquire also sees the
        // record bytes the caller saw finished (it synchronised with their
        // inserters in wait_for_inserts).
        self.requested.fetch_max(finished.0, Ordering::Release);
    }

    /// Writes the ring's bytes from the written point up to `target` and,
    /// if `durable`, makes them durable. `target` must be a point below
    /// which every insertion has finished.
    ///
    /// With `durable`, once the writer lock is held `target` is raised to
    /// the highest flush request ([`Writer::request_flush`]) and to `more()`
    /// (everything finished by then) if those are higher: one sync then
    /// covers every flusher queued behind this one.
    ///
    /// Returns the LSN up to which the bytes are written (and durable, if
    /// asked), which is at least `target` on success.
    pub fn write(
        &self,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        durable: bool,
        more: impl FnOnce() -> Lsn,
    ) -> Result<Lsn, WriteError> {
        if durable {
            // Relaxed: a statistic.
            self.flush_requests.fetch_add(1, Ordering::Relaxed);
        }
        let mut waited = false;
        let mut st = loop {
            self.check()?;
            if durable && self.flushed() >= target {
                if waited {
                    // Relaxed: a statistic.
                    self.flushes_covered.fetch_add(1, Ordering::Relaxed);
                }
                self.join_flush_group();
                return Ok(self.flushed());
            }
            if !durable && self.written() >= target {
                return Ok(self.written());
            }
            if !durable {
                break self.state.lock().unwrap_or_else(|e| e.into_inner());
            }
            // A flusher does not queue for the lock (PostgreSQL:
            // `LWLockAcquireOrWait`): it waits until the holder is done and
            // then re-checks, since that holder's sync likely covered it.
            match self.state.try_lock() {
                Ok(st) => break st,
                Err(TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    waited = true;
                    // SeqCst (⊇ Acquire, the WaitQueue contract): pairs with
                    // the stores made before notify_all in `write` and
                    // `poison`; seeing `flushed` also sees the synced data.
                    self.waiters.wait_until(|| {
                        !self.busy.load(Ordering::SeqCst)
                            || self.flushed.load(Ordering::SeqCst) >= target.0
                            || self.poisoned.load(Ordering::SeqCst)
                    });
                }
            }
        };
        // Relaxed: only a hint for waiters; one that misses it tries the
        // lock, fails and waits again, and the release below wakes it.
        self.busy.store(true, Ordering::Relaxed);
        let result = self.write_holding(&mut st, ring, segments, target, durable, more);
        drop(st);
        // SeqCst (⊇ Release): made before notify_all (WaitQueue contract),
        // after the Release stores of `written`/`flushed` under the lock.
        self.busy.store(false, Ordering::SeqCst);
        self.waiters.notify_all();
        result
    }

    fn write_holding(
        &self,
        st: &mut WriterState,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        durable: bool,
        more: impl FnOnce() -> Lsn,
    ) -> Result<Lsn, WriteError> {
        self.check()?;
        if durable && self.flushed() >= target {
            self.join_flush_group();
            return Ok(self.flushed());
        }
        if !durable && self.written() >= target {
            return Ok(self.written());
        }
        let target = if durable {
            // Acquire: pairs with the Release in request_flush.
            target
                .max(more())
                .max(Lsn(self.requested.load(Ordering::Acquire)))
        } else {
            target
        };
        let result = self.write_locked(st, ring, segments, target, durable);
        if result.is_err() {
            self.poison();
            // Close the file: after a failure nothing more goes through it.
            st.open = None;
        } else if durable {
            self.lead_flush_group(st);
        }
        result.map(|()| {
            if durable {
                self.flushed()
            } else {
                self.written()
            }
        })
    }

    fn write_locked(
        &self,
        st: &mut WriterState,
        ring: &BufferRing,
        segments: &dyn SegmentOpener,
        target: Lsn,
        durable: bool,
    ) -> Result<(), WriteError> {
        let mut pos = self.written();
        while pos < target {
            let segno = self.seg.segno(pos);
            let seg_end = self.seg.segment_start(segno + 1);
            let end = target.min(seg_end).min(ring.contiguous_end(pos));
            if st.open.as_ref().map(|o| o.segno) != Some(segno) {
                self.finish_segment(st)?;
                let file = segments.open_segment(segno, self.method)?;
                segments.entered_segment(segno);
                st.open = Some(OpenSegment {
                    segno,
                    file,
                    unsynced: false,
                });
            }
            let Some(open) = st.open.as_mut() else {
                unreachable!("a segment was opened just above")
            };
            // SAFETY: every insertion below `target` has finished (caller's
            // contract), and slots are not re-initialised before `written`
            // passes their page, which happens only below.
            let bytes = unsafe { ring.range(pos, end) };
            let offset = self.seg.offset(pos);
            let started = Instant::now();
            open.file
                .write_all_at(bytes, offset)
                .map_err(|source| WriteError::Write {
                    segno,
                    offset,
                    source,
                })?;
            st.stats.count_write(bytes.len() as u64);
            if self.method.sync_on_write() {
                st.stats.syncs += 1;
                st.stats.sync_time += started.elapsed();
            } else if self.method.syncs() {
                open.unsynced = true;
            }
            pos = end;
            // Release: publishes that the ring slots below `pos` are free
            // to re-initialise (the bytes are out of them).
            self.written.store(pos.0, Ordering::Release);
            if !self.method.syncs() {
                // Release: nothing more to do for durability with these
                // methods (OpenDatasync/OpenSync writes are durable, None
                // promises nothing).
                self.flushed.store(pos.0, Ordering::Release);
            }
            if pos == seg_end {
                // PostgreSQL fsyncs a segment as soon as it is finished.
                self.finish_segment(st)?;
            }
        }
        if durable {
            self.sync_open(st)?;
        }
        Ok(())
    }

    /// Syncs the open segment if it has unsynced writes, then publishes the
    /// written point as flushed.
    fn sync_open(&self, st: &mut WriterState) -> Result<(), WriteError> {
        if let Some(open) = st.open.as_mut() {
            if open.unsynced {
                let started = Instant::now();
                self.method
                    .sync(open.file.as_ref())
                    .map_err(|source| WriteError::Sync {
                        method: self.method,
                        segno: open.segno,
                        source,
                    })?;
                st.stats.syncs += 1;
                st.stats.sync_time += started.elapsed();
                open.unsynced = false;
            }
        }
        // Release: the bytes below `written` are durable now.
        self.flushed.store(self.written().0, Ordering::Release);
        Ok(())
    }

    /// Syncs and closes the open segment.
    fn finish_segment(&self, st: &mut WriterState) -> Result<(), WriteError> {
        self.sync_open(st)?;
        st.open = None;
        Ok(())
    }

    /// Counts a flush call that found its data durable without making it
    /// so itself as a member of the latest group flush.
    fn join_flush_group(&self) {
        // Relaxed: a statistic; being an RMW on the same counter as the
        // leader's swap, the member lands in exactly one group.
        self.group_members.fetch_add(1, Ordering::Relaxed);
    }

    /// Called by the writer-lock holder after its round made everything
    /// finished durable: closes the previous group and opens its own, with
    /// itself as the first member.
    fn lead_flush_group(&self, st: &mut WriterState) {
        if st.group_open {
            // Relaxed: a statistic; the swap is an RMW, so no member's
            // increment is lost between the old group and the new one.
            let previous = self.group_members.swap(1, Ordering::Relaxed);
            st.stats.count_flush_group(previous);
        } else {
            // The first group also takes the flush calls that found their
            // data durable before it (made so by a segment finished during
            // an eviction). Relaxed: a statistic, as above.
            self.group_members.fetch_add(1, Ordering::Relaxed);
            st.group_open = true;
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> WriterStats {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut stats = st.stats.clone();
        // Relaxed: a statistic; the latest group as it stands now.
        let latest = self.group_members.load(Ordering::Relaxed);
        if st.group_open {
            stats.count_flush_group(latest);
        } else {
            // Served before any group flush: members, but of no group yet.
            stats.flush_group_members += latest;
        }
        drop(st);
        // Relaxed: statistics.
        stats.flush_requests = self.flush_requests.load(Ordering::Relaxed);
        stats.flushes_covered_by_others = self.flushes_covered.load(Ordering::Relaxed);
        stats
    }
}
