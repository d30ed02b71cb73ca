//! `walden bench all`: every suite in one run (the seeds' experiments, the
//! peers, the physical limits), each writing its JSON into a results
//! directory, then `walden bench summary` over that directory: ratios
//! against the peers, the limits and PostgreSQL, the many-core projection,
//! and PNG charts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, CommandFactory, Parser};
use walden_bench::plot::short_number;
use walden_bench::projection::project_mix;
use walden_bench::summary::charts;
use walden_bench::summary::ratios::{limit_fractions, peer_ratios, pg_ratios};
use walden_bench::summary::results::Results;

use super::output::{bytes_rate, size};
use super::BenchArgs;

/// Arguments of `walden bench all`.
#[derive(Args, Clone, Debug)]
#[command(after_help = "Examples:
  walden bench all --quick --results /tmp/bench-results
  walden bench all --dir /mnt/wal-disk --skip peers,switch
  scripts/bench --quick    # the same, with PostgreSQL 15 and the charts")]
pub struct AllArgs {
    /// A run of about a minute instead of about ten: fewer thread counts
    /// and shorter slices, same suites.
    #[arg(long)]
    pub quick: bool,
    /// Results directory: one JSON file per suite, summary.md,
    /// summary.json and the PNG charts. A `postgres.json` already there
    /// (from scripts/pg-bench) joins the summary.
    #[arg(long, default_value = "bench-results")]
    pub results: PathBuf,
    /// Directory for the logs and the write probes (on the disk to
    /// measure); default: the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Suites to leave out, comma-separated (names as in the results
    /// directory: limits, rwlock, reserve, insert, switch, logical-1mb,
    /// commit, pg-workloads, mix, peers).
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<String>,
}

/// Arguments of `walden bench summary`.
#[derive(Args, Clone, Debug)]
#[command(after_help = "Examples:
  walden bench summary --results target/bench-results")]
pub struct SummaryArgs {
    /// The results directory `walden bench all` wrote.
    #[arg(long, default_value = "bench-results")]
    pub results: PathBuf,
}

/// One suite of the run: its results file stem and its command line.
#[derive(Clone, Debug, PartialEq)]
struct Suite {
    name: &'static str,
    args: Vec<String>,
}

impl Suite {
    fn new(name: &'static str, args: &[&str]) -> Suite {
        Suite {
            name,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// The subcommand this suite runs.
    fn subcommand(&self) -> &str {
        &self.args[0]
    }
}

/// What a quick run gives the suites that run in interleaved slices.
const QUICK_SLICES: [&str; 4] = ["--slice-ms", "150", "--slices", "1"];

/// The suites of a run and their arguments (the thread counts of the
/// Walden-against-others comparisons include 1, 2 and 64).
fn plan(quick: bool) -> Vec<Suite> {
    // PostgreSQL's workloads (scripts/pg-bench): the same cases in both
    // runs, Walden in its best configuration (as against the peers).
    let pg_workloads = [
        "commit",
        "--best",
        "--logical",
        "--payload",
        "100,1MB",
        "--sync",
        "none,fdatasync",
        "--threads",
        "1,2,64",
    ];
    if quick {
        let sliced = |name, args: &[&str]| Suite::new(name, &[args, &QUICK_SLICES].concat());
        vec![
            Suite::new("limits", &["limits", "--duration-ms", "150"]),
            Suite::new(
                "rwlock",
                &[
                    "rwlock",
                    "--threads",
                    "1,2,64",
                    "--duration-ms",
                    "150",
                    "--slices",
                    "1",
                    "--reads",
                    "93.5",
                ],
            ),
            Suite::new("reserve", &["reserve", "--quick", "--threads", "1,2,64"]),
            Suite::new(
                "insert",
                &[
                    "insert",
                    "--quick",
                    "--threads",
                    "1,2,64",
                    "--record-bytes",
                    "66",
                ],
            ),
            Suite::new(
                "switch",
                &[
                    "switch",
                    "--storage",
                    "delay",
                    "--segment-sizes",
                    "16MB",
                    "--buffers",
                    "128KB,4800KB",
                ],
            ),
            Suite::new(
                "logical-1mb",
                &[
                    "logical-1mb",
                    "--threads",
                    "1,2,8",
                    "--insert-slots",
                    "8",
                    "--duration-ms",
                    "200",
                ],
            ),
            sliced("commit", &["commit", "--threads", "1,2,16,64"]),
            sliced("pg-workloads", &pg_workloads),
            sliced("mix", &["mix", "--threads", "1,2,64", "--sync", "none"]),
            sliced("peers", &["peers", "--threads", "1,2,64"]),
        ]
    } else {
        vec![
            Suite::new("limits", &["limits"]),
            Suite::new("rwlock", &["rwlock"]),
            // Their --quick runs take about a minute each; the full ones
            // alone would take longer than the whole default run.
            Suite::new("reserve", &["reserve", "--quick"]),
            Suite::new("insert", &["insert", "--quick"]),
            Suite::new("switch", &["switch"]),
            Suite::new("logical-1mb", &["logical-1mb"]),
            Suite::new("commit", &["commit"]),
            Suite::new("pg-workloads", &pg_workloads),
            Suite::new("mix", &["mix"]),
            Suite::new("peers", &["peers"]),
        ]
    }
}

/// `walden bench …` as parsed from a suite's command line.
#[derive(Parser)]
#[command(name = "walden bench")]
pub(super) struct SuiteCommand {
    #[command(flatten)]
    pub(super) bench: BenchArgs,
}

/// True if this build has the subcommand.
fn exists(subcommand: &str) -> bool {
    SuiteCommand::command()
        .get_subcommands()
        .any(|c| c.get_name() == subcommand)
}

/// The suite's full command line, its JSON (and logs) going where asked.
fn command_line(suite: &Suite, results: &Path, dir: Option<&Path>) -> Vec<String> {
    let mut args = vec!["walden bench".to_owned()];
    args.extend(suite.args.iter().cloned());
    let json = results.join(format!("{}.json", suite.name));
    args.extend(["--json".to_owned(), json.display().to_string()]);
    // The suites that write files take --dir.
    if let Some(dir) = dir {
        if matches!(
            suite.subcommand(),
            "limits" | "commit" | "mix" | "peers" | "switch"
        ) {
            args.extend(["--dir".to_owned(), dir.display().to_string()]);
        }
    }
    args
}

/// Runs every suite of the plan, then the summary. A failing suite is
/// reported and the others still run; the command fails at the end.
pub fn run(args: &AllArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating the results directory {}", args.results.display()))?;
    let plan: Vec<Suite> = plan(args.quick)
        .into_iter()
        .filter(|s| !args.skip.iter().any(|n| n == s.name))
        .collect();
    let mut failed = Vec::new();
    for (i, suite) in plan.iter().enumerate() {
        eprintln!("== {}/{}: {} ==", i + 1, plan.len(), suite.name);
        if !exists(suite.subcommand()) {
            eprintln!(
                "(not in this build: `walden bench {}` does not exist yet)",
                suite.subcommand()
            );
            continue;
        }
        let line = command_line(suite, &args.results, args.dir.as_deref());
        println!("\n$ {}", line.join(" "));
        let outcome = SuiteCommand::try_parse_from(&line)
            .map_err(anyhow::Error::from)
            .and_then(|c| super::run(&c.bench));
        if let Err(e) = outcome {
            eprintln!("{}: failed: {e:#}", suite.name);
            failed.push(suite.name);
        }
    }
    summarize(&args.results)?;
    anyhow::ensure!(failed.is_empty(), "suites failed: {}", failed.join(", "));
    Ok(())
}

/// `walden bench summary`.
pub fn run_summary(args: &SummaryArgs) -> anyhow::Result<()> {
    summarize(&args.results)
}

/// The `results` array of `dir/name.json`; empty if the file is absent.
fn read_results<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> anyhow::Result<Vec<T>> {
    let path = dir.join(format!("{name}.json"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    #[derive(serde::Deserialize)]
    struct File<T> {
        results: Vec<T>,
    }
    let file: File<T> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(file.results)
}

/// Reads the suites' JSON in `dir`, writes summary.md, summary.json and the
/// charts there, and prints summary.md.
fn summarize(dir: &Path) -> anyhow::Result<()> {
    let results = Results {
        limits: read_results(dir, "limits")?,
        commit: read_results(dir, "commit")?,
        pg_workloads: read_results(dir, "pg-workloads")?,
        mix: read_results(dir, "mix")?,
        reserve: read_results(dir, "reserve")?,
        insert: read_results(dir, "insert")?,
        logical: read_results(dir, "logical-1mb")?,
        peers: read_results(dir, "peers")?,
        postgres: read_results(dir, "postgres")?,
    };
    let mut charts = Vec::new();
    for (name, chart) in charts::charts(&results) {
        let path = dir.join(&name);
        chart.write_png(&path)?;
        charts.push(name);
    }
    let text = summary_markdown(&results, &charts);
    let path = dir.join("summary.md");
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    let line_ns = results
        .limits
        .iter()
        .find(|l| l.probe == walden_bench::limits::Probe::LineTransfer)
        .map(|l| l.ns_per_op);
    let json = serde_json::json!({
        "peer_ratios": peer_ratios(&results.peers, &[1, 2, 64]),
        "limit_fractions": limit_fractions(&results),
        "postgres_ratios": pg_ratios(&results.pg_workloads, &results.postgres),
        "projection": line_ns.map(|ns| project_mix(&results.mix, ns)),
        "charts": charts,
    });
    let path = dir.join("summary.json");
    let encoded = serde_json::to_string_pretty(&json).context("encoding the summary")?;
    std::fs::write(&path, encoded).with_context(|| format!("writing {}", path.display()))?;
    println!("\n{text}");
    eprintln!("results, summary and charts in {}", dir.display());
    Ok(())
}

/// The summary as Markdown tables (what docs/performance.md quotes).
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
    line("## Walden against the machine's limits — measured".into());
    line(String::new());
    line("| walden / limit | walden | limit | unit | fraction |".into());
    line("|---|---:|---:|---|---:|".into());
    for f in limit_fractions(r) {
        line(format!(
            "| {} | {} | {} | {} | {:.2} |",
            f.what,
            figure(f.walden),
            figure(f.limit),
            f.unit,
            f.fraction
        ));
    }
    line(String::new());
    line("## Walden against PostgreSQL 15 (WAL bytes/s) — measured".into());
    line(String::new());
    line("| payload | fsync | threads | walden | postgresql | walden / postgresql |".into());
    line("|---|---|---:|---:|---:|---:|".into());
    for p in pg_ratios(&r.pg_workloads, &r.postgres) {
        line(format!(
            "| {} | {} | {} | {} | {} | {:.2} |",
            size(p.payload),
            if p.durable { "on" } else { "off" },
            p.threads,
            bytes_rate(p.walden),
            bytes_rate(p.postgres),
            p.ratio
        ));
    }
    if let Some(t_x) = r
        .limits
        .iter()
        .find(|l| l.probe == walden_bench::limits::Probe::LineTransfer)
    {
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
        for p in project_mix(&r.mix, t_x.ns_per_op) {
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
    use super::super::Workload;
    use super::*;

    #[test]
    fn every_suite_of_both_plans_parses_where_this_build_has_it() {
        let dir = Path::new("/tmp/results");
        for quick in [false, true] {
            let plan = plan(quick);
            let names: Vec<_> = plan.iter().map(|s| s.name).collect();
            for expected in [
                "limits",
                "rwlock",
                "reserve",
                "insert",
                "switch",
                "logical-1mb",
                "commit",
                "pg-workloads",
                "mix",
                "peers",
            ] {
                assert!(
                    names.contains(&expected),
                    "{expected} missing from {names:?}"
                );
            }
            for suite in plan.iter().filter(|s| exists(s.subcommand())) {
                let line = command_line(suite, dir, Some(Path::new("/tmp/logs")));
                if let Err(e) = SuiteCommand::try_parse_from(&line) {
                    panic!("{}: {e}", line.join(" "));
                }
            }
        }
    }

    #[test]
    fn quick_sliced_suites_take_short_single_slices() {
        let quick = plan(true);
        let pg = quick.iter().find(|s| s.name == "pg-workloads").unwrap();
        assert_eq!(
            pg.args.join(" "),
            "commit --best --logical --payload 100,1MB --sync none,fdatasync --threads 1,2,64 \
             --slice-ms 150 --slices 1"
        );
        let full = plan(false);
        let pg_full = full.iter().find(|s| s.name == "pg-workloads").unwrap();
        assert!(pg.args.starts_with(&pg_full.args));
    }

    #[test]
    fn walden_meets_postgresql_in_its_best_configuration() {
        for quick in [false, true] {
            let plan = plan(quick);
            let pg = plan.iter().find(|s| s.name == "pg-workloads").unwrap();
            let line = command_line(pg, Path::new("out"), None);
            let Workload::Commit(args) =
                SuiteCommand::try_parse_from(&line).unwrap().bench.workload
            else {
                panic!("pg-workloads is not the commit suite: {line:?}");
            };
            assert!(args.best && args.logical, "{line:?}");
            // The plain commit suite stays on Config::default().
            let commit = plan.iter().find(|s| s.name == "commit").unwrap();
            assert!(
                !commit.args.iter().any(|a| a == "--best"),
                "{:?}",
                commit.args
            );
        }
        assert!(plan(false).iter().all(|s| s.subcommand() != "splice"));
    }

    #[test]
    fn small_figures_keep_their_decimals() {
        assert_eq!(figure(0.1234), "0.123");
        assert_eq!(figure(2500.0), "2.5 k");
    }

    #[test]
    fn json_goes_into_the_results_directory_under_the_suite_name() {
        let suite = Suite::new("pg-workloads", &["commit", "--logical"]);
        let line = command_line(&suite, Path::new("out"), None);
        assert_eq!(line[1], "commit");
        assert_eq!(line[line.len() - 1], "out/pg-workloads.json");
        assert!(!line.contains(&"--dir".to_owned()));
    }

    #[test]
    fn my_suites_exist_and_all_is_not_in_its_own_plan() {
        for name in ["limits", "commit", "mix", "peers", "rwlock"] {
            assert!(exists(name), "{name}");
        }
        assert!(!exists("no-such-suite"));
        assert!(plan(false).iter().all(|s| s.subcommand() != "all"));
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
