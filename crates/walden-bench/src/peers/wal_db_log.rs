//! wal-db as a [`PeerLog`]: `append` (lock-free reservation, then a write
//! into the page cache) and `append_and_sync` (group-committed sync).

use std::path::Path;

use wal_db::Wal;

use super::system::{Op, PeerError, PeerLog, System, Workload};

struct WalDbLog {
    wal: Wal,
}

fn failed(e: wal_db::WalError) -> PeerError {
    PeerError::failed(System::WalDb, e)
}

/// Opens a log file in `dir`.
pub(super) fn open(dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    let wal = Wal::open(dir.join("log.wal")).map_err(failed)?;
    Ok(Box::new(WalDbLog { wal }))
}

impl PeerLog for WalDbLog {
    fn op(&self, _thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError> {
        let record = vec![b'd'; payload];
        let wal = &self.wal;
        Ok(match workload {
            Workload::Append => Box::new(move || wal.append(&record).map(drop).map_err(failed)),
            Workload::Commit => {
                Box::new(move || wal.append_and_sync(&record).map(drop).map_err(failed))
            }
        })
    }

    fn close(self: Box<Self>) -> Result<(), PeerError> {
        Ok(())
    }
}
