//! `walden bench rwlock`: reader throughput and writer latency of four
//! reader-writer locks, a progress bar on stderr, a table on stdout.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::BenchError;
use crate::rwlock::{self, CellResult, Group, LockKind, Mix};

use crate::run_output::progress;
use crate::run_output::{finish, open_json};
use crate::units::{latency, rate, ratio};

/// Arguments of `walden bench rwlock`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "Examples:
  walden bench rwlock --threads 1,2,16 --duration-ms 300
  walden bench rwlock --reads 93.5 --slices 2 --json rwlock.json")]
pub struct RwlockArgs {
    /// Thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,16,64,256")]
    pub threads: Vec<NonZeroUsize>,
    /// Wall-clock milliseconds each lock runs per mix and thread count; the
    /// default run takes 40 of them (about a minute).
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Slices each lock's time is cut into, interleaved with the other
    /// locks', so that a change in background load falls on all alike.
    #[arg(long, default_value = "4")]
    pub slices: NonZeroU32,
    /// Read shares to measure, in percent, comma-separated (93.5 is seed
    /// 004's ProcArrayLock mix).
    #[arg(long, value_delimiter = ',', default_value = "93.5,70", value_parser = parse_mix)]
    pub reads: Vec<Mix>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn parse_mix(text: &str) -> Result<Mix, String> {
    let percent: f64 = text
        .parse()
        .map_err(|e| format!("{text:?} is not a number: {e}"))?;
    Mix::from_read_percent(percent).map_err(|e| e.to_string())
}

/// Runs every group, then prints the table (and writes the JSON).
pub fn run(args: &RwlockArgs) -> Result<(), BenchError> {
    let threads: Vec<usize> = args.threads.iter().map(|n| n.get()).collect();
    let duration = Duration::from_millis(args.duration_ms);
    let json = open_json(args.json.as_deref())?;
    let groups = rwlock::groups(&args.reads, &threads);
    let runs = groups.len() * LockKind::ALL.len() * args.slices.get() as usize;

    let progress = progress(runs)?;
    let mut results = Vec::with_capacity(groups.len() * LockKind::ALL.len());
    for group in groups {
        let Group { mix, threads } = group;
        progress.set_message(format!("{mix} reads/writes, {threads} threads"));
        results.extend(rwlock::run_group(group, duration, args.slices, |_| {
            progress.inc(1)
        }));
    }
    finish(
        progress,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "rwlock",
            "duration_ms": args.duration_ms,
            "slices": args.slices.get(),
            "available_parallelism": std::thread::available_parallelism().ok().map(|n| n.get()),
            "results": results,
        }),
    )
}

/// One row per lock, mix and thread count; ratios are against std's RwLock
/// in the same mix and thread count, measured in interleaved slices.
fn print_table(results: &[CellResult]) {
    println!(
        "{:<9} {:>7}  {:<22} {:>10} {:>6} {:>10} {:>6} {:>10} {:>10}",
        "reads/wr",
        "threads",
        "lock",
        "reads/s",
        "×std",
        "writes/s",
        "×std",
        "write p50",
        "write p99"
    );
    for group in results.chunk_by(|a, b| a.mix == b.mix && a.threads == b.threads) {
        let baseline = group.iter().find(|r| r.lock == LockKind::Std);
        for result in group {
            println!(
                "{:<9} {:>7}  {:<22} {:>10} {:>6} {:>10} {:>6} {:>10} {:>10}",
                result.mix.to_string(),
                result.threads,
                result.lock.name(),
                rate(result.reads_per_sec),
                ratio(result.reads_per_sec, baseline.map(|b| b.reads_per_sec)),
                rate(result.writes_per_sec),
                ratio(result.writes_per_sec, baseline.map(|b| b.writes_per_sec)),
                latency(result.write_p50_ns),
                latency(result.write_p99_ns),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_argument_is_checked() {
        assert_eq!(parse_mix("93.5").unwrap(), Mix::PROC_ARRAY_LOCK);
        assert!(parse_mix("ninety").unwrap_err().contains("not a number"));
        assert!(parse_mix("101").unwrap_err().contains("between 0 and 100"));
    }
}
