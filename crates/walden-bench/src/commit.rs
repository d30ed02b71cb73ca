//! `commit`: T threads, each looping "insert one record, flush it" — a
//! durable commit per record, where group commit decides the rate.
//!
//! With [`CommitRecord::LogicalMessage`] the loop is what
//! `pg_logical_emit_message(true, 'test', payload)` does in an autocommit
//! transaction, so the same cases run against PostgreSQL 15 itself
//! (`scripts/pg-bench`) compare as WAL bytes per second.

pub mod limits_beside;
pub mod suite;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use walden::rmgr::RM_MIN_CUSTOM_ID;
use walden::{Config, Record, SyncMethod};

use crate::fresh_wal::{run_cases, thread_slice, CaseFigures, FreshWalError, LogSetup, WalSlice};
use crate::measure::{grid, SliceSettings, Timing};

/// The record each commit inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitRecord {
    /// A record of a custom resource manager whose main data is the payload.
    Custom,
    /// A transactional logical message with prefix `test` (PostgreSQL's
    /// `pg_logical_emit_message(true, 'test', payload)`).
    LogicalMessage,
}

impl CommitRecord {
    /// The record thread `thread` inserts, with `payload` bytes of data.
    pub fn record(self, payload: usize, thread: usize) -> Record<'static> {
        let data = vec![b'0'; payload];
        // As PostgreSQL assigns one per writing transaction.
        let xid = 1000 + thread as u32;
        match self {
            CommitRecord::Custom => Record::new(RM_MIN_CUSTOM_ID, 0, data).with_xid(xid),
            CommitRecord::LogicalMessage => {
                Record::logical_message(true, "test", &data).with_xid(xid)
            }
        }
    }
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitCase {
    /// How flushed WAL is made durable (`None`: written, never synced, as
    /// PostgreSQL with `fsync = off`).
    #[serde(
        serialize_with = "crate::serde_display",
        deserialize_with = "crate::serde_parse"
    )]
    pub sync_method: SyncMethod,
    /// Payload bytes per record.
    pub payload: usize,
    /// Committing threads.
    pub threads: usize,
}

impl CommitCase {
    /// The configuration of this case's logs over `base`: the case's sync
    /// method.
    pub fn config(&self, base: &Config) -> Config {
        Config {
            sync_method: self.sync_method,
            ..base.clone()
        }
    }
}

/// What one case measured: commits (`ops`), rates, syncs and latency.
pub type CommitResult = CaseFigures<CommitCase>;

/// Every combination, grouped by payload, then sync method.
pub fn cases(
    sync_methods: &[SyncMethod],
    payloads: &[usize],
    threads: &[usize],
) -> Vec<CommitCase> {
    grid(&grid(payloads, sync_methods), threads)
        .into_iter()
        .map(|((payload, sync_method), threads)| CommitCase {
            sync_method,
            payload,
            threads,
        })
        .collect()
}

/// Measures one slice of `case` on a log set up as `setup` under `dir`.
pub fn run_slice(
    case: CommitCase,
    setup: LogSetup,
    record: CommitRecord,
    config: &Config,
    dir: &Path,
    duration: Duration,
) -> Result<WalSlice, FreshWalError> {
    let config = case.config(config);
    thread_slice!(dir, setup, duration; config, case.threads, Timing::Latency; |wal, thread| {
        let rec = record.record(case.payload, thread);
        Ok(move || wal.insert_and_flush(&rec).map(drop))
    })
}

/// Runs every case with every setup in interleaved slices, each
/// inserting `record`s into a log with `config` (its `sync_method` is the
/// case's); `after` is called after each slice.
pub fn run(
    cases: &[CommitCase],
    setups: &[LogSetup],
    record: CommitRecord,
    config: &Config,
    settings: &SliceSettings,
    after: impl FnMut(CommitCase, LogSetup),
) -> Result<Vec<CommitResult>, FreshWalError> {
    run_cases(
        cases,
        setups,
        settings,
        |case, setup, dir, slice| run_slice(case, setup, record, config, dir, slice),
        after,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fresh_wal::WalFigures;

    #[test]
    fn two_threads_commit_durably_with_at_most_one_sync_per_commit() {
        let dir = tempfile::tempdir().unwrap();
        for sync_method in [SyncMethod::Fdatasync, SyncMethod::OpenDatasync] {
            let case = CommitCase {
                sync_method,
                payload: 100,
                threads: 2,
            };
            let config = Config {
                segment_size: 1 << 20,
                buffers: 1 << 20,
                ..Config::default()
            };
            let slice = run_slice(
                case,
                LogSetup::default(),
                CommitRecord::Custom,
                &config,
                dir.path(),
                Duration::from_millis(100),
            )
            .unwrap();
            let m = &slice.measured;
            assert!(m.ops >= 2, "{sync_method:?}: {} commits", m.ops);
            assert_eq!(slice.records, m.ops);
            assert!(slice.syncs >= 1 && slice.syncs <= m.ops, "{slice:?}");
            assert!(m.latency.percentile(50).unwrap() > 0);
            let per_record = CommitRecord::Custom.record(100, 0).encoded_len() as u64;
            assert!(slice.wal_bytes >= m.ops * per_record, "{slice:?}");
            let figures = WalFigures::from(&slice);
            assert!(figures.syncs_per_op <= 1.0 && figures.p99_ns >= figures.p50_ns);
        }
        // Every slice removed its log.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn logical_messages_match_postgres_record_sizes() {
        let rec = CommitRecord::LogicalMessage.record(100, 3);
        assert_eq!(rec.encoded_len(), 55 + 100);
        assert_eq!(rec.xid, 1003);
    }

    #[test]
    fn cases_cover_every_combination_in_order() {
        let cases = cases(
            &[SyncMethod::Fdatasync, SyncMethod::None],
            &[100, 1 << 20],
            &[1, 2, 64],
        );
        assert_eq!(cases.len(), 12);
        assert_eq!(cases[0].payload, 100);
        assert_eq!(cases[3].sync_method, SyncMethod::None);
        assert_eq!(cases[11].threads, 64);
        assert_eq!(cases[11].payload, 1 << 20);
    }
}
