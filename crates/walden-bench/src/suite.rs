//! The umbrella run's summary (`walden bench all`): Walden against each
//! peer, against the machine's limits and against PostgreSQL 15, as ratios
//! of figures measured in the same run; the many-core projection of
//! algorithms.md §10 (marked projected); and the charts.

use serde::{Deserialize, Serialize};
use walden::{ReservationKind, SyncMethod};

use crate::commit::CommitResult;
use crate::limits::{Durability, LimitResult, Probe, BLOCK};
use crate::logical::LogicalResult;
use crate::mix::MixResult;
use crate::peers::{PeerResult, System, Workload, PAYLOAD};
use crate::plot::{Series, ThreadChart};
use crate::reserve::global_line_transfers;
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
    /// `mix`: seed 001's append-only transactions per reservation design.
    pub mix: Vec<MixResult>,
    /// `reserve`: seed 001's reservation microbenchmark per design.
    pub reserve: Vec<MicroResult>,
    /// `insert`: the non-durable insert path per design and format.
    pub insert: Vec<InsertResult>,
    /// `logical-1mb`: seed 000's 1 MiB messages per page-init and slot setup.
    pub logical: Vec<LogicalResult>,
    /// `peers`.
    pub peers: Vec<PeerResult>,
    /// `scripts/pg-bench`.
    pub postgres: Vec<PgResult>,
}

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

fn limit(limits: &[LimitResult], probe: Probe) -> Option<&LimitResult> {
    limits.iter().find(|l| l.probe == probe)
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
    let durable = |bytes, durability| limit(&r.limits, Probe::DurableWrite { bytes, durability });
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
        limit(&r.limits, Probe::BufferedWrite).and_then(|l| l.gb_per_sec),
        "GB/s",
    );
    push(
        "1 MiB messages fsync off, 2 threads / memcpy + CRC-32C, 2 threads",
        pg_workload_rate(&r.pg_workloads, BLOCK, false, 2).map(|b| b / 1e9),
        limit(&r.limits, Probe::CopyCrc { threads: 2 }).and_then(|l| l.gb_per_sec),
        "GB/s",
    );
    push(
        "100 B appends, 2 threads / one shared cache line (1 / t_x)",
        walden_peer(Workload::Append, 2),
        limit(&r.limits, Probe::LineTransfer).map(|l| l.ops_per_sec),
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

/// A machine class of the many-core projection.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct MachineClass {
    /// Its description.
    pub name: &'static str,
    /// Cores inserting at once.
    pub cores: usize,
    /// Assumed time to move one contended cache line between its cores, ns
    /// (`None`: this machine's, measured in the run).
    pub line_transfer_ns: Option<f64>,
}

/// The projection's machine classes. The transfer times of the many-core
/// classes are assumptions of the usual order of published core-to-core
/// latencies (tens of ns within a socket, ~2-3x that across sockets), not
/// measurements: a device run replaces them.
pub const MACHINE_CLASSES: [MachineClass; 4] = [
    MachineClass {
        name: "this machine (2 vCPUs, measured)",
        cores: 2,
        line_transfer_ns: None,
    },
    MachineClass {
        name: "16 cores, one socket",
        cores: 16,
        line_transfer_ns: Some(70.0),
    },
    MachineClass {
        name: "64 cores, one socket",
        cores: 64,
        line_transfer_ns: Some(100.0),
    },
    MachineClass {
        name: "480 vCPUs, two sockets (seed 003's E6)",
        cores: 480,
        line_transfer_ns: Some(200.0),
    },
];

/// The projected ceiling of one design on one machine class.
#[derive(Clone, Debug, Serialize)]
pub struct Projection {
    /// The design.
    #[serde(serialize_with = "crate::serde_display")]
    pub design: ReservationKind,
    /// The machine class.
    pub machine: &'static str,
    /// Its cores.
    pub cores: usize,
    /// Measured: records/s of one thread (mix suite, no sync).
    pub one_thread_records_per_sec: f64,
    /// `c_g`: transfers of the globally shared line per record
    /// ([`global_line_transfers`]).
    pub global_line_transfers: f64,
    /// `t_x` used, ns.
    pub line_transfer_ns: f64,
    /// Projected: `min(cores × one-thread rate, 1 / (c_g · t_x))`.
    pub projected_records_per_sec: f64,
    /// True when the serialized part (`c_g · t_x`), not the cores, bounds it.
    pub serial_bound: bool,
}

/// The many-core projection of algorithms.md §10 for each design in the
/// mix results (one-thread, unsynced rates), with this machine's measured
/// cache-line transfer time `line_transfer_ns`.
pub fn project(mix: &[MixResult], line_transfer_ns: f64) -> Vec<Projection> {
    let mut out = Vec::new();
    for design in ReservationKind::ALL {
        let Some(one) = mix.iter().find(|m| {
            m.case.design.reservation == design
                && m.case.threads == 1
                && m.case.sync_method == SyncMethod::None
        }) else {
            continue;
        };
        let r1 = one.figures.records_per_sec;
        let c_g = global_line_transfers(design);
        for class in MACHINE_CLASSES {
            let t_x = class.line_transfer_ns.unwrap_or(line_transfer_ns);
            let parallel = class.cores as f64 * r1;
            let serial = 1e9 / (c_g * t_x);
            out.push(Projection {
                design,
                machine: class.name,
                cores: class.cores,
                one_thread_records_per_sec: r1,
                global_line_transfers: c_g,
                line_transfer_ns: t_x,
                projected_records_per_sec: parallel.min(serial),
                serial_bound: serial < parallel,
            });
        }
    }
    out
}

/// A chart file name and the chart.
pub type NamedChart = (String, ThreadChart);

/// Every chart the results allow.
pub fn charts(r: &Results) -> Vec<NamedChart> {
    let mut out = strategy_charts(r);
    let durable_rate = |bytes, durability| {
        limit(&r.limits, Probe::DurableWrite { bytes, durability }).map(|l| l.ops_per_sec)
    };
    if !r.commit.is_empty() {
        let mut limits = Vec::new();
        if let Some(rate) = durable_rate(8 << 10, Durability::Fdatasync) {
            limits.push((
                "limit: 8 kB write + fdatasync, back to back".to_owned(),
                rate,
            ));
        }
        out.push((
            "commit.png".to_owned(),
            ThreadChart {
                title: "Durable 100-byte commits (insert + flush) per sync method".into(),
                y_label: "commits/s".into(),
                series: group_series(
                    &r.commit,
                    |c| c.case.sync_method.to_string(),
                    |c| (c.case.threads, c.figures.ops_per_sec),
                ),
                limits,
            },
        ));
    }
    for sync in [SyncMethod::None, SyncMethod::Fdatasync] {
        let mix: Vec<&MixResult> = r
            .mix
            .iter()
            .filter(|m| m.case.sync_method == sync)
            .collect();
        if !mix.is_empty() {
            out.push((
                format!("mix-{sync}.png"),
                ThreadChart {
                    title: format!("Seed 001 append-only mix (20 x 66 B + commit), sync {sync}"),
                    y_label: "records/s".into(),
                    series: group_series(
                        &mix,
                        |m| m.case.design.label(),
                        |m| (m.case.threads, m.figures.records_per_sec),
                    ),
                    limits: Vec::new(),
                },
            ));
        }
    }
    for workload in Workload::ALL {
        let peers: Vec<&PeerResult> = r
            .peers
            .iter()
            .filter(|p| p.case.workload == workload)
            .collect();
        if !peers.is_empty() {
            let what = match workload {
                Workload::Append => "non-durable appends",
                Workload::Commit => "durable commits",
            };
            out.push((
                format!("peers-{}.png", workload.name()),
                ThreadChart {
                    title: format!("{PAYLOAD}-byte {what}, per system"),
                    y_label: "records/s".into(),
                    series: group_series(
                        &peers,
                        |p| p.case.system.to_string(),
                        |p| (p.case.threads, p.ops_per_sec),
                    ),
                    limits: Vec::new(),
                },
            ));
        }
    }
    for (payload, name) in [(100, "100b"), (BLOCK, "1mib")] {
        let mut series = Vec::new();
        for durable in [false, true] {
            let fsync = if durable { "fsync on" } else { "fsync off" };
            let walden: Vec<(usize, f64)> = r
                .pg_workloads
                .iter()
                .filter(|c| c.case.payload == payload && c.case.sync_method.syncs() == durable)
                .map(|c| (c.case.threads, c.figures.wal_bytes_per_sec / 1e6))
                .collect();
            let postgres: Vec<(usize, f64)> = r
                .postgres
                .iter()
                .filter(|p| p.payload == payload && p.fsync == durable)
                .map(|p| (p.clients, p.wal_bytes_per_sec / 1e6))
                .collect();
            for (system, points) in [("walden", walden), ("postgresql 15", postgres)] {
                if !points.is_empty() {
                    series.push(Series {
                        name: format!("{system}, {fsync}"),
                        points,
                    });
                }
            }
        }
        if !series.is_empty() {
            let size = if payload == BLOCK { "1 MiB" } else { "100 B" };
            out.push((
                format!("postgres-{name}.png"),
                ThreadChart {
                    title: format!("Logical messages of {size}: Walden vs PostgreSQL 15"),
                    y_label: "WAL MB/s".into(),
                    series,
                    limits: Vec::new(),
                },
            ));
        }
    }
    out
}

/// One series per distinct `name(item)`, in first-seen order, points sorted
/// by thread count.
/// The seeds' charts: throughput against threads per reservation design
/// (`reserve`, `insert`) and per page-initialisation and slot setup
/// (`logical-1mb`, with the machine's memcpy + CRC-32C rate beside it).
fn strategy_charts(r: &Results) -> Vec<NamedChart> {
    let mut out = Vec::new();
    if !r.reserve.is_empty() {
        out.push((
            "reserve.png".to_owned(),
            ThreadChart {
                title: "Seed 001 microbenchmark: space reservations per design".into(),
                y_label: "M reservations/s".into(),
                series: group_series(
                    &r.reserve,
                    |m| m.case.reservation.to_string(),
                    |m| (m.case.threads, m.mops),
                ),
                limits: Vec::new(),
            },
        ));
    }
    let mut sizes: Vec<usize> = r.insert.iter().map(|i| i.case.record_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for bytes in sizes {
        let rows: Vec<&InsertResult> = r
            .insert
            .iter()
            .filter(|i| i.case.record_bytes == bytes)
            .collect();
        out.push((
            format!("insert-{bytes}b.png"),
            ThreadChart {
                title: format!("Insert path, {bytes}-byte records, sync none, per design"),
                y_label: "records/s".into(),
                series: group_series(
                    &rows,
                    |i| i.case.design.label(),
                    |i| (i.case.threads, i.figures.records_per_sec),
                ),
                limits: Vec::new(),
            },
        ));
    }
    if !r.logical.is_empty() {
        let mut series = group_series(
            &r.logical,
            |l| {
                format!(
                    "{}, {}, {} slots",
                    l.case.page_init, l.case.slot_choice, l.case.insert_slots
                )
            },
            |l| (l.case.threads, l.gb_per_sec),
        );
        // One limit point per thread count (every case of it measured
        // beside the same probe).
        let mut limit = group_series(
            &r.logical,
            |_| "limit: memcpy + CRC-32C".to_owned(),
            |l| (l.case.threads, l.limit_gb_per_sec),
        );
        for s in &mut limit {
            s.points.dedup_by_key(|p| p.0);
        }
        series.extend(limit);
        out.push((
            "logical-1mb.png".to_owned(),
            ThreadChart {
                title: "Seed 000: 1 MiB logical messages, sync none".into(),
                y_label: "GB/s".into(),
                series,
                limits: Vec::new(),
            },
        ));
    }
    out
}

fn group_series<T>(
    items: &[T],
    name: impl Fn(&T) -> String,
    point: impl Fn(&T) -> (usize, f64),
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for item in items {
        let n = name(item);
        let index = match out.iter().position(|s| s.name == n) {
            Some(i) => i,
            None => {
                out.push(Series {
                    name: n,
                    points: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[index].points.push(point(item));
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::CommitCase;
    use crate::fresh_wal::WalFigures;
    use crate::mix::MixCase;
    use crate::peers::PeerCase;
    use crate::reserve::{self, Design};

    fn peer(system: System, workload: Workload, threads: usize, rate: f64) -> PeerResult {
        PeerResult {
            case: PeerCase {
                system,
                workload,
                threads,
            },
            ops: rate as u64,
            seconds: 1.0,
            ops_per_sec: rate,
            payload_mb_per_sec: rate * 100.0 / 1e6,
            p50_ns: None,
            p99_ns: None,
        }
    }

    fn figures(ops_per_sec: f64, wal_bytes_per_sec: f64) -> WalFigures {
        WalFigures {
            ops: ops_per_sec as u64,
            seconds: 1.0,
            ops_per_sec,
            records_per_sec: ops_per_sec,
            wal_bytes_per_sec,
            syncs: 0,
            syncs_per_op: 0.0,
            p50_ns: None,
            p99_ns: None,
        }
    }

    #[test]
    fn strategy_results_chart_per_design_with_one_limit_point_per_thread_count() {
        use crate::logical::LogicalCase;
        use crate::reserve::insert::InsertCase;
        use crate::reserve::micro::MicroCase;
        use walden::{PageInitKind, SlotChoice};

        let design = |reservation| Design {
            format: walden::WalFormat::Postgres15,
            reservation,
        };
        let mut r = Results::default();
        for (threads, reservation) in [
            (1, ReservationKind::Spinlock),
            (2, ReservationKind::Spinlock),
            (1, ReservationKind::Unlinked),
        ] {
            r.reserve.push(MicroResult {
                case: MicroCase {
                    reservation,
                    threads,
                },
                ops: 10,
                seconds: 1.0,
                ns_per_op: 1.0,
                mops: threads as f64,
                bad_links: 0,
            });
        }
        for (bytes, threads) in [(66, 1), (66, 2), (4096, 1)] {
            r.insert.push(InsertResult {
                case: InsertCase {
                    design: design(ReservationKind::PrevLinkTable),
                    threads,
                    record_bytes: bytes,
                },
                figures: figures(5.0, 1.0),
                ns_per_record: 1.0,
            });
        }
        for (page_init, threads) in [
            (PageInitKind::MappingLock, 1),
            (PageInitKind::Cooperative, 1),
            (PageInitKind::MappingLock, 8),
            (PageInitKind::Cooperative, 8),
        ] {
            r.logical.push(LogicalResult {
                case: LogicalCase {
                    page_init,
                    slot_choice: SlotChoice::Sticky,
                    insert_slots: 8,
                    threads,
                },
                records: 1,
                seconds: 1.0,
                records_per_sec: 1.0,
                gb_per_sec: 0.5,
                limit_gb_per_sec: threads as f64,
                buffer_full_evictions: 0,
                slot_waits: 0,
            });
        }
        let charts = charts(&r);
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "reserve.png",
                "insert-66b.png",
                "insert-4096b.png",
                "logical-1mb.png"
            ]
        );
        let reserve = &charts[0].1.series;
        assert_eq!(reserve.len(), 2, "one line per design");
        assert_eq!(reserve[0].points, [(1, 1.0), (2, 2.0)]);
        assert_eq!(charts[1].1.series[0].points.len(), 2, "66 B rows only");
        let logical = &charts[3].1.series;
        assert_eq!(logical.len(), 3, "two designs and the limit");
        assert_eq!(logical[2].points, [(1, 1.0), (8, 8.0)]);
    }

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
                figures: figures(10.0, 4e6),
            },
            CommitResult {
                case: CommitCase {
                    sync_method: SyncMethod::Fdatasync,
                    payload: 100,
                    threads: 2,
                },
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

    fn one_thread_mix(design: Design, records_per_sec: f64) -> MixResult {
        MixResult {
            case: MixCase {
                design,
                sync_method: SyncMethod::None,
                threads: 1,
            },
            figures: figures(records_per_sec, 0.0),
        }
    }

    #[test]
    fn the_projection_is_bounded_by_cores_or_by_the_shared_line() {
        let rows = project(&[one_thread_mix(Design::ALL[0], 1e6)], 50.0);
        assert_eq!(rows.len(), MACHINE_CLASSES.len());
        // 2 cores x 1 M/s = 2 M/s < 1 / (2 x 50 ns) = 10 M/s.
        assert_eq!(rows[0].projected_records_per_sec, 2e6);
        assert!(!rows[0].serial_bound);
        // 480 cores: 1 / (2 x 200 ns) = 2.5 M/s.
        let last = rows.last().unwrap();
        assert!((last.projected_records_per_sec - 2.5e6).abs() < 1.0);
        assert!(last.serial_bound);
    }

    #[test]
    fn both_projections_use_the_same_c_g() {
        let mix: Vec<MixResult> = Design::ALL
            .iter()
            .map(|&d| one_thread_mix(d, 1e6))
            .collect();
        let rows = project(&mix, 50.0);
        for r in ReservationKind::ALL {
            let summary = rows.iter().find(|p| p.design == r).unwrap();
            let reserve = &reserve::project(r, 10.0, 50.0)[0];
            assert_eq!(
                summary.global_line_transfers, reserve.global_line_transfers,
                "{r}"
            );
        }
        // The prev-link designs' neighbour lines are not the global one:
        // on 480 vCPUs they reach 1 / (1 x 200 ns) = 5 M/s, the spinlock
        // half of that.
        let ceiling = |r| {
            rows.iter()
                .rfind(|p| p.design == r)
                .unwrap()
                .projected_records_per_sec
        };
        assert!((ceiling(ReservationKind::PrevLinkTable) - 5e6).abs() < 1.0);
        assert!((ceiling(ReservationKind::PrevLinkInBuffer) - 5e6).abs() < 1.0);
        assert!((ceiling(ReservationKind::Spinlock) - 2.5e6).abs() < 1.0);
    }

    #[test]
    fn charts_come_only_from_suites_that_ran() {
        let mut r = Results::default();
        assert!(charts(&r).is_empty());
        r.peers = vec![
            peer(System::Walden, Workload::Append, 1, 5.0),
            peer(System::Walden, Workload::Append, 2, 9.0),
            peer(System::Rocksdb, Workload::Append, 1, 3.0),
        ];
        let charts = charts(&r);
        assert_eq!(charts.len(), 1);
        assert_eq!(charts[0].0, "peers-append.png");
        let series = &charts[0].1.series;
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].points, [(1, 5.0), (2, 9.0)]);
    }
}
