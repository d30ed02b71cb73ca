//! Installing a file atomically and durably under its final name.

use std::io;
use std::path::Path;

use super::error::{failed, FileOp, IoFailure};
use super::storage::{OpenOptions, Storage, StorageFile};

/// Writes a file under `dir/temp_name` with `fill`, syncs it, renames it to
/// `dir/name` (replacing any file there) and syncs `dir`.
///
/// A crash at any point leaves under `name` either what was there before or
/// the complete new file, never a partial one; once this returns `Ok` the new
/// file is durable under `name`. On an error the temporary file is removed
/// if possible (a crash may still leave it behind for the caller to clean up)
/// and the error names the failed step.
///
/// PostgreSQL: `durable_rename`, as used by `XLogFileInit` and
/// `update_controlfile`.
pub(crate) fn install_durably(
    storage: &dyn Storage,
    dir: &Path,
    temp_name: &str,
    name: &str,
    fill: impl FnOnce(&dyn StorageFile) -> io::Result<()>,
) -> Result<(), IoFailure> {
    let temp = dir.join(temp_name);
    let target = dir.join(name);
    let opts = OpenOptions::new().write(true).create(true).truncate(true);
    let file = storage
        .open(&temp, &opts)
        .map_err(failed(FileOp::Open, &temp))?;
    let written = fill(&*file)
        .map_err(failed(FileOp::Write, &temp))
        .and_then(|()| file.sync_all().map_err(failed(FileOp::Sync, &temp)));
    drop(file);
    let installed = written.and_then(|()| {
        storage
            .rename(&temp, &target)
            .map_err(|e| IoFailure::rename(&temp, &target, e))
    });
    if let Err(e) = installed {
        // Best effort: the error being reported matters more than a leftover
        // temporary file, which never carries the final name.
        let _ = storage.remove_file(&temp);
        return Err(e);
    }
    storage.sync_dir(dir).map_err(failed(FileOp::SyncDir, dir))
}
