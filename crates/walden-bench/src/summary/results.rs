//! The results a summary reads: every suite's `results` array in a results
//! directory (and PostgreSQL's, from `scripts/pg-bench`), as [`Results`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::commit::limits_beside::CaseLimits;
use crate::commit::CommitResult;
use crate::error::BenchError;
use crate::limits::{LimitResult, Probe};
use crate::logical::LogicalResult;
use crate::machine::Machine;
use crate::mix::MixResult;
use crate::peers::PeerResult;
use crate::reserve::insert::InsertResult;
use crate::reserve::micro::MicroResult;

/// One `scripts/pg-bench` measurement of PostgreSQL 15.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PgResult {
    /// `pg_logical_emit_message` payload, bytes.
    pub payload: usize,
    /// `fsync = on` (each commit synced) or off.
    pub fsync: bool,
    /// pgbench clients (= threads).
    pub clients: usize,
    /// Transactions (messages) per second.
    pub tps: f64,
    /// WAL bytes per second, from `pg_current_wal_lsn()` before and after.
    pub wal_bytes_per_sec: f64,
    /// Whether the measured run's WAL fitted in the segments recycled
    /// ahead by the warm-up's checkpoint (absent from runs before
    /// `scripts/pg-bench` warmed up).
    #[serde(default)]
    pub steady: Option<bool>,
}

/// Every result the summary uses; a suite that did not run is empty.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Results {
    /// The machine's limits.
    pub limits: Vec<LimitResult>,
    /// `commit`: 100-byte records, insert + flush.
    pub commit: Vec<CommitResult>,
    /// `commit` with PostgreSQL's logical messages: the PostgreSQL workloads.
    pub pg_workloads: Vec<CommitResult>,
    /// The machine's limits measured beside the PostgreSQL workloads'
    /// steady slices (`--limits-beside`); empty where they were not.
    pub pg_workloads_beside: Vec<CaseLimits>,
    /// `mix`: seed 001's append-only transactions per reservation design.
    pub mix: Vec<MixResult>,
    /// `reserve`: seed 001's reservation microbenchmark per design.
    pub reserve: Vec<MicroResult>,
    /// `insert`: the non-durable insert path per design and format.
    pub insert: Vec<InsertResult>,
    /// `insert-scaling`: 66-byte inserts at 1 and 2 threads on the
    /// discarding storage and steady files, in more and longer slices
    /// than `insert`'s, for the insert path's ratios.
    pub insert_scaling: Vec<InsertResult>,
    /// `logical-1mb`: seed 000's 1 MiB messages per page-init and slot setup.
    pub logical: Vec<LogicalResult>,
    /// `peers`.
    pub peers: Vec<PeerResult>,
    /// `scripts/pg-bench`.
    pub postgres: Vec<PgResult>,
    /// The machine the limits suite ran on, if it recorded it.
    pub machine: Option<Machine>,
}

impl Results {
    /// The results of the suites (and of `scripts/pg-bench`) in the
    /// results directory `dir`.
    pub fn read(dir: &Path) -> Result<Results, BenchError> {
        Ok(Results {
            limits: read_results(dir, "limits")?,
            commit: read_results(dir, "commit")?,
            pg_workloads: read_results(dir, "pg-workloads")?,
            pg_workloads_beside: read_beside(dir, "pg-workloads")?,
            mix: read_results(dir, "mix")?,
            reserve: read_results(dir, "reserve")?,
            insert: read_results(dir, "insert")?,
            insert_scaling: read_results(dir, "insert-scaling")?,
            logical: read_results(dir, "logical-1mb")?,
            peers: read_results(dir, "peers")?,
            postgres: read_results(dir, "postgres")?,
            machine: read_machine(dir)?,
        })
    }

    /// The inserts the insert path's ratios come from: `insert-scaling`'s,
    /// or `insert`'s where that suite did not run.
    pub fn insert_for_ratios(&self) -> &[InsertResult] {
        if self.insert_scaling.is_empty() {
            &self.insert
        } else {
            &self.insert_scaling
        }
    }

    /// The limit `probe` measured, if the limits suite ran.
    pub fn limit(&self, probe: Probe) -> Option<&LimitResult> {
        self.limits.iter().find(|l| l.probe == probe)
    }
}

/// The `machine` of `dir/limits.json`; none if absent.
fn read_machine(dir: &Path) -> Result<Option<Machine>, BenchError> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        machine: Option<Machine>,
    }
    Ok(read_file::<File>(dir, "limits")?.and_then(|f| f.machine))
}

/// The `limits_beside` of `dir/name.json` (a commit suite's); empty if the
/// file is absent or has none.
fn read_beside(dir: &Path, name: &str) -> Result<Vec<CaseLimits>, BenchError> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        limits_beside: Option<Vec<CaseLimits>>,
    }
    Ok(read_file::<File>(dir, name)?
        .and_then(|f| f.limits_beside)
        .unwrap_or_default())
}

/// `dir/name.json` parsed; none if the file is absent.
fn read_file<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, BenchError> {
    let path = dir.join(format!("{name}.json"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BenchError::io(format!("reading {}", path.display()))(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(BenchError::json(format!("parsing {}", path.display())))
}

/// The `results` array of `dir/name.json`; empty if the file is absent.
fn read_results<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Vec<T>, BenchError> {
    #[derive(serde::Deserialize)]
    struct File<T> {
        results: Vec<T>,
    }
    Ok(read_file::<File<T>>(dir, name)?.map_or_else(Vec::new, |f| f.results))
}
