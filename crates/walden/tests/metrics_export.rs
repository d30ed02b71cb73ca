//! The `metrics` feature: a log's writes, syncs, flush groups and inserts
//! reach the installed recorder, labelled with the log, and agree with its
//! `Stats`.
//!
//! A test binary of its own: the recorder is global, so every log of the
//! process reports to it, and the logs of other tests running beside this
//! one would add their records to the counts (a CI run saw 1,602 records
//! for this test's 20).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use walden::{Config, Record, SyncMethod, Wal, METRICS_LOG_LABEL};

/// What the recorder saw, by metric name and log label. A snapshot drains
/// what was recorded since the one before, so counts and histogram samples
/// are summed over every snapshot; a counter set with `absolute` keeps its
/// highest value. A series without a log label is kept under "".
#[derive(Default)]
struct Seen {
    counts: HashMap<(String, String), u64>,
    highest: HashMap<(String, String), u64>,
    gauges: Vec<(String, String)>,
}

impl Seen {
    fn take(&mut self, snapshotter: &Snapshotter) {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let log = key
                .key()
                .labels()
                .find(|l| l.key() == METRICS_LOG_LABEL)
                .map_or_else(String::new, |l| l.value().to_owned());
            let series = (key.key().name().to_owned(), log);
            match value {
                DebugValue::Counter(n) => {
                    *self.counts.entry(series.clone()).or_default() += n;
                    let top = self.highest.entry(series).or_default();
                    *top = (*top).max(n);
                }
                DebugValue::Histogram(v) => {
                    *self.counts.entry(series).or_default() += v.len() as u64;
                }
                DebugValue::Gauge(_) => self.gauges.push(series),
            }
        }
    }

    fn count(&self, name: &str, log: &str) -> u64 {
        self.counts
            .get(&(name.to_owned(), log.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    fn highest(&self, name: &str, log: &str) -> u64 {
        self.highest
            .get(&(name.to_owned(), log.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// A log of 1 MiB segments and buffers with a busy background writer.
fn config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        writer_delay: Some(Duration::from_millis(5)),
        ..Config::default()
    }
}

/// Two logs in one process, each writing its own number of records, report
/// into series of their own, told apart by the `log` label (the WAL
/// directory by default, `Config::metrics_label` if set); each log's series
/// agree with its `Stats`, and no series goes without the label.
#[test]
fn two_logs_report_separate_series_that_agree_with_their_stats() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // Global: the background writers' threads record too. The only test
    // of this binary.
    recorder.install().unwrap();

    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    // The first by its directory (the default), the second by its name.
    let named = Config {
        metrics_label: Some("orders".to_owned()),
        ..config()
    };
    let logs: Vec<(Wal, String, u64)> = vec![
        (
            Wal::create(dirs[0].path(), config()).unwrap(),
            dirs[0].path().display().to_string(),
            20,
        ),
        (
            Wal::create(dirs[1].path(), named).unwrap(),
            "orders".to_owned(),
            7,
        ),
    ];
    for (wal, _, records) in &logs {
        for i in 0..*records {
            let end = wal
                .insert(&Record::new(128, 0, vec![i as u8; 1000]))
                .unwrap();
            wal.flush(end).unwrap();
        }
    }
    // The insert counts are published by the background writers' rounds.
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    while logs
        .iter()
        .any(|(_, label, n)| seen.highest("walden_records_total", label) < *n)
    {
        assert!(Instant::now() < deadline, "records not published");
        std::thread::yield_now();
        seen.take(&snapshotter);
    }
    let mut stats = Vec::new();
    for (wal, label, records) in logs {
        stats.push((wal.stats(), label, records));
        // Closed: the writer has stopped, nothing more is recorded.
        wal.close().unwrap();
    }
    seen.take(&snapshotter);

    let unlabelled: Vec<_> = seen
        .counts
        .keys()
        .chain(seen.gauges.iter())
        .filter(|(_, log)| log.is_empty())
        .collect();
    assert!(
        unlabelled.is_empty(),
        "series without a log: {unlabelled:?}"
    );
    for (stats, log, n) in &stats {
        let count = |name| seen.count(name, log);
        // Counted by the writer as it works: at least what `stats` saw then.
        assert!(count("walden_syncs_total") >= stats.writer.syncs.max(1));
        assert!(count("walden_writes_total") >= stats.writer.writes.max(1));
        assert!(count("walden_written_bytes_total") >= n * 1000);
        // One histogram sample per counted event.
        assert_eq!(count("walden_sync_seconds"), count("walden_syncs_total"));
        assert_eq!(count("walden_write_bytes"), count("walden_writes_total"));
        assert_eq!(
            count("walden_flush_group_size"),
            count("walden_flush_groups_total")
        );
        // A round may still publish between close's shutdown checkpoint
        // record and the writer's stop: one record more than `stats` saw.
        // (One series for both logs would hold the other's count at times.)
        let records = seen.highest("walden_records_total", log);
        assert!(
            records >= *n && records <= stats.records + 1,
            "{log}: {records}"
        );
        for gauge in ["walden_flushed_lsn", "walden_insert_lsn"] {
            assert!(
                seen.gauges.contains(&(gauge.to_owned(), log.clone())),
                "{log}: {gauge}"
            );
        }
    }
}
