//! `walden stat`: what a WAL directory holds — its control file (for a
//! Walden log), its segments, the range of valid WAL, and counts and bytes
//! per resource manager.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use walden::internals::{ControlFile, SegmentFiles};
use walden::{FsStorage, Lsn, ReadError, ReaderOptions, WalReader};

use crate::dump::stats::Stats;

/// Summarise a WAL directory (Walden's or PostgreSQL's pg_wal).
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Prints the control file (for a Walden log), the segment files, the range of
valid WAL from the first record of the oldest segment to the end of WAL and
why reading stopped there, then record counts and bytes per resource manager
as `pg_waldump --stats` prints them.

Examples:
  walden stat /tmp/wal
  walden stat /var/lib/postgresql/15/main/pg_wal")]
pub struct StatArgs {
    /// WAL directory.
    pub dir: PathBuf,
}

/// Runs `walden stat`.
pub fn run(args: &StatArgs) -> Result<()> {
    let mut out = io::stdout().lock();
    let control = ControlFile::path(&args.dir)
        .exists()
        .then(|| ControlFile::read(&FsStorage, &args.dir))
        .transpose()
        .with_context(|| format!("reading the control file of {}", args.dir.display()))?;
    if let Some(c) = &control {
        writeln!(
            out,
            "control file: format {:?}, segment size {} bytes, system identifier {}, timeline {}",
            c.format,
            c.segment_size.bytes(),
            c.system_identifier,
            c.timeline
        )?;
        writeln!(
            out,
            "last checkpoint {}, redo {}, {}",
            c.checkpoint,
            c.redo,
            if c.clean_shutdown {
                "closed cleanly"
            } else {
                "open or crashed (recovery on next open)"
            }
        )?;
    }
    let mut reader = WalReader::open(&args.dir, ReaderOptions::default())
        .with_context(|| format!("opening {}", args.dir.display()))?;
    let seg = reader.segment_size();
    let timeline = control.map_or(1, |c| c.timeline);
    let files = SegmentFiles::new(std::sync::Arc::new(FsStorage), &args.dir, seg, timeline);
    let segments = files.list().context("listing segment files")?;
    if let (Some(first), Some(last)) = (segments.first(), segments.last()) {
        writeln!(
            out,
            "segments: {} of {} bytes, {} .. {}",
            segments.len(),
            seg.bytes(),
            seg.file_name(timeline, *first),
            seg.file_name(timeline, *last)
        )?;
    }
    let mut stats = Stats::new(false);
    let stop = loop {
        match reader.next_record() {
            Ok(Some(record)) => stats.add(&record, seg),
            Ok(None) => break "end of range".to_owned(),
            Err(e @ ReadError::EndOfWal { .. }) => break e.to_string(),
            Err(e) => return Err(e).context("reading the log"),
        }
    };
    writeln!(
        out,
        "valid WAL: {} .. {}; reading stopped: {stop}",
        stats.first_record().unwrap_or(Lsn::INVALID),
        reader.next_lsn()
    )?;
    writeln!(out)?;
    stats.write(&mut out)?;
    Ok(())
}
