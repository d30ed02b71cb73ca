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
pub(crate) use raft_engine_log::IndexedBytes;
#[cfg(feature = "peers")]
mod rocksdb_log;
mod system;
#[cfg(feature = "peers")]
mod wal_db_log;
mod walden_log;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measure::{
    grid, interleave, remove_slice_dir, run_threads, slice_dir, write_back, Measured,
    SliceSettings, Timing,
};

pub use system::{Op, PeerError, PeerLog, System, Workload};
pub use walden_log::{best_config, WaldenSetup};

/// Payload of every record, bytes.
pub const PAYLOAD: usize = 100;

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
    write_back(case_dir.path())?;
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
        for workload in Workload::ALL {
            assert_eq!(workload.name().parse::<Workload>().unwrap(), workload);
        }
        assert!("sync".parse::<Workload>().is_err());
    }

    #[cfg(not(feature = "peers"))]
    #[test]
    fn a_peer_outside_this_build_says_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(System::Rocksdb, dir.path()).err().unwrap();
        assert!(err.to_string().contains("--features peers"), "{err}");
    }
}
