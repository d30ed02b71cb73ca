//! What the suites' tables and progress bars share: rates, ratios and
//! latencies with units, and a progress bar counting runs.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr for `len` runs.
pub fn progress(len: usize) -> anyhow::Result<ProgressBar> {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {msg} [{elapsed}, ~{eta} left]")
            .context("progress bar template")?,
    );
    Ok(bar)
}

/// Operations per second, with a unit.
pub fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2} M", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.1} k", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

/// Bytes per second, with a unit (10³ multiples).
pub fn bytes_rate(per_sec: f64) -> String {
    if per_sec >= 1e9 {
        format!("{:.2} GB/s", per_sec / 1e9)
    } else if per_sec >= 1e6 {
        format!("{:.1} MB/s", per_sec / 1e6)
    } else {
        format!("{:.1} kB/s", per_sec / 1e3)
    }
}

/// `value / baseline`, or a dash when there is nothing to divide by.
pub fn ratio(value: f64, baseline: Option<f64>) -> String {
    match baseline {
        Some(baseline) if baseline > 0.0 => format!("{:.2}", value / baseline),
        _ => "-".to_owned(),
    }
}

/// Nanoseconds, with a unit.
pub fn latency(ns: Option<u64>) -> String {
    match ns {
        None => "-".to_owned(),
        Some(ns) if ns >= 1_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        Some(ns) if ns >= 1_000 => format!("{:.1} µs", ns as f64 / 1e3),
        Some(ns) => format!("{ns} ns"),
    }
}

/// A payload size: `100 B`, `1 MiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
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
        assert_eq!(bytes_rate(1.5e9), "1.50 GB/s");
        assert_eq!(bytes_rate(2.5e6), "2.5 MB/s");
        assert_eq!(latency(Some(1_500_000)), "1.5 ms");
        assert_eq!(latency(Some(1_500)), "1.5 µs");
        assert_eq!(latency(Some(150)), "150 ns");
        assert_eq!(latency(None), "-");
        assert_eq!(size(100), "100 B");
        assert_eq!(size(1 << 20), "1 MiB");
        assert_eq!(size(8 << 10), "8 KiB");
    }

    #[test]
    fn ratio_needs_a_positive_baseline() {
        assert_eq!(ratio(3.0, Some(2.0)), "1.50");
        assert_eq!(ratio(3.0, Some(0.0)), "-");
        assert_eq!(ratio(3.0, None), "-");
    }
}
