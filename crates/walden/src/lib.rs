//! Walden: a write-ahead log engine whose insert path scales with cores.
//!
//! Walden is PostgreSQL's WAL machinery (reserve → copy into shared buffer
//! pages → flush with group commit → segment files → recovery) rebuilt as an
//! embeddable library. Its `Postgres15` format is byte-compatible with
//! PostgreSQL 15, so PostgreSQL's own `pg_waldump` verifies what Walden
//! writes and Walden reads what a PostgreSQL server writes.
//!
//! The modules follow the data path:
//! - [`lsn`]: log sequence numbers and usable-byte-position arithmetic;
//! - [`insert`]: insertion slots, space reservation, copying into pages;
//! - [`buffer`]: the shared buffer ring and how its pages are initialised;
//! - [`write`](mod@write): writing pages out, group flush, sync methods;
//! - [`segment`]: segment files, the control file, the storage trait;
//! - [`format`](mod@format): the on-disk format (page headers, record header, body, CRC);
//! - [`read`]: reading and validating WAL from segment files;
//! - [`sync`]: concurrency primitives used on the insert path.

pub mod buffer;
mod config;
mod error;
pub mod format;
pub mod insert;
pub mod lsn;
mod names;
pub mod read;
mod record;
pub mod segment;
pub mod sync;
mod wal;
pub mod write;

pub use buffer::{Eviction, PageInitKind};
pub use config::{Config, ConfigError, MAX_INSERT_SLOTS};
pub use error::Error;
pub use format::WalFormat;
pub use insert::reserve::ReservationKind;
pub use insert::slots::SlotChoice;
pub use insert::RecordSpan;
pub use lsn::{Lsn, SegmentSize, TimeLineId};
pub use names::ParseKindError;
pub use read::{ReadError, ReaderOptions, WalReader, WalRecord};
pub use record::{Record, RecordError, MAX_RECORD_SIZE};
pub use wal::{RecoveryReport, Stats, Wal};
pub use write::SyncMethod;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
