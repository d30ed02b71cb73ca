//! `walden bench`: workloads measured side by side in one run, so that
//! results compare as ratios.

mod rwlock;

use clap::{Args, Subcommand};

/// Arguments of `walden bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand)]
enum Workload {
    /// Reader-writer locks (walden ReadBiasedLock, std, parking_lot, crossbeam
    /// ShardedLock) under seed 004's read-mostly mix and a write-heavy one.
    Rwlock(rwlock::RwlockArgs),
}

/// Runs the chosen workload.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    match &args.workload {
        Workload::Rwlock(args) => rwlock::run(args),
    }
}
