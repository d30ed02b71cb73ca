//! The writer alone, on the simulated storage.

use super::rig::WriterRig;
use super::*;
use crate::lsn::PAGE_SIZE;
use crate::segment::FileSyncMode;

#[test]
fn a_run_across_the_rings_wrap_is_one_write_in_lsn_order() {
    let pages = 4;
    // Two pages before the ring's end: the run wraps after two pages.
    let rig = WriterRig::new(pages, 2, SyncMethod::Fdatasync, false).unwrap();
    let (ring, writer, start) = (&rig.ring, &rig.writer, rig.start);
    assert!(ring.contiguous_end(start) < Lsn(start.0 + pages * PAGE_SIZE));
    let end = Lsn(start.0 + pages * PAGE_SIZE);
    writer.request_flush(end);
    assert_eq!(
        writer
            .write(ring, &rig.files, end, Caller::Flush, || end)
            .unwrap(),
        end
    );
    let stats = writer.stats();
    assert_eq!(stats.writes, 1, "{stats:?}");
    assert_eq!(stats.bytes_written, pages * PAGE_SIZE);
    assert_eq!(stats.largest_write, pages * PAGE_SIZE);
    assert_eq!(stats.syncs, 1);
    assert_eq!((stats.flush_groups, stats.flush_group_members), (1, 1));
    // Each page landed at its own offset: its header names its address.
    let file = rig.files.open_for_write(1, FileSyncMode::None).unwrap();
    let seg = rig.files.segment_size();
    for i in 0..pages {
        let page = Lsn(start.0 + i * PAGE_SIZE);
        let mut addr = [0u8; 8];
        file.read_exact_at(&mut addr, seg.offset(page) + 8).unwrap();
        assert_eq!(Lsn(u64::from_le_bytes(addr)), page, "page {i}");
    }
}

#[test]
fn a_flusher_whose_data_is_durable_neither_writes_nor_leads() {
    let rig = WriterRig::new(4, 0, SyncMethod::Fdatasync, false).unwrap();
    let end = Lsn(rig.start.0 + PAGE_SIZE);
    let flush = || {
        rig.writer
            .write(&rig.ring, &rig.files, end, Caller::Flush, || end)
    };
    assert_eq!(flush().unwrap(), end);
    assert_eq!(flush().unwrap(), end);
    let stats = rig.writer.stats();
    assert_eq!((stats.writes, stats.syncs), (1, 1), "{stats:?}");
    assert_eq!(stats.flush_requests, 2);
    assert_eq!((stats.flush_groups, stats.flush_group_members), (1, 2));
}

#[test]
fn after_a_poison_nothing_is_written_or_reported_durable() {
    let rig = WriterRig::new(4, 0, SyncMethod::Fdatasync, false).unwrap();
    let (writer, start) = (&rig.writer, rig.start);
    writer.poison();
    let end = Lsn(start.0 + PAGE_SIZE);
    assert!(matches!(
        writer.write(&rig.ring, &rig.files, end, Caller::Flush, || end),
        Err(WriteError::Poisoned)
    ));
    assert!(writer
        .write(&rig.ring, &rig.files, end, Caller::Eviction, || end)
        .is_err());
    assert_eq!((writer.written(), writer.flushed()), (start, start));
    assert_eq!(writer.stats().writes, 0);
}

#[test]
fn direct_io_writes_whole_pages_and_rewrites_a_partial_one() {
    // Two pages before the ring's end, so the second write also wraps.
    let pages = 4;
    let rig = WriterRig::new(pages, 2, SyncMethod::Fdatasync, true).unwrap();
    let (ring, writer, start) = (&rig.ring, &rig.writer, rig.start);
    let first_end = Lsn(start.0 + 3000);
    // Bytes past the flushed point, as a record still being copied leaves
    // them: they must not reach the disk.
    // SAFETY: the ring is the rig's alone; the page is initialised.
    unsafe { ring.copy_in(first_end, &[0xAB; 100]) };
    let flush = |end: Lsn| writer.write(ring, &rig.files, end, Caller::Flush, || end);
    assert_eq!(flush(first_end).unwrap(), first_end);
    // The partial page counts as written only up to where it was filled.
    assert_eq!(writer.written(), first_end);
    let stats = writer.stats();
    assert_eq!(
        (stats.writes, stats.bytes_written),
        (1, PAGE_SIZE),
        "{stats:?}"
    );

    let seg = rig.files.segment_size();
    let file = rig.files.open_for_write(1, FileSyncMode::None).unwrap();
    let read_page = |page: Lsn| {
        let mut bytes = vec![0u8; PAGE_SIZE as usize];
        file.read_exact_at(&mut bytes, seg.offset(page)).unwrap();
        bytes
    };
    let on_disk = read_page(start);
    // SAFETY: nothing else touches the ring.
    let in_ring = unsafe { ring.range(start, first_end) };
    assert_eq!(&on_disk[..3000], in_ring);
    assert!(on_disk[3000..].iter().all(|&b| b == 0), "the tail is zeros");

    // The next write starts again at the partial page's start, runs
    // across the ring's wrap and ends inside another page.
    let second_end = Lsn(start.0 + 2 * PAGE_SIZE + 500);
    assert_eq!(flush(second_end).unwrap(), second_end);
    let stats = writer.stats();
    assert_eq!(stats.writes, 2, "{stats:?}");
    assert_eq!(stats.bytes_written, PAGE_SIZE + 3 * PAGE_SIZE);
    for i in 0..2 {
        let page = Lsn(start.0 + i * PAGE_SIZE);
        // SAFETY: as above.
        let in_ring = unsafe { ring.range(page, Lsn(page.0 + PAGE_SIZE)) };
        assert_eq!(read_page(page), in_ring, "page {i} is written whole");
    }
    let last = read_page(Lsn(start.0 + 2 * PAGE_SIZE));
    assert!(last[500..].iter().all(|&b| b == 0));
    assert_eq!(
        Lsn(u64::from_le_bytes(last[8..16].try_into().unwrap())),
        Lsn(start.0 + 2 * PAGE_SIZE)
    );
}

/// Seed 002's eviction storm, made deterministic: the background writer
/// asks for the write lock while an eviction holds it, three evictions
/// queue behind it, each coming back for more. With the hand-off none of
/// them passes it: it takes the lock at the next release, writes
/// everything, and the evictions find their pages written.
#[test]
fn the_background_writer_gets_the_write_lock_ahead_of_an_eviction_storm() {
    let pages = 64;
    let rig = WriterRig::new(pages, 0, SyncMethod::Fdatasync, false).unwrap();
    let (writer, start) = (&rig.writer, rig.start);
    let end = Lsn(start.0 + pages * PAGE_SIZE);
    let page = |n: u64| Lsn(start.0 + n * PAGE_SIZE);
    let write = |to: Lsn, caller| writer.write(&rig.ring, &rig.files, to, caller, || to);
    let held = writer.lock_for(Caller::Eviction);
    std::thread::scope(|s| {
        let background = s.spawn(|| write(end, Caller::BackgroundWriter));
        while writer.state.waiting().0 != 1 {
            std::thread::yield_now();
        }
        let storm: Vec<_> = (0..3)
            .map(|i| {
                s.spawn(move || {
                    for k in 1..=16 {
                        write(page(i * 16 + k), Caller::Eviction).unwrap();
                    }
                })
            })
            .collect();
        while writer.state.waiting().1 != 3 {
            std::thread::yield_now();
        }
        drop(held);
        assert_eq!(background.join().unwrap().unwrap(), end);
        for t in storm {
            t.join().unwrap();
        }
    });
    let stats = writer.stats();
    assert_eq!(stats.background_lock_acquisitions, 1);
    assert_eq!(stats.background_lock_most_overtaken, 0, "{stats:?}");
    assert_eq!(stats.bytes_by_background_writer, pages * PAGE_SIZE);
    assert_eq!(stats.bytes_by_evictions, 0);
    assert_eq!(stats.background_writer_share(), 1.0);
}

/// Every byte written is counted as one caller's.
#[test]
fn bytes_are_counted_by_caller() {
    let rig = WriterRig::new(8, 0, SyncMethod::Fdatasync, false).unwrap();
    let page = |n: u64| Lsn(rig.start.0 + n * PAGE_SIZE);
    let write = |to: Lsn, caller| rig.writer.write(&rig.ring, &rig.files, to, caller, || to);
    write(page(1), Caller::Eviction).unwrap();
    write(page(3), Caller::Flush).unwrap();
    write(page(6), Caller::BackgroundWriter).unwrap();
    let stats = rig.writer.stats();
    assert_eq!(
        (
            stats.bytes_by_evictions,
            stats.bytes_by_flushes,
            stats.bytes_by_background_writer
        ),
        (PAGE_SIZE, 2 * PAGE_SIZE, 3 * PAGE_SIZE)
    );
    assert_eq!(stats.bytes_written, 6 * PAGE_SIZE);
    assert_eq!(stats.background_lock_acquisitions, 1);
}

/// Segment files whose syncs wait at a gate the test opens.
#[derive(Debug, Default)]
struct SyncGate {
    /// (held, syncs waiting at the gate).
    state: std::sync::Mutex<(bool, usize)>,
    changed: std::sync::Condvar,
}

impl SyncGate {
    fn held() -> Arc<SyncGate> {
        let gate = Arc::new(SyncGate::default());
        gate.state.lock().unwrap().0 = true;
        gate
    }

    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        state.1 += 1;
        self.changed.notify_all();
        while state.0 {
            state = self.changed.wait(state).unwrap();
        }
        state.1 -= 1;
    }

    /// Waits (at most 20 s) until a sync waits at the gate.
    fn wait_for_a_sync(&self) {
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        let mut state = self.state.lock().unwrap();
        while state.1 == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no sync reached the gate");
            state = self.changed.wait_timeout(state, left).unwrap().0;
        }
    }

    fn open(&self) {
        self.state.lock().unwrap().0 = false;
        self.changed.notify_all();
    }
}

/// A segment file whose syncs pass its gate first.
#[derive(Debug)]
struct GatedFile(Box<dyn StorageFile>, Arc<SyncGate>);

impl StorageFile for GatedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.1.pass();
        self.0.sync_data()
    }
    fn sync_all(&self) -> std::io::Result<()> {
        self.1.pass();
        self.0.sync_all()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.0.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)
    }
}

/// The rig's segment files, each opened behind the gate.
struct GatedSegments<'a>(&'a WriterRig, Arc<SyncGate>);

impl SegmentOpener for GatedSegments<'_> {
    fn open_segment(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        let file = self.0.files.open_segment(segno, opts)?;
        Ok(Box::new(GatedFile(file, self.1.clone())))
    }

    fn entered_segment(&self, _segno: u64) {}
}

/// Waits (at most 20 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::yield_now();
    }
}

/// A leader's sync held in flight; a second flusher with more data
/// arrives. With overlapped syncs it leads a round of its own and writes
/// its data while that sync is in flight, and nothing is reported durable
/// until a sync returns; without, it parks and writes nothing. Either way
/// both flushes return durable once the gate opens, with two syncs.
fn a_second_flusher_during_a_sync(overlap: bool) {
    let rig = WriterRig::with_overlap(8, 0, SyncMethod::Fdatasync, false, overlap).unwrap();
    let gate = SyncGate::held();
    let segments = GatedSegments(&rig, gate.clone());
    let (writer, start) = (&rig.writer, rig.start);
    let first = Lsn(start.0 + PAGE_SIZE);
    let second = Lsn(start.0 + 3 * PAGE_SIZE);
    let flush = |to: Lsn| {
        writer.request_flush(to);
        writer.write(&rig.ring, &segments, to, Caller::Flush, || to)
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| flush(first));
        gate.wait_for_a_sync();
        assert_eq!(writer.written(), first);
        let b = s.spawn(|| flush(second));
        if overlap {
            wait_until("the second flusher has written", || {
                writer.written() >= second
            });
        } else {
            wait_until("the second flusher is parked", || {
                writer.queue.parked() == 1
            });
            assert_eq!(writer.written(), first, "parked behind the sync: no write");
        }
        assert_eq!(writer.flushed(), start, "no sync has returned");
        gate.open();
        assert!(a.join().unwrap().unwrap() >= first);
        assert!(b.join().unwrap().unwrap() >= second);
    });
    assert_eq!(writer.flushed(), second);
    let stats = writer.stats();
    assert_eq!(stats.syncs, 2, "{stats:?}");
    assert_eq!(stats.writes, 2, "{stats:?}");
}

#[test]
fn with_overlapped_syncs_the_next_flusher_writes_while_a_sync_is_in_flight() {
    a_second_flusher_during_a_sync(true);
}

#[test]
fn without_overlapped_syncs_the_next_flusher_waits_for_the_whole_round() {
    a_second_flusher_during_a_sync(false);
}
