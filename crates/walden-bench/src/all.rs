//! `walden bench all`: every suite in one run (the seeds' experiments, the
//! peers, the physical limits), each writing its JSON into a results
//! directory, then the summary ([`crate::summary`]) over that directory:
//! ratios against the peers, the limits and PostgreSQL, the many-core
//! projection, and PNG charts.
//!
//! The run is a plan of typed suite arguments ([`SuiteArgs`]), the full one
//! or the `--quick` one, each suite called directly.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::args::defaults;
use crate::commit::suite::{self as commit, CommitArgs};
use crate::error::{chain, BenchError};
use crate::knobs::SegmentArgs;
use crate::limits::suite::{self as limits, LimitsArgs};
use crate::logical::suite::{self as logical, LogicalArgs};
use crate::mix::suite::{self as mix, MixArgs};
use crate::peers::suite::{self as peers, PeersArgs};
use crate::reserve::suite::{self as reserve, InsertArgs, ReserveArgs};
use crate::rwlock::suite::{self as rwlock, RwlockArgs};
use crate::summary::summarize;
use crate::switch::suite::{self as switch, SwitchArgs};

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
    /// directory: limits, rwlock, reserve, insert, insert-batch, switch, logical-1mb,
    /// commit, pg-workloads, mix, peers).
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Run every suite that builds logs on files (insert, insert-batch,
    /// switch, logical-1mb, commit, pg-workloads, mix) with direct I/O
    /// (`--direct-io` of each).
    #[arg(long)]
    pub direct_io: bool,
}

/// The arguments of one suite of the run.
#[derive(Clone, Debug, PartialEq)]
pub enum SuiteArgs {
    /// `walden bench limits`.
    Limits(LimitsArgs),
    /// `walden bench rwlock`.
    Rwlock(RwlockArgs),
    /// `walden bench reserve`.
    Reserve(ReserveArgs),
    /// `walden bench insert`.
    Insert(InsertArgs),
    /// `walden bench switch`.
    Switch(SwitchArgs),
    /// `walden bench logical-1mb`.
    Logical(LogicalArgs),
    /// `walden bench commit`.
    Commit(CommitArgs),
    /// `walden bench mix`.
    Mix(MixArgs),
    /// `walden bench peers`.
    Peers(PeersArgs),
}

impl SuiteArgs {
    /// The subcommand of `walden bench` these arguments are for.
    pub fn subcommand(&self) -> &'static str {
        match self {
            SuiteArgs::Limits(_) => "limits",
            SuiteArgs::Rwlock(_) => "rwlock",
            SuiteArgs::Reserve(_) => "reserve",
            SuiteArgs::Insert(_) => "insert",
            SuiteArgs::Switch(_) => "switch",
            SuiteArgs::Logical(_) => "logical-1mb",
            SuiteArgs::Commit(_) => "commit",
            SuiteArgs::Mix(_) => "mix",
            SuiteArgs::Peers(_) => "peers",
        }
    }

    /// Sends the suite's JSON to `json` and, for the suites that write
    /// files (limits, insert, commit, mix, peers, switch), its files into `dir`
    /// when one is given.
    fn direct(&mut self, json: PathBuf, dir: Option<&Path>) {
        let json = Some(json);
        let set_dir = |field: &mut Option<PathBuf>| {
            if let Some(dir) = dir {
                *field = Some(dir.to_path_buf());
            }
        };
        match self {
            SuiteArgs::Limits(a) => {
                a.json = json;
                set_dir(&mut a.dir);
            }
            SuiteArgs::Switch(a) => {
                a.json = json;
                set_dir(&mut a.dir);
            }
            SuiteArgs::Commit(CommitArgs { run, .. })
            | SuiteArgs::Mix(MixArgs { run, .. })
            | SuiteArgs::Peers(PeersArgs { run, .. }) => {
                run.json = json;
                set_dir(&mut run.dir);
            }
            SuiteArgs::Rwlock(a) => a.json = json,
            SuiteArgs::Reserve(a) => a.json = json,
            SuiteArgs::Insert(a) => {
                a.run.json = json;
                set_dir(&mut a.run.dir);
            }
            SuiteArgs::Logical(a) => a.json = json,
        }
    }

    /// The segment knobs of a suite that builds logs on files
    /// (`--segment-prep`, `--segments-ahead`, `--direct-io`), `None` for
    /// the others.
    fn segments_mut(&mut self) -> Option<&mut SegmentArgs> {
        match self {
            SuiteArgs::Insert(a) => Some(&mut a.knobs.buffers.segments),
            SuiteArgs::Switch(a) => Some(&mut a.segments),
            SuiteArgs::Logical(a) => Some(&mut a.buffers.segments),
            SuiteArgs::Commit(a) => Some(&mut a.knobs.insert_path.buffers.segments),
            SuiteArgs::Mix(a) => Some(&mut a.knobs.buffers.segments),
            SuiteArgs::Limits(_)
            | SuiteArgs::Rwlock(_)
            | SuiteArgs::Reserve(_)
            | SuiteArgs::Peers(_) => None,
        }
    }

    /// Runs the suite.
    pub fn run(&self) -> Result<(), BenchError> {
        match self {
            SuiteArgs::Limits(a) => limits::run(a),
            SuiteArgs::Rwlock(a) => rwlock::run(a),
            SuiteArgs::Reserve(a) => reserve::run_reserve(a),
            SuiteArgs::Insert(a) => reserve::run_insert(a),
            SuiteArgs::Switch(a) => switch::run(a),
            SuiteArgs::Logical(a) => logical::run(a),
            SuiteArgs::Commit(a) => commit::run(a),
            SuiteArgs::Mix(a) => mix::run(a),
            SuiteArgs::Peers(a) => peers::run(a),
        }
    }
}

/// One suite of the run: its results file stem and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// The results file stem (`NAME.json`), what `--skip` names.
    pub name: &'static str,
    /// Its arguments.
    pub args: SuiteArgs,
}

/// The suites of a run and their arguments (the thread counts of the
/// Walden-against-others comparisons include 1, 2 and 64).
pub fn plan(quick: bool) -> Vec<Suite> {
    let suite = |name, args| Suite { name, args };
    // PostgreSQL's workloads (scripts/pg-bench): the same cases in both
    // runs, Walden in its best configuration (as against the peers).
    let pg_workloads = CommitArgs::pg_workloads();
    if quick {
        let pg_workloads = CommitArgs {
            run: crate::slices::SliceArgs::quick_plan(),
            ..pg_workloads
        };
        vec![
            suite("limits", SuiteArgs::Limits(LimitsArgs::quick_plan())),
            suite("rwlock", SuiteArgs::Rwlock(RwlockArgs::quick_plan())),
            suite("reserve", SuiteArgs::Reserve(ReserveArgs::quick_plan())),
            suite("insert", SuiteArgs::Insert(InsertArgs::quick_plan())),
            suite("insert-batch", SuiteArgs::Insert(InsertArgs::batch_plan())),
            suite("switch", SuiteArgs::Switch(SwitchArgs::quick_plan())),
            suite("logical-1mb", SuiteArgs::Logical(LogicalArgs::quick_plan())),
            suite("commit", SuiteArgs::Commit(CommitArgs::quick_plan())),
            suite("pg-workloads", SuiteArgs::Commit(pg_workloads)),
            suite("mix", SuiteArgs::Mix(MixArgs::quick_plan())),
            suite("peers", SuiteArgs::Peers(PeersArgs::quick_plan())),
        ]
    } else {
        vec![
            suite("limits", SuiteArgs::Limits(defaults())),
            suite("rwlock", SuiteArgs::Rwlock(defaults())),
            // Their --quick runs take about a minute each; the full ones
            // alone would take longer than the whole default run.
            suite(
                "reserve",
                SuiteArgs::Reserve(ReserveArgs {
                    quick: true,
                    ..defaults()
                }),
            ),
            suite(
                "insert",
                SuiteArgs::Insert(InsertArgs {
                    quick: true,
                    ..defaults()
                }),
            ),
            suite("insert-batch", SuiteArgs::Insert(InsertArgs::batch_plan())),
            suite("switch", SuiteArgs::Switch(defaults())),
            suite("logical-1mb", SuiteArgs::Logical(defaults())),
            // Two slices each: every case runs steady and fresh.
            suite(
                "commit",
                SuiteArgs::Commit(CommitArgs {
                    run: two_slices(),
                    ..defaults()
                }),
            ),
            suite("pg-workloads", SuiteArgs::Commit(pg_workloads)),
            suite(
                "mix",
                SuiteArgs::Mix(MixArgs {
                    run: two_slices(),
                    ..defaults()
                }),
            ),
            suite("peers", SuiteArgs::Peers(defaults())),
        ]
    }
}

/// The default slices, two of them.
fn two_slices() -> crate::slices::SliceArgs {
    crate::slices::SliceArgs {
        slices: 2,
        ..defaults()
    }
}

/// The plan of `args`: the suites not skipped, each sending its JSON into
/// the results directory under its name and its files into `--dir`.
fn directed_plan(args: &AllArgs) -> Vec<Suite> {
    let mut plan: Vec<Suite> = plan(args.quick)
        .into_iter()
        .filter(|s| !args.skip.iter().any(|n| n == s.name))
        .collect();
    for suite in &mut plan {
        let json = args.results.join(format!("{}.json", suite.name));
        suite.args.direct(json, args.dir.as_deref());
        if args.direct_io {
            if let Some(segments) = suite.args.segments_mut() {
                segments.direct_io = true;
            }
        }
    }
    plan
}

/// Runs every suite of the plan, then the summary. A failing suite is
/// reported and the others still run; the command fails at the end.
pub fn run(args: &AllArgs) -> Result<(), BenchError> {
    std::fs::create_dir_all(&args.results).map_err(BenchError::io(format!(
        "creating the results directory {}",
        args.results.display()
    )))?;
    let plan = directed_plan(args);
    let mut failed = Vec::new();
    for (i, suite) in plan.iter().enumerate() {
        eprintln!("== {}/{}: {} ==", i + 1, plan.len(), suite.name);
        println!(
            "\n{} (walden bench {}): {:?}",
            suite.name,
            suite.args.subcommand(),
            suite.args
        );
        if let Err(e) = suite.args.run() {
            eprintln!("{}: failed: {}", suite.name, chain(&e));
            failed.push(suite.name);
        }
    }
    summarize(&args.results)?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(BenchError::SuitesFailed(failed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slices::SliceArgs;

    /// The suite called `name` in `plan`.
    fn find<'a>(plan: &'a [Suite], name: &str) -> &'a SuiteArgs {
        match plan.iter().find(|s| s.name == name) {
            Some(suite) => &suite.args,
            None => panic!("{name} missing from the plan"),
        }
    }

    /// The commit arguments of the suite called `name`.
    fn commit_args<'a>(plan: &'a [Suite], name: &str) -> &'a CommitArgs {
        match find(plan, name) {
            SuiteArgs::Commit(args) => args,
            other => panic!("{name} is not the commit suite: {other:?}"),
        }
    }

    #[test]
    fn both_plans_have_every_suite_in_order_with_its_results_and_logs_directed() {
        for quick in [false, true] {
            let names: Vec<_> = plan(quick).iter().map(|s| s.name).collect();
            assert_eq!(
                names,
                [
                    "limits",
                    "rwlock",
                    "reserve",
                    "insert",
                    "insert-batch",
                    "switch",
                    "logical-1mb",
                    "commit",
                    "pg-workloads",
                    "mix",
                    "peers",
                ]
            );
            let args = AllArgs {
                quick,
                results: PathBuf::from("/tmp/results"),
                dir: Some(PathBuf::from("/tmp/logs")),
                skip: vec!["peers".to_owned()],
                direct_io: false,
            };
            let directed = directed_plan(&args);
            assert_eq!(directed.len(), names.len() - 1);
            for suite in &directed {
                let json = Path::new("/tmp/results").join(format!("{}.json", suite.name));
                let logs = Some(PathBuf::from("/tmp/logs"));
                let (json_of, dir_of) = match &suite.args {
                    SuiteArgs::Limits(a) => (&a.json, Some(&a.dir)),
                    SuiteArgs::Switch(a) => (&a.json, Some(&a.dir)),
                    SuiteArgs::Commit(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Mix(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Peers(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Insert(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Rwlock(a) => (&a.json, None),
                    SuiteArgs::Reserve(a) => (&a.json, None),
                    SuiteArgs::Logical(a) => (&a.json, None),
                };
                assert_eq!(json_of.as_deref(), Some(json.as_path()), "{}", suite.name);
                if let Some(dir) = dir_of {
                    assert_eq!(dir, &logs, "{}", suite.name);
                }
            }
        }
    }

    #[test]
    fn direct_io_reaches_every_suite_that_builds_logs_on_files() {
        for direct_io in [false, true] {
            let args = AllArgs {
                quick: true,
                results: PathBuf::from("/tmp/results"),
                dir: None,
                skip: Vec::new(),
                direct_io,
            };
            let mut with_segments = Vec::new();
            for mut suite in directed_plan(&args) {
                if let Some(segments) = suite.args.segments_mut() {
                    assert_eq!(segments.direct_io, direct_io, "{}", suite.name);
                    with_segments.push(suite.name);
                }
            }
            // Every suite but those that build no log on files.
            let no_files = ["limits", "rwlock", "reserve", "peers"];
            let mut expected: Vec<_> = plan(true).iter().map(|s| s.name).collect();
            expected.retain(|name| !no_files.contains(name));
            assert_eq!(with_segments, expected);
        }
    }

    #[test]
    fn quick_sliced_suites_take_short_single_slices() {
        let quick = plan(true);
        let pg = commit_args(&quick, "pg-workloads");
        let full = plan(false);
        let pg_full = commit_args(&full, "pg-workloads");
        assert_eq!(
            pg,
            &CommitArgs {
                run: SliceArgs::quick_plan(),
                ..pg_full.clone()
            }
        );
        for name in ["commit", "pg-workloads", "mix", "peers"] {
            let run = match find(&quick, name) {
                SuiteArgs::Commit(a) => &a.run,
                SuiteArgs::Mix(a) => &a.run,
                SuiteArgs::Peers(a) => &a.run,
                other => panic!("{name} is not sliced: {other:?}"),
            };
            assert_eq!((run.slice_ms, run.slices), (150, 1), "{name}");
        }
    }

    #[test]
    fn walden_meets_postgresql_in_its_best_configuration() {
        for quick in [false, true] {
            let plan = plan(quick);
            let pg = commit_args(&plan, "pg-workloads");
            assert!(pg.best && pg.logical, "{pg:?}");
            assert_eq!(pg.payload, [100, 1 << 20]);
            // The plain commit suite stays on Config::default().
            let commit = commit_args(&plan, "commit");
            assert!(!commit.best, "{commit:?}");
        }
        assert!(plan(false).iter().all(|s| s.name != "splice"));
    }

    #[test]
    fn json_goes_into_the_results_directory_under_the_suite_name() {
        let mut args = SuiteArgs::Commit(CommitArgs::pg_workloads());
        args.direct(Path::new("out").join("pg-workloads.json"), None);
        let SuiteArgs::Commit(commit) = args else {
            panic!("not the commit suite");
        };
        assert_eq!(
            commit.run.json.as_deref(),
            Some(Path::new("out/pg-workloads.json"))
        );
        assert!(commit.run.dir.is_none());
    }

    #[test]
    fn my_suites_are_in_the_plan_and_all_is_not() {
        let full = plan(false);
        for name in ["limits", "commit", "mix", "peers", "rwlock"] {
            find(&full, name);
        }
        assert!(full
            .iter()
            .all(|s| s.name != "all" && s.args.subcommand() != "all"));
    }
}
