//! The `walden` command.

mod bench;
mod dump;
mod load;
mod verify;
mod write;

use clap::{Parser, Subcommand};

/// Walden: a scalable write-ahead log engine, byte-compatible with PostgreSQL 15.
#[derive(Parser)]
#[command(name = "walden", version, about)]
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
        Command::Write(a) => write::run(a),
        Command::Verify(a) => verify::run(a),
    };
    if let Err(e) = result {
        eprintln!("walden: error: {e:#}");
        std::process::exit(1);
    }
}
