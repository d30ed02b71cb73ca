//! The segment layer: every file the engine touches, and how.
//!
//! - [`storage`]: the [`Storage`] trait all file I/O goes through, so tests
//!   can inject faults; [`FsStorage`] is the real file system;
//! - [`files`]: [`SegmentFiles`], naming, creating, recycling, removing and
//!   opening the segment files of a WAL directory;
//! - [`direct_io`]: the alignment `O_DIRECT` needs, [`AlignedPage`], and
//!   [`check_direct_io`], which tells a file system that refuses it;
//! - [`prepare`]: [`SegmentPrep`], how a new segment is prepared (zeros,
//!   `fallocate`, page headers written ahead);
//! - [`recycle`]: [`plan_recycling`], which obsolete segments to recycle or
//!   remove after a checkpoint;
//! - [`control`]: [`ControlFile`], the small file saying what the log is and
//!   where recovery starts;
//! - [`sim`]: [`SimStorage`], an in-memory storage that loses power, tears
//!   unsynced writes and injects I/O errors, for crash and fault testing;
//! - [`error`]: errors naming the operation and the file;
//! - `lock_table`: [`LockTable`], locks kept in memory for storages
//!   without real files;
//! - [`dir_lock`]: one writer per log, the lock file in the WAL directory;
//! - `damage_check`: the checks recovery makes for damage that is not a
//!   crash's torn tail (segments of the wrong size, holes);
//! - `rewrite_after_failed_sync`: rewriting the WAL recovery found, so that
//!   pages a failed sync dropped reach the disk.
//!
//! Durability rule: a segment, control file or directory entry this layer
//! reports as created, renamed or removed has been made durable (file sync,
//! then directory sync) before the call returns.

pub mod control;
mod damage_check;
pub mod dir_lock;
pub mod direct_io;
mod durable;
pub mod error;
pub mod files;
mod fs;
mod lock_table;
pub mod prepare;
pub mod recycle;
mod rewrite_after_failed_sync;
#[cfg(feature = "sim")]
pub mod sim;
pub mod storage;

pub use control::{ControlFile, ControlFileError, CorruptControlFile, InvalidControlValue};
pub use damage_check::{check_no_hole, check_segment_sizes};
pub(crate) use dir_lock::lock_dir;
pub use dir_lock::{DirLockError, LOCK_FILE_NAME};
pub use direct_io::{check_direct_io, AlignedPage, DIRECT_IO_ALIGNMENT};
pub(crate) use durable::create_dir_durably;
pub use error::{FileOp, IoFailure, SegmentError};
pub use files::SegmentFiles;
pub use fs::FsStorage;
pub(crate) use fs::IOV_CHUNK;
pub use lock_table::LockTable;
pub use prepare::{PrepareFor, SegmentPrep};
pub use recycle::{may_recycle, plan_recycling, RecyclePlan};
pub(crate) use rewrite_after_failed_sync::{erase_durably, rewrite_durably};
#[cfg(feature = "sim")]
pub use sim::{SimStats, SimStorage};
pub use storage::{FileSyncMode, LockOutcome, OpenOptions, Storage, StorageFile, StorageLock};
