//! The summary's ratios, all of figures measured in the same run: Walden
//! against each peer, against the machine's limits and against PostgreSQL 15.

use serde::Serialize;

use super::results::{PgResult, Results};
use crate::commit::CommitResult;
use crate::fresh_wal::{LogSetup, SegmentState, StorageKind};
use crate::limits::{LimitResult, Probe, WriteSync, WriteTarget, BLOCK};
use crate::peers::{PeerResult, System, Workload};
use crate::reserve::insert::InsertResult;

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

/// The Walden PostgreSQL-workload case, if it ran: in the steady state
/// when it was measured there (what a warm PostgreSQL compares with),
/// else fresh.
fn pg_workload_case(
    walden: &[CommitResult],
    payload: usize,
    durable: bool,
    threads: usize,
) -> Option<&CommitResult> {
    let matching = |state: SegmentState| {
        walden.iter().find(|r| {
            r.case.payload == payload
                && r.case.sync_method.durable() == durable
                && r.case.threads == threads
                && r.setup == LogSetup::files(state)
        })
    };
    matching(SegmentState::Steady).or_else(|| matching(SegmentState::Fresh))
}

/// The fastest file-write limit of `bytes` per write that `accept`s its
/// target, sync and writers; none if none ran.
fn best_write(
    r: &Results,
    bytes: usize,
    accept: impl Fn(WriteTarget, WriteSync, usize) -> bool,
) -> Option<&LimitResult> {
    r.limits
        .iter()
        .filter(|l| match l.probe {
            Probe::FileWrite {
                target,
                bytes: b,
                sync,
                writers,
            } => b == bytes && accept(target, sync, writers) && l.unsupported.is_none(),
            _ => false,
        })
        .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))
}

/// The limit `probe` measured for `case`: the mean of its runs beside
/// the case's slices where it ran there (`true`), else the limits suite's
/// (`false`); none if neither measured it or the machine refused it.
fn limit_of(r: &Results, case: Option<&CommitResult>, probe: Probe) -> Option<(LimitResult, bool)> {
    let steady = LogSetup::files(SegmentState::Steady);
    let runs = case
        .filter(|c| c.setup == steady)
        .and_then(|c| r.pg_workloads_beside.iter().find(|b| b.case == c.case));
    let beside = runs.and_then(|b| {
        LimitResult::means(&b.runs)
            .into_iter()
            .find(|l| l.probe == probe)
    });
    beside
        .map(|l| (l, true))
        .or_else(|| r.limit(probe).map(|l| (l.clone(), false)))
        .filter(|(l, _)| l.unsupported.is_none())
}

/// Walden's figures as fractions of the limits that match them: each row
/// names the Walden figure and the limit (the fastest of the matching
/// probes, named, and whether it was measured beside the case's slices).
pub fn limit_fractions(r: &Results) -> Vec<LimitFraction> {
    let mut out = Vec::new();
    let mut push =
        |what: String, walden: Option<f64>, limit: Option<(LimitResult, bool)>, gb: bool| {
            let Some((limit, beside)) = limit else { return };
            let value = if gb {
                limit.gb_per_sec
            } else {
                Some(limit.ops_per_sec)
            };
            if let (Some(walden), Some(v)) = (walden, value.filter(|&v| v > 0.0)) {
                let when = if beside { ", beside its slices" } else { "" };
                out.push(LimitFraction {
                    what: format!("{what} / {}{when}", limit.probe.label()),
                    walden,
                    limit: v,
                    unit: if gb { "GB/s" } else { "ops/s" },
                    fraction: walden / v,
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
    let durable_8k = best_write(r, 8 << 10, |_, sync, writers| {
        sync.durable() && writers == 1
    })
    .map(|l| (l.clone(), false));
    push(
        "durable 100 B commits, 1 thread".into(),
        walden_peer(Workload::Commit, 1),
        durable_8k.clone(),
        false,
    );
    // One thread only: with more, group commit shares each sync.
    let case = pg_workload_case(&r.pg_workloads, 100, true, 1);
    push(
        format!("durable 100 B messages, 1 thread{}", state(case)),
        case.map(|c| c.figures.ops_per_sec),
        durable_8k,
        false,
    );
    for threads in [1, 2, 64] {
        let case = pg_workload_case(&r.pg_workloads, BLOCK, true, threads);
        let limit = Probe::matching(BLOCK, true, threads)
            .into_iter()
            .filter_map(|probe| limit_of(r, case, probe))
            .max_by(|(a, _), (b, _)| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        push(
            format!(
                "1 MiB messages fsync on, {threads} thread(s){}",
                state(case)
            ),
            case.map(|c| c.figures.wal_bytes_per_sec / 1e9),
            limit,
            true,
        );
    }
    let overwrite = Probe::FileWrite {
        target: WriteTarget::Overwrite,
        bytes: BLOCK,
        sync: WriteSync::None,
        writers: 1,
    };
    for threads in [1, 2, 64] {
        let case = pg_workload_case(&r.pg_workloads, BLOCK, false, threads);
        let rate = case.map(|c| c.figures.wal_bytes_per_sec / 1e9);
        let what = format!(
            "1 MiB messages fsync off, {threads} thread(s){}",
            state(case)
        );
        for probe in [
            overwrite,
            Probe::SessionsOverwrite { sessions: threads },
            Probe::CrcOverwrite { threads },
            Probe::CopyCrcOverwrite { threads },
            Probe::CopyCrc { threads },
        ] {
            // Results from before the overwrite cycled through a
            // WAL-sized working set (no `working_set_bytes`) rewrote one
            // cached 16 MiB file from one buffer, all in the CPU's cache:
            // no limit for a WAL.
            let limit = limit_of(r, case, probe)
                .filter(|(l, _)| probe != overwrite || l.working_set_bytes.is_some());
            push(what.clone(), rate, limit, true);
        }
    }
    push(
        "100 B appends, 2 threads".into(),
        walden_peer(Workload::Append, 2),
        limit_of(r, None, Probe::LineTransfer),
        false,
    );
    out
}

/// `, steady` or `, fresh`: the state of the Walden case, and whether
/// any of its steady slices ran out of recycled segments.
fn state(case: Option<&CommitResult>) -> String {
    case.map(|c| {
        let cut = if c.figures.slices_cut_short > 0 {
            format!(" ({} slice(s) cut short)", c.figures.slices_cut_short)
        } else {
            String::new()
        };
        format!(", {}{cut}", c.setup.segment_state)
    })
    .unwrap_or_default()
}

/// The insert path's ratios: 2 threads against 1 on the discarding
/// storage, for the design fastest there at 2 threads, and real files in
/// the steady state against the discarding storage (66-byte records, or
/// the smallest measured).
pub fn insert_ratios(insert: &[InsertResult]) -> Vec<LimitFraction> {
    let discard = LogSetup {
        storage: StorageKind::Discard,
        segment_state: SegmentState::Fresh,
    };
    let Some(bytes) = insert.iter().map(|i| i.case.record_bytes).min() else {
        return Vec::new();
    };
    let rate = |design, threads, setup| {
        insert
            .iter()
            .find(|i| {
                i.case.design == design
                    && i.case.threads == threads
                    && i.case.record_bytes == bytes
                    && i.setup == setup
            })
            .map(|i| i.figures.records_per_sec)
            .filter(|&r| r > 0.0)
    };
    let best = insert
        .iter()
        .filter(|i| i.case.threads == 2 && i.case.record_bytes == bytes && i.setup == discard)
        .max_by(|a, b| {
            a.figures
                .records_per_sec
                .total_cmp(&b.figures.records_per_sec)
        });
    let Some(best) = best else {
        return Vec::new();
    };
    let design = best.case.design;
    let mut out = Vec::new();
    let mut push = |what: String, walden: Option<f64>, reference: Option<f64>| {
        if let (Some(walden), Some(reference)) = (walden, reference) {
            out.push(LimitFraction {
                what,
                walden,
                limit: reference,
                unit: "records/s",
                fraction: walden / reference,
            });
        }
    };
    let label = design.label();
    push(
        format!("{bytes} B inserts, {label}, discard: 2 threads / 1 thread"),
        rate(design, 2, discard),
        rate(design, 1, discard),
    );
    for threads in [1, 2] {
        push(
            format!("{bytes} B inserts, {label}, {threads} thread(s): files, steady / discard"),
            rate(design, threads, LogSetup::files(SegmentState::Steady)),
            rate(design, threads, discard),
        );
    }
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
    /// The state of Walden's segments (steady where measured: PostgreSQL
    /// is warmed up).
    pub segment_state: SegmentState,
    /// Walden's WAL bytes/s.
    pub walden: f64,
    /// PostgreSQL's WAL bytes/s.
    pub postgres: f64,
    /// Whether PostgreSQL's run stayed in recycled segments (unknown for
    /// runs without a warm-up).
    pub postgres_steady: Option<bool>,
    /// `walden / postgres`.
    pub ratio: f64,
}

/// Walden against PostgreSQL on every workload both ran.
pub fn pg_ratios(walden: &[CommitResult], postgres: &[PgResult]) -> Vec<PgRatio> {
    postgres
        .iter()
        .filter(|pg| pg.wal_bytes_per_sec > 0.0)
        .filter_map(|pg| {
            let case = pg_workload_case(walden, pg.payload, pg.fsync, pg.clients)?;
            let w = case.figures.wal_bytes_per_sec;
            Some(PgRatio {
                payload: pg.payload,
                durable: pg.fsync,
                threads: pg.clients,
                segment_state: case.setup.segment_state,
                walden: w,
                postgres: pg.wal_bytes_per_sec,
                postgres_steady: pg.steady,
                ratio: w / pg.wal_bytes_per_sec,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::limits_beside::CaseLimits;
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
            steady: Some(true),
        };
        let ratios = pg_ratios(&walden, &[pg(false, 2), pg(true, 2), pg(true, 64)]);
        assert_eq!(ratios.len(), 2);
        assert_eq!((ratios[0].durable, ratios[0].ratio), (false, 2.0));
        assert_eq!((ratios[1].durable, ratios[1].ratio), (true, 0.5));
    }

    fn write_limit(target: WriteTarget, sync: WriteSync, writers: usize, gb: f64) -> LimitResult {
        LimitResult {
            probe: Probe::FileWrite {
                target,
                bytes: BLOCK,
                sync,
                writers,
            },
            ops_per_sec: gb * 1e9 / BLOCK as f64,
            gb_per_sec: Some(gb),
            ns_per_op: 1.0,
            p50_ns: None,
            p99_ns: None,
            unsupported: None,
            working_set_bytes: Some(1 << 28),
        }
    }

    fn message(
        sync_method: SyncMethod,
        threads: usize,
        state: SegmentState,
        gb: f64,
    ) -> CommitResult {
        CommitResult {
            case: CommitCase {
                sync_method,
                payload: BLOCK,
                threads,
            },
            setup: LogSetup::files(state),
            figures: figures(gb * 1e9 / BLOCK as f64, gb * 1e9),
        }
    }

    #[test]
    fn a_case_with_limits_beside_its_slices_is_read_against_their_mean() {
        let one = message(SyncMethod::Fdatasync, 1, SegmentState::Steady, 0.8);
        let beside = CaseLimits {
            case: one.case,
            runs: vec![
                write_limit(WriteTarget::Overwrite, WriteSync::Fdatasync, 1, 0.9),
                write_limit(WriteTarget::Direct, WriteSync::Fdatasync, 1, 0.5),
                write_limit(WriteTarget::Overwrite, WriteSync::Fdatasync, 1, 1.1),
            ],
        };
        let r = Results {
            pg_workloads_beside: vec![beside],
            limits: vec![write_limit(
                WriteTarget::Overwrite,
                WriteSync::Fdatasync,
                1,
                2.0,
            )],
            pg_workloads: vec![
                one,
                message(SyncMethod::Fdatasync, 2, SegmentState::Steady, 1.0),
            ],
            ..Results::default()
        };
        let rows = limit_fractions(&r);
        let row = |threads: usize| {
            let prefix = format!("1 MiB messages fsync on, {threads} thread(s), steady / ");
            let row = rows.iter().find(|f| f.what.starts_with(&prefix));
            row.unwrap_or_else(|| panic!("{prefix}: {rows:?}"))
        };
        // The faster probe beside the slices, as the mean of its runs.
        let beside = row(1);
        assert!((beside.limit - 1.0).abs() < 1e-9, "{beside:?}");
        assert!((beside.fraction - 0.8).abs() < 1e-9, "{beside:?}");
        assert!(
            beside
                .what
                .ends_with("+ fdatasync, 1 MiB, beside its slices"),
            "{beside:?}"
        );
        // Without runs beside it, the limits suite's.
        let suite = row(2);
        assert!((suite.fraction - 0.5).abs() < 1e-9, "{suite:?}");
        assert!(suite.what.ends_with("+ fdatasync, 1 MiB"), "{suite:?}");
    }

    #[test]
    fn each_walden_row_meets_the_limit_that_matches_it() {
        let mut refused = write_limit(WriteTarget::Direct, WriteSync::Fdatasync, 1, 0.0);
        refused.unsupported = Some("the file system refuses O_DIRECT".into());
        let copy_write = LimitResult {
            probe: Probe::CopyCrcOverwrite { threads: 2 },
            ..write_limit(WriteTarget::Overwrite, WriteSync::None, 2, 2.0)
        };
        let checksum_write = LimitResult {
            probe: Probe::CrcOverwrite { threads: 2 },
            ..write_limit(WriteTarget::Overwrite, WriteSync::None, 2, 3.75)
        };
        let sessions_write = LimitResult {
            probe: Probe::SessionsOverwrite { sessions: 64 },
            ..write_limit(WriteTarget::Overwrite, WriteSync::None, 1, 3.0)
        };
        let r = Results {
            limits: vec![
                write_limit(WriteTarget::Overwrite, WriteSync::Fdatasync, 1, 1.0),
                write_limit(WriteTarget::Overwrite, WriteSync::Fdatasync, 2, 2.0),
                write_limit(WriteTarget::Overwrite, WriteSync::None, 1, 4.0),
                write_limit(WriteTarget::Fresh, WriteSync::None, 1, 0.5),
                refused,
                copy_write,
                checksum_write,
                sessions_write,
            ],
            pg_workloads: vec![
                message(SyncMethod::Fdatasync, 1, SegmentState::Fresh, 0.1),
                message(SyncMethod::Fdatasync, 1, SegmentState::Steady, 0.8),
                message(SyncMethod::Fdatasync, 2, SegmentState::Steady, 1.0),
                message(SyncMethod::None, 2, SegmentState::Steady, 3.0),
                message(SyncMethod::None, 64, SegmentState::Steady, 2.4),
            ],
            ..Results::default()
        };
        let rows = limit_fractions(&r);
        let find = |prefix: &str| {
            let row = rows.iter().find(|f| f.what.starts_with(prefix));
            row.unwrap_or_else(|| panic!("{prefix}: {rows:?}"))
        };
        // One thread: the one-writer limit, against the steady case.
        let one = find("1 MiB messages fsync on, 1 thread(s), steady");
        assert!(
            one.what
                .ends_with("overwrite of a cached file + fdatasync, 1 MiB"),
            "{one:?}"
        );
        assert!((one.fraction - 0.8).abs() < 1e-9, "{one:?}");
        // Two threads: the best of one and two writers.
        let two = find("1 MiB messages fsync on, 2 thread(s), steady");
        assert!(two.what.ends_with("2 writers"), "{two:?}");
        assert!((two.fraction - 0.5).abs() < 1e-9, "{two:?}");
        // Non-durable: the overwrite of a cached file, not the fresh write.
        let off = find("1 MiB messages fsync off, 2 thread(s), steady / overwrite");
        assert!((off.fraction - 0.75).abs() < 1e-9, "{off:?}");
        // And against the copy, checksum and overwrite at the same threads.
        let least = find("1 MiB messages fsync off, 2 thread(s), steady / memcpy + CRC-32C + ");
        assert!((least.fraction - 1.5).abs() < 1e-9, "{least:?}");
        // And against the checksum and overwrite (write-through's least).
        let through = find("1 MiB messages fsync off, 2 thread(s), steady / CRC-32C + ");
        assert!((through.fraction - 0.8).abs() < 1e-9, "{through:?}");
        // 64 threads: the overwrite from one MiB of source per session
        // too, a row of its own beside the standard overwrite's; none at
        // two threads, where the suite did not measure it.
        let many = find("1 MiB messages fsync off, 64 thread(s), steady / overwrite");
        assert!((many.fraction - 0.6).abs() < 1e-9, "{many:?}");
        let sessions = find("1 MiB messages fsync off, 64 thread(s), steady / overwrite of a cached file, 1 MiB, from 64 sessions");
        assert!((sessions.fraction - 0.8).abs() < 1e-9, "{sessions:?}");
        assert!(
            rows.iter()
                .all(|f| !(f.what.contains("2 thread(s)") && f.what.contains("sessions"))),
            "{rows:?}"
        );
        assert!(
            rows.iter().all(|f| !f.what.contains("O_DIRECT")),
            "{rows:?}"
        );
    }

    #[test]
    fn an_overwrite_without_a_working_set_is_not_a_limit() {
        let old = LimitResult {
            working_set_bytes: None,
            ..write_limit(WriteTarget::Overwrite, WriteSync::None, 1, 20.0)
        };
        let r = Results {
            limits: vec![old],
            pg_workloads: vec![message(SyncMethod::None, 1, SegmentState::Steady, 3.0)],
            ..Results::default()
        };
        let rows = limit_fractions(&r);
        assert!(
            rows.iter().all(|f| !f.what.contains("overwrite")),
            "{rows:?}"
        );
        let measured = write_limit(WriteTarget::Overwrite, WriteSync::None, 1, 6.0);
        let r = Results {
            limits: vec![measured],
            ..r
        };
        let rows = limit_fractions(&r);
        assert!((rows[0].fraction - 0.5).abs() < 1e-9, "{rows:?}");
    }

    #[test]
    fn insert_ratios_take_the_best_design_on_discard() {
        use crate::design::Design;
        use crate::reserve::insert::InsertCase;
        use walden::{ReservationKind, WalFormat};
        let design = |reservation| Design {
            format: WalFormat::Postgres15,
            reservation,
        };
        let discard = LogSetup {
            storage: StorageKind::Discard,
            segment_state: SegmentState::Fresh,
        };
        let row = |reservation, threads, setup, rate| InsertResult {
            case: InsertCase {
                design: design(reservation),
                threads,
                record_bytes: 66,
                batch: 1,
            },
            setup,
            figures: figures(rate, rate * 66.0),
            ns_per_record: 1e9 / rate,
        };
        let steady = LogSetup::files(SegmentState::Steady);
        let rows = [
            row(ReservationKind::Spinlock, 1, discard, 10.0),
            row(ReservationKind::Spinlock, 2, discard, 12.0),
            row(ReservationKind::PrevLinkTable, 1, discard, 10.0),
            row(ReservationKind::PrevLinkTable, 2, discard, 18.0),
            row(ReservationKind::PrevLinkTable, 2, steady, 9.0),
        ];
        let ratios = insert_ratios(&rows);
        assert_eq!(ratios.len(), 2, "{ratios:?}");
        assert!(ratios[0].what.contains("prev-link-table"), "{ratios:?}");
        assert!((ratios[0].fraction - 1.8).abs() < 1e-9);
        assert!(ratios[1]
            .what
            .contains("2 thread(s): files, steady / discard"));
        assert!((ratios[1].fraction - 0.5).abs() < 1e-9);
        assert!(insert_ratios(&[]).is_empty());
        // The ratios come from insert-scaling where it ran, else insert.
        let mut results = Results {
            insert: rows.to_vec(),
            ..Results::default()
        };
        assert_eq!(insert_ratios(results.insert_for_ratios()).len(), 2);
        results.insert_scaling = rows[..2].to_vec();
        let ratios = insert_ratios(results.insert_for_ratios());
        assert_eq!(ratios.len(), 1, "{ratios:?}");
        assert!(ratios[0].what.contains("spinlock"), "{ratios:?}");
        assert!((ratios[0].fraction - 1.2).abs() < 1e-9);
    }
}
