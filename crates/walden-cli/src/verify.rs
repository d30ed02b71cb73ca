//! `walden verify`: read a whole log, check every record, and check that
//! every acknowledged record is present, intact and where it was reported.
//! With `--recovery-mode`, the log is read as opening it with that mode
//! would read it (`walden::internals::preview_recovery`, which writes
//! nothing), and what the mode keeps, skips and drops is reported.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use walden::internals::{
    check_no_hole, check_segment_sizes, preview_recovery, ControlFile, SegmentFiles,
};
use walden::message::LogicalMessage;
use walden::rmgr::RM_LOGICALMSG_ID;
use walden::{
    FsStorage, Lsn, ReadError, ReaderOptions, RecoveryMode, RecoveryReport, Wal, WalReader,
};

use crate::self_checking::{self, RecordId, LOAD_PREFIX, LOAD_RMID};

/// Arguments of `walden verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  walden verify /tmp/wal
  walden verify /tmp/wal --acked /tmp/acked
  walden verify /tmp/wal --recovery-mode skip-any-corrupted-records --acked /tmp/acked")]
pub struct VerifyArgs {
    /// WAL directory (any format; nothing to specify).
    pub dir: PathBuf,
    /// Acknowledgement file written by `walden write --acked`: every record
    /// listed there (and every earlier one of the same thread) must be present.
    #[arg(long)]
    pub acked: Option<PathBuf>,
    /// Read the log as opening it with this recovery mode would
    /// (point-in-time-recovery, tolerate-corrupted-tail-records,
    /// absolute-consistency, skip-any-corrupted-records; docs/reliability.md),
    /// writing nothing: fails where that open would fail, reports what the
    /// mode keeps, skips and drops, and checks the acknowledgements against
    /// the records it keeps. Needs a Walden log (a control file). Without
    /// it, the log must read cleanly to where a clean log ends.
    #[arg(long)]
    pub recovery_mode: Option<RecoveryMode>,
}

/// What opening the log with a recovery mode would do.
struct Preview {
    mode: RecoveryMode,
    report: RecoveryReport,
}

impl Preview {
    /// The recovery of the log in `dir` with `mode`, or why it would fail.
    fn of(dir: &Path, mode: RecoveryMode) -> Result<Preview> {
        let report = preview_recovery(Arc::new(FsStorage), dir, mode).with_context(|| {
            format!(
                "opening {} with recovery mode {mode} would fail",
                dir.display()
            )
        })?;
        Ok(Preview { mode, report })
    }

    /// Whether the open keeps the record at `lsn` (read by a reader that
    /// stops where recovery stops and resumes where it resumes): not if it
    /// lies in WAL the mode skipped, or in the batch the end of WAL cut.
    fn keeps(&self, lsn: Lsn) -> bool {
        let skipped = self
            .report
            .skipped
            .iter()
            .any(|s| lsn >= s.from && s.resumed.is_none_or(|resumed| lsn < resumed));
        let dropped = self
            .report
            .dropped_batch
            .is_some_and(|marker| lsn >= marker);
        !skipped && !dropped
    }

    /// Where reading resumes after the reader stopped before `next`: the
    /// first place the mode resumed after it, if any.
    fn resumes_after(&self, next: Lsn) -> Option<Lsn> {
        self.report
            .skipped
            .iter()
            .filter_map(|s| s.resumed)
            .find(|&resumed| resumed > next)
    }

    /// Prints what the mode keeps, skips and drops.
    fn print(&self) {
        let r = &self.report;
        let last = r.last_record.map_or("none".to_owned(), |l| l.to_string());
        println!(
            "recovery mode {}: keeps {} records from the redo point {} to {} (last record {last}); stopped: {}",
            self.mode, r.records, r.redo, r.end, r.stop
        );
        for s in &r.skipped {
            let resumed = s
                .resumed
                .map_or("nowhere (nothing after it kept)".to_owned(), |l| {
                    l.to_string()
                });
            println!(
                "  skips from {} to {resumed}: {}; {} valid records dropped with it",
                s.from, s.reason, s.records_dropped
            );
        }
        if let Some(marker) = r.dropped_batch {
            println!("  drops the incomplete batch at {marker}");
        }
        if let Some(aborted) = r.overwritten {
            println!("  abandons the record cut off at {aborted} (an overwrite-contrecord record follows it)");
        }
    }
}

/// Runs `walden verify`; an error means the log failed verification.
///
/// Beyond every record being valid, a Walden log (one with a control file)
/// must read cleanly to where a clean log ends: through the control file's
/// last checkpoint record, with every segment of full size and no segment
/// missing before one holding WAL of its position, as recovery demands.
pub fn run(args: &VerifyArgs) -> Result<()> {
    let control = if Wal::exists(&args.dir) {
        Some(
            ControlFile::read(&FsStorage, &args.dir)
                .with_context(|| format!("reading the control file of {}", args.dir.display()))?,
        )
    } else {
        None
    };
    // A control file written by a create that crashed before its first
    // checkpoint record names none (`Lsn::INVALID`): recovery then starts at
    // the redo point alone, and so does this check.
    let preview = match (args.recovery_mode, &control) {
        (Some(mode), Some(_)) => Some(Preview::of(&args.dir, mode)?),
        (Some(mode), None) => bail!(
            "--recovery-mode {mode}: {} has no control file: not a Walden log that could be opened",
            args.dir.display()
        ),
        (None, _) => None,
    };
    let mut checkpoint_read = control
        .as_ref()
        .is_some_and(|c| c.checkpoint == Lsn::INVALID);
    let open_at = |start| {
        let options = ReaderOptions {
            start,
            ..ReaderOptions::default()
        };
        WalReader::open(&args.dir, options)
            .with_context(|| format!("opening {}", args.dir.display()))
    };
    let mut reader = open_at(None)?;
    let seg = reader.segment_size();
    let mut records = 0u64;
    let mut first = None;
    let mut last_end = Lsn::INVALID;
    let mut found: HashMap<RecordId, Lsn> = HashMap::new();
    let stop = loop {
        let rec = match reader.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break "end of range".to_owned(),
            Err(e @ ReadError::EndOfWal { .. }) => {
                match preview
                    .as_ref()
                    .and_then(|p| p.resumes_after(reader.next_lsn()))
                {
                    Some(resumed) => {
                        reader = open_at(Some(resumed))?;
                        continue;
                    }
                    None => break e.to_string(),
                }
            }
            Err(e) => return Err(e).context("reading the log"),
        };
        if preview.as_ref().is_some_and(|p| !p.keeps(rec.lsn)) {
            continue;
        }
        records += 1;
        checkpoint_read |= control.as_ref().is_some_and(|c| c.checkpoint == rec.lsn);
        first.get_or_insert(rec.lsn);
        last_end = rec.end;
        // Inserts report the aligned end, where the next record goes.
        let end = seg
            .aligned_end(rec.lsn, u64::from(rec.header.tot_len))
            .unwrap_or(rec.end);
        let body = rec
            .decode_body()
            .with_context(|| format!("decoding the record at {}", rec.lsn))?;
        let payload = match rec.header.rmid {
            LOAD_RMID => Some(body.main_data),
            RM_LOGICALMSG_ID => LogicalMessage::decode(&body.main_data)
                .ok()
                .filter(|m| m.prefix == LOAD_PREFIX.as_bytes())
                .map(|m| m.payload),
            _ => None,
        };
        if let Some(id) = payload
            .as_deref()
            .map(self_checking::decode)
            .transpose()?
            .flatten()
        {
            if let Some(prev) = found.insert(id, end) {
                bail!("record {id:?} appears twice: ending at {prev} and at {end}");
            }
        }
    };
    if let Some(preview) = &preview {
        // The open's own checks of the segments and the mode's have passed.
        preview.print();
    } else if let Some(control) = &control {
        ends_cleanly(
            &args.dir,
            control,
            checkpoint_read,
            reader.next_lsn(),
            &stop,
        )?;
    }
    let mut acked_count = 0;
    let mut purged = 0;
    if let Some(path) = &args.acked {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let acks = self_checking::parse_acks(&text)?;
        // Checkpoints recycle or remove the segments below their redo
        // point: an acknowledged record that ended before the first record
        // left in the directory went with them.
        let start = first.unwrap_or(Lsn::INVALID);
        let mut highest: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        for ack in &acks {
            match found.get(&ack.id) {
                Some(&end) if end == ack.end => {}
                None if ack.end <= start => {
                    purged += 1;
                    continue;
                }
                Some(&end) => bail!(
                    "acknowledged record {:?} ends at {end}, not at {} as acknowledged",
                    ack.id,
                    ack.end
                ),
                None => bail!(
                    "acknowledged record {:?} (end {}) is missing; the log stops: {stop}",
                    ack.id,
                    ack.end
                ),
            }
            let h = highest.entry((ack.id.run, ack.id.thread)).or_default();
            *h = (*h).max(ack.id.seq);
        }
        let mut lowest: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        for id in found.keys() {
            let l = lowest.entry((id.run, id.thread)).or_insert(id.seq);
            *l = (*l).min(id.seq);
        }
        for (&(run, thread), &upto) in &highest {
            // A thread's records are in the log in order, so those before
            // its first one still there went with the segments removed.
            let lowest = lowest.get(&(run, thread)).copied().unwrap_or(0);
            if let Some(seq) =
                (lowest..=upto).find(|&seq| !found.contains_key(&RecordId { run, thread, seq }))
            {
                bail!("record {seq} of run {run} thread {thread} is missing, but record {upto} of that thread was acknowledged");
            }
        }
        acked_count = acks.len() - purged;
    }
    let format = reader.format().map_or("no".to_owned(), |f| f.to_string());
    println!(
        "verified {records} records ({} from walden write, {format} format) from {} to {last_end}; {acked_count} acknowledgements hold ({purged} for records checkpoints removed); stopped: {stop}",
        found.len(),
        first.unwrap_or(Lsn::INVALID),
    );
    Ok(())
}

/// Fails, with the reason, unless a Walden log read to `end` (stopping for
/// `stop`) ends where a clean log ends: past the control file's checkpoint
/// record (`checkpoint_read`), with every segment of full size and no
/// segment missing before a later one holding WAL of its position.
fn ends_cleanly(
    dir: &Path,
    control: &ControlFile,
    checkpoint_read: bool,
    end: Lsn,
    stop: &str,
) -> Result<()> {
    if !checkpoint_read {
        bail!(
            "the log stops at {end}, before the control file's last checkpoint record at {}: \
             WAL before it is missing or damaged (stopped: {stop})",
            control.checkpoint
        );
    }
    let files = SegmentFiles::new(
        Arc::new(FsStorage),
        dir,
        control.segment_size,
        control.timeline,
    );
    check_segment_sizes(&files, 0).context("a segment is damaged")?;
    check_no_hole(&files, end, control.system_identifier)
        .with_context(|| format!("the log stops at {end} ({stop}), but WAL follows a hole"))?;
    Ok(())
}
