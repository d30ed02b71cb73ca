//! [`SegmentPrep`]: how a new segment file is prepared before it gets its
//! name, and the fill each way writes into its temporary file.
//!
//! Every way leaves a file of the full segment size whose every byte reads
//! as zeros except the segment size, where a long page header has it
//! (`xlp_seg_size`), and, with [`SegmentPrep::PageHeaders`], the page
//! headers of the pages it will hold (none on its first page, see below).
//! The file is synced and renamed into place by the caller, as before.
//!
//! The segment size is there for pg_waldump: given a directory and LSNs,
//! it takes the segment size from the first segment file the directory
//! lists, whatever it holds, and gives up on a zero. The rest of that
//! header stays zero (no magic, no page address), so no reader takes the
//! page for WAL and the hole check never takes the file for this log's.

use std::io;

use crate::format::page::{PageHeader, XLP_BKP_REMOVABLE, XLP_SEG_SIZE};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, TimeLineId, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
use crate::named_enum::named_enum;

use super::storage::StorageFile;

/// Zeros are written in chunks of this size (or the segment size if smaller).
const ZERO_CHUNK: u64 = 1 << 20;

/// How a new segment file is prepared before WAL is written into it.
///
/// The trade-off is the file system's: writing zeros costs a full write of
/// the segment ahead of the WAL, but the WAL then overwrites blocks that are
/// allocated (and usually still cached); `fallocate` allocates the blocks
/// without writing them, but the file system marks them unwritten and the
/// first sync after WAL lands in each extent also converts it (a journal
/// commit). docs/io.md describes how to measure them (`walden bench
/// --segment-prep`) and which one is the default and why.
///
/// PostgreSQL: `wal_init_zero` (on: [`ZeroFill`](Self::ZeroFill); off: a
/// file extended by one byte at its end, which Walden does not offer since a
/// sparse file can fail WAL writes with `ENOSPC`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SegmentPrep {
    /// Write the whole file with zeros (PostgreSQL's `wal_init_zero = on`).
    #[default]
    ZeroFill,
    /// Allocate the file's blocks with `fallocate(2)` without writing them.
    /// A storage without it fails with
    /// [`SegmentError::AllocateUnsupported`](super::SegmentError::AllocateUnsupported),
    /// never by falling back silently.
    Fallocate,
    /// Allocate like [`Fallocate`](Self::Fallocate), then write the valid
    /// short page header of every page but the first, as the log will write
    /// it there (so a WAL write of a whole page replaces a cached page).
    /// The first page stays zero (but for the segment size, as in every
    /// prepared segment): a prepared segment is never taken for one
    /// holding this log's WAL (the hole check reads the first page's long
    /// header), and the writer writes that page before any other. A header
    /// alone is an empty page: readers end the WAL at its first record.
    PageHeaders,
}

impl SegmentPrep {
    /// Every way, in the order of `name()`s listed in errors.
    pub const ALL: [SegmentPrep; 3] = [
        SegmentPrep::ZeroFill,
        SegmentPrep::Fallocate,
        SegmentPrep::PageHeaders,
    ];

    /// The way's name, as flags and errors spell it.
    pub const fn name(self) -> &'static str {
        match self {
            SegmentPrep::ZeroFill => "zero-fill",
            SegmentPrep::Fallocate => "fallocate",
            SegmentPrep::PageHeaders => "page-headers",
        }
    }
}

named_enum!(SegmentPrep, "segment preparation");

/// What a page header written ahead needs to know of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepareFor {
    /// How to prepare.
    pub prep: SegmentPrep,
    /// The format whose page headers [`SegmentPrep::PageHeaders`] writes.
    pub format: WalFormat,
}

impl Default for PrepareFor {
    fn default() -> Self {
        PrepareFor {
            prep: SegmentPrep::ZeroFill,
            format: WalFormat::Postgres15,
        }
    }
}

/// Where the fill of one segment goes.
pub(super) struct Target<'a> {
    pub(super) file: &'a dyn StorageFile,
    pub(super) seg: SegmentSize,
    pub(super) timeline: TimeLineId,
    pub(super) segno: u64,
    /// Polled between the fill's writes: true stops the fill with
    /// [`io::ErrorKind::Interrupted`] (the segment is not needed any more).
    pub(super) abandoned: &'a dyn Fn() -> bool,
}

impl Target<'_> {
    /// Writes `bytes` at `offset`, unless the fill is abandoned.
    fn write_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        if (self.abandoned)() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "preparation abandoned: the segment is not needed any more",
            ));
        }
        self.file.write_all_at(bytes, offset)
    }
}

impl PrepareFor {
    /// Fills the new, empty temporary file of segment `t.segno`.
    pub(super) fn fill(&self, t: &Target<'_>) -> io::Result<()> {
        self.fill_pages(t)?;
        let size = u32::try_from(t.seg.bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "segment size beyond 32 bits")
        })?;
        t.file
            .write_all_at(&size.to_le_bytes(), XLP_SEG_SIZE.start as u64)
    }

    /// The fill of [`SegmentPrep`] itself: zeros, allocation, page headers.
    fn fill_pages(&self, t: &Target<'_>) -> io::Result<()> {
        let size = t.seg.bytes();
        match self.prep {
            SegmentPrep::ZeroFill => {
                let zeros = vec![0u8; ZERO_CHUNK.min(size) as usize];
                (0..size)
                    .step_by(zeros.len())
                    .try_for_each(|offset| t.write_at(&zeros, offset))
            }
            SegmentPrep::Fallocate => t.file.allocate(size),
            SegmentPrep::PageHeaders => {
                t.file.allocate(size)?;
                self.write_page_headers(t)
            }
        }
    }

    /// Writes the header of every page of the segment but the first, and
    /// nothing else.
    fn write_page_headers(&self, t: &Target<'_>) -> io::Result<()> {
        let start = t.seg.segment_start(t.segno);
        let mut header = [0u8; SHORT_PAGE_HEADER_SIZE as usize];
        for offset in (PAGE_SIZE..t.seg.bytes()).step_by(PAGE_SIZE as usize) {
            let pageaddr = Lsn(start.0 + offset);
            self.page_header(t.timeline, pageaddr).encode(&mut header);
            self.format.stamp_page_header(&mut header, pageaddr, t.seg);
            t.write_at(&header, offset)?;
        }
        Ok(())
    }

    /// The short header the log writes on an empty page at `pageaddr`.
    fn page_header(&self, timeline: TimeLineId, pageaddr: Lsn) -> PageHeader {
        PageHeader {
            magic: self.format.page_magic(),
            info: XLP_BKP_REMOVABLE,
            tli: timeline,
            pageaddr,
            rem_len: 0,
            long: None,
        }
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::segment::storage::Storage;
    use crate::segment::{SegmentError, SegmentFiles, SimStorage};

    /// A simulated disk seeded with `seed`, and 1 MiB segments in `/wal`.
    fn disk(seed: u64) -> (SimStorage, SegmentFiles) {
        let sim = SimStorage::new(seed);
        sim.create_dir_all(Path::new("/wal")).unwrap();
        let seg = SegmentSize::new(1 << 20).unwrap();
        (
            sim.clone(),
            SegmentFiles::new(Arc::new(sim), "/wal", seg, 1),
        )
    }

    #[test]
    fn without_fallocate_the_error_says_so_and_nothing_is_left() {
        let (sim, files) = disk(3);
        sim.set_no_fallocate(true);
        for prep in [SegmentPrep::Fallocate, SegmentPrep::PageHeaders] {
            let how = PrepareFor {
                prep,
                ..PrepareFor::default()
            };
            let err = files.create(2, &how).unwrap_err();
            let SegmentError::AllocateUnsupported { path, .. } = &err else {
                panic!("{prep}: {err:?}");
            };
            assert_eq!(
                path,
                &files.dir().join(format!(
                    "{}.tmp",
                    files.path(2).file_name().unwrap().to_string_lossy()
                ))
            );
            assert!(
                err.to_string().contains("segment_prep = zero-fill"),
                "{err}"
            );
            assert!(files.list().unwrap().is_empty(), "{prep}");
            assert!(sim.stats().allocations == 0);
        }
        files.create(2, &PrepareFor::default()).unwrap();
        assert_eq!(files.list().unwrap(), [2]);
    }

    #[test]
    fn an_allocated_segment_reads_as_zeros_and_survives_a_power_cut() {
        let (sim, files) = disk(5);
        let how = PrepareFor {
            prep: SegmentPrep::Fallocate,
            format: WalFormat::SelfLsn,
        };
        files.create(4, &how).unwrap();
        assert_eq!(sim.stats().allocations, 1);
        sim.power_cut();
        sim.restart();
        let data = sim.contents(&files.path(4)).unwrap();
        assert_eq!(data.len(), 1 << 20);
        assert_eq!(data[XLP_SEG_SIZE], (1u32 << 20).to_le_bytes());
        assert!(data[..XLP_SEG_SIZE.start].iter().all(|&b| b == 0));
        assert!(data[XLP_SEG_SIZE.end..].iter().all(|&b| b == 0));
    }

    #[test]
    fn page_headers_are_the_ones_the_format_writes() {
        let (sim, files) = disk(6);
        let how = PrepareFor {
            prep: SegmentPrep::PageHeaders,
            format: WalFormat::CompactWalId,
        };
        files.create(3, &how).unwrap();
        let data = sim.contents(&files.path(3)).unwrap();
        let seg = files.segment_size();
        assert!(data[..XLP_SEG_SIZE.start].iter().all(|&b| b == 0));
        assert!(data[XLP_SEG_SIZE.end..PAGE_SIZE as usize]
            .iter()
            .all(|&b| b == 0));
        let second = seg.segment_start(3).0 + PAGE_SIZE;
        let page = &data[PAGE_SIZE as usize..2 * PAGE_SIZE as usize];
        let header = PageHeader::decode(page).unwrap();
        assert_eq!(header.magic, WalFormat::CompactWalId.page_magic());
        assert_eq!(header.pageaddr, Lsn(second));
        assert_eq!(header.info, XLP_BKP_REMOVABLE);
        assert_eq!(
            WalFormat::CompactWalId.page_wal_id(page),
            WalFormat::CompactWalId.page_wal_id(&{
                let mut p = vec![0u8; PAGE_SIZE as usize];
                how.page_header(1, Lsn(second)).encode(&mut p);
                WalFormat::CompactWalId.stamp_page_header(&mut p, Lsn(second), seg);
                p
            })
        );
        assert!(page[SHORT_PAGE_HEADER_SIZE as usize..]
            .iter()
            .all(|&b| b == 0));
    }
}
