//! [`WaldenLogStore`]: openraft's log storage (storage v2) on a Walden log.

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    ErrorSubject, ErrorVerb, LogId, LogState, OptionalSend, RaftLogReader, RaftTypeConfig,
    StorageError, Vote,
};
use walden::{Config, Lsn, ReadError, Record, SegmentSize, Wal};

use crate::codec::{LogRecord, RecordKind};
use crate::compact::{Checkpoints, Compaction};
use crate::contents::{read, write, LogContents, SharedContents};
use crate::error::RaftStoreError;
use crate::flusher::Flusher;
use crate::reader::WaldenLogReader;

/// The Walden record that carries `record`, or why its payload does not
/// serialise.
fn encode<C: RaftTypeConfig>(record: &LogRecord<C>) -> Result<Record<'static>, RaftStoreError> {
    record.encode().map_err(|source| RaftStoreError::Encode {
        kind: record.kind(),
        source,
    })
}

/// A raft log store for openraft 0.9 ([`RaftLogStorage`]) kept in a Walden
/// write-ahead log.
///
/// Every change (entry appended, vote, committed log id, truncation, purge)
/// is one Walden record with its own custom resource manager id
/// ([`RecordKind`]); the log itself is also kept in memory, rebuilt on
/// [`open`](Self::open) by replaying the records. Votes, truncations and
/// purges are durable when their call returns; appended entries are
/// readable when `append` returns and durable when its callback is called;
/// the committed log id is written without a sync (openraft allows it to
/// come back older after a crash).
///
/// Purging also reclaims disk: see [`crate::compact`] for how purged
/// entries leave the disk through Walden checkpoints, and the invariant that
/// keeps recovery complete.
///
/// The store must be the only user of its directory. Dropping it flushes
/// everything written.
pub struct WaldenLogStore<C: RaftTypeConfig> {
    flusher: Flusher<C>,
    wal: Arc<Wal>,
    contents: SharedContents<C>,
    checkpoints: Checkpoints,
    /// End of the last record this store inserted (at open: the durable
    /// end of the recovered log); what an `append` waits for.
    last_end: Lsn,
    dir: PathBuf,
}

impl<C: RaftTypeConfig> Debug for WaldenLogStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaldenLogStore")
            .field("dir", &self.dir)
            .field("last_end", &self.last_end)
            .finish()
    }
}

impl<C> WaldenLogStore<C>
where
    C: RaftTypeConfig,
    C::Entry: Clone,
{
    /// Opens the raft log in `dir`, creating an empty one if `dir` holds no
    /// Walden log. Opening recovers the Walden log to its end and replays
    /// the store's records from the segment of the last checkpoint's redo
    /// point.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Self, RaftStoreError> {
        let dir = dir.as_ref().to_path_buf();
        let seg = SegmentSize::new(config.segment_size)?;
        let wal_err = |source| RaftStoreError::Wal {
            dir: dir.clone(),
            source,
        };
        let (wal, redo, end) = if Wal::exists(&dir) {
            let (wal, report) = Wal::open(&dir, config).map_err(wal_err)?;
            (wal, report.redo, report.end)
        } else {
            let wal = Wal::create(&dir, config).map_err(wal_err)?;
            let here = wal.insert_position();
            (wal, here, here)
        };
        let checkpoints = Checkpoints::new(seg, redo);
        let contents = replay(&wal, &dir, checkpoints.replay_start(), end)?;
        let wal = Arc::new(wal);
        Ok(WaldenLogStore {
            flusher: Flusher::start(wal.clone(), dir.clone())?,
            last_end: wal.flushed(),
            wal,
            contents: Arc::new(RwLock::new(contents)),
            checkpoints,
            dir,
        })
    }

    /// The directory of the Walden log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reclaims the disk space of purged entries if a whole segment can go
    /// ([`crate::compact`]). `purge` calls this; calling it again changes
    /// nothing until the log has filled another segment.
    pub fn compact(&mut self) -> Result<Compaction, RaftStoreError> {
        let contents = &self.contents;
        self.checkpoints.compact(&self.wal, &self.dir, || {
            read(contents)
                .rebuild_records()
                .iter()
                .map(encode)
                .collect()
        })
    }

    /// Logs `record` if it fits the log, then applies it; returns the end
    /// of its Walden record (not yet flushed).
    fn log(&mut self, record: LogRecord<C>) -> Result<Lsn, RaftStoreError> {
        let kind = record.kind();
        let mut contents = write(&self.contents);
        contents
            .check(&record)
            .map_err(|source| RaftStoreError::Rejected { kind, source })?;
        let end = self
            .wal
            .insert(&encode(&record)?)
            .map_err(|source| self.wal_err(source))?;
        contents.apply_checked(record);
        self.last_end = end;
        Ok(end)
    }

    /// Logs `record` and waits until it is durable: asynchronously, woken
    /// by Walden's background writer, so the executor thread is not held in
    /// the sync; with no background writer (`Config::writer_delay` `None`)
    /// by a blocking flush.
    async fn log_durably(&mut self, record: LogRecord<C>) -> Result<(), RaftStoreError> {
        let end = self.log(record)?;
        let flushed = if self.wal.config().writer_delay.is_some() {
            self.wal.flush_async(end).await
        } else {
            self.wal.flush(end)
        };
        flushed.map_err(|source| self.wal_err(source))?;
        Ok(())
    }

    fn wal_err(&self, source: walden::Error) -> RaftStoreError {
        RaftStoreError::Wal {
            dir: self.dir.clone(),
            source,
        }
    }

    fn reader(&self) -> WaldenLogReader<C> {
        WaldenLogReader::new(self.contents.clone())
    }
}

/// Rebuilds the log from the store's records in `wal` from `start`, which
/// must reach `end`, the end of WAL recovery found. Records of other
/// resource managers (Walden's checkpoints and segment switches) are
/// skipped.
///
/// PostgreSQL: the redo loop of `StartupXLOG`.
fn replay<C>(wal: &Wal, dir: &Path, start: Lsn, end: Lsn) -> Result<LogContents<C>, RaftStoreError>
where
    C: RaftTypeConfig,
    C::Entry: Clone,
{
    let read_err = |source| RaftStoreError::Read {
        dir: dir.to_path_buf(),
        from: start,
        source,
    };
    let mut reader = wal.reader(start).map_err(|source| RaftStoreError::Wal {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut contents = LogContents::default();
    let mut reached = start;
    let stop = loop {
        let record = match reader.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break String::from("end of the requested range"),
            Err(e @ ReadError::EndOfWal { .. }) => break e.to_string(),
            Err(e) => return Err(read_err(e)),
        };
        reached = reader.next_lsn();
        let Some(kind) = RecordKind::from_rmid(record.header.rmid) else {
            continue;
        };
        let lsn = record.lsn;
        let body = record
            .decode_body()
            .map_err(|source| RaftStoreError::Body {
                dir: dir.to_path_buf(),
                lsn,
                source,
            })?;
        let change =
            LogRecord::decode(kind, &body.main_data).map_err(|source| RaftStoreError::Decode {
                dir: dir.to_path_buf(),
                kind,
                lsn,
                source,
            })?;
        contents
            .apply(change)
            .map_err(|source| RaftStoreError::Replay {
                dir: dir.to_path_buf(),
                kind,
                lsn,
                source,
            })?;
    };
    if reached < end {
        return Err(RaftStoreError::ReplayCutShort {
            dir: dir.to_path_buf(),
            stopped: reached,
            end,
            reason: stop,
        });
    }
    Ok(contents)
}

impl<C> RaftLogReader<C> for WaldenLogStore<C>
where
    C: RaftTypeConfig,
    C::Entry: Clone,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).entries(range))
    }
}

impl<C> RaftLogStorage<C> for WaldenLogStore<C>
where
    C: RaftTypeConfig,
    C::Entry: Clone,
{
    type LogReader = WaldenLogReader<C>;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).log_state())
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader()
    }

    /// PostgreSQL-style durable commit of the vote: insert, then flush
    /// (asynchronously, see `log_durably`).
    async fn save_vote(&mut self, vote: &Vote<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        self.log_durably(LogRecord::Vote(vote.clone()))
            .await
            .map_err(|e| e.into_storage_error(ErrorSubject::Vote, ErrorVerb::Write))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<C::NodeId>>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).vote())
    }

    /// Logged without a sync: it becomes durable with the next flush.
    async fn save_committed(
        &mut self,
        committed: Option<LogId<C::NodeId>>,
    ) -> Result<(), StorageError<C::NodeId>> {
        self.log(LogRecord::Committed(committed))
            .map(drop)
            .map_err(|e| e.into_storage_error(ErrorSubject::Store, ErrorVerb::Write))
    }

    async fn read_committed(
        &mut self,
    ) -> Result<Option<LogId<C::NodeId>>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).committed())
    }

    /// Entries are readable on return; `callback` is called by the flush
    /// thread once they are durable.
    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<C>,
    ) -> Result<(), StorageError<C::NodeId>>
    where
        I: IntoIterator<Item = C::Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        for entry in entries {
            self.log(LogRecord::Entry(entry))
                .map_err(|e| e.into_storage_error(ErrorSubject::Logs, ErrorVerb::Write))?;
        }
        self.flusher.complete_when_durable(self.last_end, callback);
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        self.log_durably(LogRecord::Truncate {
            since: log_id.index,
        })
        .await
        .map_err(|e| e.into_storage_error(ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }

    /// Logs the purge durably, then [compacts](Self::compact).
    async fn purge(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        let subject = || ErrorSubject::Log(log_id.clone());
        self.log_durably(LogRecord::Purge {
            upto: log_id.clone(),
        })
        .await
        .map_err(|e| e.into_storage_error(subject(), ErrorVerb::Delete))?;
        self.compact()
            .map(drop)
            .map_err(|e| e.into_storage_error(subject(), ErrorVerb::Delete))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{entry, log_id, TestConfig};
    use openraft::storage::RaftLogStorageExt;
    use walden::SyncMethod;

    type Store = WaldenLogStore<TestConfig>;

    fn config() -> Config {
        Config {
            segment_size: 1 << 20,
            buffers: 1 << 20,
            sync_method: SyncMethod::None,
            ..Config::default()
        }
    }

    /// Everything the store answers, as JSON: entries, vote, committed,
    /// last purged and last log id.
    fn summary(store: &Store) -> String {
        let contents = read(&store.contents);
        let state = contents.log_state();
        let all = (
            contents.entries(..),
            contents.vote(),
            contents.committed(),
            state.last_purged_log_id,
            state.last_log_id,
        );
        serde_json::to_string(&all).unwrap()
    }

    /// Entries 0..200 of 20 kB (several 1 MiB segments), a vote, a committed
    /// log id and a purge up to 179 logged, but no compaction run.
    async fn filled(dir: &Path) -> Store {
        let mut store = Store::open(dir, config()).unwrap();
        store
            .blocking_append((0..200).map(|i| entry(1, i, 20_000)))
            .await
            .unwrap();
        store.save_vote(&Vote::new(4, 1)).await.unwrap();
        store.save_committed(Some(log_id(1, 190))).await.unwrap();
        store
            .log_durably(LogRecord::Purge {
                upto: log_id(1, 179),
            })
            .await
            .unwrap();
        store
    }

    /// A crash after some of the rebuild records were written but before
    /// the checkpoint: the previous checkpoint stays in force and replay
    /// meets a prefix of the rebuild records, which must change nothing.
    #[tokio::test]
    async fn a_compaction_cut_short_before_its_checkpoint_loses_nothing() {
        for written in [0, 1, 3, 10, usize::MAX] {
            let dir = tempfile::tempdir().unwrap();
            let store = filled(dir.path()).await;
            let want = summary(&store);
            let records = read(&store.contents).rebuild_records();
            assert_eq!(
                records.len(),
                3 + 20,
                "purge point, vote, committed and entries 180..200"
            );
            let prefix = || records.iter().take(written).map(encode).collect();
            let outcome = store
                .checkpoints
                .write_rebuild(&store.wal, &store.dir, prefix)
                .unwrap();
            assert!(matches!(outcome, Compaction::Done { .. }), "{outcome:?}");
            drop(store);

            let store = Store::open(dir.path(), config()).unwrap();
            assert_eq!(
                summary(&store),
                want,
                "with {written} rebuild records written"
            );
        }
    }

    #[tokio::test]
    async fn a_finished_compaction_starts_replay_at_its_segment() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = filled(dir.path()).await;
        let want = summary(&store);
        let Compaction::Done { segno, records, .. } = store.compact().unwrap() else {
            panic!("the log spans several segments: compaction must run");
        };
        assert_eq!(records, 23);
        assert_eq!(
            store.checkpoints.replay_start(),
            SegmentSize::new(1 << 20).unwrap().segment_start(segno)
        );
        drop(store);

        let store = Store::open(dir.path(), config()).unwrap();
        assert_eq!(
            store.checkpoints.replay_start().0 >> 20,
            segno,
            "recovery starts at the compacted segment"
        );
        assert_eq!(summary(&store), want);
    }
}
