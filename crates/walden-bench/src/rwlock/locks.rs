//! The reader-writer locks compared by the rwlock workload, behind one trait.

use std::sync::PoisonError;

use crossbeam_utils::sync::ShardedLock;
use serde::Serialize;
use walden::internals::ReadBiasedLock;

/// The locks the workload compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockKind {
    /// `walden::internals::ReadBiasedLock` with its default 16 partitions.
    ReadBiased,
    /// `std::sync::RwLock`: one lock word (futex-based on Linux).
    Std,
    /// `parking_lot::RwLock`: one lock word, writer-fair parking.
    ParkingLot,
    /// `crossbeam_utils::sync::ShardedLock`: 8 padded `RwLock` shards.
    CrossbeamSharded,
}

impl LockKind {
    /// Every lock, in the order results are reported.
    pub const ALL: [LockKind; 4] = [
        LockKind::ReadBiased,
        LockKind::Std,
        LockKind::ParkingLot,
        LockKind::CrossbeamSharded,
    ];

    /// The name shown in tables.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::ReadBiased => "walden ReadBiasedLock",
            LockKind::Std => "std RwLock",
            LockKind::ParkingLot => "parking_lot RwLock",
            LockKind::CrossbeamSharded => "crossbeam ShardedLock",
        }
    }
}

/// A reader-writer lock as the workload uses it: a short closure under a
/// shared or an exclusive lock.
pub(super) trait BenchLock<T>: Sync {
    /// Runs `f` under a read lock.
    fn with_read<R>(&self, f: impl FnOnce(&T) -> R) -> R;
    /// Runs `f` under a write lock.
    fn with_write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

impl<T: Send + Sync> BenchLock<T> for ReadBiasedLock<T> {
    fn with_read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.read())
    }

    fn with_write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.write())
    }
}

// The workload never panics under a lock; a poisoned std or crossbeam lock
// would still hold consistent data, so poisoning is ignored.
impl<T: Send + Sync> BenchLock<T> for std::sync::RwLock<T> {
    fn with_read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn with_write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.write().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<T: Send + Sync> BenchLock<T> for parking_lot::RwLock<T> {
    fn with_read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.read())
    }

    fn with_write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.write())
    }
}

impl<T: Send + Sync> BenchLock<T> for ShardedLock<T> {
    fn with_read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn with_write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.write().unwrap_or_else(PoisonError::into_inner))
    }
}
