//! Figures with units: the size arguments (`64MB`, `4800KB`) parsed, and
//! the rates, ratios, latencies and sizes of the suites' tables formatted.

use std::num::ParseIntError;

use crate::error::chain;

/// A size argument that is not one.
#[derive(Debug, thiserror::Error)]
pub enum SizeError {
    /// It does not start with a number.
    #[error("invalid size {text:?}: expected a number like 64KB or 16MB")]
    Number {
        /// The argument.
        text: String,
        /// Why the number did not parse.
        #[source]
        source: ParseIntError,
    },
    /// Its unit is none of B, K, M, G (with or without B or iB).
    #[error("invalid size {text:?}: unknown unit {unit:?} (use KB, MB or GB)")]
    Unit {
        /// The argument.
        text: String,
        /// The unit.
        unit: String,
    },
    /// It does not fit in 64 bits.
    #[error("size {text:?} is too large")]
    TooLarge {
        /// The argument.
        text: String,
    },
}

/// Parses a size: plain bytes, or with a K/KB/KiB, M/MB/MiB, G/GB/GiB
/// suffix (powers of 1024, case-insensitive).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|source| SizeError::Number {
        text: s.to_owned(),
        source,
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => {
            return Err(SizeError::Unit {
                text: s.to_owned(),
                unit: other.to_owned(),
            })
        }
    };
    n.checked_shl(shift)
        .filter(|v| v >> shift == n)
        .ok_or_else(|| SizeError::TooLarge { text: s.to_owned() })
}

/// A size argument for clap ([`parse_size`]), its error with the cause.
pub fn parse_size_arg(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| chain(&e))
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
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KB").unwrap(), 64 << 10);
        assert_eq!(parse_size("16mib").unwrap(), 16 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert!(parse_size("1TB").is_err());
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999999999GB").is_err());
    }

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size_arg("4800KB").unwrap(), 4800 << 10);
        assert!(parse_size_arg("4800 pages")
            .unwrap_err()
            .contains("unknown unit"));
        assert_eq!(
            parse_size_arg("x").unwrap_err(),
            "invalid size \"x\": expected a number like 64KB or 16MB: \
             cannot parse integer from empty string"
        );
    }

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
