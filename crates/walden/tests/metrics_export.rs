//! The `metrics` feature: a log's writes, syncs, flush groups and inserts
//! reach the installed recorder, and agree with its `Stats`.
//!
//! A test binary of its own: the recorder is global, so every log of the
//! process reports to it, and the logs of other tests running beside this
//! one would add their records to the counts (a CI run saw 1,602 records
//! for this test's 20).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use walden::{Config, Record, SyncMethod, Wal};

/// What the recorder saw. A snapshot drains what was recorded since the
/// one before, so counts and histogram samples are summed over every
/// snapshot; a counter set with `absolute` keeps its highest value.
#[derive(Default)]
struct Seen {
    counts: HashMap<String, u64>,
    highest: HashMap<String, u64>,
    gauges: Vec<String>,
}

impl Seen {
    fn take(&mut self, snapshotter: &Snapshotter) {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let name = key.key().name().to_owned();
            match value {
                DebugValue::Counter(n) => {
                    *self.counts.entry(name.clone()).or_default() += n;
                    let top = self.highest.entry(name).or_default();
                    *top = (*top).max(n);
                }
                DebugValue::Histogram(v) => {
                    *self.counts.entry(name).or_default() += v.len() as u64;
                }
                DebugValue::Gauge(_) => self.gauges.push(name),
            }
        }
    }

    fn count(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }
}

#[test]
fn writes_syncs_flush_groups_and_inserts_are_exported() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // Global: the background writer's thread records too. The only test
    // and the only log of this binary.
    recorder.install().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        writer_delay: Some(Duration::from_millis(5)),
        ..Config::default()
    };
    let wal = Wal::create(dir.path(), config).unwrap();
    for i in 0..20u8 {
        let end = wal.insert(&Record::new(128, 0, vec![i; 1000])).unwrap();
        wal.flush(end).unwrap();
    }
    // The insert counts are published by the background writer's rounds.
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        seen.take(&snapshotter);
        if seen.highest.get("walden_records_total") >= Some(&20) {
            break;
        }
        assert!(Instant::now() < deadline, "no records published");
        std::thread::yield_now();
    }
    let stats = wal.stats();
    // Closed: the writer has stopped, nothing more is recorded.
    wal.close().unwrap();
    seen.take(&snapshotter);

    // Counted by the writer as it works: at least what `stats` saw then.
    assert!(seen.count("walden_syncs_total") >= stats.writer.syncs.max(1));
    assert!(seen.count("walden_writes_total") >= stats.writer.writes.max(1));
    assert!(seen.count("walden_written_bytes_total") >= 20 * 1000);
    // One histogram sample per counted event.
    assert_eq!(
        seen.count("walden_sync_seconds"),
        seen.count("walden_syncs_total")
    );
    assert_eq!(
        seen.count("walden_write_bytes"),
        seen.count("walden_writes_total")
    );
    assert_eq!(
        seen.count("walden_flush_group_size"),
        seen.count("walden_flush_groups_total")
    );
    let records = seen.highest["walden_records_total"];
    // A round may still publish between close's shutdown checkpoint record
    // and the writer's stop: one record more than `stats` saw.
    assert!(records >= 20 && records <= stats.records + 1, "{records}");
    for gauge in ["walden_flushed_lsn", "walden_insert_lsn"] {
        assert!(seen.gauges.iter().any(|g| g == gauge), "{gauge}");
    }
}
