//! Reader-writer lock workload (seed 004, experiment E8 of algorithms.md).
//!
//! Threads loop over short critical sections on one shared value, each
//! operation a read or a write drawn at random with a fixed read share
//! (seed 004's `ProcArrayLock` mix is 93.5 % reads; 70 % tests the
//! write-heavy objection). Reads are counted; every write's latency
//! (acquire + section + release) is recorded. Each [`Group`] of the
//! experiment is one mix at one thread count; every lock runs under it for
//! the same wall-clock time, in slices interleaved with the other locks'.

mod locks;
pub mod suite;

use std::convert::Infallible;
use std::fmt;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::sync::ShardedLock;
use serde::Serialize;
use walden::internals::ReadBiasedLock;

use crate::latency::LatencyHistogram;
use crate::measure::{interleave, Merge};
use locks::BenchLock;
pub use locks::LockKind;

/// The value under the lock: a reader sums it, a writer bumps every word.
type Protected = [u64; 4];

/// The share of reads among operations, in steps of 0.1 %.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mix {
    reads_per_mille: u16,
}

/// A read share that is not a percentage in steps of 0.1.
#[derive(Debug, thiserror::Error)]
#[error("read share {0} % is not between 0 and 100 in steps of 0.1")]
pub struct MixError(pub f64);

impl Mix {
    /// Seed 004's `ProcArrayLock`: 93.5 % of acquisitions shared.
    pub const PROC_ARRAY_LOCK: Mix = Mix {
        reads_per_mille: 935,
    };
    /// A write-heavy mix (70 % reads) to test the objection that writers
    /// pay for the readers' gain.
    pub const WRITE_HEAVY: Mix = Mix {
        reads_per_mille: 700,
    };

    /// The mix with `percent` % reads; one decimal at most.
    pub fn from_read_percent(percent: f64) -> Result<Mix, MixError> {
        let per_mille = percent * 10.0;
        if !(0.0..=1000.0).contains(&per_mille) || (per_mille - per_mille.round()).abs() > 1e-6 {
            return Err(MixError(percent));
        }
        Ok(Mix {
            // In 0..=1000 and integral, checked above.
            reads_per_mille: per_mille.round() as u16,
        })
    }

    /// The share of reads, in percent.
    pub fn read_percent(self) -> f64 {
        f64::from(self.reads_per_mille) / 10.0
    }
}

impl fmt::Display for Mix {
    /// `93.5/6.5`: reads/writes in percent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let writes = 1000 - self.reads_per_mille;
        write!(
            f,
            "{}.{}/{}.{}",
            self.reads_per_mille / 10,
            self.reads_per_mille % 10,
            writes / 10,
            writes % 10
        )
    }
}

impl Serialize for Mix {
    /// As the read share in percent.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.read_percent())
    }
}

/// One mix at one thread count: every lock is measured under it, in
/// interleaved slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// The read share.
    pub mix: Mix,
    /// Threads running the loop at once.
    pub threads: usize,
}

/// Every group of the experiment: each mix at each thread count.
pub fn groups(mixes: &[Mix], threads: &[usize]) -> Vec<Group> {
    mixes
        .iter()
        .flat_map(|&mix| threads.iter().map(move |&threads| Group { mix, threads }))
        .collect()
}

/// What one lock measured in one group.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// The lock measured.
    pub lock: LockKind,
    /// The read share, in percent.
    #[serde(rename = "read_percent")]
    pub mix: Mix,
    /// Threads running the loop at once.
    pub threads: usize,
    /// Seconds measured, all slices together.
    pub seconds: f64,
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Reads per second, all threads together.
    pub reads_per_sec: f64,
    /// Writes per second, all threads together.
    pub writes_per_sec: f64,
    /// Median write latency (acquire, section, release), nanoseconds, within
    /// 1/32; `None` without writes.
    pub write_p50_ns: Option<u64>,
    /// 99th percentile write latency, nanoseconds, within 1/32; `None`
    /// without writes.
    pub write_p99_ns: Option<u64>,
}

/// Measures every lock of `group` for `duration` each, split into `slices`
/// runs interleaved with the other locks' (each slice starting with the
/// next lock), so that a change in background load on a shared machine
/// falls on all locks alike. Calls `after_run` after each run. Returns one
/// result per lock, in [`LockKind::ALL`] order.
pub fn run_group(
    group: Group,
    duration: Duration,
    slices: NonZeroU32,
    after_run: impl FnMut(LockKind),
) -> Vec<CellResult> {
    let slice = duration / slices.get();
    let measured = interleave(
        &LockKind::ALL,
        slices.get(),
        |lock| Ok::<_, Infallible>(run_lock(lock, group, slice)),
        after_run,
    );
    let measured = match measured {
        Ok(measured) => measured,
        Err(never) => match never {},
    };
    measured
        .iter()
        .map(|(lock, measurement)| measurement.result(*lock, group))
        .collect()
}

/// Counts of one or more runs of one lock.
#[derive(Default)]
struct Measurement {
    seconds: f64,
    reads: u64,
    write_latency: LatencyHistogram,
}

impl Merge for Measurement {
    fn merge(&mut self, other: &Measurement) {
        self.seconds += other.seconds;
        self.reads += other.reads;
        self.write_latency.merge(&other.write_latency);
    }
}

impl Measurement {
    fn result(&self, lock: LockKind, group: Group) -> CellResult {
        let writes = self.write_latency.total();
        CellResult {
            lock,
            mix: group.mix,
            threads: group.threads,
            seconds: self.seconds,
            reads: self.reads,
            writes,
            reads_per_sec: self.reads as f64 / self.seconds,
            writes_per_sec: writes as f64 / self.seconds,
            write_p50_ns: self.write_latency.percentile(50),
            write_p99_ns: self.write_latency.percentile(99),
        }
    }
}

/// One run of `lock` under `group` for `duration`.
fn run_lock(lock: LockKind, group: Group, duration: Duration) -> Measurement {
    let value = Protected::default();
    match lock {
        LockKind::ReadBiased => run_on(&ReadBiasedLock::new(value), group, duration),
        LockKind::Std => run_on(&std::sync::RwLock::new(value), group, duration),
        LockKind::ParkingLot => run_on(&parking_lot::RwLock::new(value), group, duration),
        LockKind::CrossbeamSharded => run_on(&ShardedLock::new(value), group, duration),
    }
}

/// Runs the group's threads on `lock`. The clock starts before any worker
/// can count (each announces itself, and only the main thread's arrival,
/// after the clock started, releases the barrier) and stops when the stop
/// flag is set, so every counted operation falls inside the timed window
/// (give or take the one each thread has in flight), however late the
/// scheduler runs the main thread among hundreds of workers.
fn run_on<L: BenchLock<Protected>>(lock: &L, group: Group, duration: Duration) -> Measurement {
    let stop = AtomicBool::new(false);
    let arrived = AtomicUsize::new(0);
    let start = Barrier::new(group.threads + 1);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..group.threads)
            .map(|index| {
                let (stop, arrived, start) = (&stop, &arrived, &start);
                scope.spawn(move || {
                    // Relaxed: a count polled by the main thread; the
                    // barrier orders everything else.
                    arrived.fetch_add(1, Ordering::Relaxed);
                    start.wait();
                    worker(lock, group.mix, index as u64, stop)
                })
            })
            .collect();
        // Relaxed: see above.
        while arrived.load(Ordering::Relaxed) < group.threads {
            thread::yield_now();
        }
        let began = Instant::now();
        start.wait();
        thread::sleep(duration);
        // Relaxed: a flag read in a loop; the joins below order the counts.
        stop.store(true, Ordering::Relaxed);
        let mut total = Measurement {
            seconds: began.elapsed().as_secs_f64(),
            ..Measurement::default()
        };
        for worker in workers {
            let counted = worker
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            total.merge(&counted);
        }
        total
    })
}

/// The loop of one thread until `stop`; its measurement has no seconds.
fn worker<L: BenchLock<Protected>>(
    lock: &L,
    mix: Mix,
    seed: u64,
    stop: &AtomicBool,
) -> Measurement {
    let mut dice = Dice::new(seed);
    let mut counted = Measurement::default();
    // Relaxed: a stop flag; nothing is published through it.
    while !stop.load(Ordering::Relaxed) {
        if dice.per_mille() < mix.reads_per_mille {
            black_box(lock.with_read(|value| value.iter().sum::<u64>()));
            counted.reads += 1;
        } else {
            let began = Instant::now();
            lock.with_write(|value| value.iter_mut().for_each(|word| *word += 1));
            let ns = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
            counted.write_latency.record(ns);
        }
    }
    counted
}

/// A small per-thread generator (xorshift64*): the operation sequence costs
/// a few instructions and touches no shared state.
struct Dice(u64);

impl Dice {
    fn new(seed: u64) -> Dice {
        // Any non-zero state works; spread the seeds apart.
        Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..1000`.
    fn per_mille(&mut self) -> u16 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let high = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
        // Scales 32 random bits to 0..1000 without modulo bias; fits in u16.
        ((high * 1000) >> 32) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_tenths_of_a_percent_and_prints_both_sides() {
        let mix = Mix::from_read_percent(93.5).unwrap();
        assert_eq!(mix, Mix::PROC_ARRAY_LOCK);
        assert_eq!(mix.to_string(), "93.5/6.5");
        assert_eq!(Mix::from_read_percent(70.0).unwrap(), Mix::WRITE_HEAVY);
        assert_eq!(
            Mix::from_read_percent(100.0).unwrap().to_string(),
            "100.0/0.0"
        );
    }

    #[test]
    fn mix_rejects_out_of_range_and_finer_than_tenths() {
        for bad in [-1.0, 100.1, 93.55, f64::NAN] {
            assert!(Mix::from_read_percent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dice_follows_the_mix() {
        let mut dice = Dice::new(3);
        let reads = (0..100_000)
            .filter(|_| dice.per_mille() < Mix::PROC_ARRAY_LOCK.reads_per_mille)
            .count();
        // 93.5 % of 100 000, within a generous margin for a fair generator.
        assert!((92_500..=94_500).contains(&reads), "{reads} reads");
    }

    #[test]
    fn groups_cover_every_mix_and_thread_count() {
        let groups = groups(&[Mix::PROC_ARRAY_LOCK, Mix::WRITE_HEAVY], &[1, 4]);
        let expected: Vec<(Mix, usize)> = vec![
            (Mix::PROC_ARRAY_LOCK, 1),
            (Mix::PROC_ARRAY_LOCK, 4),
            (Mix::WRITE_HEAVY, 1),
            (Mix::WRITE_HEAVY, 4),
        ];
        let got: Vec<_> = groups.iter().map(|g| (g.mix, g.threads)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn every_lock_runs_reads_and_writes_in_every_slice() {
        let group = Group {
            mix: Mix::WRITE_HEAVY,
            threads: 3,
        };
        let mut runs = Vec::new();
        let slices = NonZeroU32::new(2).unwrap();
        let results = run_group(group, Duration::from_millis(60), slices, |lock| {
            runs.push(lock)
        });
        // Each slice runs every lock once, starting one lock further on.
        let mut expected: Vec<_> = LockKind::ALL.to_vec();
        expected.extend(LockKind::ALL[1..].iter().chain(&LockKind::ALL[..1]));
        assert_eq!(runs, expected);
        let locks: Vec<_> = results.iter().map(|r| r.lock).collect();
        assert_eq!(locks, LockKind::ALL);
        for result in results {
            assert!(result.reads > 0 && result.writes > 0, "{result:?}");
            assert!(result.seconds >= 0.06, "{result:?}");
            let (p50, p99) = (result.write_p50_ns.unwrap(), result.write_p99_ns.unwrap());
            assert!(p50 <= p99, "{result:?}");
        }
    }
}
