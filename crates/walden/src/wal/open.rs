//! Creating a log, and opening one: recovery to the end of WAL.
//!
//! PostgreSQL: `BootStrapXLOG` (create), `StartupXLOG` (open). Recovery
//! reads from the control file's redo point to the first invalid record;
//! that is the end of WAL and the next record goes there, chained to the
//! last valid one, so the log stays one readable sequence across crashes.
//! After an unclean shutdown that next record is an `XLOG_SWITCH`, and the
//! segments after the end are removed: new records start in a fresh
//! segment, never over bytes a crashed incarnation may have left.
//! A multi-page record cut off by the crash is handled as PostgreSQL 15
//! does: new WAL starts on the page where its continuation is missing, that
//! page is flagged `XLP_FIRST_IS_OVERWRITE_CONTRECORD`, and its first record
//! is an `XLOG_OVERWRITE_CONTRECORD` naming the abandoned record.
//! A batch ([`crate::Wal::insert_batch`]) whose marker was read but not
//! every one of its records is dropped whole: the log continues at its
//! marker, and its bytes are erased on disk first, so that no record of it
//! can be chained to again by whatever is written there next.
//! What recovery does where the WAL stops being valid depends on
//! [`Config::recovery_mode`](crate::Config::recovery_mode)
//! (`wal/recovery_mode.rs`); the default is PostgreSQL's.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::checkpoint_policy::{CheckpointPolicy, Phase};
use super::failed_create::Found;
use super::recovery_mode::{self, read_page_prefix, SkippedWal};
use super::retention::Retention;
use super::{unix_time, RedoPoint, Shared, Wal};
use crate::buffer::PageIdentity;
use crate::config::{Config, ConfigError, RecoveryMode};
use crate::error::Error;
use crate::format::message::{OverwriteContrecord, POSTGRES_EPOCH_UNIX_SECS, USECS_PER_SEC};
use crate::format::page::XLP_FIRST_IS_OVERWRITE_CONTRECORD;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD};
use crate::insert::{InsertPath, StartPoint};
use crate::log_metrics::LogMetrics;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use crate::record::Record;
use crate::segment::{
    check_direct_io, check_no_hole, check_segment_sizes, create_dir_durably, erase_durably,
    lock_dir, rewrite_durably, ControlFile, FsStorage, SegmentError, SegmentFiles, Storage,
    StorageLock,
};
use crate::sync::{AsyncWaiters, AtomicU64};
use crate::write::background::{BackgroundWriter, Wakeup};
use crate::write::SegmentSupply;

/// First segment of a new log (initdb starts at 1, as pg_waldump expects).
const FIRST_SEGMENT: u64 = 1;
/// Timeline of a new log.
const FIRST_TIMELINE: u32 = 1;

/// What [`Wal::open`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Where the scan started: the last checkpoint's redo point.
    pub redo: Lsn,
    /// The last checkpoint record.
    pub checkpoint: Lsn,
    /// End of valid WAL: where the next record goes.
    pub end: Lsn,
    /// Start of the last valid record, if the scan found any.
    pub last_record: Option<Lsn>,
    /// Valid records scanned from the redo point.
    pub records: u64,
    /// Why the scan stopped (the end-of-WAL reason, naming its LSN).
    pub stop: String,
    /// True if the log had been closed cleanly.
    pub clean_shutdown: bool,
    /// A record cut off by a crash that was abandoned with an
    /// `XLOG_OVERWRITE_CONTRECORD` record, if any.
    pub overwritten: Option<Lsn>,
    /// A batch ([`crate::Wal::insert_batch`]) the crash left incomplete,
    /// if any: the LSN of its marker, where the log now continues. None of
    /// its records is kept (they are not counted in `records`), and its
    /// bytes were erased on disk.
    pub dropped_batch: Option<Lsn>,
    /// The invalid WAL [`RecoveryMode::SkipAnyCorruptedRecords`] skipped,
    /// in LSN order (always empty in the other modes). When one was
    /// skipped and reading resumed, the log's redo point is now the last
    /// place it resumed.
    pub skipped: Vec<SkippedWal>,
}

/// Where a log's next record goes, and what the ring must start with.
struct Tail {
    next_pos: u64,
    prev: Lsn,
    /// Start of the page holding the next record.
    page: Lsn,
    /// What that page starts with.
    first_page: FirstPage,
}

impl Tail {
    /// End of the WAL on disk the log continues from: the start of the
    /// tail page, plus the bytes of it that are kept.
    fn durable_end(&self) -> Lsn {
        match &self.first_page {
            FirstPage::Existing(bytes) => Lsn(self.page.0 + bytes.len() as u64),
            _ => self.page,
        }
    }

    /// The last segment holding WAL the log continues from: the tail's, or
    /// the one before if the tail is at the very start of its segment (that
    /// segment holds nothing of the log, at best a crashed incarnation's
    /// records at the LSNs new ones would take).
    fn last_written_segment(&self, seg: SegmentSize) -> u64 {
        let segno = seg.segno(self.page);
        let untouched =
            matches!(self.first_page, FirstPage::Fresh) && self.page == seg.segment_start(segno);
        segno - u64::from(untouched && segno > 0)
    }
}

/// The page holding the end of WAL, as the ring must start with it.
enum FirstPage {
    /// Nothing on it yet: initialised when first needed.
    Fresh,
    /// Records before the end: these bytes from disk, the rest zeros.
    Existing(Vec<u8>),
    /// A fresh page flagged `XLP_FIRST_IS_OVERWRITE_CONTRECORD`.
    Overwrite,
}

impl Wal {
    /// Creates a new log in `dir` (created if missing) and returns it open.
    /// Fails if `dir` already holds a log, or another writer has `dir`
    /// locked.
    ///
    /// A create that fails leaves the directory as it found it: a
    /// directory it made is removed, with every parent it made, and in one
    /// that was there the files it made (control file, segments, lock
    /// file) are removed and nothing else is touched, so a retry, with
    /// this or another configuration, starts from the same state. A create
    /// refused because `dir` holds a log or is locked removes nothing of
    /// them. (A storage without [`Storage::remove_dir`] keeps the
    /// directories it made, empty. A crash or power cut during the create
    /// undoes nothing: what it had made stays, and a retry may find a
    /// log, or a control file without one, to remove first.)
    pub fn create(dir: impl AsRef<Path>, config: Config) -> Result<Wal, Error> {
        Wal::create_with_storage(dir, config, Arc::new(FsStorage))
    }

    /// [`Wal::create`] over another [`Storage`] (fault injection in tests).
    pub fn create_with_storage(
        dir: impl AsRef<Path>,
        config: Config,
        storage: Arc<dyn Storage>,
    ) -> Result<Wal, Error> {
        Wal::create_at_segment(dir, config, storage, FIRST_SEGMENT)
    }

    /// [`Wal::create_with_storage`] with the first record in segment
    /// `first_segment` rather than 1 (PostgreSQL: `pg_resetwal -l`): a log
    /// that continues another's numbering, or one placed at high LSNs (past
    /// 4 GiB, or 2^16 segments on) for tests. Fails if the segment is 0 or
    /// its LSN would overflow.
    pub fn create_at_segment(
        dir: impl AsRef<Path>,
        config: Config,
        storage: Arc<dyn Storage>,
        first_segment: u64,
    ) -> Result<Wal, Error> {
        config.validate()?;
        let seg = config.segment()?;
        if first_segment == 0 || first_segment.checked_mul(2 * seg.bytes()).is_none() {
            return Err(Error::FirstSegment(first_segment));
        }
        let dir = dir.as_ref();
        let found = Found::note(&*storage, dir)?;
        let locked = create_dir_durably(&*storage, dir)
            .map_err(SegmentError::from)
            .map_err(Error::from)
            .and_then(|()| Ok(lock_dir(&*storage, dir)?));
        let lock: Arc<dyn StorageLock> = match locked {
            Ok(lock) => lock.into(),
            Err(e) => {
                found.restore(&*storage, false);
                return Err(e);
            }
        };
        let files = SegmentFiles::new(storage.clone(), dir, seg, FIRST_TIMELINE);
        let created = match files.list() {
            Err(e) => Err(e.into()),
            Ok(segments)
                if !segments.is_empty()
                    || storage.exists(&ControlFile::path(dir)).unwrap_or(true) =>
            {
                Err(Error::AlreadyExists(dir.to_path_buf()))
            }
            Ok(_) => Wal::create_locked(config, seg, storage.clone(), files, first_segment, &lock),
        };
        // Dropped by now if it failed: its threads have stopped, and the
        // lock is this one alone.
        if created.is_err() {
            found.restore(&*storage, true);
        }
        created
    }

    /// The rest of [`Wal::create_at_segment`], in the directory `files`
    /// names, which holds no log and whose lock is `lock`.
    fn create_locked(
        config: Config,
        seg: SegmentSize,
        storage: Arc<dyn Storage>,
        files: SegmentFiles,
        first_segment: u64,
        lock: &Arc<dyn StorageLock>,
    ) -> Result<Wal, Error> {
        let dir = files.dir().to_path_buf();
        if config.direct_io {
            check_direct_io(&*storage, &dir)?;
        }
        let mut control = ControlFile::new(config.format, seg, FIRST_TIMELINE);
        let start = seg.segment_start(first_segment);
        control.redo = Lsn(start.0 + seg.page_header_size(start));
        control.write(&*storage, &dir)?;
        let tail = Tail {
            next_pos: seg.lsn_to_pos(start).unwrap_or(0),
            prev: Lsn::INVALID,
            page: start,
            first_page: FirstPage::Fresh,
        };
        let wal = Wal::start(config, seg, storage, files, control, tail, lock.clone())?;
        // The first record, as initdb writes it: a shutdown checkpoint.
        wal.shared.checkpoint(true)?;
        wal.shared.mark_open()?;
        tracing::info!(
            dir = %wal.shared.dir.display(),
            format = %wal.shared.config.format,
            segment_size = seg.bytes(),
            "created log"
        );
        Ok(wal)
    }

    /// Opens the log in `dir`, recovering to the end of valid WAL. A format
    /// or segment size left unset in `config` (at its default, with its
    /// [`Config::adopt_defaults`] flag set, as in `Config::default()`) is
    /// the log's own ([`Config::adopting`]); one set, through
    /// [`Config::builder`] even to the default, or to another value, must
    /// match it, or the open fails with [`ConfigError::Mismatch`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use walden::{Config, Wal, WalFormat};
    /// let small = Config { segment_size: 1 << 20, format: WalFormat::SelfLsn,
    ///     reservation: walden::ReservationKind::Unlinked, ..Config::default() };
    /// Wal::create(dir.path(), small).unwrap().close().unwrap();
    /// // No need to repeat the segment size and format:
    /// let (wal, report) = Wal::open(dir.path(), Config::default()).unwrap();
    /// assert_eq!(wal.config().segment_size, 1 << 20);
    /// assert_eq!(wal.config().format, WalFormat::SelfLsn);
    /// assert!(report.clean_shutdown);
    /// ```
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<(Wal, RecoveryReport), Error> {
        Wal::open_with_storage(dir, config, Arc::new(FsStorage))
    }

    /// [`Wal::open`] over another [`Storage`].
    pub fn open_with_storage(
        dir: impl AsRef<Path>,
        config: Config,
        storage: Arc<dyn Storage>,
    ) -> Result<(Wal, RecoveryReport), Error> {
        let dir = dir.as_ref();
        // The lock is taken before anything is read, but a missing log is
        // reported as a missing control file rather than as a lock failure.
        let lock = lock_dir(&*storage, dir);
        let control = ControlFile::read(&*storage, dir)?;
        let lock = lock?;
        let seg = control.segment_size;
        let config = config.adopting(control.format, seg.bytes());
        config.validate()?;
        if seg.bytes() != config.segment_size {
            return Err(ConfigError::Mismatch {
                field: "segment_size",
                on_disk: seg.bytes().to_string(),
                configured: config.segment_size.to_string(),
            }
            .into());
        }
        if control.format != config.format {
            return Err(ConfigError::Mismatch {
                field: "format",
                on_disk: format!("{:?}", control.format),
                configured: format!("{:?}", config.format),
            }
            .into());
        }
        if config.direct_io {
            check_direct_io(&*storage, dir)?;
        }
        let files = SegmentFiles::new(storage.clone(), dir, seg, control.timeline);
        files.remove_temp_files()?;
        let (report, tail, overwrite, dropped, swallowed) =
            read_and_check(&files, &control, config.recovery_mode)?;
        let skipped = !report.skipped.is_empty();
        if let Some((from, to)) = dropped {
            erase_durably(&files, from, to)?;
        }
        if !control.clean_shutdown {
            // Recovery read the WAL up to the tail; make sure it is on disk
            // (what it kept of it: not what it skipped).
            let mut from = control.redo.page_start();
            for skip in &report.skipped {
                if let Some(resumed) = skip.resumed {
                    rewrite_recovered(&files, from, skip.from.page_start(), &swallowed)?;
                    from = resumed.page_start();
                }
            }
            rewrite_recovered(&files, from, tail.durable_end(), &swallowed)?;
        }
        // After an unclean shutdown, in every format, new records start in a
        // segment no earlier incarnation wrote (docs/reliability.md).
        // So too after skipping invalid WAL, past which the log may have
        // held records it did not keep, and where a cleanly closed log does
        // not read to its shutdown checkpoint (its last record): recovery
        // stopped at damage, past which lies the history before it.
        let stopped_at_damage =
            control.clean_shutdown && report.last_record != Some(control.checkpoint);
        let fresh_segment = !control.clean_shutdown || skipped || stopped_at_damage;
        if fresh_segment {
            discard_segments_after(&files, tail.last_written_segment(seg))?;
        }
        let wal = Wal::start(config, seg, storage, files, control, tail, lock.into())?;
        if let Some((aborted, _)) = overwrite {
            let body = OverwriteContrecord {
                overwritten_lsn: aborted,
                overwrite_time: pg_now(unix_time()),
            }
            .encode()
            .to_vec();
            wal.insert_and_flush(&Record::new(RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD, body))?;
        }
        if fresh_segment {
            // A record written before the crash, past the end recovery
            // found, may lie at the very LSN a new record would take: no
            // format can tell it from a current one if a torn write exposes
            // it (without prev-links nothing differs; with them, the
            // predecessor may start where the old one did). So new records
            // start in a segment no earlier incarnation wrote, after a
            // durable switch; stale bytes after the switch record are never
            // read, since a reader goes to the next segment after it.
            if let Some(span) = wal.shared.insert.switch()? {
                wal.flush(span.end)?;
            }
        }
        if let Some(resumed) = report.skipped.iter().rev().find_map(|s| s.resumed) {
            // Later opens start past the skipped WAL, in any mode.
            wal.shared.checkpoint_at(RedoPoint::Resumed(resumed))?;
        }
        wal.shared.mark_open()?;
        tracing::info!(
            dir = %wal.shared.dir.display(),
            redo = %report.redo,
            skipped = report.skipped.len(),
            end = %report.end,
            records = report.records,
            clean_shutdown = report.clean_shutdown,
            overwritten = ?report.overwritten,
            dropped_batch = ?report.dropped_batch,
            stop = %report.stop,
            "recovered log"
        );
        Ok((wal, report))
    }

    fn start(
        config: Config,
        seg: SegmentSize,
        storage: Arc<dyn Storage>,
        files: SegmentFiles,
        control: ControlFile,
        tail: Tail,
        lock: Arc<dyn StorageLock>,
    ) -> Result<Wal, Error> {
        let ring = InsertPath::ring(
            &config,
            seg,
            PageIdentity {
                timeline: control.timeline,
                system_id: control.system_identifier,
                format: control.format,
            },
        );
        let page_end = Lsn(tail.page.0 + PAGE_SIZE);
        // SAFETY (all three): the ring is not shared yet.
        let (initialized_upto, written) = match &tail.first_page {
            FirstPage::Fresh => (tail.page, tail.page),
            FirstPage::Existing(bytes) => {
                unsafe { ring.load_page(tail.page, bytes) };
                (page_end, Lsn(tail.page.0 + bytes.len() as u64))
            }
            FirstPage::Overwrite => {
                unsafe { ring.init_page(tail.page, XLP_FIRST_IS_OVERWRITE_CONTRECORD) };
                (page_end, tail.page)
            }
        };
        let dir = files.dir().to_path_buf();
        let metrics = LogMetrics::new(
            &config
                .metrics_label
                .clone()
                .unwrap_or_else(|| dir.display().to_string()),
        );
        let start = StartPoint {
            next_pos: tail.next_pos,
            prev: tail.prev,
            initialized_upto,
            written,
        };
        let policy = CheckpointPolicy::new(&config, control.redo, tail.durable_end());
        let retention = Retention::new(&config, std::time::Instant::now());
        let background = Arc::new(Wakeup::new(
            config.writer_delay.map(|_| config.writer_flush_after),
            written,
        ));
        let mut insert = InsertPath::new(
            &config,
            seg,
            ring,
            supply(&config, files),
            start,
            background.clone(),
        );
        insert.writer.label_metrics(metrics.clone());
        let shared = Arc::new(Shared {
            insert,
            background,
            durable: AsyncWaiters::new(),
            control: Mutex::new(control),
            storage,
            dir,
            recycled: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            retained: AtomicU64::new(0),
            policy,
            retention,
            metrics,
            config,
        });
        let prealloc = SegmentSupply::start_preallocator(&shared, |s| s.insert.supply_and_writer())
            .map_err(|source| Error::Thread {
                name: "segment preallocator",
                source,
            })?;
        shared
            .insert
            .supply_and_writer()
            .0
            .prepare_for_open(seg.segno(written));
        let writer = match shared.config.writer_delay {
            Some(delay) => Some(
                BackgroundWriter::start(
                    Arc::downgrade(&shared),
                    shared.background.clone(),
                    delay,
                    Shared::background_round,
                    Shared::stream_round,
                )
                .map_err(|source| Error::Thread {
                    name: "background writer",
                    source,
                })?,
            ),
            None => None,
        };
        Ok(Wal {
            shared,
            _prealloc: prealloc,
            _writer: writer,
            closed: false,
            _lock: lock,
        })
    }
}

/// Makes the WAL recovery read from `from` up to `to` durable: written back
/// as found and synced ([`rewrite_durably`]), except what a switch record
/// swallowed (`swallowed`: from its end to its segment's, in LSN order),
/// which is zeroed and synced ([`erase_durably`]), as the writer wrote it.
/// A crash may have kept a switch record but not its zero pages; the file
/// then holds, after the switch, bytes of what it was before it was
/// recycled, which a later recycling to a name with that generation's
/// 16-bit id (`CompactWalId`) would let a torn write expose as valid
/// records ([`crate::segment::may_recycle`] sees only the current name).
fn rewrite_recovered(
    files: &SegmentFiles,
    from: Lsn,
    to: Lsn,
    swallowed: &[(Lsn, Lsn)],
) -> Result<(), Error> {
    let mut at = from;
    for &(start, end) in swallowed
        .iter()
        .filter(|&&(start, end)| end > from && start < to)
    {
        rewrite_durably(files, at, start.max(at))?;
        erase_durably(files, start.max(at), end)?;
        at = end;
    }
    rewrite_durably(files, at, to)?;
    Ok(())
}

/// Removes every segment file after segment `last`. After a crash, such a
/// file holds at best bytes a previous incarnation of the log wrote past the
/// end recovery found: writing new records over them would let a torn
/// write expose one of those records at its own LSN, which a format
/// without prev-links cannot detect. (Recycled files go too; the
/// preallocator makes new ones.)
fn discard_segments_after(files: &SegmentFiles, last: u64) -> Result<(), Error> {
    for segno in files.list()?.into_iter().filter(|&segno| segno > last) {
        files.remove(segno)?;
    }
    Ok(())
}

/// PostgreSQL's `TimestampTz` (µs since 2000-01-01) for a Unix time in seconds.
fn pg_now(unix_secs: i64) -> i64 {
    (unix_secs - POSTGRES_EPOCH_UNIX_SECS) * USECS_PER_SEC
}

/// What recovery found: the report, where the log goes on, the record cut
/// off by the crash (its LSN and the page its continuation is missing
/// from), the range of a dropped batch to erase, and what each switch
/// record read swallowed.
type Scanned = (
    RecoveryReport,
    Tail,
    Option<(Lsn, Lsn)>,
    Option<(Lsn, Lsn)>,
    Vec<(Lsn, Lsn)>,
);

/// What [`Wal::open`] of the log in `dir` with `mode` would find, without
/// opening it: recovery's reading and checks alone, writing nothing and
/// taking no lock (`walden verify --recovery-mode`). An error is the one
/// the open would fail with ([`crate::RecoveryRefused`], a damaged
/// segment, ...); the report is what it would keep, skip and drop.
pub fn preview_recovery(
    storage: Arc<dyn Storage>,
    dir: &Path,
    mode: RecoveryMode,
) -> Result<RecoveryReport, Error> {
    let control = ControlFile::read(&*storage, dir)?;
    let files = SegmentFiles::new(storage, dir, control.segment_size, control.timeline);
    read_and_check(&files, &control, mode).map(|(report, ..)| report)
}

/// Recovery's reading of the log under `mode`, and its checks of the
/// segment files, writing nothing: what [`Wal::open`] finds before it
/// changes anything.
fn read_and_check(
    files: &SegmentFiles,
    control: &ControlFile,
    mode: RecoveryMode,
) -> Result<Scanned, Error> {
    let seg = control.segment_size;
    let skipping = mode == RecoveryMode::SkipAnyCorruptedRecords;
    if !skipping {
        check_segment_sizes(files, seg.segno(control.redo))?;
    }
    let scanned = scan(files, control, mode)?;
    let report = &scanned.0;
    // Skipping reads past short and missing segments; those after the end
    // of what it kept are discarded by the open.
    if skipping {
        check_segment_sizes(files, seg.segno(report.end))?;
    }
    if report.skipped.is_empty() {
        check_no_hole(files, report.end, control.system_identifier)?;
    }
    Ok(scanned)
}

/// Reads from the redo point to the end of WAL under `mode`. A batch
/// whose records are not all there is dropped: the end of WAL becomes its
/// marker.
fn scan(files: &SegmentFiles, control: &ControlFile, mode: RecoveryMode) -> Result<Scanned, Error> {
    let seg = control.segment_size;
    let scanned = recovery_mode::read_to_end(files, control, mode)?;
    recovery_mode::check(mode, files, control, &scanned)?;
    let recovery_mode::Scan {
        reader,
        mut records,
        open_batch,
        mut stop,
        skipped,
        swallowed,
        ..
    } = scanned;
    let mut last_good = reader.last_good();
    let mut overwrite = reader.aborted_contrecord();
    let mut next = match overwrite {
        Some((_, missing_page)) => missing_page,
        None => reader.next_lsn(),
    };
    let dropped = open_batch.map(|b| {
        // The records after the marker, and a record cut off among them,
        // go with the batch.
        stop = format!("{stop}; dropped the incomplete batch at {}", b.marker);
        records = b.records_before;
        last_good = b.before;
        overwrite = None;
        next = b.marker;
        (b.marker, b.end.max(reader.next_lsn()))
    });
    let prev = last_good.unwrap_or(Lsn::INVALID);
    let page = next.page_start();
    let first_page = if overwrite.is_some() {
        FirstPage::Overwrite
    } else if next.page_offset() <= seg.page_header_size(page) {
        FirstPage::Fresh
    } else {
        FirstPage::Existing(read_page_prefix(files, page, next)?)
    };
    let end = match first_page {
        FirstPage::Existing(_) => next,
        _ => Lsn(page.0 + seg.page_header_size(page)),
    };
    let tail = Tail {
        next_pos: seg.lsn_to_pos(end).unwrap_or(0),
        prev,
        page,
        first_page,
    };
    let report = RecoveryReport {
        redo: control.redo,
        checkpoint: control.checkpoint,
        end,
        last_record: last_good,
        records,
        stop,
        clean_shutdown: control.clean_shutdown,
        overwritten: overwrite.map(|(aborted, _)| aborted),
        dropped_batch: dropped.map(|(marker, _)| marker),
        skipped,
    };
    Ok((report, tail, overwrite, dropped, swallowed))
}

impl Shared {
    /// Marks the log open (not cleanly shut down) in the control file;
    /// automatic checkpoints may run from now on.
    fn mark_open(&self) -> Result<(), Error> {
        let mut control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        control.clean_shutdown = false;
        control.write(&*self.storage, &self.dir)?;
        drop(control);
        self.policy.serial().phase = Phase::Open;
        Ok(())
    }
}

/// The segment supply `config` asks for over `files`.
fn supply(config: &Config, files: SegmentFiles) -> SegmentSupply {
    SegmentSupply::new(files, config.prepare_for(), config.segments_ahead as u64)
}
