//! Making WAL found by recovery durable again after a crash.
//!
//! After a failed sync, Linux marks the pages it could not write clean and
//! forgets them: they stay readable in the page cache, a later `fsync`
//! reports success without writing them, and a power cut loses them. A
//! process that crashed (or gave up) after such a failure and reopens the
//! log reads that WAL back as if it were on disk. Before anything is
//! acknowledged on top of it, recovery therefore writes the WAL it found
//! back out and syncs it, which dirties the pages again so they really
//! reach the disk.
//!
//! PostgreSQL: `SyncDataDirectory` at the start of crash recovery, which
//! only fsyncs (and so cannot repair pages a failed writeback dropped).

use super::error::{failed, FileOp, SegmentError};
use super::files::SegmentFiles;
use super::storage::FileSyncMode;
use crate::lsn::Lsn;

/// Bytes read and written back at a time.
const CHUNK: u64 = 1 << 20;

/// Rewrites the bytes of the log from `from` up to `to` to their segment
/// files, unchanged, and syncs each segment touched. Every segment in the
/// range must exist.
pub(crate) fn rewrite_durably(
    files: &SegmentFiles,
    from: Lsn,
    to: Lsn,
) -> Result<(), SegmentError> {
    let seg = files.segment_size();
    let mut buf = Vec::new();
    let mut at = from;
    while at < to {
        let segno = seg.segno(at);
        let end = to.min(seg.segment_start(segno + 1));
        let path = files.path(segno);
        let file = files.open_for_write(segno, FileSyncMode::None)?;
        while at < end {
            let n = (end.0 - at.0).min(CHUNK);
            buf.resize(n as usize, 0);
            let offset = seg.offset(at);
            file.read_exact_at(&mut buf, offset)
                .map_err(failed(FileOp::Read, &path))?;
            file.write_all_at(&buf, offset)
                .map_err(failed(FileOp::Write, &path))?;
            at = Lsn(at.0 + n);
        }
        file.sync_data().map_err(failed(FileOp::Sync, &path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::XLP_SEG_SIZE;
    use crate::lsn::SegmentSize;
    use crate::segment::{SimStorage, Storage};
    use std::path::Path;
    use std::sync::Arc;

    #[test]
    fn pages_a_failed_sync_dropped_survive_a_cut_once_rewritten() {
        let sim = SimStorage::new(4);
        let dir = Path::new("/wal");
        sim.create_dir_all(dir).unwrap();
        let seg = SegmentSize::new(1 << 20).unwrap();
        let files = SegmentFiles::new(Arc::new(sim.clone()), dir, seg, 1);
        files.create_zeroed(1).unwrap();
        files.create_zeroed(2).unwrap();
        let start = seg.segment_start(1);
        for segno in [1, 2] {
            let f = files.open_for_write(segno, FileSyncMode::None).unwrap();
            f.write_all_at(&[9u8; 4096], 0).unwrap();
            sim.fail_sync(1, false);
            assert!(f.sync_data().is_err());
            f.sync_data().unwrap();
        }
        rewrite_durably(
            &files,
            Lsn(start.0 + 1024),
            Lsn(seg.segment_start(2).0 + 4000),
        )
        .unwrap();
        sim.power_cut();
        sim.restart();
        let one = sim.contents(&files.path(1)).unwrap();
        let two = sim.contents(&files.path(2)).unwrap();
        // A sector before the range: the failed sync's loss, back to the
        // prepared segment's zeros and segment size.
        assert_eq!(one[XLP_SEG_SIZE], (1u32 << 20).to_le_bytes());
        assert!(one[XLP_SEG_SIZE.end..512].iter().all(|&b| b == 0));
        assert!(one[1024..4096].iter().all(|&b| b == 9));
        assert!(two[..4000].iter().all(|&b| b == 9));
    }
}
