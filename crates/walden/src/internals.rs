//! The engine's mechanisms, for Walden's own benchmarks and model tests.
//!
//! Not part of the stable API: these names follow the engine's internals
//! and change with them. Compiled only with the `internals` feature and
//! hidden from the documentation. Items are re-exported flat, by what they
//! are, so that a move inside the engine changes this list and not every
//! user of it.

pub use crate::buffer::{Atomic32, BufferRing, LinkCell, PageIdentity, PageInit};
pub use crate::config::link_table_capacity_for;
/// The on-disk format's mechanisms: page and record headers, body
/// encoding, CRC, and the non-PostgreSQL formats' constants.
pub mod format {
    pub use crate::format::{body, compact, crc, message, page, record, rmgr, self_lsn};
}
pub use crate::insert::reserve::cuckoo::{LinkTable, MIN_CAPACITY as LINK_TABLE_MIN_CAPACITY};
pub use crate::insert::reserve::prev_link_in_buffer::link_lsn;
pub use crate::insert::reserve::{
    PrevLink, PrevLinkInBufferReserver, PrevLinkTableReserver, Reservation, Reserver,
};
pub use crate::insert::slots::{InsertionProgress, SlotArray};
pub use crate::lsn::{is_segment_file_name, maxalign, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
pub use crate::read::StorageSource;
pub use crate::segment::control::{CONTROL_FILE_LEN, CONTROL_FILE_NAME};
pub use crate::segment::{plan_recycling, ControlFile, RecyclePlan, SegmentFiles};
pub use crate::sync::read_biased::DEFAULT_PARTITIONS as READ_BIASED_DEFAULT_PARTITIONS;
pub use crate::sync::{ReadBiasedLock, WaitQueue};
pub use crate::write::rig::WriterRig;
pub use crate::write::{SegmentOpener, Writer};
