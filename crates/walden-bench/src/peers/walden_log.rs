//! Walden as a [`PeerLog`]: `insert` for an append, `insert_and_flush` for a
//! commit, records of a custom resource manager carrying the payload.

use std::path::Path;

use walden::rmgr::RM_MIN_CUSTOM_ID;
use walden::{Config, Eviction, PageInitKind, Record, ReservationKind, SyncMethod, Wal, WalFormat};

use super::system::{Op, PeerError, PeerLog, System, Workload};

/// Which Walden configuration runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaldenSetup {
    /// [`best_config`].
    Best,
    /// `Config::default()`: PostgreSQL's settings.
    Default,
}

/// Walden's fastest safe configuration for these workloads, as the strategy
/// suites of the same `walden bench all` run measure it (docs/performance.md
/// gives the numbers): the `SelfLsn` format with `Unlinked` reservation (one
/// `fetch_add`, stale records still detected), cooperative page
/// initialisation, batched eviction and, since the evening of 2026-12-06,
/// the CRC beside the write (`Config::crc_helper`: ahead in every row of
/// three alternations at 1 and 2 threads, docs/io.md); everything else as
/// `Config::default()` (16 MiB segments and buffers, as PostgreSQL's
/// defaults), with `fdatasync`, like the peers.
pub fn best_config() -> Config {
    Config {
        format: WalFormat::SelfLsn,
        reservation: ReservationKind::Unlinked,
        page_init: PageInitKind::Cooperative,
        eviction: Eviction::Batch,
        sync_method: SyncMethod::Fdatasync,
        crc_helper: true,
        ..Config::default()
    }
}

/// An open Walden log.
struct WaldenLog {
    wal: Wal,
    system: System,
}

/// Creates a log in `dir`.
pub(super) fn open(setup: WaldenSetup, dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    let (config, system) = match setup {
        WaldenSetup::Best => (best_config(), System::Walden),
        WaldenSetup::Default => (Config::default(), System::WaldenDefault),
    };
    let wal = Wal::create(dir, config).map_err(|e| PeerError::failed(system, e))?;
    Ok(Box::new(WaldenLog { wal, system }))
}

impl PeerLog for WaldenLog {
    fn op(&self, thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError> {
        let rec =
            Record::new(RM_MIN_CUSTOM_ID, 0, vec![b'w'; payload]).with_xid(1000 + thread as u32);
        let (wal, system) = (&self.wal, self.system);
        Ok(match workload {
            Workload::Append => Box::new(move || {
                wal.insert(&rec)
                    .map(drop)
                    .map_err(|e| PeerError::failed(system, e))
            }),
            Workload::Commit => Box::new(move || {
                wal.insert_and_flush(&rec)
                    .map(drop)
                    .map_err(|e| PeerError::failed(system, e))
            }),
        })
    }

    fn close(self: Box<Self>) -> Result<(), PeerError> {
        let system = self.system;
        self.wal.close().map_err(|e| PeerError::failed(system, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_configuration_is_valid_and_durable() {
        let config = best_config();
        assert_eq!(config.validate(), Ok(()));
        assert!(config.sync_method.syncs());
        assert!(!config.async_commit);
    }
}
