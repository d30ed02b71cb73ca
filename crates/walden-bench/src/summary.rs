//! The umbrella run's summary (`walden bench all`, `walden bench summary`):
//! Walden against each peer, against the machine's limits and against
//! PostgreSQL 15, as ratios of figures measured in the same run
//! ([`ratios`]); the many-core projection of algorithms.md §10, marked
//! projected ([`crate::projection`]); and the charts ([`charts`]). This
//! file writes them into the results directory: summary.md (the tables),
//! summary.json and the PNG files.

pub mod charts;
pub mod ratios;
pub mod results;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::BenchError;
use crate::limits::Probe;
use crate::machine::Machine;
use crate::plot::short_number;
use crate::projection::{project_mix, this_machine_cores};

use crate::units::{bytes_rate, size};
use ratios::{insert_ratios, limit_fractions, peer_ratios, pg_ratios, LimitFraction};
use results::Results;

/// Arguments of `walden bench summary`.
#[derive(Args, Clone, Debug)]
#[command(after_help = "Examples:
  walden bench summary --results target/bench-results")]
pub struct SummaryArgs {
    /// The results directory `walden bench all` wrote.
    #[arg(long, default_value = "bench-results")]
    pub results: PathBuf,
}

/// `walden bench summary`.
pub fn run_summary(args: &SummaryArgs) -> Result<(), BenchError> {
    summarize(&args.results)
}

/// Reads the suites' JSON in `dir`, writes summary.md, summary.json and the
/// charts there, and prints summary.md.
pub fn summarize(dir: &Path) -> Result<(), BenchError> {
    let results = Results::read(dir)?;
    let note = match &results.machine {
        Some(machine) => format!("measured on {}", machine.describe()),
        None => format!(
            "machine not recorded (no limits.json); summarised on {}",
            Machine::this().describe()
        ),
    };
    let mut charts = Vec::new();
    for (name, chart) in charts::charts(&results) {
        let path = dir.join(&name);
        chart.write_png(&path, &note)?;
        charts.push(name);
    }
    let text = summary_markdown(&results, &charts);
    let path = dir.join("summary.md");
    std::fs::write(&path, &text).map_err(BenchError::io(format!("writing {}", path.display())))?;
    let line_ns = results.limit(Probe::LineTransfer).map(|l| l.ns_per_op);
    let json = serde_json::json!({
        "peer_ratios": peer_ratios(&results.peers, &[1, 2, 64]),
        "limit_fractions": limit_fractions(&results),
        "insert_ratios": insert_ratios(results.insert_for_ratios()),
        "postgres_ratios": pg_ratios(&results.pg_workloads, &results.postgres),
        "projection": line_ns.map(|ns| project_mix(&results.mix, ns, measured_cores(&results))),
        "charts": charts,
    });
    let path = dir.join("summary.json");
    let encoded =
        serde_json::to_string_pretty(&json).map_err(BenchError::json("encoding the summary"))?;
    std::fs::write(&path, encoded)
        .map_err(BenchError::io(format!("writing {}", path.display())))?;
    println!("\n{text}");
    eprintln!("results, summary and charts in {}", dir.display());
    Ok(())
}

/// The summary as Markdown tables (what docs/performance.md quotes).
/// The cores of the machine that measured `r` (this one's where the run
/// did not record them).
fn measured_cores(r: &Results) -> usize {
    r.machine
        .as_ref()
        .and_then(|m| m.cores)
        .unwrap_or_else(this_machine_cores)
}

fn summary_markdown(r: &Results, charts: &[String]) -> String {
    let mut md = String::new();
    // Writing into a String cannot fail.
    let mut line = |text: String| {
        let _ = writeln!(md, "{text}");
    };
    line("## Walden (best configuration) against each peer — measured".into());
    line(String::new());
    line(
        "| workload | threads | peer | walden records/s | peer records/s | walden / peer |".into(),
    );
    line("|---|---:|---|---:|---:|---:|".into());
    for p in peer_ratios(&r.peers, &[1, 2, 64]) {
        line(format!(
            "| {} | {} | {} | {} | {} | {:.2} |",
            p.workload.name(),
            p.threads,
            p.peer,
            short_number(p.walden),
            short_number(p.peer_ops_per_sec),
            p.ratio
        ));
    }
    line(String::new());
    line("## Walden against the limit that matches it — measured".into());
    line(String::new());
    line("Durable 1 MiB messages against the fastest durable 1 MiB write with at most as many writers; \
          non-durable ones against the overwrite of a cached file as large as a WAL's working set \
          (256 MiB), with as many threads' 1 MiB messages as its source too where they are more \
          than its 16 MiB source ring (\"from 64 sessions' messages\"), against CRC-32C + that overwrite (the least work per message of a WAL that writes \
          a record's whole pages straight from the caller's bytes, as Walden's write-through does, \
          `Config::write_through_from`), against memcpy + CRC-32C + that overwrite (the least of one \
          that copies each record into its buffers) and against memcpy + CRC-32C; 100 B commits against the fastest durable 8 kB write. \
          Walden's segments steady where measured. A limit \"beside its slices\" is the mean of the \
          runs of that probe right after each of the case's steady slices (`--limits-beside`), \
          not the limits suite's one run at the start: the disk drifts over a run."
        .into());
    line(String::new());
    fraction_table(&mut line, "walden / limit", &limit_fractions(r));
    line(String::new());
    line("## The insert path alone — measured".into());
    line(String::new());
    fraction_table(&mut line, "ratio", &insert_ratios(r.insert_for_ratios()));
    line(String::new());
    line("## Walden against PostgreSQL 15 (WAL bytes/s, PostgreSQL warmed up) — measured".into());
    line(String::new());
    line(
        "| payload | fsync | threads | walden segments | postgresql in recycled segments | walden | postgresql | walden / postgresql |"
            .into(),
    );
    line("|---|---|---:|---|---|---:|---:|---:|".into());
    for p in pg_ratios(&r.pg_workloads, &r.postgres) {
        line(format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} |",
            size(p.payload),
            if p.durable { "on" } else { "off" },
            p.threads,
            p.segment_state,
            match p.postgres_steady {
                Some(true) => "yes",
                Some(false) => "no: outran them",
                None => "unknown",
            },
            bytes_rate(p.walden),
            bytes_rate(p.postgres),
            p.ratio
        ));
    }
    if let Some(t_x) = r.limit(Probe::LineTransfer) {
        line(String::new());
        line("## Many-core ceiling per reservation design — PROJECTED (algorithms.md §10)".into());
        line(String::new());
        line(format!(
            "min(cores × one-thread rate, 1 / (c_g · t_x)); one-thread rates measured here (mix, no sync), \
             t_x measured here = {:.0} ns; the other t_x are assumptions.",
            t_x.ns_per_op
        ));
        line(String::new());
        line("| design | machine | cores | c_g | t_x ns | projected records/s | bound by |".into());
        line("|---|---|---:|---:|---:|---:|---|".into());
        for p in project_mix(&r.mix, t_x.ns_per_op, measured_cores(r)) {
            line(format!(
                "| {} | {} | {} | {} | {:.0} | {} | {} |",
                p.design,
                p.machine,
                p.cores,
                p.global_line_transfers,
                p.line_transfer_ns,
                short_number(p.projected_records_per_sec),
                if p.serial_bound {
                    "shared line"
                } else {
                    "cores"
                }
            ));
        }
    }
    line(String::new());
    line(format!("Charts: {}", charts.join(", ")));
    md
}

/// A table of ratios, headed `what`.
fn fraction_table(line: &mut impl FnMut(String), what: &str, rows: &[LimitFraction]) {
    line(format!("| {what} | walden | reference | unit | ratio |"));
    line("|---|---:|---:|---|---:|".into());
    for f in rows {
        line(format!(
            "| {} | {} | {} | {} | {:.2} |",
            f.what,
            figure(f.walden),
            figure(f.limit),
            f.unit,
            f.fraction
        ));
    }
}

/// A figure for a table: with a unit prefix from a thousand up, three
/// decimals below.
fn figure(value: f64) -> String {
    if value.abs() >= 1e3 {
        short_number(value)
    } else {
        format!("{value:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_figures_keep_their_decimals() {
        assert_eq!(figure(0.1234), "0.123");
        assert_eq!(figure(2500.0), "2.5 k");
    }

    #[test]
    fn the_summary_of_an_empty_directory_has_empty_tables_and_no_charts() {
        let dir = tempfile::tempdir().unwrap();
        summarize(dir.path()).unwrap();
        let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(md.contains("against each peer"));
        assert!(!md.contains("PROJECTED"));
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["charts"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn a_corrupt_results_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("peers.json"), "{not json").unwrap();
        let err = summarize(dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("peers.json"), "{err:#}");
    }
}
