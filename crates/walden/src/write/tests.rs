//! The writer alone, on the simulated storage.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::buffer::PageIdentity;
use crate::format::WalFormat;
use crate::lsn::PAGE_SIZE;
use crate::segment::{FileSyncMode, SegmentFiles, SimStorage, Storage};

struct Opener(SegmentFiles);

impl SegmentOpener for Opener {
    fn open_segment(
        &self,
        segno: u64,
        method: SyncMethod,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        if !self.0.exists(segno)? {
            self.0.create_zeroed(segno)?;
        }
        self.0.open_for_write(segno, method.file_mode())
    }

    fn entered_segment(&self, _segno: u64) {}
}

/// A ring of `pages` pages whose pages from `start` on are initialised,
/// and a writer whose durable point is `start`.
fn setup(pages: u64, start: Lsn) -> (BufferRing, Writer, Opener) {
    let sim = SimStorage::new(1);
    let dir = Path::new("/wal");
    sim.create_dir_all(dir).unwrap();
    let seg = SegmentSize::new(1 << 20).unwrap();
    let id = PageIdentity {
        timeline: 1,
        system_id: 1,
        format: WalFormat::Postgres15,
    };
    let ring = BufferRing::new(pages as usize, seg, id);
    for i in 0..pages {
        // SAFETY: the ring is not shared yet.
        unsafe { ring.init_page(Lsn(start.0 + i * PAGE_SIZE), 0) };
    }
    let files = SegmentFiles::new(Arc::new(sim) as Arc<dyn Storage>, dir, seg, 1);
    let writer = Writer::new(SyncMethod::Fdatasync, seg, start);
    (ring, writer, Opener(files))
}

#[test]
fn a_run_across_the_rings_wrap_is_one_write_in_lsn_order() {
    let pages = 4;
    // Two pages before the ring's end: the run wraps after two pages.
    let seg = SegmentSize::new(1 << 20).unwrap();
    let start = Lsn(seg.segment_start(1).0 + 2 * PAGE_SIZE);
    let (ring, writer, opener) = setup(pages, start);
    assert!(ring.contiguous_end(start) < Lsn(start.0 + pages * PAGE_SIZE));
    let end = Lsn(start.0 + pages * PAGE_SIZE);
    writer.request_flush(end);
    assert_eq!(
        writer.write(&ring, &opener, end, true, || end).unwrap(),
        end
    );
    let stats = writer.stats();
    assert_eq!(stats.writes, 1, "{stats:?}");
    assert_eq!(stats.bytes_written, pages * PAGE_SIZE);
    assert_eq!(stats.largest_write, pages * PAGE_SIZE);
    assert_eq!(stats.syncs, 1);
    assert_eq!((stats.flush_groups, stats.flush_group_members), (1, 1));
    // Each page landed at its own offset: its header names its address.
    let file = opener.0.open_for_write(1, FileSyncMode::None).unwrap();
    for i in 0..pages {
        let page = Lsn(start.0 + i * PAGE_SIZE);
        let mut addr = [0u8; 8];
        file.read_exact_at(&mut addr, seg.offset(page) + 8).unwrap();
        assert_eq!(Lsn(u64::from_le_bytes(addr)), page, "page {i}");
    }
}

#[test]
fn a_flusher_whose_data_is_durable_neither_writes_nor_leads() {
    let seg = SegmentSize::new(1 << 20).unwrap();
    let start = seg.segment_start(1);
    let (ring, writer, opener) = setup(4, start);
    let end = Lsn(start.0 + PAGE_SIZE);
    writer.write(&ring, &opener, end, true, || end).unwrap();
    assert_eq!(
        writer.write(&ring, &opener, end, true, || end).unwrap(),
        end
    );
    let stats = writer.stats();
    assert_eq!((stats.writes, stats.syncs), (1, 1), "{stats:?}");
    assert_eq!(stats.flush_requests, 2);
    assert_eq!((stats.flush_groups, stats.flush_group_members), (1, 2));
}

#[test]
fn after_a_poison_nothing_is_written_or_reported_durable() {
    let seg = SegmentSize::new(1 << 20).unwrap();
    let start = seg.segment_start(1);
    let (ring, writer, opener) = setup(4, start);
    writer.poison();
    let end = Lsn(start.0 + PAGE_SIZE);
    assert!(matches!(
        writer.write(&ring, &opener, end, true, || end),
        Err(WriteError::Poisoned)
    ));
    assert!(writer.write(&ring, &opener, end, false, || end).is_err());
    assert_eq!((writer.written(), writer.flushed()), (start, start));
    assert_eq!(writer.stats().writes, 0);
}
