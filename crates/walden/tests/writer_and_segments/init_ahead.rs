//! The background writer initialises buffer pages ahead of the inserters
//! (`Config::writer_init_ahead`, `buffer::init_ahead`): with either page
//! initialisation design, inserters then copy into pages the writer
//! initialised, and the log they produce reads back record for record,
//! in the reader and in `pg_waldump`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use walden::{
    Config, ConfigError, Lsn, PageInitKind, Record, RecordSpan, SegmentSize, SyncMethod, Wal,
};

use crate::support::wal::{payload, pg_waldump_agrees};

const RMID: u8 = 131;
const THREADS: u32 = 4;
/// How long the test waits for the writer's first pages before failing.
const PATIENCE: Duration = Duration::from_secs(60);

fn config(page_init: PageInitKind) -> Config {
    Config {
        segment_size: 1 << 20,
        // 32 pages: the inserters wrap the ring many times.
        buffers: 256 << 10,
        page_init,
        sync_method: SyncMethod::None,
        writer_delay: Some(Duration::from_millis(1)),
        writer_init_ahead: 24,
        ..Config::default()
    }
}

/// `THREADS` threads insert `per_thread` records each, of 8 bytes to
/// about two pages; returns every record's span and payload.
fn insert(wal: &Arc<Wal>, round: u32, per_thread: u32) -> Vec<(RecordSpan, Vec<u8>)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let wal = wal.clone();
                s.spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            let len = 8 + (i as usize * 997 + t as usize * 131) % 17_000;
                            let data = payload(round * THREADS + t, i, len);
                            let span = wal.insert_span(&Record::new(RMID, 0, data.clone()));
                            (span.unwrap(), data)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

fn pages_come_ahead_and_the_log_reads_back(page_init: PageInitKind) {
    let dir = tempfile::tempdir().unwrap();
    let config = config(page_init);
    let seg = SegmentSize::new(config.segment_size).unwrap();
    let wal = Arc::new(Wal::create(dir.path(), config).unwrap());
    let start = wal.insert_position();
    let mut expected = insert(&wal, 0, 200);
    // The writer's rounds go on without inserts: it initialises the pages
    // after the insert position, whose slots it has just written out.
    let started = Instant::now();
    while wal.stats().pages_initialised_ahead == 0 {
        assert!(
            started.elapsed() < PATIENCE,
            "no page initialised ahead after {PATIENCE:?}"
        );
        std::thread::yield_now();
    }
    let ahead = wal.stats().pages_initialised_ahead;
    // These inserts land on the pages initialised ahead, and run on while
    // the writer initialises more.
    expected.extend(insert(&wal, 1, 200));
    let end = expected.iter().map(|(span, _)| span.end).max().unwrap();
    wal.flush(end).unwrap();
    assert!(wal.stats().pages_initialised_ahead >= ahead);
    Arc::into_inner(wal).unwrap().close().unwrap();

    let (records, _) = pg_waldump_agrees(dir.path(), seg, start);
    let read: Vec<(Lsn, Vec<u8>)> = records
        .iter()
        .filter(|r| r.header.rmid == RMID)
        .map(|r| (r.lsn, r.decode_body().unwrap().main_data))
        .collect();
    let mut expected: Vec<(Lsn, Vec<u8>)> = expected
        .into_iter()
        .map(|(span, data)| (span.start, data))
        .collect();
    expected.sort();
    assert_eq!(read.len(), expected.len(), "records read back");
    assert!(read == expected, "a record differs from what was inserted");
}

#[test]
fn pages_initialised_ahead_under_the_mapping_lock_hold_the_log() {
    pages_come_ahead_and_the_log_reads_back(PageInitKind::MappingLock);
}

#[test]
fn pages_initialised_ahead_by_claim_hold_the_log() {
    pages_come_ahead_and_the_log_reads_back(PageInitKind::Cooperative);
}

#[test]
fn initialising_ahead_needs_the_background_writer() {
    let bad = Config {
        writer_delay: None,
        writer_init_ahead: 4,
        ..Config::default()
    };
    assert_eq!(
        bad.validate().unwrap_err(),
        ConfigError::InitAheadWithoutWriter(4)
    );
}
