//! The writer alone, on the simulated storage.

use super::rig::WriterRig;
use super::*;
use crate::lsn::PAGE_SIZE;
use crate::segment::{FileSyncMode, SegmentFiles};

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
        let page = rig.page(i);
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

/// A failed eviction lets its caller re-initialise the ring slot it was to
/// free (cooperative page init): it must first wait out a write that took
/// the write lock before the poison and may still be reading that slot.
#[test]
fn a_failed_eviction_waits_out_a_write_that_took_the_lock_before_the_poison() {
    use std::sync::atomic::AtomicBool;
    let rig = WriterRig::new(4, 0, SyncMethod::OpenDatasync, true).unwrap();
    let writer = &rig.writer;
    // A write in flight holds the write lock, as `write_locked` does.
    let in_flight = writer.lock_for(Caller::Flush);
    writer.poison();
    let returned = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let end = Lsn(rig.start.0 + PAGE_SIZE);
            let evicted = writer.write(&rig.ring, &rig.files, end, Caller::Eviction, || end);
            assert!(matches!(evicted, Err(WriteError::Poisoned)), "{evicted:?}");
            returned.store(true, Ordering::SeqCst);
        });
        // Until the eviction has returned or queued for the write lock.
        while !returned.load(Ordering::SeqCst) && writer.state.waiting().1 == 0 {
            std::thread::yield_now();
        }
        assert!(
            !returned.load(Ordering::SeqCst),
            "the failed eviction returned while a write held the write lock"
        );
        drop(in_flight);
    });
    assert!(returned.load(Ordering::SeqCst));
}

/// Buffered or direct, every write covers whole pages (PostgreSQL's
/// `XLogWrite`): the partial page is written whole, zeros past the flushed
/// point, and written again from its start by the next write.
#[test]
fn every_write_covers_whole_pages_and_rewrites_a_partial_one() {
    for direct in [false, true] {
        writes_whole_pages_and_rewrites_a_partial_one(direct);
    }
}

fn writes_whole_pages_and_rewrites_a_partial_one(direct: bool) {
    // Two pages before the ring's end, so the second write also wraps.
    let pages = 4;
    let rig = WriterRig::new(pages, 2, SyncMethod::Fdatasync, direct).unwrap();
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
        "direct {direct}: {stats:?}"
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
    assert!(
        on_disk[3000..].iter().all(|&b| b == 0),
        "direct {direct}: the tail is zeros"
    );

    // The next write starts again at the partial page's start, runs
    // across the ring's wrap and ends inside another page.
    let second_end = Lsn(start.0 + 2 * PAGE_SIZE + 500);
    assert_eq!(flush(second_end).unwrap(), second_end);
    let stats = writer.stats();
    assert_eq!(stats.writes, 2, "direct {direct}: {stats:?}");
    assert_eq!(
        stats.bytes_written,
        PAGE_SIZE + 3 * PAGE_SIZE,
        "direct {direct}"
    );
    for i in 0..2 {
        let page = rig.page(i);
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
    let page = |n: u64| rig.page(n);
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
    let page = |n: u64| rig.page(n);
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

/// Pages written ahead of `written` ([`Writer::write_ahead`], a record's
/// pages while the insertions below them are in flight) are written once:
/// `written` stays below them until the ring's bytes below reach their
/// start, a ring write up to past them stops short of them and jumps over
/// them, and pages written ahead where `written` stands are taken at once.
#[test]
fn pages_written_ahead_are_jumped_over_never_written_again() {
    let rig = WriterRig::new(8, 0, SyncMethod::Fdatasync, false).unwrap();
    let (ring, writer) = (&rig.ring, &rig.writer);
    let page = |i: u64| rig.page(i);
    let flush = |to: Lsn| writer.write(ring, &rig.files, to, Caller::Flush, || to);
    assert!(
        writer.open_for_ahead(&rig.files, 1).is_none(),
        "no segment is open before the first write"
    );
    assert_eq!(flush(page(1)).unwrap(), page(1));
    let file = writer
        .open_for_ahead(&rig.files, 1)
        .expect("segment 1 is open");
    assert!(
        writer.open_for_ahead(&rig.files, 2).is_none(),
        "only the open segment"
    );
    // Pages 2 and 3 ahead: page 1 is not written yet.
    let ahead = vec![0xAB; 2 * PAGE_SIZE as usize];
    let parts = [&ahead[..]];
    let pages = ThroughPages::new(page(2), &parts);
    writer
        .write_ahead(ring, &rig.files, file.as_ref(), &pages)
        .unwrap();
    assert_eq!(writer.written(), page(1), "page 1 is not written yet");
    // A ring write up to page 5: page 1, then past 2 and 3, then page 4.
    assert_eq!(flush(page(5)).unwrap(), page(5));
    // Page 5 ahead, where `written` stands: taken at once.
    let parts = [&ahead[..PAGE_SIZE as usize]];
    writer
        .write_ahead(
            ring,
            &rig.files,
            file.as_ref(),
            &ThroughPages::new(page(5), &parts),
        )
        .unwrap();
    assert_eq!(writer.written(), page(6));
    let stats = writer.stats();
    assert_eq!(stats.bytes_written, 6 * PAGE_SIZE, "{stats:?}");
    assert_eq!(stats.bytes_by_write_through, 3 * PAGE_SIZE, "{stats:?}");
    assert_eq!(stats.writes_ahead, 2, "{stats:?}");
    // Pages 0, 1 and 4 from the ring (their headers name their address),
    // 2, 3 and 5 written ahead.
    let seg = rig.files.segment_size();
    let out = rig.files.open_for_write(1, FileSyncMode::None).unwrap();
    for i in 0..6 {
        let mut bytes = [0u8; 16];
        out.read_exact_at(&mut bytes, seg.offset(page(i))).unwrap();
        if [2, 3, 5].contains(&i) {
            assert_eq!(bytes, [0xAB; 16], "page {i} written ahead");
        } else {
            let addr = u64::from_le_bytes(bytes[8..].try_into().unwrap());
            assert_eq!(Lsn(addr), page(i), "page {i} from the ring");
        }
    }
}

/// The rig's segment files as an opener that opens a ready segment ahead
/// ([`SegmentOpener::open_if_ready`]: one that exists), recording every
/// description it opens (the segment, and whether it was opened ahead)
/// and every segment the writer enters.
struct OpensAhead<'a> {
    files: &'a SegmentFiles,
    opens: Mutex<Vec<(u64, bool)>>,
    entered: Mutex<Vec<(u64, bool)>>,
}

impl<'a> OpensAhead<'a> {
    fn new(files: &'a SegmentFiles) -> Self {
        OpensAhead {
            files,
            opens: Mutex::default(),
            entered: Mutex::default(),
        }
    }
}

/// A rig whose ring starts four pages before segment 1's end: its pages 4
/// to 7 are segment 2's first.
fn rig_before_segment_2() -> WriterRig {
    WriterRig::new(8, 124, SyncMethod::Fdatasync, false).unwrap()
}

/// A flush to `to` through `opener`; returns the durable point.
fn flush_through(rig: &WriterRig, opener: &OpensAhead, to: Lsn) -> Lsn {
    rig.writer
        .write(&rig.ring, opener, to, Caller::Flush, || to)
        .unwrap()
}

impl SegmentOpener for OpensAhead<'_> {
    fn open_segment(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        lock(&self.opens).push((segno, false));
        self.files.open_segment(segno, opts)
    }

    fn open_if_ready(
        &self,
        segno: u64,
        opts: &OpenOptions,
    ) -> Result<Option<Box<dyn StorageFile>>, SegmentError> {
        if !self.files.exists(segno)? {
            return Ok(None);
        }
        lock(&self.opens).push((segno, true));
        self.files.open(segno, opts).map(Some)
    }

    fn entered_segment(&self, segno: u64, opened_ahead: bool) {
        lock(&self.entered).push((segno, opened_ahead));
    }
}

/// With many insertions in flight, records run ahead of `written` into
/// the segment after the open one. Its pages are written ahead through a
/// description opened before the writer enters it, if it is ready; the
/// writer then enters it with that description (opening it no second
/// time, so that its sync is told of the write-back errors of those
/// writes), jumps over the pages, and the segment's sync makes them
/// durable: they survive a power cut. No segment further on, and none that
/// does not exist, is opened ahead.
#[test]
fn the_next_segment_is_opened_ahead_and_entered_with_that_description() {
    let rig = rig_before_segment_2();
    let (ring, writer) = (&rig.ring, &rig.writer);
    let page = |i: u64| rig.page(i);
    let seg = rig.files.segment_size();
    assert_eq!(seg.segno(page(4)), 2);
    let opener = OpensAhead::new(&rig.files);
    assert_eq!(flush_through(&rig, &opener, page(1)), page(1));
    assert!(
        writer.open_for_ahead(&opener, 2).is_none(),
        "segment 2 does not exist yet"
    );
    rig.files.create_zeroed(2).unwrap();
    rig.files.create_zeroed(3).unwrap();
    assert!(
        writer.open_for_ahead(&opener, 3).is_none(),
        "only the segment after the open one"
    );
    let file = writer
        .open_for_ahead(&opener, 2)
        .expect("segment 2 is ready");
    let again = writer.open_for_ahead(&opener, 2).expect("still open");
    assert!(Arc::ptr_eq(&file, &again), "one description for segment 2");
    assert_eq!(*lock(&opener.opens), [(1, false), (2, true)]);
    // Pages 5 and 6 ahead, in segment 2, while segment 1 is open.
    let ahead = vec![0xAB; 2 * PAGE_SIZE as usize];
    let parts = [&ahead[..]];
    writer
        .write_ahead(
            ring,
            &opener,
            file.as_ref(),
            &ThroughPages::new(page(5), &parts),
        )
        .unwrap();
    assert_eq!(writer.written(), page(1));
    assert_eq!(flush_through(&rig, &opener, page(8)), page(8));
    assert_eq!(
        *lock(&opener.opens),
        [(1, false), (2, true)],
        "segment 2 entered with its description opened ahead"
    );
    assert_eq!(*lock(&opener.entered), [(1, false), (2, true)]);
    assert!(writer.flushed() >= page(8));
    rig.sim.power_cut();
    rig.sim.restart();
    let durable = rig.sim.contents(&rig.files.path(2)).expect("segment 2");
    for i in 4..8 {
        let at = seg.offset(page(i)) as usize;
        let bytes = &durable[at..at + 16];
        if [5, 6].contains(&i) {
            assert_eq!(bytes, [0xAB; 16], "page {i} written ahead, durable");
        } else {
            let addr = u64::from_le_bytes(bytes[8..].try_into().unwrap());
            assert_eq!(Lsn(addr), page(i), "page {i} from the ring, durable");
        }
    }
}

/// Pages written ahead that fill the segment after the open one, from its
/// first page to its last: once the writes below reach them, the writer
/// enters that segment before it jumps over them, so the jump to the
/// segment's end syncs it (through the description they went through)
/// and they survive a power cut.
#[test]
fn a_next_segment_written_ahead_whole_is_synced_when_written_reaches_it() {
    let rig = rig_before_segment_2();
    let (ring, writer) = (&rig.ring, &rig.writer);
    let page = |i: u64| rig.page(i);
    let seg = rig.files.segment_size();
    let opener = OpensAhead::new(&rig.files);
    assert_eq!(flush_through(&rig, &opener, page(1)), page(1));
    rig.files.create_zeroed(2).unwrap();
    let file = writer
        .open_for_ahead(&opener, 2)
        .expect("segment 2 is ready");
    let whole = vec![0xCD; seg.bytes() as usize];
    let parts = [&whole[..]];
    writer
        .write_ahead(
            ring,
            &opener,
            file.as_ref(),
            &ThroughPages::new(page(4), &parts),
        )
        .unwrap();
    let before = writer.stats().syncs;
    let segment_3 = seg.segment_start(3);
    assert_eq!(
        flush_through(&rig, &opener, page(4)),
        segment_3,
        "jumped to segment 2's end"
    );
    assert_eq!(*lock(&opener.entered), [(1, false), (2, true)]);
    assert_eq!(
        writer.stats().syncs - before,
        2,
        "segments 1 and 2 finished, each synced once"
    );
    rig.sim.power_cut();
    rig.sim.restart();
    let durable = rig.sim.contents(&rig.files.path(2)).expect("segment 2");
    assert!(durable == whole, "segment 2 durable as written ahead");
}
