//! The whole insert path per reservation design, non-durable: T threads
//! insert records of one size into a fresh log (sync `None`), one at a
//! time or in batches of B ([`walden::Wal::insert_batch_end`]: one
//! reservation and one copy pass per batch; the spans are not wanted, so
//! the call that collects none), in time slices interleaved with the other
//! designs' so that a change in the shared machine's load falls on all
//! alike.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use walden::{Batch, Config, Record, ReservationKind, SyncMethod};

use crate::design::Design;
use crate::fresh_wal::{run_cases, thread_slice, FreshWalError, LogSetup, WalFigures, WalSlice};
use crate::measure::{grid, SliceSettings, Timing};

/// The resource manager of the records inserted.
const RMID: u8 = 160;
/// Bytes of a `Postgres15` record around a payload of at most 255 bytes:
/// the 24-byte header and the 2-byte short main-data header.
const SHORT_RECORD_OVERHEAD: usize = 26;
/// The same around a longer payload: a 5-byte long main-data header.
const LONG_RECORD_OVERHEAD: usize = 29;

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsertCase {
    /// Design and format.
    #[serde(flatten)]
    pub design: Design,
    /// Threads inserting.
    pub threads: usize,
    /// Encoded size of each record in the `Postgres15` format (`SelfLsn`'s
    /// are the same, `CompactWalId`'s 8 bytes smaller).
    pub record_bytes: usize,
    /// Records per insert call: 1 inserts each alone (`Wal::insert`), more
    /// insert them as one batch (`Wal::insert_batch_end`).
    #[serde(default = "one_record")]
    pub batch: usize,
}

/// The batch size of results written before batches were measured.
fn one_record() -> usize {
    1
}

impl InsertCase {
    /// The configuration of this case's logs over `base`: the case's
    /// format and reservation, sync `None` (non-durable); the unreadable
    /// log of `DumbCeiling` allowed for that design alone.
    pub fn config(&self, base: &Config) -> Config {
        Config {
            format: self.design.format,
            reservation: self.design.reservation,
            bench_unreadable_ceiling: self.design.reservation == ReservationKind::DumbCeiling,
            sync_method: SyncMethod::None,
            ..base.clone()
        }
    }
}

/// What one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InsertResult {
    /// The case.
    #[serde(flatten)]
    pub case: InsertCase,
    /// Storage and segment state.
    #[serde(flatten)]
    pub setup: LogSetup,
    /// Records inserted, per second, WAL bytes per second.
    #[serde(flatten)]
    pub figures: WalFigures,
    /// Wall time per record, all threads together, ns.
    pub ns_per_record: f64,
}

/// Every combination, grouped by record size, then batch size, then
/// thread count.
pub fn cases(
    designs: &[Design],
    threads: &[usize],
    record_bytes: &[usize],
    batches: &[usize],
) -> Vec<InsertCase> {
    grid(&grid(&grid(record_bytes, batches), threads), designs)
        .into_iter()
        .map(|(((record_bytes, batch), threads), design)| InsertCase {
            design,
            threads,
            record_bytes,
            batch,
        })
        .collect()
}

/// A record of `bytes` encoded bytes in `Postgres15`: 27 at least, and
/// 282–284 (between the largest short payload and the smallest long one)
/// become 285.
pub fn record(bytes: usize) -> Record<'static> {
    let payload = if bytes <= SHORT_RECORD_OVERHEAD + 255 {
        bytes.saturating_sub(SHORT_RECORD_OVERHEAD)
    } else {
        (bytes - LONG_RECORD_OVERHEAD).max(256)
    };
    Record::new(RMID, 0, vec![0x5A; payload.max(1)])
}

fn run_slice(
    case: InsertCase,
    setup: LogSetup,
    base: &Config,
    dir: &Path,
    duration: Duration,
) -> Result<WalSlice, FreshWalError> {
    let rec = record(case.record_bytes);
    // The batch borrows the one payload `batch` times.
    let batch: Batch = (0..case.batch)
        .map(|_| Record::new(rec.rmid, rec.info, &rec.data[..]))
        .collect();
    let config = case.config(base);
    thread_slice!(dir, setup, duration; config, case.threads, Timing::CountOnly; |wal, _| {
        let (rec, batch) = (&rec, &batch);
        Ok(move || {
            if batch.len() == 1 {
                wal.insert(rec).map(drop)
            } else {
                wal.insert_batch_end(batch).map(drop)
            }
        })
    })
}

/// Runs every case with every setup in interleaved slices, each on a log
/// configured as [`InsertCase::config`] over `base`; `after` is called
/// after each slice.
pub fn run(
    cases: &[InsertCase],
    setups: &[LogSetup],
    base: &Config,
    slices: &SliceSettings,
    after: impl FnMut(InsertCase, LogSetup),
) -> Result<Vec<InsertResult>, FreshWalError> {
    let measured = run_cases(
        cases,
        setups,
        slices,
        |case, setup, dir, slice| run_slice(case, setup, base, dir, slice),
        after,
    )?;
    Ok(measured
        .into_iter()
        .map(|m| InsertResult {
            case: m.case,
            setup: m.setup,
            ns_per_record: if m.figures.records_per_sec > 0.0 {
                1e9 / m.figures.records_per_sec
            } else {
                f64::INFINITY
            },
            figures: m.figures,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fresh_wal::{SegmentState, StorageKind};

    #[test]
    fn records_have_the_asked_size() {
        for bytes in [27, 66, 281, 285, 4096] {
            assert_eq!(record(bytes).encoded_len(), bytes);
        }
    }

    #[test]
    fn every_design_inserts_in_every_slice() {
        let dir = tempfile::tempdir().unwrap();
        let base = Config {
            buffers: 1 << 20,
            sync_method: SyncMethod::Fdatasync,
            ..Config::default()
        };
        let slices = SliceSettings {
            dir: dir.path().to_path_buf(),
            slice: Duration::from_millis(30),
            slices: 1,
        };
        let cases = cases(&Design::ALL, &[2], &[66], &[1, 16]);
        let setups = [
            LogSetup::default(),
            LogSetup {
                storage: StorageKind::Discard,
                segment_state: SegmentState::Fresh,
            },
        ];
        let results = run(&cases, &setups, &base, &slices, |_, _| {}).unwrap();
        assert_eq!(results.len(), cases.len() * 2);
        for r in results {
            assert!(r.figures.ops > 0, "{r:?}");
            // Sync None whatever the base says.
            assert_eq!(r.figures.syncs, 0, "{r:?}");
            assert!(r.ns_per_record.is_finite(), "{r:?}");
            // Records are counted, not batches.
            let per_op = r.figures.records_per_sec / r.figures.ops_per_sec;
            assert!(per_op >= 0.999 * r.case.batch as f64, "{r:?}");
        }
    }
}
