//! Where the reader gets segment bytes from: [`SegmentSource`], and
//! [`DirSource`] over a directory of segment files.
//!
//! The trait is the seam for fault injection: a storage layer that loses,
//! tears or fails reads can implement it and run under the same reader.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::ReadError;
use crate::format::le::Cursor;
use crate::lsn::{is_segment_file_name, SegmentSize, TimeLineId, PAGE_SIZE};

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

/// Segment files in a directory, read with `std::fs`.
#[derive(Debug)]
pub struct DirSource {
    dir: PathBuf,
    segment_size: SegmentSize,
    /// The file last read, kept open for sequential reads.
    open: Option<((TimeLineId, u64), File)>,
}

impl DirSource {
    /// A source over `dir` with a known segment size.
    pub fn new(dir: impl Into<PathBuf>, segment_size: SegmentSize) -> Self {
        DirSource {
            dir: dir.into(),
            segment_size,
            open: None,
        }
    }

    /// Opens the WAL in `dir`, or in `dir/pg_wal` when `dir` has no segment
    /// files, taking the segment size from the long page header of the
    /// lowest-named segment file, as pg_waldump does.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ReadError> {
        let given = dir.as_ref();
        let mut names = segment_names(given)?;
        let mut dir = given.to_path_buf();
        if names.is_empty() {
            let pg_wal = given.join("pg_wal");
            if pg_wal.is_dir() {
                names = segment_names(&pg_wal)?;
                dir = pg_wal;
            }
        }
        let first = names.first().ok_or_else(|| ReadError::NoSegments {
            dir: given.to_path_buf(),
        })?;
        let segment_size = read_segment_size(&dir, first)?;
        Ok(DirSource::new(dir, segment_size))
    }

    /// The directory the segment files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lowest segment number of timeline `tli` present, if any.
    pub fn first_segment(&self, tli: TimeLineId) -> Result<Option<u64>, ReadError> {
        Ok(segment_names(&self.dir)?
            .iter()
            .filter_map(|n| self.segment_size.parse_file_name(n))
            .filter(|&(t, _)| t == tli)
            .map(|(_, segno)| segno)
            .min())
    }

    fn file(&mut self, tli: TimeLineId, segno: u64) -> Result<&mut File, SourceError> {
        let entry = match self.open.take() {
            Some((key, file)) if key == (tli, segno) => (key, file),
            _ => {
                let name = self.segment_size.file_name(tli, segno);
                let path = self.dir.join(&name);
                let file = File::open(&path).map_err(|source| match source.kind() {
                    io::ErrorKind::NotFound => SourceError::Missing { name },
                    _ => SourceError::Io { path, source },
                })?;
                ((tli, segno), file)
            }
        };
        Ok(&mut self.open.insert(entry).1)
    }
}

impl SegmentSource for DirSource {
    fn segment_size(&self) -> SegmentSize {
        self.segment_size
    }

    fn read_at(
        &mut self,
        tli: TimeLineId,
        segno: u64,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, SourceError> {
        let file = self.file(tli, segno)?;
        read_full(file, offset, buf).map_err(|source| SourceError::Io {
            path: self.dir.join(self.segment_size.file_name(tli, segno)),
            source,
        })
    }
}

/// Reads from `offset` until `buf` is full or the file ends.
fn read_full(file: &mut File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    file.seek(SeekFrom::Start(offset))?;
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Names of the segment files in `dir` (24 hex digits), sorted.
fn segment_names(dir: &Path) -> Result<Vec<String>, ReadError> {
    let io_err = |source| ReadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        if let Some(name) = entry.file_name().to_str() {
            if is_segment_file_name(name) {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The `xlp_seg_size` of a segment file's long header (PostgreSQL:
/// pg_waldump's `search_directory`).
fn read_segment_size(dir: &Path, name: &str) -> Result<SegmentSize, ReadError> {
    let path = dir.join(name);
    let mut file = File::open(&path).map_err(|source| ReadError::Io {
        path: path.clone(),
        source,
    })?;
    let mut page = vec![0u8; PAGE_SIZE as usize];
    let read =
        read_full(&mut file, 0, &mut page).map_err(|source| ReadError::Io { path, source })?;
    if read < page.len() {
        return Err(ReadError::ShortFirstSegment {
            file: name.to_owned(),
            read,
            wanted: page.len(),
        });
    }
    let mut c = Cursor::new(&page);
    let size = c.skip(32).and_then(|()| c.u32()).unwrap_or_default();
    SegmentSize::new(u64::from(size)).map_err(|_| ReadError::BadSegmentSize {
        file: name.to_owned(),
        size,
    })
}
