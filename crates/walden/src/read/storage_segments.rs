//! [`StorageSource`]: segment files read through a [`Storage`], so that the
//! reader and recovery see exactly what the engine's storage layer holds
//! (including a fault-injecting one).
//!
//! PostgreSQL: `WALRead` over the segments the startup process opens
//! (`XLogFileRead`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::segment_source::{SegmentPos, SegmentSource, SourceError};
use crate::lsn::{SegmentSize, TimeLineId};
use crate::segment::{OpenOptions, Storage, StorageFile};

/// The segment files of a directory, read through a [`Storage`].
#[derive(Debug)]
pub struct StorageSource {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    segment_size: SegmentSize,
    /// The file last read, kept open for sequential reads.
    open: Option<((TimeLineId, u64), Box<dyn StorageFile>)>,
}

impl StorageSource {
    /// A source over the segment files in `dir`, of `segment_size`, read
    /// through `storage`. Touches nothing until the first read.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: impl Into<PathBuf>,
        segment_size: SegmentSize,
    ) -> Self {
        StorageSource {
            storage,
            dir: dir.into(),
            segment_size,
            open: None,
        }
    }

    /// The directory the segment files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The storage the segment files are read through.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    fn file(&mut self, tli: TimeLineId, segno: u64) -> Result<&dyn StorageFile, SourceError> {
        let entry = match self.open.take() {
            Some((key, file)) if key == (tli, segno) => (key, file),
            _ => {
                let name = self.segment_size.file_name(tli, segno);
                let path = self.dir.join(&name);
                let file = self
                    .storage
                    .open(&path, &OpenOptions::new().read(true))
                    .map_err(|source| match source.kind() {
                        io::ErrorKind::NotFound => SourceError::Missing { name },
                        _ => SourceError::Io { path, source },
                    })?;
                ((tli, segno), file)
            }
        };
        Ok(&*self.open.insert(entry).1)
    }
}

impl SegmentSource for StorageSource {
    fn segment_size(&self) -> SegmentSize {
        self.segment_size
    }

    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError> {
        let SegmentPos { tli, segno, offset } = at;
        let result = read_full(self.file(tli, segno)?, offset, buf);
        result.map_err(|source| {
            // A failed handle is not reused: the next read reopens the file.
            self.open = None;
            SourceError::Io {
                path: self.dir.join(self.segment_size.file_name(tli, segno)),
                source,
            }
        })
    }
}

/// Reads from `offset` until `buf` is full or the file ends.
pub(super) fn read_full(
    file: &dyn StorageFile,
    mut offset: u64,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::SimStorage;
    use std::path::Path;

    #[test]
    fn reads_through_the_storage_and_reports_missing_segments() {
        let sim = SimStorage::new(1);
        let dir = Path::new("/wal");
        sim.create_dir_all(dir).unwrap();
        let seg = SegmentSize::new(1 << 20).unwrap();
        let name = seg.file_name(1, 3);
        sim.set_contents(&dir.join(&name), &[7u8; 100]).unwrap();
        let mut source = StorageSource::new(Arc::new(sim.clone()), dir, seg);
        let mut buf = [0u8; 64];
        let at = |segno, offset| SegmentPos {
            tli: 1,
            segno,
            offset,
        };
        assert_eq!(source.read_at(at(3, 50), &mut buf).unwrap(), 50);
        assert!(buf[..50].iter().all(|&b| b == 7));
        match source.read_at(at(4, 0), &mut buf) {
            Err(SourceError::Missing { name: missing }) => {
                assert_eq!(missing, seg.file_name(1, 4))
            }
            other => panic!("expected a missing segment, got {other:?}"),
        }
        sim.fail_read(1);
        match source.read_at(at(3, 0), &mut buf) {
            Err(SourceError::Io { path, .. }) => assert_eq!(path, dir.join(&name)),
            other => panic!("expected an I/O error, got {other:?}"),
        }
        assert_eq!(source.read_at(at(3, 0), &mut buf).unwrap(), 64);
    }
}
