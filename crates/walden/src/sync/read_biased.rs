//! A reader-writer lock whose readers touch one cache line of several.
//!
//! PostgreSQL: `ReadBiasedLWLock` (proposed for `ProcArrayLock`, seed 004,
//! not committed upstream). See [`ReadBiasedLock`].

mod sub_lock;

#[cfg(all(test, loom))]
mod loom_model;
#[cfg(all(test, shuttle))]
mod shuttle_model;

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::ops::{Deref, DerefMut};

use crossbeam_utils::CachePadded;

use sub_lock::SubLock;

/// Number of partitions of [`ReadBiasedLock::new`].
///
/// PostgreSQL: `READ_BIASED_LOCK_STATE_COUNT`.
pub const DEFAULT_PARTITIONS: usize = 16;

/// A reader-writer lock partitioned over cache-line-padded sub-locks, so
/// that readers on different partitions never write to the same cache line.
///
/// PostgreSQL: `ReadBiasedLWLock`.
///
/// # The trade
///
/// A reader takes only its own thread's partition, with one atomic RMW to
/// enter and one to leave, on a line it shares only with the threads mapped
/// to the same partition. A writer takes every partition, in index order,
/// then waits for the readers of each to leave: it touches N lines and waits
/// for the slowest reader. Use it where reads are far more frequent than
/// writes (seed 004: 93.5 % of `ProcArrayLock` acquisitions were shared);
/// where writes are frequent, a single-word lock is cheaper.
///
/// # Contract
///
/// - Any number of readers or exactly one writer is inside at a time; a
///   reader sees every change made by writers that left before it entered.
/// - Partitions are chosen per thread, round-robin in the order threads first
///   read any `ReadBiasedLock`; a read guard remembers its partition and
///   releases that one. Guards are `!Send`, like `std`'s.
/// - Writers are not starved by readers: once a writer has claimed a
///   partition, no new reader enters it, so a writer waits only for other
///   writers and for the readers already inside. Between writers there is no
///   order (whoever claims partition 0 first goes first), and readers can
///   wait behind a continuous stream of writers: the lock prefers writers.
/// - No poisoning, as in `parking_lot` (not `std`): a panic while a guard is
///   held releases the lock during unwinding, later callers see the data as
///   the panicking thread left it, and `read`/`write` return guards, not
///   `LockResult`s.
/// - Re-entrance deadlocks: `write` while the same thread holds a guard, and
///   a second `read` while holding one if a writer arrived in between.
/// - Waiting threads spin briefly, then park.
pub struct ReadBiasedLock<T: ?Sized> {
    partitions: Box<[CachePadded<SubLock>]>,
    value: UnsafeCell<T>,
}

// SAFETY: the lock owns its `T`; sending it sends the `T`.
unsafe impl<T: ?Sized + Send> Send for ReadBiasedLock<T> {}
// SAFETY: `&ReadBiasedLock` hands out `&T` to several threads at once (needs
// `T: Sync`) and `&mut T` to one thread at a time (needs `T: Send`), as
// `std::sync::RwLock` does.
unsafe impl<T: ?Sized + Send + Sync> Sync for ReadBiasedLock<T> {}

/// Shared access to a [`ReadBiasedLock`]'s value; leaves the reader's
/// partition on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct ReadBiasedReadGuard<'a, T: ?Sized> {
    lock: &'a ReadBiasedLock<T>,
    partition: usize,
    /// `!Send`: a read lock is released by the thread that took it.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for ReadBiasedReadGuard<'_, T> {}

/// Exclusive access to a [`ReadBiasedLock`]'s value; releases every
/// partition on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct ReadBiasedWriteGuard<'a, T: ?Sized> {
    lock: &'a ReadBiasedLock<T>,
    /// `!Send`: a write lock is released by the thread that took it.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for ReadBiasedWriteGuard<'_, T> {}

impl<T> ReadBiasedLock<T> {
    /// An unlocked lock over [`DEFAULT_PARTITIONS`] partitions.
    pub fn new(value: T) -> Self {
        const DEFAULT: NonZeroUsize = match NonZeroUsize::new(DEFAULT_PARTITIONS) {
            Some(n) => n,
            None => panic!("DEFAULT_PARTITIONS is zero"),
        };
        Self::with_partitions(DEFAULT, value)
    }

    /// An unlocked lock over `partitions` partitions. More partitions spread
    /// readers over more cache lines and make every write slower (each one
    /// costs a cache line of memory).
    pub fn with_partitions(partitions: NonZeroUsize, value: T) -> Self {
        ReadBiasedLock {
            partitions: (0..partitions.get())
                .map(|_| CachePadded::new(SubLock::default()))
                .collect(),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock and returns its value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> ReadBiasedLock<T> {
    /// Number of partitions (sub-locks).
    pub fn partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Takes shared access on the calling thread's partition, waiting while
    /// a writer owns or claims that partition.
    ///
    /// PostgreSQL: `ReadBiasedLWLockAcquire(lock, LW_SHARED)`.
    pub fn read(&self) -> ReadBiasedReadGuard<'_, T> {
        self.read_in(self.home_partition())
    }

    /// Takes shared access if no writer owns or claims the calling thread's
    /// partition; never waits.
    ///
    /// PostgreSQL: `ReadBiasedLWLockConditionalAcquire(lock, LW_SHARED)`.
    pub fn try_read(&self) -> Option<ReadBiasedReadGuard<'_, T>> {
        let partition = self.home_partition();
        self.partitions[partition]
            .try_read()
            .then(|| self.read_guard(partition))
    }

    /// Takes exclusive access: claims every partition in index order (new
    /// readers wait from the moment their partition is claimed), then waits
    /// for the readers already inside to leave.
    ///
    /// PostgreSQL: `ReadBiasedLWLockAcquire(lock, LW_EXCLUSIVE)`.
    pub fn write(&self) -> ReadBiasedWriteGuard<'_, T> {
        for partition in self.partitions.iter() {
            partition.claim_for_writer();
        }
        for partition in self.partitions.iter() {
            partition.wait_for_readers();
        }
        self.write_guard()
    }

    /// Takes exclusive access if no reader or writer holds any partition;
    /// never waits. On failure the partitions taken so far are released.
    ///
    /// PostgreSQL: `ReadBiasedLWLockConditionalAcquire(lock, LW_EXCLUSIVE)`.
    pub fn try_write(&self) -> Option<ReadBiasedWriteGuard<'_, T>> {
        for (taken, partition) in self.partitions.iter().enumerate() {
            if !partition.try_write() {
                self.partitions[..taken]
                    .iter()
                    .for_each(|partition| partition.release_write());
                return None;
            }
        }
        Some(self.write_guard())
    }

    /// The value, through exclusive access to the lock itself: no locking.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// Shared access on a given partition; `read` passes the thread's own,
    /// models pass chosen ones.
    fn read_in(&self, partition: usize) -> ReadBiasedReadGuard<'_, T> {
        self.partitions[partition].read();
        self.read_guard(partition)
    }

    /// The guard of a read lock just taken on `partition`.
    fn read_guard(&self, partition: usize) -> ReadBiasedReadGuard<'_, T> {
        ReadBiasedReadGuard {
            lock: self,
            partition,
            _not_send: PhantomData,
        }
    }

    /// The guard of a write lock just taken on every partition.
    fn write_guard(&self) -> ReadBiasedWriteGuard<'_, T> {
        ReadBiasedWriteGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// The calling thread's partition of this lock.
    fn home_partition(&self) -> usize {
        let partitions = self.partitions.len();
        // A mask where it can (the default 16): a division costs more than
        // the rest of the lookup.
        if partitions.is_power_of_two() {
            thread_number() & (partitions - 1)
        } else {
            thread_number() % partitions
        }
    }
}

/// The calling thread's number: 0, 1, 2, ... in the order threads first
/// ask, so that consecutive threads read on different partitions.
#[inline]
fn thread_number() -> usize {
    /// The number of a thread that has not asked yet.
    const UNASSIGNED: usize = usize::MAX;
    // A plain std atomic rather than the `crate::sync` shim: it must be a
    // `static`, and it synchronises nothing (it only spreads threads), so
    // there is nothing for loom to model; loom models pick partitions.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        // Const-initialised and without a destructor: reading it is one
        // thread-local load, with no lazy-initialisation state to check.
        static NUMBER: Cell<usize> = const { Cell::new(UNASSIGNED) };
    }
    NUMBER.with(|number| {
        if number.get() == UNASSIGNED {
            // Relaxed: only uniqueness of the numbers matters, which the
            // RMW gives under any ordering.
            number.set(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }
        number.get()
    })
}

impl<T: Default> Default for ReadBiasedLock<T> {
    /// An unlocked lock over [`DEFAULT_PARTITIONS`] partitions holding `T::default()`.
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReadBiasedLock<T> {
    /// Shows the value if a read lock can be had without waiting.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ReadBiasedLock");
        out.field("partitions", &self.partitions());
        match self.try_read() {
            Some(guard) => out.field("value", &&*guard),
            None => out.field("value", &format_args!("<locked>")),
        };
        out.finish()
    }
}

impl<T: ?Sized> Deref for ReadBiasedReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds a read lock: no writer is inside until it
        // drops, so shared references are sound.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for ReadBiasedReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.partitions[self.partition].release_read();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReadBiasedReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized> Deref for ReadBiasedWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds every partition exclusively.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> DerefMut for ReadBiasedWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds every partition exclusively, and `&mut
        // self` makes this the only reference through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for ReadBiasedWriteGuard<'_, T> {
    fn drop(&mut self) {
        for partition in self.lock.partitions.iter() {
            partition.release_write();
        }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReadBiasedWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Duration;

    fn partitions(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn new_has_default_partitions_and_value() {
        let lock = ReadBiasedLock::new(7u32);
        assert_eq!(lock.partitions(), DEFAULT_PARTITIONS);
        assert_eq!(*lock.read(), 7);
        assert_eq!(lock.into_inner(), 7);
    }

    #[test]
    fn write_is_seen_by_later_reads_and_into_inner() {
        let lock = ReadBiasedLock::with_partitions(partitions(3), vec![1]);
        lock.write().push(2);
        assert_eq!(*lock.read(), vec![1, 2]);
        assert_eq!(lock.into_inner(), vec![1, 2]);
    }

    #[test]
    fn get_mut_changes_the_value() {
        let mut lock = ReadBiasedLock::new(1u8);
        *lock.get_mut() = 9;
        assert_eq!(*lock.read(), 9);
    }

    #[test]
    fn readers_share_and_exclude_writers() {
        let lock = ReadBiasedLock::with_partitions(partitions(4), 0u32);
        let first = lock.read_in(0);
        let second = lock.read_in(0);
        let elsewhere = lock.read_in(3);
        assert!(lock.try_write().is_none());
        drop((first, second));
        // One reader left on partition 3 still excludes writers.
        assert!(lock.try_write().is_none());
        drop(elsewhere);
        assert!(lock.try_write().is_some());
    }

    #[test]
    fn failed_try_write_releases_the_partitions_it_took() {
        let lock = ReadBiasedLock::with_partitions(partitions(4), 0u32);
        let reader = lock.read_in(2);
        assert!(lock.try_write().is_none());
        // Partitions 0 and 1 were taken and must be free again for readers.
        for partition in 0..4 {
            assert!(
                lock.partitions[partition].try_read(),
                "partition {partition}"
            );
            lock.partitions[partition].release_read();
        }
        drop(reader);
        assert!(lock.try_write().is_some());
    }

    #[test]
    fn writer_excludes_readers_and_writers() {
        let lock = ReadBiasedLock::with_partitions(partitions(2), 0u32);
        let writer = lock.write();
        assert!(lock.try_read().is_none());
        assert!(lock.try_write().is_none());
        drop(writer);
        assert!(lock.try_read().is_some());
    }

    #[test]
    fn no_poisoning_after_a_panic_under_the_write_lock() {
        let lock = ReadBiasedLock::new(0u32);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut guard = lock.write();
            *guard = 5;
            panic!("inside the write lock");
        }));
        assert!(panicked.is_err());
        assert!(lock.try_write().is_some(), "the panic released the lock");
        assert_eq!(*lock.read(), 5);
    }

    #[test]
    fn each_thread_reads_on_its_own_numbered_partition() {
        let numbers: std::collections::BTreeSet<usize> = (0..8)
            .map(|_| std::thread::spawn(thread_number).join().unwrap())
            .collect();
        assert_eq!(numbers.len(), 8, "thread numbers repeat: {numbers:?}");
        assert_eq!(thread_number(), thread_number(), "stable per thread");
        let lock = ReadBiasedLock::with_partitions(partitions(4), ());
        assert_eq!(lock.read().partition, thread_number() % 4);
    }

    #[test]
    fn debug_shows_value_or_locked() {
        let lock = ReadBiasedLock::with_partitions(partitions(2), 3u8);
        assert_eq!(
            format!("{lock:?}"),
            "ReadBiasedLock { partitions: 2, value: 3 }"
        );
        let _writer = lock.write();
        assert_eq!(
            format!("{lock:?}"),
            "ReadBiasedLock { partitions: 2, value: <locked> }"
        );
    }

    /// Readers that always overlap (one of them is inside at every moment)
    /// must not keep a writer out: it claims the partition and they drain.
    #[test]
    fn overlapping_readers_do_not_starve_a_writer() {
        const READERS: usize = 8;
        let lock = Arc::new(ReadBiasedLock::with_partitions(partitions(1), 0u64));
        let written = Arc::new(AtomicBool::new(false));
        let inside = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(READERS + 1));
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let (lock, written, inside, start) =
                    (lock.clone(), written.clone(), inside.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    while !written.load(Ordering::SeqCst) {
                        let guard = lock.read();
                        inside.fetch_add(1, Ordering::SeqCst);
                        // Stay long enough that readers overlap.
                        for _ in 0..1_000 {
                            std::hint::black_box(*guard);
                        }
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        start.wait();
        // Let the readers get going before the writer arrives.
        while inside.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let (done, finished) = mpsc::channel();
        let writer = {
            let (lock, written) = (lock.clone(), written.clone());
            std::thread::spawn(move || {
                *lock.write() += 1;
                written.store(true, Ordering::SeqCst);
                done.send(()).unwrap();
            })
        };
        finished
            .recv_timeout(Duration::from_secs(30))
            .expect("the writer was starved by overlapping readers");
        writer.join().unwrap();
        for reader in readers {
            reader.join().unwrap();
        }
        assert_eq!(*lock.read(), 1);
    }
}
