//! Overlapped syncs (`Config::overlap_syncs`), on the simulated storage
//! with a sync held in flight: the next flusher writes meanwhile (or,
//! without them, parks), and nothing is reported durable before a sync
//! returns.

use std::time::Duration;

use super::rig::WriterRig;
use super::*;
use crate::lsn::PAGE_SIZE;

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
        let deadline = Instant::now() + Duration::from_secs(20);
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
    let rig = WriterRig::with_overlap(8, 0, SyncMethod::Fdatasync, false, overlap).unwrap();
    let gate = SyncGate::held();
    let segments = GatedSegments(&rig, gate.clone());
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
