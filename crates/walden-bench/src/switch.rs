//! One WAL switch right after a checkpoint, under `open_datasync` (seed 002,
//! experiment E5 of algorithms.md).
//!
//! The switch record swallows the rest of its segment: every page up to the
//! segment's end goes through the buffer ring, zero-filled. With a ring
//! smaller than the segment the switching thread must evict pages it filled
//! itself. [`Eviction::OnePage`] (PostgreSQL master) writes them one
//! durable 8 kB write at a time; [`Eviction::Batch`] writes every finished
//! page in one run. A case times `switch_segment` plus the flush of its end,
//! as `pg_switch_wal()` flushes the switch before returning.
//!
//! The background writer is off, as it effectively was in the seed (it
//! never got the WAL write lock), so the eviction policy alone is measured.

pub mod suite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use walden::internals::PAGE_SIZE;
use walden::{Config, Eviction, FsStorage, SegmentSize, Storage, SwitchEviction, SyncMethod, Wal};

use crate::delay::DelayStorage;
use crate::measure::grid;
use crate::serde_display;

/// How long to wait for the next segment to be preallocated before timing.
const PREALLOCATION_TIMEOUT: Duration = Duration::from_secs(300);

/// Where the segments go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StorageKind {
    /// This machine's disk, files opened with `O_DSYNC`.
    Disk,
    /// A fixed delay per durable write ([`DelayStorage`]), in microseconds.
    Delay {
        /// Microseconds per durable write.
        micros: u64,
    },
}

impl fmt::Display for StorageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageKind::Disk => f.write_str("disk"),
            StorageKind::Delay { micros } if micros % 1000 == 0 => {
                write!(f, "{} ms/write", micros / 1000)
            }
            StorageKind::Delay { micros } => write!(f, "{micros} µs/write"),
        }
    }
}

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SwitchCase {
    /// Segment size, bytes.
    pub segment_size: u64,
    /// Buffer ring, bytes.
    pub buffers: u64,
    /// Eviction policy.
    #[serde(serialize_with = "serde_display")]
    pub eviction: Eviction,
    /// How far the switch's own evictions write ([`Eviction::Batch`] only;
    /// seed 002.6).
    #[serde(serialize_with = "serde_display")]
    pub switch_eviction: SwitchEviction,
    /// Where the segments go.
    pub storage: StorageKind,
}

impl SwitchCase {
    /// The configuration of this case's log over `base`: the case's
    /// segment size, ring and eviction policy, `open_datasync` (the seed's
    /// setting) and no background writer, so that the switching thread
    /// alone writes.
    pub fn config(&self, base: &Config) -> Config {
        Config {
            segment_size: self.segment_size,
            buffers: self.buffers,
            eviction: self.eviction,
            switch_eviction: self.switch_eviction,
            sync_method: SyncMethod::OpenDatasync,
            writer_delay: None,
            ..base.clone()
        }
    }
}

/// What one switch cost.
#[derive(Clone, Debug, Serialize)]
pub struct SwitchResult {
    /// The case.
    pub case: SwitchCase,
    /// Time of the switch and the flush of its end, seconds.
    pub seconds: f64,
    /// Bytes the switch swallowed (up to the segment's end).
    pub bytes: u64,
    /// `write` calls it took.
    pub writes: u64,
    /// Largest of them, bytes.
    pub largest_write: u64,
    /// Times the switching thread found a ring page unwritten.
    pub evictions: u64,
}

/// Why a case could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// The log failed.
    #[error(transparent)]
    Wal(#[from] walden::Error),
    /// Preparing or removing the case's directory failed.
    #[error("{action} {}: {source}", path.display())]
    Dir {
        /// What was being done.
        action: &'static str,
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The next segment was not preallocated in time.
    #[error("segment {} was not preallocated within {PREALLOCATION_TIMEOUT:?}", .0.display())]
    Preallocation(PathBuf),
    /// The log was on a segment boundary: nothing to switch.
    #[error("the log ended on a segment boundary right after the checkpoint")]
    NoSwitch,
}

/// Runs one case in a fresh log under `dir` (created, then removed),
/// configured as [`SwitchCase::config`] over `base`.
pub fn run_case(dir: &Path, case: SwitchCase, base: &Config) -> Result<SwitchResult, SwitchError> {
    let dir_err = |action, source| SwitchError::Dir {
        action,
        path: dir.to_path_buf(),
        source,
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| dir_err("removing", e))?;
    }
    let storage: Arc<dyn Storage> = match case.storage {
        StorageKind::Disk => Arc::new(FsStorage),
        StorageKind::Delay { micros } => Arc::new(DelayStorage::new(
            Arc::new(FsStorage),
            Duration::from_micros(micros),
        )),
    };
    let config = case.config(base);
    let seg = SegmentSize::new(case.segment_size)
        .map_err(|e| walden::Error::from(walden::ConfigError::SegmentSize(e.0)))?;
    let wal = Wal::create_with_storage(dir, config, storage)?;
    // Segment 1 holds the log; wait for the preallocator to finish segment
    // 2, so that its zero-filling does not compete with the switch.
    let next = dir.join(seg.file_name(1, 2));
    let waiting = Instant::now();
    while !next.exists() {
        if waiting.elapsed() > PREALLOCATION_TIMEOUT {
            return Err(SwitchError::Preallocation(next));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    wal.checkpoint()?;
    let before = wal.stats();
    let started = Instant::now();
    let span = wal.switch_segment()?.ok_or(SwitchError::NoSwitch)?;
    wal.flush(span.end)?;
    let seconds = started.elapsed().as_secs_f64();
    let after = wal.stats();
    wal.close()?;
    std::fs::remove_dir_all(dir).map_err(|e| dir_err("removing", e))?;
    Ok(SwitchResult {
        case,
        seconds,
        bytes: span.end.0 - span.start.0,
        writes: after.writer.writes - before.writer.writes,
        largest_write: after.writer.largest_write,
        evictions: after.buffer_full_evictions - before.buffer_full_evictions,
    })
}

/// The cases of one run: for each segment size, storage and ring size,
/// every eviction policy in turn, [`Eviction::Batch`] with each of
/// `switch_evictions` (which does not change [`Eviction::OnePage`]: that
/// runs once, with the first).
pub fn cases(
    segment_sizes: &[u64],
    storages: &[StorageKind],
    buffers: &[u64],
    evictions: &[Eviction],
    switch_evictions: &[SwitchEviction],
) -> Vec<SwitchCase> {
    let policies = grid(evictions, switch_evictions);
    grid(&grid(&grid(segment_sizes, storages), buffers), &policies)
        .into_iter()
        .filter(|(_, (eviction, switch_eviction))| {
            *eviction == Eviction::Batch || Some(switch_eviction) == switch_evictions.first()
        })
        .map(
            |(((segment_size, storage), buffers), (eviction, switch_eviction))| SwitchCase {
                segment_size,
                buffers,
                eviction,
                switch_eviction,
                storage,
            },
        )
        .collect()
}

/// Ring size in pages.
pub fn pages(buffers: u64) -> u64 {
    buffers / PAGE_SIZE
}

#[cfg(test)]
mod tests {
    use super::*;
    use walden::PageInitKind;

    /// The switch's eviction choice matters only under `batch`: one-page
    /// runs once.
    #[test]
    fn one_page_runs_once_and_batch_with_each_switch_eviction() {
        let cases = cases(
            &[1 << 20],
            &[StorageKind::Disk],
            &[1 << 20],
            &Eviction::ALL,
            &SwitchEviction::ALL,
        );
        let policies: Vec<_> = cases
            .iter()
            .map(|c| (c.eviction, c.switch_eviction))
            .collect();
        assert_eq!(
            policies,
            [
                (Eviction::OnePage, SwitchEviction::Whole),
                (Eviction::Batch, SwitchEviction::Whole),
                (Eviction::Batch, SwitchEviction::Chunked),
            ]
        );
    }

    /// A case on a 1 MiB segment with a fast fake disk: both policies
    /// swallow the same bytes, the counters are the switch's own, and the
    /// case's directory is gone afterwards. (How many writes each policy
    /// takes is tested in the engine, tests/eviction.rs.)
    #[test]
    fn a_case_measures_one_switch_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let case = |eviction| SwitchCase {
            segment_size: 1 << 20,
            buffers: 16 * PAGE_SIZE,
            eviction,
            switch_eviction: SwitchEviction::Whole,
            storage: StorageKind::Delay { micros: 1 },
        };
        let base = Config {
            page_init: PageInitKind::Cooperative,
            ..Config::default()
        };
        let one = run_case(&dir.path().join("one"), case(Eviction::OnePage), &base).unwrap();
        let batch = run_case(&dir.path().join("batch"), case(Eviction::Batch), &base).unwrap();
        assert_eq!(one.bytes, batch.bytes);
        assert!(one.bytes > 100 * PAGE_SIZE, "{one:?}");
        assert!(one.seconds > 0.0 && batch.seconds > 0.0);
        assert!(
            one.writes > batch.writes && batch.writes > 0,
            "{one:?} {batch:?}"
        );
        assert!(one.evictions > batch.evictions, "{one:?} {batch:?}");
        assert!(!dir.path().join("one").exists() && !dir.path().join("batch").exists());
    }
}
