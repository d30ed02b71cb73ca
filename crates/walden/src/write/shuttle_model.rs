//! Randomised schedules (shuttle) of the writer's group flush at 5 flushers
//! plus an observer, on the simulated storage: every flush returns a
//! durable point at or past its target, the durable point never goes back,
//! one sync serves several flushers (with direct I/O too, the file then
//! holding the ring's bytes), with and without overlapped syncs (a leader
//! ending its lead before its sync); and with the first sync failing, every
//! flusher it would have covered gets an error, nothing is reported durable
//! after it, and the writer refuses further work.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib write::shuttle_model` (the
//! simulated storage needs the `sim` feature).

use shuttle::sync::Arc;
use shuttle::thread;

use super::rig::WriterRig;
use crate::lsn::{Lsn, PAGE_SIZE};
use crate::sync::shuttle_support;
use crate::write::{Caller, SyncMethod};

const FLUSHERS: u64 = 5;
const PAGES: u64 = 4;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 1_000;

fn setup(direct: bool, overlap: bool) -> Arc<WriterRig> {
    Arc::new(WriterRig::with_overlap(PAGES, 0, SyncMethod::Fdatasync, direct, overlap).unwrap())
}

/// Runs the flushers (and an observer); returns each flusher's target and
/// outcome.
fn flush_all(s: &Arc<WriterRig>) -> Vec<(Lsn, Result<Lsn, String>)> {
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
                    .write(&s.ring, &s.files, target, Caller::Flush, || target)
                    .map_err(|e| e.to_string());
                (target, r)
            })
        })
        .collect();
    let out = handles.into_iter().map(|h| h.join().unwrap()).collect();
    observer.join().unwrap();
    out
}

/// Every flusher's target durable, each flusher in one group flush; with
/// `direct`, the segment file then holds the ring's bytes up to the
/// highest target, however the whole-page writes (each rewriting the
/// partial page the one before left) interleaved.
fn check_group_flush(direct: bool, overlap: bool) {
    shuttle::check_random(
        move || {
            let s = setup(direct, overlap);
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
            if direct {
                let end = results.iter().map(|(t, _)| *t).max().unwrap_or(s.start);
                let file = s.files.open_for_read(1).unwrap();
                let mut on_disk = vec![0u8; (end.0 - s.start.0) as usize];
                let offset = s.files.segment_size().offset(s.start);
                file.read_exact_at(&mut on_disk, offset).unwrap();
                // SAFETY: every flusher has returned; nothing writes the ring.
                let in_ring = unsafe { s.ring.range(s.start, end) };
                assert!(on_disk == in_ring, "the file holds the ring's bytes");
            }
        },
        shuttle_support::iterations(ITERATIONS),
    );
}

#[test]
fn group_flush_makes_every_target_durable() {
    check_group_flush(false, true);
}

#[test]
fn group_flush_with_direct_io_makes_every_target_durable() {
    check_group_flush(true, true);
}

#[test]
fn group_flush_without_overlapped_syncs_makes_every_target_durable() {
    check_group_flush(false, false);
}

#[test]
fn a_failed_sync_fails_every_flusher_it_covered() {
    // Random schedules, as in the test above.
    shuttle::check_random(
        || {
            let s = setup(false, true);
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
                .write(&s.ring, &s.files, end, Caller::Flush, || end)
                .is_err());
            assert_eq!(s.writer.flushed(), durable);
        },
        shuttle_support::iterations(ITERATIONS),
    );
}
