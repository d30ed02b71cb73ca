//! `walden bench mix`: seed 001's append-only transactions (20 records of
//! 66 bytes, then a flushed commit) per reservation design, with the ratio
//! to `spinlock` (PostgreSQL master) in the same run.

use std::num::NonZeroUsize;

use clap::Args;

use crate::error::BenchError;
use crate::fresh_wal::CUT_SHORT_NOTE;
use crate::mix::{self, MixResult, RECORDS_PER_TRANSACTION};
use walden::{Config, ReservationKind, SyncMethod};

use crate::knobs::{check, config_json, configure, DesignArgs, InsertPathArgs};
use crate::run_output::{finish, open_json};
use crate::slices::{SegmentStateArgs, SliceArgs};
use crate::units::{latency, rate, ratio};

/// Arguments of `walden bench mix`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(mut_arg("format", |a| a.default_value("postgres15,self-lsn")))]
#[command(after_help = "\
Knobs not given keep Config::default()'s.

Examples:
  walden bench mix --threads 1,2,64 --sync none --slices 1
  walden bench mix --format self-lsn,compact-wal-id --reservation unlinked
  walden bench mix --insert-slots 64 --slot-choice attempts:2 --page-init cooperative")]
pub struct MixArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,16,64")]
    pub threads: Vec<NonZeroUsize>,
    /// `--format` and `--reservation` lists (by default `unlinked` runs
    /// `self-lsn` only).
    #[command(flatten)]
    pub designs: DesignArgs,
    /// Sync methods of the commit, comma-separated (`none`: written, not synced).
    #[arg(long, value_delimiter = ',', default_value = "none,fdatasync")]
    pub sync: Vec<SyncMethod>,
    /// The other knobs of each log, over `Config::default()`.
    #[command(flatten)]
    pub knobs: InsertPathArgs,
    /// Timing, directory and JSON output.
    #[command(flatten)]
    pub run: SliceArgs,
    /// Segment states.
    #[command(flatten)]
    pub states: SegmentStateArgs,
}

/// Runs every case, prints the table (and writes the JSON).
pub fn run(args: &MixArgs) -> Result<(), BenchError> {
    let json = open_json(args.run.json())?;
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let designs = args.designs.designs()?;
    let cases = mix::cases(&designs, &args.sync, &threads);
    let base = configure(Config::default(), &[&args.knobs]);
    check(cases.iter().map(|c| c.config(&base)))?;
    let setups = args.states.setups();
    let bar = args.run.progress(cases.len() * setups.len())?;
    let results = mix::run(&cases, &setups, &base, &args.run.settings(), |c, s| {
        bar.set_message(format!(
            "{}, sync {}, {} threads, {}",
            c.design.label(),
            c.sync_method,
            c.threads,
            s.label()
        ));
        bar.inc(1);
    })?;
    finish(
        bar,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "mix",
            "records_per_transaction": RECORDS_PER_TRANSACTION + 1,
            "config": config_json(&base, &["format", "reservation"]),
            "slice_ms": args.run.slice_ms,
            "slices": args.run.slices,
            "results": results,
        }),
    )
}

/// One row per case; the ratio is to `spinlock` at the same sync method
/// and thread count.
fn print_table(results: &[MixResult]) {
    println!(
        "{:<10} {:>7}  {:<28} {:<14} {:>10} {:>10} {:>9} {:>10} {:>10}",
        "sync", "threads", "design", "segments", "xacts/s", "records/s", "×spinlock", "p50", "p99"
    );
    for group in results.chunk_by(|a, b| {
        a.case.sync_method == b.case.sync_method && a.case.threads == b.case.threads
    }) {
        for r in group {
            let spinlock = group.iter().find(|s| {
                s.case.design.reservation == ReservationKind::Spinlock && s.setup == r.setup
            });
            println!(
                "{:<10} {:>7}  {:<28} {:<14} {:>10} {:>10} {:>9} {:>10} {:>10}",
                r.case.sync_method.to_string(),
                r.case.threads,
                r.case.design.label(),
                r.figures.setup_label(&r.setup),
                rate(r.figures.ops_per_sec),
                rate(r.figures.records_per_sec),
                ratio(
                    r.figures.ops_per_sec,
                    spinlock.map(|s| s.figures.ops_per_sec)
                ),
                latency(r.figures.p50_ns),
                latency(r.figures.p99_ns),
            );
        }
    }
    if results.iter().any(|r| r.figures.slices_cut_short > 0) {
        println!("{CUT_SHORT_NOTE}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::defaults;
    use crate::design::Design;
    use crate::reserve::suite::InsertArgs;

    #[test]
    fn by_default_mix_runs_unlinked_on_self_lsn_only_and_insert_on_both() {
        let mix: MixArgs = defaults();
        let insert: InsertArgs = defaults();
        assert_eq!(mix.designs.designs().unwrap(), Design::ALL[..4]);
        assert_eq!(insert.designs.designs().unwrap(), Design::ALL);
    }
}
