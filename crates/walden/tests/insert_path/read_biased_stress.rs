//! Stress test of `walden::internals::ReadBiasedLock`: 256 threads on a 2-core
//! machine mixing blocking and non-blocking reads and writes.
//!
//! Checked: writers are alone (no other writer, no reader inside); readers
//! see a consistent multi-field state that never goes backwards; the final
//! value equals the number of writes; nobody deadlocks (a watchdog fails the
//! test if the threads do not all finish).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;

use walden::internals::ReadBiasedLock;

const THREADS: usize = 256;
const OPS_PER_THREAD: usize = 2_000;
/// Far above the few seconds a run takes; reaching it means a deadlock.
const WATCHDOG: Duration = Duration::from_secs(60);

/// The protected state: a writer changes its fields one at a time, so a
/// reader beside a writer would see them disagree.
#[derive(Default)]
struct State {
    writes: u64,
    mirror: u64,
    scrambled: u64,
}

impl State {
    fn scramble(writes: u64) -> u64 {
        writes.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17)
    }

    fn write(&mut self) {
        self.writes += 1;
        // Give the scheduler a chance to preempt a writer mid-update.
        if self.writes.is_multiple_of(16) {
            thread::yield_now();
        }
        self.mirror = std::hint::black_box(self.writes);
        self.scrambled = Self::scramble(self.writes);
    }

    /// Checks the fields agree and returns the write count.
    fn check(&self) -> u64 {
        assert_eq!(self.mirror, self.writes, "torn read: mirror");
        assert_eq!(
            self.scrambled,
            Self::scramble(self.writes),
            "torn read: scrambled"
        );
        self.writes
    }
}

/// Who is inside the lock, counted outside it.
#[derive(Default)]
struct Occupancy {
    readers: AtomicUsize,
    writers: AtomicUsize,
}

/// One thread's share of the work, tallied for the final check.
#[derive(Default)]
struct Tally {
    writes: u64,
    reads: u64,
}

/// A small deterministic generator (xorshift64*), one per thread.
struct Dice(u64);

impl Dice {
    fn roll(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % 100
    }
}

fn read_section(state: &State, occupancy: &Occupancy, last_seen: &mut u64) {
    // SeqCst on the occupancy counters: the test's own observation of
    // exclusion, independent of the lock's orderings.
    occupancy.readers.fetch_add(1, Ordering::SeqCst);
    assert_eq!(
        occupancy.writers.load(Ordering::SeqCst),
        0,
        "reader beside a writer"
    );
    let seen = state.check();
    assert!(
        seen >= *last_seen,
        "went backwards: {seen} after {last_seen}"
    );
    *last_seen = seen;
    occupancy.readers.fetch_sub(1, Ordering::SeqCst);
}

fn write_section(state: &mut State, occupancy: &Occupancy) {
    assert_eq!(
        occupancy.writers.fetch_add(1, Ordering::SeqCst),
        0,
        "two writers inside"
    );
    assert_eq!(
        occupancy.readers.load(Ordering::SeqCst),
        0,
        "writer beside a reader"
    );
    state.write();
    occupancy.writers.fetch_sub(1, Ordering::SeqCst);
}

/// One thread: `OPS_PER_THREAD` operations, about `write_percent` of them writes.
fn worker(
    lock: &ReadBiasedLock<State>,
    occupancy: &Occupancy,
    seed: u64,
    write_percent: u64,
) -> Tally {
    let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut tally = Tally::default();
    let mut last_seen = 0;
    for _ in 0..OPS_PER_THREAD {
        let roll = dice.roll();
        if roll < write_percent {
            let guard = if roll.is_multiple_of(4) {
                lock.try_write()
            } else {
                Some(lock.write())
            };
            if let Some(mut guard) = guard {
                write_section(&mut guard, occupancy);
                tally.writes += 1;
            }
        } else {
            let guard = if roll.is_multiple_of(8) {
                lock.try_read()
            } else {
                Some(lock.read())
            };
            if let Some(guard) = guard {
                read_section(&guard, occupancy, &mut last_seen);
                tally.reads += 1;
            }
        }
    }
    tally
}

/// Runs `THREADS` workers on one lock and checks the outcome.
fn stress(partitions: usize, write_percent: u64) {
    let lock = Arc::new(ReadBiasedLock::with_partitions(
        NonZeroUsize::new(partitions).unwrap(),
        State::default(),
    ));
    let occupancy = Arc::new(Occupancy::default());
    let start = Arc::new(Barrier::new(THREADS));
    let (report, tallies) = mpsc::channel();
    let workers: Vec<_> = (0..THREADS as u64)
        .map(|seed| {
            let (lock, occupancy, start, report) = (
                lock.clone(),
                occupancy.clone(),
                start.clone(),
                report.clone(),
            );
            thread::spawn(move || {
                start.wait();
                let tally = worker(&lock, &occupancy, seed, write_percent);
                // The receiver outlives every worker unless the test already
                // failed; a failed send has nothing left to report to.
                let _ = report.send(tally);
            })
        })
        .collect();
    drop(report);
    let mut total = Tally::default();
    for finished in 0..THREADS {
        match tallies.recv_timeout(WATCHDOG) {
            Ok(tally) => {
                total.writes += tally.writes;
                total.reads += tally.reads;
            }
            // A worker panicked (its assertion message is printed above).
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("a worker failed; {finished} of {THREADS} finished")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("deadlock: {finished} of {THREADS} threads finished within {WATCHDOG:?}")
            }
        }
    }
    for worker in workers {
        worker.join().unwrap();
    }
    let lock = Arc::into_inner(lock).expect("every worker has dropped its handle");
    let state = lock.into_inner();
    assert_eq!(state.check(), total.writes, "final value vs writes done");
    assert!(
        total.writes > 0 && total.reads > 0,
        "the mix ran both sides"
    );
}

/// Seed 004's ProcArrayLock mix (about 6 % writes), default 16 partitions.
#[test]
fn read_mostly_on_default_partitions() {
    stress(walden::internals::READ_BIASED_DEFAULT_PARTITIONS, 6);
}

/// A write-heavy mix on 3 partitions: many threads share each partition.
#[test]
fn write_heavy_on_few_partitions() {
    stress(3, 30);
}
