//! Write-back started as a write goes ([`Config::writeback_every`]): a
//! large write is cut, each cut but the last followed by a write-back hint,
//! only where a sync follows the writes through the page cache; the hints
//! make nothing durable. docs/io.md ("Write-back started as a write
//! goes").

use std::sync::Arc;

use super::stream_tests::{lost_unless_flushed, record, DIR};
use crate::config::Config;
use crate::segment::{SimStorage, Storage};
use crate::wal::Wal;
use crate::write::SyncMethod;

/// The record's main data ([`record`]): many cuts long.
const RECORD: u64 = 1 << 20;
const EVERY: u64 = 64 << 10;

/// A log on `sim` cutting its writes every `every` bytes, writing large
/// records through (with the CRC helper or not) or copying them into the
/// ring.
fn log(sim: &SimStorage, config: Config) -> Wal {
    let config = Config {
        buffers: 4 << 20,
        segment_size: 16 << 20,
        writer_delay: None,
        ..config
    };
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    Wal::create_with_storage(DIR, config, storage).expect("create")
}

/// A durable 1 MiB record: with `fsync`/`fdatasync` through the page
/// cache, its write is cut and hinted (at least one hint a cut, but for
/// the last of each write); with direct I/O, `O_DSYNC` or no sync, or with
/// `writeback_every` 0, no hint. Either way one flush makes it durable.
#[test]
fn a_large_write_is_hinted_every_cut_only_where_a_sync_follows_through_the_cache() {
    let methods = [
        SyncMethod::Fdatasync,
        SyncMethod::Fsync,
        SyncMethod::OpenDatasync,
        SyncMethod::None,
    ];
    for method in methods {
        for direct_io in [false, true] {
            for (write_through_from, crc_helper) in
                [(0, false), (256 << 10, false), (256 << 10, true)]
            {
                for every in [EVERY, 0] {
                    let case = format!(
                        "{method} direct {direct_io} through {write_through_from} helper \
                         {crc_helper} every {every}"
                    );
                    let config = Config {
                        sync_method: method,
                        direct_io,
                        write_through_from,
                        crc_helper,
                        writeback_every: every,
                        ..Config::default()
                    };
                    if config.validate().is_err() {
                        continue;
                    }
                    let sim = SimStorage::new(5);
                    let wal = log(&sim, config);
                    let end = wal.insert_and_flush(&record()).expect("insert and flush");
                    if method.durable() {
                        assert!(wal.flushed() >= end, "{case}: durable");
                    }
                    let hints = sim.stats().writeback_hints;
                    if method.syncs() && !direct_io && every > 0 {
                        // Each write of n bytes has ⌈n / every⌉ - 1 cuts; the
                        // record goes out in at most three writes.
                        assert!(hints >= RECORD / every - 3, "{case}: {hints} hints");
                        assert!(hints <= RECORD / every + 1, "{case}: {hints} hints");
                    } else {
                        assert_eq!(hints, 0, "{case}");
                    }
                    wal.close().expect("close");
                }
            }
        }
    }
}

/// A record written in hinted cuts but not flushed is lost at a power cut
/// (the simulated disk keeps each unsynced sector or not); flushed, it
/// survives. The hints count for nothing.
#[test]
fn a_hinted_write_is_durable_only_after_a_sync() {
    lost_unless_flushed(13, |sim| {
        let config = Config {
            writeback_every: EVERY,
            // The insert writes the record's pages itself, cut and hinted.
            write_through_from: 256 << 10,
            ..Config::default()
        };
        log(sim, config)
    });
}
