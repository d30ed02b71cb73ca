//! loom models of [`ReadBiasedLock`]: every interleaving (up to the
//! preemption bound) of a few readers and writers.
//!
//! The protected value is two cells that a writer changes one after the
//! other. They are loom's tracked cells, so loom itself fails the model if a
//! reader's access and a writer's are not ordered by happens-before in
//! either direction (a reader beside a writer, a reader entering without
//! synchronising with the last writer, or a writer entering without
//! synchronising with the last reader); the readers also check the halves
//! agree, and occupancy counters check mutual exclusion directly.

use super::ReadBiasedLock;
use crate::sync::{thread, Arc, AtomicUsize, Ordering};
use loom::cell::UnsafeCell;
use std::num::NonZeroUsize;

/// A number only accessed under the lock, in a cell loom watches.
#[derive(Default)]
struct Tracked(UnsafeCell<usize>);

// SAFETY: accessed only through the lock's guards; proving that those
// accesses never race is what the models are for.
unsafe impl Sync for Tracked {}

impl Tracked {
    fn get(&self) -> usize {
        // SAFETY: see `Sync` above; loom reports a racing access.
        self.0.with(|value| unsafe { *value })
    }

    fn set(&self, new: usize) {
        // SAFETY: see `Sync` above; loom reports a racing access.
        self.0.with_mut(|value| unsafe { *value = new })
    }
}

/// A value a writer changes in two steps; readers must never see a half.
#[derive(Default)]
struct TwoHalves {
    first: Tracked,
    second: Tracked,
}

impl TwoHalves {
    /// Reads both halves and checks they agree.
    fn check(&self) -> usize {
        let first = self.first.get();
        assert_eq!(first, self.second.get(), "torn read");
        first
    }
}

/// Who is inside the lock, counted outside it.
#[derive(Default)]
struct Occupancy {
    readers: AtomicUsize,
    writers: AtomicUsize,
}

impl Occupancy {
    fn enter_read(&self) {
        // Relaxed here and below, on purpose: the counters must add no
        // synchronisation of their own (SeqCst ones would order a reader's
        // accesses before a writer's even if the lock did not). A correct
        // lock orders every leave before the next conflicting enter by
        // happens-before, so these loads cannot read a stale count.
        self.readers.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            self.writers.load(Ordering::Relaxed),
            0,
            "reader beside a writer"
        );
    }

    fn leave_read(&self) {
        self.readers.fetch_sub(1, Ordering::Relaxed);
    }

    fn enter_write(&self) {
        assert_eq!(
            self.writers.fetch_add(1, Ordering::Relaxed),
            0,
            "two writers inside"
        );
        assert_eq!(
            self.readers.load(Ordering::Relaxed),
            0,
            "writer beside a reader"
        );
    }

    fn leave_write(&self) {
        self.writers.fetch_sub(1, Ordering::Relaxed);
    }
}

type Shared = Arc<(ReadBiasedLock<TwoHalves>, Occupancy)>;

fn shared(partitions: usize) -> Shared {
    let partitions = NonZeroUsize::new(partitions).unwrap();
    Arc::new((
        ReadBiasedLock::with_partitions(partitions, TwoHalves::default()),
        Occupancy::default(),
    ))
}

/// Reads on `partition` and checks the halves are equal. Yields inside the
/// read section, so that a writer arriving while a reader is inside (the
/// drain, park and wake-up path) is explored without spending preemptions.
fn read_on(shared: &Shared, partition: usize) {
    let (lock, occupancy) = &**shared;
    let guard = lock.read_in(partition);
    occupancy.enter_read();
    thread::yield_now();
    guard.check();
    occupancy.leave_read();
}

/// Takes the write lock and updates the value.
fn write(shared: &Shared) {
    let (lock, occupancy) = &**shared;
    update(&lock.write(), occupancy);
}

/// Writes both halves, one after the other, to one more than before.
fn update(guard: &TwoHalves, occupancy: &Occupancy) {
    occupancy.enter_write();
    let next = guard.check() + 1;
    guard.first.set(next);
    guard.second.set(next);
    occupancy.leave_write();
}

/// Two readers on different partitions and one writer.
#[test]
fn two_readers_one_writer() {
    loom::model(|| {
        let shared = shared(2);
        let readers: Vec<_> = (0..2)
            .map(|partition| {
                let shared = shared.clone();
                thread::spawn(move || read_on(&shared, partition))
            })
            .collect();
        write(&shared);
        for reader in readers {
            reader.join().unwrap();
        }
        assert_eq!(shared.0.read_in(0).check(), 1);
    });
}

/// A blocking writer, a `try_write` writer and a `try_read` reader: writers
/// never overlap, no update is lost, and threads that enter without waiting
/// synchronise like the others.
#[test]
fn two_writers_one_try_reader() {
    loom::model(|| {
        let shared = shared(2);
        let try_writer = {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, occupancy) = &*shared;
                let guard = lock.try_write()?;
                update(&guard, occupancy);
                Some(())
            })
        };
        let try_reader = {
            let shared = shared.clone();
            thread::spawn(move || {
                let (lock, occupancy) = &*shared;
                if let Some(guard) = lock.try_read() {
                    occupancy.enter_read();
                    guard.check();
                    occupancy.leave_read();
                }
            })
        };
        write(&shared);
        let try_written = try_writer.join().unwrap().is_some();
        try_reader.join().unwrap();
        let expected = 1 + usize::from(try_written);
        assert_eq!(shared.0.read_in(1).check(), expected);
    });
}
