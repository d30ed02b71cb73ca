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
        eprintln!("walden: error: {}", report(&e));
        std::process::exit(1);
    }
}

/// `e` and its causes as "error: cause: cause's cause", each cause left out
/// where the message before it already says it (many of the library's
/// errors name their cause in their own message, and anyhow's `{:#}`
/// would print it twice).
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut previous = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out.clone_from(&text);
        } else if !previous.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        previous = text;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::report;

    /// An error whose message names its cause, as `#[error("...: {source}")]` does.
    #[derive(Debug)]
    struct Naming(std::io::Error);

    impl std::fmt::Display for Naming {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "opening the log: {}", self.0)
        }
    }

    impl std::error::Error for Naming {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    fn gone() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory")
    }

    #[test]
    fn a_cause_the_message_names_is_printed_once() {
        let e = anyhow::Error::new(Naming(gone()));
        assert_eq!(report(&e), "opening the log: no such directory");
    }

    #[test]
    fn a_cause_the_message_leaves_out_is_appended() {
        let e = anyhow::Error::new(gone()).context("reading the segment");
        assert_eq!(report(&e), "reading the segment: no such directory");
        let e = anyhow::Error::new(Naming(gone())).context("walden write");
        assert_eq!(
            report(&e),
            "walden write: opening the log: no such directory"
        );
    }
}
