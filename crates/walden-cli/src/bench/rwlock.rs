//! `walden bench rwlock`: reader throughput and writer latency of four
//! reader-writer locks, a progress bar on stderr, a table on stdout.

use std::fs::File;
use std::io::Write;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use walden_bench::rwlock::{self, CellResult, Group, LockKind, Mix};

/// Arguments of `walden bench rwlock`.
#[derive(Args)]
pub struct RwlockArgs {
    /// Thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,16,64,256")]
    threads: Vec<NonZeroUsize>,
    /// Wall-clock milliseconds each lock runs per mix and thread count; the
    /// default run takes 40 of them (about a minute).
    #[arg(long, default_value_t = 1200)]
    duration_ms: u64,
    /// Slices each lock's time is cut into, interleaved with the other
    /// locks', so that a change in background load falls on all alike.
    #[arg(long, default_value = "4")]
    slices: NonZeroU32,
    /// Read shares to measure, in percent, comma-separated (93.5 is seed
    /// 004's ProcArrayLock mix).
    #[arg(long, value_delimiter = ',', default_value = "93.5,70", value_parser = parse_mix)]
    reads: Vec<Mix>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_mix(text: &str) -> Result<Mix, String> {
    let percent: f64 = text
        .parse()
        .map_err(|e| format!("{text:?} is not a number: {e}"))?;
    Mix::from_read_percent(percent).map_err(|e| e.to_string())
}

/// Runs every group, then prints the table (and writes the JSON).
pub fn run(args: &RwlockArgs) -> anyhow::Result<()> {
    let threads: Vec<usize> = args.threads.iter().map(|n| n.get()).collect();
    let duration = Duration::from_millis(args.duration_ms);
    // Created first, so that a bad path fails before a minute of measuring.
    let json = match &args.json {
        Some(path) => Some((
            path,
            File::create(path).with_context(|| cannot_write(path))?,
        )),
        None => None,
    };
    let groups = rwlock::groups(&args.reads, &threads);
    let runs = groups.len() * LockKind::ALL.len() * args.slices.get() as usize;

    let progress = ProgressBar::new(runs as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {msg} [{elapsed}, ~{eta} left]")
            .context("progress bar template")?,
    );
    let mut results = Vec::with_capacity(groups.len() * LockKind::ALL.len());
    for group in groups {
        let Group { mix, threads } = group;
        progress.set_message(format!("{mix} reads/writes, {threads} threads"));
        results.extend(rwlock::run_group(group, duration, args.slices, |_| {
            progress.inc(1)
        }));
    }
    progress.finish_and_clear();

    print_table(&results);
    if let Some((path, mut file)) = json {
        let report = serde_json::json!({
            "workload": "rwlock",
            "duration_ms": args.duration_ms,
            "slices": args.slices.get(),
            "available_parallelism": std::thread::available_parallelism().ok().map(|n| n.get()),
            "results": results,
        });
        let text = serde_json::to_string_pretty(&report).context("encoding the results")?;
        writeln!(file, "{text}").with_context(|| cannot_write(path))?;
    }
    Ok(())
}

fn cannot_write(path: &Path) -> String {
    format!("writing the results to {}", path.display())
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

/// Operations per second, with a unit.
fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2} M", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.1} k", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

/// `value / baseline`, or a dash when there is nothing to divide by.
fn ratio(value: f64, baseline: Option<f64>) -> String {
    match baseline {
        Some(baseline) if baseline > 0.0 => format!("{:.2}", value / baseline),
        _ => "-".to_owned(),
    }
}

/// Nanoseconds, with a unit.
fn latency(ns: Option<u64>) -> String {
    match ns {
        None => "-".to_owned(),
        Some(ns) if ns >= 1_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        Some(ns) if ns >= 1_000 => format!("{:.1} µs", ns as f64 / 1e3),
        Some(ns) => format!("{ns} ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_switch_at_thousands() {
        assert_eq!(rate(2_500_000.0), "2.50 M");
        assert_eq!(rate(2_500.0), "2.5 k");
        assert_eq!(rate(25.0), "25");
        assert_eq!(latency(Some(1_500_000)), "1.5 ms");
        assert_eq!(latency(Some(1_500)), "1.5 µs");
        assert_eq!(latency(Some(150)), "150 ns");
        assert_eq!(latency(None), "-");
    }

    #[test]
    fn ratio_needs_a_positive_baseline() {
        assert_eq!(ratio(3.0, Some(2.0)), "1.50");
        assert_eq!(ratio(3.0, Some(0.0)), "-");
        assert_eq!(ratio(3.0, None), "-");
    }

    #[test]
    fn mix_argument_is_checked() {
        assert_eq!(parse_mix("93.5").unwrap(), Mix::PROC_ARRAY_LOCK);
        assert!(parse_mix("ninety").unwrap_err().contains("not a number"));
        assert!(parse_mix("101").unwrap_err().contains("between 0 and 100"));
    }
}
