//! T threads each inserting 1 MiB logical messages (seed 000, Andres
//! Freund's benchmark; experiment E4 of algorithms.md).
//!
//! `pg_logical_emit_message(true, 'test', repeat('0', 1024*1024))` from T
//! clients, `fsync` off and a large `wal_buffers`: almost all the work is
//! copying and checksumming, so what limits it is how pages get initialised
//! (one global mapping lock, or [`PageInitKind::Cooperative`]) and how
//! threads find insertion slots. Each slice of a case runs on a fresh log
//! whose storage drops every byte ([`DiscardStorage`]), so writes cost
//! nothing and the insert path alone is measured; the cases of one thread
//! count run in interleaved slices ([`interleave`]).
//!
//! The reference is this machine's own limit, measured in the same run:
//! the same threads (at most one per core) doing nothing but one memcpy of
//! each 1 MiB block into a large buffer and one CRC-32C of it
//! ([`Probe::CopyCrc`]). An insert does at least that: it also encodes the
//! record and initialises pages.
//!
//! Two cores cannot show what a global mapping lock costs on many, so the
//! run also measures, on one thread, what each 8 kB page costs in each step
//! ([`page_costs`]): initialising it (the step the mapping lock
//! serialises), copying into it and checksumming it. The serialised
//! fraction `s = t_init / (t_init + t_copy + t_crc)` then projects the core
//! count at which the mapping lock saturates (algorithms.md §10, E4).

pub mod suite;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use walden::internals::format::crc::body_crc;
use walden::internals::{BufferRing, PageIdentity, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
use walden::{
    Config, Lsn, PageInitKind, PageZeroing, Record, SegmentSize, SlotChoice, SyncMethod, Wal,
    WalFormat,
};

use crate::discard::DiscardStorage;
use crate::limits::{self, LimitError, Probe};
use crate::measure::{grid, interleave, run_threads, Measured, Merge, Timing};
use crate::{serde_display, serde_parse};

/// Payload of each message: 1 MiB, as in the seed.
pub const PAYLOAD: usize = 1 << 20;
/// Prefix of each message, as in the seed.
const PREFIX: &str = "test";

/// What every case shares.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// The configuration each case's log starts from (see
    /// [`LogicalCase::config`]); not in the JSON, which reports it apart.
    #[serde(skip)]
    pub base: Config,
    /// Wall-clock time of each case, all its slices together.
    pub duration: Duration,
    /// Slices each case's time is cut into, interleaved with the other
    /// cases of the same thread count.
    pub slices: u32,
}

/// One measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogicalCase {
    /// Page-initialisation design.
    #[serde(serialize_with = "serde_display", deserialize_with = "serde_parse")]
    pub page_init: PageInitKind,
    /// Slot choice.
    #[serde(serialize_with = "serde_display", deserialize_with = "serde_parse")]
    pub slot_choice: SlotChoice,
    /// Insertion slots.
    pub insert_slots: usize,
    /// Inserting threads.
    pub threads: usize,
    /// Pages the background writer initialises ahead of the inserters
    /// ([`Config::writer_init_ahead`]; 0: none).
    #[serde(default)]
    pub writer_init_ahead: u64,
}

impl LogicalCase {
    /// The configuration of this case's logs over `base`: the case's page
    /// initialisation and slots, sync `None` (`fsync` off, as in the seed).
    pub fn config(&self, base: &Config) -> Config {
        Config {
            insert_slots: self.insert_slots,
            slot_choice: self.slot_choice,
            page_init: self.page_init,
            writer_init_ahead: self.writer_init_ahead,
            sync_method: SyncMethod::None,
            ..base.clone()
        }
    }
}

/// What one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogicalResult {
    /// The case.
    pub case: LogicalCase,
    /// Messages inserted.
    pub records: u64,
    /// Seconds they took.
    pub seconds: f64,
    /// Messages per second.
    pub records_per_sec: f64,
    /// Record bytes per second, in GB (10⁹ bytes).
    pub gb_per_sec: f64,
    /// The machine's memcpy + CRC-32C rate for the same threads, GB/s.
    pub limit_gb_per_sec: f64,
    /// Times an inserter had to write out a ring page itself.
    pub buffer_full_evictions: u64,
    /// Slot acquisitions that had to wait.
    pub slot_waits: u64,
    /// Pages the background writer initialised ahead of the inserters.
    #[serde(default)]
    pub pages_initialised_ahead: u64,
}

impl LogicalResult {
    /// `gb_per_sec / limit_gb_per_sec`.
    pub fn ratio_to_limit(&self) -> f64 {
        self.gb_per_sec / self.limit_gb_per_sec
    }
}

/// Why a case could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum LogicalError {
    /// The log failed.
    #[error(transparent)]
    Wal(#[from] walden::Error),
    /// The limit could not be measured.
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// What slices of one case add up to.
#[derive(Clone, Debug, Default)]
struct Slices {
    inserts: Measured,
    evictions: u64,
    slot_waits: u64,
    pages_ahead: u64,
}

impl Merge for Slices {
    fn merge(&mut self, other: &Slices) {
        self.inserts.merge(&other.inserts);
        self.evictions += other.evictions;
        self.slot_waits += other.slot_waits;
        self.pages_ahead += other.pages_ahead;
    }
}

/// The values each case dimension takes; [`cases`] runs every combination.
#[derive(Clone, Copy, Debug)]
pub struct Sweep<'a> {
    /// Inserting threads.
    pub threads: &'a [usize],
    /// Page-initialisation designs.
    pub page_inits: &'a [PageInitKind],
    /// Slot choices.
    pub slot_choices: &'a [SlotChoice],
    /// Insertion-slot counts.
    pub insert_slots: &'a [usize],
    /// Pages the background writer initialises ahead.
    pub writer_init_ahead: &'a [u64],
}

/// The cases of one run, grouped by thread count (see [`run_group`]).
pub fn cases(sweep: Sweep) -> Vec<LogicalCase> {
    grid(
        &grid(
            &grid(&grid(sweep.threads, sweep.insert_slots), sweep.slot_choices),
            sweep.writer_init_ahead,
        ),
        sweep.page_inits,
    )
    .into_iter()
    .map(
        |((((threads, insert_slots), slot_choice), writer_init_ahead), page_init)| LogicalCase {
            page_init,
            slot_choice,
            insert_slots,
            threads,
            writer_init_ahead,
        },
    )
    .collect()
}

/// Measures the limit for `threads`, then the cases of `group` (one thread
/// count) in interleaved slices; `after` is called after each slice.
pub fn run_group(
    group: &[LogicalCase],
    threads: usize,
    settings: &Settings,
    mut after: impl FnMut(),
) -> Result<Vec<LogicalResult>, LogicalError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let probe = Probe::CopyCrc {
        threads: threads.clamp(1, cores),
    };
    let limit = limits::measure(probe, &std::env::temp_dir(), settings.duration / 2)?;
    let slice = settings.duration / settings.slices.max(1);
    let merged = interleave(
        group,
        settings.slices.max(1),
        |case| run_slice(case, settings, slice),
        |_| after(),
    )?;
    let record_bytes = message(0, PAYLOAD).encoded_len() as f64;
    Ok(merged
        .into_iter()
        .map(|(case, s)| {
            let records_per_sec = s.inserts.per_sec();
            LogicalResult {
                case,
                records: s.inserts.ops,
                seconds: s.inserts.seconds,
                records_per_sec,
                gb_per_sec: records_per_sec * record_bytes / 1e9,
                limit_gb_per_sec: limit.gb_per_sec.unwrap_or(f64::NAN),
                buffer_full_evictions: s.evictions,
                slot_waits: s.slot_waits,
                pages_initialised_ahead: s.pages_ahead,
            }
        })
        .collect())
}

/// The message of `payload` bytes thread `t` inserts, with an xid as
/// PostgreSQL assigns one to a transactional message.
pub(crate) fn message(t: usize, payload: usize) -> Record<'static> {
    Record::logical_message(true, PREFIX, &vec![b'0'; payload]).with_xid(1000 + t as u32)
}

/// What each step costs per 8 kB page, on one thread (nanoseconds).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PageCosts {
    /// Zeroing a ring page and writing its header: the step the mapping
    /// lock serialises.
    pub init_ns: f64,
    /// Copying a page's worth of record bytes into the ring.
    pub copy_ns: f64,
    /// CRC-32C of a page's worth of record bytes.
    pub crc_ns: f64,
}

impl PageCosts {
    /// `s = t_init / (t_init + t_copy + t_crc)`: the part of a page's work
    /// done under the mapping lock.
    pub fn serialized_fraction(&self) -> f64 {
        self.init_ns / (self.init_ns + self.copy_ns + self.crc_ns)
    }

    /// Projected: the core count from which the mapping lock, not the
    /// cores, caps throughput (`1 / s`, Amdahl with a fully serial step and
    /// no handoff cost, so an upper bound).
    pub fn mapping_lock_saturation_cores(&self) -> f64 {
        1.0 / self.serialized_fraction()
    }

    /// Projected: the mapping lock's ceiling, GB/s of WAL (one page
    /// initialised at a time, `PAGE_SIZE / t_init`).
    pub fn mapping_lock_ceiling_gb_per_sec(&self) -> f64 {
        PAGE_SIZE as f64 / self.init_ns
    }
}

/// Pages the cost probe cycles through: 64 MiB, larger than any cache, as
/// the ring is.
const COST_PAGES: usize = 8192;

/// Measures [`PageCosts`] on this thread, each step for about `duration`,
/// with pages initialised as `zeroing` says (the logs' page zeroing).
pub fn page_costs(duration: Duration, zeroing: PageZeroing) -> PageCosts {
    let seg = SegmentSize::default();
    let id = PageIdentity {
        timeline: 1,
        system_id: 1,
        format: WalFormat::Postgres15,
    };
    let ring = BufferRing::new(COST_PAGES, seg, id).zeroing(zeroing);
    let body = vec![b'0'; (PAGE_SIZE - SHORT_PAGE_HEADER_SIZE) as usize];
    let page = |n: u64| Lsn(seg.segment_start(1).0 + n * PAGE_SIZE);
    // Each page once first, so that every step finds it faulted in.
    (0..COST_PAGES as u64).for_each(|n| {
        // SAFETY: the ring is ours alone; no page is in use.
        unsafe { ring.init_page(page(n), 0) }
    });
    let init_ns = time_per_page(duration, |n| {
        // SAFETY: as above; pages past the ring reuse slots nobody copies into.
        unsafe { ring.init_page(page(n), 0) }
    });
    let copy_ns = time_per_page(duration, |n| {
        let p = page(n % COST_PAGES as u64);
        // SAFETY: as above; the bytes after the (short) header are in the page.
        unsafe { ring.copy_in(Lsn(p.0 + SHORT_PAGE_HEADER_SIZE), &body) }
    });
    let crc_ns = time_per_page(duration, |_| {
        black_box(body_crc(black_box(&body)));
    });
    PageCosts {
        init_ns,
        copy_ns,
        crc_ns,
    }
}

/// Nanoseconds per call of `step(n)` (n = 0, 1, ...), run for `duration`.
fn time_per_page(duration: Duration, mut step: impl FnMut(u64)) -> f64 {
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < duration {
        for _ in 0..256 {
            step(n);
            n += 1;
        }
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

/// One slice of `case`: a fresh log, `duration` of inserting, closed.
fn run_slice(
    case: LogicalCase,
    settings: &Settings,
    duration: Duration,
) -> Result<Slices, walden::Error> {
    let wal = Wal::create_with_storage(
        Path::new("/walden-bench/logical-1mb"),
        case.config(&settings.base),
        Arc::new(DiscardStorage::new()),
    )?;
    let before = wal.stats();
    let inserts = run_threads(case.threads, duration, Timing::CountOnly, |t| {
        let rec = message(t, PAYLOAD);
        let wal = &wal;
        Ok(move || wal.insert(&rec).map(drop))
    })?;
    let after = wal.stats();
    wal.close()?;
    Ok(Slices {
        inserts,
        evictions: after.buffer_full_evictions - before.buffer_full_evictions,
        slot_waits: after.slot_waits - before.slot_waits,
        pages_ahead: after.pages_initialised_ahead - before.pages_initialised_ahead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use walden::{Eviction, ReservationKind};

    #[test]
    fn page_costs_are_measured_and_project_a_saturation_point() {
        let c = page_costs(Duration::from_millis(20), PageZeroing::HeaderOnly);
        assert!(
            c.init_ns > 0.0 && c.copy_ns > 0.0 && c.crc_ns > 0.0,
            "{c:?}"
        );
        let s = c.serialized_fraction();
        assert!(s > 0.0 && s < 1.0, "{c:?}");
        assert!((c.mapping_lock_saturation_cores() * s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn every_design_inserts_and_the_limit_is_measured() {
        let settings = Settings {
            base: Config {
                buffers: 4 << 20,
                eviction: Eviction::Batch,
                format: WalFormat::SelfLsn,
                reservation: ReservationKind::Unlinked,
                ..Config::default()
            },
            duration: Duration::from_millis(200),
            slices: 2,
        };
        let choices = [SlotChoice::Sticky, SlotChoice::Attempts(2)];
        let group = cases(Sweep {
            threads: &[3],
            page_inits: &PageInitKind::ALL,
            slot_choices: &choices,
            insert_slots: &[8],
            writer_init_ahead: &[0],
        });
        let mut slices = 0;
        let results = run_group(&group, 3, &settings, || slices += 1).unwrap();
        assert_eq!(slices, 8, "two slices of each of four cases");
        assert_eq!(results.len(), 4);
        for (r, case) in results.iter().zip(&group) {
            assert_eq!(r.case, *case);
            assert!(r.records > 0 && r.gb_per_sec > 0.0, "{r:?}");
            assert!(r.limit_gb_per_sec > 0.0, "{r:?}");
        }
    }
}
