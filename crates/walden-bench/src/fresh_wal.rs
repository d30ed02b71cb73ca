//! [`FreshWal`]: a Walden log created in its own temporary directory for one
//! slice of a benchmark, what the slice did to it ([`WalSlice`]), and the
//! interleaved run of a suite's cases on fresh logs ([`run_cases`]).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use walden::{Config, Stats, Wal};

use crate::measure::{
    interleave, remove_slice_dir, slice_dir, Measured, Merge, SliceSettings, TempDirError,
};

/// Why a Walden benchmark slice failed.
#[derive(Debug, thiserror::Error)]
pub enum FreshWalError {
    /// The temporary directory could not be created or removed.
    #[error(transparent)]
    TempDir(#[from] TempDirError),
    /// The engine failed.
    #[error(transparent)]
    Wal(#[from] walden::Error),
}

/// A log in a temporary directory (removed when the slice ends).
pub struct FreshWal {
    /// The log.
    pub wal: Wal,
    dir: tempfile::TempDir,
    stats: Stats,
    position: u64,
}

impl FreshWal {
    /// Creates a log with `config` in a new directory under `parent`.
    pub fn create(parent: &Path, config: Config) -> Result<FreshWal, FreshWalError> {
        let dir = slice_dir(parent, "walden-bench-")?;
        let wal = Wal::create(dir.path(), config)?;
        let stats = wal.stats();
        let position = wal.insert_position().as_u64();
        Ok(FreshWal {
            wal,
            dir,
            stats,
            position,
        })
    }

    /// Closes the log, removes its directory and returns what happened
    /// since [`FreshWal::create`], with `measured` from the threads.
    pub fn finish(self, measured: Measured) -> Result<WalSlice, FreshWalError> {
        let stats = self.wal.stats();
        let wal_bytes = self.wal.insert_position().as_u64() - self.position;
        self.wal.close()?;
        remove_slice_dir(self.dir)?;
        Ok(WalSlice {
            measured,
            records: stats.records - self.stats.records,
            wal_bytes,
            syncs: stats.writer.syncs - self.stats.writer.syncs,
            writes: stats.writer.writes - self.stats.writer.writes,
        })
    }
}

/// What one or more slices on fresh logs measured.
#[derive(Clone, Debug, Default)]
pub struct WalSlice {
    /// Operations and latencies seen by the threads.
    pub measured: Measured,
    /// Records inserted.
    pub records: u64,
    /// WAL bytes: the insert position's advance, page headers included (as
    /// PostgreSQL's `pg_current_wal_lsn()` differences count them).
    pub wal_bytes: u64,
    /// Syncs (fdatasync calls, or durable O_DSYNC writes).
    pub syncs: u64,
    /// `write` calls.
    pub writes: u64,
}

impl Merge for WalSlice {
    fn merge(&mut self, other: &WalSlice) {
        self.measured.merge(&other.measured);
        self.records += other.records;
        self.wal_bytes += other.wal_bytes;
        self.syncs += other.syncs;
        self.writes += other.writes;
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
        WalFigures {
            ops,
            seconds,
            ops_per_sec: per_sec(ops),
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
        }
    }
}

/// A case and the figures its slices add up to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseFigures<C> {
    /// The case.
    pub case: C,
    /// Operations, rates, syncs and latency.
    #[serde(flatten)]
    pub figures: WalFigures,
}

/// Runs every case in interleaved slices as `settings` says, each slice
/// measured by `run_slice(case, dir, slice)` (typically on a [`FreshWal`]
/// under `dir`); `after` is called after each slice. Returns each case's
/// figures, in case order.
pub fn run_cases<C: Copy>(
    cases: &[C],
    settings: &SliceSettings,
    mut run_slice: impl FnMut(C, &Path, Duration) -> Result<WalSlice, FreshWalError>,
    after: impl FnMut(C),
) -> Result<Vec<CaseFigures<C>>, FreshWalError> {
    let merged = interleave(
        cases,
        settings.slices,
        |case| run_slice(case, &settings.dir, settings.slice),
        after,
    )?;
    Ok(merged
        .iter()
        .map(|(case, slice)| CaseFigures {
            case: *case,
            figures: slice.into(),
        })
        .collect())
}
