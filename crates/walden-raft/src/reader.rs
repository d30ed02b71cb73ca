//! [`WaldenLogReader`]: reads entries through the index, from the
//! [`crate::cache::TailCache`] when they are recent and from the WAL
//! otherwise; the log reader openraft's replication tasks use, and what
//! the store itself reads with.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::PathBuf;
use std::sync::Arc;

use openraft::{
    ErrorSubject, ErrorVerb, OptionalSend, RaftLogReader, RaftTypeConfig, StorageError,
};
use walden::{Lsn, ReadError, Wal};

use crate::codec::{decode_entry, RecordKind};
use crate::contents::{read, LogContents, SharedContents};
use crate::error::RaftStoreError;

/// Reads the entries of a [`crate::WaldenLogStore`]: it sees every entry
/// once `append` has returned. Cheap to clone.
pub struct WaldenLogReader<C: RaftTypeConfig> {
    wal: Arc<Wal>,
    contents: SharedContents<C>,
    dir: Arc<PathBuf>,
}

impl<C: RaftTypeConfig> Clone for WaldenLogReader<C> {
    fn clone(&self) -> Self {
        WaldenLogReader {
            wal: self.wal.clone(),
            contents: self.contents.clone(),
            dir: self.dir.clone(),
        }
    }
}

impl<C: RaftTypeConfig> WaldenLogReader<C> {
    pub(crate) fn new(wal: Arc<Wal>, contents: SharedContents<C>, dir: PathBuf) -> Self {
        WaldenLogReader {
            wal,
            contents,
            dir: Arc::new(dir),
        }
    }

    /// The live entries in `range`, in index order. The index stays
    /// read-locked for the duration, so a purge cannot recycle a segment
    /// being read.
    pub(crate) fn entries<R: RangeBounds<u64>>(
        &self,
        range: R,
    ) -> Result<Vec<C::Entry>, RaftStoreError> {
        let contents = read(&self.contents);
        let (Some(first), Some(last)) = (contents.index.first_index(), contents.index.last_index())
        else {
            return Ok(Vec::new());
        };
        let start = match range.start_bound() {
            Bound::Included(&s) => s.max(first),
            Bound::Excluded(&s) => s.saturating_add(1).max(first),
            Bound::Unbounded => first,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.min(last).saturating_add(1),
            Bound::Excluded(&e) => e.min(last + 1),
            Bound::Unbounded => last + 1,
        };
        if start >= end {
            return Ok(Vec::new());
        }
        let cached_from = contents.cache.first_index().unwrap_or(u64::MAX).max(start);
        let mut out = Vec::with_capacity(usize::try_from(end - start).unwrap_or(0));
        self.read_wal(&contents, start..cached_from.min(end), &mut out)?;
        for index in cached_from..end {
            let data = contents
                .cache
                .get(index)
                .ok_or_else(|| self.missing(index, Lsn::INVALID))?;
            out.push(self.decode(index, data)?);
        }
        Ok(out)
    }

    /// Reads entries `range` from the WAL in one pass: their records are
    /// in index order, so one reader from the first one meets them all,
    /// skipping the records between (other kinds, superseded entries).
    fn read_wal(
        &self,
        contents: &LogContents<C>,
        range: std::ops::Range<u64>,
        out: &mut Vec<C::Entry>,
    ) -> Result<(), RaftStoreError> {
        let Some(from) = contents.index.lsn(range.start) else {
            return Ok(());
        };
        // The reader sees what has been written: entries beyond the cache
        // that are not yet on disk (a cache smaller than one flush) are
        // written first. The next entry's record, or the end of the last
        // record inserted, bounds the last one's.
        let need = contents.index.lsn(range.end).unwrap_or(contents.end);
        if self.wal.flushed() < need {
            self.wal
                .flush(need)
                .map_err(|source| self.wal_err(source))?;
        }
        let mut reader = self
            .wal
            .reader(from)
            .map_err(|source| self.wal_err(source))?;
        for index in range {
            let want = contents
                .index
                .lsn(index)
                .ok_or_else(|| self.missing(index, Lsn::INVALID))?;
            let record = loop {
                let record = match reader.next_record() {
                    Ok(Some(record)) => record,
                    Ok(None) | Err(ReadError::EndOfWal { .. }) => {
                        return Err(self.missing(index, want))
                    }
                    Err(source) => return Err(self.read_err(from, source)),
                };
                if record.lsn > want {
                    return Err(self.missing(index, want));
                }
                if record.lsn == want {
                    break record;
                }
            };
            if RecordKind::from_rmid(record.header.rmid) != Some(RecordKind::Entry) {
                return Err(self.missing(index, want));
            }
            let body = record
                .decode_body()
                .map_err(|source| RaftStoreError::Body {
                    dir: self.dir.to_path_buf(),
                    lsn: want,
                    source,
                })?;
            out.push(self.decode(index, &body.main_data)?);
        }
        Ok(())
    }

    fn decode(&self, index: u64, data: &[u8]) -> Result<C::Entry, RaftStoreError> {
        decode_entry::<C>(data).map_err(|source| RaftStoreError::EntryCorrupt {
            dir: self.dir.to_path_buf(),
            index,
            source,
        })
    }

    fn missing(&self, index: u64, lsn: Lsn) -> RaftStoreError {
        RaftStoreError::EntryMissing {
            dir: self.dir.to_path_buf(),
            index,
            lsn,
        }
    }

    fn wal_err(&self, source: walden::Error) -> RaftStoreError {
        RaftStoreError::Wal {
            dir: self.dir.to_path_buf(),
            source,
        }
    }

    fn read_err(&self, from: Lsn, source: ReadError) -> RaftStoreError {
        RaftStoreError::Read {
            dir: self.dir.to_path_buf(),
            from,
            source,
        }
    }
}

impl<C> RaftLogReader<C> for WaldenLogReader<C>
where
    C: RaftTypeConfig,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        self.entries(range)
            .map_err(|e| e.into_storage_error(ErrorSubject::Logs, ErrorVerb::Read))
    }
}
