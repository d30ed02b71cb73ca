//! One writer per log: the exclusive lock on a file in the WAL directory,
//! taken by whoever writes the log and held for as long as it does.
//!
//! PostgreSQL: `postmaster.pid` (`CreateLockFile`), which keeps a second
//! server off a data directory. Walden uses `flock(2)` through
//! [`Storage::try_lock`], so the lock dies with its process and a stale
//! file never blocks a restart.

use std::path::{Path, PathBuf};

use super::error::{FileOp, IoFailure};
use super::storage::{LockOutcome, Storage, StorageLock};

/// The lock file's name in the WAL directory. It holds the process id of
/// the writer that took the lock.
pub const LOCK_FILE_NAME: &str = "walden.lock";

/// Why the WAL directory's lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirLockError {
    /// Another writer, in this process or another, has the log open.
    #[error("\"{}\" is in use: another writer ({}) has the log open; one writer per log", .dir.display(), holder_text(*.holder))]
    Held {
        /// The WAL directory.
        dir: PathBuf,
        /// The process id of the writer holding the lock, if it recorded one.
        holder: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error(transparent)]
    Io(#[from] IoFailure),
}

fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) => format!("process {pid}"),
        None => "holder unknown".to_owned(),
    }
}

/// Takes the lock of the WAL directory `dir` for this process, or fails
/// naming the writer holding it. The lock is held until the guard drops.
pub(crate) fn lock_dir(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<Box<dyn StorageLock>, DirLockError> {
    let path = dir.join(LOCK_FILE_NAME);
    match storage.try_lock(&path, &std::process::id().to_string()) {
        Ok(LockOutcome::Acquired(guard)) => Ok(guard),
        Ok(LockOutcome::Held(holder)) => Err(DirLockError::Held {
            dir: dir.to_path_buf(),
            holder: holder.trim().parse().ok(),
        }),
        Err(e) => Err(IoFailure::new(FileOp::Lock, &path, e).into()),
    }
}
