//! The `walden` command.

mod bench;
mod crash_points;
mod dump;
mod self_checking;
mod stat;
mod verify;
mod write;

use clap::{Parser, Subcommand};

/// Walden: a scalable write-ahead log engine, byte-compatible with PostgreSQL 15.
#[derive(Parser)]
#[command(
    name = "walden",
    version,
    about,
    after_help = "Examples:
  walden write /tmp/wal --records 100000 --threads 8 --size 0-4KB --flush-every 10
  walden verify /tmp/wal
  walden stat /tmp/wal
  walden dump /tmp/wal --end 0/2000000 --stats
  walden bench rwlock --threads 1,2,16

Run `walden help <command>` for each command's options and examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure workloads side by side (reader-writer locks, ...).
    Bench(bench::BenchArgs),
    /// Print the records of a WAL directory like pg_waldump (or as JSON, or statistics).
    Dump(dump::DumpArgs),
    /// Summarise a WAL directory: control file, segments, valid range, per-rmgr counts.
    Stat(stat::StatArgs),
    /// Insert self-checking records from many threads (load generator and crash-test workload).
    Write(write::WriteArgs),
    /// Read a whole log, check every record and every acknowledged one.
    Verify(verify::VerifyArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(a) => bench::run(a),
        Command::Dump(a) => dump::run(a),
        Command::Stat(a) => stat::run(a),
        Command::Write(a) => write::run(a),
        Command::Verify(a) => verify::run(a),
    };
    if let Err(e) = result {
        eprintln!("walden: error: {}", walden_bench::error::chain(e.as_ref()));
        std::process::exit(1);
    }
}
