//! [`DirSource`]: the segment files of a directory, found and read as
//! pg_waldump does.
//!
//! Every file operation goes through a [`Storage`]: [`FsStorage`] for
//! `walden dump`/`stat`/`verify`, or any other (the fault-injecting
//! `SimStorage` in tests), so the standalone reader sees exactly what the
//! engine's storage layer holds.
//!
//! PostgreSQL: pg_waldump's `WALDumpOpenSegment` and `WALDumpReadPage`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::segment_source::{SegmentPos, SegmentSource, SourceError};
use super::storage_segments::{read_full, StorageSource};
use super::ReadError;
use crate::format::little_endian::fixed_field;
use crate::format::page::XLP_SEG_SIZE;
use crate::lsn::{is_segment_file_name, SegmentSize, TimeLineId, PAGE_SIZE};
use crate::segment::{FsStorage, OpenOptions, Storage};

/// Segment files in a directory, found and read through a [`Storage`]
/// ([`FsStorage`] unless given another): a storage source that also
/// finds the directory and its segment size, as pg_waldump does.
#[derive(Debug)]
pub struct DirSource {
    files: StorageSource,
}

impl DirSource {
    /// A source over `dir` of the operating system's file system, with a
    /// known segment size.
    pub fn new(dir: impl Into<PathBuf>, segment_size: SegmentSize) -> Self {
        DirSource::new_with_storage(dir, segment_size, Arc::new(FsStorage))
    }

    /// [`DirSource::new`] over another [`Storage`].
    pub fn new_with_storage(
        dir: impl Into<PathBuf>,
        segment_size: SegmentSize,
        storage: Arc<dyn Storage>,
    ) -> Self {
        DirSource {
            files: StorageSource::new(storage, dir, segment_size),
        }
    }

    /// Opens the WAL in `dir`, or in `dir/pg_wal` when `dir` has no segment
    /// files, taking the segment size from the long page header of the
    /// lowest-named segment file, as pg_waldump does.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ReadError> {
        DirSource::open_with_storage(dir, Arc::new(FsStorage))
    }

    /// [`DirSource::open`] over another [`Storage`].
    pub fn open_with_storage(
        dir: impl AsRef<Path>,
        storage: Arc<dyn Storage>,
    ) -> Result<Self, ReadError> {
        let given = dir.as_ref();
        let mut names = segment_names(&*storage, given)?;
        let mut dir = given.to_path_buf();
        if names.is_empty() {
            let pg_wal = given.join("pg_wal");
            if let Some(found) = segment_names_if_dir(&*storage, &pg_wal)? {
                names = found;
                dir = pg_wal;
            }
        }
        let first = names.first().ok_or_else(|| ReadError::NoSegments {
            dir: given.to_path_buf(),
        })?;
        let segment_size = read_segment_size(&*storage, &dir, first)?;
        Ok(DirSource::new_with_storage(dir, segment_size, storage))
    }

    /// The directory the segment files are in.
    pub fn dir(&self) -> &Path {
        self.files.dir()
    }

    /// The storage the segment files are read through.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        self.files.storage()
    }

    /// The lowest segment number of timeline `tli` present, if any.
    pub fn first_segment(&self, tli: TimeLineId) -> Result<Option<u64>, ReadError> {
        let segment_size = self.files.segment_size();
        Ok(segment_names(&**self.storage(), self.dir())?
            .iter()
            .filter_map(|n| segment_size.parse_file_name(n))
            .filter(|&(t, _)| t == tli)
            .map(|(_, segno)| segno)
            .min())
    }
}

impl SegmentSource for DirSource {
    fn segment_size(&self) -> SegmentSize {
        self.files.segment_size()
    }

    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError> {
        self.files.read_at(at, buf)
    }
}

/// Names of the segment files in `dir` (24 hex digits), sorted.
fn segment_names(storage: &dyn Storage, dir: &Path) -> Result<Vec<String>, ReadError> {
    let mut names = storage.list_dir(dir).map_err(|source| ReadError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    names.retain(|name| is_segment_file_name(name));
    names.sort();
    Ok(names)
}

/// [`segment_names`] of `dir`, or `None` if there is no directory there
/// (nothing, or a file).
fn segment_names_if_dir(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<Option<Vec<String>>, ReadError> {
    match segment_names(storage, dir) {
        Ok(names) => Ok(Some(names)),
        Err(ReadError::Io { source, .. })
            if matches!(
                source.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The `xlp_seg_size` of a segment file's long header (PostgreSQL:
/// pg_waldump's `search_directory`).
fn read_segment_size(
    storage: &dyn Storage,
    dir: &Path,
    name: &str,
) -> Result<SegmentSize, ReadError> {
    let path = dir.join(name);
    let io_err = |source| ReadError::Io {
        path: path.clone(),
        source,
    };
    let file = storage
        .open(&path, &OpenOptions::new().read(true))
        .map_err(io_err)?;
    let mut page = vec![0u8; PAGE_SIZE as usize];
    let read = read_full(&*file, 0, &mut page).map_err(io_err)?;
    if read < page.len() {
        return Err(ReadError::ShortFirstSegment {
            file: name.to_owned(),
            read,
            wanted: page.len(),
        });
    }
    let size = u32::from_le_bytes(fixed_field(&page, XLP_SEG_SIZE));
    SegmentSize::new(u64::from(size)).map_err(|_| ReadError::BadSegmentSize {
        file: name.to_owned(),
        size,
    })
}
