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

/// A store of WAL segments that the reader reads bytes from.
pub trait SegmentSource: Send {
    /// The segment size of the WAL this source serves.
    fn segment_size(&self) -> SegmentSize;

    /// Reads bytes of segment `segno` of timeline `tli` from file offset
    /// `offset` into `buf`, returning how many were read: all of `buf`, or
    /// fewer only where the segment ends early (a short file).
    fn read_at(
        &mut self,
        tli: TimeLineId,
        segno: u64,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, SourceError>;
}
