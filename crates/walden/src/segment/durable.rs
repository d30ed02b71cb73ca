//! Installing a file atomically and durably under its final name, and
//! creating a directory durably.

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

/// Creates `dir` and any missing parents, and makes its entry durable: a
/// sync of the parent of `dir` and of every parent created with it, top
/// down, so that a power cut after this returns cannot take away the
/// directory the log's files are in (PostgreSQL: `fsync_parent_path`).
pub(crate) fn create_dir_durably(storage: &dyn Storage, dir: &Path) -> Result<(), IoFailure> {
    let mut created = vec![dir];
    for ancestor in dir.ancestors().skip(1) {
        let exists = ancestor.as_os_str().is_empty()
            || storage
                .exists(ancestor)
                .map_err(failed(FileOp::CheckExists, ancestor))?;
        if exists {
            break;
        }
        created.push(ancestor);
    }
    storage
        .create_dir_all(dir)
        .map_err(failed(FileOp::CreateDir, dir))?;
    for made in created.iter().rev() {
        let parent = match made.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            Some(_) => Path::new("."),
            None => continue,
        };
        storage
            .sync_dir(parent)
            .map_err(failed(FileOp::SyncDir, parent))?;
    }
    Ok(())
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::segment::SimStorage;

    #[test]
    fn a_new_directory_and_every_new_parent_are_synced_into_their_parents() {
        let sim = SimStorage::new(1);
        sim.create_dir_all(Path::new("/data")).unwrap();
        let syncs = |sim: &SimStorage| sim.stats().syncs;
        // /data/a, /data/a/b and /data/a/b/wal are new: /data, /data/a and
        // /data/a/b are synced.
        let dir = Path::new("/data/a/b/wal");
        create_dir_durably(&sim, dir).unwrap();
        assert!(sim.exists(dir).unwrap());
        assert_eq!(syncs(&sim), 3);
        // An existing directory: its entry is synced into its parent again.
        create_dir_durably(&sim, dir).unwrap();
        assert_eq!(syncs(&sim), 4);
        // A failed sync is the error, naming the directory.
        sim.fail_sync(1, false);
        let err = create_dir_durably(&sim, Path::new("/data/c")).unwrap_err();
        assert_eq!(
            (err.op, err.path.as_path()),
            (FileOp::SyncDir, Path::new("/data"))
        );
    }
}
