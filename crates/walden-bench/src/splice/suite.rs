//! `walden bench splice`: the torn-write splice experiment (Tom Lane's case
//! in seed 001) for every format and scenario: how many stale records each
//! format accepts raw, and how many under the engine's own restart and
//! recycling rules.

use clap::Args;

use crate::error::BenchError;
use crate::splice::{self, Scenario, SpliceResult, SpliceSettings};
use walden::WalFormat;

use crate::run_output::progress;
use crate::run_output::{finish, open_json};

/// Arguments of `walden bench splice`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Not part of `walden bench all`: this is a correctness table (how many stale
records each format accepts), not a timing, and with the same --seed it
counts the same on every machine, so there is nothing to compare per run.

Examples:
  walden bench splice
  walden bench splice --segments 2 --max-sectors 8 --json splice.json")]
pub struct SpliceArgs {
    /// 1 MiB segments each log fills (the recycled scenario pairs every new
    /// segment with every old one: about 30,000 splices per pair).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..))]
    pub segments: u64,
    /// Most sectors of old bytes per splice (a torn write may span pages).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sectors: u64,
    /// Seed of the record sizes.
    #[arg(long, default_value_t = 0x5EED_0001)]
    pub seed: u64,
    /// Directory for the logs (default: the system's temporary directory).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// Runs every format in every scenario; prints the table.
pub fn run(args: &SpliceArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let settings = SpliceSettings {
        segments: args.segments,
        max_sectors: args.max_sectors,
        seed: args.seed,
    };
    // The wrapped and same-LSN scenarios pair segments one to one: give
    // them as many segments as the recycled one has pairs.
    let segments_for = |scenario: Scenario| match scenario {
        Scenario::Recycled => args.segments,
        Scenario::WrappedIds | Scenario::SameLsn => args.segments * args.segments,
    };
    let runs = Scenario::ALL.len() * WalFormat::ALL.len();
    let bar = progress(runs)?;
    let mut results = Vec::with_capacity(runs);
    for scenario in Scenario::ALL {
        for format in WalFormat::ALL {
            bar.set_message(format!("{}, {format}", scenario.name()));
            let settings = SpliceSettings {
                segments: segments_for(scenario),
                ..settings
            };
            results.push(splice::run(format, scenario, settings, &dir, |_| {})?);
            bar.inc(1);
        }
    }
    finish(
        bar,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "splice",
            "segments": args.segments,
            "max_sectors": args.max_sectors,
            "seed": args.seed,
            "results": results,
        }),
    )
}

fn print_table(results: &[SpliceResult]) {
    println!(
        "{:<12} {:<15} {:>9} {:>13} {:>15}   {:>14} {:>15}",
        "", "", "raw", "", "", "engine rules", ""
    );
    println!(
        "{:<12} {:<15} {:>9} {:>13} {:>15}   {:>14} {:>15}",
        "scenario",
        "format",
        "splices",
        "stale starts",
        "stale accepted",
        "splices",
        "stale accepted"
    );
    for r in results {
        println!(
            "{:<12} {:<15} {:>9} {:>13} {:>15}   {:>14} {:>15}",
            r.scenario.name(),
            r.format.to_string(),
            r.splices,
            r.stale_starts,
            r.accepted,
            r.engine_splices,
            r.engine_accepted
        );
    }
}
