//! Streaming large records ([`Config::stream_after`]): the background
//! writer writes a record's finished pages while its inserter still copies
//! the rest, makes nothing durable without a sync (a write-back hint
//! counts for nothing), and the commit's own flush writes only the tail
//! and syncs once. docs/io.md ("Streaming large records").

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::lsn::{Lsn, PAGE_SIZE};
use crate::record::Record;
use crate::segment::{SimStorage, Storage};
use crate::wal::Wal;
use crate::write::SyncMethod;

pub(super) const DIR: &str = "/wal";
/// The record's main data: many streaming intervals long.
const RECORD: usize = 1 << 20;
const STREAM_AFTER: u64 = 64 << 10;

/// A log on `sim` whose background writer runs no round of its own during
/// the test (its delay is 10 s, and no insert reaches `writer_flush_after`),
/// so that only streaming can make it write.
fn log(sim: &SimStorage, sync_method: SyncMethod, direct_io: bool, stream_after: u64) -> Wal {
    let config = Config {
        sync_method,
        direct_io,
        stream_after,
        // Write-through would take these large records before streaming.
        write_through_from: 0,
        buffers: 4 << 20,
        writer_delay: Some(Duration::from_secs(10)),
        writer_flush_after: 1 << 40,
        ..Config::default()
    };
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let wal = Wal::create_with_storage(DIR, config, storage).expect("create");
    // Each stream request returns once the background writer ran its round.
    wal.shared.background.wait_for_streams();
    wal
}

pub(super) fn record() -> Record<'static> {
    Record::bytes((0..RECORD).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

#[test]
fn a_large_records_pages_are_written_while_it_is_copied_and_its_flush_writes_the_tail() {
    for (method, direct) in [
        (SyncMethod::Fdatasync, false),
        (SyncMethod::Fdatasync, true),
        (SyncMethod::OpenDatasync, false),
        (SyncMethod::Fsync, false),
    ] {
        let case = format!("{method} direct {direct}");
        let sim = SimStorage::new(7);
        let wal = log(&sim, method, direct, STREAM_AFTER);
        let writer = &wal.shared.insert.writer;
        let start = writer.written();
        let before = wal.stats().writer;
        let hints = sim.stats().writeback_hints;
        let end = wal.insert(&record()).expect("insert");

        // Before any flush: the pages up to the last streaming point are
        // written, by the background writer alone, and the tail is not.
        let written = writer.written();
        let stats = wal.stats().writer;
        assert!(
            written.0 + STREAM_AFTER + 2 * PAGE_SIZE >= end.0 && written < end,
            "{case}: written {written} for a record from {start} to {end}"
        );
        assert!(
            wal.shared.background.served() >= written.page_start(),
            "{case}"
        );
        assert_eq!(
            stats.bytes_by_background_writer - before.bytes_by_background_writer,
            stats.bytes_written - before.bytes_written,
            "{case}: only the background writer wrote"
        );
        assert!(
            stats.bytes_written - before.bytes_written >= written.0 - start.0,
            "{case}"
        );
        let streamed_hints = sim.stats().writeback_hints - hints;
        if method.syncs() {
            assert_eq!(
                wal.flushed(),
                start,
                "{case}: nothing is durable before a sync"
            );
            assert_eq!(stats.syncs, before.syncs, "{case}: streaming syncs nothing");
            if direct {
                assert_eq!(streamed_hints, 0, "{case}: direct writes bypass the cache");
            } else {
                assert!(streamed_hints > 0, "{case}: write-back started");
            }
        } else {
            assert_eq!(
                wal.flushed(),
                written,
                "{case}: an O_DSYNC write is durable when it returns"
            );
            assert_eq!(streamed_hints, 0, "{case}");
        }

        // The commit's flush writes the tail and syncs once.
        assert!(wal.flush(end).expect("flush") >= end, "{case}");
        let after = wal.stats().writer;
        let tail = after.bytes_by_flushes - stats.bytes_by_flushes;
        assert!(
            tail > 0 && tail <= end.0 - written.page_start().0 + PAGE_SIZE,
            "{case}: the flush wrote {tail} bytes"
        );
        if method.syncs() {
            assert_eq!(after.syncs - stats.syncs, 1, "{case}: one sync");
        }
        wal.close().expect("close");
    }
}

#[test]
fn without_streaming_nothing_is_written_before_the_flush() {
    let sim = SimStorage::new(7);
    let wal = log(&sim, SyncMethod::Fdatasync, false, 0);
    let start = wal.shared.insert.writer.written();
    let end = wal.insert(&record()).expect("insert");
    assert_eq!(wal.shared.insert.writer.written(), start);
    assert_eq!(wal.stats().writer.bytes_by_background_writer, 0);
    assert_eq!(wal.shared.background.served(), Lsn(0));
    assert_eq!(sim.stats().writeback_hints, 0);
    wal.flush(end).expect("flush");
    wal.close().expect("close");
}

/// A record streamed to the file with write-back hints but never synced is
/// lost at a power cut (the simulated disk keeps each unsynced sector or
/// not, so some of its sectors revert and its CRC fails); the same record
/// flushed survives. The hint counts for nothing.
#[test]
fn a_streamed_record_is_durable_only_after_a_sync() {
    lost_unless_flushed(11, |sim| {
        log(sim, SyncMethod::Fdatasync, false, STREAM_AFTER)
    });
}

/// For a log `open` creates on a simulated disk (seeded `seed`) whose
/// insert of a 1 MiB record writes some of it with write-back hints: that
/// record, not flushed, is lost at a power cut; flushed, it survives.
pub(super) fn lost_unless_flushed(seed: u64, open: impl Fn(&SimStorage) -> Wal) {
    for flush in [false, true] {
        let sim = SimStorage::new(seed);
        let wal = open(&sim);
        let start = wal.insert_position();
        let end = wal.insert(&record()).expect("insert");
        assert!(sim.stats().writeback_hints > 0, "written with hints");
        assert!(wal.flushed() <= start);
        if flush {
            wal.flush(end).expect("flush");
        }
        sim.power_cut();
        drop(wal);
        sim.restart();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let (wal, report) =
            Wal::open_with_storage(DIR, Config::default(), storage).expect("reopen");
        if flush {
            assert!(report.end >= end, "flushed: recovered to {}", report.end);
            assert_eq!(report.last_record, Some(start));
        } else {
            assert!(sim.stats().sectors_lost > 0);
            assert!(
                report.last_record.is_some_and(|last| last < start),
                "unsynced: the record at {start} was recovered: {report:?}"
            );
        }
        drop(wal);
    }
}
