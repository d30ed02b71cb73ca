//! `walden bench raft`: walden-raft's log store against raft-engine
//! (built with `--features peers`) appending and reading the same Raft
//! entries; without the feature, walden-raft alone, and the table says so.

use std::path::PathBuf;

use clap::Args;

use crate::error::BenchError;
use crate::raft::{run_case, RaftCase, RaftResult, RaftSystem, PAYLOAD};
use crate::run_output::{finish, open_json, progress};
use crate::units::{rate, ratio};

/// Arguments of `walden bench raft`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
raft-engine is in builds with `--features peers` (scripts/bench --peers);
other builds measure walden-raft alone. Its cases run one after the
other, not in interleaved slices, so run it on a quiet machine;
`walden bench all` runs it last (the quick run with --entries 5000).

Examples:
  walden bench raft
  walden bench raft --entries 200000 --batches 1,64 --sync false")]
pub struct RaftArgs {
    /// Entries appended, then read back, per case.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub entries: u64,
    /// Entries per append and per read, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16,256")]
    pub batches: Vec<u64>,
    /// Whether appends are synced (fdatasync) before they return,
    /// comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "false,true")]
    pub sync: Vec<bool>,
    /// Where the logs go (default: the system's temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs every case, prints the table (and writes the JSON).
pub fn run(args: &RaftArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let systems = RaftSystem::available();
    let mut cases = Vec::new();
    for &sync in &args.sync {
        for &batch in &args.batches {
            for &system in &systems {
                cases.push(RaftCase {
                    system,
                    batch,
                    sync,
                });
            }
        }
    }
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let bar = progress(cases.len())?;
    let mut results = Vec::with_capacity(cases.len());
    for case in cases {
        bar.set_message(format!(
            "{}, batches of {}, sync {}",
            case.system.name(),
            case.batch,
            case.sync
        ));
        results.push(run_case(case, &dir, args.entries)?);
        bar.inc(1);
    }
    finish(
        bar,
        || print_table(&results, args.entries),
        json,
        serde_json::json!({
            "workload": "raft",
            "payload": PAYLOAD,
            "entries": args.entries,
            "peers_built": cfg!(feature = "peers"),
            "results": results,
        }),
    )
}

/// One row per case; the ratios are walden-raft's rate over the row's.
fn print_table(results: &[RaftResult], entries: u64) {
    if !cfg!(feature = "peers") {
        println!("raft-engine is not in this build (--features peers): walden-raft alone.");
    }
    println!("{entries} entries of {PAYLOAD} B, appended in batches, then read back in ranges of the same size");
    println!(
        "{:<5} {:>6}  {:<12} {:>11} {:>8} {:>11} {:>8}",
        "sync", "batch", "system", "appends/s", "walden×", "reads/s", "walden×"
    );
    for group in results.chunk_by(|a, b| (a.case.sync, a.case.batch) == (b.case.sync, b.case.batch))
    {
        let walden = group
            .iter()
            .find(|r| r.case.system == RaftSystem::WaldenRaft);
        for r in group {
            println!(
                "{:<5} {:>6}  {:<12} {:>11} {:>8} {:>11} {:>8}",
                r.case.sync,
                r.case.batch,
                r.case.system.name(),
                rate(r.append_per_sec),
                walden.map_or("-".to_owned(), |w| ratio(
                    w.append_per_sec,
                    Some(r.append_per_sec)
                )),
                rate(r.read_per_sec),
                walden.map_or("-".to_owned(), |w| ratio(
                    w.read_per_sec,
                    Some(r.read_per_sec)
                )),
            );
        }
    }
}
