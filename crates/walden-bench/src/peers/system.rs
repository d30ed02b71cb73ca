//! What a log under test is: the systems ([`System`]), the workloads
//! ([`Workload`]), the operation and log every system implements
//! ([`PeerLog`]) and their errors ([`PeerError`]).

use serde::{Deserialize, Serialize};

use crate::measure::{TempDirError, WriteBackError};

/// A log under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum System {
    /// Walden in the configuration [`super::best_config`] describes.
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
        by_name("system", &System::ALL, System::name, s)
    }
}

/// The one of `all` that `name` calls `s`, or an error listing the names.
fn by_name<T: Copy>(
    what: &str,
    all: &[T],
    name: fn(T) -> &'static str,
    s: &str,
) -> Result<T, String> {
    all.iter().copied().find(|&t| name(t) == s).ok_or_else(|| {
        let names: Vec<_> = all.iter().map(|&t| name(t)).collect();
        format!("unknown {what} {s:?}: expected one of {}", names.join(", "))
    })
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

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Workload, String> {
        by_name("workload", &Workload::ALL, Workload::name, s)
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
    /// The page cache could not be written back before the measured
    /// window.
    #[error(transparent)]
    WriteBack(#[from] WriteBackError),
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
