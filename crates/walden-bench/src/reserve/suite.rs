//! `walden bench reserve` (seed 001's microbenchmark) and `walden bench
//! insert` (the whole insert path, non-durable), per reservation design, at
//! several thread counts: ns/op, Mops/s and the ratio to `spinlock` in the
//! same run; then per design the serialized time per record (measured), the
//! writes to globally shared cache lines (counted) and the many-core
//! projection of algorithms.md §10 (projected).

use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Args;

use crate::design::shared_writes;
use crate::error::BenchError;
use crate::fresh_wal::CUT_SHORT_NOTE;
use crate::limits::{self, Probe};
use crate::measure::SliceSettings;
use crate::projection::{project_reservation, this_machine_cores, ReservationProjection};
use crate::reserve::insert::{self, InsertCase, InsertResult};
use crate::reserve::micro::{self, MicroCase, MicroResult};
use indicatif::ProgressBar;
use walden::{Config, ReservationKind};

use crate::knobs::{check, config_json, configure, DesignArgs, InsertPathArgs};
use crate::run_output::progress;
use crate::run_output::{finish, open_json, JsonReport};
use crate::slices::{SliceArgs, StorageArgs};
use crate::units::{bytes_rate, ratio};

/// Reservations per thread of a `--quick` run.
const QUICK_PER_THREAD: u64 = 50_000;
/// Reservations of the one-thread serialized-step measurement.
const SERIALIZED_OPS: u64 = 2_000_000;

/// Arguments of `walden bench reserve`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
The reservers alone: no log, so --reservation is the only knob.

Examples:
  walden bench reserve --quick --threads 1,2,64
  walden bench reserve --reservation spinlock,unlinked --per-thread 100000 --json reserve.json")]
pub struct ReserveArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,16,64,256")]
    pub threads: Vec<NonZeroUsize>,
    /// Reservations per thread (seed 001: a million per client).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub per_thread: u64,
    /// Reservation designs, comma-separated (the ratios need spinlock);
    /// dumb-ceiling is seed 003's bench-only ceiling (`xl_prev` = start − 1).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "spinlock,prev-link-table,prev-link-in-buffer,unlinked,dumb-ceiling"
    )]
    pub reservation: Vec<ReservationKind>,
    /// 50,000 reservations per thread: about a minute in all.
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// Arguments of `walden bench insert`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Knobs not given keep Config::default()'s; sync none.

Examples:
  walden bench insert --quick --threads 1,2,64 --record-bytes 66
  walden bench insert --quick --threads 1,2 --record-bytes 66 --batch 1,16,64,256 --reservation spinlock
  walden bench insert --format postgres15 --insert-slots 64 --slot-choice attempts:2
  walden bench insert --reservation unlinked --page-init cooperative --eviction batch
  walden bench insert --threads 1,2 --storage discard,files --segment-state steady")]
pub struct InsertArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,16,64,256")]
    pub threads: Vec<NonZeroUsize>,
    /// Record sizes in bytes, comma-separated (66: seed 001's OLTP average;
    /// 4096: a bulk record).
    #[arg(long, value_delimiter = ',', default_value = "66,4096")]
    pub record_bytes: Vec<NonZeroUsize>,
    /// Records per insert call, comma-separated: 1 inserts each record
    /// alone (`Wal::insert`); more insert them as one batch
    /// (`Wal::insert_batch_end`: one reservation and one copy pass).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub batch: Vec<NonZeroUsize>,
    /// `--format` and `--reservation` lists.
    #[command(flatten)]
    pub designs: DesignArgs,
    /// The other knobs of each log, over `Config::default()` (PostgreSQL's:
    /// 8 sticky slots, mapping-lock, one-page, 16 MB of buffers).
    #[command(flatten)]
    pub knobs: InsertPathArgs,
    /// `--storage` and `--segment-state`: each case runs on each.
    #[command(flatten)]
    pub storage: StorageArgs,
    /// One slice of 200 ms per case: about a minute in all.
    #[arg(long)]
    pub quick: bool,
    /// Timing, directory and JSON output.
    #[command(flatten)]
    pub run: SliceArgs,
}

/// Runs the microbenchmark, prints its table and the per-design summary.
pub fn run_reserve(args: &ReserveArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let per_thread = if args.quick {
        QUICK_PER_THREAD
    } else {
        args.per_thread
    };
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let cases = micro::cases(&args.reservation, &threads);
    let bar = progress(cases.len() + args.reservation.len())?;
    let mut results = Vec::with_capacity(cases.len());
    for &case in &cases {
        bar.set_message(format!("{}, {} threads", case.reservation, case.threads));
        results.push(micro::run_case(case, per_thread));
        bar.inc(1);
    }
    let report = serde_json::json!({
        "workload": "reserve",
        "per_thread": per_thread,
        "results": results,
    });
    finish_with_summary(
        bar,
        &args.reservation,
        || print_micro(&results),
        json,
        report,
    )
}

/// Runs the insert suite, prints its table and the per-design summary.
pub fn run_insert(args: &InsertArgs) -> Result<(), BenchError> {
    let json = open_json(args.run.json())?;
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let sizes: Vec<usize> = args.record_bytes.iter().map(|b| b.get()).collect();
    let designs = args.designs.designs()?;
    let batches: Vec<usize> = args.batch.iter().map(|b| b.get()).collect();
    let cases = insert::cases(&designs, &threads, &sizes, &batches);
    let base = configure(Config::default(), &[&args.knobs]);
    check(cases.iter().map(|c| c.config(&base)))?;
    let slices = if args.quick {
        SliceSettings {
            slice: Duration::from_millis(200),
            slices: 1,
            ..args.run.settings()
        }
    } else {
        args.run.settings()
    };
    let setups = args.storage.setups();
    let bar = progress(
        cases.len() * setups.len() * slices.slices as usize + args.designs.reservation.len(),
    )?;
    let results = insert::run(&cases, &setups, &base, &slices, |c, s| {
        bar.set_message(format!(
            "{}, {} threads, {} B, {}",
            c.design.label(),
            c.threads,
            c.record_bytes,
            s.label()
        ));
        bar.inc(1);
    })?;
    let report = serde_json::json!({
        "workload": "insert",
        "config": config_json(&base, &["format", "reservation"]),
        "slice_ms": slices.slice.as_millis() as u64,
        "slices": slices.slices,
        "results": results,
    });
    finish_with_summary(
        bar,
        &args.designs.reservation,
        || print_insert(&results),
        json,
        report,
    )
}

/// What both suites end with: measures the per-design [`Summary`] (one
/// step of `bar` per design), prints the suite's own table
/// (`print_results`) and the summary, and writes `report` with the
/// summary's fields added.
fn finish_with_summary(
    bar: ProgressBar,
    reservations: &[ReservationKind],
    print_results: impl FnOnce(),
    json: Option<JsonReport>,
    mut report: serde_json::Value,
) -> Result<(), BenchError> {
    bar.set_message("serialized steps and the cache-line transfer");
    let summary = summarise(reservations, |_| bar.inc(1))?;
    let encoding = || BenchError::json("encoding the results");
    report["designs"] = serde_json::to_value(&summary.designs).map_err(encoding())?;
    report["line_transfer_ns"] = summary.line_transfer_ns.into();
    report["projection"] = serde_json::to_value(&summary.projection).map_err(encoding())?;
    finish(
        bar,
        || {
            print_results();
            print_summary(&summary);
        },
        json,
        report,
    )
}

/// Per design: the serialized step (measured) and the shared writes
/// (counted); this machine's cache-line transfer; the projection.
struct Summary {
    designs: Vec<serde_json::Value>,
    line_transfer_ns: f64,
    projection: Vec<ReservationProjection>,
}

fn summarise(
    reservations: &[ReservationKind],
    mut done: impl FnMut(ReservationKind),
) -> Result<Summary, BenchError> {
    let mut designs = Vec::new();
    let mut serialized = Vec::new();
    for &reservation in reservations {
        let ns = micro::serialized_ns(reservation, SERIALIZED_OPS);
        designs.push(serde_json::json!({
            "reservation": reservation.to_string(),
            "serialized_ns": ns,
            "shared_writes": shared_writes(reservation),
        }));
        serialized.push((reservation, ns));
        done(reservation);
    }
    let line = limits::measure(
        Probe::LineTransfer,
        &std::env::temp_dir(),
        Duration::from_millis(300),
    )?;
    let cores = this_machine_cores();
    let projection = serialized
        .iter()
        .flat_map(|&(reservation, ns)| project_reservation(reservation, ns, line.ns_per_op, cores))
        .collect();
    Ok(Summary {
        designs,
        line_transfer_ns: line.ns_per_op,
        projection,
    })
}

/// Rows by thread count; the ratio is throughput over `spinlock`'s.
fn print_micro(results: &[MicroResult]) {
    println!("reservation microbenchmark (seed 001): T threads × N reservations each, measured");
    println!(
        "{:>7}  {:<20} {:>10} {:>10} {:>10}",
        "threads", "reservation", "ns/op", "Mops/s", "×spinlock"
    );
    for group in results.chunk_by(|a, b| a.case.threads == b.case.threads) {
        let spinlock = group
            .iter()
            .find(|r| r.case.reservation == ReservationKind::Spinlock)
            .map(|r| r.mops);
        for r in group {
            let MicroCase {
                reservation,
                threads,
            } = r.case;
            println!(
                "{threads:>7}  {:<20} {:>10.1} {:>10.2} {:>10}",
                reservation.to_string(),
                r.ns_per_op,
                r.mops,
                ratio(r.mops, spinlock)
            );
        }
    }
}

/// Rows by record size and thread count; the ratio is to `spinlock` on
/// the same setup.
fn print_insert(results: &[InsertResult]) {
    println!("insert path, sync none (non-durable), measured");
    println!(
        "{:>6} {:>5} {:>7}  {:<30} {:<14} {:>10} {:>10} {:>10} {:>9} {:>11}",
        "bytes",
        "batch",
        "threads",
        "design",
        "storage",
        "ns/record",
        "Mrec/s",
        "×spinlock",
        "×batch 1",
        "WAL/s"
    );
    for group in results.chunk_by(|a, b| {
        (a.case.threads, a.case.record_bytes, a.case.batch)
            == (b.case.threads, b.case.record_bytes, b.case.batch)
    }) {
        for r in group {
            let spinlock = group
                .iter()
                .find(|s| {
                    s.case.design.reservation == ReservationKind::Spinlock && s.setup == r.setup
                })
                .map(|s| s.figures.records_per_sec);
            // The same design, threads, size and setup, one record at a time.
            let single = results
                .iter()
                .find(|s| s.case == InsertCase { batch: 1, ..r.case } && s.setup == r.setup)
                .map(|s| s.figures.records_per_sec);
            println!(
                "{:>6} {:>5} {:>7}  {:<30} {:<14} {:>10.1} {:>10.3} {:>10} {:>9} {:>11}",
                r.case.record_bytes,
                r.case.batch,
                r.case.threads,
                r.case.design.label(),
                r.figures.setup_label(&r.setup),
                r.ns_per_record,
                r.figures.records_per_sec / 1e6,
                ratio(r.figures.records_per_sec, spinlock),
                ratio(r.figures.records_per_sec, single),
                bytes_rate(r.figures.wal_bytes_per_sec),
            );
        }
    }
    if results.iter().any(|r| r.figures.slices_cut_short > 0) {
        println!("{CUT_SHORT_NOTE}");
    }
}

fn print_summary(s: &Summary) {
    println!();
    println!(
        "per design: serialized step, one thread (measured); writes to shared lines per record (counted from the code)"
    );
    println!(
        "{:<20} {:>14} {:>14} {:>16} {:>16}",
        "reservation", "serialized ns", "global writes", "line transfers", "neighbour writes"
    );
    for d in &s.designs {
        let w = &d["shared_writes"];
        println!(
            "{:<20} {:>14.1} {:>14} {:>16} {:>16}",
            d["reservation"].as_str().unwrap_or("?"),
            d["serialized_ns"].as_f64().unwrap_or(f64::NAN),
            w["global_writes"],
            w["global_line_transfers"],
            w["neighbour_writes"],
        );
    }
    println!();
    println!(
        "PROJECTED ceilings (algorithms.md §10: 1 / max(t_serial, c_g · t_x)); t_x measured here: {:.1} ns, assumed elsewhere",
        s.line_transfer_ns
    );
    println!(
        "{:<20} {:<42} {:>8} {:>14} {:>12}",
        "reservation", "machine", "t_x ns", "projected M/s", "bound"
    );
    for p in &s.projection {
        println!(
            "{:<20} {:<42} {:>8.0} {:>14.1} {:>12}",
            p.reservation.to_string(),
            p.machine,
            p.line_transfer_ns,
            p.projected_mops,
            if p.line_bound { "line" } else { "serial work" }
        );
    }
}
