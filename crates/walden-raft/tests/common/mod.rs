//! Shared by the integration tests: a type config, builders, and a small
//! Walden configuration.
#![allow(dead_code)] // each test file uses part of this

use std::io::Cursor;
use std::path::Path;

use openraft::storage::RaftLogStorage;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftLogReader};
use walden::{Config, SyncMethod};
use walden_raft::{AppState, WaldenLogStore};

openraft::declare_raft_types!(
    /// Requests and responses are strings; everything else is openraft's default.
    pub TestConfig
);

/// The log store under test.
pub type Store = WaldenLogStore<TestConfig>;

/// Application state for the tests: the requests applied, in order.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct Applied(pub Vec<String>);

impl AppState<TestConfig> for Applied {
    fn apply(&mut self, request: &String) -> String {
        self.0.push(request.clone());
        format!("applied {request}")
    }
}

/// 1 MiB segments, 1 MiB of buffers, fdatasync.
pub fn wal_config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    }
}

/// Log id `(term, node 0, index)`.
pub fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 0), index)
}

/// A normal entry at `(term, index)` whose request is `payload`.
pub fn entry(term: u64, index: u64, payload: String) -> Entry<TestConfig> {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(payload),
    }
}

/// The request stored for entry `index` in tests that check payloads:
/// `len` bytes, derived from the index.
pub fn payload(index: u64, len: usize) -> String {
    let unit = format!("{index:08x}");
    unit.repeat(len / unit.len() + 1)[..len].to_owned()
}

/// Every entry of `store` as (log id, request).
pub async fn entries(store: &mut Store) -> Vec<(LogId<u64>, Option<String>)> {
    store
        .try_get_log_entries(..)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let request = match e.payload {
                EntryPayload::Normal(r) => Some(r),
                _ => None,
            };
            (e.log_id, request)
        })
        .collect()
}

/// (last purged, last log id) of `store`.
pub async fn log_state(store: &mut Store) -> (Option<LogId<u64>>, Option<LogId<u64>>) {
    let st = store.get_log_state().await.unwrap();
    (st.last_purged_log_id, st.last_log_id)
}

/// Names of the WAL segment files in `dir`, sorted.
pub fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| walden::internals::is_segment_file_name(n))
        .collect();
    names.sort();
    names
}
