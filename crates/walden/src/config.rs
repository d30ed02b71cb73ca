//! [`Config`]: every knob of a [`crate::Wal`], validated as a whole.

use std::time::Duration;

use crate::buffer::{Eviction, PageInitKind, PageZeroing, SwitchEviction};
use crate::format::WalFormat;
use crate::lsn::{SegmentSize, DEFAULT_SEGMENT_SIZE, PAGE_SIZE};
use crate::segment::{PrepareFor, SegmentPrep};
use crate::write::SyncMethod;

mod adopt_defaults;
mod builder;
mod recovery_mode;
mod reservation;
mod slot_choice;

pub use adopt_defaults::AdoptDefaults;
pub use builder::ConfigBuilder;
pub use recovery_mode::{RecoveryMode, RecoveryRefused};
pub use reservation::{
    link_table_capacity_for, link_table_capacity_serves, ReservationKind, LINK_TABLE_MIN_CAPACITY,
};
pub use slot_choice::{SlotChoice, MAX_ATTEMPTS};

/// Most insertion slots a log may have.
pub const MAX_INSERT_SLOTS: usize = 1024;
/// Fewest buffer pages a log may have.
pub const MIN_BUFFER_PAGES: u64 = 4;
/// Most buffer memory a log may have (16 GiB).
pub const MAX_BUFFER_BYTES: u64 = 16 << 30;
/// Most segments a log may keep ready ahead of its insert position.
pub const MAX_SEGMENTS_AHEAD: usize = 1024;
/// Shortest and longest background-writer delay (PostgreSQL's bounds of
/// `wal_writer_delay`).
pub const WRITER_DELAY_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(10);

/// How a [`crate::Wal`] is built. `Config::default()` is PostgreSQL's
/// configuration: 16 MiB segments and buffers, 8 insertion slots,
/// spinlock reservation, `fdatasync`, a background writer every 200 ms or
/// 1 MiB, synchronous commit. [`Config::builder`] sets only the fields it
/// names and validates the whole; a struct literal with `..Config::default()`
/// works too.
///
/// ```
/// use walden::{Config, SyncMethod};
/// let config = Config { segment_size: 1 << 20, sync_method: SyncMethod::None, ..Config::default() };
/// assert!(config.validate().is_ok());
/// let bad = Config { insert_slots: 0, ..Config::default() };
/// assert_eq!(bad.validate().unwrap_err().to_string(),
///            "insert_slots = 0: must be between 1 and 1024");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
// A partial document takes the other fields from `Config::default()`.
#[cfg_attr(feature = "serde", serde(default))]
pub struct Config {
    /// On-disk record format. Fixed when the log is created; at open, the
    /// default is the log's unless [`Config::adopt_defaults`] says not.
    pub format: WalFormat,
    /// Segment file size in bytes: a power of two from 1 MiB to 1 GiB.
    /// Fixed when the log is created; at open, the default is the log's
    /// unless [`Config::adopt_defaults`] says not.
    pub segment_size: u64,
    /// Which of `format`, `segment_size` and `reservation`, left at their
    /// defaults, [`crate::Wal::open`] takes from the log
    /// ([`Config::adopting`]): all of them unless the
    /// [`ConfigBuilder`] set them (or this field says otherwise).
    pub adopt_defaults: AdoptDefaults,
    /// Size of the shared buffer ring in bytes (a multiple of 8 KiB, at
    /// least 4 pages) (PostgreSQL: `wal_buffers`).
    pub buffers: u64,
    /// Number of insertion slots, 1..=1024 (PostgreSQL: `NUM_XLOGINSERT_LOCKS`).
    pub insert_slots: usize,
    /// How a thread picks its insertion slot.
    pub slot_choice: SlotChoice,
    /// How space is reserved. It must suit the format: `Postgres15` needs a
    /// design that keeps prev-links (`Spinlock`, `PrevLinkTable`,
    /// `PrevLinkInBuffer`); `SelfLsn` and `CompactWalId` take `Unlinked`.
    /// The default, `Spinlock`, measured fastest of the designs that keep
    /// prev-links on the 2-core test machine (docs/reservation.md).
    pub reservation: ReservationKind,
    /// Entries of the `PrevLinkTable` table: a power of two, at least 8 and
    /// at least twice `insert_slots` (every reserver holds a slot, and the
    /// table holds a link per reserver plus one). `None`: twice
    /// `insert_slots` rounded up to a power of two, at least 16.
    pub prev_link_table_capacity: Option<usize>,
    /// How buffer pages are initialised.
    pub page_init: PageInitKind,
    /// What initialising a buffer page writes besides its header:
    /// [`PageZeroing::HeaderOnly`] (the default) leaves the slot's old
    /// bytes for the inserters to overwrite; [`PageZeroing::WholePage`]
    /// zeroes the page first, as PostgreSQL does (and as Walden did before
    /// header-only initialisation), to measure against. Both write the same
    /// log. [`ReservationKind::PrevLinkInBuffer`] zeroes whole pages
    /// whatever is set here ([`Config::page_zeroing_in_effect`]). See
    /// docs/buffers.md, "No page zeroed twice".
    pub page_zeroing: PageZeroing,
    /// How much is written when a buffer page must be freed.
    pub eviction: Eviction,
    /// With [`Eviction::Batch`], the most bytes an eviction writes beyond
    /// the page it must free (a multiple of 8 KiB, at least one page).
    pub eviction_chunk: u64,
    /// With [`Eviction::Batch`], how far the switch record's evictions
    /// write: everything it has filled ([`SwitchEviction::Whole`], the
    /// default) or at most `eviction_chunk` beyond the page to free, as
    /// every eviction (seed 002.6).
    pub switch_eviction: SwitchEviction,
    /// How often the background writer wakes to write and flush every
    /// finished page, 1 ms to 10 s; `None`: no background writer
    /// (PostgreSQL: `wal_writer_delay`, the walwriter).
    pub writer_delay: Option<Duration>,
    /// Bytes of new WAL after which inserters wake the background writer
    /// before its delay is up, at least 8 KiB (PostgreSQL:
    /// `wal_writer_flush_after`).
    pub writer_flush_after: u64,
    /// The background writer is handed the write lock ahead of evictions
    /// and flush calls waiting for it, at the next release (the default);
    /// `false`: it waits as any of them and may be passed by every eviction
    /// that comes back for the lock (seed 002: "the walwriter never
    /// succeeds taking the lwlock"). [`crate::WriterStats`] counts the bytes
    /// each wrote and the acquisitions that passed it.
    pub write_lock_handoff: bool,
    /// A thread that finds the write lock held (an inserter writing its
    /// record through, an eviction, a flush leader) yields the CPU while it
    /// stays held, for about a millisecond, before it sleeps: one thread at
    /// a time, the others sleep at once (the default). It then takes the
    /// lock at the release without a wake-up, which on a VM whose other
    /// vCPU idles costs tens of microseconds. `false`: every waiter sleeps
    /// at once, for machines where a spinning thread takes a core others
    /// need. See docs/io.md.
    pub write_lock_spin: bool,
    /// A flusher waiting for a round that syncs to cover its commit (a
    /// follower of group commit) yields the CPU while it waits, for about
    /// a millisecond, before it sleeps (the default), so that it sees the
    /// round's end without a wake-up; `false`: it sleeps at once. A
    /// flusher waiting for a round that only writes (`SyncMethod::None`)
    /// always spins briefly first; the background writer never spins, it
    /// sleeps at once behind any round, since no commit waits for it. See
    /// docs/io.md.
    pub flush_wait_spin: bool,
    /// Buffer pages the background writer initialises ahead of the
    /// inserters after each round: up to this many pages past the one the
    /// next record starts on, as far as their ring slots are written out
    /// (PostgreSQL: the walwriter's opportunistic `AdvanceXLInsertBuffer`,
    /// which initialises the whole ring). 0: none, inserters initialise
    /// every page themselves. Needs `writer_delay`. See
    /// docs/buffers.md.
    pub writer_init_ahead: u64,
    /// Asynchronous commit (PostgreSQL: `synchronous_commit = off`):
    /// [`crate::Wal::insert_and_flush`] returns once the record is inserted,
    /// and the background writer makes it durable within `writer_delay`
    /// plus one write and sync (see that method). Needs `writer_delay`.
    pub async_commit: bool,
    /// How written WAL is made durable.
    pub sync_method: SyncMethod,
    /// Old segments kept for reuse by renaming after a checkpoint
    /// (PostgreSQL: `wal_recycle` with `min_wal_size`), to future names
    /// beyond the `segments_ahead` kept ready; the rest are removed.
    pub recycle_segments: usize,
    /// Segments kept ready ahead of the one being written, 0..=1024, by
    /// the background preallocator, so that the writer finds the next
    /// segment ready instead of creating it on the insert path
    /// ([`crate::Stats::segments_created_on_write`] counts the times it had
    /// to). A segment a checkpoint recycled counts as ready, and the
    /// preallocator renames an obsolete segment before it creates one.
    /// 0: the writer creates every segment itself (PostgreSQL:
    /// `PreallocXlogFiles` keeps one ahead; `min_wal_size` sizes the ready
    /// pool).
    pub segments_ahead: usize,
    /// How a new segment file is prepared before WAL is written into it.
    pub segment_prep: SegmentPrep,
    /// Direct I/O: the writer opens segment files with `O_DIRECT` and
    /// writes whole pages straight from the buffer ring, bypassing the page
    /// cache; a partially filled last page is written whole and written
    /// again at the next write (PostgreSQL 16: `debug_io_direct = wal`).
    /// Valid with every sync method: with
    /// [`SyncMethod::OpenDatasync`] files are opened `O_DIRECT | O_DSYNC`;
    /// with the others a write is durable only after the sync, as without
    /// it. [`crate::Wal::create`] and [`crate::Wal::open`] fail with
    /// [`crate::SegmentError::DirectIoUnsupported`] where the file system
    /// refuses `O_DIRECT`; there is no fallback. docs/io.md says more.
    pub direct_io: bool,
    /// Overlapped syncs: a flush leader hands the lead on once its writes
    /// are done, before its sync, so the next flusher writes while that
    /// sync is in flight (and syncs after it); each sync still covers only
    /// what was written before it started, and the durable LSN advances to
    /// that point only when it returns (PostgreSQL holds `WALWriteLock`
    /// across both). Only the methods that sync after writing
    /// ([`SyncMethod::Fsync`], [`SyncMethod::Fdatasync`]) have a sync to
    /// overlap. Default true, for rounds of at least
    /// [`Config::overlap_syncs_from`] bytes; docs/io.md ("Overlapped syncs").
    pub overlap_syncs: bool,
    /// With [`Config::overlap_syncs`], the fewest bytes a round must write
    /// (with [`Config::concurrent_syncs`]: its sync must make durable) for
    /// its leader to hand the lead on before its sync. A small round's
    /// sync is short and many flushers are parked behind it (small
    /// commits): handing on early wakes them twice per round, once at the
    /// early release and once when the sync covers them, which cost more
    /// than the overlap gained (100 B commits at 64 threads, 2 vCPUs: 94.5 k
    /// against 138.1 k commits/s without overlap); a large round's write
    /// and sync are long and few flushers wait (1 MiB messages: 1.0 k
    /// against 0.6 k messages/s at 2 threads). Default 64 KiB; 0 hands on
    /// every round. docs/io.md ("Overlapped syncs").
    pub overlap_syncs_from: u64,
    /// Concurrent syncs: up to two syncs in flight at once, each through
    /// an open file description of the segment of its own, the durable LSN
    /// advancing in the order they started. With [`Config::overlap_syncs`]
    /// the next leader then syncs its round beside the sync in flight
    /// instead of waiting for it to end. Only the methods that sync after
    /// writing ([`SyncMethod::Fsync`], [`SyncMethod::Fdatasync`]) have syncs
    /// to run at once. Default false: on the 2-vCPU machine it measured
    /// the same as without (1 MiB durable messages at two threads, four
    /// alternations: 1.56–1.78 GB/s against 1.64–1.85), where two writers
    /// syncing two files ran only 5 % faster than one; a device that keeps
    /// several flushes in flight may gain. docs/io.md ("Two syncs in flight
    /// on one file").
    pub concurrent_syncs: bool,
    /// Streaming of large records: an inserter copying a record that
    /// crosses pages advertises its progress at the next page boundary
    /// after every `stream_after` bytes it copies, and asks the background
    /// writer for a write-only round: it writes the finished pages without
    /// a sync and, with [`SyncMethod::Fsync`] or [`SyncMethod::Fdatasync`]
    /// and without direct I/O, starts their write-back
    /// (`sync_file_range`), so that the record's first pages go to the
    /// file while its last ones are still copied, and the commit's own
    /// flush writes only the tail and syncs once (PostgreSQL's walwriter
    /// has `wal_writer_flush_after`; its inserters do not stream). Nothing
    /// becomes durable without a sync (with `O_DSYNC`, the write is the
    /// sync). 0: off; otherwise at least 8 KiB. Needs the background writer
    /// (`writer_delay`): without one nothing streams. Default 0 (off): on
    /// the project's 2-vCPU machine it gained 5 % for durable 1 MiB
    /// messages at one thread and lost 3–9 % elsewhere; on a 16-core
    /// machine it gained 30 % for one committer of durable 1 MiB messages
    /// and lost 13 % with two. Turn it on where one thread at a time
    /// commits large records and cores are idle; docs/io.md ("Streaming
    /// large records").
    pub stream_after: u64,
    /// Write-back started as a write goes: with [`SyncMethod::Fsync`] or
    /// [`SyncMethod::Fdatasync`] and without direct I/O, every write of the
    /// log (a flush's or an eviction's run of the ring, a large record's
    /// pages written through or ahead) is cut into writes of this many
    /// bytes, and each but the last is followed by a hint that starts its
    /// write-back (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`; PostgreSQL's
    /// `pg_flush_data` for data files), so the device takes the first bytes
    /// while the kernel still copies the next ones into the page cache, and
    /// the sync that follows finds most of them on their way. A hint makes
    /// nothing durable: only the sync does. 0: off; otherwise a multiple
    /// of 8192. Default 256 KiB: on the project's 2-vCPU machine, durable
    /// 1 MiB messages ran 8 % faster at one thread, 12 % at two and 15 %
    /// at 64 than without it; writes shorter than this are not cut, so
    /// small commits are not touched. docs/io.md ("Write-back started as a
    /// write goes").
    pub writeback_every: u64,
    /// Write-through of large records: a record of at least this many
    /// bytes has the pages it covers whole (from their header to their
    /// end) written by its inserter straight from the caller's bytes to
    /// the segment file, with a page header it builds for each, instead of
    /// being copied into the buffer ring; its first and last pages, which
    /// it shares with other records, go through the ring as before. When no
    /// other insertion below its first whole page is in flight, or when
    /// more are in flight than the process has CPUs (it then waits for
    /// those below), the inserter writes the ring's bytes below those pages
    /// and the pages under the write lock; otherwise they go through the
    /// ring too, so that inserters copy side by side rather than write one
    /// after another (measured 0.86× the ring at eight threads on 16 cores
    /// without that choice; docs/io.md, "When to write through"); the
    /// insert then returns with the record's body already in the file (not
    /// durable: nothing is without a sync) after copying its tail into the
    /// ring. It saves one copy of every
    /// byte (PostgreSQL copies each record into its WAL buffers) and makes
    /// the insert a write. Not used with [`Config::direct_io`], whose
    /// writes must come from aligned memory, nor with
    /// [`SyncMethod::OpenDatasync`] or [`SyncMethod::OpenSync`], whose
    /// writes are syncs: each large record would be a synchronous write of
    /// its own instead of joining a flush's group (measured: 0.73× at two
    /// threads). It takes precedence over [`Config::stream_after`] for the
    /// records it writes through. 0: off; otherwise at least 8 KiB.
    /// Default 256 KiB; docs/io.md ("Write-through of large records").
    ///
    /// Stack: a record written through takes about 45 KiB of the inserting
    /// thread's stack (its pages' headers and parts, 13 KiB; the vectored
    /// write's two arrays of up to 1024 parts, 16 KiB each), so that the
    /// insert path allocates nothing per record. Rust's threads get 2 MiB
    /// by default; a caller inserting large records from a thread with a
    /// small stack of its own should leave room for this or set 0.
    pub write_through_from: u64,
    /// The CRC beside the write: with [`Config::write_through_from`] on, a
    /// thread of the log's own computes the body CRC of a record long
    /// enough to be written through while its inserter writes the record's
    /// pages after the first (ahead of the written point, as the insertions
    /// below them may still be in flight); the inserter then seals the
    /// header into the first page, in the ring. One record at a time: an
    /// inserter that finds the helper busy, or whose pages lie in a segment
    /// the writer has not opened yet, computes the CRC itself, after the
    /// reservation. The helper spins for a few hundred microseconds after
    /// each record, then parks. Default false: it takes a second CPU while
    /// large records arrive; it is left alone while as many insertions
    /// are in flight as the process has CPUs, and rests for the next 64
    /// large records after that. Measured on the 2-vCPU machine, 1 MiB
    /// messages, each measured window starting from a clean page cache:
    /// one thread 1.21–1.31× without sync, the median about 150 µs lower
    /// with `fdatasync`; two threads 1.01–1.20× without sync, p99 0.64–0.70
    /// ms against 1.1–1.6 (two alternations). docs/io.md ("The CRC beside
    /// the write").
    pub crc_helper: bool,
    /// **Bench only.** Allows [`ReservationKind::DumbCeiling`], whose log
    /// no reader accepts (not pg_waldump, not Walden's reader, not
    /// recovery): `walden bench reserve`/`insert` set it for that series
    /// alone. Default false.
    pub bench_unreadable_ceiling: bool,
    /// How long a wait for another thread's progress in the lock-free
    /// paths (a prev-link from the previous record's inserter, an
    /// insertion slot to be released or to advertise progress, a page to
    /// be initialised) may last before it panics with a report naming the
    /// LSN, the slot and the thread, at least 1 ms (PostgreSQL: the
    /// "stuck spinlock" PANIC). Inside an insertion the panic aborts the
    /// process. `None`: wait for ever. The default, 5 minutes, is far
    /// beyond any wait a live log makes (some of these waits span the
    /// eviction's write of a page, so a stalled disk lengthens them); see
    /// `sync::watchdog`.
    pub stuck_wait_timeout: Option<Duration>,
    /// What [`crate::Wal::open`] does with WAL it cannot read: stop at it
    /// (the default, PostgreSQL's recovery), tolerate it only at the tail,
    /// refuse any, or skip it and keep what follows ([`RecoveryMode`]).
    pub recovery_mode: RecoveryMode,
    /// Automatic checkpoint by volume (PostgreSQL: `max_wal_size`): once
    /// this many bytes of WAL (LSN distance) lie between the redo point and
    /// the insert position, a checkpoint moves the redo point to the insert
    /// position, so an unclean open never reads and rewrites more than about
    /// this much (docs/reliability.md). At least two segments; `None`: no
    /// checkpoint by volume. An automatic checkpoint, like
    /// [`crate::Wal::checkpoint`], tells recovery to start at the insert
    /// position, so set it only where the records before that point are
    /// safe elsewhere once written (or are not needed again): that is why
    /// the default is `None`. Run by the background writer after a round,
    /// or, without one, by [`crate::Wal::flush`] after its sync; never
    /// while [`crate::Wal::open`] recovers, but possibly at the first round
    /// after it returns, so a caller that reads the recovered records from
    /// [`crate::RecoveryReport::redo`] keeps them with
    /// [`Config::wal_keep_size`] or [`Config::wal_keep_for`].
    pub max_wal_size: Option<u64>,
    /// Automatic checkpoint by time (PostgreSQL: `checkpoint_timeout`):
    /// a checkpoint once this long has passed since the last one, if a
    /// record was inserted since; at least 1 ms. `None` (the default, for
    /// the reason given at [`Config::max_wal_size`]): no checkpoint by time.
    pub checkpoint_timeout: Option<Duration>,
    /// Bytes of WAL below the redo point always kept on disk, in whole
    /// segments, rather than recycled or removed by a checkpoint
    /// (PostgreSQL: `wal_keep_size`), for readers that lag. Default 0.
    pub wal_keep_size: u64,
    /// Keep segments below the redo point for this long after the
    /// checkpoint that left them behind, up to [`Config::wal_keep_max_size`];
    /// then they are recycled or removed, by the next checkpoint or by the
    /// background writer. At least 1 ms; `None` (the default): no keeping
    /// by age.
    pub wal_keep_for: Option<Duration>,
    /// The most bytes of WAL below the redo point kept by
    /// [`Config::wal_keep_for`] (in whole segments); at least
    /// [`Config::wal_keep_size`]. `None`: no limit.
    pub wal_keep_max_size: Option<u64>,
    /// With the `metrics` feature, the value of the
    /// [`log`](crate::METRICS_LOG_LABEL) label on every series the log
    /// emits, which tells the logs of one process apart. `None` (the
    /// default): the WAL directory's path as given to
    /// [`crate::Wal::create`] or [`crate::Wal::open`], unique among the
    /// live logs (one writer per directory); set a name where the path is
    /// long or changes between runs.
    pub metrics_label: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            format: WalFormat::Postgres15,
            segment_size: DEFAULT_SEGMENT_SIZE,
            adopt_defaults: AdoptDefaults::ALL,
            buffers: 16 << 20,
            insert_slots: 8,
            slot_choice: SlotChoice::Sticky,
            reservation: ReservationKind::Spinlock,
            prev_link_table_capacity: None,
            page_init: PageInitKind::MappingLock,
            page_zeroing: PageZeroing::HeaderOnly,
            eviction: Eviction::OnePage,
            eviction_chunk: 4 << 20,
            switch_eviction: SwitchEviction::Whole,
            writer_delay: Some(Duration::from_millis(200)),
            writer_flush_after: 1 << 20,
            write_lock_handoff: true,
            write_lock_spin: true,
            flush_wait_spin: true,
            writer_init_ahead: 0,
            async_commit: false,
            sync_method: SyncMethod::Fdatasync,
            recycle_segments: 4,
            segments_ahead: 2,
            segment_prep: SegmentPrep::ZeroFill,
            direct_io: false,
            overlap_syncs: true,
            overlap_syncs_from: 64 << 10,
            concurrent_syncs: false,
            stream_after: 0,
            writeback_every: 256 << 10,
            write_through_from: 256 << 10,
            crc_helper: false,
            bench_unreadable_ceiling: false,
            stuck_wait_timeout: Some(DEFAULT_STUCK_WAIT_TIMEOUT),
            recovery_mode: RecoveryMode::PointInTimeRecovery,
            max_wal_size: None,
            checkpoint_timeout: None,
            wal_keep_size: 0,
            wal_keep_for: None,
            wal_keep_max_size: None,
            metrics_label: None,
        }
    }
}

/// The default [`Config::stuck_wait_timeout`].
pub const DEFAULT_STUCK_WAIT_TIMEOUT: Duration = Duration::from_secs(300);
/// The shortest [`Config::stuck_wait_timeout`].
const MIN_STUCK_WAIT_TIMEOUT: Duration = Duration::from_millis(1);

/// A bad [`Config`] value or combination; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `segment_size` is not a power of two from 1 MiB to 1 GiB.
    #[error(
        "segment_size = {0}: must be a power of two from 1 MiB (1048576) to 1 GiB (1073741824)"
    )]
    SegmentSize(u64),
    /// `buffers` is out of range or not a whole number of pages.
    #[error("buffers = {0}: must be a multiple of 8192 from 32 KiB (4 pages) to 16 GiB")]
    Buffers(u64),
    /// `insert_slots` is out of range.
    #[error("insert_slots = {0}: must be between 1 and 1024")]
    InsertSlots(usize),
    /// `eviction_chunk` is not a whole number of pages, or zero.
    #[error("eviction_chunk = {0}: must be a positive multiple of 8192")]
    EvictionChunk(u64),
    /// `writer_delay` is out of range.
    #[error("writer_delay = {0:?}: must be between 1 ms and 10 s")]
    WriterDelay(Duration),
    /// `stuck_wait_timeout` is below 1 ms.
    #[error("stuck_wait_timeout = {0:?}: must be at least 1 ms, or None")]
    StuckWaitTimeout(Duration),
    /// `writer_flush_after` is below one page.
    #[error("writer_flush_after = {0}: must be at least 8192")]
    WriterFlushAfter(u64),
    /// `stream_after` is neither 0 nor at least one page.
    #[error("stream_after = {0}: must be 0 (off) or at least 8192")]
    StreamAfter(u64),
    /// `writeback_every` is neither 0 nor a multiple of the page size.
    #[error("writeback_every = {0}: must be 0 (off) or a multiple of 8192")]
    WritebackEvery(u64),
    /// `write_through_from` is neither 0 nor at least one page.
    #[error("write_through_from = {0}: must be 0 (off) or at least 8192")]
    WriteThroughFrom(u64),
    /// `reservation = dumb-ceiling` without `bench_unreadable_ceiling`.
    #[error("reservation = dumb-ceiling writes a log no reader accepts (xl_prev = start - 1): bench only, needs bench_unreadable_ceiling = true")]
    DumbCeilingNotAllowed,
    /// `writer_init_ahead` without a background writer to do it.
    #[error("writer_init_ahead = {0} needs the background writer: writer_delay must not be None")]
    InitAheadWithoutWriter(u64),
    /// `async_commit` without a background writer to make commits durable.
    #[error("async_commit = true needs the background writer: writer_delay must not be None")]
    AsyncCommitWithoutWriter,
    /// The reservation design cannot serve the format (DESIGN.md §3).
    #[error("reservation = {reservation} does not suit format = {format}: {}", pairing_advice(*.format))]
    Pairing {
        /// The format.
        format: WalFormat,
        /// The reservation design.
        reservation: ReservationKind,
    },
    /// `slot_choice` is `Attempts(k)` with `k` out of range.
    #[error("slot_choice = attempts:{0}: the number of slots tried must be between 1 and 1024")]
    SlotAttempts(u32),
    /// `prev_link_table_capacity` is too small or not a power of two.
    #[error("prev_link_table_capacity = {capacity}: must be a power of two, at least 8 and at least twice insert_slots ({insert_slots})")]
    PrevLinkTableCapacity {
        /// The capacity asked for.
        capacity: usize,
        /// The insertion slots configured.
        insert_slots: usize,
    },
    /// `segments_ahead` is above [`MAX_SEGMENTS_AHEAD`].
    #[error("segments_ahead = {0}: must be between 0 and 1024")]
    SegmentsAhead(usize),
    /// `max_wal_size` is below two segments.
    #[error("max_wal_size = {max_wal_size}: must be at least two segments ({})", 2 * .segment_size)]
    MaxWalSize {
        /// The size asked for.
        max_wal_size: u64,
        /// The segment size.
        segment_size: u64,
    },
    /// `checkpoint_timeout` or `wal_keep_for` is below 1 ms.
    #[error("{field} = {value:?}: must be at least 1 ms, or None")]
    TooShort {
        /// The field.
        field: &'static str,
        /// The value asked for.
        value: Duration,
    },
    /// `wal_keep_max_size` is below `wal_keep_size`.
    #[error("wal_keep_max_size = {max}: must be at least wal_keep_size ({min})")]
    WalKeepMax {
        /// `wal_keep_max_size`.
        max: u64,
        /// `wal_keep_size`.
        min: u64,
    },
    /// A value on disk differs from the configured one.
    #[error("{field}: the log on disk has {on_disk}, the configuration asks for {configured}")]
    Mismatch {
        /// The field.
        field: &'static str,
        /// The value the log was created with.
        on_disk: String,
        /// The value in the configuration.
        configured: String,
    },
}

impl Config {
    /// This configuration for opening a log created with `format` and
    /// `segment_size`: a format or segment size left unset takes the log's
    /// (and a reservation design left unset, the default for that format,
    /// [`ReservationKind::default_for`]); values set are kept, and
    /// [`crate::Wal::open`] refuses them if they differ from the log's. So
    /// `Config::default()` opens any log.
    ///
    /// "Left unset" is a field at its default value whose
    /// [`Config::adopt_defaults`] flag is set: `Config::default()` and
    /// struct literals built on it (`..Config::default()`) set every flag,
    /// and a [`ConfigBuilder`] setter clears the flag of the field it sets,
    /// so a default value asked for through the builder is refused on a log
    /// with another one rather than replaced by the log's.
    pub fn adopting(mut self, format: WalFormat, segment_size: u64) -> Config {
        let default = Config::default();
        let adopt = self.adopt_defaults;
        if adopt.segment_size && self.segment_size == default.segment_size {
            self.segment_size = segment_size;
        }
        if adopt.format && self.format == default.format {
            self.format = format;
            if adopt.reservation && self.reservation == default.reservation {
                self.reservation = ReservationKind::default_for(format);
            }
        }
        self
    }

    /// Checks every field and combination.
    pub fn validate(&self) -> Result<(), ConfigError> {
        SegmentSize::new(self.segment_size).map_err(|e| ConfigError::SegmentSize(e.0))?;
        let b = self.buffers;
        if !b.is_multiple_of(PAGE_SIZE)
            || !(MIN_BUFFER_PAGES * PAGE_SIZE..=MAX_BUFFER_BYTES).contains(&b)
        {
            return Err(ConfigError::Buffers(b));
        }
        if !(1..=MAX_INSERT_SLOTS).contains(&self.insert_slots) {
            return Err(ConfigError::InsertSlots(self.insert_slots));
        }
        if !self.reservation.pairs_with(self.format) {
            return Err(ConfigError::Pairing {
                format: self.format,
                reservation: self.reservation,
            });
        }
        if self.reservation == ReservationKind::DumbCeiling && !self.bench_unreadable_ceiling {
            return Err(ConfigError::DumbCeilingNotAllowed);
        }
        if let SlotChoice::Attempts(k) = self.slot_choice {
            if !(1..=MAX_ATTEMPTS).contains(&k) {
                return Err(ConfigError::SlotAttempts(k));
            }
        }
        if let Some(capacity) = self.prev_link_table_capacity {
            if !link_table_capacity_serves(capacity, self.insert_slots) {
                return Err(ConfigError::PrevLinkTableCapacity {
                    capacity,
                    insert_slots: self.insert_slots,
                });
            }
        }
        if self.eviction_chunk == 0 || !self.eviction_chunk.is_multiple_of(PAGE_SIZE) {
            return Err(ConfigError::EvictionChunk(self.eviction_chunk));
        }
        match self.writer_delay {
            Some(d) if !WRITER_DELAY_RANGE.contains(&d) => return Err(ConfigError::WriterDelay(d)),
            None if self.async_commit => return Err(ConfigError::AsyncCommitWithoutWriter),
            None if self.writer_init_ahead > 0 => {
                return Err(ConfigError::InitAheadWithoutWriter(self.writer_init_ahead))
            }
            _ => {}
        }
        if self.writer_flush_after < PAGE_SIZE {
            return Err(ConfigError::WriterFlushAfter(self.writer_flush_after));
        }
        if self.stream_after != 0 && self.stream_after < PAGE_SIZE {
            return Err(ConfigError::StreamAfter(self.stream_after));
        }
        if !self.writeback_every.is_multiple_of(PAGE_SIZE) {
            return Err(ConfigError::WritebackEvery(self.writeback_every));
        }
        if self.write_through_from != 0 && self.write_through_from < PAGE_SIZE {
            return Err(ConfigError::WriteThroughFrom(self.write_through_from));
        }
        if self.segments_ahead > MAX_SEGMENTS_AHEAD {
            return Err(ConfigError::SegmentsAhead(self.segments_ahead));
        }
        if let Some(t) = self
            .stuck_wait_timeout
            .filter(|&t| t < MIN_STUCK_WAIT_TIMEOUT)
        {
            return Err(ConfigError::StuckWaitTimeout(t));
        }
        self.validate_checkpoints()
    }

    /// Checks the automatic checkpoint and retention fields.
    fn validate_checkpoints(&self) -> Result<(), ConfigError> {
        if let Some(max_wal_size) = self.max_wal_size {
            if max_wal_size < 2 * self.segment_size {
                return Err(ConfigError::MaxWalSize {
                    max_wal_size,
                    segment_size: self.segment_size,
                });
            }
        }
        for (field, value) in [
            ("checkpoint_timeout", self.checkpoint_timeout),
            ("wal_keep_for", self.wal_keep_for),
        ] {
            if let Some(value) = value.filter(|&t| t < MIN_STUCK_WAIT_TIMEOUT) {
                return Err(ConfigError::TooShort { field, value });
            }
        }
        match self.wal_keep_max_size {
            Some(max) if max < self.wal_keep_size => Err(ConfigError::WalKeepMax {
                max,
                min: self.wal_keep_size,
            }),
            _ => Ok(()),
        }
    }

    /// The `PrevLinkTable` capacity in effect: the configured one, or the
    /// default derived from `insert_slots`.
    pub fn link_table_capacity(&self) -> usize {
        self.prev_link_table_capacity
            .unwrap_or_else(|| link_table_capacity_for(self.insert_slots))
    }

    /// The page zeroing the buffer ring does: [`Config::page_zeroing`], but
    /// whole pages for [`ReservationKind::PrevLinkInBuffer`], whose
    /// inserters wait for a zero field of their reservation to be written.
    pub fn page_zeroing_in_effect(&self) -> PageZeroing {
        if self.reservation == ReservationKind::PrevLinkInBuffer {
            PageZeroing::WholePage
        } else {
            self.page_zeroing
        }
    }

    /// How the segment supply prepares a new segment: [`Config::segment_prep`]
    /// for this log's [`Config::format`].
    pub(crate) fn prepare_for(&self) -> PrepareFor {
        PrepareFor {
            prep: self.segment_prep,
            format: self.format,
        }
    }

    /// The validated segment size.
    pub(crate) fn segment(&self) -> Result<SegmentSize, ConfigError> {
        SegmentSize::new(self.segment_size).map_err(|e| ConfigError::SegmentSize(e.0))
    }
}

/// What to configure instead of an impossible format/reservation pair.
fn pairing_advice(format: WalFormat) -> &'static str {
    if format.has_prev_link() {
        "its records carry prev-links, so use spinlock, prev-link-table or prev-link-in-buffer"
    } else {
        "its records carry no prev-link, so use unlinked"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stuck_wait_timeout_is_at_least_a_millisecond_or_off() {
        let with = |t| Config {
            stuck_wait_timeout: t,
            ..Config::default()
        };
        assert_eq!(with(None).validate(), Ok(()));
        assert_eq!(with(Some(MIN_STUCK_WAIT_TIMEOUT)).validate(), Ok(()));
        let short = Duration::from_micros(999);
        assert_eq!(
            with(Some(short)).validate(),
            Err(ConfigError::StuckWaitTimeout(short))
        );
        assert!(ConfigError::StuckWaitTimeout(short)
            .to_string()
            .starts_with("stuck_wait_timeout = 999"));
    }

    #[test]
    fn every_enum_names_itself_and_its_choices() {
        let cases = [
            (
                "x".parse::<WalFormat>().map(|_| ()),
                "WAL format \"x\": expected postgres15, self-lsn or compact-wal-id",
            ),
            (
                "x".parse::<ReservationKind>().map(|_| ()),
                "reservation \"x\": expected spinlock, prev-link-table, prev-link-in-buffer, \
                 unlinked or dumb-ceiling",
            ),
            (
                "x".parse::<PageInitKind>().map(|_| ()),
                "page initialisation \"x\": expected mapping-lock or cooperative",
            ),
            (
                "x".parse::<PageZeroing>().map(|_| ()),
                "page zeroing \"x\": expected header-only or whole-page",
            ),
            (
                "x".parse::<Eviction>().map(|_| ()),
                "eviction policy \"x\": expected one-page or batch",
            ),
            (
                "x".parse::<SegmentPrep>().map(|_| ()),
                "segment preparation \"x\": expected zero-fill, fallocate or page-headers",
            ),
            (
                "x".parse::<SyncMethod>().map(|_| ()),
                "sync method \"x\": expected fsync, fdatasync, open_datasync, open_sync or none",
            ),
            (
                "x".parse::<RecoveryMode>().map(|_| ()),
                "recovery mode \"x\": expected tolerate-corrupted-tail-records, \
                 absolute-consistency, point-in-time-recovery or skip-any-corrupted-records",
            ),
        ];
        for (parsed, message) in cases {
            assert_eq!(
                parsed.unwrap_err().to_string(),
                format!("unknown {message}")
            );
        }
        assert_eq!("open-datasync".parse(), Ok(SyncMethod::OpenDatasync));
        assert_eq!(SyncMethod::OpenSync.to_string(), "open_sync");
        assert_eq!("page_headers".parse(), Ok(SegmentPrep::PageHeaders));
    }

    #[test]
    fn automatic_checkpoints_and_retention_are_checked() {
        let seg = Config::default().segment_size;
        let with = |f: fn(&mut Config)| {
            let mut c = Config::default();
            f(&mut c);
            c.validate()
        };
        assert_eq!(Config::default().validate(), Ok(()));
        assert_eq!(
            with(|c| c.max_wal_size = Some(2 * c.segment_size - 1)),
            Err(ConfigError::MaxWalSize {
                max_wal_size: 2 * seg - 1,
                segment_size: seg
            })
        );
        assert_eq!(with(|c| c.max_wal_size = Some(2 * c.segment_size)), Ok(()));
        assert_eq!(
            with(|c| c.checkpoint_timeout = Some(Duration::ZERO)),
            Err(ConfigError::TooShort {
                field: "checkpoint_timeout",
                value: Duration::ZERO
            })
        );
        assert_eq!(
            with(|c| c.wal_keep_for = Some(Duration::from_micros(999))),
            Err(ConfigError::TooShort {
                field: "wal_keep_for",
                value: Duration::from_micros(999)
            })
        );
        assert_eq!(
            with(|c| {
                c.wal_keep_size = 2;
                c.wal_keep_max_size = Some(1);
            }),
            Err(ConfigError::WalKeepMax { max: 1, min: 2 })
        );
    }

    #[test]
    fn streaming_write_back_and_write_through_are_off_or_whole_pages() {
        let with = |f: fn(&mut Config, u64), n| {
            let mut c = Config::default();
            f(&mut c, n);
            c.validate()
        };
        let stream = |c: &mut Config, n| c.stream_after = n;
        let through = |c: &mut Config, n| c.write_through_from = n;
        for n in [0, PAGE_SIZE, 1 << 20] {
            assert_eq!(with(stream, n), Ok(()));
            assert_eq!(with(through, n), Ok(()));
        }
        assert_eq!(
            with(stream, PAGE_SIZE - 1),
            Err(ConfigError::StreamAfter(PAGE_SIZE - 1))
        );
        assert_eq!(with(through, 1), Err(ConfigError::WriteThroughFrom(1)));
        let writeback = |c: &mut Config, n| c.writeback_every = n;
        for n in [0, PAGE_SIZE, 32 * PAGE_SIZE] {
            assert_eq!(with(writeback, n), Ok(()));
        }
        for n in [1, PAGE_SIZE / 2, PAGE_SIZE + 4096] {
            assert_eq!(with(writeback, n), Err(ConfigError::WritebackEvery(n)));
        }
        assert_eq!(
            ConfigError::WriteThroughFrom(1).to_string(),
            "write_through_from = 1: must be 0 (off) or at least 8192"
        );
    }

    #[test]
    fn the_prev_link_in_the_buffer_always_zeroes_whole_pages() {
        for page_zeroing in PageZeroing::ALL {
            for reservation in ReservationKind::ALL {
                let config = Config {
                    page_zeroing,
                    reservation,
                    ..Config::default()
                };
                let want = if reservation == ReservationKind::PrevLinkInBuffer {
                    PageZeroing::WholePage
                } else {
                    page_zeroing
                };
                assert_eq!(config.page_zeroing_in_effect(), want, "{reservation}");
            }
        }
    }

    #[test]
    fn segments_ahead_is_bounded() {
        let at = |n| {
            Config {
                segments_ahead: n,
                ..Config::default()
            }
            .validate()
        };
        assert_eq!(at(0), Ok(()));
        assert_eq!(at(MAX_SEGMENTS_AHEAD), Ok(()));
        assert_eq!(
            at(MAX_SEGMENTS_AHEAD + 1).unwrap_err().to_string(),
            "segments_ahead = 1025: must be between 0 and 1024"
        );
    }
}
