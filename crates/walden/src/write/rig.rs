//! A writer over a small ring on the simulated storage, without the rest of
//! the log: what the writer's unit tests and its shuttle model run.

use std::path::Path;
use std::sync::Arc;

use crate::buffer::{BufferRing, PageIdentity};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, MIN_SEGMENT_SIZE, PAGE_SIZE};
use crate::segment::{
    FileOp, IoFailure, OpenOptions, SegmentError, SegmentFiles, SimStorage, Storage, StorageFile,
};

/// The rig's segment size, the smallest.
const SEGMENT: SegmentSize = match SegmentSize::new(MIN_SEGMENT_SIZE) {
    Ok(seg) => seg,
    Err(_) => panic!("the minimum segment size is valid"),
};

use super::{SegmentOpener, SyncMethod, Writer};

/// Segment files as a writer's opener, without a preallocator: a missing
/// segment is created zero-filled when the writer enters it.
impl SegmentOpener for SegmentFiles {
    fn open_segment(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        if !self.exists(segno)? {
            self.create_zeroed(segno)?;
        }
        self.open(segno, opts)
    }

    fn entered_segment(&self, _segno: u64, _opened_ahead: bool) {}
}

/// A ring, a writer and 1 MiB segment files on a simulated disk.
#[derive(Debug)]
pub struct WriterRig {
    /// The simulated disk (for fault injection: the shuttle model fails a
    /// sync through it).
    #[cfg_attr(not(shuttle), allow(dead_code))]
    pub sim: SimStorage,
    /// The ring, its pages from `start` on initialised.
    pub ring: BufferRing,
    /// The writer, everything below `start` durable.
    pub writer: Writer,
    /// The segment files, segment 1 created zero-filled.
    pub files: SegmentFiles,
    /// Where the log starts: `start_page` pages into segment 1.
    pub start: Lsn,
}

impl WriterRig {
    /// The LSN of the rig's page `i`, counted from its start.
    pub fn page(&self, i: u64) -> Lsn {
        Lsn(self.start.0 + i * PAGE_SIZE)
    }

    /// A ring of `pages` pages holding the pages from `start_page` pages
    /// into segment 1 on, and a writer with `method`, with direct I/O if
    /// `direct`, with overlapped syncs (the default).
    pub fn new(
        pages: u64,
        start_page: u64,
        method: SyncMethod,
        direct: bool,
    ) -> Result<Self, SegmentError> {
        Self::with_syncs(pages, start_page, method, direct, true, false)
    }

    /// As [`WriterRig::new`], with overlapped syncs if `overlap_syncs` (for
    /// every round, however small: `Config::overlap_syncs_from` = 0), and
    /// two syncs in flight at once if `concurrent_syncs`.
    pub fn with_syncs(
        pages: u64,
        start_page: u64,
        method: SyncMethod,
        direct: bool,
        overlap_syncs: bool,
        concurrent_syncs: bool,
    ) -> Result<Self, SegmentError> {
        let sim = SimStorage::new(1);
        let dir = Path::new("/wal");
        sim.create_dir_all(dir)
            .map_err(|e| IoFailure::new(FileOp::CreateDir, dir, e))?;
        let seg = SEGMENT;
        let id = PageIdentity {
            timeline: 1,
            system_id: 1,
            format: WalFormat::Postgres15,
        };
        let ring = BufferRing::new(pages as usize, seg, id);
        let start = Lsn(seg.segment_start(1).0 + start_page * PAGE_SIZE);
        for i in 0..pages {
            // SAFETY: the ring is not shared yet.
            unsafe { ring.init_page(Lsn(start.0 + i * PAGE_SIZE), 0) };
        }
        let files = SegmentFiles::new(Arc::new(sim.clone()) as Arc<dyn Storage>, dir, seg, 1);
        // Created up front: the rig is for the writer, not segment creation.
        files.create_zeroed(1)?;
        Ok(WriterRig {
            sim,
            ring,
            writer: Writer::new(
                method,
                direct,
                seg,
                start,
                true,
                overlap_syncs.then_some(0),
                concurrent_syncs,
            ),
            files,
            start,
        })
    }
}

/// Segment files whose syncs a test wraps (the gate tests and the shuttle
/// model; the loom models do not use the rig's files).
#[cfg(not(loom))]
mod sync_wrapped {
    use std::sync::Arc;

    use super::{SegmentFiles, SegmentOpener};
    use crate::segment::{OpenOptions, SegmentError, StorageFile};

    /// What a test runs around each sync of a segment file: it calls the sync
    /// it is given (or not) and returns its result.
    pub type AroundSync =
        dyn Fn(&dyn Fn() -> std::io::Result<()>) -> std::io::Result<()> + Send + Sync;

    /// A segment file whose syncs go through a test's [`AroundSync`].
    #[derive(Clone)]
    struct SyncWrapped(Arc<dyn StorageFile>, Arc<AroundSync>);

    impl std::fmt::Debug for SyncWrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_tuple("SyncWrapped")
                .field(&self.0)
                .finish_non_exhaustive()
        }
    }

    impl StorageFile for SyncWrapped {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<usize> {
            self.0.write_at(buf, offset)
        }
        fn sync_data(&self) -> std::io::Result<()> {
            (self.1)(&|| self.0.sync_data())
        }
        fn sync_all(&self) -> std::io::Result<()> {
            (self.1)(&|| self.0.sync_all())
        }
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.0.set_len(len)
        }
    }

    /// The rig's segment files, each of whose syncs runs through `around`;
    /// counts the opens (every open file description of a segment).
    pub struct SyncWrappedSegments<'a> {
        files: &'a SegmentFiles,
        around: Arc<AroundSync>,
        opens: std::sync::atomic::AtomicUsize,
    }

    impl<'a> SyncWrappedSegments<'a> {
        /// `files`' segments, their syncs run through `around`.
        pub fn new(files: &'a SegmentFiles, around: Arc<AroundSync>) -> Self {
            SyncWrappedSegments {
                files,
                around,
                opens: Default::default(),
            }
        }

        /// The segments opened so far.
        #[cfg_attr(shuttle, allow(dead_code))]
        pub fn opens(&self) -> usize {
            // Relaxed: a count, read after the opens, on the thread that made
            // them or after joining it.
            self.opens.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl SegmentOpener for SyncWrappedSegments<'_> {
        fn open_segment(
            &self,
            segno: u64,
            opts: &OpenOptions,
        ) -> Result<Box<dyn StorageFile>, SegmentError> {
            // Relaxed: a count, see `opens`.
            self.opens
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let file = self.files.open_segment(segno, opts)?;
            Ok(Box::new(SyncWrapped(Arc::from(file), self.around.clone())))
        }

        fn entered_segment(&self, segno: u64, opened_ahead: bool) {
            self.files.entered_segment(segno, opened_ahead);
        }
    }
}

#[cfg(not(loom))]
pub use sync_wrapped::SyncWrappedSegments;
