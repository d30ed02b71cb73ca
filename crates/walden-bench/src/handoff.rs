//! The background writer's share of the bytes written under eviction
//! pressure, with and without the write lock's hand-off (seed 002: "the
//! walwriter never succeeds taking the lwlock").
//!
//! T threads insert logical messages (1 MiB by default, as in
//! `logical-1mb`) into a small ring (by default smaller than one such
//! record), so that inserts evict pages; the background
//! writer runs every millisecond. Writes are durable (`open_datasync`) and
//! each costs a fixed time ([`DelayStorage`] over a storage that drops
//! every byte), so the write lock is held for that time and the lock's
//! hand-off decides who gets it next: an eviction coming back for it, or
//! the background writer that has waited. A case reports who wrote the
//! bytes ([`walden::WriterStats`]: `bytes_by_background_writer`,
//! `bytes_by_evictions`, `bytes_by_flushes`) and how many acquisitions
//! passed the background writer while it waited.

pub mod suite;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use walden::{Config, SyncMethod, Wal};

use crate::delay::DelayStorage;
use crate::discard::DiscardStorage;
use crate::logical::message;
use crate::measure::{run_threads, Timing};

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HandoffCase {
    /// Inserting threads.
    pub threads: usize,
    /// Payload of each message, bytes.
    pub payload: usize,
    /// [`Config::write_lock_handoff`].
    pub handoff: bool,
}

impl HandoffCase {
    /// The configuration of this case's log over `base`: the case's
    /// hand-off, `open_datasync`, and the background writer every
    /// millisecond.
    pub fn config(&self, base: &Config) -> Config {
        Config {
            write_lock_handoff: self.handoff,
            sync_method: SyncMethod::OpenDatasync,
            writer_delay: Some(Duration::from_millis(1)),
            ..base.clone()
        }
    }
}

/// What one case measured.
#[derive(Clone, Debug, Serialize)]
pub struct HandoffResult {
    /// The case.
    pub case: HandoffCase,
    /// Messages inserted.
    pub records: u64,
    /// Seconds they took.
    pub seconds: f64,
    /// Record payload per second, MB (10⁶ bytes).
    pub mb_per_sec: f64,
    /// Bytes written, everyone together.
    pub bytes_written: u64,
    /// Of those, by the background writer.
    pub by_background_writer: u64,
    /// Of those, by evictions.
    pub by_evictions: u64,
    /// Of those, by flush calls (none unless something flushes: the
    /// inserters do not).
    pub by_flushes: u64,
    /// Times the background writer took the write lock.
    pub background_lock_acquisitions: u64,
    /// Acquisitions by others while it waited, all its waits together.
    pub overtaken: u64,
    /// The most during one wait.
    pub most_overtaken: u64,
}

impl HandoffResult {
    /// The background writer's share of the bytes written, 0 to 1.
    pub fn background_share(&self) -> f64 {
        if self.bytes_written == 0 {
            0.0
        } else {
            self.by_background_writer as f64 / self.bytes_written as f64
        }
    }
}

/// Runs `case` for `duration` on a fresh log configured as
/// [`HandoffCase::config`] over `base`, each durable write taking `delay`.
pub fn run_case(
    case: HandoffCase,
    base: &Config,
    delay: Duration,
    duration: Duration,
) -> Result<HandoffResult, walden::Error> {
    let storage = DelayStorage::new(Arc::new(DiscardStorage::new()), delay);
    let wal = Wal::create_with_storage(
        Path::new("/walden-bench/handoff"),
        case.config(base),
        Arc::new(storage),
    )?;
    let before = wal.stats().writer;
    let inserts = run_threads(case.threads, duration, Timing::CountOnly, |t| {
        let rec = message(t, case.payload);
        let wal = &wal;
        Ok(move || wal.insert(&rec).map(drop))
    })?;
    let after = wal.stats().writer;
    wal.close()?;
    let seconds = inserts.seconds;
    Ok(HandoffResult {
        case,
        records: inserts.ops,
        seconds,
        mb_per_sec: (inserts.ops * case.payload as u64) as f64
            / seconds.max(f64::MIN_POSITIVE)
            / 1e6,
        bytes_written: after.bytes_written - before.bytes_written,
        by_background_writer: after.bytes_by_background_writer - before.bytes_by_background_writer,
        by_evictions: after.bytes_by_evictions - before.bytes_by_evictions,
        by_flushes: after.bytes_by_flushes - before.bytes_by_flushes,
        background_lock_acquisitions: after.background_lock_acquisitions
            - before.background_lock_acquisitions,
        overtaken: after.background_lock_overtaken - before.background_lock_overtaken,
        most_overtaken: after.background_lock_most_overtaken,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short case with the hand-off on: the counters add up, the
    /// background writer took the lock and nobody passed it.
    #[test]
    fn a_case_counts_who_wrote_and_the_hand_off_lets_nobody_pass() {
        let base = Config {
            buffers: 256 << 10,
            ..Config::default()
        };
        let case = HandoffCase {
            threads: 2,
            payload: 1 << 20,
            handoff: true,
        };
        let r = run_case(
            case,
            &base,
            Duration::from_micros(50),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(r.records > 0, "{r:?}");
        assert_eq!(
            r.by_background_writer + r.by_evictions + r.by_flushes,
            r.bytes_written,
            "{r:?}"
        );
        assert!(
            r.by_evictions > 0,
            "a ring smaller than a record evicts: {r:?}"
        );
        assert!(r.background_lock_acquisitions > 0, "{r:?}");
        assert_eq!((r.overtaken, r.most_overtaken), (0, 0), "{r:?}");
    }
}
