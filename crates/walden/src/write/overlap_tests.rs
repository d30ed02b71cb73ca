//! Overlapped syncs (`Config::overlap_syncs`), on the simulated storage
//! with a sync held in flight: the next flusher writes meanwhile (or,
//! without them, parks), and nothing is reported durable before a sync
//! returns. Concurrent syncs (`Config::concurrent_syncs`): the next flusher
//! also syncs beside the held sync, through a second file description, and
//! nothing is published before the earlier sync returns.

use std::time::Duration;

use super::rig::{SyncWrappedSegments, WriterRig};
use super::*;
use crate::lsn::PAGE_SIZE;

/// What the gate has seen.
#[derive(Debug, Default)]
struct GateState {
    open: bool,
    /// Syncs that have reached the gate, in order.
    arrived: usize,
    /// Of those, the ones let through one by one (by arrival number).
    let_through: Vec<usize>,
    /// Syncs waiting at the gate now.
    waiting: usize,
    /// Syncs that passed the gate and returned.
    returned: usize,
}

/// Segment files whose syncs wait at a gate the test opens, whole or for
/// one sync at a time.
#[derive(Debug, Default)]
struct SyncGate {
    state: std::sync::Mutex<GateState>,
    changed: std::sync::Condvar,
}

impl SyncGate {
    fn held() -> Arc<SyncGate> {
        Arc::new(SyncGate::default())
    }

    /// Runs `sync` once the gate lets this sync through.
    fn pass(&self, sync: &dyn Fn() -> std::io::Result<()>) -> std::io::Result<()> {
        let mut state = self.state.lock().unwrap();
        let n = state.arrived;
        state.arrived += 1;
        state.waiting += 1;
        self.changed.notify_all();
        while !state.open && !state.let_through.contains(&n) {
            state = self.changed.wait(state).unwrap();
        }
        state.waiting -= 1;
        drop(state);
        let result = sync();
        self.state.lock().unwrap().returned += 1;
        self.changed.notify_all();
        result
    }

    /// Waits (at most 20 s) until `done` holds of the gate's state.
    fn wait_for(&self, what: &str, done: impl Fn(&GateState) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut state = self.state.lock().unwrap();
        while !done(&state) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting until {what}: {state:?}");
            state = self.changed.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Waits (at most 20 s) until a sync waits at the gate.
    fn wait_for_a_sync(&self) {
        self.wait_for("a sync reached the gate", |s| s.waiting > 0);
    }

    /// Lets the `n`-th sync to arrive (from 0) through.
    fn let_through(&self, n: usize) {
        self.state.lock().unwrap().let_through.push(n);
        self.changed.notify_all();
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.changed.notify_all();
    }
}

/// The rig's segment files, each of whose syncs passes `gate` first.
fn gated(rig: &WriterRig, gate: Arc<SyncGate>) -> SyncWrappedSegments<'_> {
    SyncWrappedSegments::new(&rig.files, Arc::new(move |sync| gate.pass(sync)))
}

/// Waits (at most 20 s) until `done` holds.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::yield_now();
    }
}

/// A leader's sync held in flight; a second flusher with more data
/// arrives. With overlapped syncs it leads a round of its own and writes
/// its data while that sync is in flight, and nothing is reported durable
/// until a sync returns; without, it parks and writes nothing. More is
/// then asked for while the sync is still held: either way the second
/// round's one sync covers it (with overlapped syncs, by a second write
/// after the first sync returned), so two syncs make everything durable.
fn a_second_flusher_during_a_sync(overlap: bool) {
    let rig = WriterRig::with_syncs(8, 0, SyncMethod::Fdatasync, false, overlap, false).unwrap();
    let gate = SyncGate::held();
    let segments = gated(&rig, gate.clone());
    let (writer, start) = (&rig.writer, rig.start);
    let first = Lsn(start.0 + PAGE_SIZE);
    let second = Lsn(start.0 + 3 * PAGE_SIZE);
    let third = Lsn(start.0 + 5 * PAGE_SIZE);
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
        writer.request_flush(third);
        gate.open();
        assert!(a.join().unwrap().unwrap() >= first);
        assert!(b.join().unwrap().unwrap() >= second);
    });
    assert_eq!(writer.flushed(), third);
    let stats = writer.stats();
    assert_eq!(stats.syncs, 2, "{stats:?}");
    assert_eq!(stats.writes, if overlap { 3 } else { 2 }, "{stats:?}");
}

#[test]
fn with_overlapped_syncs_the_next_flusher_writes_while_a_sync_is_in_flight() {
    a_second_flusher_during_a_sync(true);
}

#[test]
fn without_overlapped_syncs_the_next_flusher_waits_for_the_whole_round() {
    a_second_flusher_during_a_sync(false);
}

/// With concurrent syncs, a leader's sync held in flight; a second flusher
/// with more data writes and syncs beside it (through a second file
/// description of the segment). The second sync returns first, and nothing
/// is published until the first returns too: then both are, unless
/// `first_fails`, when nothing is and both flushers fail.
fn a_second_sync_beside_the_first(first_fails: bool) {
    let rig = WriterRig::with_syncs(8, 0, SyncMethod::Fdatasync, false, true, true).unwrap();
    let gate = SyncGate::held();
    let segments = gated(&rig, gate.clone());
    let (writer, start) = (&rig.writer, rig.start);
    let first = Lsn(start.0 + PAGE_SIZE);
    let second = Lsn(start.0 + 3 * PAGE_SIZE);
    let flush = |to: Lsn| {
        writer.request_flush(to);
        writer.write(&rig.ring, &segments, to, Caller::Flush, || to)
    };
    std::thread::scope(|s| {
        let a = s.spawn(|| flush(first));
        gate.wait_for("the first sync is held", |g| g.waiting == 1);
        let b = s.spawn(|| flush(second));
        gate.wait_for("both syncs are held", |g| g.waiting == 2);
        assert_eq!(writer.written(), second, "the second flusher wrote");
        assert_eq!(segments.opens(), 2, "one description per sync slot");
        if first_fails {
            // The second sync reaches the disk first: the next one fails.
            rig.sim.fail_sync(2, false);
        }
        gate.let_through(1);
        gate.wait_for("the second sync returned", |g| g.returned == 1);
        assert_eq!(
            writer.flushed(),
            start,
            "published before the first sync returned"
        );
        assert!(
            !b.is_finished(),
            "the second flusher returned before the first sync"
        );
        gate.let_through(0);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        if first_fails {
            assert!(matches!(a, Err(WriteError::Sync { .. })), "{a:?}");
            assert!(matches!(b, Err(WriteError::Poisoned)), "{b:?}");
            assert_eq!(
                writer.flushed(),
                start,
                "nothing published past a failed sync"
            );
        } else {
            assert!(a.unwrap() >= first);
            assert!(b.unwrap() >= second);
            assert_eq!(writer.flushed(), second);
        }
    });
    let stats = writer.stats();
    assert_eq!(stats.syncs, if first_fails { 1 } else { 2 }, "{stats:?}");
    assert_eq!(stats.concurrent_syncs, u64::from(!first_fails), "{stats:?}");
}

#[test]
fn with_concurrent_syncs_a_later_sync_is_published_only_after_the_earlier_one() {
    a_second_sync_beside_the_first(false);
}

#[test]
fn with_concurrent_syncs_an_earlier_failed_sync_keeps_a_later_success_unpublished() {
    a_second_sync_beside_the_first(true);
}
