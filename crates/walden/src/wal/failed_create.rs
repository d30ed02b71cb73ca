//! What a failed [`Wal::create`](super::Wal::create) undoes: it leaves the
//! directory as it found it. A directory the create made is removed, with
//! every parent it made; in one that was there, the files the create made
//! (the control file, segments, their temporary files, the lock file) are
//! removed and the rest is left alone.
//!
//! PostgreSQL: initdb's `cleanup_directories_atexit`, which removes the
//! data directory it made, or empties one it found empty.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::lsn::is_segment_file_name;
use crate::segment::files::SEGMENT_TEMP_SUFFIX;
use crate::segment::{FileOp, IoFailure, SegmentError, Storage, LOCK_FILE_NAME};

/// What the WAL directory held before a create, so that a failed one can
/// put it back.
pub(super) struct Found {
    dir: PathBuf,
    /// The highest of `dir` and its ancestors that did not exist: the
    /// create makes it and everything below it on the way to `dir`.
    made_from: Option<PathBuf>,
    /// The names `dir` held (none if it did not exist).
    names: HashSet<String>,
}

impl Found {
    /// Notes what `dir` and its ancestors hold now.
    pub(super) fn note(storage: &dyn Storage, dir: &Path) -> Result<Found, Error> {
        let mut made_from = None;
        for ancestor in dir.ancestors().take_while(|a| !a.as_os_str().is_empty()) {
            let exists = storage
                .exists(ancestor)
                .map_err(|e| IoFailure::new(FileOp::CheckExists, ancestor, e))
                .map_err(SegmentError::from)?;
            if exists {
                break;
            }
            made_from = Some(ancestor.to_path_buf());
        }
        let names = match made_from {
            Some(_) => HashSet::new(),
            None => storage
                .list_dir(dir)
                .map_err(|e| IoFailure::new(FileOp::ListDir, dir, e))
                .map_err(SegmentError::from)?
                .into_iter()
                .collect(),
        };
        Ok(Found {
            dir: dir.to_path_buf(),
            made_from,
            names,
        })
    }

    /// Puts the directory back as it was found, as far as it can: an undo
    /// that fails leaves the rest as it is (and says so in a `tracing`
    /// warning), since the create's own error is the one to report.
    /// `locked`: the create holds the directory's lock, so the log files
    /// it finds there that were not there before are the create's own,
    /// the lock file included; otherwise no file is removed.
    pub(super) fn restore(&self, storage: &dyn Storage, locked: bool) {
        if locked {
            self.remove_new_files(storage);
        }
        let Some(made_from) = &self.made_from else {
            return;
        };
        for made in self.dir.ancestors() {
            if let Err(error) = storage.remove_dir(made) {
                warn_left(made, &error);
                return;
            }
            if made == made_from {
                break;
            }
        }
        if let Some(parent) = made_from.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = storage.sync_dir(parent);
        }
    }

    /// Removes the log files of the directory that were not there before,
    /// the lock file last (it is held until the caller drops the lock),
    /// and syncs the directory.
    fn remove_new_files(&self, storage: &dyn Storage) {
        let names = match storage.list_dir(&self.dir) {
            Ok(names) => names,
            Err(error) => return warn_left(&self.dir, &error),
        };
        let mut new: Vec<String> = names
            .into_iter()
            .filter(|n| !self.names.contains(n) && is_log_file_name(n))
            .collect();
        // The lock file last: `false` sorts first.
        new.sort_by_key(|n| n == LOCK_FILE_NAME);
        for name in new {
            let path = self.dir.join(name);
            if let Err(error) = storage.remove_file(&path) {
                warn_left(&path, &error);
            }
        }
        if self.made_from.is_none() {
            let _ = storage.sync_dir(&self.dir);
        }
    }
}

/// True for the names of the files a log keeps in its directory: segments
/// and their temporary files, and `walden.*` (the control file and its
/// temporary file, the lock file, the direct-I/O probe).
fn is_log_file_name(name: &str) -> bool {
    let segment = name.strip_suffix(SEGMENT_TEMP_SUFFIX).unwrap_or(name);
    is_segment_file_name(segment) || name.starts_with("walden")
}

fn warn_left(path: &Path, error: &std::io::Error) {
    tracing::warn!(
        path = %path.display(),
        %error,
        "a failed create could not remove what it made"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_files_are_told_from_others() {
        for name in [
            "000000010000000000000001",
            "000000010000000000000001.tmp",
            "walden.control",
            "walden.control.tmp",
            "walden.lock",
            "walden-direct-io-probe.tmp",
        ] {
            assert!(is_log_file_name(name), "{name}");
        }
        for name in ["README", "notes.tmp", "0000000100000000000000", "data"] {
            assert!(!is_log_file_name(name), "{name}");
        }
    }
}
