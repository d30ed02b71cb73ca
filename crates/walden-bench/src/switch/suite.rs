//! `walden bench switch`: the time of one WAL switch right after a
//! checkpoint under `open_datasync`, per eviction policy (seed 002).

use std::path::PathBuf;

use clap::Args;

use crate::error::BenchError;
use crate::switch::{self, StorageKind, SwitchResult};
use walden::{Config, Eviction, SwitchEviction};

use crate::knobs::{check, config_json, configure, LayoutArgs, PageInitArg, SegmentArgs, SlotArgs};
use crate::run_output::progress;
use crate::run_output::{finish, open_json};
use crate::units::parse_size_arg;
use crate::units::ratio;

/// Arguments of `walden bench switch`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Knobs not given keep Config::default()'s; every case syncs with
open_datasync and runs without the background writer.

Examples:
  walden bench switch --storage delay --segment-sizes 16MB --buffers 128KB,4800KB
  walden bench switch --storage delay --page-init cooperative --format self-lsn
  walden bench switch --storage delay --segment-sizes 512MB --buffers 16MB,100MB,400MB,600MB")]
pub struct SwitchArgs {
    /// Segment sizes, comma-separated (512MB reproduces the seed exactly,
    /// at a cost of minutes per one-page case).
    #[arg(long, value_delimiter = ',', default_value = "64MB", value_parser = parse_size_arg)]
    pub segment_sizes: Vec<u64>,
    /// Ring sizes, comma-separated; the default is 16, 100, 400 and 600
    /// pages of 8 KiB.
    #[arg(long, value_delimiter = ',', default_value = "128KB,800KB,3200KB,4800KB", value_parser = parse_size_arg)]
    pub buffers: Vec<u64>,
    /// Where segments go, comma-separated: `delay` (a fixed time per durable
    /// write, so that the result does not depend on the disk) and `disk`
    /// (this machine's disk, O_DSYNC).
    #[arg(long, value_delimiter = ',', default_value = "delay,disk", value_parser = parse_storage)]
    pub storage: Vec<Storage>,
    /// Microseconds per durable write for `--storage delay`.
    #[arg(long, default_value_t = 1000)]
    pub delay_us: u64,
    /// Eviction policies to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "one-page,batch")]
    pub eviction: Vec<Eviction>,
    /// How far the switch's own evictions write under `batch`,
    /// comma-separated: whole (everything it filled, seed 002.6) or chunked
    /// (at most the eviction chunk, 4 MiB, beyond the page to free, as
    /// every eviction).
    #[arg(long, value_delimiter = ',', default_value = "whole,chunked")]
    pub switch_eviction: Vec<SwitchEviction>,
    /// Format and reservation.
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Insertion slots and slot choice.
    #[command(flatten)]
    pub slots: SlotArgs,
    /// Page-initialisation design.
    #[command(flatten)]
    pub page_init: PageInitArg,
    /// `--segment-prep`, `--segments-ahead`, `--direct-io`.
    #[command(flatten)]
    pub segments: SegmentArgs,
    /// Directory for the logs (each case creates and removes its own).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Where a case's segments go (`--storage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A fixed time per durable write (`--delay-us`).
    Delay,
    /// This machine's disk, O_DSYNC.
    Disk,
}

fn parse_storage(text: &str) -> Result<Storage, String> {
    match text {
        "delay" => Ok(Storage::Delay),
        "disk" => Ok(Storage::Disk),
        other => Err(format!("unknown storage {other:?}: expected delay or disk")),
    }
}

/// Runs every case, then prints the table (and writes the JSON).
pub fn run(args: &SwitchArgs) -> Result<(), BenchError> {
    let json = open_json(args.json.as_deref())?;
    let base = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("walden-bench-switch-{}", std::process::id()))
    });
    let storages: Vec<StorageKind> = args
        .storage
        .iter()
        .map(|s| match s {
            Storage::Delay => StorageKind::Delay {
                micros: args.delay_us,
            },
            Storage::Disk => StorageKind::Disk,
        })
        .collect();
    let cases = switch::cases(
        &args.segment_sizes,
        &storages,
        &args.buffers,
        &args.eviction,
        &args.switch_eviction,
    );
    let config = configure(
        Config::default(),
        &[&args.layout, &args.slots, &args.page_init, &args.segments],
    );
    check(cases.iter().map(|c| c.config(&config)))?;
    let progress = progress(cases.len())?;
    let mut results = Vec::with_capacity(cases.len());
    for (i, case) in cases.into_iter().enumerate() {
        progress.set_message(format!(
            "{} MiB segment, {}, {} pages, {}",
            case.segment_size >> 20,
            case.storage,
            switch::pages(case.buffers),
            policy(&case)
        ));
        let dir = base.join(format!("case-{i}"));
        let result =
            switch::run_case(&dir, case, &config).map_err(|source| BenchError::Switch {
                case: Box::new(case),
                dir,
                source: Box::new(source),
            })?;
        progress.inc(1);
        results.push(result);
    }
    // Best effort: every case removed its own directory already.
    let _ = std::fs::remove_dir(&base);
    finish(
        progress,
        || print_table(&results),
        json,
        serde_json::json!({
            "workload": "switch",
            "sync_method": "open_datasync",
            "config": config_json(&config, &["segment_size", "buffers", "eviction"]),
            "eviction_chunk": config.eviction_chunk,
            "results": results,
        }),
    )
}

/// One row per case; the ratio is the one-page time over this case's, for
/// the same segment, storage and ring.
fn print_table(results: &[SwitchResult]) {
    println!(
        "{:>8} {:<12} {:>8} {:<15} {:>9} {:>7} {:>10} {:>9} {:>9}",
        "segment",
        "storage",
        "buffers",
        "eviction",
        "time",
        "writes",
        "largest",
        "evictions",
        "×one-page"
    );
    for group in results.chunk_by(|a, b| {
        (a.case.segment_size, a.case.storage, a.case.buffers)
            == (b.case.segment_size, b.case.storage, b.case.buffers)
    }) {
        let one_page = group
            .iter()
            .find(|r| r.case.eviction == Eviction::OnePage)
            .map(|r| r.seconds);
        for r in group {
            // The speed-up: one-page time over this case's.
            let speedup = ratio(1.0 / r.seconds, one_page.map(|t| 1.0 / t));
            println!(
                "{:>5} MiB {:<12} {:>8} {:<15} {:>9} {:>7} {:>10} {:>9} {:>9}",
                r.case.segment_size >> 20,
                r.case.storage.to_string(),
                ring(r.case.buffers),
                policy(&r.case),
                seconds(r.seconds),
                r.writes,
                bytes(r.largest_write),
                r.evictions,
                speedup
            );
        }
    }
}

/// The eviction policy, and for `batch` how far the switch's own
/// evictions write.
fn policy(case: &switch::SwitchCase) -> String {
    match case.eviction {
        Eviction::OnePage => case.eviction.name().to_string(),
        Eviction::Batch => format!("batch, {}", case.switch_eviction.name()),
    }
}

/// A ring size: in pages, or in MiB from 1 MiB up.
fn ring(buffers: u64) -> String {
    if buffers >= 1 << 20 && buffers.is_multiple_of(1 << 20) {
        format!("{} MiB", buffers >> 20)
    } else {
        format!("{} p", switch::pages(buffers))
    }
}

/// Seconds with a unit, three significant digits or so.
fn seconds(s: f64) -> String {
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

/// Bytes in KiB or MiB.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", n >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(seconds(64.04), "64.0 s");
        assert_eq!(seconds(1.3), "1.30 s");
        assert_eq!(seconds(0.0123), "12.3 ms");
        assert_eq!(bytes(120 << 10), "120 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(ring(16 * 8192), "16 p");
        assert_eq!(ring(16 << 20), "16 MiB");
    }

    #[test]
    fn storage_names() {
        assert_eq!(parse_storage("disk").unwrap(), Storage::Disk);
        assert!(parse_storage("tmpfs")
            .unwrap_err()
            .contains("delay or disk"));
    }
}
