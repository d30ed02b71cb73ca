//! `walden bench all`: every suite in one run (the seeds' experiments, the
//! peers, the physical limits), each writing its JSON into a results
//! directory, then the summary ([`crate::summary`]) over that directory:
//! ratios against the peers, the limits and PostgreSQL, the many-core
//! projection, and PNG charts.
//!
//! The run is a plan of suites, the full one or the `--quick` one, each
//! given by the flags of its own subcommand: the run prints each suite's
//! command line (`walden bench commit --slices 2 --json …`), parses the
//! flags into its typed arguments ([`SuiteArgs`]) and calls it directly.

use std::path::{Path, PathBuf};

use clap::{Args, FromArgMatches};

use crate::args::parse_args;
use crate::commit::suite::{self as commit, CommitArgs};
use crate::error::{chain, BenchError};
use crate::handoff::suite::{self as handoff, HandoffArgs};
use crate::knobs::SegmentArgs;
use crate::limits::suite::{self as limits, LimitsArgs};
use crate::logical::suite::{self as logical, LogicalArgs};
use crate::mix::suite::{self as mix, MixArgs};
use crate::peers::suite::{self as peers, PeersArgs};
use crate::raft::suite::{self as raft, RaftArgs};
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
    /// directory, in the order they run: limits, pg-workloads, rwlock,
    /// reserve, insert, insert-batch, insert-scaling, switch, logical-1mb,
    /// commit, mix, peers, handoff, raft).
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Run every suite that takes `--direct-io` (pg-workloads, insert,
    /// insert-batch, insert-scaling, switch, logical-1mb, commit, mix,
    /// handoff) with it.
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
    /// `walden bench handoff`.
    Handoff(HandoffArgs),
    /// `walden bench raft`.
    Raft(RaftArgs),
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
            SuiteArgs::Handoff(_) => "handoff",
            SuiteArgs::Raft(_) => "raft",
        }
    }

    /// Sends the suite's JSON to `json` and, for the suites that write
    /// files (limits, insert, commit, mix, peers, switch, raft), its files
    /// into `dir` when one is given; true for those suites.
    fn direct(&mut self, json: PathBuf, dir: Option<&Path>) -> bool {
        let json = Some(json);
        let set_dir = |field: &mut Option<PathBuf>| {
            if let Some(dir) = dir {
                *field = Some(dir.to_path_buf());
            }
            true
        };
        match self {
            SuiteArgs::Limits(a) => {
                a.json = json;
                set_dir(&mut a.dir)
            }
            SuiteArgs::Switch(a) => {
                a.json = json;
                set_dir(&mut a.dir)
            }
            SuiteArgs::Raft(a) => {
                a.json = json;
                set_dir(&mut a.dir)
            }
            SuiteArgs::Commit(CommitArgs { run, .. })
            | SuiteArgs::Mix(MixArgs { run, .. })
            | SuiteArgs::Peers(PeersArgs { run, .. }) => {
                run.json = json;
                set_dir(&mut run.dir)
            }
            SuiteArgs::Insert(a) => {
                a.run.json = json;
                set_dir(&mut a.run.dir)
            }
            SuiteArgs::Rwlock(RwlockArgs { json: j, .. })
            | SuiteArgs::Reserve(ReserveArgs { json: j, .. })
            | SuiteArgs::Logical(LogicalArgs { json: j, .. })
            | SuiteArgs::Handoff(HandoffArgs { json: j, .. }) => {
                *j = json;
                false
            }
        }
    }

    /// The segment knobs of a suite that builds logs
    /// (`--segment-prep`, `--segments-ahead`, `--direct-io`), `None` for
    /// the others.
    fn segments_mut(&mut self) -> Option<&mut SegmentArgs> {
        match self {
            SuiteArgs::Insert(a) => Some(&mut a.knobs.buffers.segments),
            SuiteArgs::Switch(a) => Some(&mut a.segments),
            SuiteArgs::Logical(a) => Some(&mut a.buffers.segments),
            SuiteArgs::Commit(a) => Some(&mut a.knobs.insert_path.buffers.segments),
            SuiteArgs::Mix(a) => Some(&mut a.knobs.buffers.segments),
            SuiteArgs::Handoff(a) => Some(&mut a.strategy.insert_path.buffers.segments),
            SuiteArgs::Limits(_)
            | SuiteArgs::Rwlock(_)
            | SuiteArgs::Reserve(_)
            | SuiteArgs::Peers(_)
            | SuiteArgs::Raft(_) => None,
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
            SuiteArgs::Handoff(a) => handoff::run(a),
            SuiteArgs::Raft(a) => raft::run(a),
        }
    }
}

/// One suite of the run: its results file stem, its arguments, and the
/// flags of `walden bench SUBCOMMAND` that give those arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// The results file stem (`NAME.json`), what `--skip` names.
    pub name: &'static str,
    /// Its arguments.
    pub args: SuiteArgs,
    /// The flags that give `args` on the command line: the run prints
    /// them, so that any suite of it can be rerun alone.
    pub flags: Vec<String>,
}

impl Suite {
    /// The suite `name`: the arguments of `walden bench` (whichever
    /// subcommand `wrap` makes) that `flags` give, words separated by
    /// white space.
    fn parsed<A: Args + FromArgMatches>(
        name: &'static str,
        wrap: fn(A) -> SuiteArgs,
        flags: &str,
    ) -> Suite {
        let flags: Vec<&str> = flags.split_whitespace().collect();
        // The plan's flags are constants, all parsed by the unit tests.
        let args = parse_args(&flags)
            .unwrap_or_else(|e| panic!("the plan's flags of {name} do not parse: {e}"));
        Suite {
            name,
            args: wrap(args),
            flags: flags.into_iter().map(str::to_owned).collect(),
        }
    }

    /// The command that runs this suite alone, as a shell would take it.
    pub fn command_line(&self) -> String {
        let mut line = format!("walden bench {}", self.args.subcommand());
        for flag in &self.flags {
            line.push(' ');
            line.push_str(&shell_word(flag));
        }
        line
    }
}

/// `word` as one shell word: as it is when it holds nothing a shell
/// treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./,:=@%+".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The suites of a run and their arguments (the thread counts of the
/// Walden-against-others comparisons include 1, 2 and 64).
pub fn plan(quick: bool) -> Vec<Suite> {
    use SuiteArgs as S;
    // Every run: 66-byte records one at a time and in batches of 16, 64
    // and 256, at 1, 2 and 64 threads, in the default design (postgres15,
    // spinlock), one slice of 200 ms per case: a few seconds.
    let insert_batch = "--threads 1,2,64 --record-bytes 66 --batch 1,16,64,256 \
                        --format postgres15 --reservation spinlock --quick";
    // PostgreSQL's workloads (scripts/pg-bench): the same cases in both
    // runs, Walden in its best configuration (as against the peers), the
    // disk's limits that match a 1 MiB case measured after each of its
    // steady slices (`MS` ms each).
    let pg_workloads = |beside_ms: u32| {
        format!(
            "--threads 1,2,64 --sync none,fdatasync --payload 100,1MB --logical --best \
             --limits-beside {beside_ms}"
        )
    };
    // Short single slices, for the quick run.
    let quick_slices = "--slice-ms 150 --slices 1";
    // The insert path's ratios (2 threads against 1 on the discarding
    // storage, steady files against it): every design, 66-byte records,
    // in slices long and many enough for a ratio that `insert`'s single
    // short ones swing run to run (about a minute; the quick run's a few
    // seconds).
    let insert_scaling = |slices: &str| {
        format!(
            "--threads 1,2 --record-bytes 66 --storage discard,files --segment-state steady {slices}"
        )
    };
    if quick {
        vec![
            Suite::parsed("limits", S::Limits, "--duration-ms 150"),
            Suite::parsed(
                "pg-workloads",
                S::Commit,
                &format!("{} {quick_slices}", pg_workloads(100)),
            ),
            Suite::parsed(
                "rwlock",
                S::Rwlock,
                "--threads 1,2,64 --duration-ms 150 --slices 1 --reads 93.5",
            ),
            Suite::parsed("reserve", S::Reserve, "--threads 1,2,64 --quick"),
            Suite::parsed(
                "insert",
                S::Insert,
                "--threads 1,2,64 --record-bytes 66 --quick",
            ),
            Suite::parsed("insert-batch", S::Insert, insert_batch),
            Suite::parsed("insert-scaling", S::Insert, &insert_scaling(quick_slices)),
            Suite::parsed(
                "switch",
                S::Switch,
                "--storage delay --segment-sizes 16MB --buffers 128KB,4800KB",
            ),
            Suite::parsed(
                "logical-1mb",
                S::Logical,
                "--threads 1,2,8 --insert-slots 8 --duration-ms 200",
            ),
            Suite::parsed(
                "commit",
                S::Commit,
                &format!("--threads 1,2,16,64 {quick_slices}"),
            ),
            Suite::parsed(
                "mix",
                S::Mix,
                &format!("--threads 1,2,64 --sync none {quick_slices}"),
            ),
            Suite::parsed(
                "peers",
                S::Peers,
                &format!("--threads 1,2,64 {quick_slices}"),
            ),
            // Eight cases of 250 ms on a storage that drops the bytes.
            Suite::parsed("handoff", S::Handoff, "--duration-ms 250"),
            Suite::parsed("raft", S::Raft, "--entries 5000"),
        ]
    } else {
        vec![
            Suite::parsed("limits", S::Limits, ""),
            // Next to the limits and to scripts/pg-bench, which runs just
            // before: the disk drifts over a run, and the 1 MiB rows of
            // these cases are compared with both.
            Suite::parsed("pg-workloads", S::Commit, &pg_workloads(300)),
            Suite::parsed("rwlock", S::Rwlock, ""),
            // Their --quick runs take about a minute each; the full ones
            // alone would take longer than the whole default run.
            Suite::parsed("reserve", S::Reserve, "--quick"),
            Suite::parsed("insert", S::Insert, "--quick"),
            Suite::parsed("insert-batch", S::Insert, insert_batch),
            Suite::parsed(
                "insert-scaling",
                S::Insert,
                &insert_scaling("--slice-ms 300 --slices 5"),
            ),
            Suite::parsed("switch", S::Switch, ""),
            Suite::parsed("logical-1mb", S::Logical, ""),
            // Two slices each: every case runs steady and fresh.
            Suite::parsed("commit", S::Commit, "--slices 2"),
            Suite::parsed("mix", S::Mix, "--slices 2"),
            Suite::parsed("peers", S::Peers, ""),
            Suite::parsed("handoff", S::Handoff, ""),
            Suite::parsed("raft", S::Raft, ""),
        ]
    }
}

/// The plan of `args`: the suites not skipped, each sending its JSON into
/// the results directory under its name and its files into `--dir`, with
/// the flags that say so.
fn directed_plan(args: &AllArgs) -> Vec<Suite> {
    let mut plan: Vec<Suite> = plan(args.quick)
        .into_iter()
        .filter(|s| !args.skip.iter().any(|n| n == s.name))
        .collect();
    for suite in &mut plan {
        let json = args.results.join(format!("{}.json", suite.name));
        suite
            .flags
            .extend(["--json".to_owned(), json.display().to_string()]);
        if suite.args.direct(json, args.dir.as_deref()) {
            if let Some(dir) = &args.dir {
                suite
                    .flags
                    .extend(["--dir".to_owned(), dir.display().to_string()]);
            }
        }
        if args.direct_io {
            if let Some(segments) = suite.args.segments_mut() {
                segments.direct_io = true;
                suite.flags.push("--direct-io".to_owned());
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
        println!("\n{}: {}", suite.name, suite.command_line());
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

    /// The plan of `walden bench all` with these arguments.
    fn directed(quick: bool, dir: Option<&str>, skip: &[&str], direct_io: bool) -> Vec<Suite> {
        directed_plan(&AllArgs {
            quick,
            results: PathBuf::from("/tmp/results"),
            dir: dir.map(PathBuf::from),
            skip: skip.iter().map(|&s| s.to_owned()).collect(),
            direct_io,
        })
    }

    /// `line` split into words as a shell splits it (plain words and
    /// single-quoted ones, as `shell_word` writes them).
    fn shell_words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quoted = false;
        let mut any = false;
        for c in line.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                ' ' if !quoted => {
                    if any {
                        words.push(std::mem::take(&mut word));
                    }
                    any = false;
                }
                c => {
                    word.push(c);
                    any = true;
                }
            }
        }
        if any {
            words.push(word);
        }
        words
    }

    #[test]
    fn both_plans_have_every_suite_in_order_with_its_results_and_logs_directed() {
        for quick in [false, true] {
            let names: Vec<_> = plan(quick).iter().map(|s| s.name).collect();
            assert_eq!(
                names,
                [
                    "limits",
                    "pg-workloads",
                    "rwlock",
                    "reserve",
                    "insert",
                    "insert-batch",
                    "insert-scaling",
                    "switch",
                    "logical-1mb",
                    "commit",
                    "mix",
                    "peers",
                    "handoff",
                    "raft",
                ]
            );
            let directed = directed(quick, Some("/tmp/logs"), &["peers"], false);
            assert_eq!(directed.len(), names.len() - 1);
            for suite in &directed {
                let json = Path::new("/tmp/results").join(format!("{}.json", suite.name));
                let logs = Some(PathBuf::from("/tmp/logs"));
                let (json_of, dir_of) = match &suite.args {
                    SuiteArgs::Limits(a) => (&a.json, Some(&a.dir)),
                    SuiteArgs::Switch(a) => (&a.json, Some(&a.dir)),
                    SuiteArgs::Raft(a) => (&a.json, Some(&a.dir)),
                    SuiteArgs::Commit(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Mix(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Peers(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Insert(a) => (&a.run.json, Some(&a.run.dir)),
                    SuiteArgs::Rwlock(a) => (&a.json, None),
                    SuiteArgs::Reserve(a) => (&a.json, None),
                    SuiteArgs::Logical(a) => (&a.json, None),
                    SuiteArgs::Handoff(a) => (&a.json, None),
                };
                assert_eq!(json_of.as_deref(), Some(json.as_path()), "{}", suite.name);
                if let Some(dir) = dir_of {
                    assert_eq!(dir, &logs, "{}", suite.name);
                }
            }
        }
    }

    /// What the run prints for each suite is a command that runs that
    /// suite alone with the same arguments: its words parse into them.
    #[test]
    fn each_suites_printed_command_line_gives_its_arguments() {
        for quick in [false, true] {
            for direct_io in [false, true] {
                for suite in directed(quick, Some("/tmp/my logs"), &[], direct_io) {
                    let line = suite.command_line();
                    let words = shell_words(&line);
                    let prefix = ["walden", "bench", suite.args.subcommand()];
                    assert_eq!(words[..3], prefix, "{line}");
                    let flags: Vec<&str> = words[3..].iter().map(String::as_str).collect();
                    let mut reparsed = suite.clone();
                    reparsed.args = match &suite.args {
                        SuiteArgs::Limits(_) => SuiteArgs::Limits(parse_args(&flags).unwrap()),
                        SuiteArgs::Rwlock(_) => SuiteArgs::Rwlock(parse_args(&flags).unwrap()),
                        SuiteArgs::Reserve(_) => SuiteArgs::Reserve(parse_args(&flags).unwrap()),
                        SuiteArgs::Insert(_) => SuiteArgs::Insert(parse_args(&flags).unwrap()),
                        SuiteArgs::Switch(_) => SuiteArgs::Switch(parse_args(&flags).unwrap()),
                        SuiteArgs::Logical(_) => SuiteArgs::Logical(parse_args(&flags).unwrap()),
                        SuiteArgs::Commit(_) => SuiteArgs::Commit(parse_args(&flags).unwrap()),
                        SuiteArgs::Mix(_) => SuiteArgs::Mix(parse_args(&flags).unwrap()),
                        SuiteArgs::Peers(_) => SuiteArgs::Peers(parse_args(&flags).unwrap()),
                        SuiteArgs::Handoff(_) => SuiteArgs::Handoff(parse_args(&flags).unwrap()),
                        SuiteArgs::Raft(_) => SuiteArgs::Raft(parse_args(&flags).unwrap()),
                    };
                    assert_eq!(reparsed, suite, "{line}");
                    assert!(!line.contains("Some(") && !line.contains('{'), "{line}");
                }
            }
        }
    }

    #[test]
    fn a_word_a_shell_would_split_or_expand_is_quoted() {
        assert_eq!(shell_word("/tmp/a-b_c.json"), "/tmp/a-b_c.json");
        assert_eq!(shell_word("/tmp/my logs"), "'/tmp/my logs'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn direct_io_reaches_every_suite_that_builds_logs() {
        for direct_io in [false, true] {
            let mut with_segments = Vec::new();
            for mut suite in directed(true, None, &[], direct_io) {
                if let Some(segments) = suite.args.segments_mut() {
                    assert_eq!(segments.direct_io, direct_io, "{}", suite.name);
                    with_segments.push(suite.name);
                }
            }
            // Every suite but those that build no log.
            let no_logs = ["limits", "rwlock", "reserve", "peers", "raft"];
            let mut expected: Vec<_> = plan(true).iter().map(|s| s.name).collect();
            expected.retain(|name| !no_logs.contains(name));
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
                run: pg.run.clone(),
                limits_beside: pg.limits_beside,
                ..pg_full.clone()
            }
        );
        // The matching limits beside every 1 MiB case's steady slices,
        // shorter in the quick run.
        assert!(pg.limits_beside < pg_full.limits_beside && pg.limits_beside.is_some());
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
        let mut args = commit_args(&plan(false), "pg-workloads").clone();
        args.run.json = None;
        let mut args = SuiteArgs::Commit(args);
        assert!(args.direct(Path::new("out").join("pg-workloads.json"), None));
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
        for name in [
            "limits", "commit", "mix", "peers", "rwlock", "handoff", "raft",
        ] {
            find(&full, name);
        }
        assert!(full
            .iter()
            .all(|s| s.name != "all" && s.args.subcommand() != "all"));
    }
}
