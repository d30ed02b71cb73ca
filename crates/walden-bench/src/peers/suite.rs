//! `walden bench peers`: Walden against raft-engine, RocksDB's WAL, okaywal
//! and wal-db (built with `--features peers`) on 100-byte records:
//! non-durable appends and durable commits, same threads, interleaved.

use std::num::NonZeroUsize;

use clap::Args;

use crate::error::BenchError;
use crate::peers::{self, PeerResult, System, Workload, PAYLOAD};

use crate::run_output::{finish, open_json};
use crate::slices::SliceArgs;
use crate::units::{latency, rate, ratio};

/// Arguments of `walden bench peers`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
The peers are in builds with `--features peers` (scripts/bench --peers);
other builds have walden and walden-default only.

Examples:
  walden bench peers --threads 1,2,64 --slice-ms 200
  walden bench peers --systems walden,rocksdb --threads 1,64
  walden bench peers --systems walden,raft-engine --workloads commit --threads 64,256")]
pub struct PeersArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,8,64")]
    pub threads: Vec<NonZeroUsize>,
    /// Systems, comma-separated; default: every one this build has
    /// (the peers need `--features peers`).
    #[arg(long, value_delimiter = ',')]
    pub systems: Vec<System>,
    /// Workloads, comma-separated: append, commit.
    #[arg(long, value_delimiter = ',', default_value = "append,commit")]
    pub workloads: Vec<Workload>,
    /// Timing, directory and JSON output.
    #[command(flatten)]
    pub run: SliceArgs,
}

/// Runs every case, prints the table (and writes the JSON).
pub fn run(args: &PeersArgs) -> Result<(), BenchError> {
    let json = open_json(args.run.json())?;
    let systems = if args.systems.is_empty() {
        System::available_systems()
    } else {
        args.systems.clone()
    };
    if let Some(missing) = systems.iter().find(|s| !s.available()) {
        return Err(peers::PeerError::NotBuilt(*missing).into());
    }
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let cases = peers::cases(&systems, &args.workloads, &threads);
    let bar = args.run.progress(cases.len())?;
    let results = peers::run(&cases, &args.run.settings(), |c| {
        bar.set_message(format!(
            "{} {}, {} threads",
            c.system,
            c.workload.name(),
            c.threads
        ));
        bar.inc(1);
    })?;
    finish(
        bar,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "peers",
            "payload": PAYLOAD,
            "peers_built": cfg!(feature = "peers"),
            "slice_ms": args.run.slice_ms,
            "slices": args.run.slices,
            "results": results,
        }),
    )
}

/// One row per case; the ratio is Walden's best configuration over the row.
fn print_table(results: &[PeerResult]) {
    println!(
        "{:<8} {:>7}  {:<15} {:>11} {:>9} {:>10} {:>10}",
        "workload", "threads", "system", "records/s", "walden×", "p50", "p99"
    );
    for group in results
        .chunk_by(|a, b| a.case.workload == b.case.workload && a.case.threads == b.case.threads)
    {
        let walden = group.iter().find(|r| r.case.system == System::Walden);
        for r in group {
            println!(
                "{:<8} {:>7}  {:<15} {:>11} {:>9} {:>10} {:>10}",
                r.case.workload.name(),
                r.case.threads,
                r.case.system.name(),
                rate(r.ops_per_sec),
                walden.map_or("-".to_owned(), |w| ratio(
                    w.ops_per_sec,
                    Some(r.ops_per_sec)
                )),
                latency(r.p50_ns),
                latency(r.p99_ns),
            );
        }
    }
}
