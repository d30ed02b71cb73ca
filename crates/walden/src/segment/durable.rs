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
    write_synced(storage, dir, temp_name, fill)?;
    rename_durably(storage, dir, temp_name, name)
}

/// The first half of [`install_durably`]: writes `dir/temp_name` with
/// `fill` and syncs it. On an error the file is removed if possible.
pub(crate) fn write_synced(
    storage: &dyn Storage,
    dir: &Path,
    temp_name: &str,
    fill: impl FnOnce(&dyn StorageFile) -> io::Result<()>,
) -> Result<(), IoFailure> {
    let temp = dir.join(temp_name);
    let opts = OpenOptions::new().write(true).create(true).truncate(true);
    let file = storage
        .open(&temp, &opts)
        .map_err(failed(FileOp::Open, &temp))?;
    let written = fill(&*file)
        .map_err(failed(FileOp::Write, &temp))
        .and_then(|()| file.sync_all().map_err(failed(FileOp::Sync, &temp)));
    drop(file);
    written.inspect_err(|_| discard(storage, &temp))
}

/// The second half of [`install_durably`]: renames the synced
/// `dir/temp_name` to `dir/name` (replacing any file there) and syncs
/// `dir`. If the rename fails the temporary file is removed if possible.
pub(crate) fn rename_durably(
    storage: &dyn Storage,
    dir: &Path,
    temp_name: &str,
    name: &str,
) -> Result<(), IoFailure> {
    let (temp, target) = (dir.join(temp_name), dir.join(name));
    storage
        .rename(&temp, &target)
        .map_err(|e| IoFailure::rename(&temp, &target, e))
        .inspect_err(|_| discard(storage, &temp))?;
    storage.sync_dir(dir).map_err(failed(FileOp::SyncDir, dir))
}

/// Removes a temporary file after a failure, as a best effort: the error
/// being reported matters more than a leftover temporary file, which never
/// carries the final name.
pub(crate) fn discard(storage: &dyn Storage, temp: &Path) {
    let _ = storage.remove_file(temp);
}
