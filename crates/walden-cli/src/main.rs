//! The `walden` command.

use clap::{Parser, Subcommand};

/// Walden: a scalable write-ahead log engine, byte-compatible with PostgreSQL 15.
#[derive(Parser)]
#[command(name = "walden", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {}
}
