//! How much memory a `WaldenLogStore` holds for a long raft log: appends
//! N entries of 100-byte requests (default 1,000,000; `cargo run --release
//! -p walden-raft --example footprint -- 250000` for another N) and prints
//! the store's own count ([`WaldenLogStore::memory_footprint`]) and the
//! heap growth a counting allocator saw, against the bound the index and
//! the cache allow: 16 bytes an entry (an 8-byte LSN in a ring that grows
//! by doubling) plus twice the cache capacity.
//!
//! Its test (`cargo test --release -p walden-raft --example footprint`)
//! checks the bound for 1,000,000 entries.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor; // openraft's default snapshot data type
use std::sync::atomic::{AtomicIsize, Ordering};

use anyhow::{Context, Result};
use openraft::storage::RaftLogStorageExt;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use walden::{Config, SyncMethod};
use walden_raft::{StoreOptions, WaldenLogStore};

openraft::declare_raft_types!(
    /// Requests and responses are strings.
    pub FootprintConfig
);

/// The system allocator, counting the bytes live.
struct Counting;

/// Heap bytes allocated and not yet freed.
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a statistic read after the threads that allocate have
        // handed their work back; no other memory depends on it.
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Cache capacity used: 1 MiB.
const CACHE_BYTES: usize = 1 << 20;
/// Request size.
const REQUEST: usize = 100;
/// Entries per `append` call.
const BATCH: u64 = 1000;

/// What appending N entries left in memory.
#[derive(Debug)]
struct Footprint {
    entries: u64,
    /// The store's own count.
    reported: usize,
    /// Heap growth from just after open to after the appends.
    heap_growth: isize,
    /// 16 bytes an entry plus twice the cache capacity.
    bound: usize,
}

fn measure(entries: u64) -> Result<Footprint> {
    let dir = tempfile::tempdir()?;
    let config = Config {
        segment_size: 64 << 20,
        buffers: 4 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    let options = StoreOptions::default().with_cache_bytes(CACHE_BYTES);
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let mut store = WaldenLogStore::<FootprintConfig>::open_with(dir.path(), config, options)
        .context("opening the store")?;
    let before = LIVE.load(Ordering::Relaxed);
    let request = "r".repeat(REQUEST);
    let mut next = 0;
    while next < entries {
        let end = (next + BATCH).min(entries);
        let batch = (next..end).map(|i| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), i),
            payload: EntryPayload::Normal(request.clone()),
        });
        runtime
            .block_on(store.blocking_append(batch))
            .context("appending")?;
        next = end;
    }
    let heap_growth = LIVE.load(Ordering::Relaxed) - before;
    let reported = store.memory_footprint();
    drop(store);
    Ok(Footprint {
        entries,
        reported,
        heap_growth,
        bound: 16 * entries as usize + 2 * CACHE_BYTES,
    })
}

fn main() -> Result<()> {
    let entries = match std::env::args().nth(1) {
        Some(n) => n.parse().context("the entry count")?,
        None => 1_000_000,
    };
    let f = measure(entries)?;
    let payload = f.entries as usize * REQUEST;
    println!(
        "{} entries of {REQUEST} B ({:.1} MB of requests): store footprint {:.2} MB, heap growth {:.2} MB, bound (16 B/entry + 2 x {:.0} MiB cache) {:.2} MB",
        f.entries,
        payload as f64 / 1e6,
        f.reported as f64 / 1e6,
        f.heap_growth as f64 / 1e6,
        CACHE_BYTES as f64 / f64::from(1 << 20),
        f.bound as f64 / 1e6,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store's memory is bounded by its index and cache, not by the
    /// entries: both its own count and the heap growth stay under 16 bytes
    /// an entry plus twice the cache, far below the requests' bytes.
    #[test]
    fn the_footprint_is_bounded_by_the_index_and_the_cache() {
        let entries = 1_000_000;
        let f = measure(entries).unwrap();
        assert!(f.reported <= f.bound, "{f:?}");
        assert!(
            f.reported >= 8 * entries as usize,
            "an LSN per entry is counted: {f:?}"
        );
        assert!(f.heap_growth <= f.bound as isize, "{f:?}");
        assert!(
            f.bound < entries as usize * REQUEST,
            "the bound is below what holding the entries would take"
        );
    }
}
