//! The machine's physical limits, measured in the same run as the engine
//! (DESIGN.md §6): what no WAL can beat on this machine.
//!
//! - memcpy and CRC-32C bandwidth, 1 and 2 threads: an insert copies every
//!   byte into the buffer ring and checksums it;
//! - one cache-line transfer between two cores (`t_x` of algorithms.md §10,
//!   the unit of the many-core projection);
//! - sequential write bandwidth into the page cache: what a non-durable
//!   log's writer can hand the kernel;
//! - write-and-sync latency for 8 kB and 1 MiB, with `fdatasync` and with
//!   `O_DSYNC`: the floor of one durable commit, and durable bandwidth.

pub mod suite;

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use walden::internals::format::crc::body_crc;

use crate::measure::{run_threads, Measured, Timing};

/// Block each bandwidth operation moves: 1 MiB.
pub const BLOCK: usize = 1 << 20;
/// Destination of the memcpy probe, per thread: larger than any cache, as
/// the buffer ring is.
const COPY_DESTINATION: usize = 64 << 20;
/// File the write probes cycle through: one default segment's size,
/// pre-allocated and synced first as WAL segments are, so that a sync
/// writes data and no metadata.
const WRITE_FILE: u64 = 16 << 20;
/// Round trips of the cache-line probe, all batches together.
const PING_PONGS: u64 = 500_000;
/// Batches of the cache-line probe (the fastest counts).
const PING_PONG_BATCHES: u64 = 50;

/// How a durable write probe makes each write durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// `pwrite` then `fdatasync`.
    Fdatasync,
    /// `pwrite` on a file opened with `O_DSYNC`.
    OpenDatasync,
}

/// One limit to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "kebab-case")]
pub enum Probe {
    /// memcpy of 1 MiB blocks into a 64 MiB buffer per thread.
    Memcpy {
        /// Threads.
        threads: usize,
    },
    /// CRC-32C of 1 MiB blocks.
    Crc32c {
        /// Threads.
        threads: usize,
    },
    /// memcpy then CRC-32C of each block: the insert path's floor.
    CopyCrc {
        /// Threads.
        threads: usize,
    },
    /// One cache-line transfer between two threads (ping-pong on one atomic).
    LineTransfer,
    /// Sequential 1 MiB `pwrite`s into the page cache, never synced.
    BufferedWrite,
    /// One `pwrite` of `bytes` made durable, back to back.
    DurableWrite {
        /// Bytes per write.
        bytes: usize,
        /// How it is made durable.
        durability: Durability,
    },
}

impl Probe {
    /// The probes of a full run, in report order.
    pub fn all() -> Vec<Probe> {
        let mut out = Vec::new();
        for threads in [1, 2] {
            out.extend([
                Probe::Memcpy { threads },
                Probe::Crc32c { threads },
                Probe::CopyCrc { threads },
            ]);
        }
        out.extend([Probe::LineTransfer, Probe::BufferedWrite]);
        for bytes in [8 << 10, BLOCK] {
            for durability in [Durability::Fdatasync, Durability::OpenDatasync] {
                out.push(Probe::DurableWrite { bytes, durability });
            }
        }
        out
    }

    /// A short label for tables and charts.
    pub fn label(&self) -> String {
        match *self {
            Probe::Memcpy { threads } => format!("memcpy, {threads} thread(s)"),
            Probe::Crc32c { threads } => format!("CRC-32C, {threads} thread(s)"),
            Probe::CopyCrc { threads } => format!("memcpy + CRC-32C, {threads} thread(s)"),
            Probe::LineTransfer => "cache-line transfer between cores".to_owned(),
            Probe::BufferedWrite => "sequential write, page cache".to_owned(),
            Probe::DurableWrite { bytes, durability } => {
                let size = if bytes >= BLOCK {
                    format!("{} MiB", bytes / BLOCK)
                } else {
                    format!("{} kB", bytes >> 10)
                };
                let how = match durability {
                    Durability::Fdatasync => "write + fdatasync",
                    Durability::OpenDatasync => "O_DSYNC write",
                };
                format!("{how}, {size}")
            }
        }
    }
}

/// What one probe measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LimitResult {
    /// The probe.
    pub probe: Probe,
    /// Operations (blocks, transfers or durable writes) per second.
    pub ops_per_sec: f64,
    /// Bytes per second, in GB (10⁹); `None` for the cache-line probe.
    pub gb_per_sec: Option<f64>,
    /// Mean time of one operation, ns.
    pub ns_per_op: f64,
    /// Median latency of one operation, ns (durable writes only).
    pub p50_ns: Option<u64>,
    /// 99th-percentile latency, ns (durable writes only).
    pub p99_ns: Option<u64>,
}

/// A probe that could not run.
#[derive(Debug, thiserror::Error)]
#[error("{probe}: {path}: {source}")]
pub struct LimitError {
    /// The probe's label.
    pub probe: String,
    /// The file it used.
    pub path: PathBuf,
    /// The cause.
    pub source: io::Error,
}

/// Measures `probe` for about `duration`, with files under `dir`.
pub fn measure(probe: Probe, dir: &Path, duration: Duration) -> Result<LimitResult, LimitError> {
    match probe {
        Probe::Memcpy { threads } | Probe::Crc32c { threads } | Probe::CopyCrc { threads } => {
            let m = bandwidth(probe, threads, duration);
            Ok(result(probe, &m, Some(BLOCK)))
        }
        Probe::LineTransfer => {
            let ns = line_transfer_ns();
            Ok(LimitResult {
                probe,
                ops_per_sec: 1e9 / ns,
                gb_per_sec: None,
                ns_per_op: ns,
                p50_ns: None,
                p99_ns: None,
            })
        }
        Probe::BufferedWrite => {
            let m = file_writes(probe, dir, BLOCK, None, duration)?;
            Ok(result(probe, &m, Some(BLOCK)))
        }
        Probe::DurableWrite { bytes, durability } => {
            let m = file_writes(probe, dir, bytes, Some(durability), duration)?;
            Ok(result(probe, &m, Some(bytes)))
        }
    }
}

fn result(probe: Probe, m: &Measured, bytes_per_op: Option<usize>) -> LimitResult {
    let ops_per_sec = m.per_sec();
    LimitResult {
        probe,
        ops_per_sec,
        gb_per_sec: bytes_per_op.map(|b| ops_per_sec * b as f64 / 1e9),
        ns_per_op: if ops_per_sec > 0.0 {
            1e9 / ops_per_sec
        } else {
            f64::INFINITY
        },
        p50_ns: m.latency.percentile(50),
        p99_ns: m.latency.percentile(99),
    }
}

/// memcpy and/or CRC-32C of 1 MiB blocks on `threads` threads.
fn bandwidth(probe: Probe, threads: usize, duration: Duration) -> Measured {
    let copy = matches!(probe, Probe::Memcpy { .. } | Probe::CopyCrc { .. });
    let crc = matches!(probe, Probe::Crc32c { .. } | Probe::CopyCrc { .. });
    let run = run_threads(threads, duration, Timing::CountOnly, |t| {
        let src = vec![b'0' + t as u8; BLOCK];
        let mut dst = if copy {
            vec![0u8; COPY_DESTINATION]
        } else {
            Vec::new()
        };
        // Touch the destination first, as the ring is pre-faulted.
        dst.iter_mut().step_by(4096).for_each(|b| *b = 1);
        let mut at = 0;
        Ok::<_, std::convert::Infallible>(move || {
            let block: &[u8] = if copy {
                let chunk = &mut dst[at..at + BLOCK];
                chunk.copy_from_slice(&src);
                at = (at + BLOCK) % COPY_DESTINATION;
                chunk
            } else {
                &src
            };
            if crc {
                black_box(body_crc(black_box(block)));
            } else {
                black_box(block);
            }
            Ok(())
        })
    });
    match run {
        Ok(m) => m,
        Err(never) => match never {},
    }
}

/// Nanoseconds to move one cache line from one core to the other: two
/// threads hand a counter back and forth; each handoff is one transfer.
/// The fastest of several batches counts: on a shared 2-vCPU host a batch
/// during which one thread was descheduled measures the scheduler, not the
/// line.
fn line_transfer_ns() -> f64 {
    (0..PING_PONG_BATCHES)
        .map(|_| ping_pong_ns(PING_PONGS / PING_PONG_BATCHES))
        .fold(f64::INFINITY, f64::min)
}

/// Mean time of one handoff over `round_trips` round trips.
fn ping_pong_ns(round_trips: u64) -> f64 {
    let turn = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for parity in [0, 1] {
            let turn = &turn;
            s.spawn(move || {
                let mut next = parity;
                while next < 2 * round_trips {
                    // Acquire/Release: the handoff orders nothing but itself;
                    // any ordering makes the line move, these match a lock's.
                    while turn.load(Ordering::Acquire) != next {
                        std::hint::spin_loop();
                    }
                    turn.store(next + 1, Ordering::Release);
                    next += 2;
                }
            });
        }
    });
    started.elapsed().as_nanos() as f64 / (2 * round_trips) as f64
}

/// One thread writing `bytes` at a time sequentially through a
/// pre-allocated file, each write made durable as `durability` says (or
/// left in the page cache).
fn file_writes(
    probe: Probe,
    dir: &Path,
    bytes: usize,
    durability: Option<Durability>,
    duration: Duration,
) -> Result<Measured, LimitError> {
    let path = dir.join(format!("walden-limits-{}.tmp", std::process::id()));
    let fail = |source| LimitError {
        probe: probe.label(),
        path: path.clone(),
        source,
    };
    preallocate(&path).map_err(fail)?;
    let mut options = OpenOptions::new();
    options.write(true);
    if durability == Some(Durability::OpenDatasync) {
        options.custom_flags(libc::O_DSYNC);
    }
    let timing = if durability.is_some() {
        Timing::Latency
    } else {
        Timing::CountOnly
    };
    let measured = options.open(&path).and_then(|file| {
        let block = vec![0xA5u8; bytes];
        run_threads(1, duration, timing, |_| {
            let (file, block) = (&file, &block);
            let mut at = 0u64;
            Ok(move || {
                file.write_all_at(block, at)?;
                if durability == Some(Durability::Fdatasync) {
                    file.sync_data()?;
                }
                at = (at + bytes as u64) % WRITE_FILE;
                Ok::<_, io::Error>(())
            })
        })
    });
    let removed = std::fs::remove_file(&path);
    let measured = measured.map_err(fail)?;
    removed.map_err(fail)?;
    Ok(measured)
}

/// Writes the whole file with zeros and syncs it.
fn preallocate(path: &Path) -> io::Result<()> {
    let file = File::create(path)?;
    let zeros = vec![0u8; BLOCK];
    for at in (0..WRITE_FILE).step_by(BLOCK) {
        file.write_all_at(&zeros, at)?;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_measures_a_positive_rate_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        for probe in Probe::all() {
            let r = measure(probe, dir.path(), Duration::from_millis(30)).unwrap();
            assert!(r.ops_per_sec > 0.0 && r.ns_per_op > 0.0, "{r:?}");
            match probe {
                Probe::LineTransfer => assert!(r.gb_per_sec.is_none()),
                _ => assert!(r.gb_per_sec.unwrap() > 0.0, "{r:?}"),
            }
            if let Probe::DurableWrite { .. } = probe {
                assert!(r.p50_ns.unwrap() > 0 && r.p99_ns >= r.p50_ns, "{r:?}");
            }
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_missing_directory_is_named_in_the_error() {
        let err = measure(
            Probe::BufferedWrite,
            Path::new("/nonexistent-walden-dir"),
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent-walden-dir"), "{err}");
        assert!(err.to_string().starts_with("sequential write"), "{err}");
    }

    #[test]
    fn labels_say_size_and_method() {
        let p = Probe::DurableWrite {
            bytes: 8 << 10,
            durability: Durability::OpenDatasync,
        };
        assert_eq!(p.label(), "O_DSYNC write, 8 kB");
    }
}
