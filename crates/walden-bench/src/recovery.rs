//! `walden bench recovery`: how long an unclean open takes with a given
//! amount of WAL since the last checkpoint, and what automatic checkpoints
//! bound it to.
//!
//! A case writes `--wal-size` bytes of 8 KiB records (fdatasync, one flush
//! at the end), drops the log without closing it (as a crash would leave
//! it, with the page cache warm: a killed process, not a power cut), and
//! times:
//!
//! - **open (rewrite)**: [`Wal::open`], which reads the WAL from the redo
//!   point and, the log being unclean, writes it all back and syncs it
//!   (`segment/rewrite_after_failed_sync.rs`);
//! - **scan + fsync**: what PostgreSQL's `recovery_init_sync_method =
//!   fsync` would cost instead: the same read of the WAL from the redo
//!   point, then an `fdatasync` of every segment from the redo point's on;
//! - **scan + syncfs**: the same read, then one `syncfs` of the file system
//!   (`recovery_init_sync_method = syncfs`);
//! - **open at max_wal_size**: [`Wal::open`] of a log with exactly
//!   `--max-wal-size` of WAL since the redo point: the most an unclean open
//!   meets with [`Config::max_wal_size`] set (plus what one background
//!   round lets pass);
//! - **open, written with the limit**: [`Wal::open`] of a log written like
//!   the first with [`Config::max_wal_size`] set, where the automatic
//!   checkpoints left the WAL since the redo point wherever the last one
//!   fell.
//!
//! The two sync variants are measured, not offered: a sync cannot repair
//! pages a failed writeback dropped before the crash (docs/reliability.md).
//!
//! Then the clean start after an unclean shutdown, timed until a first new
//! record is durable, on two copies of one log closed half-way through a
//! segment (the redo point at its end: nothing to rewrite):
//!
//! - **restart: switch (today)**: the copy marked unclean in its control
//!   file (a crash right after the shutdown checkpoint): [`Wal::open`]
//!   writes a switch record, the rest of the segment as zero pages, syncs,
//!   and new records go to a fresh segment, which the preallocator must
//!   prepare (recovery removed the later ones); then
//!   [`Wal::insert_and_flush`];
//! - **restart: zero the rest**: the other way, which the engine does not
//!   offer, in bench code: zeros from the page after the end to the end of
//!   its segment and an `fdatasync`, then [`Wal::open`] of the copy left
//!   clean (no rewrite, no switch: it continues in that segment) and
//!   [`Wal::insert_and_flush`].

use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use walden::internals::{preview_recovery, ControlFile, PAGE_SIZE};
use walden::{
    Config, FsStorage, Lsn, ReadError, ReaderOptions, Record, RecoveryMode, SegmentSize,
    SyncMethod, Wal, WalReader,
};

use crate::error::BenchError;
use crate::units::parse_size_arg;

/// Arguments of `walden bench recovery`.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(after_help = "\
Writes about twice --wal-size plus --max-wal-size to disk; give --dir on a
disk with room (the default is a temporary directory). Not part of `walden
bench all`: its 1 GiB default writes for tens of seconds.

Examples:
  walden bench recovery --wal-size 1GB --max-wal-size 256MB
  walden bench recovery --wal-size 64MB --max-wal-size 16MB --segment-size 1MB")]
pub struct RecoveryArgs {
    /// WAL written since the last checkpoint.
    #[arg(long, default_value = "1GB", value_parser = parse_size_arg)]
    pub wal_size: u64,
    /// `max_wal_size` of the bounded case.
    #[arg(long, default_value = "256MB", value_parser = parse_size_arg)]
    pub max_wal_size: u64,
    /// Segment size of the logs.
    #[arg(long, default_value = "16MB", value_parser = parse_size_arg)]
    pub segment_size: u64,
    /// Directory for the logs (each case creates and removes its own).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Runs `walden bench recovery` and prints its table.
pub fn run(args: &RecoveryArgs) -> Result<(), BenchError> {
    let tmp = tempfile::tempdir_in(args.dir.as_deref().unwrap_or(&std::env::temp_dir()))
        .map_err(BenchError::io("creating the bench directory"))?;
    let unbounded = tmp.path().join("unbounded");
    let config = Config {
        segment_size: args.segment_size,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    };
    config.validate()?;
    let since = crash_after_writing(&unbounded, &config, args.wal_size)?;
    let (scanned, end) = timed(|| scan(&unbounded, since))?;
    let fsync = timed(|| fsync_segments(&unbounded, since, end, args.segment_size))?.0;
    let syncfs = timed(|| syncfs(&unbounded))?.0;
    let rewrite = timed(|| open(&unbounded))?.0;
    // The worst case under the policy: max_wal_size of WAL since the redo
    // point (a checkpoint comes at the first round past it).
    let limit = tmp.path().join("at-the-limit");
    let limit_since = crash_after_writing(&limit, &config, args.max_wal_size)?;
    let limit_end = timed(|| scan(&limit, limit_since))?.1;
    let limit_open = timed(|| open(&limit))?.0;
    // The policy at work: the same WAL written with max_wal_size set.
    let bounded = tmp.path().join("bounded");
    let bounded_config = Config {
        max_wal_size: Some(args.max_wal_size),
        ..config.clone()
    };
    bounded_config.validate()?;
    let bounded_since = crash_after_writing(&bounded, &bounded_config, args.wal_size)?;
    let bounded_end = timed(|| scan(&bounded, bounded_since))?.1;
    let bounded_open = timed(|| open(&bounded))?.0;
    let (switch, zero) = fresh_start(&tmp.path().join("restart"), &config)?;
    let mib = |lsn: Lsn, from: Lsn| (lsn.0 - from.0) as f64 / (1 << 20) as f64;
    println!(
        "unclean open, {} MiB segments, page cache warm (a killed process):",
        args.segment_size >> 20
    );
    let rows = [
        ("open (rewrite, today)", mib(end, since), rewrite),
        (
            "scan + fsync each segment",
            mib(end, since),
            scanned + fsync,
        ),
        ("scan + syncfs", mib(end, since), scanned + syncfs),
        (
            "open at max_wal_size",
            mib(limit_end, limit_since),
            limit_open,
        ),
        (
            "open, written with the limit",
            mib(bounded_end, bounded_since),
            bounded_open,
        ),
    ];
    for (case, wal, time) in rows {
        println!("  {case:<30} {wal:>8.1} MiB since the redo point  {time:>9.2?}");
    }
    println!("after an unclean shutdown half-way through a segment, to the first durable record:");
    println!("  {:<30} {switch:>9.2?}", "restart: switch (today)");
    println!("  {:<30} {zero:>9.2?}", "restart: zero the rest");
    println!(
        "  (scan alone {scanned:.2?}; max_wal_size = {} MiB; the last log was written \
         with it, {} MiB in all)",
        args.max_wal_size >> 20,
        args.wal_size >> 20
    );
    Ok(())
}

/// Creates a log in `dir`, writes `bytes` of WAL in 8 KiB records, flushes
/// it and drops the log unclosed; returns its redo point.
fn crash_after_writing(dir: &Path, config: &Config, bytes: u64) -> Result<Lsn, BenchError> {
    let wal = Wal::create(dir, config.clone()).map_err(wal_error("creating a log"))?;
    let record = Record::new(128, 0, vec![0x5a; 8000]);
    let start = wal.insert_position();
    let mut end = start;
    while end.0 - start.0 < bytes {
        end = wal.insert(&record).map_err(wal_error("inserting"))?;
    }
    wal.flush(end).map_err(wal_error("flushing"))?;
    drop(wal);
    let control = walden::internals::ControlFile::read(&walden::FsStorage, dir)
        .map_err(|e| wal_error("reading the control file")(e.into()))?;
    Ok(control.redo)
}

/// Times the two clean starts after an unclean shutdown on two copies of
/// one log in `dir`, closed half-way through its second segment: one
/// marked unclean (switch), one left clean (zero the rest). Returns
/// (switch, zero the rest).
fn fresh_start(dir: &Path, config: &Config) -> Result<(Duration, Duration), BenchError> {
    let seg = SegmentSize::new(config.segment_size)
        .map_err(|e| BenchError::from(walden::ConfigError::SegmentSize(e.0)))?;
    let (unclean, clean) = (dir.join("unclean"), dir.join("clean"));
    let record = Record::new(128, 0, vec![0x5a; 8000]);
    let wal = Wal::create(&clean, config.clone()).map_err(wal_error("creating a log"))?;
    let end = Lsn(seg.segment_start(2).0 + seg.bytes() / 2);
    while wal.insert_position() < end {
        wal.insert(&record).map_err(wal_error("inserting"))?;
    }
    wal.close().map_err(wal_error("closing"))?;
    // A crash right after the shutdown checkpoint: the same files, the
    // control file saying the log is open.
    copy_synced(&clean, &unclean)?;
    let control_error = |e: walden::ControlFileError| wal_error("control file")(e.into());
    let mut control = ControlFile::read(&FsStorage, &unclean).map_err(control_error)?;
    control.clean_shutdown = false;
    control.write(&FsStorage, &unclean).map_err(control_error)?;

    let reopen = |dir: &Path| {
        let (wal, _) = Wal::open(dir, config.clone()).map_err(wal_error("opening"))?;
        wal.insert_and_flush(&record)
            .map_err(wal_error("inserting"))?;
        Ok(wal)
    };
    let (switch, wal) = timed(|| reopen(&unclean))?;
    wal.close().map_err(wal_error("closing"))?;
    let (zero, wal) = timed(|| {
        // The engine has no such mode: zeros from the page after the end
        // to the end of the segment, synced, then a clean open, which
        // continues in that segment.
        let end = preview_recovery(Arc::new(FsStorage), &clean, RecoveryMode::default())
            .map_err(wal_error("reading"))?
            .end;
        let path = clean.join(seg.file_name(1, seg.segno(end)));
        let what = format!("zeroing {}", path.display());
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(BenchError::io(what.clone()))?;
        let zeros = vec![0u8; 1 << 20];
        let mut at = seg.offset(end).next_multiple_of(PAGE_SIZE);
        while at < seg.bytes() {
            let n = (seg.bytes() - at).min(zeros.len() as u64);
            file.write_all_at(&zeros[..n as usize], at)
                .map_err(BenchError::io(what.clone()))?;
            at += n;
        }
        file.sync_data().map_err(BenchError::io(what))?;
        reopen(&clean)
    })?;
    wal.close().map_err(wal_error("closing"))?;
    Ok((switch, zero))
}

/// Copies the files of `from` into a new directory `to`, synced, so that
/// no writeback of the copy lands in a timed sync.
fn copy_synced(from: &Path, to: &Path) -> Result<(), BenchError> {
    let what = format!("copying {} to {}", from.display(), to.display());
    std::fs::create_dir(to).map_err(BenchError::io(what.clone()))?;
    for entry in std::fs::read_dir(from).map_err(BenchError::io(what.clone()))? {
        let entry = entry.map_err(BenchError::io(what.clone()))?;
        let target = to.join(entry.file_name());
        std::fs::copy(entry.path(), &target)
            .and_then(|_| std::fs::File::open(&target)?.sync_all())
            .map_err(BenchError::io(what.clone()))?;
    }
    Ok(())
}

/// Reads every record from `from` to the end of WAL; returns the end.
fn scan(dir: &Path, from: Lsn) -> Result<Lsn, BenchError> {
    let opts = ReaderOptions {
        start: Some(from),
        ..ReaderOptions::default()
    };
    let mut reader = WalReader::open(dir, opts).map_err(|e| wal_error("reading")(e.into()))?;
    loop {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) | Err(ReadError::EndOfWal { .. }) => return Ok(reader.next_lsn()),
            Err(e) => return Err(wal_error("reading")(e.into())),
        }
    }
}

/// `fdatasync` of every segment file from `from`'s to `to`'s.
fn fsync_segments(dir: &Path, from: Lsn, to: Lsn, segment_size: u64) -> Result<(), BenchError> {
    for segno in from.0 / segment_size..=to.0 / segment_size {
        let name = walden::SegmentSize::new(segment_size)
            .map_err(|e| BenchError::from(walden::ConfigError::SegmentSize(e.0)))?
            .file_name(1, segno);
        let path = dir.join(name);
        std::fs::File::open(&path)
            .and_then(|f| f.sync_data())
            .map_err(BenchError::io(format!("syncing {}", path.display())))?;
    }
    Ok(())
}

/// `syncfs` of the file system holding `dir`.
fn syncfs(dir: &Path) -> Result<(), BenchError> {
    let what = format!("syncfs of {}", dir.display());
    let d = std::fs::File::open(dir).map_err(BenchError::io(what.clone()))?;
    // SAFETY: `d` is an open file descriptor for the duration of the call.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(BenchError::io(what)(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Opens (recovers) the log in `dir` and drops it.
fn open(dir: &Path) -> Result<(), BenchError> {
    Wal::open(dir, Config::default()).map_err(wal_error("opening"))?;
    Ok(())
}

/// The time `f` took, and its result.
fn timed<T>(f: impl FnOnce() -> Result<T, BenchError>) -> Result<(Duration, T), BenchError> {
    let t = Instant::now();
    let out = f()?;
    Ok((t.elapsed(), out))
}

/// A [`BenchError::Wal`] while doing `what`.
fn wal_error(what: &'static str) -> impl FnOnce(walden::Error) -> BenchError {
    move |source| BenchError::Wal { what, source }
}
