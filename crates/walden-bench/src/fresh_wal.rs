//! [`FreshWal`]: a Walden log created in its own temporary directory for one
//! slice of a benchmark, in the segment state the slice asks for
//! ([`SegmentState`]) and on the storage it asks for ([`StorageKind`]);
//! what the slice did to it ([`WalSlice`]); and the interleaved run of a
//! suite's cases ([`run_cases`]).
//!
//! A *fresh* slice measures a new log: every segment it writes is a new
//! file. A *steady* slice first warms up: it runs the same workload
//! unmeasured for half the slice's time, fills the log to at least
//! [`STEADY_MIN_SEGMENTS`] segments and to what that warm-up would write in
//! the slice's time, and takes a checkpoint that recycles
//! every segment before the insert position into a future name (as
//! PostgreSQL does after each checkpoint); runs the workload again for
//! the slice's time on those recycled segments (stopped at their end),
//! which gives the rate the measured slice will write WAL at; then fills
//! the log with twice what the slice writes at that rate
//! and checkpoints again. Then it measures: the measured writes overwrite
//! recycled segment files, cached and allocated, as in a log that has run
//! for a while. The measured slice stops early, and says so
//! ([`WalFigures::slices_cut_short`]), when it comes within the
//! preallocator's look-ahead (`Config::segments_ahead`) of the end of the
//! recycled segments, so that no steady figure includes a new file; a
//! segment created during it all the same is counted
//! ([`WalFigures::steady_segments_created`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use walden::rmgr::RM_MIN_CUSTOM_ID;
use walden::{Config, Record, Stats, Wal};

use crate::discard::DiscardStorage;
pub use crate::log_setup::{LogSetup, SegmentState, StorageKind};
use crate::measure::{
    interleave, remove_slice_dir, slice_dir, write_back, Measured, Merge, SliceSettings,
    TempDirError, WriteBackError,
};

/// The least WAL a steady slice's warm-up leaves, in segments, so that its
/// checkpoint has segments to recycle however slow the workload.
pub const STEADY_MIN_SEGMENTS: u64 = 2;
/// WAL bytes per second no slice writes: what bounds the segments a
/// steady slice's checkpoints keep for recycling.
const WAL_BANDWIDTH_CEILING: f64 = 16e9;
/// How many times the WAL a steady slice's warm-up measured it to write
/// the slice keeps recycled segments for.
const STEADY_MARGIN: f64 = 2.0;
/// Payload of the records that fill a warm-up up to
/// [`STEADY_MIN_SEGMENTS`] and to the segments the measured slice needs.
const FILL_PAYLOAD: usize = 64 << 10;

/// Why a Walden benchmark slice failed.
#[derive(Debug, thiserror::Error)]
pub enum FreshWalError {
    /// The temporary directory could not be created or removed.
    #[error(transparent)]
    TempDir(#[from] TempDirError),
    /// The engine failed.
    #[error(transparent)]
    Wal(#[from] walden::Error),
    /// The page cache could not be written back before the measured
    /// window.
    #[error(transparent)]
    WriteBack(#[from] WriteBackError),
}

/// A log for one slice (its directory removed when the slice ends).
pub struct FreshWal {
    /// The log.
    pub wal: Wal,
    dir: Option<tempfile::TempDir>,
    stats: Stats,
    position: u64,
}

impl FreshWal {
    /// Creates a log with `config` in a new directory under `parent`.
    pub fn create(parent: &Path, config: Config) -> Result<FreshWal, FreshWalError> {
        FreshWal::create_on(parent, config, StorageKind::Files)
    }

    /// Creates a log with `config` on `storage`: for files, in a new
    /// directory under `parent`.
    pub fn create_on(
        parent: &Path,
        config: Config,
        storage: StorageKind,
    ) -> Result<FreshWal, FreshWalError> {
        let (wal, dir) = match storage {
            StorageKind::Files => {
                let dir = slice_dir(parent, "walden-bench-")?;
                (Wal::create(dir.path(), config)?, Some(dir))
            }
            StorageKind::Discard => {
                let path = PathBuf::from("/discard/walden-bench");
                let storage = Arc::new(DiscardStorage::new());
                (Wal::create_with_storage(path, config, storage)?, None)
            }
        };
        Ok(FreshWal::starting_now(wal, dir))
    }

    fn starting_now(wal: Wal, dir: Option<tempfile::TempDir>) -> FreshWal {
        let stats = wal.stats();
        let position = wal.insert_position().as_u64();
        FreshWal {
            wal,
            dir,
            stats,
            position,
        }
    }

    /// Writes back the page cache of the log's file system before a
    /// measured window ([`write_back`]); nothing to do on discarding
    /// storage.
    fn write_back(&self) -> Result<(), WriteBackError> {
        match &self.dir {
            Some(dir) => write_back(dir.path()),
            None => Ok(()),
        }
    }

    /// Closes the log, removes its directory and returns what happened
    /// since [`FreshWal::create`] (or since the checkpoint of a steady
    /// slice), with `measured` from the threads.
    pub fn finish(self, measured: Measured) -> Result<WalSlice, FreshWalError> {
        let stats = self.wal.stats();
        let wal_bytes = self.wal.insert_position().as_u64() - self.position;
        self.wal.close()?;
        if let Some(dir) = self.dir {
            remove_slice_dir(dir)?;
        }
        let created = |s: &Stats| s.segments_created_on_write + s.segments_prepared_ahead;
        Ok(WalSlice {
            slice_rates: vec![measured.per_sec()],
            measured,
            records: stats.records - self.stats.records,
            wal_bytes,
            syncs: stats.writer.syncs - self.stats.writer.syncs,
            writes: stats.writer.writes - self.stats.writer.writes,
            segments_created: created(&stats) - created(&self.stats),
            cut_short: 0,
            steady_segments_created: 0,
        })
    }
}

/// A condition polled while a slice runs: true stops it early.
pub type StopEarly<'a> = Option<&'a (dyn Fn() -> bool + Sync)>;

/// Measures one slice of a workload on a log set up as `setup`: `work(wal,
/// duration, stop_early)` runs the workload's threads (through
/// [`crate::measure::run_threads_until`]) and returns what they measured.
/// A steady slice runs `work` once unmeasured first (see the module docs).
/// On files, the measured window starts with the page cache written back
/// ([`write_back`]).
pub fn measure_slice(
    parent: &Path,
    config: Config,
    setup: LogSetup,
    duration: Duration,
    mut work: impl FnMut(&Wal, Duration, StopEarly<'_>) -> Result<Measured, walden::Error>,
) -> Result<WalSlice, FreshWalError> {
    if setup.segment_state == SegmentState::Fresh {
        let fresh = FreshWal::create_on(parent, config, setup.storage)?;
        fresh.write_back()?;
        let measured = work(&fresh.wal, duration, None)?;
        return fresh.finish(measured);
    }
    // Keep every segment the warm-up writes (at most its runs at the
    // ceiling rate and the fill sized from them), so that no checkpoint
    // removes one.
    let warm_seconds = duration.as_secs_f64() * (1.5 + STEADY_MARGIN);
    let most = (warm_seconds * WAL_BANDWIDTH_CEILING / config.segment_size as f64).ceil();
    let config = Config {
        recycle_segments: config.recycle_segments.max(most as usize),
        ..config
    };
    let segment = config.segment_size;
    let ahead = config.segments_ahead as u64;
    let warm = FreshWal::create_on(parent, config, setup.storage)?;
    // First warm-up: makes segments to recycle, at a rate (on new files)
    // below the steady one.
    let first = work(&warm.wal, duration / 2, None)?;
    let first_rate =
        (warm.wal.insert_position().as_u64() - warm.position) as f64 / first.seconds.max(1e-3);
    // Recycle what it would write in the slice's time, so that the second
    // warm-up runs long enough to give the steady rate, not its start-up's.
    let second = (first_rate * duration.as_secs_f64()) as u64;
    let mut recycling = Recycling::new(&warm);
    recycling.fill_and_checkpoint(&warm, second.max(STEADY_MIN_SEGMENTS * segment))?;
    // Second warm-up: runs on them, stopped at their end, for the rate the
    // measured slice will write at.
    let from = warm.wal.insert_position().as_u64();
    let end = recycling.end;
    let wal = &warm.wal;
    let past = move || wal.insert_position().as_u64() >= end;
    let run = work(wal, duration, Some(&past))?;
    let rate = (wal.insert_position().as_u64() - from) as f64 / run.seconds.max(1e-3);
    // Then enough recycled segments for the measured slice at that rate,
    // with a margin, beyond the ones the preallocator looks ahead to.
    let needed = (rate * duration.as_secs_f64() * STEADY_MARGIN) as u64;
    recycling.fill_and_checkpoint(&warm, needed + (ahead + 2) * segment)?;
    let FreshWal { wal, dir, .. } = warm;
    let steady = FreshWal::starting_now(wal, dir);
    steady.write_back()?;
    let wal = &steady.wal;
    // Stop before the preallocator, looking `ahead` segments past the
    // writer's, would have to create one.
    let stop_at = recycling.end.saturating_sub(ahead * segment);
    let past_recycled = move || wal.insert_position().as_u64() >= stop_at;
    let measured = work(wal, duration, Some(&past_recycled))?;
    let cut_short = u32::from(past_recycled());
    let mut slice = steady.finish(measured)?;
    slice.cut_short = cut_short;
    slice.steady_segments_created = slice.segments_created;
    Ok(slice)
}

/// Where a steady slice's warm-up stands: the end of the recycled
/// segments ahead of the insert position, and where its last checkpoint
/// was taken.
struct Recycling {
    /// The end of the recycled segments, as a usable position: each
    /// checkpoint renames its obsolete segments to the first names missing
    /// after the insert position's segment (after those still ahead).
    /// Counted from the insert position, not its segment's start, it errs
    /// short by less than a segment.
    end: u64,
    /// The insert position at the last checkpoint.
    checkpointed_at: u64,
}

impl Recycling {
    fn new(warm: &FreshWal) -> Recycling {
        Recycling {
            end: 0,
            checkpointed_at: warm.position,
        }
    }

    /// Fills the log with filler records until `bytes` have been written
    /// since the last checkpoint, then checkpoints, recycling them.
    fn fill_and_checkpoint(&mut self, warm: &FreshWal, bytes: u64) -> Result<(), walden::Error> {
        let filler = Record::new(RM_MIN_CUSTOM_ID, 0, vec![0; FILL_PAYLOAD]);
        while warm.wal.insert_position().as_u64() - self.checkpointed_at < bytes {
            warm.wal.insert(&filler)?;
        }
        let before = warm.wal.stats().segments_recycled;
        warm.wal.checkpoint()?;
        let recycled = warm.wal.stats().segments_recycled - before;
        let position = warm.wal.insert_position().as_u64();
        self.end = self.end.max(position) + recycled * warm.wal.config().segment_size;
        self.checkpointed_at = position;
        Ok(())
    }
}

/// One slice through [`measure_slice`] of `threads` threads for a log
/// with `config` under `dir`, timed as `timing`: each thread builds its
/// worker as `|wal, thread| worker` does (the worker is what
/// [`crate::measure::run_threads`] loops over). A macro so that the worker
/// may borrow the log without boxing it.
macro_rules! thread_slice {
    ($dir:expr, $setup:expr, $duration:expr; $config:expr, $threads:expr, $timing:expr;
     |$wal:ident, $thread:pat_param| $worker:expr) => {
        $crate::fresh_wal::measure_slice(
            $dir,
            $config,
            $setup,
            $duration,
            |$wal, duration, stop| {
                $crate::measure::run_threads_until($threads, duration, $timing, stop, |$thread| {
                    $worker
                })
            },
        )
    };
}
pub(crate) use thread_slice;

/// What one or more slices measured.
#[derive(Clone, Debug, Default)]
pub struct WalSlice {
    /// Operations and latencies seen by the threads.
    pub measured: Measured,
    /// Operations per second of each slice, in the order run.
    pub slice_rates: Vec<f64>,
    /// Records inserted.
    pub records: u64,
    /// WAL bytes: the insert position's advance, page headers included (as
    /// PostgreSQL's `pg_current_wal_lsn()` differences count them).
    pub wal_bytes: u64,
    /// Syncs (fdatasync calls, or durable O_DSYNC writes).
    pub syncs: u64,
    /// `write` calls.
    pub writes: u64,
    /// Segment files created (by the writer or the preallocator).
    pub segments_created: u64,
    /// Steady slices stopped early at the end of the recycled segments.
    pub cut_short: u32,
    /// Segment files created during steady slices: each one is a fall back
    /// to preparing a new file (zero-filling it, by default), which a
    /// steady figure should not include.
    pub steady_segments_created: u64,
}

impl Merge for WalSlice {
    fn merge(&mut self, other: &WalSlice) {
        self.measured.merge(&other.measured);
        self.slice_rates.extend_from_slice(&other.slice_rates);
        self.records += other.records;
        self.wal_bytes += other.wal_bytes;
        self.syncs += other.syncs;
        self.writes += other.writes;
        self.segments_created += other.segments_created;
        self.cut_short += other.cut_short;
        self.steady_segments_created += other.steady_segments_created;
    }
}

/// The figures every Walden workload reports, derived from a [`WalSlice`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WalFigures {
    /// Operations completed (commits, transactions or appends).
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// The slowest slice's operations per second.
    #[serde(default)]
    pub slice_min_ops_per_sec: f64,
    /// The fastest slice's operations per second.
    #[serde(default)]
    pub slice_max_ops_per_sec: f64,
    /// Records per second.
    pub records_per_sec: f64,
    /// WAL bytes per second.
    pub wal_bytes_per_sec: f64,
    /// Syncs.
    pub syncs: u64,
    /// Syncs per operation (below 1: group commit at work).
    pub syncs_per_op: f64,
    /// Median operation latency, ns (`None` when not timed).
    pub p50_ns: Option<u64>,
    /// 99th-percentile operation latency, ns.
    pub p99_ns: Option<u64>,
    /// Steady slices stopped before their time at the end of the recycled
    /// segments (their rate is of the time they ran).
    #[serde(default)]
    pub slices_cut_short: u32,
    /// Segment files created during steady slices (none when the warm-up
    /// left enough recycled segments).
    #[serde(default)]
    pub steady_segments_created: u64,
}

impl From<&WalSlice> for WalFigures {
    fn from(s: &WalSlice) -> WalFigures {
        let seconds = s.measured.seconds;
        let per_sec = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        let ops = s.measured.ops;
        let rates = || s.slice_rates.iter().copied();
        WalFigures {
            ops,
            seconds,
            ops_per_sec: per_sec(ops),
            slice_min_ops_per_sec: rates().reduce(f64::min).unwrap_or(0.0),
            slice_max_ops_per_sec: rates().reduce(f64::max).unwrap_or(0.0),
            records_per_sec: per_sec(s.records),
            wal_bytes_per_sec: per_sec(s.wal_bytes),
            syncs: s.syncs,
            syncs_per_op: if ops > 0 {
                s.syncs as f64 / ops as f64
            } else {
                0.0
            },
            p50_ns: s.measured.latency.percentile(50),
            p99_ns: s.measured.latency.percentile(99),
            slices_cut_short: s.cut_short,
            steady_segments_created: s.steady_segments_created,
        }
    }
}

impl WalFigures {
    /// `setup`'s label for a table, with `*` when a steady slice stopped
    /// early or created a segment ([`CUT_SHORT_NOTE`]).
    pub fn setup_label(&self, setup: &LogSetup) -> String {
        let short = self.slices_cut_short > 0 || self.steady_segments_created > 0;
        let mark = if short { "*" } else { "" };
        format!("{}{mark}", setup.label())
    }
}

/// The footnote of a table whose rows [`WalFigures::setup_label`] marked.
pub const CUT_SHORT_NOTE: &str = "* a steady slice ran out of recycled segments: it stopped early \
     (its rate is of the time it ran) or created new segment files";

/// A case, how its logs were set up, and the figures its slices add up to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseFigures<C> {
    /// The case.
    pub case: C,
    /// Storage and segment state (absent in results from before they
    /// were measured apart: fresh files).
    #[serde(flatten)]
    pub setup: LogSetup,
    /// Operations, rates, syncs and latency.
    #[serde(flatten)]
    pub figures: WalFigures,
}

/// Runs every case with every setup in interleaved slices as `settings`
/// says, each slice measured by `run_slice(case, setup, dir, slice)`
/// (typically through [`measure_slice`] under `dir`); `after` is called
/// after each slice. Returns each case's figures, cases in order, each
/// case's setups in `setups`' order.
pub fn run_cases<C: Copy>(
    cases: &[C],
    setups: &[LogSetup],
    settings: &SliceSettings,
    mut run_slice: impl FnMut(C, LogSetup, &Path, Duration) -> Result<WalSlice, FreshWalError>,
    mut after: impl FnMut(C, LogSetup),
) -> Result<Vec<CaseFigures<C>>, FreshWalError> {
    let pairs: Vec<(C, LogSetup)> = cases
        .iter()
        .flat_map(|&case| setups.iter().map(move |&setup| (case, setup)))
        .collect();
    let merged = interleave(
        &pairs,
        settings.slices,
        |(case, setup)| run_slice(case, setup, &settings.dir, settings.slice),
        |(case, setup)| after(case, setup),
    )?;
    Ok(merged
        .iter()
        .map(|((case, setup), slice)| CaseFigures {
            case: *case,
            setup: *setup,
            figures: slice.into(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{run_threads_until, Timing};
    use walden::SyncMethod;

    fn small(sync_method: SyncMethod) -> Config {
        Config {
            segment_size: 1 << 20,
            buffers: 1 << 20,
            sync_method,
            ..Config::default()
        }
    }

    fn inserts(
        wal: &Wal,
        duration: Duration,
        stop: StopEarly<'_>,
    ) -> Result<Measured, walden::Error> {
        let rec = Record::new(RM_MIN_CUSTOM_ID, 0, vec![7; 4000]);
        run_threads_until(2, duration, Timing::CountOnly, stop, |_| {
            let rec = &rec;
            Ok(move || wal.insert(rec).map(drop))
        })
    }

    #[test]
    fn a_steady_slice_writes_into_recycled_segments_only() {
        let dir = tempfile::tempdir().unwrap();
        let setup = LogSetup::files(SegmentState::Steady);
        let slice = measure_slice(
            dir.path(),
            small(SyncMethod::None),
            setup,
            Duration::from_millis(50),
            |wal, duration, stop| {
                // The warm-up runs without a stop; the measured run with one
                // that is false until the recycled segments are used up.
                if let Some(stop) = stop {
                    assert!(!stop(), "no recycled segment ahead");
                    assert!(wal.stats().segments_recycled >= STEADY_MIN_SEGMENTS);
                }
                inserts(wal, duration, stop)
            },
        )
        .unwrap();
        assert!(slice.measured.ops > 0 && slice.records == slice.measured.ops);
        assert!(slice.cut_short <= 1);
        assert_eq!(slice.slice_rates.len(), 1);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_steady_slice_stops_at_the_end_of_the_recycled_segments() {
        let dir = tempfile::tempdir().unwrap();
        let config = small(SyncMethod::None);
        let segment = config.segment_size;
        let slice = measure_slice(
            dir.path(),
            config,
            LogSetup::files(SegmentState::Steady),
            Duration::from_millis(20),
            |wal, duration, stop| match stop {
                // The measured run has all the time it wants: only the
                // end of the recycled segments can stop it.
                Some(stop) => inserts(wal, Duration::from_secs(60), Some(stop)),
                None => inserts(wal, duration, None),
            },
        )
        .unwrap();
        assert_eq!(slice.cut_short, 1, "{slice:?}");
        assert!(slice.measured.seconds < 60.0);
        assert!(
            slice.wal_bytes >= STEADY_MIN_SEGMENTS * segment,
            "{slice:?}"
        );
    }

    #[test]
    fn fresh_and_discard_slices_measure_without_warm_up() {
        let dir = tempfile::tempdir().unwrap();
        for storage in [StorageKind::Files, StorageKind::Discard] {
            let setup = LogSetup {
                storage,
                segment_state: SegmentState::Fresh,
            };
            let mut runs = 0;
            let slice = measure_slice(
                dir.path(),
                small(SyncMethod::Fdatasync),
                setup,
                Duration::from_millis(30),
                |wal, duration, stop| {
                    runs += 1;
                    assert!(stop.is_none());
                    inserts(wal, duration, stop)
                },
            );
            let slice = slice.unwrap();
            assert_eq!(runs, 1, "{setup:?}");
            assert!(slice.measured.ops > 0 && slice.cut_short == 0, "{setup:?}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn figures_keep_the_spread_of_the_slices() {
        let mut total = WalSlice::default();
        for (ops, cut, created) in [(10, 0, 2), (30, 1, 0)] {
            total.merge(&WalSlice {
                measured: Measured {
                    ops,
                    seconds: 1.0,
                    ..Measured::default()
                },
                slice_rates: vec![ops as f64],
                cut_short: cut,
                steady_segments_created: created,
                ..WalSlice::default()
            });
        }
        let f = WalFigures::from(&total);
        assert_eq!(
            (f.slice_min_ops_per_sec, f.slice_max_ops_per_sec),
            (10.0, 30.0)
        );
        assert_eq!((f.ops_per_sec, f.slices_cut_short), (20.0, 1));
        assert_eq!(f.steady_segments_created, 2);
        let steady = LogSetup::files(SegmentState::Steady);
        assert!(f.setup_label(&steady).ends_with('*'));
        let created_only = WalFigures {
            slices_cut_short: 0,
            ..f.clone()
        };
        assert!(created_only.setup_label(&steady).ends_with('*'));
        let neither = WalFigures {
            steady_segments_created: 0,
            ..created_only
        };
        assert!(!neither.setup_label(&steady).ends_with('*'));
    }
}
