//! walden-raft's `WaldenLogStore` as a [`RaftLog`]: openraft entries whose
//! request is the payload, appended with `append` (waiting for its flush
//! callback) and read with `try_get_log_entries`, driven by a
//! current-thread tokio runtime.

use std::io::Cursor;
use std::path::Path;

use openraft::storage::RaftLogStorageExt;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader};
use walden::{Config, SyncMethod};
use walden_raft::WaldenLogStore;

use super::{RaftBenchError, RaftLog, RaftSystem, PAYLOAD};

openraft::declare_raft_types!(
    /// Requests are the payload, as strings.
    pub BenchConfig
);

struct StoreLog {
    runtime: tokio::runtime::Runtime,
    store: WaldenLogStore<BenchConfig>,
    payload: String,
}

fn failed(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> RaftBenchError {
    RaftBenchError::new(RaftSystem::WaldenRaft, e)
}

/// Opens a store in `dir`: 16 MiB segments, `fdatasync` if `sync`.
pub(super) fn open(dir: &Path, sync: bool) -> Result<Box<dyn RaftLog>, RaftBenchError> {
    let config = Config {
        segment_size: 16 << 20,
        sync_method: if sync {
            SyncMethod::Fdatasync
        } else {
            SyncMethod::None
        },
        ..Config::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    let store = WaldenLogStore::open(dir, config).map_err(failed)?;
    Ok(Box::new(StoreLog {
        runtime,
        store,
        payload: "r".repeat(PAYLOAD),
    }))
}

impl RaftLog for StoreLog {
    fn append(&mut self, first: u64, count: u64) -> Result<(), RaftBenchError> {
        let entries = (first..first + count).map(|i| Entry::<BenchConfig> {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), i),
            payload: EntryPayload::Normal(self.payload.clone()),
        });
        self.runtime
            .block_on(self.store.blocking_append(entries))
            .map_err(failed)
    }

    fn read(&mut self, first: u64, count: u64) -> Result<usize, RaftBenchError> {
        let entries = self
            .runtime
            .block_on(self.store.try_get_log_entries(first..first + count))
            .map_err(failed)?;
        Ok(entries
            .iter()
            .map(|e| match &e.payload {
                EntryPayload::Normal(request) => request.len(),
                _ => 0,
            })
            .sum())
    }
}
