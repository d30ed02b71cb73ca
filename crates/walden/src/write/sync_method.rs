//! How the writer makes WAL durable (PostgreSQL: `wal_sync_method`).

use std::io;

use crate::named_enum::named_enum;
use crate::segment::{FileSyncMode, StorageFile};

/// How written WAL is made durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncMethod {
    /// `fsync(2)` after writing.
    Fsync,
    /// `fdatasync(2)` after writing (PostgreSQL's default on Linux).
    #[default]
    Fdatasync,
    /// Files opened with `O_DSYNC`: every write is durable when it returns.
    OpenDatasync,
    /// Files opened with `O_SYNC`.
    OpenSync,
    /// Never sync: data survives a process crash but not a power loss.
    None,
}

impl SyncMethod {
    /// Every method, for command-line help and tests.
    pub const ALL: [SyncMethod; 5] = [
        SyncMethod::Fsync,
        SyncMethod::Fdatasync,
        SyncMethod::OpenDatasync,
        SyncMethod::OpenSync,
        SyncMethod::None,
    ];

    /// The open flag this method needs on segment files.
    pub fn file_mode(self) -> FileSyncMode {
        match self {
            SyncMethod::OpenDatasync => FileSyncMode::Dsync,
            SyncMethod::OpenSync => FileSyncMode::Sync,
            _ => FileSyncMode::None,
        }
    }

    /// True if writes are durable when they return.
    pub fn sync_on_write(self) -> bool {
        matches!(self, SyncMethod::OpenDatasync | SyncMethod::OpenSync)
    }

    /// True if a flush makes WAL durable, by a sync call or by writes
    /// that are durable when they return: every method but `None`.
    pub fn durable(self) -> bool {
        self.syncs() || self.sync_on_write()
    }

    /// True if written data needs an explicit sync call.
    pub fn syncs(self) -> bool {
        matches!(self, SyncMethod::Fsync | SyncMethod::Fdatasync)
    }

    /// Makes `file`'s written data durable.
    pub(crate) fn sync(self, file: &dyn StorageFile) -> io::Result<()> {
        match self {
            SyncMethod::Fsync => file.sync_all(),
            SyncMethod::Fdatasync => file.sync_data(),
            _ => Ok(()),
        }
    }

    /// PostgreSQL's name for the method.
    pub fn name(self) -> &'static str {
        match self {
            SyncMethod::Fsync => "fsync",
            SyncMethod::Fdatasync => "fdatasync",
            SyncMethod::OpenDatasync => "open_datasync",
            SyncMethod::OpenSync => "open_sync",
            SyncMethod::None => "none",
        }
    }
}

named_enum!(SyncMethod, "sync method");
