//! Segment files as the writer sees them: opened on demand, created
//! (prepared as [`PrepareFor`] says) when missing, and the next
//! `segments_ahead` prepared ahead of need by a background thread
//! (PostgreSQL: `XLogFileInit`, `PreallocXlogFiles`).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;

use crate::segment::{
    FileOp, IoFailure, OpenOptions, PrepareFor, SegmentError, SegmentFiles, StorageFile,
};
use crate::sync::{AtomicBool, AtomicU64, Ordering};

use super::{SegmentOpener, Writer};

/// Serialises "does segment N exist? create it" between the writer, the
/// preallocator and checkpoint recycling, so no name is created twice.
#[derive(Debug)]
pub(crate) struct SegmentSupply {
    files: SegmentFiles,
    /// Held while creating or renaming segments (all but the preallocator's
    /// filling of a temporary file, which is not a segment yet).
    creating: Mutex<Creating>,
    /// Signalled when the preallocator stops preparing a segment, and
    /// after a checkpoint's recycling.
    prepared: Condvar,
    /// Set when a checkpoint recycled a segment to the name the
    /// preallocator is preparing ([`Creating::preparing`]): the fill stops
    /// at its next write. Set and reset under `creating`.
    abandon: AtomicBool,
    prealloc: Arc<PreallocState>,
    /// How new segments are prepared.
    how: PrepareFor,
    /// Segments kept ready after the one being written.
    ahead: u64,
    counts: SupplyCounters,
}

/// What [`SegmentSupply::creating`] guards.
#[derive(Debug, Default)]
struct Creating {
    /// The first failed sync of creating or renaming segments, after which
    /// no segment is trusted to be durable.
    failed: Option<FailedSync>,
    /// The segment the preallocator is filling under its temporary name,
    /// without the lock: the writer waits for it rather than create it too.
    preparing: Option<u64>,
}

/// How the writer got its segments, and what the preallocator made.
#[derive(Debug, Default)]
struct SupplyCounters {
    found_ready: AtomicU64,
    created_on_write: AtomicU64,
    prepared_ahead: AtomicU64,
    abandoned: AtomicU64,
}

/// How the writer got its segments since the log was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SupplyStats {
    /// Segments the writer entered and found existing (prepared ahead,
    /// recycled, or left by an earlier run).
    pub(crate) found_ready: u64,
    /// Segments the writer had to create itself, on the insert path.
    pub(crate) created_on_write: u64,
    /// Segments the preallocator created ahead of need.
    pub(crate) prepared_ahead: u64,
    /// Preparations the preallocator stopped: a checkpoint recycled a
    /// segment to the name.
    pub(crate) abandoned: u64,
}

#[derive(Debug, Default)]
struct PreallocRequest {
    /// Segment the writer entered last: the `ahead` after it should exist.
    /// 0 when there is nothing (more) to do: segment 0 is never written.
    entered: u64,
    stop: bool,
}

#[derive(Debug, Default)]
struct PreallocState {
    request: Mutex<PreallocRequest>,
    wake: Condvar,
}

/// A failed segment or directory sync, kept to be reported again.
#[derive(Debug)]
struct FailedSync {
    op: FileOp,
    path: std::path::PathBuf,
    kind: std::io::ErrorKind,
    message: String,
}

impl FailedSync {
    fn from(e: &IoFailure) -> Self {
        FailedSync {
            op: e.op,
            path: e.path.clone(),
            kind: e.error.kind(),
            message: e.error.to_string(),
        }
    }

    /// The failure again, saying it is an earlier one.
    fn error(&self) -> SegmentError {
        let cause = format!("{} (an earlier failure; reopen the log)", self.message);
        IoFailure::new(self.op, &self.path, std::io::Error::new(self.kind, cause)).into()
    }
}

/// The preallocator thread; stopped and joined on drop.
#[derive(Debug)]
pub(crate) struct Preallocator {
    state: Arc<PreallocState>,
    thread: Option<JoinHandle<()>>,
}

impl SegmentSupply {
    /// The supply of `files`, preparing new segments as `how` says and
    /// keeping `ahead` ready after the one being written.
    pub(crate) fn new(files: SegmentFiles, how: PrepareFor, ahead: u64) -> Self {
        SegmentSupply {
            files,
            creating: Mutex::default(),
            prepared: Condvar::new(),
            abandon: AtomicBool::new(false),
            prealloc: Arc::default(),
            how,
            ahead,
            counts: SupplyCounters::default(),
        }
    }

    pub(crate) fn files(&self) -> &SegmentFiles {
        &self.files
    }

    /// Segments kept ready after the one being written.
    pub(crate) fn ahead(&self) -> u64 {
        self.ahead
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> SupplyStats {
        let c = &self.counts;
        // Relaxed: statistics.
        SupplyStats {
            found_ready: c.found_ready.load(Ordering::Relaxed),
            created_on_write: c.created_on_write.load(Ordering::Relaxed),
            prepared_ahead: c.prepared_ahead.load(Ordering::Relaxed),
            abandoned: c.abandoned.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Creating> {
        self.creating.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// For the writer: creates segment `segno` unless it exists, waiting
    /// first if the preallocator is preparing it, and counts which it was.
    /// A checkpoint may recycle a segment to the name being prepared (the
    /// temporary file carries no name yet): the writer then enters that
    /// one at once, and the preparation is abandoned at its next write
    /// ([`SegmentSupply::exclusively`]), its file removed.
    fn ensure_for_writer(&self, segno: u64) -> Result<(), SegmentError> {
        let mut state = self.lock();
        while state.preparing == Some(segno)
            && !self.locked(&mut state, |files| files.exists(segno))?
        {
            state = self.prepared.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let c = &self.counts;
        self.locked(&mut state, |files| {
            let counter = if files.exists(segno)? {
                &c.found_ready
            } else {
                files.create(segno, &self.how)?;
                &c.created_on_write
            };
            // Relaxed: statistics; the lock held orders it with the files.
            counter.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    /// For the preallocator: prepares segment `segno` unless it exists.
    /// The file is filled and synced under its temporary name without the
    /// lock, so that the writer, entering a segment that exists, does not
    /// wait for the preparation of a later one; only the rename and the
    /// directory sync hold it. A segment a checkpoint recycled to that name
    /// in the meantime is kept: the fill stops at its next write
    /// ([`SegmentSupply::exclusively`]) and the prepared file is removed.
    fn prepare_ahead(&self, segno: u64) -> Result<(), SegmentError> {
        {
            let mut state = self.lock();
            if self.locked(&mut state, |files| files.exists(segno))? {
                return Ok(());
            }
            state.preparing = Some(segno);
            // Relaxed: written under `creating` only, which orders it
            // with `preparing`; the fill's reads without the lock are
            // hints (a late one costs the rest of the fill, nothing else).
            self.abandon.store(false, Ordering::Relaxed);
        }
        // Relaxed: a hint, see above.
        let abandoned = || self.abandon.load(Ordering::Relaxed);
        let prepared = self.files.prepare(segno, &self.how, &abandoned);
        let mut state = self.lock();
        let installed = match prepared {
            // Under the lock the flag is exact: the name is taken, and the
            // fill's file removed; even a failed sync of it does not matter.
            Err(_) if abandoned() => {
                // Relaxed: statistics.
                self.counts.abandoned.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Ok(()) => self.locked(&mut state, |files| match files.install(segno) {
                Ok(()) => {
                    // Relaxed: statistics; the lock held orders it with the files.
                    self.counts.prepared_ahead.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Err(SegmentError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            }),
            Err(e) => Err(record_sync_failure(&mut state, e)),
        };
        state.preparing = None;
        self.prepared.notify_all();
        installed
    }

    /// Makes the `ahead` segments after `entered` exist, lowest first (so
    /// no prepared segment ever follows a missing one); stops at the first
    /// failure, or when `stop` says so.
    fn prepare_after(&self, entered: u64, stop: impl Fn() -> bool) -> Result<(), SegmentError> {
        for segno in (1..=self.ahead).filter_map(|n| entered.checked_add(n)) {
            if stop() {
                break;
            }
            self.prepare_ahead(segno)?;
        }
        Ok(())
    }

    /// Runs `f` with segment creation held off (checkpoint recycling).
    ///
    /// After a sync failed in here (a segment's file or the directory),
    /// whether the segments' names are durable is unknown, and a segment
    /// whose name can vanish in a crash must never receive acknowledged
    /// WAL: that failure is returned from then on, without running `f`
    /// (PostgreSQL PANICs on a failed fsync).
    ///
    /// If `f` recycled a segment to the name the preallocator is
    /// preparing, the preparation is abandoned, and a writer waiting for
    /// it is woken to enter that segment at once.
    pub(crate) fn exclusively<T>(
        &self,
        f: impl FnOnce(&SegmentFiles) -> Result<T, SegmentError>,
    ) -> Result<T, SegmentError> {
        let mut state = self.lock();
        let done = self.locked(&mut state, f);
        if let Some(segno) = state.preparing {
            if matches!(self.files.exists(segno), Ok(true)) {
                // Relaxed: under `creating` (see `prepare_ahead`).
                self.abandon.store(true, Ordering::Relaxed);
            }
        }
        drop(state);
        self.prepared.notify_all();
        done
    }

    /// [`SegmentSupply::exclusively`] with the lock already held.
    fn locked<T>(
        &self,
        state: &mut Creating,
        f: impl FnOnce(&SegmentFiles) -> Result<T, SegmentError>,
    ) -> Result<T, SegmentError> {
        if let Some(failed) = &state.failed {
            return Err(failed.error());
        }
        f(&self.files).map_err(|e| record_sync_failure(state, e))
    }
}

/// Keeps `e` in `state` if it is a failed sync; returns it.
fn record_sync_failure(state: &mut Creating, e: SegmentError) -> SegmentError {
    if let SegmentError::Io(failure) = &e {
        if is_sync_failure(&e) && state.failed.is_none() {
            state.failed = Some(FailedSync::from(failure));
        }
    }
    e
}

/// True for a failed file or directory sync.
pub(crate) fn is_sync_failure(e: &SegmentError) -> bool {
    matches!(e, SegmentError::Io(f) if matches!(f.op, FileOp::Sync | FileOp::SyncDir))
}

impl SegmentSupply {
    /// Starts the preallocator thread for the supply and writer that
    /// `parts` finds in `owner`; it stops when `owner` is dropped.
    pub(crate) fn start_preallocator<T: Send + Sync + 'static>(
        owner: &Arc<T>,
        parts: fn(&T) -> (&SegmentSupply, &Writer),
    ) -> std::io::Result<Preallocator> {
        let state = parts(owner).0.prealloc.clone();
        let owner = Arc::downgrade(owner);
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("walden-prealloc".into())
            .spawn(move || loop {
                let entered = {
                    let mut req = thread_state
                        .request
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    loop {
                        if req.stop {
                            return;
                        }
                        if req.entered != 0 {
                            break std::mem::take(&mut req.entered);
                        }
                        req = thread_state
                            .wake
                            .wait(req)
                            .unwrap_or_else(|e| e.into_inner());
                    }
                };
                let Some(owner) = owner.upgrade() else {
                    return;
                };
                let (supply, writer) = parts(&owner);
                let stopping = || {
                    thread_state
                        .request
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .stop
                };
                // A failure here (ENOSPC, say) is not fatal: the writer
                // creates the segment itself when it needs it and reports
                // the error then. A failed sync is: see `exclusively`.
                if let Err(e) = supply.prepare_after(entered, stopping) {
                    if is_sync_failure(&e) {
                        writer.poison();
                    }
                }
            })?;
        Ok(Preallocator {
            state,
            thread: Some(thread),
        })
    }
}

impl SegmentOpener for SegmentSupply {
    fn open_segment(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        self.ensure_for_writer(segno)?;
        self.files.open(segno, opts)
    }

    fn open_again(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        self.files.open(segno, opts)
    }

    fn open_if_ready(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Option<Box<dyn StorageFile>>, SegmentError> {
        // Not waited for: while the lock is busy (a rename and directory
        // sync, a checkpoint's recycling) the segment counts as not ready.
        let mut state = match self.creating.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        if state.preparing == Some(segno)
            || !self.locked(&mut state, |files| files.exists(segno))?
        {
            return Ok(None);
        }
        // Opened under the lock: no checkpoint renames a segment meanwhile.
        self.files.open(segno, opts).map(Some)
    }

    fn entered_segment(&self, segno: u64, opened_ahead: bool) {
        tracing::debug!(segno, opened_ahead, "writer entered segment");
        if opened_ahead {
            // Relaxed: statistics. It existed when it was opened ahead.
            self.counts.found_ready.fetch_add(1, Ordering::Relaxed);
        }
        self.ask_preallocator(segno);
    }
}

impl SegmentSupply {
    /// For a log just opened, whose writer will write segment `segno`
    /// next: asks the preallocator for the `ahead` segments after it, and
    /// for `segno` itself first if it is missing (as if the writer had
    /// entered the one before). Recovery removes the segments past the
    /// recovered end (and the end may fall at the very start of a
    /// segment), so without this the first commits after an open would
    /// create the next segment on their own path.
    pub(crate) fn prepare_for_open(&self, segno: u64) {
        // An error here is the writer's to report when it opens the file.
        let missing = !matches!(self.files.exists(segno), Ok(true));
        self.ask_preallocator(if missing {
            segno.saturating_sub(1)
        } else {
            segno
        });
    }

    /// Asks the preallocator to make the `ahead` segments after `entered`
    /// exist (nothing without a preallocator, or for segment 0).
    fn ask_preallocator(&self, entered: u64) {
        if self.ahead == 0 || entered == 0 {
            return;
        }
        let mut req = self
            .prealloc
            .request
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        req.entered = req.entered.max(entered);
        self.prealloc.wake.notify_one();
    }
}

impl Drop for Preallocator {
    fn drop(&mut self) {
        self.state
            .request
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop = true;
        self.state.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
