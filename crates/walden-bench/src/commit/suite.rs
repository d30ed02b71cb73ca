//! `walden bench commit`: T threads each looping "insert a record, flush
//! it", per sync method: commits/s, syncs per commit, p50/p99 latency.
//! With `--logical`, the records are PostgreSQL's logical messages: the
//! workloads `scripts/pg-bench` runs on PostgreSQL 15.

use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Args;

use crate::commit::limits_beside::{CaseLimits, LimitsBeside};
use crate::commit::{self, CommitRecord, CommitResult};
use crate::error::BenchError;
use crate::fresh_wal::{LogSetup, SegmentState, CUT_SHORT_NOTE};
use crate::limits::LimitResult;
use crate::peers::best_config;
use walden::{Config, SyncMethod};

use crate::knobs::{check, config_json, configure, StrategyArgs};
use crate::run_output::{finish, open_json};
use crate::slices::{SegmentStateArgs, SliceArgs};
use crate::units::parse_size_arg;
use crate::units::{bytes_rate, latency, rate, ratio, size};

/// Arguments of `walden bench commit`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Knobs not given keep Config::default()'s, or with --best Walden's best
configuration's; the sync method is each case's.

Examples:
  walden bench commit --threads 1,2,64 --sync fdatasync --slice-ms 200
  walden bench commit --reservation prev-link-table --insert-slots 64 --eviction batch
  walden bench commit --best --logical --payload 100,1MB --sync none,fdatasync --threads 1,2,64
  walden bench commit --best --logical --payload 1MB --sync none --threads 2 --segment-state steady,fresh
  walden bench commit --best --logical --payload 1MB --sync fdatasync --threads 1,2 --segment-state steady --limits-beside 300")]
pub struct CommitArgs {
    /// Thread counts, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256"
    )]
    pub threads: Vec<NonZeroUsize>,
    /// Sync methods, comma-separated (`none`: written, never synced, as
    /// PostgreSQL with fsync off).
    #[arg(long, value_delimiter = ',', default_value = "fdatasync,open-datasync")]
    pub sync: Vec<SyncMethod>,
    /// Payload bytes per record, comma-separated (units allowed: 1MB).
    #[arg(long, value_delimiter = ',', default_value = "100", value_parser = parse_size_arg)]
    pub payload: Vec<u64>,
    /// Insert `pg_logical_emit_message(true, 'test', payload)` records
    /// instead of custom ones.
    #[arg(long)]
    pub logical: bool,
    /// Start from Walden's best configuration (`walden bench peers`'
    /// "walden": self-lsn, unlinked, cooperative, batch) instead of
    /// `Config::default()`; the knobs below still override it, and the sync
    /// method is still the case's.
    #[arg(long)]
    pub best: bool,
    /// After each steady slice of a 1 MiB case, measure the machine's
    /// limits that match it (those the summary reads it against: durable
    /// 1 MiB writes with at most as many writers, or the overwrite of a
    /// cached file and CRC-32C + overwrite) for this many milliseconds
    /// each, on the disk the logs use; the JSON keeps every run beside its
    /// case, and the summary reads the case against their mean rather than
    /// against the limits suite's one measurement at the start of the run.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub limits_beside: Option<u64>,
    /// The strategy knobs, over the base configuration.
    #[command(flatten)]
    pub knobs: StrategyArgs,
    /// Segment states.
    #[command(flatten)]
    pub states: SegmentStateArgs,
    /// Timing, directory and JSON output.
    #[command(flatten)]
    pub run: SliceArgs,
}

/// Runs every case, prints the table (and writes the JSON).
pub fn run(args: &CommitArgs) -> Result<(), BenchError> {
    let json = open_json(args.run.json())?;
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let payloads: Vec<usize> = args.payload.iter().map(|&p| p as usize).collect();
    let cases = commit::cases(&args.sync, &payloads, &threads);
    let record = if args.logical {
        CommitRecord::LogicalMessage
    } else {
        CommitRecord::Custom
    };
    let base = if args.best {
        best_config()
    } else {
        Config::default()
    };
    let config = configure(base, &[&args.knobs]);
    check(cases.iter().map(|c| c.config(&config)))?;
    let setups = args.states.setups();
    let bar = args.run.progress(cases.len() * setups.len())?;
    let settings = args.run.settings();
    let mut beside = args
        .limits_beside
        .map(|ms| LimitsBeside::new(settings.dir.clone(), Duration::from_millis(ms)));
    let results = commit::run(&cases, &setups, record, &config, &settings, |c, s| {
        bar.set_message(format!(
            "{}, {} threads, {}",
            c.sync_method,
            c.threads,
            s.label()
        ));
        bar.inc(1);
        if let Some(beside) = beside.as_mut() {
            beside.after_slice(c, s, |label| {
                bar.set_message(format!("limit beside it: {label}"))
            });
        }
    })?;
    let beside = beside.map(LimitsBeside::finish).transpose()?;
    finish(
        bar,
        || {
            print_table(&results);
            if let Some(beside) = &beside {
                print_limits_beside(&results, beside);
            }
        },
        json,
        serde_json::json!({
            "workload": "commit",
            "record": record,
            "base": if args.best { "best" } else { "default" },
            "config": config_json(&config, &[]),
            "slice_ms": args.run.slice_ms,
            "slices": args.run.slices,
            "results": results,
            "limits_beside": beside,
        }),
    )
}

/// One row per case and setup; the ratio is to one thread of the same
/// sync method, payload and setup.
fn print_table(results: &[CommitResult]) {
    println!(
        "{:<14} {:>8} {:>7} {:<14} {:>11} {:>6} {:>12} {:>8} {:>10} {:>10}",
        "sync",
        "payload",
        "threads",
        "segments",
        "commits/s",
        "×T=1",
        "WAL",
        "syncs/c",
        "p50",
        "p99"
    );
    for group in results.chunk_by(|a, b| {
        a.case.sync_method == b.case.sync_method && a.case.payload == b.case.payload
    }) {
        for r in group {
            let one = group
                .iter()
                .find(|o| o.case.threads == 1 && o.setup == r.setup);
            println!(
                "{:<14} {:>8} {:>7} {:<14} {:>11} {:>6} {:>12} {:>8.3} {:>10} {:>10}",
                r.case.sync_method.to_string(),
                size(r.case.payload),
                r.case.threads,
                r.figures.setup_label(&r.setup),
                rate(r.figures.ops_per_sec),
                ratio(r.figures.ops_per_sec, one.map(|o| o.figures.ops_per_sec)),
                bytes_rate(r.figures.wal_bytes_per_sec),
                r.figures.syncs_per_op,
                latency(r.figures.p50_ns),
                latency(r.figures.p99_ns),
            );
        }
    }
    if results.iter().any(|r| r.figures.slices_cut_short > 0) {
        println!("{CUT_SHORT_NOTE}");
    }
}

/// The limits measured beside each case's steady slices: each probe's
/// mean over its runs, how many, and the case's steady WAL rate against it.
fn print_limits_beside(results: &[CommitResult], beside: &[CaseLimits]) {
    if beside.is_empty() {
        return;
    }
    println!("\nlimits beside the steady slices (mean of the runs; walden's WAL / limit):");
    let steady = LogSetup::files(SegmentState::Steady);
    for case in beside {
        let walden = results
            .iter()
            .find(|r| r.case == case.case && r.setup == steady)
            .map(|r| r.figures.wal_bytes_per_sec);
        let label = format!(
            "{} {} {} thread(s)",
            case.case.sync_method,
            size(case.case.payload),
            case.case.threads
        );
        for limit in LimitResult::means(&case.runs) {
            let runs = case.runs.iter().filter(|l| l.probe == limit.probe).count();
            match (&limit.unsupported, limit.gb_per_sec) {
                (Some(why), _) => {
                    println!("{label:<30} {}: unsupported: {why}", limit.probe.label())
                }
                (None, Some(gb)) => println!(
                    "{label:<30} {:<66} {:>12} ×{runs} {:>6}",
                    limit.probe.label(),
                    bytes_rate(gb * 1e9),
                    walden.map_or("-".to_owned(), |w| ratio(w, Some(gb * 1e9))),
                ),
                (None, None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_args;

    #[test]
    fn sync_methods_and_sizes_parse() {
        let args: CommitArgs = parse_args(&[
            "--sync",
            "none,fdatasync",
            "--payload",
            "100,1MB",
            "--logical",
            "--threads",
            "1,64",
            "--slice-ms",
            "10",
        ])
        .unwrap();
        assert_eq!(args.sync, [SyncMethod::None, SyncMethod::Fdatasync]);
        assert_eq!(args.payload, [100, 1 << 20]);
        assert!(args.logical);
        assert!(parse_args::<CommitArgs>(&["--sync", "sometimes"]).is_err());
        assert!(parse_args::<CommitArgs>(&["--slices", "0"]).is_err());
    }
}
