//! `walden dump`: print the records of a WAL directory the way PostgreSQL's
//! `pg_waldump` does, as JSON lines, or as per-resource-manager statistics.

mod line;
pub(crate) mod stats;

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use walden::{Lsn, ReaderOptions, SegmentSize, TimeLineId, WalReader};

use stats::Stats;

/// Print the records of a WAL directory as PostgreSQL's pg_waldump does, as
/// JSON lines, or as statistics per resource manager.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Reading stops cleanly before the first record that needs bytes at or after
--end (exit 0). Without --end it goes on to the end of WAL, which, as in
PostgreSQL 15's pg_waldump, is reported as an error (exit 1) naming the last
good record and why the next one is not valid.

Examples:
  walden dump /var/lib/postgresql/15/main/pg_wal
  walden dump WALDIR --start 0/700100 --end 0/700200
  walden dump WALDIR --end 0/A8C7B8 --stats
  walden dump WALDIR --json | head -3")]
pub struct DumpArgs {
    /// Directory holding the segment files (or its pg_wal subdirectory),
    /// like pg_waldump -p.
    pub dir: PathBuf,
    /// Start at this LSN (X/Y); when it is not a record start, at the first
    /// record after it. Default: the start of the lowest-numbered segment.
    #[arg(long, short = 's', value_name = "LSN")]
    pub start: Option<Lsn>,
    /// Stop before the first record that would need bytes at or after this
    /// LSN (X/Y).
    #[arg(long, short = 'e', value_name = "LSN")]
    pub end: Option<Lsn>,
    /// Timeline of the segment files to read.
    #[arg(long, short = 't', default_value_t = 1)]
    pub timeline: TimeLineId,
    /// Print one JSON object per record instead of pg_waldump's lines.
    #[arg(long, conflicts_with = "stats")]
    pub json: bool,
    /// Print counts and sizes per resource manager instead of records, like
    /// pg_waldump --stats.
    #[arg(long)]
    pub stats: bool,
}

/// What each record turns into.
enum Output {
    Lines,
    Json,
    Stats(Stats),
}

/// Runs `walden dump`. An error is a failure to read the requested range,
/// including reaching the end of WAL without `--end`.
pub fn run(args: &DumpArgs) -> Result<()> {
    let options = ReaderOptions {
        start: args.start,
        end: args.end,
        timeline: args.timeline,
    };
    // The reader's messages name the directory, file or LSN at fault.
    let mut reader = WalReader::open(&args.dir, options).map_err(|e| anyhow!("{e}"))?;
    let mut output = if args.stats {
        Output::Stats(Stats::default())
    } else if args.json {
        Output::Json
    } else {
        Output::Lines
    };
    let mut out = BufWriter::new(io::stdout().lock());
    // Statistics cover what was read even when reading ended in an error,
    // which is reported after them, as pg_waldump does; but when not even a
    // first record was found, there is only the error.
    let read = dump_records(&mut reader, &mut output, &mut out);
    if let Output::Stats(stats) = &output {
        if read.is_ok() || stats.first_record().is_some() {
            ignore_broken_pipe(stats.write(&mut out))?;
        }
    }
    ignore_broken_pipe(out.flush())?;
    read
}

/// Reads every record of the range into `output`.
fn dump_records(reader: &mut WalReader, output: &mut Output, out: &mut impl Write) -> Result<()> {
    let seg = reader.segment_size();
    let mut first = true;
    loop {
        let next = reader.next_record();
        if std::mem::take(&mut first) {
            write_skip_note(reader, seg, output, out)?;
        }
        // The reader's message already reads like pg_waldump's ("error in
        // WAL record at X: reason"); it is shown alone, without its sources.
        let Some(record) = next.map_err(|e| anyhow!("{e}"))? else {
            return Ok(());
        };
        let written = match output {
            Output::Lines => writeln!(out, "{}", line::text(&record)),
            Output::Json => writeln!(out, "{}", line::json(&record)),
            Output::Stats(stats) => {
                stats.add(&record, seg);
                Ok(())
            }
        };
        if let Err(e) = written {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(e.into());
        }
    }
}

/// pg_waldump's note when `--start` was not a record start (nothing when it
/// was a segment start, as pg_waldump). Goes to stderr with `--json`, so that
/// stdout stays JSON.
fn write_skip_note(
    reader: &WalReader,
    seg: SegmentSize,
    output: &Output,
    out: &mut impl Write,
) -> io::Result<()> {
    let Some((requested, found, bytes)) = reader.skipped() else {
        return Ok(());
    };
    if seg.offset(requested) == 0 {
        return Ok(());
    }
    let unit = if bytes == 1 { "byte" } else { "bytes" };
    let note =
        format!("first record is after {requested}, at {found}, skipping over {bytes} {unit}");
    match output {
        Output::Json => {
            eprintln!("{note}");
            Ok(())
        }
        _ => ignore_broken_pipe(writeln!(out, "{note}")),
    }
}

/// A closed stdout (`walden dump | head`) ends the output quietly.
fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
