//! Running a workload on T threads for a fixed time, and interleaving the
//! cases of a comparison in slices so that a change in background load on a
//! shared machine falls on every case alike (DESIGN.md §6).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::latency::LatencyHistogram;

/// Where the cases of an interleaved run put their files, and how long
/// each runs.
#[derive(Clone, Debug)]
pub struct SliceSettings {
    /// Where each slice's directory is created.
    pub dir: PathBuf,
    /// Time of one slice.
    pub slice: Duration,
    /// Slices per case, interleaved with the other cases'.
    pub slices: u32,
}

/// A slice's temporary directory could not be created or removed.
#[derive(Debug, thiserror::Error)]
#[error("temporary directory under {dir}: {source}")]
pub struct TempDirError {
    /// The parent directory (or, on removal, the directory itself).
    pub dir: String,
    /// The cause.
    pub source: std::io::Error,
}

/// Creates a new directory under `parent`, its name starting with `prefix`,
/// for one slice; [`remove_slice_dir`] removes it.
pub fn slice_dir(parent: &Path, prefix: &str) -> Result<tempfile::TempDir, TempDirError> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(parent)
        .map_err(|source| TempDirError {
            dir: parent.display().to_string(),
            source,
        })
}

/// Removes a slice's directory and everything in it.
pub fn remove_slice_dir(dir: tempfile::TempDir) -> Result<(), TempDirError> {
    let path = dir.path().display().to_string();
    dir.close()
        .map_err(|source| TempDirError { dir: path, source })
}

/// The page cache of a benchmark's disk could not be written back.
#[derive(Debug, thiserror::Error)]
#[error("writing back the dirty pages of the file system under {dir}: {source}")]
pub struct WriteBackError {
    /// The directory whose file system was written back.
    pub dir: String,
    /// The cause.
    pub source: std::io::Error,
}

/// Writes back every dirty page of the file system that holds `dir` and
/// waits for the device to have it (`syncfs(2)`). Each measured window of
/// a suite that writes files starts with it, so that the window neither
/// pays for the write-back of what ran before it (a steady slice's
/// warm-up and fills leave gigabytes dirty; past the kernel's background
/// threshold, 10 % of memory by default, the next writer is throttled)
/// nor leaves its own to the next one: every contender (Walden's
/// suites, the peers, the limits, and `scripts/pg-bench` with `sync`)
/// starts from the same clean page cache.
pub fn write_back(dir: &Path) -> Result<(), WriteBackError> {
    let fail = |source| WriteBackError {
        dir: dir.display().to_string(),
        source,
    };
    let dir_file = std::fs::File::open(dir).map_err(fail)?;
    rustix::fs::syncfs(&dir_file).map_err(|e| fail(e.into()))
}

/// Every pair of a value of `outer` and a value of `inner`, in the order of
/// two nested loops (`outer` varies slowest): the cases of a grid. Nest
/// calls for more dimensions.
pub fn grid<A: Copy, B: Copy>(outer: &[A], inner: &[B]) -> Vec<(A, B)> {
    outer
        .iter()
        .flat_map(|&a| inner.iter().map(move |&b| (a, b)))
        .collect()
}

/// Whether every operation is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Count operations and record each one's latency (two clock reads per
    /// operation: fine for anything that takes microseconds).
    Latency,
    /// Count operations only (for operations of ~100 ns, where two clock
    /// reads would be a visible part of the cost).
    CountOnly,
}

/// A measurement that adds up across runs of one case.
pub trait Merge: Default {
    /// Adds another run of the same case.
    fn merge(&mut self, other: &Self);
}

/// What one or more runs of one case measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Operations completed, all threads together.
    pub ops: u64,
    /// Wall-clock seconds measured, all runs together.
    pub seconds: f64,
    /// Per-operation latency, nanoseconds (empty with [`Timing::CountOnly`]).
    pub latency: LatencyHistogram,
}

impl Merge for Measured {
    fn merge(&mut self, other: &Measured) {
        self.ops += other.ops;
        self.seconds += other.seconds;
        self.latency.merge(&other.latency);
    }
}

impl Measured {
    /// Operations per second; 0 when nothing was measured.
    pub fn per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Runs `threads` threads for `duration`. Each thread calls `make(index)`
/// once to build its worker (not timed), waits for the others, then calls
/// the worker in a loop until the time is up. The first error stops every
/// thread and is returned; a panicking worker panics the caller.
pub fn run_threads<W, E>(
    threads: usize,
    duration: Duration,
    timing: Timing,
    make: impl Fn(usize) -> Result<W, E> + Sync,
) -> Result<Measured, E>
where
    W: FnMut() -> Result<(), E>,
    E: Send,
{
    run_threads_until(threads, duration, timing, None, make)
}

/// [`run_threads`], also stopped as soon as `stop_early` (polled every
/// millisecond) returns true; the time measured is the time run.
pub fn run_threads_until<W, E>(
    threads: usize,
    duration: Duration,
    timing: Timing,
    stop_early: Option<&(dyn Fn() -> bool + Sync)>,
    make: impl Fn(usize) -> Result<W, E> + Sync,
) -> Result<Measured, E>
where
    W: FnMut() -> Result<(), E>,
    E: Send,
{
    let poll = if stop_early.is_some() {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(20)
    };
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    let (per_thread, seconds) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (stop, start, make) = (&stop, &start, &make);
                s.spawn(move || {
                    let worker = make(index);
                    start.wait();
                    let result = worker.and_then(|w| run_worker(w, stop, timing));
                    if result.is_err() {
                        // Relaxed: a stop flag; the joins order everything else.
                        stop.store(true, Ordering::Relaxed);
                    }
                    result
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        // The measurement window: the workers run while this thread waits.
        let deadline = started + duration;
        // Relaxed: see above.
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= deadline || stop_early.is_some_and(|early| early()) {
                break;
            }
            std::thread::sleep((deadline - now).min(poll));
        }
        // Relaxed: see above.
        stop.store(true, Ordering::Relaxed);
        let per_thread: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
        (per_thread, started.elapsed().as_secs_f64())
    });
    let mut total = Measured {
        seconds,
        ..Measured::default()
    };
    for thread in per_thread {
        let (ops, latency) = thread?;
        total.ops += ops;
        total.latency.merge(&latency);
    }
    Ok(total)
}

/// One thread's loop: operations done and their latencies.
fn run_worker<E>(
    mut worker: impl FnMut() -> Result<(), E>,
    stop: &AtomicBool,
    timing: Timing,
) -> Result<(u64, LatencyHistogram), E> {
    let mut latency = LatencyHistogram::default();
    let mut ops = 0;
    // Relaxed: a stop flag.
    while !stop.load(Ordering::Relaxed) {
        match timing {
            Timing::CountOnly => worker()?,
            Timing::Latency => {
                let began = Instant::now();
                worker()?;
                latency.record(began.elapsed().as_nanos() as u64);
            }
        }
        ops += 1;
    }
    Ok((ops, latency))
}

/// Runs `cases` for `slices` rounds; in each round every case runs once,
/// the round starting one case further on than the last, so that slow and
/// fast moments of a shared machine fall on all cases alike. `run(case)`
/// measures one slice of `case`; `after(case)` is called after each.
/// Returns every case with its merged measurement, in case order.
pub fn interleave<C: Copy, M: Merge, E>(
    cases: &[C],
    slices: u32,
    mut run: impl FnMut(C) -> Result<M, E>,
    mut after: impl FnMut(C),
) -> Result<Vec<(C, M)>, E> {
    let mut merged: Vec<(C, M)> = cases.iter().map(|&c| (c, M::default())).collect();
    for round in 0..slices as usize {
        for offset in 0..cases.len() {
            let (case, sum) = &mut merged[(round + offset) % cases.len()];
            sum.merge(&run(*case)?);
            after(*case);
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn writing_back_a_directory_that_is_missing_names_it() {
        let parent = tempfile::tempdir().expect("a temporary directory");
        write_back(parent.path()).expect("the temporary directory's file system written back");
        let missing = parent.path().join("missing");
        let e = write_back(&missing).expect_err("no such directory");
        assert_eq!(e.source.kind(), std::io::ErrorKind::NotFound);
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn every_thread_works_and_latencies_are_recorded() {
        let done = AtomicU64::new(0);
        let m = run_threads(3, Duration::from_millis(50), Timing::Latency, |_| {
            Ok::<_, ()>(|| {
                // Relaxed: a counter read after the joins.
                done.fetch_add(1, Ordering::Relaxed);
                std::hint::black_box(());
                Ok(())
            })
        })
        .unwrap();
        assert_eq!(m.ops, done.load(Ordering::Relaxed));
        assert!(m.ops > 0);
        assert_eq!(m.latency.total(), m.ops);
        assert!(m.seconds >= 0.05);
    }

    #[test]
    fn an_early_stop_ends_the_run_before_its_time() {
        let done = AtomicU64::new(0);
        // Relaxed: a counter; the stop condition needs no other data.
        let enough = || done.load(Ordering::Relaxed) >= 1000;
        let m = run_threads_until(
            2,
            Duration::from_secs(60),
            Timing::CountOnly,
            Some(&enough),
            |_| {
                Ok::<_, ()>(|| {
                    // Relaxed: as above.
                    done.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            },
        )
        .unwrap();
        assert!(m.ops >= 1000 && m.seconds < 60.0, "{m:?}");
    }

    #[test]
    fn count_only_records_no_latency() {
        let m = run_threads(1, Duration::from_millis(10), Timing::CountOnly, |_| {
            Ok::<_, ()>(|| Ok(()))
        })
        .unwrap();
        assert!(m.ops > 0);
        assert_eq!(m.latency.total(), 0);
    }

    #[test]
    fn an_error_stops_the_run_early_and_is_returned() {
        let started = Instant::now();
        let result = run_threads(2, Duration::from_secs(30), Timing::CountOnly, |index| {
            let mut calls = 0;
            Ok(move || {
                calls += 1;
                if index == 1 && calls == 100 {
                    Err("disk full")
                } else {
                    Ok(())
                }
            })
        });
        assert_eq!(result.unwrap_err(), "disk full");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_worker_that_cannot_be_built_fails_the_run() {
        let result = run_threads(2, Duration::from_secs(30), Timing::CountOnly, |index| {
            if index == 0 {
                Err("no file")
            } else {
                Ok(|| Ok(()))
            }
        });
        assert_eq!(result.unwrap_err(), "no file");
    }

    #[test]
    fn interleaving_rotates_the_order_and_merges_per_case() {
        let mut order = Vec::new();
        let merged = interleave(
            &[10, 20, 30],
            3,
            |case| {
                Ok::<_, ()>(Measured {
                    ops: case / 10,
                    seconds: 1.0,
                    ..Measured::default()
                })
            },
            |case| order.push(case),
        )
        .unwrap();
        assert_eq!(order, [10, 20, 30, 20, 30, 10, 30, 10, 20]);
        let ops: Vec<(u64, u64)> = merged.iter().map(|(c, m)| (*c, m.ops)).collect();
        assert_eq!(ops, [(10, 3), (20, 6), (30, 9)]);
        assert_eq!(merged[2].1.per_sec(), 3.0);
    }

    #[test]
    fn a_grid_varies_the_inner_values_fastest() {
        assert_eq!(
            grid(&[1, 2], &['a', 'b', 'c']),
            [(1, 'a'), (1, 'b'), (1, 'c'), (2, 'a'), (2, 'b'), (2, 'c')]
        );
        assert!(grid::<u8, u8>(&[], &[1]).is_empty());
    }

    #[test]
    fn a_slice_dir_is_created_under_its_parent_and_removed() {
        let parent = tempfile::tempdir().unwrap();
        let dir = slice_dir(parent.path(), "case-").unwrap();
        assert!(dir.path().starts_with(parent.path()));
        std::fs::write(dir.path().join("file"), b"x").unwrap();
        remove_slice_dir(dir).unwrap();
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        let err = slice_dir(Path::new("/nonexistent-walden-dir"), "x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent-walden-dir"), "{err}");
    }
}
