//! [`Error`]: everything a [`crate::Wal`] operation can fail with.

use std::path::PathBuf;

use crate::config::{ConfigError, RecoveryRefused};
use crate::lsn::Lsn;
use crate::read::ReadError;
use crate::record::RecordError;
use crate::segment::{ControlFileError, DirLockError, SegmentError};
use crate::write::WriteError;

/// Why a [`crate::Wal`] operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid or does not match the log on disk.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// The record cannot be inserted.
    #[error("invalid record: {0}")]
    Record(#[from] RecordError),
    /// Writing or syncing WAL failed; the log is poisoned.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A segment file operation failed.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The control file is missing, corrupt or could not be written.
    #[error(transparent)]
    Control(#[from] ControlFileError),
    /// Reading the log failed (outside the normal end of WAL).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// [`crate::Config::recovery_mode`] refused the WAL recovery found.
    #[error("recovery refused: {0}")]
    RecoveryRefused(#[from] RecoveryRefused),
    /// Another writer has the log open, or its lock could not be taken.
    #[error(transparent)]
    Locked(#[from] DirLockError),
    /// `create` found a log already in the directory.
    #[error("\"{}\" already holds a Walden log (a control file); open it instead", .0.display())]
    AlreadyExists(PathBuf),
    /// `create_at_segment` was asked for segment 0 or one past the LSN range.
    #[error("cannot create a log starting in segment {0}: segment numbers start at 1 and must leave the log room below 2^64 bytes")]
    FirstSegment(u64),
    /// A flush asked for an LSN beyond anything inserted.
    #[error("cannot flush to {requested}: the log ends at {end}")]
    FlushBeyondEnd {
        /// The LSN asked for.
        requested: Lsn,
        /// The end of inserted WAL.
        end: Lsn,
    },
    /// [`crate::Wal::checkpoint_to`] was given an LSN past the insert position.
    #[error("cannot checkpoint to {requested}: the log ends at {end}")]
    CheckpointBeyondEnd {
        /// The LSN asked for.
        requested: Lsn,
        /// The insert position.
        end: Lsn,
    },
    /// [`crate::Wal::flush_async`] on a log without a background writer.
    #[error("flush_async needs the background writer, and Config::writer_delay is None")]
    NoBackgroundWriter,
    /// A background thread could not be started.
    #[error("could not start the {name} thread: {source}")]
    Thread {
        /// Which thread.
        name: &'static str,
        /// The cause.
        source: std::io::Error,
    },
}
