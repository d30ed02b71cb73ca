//! `walden bench logical-1mb`: T threads inserting 1 MiB logical messages,
//! per page-initialisation design, slot choice and slot count (seed 000).

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::BenchError;
use crate::logical::{self, LogicalResult, PageCosts, Settings, Sweep};
use walden::{Config, PageInitKind, SlotChoice};

use crate::knobs::{check, config_json, configure, BuffersArg, EvictionArg, LayoutArgs};
use crate::run_output::progress;
use crate::run_output::{finish, open_json};
use crate::units::parse_size_arg;
use crate::units::ratio;

/// The buffer ring unless `--buffers` says otherwise.
const DEFAULT_BUFFERS: u64 = 256 << 20;

/// Arguments of `walden bench logical-1mb`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Knobs not given keep Config::default()'s, but for 64MB segments and 256MB
of buffers; sync none, and the storage drops every byte written.

Examples:
  walden bench logical-1mb --threads 1,2,8 --insert-slots 8 --duration-ms 200
  walden bench logical-1mb --page-init cooperative --eviction batch --buffers 64MB
  walden bench logical-1mb --format self-lsn --slot-choice attempts:2,attempts:4
  walden bench logical-1mb --insert-slots 8,64 --writer-init-ahead 0,1024")]
pub struct LogicalArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,8,32,128")]
    pub threads: Vec<NonZeroUsize>,
    /// Page-initialisation designs to compare, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mapping-lock,cooperative"
    )]
    pub page_init: Vec<PageInitKind>,
    /// Slot choices to compare, comma-separated: sticky, attempts:K.
    #[arg(long, value_delimiter = ',', default_value = "sticky,attempts:2")]
    pub slot_choice: Vec<SlotChoice>,
    /// Insertion-slot counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,64")]
    pub insert_slots: Vec<NonZeroUsize>,
    /// Pages the background writer initialises ahead of the inserters
    /// after each round, comma-separated (0: none; Config::writer_init_ahead).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub writer_init_ahead: Vec<u64>,
    /// Segment size.
    #[arg(long, default_value = "64MB", value_parser = parse_size_arg)]
    pub segment_size: u64,
    /// Format and reservation, over `Config::default()` (postgres15,
    /// spinlock).
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Eviction policy, over `Config::default()`'s one-page.
    #[command(flatten)]
    pub eviction: EvictionArg,
    /// Buffer ring, 256MB unless given (as the seed's wal_buffers = 1 GB:
    /// large enough that inserters seldom write).
    #[command(flatten)]
    pub buffers: BuffersArg,
    /// Wall-clock milliseconds of each case (the default run has 40 cases,
    /// plus one limit measurement of half as long per thread count).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Slices each case's time is cut into, interleaved with the other
    /// cases of the same thread count.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub slices: u32,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs every case, then prints the table (and writes the JSON).
pub fn run(args: &LogicalArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let threads: Vec<usize> = args.threads.iter().map(|n| n.get()).collect();
    let slots: Vec<usize> = args.insert_slots.iter().map(|n| n.get()).collect();
    let base = Config {
        segment_size: args.segment_size,
        buffers: DEFAULT_BUFFERS,
        ..Config::default()
    };
    let settings = Settings {
        base: configure(base, &[&args.layout, &args.eviction, &args.buffers]),
        duration: Duration::from_millis(args.duration_ms),
        slices: args.slices,
    };
    let cases = logical::cases(Sweep {
        threads: &threads,
        page_inits: &args.page_init,
        slot_choices: &args.slot_choice,
        insert_slots: &slots,
        writer_init_ahead: &args.writer_init_ahead,
    });
    check(cases.iter().map(|c| c.config(&settings.base)))?;
    let progress = progress(cases.len() * args.slices.max(1) as usize)?;
    let mut results = Vec::with_capacity(cases.len());
    for group in cases.chunk_by(|a, b| a.threads == b.threads) {
        let t = group[0].threads;
        progress.set_message(format!("{t} threads"));
        results.extend(
            logical::run_group(group, t, &settings, || progress.inc(1))
                .map_err(|source| BenchError::Logical { threads: t, source })?,
        );
    }
    progress.set_message("per-page costs, one thread");
    let costs = logical::page_costs(settings.duration, settings.base.page_zeroing_in_effect());
    finish(
        progress,
        || {
            print_table(&results);
            print_projection(&costs);
        },
        json,
        serde_json::json!({
            "workload": "logical-1mb",
            "payload_bytes": logical::PAYLOAD,
            "settings": settings,
            "config": config_json(
                &settings.base,
                &["insert_slots", "slot_choice", "page_init", "writer_init_ahead"]
            ),
            "available_parallelism": std::thread::available_parallelism().ok().map(|n| n.get()),
            "results": results,
            "page_costs": costs,
            "projected": {
                "serialized_fraction": costs.serialized_fraction(),
                "mapping_lock_saturation_cores": costs.mapping_lock_saturation_cores(),
                "mapping_lock_ceiling_gb_per_sec": costs.mapping_lock_ceiling_gb_per_sec(),
            },
        }),
    )
}

/// The per-page costs and what they project for many cores.
fn print_projection(c: &PageCosts) {
    println!();
    println!(
        "per 8 kB page, one thread: init {:.0} ns, copy {:.0} ns, CRC-32C {:.0} ns",
        c.init_ns, c.copy_ns, c.crc_ns
    );
    println!(
        "serialised under the mapping lock: s = {:.2}; projected (not measured): the \
         mapping lock caps throughput from about {:.1} cores on, at {:.1} GB/s",
        c.serialized_fraction(),
        c.mapping_lock_saturation_cores(),
        c.mapping_lock_ceiling_gb_per_sec()
    );
}

/// One row per case; `×map` is the rate over the mapping-lock case with
/// the same threads, slots, slot choice and pages initialised ahead
/// (`ahead`: the setting; `init'd ahead`: the pages the writer did).
fn print_table(results: &[LogicalResult]) {
    println!(
        "{:>7} {:>5} {:<12} {:>5} {:<13} {:>9} {:>6} {:>6} {:>6} {:>9} {:>10} {:>12}",
        "threads",
        "slots",
        "slot choice",
        "ahead",
        "page init",
        "records/s",
        "GB/s",
        "limit",
        "×limit",
        "×map-lock",
        "evictions",
        "init'd ahead"
    );
    let key = |r: &LogicalResult| {
        let c = r.case;
        (
            c.threads,
            c.insert_slots,
            c.slot_choice,
            c.writer_init_ahead,
        )
    };
    for group in results.chunk_by(|a, b| key(a) == key(b)) {
        let base = group
            .iter()
            .find(|r| r.case.page_init == PageInitKind::MappingLock)
            .map(|r| r.records_per_sec);
        for r in group {
            let vs = ratio(r.records_per_sec, base);
            println!(
                "{:>7} {:>5} {:<12} {:>5} {:<13} {:>9.0} {:>6.2} {:>6.2} {:>6.2} {:>9} {:>10} {:>12}",
                r.case.threads,
                r.case.insert_slots,
                r.case.slot_choice.to_string(),
                r.case.writer_init_ahead,
                r.case.page_init.name(),
                r.records_per_sec,
                r.gb_per_sec,
                r.limit_gb_per_sec,
                r.ratio_to_limit(),
                vs,
                r.buffer_full_evictions,
                r.pages_initialised_ahead
            );
        }
    }
}
