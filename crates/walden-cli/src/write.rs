//! `walden write`: a multi-threaded load generator, also the crash-test
//! workload: every payload checks itself, and acknowledged (flushed)
//! records are logged durably to a separate file for `walden verify`.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use walden::internals::ControlFile;
use walden::FsStorage;
use walden::{
    Config, Eviction, PageInitKind, Record, RecoveryMode, ReservationKind, SegmentPrep, SlotChoice,
    Storage, SyncMethod, Wal, WalFormat, MAX_RECORD_SIZE,
};

use crate::crash_points::{CrashPointStorage, CrashPoints};
use crate::self_checking::{self, Ack, RecordId, LOAD_PREFIX, LOAD_RMID};

/// Segment size of a new log unless `--segment-size` says otherwise.
const DEFAULT_SEGMENT_SIZE: &str = "16MB";

/// Arguments of `walden write`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  walden write /tmp/wal --records 100000 --threads 8 --size 0-64KB
  walden write /tmp/wal --flush-every 1 --sync fdatasync --acked /tmp/acked
  walden write /tmp/wal --format self-lsn --threads 64 --slot-choice attempts:2
  walden write /tmp/wal --reservation prev-link-table --insert-slots 64
  walden write /tmp/wal --segment-prep fallocate --segments-ahead 8
  walden verify /tmp/wal --acked /tmp/acked")]
pub struct WriteArgs {
    /// WAL directory: created if new, opened (recovered) and appended to if not.
    pub dir: PathBuf,
    /// Records to insert, over all threads.
    #[arg(long, default_value_t = 10_000)]
    pub records: u64,
    /// Inserting threads (at least 1).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: u32,
    /// Payload size range MIN-MAX (or one size), bytes or with KB/MB/GB
    /// suffix (powers of 1024). Payloads are at least 36 bytes.
    #[arg(long, default_value = "0-1KB")]
    pub size: String,
    /// Write PostgreSQL logical messages (prefix "walden") instead of
    /// records of custom resource manager 128.
    #[arg(long)]
    pub logical_message: bool,
    /// Segment size of a new log (default 16MB); when appending, it must be
    /// the log's own, if given.
    #[arg(long)]
    pub segment_size: Option<String>,
    /// Shared buffer size.
    #[arg(long, default_value = "16MB")]
    pub buffers: String,
    /// On-disk format of a new log: postgres15 (the default), self-lsn or
    /// compact-wal-id; when appending, it must be the log's own, if given.
    #[arg(long)]
    pub format: Option<WalFormat>,
    /// How space is reserved: spinlock, prev-link-table or
    /// prev-link-in-buffer for postgres15, unlinked for the others
    /// (default: the library's default for the format).
    #[arg(long)]
    pub reservation: Option<ReservationKind>,
    /// Entries of the prev-link-table table (a power of two, at least twice
    /// --insert-slots; default: derived from --insert-slots).
    #[arg(long)]
    pub link_table_capacity: Option<usize>,
    /// Insertion slots (1 to 1024).
    #[arg(long, default_value_t = 8)]
    pub insert_slots: usize,
    /// How a thread picks its insertion slot: sticky, or attempts:K (try K
    /// more slots without blocking before waiting).
    #[arg(long, default_value = "sticky")]
    pub slot_choice: SlotChoice,
    /// How buffer pages are initialised: mapping-lock or cooperative.
    #[arg(long, default_value = "mapping-lock")]
    pub page_init: PageInitKind,
    /// How much an inserter writes when it needs an unwritten buffer page:
    /// one-page or batch.
    #[arg(long, default_value = "one-page")]
    pub eviction: Eviction,
    /// How a new segment file is prepared: zero-fill, fallocate (an error
    /// on a file system without it) or page-headers.
    #[arg(long, default_value = "zero-fill")]
    pub segment_prep: SegmentPrep,
    /// Segments kept ready ahead of the one being written, by a background
    /// thread (0 to 1024; 0: the writer creates each one itself).
    #[arg(long, default_value_t = 2)]
    pub segments_ahead: usize,
    /// Write segment files with direct I/O (O_DIRECT; with --sync
    /// open_datasync, O_DIRECT | O_DSYNC): whole pages straight from the
    /// buffer ring. An error where the file system refuses O_DIRECT.
    #[arg(long)]
    pub direct_io: bool,
    /// Write-through of large records: a record of at least this many
    /// bytes (with KB/MB suffix; 0: off) has the pages it covers whole
    /// written straight from its payload to the segment file instead of
    /// through the buffer ring; not with --direct-io, open_datasync or
    /// open_sync.
    #[arg(long, default_value = "256KB")]
    pub write_through_from: String,
    /// Write-back started as a write goes: with fsync or fdatasync and
    /// without --direct-io, each write is cut every this many bytes (with
    /// KB/MB suffix; a multiple of 8 KiB; 0: off) and the write-back of each
    /// cut started (sync_file_range) before the next is written.
    #[arg(long, default_value = "256KB")]
    pub writeback_every: String,
    /// Overlapped syncs: a flush round that writes at least this many
    /// bytes (with --concurrent-syncs true: makes that many durable; with
    /// KB/MB suffix; 0: every round) hands the lead on before its sync, so
    /// the next round writes (and, with concurrent syncs, syncs) while it
    /// is in flight.
    #[arg(long, default_value = "64KB")]
    pub overlap_syncs_from: String,
    /// Concurrent syncs: up to two syncs in flight at once, each through a
    /// file description of its own: true or false.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub concurrent_syncs: bool,
    /// The CRC beside the write: a thread of the log's own computes the CRC
    /// of each record of at least --write-through-from bytes while its
    /// inserter writes the record's pages after the first: true or false.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub crc_helper: bool,
    /// A thread that finds the write lock held yields while it stays held,
    /// one at a time, for about a millisecond before it sleeps: true or
    /// false.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub write_lock_spin: bool,
    /// A flusher waiting for a round that syncs yields while it waits, for
    /// about a millisecond, before it sleeps: true or false.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub flush_wait_spin: bool,
    /// Each thread flushes after every K-th insert (0: only at the end).
    #[arg(long, default_value_t = 0)]
    pub flush_every: u64,
    /// The background writer's delay in milliseconds: it writes and
    /// flushes what was inserted every this often (0: no background
    /// writer).
    #[arg(long, default_value_t = 200)]
    pub writer_delay_ms: u64,
    /// How flushed WAL is made durable: fsync, fdatasync, open_datasync, open_sync, none.
    #[arg(long, default_value = "fdatasync")]
    pub sync: SyncMethod,
    /// What opening an existing log does with WAL it cannot read:
    /// point-in-time-recovery (stop at it), tolerate-corrupted-tail-records
    /// (refuse it unless it is the tail), absolute-consistency (refuse any)
    /// or skip-any-corrupted-records (skip it, keep what follows).
    #[arg(long, default_value = "point-in-time-recovery")]
    pub recovery_mode: RecoveryMode,
    /// After each flush, append "run thread seq end-LSN" to this file and sync it.
    #[arg(long)]
    pub acked: Option<PathBuf>,
    /// Checkpoint automatically once this much WAL lies past the last
    /// checkpoint's redo point (bytes or with KB/MB/GB suffix; `off`: never),
    /// so that recovery after a crash reads and rewrites at most about this
    /// much. The records of `walden write` are needed by no one once
    /// written, so any checkpoint is safe for them.
    #[arg(long, default_value = "256MB")]
    pub max_wal_size: String,
    /// Seed of the payload sizes (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// For the syscall crash sweep: kill the process with SIGKILL just
    /// before the N-th operation on the log's files that changes the disk
    /// or syncs it, counted over every thread (0: never); the count by
    /// system call is printed at the end ("crash points: …").
    #[arg(long, hide = true)]
    pub crash_at_io: Option<u64>,
}

/// Runs `walden write`.
pub fn run(args: &WriteArgs) -> Result<()> {
    let (min, max) = self_checking::parse_size_range(&args.size)?;
    if max > MAX_RECORD_SIZE as u64 {
        bail!(
            "--size {}: a payload is at most {MAX_RECORD_SIZE} bytes",
            args.size
        );
    }
    let format = args.format.unwrap_or_default();
    let mut config = Config {
        segment_size: walden_bench::units::parse_size(
            args.segment_size.as_deref().unwrap_or(DEFAULT_SEGMENT_SIZE),
        )?,
        buffers: walden_bench::units::parse_size(&args.buffers)?,
        format,
        reservation: args
            .reservation
            .unwrap_or(ReservationKind::default_for(format)),
        prev_link_table_capacity: args.link_table_capacity,
        insert_slots: args.insert_slots,
        slot_choice: args.slot_choice,
        page_init: args.page_init,
        eviction: args.eviction,
        sync_method: args.sync,
        segment_prep: args.segment_prep,
        segments_ahead: args.segments_ahead,
        direct_io: args.direct_io,
        write_through_from: walden_bench::units::parse_size(&args.write_through_from)?,
        writeback_every: walden_bench::units::parse_size(&args.writeback_every)?,
        overlap_syncs_from: walden_bench::units::parse_size(&args.overlap_syncs_from)?,
        concurrent_syncs: args.concurrent_syncs,
        crc_helper: args.crc_helper,
        write_lock_spin: args.write_lock_spin,
        flush_wait_spin: args.flush_wait_spin,
        writer_delay: (args.writer_delay_ms > 0)
            .then(|| std::time::Duration::from_millis(args.writer_delay_ms)),
        recovery_mode: args.recovery_mode,
        max_wal_size: match args.max_wal_size.as_str() {
            "off" => None,
            size => Some(walden_bench::units::parse_size(size)?),
        },
        ..Config::default()
    };
    let crash_points = args.crash_at_io.map(CrashPoints::new);
    let storage: Arc<dyn Storage> = match &crash_points {
        Some(points) => Arc::new(CrashPointStorage(Arc::clone(points))),
        None => Arc::new(FsStorage),
    };
    let wal = if ControlFile::path(&args.dir).exists() {
        let control = ControlFile::read(&FsStorage, &args.dir)
            .with_context(|| format!("reading the control file of {}", args.dir.display()))?;
        refuse_contradictions(args, &control, config.segment_size)?;
        config.segment_size = control.segment_size.bytes();
        config.format = control.format;
        config.reservation = args
            .reservation
            .unwrap_or(ReservationKind::default_for(control.format));
        let (wal, report) = Wal::open_with_storage(&args.dir, config, storage)
            .with_context(|| format!("opening {}", args.dir.display()))?;
        eprintln!(
            "recovered {} records from {} to {} ({})",
            report.records, report.redo, report.end, report.stop
        );
        for skip in &report.skipped {
            let resumed = skip.resumed.map_or("nowhere".to_owned(), |r| r.to_string());
            eprintln!(
                "skipped invalid WAL from {} ({}), resumed at {resumed}, {} valid records dropped",
                skip.from, skip.reason, skip.records_dropped
            );
        }
        wal
    } else {
        Wal::create_with_storage(&args.dir, config, storage)
            .with_context(|| format!("creating {}", args.dir.display()))?
    };
    let acked = match &args.acked {
        Some(p) => Some(Mutex::new(self_checking::open_ack_file(p)?)),
        None => None,
    };
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let run = clock;
    let seed = args.seed.unwrap_or(clock);
    let threads = args.threads;
    let bar = ProgressBar::new(args.records);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} records {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let n = args.records / u64::from(threads)
                    + u64::from(u64::from(thread) < args.records % u64::from(threads));
                let (wal, acked, bar) = (&wal, &acked, &bar);
                s.spawn(move || -> Result<()> {
                    let mut rng =
                        Rng(seed ^ (u64::from(thread) + 1).wrapping_mul(0xA076_1D64_78BD_642F) | 1);
                    let mut payload = Vec::new();
                    for seq in 0..n {
                        let size = min + rng.next() % (max - min + 1);
                        let id = RecordId { run, thread, seq };
                        self_checking::encode(
                            id,
                            (size as usize).saturating_sub(self_checking::HEADER_LEN),
                            &mut payload,
                        );
                        let rec = if args.logical_message {
                            Record::logical_message(false, LOAD_PREFIX, &payload)
                        } else {
                            Record::new(LOAD_RMID, 0, payload.clone())
                        };
                        let end = wal.insert(&rec)?;
                        if args.flush_every > 0
                            && ((seq + 1) % args.flush_every == 0 || seq + 1 == n)
                        {
                            wal.flush(end)?;
                            if let Some(f) = acked {
                                let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
                                f.write_all(Ack { id, end }.line().as_bytes())?;
                                f.sync_data()?;
                            }
                        }
                        bar.inc(1);
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("an inserting thread panicked"))??;
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let stats = wal.stats();
    let (format, reservation) = (wal.config().format, wal.config().reservation);
    if let Some(points) = &crash_points {
        points.closing();
    }
    wal.close().context("closing the log")?;
    println!(
        "wrote {} records ({} bytes, {format}, {reservation} reservation) with {} threads in {:.2?}: {:.0} records/s, {} syncs, {} writes ({} ahead of the written point)",
        stats.records,
        stats.bytes,
        threads,
        elapsed,
        stats.records as f64 / elapsed.as_secs_f64().max(1e-9),
        stats.writer.syncs,
        stats.writer.writes,
        stats.writer.writes_ahead
    );
    println!(
        "checkpoints: {} by volume; segments: {} recycled, {} removed",
        stats.checkpoints_by_volume, stats.segments_recycled, stats.segments_removed
    );
    println!(
        "segments ({} prepared{}): {} found ready, {} created by the writer, {} prepared ahead",
        args.segment_prep,
        if args.direct_io {
            ", written with direct I/O"
        } else {
            ""
        },
        stats.segments_found_ready,
        stats.segments_created_on_write,
        stats.segments_prepared_ahead
    );
    if let Some(points) = &crash_points {
        println!("{}", points.summary());
    }
    Ok(())
}

/// Fails if `--format` or `--segment-size` (as `segment_size` bytes) was
/// given and is not what the existing log's control file says.
fn refuse_contradictions(args: &WriteArgs, control: &ControlFile, segment_size: u64) -> Result<()> {
    let dir = args.dir.display();
    if let Some(format) = args.format.filter(|&f| f != control.format) {
        bail!(
            "--format {format} contradicts the log in {dir}, which is in the {} format; \
             leave --format out to append to it",
            control.format
        );
    }
    if args.segment_size.is_some() && segment_size != control.segment_size.bytes() {
        bail!(
            "--segment-size {segment_size} bytes contradicts the log in {dir}, whose segments \
             are {} bytes; leave --segment-size out to append to it",
            control.segment_size.bytes()
        );
    }
    Ok(())
}

/// xorshift64*: reproducible sizes from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
