//! The sync line: the writer's syncs, up to [`MAX_SLOTS`] in flight at
//! once ([`crate::Config::concurrent_syncs`]), published in the order they
//! started.
//!
//! Contract. Each sync covers a point (`upto`): everything below it was
//! written to its file, or to an earlier segment already synced, before
//! the sync started. The durable point (`flushed`) advances to a sync's
//! cover only once that sync and every sync started before it have
//! returned without error; a failed sync poisons the log, and from then on
//! `flushed` never moves and every waiter and later caller gets
//! [`Stopped::Poisoned`]. So nothing is reported durable that a successful
//! sync did not cover, however the syncs in flight finish.
//!
//! Each sync in flight holds a slot until it is published; sync `n` (in
//! start order) takes slot `n % slots`, which is free once sync `n - slots`
//! is published. The caller syncs through the slot's own open file
//! description of the segment: Linux reports a write-back error once per
//! description (`errseq`), so two syncs in flight on one description could
//! see the error reported to the other and return success for pages whose
//! write-back failed. With one slot this is PostgreSQL's rule, one sync at
//! a time (`WALWriteLock` held across `issue_xlog_fsync`). docs/io.md
//! ("Two syncs in flight on one file").
//!
//! A caller whose `upto` a sync in flight covers already waits for that
//! sync instead of starting another.

#[cfg(all(test, loom))]
mod loom_model;

use super::lock;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, MutexGuard, Ordering};

/// The most syncs in flight at once.
pub(crate) const MAX_SLOTS: usize = 2;

/// How a call to [`SyncLine::run`] made its `upto` durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It was durable already, or another sync covered it.
    Covered,
    /// Its own sync did; `overlapped` if another sync was in flight when
    /// it started.
    Synced {
        /// Another sync was in flight when this one started.
        overlapped: bool,
    },
}

/// Why a call to [`SyncLine::run`] made nothing durable.
#[derive(Debug)]
pub(crate) enum Stopped<E> {
    /// The log is poisoned (by this line or by another failure).
    Poisoned,
    /// Its own sync failed; the log is poisoned now.
    Failed(E),
}

/// The syncs in flight (see the module docs).
#[derive(Debug, Default)]
struct Line {
    /// Syncs started so far: the next one's number.
    next: u64,
    /// Syncs published so far: every sync numbered below is published.
    published: u64,
    /// Each slot's sync in flight (`published <= n < next`, at `n % slots`):
    /// its cover, and whether it has returned.
    covers: [u64; MAX_SLOTS],
    returned: [bool; MAX_SLOTS],
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct SyncLine {
    line: Mutex<Line>,
    /// Signalled when a sync is published or the log is poisoned.
    changed: Condvar,
    slots: usize,
}

impl SyncLine {
    /// A line with `slots` syncs in flight at most (1 or [`MAX_SLOTS`]).
    pub(crate) fn new(slots: usize) -> Self {
        assert!((1..=MAX_SLOTS).contains(&slots), "{slots} sync slots");
        SyncLine {
            line: Mutex::new(Line::default()),
            changed: Condvar::new(),
            slots,
        }
    }

    /// How many syncs may be in flight at once.
    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    /// Makes everything below `upto` durable: returns at once if `flushed`
    /// is there; waits for a sync in flight that covers it; else, once a
    /// slot is free, calls `sync(slot)` outside the line's lock, and when
    /// this sync and every earlier one have returned without error,
    /// advances `flushed` to `upto` (see the module docs). A failing `sync`
    /// sets `poisoned` before anyone can be told it is durable.
    pub(crate) fn run<E>(
        &self,
        upto: u64,
        flushed: &AtomicU64,
        poisoned: &AtomicBool,
        sync: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<Ran, Stopped<E>> {
        let mut line = lock(&self.line);
        let n = loop {
            // Under the line's lock, Acquire: pairs with the SeqCst store
            // of a failing sync or `Writer::poison`, both of which take this
            // lock after it; so a poison set before the lock is seen here.
            if poisoned.load(Ordering::Acquire) {
                return Err(Stopped::Poisoned);
            }
            // Acquire: pairs with the Release RMW of the publication below.
            if flushed.load(Ordering::Acquire) >= upto {
                return Ok(Ran::Covered);
            }
            let in_flight = line.published..line.next;
            if let Some(n) = in_flight
                .clone()
                .find(|&n| line.covers[self.slot(n)] >= upto)
            {
                // That sync started after `upto` was written: wait for it.
                return if self.wait_published(line, n, poisoned) {
                    Ok(Ran::Covered)
                } else {
                    Err(Stopped::Poisoned)
                };
            }
            if in_flight.end - in_flight.start < self.slots as u64 {
                break in_flight.end;
            }
            line = self.wait(line);
        };
        let slot = self.slot(n);
        let overlapped = n > line.published;
        line.next = n + 1;
        line.covers[slot] = upto;
        line.returned[slot] = false;
        drop(line);
        let result = sync(slot);
        if result.is_err() {
            // SeqCst (⊇ Release, see the load above): set before the line's
            // lock is taken below, so no publication after it misses it.
            poisoned.store(true, Ordering::SeqCst);
        }
        let mut line = lock(&self.line);
        line.returned[slot] = true;
        if mutant::active(Mutant::SyncPublishedOutOfOrder) && result.is_ok() {
            // Release: as below (the mutant skips only the order).
            flushed.fetch_max(upto, Ordering::Release);
        }
        // Under the lock, Acquire: as above; set by any failure, this one's
        // or another sync's, before its holder took the lock.
        while !poisoned.load(Ordering::Acquire)
            && line.published < line.next
            && line.returned[self.slot(line.published)]
        {
            let cover = line.covers[self.slot(line.published)];
            // Release: the bytes below `cover` are durable now (this sync and
            // every earlier one returned). An RMW, so `flushed` never goes
            // back.
            flushed.fetch_max(cover, Ordering::Release);
            line.published += 1;
        }
        self.changed.notify_all();
        if let Err(e) = result {
            return Err(Stopped::Failed(e));
        }
        if self.wait_published(line, n, poisoned) {
            Ok(Ran::Synced { overlapped })
        } else {
            Err(Stopped::Poisoned)
        }
    }

    /// True while every slot holds a sync in flight.
    pub(crate) fn full(&self) -> bool {
        let line = lock(&self.line);
        line.next - line.published >= self.slots as u64
    }

    /// Waits until a slot is free or the log is poisoned.
    pub(crate) fn wait_for_a_slot(&self, poisoned: &AtomicBool) {
        let mut line = lock(&self.line);
        // Acquire: as in `run`.
        while line.next - line.published >= self.slots as u64 && !poisoned.load(Ordering::Acquire) {
            line = self.wait(line);
        }
    }

    /// After `poisoned` is set: waits out a publication in progress and
    /// wakes every waiter; once this returns `flushed` never advances
    /// again (every publication checks `poisoned` under the lock).
    pub(crate) fn close(&self) {
        let line = lock(&self.line);
        self.changed.notify_all();
        drop(line);
    }

    fn slot(&self, n: u64) -> usize {
        (n % self.slots as u64) as usize
    }

    /// Waits, holding `line`, until sync `n` is published (true) or the
    /// log is poisoned (false); releases the lock either way.
    fn wait_published(
        &self,
        mut line: MutexGuard<'_, Line>,
        n: u64,
        poisoned: &AtomicBool,
    ) -> bool {
        loop {
            // Acquire: as in `run`; checked first, as a poisoned line
            // publishes nothing more.
            if poisoned.load(Ordering::Acquire) {
                return false;
            }
            if line.published > n {
                return true;
            }
            line = self.wait(line);
        }
    }

    fn wait<'a>(&self, line: MutexGuard<'a, Line>) -> MutexGuard<'a, Line> {
        self.changed.wait(line).unwrap_or_else(|e| e.into_inner())
    }
}
