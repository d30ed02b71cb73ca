//! When to checkpoint on one's own: after [`Config::max_wal_size`] bytes
//! of WAL since the redo point, or [`Config::checkpoint_timeout`] after the
//! last checkpoint if anything was inserted since (PostgreSQL: the
//! checkpointer's `CheckpointerMain` loop, `XLogCheckpointNeeded`).
//!
//! The policy is asked off the insert path: by the background writer after
//! each round, or, without one, by [`crate::Wal::flush`] after its sync.
//! Asking costs a mutex no inserter takes and a clock read. Every
//! checkpoint, automatic or not, goes through [`CheckpointPolicy::serial`],
//! so that two never interleave their control-file writes. No automatic
//! checkpoint runs while the log is being opened (its recovery report names
//! the redo point the caller replays from) or after its shutdown checkpoint.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::lsn::Lsn;
use crate::sync::{AtomicU64, Ordering};

/// Why a checkpoint was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The caller asked for it.
    Requested,
    /// [`Config::max_wal_size`] bytes since the redo point.
    Volume,
    /// [`Config::checkpoint_timeout`] since the last checkpoint.
    Time,
}

/// The automatic checkpoint policy of one log, and its counters.
#[derive(Debug)]
pub(crate) struct CheckpointPolicy {
    max_wal_size: Option<u64>,
    timeout: Option<Duration>,
    /// Held for the whole of every checkpoint.
    serial: Mutex<Last>,
    requested: AtomicU64,
    by_volume: AtomicU64,
    by_time: AtomicU64,
}

/// Checkpoints taken, by cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) requested: u64,
    pub(crate) by_volume: u64,
    pub(crate) by_time: u64,
}

/// The last checkpoint, as the policy measures from it.
#[derive(Debug)]
pub(crate) struct Last {
    /// Its redo point.
    pub(crate) redo: Lsn,
    /// The end of its record: nothing inserted since if the insert
    /// position is still there.
    pub(crate) end: Lsn,
    /// When it was taken (or the log opened).
    pub(crate) at: Instant,
    /// Whether automatic checkpoints may run.
    pub(crate) phase: Phase,
}

/// Where the log is in its life, as automatic checkpoints see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Being created or opened: none yet.
    Opening,
    /// Open: they may run.
    Open,
    /// The shutdown checkpoint was taken: none may follow.
    Closed,
}

impl CheckpointPolicy {
    /// The policy `config` asks for, measuring from a redo point `redo`
    /// and a log that ends at `end` now.
    pub(crate) fn new(config: &Config, redo: Lsn, end: Lsn) -> Self {
        CheckpointPolicy {
            max_wal_size: config.max_wal_size,
            timeout: config.checkpoint_timeout,
            serial: Mutex::new(Last {
                redo,
                end,
                at: Instant::now(),
                phase: Phase::Opening,
            }),
            requested: AtomicU64::new(0),
            by_volume: AtomicU64::new(0),
            by_time: AtomicU64::new(0),
        }
    }

    /// True if the policy never fires.
    pub(crate) fn is_off(&self) -> bool {
        self.max_wal_size.is_none() && self.timeout.is_none()
    }

    /// The lock every checkpoint holds while it runs, with the last one.
    pub(crate) fn serial(&self) -> MutexGuard<'_, Last> {
        self.serial.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, if no checkpoint is running: an automatic checkpoint is
    /// not taken behind one that is.
    pub(crate) fn try_serial(&self) -> Option<MutexGuard<'_, Last>> {
        match self.serial.try_lock() {
            Ok(last) => Some(last),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Whether a checkpoint is due with the log at `insert` at time `now`,
    /// and why (volume first).
    pub(crate) fn due(&self, last: &Last, insert: Lsn, now: Instant) -> Option<Cause> {
        if last.phase != Phase::Open {
            return None;
        }
        let volume = insert.0.saturating_sub(last.redo.0);
        if self.max_wal_size.is_some_and(|max| volume >= max) {
            return Some(Cause::Volume);
        }
        let quiet = insert <= last.end;
        match self.timeout {
            Some(t) if !quiet && now.saturating_duration_since(last.at) >= t => Some(Cause::Time),
            _ => None,
        }
    }

    /// Counts a checkpoint taken for `cause`.
    pub(crate) fn count(&self, cause: Cause) {
        let counter = match cause {
            Cause::Requested => &self.requested,
            Cause::Volume => &self.by_volume,
            Cause::Time => &self.by_time,
        };
        // Relaxed: statistics.
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Checkpoints taken, by cause.
    pub(crate) fn counts(&self) -> Counts {
        // Relaxed: statistics.
        Counts {
            requested: self.requested.load(Ordering::Relaxed),
            by_volume: self.by_volume.load(Ordering::Relaxed),
            by_time: self.by_time.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max_wal_size: Option<u64>, timeout: Option<Duration>) -> CheckpointPolicy {
        let config = Config {
            max_wal_size,
            checkpoint_timeout: timeout,
            ..Config::default()
        };
        CheckpointPolicy::new(&config, Lsn(1000), Lsn(2000))
    }

    #[test]
    fn volume_counts_from_the_redo_point() {
        let p = policy(Some(500), None);
        let mut last = p.serial();
        last.phase = Phase::Open;
        let now = last.at;
        assert_eq!(p.due(&last, Lsn(1499), now), None);
        assert_eq!(p.due(&last, Lsn(1500), now), Some(Cause::Volume));
    }

    #[test]
    fn time_fires_only_after_the_timeout_and_new_records() {
        let p = policy(None, Some(Duration::from_secs(10)));
        let mut last = p.serial();
        last.phase = Phase::Open;
        let later = last.at + Duration::from_secs(10);
        assert_eq!(
            p.due(&last, Lsn(3000), later - Duration::from_millis(1)),
            None
        );
        assert_eq!(p.due(&last, Lsn(3000), later), Some(Cause::Time));
        // Nothing inserted since the last checkpoint's record: nothing to do.
        assert_eq!(p.due(&last, Lsn(2000), later), None);
    }

    #[test]
    fn nothing_is_due_while_opening_after_the_shutdown_checkpoint_or_when_off() {
        let p = policy(Some(1), Some(Duration::from_millis(1)));
        let mut last = p.serial();
        let later = last.at + Duration::from_secs(1);
        assert_eq!(p.due(&last, Lsn(u64::MAX), later), None, "while opening");
        last.phase = Phase::Open;
        assert_eq!(p.due(&last, Lsn(u64::MAX), later), Some(Cause::Volume));
        last.phase = Phase::Closed;
        assert_eq!(p.due(&last, Lsn(u64::MAX), later), None);
        assert!(policy(None, None).is_off());
    }
}
