//! Where the reader gets segment bytes from: the [`SegmentSource`] trait
//! and its errors. The sources are `storage_segments` (segment files
//! through a [`Storage`](crate::segment::Storage)) and `dir_source` (a
//! directory of them, found as pg_waldump finds it).
//!
//! PostgreSQL: pg_waldump's `XLogReaderRoutine`.

use std::io;
use std::path::PathBuf;

use crate::lsn::{SegmentSize, TimeLineId};

/// Why a [`SegmentSource`] could not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The segment does not exist. The reader reports it as the end of WAL.
    #[error("could not find file \"{name}\": No such file or directory")]
    Missing {
        /// The segment file's name.
        name: String,
    },
    /// Any other I/O error.
    #[error("could not read file \"{}\": {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// Where a read of segment bytes starts: segment `segno` of timeline `tli`,
/// at byte `offset` of its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentPos {
    /// The timeline the segment's name carries.
    pub tli: TimeLineId,
    /// The segment number.
    pub segno: u64,
    /// The byte offset in the segment file.
    pub offset: u64,
}

/// A store of WAL segments that the reader reads bytes from.
pub trait SegmentSource: Send {
    /// The segment size of the WAL this source serves.
    fn segment_size(&self) -> SegmentSize;

    /// Reads the bytes of a segment file from `at` into `buf`, returning how
    /// many were read: all of `buf`, or fewer only where the segment ends
    /// early (a short file).
    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError>;
}
