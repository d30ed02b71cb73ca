//! `walden bench limits`: the machine's physical limits — memcpy and
//! CRC-32C bandwidth, one cache-line transfer, file writes (fresh file,
//! overwrite of a cached file, `O_DIRECT`; with and without `fdatasync`;
//! 8 kB and 1 MiB; the overwrite from many sessions' messages too),
//! (memcpy +) CRC-32C + overwrite — the yardsticks the other suites are
//! read against.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::BenchError;
use crate::limits::{self, LimitResult, Probe};
use crate::machine::Machine;

use crate::run_output::progress;
use crate::run_output::{finish, open_json};
use crate::units::{bytes_rate, latency, rate};

/// Arguments of `walden bench limits`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
File writes of 8 kB and 1 MiB, each with and without fdatasync: a fresh
file write (extending a new file), an overwrite of a cached file (written
and synced first, as a recycled segment; 256 MiB overwritten front to back,
as large as a WAL's working set, with sync and without) and an O_DIRECT
write over such a file (where the file system refuses O_DIRECT, the row
and the JSON say so);
O_DSYNC overwrites; two overlapped writers for durable 1 MiB writes. Every
write comes from a 16 MiB ring (Walden's default buffers) whose pages
change before each write; the overwrite from 64 sessions' messages from
64 MiB, as a WAL writing the 1 MiB messages of 64 threads reads them.
memcpy + CRC-32C + overwrite: each 1 MiB record copied into that ring and
checksummed before it is written, the least work of a WAL writing 1 MiB
messages without sync; CRC-32C + overwrite: the record checksummed and
written from where it lies, as Walden's write-through does.

Examples:
  walden bench limits --duration-ms 150
  walden bench limits --dir /mnt/wal-disk --json limits.json")]
pub struct LimitsArgs {
    /// Milliseconds each probe runs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Directory for the write probes' file (on the disk the logs use);
    /// default: the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs every probe, prints the table (and writes the JSON).
pub fn run(args: &LimitsArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let duration = Duration::from_millis(args.duration_ms);
    let probes = Probe::all();
    let bar = progress(probes.len())?;
    let mut results = Vec::with_capacity(probes.len());
    for probe in probes {
        bar.set_message(probe.label());
        results.push(limits::measure(probe, &dir, duration)?);
        bar.inc(1);
    }
    finish(
        bar,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "limits",
            "duration_ms": args.duration_ms,
            "available_parallelism": std::thread::available_parallelism().ok().map(|n| n.get()),
            "machine": Machine::this(),
            "results": results,
        }),
    )
}

fn print_table(results: &[LimitResult]) {
    let width = results
        .iter()
        .map(|r| r.probe.label().len())
        .max()
        .unwrap_or(0);
    println!(
        "{:<width$} {:>12} {:>11} {:>10} {:>10} {:>10}",
        "limit", "bandwidth", "ops/s", "mean", "p50", "p99"
    );
    for r in results {
        if let Some(why) = &r.unsupported {
            println!("{:<width$} unsupported: {why}", r.probe.label());
            continue;
        }
        println!(
            "{:<width$} {:>12} {:>11} {:>10} {:>10} {:>10}",
            r.probe.label(),
            r.gb_per_sec.map_or("-".to_owned(), |g| bytes_rate(g * 1e9)),
            rate(r.ops_per_sec),
            latency(Some(r.ns_per_op.round() as u64)),
            latency(r.p50_ns),
            latency(r.p99_ns),
        );
    }
}
