//! raft-engine as a [`RaftLog`]: one region, each batch of entries one
//! `LogBatch` written with `Engine::write(batch, sync)`, read back with
//! `fetch_entries_to`. Entries are protobuf `BytesValue`s whose first 8
//! bytes hold the index (the `peers` suite's encoding); compression is off.

use std::path::Path;

use protobuf::well_known_types::BytesValue;
use raft_engine::{Config, Engine, LogBatch, ReadableSize};

use super::{RaftBenchError, RaftLog, RaftSystem, PAYLOAD};
use crate::peers::IndexedBytes;

/// The region every entry goes to.
const REGION: u64 = 1;

struct EngineLog {
    engine: Engine,
    sync: bool,
    batch: LogBatch,
    entries: Vec<BytesValue>,
}

fn failed(e: raft_engine::Error) -> RaftBenchError {
    RaftBenchError::new(RaftSystem::RaftEngine, e)
}

/// Opens an engine in `dir`.
pub(super) fn open(dir: &Path, sync: bool) -> Result<Box<dyn RaftLog>, RaftBenchError> {
    let config = Config {
        dir: dir.display().to_string(),
        batch_compression_threshold: ReadableSize(0),
        ..Config::default()
    };
    let engine = Engine::open(config).map_err(failed)?;
    Ok(Box::new(EngineLog {
        engine,
        sync,
        batch: LogBatch::default(),
        entries: Vec::new(),
    }))
}

impl RaftLog for EngineLog {
    fn append(&mut self, first: u64, count: u64) -> Result<(), RaftBenchError> {
        self.entries.clear();
        for index in first..first + count {
            let mut entry = BytesValue::new();
            entry.value = vec![b'r'; PAYLOAD];
            entry.value[..8].copy_from_slice(&index.to_le_bytes());
            self.entries.push(entry);
        }
        self.batch
            .add_entries::<IndexedBytes>(REGION, &self.entries)
            .map_err(failed)?;
        self.engine
            .write(&mut self.batch, self.sync)
            .map_err(failed)?;
        Ok(())
    }

    fn read(&mut self, first: u64, count: u64) -> Result<usize, RaftBenchError> {
        self.entries.clear();
        self.engine
            .fetch_entries_to::<IndexedBytes>(REGION, first, first + count, None, &mut self.entries)
            .map_err(failed)?;
        Ok(self.entries.iter().map(|e| e.value.len()).sum())
    }
}
