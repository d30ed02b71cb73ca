//! The engine's mechanisms, for Walden's own benchmarks, tools and
//! integration tests (the concurrency models sit next to the code, in `src`).
//!
//! Not part of the stable API: these names follow the engine's internals
//! and change with them. Compiled only with the `internals` feature and
//! hidden from the documentation. Items are re-exported flat, by what they
//! are, so that a move inside the engine changes this list and not every
//! user of it.

pub use crate::buffer::{BufferRing, LinkCell, PageIdentity};
pub use crate::config::link_table_capacity_for;
/// The on-disk format's mechanisms: page and record headers, body
/// encoding, CRC, and the non-PostgreSQL formats' constants.
pub mod format {
    pub use crate::format::{body, compact, crc, message, page, record, rmgr, self_lsn};
}
pub use crate::insert::reserve::{PrevLink, Reservation, Reserver};
pub use crate::lsn::{is_segment_file_name, maxalign, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
pub use crate::read::StorageSource;
pub use crate::segment::control::{CONTROL_FILE_LEN, CONTROL_FILE_NAME};
pub use crate::segment::{
    check_no_hole, check_segment_sizes, may_recycle, plan_recycling, ControlFile, PrepareFor,
    RecyclePlan, SegmentFiles,
};
pub use crate::sync::read_biased::DEFAULT_PARTITIONS as READ_BIASED_DEFAULT_PARTITIONS;
pub use crate::sync::ReadBiasedLock;
pub use crate::wal::preview_recovery;
