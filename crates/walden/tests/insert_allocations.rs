//! The insert path allocates nothing per record: a record's body is copied
//! from the caller's slice straight into the buffer ring, with no encode
//! buffer to grow, zero or free (records over 1 MiB used to free theirs
//! and allocate it again on the next insert), or, written through, goes
//! from the caller's slice to the file with headers and parts built on
//! the stack.
//!
//! A binary of its own: its global allocator counts the allocations each
//! thread makes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use walden::{Config, Record, ReservationKind, SyncMethod, Wal, WalFormat};

/// Counts the calling thread's allocations, then defers to the system
/// allocator.
struct Counting;

thread_local! {
    /// Allocations (and reallocations) made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread being torn down has no counter left to bump.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is passed on unchanged to `System`, which upholds
// `GlobalAlloc`'s contract; counting touches only a const-initialised
// thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations this thread made while running `f`.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Main-data sizes: empty, short and long main-data headers, several
/// pages, and records over 1 MiB (and over a segment) twice in a row.
const SIZES: [usize; 8] = [0, 1, 200, 5000, 40_000, 1 << 20, 3 << 20, 3 << 20];

/// Allocations a write makes for the writer's metrics (two counters and a
/// histogram, each keyed with the log's label).
const METRIC_KEYS_PER_WRITE: u64 = 3;

#[test]
fn inserting_allocates_nothing_per_record() {
    for (format, reservation) in [
        (WalFormat::Postgres15, ReservationKind::Spinlock),
        (WalFormat::Postgres15, ReservationKind::PrevLinkTable),
        (WalFormat::Postgres15, ReservationKind::PrevLinkInBuffer),
        (WalFormat::SelfLsn, ReservationKind::Unlinked),
        (WalFormat::CompactWalId, ReservationKind::Unlinked),
    ] {
        for write_through_from in [0, 256 << 10] {
            let dir = tempfile::tempdir().unwrap();
            let config = Config {
                format,
                reservation,
                // Without write-through, 1 MiB segments: records cross them.
                // With it, the inserting thread writes its large records, and
                // one 64 MiB segment, opened by the first one below, holds
                // them all: opening a segment allocates (its path), which is
                // not per record.
                segment_size: if write_through_from == 0 {
                    1 << 20
                } else {
                    64 << 20
                },
                // Room for every record: no page is evicted, so the inserting
                // thread never writes but for write-through.
                buffers: 32 << 20,
                sync_method: SyncMethod::None,
                write_through_from,
                ..Config::default()
            };
            let wal = Wal::create(dir.path(), config).unwrap();
            let records: Vec<Record<'static>> = SIZES
                .iter()
                .map(|&len| Record::new(140, 0x10, vec![0x5A; len]).with_xid(9))
                .collect();
            // The first insert on a thread may set up per-thread state (the
            // slot choice), and the first record written through opens the
            // segment; what matters is every insert after them.
            wal.insert(&records[0]).unwrap();
            wal.insert(&records[5]).unwrap();
            let mut end = None;
            let writes_before = wal.stats().writer.writes;
            let allocations = allocations_in(|| {
                for rec in &records {
                    end = Some(wal.insert(rec).unwrap());
                }
            });
            // Without write-through, nothing. With it, the inserter's
            // writes allocate only the writer's metrics' keys (the
            // `metrics` facade builds each key with the log's label per
            // call), none per page or record: at most that many for every
            // write the log made meanwhile (the background writer's too).
            let writes = wal.stats().writer.writes - writes_before;
            let allowed = if write_through_from == 0 {
                0
            } else {
                METRIC_KEYS_PER_WRITE * writes
            };
            assert!(
                allocations <= allowed,
                "{format} with {reservation}, write-through from {write_through_from}: \
                 {allocations} allocations while inserting {SIZES:?} ({writes} writes)"
            );
            assert_eq!(
                wal.stats().buffer_full_evictions,
                0,
                "{format} with {reservation}: evicted"
            );
            let written_through = wal.stats().writer.bytes_by_write_through;
            assert_eq!(
                written_through > 0,
                write_through_from > 0,
                "{format} with {reservation}: {written_through} bytes written through"
            );
            wal.flush(end.unwrap()).unwrap();
            wal.close().unwrap();
        }
    }
}
