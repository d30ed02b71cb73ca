//! `walden verify`: read a whole log, check every record, and check that
//! every acknowledged record is present, intact and where it was reported.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use walden::internals::{check_no_hole, check_segment_sizes, ControlFile, SegmentFiles};
use walden::message::LogicalMessage;
use walden::rmgr::RM_LOGICALMSG_ID;
use walden::{FsStorage, Lsn, ReadError, ReaderOptions, Wal, WalReader};

use crate::self_checking::{self, RecordId, LOAD_PREFIX, LOAD_RMID};

/// Arguments of `walden verify`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  walden verify /tmp/wal
  walden verify /tmp/wal --acked /tmp/acked")]
pub struct VerifyArgs {
    /// WAL directory (any format; nothing to specify).
    pub dir: PathBuf,
    /// Acknowledgement file written by `walden write --acked`: every record
    /// listed there (and every earlier one of the same thread) must be present.
    #[arg(long)]
    pub acked: Option<PathBuf>,
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
    let mut checkpoint_read = control
        .as_ref()
        .is_some_and(|c| c.checkpoint == Lsn::INVALID);
    let mut reader = WalReader::open(&args.dir, ReaderOptions::default())
        .with_context(|| format!("opening {}", args.dir.display()))?;
    let seg = reader.segment_size();
    let mut records = 0u64;
    let mut first = None;
    let mut last_end = Lsn::INVALID;
    let mut found: HashMap<RecordId, Lsn> = HashMap::new();
    let stop = loop {
        let rec = match reader.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break "end of range".to_owned(),
            Err(e @ ReadError::EndOfWal { .. }) => break e.to_string(),
            Err(e) => return Err(e).context("reading the log"),
        };
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
    if let Some(control) = &control {
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
