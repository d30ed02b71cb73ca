//! raft-engine (TiKV's Multi-Raft log) as a [`PeerLog`]: each thread is one
//! Raft group appending consecutive entries, one entry per `LogBatch`,
//! written with `Engine::write(batch, sync)` (its leader-follower group
//! commit; `sync` adds an `fdatasync`). Compression is off, as the others
//! have none.

use std::path::Path;

use protobuf::well_known_types::BytesValue;
use raft_engine::{Config, Engine, LogBatch, MessageExt, ReadableSize};

use super::system::{Op, PeerError, PeerLog, System, Workload};

/// Entries are protobuf `BytesValue`s whose first 8 bytes hold the index.
#[derive(Clone)]
pub(crate) struct IndexedBytes;

impl MessageExt for IndexedBytes {
    type Entry = BytesValue;

    fn index(e: &BytesValue) -> u64 {
        let mut index = [0; 8];
        index.copy_from_slice(&e.value[..8]);
        u64::from_le_bytes(index)
    }
}

struct RaftEngineLog {
    engine: Engine,
}

fn failed(e: raft_engine::Error) -> PeerError {
    PeerError::failed(System::RaftEngine, e)
}

/// Opens an engine in `dir`.
pub(super) fn open(dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    let config = Config {
        dir: dir.display().to_string(),
        batch_compression_threshold: ReadableSize(0),
        ..Config::default()
    };
    let engine = Engine::open(config).map_err(failed)?;
    Ok(Box::new(RaftEngineLog { engine }))
}

impl PeerLog for RaftEngineLog {
    fn op(&self, thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError> {
        let region = thread as u64 + 1;
        let sync = workload == Workload::Commit;
        let mut entry = BytesValue::new();
        entry.value = vec![b'r'; payload.max(8)];
        let mut index = 1u64;
        let mut batch = LogBatch::default();
        Ok(Box::new(move || {
            entry.value[..8].copy_from_slice(&index.to_le_bytes());
            batch
                .add_entries::<IndexedBytes>(region, std::slice::from_ref(&entry))
                .map_err(failed)?;
            self.engine.write(&mut batch, sync).map_err(failed)?;
            index += 1;
            Ok(())
        }))
    }

    fn close(self: Box<Self>) -> Result<(), PeerError> {
        Ok(())
    }
}
