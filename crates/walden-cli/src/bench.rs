//! `walden bench`: workloads measured side by side in one run, so that
//! results compare as ratios. Each suite (its arguments, run and report)
//! is in `walden_bench`; this file maps the subcommands to them.

use clap::{Args, Subcommand};
use walden_bench::all::{self, AllArgs};
use walden_bench::commit::suite::{self as commit, CommitArgs};
use walden_bench::handoff::suite::{self as handoff, HandoffArgs};
use walden_bench::limits::suite::{self as limits, LimitsArgs};
use walden_bench::logical::suite::{self as logical, LogicalArgs};
use walden_bench::mix::suite::{self as mix, MixArgs};
use walden_bench::peers::suite::{self as peers, PeersArgs};
use walden_bench::raft::suite::{self as raft, RaftArgs};
use walden_bench::recovery::{self, RecoveryArgs};
use walden_bench::reserve::suite::{self as reserve, InsertArgs, ReserveArgs};
use walden_bench::rwlock::suite::{self as rwlock, RwlockArgs};
use walden_bench::splice::suite::{self as splice, SpliceArgs};
use walden_bench::summary::{self, SummaryArgs};
use walden_bench::switch::suite::{self as switch, SwitchArgs};

/// Arguments of `walden bench`: a suite, or none for the main job
/// (`walden bench all`, whose options it then takes).
#[derive(Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "\
With no suite, `walden bench [--quick] [--results DIR] ...` runs the main
job, `walden bench all`, with the same options.

Every suite that builds logs takes the strategy knobs --format,
--reservation, --insert-slots, --slot-choice, --page-init, --eviction and
--buffers (a list where the suite compares that knob's values); those
that take --buffers also take --segment-prep and --segments-ahead.

Examples:
  walden bench --quick --results /tmp/bench-results
  walden bench commit --threads 1,2,64 --sync fdatasync
  walden bench insert --quick --format postgres15 --reservation spinlock,prev-link-table
  walden bench mix --threads 1,2 --insert-slots 64 --slot-choice attempts:2
  walden bench splice --segments 2

Run `walden bench help <suite>` for each suite's options and examples."
)]
pub struct BenchArgs {
    #[command(subcommand)]
    workload: Option<Workload>,
    /// The main job's options, when no suite is named.
    #[command(flatten)]
    all: AllArgs,
}

#[derive(Subcommand)]
enum Workload {
    /// Reader-writer locks (walden ReadBiasedLock, std, parking_lot, crossbeam
    /// ShardedLock) under seed 004's read-mostly mix and a write-heavy one.
    Rwlock(RwlockArgs),
    /// One WAL switch right after a checkpoint under open_datasync, per
    /// eviction policy and ring size (seed 002).
    Switch(SwitchArgs),
    /// Threads inserting 1 MiB messages into a small ring with the
    /// background writer on: who writes the bytes, with and without the
    /// write lock's hand-off to the background writer (seed 002).
    Handoff(HandoffArgs),
    /// Threads inserting 1 MiB logical messages, per page-initialisation
    /// design and insertion-slot setup (seed 000).
    #[command(name = "logical-1mb")]
    Logical1mb(LogicalArgs),
    /// Threads each looping "insert a 100-byte record, flush it", per sync
    /// method: commits/s, syncs per commit, p50/p99 latency.
    Commit(CommitArgs),
    /// Seed 001's append-only transactions (20 small records, then a
    /// commit) per reservation design.
    Mix(MixArgs),
    /// Seed 001's reservation microbenchmark: T threads × N reservations
    /// per design; serialized cost, shared-line writes, many-core projection.
    Reserve(ReserveArgs),
    /// The insert path per reservation design and format, non-durable,
    /// 66-byte and 4 kB records.
    Insert(InsertArgs),
    /// Torn-write splices (seed 001): stale records each format accepts.
    Splice(SpliceArgs),
    /// The machine's limits: memcpy and CRC-32C bandwidth, cache-line
    /// transfer, sequential write bandwidth, write-and-sync latency.
    Limits(LimitsArgs),
    /// Walden against raft-engine, RocksDB's WAL, okaywal and wal-db
    /// (built with --features peers): appends and durable commits.
    Peers(PeersArgs),
    /// walden-raft's log store against raft-engine (built with --features
    /// peers): Raft entries appended in batches, then read back.
    Raft(RaftArgs),
    /// Unclean-open time with a given WAL since the last checkpoint:
    /// rewriting (today) against an fsync or syncfs of the segments, and
    /// with automatic checkpoints by max_wal_size.
    Recovery(RecoveryArgs),
    /// Every suite in one run (about 10 minutes; --quick about 1), JSON and
    /// PNG charts into a results directory, then the summary.
    All(AllArgs),
    /// The summary (ratios, projection, charts) of a results directory.
    Summary(SummaryArgs),
}

/// Runs the chosen workload.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let Some(workload) = &args.workload else {
        return Ok(all::run(&args.all)?);
    };
    Ok(match workload {
        Workload::Rwlock(args) => rwlock::run(args),
        Workload::Switch(args) => switch::run(args),
        Workload::Handoff(args) => handoff::run(args),
        Workload::Logical1mb(args) => logical::run(args),
        Workload::Commit(args) => commit::run(args),
        Workload::Mix(args) => mix::run(args),
        Workload::Reserve(args) => reserve::run_reserve(args),
        Workload::Insert(args) => reserve::run_insert(args),
        Workload::Splice(args) => splice::run(args),
        Workload::Limits(args) => limits::run(args),
        Workload::Peers(args) => peers::run(args),
        Workload::Raft(args) => raft::run(args),
        Workload::Recovery(args) => recovery::run(args),
        Workload::All(args) => all::run(args),
        Workload::Summary(args) => summary::run_summary(args),
    }?)
}
