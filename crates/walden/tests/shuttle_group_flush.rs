//! Randomised schedules (shuttle) of the writer's group flush at 5 flushers
//! plus an observer, on the simulated storage: every flush returns a
//! durable point at or past its target, the durable point never goes back,
//! one sync serves several flushers; and with the first sync failing, every
//! flusher it would have covered gets an error, nothing is reported durable
//! after it, and the writer refuses further work.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --test shuttle_group_flush`.
#![cfg(shuttle)]

mod shuttle_support;

use std::path::Path;

use shuttle::sync::Arc;
use shuttle::thread;
use walden::internals::SegmentFiles;
use walden::internals::PAGE_SIZE;
use walden::internals::{BufferRing, PageIdentity};
use walden::internals::{SegmentOpener, Writer};
use walden::SyncMethod;
use walden::{Lsn, SegmentSize, WalFormat};
use walden::{SegmentError, SimStorage, Storage, StorageFile};

const FLUSHERS: u64 = 5;
const PAGES: u64 = 4;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 1_000;

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

struct Setup {
    sim: SimStorage,
    ring: BufferRing,
    writer: Writer,
    opener: Opener,
    start: Lsn,
}

fn setup() -> Arc<Setup> {
    let sim = SimStorage::new(1);
    let dir = Path::new("/wal");
    sim.create_dir_all(dir).unwrap();
    let seg = SegmentSize::new(1 << 20).unwrap();
    let id = PageIdentity {
        timeline: 1,
        system_id: 1,
        format: WalFormat::Postgres15,
    };
    let ring = BufferRing::new(PAGES as usize, seg, id);
    let start = seg.segment_start(1);
    for i in 0..PAGES {
        // SAFETY: the ring is not shared yet.
        unsafe { ring.init_page(Lsn(start.0 + i * PAGE_SIZE), 0) };
    }
    let files = SegmentFiles::new(Arc::new(sim.clone()) as Arc<dyn Storage>, dir, seg, 1);
    // Created up front: the model is the flush protocol, not segment creation.
    files.create_zeroed(1).unwrap();
    Arc::new(Setup {
        sim,
        ring,
        writer: Writer::new(SyncMethod::Fdatasync, seg, start),
        opener: Opener(files),
        start,
    })
}

/// Runs the flushers (and an observer); returns each flusher's target and
/// outcome.
fn flush_all(s: &Arc<Setup>) -> Vec<(Lsn, Result<Lsn, String>)> {
    let observer = {
        let s = s.clone();
        thread::spawn(move || {
            let mut last = s.writer.flushed();
            for _ in 0..4 {
                let now = s.writer.flushed();
                assert!(
                    now >= last,
                    "the durable point went back from {last} to {now}"
                );
                last = now;
                thread::yield_now();
            }
        })
    };
    let handles: Vec<_> = (1..=FLUSHERS)
        .map(|i| {
            let s = s.clone();
            thread::spawn(move || {
                let target = Lsn(s.start.0 + i * (PAGES * PAGE_SIZE - 64) / FLUSHERS);
                s.writer.request_flush(target);
                let r = s
                    .writer
                    .write(&s.ring, &s.opener, target, true, || target)
                    .map_err(|e| e.to_string());
                (target, r)
            })
        })
        .collect();
    let out = handles.into_iter().map(|h| h.join().unwrap()).collect();
    observer.join().unwrap();
    out
}

#[test]
fn group_flush_makes_every_target_durable() {
    shuttle::check_random(
        || {
            let s = setup();
            let results = flush_all(&s);
            for (target, r) in &results {
                let got = r.as_ref().unwrap();
                assert!(*got >= *target, "flush to {target} returned {got}");
            }
            let stats = s.writer.stats();
            let syncs = stats.syncs;
            assert!((1..=FLUSHERS).contains(&syncs), "{syncs} syncs");
            // Each flusher is a member of exactly one group flush, and each
            // group flush synced.
            assert_eq!(stats.flush_group_members, FLUSHERS, "{stats:?}");
            assert!((1..=syncs).contains(&stats.flush_groups), "{stats:?}");
        },
        shuttle_support::iterations(ITERATIONS),
    );
}

#[test]
fn a_failed_sync_fails_every_flusher_it_covered() {
    // Random schedules, as in the test above.
    shuttle::check_random(
        || {
            let s = setup();
            s.sim.fail_sync(1, false);
            let results = flush_all(&s);
            let durable = s.writer.flushed();
            assert!(s.writer.check().is_err(), "the writer is poisoned");
            for (target, r) in &results {
                match r {
                    Ok(got) => assert!(
                        *target <= durable && *got <= durable,
                        "flush to {target} returned Ok({got}) past the durable point {durable}"
                    ),
                    Err(e) => assert!(e.contains("EIO") || e.contains("poisoned"), "{e}"),
                }
            }
            assert!(results.iter().any(|(_, r)| r.is_err()));
            let end = Lsn(s.start.0 + PAGES * PAGE_SIZE - 8);
            assert!(s
                .writer
                .write(&s.ring, &s.opener, end, true, || end)
                .is_err());
            assert_eq!(s.writer.flushed(), durable);
        },
        shuttle_support::iterations(ITERATIONS),
    );
}
