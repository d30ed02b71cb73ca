//! Errors of the segment layer, each naming the operation and the file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A file-system operation, as named in error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// Opening or creating a file.
    Open,
    /// Reading a file.
    Read,
    /// Writing a file.
    Write,
    /// Syncing a file's data or metadata.
    Sync,
    /// Reading a file's length.
    Stat,
    /// Renaming a file.
    Rename,
    /// Removing a file.
    Remove,
    /// Listing a directory.
    ListDir,
    /// Syncing a directory's entries.
    SyncDir,
    /// Creating a directory.
    CreateDir,
    /// Checking whether a path exists.
    CheckExists,
    /// Allocating a file's space (`fallocate`).
    Allocate,
    /// Locking a file (`flock`).
    Lock,
}

impl fmt::Display for FileOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileOp::Open => "open",
            FileOp::Read => "read",
            FileOp::Write => "write",
            FileOp::Sync => "fsync",
            FileOp::Stat => "read the length of",
            FileOp::Rename => "rename",
            FileOp::Remove => "remove",
            FileOp::ListDir => "list directory",
            FileOp::SyncDir => "fsync directory",
            FileOp::CreateDir => "create directory",
            FileOp::CheckExists => "check for",
            FileOp::Allocate => "fallocate",
            FileOp::Lock => "lock",
        })
    }
}

/// An operation on a named file or directory failed.
///
/// Displays as PostgreSQL words it: `could not fsync "dir/file": <cause>`,
/// `could not rename "a" to "b": <cause>`. The cause is part of the message,
/// so it is not repeated as [`std::error::Error::source`]; inspect
/// [`IoFailure::error`] (its [`io::Error::kind`]) to tell `ENOSPC` from `EIO`.
#[derive(Debug, thiserror::Error)]
pub struct IoFailure {
    /// What was being done.
    pub op: FileOp,
    /// The file or directory it was done to (for a rename, the source).
    pub path: PathBuf,
    /// For a rename, the destination.
    pub to: Option<PathBuf>,
    /// The operating system's error.
    pub error: io::Error,
}

impl IoFailure {
    /// A failure of `op` on `path`.
    pub fn new(op: FileOp, path: &Path, error: io::Error) -> Self {
        IoFailure {
            op,
            path: path.to_path_buf(),
            to: None,
            error,
        }
    }

    /// A failure to rename `from` to `to`.
    pub fn rename(from: &Path, to: &Path, error: io::Error) -> Self {
        IoFailure {
            op: FileOp::Rename,
            path: from.to_path_buf(),
            to: Some(to.to_path_buf()),
            error,
        }
    }
}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not {} \"{}\"", self.op, self.path.display())?;
        if let Some(to) = &self.to {
            write!(f, " to \"{}\"", to.display())?;
        }
        write!(f, ": {}", self.error)
    }
}

/// A closure for `map_err` that turns an [`io::Error`] into an [`IoFailure`]
/// of `op` on `path`.
pub(crate) fn failed(op: FileOp, path: &Path) -> impl FnOnce(io::Error) -> IoFailure + '_ {
    move |error| IoFailure::new(op, path, error)
}

/// Why an operation on segment files failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoFailure),
    /// A segment was to be created or recycled under a name already taken.
    #[error("segment file \"{}\" already exists", .path.display())]
    AlreadyExists {
        /// The segment file.
        path: PathBuf,
    },
    /// A segment to be opened does not exist.
    #[error("segment {segno} is missing: no file \"{}\"", .path.display())]
    Missing {
        /// The segment number.
        segno: u64,
        /// The file that was looked for.
        path: PathBuf,
    },
    /// A segment file is not of the log's segment size: truncated, or not
    /// one of this log's segments.
    #[error("segment file \"{}\" has {len} bytes, expected {expected}: it was truncated or replaced; restore it or remove the log", .path.display())]
    WrongSize {
        /// The segment file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The log's segment size.
        expected: u64,
    },
    /// A segment is missing between segments that hold the log's WAL.
    #[error("segment {segno} is missing (no file \"{}\") but segment {later} after it holds this log's WAL: restore it", .path.display())]
    Hole {
        /// The missing segment's number.
        segno: u64,
        /// The file that was looked for.
        path: PathBuf,
        /// A later segment that holds WAL.
        later: u64,
    },
    /// Segments are to be prepared with `fallocate`
    /// ([`SegmentPrep::Fallocate`](super::SegmentPrep::Fallocate) or
    /// [`SegmentPrep::PageHeaders`](super::SegmentPrep::PageHeaders)) on a
    /// file system or storage without it.
    #[error("cannot prepare segment file \"{}\" with fallocate: {cause}; configure segment_prep = zero-fill", .path.display())]
    AllocateUnsupported {
        /// The temporary file being prepared.
        path: PathBuf,
        /// What the storage said.
        cause: String,
    },
    /// Direct I/O (`Config::direct_io`) was asked for, and the file system
    /// holding the log's directory refuses `O_DIRECT` (`EINVAL`).
    #[error("direct I/O (O_DIRECT) is not supported by the file system holding \"{}\" ({cause}): put the log on a file system that supports it (ext4, XFS, btrfs) or configure direct_io = false", .dir.display())]
    DirectIoUnsupported {
        /// The log's directory.
        dir: PathBuf,
        /// What the storage said.
        cause: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_operation_paths_and_cause() {
        let cause = io::Error::from_raw_os_error(libc::EIO).to_string();
        let e = IoFailure::rename(
            Path::new("a"),
            Path::new("b"),
            io::Error::from_raw_os_error(libc::EIO),
        );
        assert_eq!(
            e.to_string(),
            format!("could not rename \"a\" to \"b\": {cause}")
        );
        let e = SegmentError::from(IoFailure::new(
            FileOp::SyncDir,
            Path::new("/wal"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        ));
        assert!(
            e.to_string()
                .starts_with("could not fsync directory \"/wal\": "),
            "{e}"
        );
    }
}
