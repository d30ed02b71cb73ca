//! How much the write path writes at once: evictions per policy (seed 002),
//! and flushes under `open_datasync`, where every write is a durable one.

use walden::internals::PAGE_SIZE;
use walden::{Config, Eviction, Record, SwitchEviction, SyncMethod, Wal, WriterStats};

/// A log that writes only when it must: no background writer.
fn config(buffers: u64, eviction: Eviction) -> Config {
    Config {
        segment_size: 1 << 20,
        buffers,
        eviction,
        sync_method: SyncMethod::OpenDatasync,
        writer_delay: None,
        ..Config::default()
    }
}

/// Writes, evictions and the largest write of one switch (plus the flush
/// of its end) right after a checkpoint, and the pages it swallowed; the
/// log first gets `filler_pages` pages of records, so that the switch
/// starts that far into the ring.
fn switch_costs(eviction: Eviction, filler_pages: u64) -> (u64, u64, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config(16 * PAGE_SIZE, eviction)).unwrap();
    for _ in 0..filler_pages {
        wal.insert(&Record::new(128, 0, vec![7; 8000])).unwrap();
    }
    wal.checkpoint().unwrap();
    let before = wal.stats();
    let span = wal.switch_segment().unwrap().expect("not on a boundary");
    wal.flush(span.end).unwrap();
    let after = wal.stats();
    wal.close().unwrap();
    (
        after.writer.writes - before.writer.writes,
        after.buffer_full_evictions - before.buffer_full_evictions,
        after.writer.largest_write,
        (span.end.0 - span.start.0) / PAGE_SIZE,
    )
}

#[test]
fn one_page_eviction_writes_a_switch_page_by_page() {
    let (writes, evictions, _, pages) = switch_costs(Eviction::OnePage, 0);
    assert!(pages > 100, "the switch swallowed {pages} pages");
    assert!(evictions >= pages - 16, "{evictions} evictions");
    assert!(writes >= pages - 16, "{writes} writes for {pages} pages");
}

#[test]
fn batch_eviction_writes_a_switch_a_ring_at_a_time() {
    let (writes, evictions, largest, pages) = switch_costs(Eviction::Batch, 0);
    // A 16-page ring: each eviction frees the whole ring in one write.
    assert!(writes * 10 <= pages, "{writes} writes for {pages} pages");
    assert!(evictions * 10 <= pages, "{evictions} evictions");
    assert!(largest >= 15 * PAGE_SIZE, "largest write {largest}");
}

#[test]
fn batch_eviction_stays_one_write_per_ring_from_the_middle_of_the_ring() {
    // The switch starts 5 pages into the 16-page ring: a batch that split
    // at the ring's wrap point would take two writes every time (it runs
    // across it as one vectored write).
    let (writes, _, _, pages) = switch_costs(Eviction::Batch, 5);
    assert!(pages > 100, "the switch swallowed {pages} pages");
    assert!(writes * 12 <= pages, "{writes} writes for {pages} pages");
}

/// The writer's counters before and after one switch (without the flush of
/// its end) right after a checkpoint, on a 64-page ring with a 2-page
/// eviction chunk, and the pages it swallowed.
fn switch_with_a_small_chunk(switch_eviction: SwitchEviction) -> (WriterStats, WriterStats, u64) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        eviction_chunk: 2 * PAGE_SIZE,
        switch_eviction,
        ..config(64 * PAGE_SIZE, Eviction::Batch)
    };
    let wal = Wal::create(dir.path(), config).unwrap();
    wal.checkpoint().unwrap();
    let before = wal.stats();
    let span = wal.switch_segment().unwrap().expect("not on a boundary");
    let after = wal.stats();
    drop(wal);
    (
        before.writer,
        after.writer,
        (span.end.0 - span.start.0) / PAGE_SIZE,
    )
}

/// Seed 002.6: the switch knows it fills the rest of the segment, so its
/// evictions write everything it filled, a ring at a time, whatever the
/// chunk.
#[test]
fn a_switch_writes_everything_it_filled_regardless_of_the_chunk() {
    let (before, after, pages) = switch_with_a_small_chunk(SwitchEviction::Whole);
    assert!(pages > 100, "the switch swallowed {pages} pages");
    let writes = after.writes - before.writes;
    // 64-page ring: about one write per pass over it.
    assert!(writes * 16 <= pages, "{writes} writes for {pages} pages");
    assert!(
        after.largest_write >= 32 * PAGE_SIZE,
        "largest write {}",
        after.largest_write
    );
}

#[test]
fn the_batch_chunk_bounds_each_eviction_write() {
    // A chunked switch's evictions are bounded as every eviction.
    let (before, after, pages) = switch_with_a_small_chunk(SwitchEviction::Chunked);
    let writes = after.writes - before.writes;
    // At most the needed page plus two more per write, and never less than
    // that page: a third of the pages' worth of writes, give or take.
    assert!(
        writes * 3 + 3 >= pages - 64,
        "{writes} writes for {pages} pages"
    );
    assert!(writes * 2 <= pages, "{writes} writes for {pages} pages");
    // Bucket 3 and up: writes above 4 pages (32 KiB).
    let sizes = &after.write_sizes;
    assert_eq!(
        sizes[3..].iter().sum::<u64>(),
        before.write_sizes[3..].iter().sum::<u64>(),
        "no eviction write above 4 pages: {sizes:?}"
    );
}

#[test]
fn a_flush_under_open_datasync_writes_everything_ready_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config(256 * PAGE_SIZE, Eviction::OnePage)).unwrap();
    let before = wal.stats();
    let mut end = wal.insert_position();
    for i in 0..100u32 {
        end = wal
            .insert(&Record::new(128, 0, vec![i as u8; 4000]))
            .unwrap();
    }
    wal.flush(end).unwrap();
    let after = wal.stats();
    wal.close().unwrap();
    let writes = after.writer.writes - before.writer.writes;
    // 100 records of ~4 kB: one write, or two where the ring wraps.
    assert!(writes <= 2, "{writes} durable writes for one flush");
    assert!(
        after.writer.largest_write >= 200 * 1000,
        "largest write {}",
        after.writer.largest_write
    );
}
