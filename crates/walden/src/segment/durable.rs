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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::storage::LockOutcome;
    use crate::segment::FsStorage;
    use std::path::PathBuf;
    use std::sync::Mutex;

    /// The real file system, recording which directories were synced.
    #[derive(Debug, Default)]
    struct SyncedDirs(Mutex<Vec<PathBuf>>);

    impl Storage for SyncedDirs {
        fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
            FsStorage.open(path, opts)
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            FsStorage.rename(from, to)
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            FsStorage.remove_file(path)
        }
        fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
            FsStorage.list_dir(dir)
        }
        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            self.0.lock().unwrap().push(dir.to_path_buf());
            FsStorage.sync_dir(dir)
        }
        fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
            FsStorage.create_dir_all(dir)
        }
        fn exists(&self, path: &Path) -> io::Result<bool> {
            FsStorage.exists(path)
        }
        fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
            FsStorage.try_lock(path, holder)
        }
    }

    #[test]
    fn a_new_directory_and_every_new_parent_are_synced_into_their_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let storage = SyncedDirs::default();
        let dir = tmp.path().join("a/b/wal");
        create_dir_durably(&storage, &dir).unwrap();
        assert!(dir.is_dir());
        let a = tmp.path().join("a");
        let expected = vec![tmp.path().to_path_buf(), a.clone(), a.join("b")];
        assert_eq!(*storage.0.lock().unwrap(), expected);

        // An existing directory: its entry is synced into its parent again.
        let storage = SyncedDirs::default();
        create_dir_durably(&storage, &dir).unwrap();
        assert_eq!(*storage.0.lock().unwrap(), vec![a.join("b")]);
    }
}
