//! Checks of the segment files that recovery makes before trusting them:
//! damage that is not a crash's torn tail must stop recovery with an error
//! rather than cut the log short and overwrite what follows. Two checks:
//! every segment has the segment size, and no segment is missing before one
//! holding WAL of this log.
//!
//! PostgreSQL: none; its recovery ends at the first segment it cannot read.
//! `walden verify` makes the same checks, so that it refuses what recovery
//! refuses.

use super::error::{failed, FileOp, SegmentError};
use super::files::SegmentFiles;
use crate::format::little_endian::fixed_field;
use crate::format::page::{XLP_PAGEADDR, XLP_SYSID};
use crate::lsn::Lsn;

/// Fails if a segment of the log numbered `first` or later is not of the
/// segment size ([`SegmentError::WrongSize`]). Segments are created at full
/// size before they get their name, so a crash never leaves one shorter.
pub fn check_segment_sizes(files: &SegmentFiles, first: u64) -> Result<(), SegmentError> {
    let expected = files.segment_size().bytes();
    for segno in files.list()?.into_iter().filter(|&s| s >= first) {
        let path = files.path(segno);
        let len = files
            .open_for_read(segno)?
            .len()
            .map_err(failed(FileOp::Stat, &path))?;
        if len != expected {
            return Err(SegmentError::WrongSize {
                path,
                len,
                expected,
            });
        }
    }
    Ok(())
}

/// Fails if a segment at or after the one holding `end` (the end of WAL
/// recovery found) is missing while a later segment starts with a page
/// written for its own position by this log (`system_id`): the log would
/// otherwise end at the hole and new WAL would overwrite what follows it
/// ([`SegmentError::Hole`]). Preallocated (zeroed) and recycled segments
/// (old page addresses) are not WAL of their position, so they are no hole.
pub fn check_no_hole(files: &SegmentFiles, end: Lsn, system_id: u64) -> Result<(), SegmentError> {
    let seg = files.segment_size();
    let present = files.list()?;
    let from = seg.segno(end);
    let Some(&last) = present.last() else {
        return Ok(());
    };
    let Some(missing) = (from..last).find(|s| present.binary_search(s).is_err()) else {
        return Ok(());
    };
    for &later in present.iter().filter(|&&s| s > missing) {
        let path = files.path(later);
        let mut header = [0u8; XLP_SYSID.end];
        files
            .open_for_read(later)?
            .read_exact_at(&mut header, 0)
            .map_err(failed(FileOp::Read, &path))?;
        let pageaddr = u64::from_le_bytes(fixed_field(&header, XLP_PAGEADDR));
        let sysid = u64::from_le_bytes(fixed_field(&header, XLP_SYSID));
        if pageaddr == seg.segment_start(later).0 && sysid == system_id {
            return Err(SegmentError::Hole {
                segno: missing,
                path: files.path(missing),
                later,
            });
        }
    }
    Ok(())
}
