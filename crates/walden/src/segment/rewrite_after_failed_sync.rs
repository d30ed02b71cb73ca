//! Making WAL found by recovery durable again after a crash, and erasing
//! a batch recovery drops.
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
use super::storage::{FileSyncMode, StorageFile};
use crate::lsn::Lsn;
use std::path::Path;

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
    let mut buf = Vec::new();
    for_each_chunk(files, from, to, |file, path, offset, n| {
        buf.resize(n, 0);
        file.read_exact_at(&mut buf, offset)
            .map_err(failed(FileOp::Read, path))?;
        Ok(file
            .write_all_at(&buf, offset)
            .map_err(failed(FileOp::Write, path))?)
    })
}

/// Overwrites the bytes of the log from `from` up to `to` with zeros in
/// the segment files that exist, and syncs each one touched: recovery
/// erases a batch it drops, so that none of its records, valid on disk,
/// can ever be read as part of the log again.
pub(crate) fn erase_durably(files: &SegmentFiles, from: Lsn, to: Lsn) -> Result<(), SegmentError> {
    let seg = files.segment_size();
    let mut at = from;
    while at < to {
        let segno = seg.segno(at);
        let end = to.min(seg.segment_start(segno + 1));
        if files.exists(segno)? {
            let zeros = vec![0u8; CHUNK.min(end.0 - at.0) as usize];
            for_each_chunk(files, at, end, |file, path, offset, n| {
                Ok(file
                    .write_all_at(&zeros[..n], offset)
                    .map_err(failed(FileOp::Write, path))?)
            })?;
        }
        at = end;
    }
    Ok(())
}

/// Calls `chunk` with each segment file from `from` up to `to`, opened for
/// writing, and each piece of at most [`CHUNK`] bytes of it in the range
/// (its offset and length), then syncs that segment.
fn for_each_chunk(
    files: &SegmentFiles,
    from: Lsn,
    to: Lsn,
    mut chunk: impl FnMut(&dyn StorageFile, &Path, u64, usize) -> Result<(), SegmentError>,
) -> Result<(), SegmentError> {
    let seg = files.segment_size();
    let mut at = from;
    while at < to {
        let segno = seg.segno(at);
        let end = to.min(seg.segment_start(segno + 1));
        let path = files.path(segno);
        let file = files.open_for_write(segno, FileSyncMode::None)?;
        while at < end {
            let n = (end.0 - at.0).min(CHUNK);
            chunk(&*file, &path, seg.offset(at), n as usize)?;
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
