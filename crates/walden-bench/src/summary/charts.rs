//! The summary's PNG charts ([`crate::plot`]): throughput against threads
//! per strategy or system, from every suite that ran.

use walden::SyncMethod;

use super::results::Results;
use crate::commit::CommitResult;
use crate::fresh_wal::WalFigures;
use crate::limits::{Probe, WriteSync, WriteTarget, BLOCK};
use crate::mix::MixResult;
use crate::peers::{PeerResult, Workload, PAYLOAD};
use crate::plot::{Series, ThreadChart};
use crate::reserve::insert::InsertResult;

/// A chart file name and the chart.
pub type NamedChart = (String, ThreadChart);

/// Every chart the results allow.
pub fn charts(r: &Results) -> Vec<NamedChart> {
    let mut out = strategy_charts(r);
    if !r.commit.is_empty() {
        let mut limits = Vec::new();
        let probe = Probe::FileWrite {
            target: WriteTarget::Overwrite,
            bytes: 8 << 10,
            sync: WriteSync::Fdatasync,
            writers: 1,
        };
        if let Some(l) = r.limit(probe).filter(|l| l.ops_per_sec > 0.0) {
            limits.push((
                format!("limit: {}, back to back", probe.label()),
                l.ops_per_sec,
            ));
        }
        out.push((
            "commit.png".to_owned(),
            ThreadChart {
                title: "Durable 100-byte commits (insert + flush) per sync method".into(),
                y_label: "commits/s".into(),
                series: group_series_spread(
                    &r.commit,
                    |c| format!("sync {}, {}", c.case.sync_method, c.setup.legend()),
                    |c| (c.case.threads, c.figures.ops_per_sec),
                    |c| spread(&c.figures, c.figures.ops_per_sec),
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
                    series: group_series_spread(
                        &mix,
                        |m| format!("{}, {}", m.case.design.label(), m.setup.legend()),
                        |m| (m.case.threads, m.figures.records_per_sec),
                        |m| spread(&m.figures, m.figures.records_per_sec),
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
            let walden: Vec<&CommitResult> = r
                .pg_workloads
                .iter()
                .filter(|c| c.case.payload == payload && c.case.sync_method.durable() == durable)
                .collect();
            series.extend(group_series_spread(
                &walden,
                |c| format!("walden, {}, {fsync}", c.setup.legend()),
                |c| (c.case.threads, c.figures.wal_bytes_per_sec / 1e6),
                |c| spread(&c.figures, c.figures.wal_bytes_per_sec / 1e6),
            ));
            let postgres: Vec<(usize, f64)> = r
                .postgres
                .iter()
                .filter(|p| p.payload == payload && p.fsync == durable)
                .map(|p| (p.clients, p.wal_bytes_per_sec / 1e6))
                .collect();
            if !postgres.is_empty() {
                series.push(Series {
                    name: format!("postgresql 15, warmed up, {fsync}"),
                    points: postgres,
                    spread: Vec::new(),
                });
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
                series: group_series_spread(
                    &rows,
                    |i| format!("{}, {}", i.case.design.label(), i.setup.legend()),
                    |i| (i.case.threads, i.figures.records_per_sec),
                    |i| spread(&i.figures, i.figures.records_per_sec),
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

/// One series per distinct `name(item)`, in first-seen order, points sorted
/// by thread count.
fn group_series<T>(
    items: &[T],
    name: impl Fn(&T) -> String,
    point: impl Fn(&T) -> (usize, f64),
) -> Vec<Series> {
    group_series_spread(items, name, point, |_| None)
}

/// [`group_series`] with each point's spread of slices (slowest, fastest)
/// where `spread(item)` knows it.
fn group_series_spread<T>(
    items: &[T],
    name: impl Fn(&T) -> String,
    point: impl Fn(&T) -> (usize, f64),
    spread: impl Fn(&T) -> Option<(f64, f64)>,
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
                    spread: Vec::new(),
                });
                out.len() - 1
            }
        };
        let (threads, value) = point(item);
        out[index].points.push((threads, value));
        if let Some((slowest, fastest)) = spread(item) {
            out[index].spread.push((threads, slowest, fastest));
        }
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.0);
        s.spread.sort_by_key(|p| p.0);
    }
    out
}

/// The slowest and fastest slices of `figures` in the unit of `value` (a
/// rate proportional to its operations per second); none if unknown.
fn spread(figures: &WalFigures, value: f64) -> Option<(f64, f64)> {
    if figures.ops_per_sec <= 0.0 || figures.slice_max_ops_per_sec <= 0.0 {
        return None;
    }
    let scale = value / figures.ops_per_sec;
    Some((
        figures.slice_min_ops_per_sec * scale,
        figures.slice_max_ops_per_sec * scale,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Design;
    use crate::fixtures::{figures, peer};
    use crate::logical::LogicalResult;
    use crate::peers::System;
    use crate::reserve::micro::MicroResult;
    use walden::ReservationKind;

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
                    batch: 1,
                },
                setup: Default::default(),
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
                    writer_init_ahead: 0,
                },
                records: 1,
                seconds: 1.0,
                records_per_sec: 1.0,
                gb_per_sec: 0.5,
                limit_gb_per_sec: threads as f64,
                buffer_full_evictions: 0,
                slot_waits: 0,
                pages_initialised_ahead: 0,
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
