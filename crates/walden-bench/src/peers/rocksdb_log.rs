//! RocksDB's WAL through rust-rocksdb as a [`PeerLog`]: each operation is a
//! `put` of a unique key (thread, sequence) with a 100-byte value; the WAL
//! is on, and `WriteOptions::set_sync(true)` makes a commit wait for its
//! `fdatasync` (RocksDB's write-group leader syncs for the group). Every
//! write also goes into the memtable: a cost the pure logs do not have.

use std::path::Path;

use rocksdb::{Options, WriteOptions, DB};

use super::system::{Op, PeerError, PeerLog, System, Workload};

struct RocksdbLog {
    db: DB,
}

fn failed(e: rocksdb::Error) -> PeerError {
    PeerError::failed(System::Rocksdb, e)
}

/// Opens a database in `dir`.
pub(super) fn open(dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    let mut options = Options::default();
    options.create_if_missing(true);
    let db = DB::open(&options, dir).map_err(failed)?;
    Ok(Box::new(RocksdbLog { db }))
}

impl PeerLog for RocksdbLog {
    fn op(&self, thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError> {
        let mut write = WriteOptions::default();
        write.set_sync(workload == Workload::Commit);
        let value = vec![b'k'; payload];
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&(thread as u64).to_be_bytes());
        let mut sequence = 0u64;
        Ok(Box::new(move || {
            key[8..].copy_from_slice(&sequence.to_be_bytes());
            self.db.put_opt(key, &value, &write).map_err(failed)?;
            sequence += 1;
            Ok(())
        }))
    }

    fn close(self: Box<Self>) -> Result<(), PeerError> {
        Ok(())
    }
}
