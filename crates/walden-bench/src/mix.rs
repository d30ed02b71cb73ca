//! `mix`: seed 001's append-only case (experiment E2 of algorithms.md):
//! each thread loops over transactions of 20 small records (66 bytes, the
//! OLTP average of E3) then a commit record, flushed. Run per reservation
//! design, so that the design's share of a realistic insert mix shows.

pub mod suite;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use walden::rmgr::{RM_MIN_CUSTOM_ID, RM_XACT_ID, XLOG_XACT_COMMIT};
use walden::{Config, Record, SyncMethod};

use crate::design::Design;
use crate::fresh_wal::{run_cases, thread_slice, CaseFigures, FreshWalError, LogSetup, WalSlice};
use crate::measure::{grid, SliceSettings, Timing};

/// Records per transaction before the commit record (seed 001: a
/// transaction of 20 `INSERT INTO pgbench_history`).
pub const RECORDS_PER_TRANSACTION: usize = 20;
/// Encoded size of each small record (E3: ~66 bytes on average).
pub const SMALL_RECORD_BYTES: usize = 66;

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MixCase {
    /// Reservation design and format.
    #[serde(flatten)]
    pub design: Design,
    /// How the commit is made durable (`None`: written, not synced).
    #[serde(
        serialize_with = "crate::serde_display",
        deserialize_with = "crate::serde_parse"
    )]
    pub sync_method: SyncMethod,
    /// Threads.
    pub threads: usize,
}

impl MixCase {
    /// The configuration of this case over `base`: the case's format,
    /// reservation and sync method.
    pub fn config(&self, base: &Config) -> Config {
        Config {
            format: self.design.format,
            reservation: self.design.reservation,
            sync_method: self.sync_method,
            ..base.clone()
        }
    }
}

/// What one case measured: transactions (`ops`), records, syncs, latency.
pub type MixResult = CaseFigures<MixCase>;

/// Every combination, grouped by sync method, then thread count.
pub fn cases(designs: &[Design], sync_methods: &[SyncMethod], threads: &[usize]) -> Vec<MixCase> {
    grid(&grid(sync_methods, threads), designs)
        .into_iter()
        .map(|((sync_method, threads), design)| MixCase {
            design,
            sync_method,
            threads,
        })
        .collect()
}

/// A thread's records: the small one and the commit.
fn transaction(thread: usize) -> (Record<'static>, Record<'static>) {
    let xid = 1000 + thread as u32;
    // 24-byte header + 2-byte short data header + data.
    let small = Record::new(RM_MIN_CUSTOM_ID, 0, vec![b'h'; SMALL_RECORD_BYTES - 26]).with_xid(xid);
    // A commit record's main data starts with the commit timestamp.
    let commit = Record::new(RM_XACT_ID, XLOG_XACT_COMMIT, vec![0; 8]).with_xid(xid);
    (small, commit)
}

/// Measures one slice of `case` on a log set up as `setup` under `dir`.
pub fn run_slice(
    case: MixCase,
    setup: LogSetup,
    base: &Config,
    dir: &Path,
    duration: Duration,
) -> Result<WalSlice, FreshWalError> {
    let config = case.config(base);
    thread_slice!(dir, setup, duration; config, case.threads, Timing::Latency; |wal, thread| {
        let (small, commit) = transaction(thread);
        Ok(move || {
            for _ in 0..RECORDS_PER_TRANSACTION {
                wal.insert(&small)?;
            }
            wal.insert_and_flush(&commit).map(drop)
        })
    })
}

/// Runs every case with every setup in interleaved slices, each on a log
/// configured as [`MixCase::config`] over `base`; `after` is called after
/// each slice.
pub fn run(
    cases: &[MixCase],
    setups: &[LogSetup],
    base: &Config,
    settings: &SliceSettings,
    after: impl FnMut(MixCase, LogSetup),
) -> Result<Vec<MixResult>, FreshWalError> {
    run_cases(
        cases,
        setups,
        settings,
        |case, setup, dir, slice| run_slice(case, setup, base, dir, slice),
        after,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_record_has_the_oltp_size() {
        let (small, commit) = transaction(0);
        assert_eq!(small.encoded_len(), SMALL_RECORD_BYTES);
        assert_eq!(commit.rmid, RM_XACT_ID);
    }

    #[test]
    fn every_design_runs_whole_transactions() {
        let dir = tempfile::tempdir().unwrap();
        let base = Config {
            segment_size: 1 << 20,
            buffers: 1 << 20,
            ..Config::default()
        };
        for case in cases(&Design::ALL, &[SyncMethod::None], &[2]) {
            let slice = run_slice(
                case,
                LogSetup::default(),
                &base,
                dir.path(),
                Duration::from_millis(50),
            )
            .unwrap();
            let transactions = slice.measured.ops;
            assert!(transactions > 0, "{case:?}");
            // Every transaction inserted its 21 records; none was cut short.
            assert_eq!(slice.records, transactions * 21, "{case:?}");
            assert_eq!(slice.syncs, 0, "{case:?}: sync method None never syncs");
        }
    }
}
