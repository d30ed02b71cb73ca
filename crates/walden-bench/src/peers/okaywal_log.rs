//! okaywal as a [`PeerLog`]: each commit is one entry of one chunk
//! (`begin_entry`, `write_chunk`, `commit`), and `commit` always returns
//! after the entry is synced: okaywal has no non-durable append.

use std::path::Path;

use okaywal::{LogVoid, WriteAheadLog};

use super::system::{Op, PeerError, PeerLog, System, Workload};

struct OkaywalLog {
    log: WriteAheadLog,
}

fn failed(e: std::io::Error) -> PeerError {
    PeerError::failed(System::Okaywal, e)
}

/// Opens a log in `dir` (nothing to recover there).
pub(super) fn open(dir: &Path) -> Result<Box<dyn PeerLog>, PeerError> {
    let log = WriteAheadLog::recover(dir, LogVoid).map_err(failed)?;
    Ok(Box::new(OkaywalLog { log }))
}

impl PeerLog for OkaywalLog {
    fn op(&self, _thread: usize, workload: Workload, payload: usize) -> Result<Op<'_>, PeerError> {
        if workload != Workload::Commit {
            return Err(PeerError::Unsupported(System::Okaywal, workload));
        }
        let chunk = vec![b'o'; payload];
        Ok(Box::new(move || {
            let mut entry = self.log.begin_entry().map_err(failed)?;
            entry.write_chunk(&chunk).map_err(failed)?;
            entry.commit().map_err(failed)?;
            Ok(())
        }))
    }

    fn close(self: Box<Self>) -> Result<(), PeerError> {
        self.log.shutdown().map_err(failed)
    }
}
