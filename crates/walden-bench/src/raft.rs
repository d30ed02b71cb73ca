//! `raft`: appending and reading Raft log entries through `walden-raft`'s
//! log store (openraft's `RaftLogStorage` on a Walden WAL) and through
//! raft-engine (TiKV's Raft log; built with `--features peers`), on the
//! same entries: N entries of a 100-byte payload, appended in batches of B
//! (one `append` / one `LogBatch` per batch, synced or not), then read
//! back in ranges of B.
//!
//! Each system keeps its own index in memory and reads entries from its
//! files; walden-raft also keeps its default cache of the newest entries
//! ([`walden_raft::DEFAULT_CACHE_BYTES`]), so with N entries larger than
//! it, most reads go to the WAL.

#[cfg(feature = "peers")]
mod engine;
mod store;
pub mod suite;

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Payload of every entry, bytes.
pub const PAYLOAD: usize = 100;

/// A Raft log under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaftSystem {
    /// `walden_raft::WaldenLogStore`.
    WaldenRaft,
    /// raft-engine, one region.
    RaftEngine,
}

impl RaftSystem {
    /// The name in tables and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            RaftSystem::WaldenRaft => "walden-raft",
            RaftSystem::RaftEngine => "raft-engine",
        }
    }

    /// The systems this build has: raft-engine needs `--features peers`.
    pub fn available() -> Vec<RaftSystem> {
        let mut systems = vec![RaftSystem::WaldenRaft];
        if cfg!(feature = "peers") {
            systems.push(RaftSystem::RaftEngine);
        }
        systems
    }
}

/// Why a Raft log failed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", .system.name())]
pub struct RaftBenchError {
    /// The system.
    pub system: RaftSystem,
    /// What failed.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl RaftBenchError {
    /// `source`, from `system`.
    pub fn new(
        system: RaftSystem,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        RaftBenchError {
            system,
            source: source.into(),
        }
    }
}

/// A Raft log the suite drives: entries `first..first + count`, each a
/// [`PAYLOAD`]-byte payload.
trait RaftLog {
    /// Appends the entries as one batch; durable on return if `sync`.
    fn append(&mut self, first: u64, count: u64) -> Result<(), RaftBenchError>;
    /// Reads the entries back; returns their payload bytes.
    fn read(&mut self, first: u64, count: u64) -> Result<usize, RaftBenchError>;
}

/// Opens `system` in the empty directory `dir`.
fn open(system: RaftSystem, dir: &Path, sync: bool) -> Result<Box<dyn RaftLog>, RaftBenchError> {
    match system {
        RaftSystem::WaldenRaft => store::open(dir, sync),
        #[cfg(feature = "peers")]
        RaftSystem::RaftEngine => engine::open(dir, sync),
        #[cfg(not(feature = "peers"))]
        RaftSystem::RaftEngine => Err(RaftBenchError::new(
            system,
            "not in this build (build with --features peers)",
        )),
    }
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaftCase {
    /// The log.
    pub system: RaftSystem,
    /// Entries per append and per read.
    pub batch: u64,
    /// Appends synced (`fdatasync`) before they return.
    pub sync: bool,
}

/// What one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RaftResult {
    /// The case.
    pub case: RaftCase,
    /// Entries appended and read.
    pub entries: u64,
    /// Entries appended per second.
    pub append_per_sec: f64,
    /// Entries read back per second.
    pub read_per_sec: f64,
}

/// Appends `entries` entries in batches, then reads them back, in a new
/// directory under `dir`.
pub fn run_case(case: RaftCase, dir: &Path, entries: u64) -> Result<RaftResult, RaftBenchError> {
    let io = |e: std::io::Error| RaftBenchError::new(case.system, e);
    let case_dir = tempfile::Builder::new()
        .prefix(case.system.name())
        .tempdir_in(dir)
        .map_err(io)?;
    let mut log = open(case.system, case_dir.path(), case.sync)?;
    let batch = case.batch.max(1);
    let started = Instant::now();
    for first in (1..=entries).step_by(batch as usize) {
        log.append(first, batch.min(entries + 1 - first))?;
    }
    let append_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut bytes = 0;
    for first in (1..=entries).step_by(batch as usize) {
        bytes += log.read(first, batch.min(entries + 1 - first))?;
    }
    let read_secs = started.elapsed().as_secs_f64();
    if bytes != entries as usize * PAYLOAD {
        return Err(RaftBenchError::new(
            case.system,
            format!(
                "read back {bytes} payload bytes, not {}",
                entries as usize * PAYLOAD
            ),
        ));
    }
    drop(log);
    case_dir.close().map_err(io)?;
    Ok(RaftResult {
        case,
        entries,
        append_per_sec: entries as f64 / append_secs,
        read_per_sec: entries as f64 / read_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walden_raft_reads_back_every_entry_it_appended() {
        let dir = tempfile::tempdir().unwrap();
        for (batch, sync) in [(1, false), (7, true)] {
            let case = RaftCase {
                system: RaftSystem::WaldenRaft,
                batch,
                sync,
            };
            let r = run_case(case, dir.path(), 500).unwrap();
            assert_eq!(r.entries, 500);
            assert!(r.append_per_sec > 0.0 && r.read_per_sec > 0.0, "{r:?}");
        }
    }
}
