//! [`Config`]: every knob of a [`crate::Wal`], validated as a whole.

use crate::buffer::{Eviction, PageInitKind};
use crate::format::WalFormat;
use crate::insert::reserve::ReservationKind;
use crate::insert::slots::SlotChoice;
use crate::lsn::{SegmentSize, DEFAULT_SEGMENT_SIZE, PAGE_SIZE};
use crate::write::SyncMethod;

/// Most insertion slots a log may have.
pub const MAX_INSERT_SLOTS: usize = 1024;
/// Fewest buffer pages a log may have.
pub const MIN_BUFFER_PAGES: u64 = 4;
/// Most buffer memory a log may have (16 GiB).
pub const MAX_BUFFER_BYTES: u64 = 16 << 30;

/// How a [`crate::Wal`] is built. `Config::default()` is PostgreSQL's
/// configuration: 16 MiB segments and buffers, 8 insertion slots,
/// spinlock reservation, `fdatasync`.
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
pub struct Config {
    /// On-disk record format.
    pub format: WalFormat,
    /// Segment file size in bytes: a power of two from 1 MiB to 1 GiB.
    /// Fixed when the log is created.
    pub segment_size: u64,
    /// Size of the shared buffer ring in bytes (a multiple of 8 KiB, at
    /// least 4 pages) (PostgreSQL: `wal_buffers`).
    pub buffers: u64,
    /// Number of insertion slots, 1..=1024 (PostgreSQL: `NUM_XLOGINSERT_LOCKS`).
    pub insert_slots: usize,
    /// How a thread picks its insertion slot.
    pub slot_choice: SlotChoice,
    /// How space is reserved.
    pub reservation: ReservationKind,
    /// How buffer pages are initialised.
    pub page_init: PageInitKind,
    /// How much is written when a buffer page must be freed.
    pub eviction: Eviction,
    /// How written WAL is made durable.
    pub sync_method: SyncMethod,
    /// Old segments kept for reuse by renaming after a checkpoint
    /// (PostgreSQL: `wal_recycle` with `min_wal_size`); the rest are removed.
    pub recycle_segments: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            format: WalFormat::Postgres15,
            segment_size: DEFAULT_SEGMENT_SIZE,
            buffers: 16 << 20,
            insert_slots: 8,
            slot_choice: SlotChoice::Sticky,
            reservation: ReservationKind::Spinlock,
            page_init: PageInitKind::MappingLock,
            eviction: Eviction::OnePage,
            sync_method: SyncMethod::Fdatasync,
            recycle_segments: 4,
        }
    }
}

/// A bad [`Config`] value or combination; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// Checks every field and combination.
    pub fn validate(&self) -> Result<(), ConfigError> {
        SegmentSize::new(self.segment_size).map_err(|e| ConfigError::SegmentSize(e.0))?;
        let b = self.buffers;
        if b % PAGE_SIZE != 0 || !(MIN_BUFFER_PAGES * PAGE_SIZE..=MAX_BUFFER_BYTES).contains(&b) {
            return Err(ConfigError::Buffers(b));
        }
        if !(1..=MAX_INSERT_SLOTS).contains(&self.insert_slots) {
            return Err(ConfigError::InsertSlots(self.insert_slots));
        }
        Ok(())
    }

    /// The validated segment size.
    pub(crate) fn segment(&self) -> Result<SegmentSize, ConfigError> {
        SegmentSize::new(self.segment_size).map_err(|e| ConfigError::SegmentSize(e.0))
    }
}
