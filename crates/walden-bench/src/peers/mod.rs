//! `peers`: Walden against other write-ahead logs on the same workloads, in
//! the same run: T threads each appending 100-byte records, either
//! non-durably ([`Workload::Append`]: the call returns once the record is
//! in the log's memory or the OS page cache) or durably
//! ([`Workload::Commit`]: the call returns once the record is synced with
//! `fdatasync` or stronger, group commit allowed).
//!
//! Walden runs in every build; the peers (raft-engine, RocksDB's WAL,
//! okaywal, wal-db) only with the `peers` cargo feature, which keeps default
//! builds fast (RocksDB alone compiles for many minutes).

pub mod suite;

#[cfg(feature = "peers")]
mod okaywal_log;
#[cfg(feature = "peers")]
mod raft_engine_log;
#[cfg(feature = "peers")]
mod rocksdb_log;
#[cfg(feature = "peers")]
mod wal_db_log;
mod walden_log;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measure::{
    grid, interleave, remove_slice_dir, run_threads, slice_dir, Measured, SliceSettings,
    TempDirError, Timing,
};

pub use walden_log::{best_config, WaldenSetup};

/// Payload of every record, bytes.
pub const PAYLOAD: usize = 100;

/// A log under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// Walden in the configuration [`best_config`] describes.
    Walden,
    /// Walden with `Config::default()` (PostgreSQL's settings).
    WaldenDefault,
    /// TiKV's raft-engine: one `LogBatch` of one entry per write.
    RaftEngine,
    /// RocksDB through rust-rocksdb: `put` with the WAL on (its write path
    /// also inserts into the memtable).
    Rocksdb,
    /// okaywal: one entry of one chunk per commit.
    Okaywal,
    /// wal-db: `append` / `append_and_sync`.
    WalDb,
}

impl System {
    /// Every system, in table order.
    pub const ALL: [System; 6] = [
        System::Walden,
        System::WaldenDefault,
        System::RaftEngine,
        System::Rocksdb,
        System::Okaywal,
        System::WalDb,
    ];

    /// The name in tables, charts and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            System::Walden => "walden",
            System::WaldenDefault => "walden-default",
            System::RaftEngine => "raft-engine",
            System::Rocksdb => "rocksdb",
            System::Okaywal => "okaywal",
            System::WalDb => "wal-db",
        }
    }

    /// True if this build can run the system (peers need the `peers` feature).
    pub const fn available(self) -> bool {
        matches!(self, System::Walden | System::WaldenDefault) || cfg!(feature = "peers")
    }

    /// True if the system offers the workload: okaywal syncs every commit,
    /// so it has no non-durable append.
    pub const fn supports(self, workload: Workload) -> bool {
        !matches!((self, workload), (System::Okaywal, Workload::Append))
    }

    /// The systems this build can run.
    pub fn available_systems() -> Vec<System> {
        System::ALL.into_iter().filter(|s| s.available()).collect()
    }
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for System {
    type Err = String;
    fn from_str(s: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|system| system.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = System::ALL.iter().map(|s| s.name()).collect();
                format!("unknown system {s:?}: expected one of {}", names.join(", "))
            })
    }
}

/// What each operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Append one record; no sync.
    Append,
    /// Append one record and wait until it is durable.
    Commit,
}

impl Workload {
    /// Both workloads.
    pub const ALL: [Workload; 2] = [Workload::Append, Workload::Commit];

    /// The name in tables and charts.
    pub const fn name(self) -> &'static str {
        match self {
            Workload::Append => "append",
            Workload::Commit => "commit",
        }
    }
}

/// A peer's failure, naming the system.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The system failed.
    #[error("{system}: {source}")]
    Failed {
        /// The system.
        system: System,
        /// Its error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// This build cannot run the system.
    #[error("{0}: not in this build: rebuild with `--features peers` (scripts/bench --peers)")]
    NotBuilt(System),
    /// The system has no such workload.
    #[error("{0} has no {1:?} workload")]
    Unsupported(System, Workload),
    /// The temporary directory failed.
    #[error(transparent)]
    TempDir(#[from] TempDirError),
}

impl PeerError {
    /// Wraps `source` as `system`'s failure.
    pub fn failed(
        system: System,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        PeerError::Failed {
            system,
            source: source.into(),
        }
    }
}

/// One operation of one thread.
pub type Op<'a> = Box<dyn FnMut() -> Result<(), PeerError> + 'a>;

/// A log opened for one slice.
pub trait PeerLog: Sync {
    /// The operation thread `thread` repeats for `workload`, with records
    /// of `payload` bytes.
    fn op(&self, thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError>;

    /// Closes the log.
    fn close(self: Box<Self>) -> Result<(), PeerError>;
}

/// Opens `system` in the empty directory `dir`.
pub fn open(system: System, dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    match system {
        System::Walden => walden_log::open(WaldenSetup::Best, dir),
        System::WaldenDefault => walden_log::open(WaldenSetup::Default, dir),
        #[cfg(feature = "peers")]
        System::RaftEngine => raft_engine_log::open(dir),
        #[cfg(feature = "peers")]
        System::Rocksdb => rocksdb_log::open(dir),
        #[cfg(feature = "peers")]
        System::Okaywal => okaywal_log::open(dir),
        #[cfg(feature = "peers")]
        System::WalDb => wal_db_log::open(dir),
        #[cfg(not(feature = "peers"))]
        other => Err(PeerError::NotBuilt(other)),
    }
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerCase {
    /// The log.
    pub system: System,
    /// The workload.
    pub workload: Workload,
    /// Threads.
    pub threads: usize,
}

/// What one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerResult {
    /// The case.
    pub case: PeerCase,
    /// Operations completed.
    pub ops: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Payload megabytes (10⁶) per second.
    pub payload_mb_per_sec: f64,
    /// Median latency, ns (commits only).
    pub p50_ns: Option<u64>,
    /// 99th-percentile latency, ns (commits only).
    pub p99_ns: Option<u64>,
}

/// Every supported combination, grouped by workload, then threads.
pub fn cases(systems: &[System], workloads: &[Workload], threads: &[usize]) -> Vec<PeerCase> {
    grid(&grid(workloads, threads), systems)
        .into_iter()
        .filter(|&((workload, _), system)| system.supports(workload))
        .map(|((workload, threads), system)| PeerCase {
            system,
            workload,
            threads,
        })
        .collect()
}

/// Measures one slice of `case` in a new directory under `dir`.
pub fn run_slice(case: PeerCase, dir: &Path, duration: Duration) -> Result<Measured, PeerError> {
    let case_dir = slice_dir(dir, &format!("{}-", case.system.name()))?;
    let log = open(case.system, case_dir.path())?;
    let timing = match case.workload {
        Workload::Append => Timing::CountOnly,
        Workload::Commit => Timing::Latency,
    };
    let measured = run_threads(case.threads, duration, timing, |thread| {
        log.op(thread, case.workload, PAYLOAD)
    });
    let closed = log.close();
    let measured = measured?;
    closed?;
    remove_slice_dir(case_dir)?;
    Ok(measured)
}

/// Runs every case in interleaved slices; `after` is called after each slice.
pub fn run(
    cases: &[PeerCase],
    settings: &SliceSettings,
    after: impl FnMut(PeerCase),
) -> Result<Vec<PeerResult>, PeerError> {
    let measured = interleave(
        cases,
        settings.slices,
        |case| run_slice(case, &settings.dir, settings.slice),
        after,
    )?;
    Ok(measured
        .iter()
        .map(|&(case, ref m)| PeerResult {
            case,
            ops: m.ops,
            seconds: m.seconds,
            ops_per_sec: m.per_sec(),
            payload_mb_per_sec: m.per_sec() * PAYLOAD as f64 / 1e6,
            p50_ns: m.latency.percentile(50),
            p99_ns: m.latency.percentile(99),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_available_system_runs_both_workloads() {
        let dir = tempfile::tempdir().unwrap();
        for case in cases(&System::available_systems(), &Workload::ALL, &[2]) {
            let m = run_slice(case, dir.path(), Duration::from_millis(50)).unwrap();
            assert!(m.ops > 0, "{case:?}");
            if case.workload == Workload::Commit {
                assert_eq!(m.latency.total(), m.ops, "{case:?}");
            }
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn okaywal_has_no_append_case() {
        let c = cases(&[System::Okaywal, System::Walden], &Workload::ALL, &[1]);
        assert_eq!(c.len(), 3);
        assert!(c
            .iter()
            .all(|c| c.system != System::Okaywal || c.workload == Workload::Commit));
    }

    #[test]
    fn names_round_trip() {
        for system in System::ALL {
            assert_eq!(system.name().parse::<System>().unwrap(), system);
        }
        assert!("postgres"
            .parse::<System>()
            .unwrap_err()
            .contains("raft-engine"));
    }

    #[cfg(not(feature = "peers"))]
    #[test]
    fn a_peer_outside_this_build_says_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(System::Rocksdb, dir.path()).err().unwrap();
        assert!(err.to_string().contains("--features peers"), "{err}");
    }
}
