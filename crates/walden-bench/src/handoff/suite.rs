//! `walden bench handoff`: who writes under eviction pressure, with and
//! without the write lock's hand-off to the background writer (seed 002).

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::BenchError;
use crate::handoff::{self, HandoffCase, HandoffResult};
use crate::knobs::{check, config_json, configure, StrategyArgs};
use crate::measure::grid;
use crate::run_output::{finish, open_json, progress};
use crate::units::parse_size_arg;
use walden::Config;

/// The buffer ring unless `--buffers` says otherwise: 128 pages, smaller
/// than one 1 MiB message.
const DEFAULT_BUFFERS: u64 = 1 << 20;

/// Arguments of `walden bench handoff`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Knobs not given keep Config::default()'s, but for a 1MB ring; every case
syncs with open_datasync (each durable write taking --delay-us on a storage
that drops the bytes) and runs the background writer every millisecond.
Its figures are counts of who wrote and of who passed the background
writer for the write lock, for seed 002's hand-off (docs/buffers.md), not a
throughput to compare; `walden bench all` runs it last but one (the quick
run with --duration-ms 250).

Examples:
  walden bench handoff
  walden bench handoff --threads 1,2,8 --delay-us 1000 --eviction batch")]
pub struct HandoffArgs {
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,8")]
    pub threads: Vec<NonZeroUsize>,
    /// Payload of each message, comma-separated sizes.
    #[arg(long, value_delimiter = ',', default_value = "1MB,8KB", value_parser = parse_size_arg)]
    pub payload: Vec<u64>,
    /// Write-lock hand-off settings to compare, comma-separated: off, on.
    #[arg(long, value_delimiter = ',', default_value = "off,on", value_parser = parse_on_off)]
    pub handoff: Vec<bool>,
    /// Microseconds per durable write.
    #[arg(long, default_value_t = 200)]
    pub delay_us: u64,
    /// Wall-clock milliseconds of each case.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Every strategy knob, one value each, over `Config::default()` with
    /// a 1MB ring.
    #[command(flatten)]
    pub strategy: StrategyArgs,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("{other:?}: expected on or off")),
    }
}

/// Runs every case, then prints the table (and writes the JSON).
pub fn run(args: &HandoffArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let base = configure(
        Config {
            buffers: DEFAULT_BUFFERS,
            ..Config::default()
        },
        &[&args.strategy],
    );
    let threads: Vec<usize> = args.threads.iter().map(|t| t.get()).collect();
    let payloads: Vec<usize> = args.payload.iter().map(|&p| p as usize).collect();
    let cases: Vec<HandoffCase> = grid(&grid(&payloads, &threads), &args.handoff)
        .into_iter()
        .map(|((payload, threads), handoff)| HandoffCase {
            threads,
            payload,
            handoff,
        })
        .collect();
    check(cases.iter().map(|c| c.config(&base)))?;
    let (delay, duration) = (
        Duration::from_micros(args.delay_us),
        Duration::from_millis(args.duration_ms),
    );
    let progress = progress(cases.len())?;
    let mut results = Vec::with_capacity(cases.len());
    for case in cases {
        progress.set_message(format!(
            "{} B messages, {} threads, hand-off {}",
            case.payload,
            case.threads,
            on_off(case.handoff)
        ));
        let result = handoff::run_case(case, &base, delay, duration).map_err(|source| {
            BenchError::Handoff {
                threads: case.threads,
                source,
            }
        })?;
        progress.inc(1);
        results.push(result);
    }
    finish(
        progress,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "handoff",
            "sync_method": "open_datasync",
            "delay_us": args.delay_us,
            "config": config_json(&base, &[]),
            "results": results,
        }),
    )
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// One row per case: throughput, who wrote the bytes, and how often the
/// background writer was passed while it waited for the write lock.
fn print_table(results: &[HandoffResult]) {
    println!(
        "{:>8} {:>7} {:<8} {:>8} {:>9} {:>10} {:>10} {:>10} {:>9} {:>10} {:>6}",
        "payload",
        "threads",
        "hand-off",
        "MB/s",
        "bg share",
        "bg MiB",
        "evict MiB",
        "flush MiB",
        "bg locks",
        "overtaken",
        "most"
    );
    let mib = |n: u64| format!("{:.1}", n as f64 / (1u64 << 20) as f64);
    for r in results {
        println!(
            "{:>8} {:>7} {:<8} {:>8.0} {:>8.1}% {:>10} {:>10} {:>10} {:>9} {:>10} {:>6}",
            r.case.payload,
            r.case.threads,
            on_off(r.case.handoff),
            r.mb_per_sec,
            100.0 * r.background_share(),
            mib(r.by_background_writer),
            mib(r.by_evictions),
            mib(r.by_flushes),
            r.background_lock_acquisitions,
            r.overtaken,
            r.most_overtaken
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::defaults;

    #[test]
    fn on_off_parses() {
        assert_eq!(parse_on_off("on"), Ok(true));
        assert_eq!(parse_on_off("off"), Ok(false));
        assert!(parse_on_off("yes").unwrap_err().contains("on or off"));
        assert_eq!(defaults::<HandoffArgs>().handoff, vec![false, true]);
    }
}
