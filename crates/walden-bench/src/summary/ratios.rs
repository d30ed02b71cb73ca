//! The summary's ratios, all of figures measured in the same run: Walden
//! against each peer, against the machine's limits and against PostgreSQL 15.

use serde::Serialize;

use super::results::{PgResult, Results};
use crate::commit::CommitResult;
use crate::limits::{Durability, Probe, BLOCK};
use crate::peers::{PeerResult, System, Workload};

/// Walden's best configuration against one peer at one thread count.
#[derive(Clone, Debug, Serialize)]
pub struct PeerRatio {
    /// The workload.
    pub workload: Workload,
    /// Threads.
    pub threads: usize,
    /// The peer.
    pub peer: System,
    /// Walden's operations per second.
    pub walden: f64,
    /// The peer's.
    pub peer_ops_per_sec: f64,
    /// `walden / peer`.
    pub ratio: f64,
}

/// Walden's best configuration against every other system, at `threads`.
pub fn peer_ratios(peers: &[PeerResult], threads: &[usize]) -> Vec<PeerRatio> {
    let rate = |system: System, workload: Workload, t: usize| {
        peers
            .iter()
            .find(|r| r.case.system == system && r.case.workload == workload && r.case.threads == t)
            .map(|r| r.ops_per_sec)
    };
    let mut out = Vec::new();
    for workload in Workload::ALL {
        for &t in threads {
            let Some(walden) = rate(System::Walden, workload, t) else {
                continue;
            };
            for peer in System::ALL.into_iter().filter(|&s| s != System::Walden) {
                if let Some(other) = rate(peer, workload, t).filter(|&r| r > 0.0) {
                    out.push(PeerRatio {
                        workload,
                        threads: t,
                        peer,
                        walden,
                        peer_ops_per_sec: other,
                        ratio: walden / other,
                    });
                }
            }
        }
    }
    out
}

/// Walden against one of the machine's limits.
#[derive(Clone, Debug, Serialize)]
pub struct LimitFraction {
    /// What is compared.
    pub what: String,
    /// Walden's figure.
    pub walden: f64,
    /// The limit's figure, same unit.
    pub limit: f64,
    /// The unit of both.
    pub unit: &'static str,
    /// `walden / limit`.
    pub fraction: f64,
}

/// WAL bytes/s of the Walden PostgreSQL-workload case, if it ran.
fn pg_workload_rate(
    walden: &[CommitResult],
    payload: usize,
    durable: bool,
    threads: usize,
) -> Option<f64> {
    walden
        .iter()
        .find(|r| {
            r.case.payload == payload
                && r.case.sync_method.syncs() == durable
                && r.case.threads == threads
        })
        .map(|r| r.figures.wal_bytes_per_sec)
}

/// Walden's figures as fractions of the limits that bound them.
pub fn limit_fractions(r: &Results) -> Vec<LimitFraction> {
    let mut out = Vec::new();
    let mut push = |what: &str, walden: Option<f64>, limit: Option<f64>, unit| {
        if let (Some(walden), Some(limit)) = (walden, limit.filter(|&l| l > 0.0)) {
            out.push(LimitFraction {
                what: what.to_owned(),
                walden,
                limit,
                unit,
                fraction: walden / limit,
            });
        }
    };
    let walden_peer = |workload, threads| {
        r.peers
            .iter()
            .find(|p| {
                p.case.system == System::Walden
                    && p.case.workload == workload
                    && p.case.threads == threads
            })
            .map(|p| p.ops_per_sec)
    };
    let durable = |bytes, durability| r.limit(Probe::DurableWrite { bytes, durability });
    push(
        "durable 100 B commits, 1 thread / 8 kB write + fdatasync",
        walden_peer(Workload::Commit, 1),
        durable(8 << 10, Durability::Fdatasync).map(|l| l.ops_per_sec),
        "ops/s",
    );
    push(
        "1 MiB messages fsync on, 1 thread / 1 MiB write + fdatasync",
        pg_workload_rate(&r.pg_workloads, BLOCK, true, 1).map(|b| b / 1e9),
        durable(BLOCK, Durability::Fdatasync).and_then(|l| l.gb_per_sec),
        "GB/s",
    );
    push(
        "1 MiB messages fsync off, 2 threads / sequential write to page cache",
        pg_workload_rate(&r.pg_workloads, BLOCK, false, 2).map(|b| b / 1e9),
        r.limit(Probe::BufferedWrite).and_then(|l| l.gb_per_sec),
        "GB/s",
    );
    push(
        "1 MiB messages fsync off, 2 threads / memcpy + CRC-32C, 2 threads",
        pg_workload_rate(&r.pg_workloads, BLOCK, false, 2).map(|b| b / 1e9),
        r.limit(Probe::CopyCrc { threads: 2 })
            .and_then(|l| l.gb_per_sec),
        "GB/s",
    );
    push(
        "100 B appends, 2 threads / one shared cache line (1 / t_x)",
        walden_peer(Workload::Append, 2),
        r.limit(Probe::LineTransfer).map(|l| l.ops_per_sec),
        "ops/s",
    );
    out
}

/// Walden against PostgreSQL 15 on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct PgRatio {
    /// Payload bytes.
    pub payload: usize,
    /// Synced commits (`fsync = on`; Walden: `fdatasync`).
    pub durable: bool,
    /// Threads (pgbench clients).
    pub threads: usize,
    /// Walden's WAL bytes/s.
    pub walden: f64,
    /// PostgreSQL's WAL bytes/s.
    pub postgres: f64,
    /// `walden / postgres`.
    pub ratio: f64,
}

/// Walden against PostgreSQL on every workload both ran.
pub fn pg_ratios(walden: &[CommitResult], postgres: &[PgResult]) -> Vec<PgRatio> {
    postgres
        .iter()
        .filter(|pg| pg.wal_bytes_per_sec > 0.0)
        .filter_map(|pg| {
            let w = pg_workload_rate(walden, pg.payload, pg.fsync, pg.clients)?;
            Some(PgRatio {
                payload: pg.payload,
                durable: pg.fsync,
                threads: pg.clients,
                walden: w,
                postgres: pg.wal_bytes_per_sec,
                ratio: w / pg.wal_bytes_per_sec,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::CommitCase;
    use crate::fixtures::{figures, peer};
    use walden::SyncMethod;

    #[test]
    fn peer_ratios_divide_walden_by_each_peer_at_the_same_threads() {
        let peers = [
            peer(System::Walden, Workload::Commit, 2, 3000.0),
            peer(System::Rocksdb, Workload::Commit, 2, 1000.0),
            peer(System::Rocksdb, Workload::Commit, 64, 500.0),
            peer(System::WalDb, Workload::Commit, 2, 0.0),
        ];
        let ratios = peer_ratios(&peers, &[1, 2, 64]);
        assert_eq!(ratios.len(), 1, "{ratios:?}");
        assert_eq!(ratios[0].peer, System::Rocksdb);
        assert_eq!(ratios[0].ratio, 3.0);
    }

    #[test]
    fn postgres_ratios_match_payload_durability_and_threads() {
        let walden = [
            CommitResult {
                case: CommitCase {
                    sync_method: SyncMethod::None,
                    payload: 100,
                    threads: 2,
                },
                setup: Default::default(),
                figures: figures(10.0, 4e6),
            },
            CommitResult {
                case: CommitCase {
                    sync_method: SyncMethod::Fdatasync,
                    payload: 100,
                    threads: 2,
                },
                setup: Default::default(),
                figures: figures(10.0, 1e6),
            },
        ];
        let pg = |fsync, clients| PgResult {
            payload: 100,
            fsync,
            clients,
            tps: 1.0,
            wal_bytes_per_sec: 2e6,
        };
        let ratios = pg_ratios(&walden, &[pg(false, 2), pg(true, 2), pg(true, 64)]);
        assert_eq!(ratios.len(), 2);
        assert_eq!((ratios[0].durable, ratios[0].ratio), (false, 2.0));
        assert_eq!((ratios[1].durable, ratios[1].ratio), (true, 0.5));
    }
}
