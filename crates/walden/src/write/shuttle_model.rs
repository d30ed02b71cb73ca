//! Randomised schedules (shuttle) of the writer's group flush at 5 flushers
//! plus an observer, on the simulated storage: every flush returns a
//! durable point at or past its target, the durable point never goes back,
//! one sync serves several flushers (with direct I/O too, the file then
//! holding the ring's bytes), with and without overlapped syncs (a leader
//! ending its lead before its sync), and with two syncs in flight at once
//! (concurrent syncs); and with the first sync failing, every
//! flusher it would have covered gets an error, nothing is reported durable
//! after it, and the writer refuses further work.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib write::shuttle_model` (the
//! simulated storage needs the `sim` feature).

use shuttle::sync::Arc;
use shuttle::thread;

use super::rig::{SyncWrappedSegments, WriterRig};
use crate::lsn::{Lsn, PAGE_SIZE};
use crate::sync::shuttle_support;
use crate::write::{Caller, SyncMethod};

const FLUSHERS: u64 = 5;
const PAGES: u64 = 4;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 1_000;

/// Scheduling points a sync lets pass: long enough for another flusher to
/// lead, write and sync meanwhile in some schedules.
const SYNC_YIELDS: usize = 20;

fn sync_takes_long() {
    for _ in 0..SYNC_YIELDS {
        thread::yield_now();
    }
}

/// The rig's segment files, whose syncs let other threads run first: a
/// sync takes long enough for others to work meanwhile, which is what
/// overlapped and concurrent syncs are for.
fn yielding(s: &WriterRig) -> SyncWrappedSegments<'_> {
    SyncWrappedSegments::new(
        &s.files,
        std::sync::Arc::new(|sync| {
            sync_takes_long();
            sync()
        }),
    )
}

fn setup(direct: bool, overlap: bool, concurrent: bool) -> Arc<WriterRig> {
    Arc::new(
        WriterRig::with_syncs(PAGES, 0, SyncMethod::Fdatasync, direct, overlap, concurrent)
            .unwrap(),
    )
}

/// Runs the flushers (and an observer), each flushing `rounds` times to a
/// higher target (stopping at an error), the last one starting late;
/// returns each flush's target and outcome.
fn flush_all(s: &Arc<WriterRig>, rounds: u64) -> Vec<(Lsn, Result<Lsn, String>)> {
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
                let mut out = Vec::new();
                if i == FLUSHERS {
                    // The last one comes late, most often while an earlier
                    // round's sync is in flight.
                    sync_takes_long();
                }
                for round in 0..rounds {
                    let k = round * FLUSHERS + i;
                    let target =
                        Lsn(s.start.0 + k * (PAGES * PAGE_SIZE - 64) / (FLUSHERS * rounds));
                    s.writer.request_flush(target);
                    let r = s
                        .writer
                        .write(&s.ring, &yielding(&s), target, Caller::Flush, || target)
                        .map_err(|e| e.to_string());
                    let failed = r.is_err();
                    out.push((target, r));
                    if failed {
                        break;
                    }
                }
                out
            })
        })
        .collect();
    let out = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    observer.join().unwrap();
    out
}

/// Every flusher's target durable, each flusher in one group flush; with
/// `direct`, the segment file then holds the ring's bytes up to the
/// highest target, however the whole-page writes (each rewriting the
/// partial page the one before left) interleaved.
fn check_group_flush(direct: bool, overlap: bool, concurrent: bool) {
    // Schedules in which two syncs were in flight at once (std's atomics:
    // outside the model, counted across its iterations).
    let overlapping = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = overlapping.clone();
    shuttle::check_random(
        move || {
            let s = setup(direct, overlap, concurrent);
            // Two rounds each with concurrent syncs: a flusher that comes
            // back while a round's sync is in flight leads one of its own.
            let rounds = if concurrent { 2 } else { 1 };
            let results = flush_all(&s, rounds);
            for (target, r) in &results {
                let got = r.as_ref().unwrap();
                assert!(*got >= *target, "flush to {target} returned {got}");
            }
            let stats = s.writer.stats();
            if stats.concurrent_syncs > 0 {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let syncs = stats.syncs;
            assert!((1..=FLUSHERS * rounds).contains(&syncs), "{syncs} syncs");
            // Each flush is a member of exactly one group flush, and each
            // group flush synced.
            assert_eq!(stats.flush_group_members, FLUSHERS * rounds, "{stats:?}");
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
    // Relaxed: every iteration has run.
    let overlapping = overlapping.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        overlapping > 0,
        concurrent,
        "{overlapping} schedules ran two syncs at once"
    );
}

#[test]
fn group_flush_makes_every_target_durable() {
    check_group_flush(false, true, false);
}

#[test]
fn group_flush_with_direct_io_makes_every_target_durable() {
    check_group_flush(true, true, false);
}

#[test]
fn group_flush_without_overlapped_syncs_makes_every_target_durable() {
    check_group_flush(false, false, false);
}

#[test]
fn group_flush_with_concurrent_syncs_makes_every_target_durable() {
    check_group_flush(false, true, true);
    check_group_flush(true, true, true);
}

/// The first sync to reach the disk fails: every flusher told its data is
/// durable has it below the durable point, which never moves again.
fn check_a_failed_sync(concurrent: bool) {
    // Random schedules, as in the test above.
    shuttle::check_random(
        move || {
            let s = setup(false, true, concurrent);
            s.sim.fail_sync(1, false);
            let results = flush_all(&s, if concurrent { 2 } else { 1 });
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

#[test]
fn a_failed_sync_fails_every_flusher_it_covered() {
    check_a_failed_sync(false);
}

#[test]
fn with_concurrent_syncs_a_failed_sync_fails_every_flusher_it_covered() {
    check_a_failed_sync(true);
}
