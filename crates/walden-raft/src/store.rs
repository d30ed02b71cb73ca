//! [`WaldenLogStore`]: openraft's log storage (storage v2) on a Walden log.

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    ErrorSubject, ErrorVerb, LogId, LogState, OptionalSend, RaftLogId, RaftLogReader,
    RaftTypeConfig, StorageError, Vote,
};
use walden::{Batch, Config, Lsn, ReadError, Record, SegmentSize, Wal};

use crate::codec::{encode_entry, Change, Meta, RecordKind, RM_RAFT_ENTRY};
use crate::compact::{Checkpoints, Compaction};
use crate::contents::{read, write, LogContents, SharedContents};
use crate::error::RaftStoreError;
use crate::flusher::Flusher;
use crate::reader::WaldenLogReader;

/// Default capacity of the store's cache of recent entries, bytes.
pub const DEFAULT_CACHE_BYTES: usize = 4 << 20;

/// Options of a [`WaldenLogStore`] beyond its Walden [`Config`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Capacity of the cache of the most recently appended entries, in
    /// bytes of encoded entries (plus a pointer's worth each); reads of
    /// older entries go to the WAL. 0 caches nothing.
    pub cache_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

impl StoreOptions {
    /// These options with a cache of `cache_bytes`.
    pub fn with_cache_bytes(mut self, cache_bytes: usize) -> Self {
        self.cache_bytes = cache_bytes;
        self
    }
}

/// The Walden record that carries `meta`, or why it does not serialise.
fn encode_meta<NID: openraft::NodeId>(meta: &Meta<NID>) -> Result<Record<'static>, RaftStoreError> {
    meta.encode().map_err(|source| RaftStoreError::Encode {
        kind: meta.kind(),
        source,
    })
}

/// A raft log store for openraft 0.9 ([`RaftLogStorage`]) kept in a Walden
/// write-ahead log.
///
/// Every change (entries appended, vote, committed log id, truncation,
/// purge) is one Walden record with its own custom resource manager id
/// ([`RecordKind`]), its payload in postcard's compact binary form. Only
/// an index stays in memory: each live entry's LSN (8 bytes an entry), one
/// leader id per run of entries, the vote, the committed log id and the
/// purge point, plus a bounded cache of the newest entries
/// ([`StoreOptions::cache_bytes`]); [`memory_footprint`](Self::memory_footprint)
/// counts it. Entries are read back from the WAL on demand.
/// [`open`](Self::open) rebuilds the index by reading the records once,
/// decoding only each entry's log id.
///
/// An `append` inserts its entries as one Walden batch (one reservation,
/// all or none after a crash). Votes, truncations and purges are durable
/// when their call returns; appended entries are readable when `append`
/// returns and durable when its callback is called; the committed log id
/// is written without a sync (openraft allows it to come back older after
/// a crash).
///
/// Purging also reclaims disk: see [`crate::compact`] for how a checkpoint
/// at the first live entry lets the segments below it go.
///
/// The store must be the only user of its directory. Dropping it flushes
/// everything written.
pub struct WaldenLogStore<C: RaftTypeConfig> {
    flusher: Flusher<C>,
    wal: Arc<Wal>,
    contents: SharedContents<C>,
    reader: WaldenLogReader<C>,
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

impl<C: RaftTypeConfig> WaldenLogStore<C> {
    /// Opens the raft log in `dir` with the default [`StoreOptions`],
    /// creating an empty one if `dir` holds no Walden log.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Self, RaftStoreError> {
        Self::open_with(dir, config, StoreOptions::default())
    }

    /// Opens the raft log in `dir`, creating an empty one if `dir` holds no
    /// Walden log. Opening recovers the Walden log to its end and rebuilds
    /// the index from the store's records since the last checkpoint's redo
    /// point.
    pub fn open_with(
        dir: impl AsRef<Path>,
        config: Config,
        options: StoreOptions,
    ) -> Result<Self, RaftStoreError> {
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
        let mut contents = LogContents::new(options.cache_bytes);
        replay(&wal, &dir, checkpoints.replay_start(), end, &mut contents)?;
        contents.end = wal.flushed();
        let wal = Arc::new(wal);
        let contents = Arc::new(RwLock::new(contents));
        Ok(WaldenLogStore {
            flusher: Flusher::start(wal.clone(), dir.clone())?,
            last_end: wal.flushed(),
            reader: WaldenLogReader::new(wal.clone(), contents.clone(), dir.clone()),
            wal,
            contents,
            checkpoints,
            dir,
        })
    }

    /// The directory of the Walden log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Walden log's counters since the store opened.
    pub fn wal_stats(&self) -> walden::Stats {
        self.wal.stats()
    }

    /// Heap bytes the store holds for the raft log: its index (8 bytes an
    /// entry, one leader id per run, rings counted at their capacity) and
    /// its cache of recent entries. Bounded by the index, whatever the
    /// entries weigh: see the crate documentation for a measured figure.
    pub fn memory_footprint(&self) -> usize {
        read(&self.contents).footprint()
    }

    /// Reclaims the disk space of purged entries if a whole segment can go
    /// ([`crate::compact`]). `purge` calls this; calling it again changes
    /// nothing until the first live entry has moved to a later segment.
    pub fn compact(&mut self) -> Result<Compaction, RaftStoreError> {
        let (first_live, state) = {
            let contents = read(&self.contents);
            let first = contents.index.first_index();
            (
                first.and_then(|i| contents.index.lsn(i)),
                contents.state_records(),
            )
        };
        let state = state.iter().map(encode_meta).collect::<Result<_, _>>()?;
        self.checkpoints
            .compact(&self.wal, &self.dir, first_live, state)
    }

    /// Logs `meta` and applies it; returns the end of its Walden record
    /// (not yet flushed).
    fn log(&mut self, meta: Meta<C::NodeId>) -> Result<Lsn, RaftStoreError> {
        let record = encode_meta(&meta)?;
        let mut contents = write(&self.contents);
        let end = self
            .wal
            .insert(&record)
            .map_err(|source| self.wal_err(source))?;
        contents.apply_checked(Change::Meta(meta));
        contents.end = end;
        self.last_end = end;
        Ok(end)
    }

    /// Logs `entries` as one Walden batch if they all fit the log, then
    /// indexes and caches them. Nothing is logged if one does not fit.
    fn log_entries(
        &mut self,
        entries: impl IntoIterator<Item = C::Entry>,
    ) -> Result<(), RaftStoreError> {
        let encoded = entries
            .into_iter()
            .map(|e| {
                let data = encode_entry::<C>(&e).map_err(|source| RaftStoreError::Encode {
                    kind: RecordKind::Entry,
                    source,
                })?;
                Ok((e.get_log_id().clone(), data))
            })
            .collect::<Result<Vec<_>, RaftStoreError>>()?;
        if encoded.is_empty() {
            return Ok(());
        }
        let mut contents = write(&self.contents);
        // Index the entries first (their LSNs are not known yet) so that
        // each is checked against the ones before it; undo on failure.
        let mut added = Vec::with_capacity(encoded.len());
        let mut failed = None;
        for (log_id, _) in &encoded {
            let change = Change::Entry {
                log_id: log_id.clone(),
                lsn: Lsn::INVALID,
            };
            match contents.apply(change) {
                Ok(new) => added.push(new),
                Err(source) => {
                    failed = Some(RaftStoreError::Rejected {
                        kind: RecordKind::Entry,
                        source,
                    });
                    break;
                }
            }
        }
        let spans = match failed {
            Some(e) => Err(e),
            None => {
                let batch: Batch = encoded
                    .iter()
                    .map(|(_, data)| Record::new(RM_RAFT_ENTRY, 0, &data[..]))
                    .collect();
                self.wal
                    .insert_batch(&batch)
                    .map_err(|source| self.wal_err(source))
            }
        };
        let spans = match spans {
            Ok(spans) => spans,
            Err(e) => {
                let first_added = encoded.iter().zip(&added).find(|(_, new)| **new);
                if let Some(((log_id, _), _)) = first_added {
                    contents.index.truncate(log_id.index);
                }
                return Err(e);
            }
        };
        for (((log_id, data), new), span) in encoded.iter().zip(&added).zip(&spans.records) {
            if *new {
                contents.index.set_lsn(log_id.index, span.start);
                contents.cache.push(log_id.index, data);
            }
        }
        contents.end = spans.end;
        self.last_end = spans.end;
        Ok(())
    }

    /// Logs `meta` and waits until it is durable: asynchronously, woken
    /// by Walden's background writer, so the executor thread is not held in
    /// the sync; with no background writer (`Config::writer_delay` `None`)
    /// by a blocking flush.
    async fn log_durably(&mut self, meta: Meta<C::NodeId>) -> Result<(), RaftStoreError> {
        let end = self.log(meta)?;
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
}

/// Rebuilds `contents` from the store's records in `wal` from `start`,
/// which must reach `end`, the end of WAL recovery found. Records of other
/// resource managers (Walden's checkpoints, batch markers and segment
/// switches) are skipped; entries are indexed by their log id prefix.
///
/// PostgreSQL: the redo loop of `StartupXLOG`.
fn replay<C: RaftTypeConfig>(
    wal: &Wal,
    dir: &Path,
    start: Lsn,
    end: Lsn,
    contents: &mut LogContents<C>,
) -> Result<(), RaftStoreError> {
    let read_err = |source| RaftStoreError::Read {
        dir: dir.to_path_buf(),
        from: start,
        source,
    };
    let mut reader = wal.reader(start).map_err(|source| RaftStoreError::Wal {
        dir: dir.to_path_buf(),
        source,
    })?;
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
        let change = Change::decode(kind, lsn, &body.main_data).map_err(|source| {
            RaftStoreError::Decode {
                dir: dir.to_path_buf(),
                kind,
                lsn,
                source,
            }
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
    Ok(())
}

impl<C: RaftTypeConfig> RaftLogReader<C> for WaldenLogStore<C> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        self.reader.try_get_log_entries(range).await
    }
}

impl<C: RaftTypeConfig> RaftLogStorage<C> for WaldenLogStore<C> {
    type LogReader = WaldenLogReader<C>;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).log_state())
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader.clone()
    }

    /// PostgreSQL-style durable commit of the vote: insert, then flush
    /// (asynchronously, see `log_durably`).
    async fn save_vote(&mut self, vote: &Vote<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        self.log_durably(Meta::Vote(vote.clone()))
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
        self.log(Meta::Committed(committed))
            .map(drop)
            .map_err(|e| e.into_storage_error(ErrorSubject::Store, ErrorVerb::Write))
    }

    async fn read_committed(
        &mut self,
    ) -> Result<Option<LogId<C::NodeId>>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).committed())
    }

    /// Entries are inserted as one batch and readable on return;
    /// `callback` is called by the flush thread once they are durable.
    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<C>,
    ) -> Result<(), StorageError<C::NodeId>>
    where
        I: IntoIterator<Item = C::Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        self.log_entries(entries)
            .map_err(|e| e.into_storage_error(ErrorSubject::Logs, ErrorVerb::Write))?;
        self.flusher.complete_when_durable(self.last_end, callback);
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        self.log_durably(Meta::Truncate {
            since: log_id.index,
        })
        .await
        .map_err(|e| e.into_storage_error(ErrorSubject::Log(log_id), ErrorVerb::Delete))
    }

    /// Logs the purge durably, then [compacts](Self::compact).
    async fn purge(&mut self, log_id: LogId<C::NodeId>) -> Result<(), StorageError<C::NodeId>> {
        let subject = || ErrorSubject::Log(log_id.clone());
        self.log_durably(Meta::Purge {
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
    async fn summary(store: &mut Store) -> String {
        let state = store.get_log_state().await.unwrap();
        let all = (
            store.try_get_log_entries(..).await.unwrap(),
            store.read_vote().await.unwrap(),
            store.read_committed().await.unwrap(),
            state.last_purged_log_id,
            state.last_log_id,
        );
        serde_json::to_string(&all).unwrap()
    }

    /// Entries 0..200 of 20 kB (several 1 MiB segments), a vote, a committed
    /// log id and a purge up to 179 logged, but no compaction run.
    async fn filled(dir: &Path, options: StoreOptions) -> Store {
        let mut store = Store::open_with(dir, config(), options).unwrap();
        for i in 0..200 {
            store.blocking_append([entry(1, i, 20_000)]).await.unwrap();
        }
        store.save_vote(&Vote::new(4, 1)).await.unwrap();
        store.save_committed(Some(log_id(1, 190))).await.unwrap();
        store
            .log_durably(Meta::Purge {
                upto: log_id(1, 179),
            })
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn compaction_checkpoints_at_the_first_live_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = filled(dir.path(), StoreOptions::default()).await;
        let want = summary(&mut store).await;
        let first_live = read(&store.contents).index.lsn(180).unwrap();
        assert_eq!(
            store.compact().unwrap(),
            Compaction::Done { redo: first_live }
        );
        assert_eq!(store.compact().unwrap(), Compaction::NothingToReclaim);
        drop(store);

        let mut store = Store::open(dir.path(), config()).unwrap();
        assert_eq!(store.checkpoints.replay_start(), first_live);
        assert_eq!(summary(&mut store).await, want);
    }

    /// A crash after the state records were logged but before the
    /// checkpoint: the previous checkpoint stays in force and replay meets
    /// the restated records, which must change nothing.
    #[tokio::test]
    async fn a_compaction_cut_short_before_its_checkpoint_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = filled(dir.path(), StoreOptions::default()).await;
        let want = summary(&mut store).await;
        let state: Vec<_> = read(&store.contents).state_records();
        assert_eq!(state.len(), 3, "purge point, vote and committed");
        let batch: Batch = state.iter().map(|m| encode_meta(m).unwrap()).collect();
        let end = store.wal.insert_batch(&batch).unwrap().end;
        store.wal.flush(end).unwrap();
        drop(store);

        let mut store = Store::open(dir.path(), config()).unwrap();
        assert_eq!(summary(&mut store).await, want);
    }

    /// Without a cache every read goes to the WAL, including entries just
    /// appended and not yet written out; with a small one, reads span
    /// both. Either way the entries are the ones appended.
    #[tokio::test]
    async fn reads_come_from_the_wal_past_the_cache() {
        for cache_bytes in [0, 100_000] {
            let dir = tempfile::tempdir().unwrap();
            let mut store = Store::open_with(
                dir.path(),
                config(),
                StoreOptions::default().with_cache_bytes(cache_bytes),
            )
            .unwrap();
            store
                .blocking_append((0..100).map(|i| entry(1 + i / 30, i, 3_000)))
                .await
                .unwrap();
            let cached = read(&store.contents).cache.first_index();
            assert_eq!(cached.is_some(), cache_bytes > 0, "{cached:?}");
            store.blocking_append([entry(9, 100, 50)]).await.unwrap();
            let got = store.try_get_log_entries(20..=100).await.unwrap();
            let want: Vec<_> = (20..100)
                .map(|i| entry(1 + i / 30, i, 3_000))
                .chain([entry(9, 100, 50)])
                .collect();
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
            assert!(store.try_get_log_entries(101..).await.unwrap().is_empty());
        }
    }
}
