//! Walden: a write-ahead log engine whose insert path scales with cores.
//!
//! Walden is PostgreSQL's WAL machinery (reserve → copy into shared buffer
//! pages → flush with group commit → segment files → recovery) rebuilt as an
//! embeddable library. Its `Postgres15` format is byte-compatible with
//! PostgreSQL 15, so PostgreSQL's own `pg_waldump` verifies what Walden
//! writes and Walden reads what a PostgreSQL server writes.
//!
//! The public API is what an application needs:
//! - a log: [`Wal`] (create, open with recovery, insert, flush, checkpoint,
//!   switch, read back), its [`Config`] with the strategy enums, the
//!   [`Record`]s it takes (plain bytes with [`Wal::append`], borrowed or
//!   owned payloads, all-or-nothing [`Batch`]es) and the [`Stats`] it keeps;
//! - reading any WAL directory, PostgreSQL's included: [`WalReader`],
//!   [`WalRecord`] and the decoded [`Body`], with [`rmgr`] (resource
//!   manager ids and names) and [`message`] (the records Walden writes or
//!   describes);
//! - the file system it goes through: the [`Storage`] trait, with
//!   [`FsStorage`] for real files (and, with the `sim` feature,
//!   `SimStorage`, which loses power and injects faults);
//! - typed errors: [`Error`] and the per-layer errors it wraps.
//!
//! The mechanisms behind it (insertion slots, the reservation designs, the
//! buffer ring, the writer, the segment files, the concurrency primitives)
//! are private; `docs/architecture.md` walks them in data-path order. The
//! benchmarks, tools and integration tests reach them through a hidden `internals`
//! module behind the `internals` feature, which is not part of the stable
//! API.

// Without `internals`, mechanisms that only the benchmarks, tools and tests
// call are unused in this crate; with it (every workspace build, which the
// lints run on) they are exported, so dead code is still caught there.
#![cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]

mod buffer;
mod config;
mod error;
mod format;
mod insert;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod log_metrics;
mod lsn;
mod named_enum;
mod read;
mod record;
mod segment;
mod sync;
mod wal;
mod write;

pub use buffer::{Eviction, PageInitKind, PageZeroing, SwitchEviction};
pub use config::{
    AdoptDefaults, Config, ConfigBuilder, ConfigError, RecoveryMode, RecoveryRefused,
    ReservationKind, SlotChoice, MAX_INSERT_SLOTS, MAX_SEGMENTS_AHEAD,
};
pub use error::Error;
pub use format::body::{BlockImage, BlockRef, Body, BodyError, RelFileNode};
pub use format::record::RecordHeader;
pub use format::{message, rmgr, WalFormat};
pub use insert::{BatchSpans, RecordSpan};
pub use log_metrics::METRICS_LOG_LABEL;
pub use lsn::{BadSegmentSize, Lsn, SegmentSize, TimeLineId};
pub use named_enum::ParseKindError;
pub use read::{
    DirSource, EndOfWalReason, ReadError, ReaderOptions, SegmentPos, SegmentSource, SourceError,
    WalReader, WalRecord,
};
pub use record::{Batch, Record, RecordError, DEFAULT_RMID, MAX_RECORD_SIZE};
pub use segment::{
    ControlFileError, CorruptControlFile, DirLockError, FileOp, FileSyncMode, FsStorage,
    InvalidControlValue, IoFailure, LockOutcome, LockTable, OpenOptions, SegmentError, SegmentPrep,
    Storage, StorageFile, StorageLock, DIRECT_IO_ALIGNMENT, LOCK_FILE_NAME,
};
#[cfg(feature = "sim")]
pub use segment::{SimStats, SimStorage};
pub use wal::{FlushFuture, RecoveryReport, SkippedWal, Stats, Wal};
pub use write::{SyncMethod, WriteError, WriterStats};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
