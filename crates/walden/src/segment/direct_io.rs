//! Direct I/O (`O_DIRECT`): the alignment it needs, page-aligned memory,
//! and telling a file system that refuses it.
//!
//! PostgreSQL: `debug_io_direct = wal` (16+), `PG_IO_ALIGN_SIZE`,
//! `PGIOAlignedBlock`. Linux wants a direct transfer's file offset, length
//! and memory address aligned to the device's logical block size (512 B or
//! 4 KiB); Walden uses 4 KiB for all three, and writes whole 8 KiB WAL
//! pages, so every device qualifies. A file system without direct I/O
//! (ramfs, some FUSE file systems, tmpfs before Linux 6.6) fails the
//! `open(2)` with `EINVAL`; [`check_direct_io`] turns that into
//! [`SegmentError::DirectIoUnsupported`] before a log is created or opened.

use std::io;
use std::path::Path;

use super::durable::discard;
use super::error::{FileOp, IoFailure, SegmentError};
use super::storage::{OpenOptions, Storage};
use crate::lsn::PAGE_SIZE;

/// The alignment of a direct transfer's offset, length and memory address.
pub const DIRECT_IO_ALIGNMENT: usize = 4096;

/// Name of the file [`check_direct_io`] creates and removes.
const PROBE_NAME: &str = "walden-direct-io-probe.tmp";

/// One WAL page of memory aligned for direct I/O: the ring is made of
/// these, and the writer copies a partially filled last page into one.
#[derive(Clone, Debug)]
#[repr(C, align(4096))]
pub struct AlignedPage(pub [u8; PAGE_SIZE as usize]);

// The type's alignment is the one direct I/O needs.
const _: () = assert!(std::mem::align_of::<AlignedPage>() == DIRECT_IO_ALIGNMENT);

impl AlignedPage {
    /// A page of zeros.
    pub const ZERO: AlignedPage = AlignedPage([0; PAGE_SIZE as usize]);

    /// A page of zeros on the heap.
    pub fn boxed() -> Box<AlignedPage> {
        Box::new(AlignedPage::ZERO)
    }
}

/// True if `buf` may be a direct transfer at `offset`: offset, length and
/// address all multiples of [`DIRECT_IO_ALIGNMENT`].
pub(crate) fn is_direct_aligned(buf: &[u8], offset: u64) -> bool {
    let align = DIRECT_IO_ALIGNMENT;
    offset.is_multiple_of(align as u64)
        && buf.len().is_multiple_of(align)
        && (buf.as_ptr() as usize).is_multiple_of(align)
}

/// True if `error`, from opening a file with [`OpenOptions::direct`] (or a
/// first direct write), says the file system refuses direct I/O.
pub(crate) fn refuses_direct_io(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::EINVAL)
}

/// Checks that the file system holding `dir` takes direct I/O: creates a
/// probe file there with `O_DIRECT`, writes one aligned page to it and
/// removes it. Fails with [`SegmentError::DirectIoUnsupported`] if the file
/// system refuses (`EINVAL`), or with the I/O error naming the probe.
pub fn check_direct_io(storage: &dyn Storage, dir: &Path) -> Result<(), SegmentError> {
    let probe = dir.join(PROBE_NAME);
    let unsupported = |error: io::Error| {
        if refuses_direct_io(&error) {
            SegmentError::DirectIoUnsupported {
                dir: dir.to_path_buf(),
                cause: error.to_string(),
            }
        } else {
            IoFailure::new(FileOp::Open, &probe, error).into()
        }
    };
    let opts = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .direct(true);
    let file = storage.open(&probe, &opts).map_err(|error| {
        // Linux creates the file before it refuses O_DIRECT.
        discard(storage, &probe);
        unsupported(error)
    })?;
    let page = AlignedPage::boxed();
    let written = file.write_all_at(&page.0, 0).map_err(unsupported);
    drop(file);
    let removed = storage
        .remove_file(&probe)
        .map_err(|e| IoFailure::new(FileOp::Remove, &probe, e).into());
    written.and(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_pages_are_aligned_and_checked() {
        let page = AlignedPage::boxed();
        assert!(is_direct_aligned(&page.0, 0));
        assert!(is_direct_aligned(&page.0[..DIRECT_IO_ALIGNMENT], 8192));
        assert!(!is_direct_aligned(&page.0[1..DIRECT_IO_ALIGNMENT + 1], 0));
        assert!(!is_direct_aligned(&page.0[..512], 0));
        assert!(!is_direct_aligned(&page.0, 512));
    }

    #[cfg(feature = "sim")]
    #[test]
    fn a_refusing_file_system_fails_the_probe_naming_the_directory() {
        let sim = crate::segment::SimStorage::new(1);
        let dir = Path::new("/wal");
        sim.create_dir_all(dir).unwrap();
        sim.set_no_direct_io(true);
        let err = check_direct_io(&sim, dir).unwrap_err();
        assert!(
            matches!(&err, SegmentError::DirectIoUnsupported { dir: d, .. } if d == dir),
            "{err:?}"
        );
        assert!(err.to_string().starts_with(
            "direct I/O (O_DIRECT) is not supported by the file system holding \"/wal\""
        ));
        assert_eq!(
            sim.list_dir(dir).unwrap(),
            Vec::<String>::new(),
            "probe removed"
        );
        sim.set_no_direct_io(false);
        check_direct_io(&sim, dir).unwrap();
        assert!(sim.list_dir(dir).unwrap().is_empty());
    }

    #[test]
    fn a_file_system_that_takes_direct_io_passes_the_probe() {
        let dir = tempfile::tempdir().unwrap();
        check_direct_io(&super::super::FsStorage, dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
